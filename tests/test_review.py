"""Case review: review tables, held-out refusal, verdict transitions and append-only notes."""

from __future__ import annotations

import json

import pytest
from conftest import make_case, make_result, result_lines, write_results
from lineage_support import stamped

from workbench.align import align_results, join_results
from workbench.errors import WorkbenchError
from workbench.gold import load_dataset
from workbench.results import ResultLine
from workbench.review import (
    CAUSES,
    COLUMNS,
    ReviewNotes,
    ReviewTable,
    review_table,
    transition_summary,
    transitions,
)

TIMEOUT = {"kind": "timeout", "message": "no answer in 30 s"}
V2 = {"version": "2"}


def _cases() -> dict[str, dict]:
    cases = [
        make_case("b1", "fail", slice="billing", tags=["refund", "abbrev"]),
        make_case("b2", "pass", slice="billing", tags=["refund"]),
        make_case("b3", "fail", slice="billing"),
        make_case("b4", "pass", slice="billing"),
        make_case("b5", "pass", slice="billing"),
        make_case("g1", "pass", contexts=["ctx one", "ctx two"], reference="the reference"),
        make_case("g2", "fail"),
        make_case("g3", "pass"),
        make_case("g4", "fail"),
        make_case("h1", "pass", partition="held_out"),
    ]
    cases[0]["reviews"] = [
        {
            "reviewer": "rev-a",
            "label": "fail",
            "confidence": "high",
            "rationale": "promises a refund",
            "evidence": ["ev-1"],
        },
        {
            "reviewer": "rev-b",
            "label": "fail",
            "confidence": "medium",
            "rationale": "policy says no",
        },
    ]
    return {c["case_id"]: c for c in cases}


@pytest.fixture
def dataset(make_dataset):
    return load_dataset(make_dataset(list(_cases().values())))


def _lines(spec: dict[str, str | None], judge: dict | None = None, retry: tuple[str, ...] = ()):
    """Results for ``spec`` (case -> verdict, None = timeout error; absent = missing)."""
    cases = _cases()
    rows = []
    for cid in retry:  # an earlier failed attempt, superseded by the one below
        rows.append(
            make_result(
                cases[cid],
                error=TIMEOUT,
                judge=judge,
                attempt=1,
                rendered_request={"attempt": 1, "case": cid},
            )
        )
    for cid, value in spec.items():
        extra = {"attempt": 2} if cid in retry else {}
        request = {"messages": [{"role": "user", "content": f"judge {cid}"}]}
        if value is None:
            rows.append(
                make_result(
                    cases[cid], error=TIMEOUT, judge=judge, rendered_request=request, **extra
                )
            )
        else:
            rows.append(
                make_result(cases[cid], value, judge=judge, rendered_request=request, **extra)
            )
    return result_lines(rows)


def _results(dataset, tmp_path, spec, **kw):
    """A results file for ``spec`` (see :func:`_lines`), stamped with the dataset's lineage."""
    rows = [line.result.model_dump(mode="json") for line in _lines(spec, **kw)]
    return write_results(tmp_path / "results.jsonl", stamped(rows, dataset.root))


def _join(dataset, lines, **kw):
    """Join with the lineage check, the results stamped as the run engine stamps them."""
    lineage = {"dataset_sha256": dataset.sha256, "rubric_version": dataset.rubric.version}
    return align_results(
        dataset, [ResultLine(x.line, x.result.model_copy(update=lineage)) for x in lines], **kw
    )


BEFORE = {
    "b1": "fail",
    "b2": "fail",
    "b3": None,
    "b4": "pass",
    "b5": "fail",
    "g1": "pass",
    "g2": "pass",
    "g4": "pass",
}
AFTER = {
    "b1": "pass",
    "b2": "pass",
    "b3": "fail",
    "b4": "pass",
    "b5": None,
    "g1": "fail",
    "g2": "review_required",
    "g4": "pass",
}


# review_table --------------------------------------------------------------------------
def test_review_table_one_row_per_case_with_everything_a_reviewer_needs(dataset, tmp_path):
    results = _results(dataset, tmp_path, BEFORE, retry=("b1",))
    table = review_table(dataset.root, results, partition="development")
    frame = table.frame
    assert list(frame.columns) == list(COLUMNS)
    assert frame["case_id"].tolist() == ["b1", "b2", "b3", "b4", "b5", "g1", "g2", "g3", "g4"]
    row = table.row(0)
    assert (
        row["slice"] == "billing"
        and row["risk"] == "critical"
        and row["partition"] == "development"
    )
    assert row["tags"] == ["refund", "abbrev"]
    assert (row["error_class"], row["outcome"], row["human_label"], row["judge_label"]) == (
        "aligned",
        "verdict",
        "fail",
        "fail",
    )
    assert row["judge_reason"] == "because" and row["attempts"] == 2
    # the counted attempt's request (attempt 2), not the superseded timeout's
    assert row["rendered_request"] == {"messages": [{"role": "user", "content": "judge b1"}]}
    assert row["reviews"][0] == {
        "reviewer": "rev-a",
        "label": "fail",
        "confidence": "high",
        "rationale": "promises a refund",
        "evidence": ["ev-1"],
        "escalate": False,
        # the annotation-operations fields (docs/annotation.md), empty for reviews from elsewhere
        "spans": [],
        "assigned_at": None,
        "completed_at": None,
        "training_version": None,
        "blinded": [],
    }
    assert row["adjudication"] == {
        "label": "fail",
        "reason": "matches the policy",
        "adjudicator": "adj-1",
    }
    assert row["input"] == "question for b1" and row["response"] == "response for b1"
    assert row["grading_notes"].startswith("The policy")
    err = table.row(2)
    assert (
        err["outcome"],
        err["error_class"],
        err["error_kind"],
        err["error_message"],
        err["judge_reason"],
    ) == ("error", "error", "timeout", "no answer in 30 s", None)
    g1 = table.row(5)
    assert (
        g1["contexts"] == ["ctx one", "ctx two"]
        and g1["reference"] == "the reference"
        and g1["risk"] == "low"
    )
    missing = table.row(7)
    assert (
        missing["outcome"],
        missing["error_class"],
        missing["rendered_request"],
        missing["attempts"],
    ) == ("missing", "missing", None, 0)
    assert table.judge_fingerprint == _lines(BEFORE)[0].result.judge_fingerprint
    assert table.dataset_sha256 == dataset.sha256
    # categorical codes agree with the frame
    assert table.counts("error_class") == frame["error_class"].value_counts().to_dict() | {
        c: 0 for c in table.categories["error_class"] if c not in set(frame["error_class"])
    }
    assert table.tags == ("abbrev", "refund") and table.tag_rows["refund"].tolist() == [0, 1]
    # the search reads review rationales and the adjudication reason, deferred or not
    assert table.search_mask(["promises"]).tolist() == [True] + [False] * 8


def test_review_table_refuses_held_out(dataset, tmp_path):
    results = _results(dataset, tmp_path, BEFORE)
    with pytest.raises(WorkbenchError) as exc:
        review_table(dataset.root, results, partition=None)  # every partition: includes h1
    assert [p.code for p in exc.value.problems] == ["held_out_refused"]
    assert "restricted to certification" in str(exc.value) and "h1" in str(exc.value)
    with pytest.raises(WorkbenchError, match="held_out_refused"):
        review_table(dataset.root, write_results(tmp_path / "none.jsonl", []), partition="held_out")


def test_review_table_refuses_held_out_rows_built_by_hand():
    with pytest.raises(WorkbenchError, match="held_out_refused"):
        ReviewTable.from_records(
            [{"case_id": "x", "slice": "s", "error_class": "aligned", "partition": "held_out"}]
        )


def test_a_results_file_changed_after_the_table_was_built_is_never_shown(dataset, tmp_path):
    results = _results(dataset, tmp_path, BEFORE)
    table = review_table(dataset.root, results, partition="development")
    assert table.row(0)["rendered_request"] is not None
    text = results.read_text(encoding="utf-8")
    results.write_text(text.replace("judge b1", "judge b9"), encoding="utf-8")  # same size
    with pytest.raises(WorkbenchError) as exc:
        table.row(0)
    assert [p.code for p in exc.value.problems] == ["results_changed"]


def test_transitions_counted_by_hand(dataset):
    before = _join(dataset, _lines(BEFORE), partition="development")
    after = _join(dataset, _lines(AFTER, judge=V2), partition="development")
    df = transitions(before, after)
    change = dict(zip(df["case_id"], df["change"], strict=True))
    assert change == {
        "b1": "broken",  # aligned -> false pass, critical slice
        "b2": "fixed",  # false fail -> aligned
        "b3": "fixed",  # error -> aligned
        "b4": "same",  # aligned both
        "b5": "changed",  # false fail -> error
        "g1": "broken",  # aligned -> false fail, low-risk slice
        "g2": "changed",  # false pass -> disagreement (review_required)
        "g3": "same",  # missing both
        "g4": "same",  # false pass both
    }
    assert df.loc[df.critical_broken, "case_id"].tolist() == ["b1"]
    assert df.loc[df.needs_review, "case_id"].tolist() == ["b1", "b2", "b3", "b5"]
    b1 = df.set_index("case_id").loc["b1"]
    assert (
        b1.risk,
        b1.human_label,
        b1.before_label,
        b1.after_label,
        b1.before_class,
        b1.after_class,
    ) == ("critical", "fail", "fail", "pass", "aligned", "false_pass")

    summary = transition_summary(df).set_index("slice")
    assert summary.loc[
        "billing", ["fixed", "broken", "changed", "same", "n", "critical_broken"]
    ].tolist() == [2, 1, 1, 1, 5, 1]
    assert summary.loc[
        "general", ["fixed", "broken", "changed", "same", "n", "critical_broken"]
    ].tolist() == [0, 1, 1, 2, 4, 0]
    assert summary.loc[
        "(all)", ["fixed", "broken", "changed", "same", "n", "critical_broken"]
    ].tolist() == [2, 2, 2, 3, 9, 1]
    assert summary.index.tolist() == ["billing", "general", "(all)"]  # critical first
    assert summary.loc["billing", "risk"] == "critical"


def test_transitions_refuse_different_case_sets_and_datasets(dataset, make_dataset):
    before = _join(dataset, _lines(BEFORE), partition="development")
    only_billing = {k: v for k, v in _cases().items() if k.startswith("b")}
    other = load_dataset(make_dataset(list(only_billing.values())))
    after = _join(other, [], partition="development")
    with pytest.raises(WorkbenchError) as exc:
        transitions(before, after)
    codes = [p.code for p in exc.value.problems]
    assert codes == ["different_datasets", "different_cases"]
    assert "4 only in before (g1, g2, g3, g4)" in str(exc.value)
    whole = _join(dataset, _lines(AFTER, judge=V2))  # all partitions: adds h1
    with pytest.raises(WorkbenchError) as exc:
        transitions(before, whole)
    assert [p.code for p in exc.value.problems] == ["different_cases"]
    assert "1 only in after (h1)" in str(exc.value)


def test_transitions_refuse_held_out_unless_certifying(dataset):
    before = _join(dataset, [], partition="held_out")
    after = _join(dataset, [], partition="held_out")
    with pytest.raises(WorkbenchError, match="held_out_refused"):
        transitions(before, after)
    assert transitions(before, after, allow_held_out=True)["change"].tolist() == ["same"]


# notes ---------------------------------------------------------------------------------
def test_notes_are_append_only_and_later_notes_supersede_in_the_view(tmp_path):
    path = tmp_path / "notes" / "review.jsonl"
    sizes = []
    with ReviewNotes(path) as notes:
        first = notes.add(
            "b1",
            "rubric_ambiguity",
            "criterion unclear",
            reviewer="ana",
            judge_fingerprint="fp1",
            error_class="false_pass",
        )
        sizes.append(path.stat().st_size)
        notes.add("g2", "parser_bug", reviewer="ana", judge_fingerprint="fp1")
        sizes.append(path.stat().st_size)
        notes.add(
            "b1",
            "gold_label_defect",
            "adjudication contradicts the policy",
            reviewer="bo",
            judge_fingerprint="fp1",
        )
        sizes.append(path.stat().st_size)
        notes.add("b1", "provider_failure", reviewer="bo", judge_fingerprint="fp2")
        before = path.read_bytes()
        with pytest.raises(WorkbenchError, match="unknown_cause"):
            notes.add("b1", "bad luck", reviewer="bo")
        with pytest.raises(WorkbenchError, match="invalid_note"):
            notes.add("b1", "parser_bug", reviewer="")
        assert path.read_bytes() == before  # refused notes write nothing
    assert sizes == sorted(sizes) and len(set(sizes)) == 3
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4
    assert json.loads(lines[0]) == first.model_dump(mode="json")  # never rewritten
    assert json.loads(lines[0])["schema_version"] == 1 and json.loads(lines[0])[
        "created_at"
    ].endswith("Z")

    with ReviewNotes(path) as reopened:
        everything = reopened.all()
        assert [n.cause for n in everything] == [
            "rubric_ambiguity",
            "parser_bug",
            "gold_label_defect",
            "provider_failure",
        ]
        latest = reopened.latest_by_case("fp1")
        assert {k: v.cause for k, v in latest.items()} == {
            "b1": "gold_label_defect",
            "g2": "parser_bug",
        }
        assert reopened.latest_by_case()["b1"].cause == "provider_failure"
        counts = reopened.cause_counts("fp1")
        assert list(counts.index) == list(CAUSES)
        assert counts["gold_label_defect"] == 1 and counts["parser_bug"] == 1 and counts.sum() == 2
        reopened.add("g3", "out_of_scope", reviewer="cy", judge_fingerprint="fp1")
    assert path.read_text(encoding="utf-8").splitlines()[:4] == lines


def test_notes_report_bad_lines(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text('{"note": "hand-written"}\n', encoding="utf-8")
    with ReviewNotes(path) as notes, pytest.raises(WorkbenchError, match="invalid_note"):
        notes.all()


def test_review_and_transitions_refuse_joins_without_a_lineage_check_or_of_other_gold(
    dataset, tmp_path
):
    lines = _lines(BEFORE)
    unchecked = join_results(dataset, lines, partition="development")
    checked = _join(dataset, lines, partition="development")
    with pytest.raises(WorkbenchError) as exc:
        transitions(unchecked, checked)
    assert [p.code for p in exc.value.problems] == ["lineage_unchecked"]
    # Results stamped with another gold: refused, unless explicitly forced (then reviewable, never
    # compared).
    other = {"dataset_sha256": "0" * 64, "rubric_version": "r0"}
    foreign = [ResultLine(x.line, x.result.model_copy(update=other)) for x in lines]
    with pytest.raises(WorkbenchError) as exc:
        align_results(dataset, foreign, partition="development")
    assert (
        exc.value.problems[0].code == "gold_changed" and "r0 -> r1" in exc.value.problems[0].message
    )
    forced = align_results(dataset, foreign, partition="development", allow_gold_change=True)
    assert (
        forced.lineage is not None and forced.lineage.comparable is False and forced.lineage.allowed
    )
    rows = [line.result.model_dump(mode="json") for line in foreign]
    results = write_results(tmp_path / "foreign.jsonl", rows)
    with pytest.raises(WorkbenchError) as exc:
        review_table(dataset.root, results)
    assert exc.value.problems[0].code == "gold_changed"
    assert len(review_table(dataset.root, results, allow_gold_change=True)) == 9
    with pytest.raises(WorkbenchError) as exc:
        transitions(checked, forced)
    assert [p.code for p in exc.value.problems] == ["gold_changed"]
