"""The committed demo dataset (data/demo) and the two demo judges.

The dataset must validate, match its generator byte for byte, and have the shape the demo
relies on; the judges must make the explainable mistakes they are documented to make.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from workbench.demo.build import build
from workbench.gold import GoldCase, GoldDataset, validate_dataset
from workbench.judges.demo import rubric_judge_v1, rubric_judge_v2

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"
DEMO_FILES = ("gold.jsonl", "rubric.yaml", "card.md", "evidence.jsonl")


@pytest.fixture(scope="module")
def dataset() -> GoldDataset:
    report = validate_dataset(DEMO)
    assert report.errors == [], "\n".join(p.format() for p in report.errors)
    assert report.dataset is not None
    return report.dataset


def _error_class(gold: str | None, verdict: str | None) -> str:
    if verdict == gold:
        return "aligned"
    if gold == "fail" and verdict == "pass":
        return "false_pass"
    if gold == "pass" and verdict == "fail":
        return "false_fail"
    return "other"  # review_required gold, or no verdict


@pytest.fixture(scope="module")
def verdicts(dataset: GoldDataset) -> dict[str, dict[str, tuple[str, str]]]:
    """judge name -> case id -> (error class, reason), over all active cases."""
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for name, metric in (("v1", rubric_judge_v1), ("v2", rubric_judge_v2)):
        per_case: dict[str, tuple[str, str]] = {}
        for case in dataset.cases.values():
            result = metric.score(
                user_input=case.input, response=case.response, grading_notes=case.grading_notes
            )
            assert result.value in ("pass", "fail"), result.reason
            assert isinstance(result.reason, str) and result.reason.strip()
            per_case[case.case_id] = (_error_class(case.gold_label, result.value), result.reason)
        out[name] = per_case
    return out


def _count(
    dataset: GoldDataset, results: dict[str, tuple[str, str]], error: str, tag: str | None = None
) -> int:
    return sum(
        1
        for cid, (cls, _) in results.items()
        if cls == error and (tag is None or tag in dataset.cases[cid].tags)
    )


# ------------------------------------------------------------------------------ dataset


def test_validates_without_errors_or_card_warnings(dataset: GoldDataset) -> None:
    codes = {p.code for p in dataset.warnings}
    assert "card_field_missing" not in codes
    assert "card_missing" not in codes
    assert dataset.card is not None
    for name in ("name", "version", "excluded_domains", "privacy_handling", "source_authority"):
        assert getattr(dataset.card, name), name
    assert isinstance(dataset.card.known_gaps, list) and dataset.card.known_gaps
    assert "synthetic" in dataset.card.body.lower()
    assert "Required:" in dataset.card.body and "Prohibited:" in dataset.card.body


def test_size_slices_and_risk(dataset: GoldDataset) -> None:
    cases = list(dataset.cases.values())
    assert len(cases) >= 240
    slices = {c.slice for c in cases}
    assert len(slices) >= 5
    assert slices == set(dataset.rubric.slices)
    assert len(dataset.rubric.critical_slices) >= 1
    assert dataset.rubric.labels == ["pass", "fail", "review_required"]
    assert dataset.rubric.abstain_labels == ["review_required"]
    assert dataset.rubric.min_reviews == 2
    assert dataset.rubric.criterion


def test_every_partition_holds_every_slice(dataset: GoldDataset) -> None:
    slices = set(dataset.rubric.slices)
    for partition in ("development", "calibration", "held_out"):
        assert {c.slice for c in dataset.partition(partition)} == slices, partition


def test_groups_never_straddle_partitions(dataset: GoldDataset) -> None:
    partitions: dict[str, set[str]] = defaultdict(set)
    for record in dataset.records:
        partitions[record.group].add(record.partition.value)
    assert all(len(p) == 1 for p in partitions.values())
    # Groups are paraphrase families: several responses, and more than one phrasing.
    members: dict[str, list[GoldCase]] = defaultdict(list)
    for case in dataset.cases.values():
        members[case.group].append(case)
    assert all(len(m) >= 3 for m in members.values())
    assert all(len({c.input for c in m}) >= 2 for m in members.values())


def test_two_reviews_disagreement_and_adjudication(dataset: GoldDataset) -> None:
    cases = list(dataset.cases.values())
    assert all(len(c.reviews) == 2 and c.adjudication is not None for c in cases)
    assert all(len({r.reviewer for r in c.reviews}) == 2 for c in cases)
    assert all(r.rationale and r.confidence and r.evidence for c in cases for r in c.reviews)
    rate = sum(c.reviewers_disagree for c in cases) / len(cases)
    assert rate >= 0.08
    labels = Counter(c.gold_label for c in cases)
    assert 0 < labels["review_required"] <= 0.06 * len(cases)


def test_corrections_supersede_and_resolve(dataset: GoldDataset) -> None:
    corrections = [r for r in dataset.records if r.supersedes]
    assert len(corrections) >= 4
    assert len(dataset.history) >= 4
    by_id = {r.case_id: r for r in dataset.records}
    for record in corrections:
        old = by_id[record.supersedes]
        assert record.case_id in dataset.cases and old.case_id not in dataset.cases
        assert dataset.latest_id(old.case_id) == record.case_id
        assert (record.partition, record.response_hash) == (old.partition, old.response_hash)
        assert record.gold_label != old.gold_label
        assert (
            record.adjudication is not None
            and "correction" in (record.adjudication.reason or "").lower()
        )


def test_case_ids_do_not_leak_labels(dataset: GoldDataset) -> None:
    leaky = re.compile(r"pass|fail|correct|wrong|review", re.IGNORECASE)
    assert not [r.case_id for r in dataset.records if leaky.search(r.case_id)]


def test_generator_is_deterministic_and_matches_committed_data(tmp_path: Path) -> None:
    build(tmp_path)
    for name in DEMO_FILES:
        assert (tmp_path / name).read_bytes() == (DEMO / name).read_bytes(), (
            f"{name} drifted; rerun python -m workbench.demo.build data/demo"
        )


# ------------------------------------------------------------------------------ judges


def test_v1_false_fails_on_abbreviations_and_denials(
    dataset: GoldDataset, verdicts: dict[str, dict[str, tuple[str, str]]]
) -> None:
    v1 = verdicts["v1"]
    assert _count(dataset, v1, "false_fail", "abbreviation") > 0
    assert _count(dataset, v1, "false_fail", "negation") > 0
    example = next(
        reason
        for cid, (cls, reason) in v1.items()
        if cls == "false_fail" and "negation" in dataset.cases[cid].tags
    )
    assert "prohibited claim matched" in example.lower()


def test_v1_false_passes_on_paraphrased_prohibitions(
    dataset: GoldDataset, verdicts: dict[str, dict[str, tuple[str, str]]]
) -> None:
    v1 = verdicts["v1"]
    assert _count(dataset, v1, "false_pass", "paraphrased-prohibition") > 0
    critical = set(dataset.rubric.critical_slices)
    assert any(
        cls == "false_pass" and dataset.cases[cid].slice in critical for cid, (cls, _) in v1.items()
    )


def test_v2_is_better_but_not_perfect(
    dataset: GoldDataset, verdicts: dict[str, dict[str, tuple[str, str]]]
) -> None:
    v1, v2 = verdicts["v1"], verdicts["v2"]
    aligned_v1 = _count(dataset, v1, "aligned")
    aligned_v2 = _count(dataset, v2, "aligned")
    assert aligned_v2 > aligned_v1
    # The terminology guide and negation handling remove most of those false fails ...
    assert _count(dataset, v2, "false_fail", "abbreviation") < _count(
        dataset, v1, "false_fail", "abbreviation"
    )
    assert _count(dataset, v2, "false_fail", "negation") < _count(
        dataset, v1, "false_fail", "negation"
    )
    # ... but paraphrased claims still pass, and v2 still makes mistakes of both kinds.
    assert _count(dataset, v2, "false_pass", "paraphrased-prohibition") > 0
    assert _count(dataset, v2, "false_pass") > 0 and _count(dataset, v2, "false_fail") > 0
    # The change also introduces new errors: cases v1 got right and v2 gets wrong.
    assert any(v1[cid][0] == "aligned" and v2[cid][0] != "aligned" for cid in v1)


def test_judges_are_deterministic(
    dataset: GoldDataset, verdicts: dict[str, dict[str, tuple[str, str]]]
) -> None:
    for name, metric in (("v1", rubric_judge_v1), ("v2", rubric_judge_v2)):
        for case in list(dataset.cases.values())[:40]:
            result = metric.score(
                user_input=case.input, response=case.response, grading_notes=case.grading_notes
            )
            assert (_error_class(case.gold_label, result.value), result.reason) == verdicts[name][
                case.case_id
            ]


def test_judge_metrics_are_ragas_discrete_metrics() -> None:
    for metric, name in (
        (rubric_judge_v1, "rubric_judge_v1"),
        (rubric_judge_v2, "rubric_judge_v2"),
    ):
        assert metric.name == name
        assert metric.allowed_values == ["pass", "fail"]
    notes = (
        'Required: "two-factor authentication" | 2FA is on\nProhibited: "automatically approved" |'
        " approvals are automatic"
    )
    v1 = rubric_judge_v1.score(user_input="q", response="Your 2FA is on.", grading_notes=notes)
    v2 = rubric_judge_v2.score(user_input="q", response="Your 2FA is on.", grading_notes=notes)
    assert (v1.value, v2.value) == ("fail", "pass")
    assert "two-factor authentication" in v1.reason
    denial = "Two-factor authentication is on. Nothing is automatically approved."
    assert (
        rubric_judge_v1.score(user_input="q", response=denial, grading_notes=notes).value == "fail"
    )
    assert (
        rubric_judge_v2.score(user_input="q", response=denial, grading_notes=notes).value == "pass"
    )
