"""`workbench import table`: any CSV, JSONL, Parquet file or DataFrame into a gold dataset.

Expected values (majority labels, hashes, row numbers) are computed here from the source rows
with :mod:`csv` and :mod:`hashlib`, not with the importer's helpers.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import shutil
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from conftest import undocumented_fields
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.agreement import human_agreement
from workbench.cli.main import main
from workbench.errors import WorkbenchError
from workbench.gold import load_dataset, load_rubric, validate_dataset
from workbench.importers import (
    TableMapping,
    gold_from_dataframe,
    import_table,
    load_mapping,
    run_importer,
)
from workbench.importers.table import CARD_MARKER, PENDING_FILE, assign_partition

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "faq-reviews"
DONE_WHEN_COLUMNS = ["id", "question", "answer", "reviewer", "verdict", "topic"]


def cli(*args: str) -> Any:
    return CliRunner().invoke(main, [str(a) for a in args])


def write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    return path


def write_mapping(path: Path, text: str) -> Path:
    path.write_text(text.lstrip("\n"), encoding="utf-8")
    return path


def read_gold(out: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in (out / "gold.jsonl").read_text(encoding="utf-8").splitlines()
    ]


def snapshot(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()}


def set_risks(out: Path, risk: str = "medium") -> tuple[str, str]:
    before = (out / "rubric.yaml").read_text(encoding="utf-8")
    after = before.replace("risk: unset", f"risk: {risk}")
    (out / "rubric.yaml").write_text(after, encoding="utf-8")
    return before, after


# --------------------------------------------------------------------------- done when


def test_done_when_long_form_csv_is_valid_gold_with_one_command_and_a_short_mapping(
    tmp_path: Path,
) -> None:
    """id, question, answer, reviewer, verdict, topic in long form -> valid gold, editing only
    risks.
    """
    source, mapping = EXAMPLE / "reviews.csv", EXAMPLE / "mapping.yaml"
    with open(source, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames == DONE_WHEN_COLUMNS
        rows = list(reader)
    assert len(mapping.read_text(encoding="utf-8").splitlines()) < 20

    out = tmp_path / "gold"
    result = cli("import", "table", source, "--mapping", mapping, "--out", out)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output

    # Before a person sets the risks, validate refuses every drafted slice, naming its line.
    topics = sorted({r["topic"] for r in rows})
    refused = cli("validate", out)
    assert refused.exit_code == 2
    unset_lines = [line for line in refused.output.splitlines() if "[rubric_risk_unset]" in line]
    assert [re.search(r"slice '([^']+)'", line).group(1) for line in unset_lines] == topics
    assert all(re.search(r"rubric\.yaml:\d+: error", line) for line in unset_lines)

    before, after = set_risks(out)
    changed = [
        (a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b
    ]
    assert len(changed) == len(topics) and all(a.strip() == "risk: unset" for a, _ in changed)

    ok = cli("validate", out)
    assert ok.exit_code == 0, ok.output
    assert f"OK - {len({r['id'] for r in rows})} cases" in ok.output

    # The gold labels are the majority of the mapped verdicts, computed here independently.
    label_map = {"correct": "pass", "incorrect": "fail"}
    votes: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for r in rows:
        votes[r["id"]].append((r["reviewer"], label_map[r["verdict"]]))
    dataset = load_dataset(out)
    assert list(dataset.cases) == list(dict.fromkeys(r["id"] for r in rows))
    for case_id, case in dataset.cases.items():
        label, n = Counter(label for _, label in votes[case_id]).most_common(1)[0]
        assert n * 2 > len(votes[case_id])
        assert case.gold_label == label
        assert [(rv.reviewer, rv.label) for rv in case.reviews] == votes[case_id]
        answer = next(r["answer"] for r in rows if r["id"] == case_id)
        assert case.response == answer
        assert case.response_hash == hashlib.sha256(answer.encode("utf-8")).hexdigest()
        assert case.slice == next(r["topic"] for r in rows if r["id"] == case_id)
    assert human_agreement(dataset).overall.cases == len(votes)
    assert cli("agreement", out).exit_code == 0
    card = (out / "card.md").read_text(encoding="utf-8")
    assert "Rule `majority` decides" in card and CARD_MARKER in card


def test_rerun_is_byte_identical_and_keeps_what_a_person_decided(tmp_path: Path) -> None:
    source, mapping = EXAMPLE / "reviews.csv", EXAMPLE / "mapping.yaml"
    a, b = tmp_path / "a", tmp_path / "b"
    assert cli("import", "table", source, "--mapping", mapping, "--out", a).exit_code == 0
    assert cli("import", "table", source, "--mapping", mapping, "--out", b).exit_code == 0
    first = snapshot(a)
    assert first == snapshot(b)
    assert cli("import", "table", source, "--mapping", mapping, "--out", a).exit_code == 0
    assert snapshot(a) == first

    # Risks, descriptions, the criterion and the card's human part survive a re-import.
    set_risks(a, "high")
    rubric = yaml.safe_load((a / "rubric.yaml").read_text())
    rubric_text = (
        (a / "rubric.yaml")
        .read_text()
        .replace('criterion: ""', 'criterion: "Correct and complete."')
    )
    rubric_text = rubric_text.replace('description: ""', 'description: "written by a person"', 1)
    (a / "rubric.yaml").write_text(rubric_text)
    card = (a / "card.md").read_text().replace("intended_use:  #", "intended_use: tests  #")
    (a / "card.md").write_text(card)
    kept = snapshot(a)
    assert cli("import", "table", source, "--mapping", mapping, "--out", a).exit_code == 0
    again = yaml.safe_load((a / "rubric.yaml").read_text())
    assert {k: v["risk"] for k, v in again["slices"].items()} == {
        k: "high" for k in rubric["slices"]
    }
    assert again["criterion"] == "Correct and complete."
    assert "written by a person" in {v["description"] for v in again["slices"].values()}
    assert "intended_use: tests" in (a / "card.md").read_text()
    assert snapshot(a) == {**kept, "rubric.yaml": (a / "rubric.yaml").read_bytes()}
    assert (a / "rubric.yaml").read_text().count("TO DO") == 0
    assert validate_dataset(a).ok


def _long_rows(cases: list[tuple[str, str, str, str, list[str]]]) -> list[list[str]]:
    return [
        [cid, q, ans, f"rev-{i}", v, topic]
        for cid, q, ans, topic, votes in cases
        for i, v in enumerate(votes)
    ]


BASE_CASES = [
    (
        f"c{i:03d}",
        f"Question number {i}?",
        f"Answer {i}.",
        ["alpha", "beta", "gamma"][i % 3],
        ["correct", "correct", "incorrect"] if i % 4 else ["incorrect", "incorrect", "correct"],
    )
    for i in range(40)
]
MAPPING = """
name: appended
case_id: id
input: question
response: answer
grading_notes: {value: "Must be correct."}
slice: topic
partition: {assign: {seed: 11, development: 0.4, calibration: 0.3, held_out: 0.3}}
reviews: {form: long, reviewer: reviewer, label: verdict}
labels: {correct: pass, incorrect: fail}
adjudication: {rule: majority}
"""


def test_adding_rows_appends_cases_and_moves_none(tmp_path: Path) -> None:
    mapping = write_mapping(tmp_path / "m.yaml", MAPPING)
    small = write_csv(tmp_path / "small.csv", DONE_WHEN_COLUMNS, _long_rows(BASE_CASES))
    extra = [
        (
            f"n{i:03d}",
            f"New question {i}?",
            f"New answer {i}.",
            "delta",
            ["correct", "correct", "correct"],
        )
        for i in range(60)
    ]
    big = write_csv(tmp_path / "big.csv", DONE_WHEN_COLUMNS, _long_rows(BASE_CASES + extra))
    out = tmp_path / "gold"
    assert cli("import", "table", small, "--mapping", mapping, "--out", out).exit_code == 0
    old_gold = (out / "gold.jsonl").read_bytes()
    old = {c["case_id"]: c["partition"] for c in read_gold(out)}
    # Re-import the grown table into the same directory: accepted, nothing moves.
    result = cli("import", "table", big, "--mapping", mapping, "--out", out)
    assert result.exit_code == 0, result.output
    new_gold = (out / "gold.jsonl").read_bytes()
    assert new_gold.startswith(old_gold) and len(new_gold) > len(old_gold)
    new = {c["case_id"]: c["partition"] for c in read_gold(out)}
    assert {cid: new[cid] for cid in old} == old
    assert len(new) == len(old) + len(extra)
    assert len(set(new.values())) == 3


GROUPS = st.lists(
    st.text(alphabet="abcdefgh ", min_size=1, max_size=12).filter(str.strip),
    min_size=1,
    max_size=25,
    unique_by=lambda s: " ".join(s.lower().split()),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    old=GROUPS,
    new=GROUPS,
    seed=st.integers(min_value=-(2**31), max_value=2**31),
    shares=st.tuples(st.integers(0, 10), st.integers(0, 10), st.integers(0, 10)).filter(
        lambda t: sum(t) > 0
    ),
    order=st.randoms(use_true_random=False),
)
def test_property_existing_cases_never_move_when_rows_are_added(
    old: list[str], new: list[str], seed: int, shares: tuple[int, int, int], order: Any
) -> None:
    """Whatever rows are added (and in whatever order), every existing case keeps its partition."""
    total = sum(shares)
    fractions = {
        "development": shares[0] / total,
        "calibration": shares[1] / total,
        "held_out": 1 - (shares[0] + shares[1]) / total,
    }
    mapping = {
        "name": "prop",
        "input": "question",
        "response": "answer",
        "grading_notes": {"value": "notes"},
        "slice": {"value": "all"},
        "partition": {"assign": {"seed": seed, **fractions}},
        "reviews": {"form": "wide", "columns": ["r1"]},
        "labels": {0: "fail", 1: "pass"},
        "rubric": {"labels": ["pass", "fail"]},
        "adjudication": {"rule": "majority"},
    }

    def frame(inputs: list[str]) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "question": inputs,
                "answer": [f"a:{q}" for q in inputs],
                "r1": [i % 2 for i in range(len(inputs))],
            }
        )

    before = {c.case_id: c.partition.value for c in gold_from_dataframe(frame(old), mapping).cases}
    grown = old + [
        q
        for q in new
        if " ".join(q.lower().split()) not in {" ".join(o.lower().split()) for o in old}
    ]
    order.shuffle(grown)
    after = {c.case_id: c.partition.value for c in gold_from_dataframe(frame(grown), mapping).cases}
    assert {cid: after[cid] for cid in before} == before
    # A partition with share 0 never receives a case.
    for name, share in fractions.items():
        if share == 0:
            assert name not in after.values()


def test_assign_partition_follows_the_declared_shares() -> None:
    fractions = {"development": 0.5, "calibration": 0.2, "held_out": 0.3}
    counts = Counter(assign_partition(f"group-{i}", 7, fractions).value for i in range(6000))
    for name, share in fractions.items():
        assert abs(counts[name] / 6000 - share) < 0.025, counts
    # Another seed gives another split of the same groups.
    other = [assign_partition(f"group-{i}", 8, fractions).value for i in range(200)]
    assert other != [assign_partition(f"group-{i}", 7, fractions).value for i in range(200)]


def test_a_changed_seed_would_move_cases_and_is_refused_without_force(tmp_path: Path) -> None:
    mapping = write_mapping(tmp_path / "m.yaml", MAPPING)
    source = write_csv(tmp_path / "s.csv", DONE_WHEN_COLUMNS, _long_rows(BASE_CASES))
    out = tmp_path / "gold"
    assert cli("import", "table", source, "--mapping", mapping, "--out", out).exit_code == 0
    before = (out / "gold.jsonl").read_bytes()
    reseeded = write_mapping(tmp_path / "m2.yaml", MAPPING.replace("seed: 11", "seed: 12"))
    refused = cli("import", "table", source, "--mapping", reseeded, "--out", out)
    assert refused.exit_code == 2
    assert "[partition_moved]" in refused.output and "held_out" in refused.output
    assert (out / "gold.jsonl").read_bytes() == before
    dropped = write_csv(tmp_path / "fewer.csv", DONE_WHEN_COLUMNS, _long_rows(BASE_CASES[1:]))
    refused = cli("import", "table", dropped, "--mapping", mapping, "--out", out)
    assert (
        refused.exit_code == 2 and "[case_removed]" in refused.output and "c000" in refused.output
    )
    assert (
        cli("import", "table", source, "--mapping", reseeded, "--out", out, "--force").exit_code
        == 0
    )


def test_refuses_to_overwrite_a_dataset_it_did_not_write(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    shutil.copytree(ROOT / "data" / "demo", out)
    before = snapshot(out)
    result = cli(
        "import",
        "table",
        EXAMPLE / "reviews.csv",
        "--mapping",
        EXAMPLE / "mapping.yaml",
        "--out",
        out,
    )
    assert result.exit_code == 2 and "[out_not_empty]" in result.output
    assert snapshot(out) == before


# --------------------------------------------------------------------------- errors


def test_unmapped_labels_list_every_value_with_its_rows(tmp_path: Path) -> None:
    rows = _long_rows(BASE_CASES[:6])
    rows[1][4] = "unsure"  # line 3
    rows[7][4] = "unsure"  # line 9
    rows[10][4] = "n/a"  # line 12
    source = write_csv(tmp_path / "s.csv", DONE_WHEN_COLUMNS, rows)
    mapping = write_mapping(tmp_path / "m.yaml", MAPPING)
    result = cli("import", "table", source, "--mapping", mapping, "--out", tmp_path / "gold")
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    problems = [line for line in result.output.splitlines() if "[label_unmapped]" in line]
    assert len(problems) == 2
    unsure = next(p for p in problems if "'unsure'" in p)
    assert (
        unsure.startswith(f"{source}:3:")
        and "lines 3, 9)" in unsure
        and "Fix: add 'unsure'" in unsure
    )
    na = next(p for p in problems if "'n/a'" in p)
    assert na.startswith(f"{source}:12:") and "line 12)" in na
    assert not (tmp_path / "gold").exists()


def test_mapping_errors_are_all_listed_with_lines_and_fixes(tmp_path: Path) -> None:
    source = write_csv(tmp_path / "s.csv", DONE_WHEN_COLUMNS, _long_rows(BASE_CASES[:3]))
    mapping = write_mapping(
        tmp_path / "m.yaml",
        """
name: broken
case_id: id
input: qestion
response: answer
slice: topic
colour: blue
partition: {assign: {seed: 1, development: 0.5, calibration: 0.3, held_out: 0.3}}
reviews: {form: long, reviewer: reviewer, label: verdcit}
adjudication: {rule: vote}
""",
    )
    result = cli("import", "table", source, "--mapping", mapping, "--out", tmp_path / "gold")
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if " error: " in line]
    by_code: dict[str, list[str]] = defaultdict(list)
    for line in lines:
        by_code[re.search(r"\[([a-z_]+)\]", line).group(1)].append(line)
    loc = str(mapping)
    assert any(
        line.startswith(f"{loc}:6:") and "colour" in line
        for line in by_code["mapping_field_unknown"]
    )
    assert any(
        line.startswith(f"{loc}:7:") and "add up to 1.1" in line
        for line in by_code["mapping_invalid"]
    )
    assert any(
        line.startswith(f"{loc}:9:") and "rule" in line and "majority" in line
        for line in by_code["mapping_invalid"]
    )
    assert any(
        line.startswith(f"{loc}:1:") or "grading" in line for line in by_code["mapping_invalid"]
    )
    unknown = by_code["mapping_column_unknown"]
    assert any(
        line.startswith(f"{loc}:3:") and "did you mean 'question'" in line for line in unknown
    )
    assert any(
        line.startswith(f"{loc}:8:") and "did you mean 'verdict'" in line for line in unknown
    )
    assert all("Fix: " in line for line in lines)
    assert len(lines) >= 6


def test_mapping_file_yaml_error_has_its_line(tmp_path: Path) -> None:
    mapping = write_mapping(tmp_path / "m.yaml", "name: x\ninput: [unclosed\nresponse: y\n")
    with pytest.raises(WorkbenchError) as info:
        load_mapping(mapping)
    assert info.value.problems[0].code == "mapping_yaml"
    assert re.match(rf"{re.escape(str(mapping))}:\d+$", info.value.problems[0].location)


def test_row_problems_are_listed_together(tmp_path: Path) -> None:
    rows = _long_rows(BASE_CASES[:4])
    rows[0][1] = ""  # line 2: empty question
    rows[4][3] = rows[3][3]  # line 6: rev-0 reviews c001 twice (rows 5 and 6)
    rows[6][2] = "Changed."  # line 8: c002's rows disagree on the answer
    source = write_csv(tmp_path / "s.csv", DONE_WHEN_COLUMNS, rows)
    mapping = write_mapping(tmp_path / "m.yaml", MAPPING)
    with pytest.raises(WorkbenchError) as info:
        import_table(source, tmp_path / "gold", mapping=mapping)
    codes = {p.code: p for p in info.value.problems}
    assert {"value_missing", "duplicate_reviewer", "case_rows_conflict"} <= set(codes)
    assert codes["value_missing"].location == f"{source}:2"
    assert "lines 5, 6" in codes["duplicate_reviewer"].message
    assert (
        "c002" in codes["case_rows_conflict"].message
        and "lines 8, 9, 10" in codes["case_rows_conflict"].message
    )


def test_min_reviews_and_grading_evidence_are_checked(tmp_path: Path) -> None:
    rows = [
        ["c1", "Q1?", "A1.", "rev-0", "correct", "t", ""],
        ["c1", "Q1?", "A1.", "rev-1", "correct", "t", ""],
        ["c2", "Q2?", "A2.", "rev-0", "correct", "t", "ref"],
    ]
    source = write_csv(tmp_path / "s.csv", [*DONE_WHEN_COLUMNS, "ref"], rows)
    text = (
        MAPPING.replace('grading_notes: {value: "Must be correct."}', "reference: ref")
        + "rubric: {min_reviews: 2}\n"
    )
    with pytest.raises(WorkbenchError) as info:
        import_table(source, tmp_path / "gold", mapping=write_mapping(tmp_path / "m.yaml", text))
    codes = {p.code: p for p in info.value.problems}
    assert codes["too_few_reviews"].location == f"{source}:4"
    assert (
        codes["grading_evidence_missing"].location == f"{source}:2"
        and "lines 2, 3" in codes["grading_evidence_missing"].message
    )


# --------------------------------------------------------------------------- forms and rules


WIDE_HEADER = ["question", "answer", "topic", "ann_a", "ann_b", "final"]


def test_wide_columns_rules_and_pending_adjudication(tmp_path: Path) -> None:
    rows = [
        ["Q1?", "A1.", "t1", "1", "1", ""],  # agree pass
        ["Q2?", "A2.", "t1", "1", "0", ""],  # tie: majority cannot settle
        ["Q3?", "A3.", "t2", "0", "0", ""],  # agree fail
        ["Q4?", "A4.", "t2", "1", "0", "0"],  # column decides
        ["Q5?", "A5.", "t2", "1", "", ""],  # one review only
    ]
    source = write_csv(tmp_path / "wide.csv", WIDE_HEADER, rows)
    mapping = write_mapping(
        tmp_path / "m.yaml",
        """
name: wide
input: question
response: answer
grading_notes: {value: "Correct."}
slice: topic
partition: {assign: {seed: 3, development: 1, calibration: 0, held_out: 0}}
reviews: {form: wide, columns: {alice: ann_a, bob: ann_b}}
labels: {0: fail, 1: pass}
adjudication: {column: final, rule: majority, adjudicator: {value: lead}}
""",
    )
    out = tmp_path / "gold"
    result = cli("import", "table", source, "--mapping", mapping, "--out", out)
    assert result.exit_code == 4, result.output
    gold = read_gold(out)
    expected_ids = [
        "case-" + hashlib.sha256(f"{q}\x1f{a}".encode()).hexdigest()[:16] for q, a, *_ in rows
    ]
    assert [c["case_id"] for c in gold] == expected_ids
    labels = [c.get("adjudication", {}).get("label") for c in gold]
    assert labels == ["pass", None, "fail", "fail", "pass"]
    assert gold[3]["adjudication"]["adjudicator"] == "lead"
    assert gold[0]["adjudication"]["adjudicator"] == "rule:majority"
    assert [len(c["reviews"]) for c in gold] == [2, 2, 2, 2, 1]
    assert {c["partition"] for c in gold} == {"development"}
    pending = list(csv.DictReader(io.StringIO((out / PENDING_FILE).read_text())))
    assert [p["case_id"] for p in pending] == [expected_ids[1]]
    assert pending[0]["source_rows"] == "line 3" and pending[0]["reviews"] == "alice=pass; bob=fail"
    assert expected_ids[1] in result.stderr and "need an adjudicator" in result.stderr
    # validate reports the case until a person decides it (beside the unset risks), and only that.
    assert {p.code for p in validate_dataset(out).errors} == {
        "rubric_risk_unset",
        "unresolved_disagreement",
    }
    set_risks(out)
    assert [p.code for p in validate_dataset(out).errors] == ["unresolved_disagreement"]
    # Once the adjudicator's label is in the source, the list is gone and the dataset validates.
    rows[1][5] = "1"
    write_csv(source, WIDE_HEADER, rows)
    assert cli("import", "table", source, "--mapping", mapping, "--out", out).exit_code == 0
    assert not (out / PENDING_FILE).exists()
    assert validate_dataset(out).ok


@pytest.mark.parametrize(
    ("rule", "votes", "expected"),
    [
        ("majority", ["pass", "pass", "fail"], "pass"),
        ("majority", ["pass", "fail"], None),
        ("majority", ["pass", "fail", "review_required"], None),
        ("any_fail", ["pass", "pass", "fail"], "fail"),
        ("any_fail", ["pass", "pass"], "pass"),
        ("any_fail", ["pass", "review_required"], None),
        ("unanimous_else_review", ["fail", "fail", "fail"], "fail"),
        ("unanimous_else_review", ["pass", "pass", "fail"], None),
    ],
)
def test_adjudication_rules(
    tmp_path: Path, rule: str, votes: list[str], expected: str | None
) -> None:
    frame = pd.DataFrame(
        [
            {"id": "c1", "q": "Q?", "a": "A.", "who": f"r{i}", "label": v}
            for i, v in enumerate(votes)
        ]
    )
    mapping = {
        "name": "rules",
        "case_id": "id",
        "input": "q",
        "response": "a",
        "grading_notes": {"value": "n"},
        "slice": {"value": "s"},
        "partition": {"assign": {"seed": 1, "development": 1, "calibration": 0, "held_out": 0}},
        "reviews": {"form": "long", "reviewer": "who", "label": "label"},
        "rubric": {
            "labels": ["pass", "fail", "review_required"],
            "abstain_labels": ["review_required"],
        },
        "adjudication": {"rule": rule},
    }
    result = gold_from_dataframe(frame, mapping)
    assert result.cases[0].gold_label == expected
    assert [p.case_id for p in result.pending] == ([] if expected else ["c1"])


def test_reviewer_label_pairs_partition_column_and_group_leakage(tmp_path: Path) -> None:
    header = [
        "qid",
        "question",
        "answer",
        "split",
        "family",
        "r1",
        "l1",
        "r2",
        "l2",
        "tags",
        "model",
    ]
    rows = [
        ["q1", "Q1?", "A1.", "train", "f1", "ann-7", "good", "ann-9", "good", "short,easy", "m-a"],
        ["q2", "Q2?", "A2.", "test", "f2", "ann-7", "bad", "ann-8", "bad", "", "m-b"],
        ["q3", "Q3?", "A3.", "train", "f1", "ann-8", "good", "", "", "long", "m-a"],
    ]
    source = write_csv(tmp_path / "pairs.csv", header, rows)
    text = """
name: pairs
case_id: qid
input: question
response: answer
reference: {value: "The reference."}
slice: {value: general}
group: family
partition: {column: split, values: {train: development, dev: calibration, test: held_out}}
tags: [tags]
metadata: [model]
reviews:
  form: wide
  pairs: [{reviewer: r1, label: l1}, {reviewer: r2, label: l2}]
labels: {good: pass, bad: fail}
adjudication: {rule: unanimous_else_review}
"""
    out = tmp_path / "gold"
    summary = import_table(source, out, mapping=write_mapping(tmp_path / "m.yaml", text))[1]
    assert summary.partitions == {"development": 2, "calibration": 0, "held_out": 1}
    gold = {c["case_id"]: c for c in read_gold(out)}
    assert [(r["reviewer"], r["label"]) for r in gold["q1"]["reviews"]] == [
        ("ann-7", "pass"),
        ("ann-9", "pass"),
    ]
    assert [(r["reviewer"], r["label"]) for r in gold["q3"]["reviews"]] == [("ann-8", "pass")]
    assert gold["q1"]["tags"] == ["short", "easy"] and gold["q1"]["metadata"] == {"model": "m-a"}
    assert gold["q1"]["group"] == gold["q3"]["group"] == "f1"
    # The same family in two partitions is refused, with both rows.
    rows[2][3] = "test"
    write_csv(source, header, rows)
    with pytest.raises(WorkbenchError) as info:
        import_table(source, tmp_path / "other", mapping=tmp_path / "m.yaml")
    leak = next(p for p in info.value.problems if p.code == "group_leakage")
    assert (
        "'f1'" in leak.message
        and "development: line 2" in leak.message
        and "held_out: line 4" in leak.message
    )
    rows[2][3] = "later"
    write_csv(source, header, rows)
    with pytest.raises(WorkbenchError) as info:
        import_table(source, tmp_path / "other", mapping=tmp_path / "m.yaml")
    assert [p.code for p in info.value.problems] == ["partition_value_unknown"]


def test_jsonl_parquet_and_dataframe_give_the_same_gold_as_csv(tmp_path: Path) -> None:
    frame = pd.read_csv(EXAMPLE / "reviews.csv", dtype=str, keep_default_na=False)
    (tmp_path / "reviews.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in frame.to_dict("records"))
    )
    frame.to_parquet(tmp_path / "reviews.parquet")
    mapping = EXAMPLE / "mapping.yaml"
    golds = {}
    for name in ("reviews.jsonl", "reviews.parquet"):
        out = tmp_path / name.replace(".", "_")
        import_table(tmp_path / name, out, mapping=mapping)
        golds[name] = (out / "gold.jsonl").read_bytes()
    import_table(EXAMPLE / "reviews.csv", tmp_path / "csv", mapping=mapping)
    golds["csv"] = (tmp_path / "csv" / "gold.jsonl").read_bytes()
    built = gold_from_dataframe(frame, mapping)
    golds["frame"] = built.gold_text().encode("utf-8")
    assert len(set(golds.values())) == 1
    written = built.write(tmp_path / "frame")
    assert written.cases == 16 and (tmp_path / "frame" / "gold.jsonl").read_bytes() == golds["csv"]
    # The registry runs the same importer.
    assert (
        run_importer("table", EXAMPLE / "reviews.csv", tmp_path / "registry", mapping=mapping).cases
        == 16
    )


def test_dataframe_api_with_numeric_labels_and_errors_by_index(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {"prompt": ["P1", "P2", "P3"], "output": ["O1", "O2", "O3"], "human": [1, 0, 2]},
        index=[10, 11, 12],
    )
    mapping = TableMapping.model_validate(
        {
            "name": "frame",
            "input": "prompt",
            "response": "output",
            "grading_notes": {"value": "n"},
            "slice": {"value": "s"},
            "partition": {
                "assign": {"seed": 5, "development": 0.5, "calibration": 0.5, "held_out": 0}
            },
            "reviews": {"form": "wide", "columns": ["human"]},
            "labels": {0: "fail", 1.0: "pass"},
            "adjudication": {"rule": "majority"},
        }
    )
    with pytest.raises(WorkbenchError) as info:
        gold_from_dataframe(frame, mapping)
    [problem] = info.value.problems
    assert (
        problem.code == "label_unmapped"
        and problem.location == "DataFrame row 12"
        and "'2'" in problem.message
    )
    result = gold_from_dataframe(frame.loc[[10, 11]], mapping)
    assert [c.gold_label for c in result.cases] == ["pass", "fail"]
    assert result.frame()["gold_label"].tolist() == ["pass", "fail"]


def test_missing_columns_are_reported_for_dataframes_too() -> None:
    frame = pd.DataFrame({"q": ["x"], "a": ["y"], "lab": ["pass"]})
    with pytest.raises(WorkbenchError) as info:
        gold_from_dataframe(
            frame,
            {
                "name": "x",
                "input": "question",
                "response": "a",
                "grading_notes": {"value": "n"},
                "slice": {"value": "s"},
                "partition": {
                    "assign": {"seed": 1, "development": 1, "calibration": 0, "held_out": 0}
                },
                "reviews": {"form": "wide", "columns": ["label"]},
                "adjudication": {"rule": "majority"},
            },
        )
    assert {p.code for p in info.value.problems} == {"mapping_column_unknown"}
    messages = [p.message for p in info.value.problems]
    assert any("no column 'question'" in m for m in messages) and any(
        "no column 'label'" in m for m in messages
    )


# --------------------------------------------------------------------------- rubric risk


def test_rubric_risk_unset_is_refused_with_every_other_problem(tmp_path: Path) -> None:
    path = tmp_path / "rubric.yaml"
    path.write_text(
        "name: r\nversion: '1'\nlabels: [pass, fail]\npass_label: pass\nfail_label: nope\nslices:\n"
        "  a:\n    description: d\n    risk: unset\n  b: {risk: low}\n"
    )
    with pytest.raises(WorkbenchError) as info:
        load_rubric(path)
    codes = [(p.code, p.location) for p in info.value.problems]
    assert ("rubric_risk_unset", f"{path}:9") in codes
    assert any(code == "rubric_invalid" for code, _ in codes)
    path.write_text(path.read_text().replace("fail_label: nope", "fail_label: fail"))
    with pytest.raises(WorkbenchError) as info:
        load_rubric(path)
    assert [p.code for p in info.value.problems] == ["rubric_risk_unset"]
    assert "critical, high, medium or low" in info.value.problems[0].fix
    path.write_text(path.read_text().replace("risk: unset", "risk: high"))
    assert load_rubric(path).slices["a"].risk == "high"


def test_table_mapping_fields_are_documented() -> None:
    from workbench.importers.table import _mapping as m

    doc = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    section = doc.split("## Table mapping", 1)[1].split("\n## ", 1)[0]
    models = [
        m.TableMapping,
        m.Column,
        m.Text,
        m.Contexts,
        m.Group,
        m.Assign,
        m.PartitionSpec,
        m.ReviewerColumns,
        m.ReviewPair,
        m.Reviews,
        m.AdjudicationSpec,
        m.RubricHints,
    ]
    missing = [
        f"{model.__name__}.{name}"
        for model in models
        for name in model.model_fields
        if f"`{name}`" not in section or name in undocumented_fields(model, "schema_version")
    ]
    assert missing == []
    assert all(f"`{rule}`" in section for rule in m.RULES)


def test_force_over_a_foreign_dataset_keeps_none_of_its_decisions(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    shutil.copytree(ROOT / "data" / "demo", out)
    rubric = (out / "rubric.yaml").read_text()
    (out / "rubric.yaml").write_text(
        rubric + "  returns: {risk: low}\n"
    )  # a slice the example also has
    result = cli(
        "import",
        "table",
        EXAMPLE / "reviews.csv",
        "--mapping",
        EXAMPLE / "mapping.yaml",
        "--out",
        out,
        "--force",
    )
    assert result.exit_code == 0, result.output
    drafted = yaml.safe_load((out / "rubric.yaml").read_text())
    assert {name: spec["risk"] for name, spec in drafted["slices"].items()} == {
        "account": "unset",
        "returns": "unset",
        "shipping": "unset",
    }
    assert "Tallowmere" not in (out / "card.md").read_text()


def test_empty_rubric_label_in_the_mapping_is_a_mapping_error(tmp_path: Path) -> None:
    mapping = write_mapping(
        tmp_path / "m.yaml",
        MAPPING.replace(
            "labels: {correct: pass, incorrect: fail}", 'labels: {correct: pass, incorrect: ""}'
        ),
    )
    with pytest.raises(WorkbenchError) as info:
        load_mapping(mapping)
    [problem] = info.value.problems
    assert (
        problem.code == "mapping_invalid"
        and problem.location == f"{mapping}:9"
        and "labels.incorrect" in problem.message
    )


def test_a_tab_separated_export_imports_as_its_csv_does(tmp_path: Path) -> None:
    """A .tsv (tab-separated, quoted cells with commas and tabs) gives the same gold as the
    same table as CSV; before, it was refused as an unknown format."""
    frame = pd.read_csv(EXAMPLE / "reviews.csv", dtype=str)
    frame.loc[frame["id"] == frame["id"][0], "answer"] = 'Returns, "exchanges"\tand refunds'
    frame.to_csv(tmp_path / "reviews.csv", index=False)
    frame.to_csv(tmp_path / "reviews.tsv", index=False, sep="\t")
    mapping = EXAMPLE / "mapping.yaml"
    for name in ("reviews.csv", "reviews.tsv"):
        result = cli(
            "import", "table", tmp_path / name, "--mapping", mapping, "--out", tmp_path / name[-3:]
        )
        assert result.exit_code == 0, result.output
    gold = [json.loads(line) for line in (tmp_path / "tsv" / "gold.jsonl").read_text().splitlines()]
    assert gold == [
        json.loads(line) for line in (tmp_path / "csv" / "gold.jsonl").read_text().splitlines()
    ]
    assert 'Returns, "exchanges"\tand refunds' in {case["response"] for case in gold}
    unknown = cli(
        "import", "table", EXAMPLE / "mapping.yaml", "--mapping", mapping, "--out", tmp_path / "x"
    )
    assert unknown.exit_code == 2 and ".tsv" in unknown.output
