"""The alignment report computed record by record: the reference the package's one computation
(``workbench.align._cases.cases_report``, over the cases table) is held against.

This is the per-record computation the package had before the columnar path and the per-record
join shared one (``slice_alignment``, ``ordinal_alignment``, ``confusion_table`` and
``alignment_report`` over a join's ``JoinedCase`` objects): a case at a time, with Python
counters and the statistics' list forms. It lives here, as a reference, so the tests compare
two independent computations.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from workbench.align import (
    ERROR_COLUMN,
    MISSING_COLUMN,
    AlignmentReport,
    Join,
    JoinedCase,
    Lineage,
    OrdinalAlignment,
    SliceAlignment,
    has_pass_fail_view,
)
from workbench.align._report import CaseError, Confusion
from workbench.gold import Rubric
from workbench.results import costs_from_usage, results_sha256
from workbench.stats import (
    cohen_kappa,
    grouped_rate,
    mean_absolute_error,
    ordinal_confusion,
    weighted_cohen_kappa,
    wilson_rate,
)


def slice_alignment(
    name: str,
    risk: str | None,
    cases: Sequence[JoinedCase],
    labels: list[str],
    *,
    rubric: Rubric,
    sampled_out: int = 0,
    group_of: Mapping[str, str] | None = None,
) -> SliceAlignment:
    """Statistics of one slice from its joined cases, a case at a time."""
    abstain = set(rubric.abstain_labels)
    side = {label: rubric.pass_fail(label) for label in labels}
    outcome = Counter(c.outcome for c in cases)
    klass = Counter(c.error_class for c in cases)
    verdict_cases = [c for c in cases if c.outcome == "verdict"]
    abstentions = sum(1 for c in verdict_cases if c.judge_label in abstain)
    decided = len(verdict_cases) - abstentions
    two_way = [c for c in verdict_cases if side.get(c.judge_label or "") is not None]
    judged_fails = sum(1 for c in two_way if side.get(c.human_label) == "fail")
    judged_passes = sum(1 for c in two_way if side.get(c.human_label) == "pass")
    grouped = {}
    for field, human in (("false_pass_rate_grouped", "fail"), ("false_fail_rate_grouped", "pass")):
        tally: dict[str, list[int]] = {}  # group -> [wrong, cases], one case at a time
        for c in two_way:
            if side.get(c.human_label) == human:
                cell = tally.setdefault((group_of or {}).get(c.case_id, c.case_id), [0, 0])
                cell[0] += side[c.judge_label or ""] != human
                cell[1] += 1
        if any(n > 1 for _, n in tally.values()):
            wrong, total = zip(*tally.values(), strict=True)
            grouped[field] = grouped_rate(list(wrong), list(total))
    return SliceAlignment(
        **grouped,
        slice=name,
        risk=risk,
        n=len(cases),
        verdicts=outcome["verdict"],
        abstentions=abstentions,
        decided=decided,
        abstention_rate=wilson_rate(abstentions, outcome["verdict"]),
        coverage=wilson_rate(decided, len(cases)),
        judge_labels={
            label: sum(1 for c in verdict_cases if c.judge_label == label) for label in labels
        },
        human_labels_with_verdict={
            label: sum(1 for c in verdict_cases if c.human_label == label) for label in labels
        },
        errors=outcome["error"],
        missing=outcome["missing"],
        complete=outcome["missing"] == 0,
        aligned=klass["aligned"],
        agreement=wilson_rate(klass["aligned"], outcome["verdict"]),
        human_passes=sum(1 for c in cases if side.get(c.human_label) == "pass"),
        human_fails=sum(1 for c in cases if side.get(c.human_label) == "fail"),
        false_passes=klass["false_pass"],
        false_fails=klass["false_fail"],
        other_disagreements=klass["disagreement"],
        false_pass_rate=wilson_rate(klass["false_pass"], judged_fails),
        false_fail_rate=wilson_rate(klass["false_fail"], judged_passes),
        cohen_kappa=cohen_kappa(
            [c.human_label for c in verdict_cases],
            [c.judge_label for c in verdict_cases],
            labels=labels,
        ),
        errors_by_kind=dict(
            sorted(
                Counter(c.error_kind or "unknown" for c in cases if c.outcome == "error").items()
            )
        ),
        ordinal=(ordinal_alignment(verdict_cases, rubric) if rubric.ordered else None),
        sampled_out=sampled_out,
    )


def ordinal_alignment(cases: Sequence[JoinedCase], rubric: Rubric) -> OrdinalAlignment:
    """Weighted kappa, mean absolute error and the full ordinal confusion of ``cases``' verdicts.

    Only verdicts whose adjudicated and judge labels are both on the rubric's scale are paired
    (the rest are counted in ``off_scale``). Distances are scale steps on an ordinal rubric and
    scale values on a numeric one
    (:attr:`Rubric.scale_values <workbench.gold.Rubric.scale_values>`).
    """
    scale = rubric.scale_labels
    on_scale = set(scale)
    verdicts = [c for c in cases if c.outcome == "verdict" and c.judge_label is not None]
    pairs = [
        (c.human_label, c.judge_label)
        for c in verdicts
        if c.human_label in on_scale and c.judge_label in on_scale
    ]
    human = [h for h, _ in pairs]
    judge = [j for _, j in pairs]
    values = rubric.scale_values if rubric.scale.value == "numeric" else None
    return OrdinalAlignment(
        scale="numeric" if rubric.scale.value == "numeric" else "ordinal",
        labels=list(scale),
        pairs=len(pairs),
        off_scale=len(verdicts) - len(pairs),
        weighted_kappa_linear=weighted_cohen_kappa(human, judge, scale, "linear", values),
        weighted_kappa_quadratic=weighted_cohen_kappa(human, judge, scale, "quadratic", values),
        mean_absolute_error=mean_absolute_error(human, judge, scale, values),
        confusion=ordinal_confusion(human, judge, scale),
    )


def confusion_table(cases: Sequence[JoinedCase], labels: list[str]) -> Confusion:
    """Human x judge counts with error and missing columns, so no case leaves the table."""
    columns = [*labels, ERROR_COLUMN, MISSING_COLUMN]
    col_index = {c: i for i, c in enumerate(columns)}
    row_index = {r: i for i, r in enumerate(labels)}
    counts = [[0] * len(columns) for _ in labels]
    for c in cases:
        col = (
            c.judge_label
            if c.outcome == "verdict"
            else (ERROR_COLUMN if c.outcome == "error" else MISSING_COLUMN)
        )
        counts[row_index[c.human_label]][col_index[col]] += 1  # type: ignore[index]
    return Confusion(rows=list(labels), columns=columns, counts=counts)


def _lineage_fields(lineage: Lineage | None) -> dict[str, Any]:
    """``comparable``, ``gold_changes`` (when not comparable) and ``lineage`` of a report."""
    if lineage is None:
        return {"comparable": None, "gold_changes": [], "lineage": None}
    changes = [] if lineage.comparable else list(lineage.gold_changes)
    return {"comparable": lineage.comparable, "gold_changes": changes, "lineage": lineage}


def reference_report(
    join: Join,
    *,
    gold_path: str | None = None,
    results_path: str | None = None,
    partition_source: Literal["option", "run_manifest", "all"] | None = None,
) -> AlignmentReport:
    """The full alignment report of a :class:`Join`, record by record."""
    rubric = join.dataset.rubric
    labels = list(rubric.labels)
    group_of = {c.case_id: join.dataset.cases[c.case_id].group for c in join.cases}
    by_slice: dict[str, list[JoinedCase]] = {name: [] for name in rubric.slices}
    for c in join.cases:
        by_slice.setdefault(c.slice, []).append(c)
    left_out = Counter(
        join.dataset.cases[c].slice for c in join.sampled_out if c in join.dataset.cases
    )
    slices = [
        slice_alignment(
            name,
            rubric.risk_of(name),
            cases,
            labels,
            rubric=rubric,
            sampled_out=left_out.get(name, 0),
            group_of=group_of,
        )
        for name, cases in by_slice.items()
    ]
    overall = slice_alignment(
        "(all)",
        None,
        join.cases,
        labels,
        rubric=rubric,
        sampled_out=len(join.sampled_out),
        group_of=group_of,
    )
    slice_of = {c.case_id: c.slice for c in join.cases}
    missing = [c.case_id for c in join.cases if c.outcome == "missing"]
    return AlignmentReport(
        dataset_sha256=join.dataset.sha256,
        rubric_version=rubric.version,
        gold_path=gold_path,
        results_path=results_path,
        results_sha256=(
            results_sha256(results_path) if results_path and Path(results_path).exists() else None
        ),
        judge=join.judge,
        judge_fingerprint=join.judge_fingerprint,
        partition=join.partition,
        repeat=join.repeat,
        labels=labels,
        pass_label=rubric.pass_label,
        fail_label=rubric.fail_label,
        abstain_labels=list(rubric.abstain_labels),
        scale=rubric.scale.value,
        scale_labels=rubric.scale_labels if rubric.ordered else None,
        pass_labels=list(rubric.pass_labels) if rubric.pass_labels is not None else None,
        pass_fail_view=has_pass_fail_view(rubric),
        status="incomplete" if missing else "complete",
        results_read=join.results_read,
        excluded_other_partition=join.excluded_other_partition,
        other_repeats=join.other_repeats,
        superseded_attempts=join.superseded_attempts,
        missing_case_ids=missing,
        evaluator_errors=[
            CaseError(case_id=c.case_id, slice=c.slice, kind=c.error_kind, message=c.reason)
            for c in join.cases
            if c.outcome == "error"
        ],
        confusion=confusion_table(join.cases, labels),
        overall=overall,
        slices=slices,
        **_lineage_fields(join.lineage),
        partition_source=partition_source,
        sampling_plan_sha256=join.sampling_plan_sha256,
        sampled_out_case_ids=list(join.sampled_out),
        sampling_rejected=join.sampling_rejected,
        costs=costs_from_usage(
            {(case, join.repeat): u for case, u in join.usage.items()},
            slice_of,
            {name: rubric.risk_of(name) for name in rubric.slices},
        ),
    )
