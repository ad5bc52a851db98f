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

    Only cases where both have a verdict are paired. ``p_mcnemar`` is the exact McNemar test
    (statsmodels) on the discordant pairs; ``critical_false_passes`` counts each side's
    false passes in critical slices, which no average may offset.
    """
    import pandas as pd
    from statsmodels.stats.contingency_tables import mcnemar

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
