"""Joining judge results to gold and the alignment report, checked by hand and by property."""

from __future__ import annotations

import hashlib
import json
import random

import pytest
from _reference import cohen_kappa_score
from conftest import (
    LABELS,
    make_case,
    make_result,
    result_lines,
    sha256_hex,
    write_dataset,
    write_results,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from lineage_support import stamped

from workbench.align import (
    ERROR_COLUMN,
    MISSING_COLUMN,
    AlignmentReport,
    align,
    alignment_report,
    format_report,
    join_results,
)
from workbench.errors import WorkbenchError
from workbench.gold import load_dataset

SAME = "the reviewed response for g"
CASES = {
    c["case_id"]: c
    for c in [
        make_case("b1", "fail", slice="billing"),
        make_case("b2", "fail", slice="billing"),
        make_case("b3", "pass", slice="billing"),
        make_case("b4", "review_required", slice="billing"),
        make_case("b5", "pass", slice="billing"),
        make_case("g0", "pass", response=SAME, group="g"),
        make_case("g1", "pass", response=SAME, group="g", supersedes="g0"),
        make_case("g2", "pass"),
        make_case("g3", "fail"),
        make_case("h1", "pass", partition="held_out"),
    ]
}
DEV = ["b1", "b2", "b3", "b4", "b5", "g1", "g2", "g3"]  # active development cases, file order
TIMEOUT = {"kind": "timeout", "message": "no answer"}

# b1 false pass, b2 aligned, b3 false fail, b4 other disagreement, b5 aligned,
# g1 aligned, g2 evaluator error, g3 missing, h1 (held_out) false fail
VERDICTS = {
    "b1": "pass",
    "b2": "fail",
    "b3": "fail",
    "b4": "pass",
    "b5": "pass",
    "g1": "pass",
    "h1": "fail",
}


def standard_rows() -> list[dict]:
    rows = [make_result(CASES[cid], value) for cid, value in VERDICTS.items()]
    return [*rows, make_result(CASES["g2"], error=TIMEOUT)]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return load_dataset(write_dataset(tmp_path_factory.mktemp("align"), list(CASES.values())))


def report_of(dataset, rows, **kw) -> AlignmentReport:
    return alignment_report(join_results(dataset, result_lines(rows), **kw))


def slice_of(report: AlignmentReport, name: str):
    (found,) = [s for s in report.slices if s.slice == name]
    return found


def test_development_report_by_hand(dataset):
    report = report_of(dataset, standard_rows(), partition="development")
    assert report.partition == "development" and report.status == "incomplete"
    assert report.missing_case_ids == ["g3"]
    assert report.excluded_other_partition == 1  # h1
    assert report.results_read == 8
    assert [(e.case_id, e.kind) for e in report.evaluator_errors] == [("g2", "timeout")]

    billing = slice_of(report, "billing")
    assert (billing.n, billing.verdicts, billing.errors, billing.missing, billing.complete) == (
        5,
        5,
        0,
        0,
        True,
    )
    assert (
        billing.aligned,
        billing.false_passes,
        billing.false_fails,
        billing.other_disagreements,
    ) == (2, 1, 1, 1)
    assert (billing.human_passes, billing.human_fails, billing.risk) == (2, 2, "critical")
    # false passes over human fails with a verdict: b1 of {b1, b2}; false fails: b3 of {b3, b5}
    assert (billing.false_pass_rate.k, billing.false_pass_rate.n) == (1, 2)
    assert (billing.false_fail_rate.k, billing.false_fail_rate.n) == (1, 2)
    assert billing.false_pass_rate.rate == billing.false_fail_rate.rate == 0.5
    assert billing.agreement.rate == pytest.approx(2 / 5)

    general = slice_of(report, "general")
    assert (general.n, general.verdicts, general.errors, general.missing, general.complete) == (
        3,
        1,
        1,
        1,
        False,
    )
    assert (
        general.aligned,
        general.false_passes,
        general.false_fails,
        general.other_disagreements,
    ) == (1, 0, 0, 0)
    assert (general.human_passes, general.human_fails) == (2, 1)
    # g3 (the only human fail) has no verdict: false-pass rate undefined, not 0
    assert (general.false_pass_rate.n, general.false_pass_rate.rate) == (0, None)
    # human passes with a verdict: only g1 (g2 is an error)
    assert (general.false_fail_rate.k, general.false_fail_rate.n, general.false_fail_rate.rate) == (
        0,
        1,
        0.0,
    )
    assert general.errors_by_kind == {"timeout": 1}

    empty = slice_of(report, "empty")
    assert (empty.n, empty.verdicts, empty.risk, empty.complete) == (0, 0, "medium", True)
    assert empty.agreement.rate is None and empty.false_pass_rate.rate is None

    overall = report.overall
    assert (overall.n, overall.verdicts, overall.errors, overall.missing) == (8, 6, 1, 1)
    assert (
        overall.aligned,
        overall.false_passes,
        overall.false_fails,
        overall.other_disagreements,
    ) == (3, 1, 1, 1)
    assert (overall.false_pass_rate.k, overall.false_pass_rate.n) == (1, 2)  # b1 of {b1, b2}
    assert (overall.false_fail_rate.k, overall.false_fail_rate.n) == (1, 3)  # b3 of {b3, b5, g1}
    assert [s.slice for s in report.slices] == ["billing", "general", "empty"]


def test_confusion_table(dataset):
    confusion = report_of(dataset, standard_rows(), partition="development").confusion
    assert confusion.rows == LABELS
    assert confusion.columns == [*LABELS, ERROR_COLUMN, MISSING_COLUMN]
    assert confusion.counts == [
        # pass, fail, review_required, (error), (missing)
        [2, 1, 0, 1, 0],  # human pass: b5, g1 -> pass; b3 -> fail; g2 error
        [1, 1, 0, 0, 1],  # human fail: b1 -> pass; b2 -> fail; g3 missing
        [1, 0, 0, 0, 0],  # human review_required: b4 -> pass
    ]
    per_label = {
        label: sum(1 for cid in DEV if CASES[cid]["adjudication"]["label"] == label)
        for label in LABELS
    }
    assert [sum(row) for row in confusion.counts] == [per_label[label] for label in LABELS]


def test_cohen_kappa_human_vs_judge_matches_sklearn(dataset):
    report = report_of(dataset, standard_rows(), partition="development")
    verdict_ids = ["b1", "b2", "b3", "b4", "b5", "g1"]
    human = [CASES[cid]["adjudication"]["label"] for cid in verdict_ids]
    judge = [VERDICTS[cid] for cid in verdict_ids]
    # p_o = 3/6; human (p,f,r) = 3,2,1; judge = 4,2,0 -> p_e = (12 + 4)/36 = 4/9
    # kappa = (1/2 - 4/9) / (5/9) = 0.1
    assert report.overall.cohen_kappa.value == pytest.approx(0.1)
    assert report.overall.cohen_kappa.value == pytest.approx(cohen_kappa_score(human, judge))
    assert report.overall.cohen_kappa.n == 6
    billing = slice_of(report, "billing").cohen_kappa
    assert billing.value == pytest.approx(cohen_kappa_score(human[:5], judge[:5]))


def test_all_partitions_when_no_filter(dataset):
    report = report_of(dataset, standard_rows())
    assert report.partition is None and report.excluded_other_partition == 0
    assert report.overall.n == 9
    assert report.overall.false_fails == 2  # b3 and h1
    assert report.confusion.counts[0] == [2, 2, 0, 1, 0]


def test_missing_results_are_never_disagreements_or_fails(dataset):
    report = report_of(dataset, [], partition="development")
    overall = report.overall
    assert report.status == "incomplete" and report.missing_case_ids == DEV
    assert (overall.missing, overall.verdicts, overall.aligned) == (8, 0, 0)
    assert (overall.false_passes, overall.false_fails, overall.other_disagreements) == (0, 0, 0)
    assert overall.agreement.rate is None and not overall.complete
    assert [row[-1] for row in report.confusion.counts] == [4, 3, 1]
    assert all(sum(row[:-1]) == 0 for row in report.confusion.counts)
    assert report.judge is None and report.judge_fingerprint is None


def test_complete_when_every_case_has_a_result_even_an_error(dataset):
    rows = [make_result(CASES[cid], CASES[cid]["adjudication"]["label"]) for cid in DEV[:-1]]
    rows.append(make_result(CASES["g3"], error=TIMEOUT))
    report = report_of(dataset, rows, partition="development")
    assert report.status == "complete" and report.overall.errors == 1
    assert report.overall.aligned == 7 and report.overall.agreement.rate == 1.0


def test_evaluator_errors_are_counted_by_kind(dataset):
    rows = [
        make_result(CASES["b1"], error={"kind": "rate_limited", "message": "429"}),
        make_result(CASES["b3"], error=TIMEOUT),
        make_result(CASES["g2"], error=TIMEOUT),
        make_result(CASES["g1"], "pass"),
    ]
    report = report_of(dataset, rows, partition="development")
    assert report.overall.errors == 3 and report.overall.errors_by_kind == {
        "rate_limited": 1,
        "timeout": 2,
    }
    assert slice_of(report, "billing").errors_by_kind == {"rate_limited": 1, "timeout": 1}
    # an error on a human fail is neither a false pass nor counted in the false-pass denominator
    assert report.overall.false_pass_rate.n == 0 and report.overall.false_passes == 0
    assert [e.case_id for e in report.evaluator_errors] == ["b1", "b3", "g2"]


def test_retries_last_attempt_counts_in_any_line_order(dataset):
    rows = [
        make_result(CASES["b1"], "fail", attempt=3),
        make_result(CASES["b1"], error=TIMEOUT, attempt=1),
        make_result(CASES["b1"], error=TIMEOUT, attempt=2),
        make_result(CASES["b2"], error=TIMEOUT, attempt=1),
        make_result(CASES["b2"], error=TIMEOUT, attempt=2),
    ]
    join = join_results(dataset, result_lines(rows), partition="development")
    by_id = {c.case_id: c for c in join.cases}
    assert (by_id["b1"].outcome, by_id["b1"].judge_label, by_id["b1"].error_class) == (
        "verdict",
        "fail",
        "aligned",
    )
    assert (by_id["b1"].attempts, by_id["b1"].result_line) == (3, 1)
    assert (by_id["b2"].outcome, by_id["b2"].error_kind, by_id["b2"].attempts) == (
        "error",
        "timeout",
        2,
    )
    assert join.superseded_attempts == 3  # two earlier attempts of b1, one of b2
    assert by_id["b3"].outcome == "missing" and by_id["b3"].attempts == 0


def test_repeat_filter(dataset):
    rows = [make_result(CASES[cid], "pass") for cid in DEV]
    rows += [make_result(CASES["b1"], "fail", repeat=1), make_result(CASES["b2"], "pass", repeat=1)]
    first = report_of(dataset, rows, partition="development")
    assert (first.repeat, first.other_repeats, first.overall.verdicts) == (0, 2, 8)
    second = report_of(dataset, rows, partition="development", repeat=1)
    assert (second.repeat, second.other_repeats, second.overall.verdicts) == (1, 8, 2)
    assert second.missing_case_ids == DEV[2:]
    assert (second.overall.aligned, second.overall.false_passes) == (
        1,
        1,
    )  # b1 aligned, b2 false pass


def test_every_refusal_is_reported_in_one_error(dataset):
    other_judge = {"name": "other-judge", "version": "9"}
    rows = [
        make_result(CASES["b1"], "pass"),  # 1
        make_result(CASES["b1"], "fail"),  # 2 same case, repeat and attempt
        make_result(make_case("nope"), "pass"),  # 3
        make_result(CASES["g0"], "pass"),  # 4 superseded by g1
        make_result(CASES["b2"], "pass", response_hash=sha256_hex("another response")),  # 5
        make_result(CASES["b3"], "pass", partition="calibration"),  # 6
        make_result(CASES["b5"], "maybe"),  # 7
        make_result(CASES["g2"], "pass", judge=other_judge),  # 8
    ]
    with pytest.raises(WorkbenchError) as exc:
        join_results(dataset, result_lines(rows), location="r.jsonl")
    found = {(p.location, p.code, p.case_id) for p in exc.value.problems}
    assert found == {
        ("r.jsonl:2", "duplicate_result", "b1"),
        ("r.jsonl:3", "unknown_case", "nope"),
        ("r.jsonl:4", "superseded_case", "g0"),
        ("r.jsonl:5", "response_hash_mismatch", "b2"),
        ("r.jsonl:6", "partition_mismatch", "b3"),
        ("r.jsonl:7", "unknown_judge_label", "b5"),
        ("r.jsonl", "mixed_judges", None),
    }
    assert all(p.fix for p in exc.value.problems)
    assert "'g1'" in next(p.message for p in exc.value.problems if p.code == "superseded_case")


@pytest.mark.parametrize(
    ("case_id", "kw"), [("h1", {"partition": "development"}), ("b1", {"repeat": 1})]
)
def test_duplicates_are_refused_even_outside_the_analysed_scope(dataset, case_id, kw):
    rows = [make_result(CASES[case_id], "pass"), make_result(CASES[case_id], "pass")]
    with pytest.raises(WorkbenchError) as exc:
        join_results(dataset, result_lines(rows), **kw)
    assert [(p.code, p.location) for p in exc.value.problems] == [("duplicate_result", "results:2")]


def test_refusals_apply_outside_the_partition_filter(dataset):
    rows = [make_result(CASES["h1"], "pass", response_hash="0" * 64)]
    with pytest.raises(WorkbenchError) as exc:
        join_results(dataset, result_lines(rows), partition="development")
    assert [p.code for p in exc.value.problems] == ["response_hash_mismatch"]


def test_json_round_trip(dataset):
    report = report_of(dataset, standard_rows(), partition="development")
    again = AlignmentReport.model_validate(json.loads(json.dumps(report.model_dump(mode="json"))))
    assert again == report


def test_align_from_files(dataset, tmp_path):
    results = write_results(tmp_path / "results.jsonl", stamped(standard_rows(), dataset.root))
    report = align(dataset.root, results, partition="development")
    assert report.results_sha256 == hashlib.sha256(results.read_bytes()).hexdigest()
    assert report.results_path == str(results) and report.dataset_sha256 == dataset.sha256
    assert report.judge_fingerprint == standard_rows()[0]["judge_fingerprint"]
    assert (
        report.comparable is True
        and report.lineage is not None
        and report.lineage.source == "results"
    )
    expected = report_of(dataset, standard_rows(), partition="development")
    skip = {"gold_path", "results_path", "results_sha256", "comparable", "lineage"}
    assert report.model_dump(exclude=skip) == expected.model_dump(exclude=skip)


def test_text_report_and_frames(dataset):
    report = report_of(dataset, standard_rows(), partition="development")
    text = format_report(report)
    assert "status:     INCOMPLETE" in text and "Missing: g3" in text and "timeout=1" in text
    assert (
        "8 in scope, 6 verdicts (6 decided, 0 abstentions), 1 evaluator errors, 1 missing" in text
    )
    assert "coverage:   6/8 = 0.75" in text  # decided verdicts / cases in scope
    frame = report.slice_frame()
    assert list(frame.index) == ["billing", "general", "empty", "(all)"]
    assert frame.loc["billing", "false_pass"] == "1/2"
    table = report.confusion.to_frame()
    assert int(table.loc["fail", MISSING_COLUMN]) == 1


# ---------------------------------------------------------------- properties

OUTCOMES = st.lists(st.sampled_from([*LABELS, "error", None]), min_size=len(DEV), max_size=len(DEV))


def rows_for(outcomes: list[str | None]) -> list[dict]:
    rows = []
    for cid, outcome in zip(DEV, outcomes, strict=True):
        if outcome == "error":
            rows.append(make_result(CASES[cid], error=TIMEOUT))
        elif outcome is not None:
            rows.append(make_result(CASES[cid], outcome))
    return rows


def counts(report: AlignmentReport):
    return [
        (s.slice, s.false_passes, s.false_fails, s.other_disagreements)
        for s in [*report.slices, report.overall]
    ]


@settings(max_examples=60, deadline=None)
@given(outcomes=OUTCOMES, seed=st.integers(0, 2**32))
def test_shuffling_results_never_changes_the_report(dataset, outcomes, seed):
    rows = rows_for(outcomes)
    for cid in ("b1", "g2"):  # retries: an earlier errored attempt before the recorded outcome
        rows = [{**row, "attempt": 2} if row["case_id"] == cid else row for row in rows]
        rows.append(make_result(CASES[cid], error=TIMEOUT, attempt=1))
    rows += [make_result(CASES["h1"], "pass")]
    shuffled = rows[:]
    random.Random(seed).shuffle(shuffled)
    first = report_of(dataset, rows, partition="development")
    assert report_of(dataset, shuffled, partition="development").model_dump() == first.model_dump()


@settings(max_examples=60, deadline=None)
@given(outcomes=OUTCOMES, pick=st.integers(0, 10**6))
def test_removing_a_result_moves_exactly_that_case_to_missing(dataset, outcomes, pick):
    lines = result_lines(rows_for(outcomes))
    if not lines:
        return
    removed = lines.pop(pick % len(lines))
    before = join_results(dataset, [*lines, removed], partition="development")
    after = join_results(dataset, lines, partition="development")
    for old, new in zip(before.cases, after.cases, strict=True):
        if old.case_id == removed.result.case_id:
            assert (new.outcome, new.error_class, new.attempts) == ("missing", "missing", 0)
        else:
            assert new == old
    report_before, report_after = alignment_report(before), alignment_report(after)
    assert set(report_after.missing_case_ids) == {
        *report_before.missing_case_ids,
        removed.result.case_id,
    }
    for old, new in zip(counts(report_before), counts(report_after), strict=True):
        assert all(n <= o for o, n in zip(old[1:], new[1:], strict=True))


@settings(max_examples=60, deadline=None)
@given(outcomes=OUTCOMES, pick=st.integers(0, 10**6), seed=st.integers(0, 2**32))
def test_an_error_then_verdict_retry_counts_like_the_verdict_alone(dataset, outcomes, pick, seed):
    rows = rows_for(outcomes)
    verdicts = [i for i, row in enumerate(rows) if row["value"] is not None]
    if not verdicts:
        return
    i = verdicts[pick % len(verdicts)]
    retried = [*rows[:i], {**rows[i], "attempt": 2}, *rows[i + 1 :]]
    retried.append(make_result(CASES[rows[i]["case_id"]], error=TIMEOUT, attempt=1))
    random.Random(seed).shuffle(retried)
    alone = report_of(dataset, rows, partition="development")
    with_retry = report_of(dataset, retried, partition="development")
    bookkeeping = {"superseded_attempts", "results_read", "costs"}
    assert with_retry.model_dump(exclude=bookkeeping) == alone.model_dump(exclude=bookkeeping)
    assert with_retry.superseded_attempts == alone.superseded_attempts + 1
    # the cost figures count every call, the failed attempt included
    assert with_retry.costs[-1].calls == alone.costs[-1].calls + 1
    assert with_retry.results_read == alone.results_read + 1
