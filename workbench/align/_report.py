"""The alignment report's records and text (``workbench align``, ``--json``:
docs/formats.md#alignment-report): confusion and per-slice error rates, with denominators."""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from .._record import LooseRecord as _Model
from ..gold import Rubric
from ..results import JudgeIdentity, SliceCost, format_slice_costs
from ..stats import GroupedRate, Kappa, MeanAbsoluteError, OrdinalConfusion, Rate
from ._lineage import GoldChange, Lineage

ALIGNMENT_SCHEMA_VERSION = 3
"""3: ordered rubrics (``scale``, ``pass_labels``, per-slice ``ordinal``), sampling plans and
costs."""
ERROR_COLUMN = "(error)"
MISSING_COLUMN = "(missing)"


class OrdinalAlignment(_Model):
    """Judge against adjudicated labels on an ordered scale, over the pairs: cases whose
    adjudicated and judge labels are both on the scale. Each figure carries its own ``n``."""

    scale: Literal["ordinal", "numeric"]
    """The rubric's scale."""
    labels: list[str]
    """The scale labels in scale order (the rubric's labels without its abstain labels)."""
    pairs: int
    """Verdicts with both the adjudicated and the judge label on the scale: the denominator of
    every figure below."""
    off_scale: int
    """Verdicts left out because the judge's label or the adjudicated label is an abstain label."""
    weighted_kappa_linear: Kappa
    """Linear weighted Cohen's kappa over the whole scale (weight ``|i - j|`` in scale steps)."""
    weighted_kappa_quadratic: Kappa
    """Quadratic weighted Cohen's kappa: disagreement weight ``(i - j)^2``."""
    mean_absolute_error: MeanAbsoluteError
    """Mean of ``|judge - adjudicated|``: in scale steps (ranks) on an ordinal scale, in scale
    values on a numeric one (``unit`` says which)."""
    confusion: OrdinalConfusion
    """The confusion over the scale (rows adjudicated, columns judge) with ``exact``,
    ``within_one``, ``predicted_higher`` and ``predicted_lower``."""


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
    """Cases whose adjudicated label is on the pass side (any outcome): the pass label, or one
    of an ordered rubric's ``pass_labels``. 0 when the rubric has no pass/fail view."""
    human_fails: int
    """Cases whose adjudicated label is on the fail side (any outcome): the fail label, or a
    scale label outside an ordered rubric's ``pass_labels``."""
    false_passes: int
    """Human fail, judge pass (by the rubric's pass/fail view)."""
    false_fails: int
    """Human pass, judge fail (by the rubric's pass/fail view)."""
    other_disagreements: int
    """Mismatches that are neither: involving an abstain label, on the same side of an ordered
    rubric's pass/fail threshold (human 2, judge 3), or any mismatch without a pass/fail view."""
    false_pass_rate: Rate
    """false_passes / human-fail cases with a pass-or-fail verdict, 95% Wilson interval
    (abstentions, errors and missing results are in neither part)."""
    false_fail_rate: Rate
    """false_fails / human-pass cases with a decided pass-or-fail verdict, 95% Wilson
    interval (abstentions, errors and missing results excluded, as above)."""
    false_pass_rate_grouped: GroupedRate | None = None
    """The false-pass rate over the gold's groups (paraphrases, one conversation...): its
    interval counts each group's cases as correlated (docs/statistics.md), and the gate bounds
    this one. None when every group holds at most one of the denominator's cases."""
    false_fail_rate_grouped: GroupedRate | None = None
    """The false-fail rate over the gold's groups, as ``false_pass_rate_grouped``."""
    cohen_kappa: Kappa
    """Cohen's kappa between adjudicated and judge labels over verdicts (nominal: every label
    an unordered category, also on an ordered rubric)."""
    errors_by_kind: dict[str, int]
    """Evaluator errors by kind."""
    ordinal: OrdinalAlignment | None = None
    """Ordered rubrics (``ordinal``, ``numeric``): weighted kappa, mean absolute error and the
    full ordinal confusion over the slice's on-scale verdicts. None on a nominal rubric."""
    sampled_out: int = 0
    """Cases of the slice a declared sampling plan left out: not in ``n``, in no figure."""


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
    scale: Literal["nominal", "ordinal", "numeric"] = "nominal"
    """The rubric's scale. On ``ordinal`` and ``numeric`` every slice row has ``ordinal``."""
    scale_labels: list[str] | None = None
    """Ordered rubrics: the scale labels in scale order (labels without the abstain labels)."""
    pass_labels: list[str] | None = None
    """Ordered rubrics: the labels that count as pass (every other scale label counts as fail)."""
    pass_fail_view: bool = True
    """Whether the rubric says which labels pass and which fail; if not, false passes and fails
    are 0 over empty denominators and the gate never certifies (``no_pass_fail_view``)."""
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
    """True when the results were produced against exactly this gold; False when alignment was
    forced over a gold change (never certified); None without a lineage check."""
    gold_changes: list[GoldChange] = []
    """Every judged case whose gold changed since the results were produced (with
    ``comparable`` False), and what changed in it."""
    lineage: Lineage | None = None
    """The lineage check: the gold the results were produced against and the gold given."""
    partition_source: Literal["option", "run_manifest", "all"] | None = None
    """Where ``partition`` came from: the ``--partition`` option, the run manifest beside the
    results (when the option is omitted), or ``all`` (neither)."""
    sampling_plan_sha256: str | None = None
    """The declared sampling plan (from the run manifest, re-drawn and verified) that left
    cases out, or None when none was left out."""
    sampled_out_case_ids: list[str] = []
    """Cases the declared plan left out: not in scope, in no count, never a pass; the gate
    reports them (``sampled_out``) and never certifies a sample."""
    sampling_rejected: str | None = None
    """Why the run manifest's sampling plan was not accepted (its sampled-out cases then count as
    missing), or None."""
    costs: list[SliceCost] = []
    """Cost and tokens per judged case per slice, then ``(all)``: total, median, p95 (nearest
    rank), max (``workbench.results._costs``; cached verdicts left out)."""
    evidence_truncated_case_ids: list[str] = []
    """Cases whose counted attempt saw a judge-visible field only in part (the result's
    ``evidence_seen``): their verdict was not given on the whole evidence."""

    def slice_frame(self) -> Any:
        """The per-slice table as a pandas DataFrame (one row per slice plus ``(all)``); FP and
        FF rates exclude abstentions."""
        import pandas as pd

        return pd.DataFrame([_row(s) for s in [*self.slices, self.overall]]).set_index("slice")

    def ordinal_frame(self) -> Any:
        """Ordered rubrics: the per-slice ordinal figures as a DataFrame (one row per slice plus
        ``(all)``), each count with its denominator ``pairs``; None on a nominal rubric."""
        import pandas as pd

        rows = [_ordinal_row(s) for s in [*self.slices, self.overall] if s.ordinal is not None]
        return pd.DataFrame(rows).set_index("slice") if rows else None


def _kappa_text(kappa: Kappa) -> str:
    return f"{kappa.value:.3f}" if kappa.value is not None else "n/a"


def _share(k: int, n: int) -> str:
    return f"{k}/{n}" + (f" = {k / n:.2f}" if n else "")


def _ordinal_row(s: SliceAlignment) -> dict[str, Any]:
    o = s.ordinal
    assert o is not None
    c = o.confusion
    mae = o.mean_absolute_error
    return {
        "slice": s.slice,
        "risk": s.risk or "",
        "pairs": o.pairs,
        "off scale": o.off_scale,
        "kappa linear": _kappa_text(o.weighted_kappa_linear),
        "kappa quadratic": _kappa_text(o.weighted_kappa_quadratic),
        "MAE": f"{mae.value:.3f}" if mae.value is not None else "n/a",
        "exact": _share(c.exact, c.n),
        "within one": _share(c.within_one, c.n),
        "judge higher": _share(c.predicted_higher, c.n),
        "judge lower": _share(c.predicted_lower, c.n),
    }


def _row(s: SliceAlignment) -> dict[str, Any]:
    return {
        "slice": s.slice,
        "risk": s.risk or "",
        "n": s.n,
        "verdicts": s.verdicts,
        "abstained": s.abstentions,
        "errors": s.errors,
        "missing": s.missing,
        "coverage": (
            f"{s.decided}/{s.n}"
            + (f" = {s.coverage.rate:.2f}" if s.coverage.rate is not None else "")
        ),
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


def has_pass_fail_view(rubric: Rubric) -> bool:
    """Whether some label of ``rubric`` counts as pass and some as fail."""
    sides = {rubric.pass_fail(label) for label in rubric.labels}
    return {"pass", "fail"} <= sides


_PARTITION_NOTE = {
    "run_manifest": " (from the run manifest beside the results; --partition overrides)",
    "all": " (no --partition and no run manifest naming one)",
}


def lineage_lines(report: AlignmentReport) -> list[str]:
    """The lineage header lines: which gold the results were produced against, and changes."""
    lineage = report.lineage
    if lineage is None:
        return ["lineage:    not checked"]
    if lineage.source == "no_results":
        return ["lineage:    no results to check"]
    where = {"run_manifest": "run manifest", "results": "results"}.get(lineage.source, "nothing")
    release = lineage.results_release or "not frozen"
    if lineage.comparable:
        return [
            f"lineage:    same gold as the run (dataset {lineage.gold_dataset_sha256[:12]}, rubric"
            f" {lineage.gold_rubric_version}, release {release}; from the {where})"
        ]
    lines = [
        "NOT COMPARABLE: the results were not produced against this gold (--allow-gold-change); the"
        " gate will not certify this"
    ]
    lines += [f"  - {reason}" for reason in lineage.problems]
    return lines + [f"  - case {c.case_id}: {c.detail}" for c in lineage.gold_changes]


def _pass_fail_text(report: AlignmentReport) -> str:
    if not report.pass_fail_view:
        what = "pass_labels" if report.scale != "nominal" else "pass_label and fail_label"
        return (
            f"none (the rubric declares no {what}): false passes and false fails are not counted,"
            " and the gate will not certify (no_pass_fail_view)"
        )
    neither = f"; neither = {', '.join(report.abstain_labels)}" if report.abstain_labels else ""
    if report.pass_labels is not None:
        fails = [label for label in report.scale_labels or [] if label not in report.pass_labels]
        return f"pass = {', '.join(report.pass_labels)}; fail = {', '.join(fails)}{neither}"
    return f"pass = {report.pass_label}; fail = {report.fail_label}{neither}"


def format_report(report: AlignmentReport, *, wide: bool = False) -> str:
    """Human-readable text: header, per-slice table and confusion table. By default every line
    fits 120 columns (:mod:`workbench.align._narrow`); ``wide`` prints the full tables."""
    if wide:
        tables = [*_table_lines(report), *_grouped_lines(report)]
        return "\n".join([*_header_lines(report), *tables, *_tail_lines(report)])
    from . import _narrow

    tables = [*_narrow_table_lines(report), *_grouped_lines(report)]
    lines = [*_header_lines(report), *tables, *_tail_lines(report, wide)]
    return "\n".join(_narrow.fit(lines))


def _grouped_lines(report: AlignmentReport) -> list[str]:
    """The rates whose cases share gold groups, with the interval the gate bounds."""

    def text(rate: GroupedRate | None) -> str:
        if rate is None or rate.rate is None:
            return "-"
        return (
            f"{rate.k}/{rate.n} in {rate.groups} groups = {rate.rate:.2f}"
            f" [{rate.ci95_low:.2f}, {rate.ci95_high:.2f}]"
        )

    rows = [
        (s.slice, text(s.false_pass_rate_grouped), text(s.false_fail_rate_grouped))
        for s in [*report.slices, report.overall]
        if s.false_pass_rate_grouped or s.false_fail_rate_grouped
    ]
    if not rows:
        return []
    width = [max(len(r[i]) for r in [("slice", "FP", "FF"), *rows]) for i in range(3)]
    head = ("slice", "FP over groups [95% CI]", "FF over groups [95% CI]")
    width = [max(w, len(h)) for w, h in zip(width, head, strict=True)]
    return [
        "",
        "Cases of one gold group (paraphrases, one conversation) are not independent: these"
        " rates count each group's cases as correlated, and the gate bounds them"
        " (docs/statistics.md):",
        *(
            "  ".join(c.ljust(w) for c, w in zip(r, width, strict=True)).rstrip()
            for r in [head, *rows]
        ),
    ]


def _header_lines(report: AlignmentReport) -> list[str]:
    judge = (
        f"{report.judge.name}@{report.judge.version} ({report.judge.kind}, fingerprint"
        f" {report.judge_fingerprint[:12]})"
        if report.judge and report.judge_fingerprint
        else "(no results)"
    )
    o, missing = report.overall, len(report.missing_case_ids)
    note = _PARTITION_NOTE.get(report.partition_source or "", "")
    lines = [
        f"judge:      {judge}",
        f"gold:       {report.gold_path or '-'} (dataset {report.dataset_sha256[:12]}, rubric"
        f" {report.rubric_version})",
        f"partition:  {report.partition or 'all'}{note}    repeat: {report.repeat}",
        *lineage_lines(report),
        f"status:     {report.status.upper()}"
        + (f" - {missing} case(s) have no result; this is not a pass" if missing else ""),
        f"cases:      {o.n} in scope, {o.verdicts} verdicts ({o.decided} decided,"
        f" {o.abstentions} abstentions), {o.errors} evaluator errors, {o.missing} missing",
        f"coverage:   {_coverage_text(o)} (decided verdicts / cases in scope; abstentions,"
        " errors and missing results are not decided)",
    ]
    if report.sampled_out_case_ids:
        by_slice = ", ".join(f"{s.slice} {s.sampled_out}" for s in report.slices if s.sampled_out)
        lines.append(
            f"sampled:    {len(report.sampled_out_case_ids)} case(s) sampled out (declared plan"
            f" {(report.sampling_plan_sha256 or '')[:12]}; {by_slice}): not in scope, in no figure,"
            " never a pass; the figures are of the sampled cases and the gate does not certify a"
            " sample"
        )
    if report.evidence_truncated_case_ids:
        cut = report.evidence_truncated_case_ids
        shown = ", ".join(cut[:5]) + (f" and {len(cut) - 5} more" if len(cut) > 5 else "")
        lines.append(
            f"evidence:   {len(cut)} case(s) had evidence truncated ({shown}): the judge saw only"
            " part of a field; each result's evidence_seen says which"
        )
    if report.sampling_rejected:
        lines.append(
            f"sampling:   plan not accepted: {report.sampling_rejected}; its sampled-out cases"
            " count as missing (a scope change)"
        )
    if report.excluded_other_partition or report.other_repeats or report.superseded_attempts:
        lines.append(
            f"skipped:    {report.excluded_other_partition} result(s) outside the partition,"
            f" {report.other_repeats} of other repeats, {report.superseded_attempts} earlier"
            " attempt(s) replaced by retries"
        )
    if report.scale != "nominal":
        lines.append(f"scale:      {report.scale} ({' < '.join(report.scale_labels or [])})")
    lines.append(f"pass/fail:  {_pass_fail_text(report)}")
    return lines


def _table_lines(report: AlignmentReport) -> list[str]:
    import pandas as pd

    nominal = report.scale == "nominal"
    kappa = "" if nominal else "; kappa = nominal Cohen's kappa, every label an unordered category"
    lines = ["", _SLICE_NOTE + f"{kappa}):"]
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        lines.append(report.slice_frame().to_string())
        ordinal = report.ordinal_frame()
        if ordinal is not None:
            lines += [
                "",
                "Ordinal agreement per slice (pairs = verdicts with the adjudicated and the judge"
                " label both on the scale, the denominator of every figure; off scale = verdicts"
                " left out; weighted Cohen's kappa, linear and quadratic; MAE = mean |judge -"
                f" adjudicated| in {_unit(report)}s; judge higher/lower = judge above/below the"
                " adjudicated label on the scale):",
                ordinal.to_string(),
            ]
        lines += _confusion_lines(report)
    return lines


_SLICE_NOTE = (
    "Per slice (coverage = decided verdicts / cases in scope; aligned over verdicts; FP = human"
    " fail judged pass, over human fails judged pass or fail; FF = human pass judged fail, over"
    " human passes judged pass or fail; abstentions are in neither"
)


def _unit(report: AlignmentReport) -> str:
    ordinal = report.overall.ordinal
    return ordinal.mean_absolute_error.unit if ordinal is not None else "scale step"


def _confusion_lines(report: AlignmentReport, **to_string: Any) -> list[str]:
    """The ordinal confusion (ordered rubrics) and the label confusion."""
    lines = []
    if report.overall.ordinal is not None:
        frame = report.overall.ordinal.confusion.to_frame()
        frame.index.name, frame.columns.name = "human \\ judge", None
        lines += [
            "",
            f"Ordinal confusion over all cases in scope ({report.overall.ordinal.pairs}"
            " pairs; rows: adjudicated label, columns: judge):",
            frame.to_string(**to_string),
        ]
    lines += ["", "Confusion (rows: adjudicated human label, columns: judge):"]
    return [*lines, report.confusion.to_frame().to_string(**to_string)]


def _narrow_table_lines(report: AlignmentReport) -> list[str]:
    """The tables of the default text: narrow per-slice and ordinal tables, confusions."""
    from . import _narrow

    kappa = "; kappa = nominal Cohen's kappa" if report.scale != "nominal" else ""
    lines = [
        "",
        _SLICE_NOTE + f"{kappa}; counts in --wide and --json):",
        *_narrow.slice_table(report),
    ]
    ordinal = _narrow.ordinal_table(report)
    if ordinal is not None:
        lines += [
            "",
            "Ordinal agreement per slice (pairs = verdicts with the adjudicated and the judge label"
            " both on the scale, the denominator of every figure; weighted Cohen's kappa, linear"
            f" and quadratic; MAE = mean |judge - adjudicated| in {_unit(report)}s; exact, within"
            " one, judge higher/lower as shares of pairs; counts in --wide and --json):",
            *ordinal,
        ]
    return lines + _confusion_lines(report, line_width=_narrow.WIDTH)


def _tail_lines(report: AlignmentReport, wide: bool = True) -> list[str]:
    lines: list[str] = []
    if report.evaluator_errors:
        kinds = Counter(e.kind for e in report.evaluator_errors).most_common()
        lines += ["", "Evaluator errors: " + ", ".join(f"{k}={v}" for k, v in kinds)]
    missing = report.missing_case_ids
    if missing:
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        lines.append(f"Missing: {', '.join(missing[:10])}{more}")
    if report.costs and report.costs[-1].cases:
        from ._narrow import cost_table

        what, tokens = (
            ("Cost and tokens", "") if wide else ("Cost", "; tokens in --wide and --json")
        )
        lines += [
            "",
            f"{what} per judged case, by slice (median, p95 nearest rank, max; retries included,"
            f" cached verdicts left out{tokens}):",
            format_slice_costs(report.costs) if wide else cost_table(report),
        ]
    return lines
