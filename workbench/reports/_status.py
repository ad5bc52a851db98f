"""One status vocabulary for every per-slice surface (table, charts, summary), read from the
gate's blockers that name the slice (:func:`slice_status`), never from a comparison of its own:
``fail``, ``incomplete``, ``review`` by blocker category, ``waived``, ``pass``, ``not run``
(held-out data not used) or a dash (no gate). Before a gate is applied, :func:`preview_gate`
gets the blockers from the gate's own per-slice checks."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._format import DASH, attr

CATEGORY_STATUS = {"quality": "fail", "incomplete": "incomplete", "review": "review"}
"""Blocker category -> slice status, worst first."""
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
"""Slice status -> the table's row class."""
SLICE_EVIDENCE = ("missing_by_slice", "errors_by_slice")
"""Evidence keys by which a whole-evaluation blocker names the slices it is about."""


def names_slice(blocker: Any, name: str) -> bool:
    """Whether ``blocker`` is about slice ``name`` (its own slice, or named in its evidence)."""
    if attr(blocker, "slice") == name:
        return True
    evidence = attr(blocker, "evidence", {}) or {}
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
    categories = {attr(b, "category") for b in mine}
    for category, status in CATEGORY_STATUS.items():
        if category in categories:
            return status, tuple(dict.fromkeys(attr(b, "code") for b in mine))
    theirs = [b for b in waived if names_slice(b, name)]
    if theirs:
        return "waived", tuple(dict.fromkeys(attr(b, "code") for b in theirs))
    return "pass", ()


def preview_gate(source: Any, policy: Any) -> dict[str, Any] | None:
    """The gate's per-slice blockers of an alignment report under a policy (None without either)."""
    from ..align import AlignmentReport
    from ..policy import Policy, slice_blockers

    if not isinstance(source, AlignmentReport) or not isinstance(policy, Policy):
        return None
    return {"blockers": slice_blockers(source, policy), "waived": []}
