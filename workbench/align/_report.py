"""Alignment statistics: confusion table and per-slice error rates, always with denominators.

The JSON form (``workbench align --json``) is :class:`AlignmentReport` dumped with
``model_dump(mode="json")``; its shape is documented in ``docs/formats.md#alignment-report``
and versioned by ``schema_version``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from .._io import bulk_load
from ..results import JudgeIdentity
from ..results._columnar import results_sha256
from ..stats import Kappa, Rate, cohen_kappa, wilson_rate
from ._join import Join, JoinedCase
from ._lineage import GoldChange, Lineage, align_results

ALIGNMENT_SCHEMA_VERSION = 2
"""2: adds abstentions, decided, abstention_rate and coverage; false-pass and false-fail
denominators count only pass/fail verdicts (abstentions left out)."""
ERROR_COLUMN = "(error)"
MISSING_COLUMN = "(missing)"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)


class SliceAlignment(_Model):
    """Alignment over one slice (or over all cases, for ``overall``)."""

    slice: str
    """Slice name, or ``(all)``."""
    risk: str | None
    """Risk level from the rubric (None for ``(all)``)."""
    n: int
    """Gold cases in scope."""
    verdicts: int
    """Cases with a judge verdict, decided or abstaining (``decided + abstentions``): the
    denominator of ``agreement`` and ``abstention_rate``."""
    abstentions: int
    """Verdicts that are one of the rubric's ``abstain_labels`` (e.g. ``review_required``),
    whatever the adjudicated label: the judge declined to decide."""
    decided: int
    """Verdicts that are not abstentions. Errors and missing results are not verdicts."""
    abstention_rate: Rate
    """abstentions / verdicts, 95% Wilson interval. The gate compares the observed rate with
    the slice's ``max_abstention_rate``."""
    coverage: Rate
    """decided / n (cases in scope), 95% Wilson interval: the share of the slice the judge
    actually decided. Abstentions, evaluator errors and missing results all lower it."""
    judge_labels: dict[str, int]
    """Verdicts per judge label, every rubric label listed (zeros included)."""
    human_labels_with_verdict: dict[str, int]
    """Cases with a verdict (decided or abstaining) per adjudicated label, every rubric label
    listed."""
    errors: int
    """Cases whose final attempt was an evaluator error."""
    missing: int
    """Cases with no result at all."""
    complete: bool
    """True when no case is missing. Errors do not make a slice incomplete, but are reported."""
    aligned: int
    """Verdicts equal to the adjudicated label."""
    agreement: Rate
    """aligned / verdicts with a 95% Wilson interval."""
    human_passes: int
    """Cases adjudicated pass (any outcome)."""
    human_fails: int
    """Cases adjudicated fail (any outcome)."""
    false_passes: int
    """Human fail, judge pass."""
    false_fails: int
    """Human pass, judge fail."""
    other_disagreements: int
    """Mismatches involving abstain/review_required labels (or any mismatch without pass/fail)."""
    false_pass_rate: Rate
    """false_passes / human-fail cases with a decided pass-or-fail verdict, 95% Wilson
    interval. Abstentions, errors and missing results are in neither numerator nor
    denominator, so abstaining can never lower the rate."""
    false_fail_rate: Rate
    """false_fails / human-pass cases with a decided pass-or-fail verdict, 95% Wilson
    interval (abstentions, errors and missing results excluded, as above)."""
    cohen_kappa: Kappa
    """Cohen's kappa between adjudicated and judge labels over verdicts."""
    errors_by_kind: dict[str, int]
    """Evaluator errors by kind."""


class Confusion(_Model):
    """Human (rows) x judge (columns) counts. Errors and missing results have their own columns."""

    rows: list[str]
    columns: list[str]
    counts: list[list[int]]

    def to_frame(self) -> Any:
        import pandas as pd

        frame = pd.DataFrame(self.counts, index=self.rows, columns=self.columns)
        frame.index.name = "human \\ judge"
        return frame


class CaseError(_Model):
    case_id: str
    slice: str
    kind: str | None
    message: str | None


class AlignmentReport(_Model):
    """Everything ``workbench align`` reports. Stable, versioned JSON."""

    schema_version: int = ALIGNMENT_SCHEMA_VERSION
    kind: Literal["workbench.alignment"] = "workbench.alignment"
    dataset_sha256: str
    rubric_version: str
    gold_path: str | None
    results_path: str | None
    results_sha256: str | None
    judge: JudgeIdentity | None
    judge_fingerprint: str | None
    partition: str | None
    """Partition analysed, or None for all."""
    repeat: int
    labels: list[str]
    pass_label: str | None
    fail_label: str | None
    abstain_labels: list[str]
    status: Literal["complete", "incomplete"]
    """``incomplete`` when any case in scope has no result. Never a pass."""
    results_read: int
    excluded_other_partition: int
    other_repeats: int
    superseded_attempts: int
    missing_case_ids: list[str]
    evaluator_errors: list[CaseError]
    confusion: Confusion
    overall: SliceAlignment
    slices: list[SliceAlignment]
    comparable: bool | None = None
    """True when the results were produced against exactly this gold (lineage checked);
    False when the gold changed and the alignment was forced (``--allow-gold-change``): the
    figures are then not comparable with the run's and the gate never certifies them; None
    when the report was built from a join without a lineage check."""
    gold_changes: list[GoldChange] = []
    """Every judged case whose gold changed since the results were produced (with
    ``comparable`` False), and what changed in it."""
    lineage: Lineage | None = None
    """The lineage check: the gold the results were produced against and the gold given."""
    partition_source: Literal["option", "run_manifest", "all"] | None = None
    """Where ``partition`` came from: the ``--partition`` option, the run manifest beside the
    results (when the option is omitted), or ``all`` (neither)."""
    """Every rubric slice, including slices with no cases in scope (n = 0)."""

    def slice_frame(self) -> Any:
        """The per-slice table as a pandas DataFrame (one row per slice plus ``(all)``).

        ``coverage`` (decided verdicts / cases in scope) sits beside every rate; ``abstained``
        counts verdicts in the rubric's abstain labels. FP and FF rates are over the human-fail
        (human-pass) cases judged pass or fail, so abstentions are never in them.
        """
        import pandas as pd

        return pd.DataFrame([_row(s) for s in [*self.slices, self.overall]]).set_index("slice")


def _row(s: SliceAlignment) -> dict[str, Any]:
    return {
        "slice": s.slice,
        "risk": s.risk or "",
        "n": s.n,
        "verdicts": s.verdicts,
        "abstained": s.abstentions,
        "errors": s.errors,
        "missing": s.missing,
        "coverage": f"{s.decided}/{s.n}" + (f" = {s.coverage.rate:.2f}" if s.coverage.rate is not None else ""),
        "aligned": s.agreement.format(2) if s.verdicts else "-",
        "false_pass": f"{s.false_passes}/{s.false_pass_rate.n}",
        "FP rate [95% CI]": _rate_text(s.false_pass_rate),
        "false_fail": f"{s.false_fails}/{s.false_fail_rate.n}",
        "FF rate [95% CI]": _rate_text(s.false_fail_rate),
        "kappa": f"{s.cohen_kappa.value:.3f}" if s.cohen_kappa.value is not None else "n/a",
    }


def _coverage_text(s: SliceAlignment) -> str:
    rate = s.coverage
    if rate.rate is None:
        return f"{s.decided}/{s.n} (no case in scope)"
    return f"{s.decided}/{s.n} = {rate.rate:.2f} [{rate.ci95_low:.2f}, {rate.ci95_high:.2f}]"


def _rate_text(rate: Rate) -> str:
    if rate.rate is None:
        return "n/a"
    return f"{rate.rate:.2f} [{rate.ci95_low:.2f}, {rate.ci95_high:.2f}]"


def slice_alignment(
    name: str,
    risk: str | None,
    cases: Sequence[JoinedCase],
    labels: list[str],
    pass_label: str | None,
    fail_label: str | None,
    *,
    abstain_labels: Sequence[str],
) -> SliceAlignment:
    """Statistics of one slice from its joined cases.

    A verdict in ``abstain_labels`` is an abstention; every other verdict is decided. The
    false-pass and false-fail denominators are the human-fail (human-pass) cases whose verdict
    is the pass or the fail label, so an abstention can neither add a false pass nor dilute
    the rate.
    """
    outcome = Counter(c.outcome for c in cases)
    klass = Counter(c.error_class for c in cases)
    abstain = set(abstain_labels)
    verdict_cases = [c for c in cases if c.outcome == "verdict"]
    abstentions = sum(1 for c in verdict_cases if c.judge_label in abstain)
    decided = len(verdict_cases) - abstentions
    two_way = [c for c in verdict_cases if pass_label is not None and c.judge_label in (pass_label, fail_label)]
    judged_fails = sum(1 for c in two_way if c.human_label == fail_label)
    judged_passes = sum(1 for c in two_way if c.human_label == pass_label)
    return SliceAlignment(
        slice=name,
        risk=risk,
        n=len(cases),
        verdicts=outcome["verdict"],
        abstentions=abstentions,
        decided=decided,
        abstention_rate=wilson_rate(abstentions, outcome["verdict"]),
        coverage=wilson_rate(decided, len(cases)),
        judge_labels={label: sum(1 for c in verdict_cases if c.judge_label == label) for label in labels},
        human_labels_with_verdict={label: sum(1 for c in verdict_cases if c.human_label == label) for label in labels},
        errors=outcome["error"],
        missing=outcome["missing"],
        complete=outcome["missing"] == 0,
        aligned=klass["aligned"],
        agreement=wilson_rate(klass["aligned"], outcome["verdict"]),
        human_passes=sum(1 for c in cases if c.human_label == pass_label) if pass_label else 0,
        human_fails=sum(1 for c in cases if c.human_label == fail_label) if fail_label else 0,
        false_passes=klass["false_pass"],
        false_fails=klass["false_fail"],
        other_disagreements=klass["disagreement"],
        false_pass_rate=wilson_rate(klass["false_pass"], judged_fails),
        false_fail_rate=wilson_rate(klass["false_fail"], judged_passes),
        cohen_kappa=cohen_kappa([c.human_label for c in verdict_cases], [c.judge_label for c in verdict_cases], labels=labels),
        errors_by_kind=dict(sorted(Counter(c.error_kind or "unknown" for c in cases if c.outcome == "error").items())),
    )


def confusion_table(cases: Sequence[JoinedCase], labels: list[str]) -> Confusion:
    """Human x judge counts with error and missing columns, so no case leaves the table."""
    columns = [*labels, ERROR_COLUMN, MISSING_COLUMN]
    col_index = {c: i for i, c in enumerate(columns)}
    row_index = {r: i for i, r in enumerate(labels)}
    counts = [[0] * len(columns) for _ in labels]
    for c in cases:
        col = c.judge_label if c.outcome == "verdict" else (ERROR_COLUMN if c.outcome == "error" else MISSING_COLUMN)
        counts[row_index[c.human_label]][col_index[col]] += 1  # type: ignore[index]
    return Confusion(rows=list(labels), columns=columns, counts=counts)


def alignment_report(join: Join, *, gold_path: str | None = None, results_path: str | None = None, partition_source: Literal["option", "run_manifest", "all"] | None = None) -> AlignmentReport:
    """Compute the full alignment report from a :class:`Join`."""
    rubric = join.dataset.rubric
    labels = list(rubric.labels)
    by_slice: dict[str, list[JoinedCase]] = {name: [] for name in rubric.slices}
    for c in join.cases:
        by_slice.setdefault(c.slice, []).append(c)
    abstain = list(rubric.abstain_labels)
    slices = [slice_alignment(name, rubric.risk_of(name), cases, labels, rubric.pass_label, rubric.fail_label, abstain_labels=abstain) for name, cases in by_slice.items()]
    overall = slice_alignment("(all)", None, join.cases, labels, rubric.pass_label, rubric.fail_label, abstain_labels=abstain)
    missing = [c.case_id for c in join.cases if c.outcome == "missing"]
    return AlignmentReport(
        dataset_sha256=join.dataset.sha256,
        rubric_version=rubric.version,
        gold_path=gold_path,
        results_path=results_path,
        results_sha256=results_sha256(results_path) if results_path and Path(results_path).exists() else None,
        judge=join.judge,
        judge_fingerprint=join.judge_fingerprint,
        partition=join.partition,
        repeat=join.repeat,
        labels=labels,
        pass_label=rubric.pass_label,
        fail_label=rubric.fail_label,
        abstain_labels=list(rubric.abstain_labels),
        status="incomplete" if missing else "complete",
        results_read=join.results_read,
        excluded_other_partition=join.excluded_other_partition,
        other_repeats=join.other_repeats,
        superseded_attempts=join.superseded_attempts,
        missing_case_ids=missing,
        evaluator_errors=[CaseError(case_id=c.case_id, slice=c.slice, kind=c.error_kind, message=c.reason) for c in join.cases if c.outcome == "error"],
        confusion=confusion_table(join.cases, labels),
        overall=overall,
        slices=slices,
        comparable=join.lineage.comparable if join.lineage is not None else None,
        gold_changes=list(join.lineage.gold_changes) if join.lineage is not None and not join.lineage.comparable else [],
        lineage=join.lineage,
        partition_source=partition_source,
    )


def align(gold: str | Path, results: str | Path, *, partition: str | None = None, repeat: int = 0, allow_gold_change: bool = False, partition_source: Literal["option", "run_manifest", "all"] | None = None) -> AlignmentReport:
    """Load, join, check lineage and analyse in one call: the library form of ``workbench align``.

    Columnar (:func:`~workbench.align._columnar.align_columnar` over the cached gold index);
    input it cannot vouch for goes through the per-record join, which reports every problem.
    ``results`` may be a file or a directory of result shards (JSON Lines or Parquet).

    Refuses results produced against another gold (see :func:`align_results`) unless
    ``allow_gold_change``, which marks the report not comparable.
    """
    from ..gold._index import gold_index
    from ._columnar import align_columnar

    with bulk_load():
        index = gold_index(gold)  # validated once per dataset sha256, then read from the cache
        report = align_columnar(index, results, partition=partition, repeat=repeat, allow_gold_change=allow_gold_change, partition_source=partition_source, gold_path=str(gold))
        if report is not None:
            return report
        # Refused or unusual input: the per-record path names every problem with its line.
        join = align_results(index.dataset(), results, partition=partition, repeat=repeat, allow_gold_change=allow_gold_change)
        return alignment_report(join, gold_path=str(gold), results_path=str(results), partition_source=partition_source)


def cases_frame(join: Join) -> Any:
    """Per-case joined rows as a DataFrame (for notebooks and review widgets)."""
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "case_id": c.case_id,
                "slice": c.slice,
                "partition": c.partition,
                "tags": list(c.tags),
                "human_label": c.human_label,
                "outcome": c.outcome,
                "judge_label": c.judge_label,
                "error_class": c.error_class,
                "error_kind": c.error_kind,
                "reason": c.reason,
                "attempts": c.attempts,
            }
            for c in join.cases
        ]
    )


_PARTITION_NOTE = {"run_manifest": " (from the run manifest beside the results; --partition overrides)", "all": " (no --partition and no run manifest naming one)"}


def lineage_lines(report: AlignmentReport) -> list[str]:
    """The lineage header lines: which gold the results were produced against, and changes."""
    lineage = report.lineage
    if lineage is None:
        return ["lineage:    not checked"]
    if lineage.source == "no_results":
        return ["lineage:    no results to check"]
    where = "run manifest" if lineage.source == "run_manifest" else "results" if lineage.source == "results" else "nothing"
    release = lineage.results_release or "not frozen"
    if lineage.comparable:
        return [f"lineage:    same gold as the run (dataset {lineage.gold_dataset_sha256[:12]}, rubric {lineage.gold_rubric_version}, release {release}; from the {where})"]
    lines = ["NOT COMPARABLE: the results were not produced against this gold (--allow-gold-change); the gate will not certify this"]
    lines += [f"  - {reason}" for reason in lineage.problems]
    for change in lineage.gold_changes:
        lines.append(f"  - case {change.case_id}: {change.detail}")
    return lines


def format_report(report: AlignmentReport) -> str:
    """Human-readable text: header, per-slice table and confusion table."""
    import pandas as pd

    judge = f"{report.judge.name}@{report.judge.version} ({report.judge.kind}, fingerprint {report.judge_fingerprint[:12]})" if report.judge and report.judge_fingerprint else "(no results)"
    lines = [
        f"judge:      {judge}",
        f"gold:       {report.gold_path or '-'} (dataset {report.dataset_sha256[:12]}, rubric {report.rubric_version})",
        f"partition:  {report.partition or 'all'}{_PARTITION_NOTE.get(report.partition_source or '', '')}    repeat: {report.repeat}",
        *lineage_lines(report),
        f"status:     {report.status.upper()}" + (f" - {len(report.missing_case_ids)} case(s) have no result; this is not a pass" if report.missing_case_ids else ""),
        f"cases:      {report.overall.n} in scope, {report.overall.verdicts} verdicts ({report.overall.decided} decided, {report.overall.abstentions} abstentions), {report.overall.errors} evaluator errors, {report.overall.missing} missing",
        f"coverage:   {_coverage_text(report.overall)} (decided verdicts / cases in scope; abstentions, errors and missing results are not decided)",
    ]
    if report.excluded_other_partition or report.other_repeats or report.superseded_attempts:
        lines.append(
            f"skipped:    {report.excluded_other_partition} result(s) outside the partition, {report.other_repeats} of other repeats, {report.superseded_attempts} earlier attempt(s) replaced by retries"
        )
    lines.append("")
    lines.append(
        "Per slice (coverage = decided verdicts / cases in scope; aligned over verdicts; FP = human fail judged pass, over human fails judged pass or fail;"
        " FF = human pass judged fail, over human passes judged pass or fail; abstentions are in neither):"
    )
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        lines.append(report.slice_frame().to_string())
        lines.append("")
        lines.append("Confusion (rows: adjudicated human label, columns: judge):")
        lines.append(report.confusion.to_frame().to_string())
    if report.evaluator_errors:
        lines.append("")
        kinds = Counter(e.kind for e in report.evaluator_errors)
        lines.append("Evaluator errors: " + ", ".join(f"{k}={v}" for k, v in kinds.most_common()))
    if report.missing_case_ids:
        shown = ", ".join(report.missing_case_ids[:10])
        more = f" and {len(report.missing_case_ids) - 10} more" if len(report.missing_case_ids) > 10 else ""
        lines.append(f"Missing: {shown}{more}")
    return "\n".join(lines)
