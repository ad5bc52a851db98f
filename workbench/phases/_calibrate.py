"""Candidate selection on the calibration partition: paired comparison, policy preview, selection
record."""

from __future__ import annotations

import uuid
from collections import Counter
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
    """Every pair of candidates on the cases where both have a verdict: who is right where the
    other is wrong, the exact McNemar p-value, its Benjamini-Hochberg q-value over the pairs
    (``q_bh``: many pairs, some p-values small by chance) and each side's critical-slice false
    passes."""
    import pandas as pd

    from ..align import require_comparable
    from ..stats import bh_qvalues, exact_mcnemar

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
        right = Counter(
            (ca.error_class == "aligned", cb.error_class == "aligned") for ca, cb in both
        )
        both_right, a_only = right[True, True], right[True, False]
        b_only, both_wrong = right[False, True], right[False, False]
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
                "p_mcnemar": exact_mcnemar(a_only, b_only, both_right, both_wrong),
                "a_critical_false_passes": sum(
                    1 for ca, _ in both if ca.error_class == "false_pass" and ca.slice in critical
                ),
                "b_critical_false_passes": sum(
                    1 for _, cb in both if cb.error_class == "false_pass" and cb.slice in critical
                ),
            }
        )
    frame = pd.DataFrame(rows)
    if rows:
        frame.insert(
            frame.columns.get_loc("p_mcnemar") + 1, "q_bh", bh_qvalues(list(frame["p_mcnemar"]))
        )
    return frame


def _scored(iteration: Any, pass_label: str, fail_label: str) -> list[tuple[float, str, str]]:
    """(score, human label, case id) of every case with a verdict, a recorded score and a human
    pass or fail; ``ValueError`` when the judge recorded no score."""
    by_line = {line.line: line.result for line in iteration.lines}
    points = [
        (float(by_line[c.result_line].score), c.human_label, c.case_id)
        for c in iteration.join.cases
        if c.outcome == "verdict"
        and c.result_line in by_line
        and by_line[c.result_line].score is not None
        and c.human_label in (pass_label, fail_label)
    ]
    if not points:
        raise ValueError(f"{iteration.label} recorded no scores: it is not a score-based judge")
    return points


def score_calibration_of(
    iteration: Any,
    *,
    pass_label: str = "pass",
    fail_label: str = "fail",
    pass_if: Literal["at_least", "at_most"] = "at_least",
    bins: int = 10,
) -> Any:
    """The score's calibration against the human labels
    (:func:`workbench.stats.score_calibration`: reliability bins, ECE with a cluster-bootstrap
    interval over the gold's groups); a score read as the probability of a human pass
    (``at_most``: one minus it). ``iteration``: an :class:`Iteration`, or anything with its
    ``lines`` and ``join`` (a certification's held-out run)."""
    from ..stats import score_calibration

    points = _scored(iteration, pass_label, fail_label)
    cases = iteration.join.dataset.cases
    return score_calibration(
        [score if pass_if == "at_least" else 1.0 - score for score, _, _ in points],
        [human == pass_label for _, human, _ in points],
        [cases[cid].group for _, _, cid in points],
        bins=bins,
    )


def threshold_sweep(
    iteration: Iteration,
    *,
    pass_label: str = "pass",
    fail_label: str = "fail",
    pass_if: Literal["at_least", "at_most"] = "at_least",
) -> Any:
    """Every useful cut-off of a score-based judge's recorded scores against the cases adjudicated
    pass or fail: false passes and fails with denominators, the false-pass rate's 95% Wilson
    upper bound, agreement."""
    import pandas as pd

    from ..stats import wilson_rate

    points = [(score, human) for score, human, _ in _scored(iteration, pass_label, fail_label)]
    scores = sorted({s for s, _ in points})
    fails = sum(1 for _, h in points if h == fail_label)
    passes = len(points) - fails
    rows = []
    for t in scores + [float("inf") if pass_if == "at_least" else float("-inf")]:
        judged = [(s >= t if pass_if == "at_least" else s <= t, h) for s, h in points]
        fp = sum(1 for jp, h in judged if jp and h == fail_label)
        ff = sum(1 for jp, h in judged if not jp and h == pass_label)
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
    """The finite threshold with the best agreement among those meeting the limits (ties: the
    stricter); when none does, the one with the fewest false passes, ``meets_limit`` False."""
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
    selected_fingerprint: str
    partition: Literal["calibration"] = "calibration"
    dataset_sha256: str
    compared: list[dict[str, Any]]
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
    iteration: Iteration
    choice: dict[str, Any]
    failing: list[str] = field(default_factory=list)
    """One sentence per policy limit the frozen threshold fails on calibration."""
    saved: Path | None = None
    accepted_failing: bool = False

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
    """The policy limits a frozen threshold fails on calibration, one sentence each: the choice's
    own limit, then the gate's quality blockers in the false-pass, false-fail, abstention and
    constant families."""
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
    policy. Saving (``save_to``) a version that fails a limit raises
    :class:`~workbench.errors.WorkbenchError` unless ``accept_failing=True`` (then its
    description records the failure)."""
    from ..errors import refusal

    spec = scored.judge.spec
    if spec.threshold is None:
        raise refusal(
            "cannot freeze a threshold",
            spec.label,
            "not_a_score_judge",
            f"{spec.label} has no threshold",
            "freeze thresholds of score-based candidates (a Ragas @numeric_metric with"
            " threshold:) only",
        )
    value = float(choice["threshold"])
    description = (
        f"threshold {value:g} chosen on calibration (meets the false-pass limit:"
        f" {choice['meets_limit']})"
    )
    threshold = {**spec.threshold.model_dump(), "value": value}
    frozen = session.derive(
        scored.judge, version=version, threshold=threshold, description=description
    )
    run = await session.run(frozen, progress=False)
    failing = threshold_failures(choice, run, policy)
    result = FrozenThreshold(judge=frozen, iteration=run, choice=choice, failing=failing)
    if save_to is None:
        return result
    if failing and not accept_failing:
        raise refusal(
            "threshold not saved",
            f"{frozen.spec.label} (threshold {value:g})",
            "threshold_fails_policy",
            "the threshold fails the policy on calibration: " + "; ".join(failing),
            "choose another threshold or candidate, or pass accept_failing=True to save it"
            " anyway (its description then records the failure)",
        )
    if failing:
        description += "; saved with accept_failing=True although it fails: " + "; ".join(failing)
        frozen = session.derive(
            scored.judge, version=version, threshold=threshold, description=description
        )
    result.saved = session.save(frozen, save_to)
    result.judge = frozen
    result.accepted_failing = bool(failing)
    return result
