"""`workbench import table` with the reviews in a list column (``reviews: {form: nested}``).

The source is a small synthetic file shaped like a span-annotation hallucination benchmark: per
row an id, a source document, a summary (the response), the model that wrote it (the slice),
and ``annotations``, a list of ``{annotator, label, spans: [{start, end, text}]}`` by three
annotators. It is written as CSV (a JSON cell), JSONL (a list value) and Parquet (a
``list<struct>`` column). Expected labels are computed here from the rows, not by the importer.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from workbench.cli.main import main
from workbench.errors import WorkbenchError
from workbench.importers import gold_from_dataframe, import_table

MODELS = ("acme/summarizer-7b", "acme/summarizer-13b", "other/brief-3b")
ANNOTATORS = ("ann-1", "ann-2", "ann-3")
LABELS = {"faithful": "pass", "hallucinated": "fail"}

MAPPING = """
name: span-bench
case_id: id
input: source
response: summary
grading_notes: {value: "The summary states nothing the source document does not support."}
slice: model
partition: {assign: {seed: 29, development: 0.4, calibration: 0.3, held_out: 0.3}}
reviews:
  form: nested
  reviewer: annotations[].annotator
  label: annotations[].label
  rationale: annotations[].spans[].text
labels: {faithful: pass, hallucinated: fail}
adjudication: {rule: majority}
"""


def cli(*args: Any) -> Any:
    return CliRunner().invoke(main, [str(a) for a in args])


def _annotation(case: int, annotator: int, summary: str) -> dict[str, Any]:
    """Annotator ``annotator``'s review of case ``case``: the third annotator disagrees on every
    fourth case, so agreement is high but not perfect."""
    hallucinated = case % 3 == 0
    if annotator == 2 and case % 4 == 1:
        hallucinated = not hallucinated
    spans = []
    if hallucinated:
        start = summary.index("after")
        spans = [{"start": start, "end": len(summary) - 1, "text": summary[start:-1]}]
    label = "hallucinated" if hallucinated else "faithful"
    return {"annotator": ANNOTATORS[annotator], "label": label, "spans": spans}


def benchmark_rows(n: int = 24) -> list[dict[str, Any]]:
    rows = []
    for k in range(n):
        source = (
            f"Report {k}: the river at station {k} rose {k + 2} metres after {k % 5 + 1} days of"
            " rain; no one was hurt."
        )
        days = k % 5 + 1 if k % 3 else k % 5 + 4  # every third summary invents the day count
        summary = f"The river at station {k} rose {k + 2} metres after {days} days of rain."
        rows.append(
            {
                "id": f"doc-{k:03d}",
                "source": source,
                "summary": summary,
                "model": MODELS[k % 3],
                "annotations": [_annotation(k, a, summary) for a in range(3)],
            }
        )
    return rows


def write_source(rows: list[dict[str, Any]], path: Path) -> Path:
    """The rows as CSV (annotations as JSON text), JSONL or Parquet (list<struct>)."""
    if path.suffix == ".csv":
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(list(rows[0]))
            for row in rows:
                cells = [json.dumps(v) if isinstance(v, list) else v for v in row.values()]
                writer.writerow(cells)
    elif path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    else:
        span = pa.struct([("start", pa.int64()), ("end", pa.int64()), ("text", pa.string())])
        review = pa.struct(
            [("annotator", pa.string()), ("label", pa.string()), ("spans", pa.list_(span))]
        )
        schema = pa.schema(
            [
                *((name, pa.string()) for name in ("id", "source", "summary", "model")),
                ("annotations", pa.list_(review)),
            ]
        )
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return path


def write_mapping(path: Path, text: str = MAPPING) -> Path:
    path.write_text(text.lstrip("\n"), encoding="utf-8")
    return path


def read_gold(out: Path) -> list[dict[str, Any]]:
    lines = (out / "gold.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def set_risks(out: Path) -> None:
    rubric = (out / "rubric.yaml").read_text(encoding="utf-8")
    (out / "rubric.yaml").write_text(rubric.replace("risk: unset", "risk: high"), encoding="utf-8")


def expected_reviews(row: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [
        (a["annotator"], LABELS[a["label"]], "\n".join(s["text"] for s in a["spans"]) or None)
        for a in row["annotations"]
    ]


# --------------------------------------------------------------------------- done when


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_span_benchmark_imports_and_validate_and_agreement_accept_it(
    tmp_path: Path, suffix: str
) -> None:
    rows = benchmark_rows()
    source = write_source(rows, tmp_path / f"bench{suffix}")
    out = tmp_path / "gold"
    result = cli(
        "import", "table", source, "--mapping", write_mapping(tmp_path / "m.yaml"), "--out", out
    )
    assert result.exit_code == 0, result.output
    assert "Imported 24 table case(s)" in result.output

    gold = read_gold(out)
    assert [c["case_id"] for c in gold] == [r["id"] for r in rows]
    for case, row in zip(gold, rows, strict=True):
        assert case["slice"] == row["model"] and case["response"] == row["summary"]
        got = [(r["reviewer"], r["label"], r.get("rationale")) for r in case["reviews"]]
        assert got == expected_reviews(row)
        majority = Counter(label for _, label, _ in expected_reviews(row)).most_common(1)[0][0]
        assert case["adjudication"]["label"] == majority
    card = (out / "card.md").read_text(encoding="utf-8")
    assert "nested form" in card and "reviews per case: 3: 24" in card

    set_risks(out)
    validated = cli("validate", out)
    assert validated.exit_code == 0, validated.output
    assert "OK - 24 cases" in validated.output
    agreement = cli("agreement", out)
    assert agreement.exit_code == 0, agreement.output
    assert "overall: 24 cases, 3 reviewers (ann-1, ann-2, ann-3)" in agreement.output
    assert re.search(r"ann-1 vs ann-2: n=24 +raw agreement 24/24", agreement.output)
    assert re.search(r"ann-1 vs ann-3: n=24 +raw agreement 18/24", agreement.output)
    assert re.search(r"Krippendorff's alpha \(nominal\): 0\.\d+ \(n=24\)", agreement.output)
    for model in MODELS:
        assert f"slice {model}: 8 cases" in agreement.output


def test_the_three_formats_and_a_dataframe_give_the_same_gold(tmp_path: Path) -> None:
    rows = benchmark_rows(9)
    mapping = write_mapping(tmp_path / "m.yaml")
    golds = {}
    for suffix in (".csv", ".jsonl", ".parquet"):
        out = tmp_path / suffix[1:]
        import_table(write_source(rows, tmp_path / f"bench{suffix}"), out, mapping=mapping)
        golds[suffix] = (out / "gold.jsonl").read_bytes()
    frame = pd.DataFrame(rows)  # a column of lists of dicts
    golds["frame"] = gold_from_dataframe(frame, mapping).gold_text().encode("utf-8")
    as_text = frame.assign(annotations=[json.dumps(a) for a in frame["annotations"]])
    golds["frame of JSON text"] = gold_from_dataframe(as_text, mapping).gold_text().encode()
    assert len(set(golds.values())) == 1, list(golds)


def test_label_mapping_applies_to_exploded_numeric_labels(tmp_path: Path) -> None:
    """0/1 labels (1 = hallucinated) inside the list map to pass/fail like any label column;
    a value the mapping does not list is refused with its line."""
    rows = benchmark_rows(6)
    for row in rows:
        for a in row["annotations"]:
            a["label"] = 1 if a["label"] == "hallucinated" else 0
            a["confidence"] = "High"
    rows[4]["annotations"][1]["label"] = 2  # line 5
    text = MAPPING.replace(
        "labels: {faithful: pass, hallucinated: fail}", "labels: {0: pass, 1: fail}"
    ).replace(
        "  rationale: annotations[].spans[].text\n", "  confidence: annotations[].confidence\n"
    )
    source = write_source(rows, tmp_path / "bench.jsonl")
    mapping = write_mapping(tmp_path / "m.yaml", text)
    with pytest.raises(WorkbenchError) as info:
        import_table(source, tmp_path / "refused", mapping=mapping)
    [problem] = info.value.problems
    assert problem.code == "label_unmapped" and problem.location == f"{source}:5"
    assert "'2'" in problem.message and "annotations[].label" in problem.message

    rows[4]["annotations"][1]["label"] = 0
    import_table(write_source(rows, source), tmp_path / "gold", mapping=mapping)
    for case, row in zip(read_gold(tmp_path / "gold"), rows, strict=True):
        labels = [r["label"] for r in case["reviews"]]
        assert labels == [("fail" if a["label"] == 1 else "pass") for a in row["annotations"]]
        assert {r["confidence"] for r in case["reviews"]} == {"high"}


# --------------------------------------------------------------------------- refusals


def test_every_row_problem_is_listed_at_once_with_its_lines_and_fixes(tmp_path: Path) -> None:
    rows = benchmark_rows(12)
    source = write_source(rows, tmp_path / "bench.csv")
    with open(source, newline="", encoding="utf-8") as fh:
        records = list(csv.reader(fh))

    def edit(line: int, change: Any) -> None:
        annotations = json.loads(records[line - 1][4])
        change(annotations)
        records[line - 1][4] = json.dumps(annotations)

    records[2][4] = "ann-1: faithful"  # line 3: not JSON
    records[3][4] = json.dumps({"annotator": "ann-1", "label": "faithful"})  # line 4: not a list
    edit(5, lambda a: a.insert(0, "faithful"))  # line 5: an item that is not an object
    edit(6, lambda a: a[0].pop("annotator"))  # line 6: an item without its reviewer
    edit(7, lambda a: a[1].update(label=""))  # line 7: an empty label
    edit(8, lambda a: a[2].update(label="unsure"))  # line 8: a label the mapping lacks
    edit(9, lambda a: a[2].update(annotator="ann-1"))  # line 9: a reviewer twice
    edit(10, lambda a: a[0].update(spans=[{"start": 0, "end": 3}]))  # line 10: a span, no text
    edit(11, lambda a: a.clear())  # line 11: no review
    edit(12, lambda a: a[0].pop("annotator"))  # line 12: the same problem as line 6
    with open(source, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, lineterminator="\n").writerows(records)

    out = tmp_path / "gold"
    result = cli(
        "import", "table", source, "--mapping", write_mapping(tmp_path / "m.yaml"), "--out", out
    )
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and not out.exists()
    errors = [line for line in result.output.splitlines() if " error: " in line]
    assert all("Fix: " in line for line in errors)
    found = {
        (re.search(r"\[([a-z_]+)\]", line).group(1), line.split(": error", 1)[0]): line
        for line in errors
    }
    at = str(source)
    assert set(found) == {
        ("reviews_not_list", f"{at}:3"),
        ("reviews_not_list", f"{at}:4"),
        ("review_item_invalid", f"{at}:5"),
        ("review_field_missing", f"{at}:6"),
        ("review_field_missing", f"{at}:7"),
        ("label_unmapped", f"{at}:8"),
        ("duplicate_reviewer", f"{at}:9"),
        ("review_field_missing", f"{at}:10"),
        ("no_reviews", f"{at}:11"),
    }
    assert "is not JSON" in found["reviews_not_list", f"{at}:3"]
    assert "holds a dict, not a list" in found["reviews_not_list", f"{at}:4"]
    reviewer = found["review_field_missing", f"{at}:6"]
    assert "no reviewer at 'annotations[].annotator'" in reviewer and "lines 6, 12)" in reviewer
    assert "empty label" in found["review_field_missing", f"{at}:7"]
    assert "has no 'text'" in found["review_field_missing", f"{at}:10"]
    assert "'unsure'" in found["label_unmapped", f"{at}:8"]


def test_a_mistyped_path_is_one_problem_naming_the_keys_the_reviews_have(tmp_path: Path) -> None:
    source = write_source(benchmark_rows(), tmp_path / "bench.parquet")
    text = MAPPING.replace("annotations[].label", "annotations[].lable").replace(
        "spans[].text", "spams[].text"
    )
    with pytest.raises(WorkbenchError) as info:
        import_table(source, tmp_path / "gold", mapping=write_mapping(tmp_path / "m.yaml", text))
    by_path = {re.search(r"at '([^']+)'", p.message).group(1): p for p in info.value.problems}
    assert set(by_path) == {"annotations[].lable", "annotations[].spams[].text"}
    label = by_path["annotations[].lable"]
    assert label.code == "review_field_missing" and label.location == f"{source} row 0"
    assert "rows 0, 1, 2" in label.message and "and 4 more" in label.message
    assert "did you mean 'label'?" in label.fix and "annotator, label, spans" in label.fix
    rationale = by_path["annotations[].spams[].text"]
    assert rationale.code == "review_field_missing" and "did you mean 'spans'?" in rationale.fix


def test_bad_paths_in_the_mapping_are_all_named_at_their_lines(tmp_path: Path) -> None:
    source = write_source(benchmark_rows(3), tmp_path / "bench.jsonl")
    bad_paths = (
        "  reviewer: annotations.annotator\n"  # no []
        "  label: annotation[].label\n"  # no such column
        "  confidence: annotations[]\n"  # no key
        "  rationale: annotations[].spans[].text[].x\n"  # three []
    )
    good_paths = (
        "  reviewer: annotations[].annotator\n"
        "  label: annotations[].label\n"
        "  rationale: annotations[].spans[].text\n"
    )
    assert good_paths in MAPPING
    text = MAPPING.replace(good_paths, bad_paths)
    mapping = write_mapping(tmp_path / "m.yaml", text)
    result = cli("import", "table", source, "--mapping", mapping, "--out", tmp_path / "gold")
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if " error: " in line]
    lines = text.lstrip("\n").splitlines()

    def line_of(key: str) -> str:
        return f"{mapping}:{next(i for i, x in enumerate(lines, 1) if x.startswith(key))}:"

    expected = {
        ("mapping_invalid", line_of("  reviewer:"), "is not a path into a list column"),
        ("mapping_invalid", line_of("  confidence:"), "names no key of the review"),
        ("mapping_invalid", line_of("  rationale:"), "has 3 []"),
        ("mapping_column_unknown", line_of("  label:"), "did you mean 'annotations'?"),
    }
    for code, where, text_part in expected:
        assert any(e.startswith(where) and f"[{code}]" in e and text_part in e for e in errors), (
            code,
            where,
            errors,
        )
    assert len(errors) == 4 and all("Fix: " in e for e in errors)


def test_paths_need_form_nested_and_one_list_column(tmp_path: Path) -> None:
    source = write_source(benchmark_rows(3), tmp_path / "bench.jsonl")
    long = MAPPING.replace("form: nested", "form: long")
    with pytest.raises(WorkbenchError) as info:
        import_table(source, tmp_path / "a", mapping=write_mapping(tmp_path / "a.yaml", long))
    [problem] = info.value.problems
    assert problem.code == "mapping_invalid" and "write form: nested" in problem.message

    rows = benchmark_rows(3)
    for row in rows:
        row["notes"] = [{"text": "checked"}]
    source = write_source(rows, tmp_path / "two.jsonl")
    two = MAPPING.replace("annotations[].spans[].text", "notes[].text")
    with pytest.raises(WorkbenchError) as info:
        import_table(source, tmp_path / "b", mapping=write_mapping(tmp_path / "b.yaml", two))
    [problem] = info.value.problems
    assert problem.code == "mapping_invalid" and "the same list column" in problem.message
