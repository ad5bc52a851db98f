"""Candidate selection on the calibration partition: paired comparison, policy preview, selection
record."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path
from typing import Any, Literal

from .._args import check_keywords
from .._io import AppendOnlyLog
from .._record import Record
from ..approval import current_user
from ._session import SESSION_OPTIONS, Iteration, PhaseSession

SELECTION_SCHEMA_VERSION = 1


class CalibrationSession(PhaseSession):
    """Runs candidates on the untouched calibration partition and records the selected one."""

    def __init__(self, gold: str | Path, *, run_root: str | Path, **kw: Any) -> None:
        check_keywords(kw, SESSION_OPTIONS, type(self).__name__)
        super().__init__(gold, partition="calibration", run_root=run_root, **kw)


def paired_comparison(iterations: list[Iteration]) -> Any:
    """Every pair of candidates on the same cases: who is right where the other is wrong.

    Every iteration's results must have been produced against its gold (lineage checked, as
    :class:`PhaseSession` does). Only cases where both have a verdict are paired. ``p_mcnemar`` is
    the exact McNemar test (statsmodels) on the discordant pairs; ``critical_false_passes`` counts
    each side's false passes in critical slices, which no average may offset.
    """
    import pandas as pd
    from statsmodels.stats.contingency_tables import mcnemar

    from ..align import require_comparable

    for it in iterations:
        require_comparable(it.join, where=f"paired_comparison({it.label})")
    rows = []
    for a, b in combinations(iterations, 2):
        if a.join.dataset.sha256 != b.join.dataset.sha256:
            raise ValueError("candidates were run on different datasets")
        cases_b = {c.case_id: c for c in b.join.cases}
        both = [
            (ca, cases_b[ca.case_id])
            for ca in a.join.cases
            if ca.outcome == "verdict"
            and ca.case_id in cases_b
            and cases_b[ca.case_id].outcome == "verdict"
        ]
        a_only = sum(
            1 for ca, cb in both if ca.error_class == "aligned" and cb.error_class != "aligned"
        )
        b_only = sum(
            1 for ca, cb in both if cb.error_class == "aligned" and ca.error_class != "aligned"
        )
        both_right = sum(
            1 for ca, cb in both if ca.error_class == "aligned" and cb.error_class == "aligned"
        )
        both_wrong = len(both) - a_only - b_only - both_right
        p = (
            float(mcnemar([[both_right, a_only], [b_only, both_wrong]], exact=True).pvalue)
            if (a_only + b_only)
            else 1.0
        )
        critical = set(a.join.dataset.rubric.critical_slices)
        rows.append(
            {
                "a": a.label,
                "b": b.label,
                "paired_cases": len(both),
                "a_right_b_wrong": a_only,
                "b_right_a_wrong": b_only,
                "both_right": both_right,
                "both_wrong": both_wrong,
                "p_mcnemar": p,
                "a_critical_false_passes": sum(
                    1 for ca, _ in both if ca.error_class == "false_pass" and ca.slice in critical
                ),
                "b_critical_false_passes": sum(
                    1 for _, cb in both if cb.error_class == "false_pass" and cb.slice in critical
                ),
            }
        )
    return pd.DataFrame(rows)


def threshold_sweep(
    iteration: Iteration,
    *,
    pass_label: str = "pass",
    fail_label: str = "fail",
    pass_if: Literal["at_least", "at_most"] = "at_least",
) -> Any:
    """Every useful cut-off of a score-based judge against the adjudicated labels.

    Uses the scores recorded by the run (no new calls). Only cases adjudicated pass or fail
    with a score take part; each row gives, for one threshold, the false passes and false
    fails with their denominators, the false-pass rate's 95% Wilson upper bound, and
    agreement.
    """
    import pandas as pd

    from ..stats import wilson_rate

    by_line = {line.line: line.result for line in iteration.lines}
    points = [
        (float(by_line[c.result_line].score), c.human_label)  # type: ignore[arg-type]
        for c in iteration.join.cases
        if c.outcome == "verdict"
        and c.result_line in by_line
        and by_line[c.result_line].score is not None
        and c.human_label in (pass_label, fail_label)
    ]
    if not points:
        raise ValueError(f"{iteration.label} recorded no scores: it is not a score-based judge")
    scores = sorted({s for s, _ in points})
    fails = sum(1 for _, h in points if h == fail_label)
    passes = len(points) - fails
    rows = []
    for t in scores + [float("inf") if pass_if == "at_least" else float("-inf")]:
        judged_pass = [(s >= t if pass_if == "at_least" else s <= t) for s, _ in points]
        fp = sum(
            1 for (_, h), jp in zip(points, judged_pass, strict=True) if jp and h == fail_label
        )
        ff = sum(
            1 for (_, h), jp in zip(points, judged_pass, strict=True) if not jp and h == pass_label
        )
        fp_rate = wilson_rate(fp, fails)
        rows.append(
            {
                "threshold": t,
                "false_passes": fp,
                "human_fails": fails,
                "false_pass_rate": fp_rate.rate,
                "false_pass_rate_upper_95": fp_rate.ci95_high,
                "false_fails": ff,
                "human_passes": passes,
                "false_fail_rate": ff / passes if passes else None,
                "agreement": (len(points) - fp - ff) / len(points),
            }
        )
    return pd.DataFrame(rows)


def choose_threshold(
    sweep: Any,
    *,
    max_false_pass_rate: float | None = None,
    basis: Literal["upper_95", "point"] = "upper_95",
    max_false_fail_rate: float | None = None,
) -> dict[str, Any]:
    """The threshold with the best agreement among those meeting the limits.

    The degenerate cut-off that passes nothing is never chosen. Ties go to the stricter
    threshold. When no threshold meets the limits, the one with the fewest false passes is
    returned with ``meets_limit`` False: the limit cannot be shown on this data, which is a
    finding to report, not something to tune away.
    """
    import math

    finite = sweep[sweep["threshold"].map(math.isfinite)]
    column = "false_pass_rate_upper_95" if basis == "upper_95" else "false_pass_rate"
    ok = finite["threshold"].map(lambda _: True)
    if max_false_pass_rate is not None:
        ok &= finite[column].fillna(1.0) <= max_false_pass_rate
    if max_false_fail_rate is not None:
        ok &= finite["false_fail_rate"].fillna(1.0) <= max_false_fail_rate
    eligible = finite[ok]
    meets = len(eligible) > 0
    if meets:
        best = eligible.sort_values(["agreement", "threshold"], ascending=[False, False]).iloc[0]
    else:
        best = finite.sort_values(["false_passes", "agreement"], ascending=[True, False]).iloc[0]
    out: dict[str, Any] = {
        "threshold": float(best["threshold"]),
        "meets_limit": meets,
        "basis": basis,
        "max_false_pass_rate": max_false_pass_rate,
        "max_false_fail_rate": max_false_fail_rate,
    }
    for key in ("false_passes", "human_fails", "false_fails", "human_passes"):
        out[key] = int(best[key])
    for key in ("agreement", "false_pass_rate", "false_pass_rate_upper_95", "false_fail_rate"):
        out[key] = None if best[key] is None or best[key] != best[key] else float(best[key])
    return out


class Selection(Record):
    """The record of choosing a candidate for certification (append-only ``selections.jsonl``)."""

    schema_version: int = SELECTION_SCHEMA_VERSION
    selection_id: str
    selected: str
    """``name@version`` chosen for certification."""
    selected_fingerprint: str
    partition: Literal["calibration"] = "calibration"
    dataset_sha256: str
    compared: list[dict[str, Any]]
    """Every candidate considered: label, fingerprint, gate outcome on calibration, agreement."""
    reason: str
    who: str
    when: datetime


def record_selection(
    path: str | Path,
    selected: Iteration,
    compared: list[Iteration],
    *,
    reason: str,
    gate_outcomes: dict[str, str] | None = None,
) -> Selection:
    """Append the selection (with every compared candidate) to ``path``; never rewrites."""
    if not reason.strip():
        raise ValueError("a selection needs a reason")
    selection = Selection(
        selection_id=f"sel-{uuid.uuid4().hex[:12]}",
        selected=selected.label,
        selected_fingerprint=selected.fingerprint,
        dataset_sha256=selected.join.dataset.sha256,
        compared=[
            {
                "candidate": it.label,
                "fingerprint": it.fingerprint,
                "calibration_outcome": (gate_outcomes or {}).get(it.label),
                "agreement": it.report.overall.agreement.rate,
                "false_passes": it.report.overall.false_passes,
                "false_fails": it.report.overall.false_fails,
            }
            for it in compared
        ],
        reason=reason,
        who=current_user(),
        when=datetime.now(UTC),
    )
    with AppendOnlyLog(path) as log:
        log.append(selection.model_dump(mode="json"))
    return selection


@dataclass
class FrozenThreshold:
    """A score judge's threshold frozen into a new candidate version, checked against the policy."""

    judge: Any
    """The new candidate version (threshold set)."""
    iteration: Iteration
    """Its run on the calibration partition."""
    choice: dict[str, Any]
    """What :func:`choose_threshold` returned."""
    failing: list[str] = field(default_factory=list)
    """One sentence per policy limit the frozen threshold fails on calibration (empty: none)."""
    saved: Path | None = None
    """Where the version was written, when it was saved."""
    accepted_failing: bool = False
    """True when it was saved although it fails a limit (``accept_failing=True``)."""

    @property
    def meets_policy(self) -> bool:
        return not self.failing

    def _repr_html_(self) -> str:
        from .._html import fragment

        return str(
            fragment(
                "calibration.html.j2",
                "frozen",
                self.judge.spec.label,
                f"{self.judge.spec.threshold.value:g}",
                self.failing,
                self.accepted_failing,
                str(self.saved) if self.saved else None,
            )
        )


def threshold_failures(choice: dict[str, Any], iteration: Iteration, policy: Any) -> list[str]:
    """The policy limits a frozen threshold fails on calibration, one sentence each.

    The choice itself (no threshold met the false-pass limit it was chosen against), then every
    quality blocker of the policy's gate on the frozen judge's calibration run in the
    false-pass, false-fail and abstention families (the partition and sample-size findings of
    a calibration preview are left to certification).
    """
    from ..policy import evaluate_gate
    from ..reports import group_blockers

    out: list[str] = []
    if not choice.get("meets_limit", True):
        bound = (
            choice.get("false_pass_rate_upper_95")
            if choice.get("basis") == "upper_95"
            else choice.get("false_pass_rate")
        )
        out.append(
            f"no threshold meets the false-pass limit {choice.get('max_false_pass_rate'):g}"
            f" ({choice.get('basis')}); the one chosen has the fewest false passes:"
            f" {choice.get('false_passes')} of {choice.get('human_fails')} human fails, figure"
            f" {bound:.2f}"
            if isinstance(bound, float)
            else f"no threshold meets the false-pass limit ({choice.get('basis')})"
        )
    if policy is not None:
        gate = evaluate_gate(
            iteration.report,
            policy,
            rubric=iteration.join.dataset.rubric,
            run=iteration.summary,
            join=iteration.join,
        )
        quality = [b for b in gate.blockers if b.category == "quality"]
        for group in group_blockers(quality, policy=policy):
            if group.family in ("false_pass", "false_fail", "abstention", "constant"):
                out.append(f"{group.slice or 'all cases'}: {group.headline}")
    return out


async def freeze_threshold(
    session: PhaseSession,
    scored: Iteration,
    choice: dict[str, Any],
    *,
    version: str,
    policy: Any = None,
    save_to: str | Path | None = None,
    accept_failing: bool = False,
) -> FrozenThreshold:
    """Freeze ``choice['threshold']`` into ``scored``'s judge as ``version``, run it, check the
    policy.

    Warns (``FrozenThreshold.failing``, shown in the notebook) when the threshold fails a
    policy limit on calibration; saving such a version (``save_to``) raises
    :class:`~workbench.errors.WorkbenchError` unless ``accept_failing=True``, and an accepted
    failing version says so in its description.
    """
    from ..errors import Problem, WorkbenchError

    spec = scored.judge.spec
    if spec.threshold is None:
        raise WorkbenchError(
            "cannot freeze a threshold",
            [
                Problem(
                    location=spec.label,
                    code="not_a_score_judge",
                    message=f"{spec.label} has no threshold",
                    fix=(
                        "freeze thresholds of score-based candidates (a Ragas @numeric_metric with"
                        " threshold:) only"
                    ),
                )
            ],
        )
    value = float(choice["threshold"])
    description = (
        f"threshold {value:g} chosen on calibration (meets the false-pass limit:"
        f" {choice['meets_limit']})"
    )
    frozen = session.derive(
        scored.judge,
        version=version,
        threshold={**spec.threshold.model_dump(), "value": value},
        description=description,
    )
    run = await session.run(frozen, progress=False)
    failing = threshold_failures(choice, run, policy)
    result = FrozenThreshold(judge=frozen, iteration=run, choice=choice, failing=failing)
    if save_to is None:
        return result
    if failing and not accept_failing:
        raise WorkbenchError(
            "threshold not saved",
            [
                Problem(
                    location=f"{frozen.spec.label} (threshold {value:g})",
                    code="threshold_fails_policy",
                    message="the threshold fails the policy on calibration: " + "; ".join(failing),
                    fix=(
                        "choose another threshold or candidate, or pass accept_failing=True to save"
                        " it anyway (its description then records the failure)"
                    ),
                )
            ],
        )
    if failing:
        frozen = session.derive(
            scored.judge,
            version=version,
            threshold={**spec.threshold.model_dump(), "value": value},
            description=description
            + "; saved with accept_failing=True although it fails: "
            + "; ".join(failing),
        )
    result.saved = session.save(frozen, save_to)
    result.judge = frozen
    result.accepted_failing = bool(failing)
    return result
