"""Candidate selection on the calibration partition: paired comparison, policy preview, selection record."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from .._io import AppendOnlyLog
from ..heldout import current_user
from ._session import Iteration, PhaseSession

SELECTION_SCHEMA_VERSION = 1


class CalibrationSession(PhaseSession):
    """Runs candidates on the untouched calibration partition and records the selected one."""

    def __init__(self, gold: str | Path, *, run_root: str | Path, **kw: Any) -> None:
        super().__init__(gold, partition="calibration", run_root=run_root, **kw)


def paired_comparison(iterations: list[Iteration]) -> Any:
    """Every pair of candidates on the same cases: who is right where the other is wrong.

    Every iteration's results must have been produced against its gold (lineage checked, as
    :class:`PhaseSession` does). Only cases where both have a verdict are paired. ``p_mcnemar`` is the exact McNemar test
    (statsmodels) on the discordant pairs; ``critical_false_passes`` counts each side's
    false passes in critical slices, which no average may offset.
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
        both = [(ca, cases_b[ca.case_id]) for ca in a.join.cases if ca.outcome == "verdict" and ca.case_id in cases_b and cases_b[ca.case_id].outcome == "verdict"]
        a_only = sum(1 for ca, cb in both if ca.error_class == "aligned" and cb.error_class != "aligned")
        b_only = sum(1 for ca, cb in both if cb.error_class == "aligned" and ca.error_class != "aligned")
        both_right = sum(1 for ca, cb in both if ca.error_class == "aligned" and cb.error_class == "aligned")
        both_wrong = len(both) - a_only - b_only - both_right
        p = float(mcnemar([[both_right, a_only], [b_only, both_wrong]], exact=True).pvalue) if (a_only + b_only) else 1.0
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
                "a_critical_false_passes": sum(1 for ca, _ in both if ca.error_class == "false_pass" and ca.slice in critical),
                "b_critical_false_passes": sum(1 for _, cb in both if cb.error_class == "false_pass" and cb.slice in critical),
            }
        )
    return pd.DataFrame(rows)


def threshold_sweep(iteration: Iteration, *, pass_label: str = "pass", fail_label: str = "fail", pass_if: Literal["at_least", "at_most"] = "at_least") -> Any:
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
        if c.outcome == "verdict" and c.result_line in by_line and by_line[c.result_line].score is not None and c.human_label in (pass_label, fail_label)
    ]
    if not points:
        raise ValueError(f"{iteration.label} recorded no scores: it is not a score-based judge")
    scores = sorted({s for s, _ in points})
    fails = sum(1 for _, h in points if h == fail_label)
    passes = len(points) - fails
    rows = []
    for t in scores + [float("inf") if pass_if == "at_least" else float("-inf")]:
        judged_pass = [(s >= t if pass_if == "at_least" else s <= t) for s, _ in points]
        fp = sum(1 for (_, h), jp in zip(points, judged_pass, strict=True) if jp and h == fail_label)
        ff = sum(1 for (_, h), jp in zip(points, judged_pass, strict=True) if not jp and h == pass_label)
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


def choose_threshold(sweep: Any, *, max_false_pass_rate: float | None = None, basis: Literal["upper_95", "point"] = "upper_95", max_false_fail_rate: float | None = None) -> dict[str, Any]:
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
    out: dict[str, Any] = {"threshold": float(best["threshold"]), "meets_limit": meets, "basis": basis, "max_false_pass_rate": max_false_pass_rate, "max_false_fail_rate": max_false_fail_rate}
    for key in ("false_passes", "human_fails", "false_fails", "human_passes"):
        out[key] = int(best[key])
    for key in ("agreement", "false_pass_rate", "false_pass_rate_upper_95", "false_fail_rate"):
        out[key] = None if best[key] is None or best[key] != best[key] else float(best[key])
    return out


class Selection(BaseModel):
    """The record of choosing a candidate for certification (append-only ``selections.jsonl``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

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


def record_selection(path: str | Path, selected: Iteration, compared: list[Iteration], *, reason: str, gate_outcomes: dict[str, str] | None = None) -> Selection:
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
