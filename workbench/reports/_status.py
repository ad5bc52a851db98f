"""One status vocabulary for every per-slice surface: the slice table, the slice charts, the
summary.

A slice's status is read from the gate's blockers that name it, through :func:`slice_status`
alone, never from a comparison of its own: ``fail`` when a quality blocker names the slice
(``false_passes_exceeded``, ``false_pass_rate_exceeded``, ...), ``incomplete`` for an
incomplete one (``missing_results`` and ``evaluator_errors_exceeded`` name their slices in the
evidence), ``review`` for a review one (``false_pass_rate_unproven``, ``too_few_cases``,
``slice_not_in_policy``, ...), ``waived`` when its only blockers were waived, ``pass``
otherwise; ``not run`` when held-out data was not used and a dash when no gate or policy was
applied. Before a gate is applied (development and calibration previews), :func:`preview_gate`
gets the blockers from the gate's own per-slice checks
(:func:`workbench.policy.slice_blockers`). :data:`STATUS_COLORS` gives each status its colour
on every chart, :data:`HIGHLIGHT` its row class in every table.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._format import DASH

CATEGORY_STATUS = {"quality": "fail", "incomplete": "incomplete", "review": "review"}
"""Blocker category -> slice status, worst first (the order :func:`slice_status` reads)."""
STATUS_COLORS = {
    "pass": "#1a7f37",
    "fail": "#cf222e",
    "review": "#8250df",
    "incomplete": "#bc4c00",
    "waived": "#0969da",
    "not run": "#8c959f",
    DASH: "#57606a",
}
HIGHLIGHT = {"fail": "fail", "review": "review", "incomplete": "incomplete"}
"""Slice status -> the table's row class (``fail`` rows of critical slices: ``critical``)."""
SLICE_EVIDENCE = ("missing_by_slice", "errors_by_slice")
"""Evidence keys by which a whole-evaluation blocker names the slices it is about."""


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if obj is None:
        return default
    return obj.get(name, default) if isinstance(obj, dict) else getattr(obj, name, default)


def names_slice(blocker: Any, name: str) -> bool:
    """Whether ``blocker`` is about slice ``name`` (its own slice, or named in its evidence)."""
    if _get(blocker, "slice") == name:
        return True
    evidence = _get(blocker, "evidence", {}) or {}
    return any(name in (evidence.get(key) or {}) for key in SLICE_EVIDENCE)


def slice_status(
    name: str, blockers: Iterable[Any], waived: Iterable[Any], *, gated: bool, held_out_used: bool
) -> tuple[str, tuple[str, ...]]:
    """``(status, codes behind it)`` of slice ``name`` from the gate's blockers and waived ones."""
    if not held_out_used:
        return "not run", ()
    if not gated:
        return DASH, ()
    mine = [b for b in blockers if names_slice(b, name)]
    categories = {_get(b, "category") for b in mine}
    for category, status in CATEGORY_STATUS.items():
        if category in categories:
            return status, tuple(dict.fromkeys(_get(b, "code") for b in mine))
    theirs = [b for b in waived if names_slice(b, name)]
    if theirs:
        return "waived", tuple(dict.fromkeys(_get(b, "code") for b in theirs))
    return "pass", ()


def preview_gate(source: Any, policy: Any) -> dict[str, Any] | None:
    """Before a gate is applied: the gate's per-slice blockers of an alignment report under a
    policy (None without a policy or a report)."""
    from ..align import AlignmentReport
    from ..policy import Policy, slice_blockers

    if not isinstance(source, AlignmentReport) or not isinstance(policy, Policy):
        return None
    return {"blockers": slice_blockers(source, policy), "waived": []}
