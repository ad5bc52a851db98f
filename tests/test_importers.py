"""Importers: EvalsBench and PandaLM into the gold format, read from ../shared/datasets.

Tests that need the public datasets skip only when ``../shared/datasets`` (or
``$WORKBENCH_DATASETS_DIR``) is absent, and never under ``WORKBENCH_REQUIRE_DATASETS=1`` (CI);
tests of bad input use small synthetic files and always run.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest
import yaml
from _datasets import DATASETS, require
from click.testing import CliRunner

from workbench.agreement import human_agreement
from workbench.cli.importers import import_group
from workbench.errors import WorkbenchError
from workbench.gold import CARD_FIELDS, GoldDataset, load_dataset, validate_dataset
from workbench.importers import (
    ImportSummary,
    available_importers,
    get_importer,
    import_evalsbench,
    import_pandalm,
    run_importer,
)
from workbench.importers.evalsbench import TOPIC_THEMES
from workbench.importers.pandalm import NO_MAJORITY, render_pair

JUDGE_VISIBLE = ("input", "response", "grading_notes", "reference", "contexts")
EVALSBENCH_COLUMNS = ["topic", "question", "grading_notes", "target", "response", "notes"]


@pytest.fixture(scope="session")
def datasets_dir() -> Path:
    """The public datasets (a test using this fixture is marked ``datasets``: see
    tests/_datasets.py).
    """
    return require(DATASETS)


@pytest.fixture(scope="module")
def evalsbench_csv(datasets_dir: Path) -> Path:
    return datasets_dir / "evalsbench" / "benchmark_df.csv"


@pytest.fixture(scope="module")
def evalsbench_out(
    evalsbench_csv: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[ImportSummary, Path]:
    out = tmp_path_factory.mktemp("evalsbench") / "gold"
    return import_evalsbench(evalsbench_csv, out), out


@pytest.fixture(scope="module")
def evalsbench(evalsbench_out: tuple[ImportSummary, Path]) -> GoldDataset:
    return load_dataset(evalsbench_out[1])


@pytest.fixture(scope="module")
def pandalm_json(datasets_dir: Path) -> Path:
    return datasets_dir / "pandalm" / "testset-v1.json"


@pytest.fixture(scope="module")
def pandalm_out(
    pandalm_json: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[ImportSummary, Path]:
    out = tmp_path_factory.mktemp("pandalm") / "gold"
    return import_pandalm(pandalm_json, out), out


@pytest.fixture(scope="module")
def pandalm(pandalm_out: tuple[ImportSummary, Path]) -> GoldDataset:
    return load_dataset(pandalm_out[1])


def _front_matter(card: Path) -> dict[str, object]:
    text = card.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text[4 : text.index("\n---", 4)])


def _write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(import_group, list(args))
    return result.exit_code, result.output


# --- registry --------------------------------------------------------------------------


def test_registry_lists_and_resolves_importers() -> None:
    assert {"evalsbench", "pandalm"} <= set(available_importers())
    assert get_importer("evalsbench") is import_evalsbench
    with pytest.raises(WorkbenchError) as info:
        get_importer("nope")
    assert info.value.problems[0].code == "unknown_importer"
    assert "evalsbench" in info.value.problems[0].fix


def test_run_importer_rejects_unknown_options(tmp_path: Path) -> None:
    with pytest.raises(WorkbenchError) as info:
        run_importer("pandalm", tmp_path / "x.json", tmp_path / "out", colour="blue")
    assert info.value.problems[0].code == "bad_importer_options"
    assert "force" in info.value.problems[0].fix


# --- EvalsBench ------------------------------------------------------------------------


def test_evalsbench_validates_cleanly(evalsbench_out: tuple[ImportSummary, Path]) -> None:
    summary, out = evalsbench_out
    report = validate_dataset(out)
    assert report.problems == ()
    assert summary.cases == 160
    assert summary.results is None
    assert sorted(summary.files) == ["card.md", "gold.jsonl", "rubric.yaml"]
    assert not (out / "results.jsonl").exists()
    # the judgment contract nobody stated is left out of the file, not written as empty values
    from workbench.gold import CONTRACT_FIELDS

    written = yaml.safe_load((out / "rubric.yaml").read_text(encoding="utf-8"))
    assert "criterion" in written and not set(CONTRACT_FIELDS) & set(written)


def test_evalsbench_counts_groups_and_labels(evalsbench: GoldDataset) -> None:
    cases = list(evalsbench.cases.values())
    assert len(cases) == 160
    assert Counter(case.gold_label for case in cases) == {"pass": 80, "fail": 80}
    by_group: dict[str, list[str]] = defaultdict(list)
    partitions: dict[str, set[str]] = defaultdict(set)
    for case in cases:
        by_group[case.group].append(case.gold_label or "")
        partitions[case.group].add(case.partition.value)
    assert len(by_group) == 80
    assert all(sorted(labels) == ["fail", "pass"] for labels in by_group.values())
    assert all(len(parts) == 1 for parts in partitions.values())
    assert {p for parts in partitions.values() for p in parts} == {
        "development",
        "calibration",
        "held_out",
    }


def test_evalsbench_labels_are_honestly_constructed(evalsbench: GoldDataset) -> None:
    assert evalsbench.rubric.min_reviews == 1
    assert (evalsbench.rubric.pass_label, evalsbench.rubric.fail_label) == ("pass", "fail")
    for case in evalsbench.cases.values():
        assert [r.reviewer for r in case.reviews] == ["dataset-construction"]
        assert case.adjudication is not None
        assert case.adjudication.adjudicator == "dataset-construction"
        assert case.adjudication.label == case.reviews[0].label
        assert case.adjudication.reason
        assert case.response_hash == hashlib.sha256(case.response.encode("utf-8")).hexdigest()


def test_evalsbench_notes_never_judge_visible(
    evalsbench_csv: Path, evalsbench: GoldDataset
) -> None:
    with open(evalsbench_csv, encoding="utf-8-sig", newline="") as fh:
        notes = [row["notes"].strip() for row in csv.DictReader(fh) if row["notes"].strip()]
    assert len(notes) == 80
    visible = []
    for case in evalsbench.cases.values():
        for name in JUDGE_VISIBLE:
            value = getattr(case, name)
            visible.extend(value if isinstance(value, list) else [value] if value else [])
    try:
        from workbench.judges import JudgeInput
    except ImportError:
        pass
    else:
        visible.extend(
            JudgeInput.from_case(case).model_dump_json() for case in evalsbench.cases.values()
        )
    for note in notes:
        assert not any(note in text for text in visible), note[:60]
    reasons = " ".join(
        case.adjudication.reason or "" for case in evalsbench.cases.values() if case.adjudication
    )
    assert all(note in reasons for note in notes), (
        "the upstream notes must be kept where judges never read"
    )


def test_evalsbench_slices_and_card(
    evalsbench: GoldDataset, evalsbench_out: tuple[ImportSummary, Path], evalsbench_csv: Path
) -> None:
    topics = {case.metadata["topic"] for case in evalsbench.cases.values()}
    assert topics == set(TOPIC_THEMES), "every upstream topic needs a hand-assigned theme"
    assert "other" not in {case.slice for case in evalsbench.cases.values()}
    assert all(spec.risk.value == "medium" for spec in evalsbench.rubric.slices.values())
    front = _front_matter(evalsbench_out[1] / "card.md")
    for name in (
        *CARD_FIELDS,
        "name",
        "version",
        "excluded_domains",
        "privacy_handling",
        "source_authority",
        "licence",
        "provenance",
    ):
        assert front.get(name), name
    provenance = front["provenance"]
    assert isinstance(provenance, dict)
    assert provenance["upstream"] == "explodinggradients/EvalsBench@26b3b947"
    assert provenance["source_sha256"] == hashlib.sha256(evalsbench_csv.read_bytes()).hexdigest()
    assert "constructed" in str(front["intended_use"])


def test_evalsbench_is_deterministic_and_slice_by_topic(
    evalsbench_csv: Path, evalsbench_out: tuple[ImportSummary, Path], tmp_path: Path
) -> None:
    again = tmp_path / "again"
    import_evalsbench(evalsbench_csv, again)
    assert (again / "gold.jsonl").read_bytes() == (evalsbench_out[1] / "gold.jsonl").read_bytes()
    by_topic = tmp_path / "topic"
    run_importer("evalsbench", evalsbench_csv, by_topic, slice_by="topic")
    dataset = load_dataset(by_topic)
    assert len(dataset.rubric.slices) == 80
    first = {c.case_id: c.partition for c in load_dataset(again).cases.values()}
    assert {c.case_id: c.partition for c in dataset.cases.values()} == first


def test_evalsbench_cli(evalsbench_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "eb"
    code, output = _invoke("evalsbench", str(evalsbench_csv), "--out", str(out))
    assert code == 0, output
    for name in ("gold.jsonl", "rubric.yaml", "card.md"):
        assert (out / name).is_file()
    assert "160 evalsbench case(s)" in output
    code, output = _invoke("evalsbench", str(evalsbench_csv), "--out", str(out))
    assert code == 2 and "out_not_empty" in output and "Traceback" not in output
    code, output = _invoke("evalsbench", str(evalsbench_csv), "--out", str(out), "--force")
    assert code == 0, output


def test_cli_help_has_docstrings() -> None:
    for command in ("evalsbench", "pandalm"):
        code, output = _invoke(command, "--help")
        assert code == 0 and "--out" in output and "Import" in output


def test_evalsbench_missing_file_exits_2(tmp_path: Path) -> None:
    code, output = _invoke("evalsbench", str(tmp_path / "nope.csv"), "--out", str(tmp_path / "out"))
    assert code == 2 and "[source_missing]" in output
    assert "does not exist" in output and "Traceback" not in output
    assert not (tmp_path / "out").exists()


def test_evalsbench_missing_columns_named_all_at_once(tmp_path: Path) -> None:
    header = [c for c in EVALSBENCH_COLUMNS if c not in ("notes", "target")]
    source = _write_csv(tmp_path / "bad.csv", header, [["t", "q", "g", "r"]])
    code, output = _invoke("evalsbench", str(source), "--out", str(tmp_path / "out"))
    assert code == 2 and output.count("[missing_column]") == 2
    assert "'notes'" in output and "'target'" in output
    assert "Traceback" not in output


def test_evalsbench_bad_rows_reported_together(tmp_path: Path) -> None:
    rows = [
        ["t", "q1", "g", "pass", "good answer", ""],
        ["t", "q1", "g", "maybe", "other answer", ""],
        ["t", "q2", "", "fail", "answer", "dropped x"],
        ["t", "q1", "g", "pass", "good answer", ""],
    ]
    source = _write_csv(tmp_path / "bad.csv", EVALSBENCH_COLUMNS, rows)
    with pytest.raises(WorkbenchError) as info:
        import_evalsbench(source, tmp_path / "out")
    codes = {p.code for p in info.value.problems}
    assert codes == {"unknown_target", "empty_field", "duplicate_row"}
    assert any(p.location.endswith(":3") for p in info.value.problems if p.code == "unknown_target")


def test_evalsbench_synthetic_round_trip(tmp_path: Path) -> None:
    rows = [
        ["Pre-money valuation techniques", "How?", "must say DCF", "pass", "DCF and comps.", ""],
        [
            "Pre-money valuation techniques",
            "How?",
            "must say DCF",
            "fail",
            "Comps only.",
            "Removed DCF.",
        ],
        ["A topic nobody mapped", "Why?", "must say because", "PASS", "Because.", ""],
    ]
    source = _write_csv(tmp_path / "mini.csv", EVALSBENCH_COLUMNS, rows)
    summary = import_evalsbench(source, tmp_path / "out")
    dataset = load_dataset(tmp_path / "out")
    assert summary.cases == 3 and summary.groups == 2
    assert {c.slice for c in dataset.cases.values()} == {"valuation", "other"}
    assert any("other" in note for note in summary.notes)
    assert any("differs from the reference copy" in note for note in summary.notes)
    assert any("exactly one pass and one fail" in note for note in summary.notes)


# --- PandaLM ---------------------------------------------------------------------------


def test_pandalm_validates_cleanly(
    pandalm_out: tuple[ImportSummary, Path], pandalm: GoldDataset
) -> None:
    summary, out = pandalm_out
    assert validate_dataset(out).problems == ()
    assert summary.cases == 999 and summary.results is None
    rubric = pandalm.rubric
    assert rubric.labels == ["0", "1", "2"]
    assert rubric.pass_label is None and rubric.fail_label is None
    assert rubric.min_reviews == 3
    assert len(rubric.slices) == 10
    assert all(spec.risk.value == "medium" for spec in rubric.slices.values())


def test_pandalm_reproduces_published_agreement(pandalm: GoldDataset) -> None:
    report = human_agreement(pandalm)
    overall = report.overall
    assert overall.cases == 999
    assert overall.fleiss_kappa.value is not None
    assert round(overall.fleiss_kappa.value, 4) == 0.8642
    pairs = {(p.reviewer_a, p.reviewer_b): p for p in overall.pairs}
    expected = {
        ("annotator1", "annotator2"): (0.8520, 0.913),
        ("annotator1", "annotator3"): (0.8789, 0.929),
        ("annotator2", "annotator3"): (0.8617, 0.918),
    }
    assert set(pairs) == set(expected)
    for key, (kappa, raw) in expected.items():
        pair = pairs[key]
        assert pair.n == 999
        assert pair.cohen_kappa.value is not None and round(pair.cohen_kappa.value, 4) == kappa
        assert pair.raw_agreement.rate is not None and round(pair.raw_agreement.rate, 3) == raw
    assert overall.disagreement.k == 999 - 879
    assert sum(1 for c in pandalm.cases.values() if not c.reviewers_disagree) == 879


def test_pandalm_cases_are_faithful(pandalm_json: Path, pandalm: GoldDataset) -> None:
    items = json.loads(pandalm_json.read_text(encoding="utf-8"))
    assert len(items) == len(pandalm.cases) == 999
    for item in items:
        case = pandalm.cases[f"pandalm-{item['idx']}"]
        labels = [str(item[a]) for a in ("annotator1", "annotator2", "annotator3")]
        assert [r.label for r in case.reviews] == labels
        assert case.adjudication is not None and case.adjudication.adjudicator == "majority-vote"
        assert Counter(labels)[case.adjudication.label] >= 2
        assert case.slice == item["cmp_key"]
        assert f"motivation_app:{item['motivation_app']}" in case.tags
        assert case.response_hash == hashlib.sha256(case.response.encode("utf-8")).hexdigest()
        if isinstance(item["response1"], str) and isinstance(item["response2"], str):
            assert case.response == render_pair(item["response1"], item["response2"])
    # 170 distinct prompts: a prompt never straddles partitions (validation checks groups).
    assert len({c.group for c in pandalm.cases.values()}) == 170


def test_pandalm_card_provenance(
    pandalm_out: tuple[ImportSummary, Path], pandalm_json: Path
) -> None:
    front = _front_matter(pandalm_out[1] / "card.md")
    for name in (
        *CARD_FIELDS,
        "name",
        "version",
        "excluded_domains",
        "privacy_handling",
        "source_authority",
        "licence",
        "provenance",
    ):
        assert front.get(name), name
    provenance = front["provenance"]
    assert isinstance(provenance, dict)
    assert provenance["upstream"] == "WeOpenML/PandaLM@3871806e"
    assert provenance["source_sha256"] == hashlib.sha256(pandalm_json.read_bytes()).hexdigest()


def test_pandalm_cli(pandalm_json: Path, tmp_path: Path) -> None:
    out = tmp_path / "pl"
    code, output = _invoke("pandalm", str(pandalm_json), "--out", str(out))
    assert code == 0, output
    assert (out / "gold.jsonl").is_file() and "999 pandalm case(s)" in output


def _pandalm_item(
    idx: int, labels: tuple[int, int, int], instruction: str = "Say hi"
) -> dict[str, object]:
    return {
        "idx": idx,
        "motivation_app": "Test",
        "cmp_key": "a_b",
        "instruction": instruction,
        "input": "",
        "response1": "hi",
        "response2": "hello",
        "annotator1": labels[0],
        "annotator2": labels[1],
        "annotator3": labels[2],
    }


def test_pandalm_no_majority_becomes_abstain(tmp_path: Path) -> None:
    source = tmp_path / "mini.json"
    source.write_text(
        json.dumps([_pandalm_item(0, (0, 1, 2)), _pandalm_item(1, (1, 1, 2), "Say bye")]),
        encoding="utf-8",
    )
    summary = import_pandalm(source, tmp_path / "out")
    dataset = load_dataset(tmp_path / "out")
    assert dataset.rubric.labels == ["0", "1", "2", NO_MAJORITY]
    assert dataset.rubric.abstain_labels == [NO_MAJORITY]
    assert dataset.cases["pandalm-0"].gold_label == NO_MAJORITY
    assert dataset.cases["pandalm-1"].gold_label == "1"
    assert any("no_majority" in note for note in summary.notes)
    assert "has 1 such item" in str(
        _front_matter(tmp_path / "out" / "card.md")["adjudication_procedure"]
    )


def test_pandalm_malformed_json_exits_2(tmp_path: Path) -> None:
    source = tmp_path / "bad.json"
    source.write_text('[{"idx": 0,\n "motivation_app": }]', encoding="utf-8")
    code, output = _invoke("pandalm", str(source), "--out", str(tmp_path / "out"))
    assert code == 2
    assert "malformed_json" in output and "bad.json:2" in output
    assert "Traceback" not in output


def test_pandalm_bad_items_reported_together(tmp_path: Path) -> None:
    items: list[object] = [_pandalm_item(i, (1, 1, 1), f"p{i}") for i in range(3)]
    del items[0]["annotator3"]  # type: ignore[attr-defined]
    del items[1]["annotator3"]  # type: ignore[attr-defined]
    items[2]["annotator1"] = 7  # type: ignore[index]
    items.append("not an object")
    items.append(_pandalm_item(2, (1, 1, 1), "p9"))
    source = tmp_path / "bad.json"
    source.write_text(json.dumps(items), encoding="utf-8")
    with pytest.raises(WorkbenchError) as info:
        import_pandalm(source, tmp_path / "out")
    problems = {p.code: p for p in info.value.problems}
    assert set(problems) == {"missing_key", "unknown_label", "item_shape", "duplicate_idx"}
    assert (
        "2 places" in problems["missing_key"].message
        and "annotator3" in problems["missing_key"].message
    )
    assert not (tmp_path / "out" / "gold.jsonl").exists()


def test_unwritable_out_is_a_user_error(tmp_path: Path) -> None:
    source = tmp_path / "mini.json"
    source.write_text(json.dumps([_pandalm_item(0, (1, 1, 1))]), encoding="utf-8")
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    code, output = _invoke("pandalm", str(source), "--out", str(blocker / "sub"))
    assert code == 2 and "out_unwritable" in output and "Traceback" not in output
    code, output = _invoke("pandalm", str(source), "--out", str(blocker))
    assert code == 2 and "is a file" in output
    with pytest.raises(WorkbenchError) as info:
        run_importer("pandalm", source, blocker)
    assert info.value.problems[0].code == "out_not_directory"
