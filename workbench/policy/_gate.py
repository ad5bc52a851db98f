"""The release gate: measured alignment + a reviewed policy -> one of four outcomes.

It fails closed (a missing result, an unknown slice, a rate without a denominator or a missing
policy is never a pass) and reads only per-slice rows. Rates count decided pass/fail verdicts
only (an abstention is in no denominator); pass and fail are the rubric's pass/fail view.
Results that are not held-out can at best ``would_certify``.

==========================  ==========  ======================================================
code                        category    when
==========================  ==========  ======================================================
no_cases                    incomplete  the report has no case in scope
missing_results             incomplete  cases without any judge result (report incomplete)
evaluator_errors_exceeded   incomplete  evaluator errors > ``max_evaluator_errors``
budget_exhausted            incomplete  the run stopped at its budget
case_limit_reached          incomplete  the run stopped at ``--max-cases``
pending_retries             incomplete  the run has retryable errors still to retry
run_incomplete              incomplete  the run is incomplete for another reason
gold_changed                incomplete  results produced against other gold (forced with
                                        --allow-gold-change)
cell_without_cases          incomplete  a crossed cell the policy limits has no case in scope
false_passes_exceeded       quality     slice false passes > ``max_false_passes``
false_pass_rate_exceeded    quality     slice false-pass rate (basis) > ``max_false_pass_rate``
false_fail_rate_exceeded    quality     slice false-fail rate (basis) > ``max_false_fail_rate``
abstention_rate_exceeded    quality     slice abstentions / verdicts > ``max_abstention_rate``
constant_verdict            quality     decided verdicts all one label, gold has pass and fail
policy_missing              review      no policy was given
policy_rubric_mismatch      review      the policy was written for another rubric version
rubric_mismatch             review      the report was computed under another rubric
partition_mismatch          review      the report is not of the policy's partition
run_mismatch                review      the run summary is of another judge or partition
candidate_mismatch          review      the results are of another judge than ``fingerprint``
slice_not_in_policy         review      a rubric slice (or a slice with cases) has no limits
policy_unknown_slice        review      the policy names a slice the rubric does not declare
policy_risk_mismatch        review      the policy's risk for a slice differs from the rubric's
no_pass_fail_view           review      the rubric says no label is pass or fail (never waivable)
too_few_cases               review      slice decided verdicts < ``min_n``
rate_unbounded              review      a limit is set but no case enters its denominator
false_pass_rate_unproven    review      observed rate within the limit, upper 95% bound above it
false_fail_rate_unproven    review      the same for false fails (too few cases to bound)
cost_exceeded               review      run spend > ``max_cost_usd``
cost_unverified             review      ``max_cost_usd`` is set but no run summary was given
sampled_out                 review      a declared sampling plan left cases out (never waivable)
predictions_match_labels    review      imported verdicts equal every held-out label, no controls
==========================  ==========  ======================================================
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, cast

from pydantic import Field

from .._record import Record as _Model
from ..align import (
    AlignmentReport,
    Join,
    SliceAlignment,
    empty_slice,
    flagged_cases,
    has_pass_fail_view,
    join_cases,
    join_cell_figures,
    split_cell,
)
from ..gold import Risk, Rubric
from ..outcomes import ADVISORY_CLEAR, GATE_OUTCOMES, exit_codes
from ..runs import RunSummary
from ..stats import GroupedRate, Rate, Shortfall, shortfall, too_few_cases_message
from ._codes import Category
from ._decide import Blocker, Decision, UnappliedOverride, WaivedBlocker, decide
from ._overrides import Override
from ._policy import Basis, Policy, SlicePolicy

GATE_SCHEMA_VERSION = 2
"""2: adds ``figures`` (coverage beside every rate) and ``unapplied_overrides``."""
GateOutcome = Literal[
    "certified", "quality_failed", "evaluation_incomplete", "review_required", "would_certify"
]
EXIT_CODES: dict[str, int] = exit_codes(*GATE_OUTCOMES, ADVISORY_CLEAR)
"""Process exit code of ``workbench gate`` per outcome (2 is invalid input)."""


@dataclass(frozen=True)
class NotEvaluated:
    """Given instead of an alignment report when no evidence was gathered on purpose (blocking
    controls failed): the gate decides on the blockers it is given."""

    reason: str
    """Why there is no evidence, for the summary."""
    judge: str
    """``name@version`` of the candidate."""
    dataset_sha256: str
    """The gold dataset hash."""
    partition: str | None = None
    """The partition that was not evaluated."""


class SliceFigures(_Model):
    """The numbers the gate read for one slice (or ``(all)``): coverage beside every rate."""

    slice: str
    """Slice name, or ``(all)``."""
    risk: str | None
    """The rubric's risk level (None for ``(all)``)."""
    n: int
    """Cases in scope."""
    verdicts: int
    """Cases with a verdict (decided + abstentions)."""
    decided: int
    """Verdicts that are not abstentions."""
    abstentions: int
    """Verdicts in the rubric's abstain labels."""
    errors: int
    """Cases ending in an evaluator error."""
    missing: int
    """Cases without a result."""
    coverage: Rate
    """decided / n."""
    abstention_rate: Rate
    """abstentions / verdicts."""
    false_pass_rate: Rate
    """false passes / human-fail cases judged pass or fail."""
    false_fail_rate: Rate
    """false fails / human-pass cases judged pass or fail."""


class PolicyRef(_Model):
    """Which policy the gate applied."""

    name: str
    """Policy name."""
    version: str
    """Policy version."""
    sha256: str | None
    """sha256 of the policy file, when known."""


class GateResult(_Model):
    """The gate's decision, with every blocker and the numbers behind it."""

    schema_version: int = GATE_SCHEMA_VERSION
    """Gate result format version."""
    kind: Literal["workbench.gate"] = "workbench.gate"
    """Document kind."""
    outcome: GateOutcome
    """``certified``, ``quality_failed``, ``evaluation_incomplete`` or ``review_required``;
    ``would_certify`` (advisory) instead of ``certified`` on results that are not held-out."""
    blockers: list[Blocker]
    """Blockers no override waived, sorted by category, slice, code."""
    waived: list[WaivedBlocker]
    """Blockers waived by an active override, same order."""
    expired_overrides: list[str] = Field(default_factory=list)
    """Ids of overrides for this policy and candidate that had expired: ignored."""
    unapplied_overrides: list[UnappliedOverride] = Field(default_factory=list)
    """Every override given that waived nothing, with the reason (expired ones included)."""
    figures: list[SliceFigures] = Field(default_factory=list)
    """Per-slice numbers the gate read, then the policy's crossed cells, then ``(all)``: coverage
    beside every rate."""
    policy: PolicyRef | None
    """The policy applied, or None when there was none."""
    summary: str
    """One line: outcome, blocker counts, policy."""
    judge: str | None = None
    """``name@version`` of the judge whose results were evaluated."""
    judge_fingerprint: str | None = None
    """The candidate fingerprint overrides were scoped to (the results' judge fingerprint)."""
    dataset_sha256: str | None = None
    """The gold dataset hash of the report."""
    rubric_version: str | None = None
    """The rubric version of the report."""
    partition: str | None = None
    """The partition evaluated (None: all)."""
    evaluated_at: datetime | None = None
    """The time overrides were checked against."""

    @property
    def exit_code(self) -> int:
        """The ``workbench gate`` exit code of this outcome."""
        return EXIT_CODES[self.outcome]


def evaluate_gate(
    report: AlignmentReport | NotEvaluated,
    policy: Policy | None,
    *,
    rubric: Rubric,
    run: RunSummary | None = None,
    overrides: Sequence[Override] = (),
    now: datetime | None = None,
    extra_blockers: Sequence[Blocker] = (),
    join: Join | None = None,
    policy_sha256: str | None = None,
    fingerprint: str | None = None,
    flagged: Mapping[str, dict[str, list[str]]] | None = None,
    cells: Mapping[str, SliceAlignment] | None = None,
) -> GateResult:
    """Decide whether ``report`` meets ``policy``.

    ``flagged`` or ``join`` supply the false-pass case ids (without them a critical false pass
    cannot be waived). ``extra_blockers`` come from other checks (an ``incomplete`` one is never
    waivable). ``fingerprint`` scopes the overrides (default: the results' judge); results of
    another judge are ``candidate_mismatch``. ``cells``: the figures of the policy's crossed
    cells (:func:`~workbench.align.cell_figures`, their flagged ids in ``flagged``; computed
    from ``join`` when given). A :class:`NotEvaluated` report counts only
    ``extra_blockers``, checks no override, and without any blocker fails closed.
    """
    if isinstance(report, NotEvaluated):
        return _not_evaluated(report, policy, rubric, extra_blockers, policy_sha256, fingerprint)
    if join is not None:
        flagged = flagged_cases(join_cases(join), join.dataset.rubric.abstain_labels)
        if policy is not None and policy.cells:
            cells, cell_ids = join_cell_figures(join, list(policy.cells))
            flagged = {**flagged, **cell_ids}
    blockers = [
        *_measured(report, policy, rubric, run, flagged or {}),
        *(_cells(report, policy, rubric, cells or {}, flagged or {}) if policy else []),
        *_candidate(report, fingerprint),
        *_from_other_checks(report, extra_blockers),
    ]
    fingerprint = fingerprint or report.judge_fingerprint
    decision = decide(
        blockers,
        overrides,
        policy_label=policy.label if policy else None,
        fingerprint=fingerprint,
        now=now,
        clear="certified" if report.partition == "held_out" else ADVISORY_CLEAR,
    )
    ref = _ref(policy, policy_sha256)
    return GateResult(
        outcome=cast(GateOutcome, decision.outcome),
        blockers=decision.blockers,
        waived=decision.waived,
        expired_overrides=decision.expired,
        unapplied_overrides=decision.unapplied,
        figures=[
            SliceFigures.model_validate(row, from_attributes=True)
            for row in [*report.slices, *(cells or {}).values(), report.overall]
        ],
        policy=ref,
        judge=f"{report.judge.name}@{report.judge.version}" if report.judge else None,
        judge_fingerprint=fingerprint,
        dataset_sha256=report.dataset_sha256,
        rubric_version=report.rubric_version,
        partition=report.partition,
        evaluated_at=decision.now,
        summary=decision.summary(_shown(ref)),
    )


def _measured(
    report: AlignmentReport,
    policy: Policy | None,
    rubric: Rubric,
    run: RunSummary | None,
    flagged: Mapping[str, dict[str, list[str]]],
) -> list[Blocker]:
    """The blockers of the evidence itself: completeness, consistency, cost, slices, defenses."""
    blockers = [
        *_completeness(report, run, policy.max_evaluator_errors if policy else 0),
        *_consistency(report, policy, rubric, run),
    ]
    if policy is not None:
        blockers += _cost(policy, run)
        blockers += _slices(report, policy, rubric, flagged)
    blockers += _no_pass_fail_view(rubric, policy)
    blockers += _constant_verdicts(report, rubric)
    blockers += _copied_labels(report, policy)
    blockers += _sampled(report)
    return blockers


def _candidate(report: AlignmentReport, fingerprint: str | None) -> list[Blocker]:
    """``candidate_mismatch`` when the results are of another judge than the candidate."""
    if fingerprint is None or report.judge_fingerprint in (None, fingerprint):
        return []
    return [
        _blocker(
            "candidate_mismatch",
            "The results were produced by another judge than the candidate being evaluated.",
            evidence={
                "candidate_fingerprint": fingerprint,
                "results_fingerprint": report.judge_fingerprint,
            },
        )
    ]


def _from_other_checks(
    report: AlignmentReport | None, extra_blockers: Sequence[Blocker]
) -> list[Blocker]:
    """``extra_blockers`` (an incomplete one never waivable), and ``gold_changed`` unless given."""
    out = [
        b.model_copy(update={"waivable": False}) if b.category == "incomplete" else b
        for b in extra_blockers
    ]
    if report is not None and not any(b.code == "gold_changed" for b in extra_blockers):
        out += _gold_changes(report)
    return out


def _ref(policy: Policy | None, policy_sha256: str | None) -> PolicyRef | None:
    if policy is None:
        return None
    return PolicyRef(name=policy.name, version=policy.version, sha256=policy_sha256)


def _shown(ref: PolicyRef | None) -> str:
    if ref is None:
        return "no policy"
    return f"{ref.name}@{ref.version}" + (f" (sha256 {ref.sha256[:12]})" if ref.sha256 else "")


def _not_evaluated(
    report: NotEvaluated,
    policy: Policy | None,
    rubric: Rubric,
    extra_blockers: Sequence[Blocker],
    policy_sha256: str | None,
    fingerprint: str | None,
) -> GateResult:
    blockers = _from_other_checks(None, extra_blockers)
    if not blockers:  # fail closed: no evidence is never a pass
        message = f"No evidence was gathered ({report.reason}); a missing result is never a pass."
        blockers.append(
            _blocker("missing_results", message, "incomplete", {"partition": report.partition})
        )
    # nothing measured was there to waive, and blockers from other checks are never waivable
    decision: Decision = decide(blockers, policy_label=None, fingerprint=fingerprint)
    return GateResult(
        outcome=cast(GateOutcome, decision.outcome),
        blockers=decision.blockers,
        waived=[],
        policy=_ref(policy, policy_sha256),
        summary=(
            f"{decision.outcome.upper()}: {report.reason} ({len(decision.blockers)} blocker(s))"
        ),
        judge=report.judge,
        judge_fingerprint=fingerprint,
        dataset_sha256=report.dataset_sha256,
        rubric_version=rubric.version,
        partition=report.partition,
    )


def _completeness(
    report: AlignmentReport, run: RunSummary | None, max_errors: int
) -> list[Blocker]:
    out: list[Blocker] = []
    overall = report.overall
    if overall.n == 0:
        message = "No gold case is in scope, so there is nothing to certify."
        evidence: dict[str, Any] = {"cases_in_scope": 0, "partition": report.partition}
        out.append(_blocker("no_cases", message, "incomplete", evidence))
    if report.status != "complete" or overall.missing:
        message = (
            f"{overall.missing} of {overall.n} cases have no judge result; a missing result is"
            " never a pass."
        )
        evidence = {
            "missing": overall.missing,
            "cases_in_scope": overall.n,
            "missing_by_slice": {s.slice: s.missing for s in report.slices if s.missing},
        }
        if report.sampling_rejected:
            message += (
                f" Sampling plan not accepted: {report.sampling_rejected} (leaving cases out"
                " without the policy's declared plan is a scope change)."
            )
            evidence["sampling_rejected"] = report.sampling_rejected
        missing = list(report.missing_case_ids)
        out.append(_blocker("missing_results", message, "incomplete", evidence, case_ids=missing))
    if overall.errors > max_errors:
        message = (
            f"{overall.errors} cases ended in an evaluator error (at most {max_errors} allowed),"
            " so their verdicts are unknown."
        )
        evidence = {
            "errors": overall.errors,
            "limit": max_errors,
            "cases_in_scope": overall.n,
            "errors_by_kind": dict(overall.errors_by_kind),
            "errors_by_slice": {s.slice: s.errors for s in report.slices if s.errors},
        }
        errored = [e.case_id for e in report.evaluator_errors]
        out.append(
            _blocker("evaluator_errors_exceeded", message, "incomplete", evidence, case_ids=errored)
        )
    return out + (_run_blockers(run) if run is not None else [])


def _run_blockers(run: RunSummary) -> list[Blocker]:
    unrun = sorted({pair.rsplit("#", 1)[0] for pair in run.unrun})
    pairs = f"{len(run.unrun)} case x repeat pair(s) unrun."
    counts = {"unrun": len(run.unrun), "planned": run.planned}
    out: list[Blocker] = []
    if run.stop_reason == "budget_exhausted":
        evidence = {"cost_usd": run.cost_usd, "budget_usd": run.budget_usd, **counts}
        message = f"The run stopped at its budget with {pairs}"
        out.append(_blocker("budget_exhausted", message, "incomplete", evidence, case_ids=unrun))
    if run.stop_reason == "max_cases":
        evidence = {"max_cases": run.max_cases, **counts}
        message = f"The run stopped at its case limit with {pairs}"
        out.append(_blocker("case_limit_reached", message, "incomplete", evidence, case_ids=unrun))
    if run.pending_retry:
        pending = sorted({pair.rsplit("#", 1)[0] for pair in run.pending_retry})
        message = (
            f"{len(run.pending_retry)} case x repeat pair(s) still await a retry after a retryable"
            " evaluator error."
        )
        evidence = {"pending_retry": len(run.pending_retry), "planned": run.planned}
        out.append(_blocker("pending_retries", message, "incomplete", evidence, case_ids=pending))
    if run.status != "complete" and not out:
        message = f"The run summary says the run is incomplete ({len(run.unrun)} pair(s) unrun)."
        evidence = {**counts, "verdicts": run.verdicts, "errors": run.errors}
        out.append(_blocker("run_incomplete", message, "incomplete", evidence, case_ids=unrun))
    return out


def _blocker(
    code: str,
    message: str,
    category: Category = "review",
    evidence: dict[str, Any] | None = None,
    *,
    slice: str | None = None,
    risk: str | None = None,
    case_ids: Sequence[str] = (),
    waivable: bool = False,
) -> Blocker:
    return Blocker(
        code=code,
        category=category,
        slice=slice,
        risk=risk,
        message=message,
        evidence=evidence or {},
        case_ids=list(case_ids),
        waivable=waivable,
    )


def _consistency(
    report: AlignmentReport, policy: Policy | None, rubric: Rubric, run: RunSummary | None
) -> list[Blocker]:
    out: list[Blocker] = []
    if policy is None:
        out.append(
            _blocker(
                "policy_missing",
                "No release policy was given, so no limit can be checked and the judge cannot be"
                " certified.",
            )
        )
    if report.rubric_version != rubric.version:
        out.append(
            _blocker(
                "rubric_mismatch",
                f"The report was computed under rubric {report.rubric_version!r} but the rubric"
                f" given is {rubric.version!r}.",
                evidence={"report": report.rubric_version, "rubric": rubric.version},
            )
        )
    if (
        policy is not None
        and policy.rubric_version is not None
        and policy.rubric_version != rubric.version
    ):
        out.append(
            _blocker(
                "policy_rubric_mismatch",
                f"The policy was written for rubric {policy.rubric_version!r} but the dataset uses"
                f" {rubric.version!r}.",
                evidence={"policy": policy.rubric_version, "rubric": rubric.version},
            )
        )
    if policy is not None and policy.partition is not None and report.partition != policy.partition:
        out.append(
            _blocker(
                "partition_mismatch",
                f"The policy certifies on partition {policy.partition!r} but the report covers"
                f" {report.partition or 'all partitions'!r}.",
                evidence={"policy": policy.partition, "report": report.partition},
            )
        )
    if run is not None and (
        (report.judge_fingerprint is not None and run.judge_fingerprint != report.judge_fingerprint)
        or run.partition != report.partition
    ):
        out.append(
            _blocker(
                "run_mismatch",
                "The run summary belongs to another judge or partition than the results evaluated.",
                evidence={
                    "run_judge_fingerprint": run.judge_fingerprint,
                    "report_judge_fingerprint": report.judge_fingerprint,
                    "run_partition": run.partition,
                    "report_partition": report.partition,
                },
            )
        )
    return out


def _sampled(report: AlignmentReport) -> list[Blocker]:
    """``sampled_out`` when a declared plan left cases out: a sample is never certified."""
    if not report.sampled_out_case_ids:
        return []
    sha = report.sampling_plan_sha256 or ""
    by_slice = {s.slice: s.sampled_out for s in report.slices if s.sampled_out}
    n = len(report.sampled_out_case_ids)
    return [
        _blocker(
            "sampled_out",
            f"{n} case(s) were sampled out (declared plan {sha[:12]}): they were not judged and"
            " count as nothing, so the figures are of a sample and the evaluation cannot certify;"
            " run every case to certify.",
            evidence={
                "sampled_out": n,
                "cases_in_scope": report.overall.n,
                "sampled_out_by_slice": by_slice,
                "plan_sha256": sha,
            },
            case_ids=report.sampled_out_case_ids,
        )
    ]


def _usd(value: float) -> str:
    """Dollars to the last nonzero digit (to the micro-dollar), at least cents: a limit of
    $0.005 is never shown as $0.01."""
    whole, fraction = f"{value:.6f}".rstrip("0").split(".")
    return f"${whole}.{fraction.ljust(2, '0')}"


def _cost(policy: Policy, run: RunSummary | None) -> list[Blocker]:
    if policy.max_cost_usd is None:
        return []
    if run is None:
        return [
            _blocker(
                "cost_unverified",
                f"The policy limits spend to {_usd(policy.max_cost_usd)} but no run summary was"
                " given, so the spend cannot be checked.",
                evidence={"limit_usd": policy.max_cost_usd},
            )
        ]
    if run.cost_usd > policy.max_cost_usd:
        return [
            _blocker(
                "cost_exceeded",
                f"The run spent {_usd(run.cost_usd)}, more than the approved"
                f" {_usd(policy.max_cost_usd)}.",
                evidence={
                    "cost_usd": run.cost_usd,
                    "limit_usd": policy.max_cost_usd,
                    "calls": run.calls,
                    "retries": run.retries,
                },
                waivable=True,
            )
        ]
    return []


def _slices(
    report: AlignmentReport,
    policy: Policy,
    rubric: Rubric,
    flagged: Mapping[str, dict[str, list[str]]],
) -> list[Blocker]:
    rows = {s.slice: s for s in report.slices}
    view = has_pass_fail_view(rubric)
    names = list(dict.fromkeys([*rubric.slices, *(s.slice for s in report.slices if s.n > 0)]))
    out = [
        _blocker(
            "policy_unknown_slice",
            f"The policy sets limits for slice {name!r}, which the rubric does not declare.",
            slice=name,
        )
        for name in policy.slices
        if name not in rubric.slices
    ]
    for name in names:
        row = rows.get(name) or empty_slice(name, rubric)
        out += _slice_blockers(row, rubric.risk_of(name), policy, flagged.get(name, {}), view)
    return out


def _cells(
    report: AlignmentReport,
    policy: Policy,
    rubric: Rubric,
    cells: Mapping[str, SliceAlignment],
    flagged: Mapping[str, dict[str, list[str]]],
) -> list[Blocker]:
    """The policy's crossed-cell limits, checked as a slice's (the cell's risk: its slice's in
    the rubric); a cell with no case in scope is ``cell_without_cases``, never a pass."""
    out = []
    for name, spec in policy.cells.items():
        row = cells.get(name)
        if row is None or row.n == 0:
            out.append(
                _blocker(
                    "cell_without_cases",
                    f"The policy sets limits for cell {name!r}, which has no case in scope"
                    f" ({report.overall.n} cases in all; or the gold has no such field, see"
                    " `workbench align --by`): its limits cannot be shown met.",
                    "incomplete",
                    slice=name,
                    risk=spec.risk.value,
                    evidence={"cell": name, "cases": 0},
                )
            )
            continue
        risk = rubric.risk_of(split_cell(name).get("slice", "")) or spec.risk.value
        view = has_pass_fail_view(rubric)
        out += _limit_blockers(row, risk, spec, policy.min_n_per_slice, flagged.get(name, {}), view)
    return out


def _slice_blockers(
    row: SliceAlignment, risk: str | None, policy: Policy, ids: dict[str, list[str]], view: bool
) -> list[Blocker]:
    """One slice's blockers: no reviewed limits, a risk the policy did not review, its checks."""
    name = row.slice
    spec = policy.slices.get(name)
    if spec is None:
        return [
            _blocker(
                "slice_not_in_policy",
                f"Slice {name!r} ({row.n} cases) has no reviewed limits in the policy.",
                slice=name,
                risk=risk,
                evidence={"cases": row.n, "verdicts": row.verdicts},
            )
        ]
    return _limit_blockers(row, risk, spec, policy.min_n_per_slice, ids, view)


def _limit_blockers(
    row: SliceAlignment,
    risk: str | None,
    spec: SlicePolicy,
    min_n: int,
    ids: dict[str, list[str]],
    view: bool,
) -> list[Blocker]:
    """A slice's (or cell's) limits: a risk the policy did not review, then its checks
    (``min_n``: the policy's default, the slice's own ``min_n`` first)."""
    name = row.slice
    out = []
    if risk is not None and spec.risk.value != risk:
        out.append(
            _blocker(
                "policy_risk_mismatch",
                f"The policy reviewed slice {name!r} as {spec.risk.value} risk but the rubric"
                f" says {risk}.",
                slice=name,
                risk=risk,
                evidence={"policy": spec.risk.value, "rubric": risk},
            )
        )
    min_n = spec.min_n if spec.min_n is not None else min_n
    return out + _slice_checks(row, spec, risk, min_n, ids, pass_fail=view)


def slice_blockers(report: AlignmentReport, policy: Policy) -> list[Blocker]:
    """The gate's own blockers naming the slices of ``report`` (completeness and slice checks),
    without a rubric or a run: for previews, so a preview and the gate never disagree."""
    out = _completeness(report, None, policy.max_evaluator_errors)
    for row in report.slices:
        if row.n > 0:
            out += _slice_blockers(row, row.risk, policy, {}, report.pass_fail_view)
    return out


def _no_pass_fail_view(rubric: Rubric, policy: Policy | None) -> list[Blocker]:
    """``no_pass_fail_view`` (never waivable) when the rubric does not say which labels pass."""
    if has_pass_fail_view(rubric):
        return []
    limited = sorted(
        name
        for name, spec in (policy.slices.items() if policy else [])
        if spec.max_false_passes is not None
        or spec.max_false_pass_rate is not None
        or spec.max_false_fail_rate is not None
    )
    if rubric.ordered:
        scale = rubric.scale_labels
        what = f"the {rubric.scale.value} rubric declares no pass_labels"
        fix = (
            "declare pass_labels in the rubric (an unbroken run at one end of the scale, e.g."
            f" pass_labels: {scale[-2:] if len(scale) >= 3 else scale[-1:]}) in a new rubric"
            " version"
        )
    else:
        what = "the rubric declares no pass_label and fail_label"
        fix = "declare pass_label and fail_label in a new rubric version"
    limits = (
        f"; the policy's pass/fail limits for {', '.join(repr(n) for n in limited)} cannot be"
        " checked"
        if limited
        else ""
    )
    return [
        _blocker(
            "no_pass_fail_view",
            f"No label counts as pass or fail ({what}), so false passes and false fails cannot be"
            f" counted and no limit can show the judge is fit to gate a release{limits}: {fix}.",
            evidence={
                "scale": rubric.scale.value,
                "labels": list(rubric.labels),
                "pass_label": rubric.pass_label,
                "fail_label": rubric.fail_label,
                "pass_labels": rubric.pass_labels,
                "slices_with_pass_fail_limits": limited,
            },
        )
    ]


def _coverage(row: SliceAlignment) -> dict[str, Any]:
    return {"decided": row.decided, "cases": row.n, "coverage": row.coverage.rate}


def _slice_checks(
    row: SliceAlignment,
    spec: SlicePolicy,
    risk: str | None,
    min_n: int,
    ids: dict[str, list[str]],
    *,
    pass_fail: bool = True,
) -> list[Blocker]:
    out = [
        *_min_n_check(row, risk, min_n),
        *_abstention_check(row, spec, risk, ids.get("abstained", [])),
    ]
    if not pass_fail:
        return out  # no label is pass or fail: the whole evaluation has a no_pass_fail_view blocker
    return out + _false_pass_checks(row, spec, risk, ids) + _false_fail_checks(row, spec, risk, ids)


def _min_n_check(row: SliceAlignment, risk: str | None, min_n: int) -> list[Blocker]:
    if row.decided >= min_n:
        return []
    critical = risk == Risk.critical.value
    what = "to bound a critical slice" if critical else "to judge the slice"
    return [
        _blocker(
            "too_few_cases",
            f"Slice {row.slice!r} has {row.decided} cases with a decided verdict"
            f" ({row.abstentions} abstentions not counted), too few {what} (at least {min_n}"
            " required).",
            slice=row.slice,
            risk=risk,
            evidence={
                "decided": row.decided,
                "verdicts": row.verdicts,
                "abstentions": row.abstentions,
                "cases": row.n,
                "min_n": min_n,
            },
            waivable=not critical,
        )
    ]


def _false_pass_checks(
    row: SliceAlignment, spec: SlicePolicy, risk: str | None, ids: dict[str, list[str]]
) -> list[Blocker]:
    """The false-pass count and rate limits; critical slices: upper bound, waivable by case only."""
    critical = risk == Risk.critical.value
    fp_ids = ids.get("false_pass", [])
    fp_waivable = bool(fp_ids) if critical else True
    basis: Basis = "upper_95" if critical else spec.false_pass_rate_basis
    limited = spec.max_false_passes is not None or spec.max_false_pass_rate is not None
    if limited and row.false_pass_rate.n == 0:
        return [
            _unbounded(
                row,
                "false_pass",
                spec.max_false_pass_rate,
                basis,
                risk,
                waivable=not critical,
                count_limit=spec.max_false_passes,
            )
        ]
    out: list[Blocker] = []
    if spec.max_false_passes is not None and row.false_passes > spec.max_false_passes:
        message = (
            f"Slice {row.slice!r} has {row.false_passes} false passes (human fail, judge pass) of"
            f" {row.false_pass_rate.n} human-fail cases judged pass or fail, more than the"
            f" {spec.max_false_passes} allowed."
        )
        evidence = {
            "false_passes": row.false_passes,
            "human_fails_decided": row.false_pass_rate.n,
            "limit": spec.max_false_passes,
            **_coverage(row),
        }
        out.append(
            _blocker(
                "false_passes_exceeded",
                message,
                "quality",
                evidence,
                slice=row.slice,
                risk=risk,
                case_ids=fp_ids,
                waivable=fp_waivable,
            )
        )
    if spec.max_false_pass_rate is not None:
        out += _rate_check(
            row,
            "false_pass",
            row.false_pass_rate,
            spec.max_false_pass_rate,
            basis,
            risk,
            fp_ids,
            fp_waivable,
            not critical,
        )
    return out


def _false_fail_checks(
    row: SliceAlignment, spec: SlicePolicy, risk: str | None, ids: dict[str, list[str]]
) -> list[Blocker]:
    limit, basis = spec.max_false_fail_rate, spec.false_fail_rate_basis
    if limit is None:
        return []
    if row.false_fail_rate.n == 0:
        return [_unbounded(row, "false_fail", limit, basis, risk, waivable=True)]
    return _rate_check(
        row,
        "false_fail",
        row.false_fail_rate,
        limit,
        basis,
        risk,
        ids.get("false_fail", []),
        True,
        True,
    )


def _abstention_check(
    row: SliceAlignment, spec: SlicePolicy, risk: str | None, case_ids: list[str]
) -> list[Blocker]:
    rate = row.abstention_rate
    limit = spec.abstention_limit
    if rate.rate is None or rate.rate <= limit:
        return []
    declared = spec.max_abstention_rate is not None
    name = row.slice
    on = (
        f"the limit {limit:g}"
        if declared
        else (
            "the limit 0 (the policy declares no max_abstention_rate for the slice, so no"
            " abstention is accepted)"
        )
    )
    message = (
        f"Slice {name!r}: {rate.k} of {rate.n} verdicts are abstentions (observed"
        f" {rate.rate:.3f}), above {on}; only {row.decided} of {row.n} cases got a decided verdict."
    )
    evidence = {
        "abstentions": rate.k,
        "verdicts": rate.n,
        "rate": rate.rate,
        "ci95_low": rate.ci95_low,
        "ci95_high": rate.ci95_high,
        "limit": limit,
        "limit_declared": declared,
        **_coverage(row),
    }
    waivable = risk != Risk.critical.value
    return [
        _blocker(
            "abstention_rate_exceeded",
            message,
            "quality",
            evidence,
            slice=name,
            risk=risk,
            case_ids=case_ids,
            waivable=waivable,
        )
    ]


def _sample_evidence(need: Shortfall) -> dict[str, Any]:
    """The sample-size figures of a ``rate_unbounded`` or ``*_rate_unproven`` blocker."""
    return {
        "verdicts_needed_at_zero_errors": need.needed_at_zero_errors,
        "verdicts_needed_to_bound_at_half_limit": need.needed_to_bound,
        "bound_at_rate": need.bound_at_rate,
        "bound_interval": need.interval,
        "more_verdicts_needed": need.more,
    }


def _cited(name: str, need: Shortfall, human: str, kind: str) -> str:
    if need.limit is None or need.basis == "point":
        return ""
    what = kind.replace("_", " ")
    plan = too_few_cases_message(
        name,
        need.have,
        need.limit,
        human="fail" if human == "fail" else "pass",
        at_fraction=need.at_fraction,
    )
    text = f" To bound at half the limit: {plan}."
    if need.planned_already and need.more is not None:
        text += (
            " The slice has that many, but its observed rate is above half the limit: with no"
            f" further {what}, {need.more} more human-{human} case{'s' if need.more != 1 else ''}"
            " judged pass or fail would bound it."
        )
    if need.needed_at_zero_errors is None:
        return text + " At zero errors: no sample can show a limit of 0."
    return (
        text
        + f" At zero errors: {need.needed_at_zero_errors} human-{human} cases judged pass or fail,"
        f" with no {what} at all."
    )


def _unbounded(
    row: SliceAlignment,
    kind: str,
    limit: float | None,
    basis: Basis,
    risk: str | None,
    *,
    waivable: bool,
    count_limit: int | None = None,
) -> Blocker:
    if kind == "false_pass":
        human, total_key, total = "fail", "human_fails", row.human_fails
    else:
        human, total_key, total = "pass", "human_passes", row.human_passes
    what = kind.replace("_", "-")
    need = shortfall(0, 0, limit, basis)
    needed = need.needed_at_zero_errors
    if needed is None:
        text = (
            f"no sample can show a limit of {limit:g} on the upper_95 basis: the policy must"
            " change."
        )
    elif limit is None:
        text = f"the limit needs at least {needed} human-{human} case judged pass or fail."
    elif basis == "point":
        text = (
            f"the limit of {limit:g} (point basis) needs at least {needed} human-{human} case"
            " judged pass or fail."
        )
    else:
        text = (
            "on the upper_95 basis the 95% Wilson bound needs decided"
            f" cases.{_cited(row.slice, need, human, kind)}"
        )
    return _blocker(
        "rate_unbounded",
        f"Slice {row.slice!r} has no human-{human} case judged pass or fail ({total} human-{human}"
        f" case(s) in scope; abstentions, errors and missing results do not count), so its {what}"
        f" limit can never be met: {text}",
        slice=row.slice,
        risk=risk,
        evidence={
            "rate": f"{kind}_rate",
            total_key: total,
            f"{total_key}_decided": 0,
            "limit": limit,
            **({"max_false_passes": count_limit} if count_limit is not None else {}),
            "basis": basis,
            **_sample_evidence(need),
            **_coverage(row),
        },
        waivable=waivable,
    )


def _upper_bound(row: SliceAlignment, kind: str, rate: Rate) -> tuple[float, str, dict[str, Any]]:
    """The upper 95% bound the gate compares: over the gold's groups when the slice's cases share
    them (docs/statistics.md), else Wilson's; with the words and the evidence saying which."""
    grouped: GroupedRate | None = getattr(row, f"{kind}_rate_grouped", None)
    if grouped is None or grouped.ci95_high is None:
        assert rate.ci95_high is not None
        return rate.ci95_high, "", {}
    over = (
        f" over {grouped.groups} groups (a group's cases are correlated: they count as"
        f" {grouped.n_effective:.1f} independent cases)"
    )
    evidence = {
        "groups": grouped.groups,
        "design_effect": grouped.design_effect,
        "n_effective": grouped.n_effective,
        "grouped_ci95_low": grouped.ci95_low,
        "grouped_ci95_high": grouped.ci95_high,
    }
    return grouped.ci95_high, over, evidence


def _grouped_plan(
    need: Shortfall, grouped: dict[str, Any], human: str, evidence: dict[str, Any]
) -> str:
    """The plan in cases when the bound is over groups: the case counts above assume independent
    cases, so they scale by the design effect (issue 32; docs/statistics.md)."""
    if not grouped or need.needed_to_bound is None:
        return ""
    deff, size = grouped["design_effect"], need.have / grouped["groups"]
    cases = math.ceil(need.needed_to_bound * deff - 1e-9)
    more = max(0, cases - need.have)
    groups = math.ceil(need.needed_to_bound * deff / size - 1e-9)  # not rounded twice
    evidence.update(cases_needed_to_bound_grouped=cases, groups_needed_to_bound=groups)
    return (
        f" Its cases come in groups (design effect {deff:.2f}): bounding at half the limit takes"
        f" about {cases} human-{human} cases judged pass or fail ({groups} groups of"
        f" {size:.1f}), {more} more, from new groups."
    )


def _rate_check(
    row: SliceAlignment,
    kind: str,
    rate: Rate,
    limit: float,
    basis: Basis,
    risk: str | None,
    case_ids: list[str],
    waivable: bool,
    unbounded_waivable: bool,
) -> list[Blocker]:
    name = row.slice
    if kind == "false_pass":
        human, wrong, errors_key, total_key = "fail", "pass", "false_passes", "human_fails"
    else:
        human, wrong, errors_key, total_key = "pass", "fail", "false_fails", "human_passes"
    assert rate.rate is not None and rate.ci95_high is not None  # callers handle n == 0
    bound, over, grouped = _upper_bound(row, kind, rate)
    value = bound if basis == "upper_95" else rate.rate
    if value <= limit:
        return []
    evidence: dict[str, Any] = {
        errors_key: rate.k,
        f"{total_key}_decided": rate.n,
        "rate": rate.rate,
        "ci95_low": rate.ci95_low,
        "ci95_high": rate.ci95_high,
        **grouped,
        "basis": basis,
        "compared": value,
        "limit": limit,
        **_coverage(row),
    }
    on = (
        f"the upper 95% bound {bound:.3f}{over}"
        if basis == "upper_95"
        else (f"the observed rate {rate.rate:.3f}")
    )
    message = (
        f"Slice {name!r}: {rate.k} of {rate.n} human-{human} cases judged pass or fail were judged"
        f" {wrong}; {on} exceeds the limit {limit:g}."
    )
    code = f"{kind}_rate_exceeded"
    category: Category = "quality"
    if basis == "upper_95" and rate.rate <= limit:
        # The observed rate is within the limit; only the interval is too wide. That is too
        # few cases to bound the slice, not a judge that disagrees: review, not quality.
        need = shortfall(rate.n, rate.k, limit, basis)
        evidence.update(_sample_evidence(need))
        message = (
            f"Slice {name!r}: {rate.k} of {rate.n} human-{human} cases judged pass or fail were"
            f" judged {wrong} (observed {rate.rate:.3f}, within {limit:g}), but the upper 95% bound"
            f" {bound:.3f}{over} exceeds it: too few cases to bound the slice."
            + _cited(name, need, human, kind)
            + _grouped_plan(need, grouped, human, evidence)
        )
        code, category, waivable = f"{kind}_rate_unproven", "review", unbounded_waivable
    return [
        _blocker(
            code,
            message,
            category,
            evidence,
            slice=name,
            risk=risk,
            case_ids=case_ids,
            waivable=waivable,
        )
    ]


def _constant_verdicts(report: AlignmentReport, rubric: Rubric) -> list[Blocker]:
    """``constant_verdict`` over all cases in scope; per slice (cases with a verdict) only when the
    whole passes."""
    if not has_pass_fail_view(rubric):
        return []
    passes = [label for label in rubric.labels if rubric.pass_fail(label) == "pass"]
    fails = [label for label in rubric.labels if rubric.pass_fail(label) == "fail"]
    row = report.overall
    overall = _constant(row, passes, fails, row.human_passes, row.human_fails, "in scope")
    if overall is not None:
        return [overall]
    out = []
    for row in report.slices:
        humans = row.human_labels_with_verdict
        blocker = _constant(
            row,
            passes,
            fails,
            sum(humans.get(label, 0) for label in passes),
            sum(humans.get(label, 0) for label in fails),
            "with a verdict",
        )
        if blocker is not None:
            out.append(blocker)
    return out


def _copied_labels(report: AlignmentReport, policy: Policy | None) -> list[Blocker]:
    """``predictions_match_labels``: imported verdicts equal every held-out label in scope under a
    policy without controls (nothing tells a copy of the gold from a real judge)."""
    judge, row = report.judge, report.overall
    if judge is None or judge.kind != "imported" or policy is None or policy.controls:
        return []  # no policy: never certified anyway (policy_missing)
    if report.partition != "held_out":  # only held-out results certify (the clear outcome)
        return []
    if row.n == 0 or row.aligned != row.n:
        return []
    message = (
        f"The imported verdicts equal the adjudicated label on all {row.n} cases in scope and the"
        " policy runs no controls: nothing shows they were not copied from the gold labels."
    )
    evidence = {"cases": row.n, "aligned": row.aligned, "judge_kind": judge.kind}
    return [_blocker("predictions_match_labels", message, "review", evidence, waivable=True)]


def _constant(
    row: SliceAlignment,
    passes: list[str],
    fails: list[str],
    human_passes: int,
    human_fails: int,
    among: str,
) -> Blocker | None:
    if human_passes == 0 or human_fails == 0:
        return None
    said_pass = sum(row.judge_labels.get(label, 0) for label in passes)
    said_fail = sum(row.judge_labels.get(label, 0) for label in fails)
    if said_pass and said_fail:
        return None
    scope = "all cases in scope" if row.slice == "(all)" else f"slice {row.slice!r}"
    if said_pass or said_fail:
        side = passes if said_pass else fails
        label = (
            repr(side[0])
            if len(side) == 1
            else f"{'pass' if said_pass else 'fail'} ({', '.join(side)})"
        )
        what = f"every one of the judge's {said_pass + said_fail} pass/fail verdicts is {label}"
    else:
        what = (
            f"the judge judged none of the {row.n} cases pass or fail ({row.decided} decided,"
            f" {row.abstentions} abstentions, {row.errors} errors, {row.missing} missing)"
        )
    message = (
        f"Over {scope}, {what}, while the adjudicated labels of the cases {among} include"
        f" {human_passes} pass and {human_fails} fail: a judge that never separates pass from fail"
        " cannot be certified, whatever the policy's limits."
    )
    return _blocker(
        "constant_verdict",
        message,
        "quality",
        {
            "judge_passes": said_pass,
            "judge_fails": said_fail,
            "human_passes": human_passes,
            "human_fails": human_fails,
            "among": among,
            "verdicts": row.verdicts,
            "abstentions": row.abstentions,
            **_coverage(row),
        },
        slice=None if row.slice == "(all)" else row.slice,
        risk=row.risk,
    )


def format_gate(result: GateResult) -> str:
    """Human-readable text: outcome, identity, then one line per blocker with its numbers."""
    lines = [f"gate:       {result.outcome.upper()}"]
    if result.outcome == ADVISORY_CLEAR:
        lines[0] += (
            f" (advisory: {result.partition or 'every partition'} results meet the limits; only"
            " held-out results a certification recorded can be certified)"
        )
    if result.policy:
        lines.append(
            f"policy:     {result.policy.name}@{result.policy.version}"
            + (f" (sha256 {result.policy.sha256[:12]})" if result.policy.sha256 else "")
        )
    else:
        lines.append("policy:     (none)")
    fp = f" (fingerprint {result.judge_fingerprint[:12]})" if result.judge_fingerprint else ""
    lines.append(f"judge:      {result.judge or '(no results)'}{fp}")
    lines.append(
        f"data:       dataset {(result.dataset_sha256 or '-')[:12]}, rubric"
        f" {result.rubric_version or '-'}, partition {result.partition or 'all'}"
    )
    lines.append(result.summary)
    for b in result.blockers:
        lines.append("  " + _blocker_line(b))
    for w in result.waived:
        lines.append(f"  waived by {w.override_id}: " + _blocker_line(w.blocker))
    if result.expired_overrides:
        lines.append("expired overrides ignored: " + ", ".join(result.expired_overrides))
    if result.unapplied_overrides:
        lines.append(f"overrides that did not apply ({len(result.unapplied_overrides)}):")
        for u in result.unapplied_overrides:
            lines.append(f"  {u.override_id} ({u.policy}): {u.reason}: " + "; ".join(u.details))
    if result.figures:
        lines.append(
            "figures (coverage = decided verdicts / cases in scope; FP over human fails judged pass"
            " or fail, FF over human passes judged pass or fail):"
        )
        lines += ["  " + line for line in figures_table(result.figures).splitlines()]
    return "\n".join(lines)


def figures_table(figures: Sequence[SliceFigures]) -> str:
    """The gate's per-slice numbers as a fixed-width table, coverage beside every rate."""
    header = (
        "slice",
        "risk",
        "n",
        "decided",
        "abstained",
        "errors",
        "missing",
        "coverage",
        "abstention rate",
        "FP rate [95% CI]",
        "FF rate [95% CI]",
    )
    rows = [header] + [
        (
            f.slice,
            f.risk or "",
            str(f.n),
            str(f.decided),
            str(f.abstentions),
            str(f.errors),
            str(f.missing),
            _rate_cell(f.coverage),
            _rate_cell(f.abstention_rate),
            _rate_cell(f.false_pass_rate),
            _rate_cell(f.false_fail_rate),
        )
        for f in figures
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )


def _rate_cell(rate: Rate) -> str:
    if rate.rate is None:
        return f"{rate.k}/{rate.n} n/a"
    return f"{rate.k}/{rate.n} {rate.rate:.2f} [{rate.ci95_low:.2f}, {rate.ci95_high:.2f}]"


def _blocker_line(b: Blocker) -> str:
    numbers = ", ".join(f"{k}={_number(v)}" for k, v in b.evidence.items())
    cases = ""
    if b.case_ids:
        more = f" +{len(b.case_ids) - 10} more" if len(b.case_ids) > 10 else ""
        cases = " cases: " + ", ".join(b.case_ids[:10]) + more
    return f"[{b.category}] {b.slice or '-'}: {b.code}: {b.message} ({numbers}){cases}"


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".") if value else "0"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_number(v)}" for k, v in value.items()) + "}"
    return str(value)


def _gold_changes(report: AlignmentReport) -> list[Blocker]:
    """A non-waivable ``gold_changed`` blocker when the report is not comparable (forced with
    --allow-gold-change)."""
    if report.comparable is not False:
        return []
    lineage = report.lineage
    reasons = lineage.problems if lineage is not None else []
    message = "The results were not produced against this gold (forced with --allow-gold-change): "
    return [
        _blocker(
            "gold_changed",
            message + "; ".join(reasons),
            "incomplete",
            {
                "results_dataset_sha256": lineage.results_dataset_sha256 if lineage else None,
                "results_rubric_version": lineage.results_rubric_version if lineage else None,
                "gold_dataset_sha256": report.dataset_sha256,
                "gold_rubric_version": report.rubric_version,
                "changed_cases": {c.case_id: c.detail for c in report.gold_changes},
            },
            case_ids=[c.case_id for c in report.gold_changes],
        )
    ]
