"""One row per slice as a reviewer reads it: figures (the gate's or an alignment report's, or
their JSON) beside the policy's limits, and one status vocabulary for every per-slice surface
(table, charts, summary), read from the gate's blockers that name the slice (:func:`slice_status`),
never recomputed here: ``fail``, ``incomplete``, ``review`` by blocker category, ``waived``,
``pass``, ``not run`` (held-out data not used) or a dash (no gate)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ._format import DASH, attr, kn, pct, rate_text

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


BASIS_TEXT = {"upper_95": "upper bound", "point": "observed"}


@dataclass(frozen=True)
class SliceLimits:
    """The policy's limits for one slice, as the gate applies them."""

    max_false_passes: int | None
    max_false_pass_rate: float | None
    false_pass_basis: str
    max_false_fail_rate: float | None
    false_fail_basis: str
    max_abstention_rate: float | None

    @property
    def false_pass_text(self) -> str:
        parts = []
        if self.max_false_passes is not None:
            parts.append(f"\u2264{self.max_false_passes} FP")
        if self.max_false_pass_rate is not None:
            parts.append(f"\u2264{pct(self.max_false_pass_rate)}")
        return ", ".join(parts) or DASH


def limits_of(policy: Any, slice_name: str, risk: str | None) -> SliceLimits | None:
    """The limits ``policy`` sets for ``slice_name`` (None when there is no policy or no entry)."""
    spec = attr(attr(policy, "slices", {}) or {}, slice_name) if policy is not None else None
    if spec is None:
        return None
    critical = (risk or _risk_value(attr(spec, "risk"))) == "critical"
    fp_basis = "upper_95" if critical else attr(spec, "false_pass_rate_basis", "upper_95")
    abstention = attr(spec, "max_abstention_rate")
    return SliceLimits(
        max_false_passes=attr(spec, "max_false_passes"),
        max_false_pass_rate=attr(spec, "max_false_pass_rate"),
        false_pass_basis=fp_basis,
        max_false_fail_rate=attr(spec, "max_false_fail_rate"),
        false_fail_basis=attr(spec, "false_fail_rate_basis", "point"),
        max_abstention_rate=abstention if abstention is not None else 0.0,
    )


def _risk_value(risk: Any) -> str | None:
    value = getattr(risk, "value", risk)
    return None if value is None else str(value)


@dataclass(frozen=True)
class SliceRow:
    """What the per-slice table shows for one slice."""

    slice: str
    risk: str
    n: int
    decided: int
    coverage: Any
    false_pass_rate: Any
    false_fail_rate: Any
    abstention_rate: Any
    limits: SliceLimits | None
    result: str
    """``pass``, ``fail``, ``review``, ``incomplete``, ``waived``, ``not run`` or a dash."""
    codes: tuple[str, ...] = ()
    """The blocker codes behind ``result``."""
    false_pass_rate_grouped: Any = None
    """The false-pass rate over the gold's groups when a group holds several of its cases
    (:class:`~workbench.stats.GroupedRate`): its interval is the one the gate bounds."""
    false_fail_rate_grouped: Any = None
    """The false-fail rate over the gold's groups, as ``false_pass_rate_grouped``."""

    @property
    def critical(self) -> bool:
        return self.risk == "critical"

    def record(self) -> dict[str, Any]:
        """Display strings, the columns of the report's per-slice table."""
        limits = self.limits
        return {
            "slice": self.slice,
            "risk": self.risk or DASH,
            "n": self.n,
            "coverage": (
                f"{pct(attr(self.coverage, 'rate'))} ({self.decided}/{self.n})"
                if self.n and self.coverage is not None
                else DASH
            ),
            "false-pass rate [95% CI]": rate_text(
                self.false_pass_rate_grouped or self.false_pass_rate
            ),
            "FP k/n": kn_groups(self.false_pass_rate, self.false_pass_rate_grouped),
            "FP limit": limits.false_pass_text if limits else DASH,
            "basis": (
                BASIS_TEXT.get(limits.false_pass_basis, limits.false_pass_basis)
                if limits and limits.max_false_pass_rate is not None
                else DASH
            ),
            "false-fail rate [95% CI]": rate_text(
                self.false_fail_rate_grouped or self.false_fail_rate
            ),
            "FF k/n": kn_groups(self.false_fail_rate, self.false_fail_rate_grouped),
            "FF limit": pct(limits.max_false_fail_rate) if limits else DASH,
            "abstained": (
                f"{pct(attr(self.abstention_rate, 'rate'))} of {attr(self.abstention_rate, 'n')}"
                if attr(self.abstention_rate, "n")
                else DASH
            ),
            "abstention limit": pct(limits.max_abstention_rate) if limits else DASH,
            "result": self.result,
        }


def kn_groups(rate: Any, grouped: Any) -> str:
    """``k/n``, and the groups the cases come from when they share groups (the interval beside
    it is then the grouped one: docs/statistics.md)."""
    text = kn(rate)
    return f"{text} in {attr(grouped, 'groups')} groups" if grouped is not None else text


def slice_rows(
    figures: Sequence[Any], policy: Any = None, gate: Any = None, *, held_out_used: bool = True
) -> list[SliceRow]:
    """One :class:`SliceRow` per slice of ``figures`` but ``(all)``, its result from ``gate`` (a
    dash without one; ``not run`` when held-out data was not used)."""
    blockers = list(attr(gate, "blockers", []) or [])
    waived = [attr(w, "blocker") for w in attr(gate, "waived", []) or []]
    rates = ("coverage", "false_pass_rate", "false_fail_rate", "abstention_rate")
    rows = []
    for f in figures:
        name = attr(f, "slice")
        if name == "(all)":
            continue
        risk = attr(f, "risk") or ""
        result, codes = slice_status(
            name, blockers, waived, gated=gate is not None, held_out_used=held_out_used
        )
        rows.append(
            SliceRow(
                slice=name,
                risk=risk,
                n=int(attr(f, "n", 0)),
                decided=int(attr(f, "decided", 0)),
                **{key: attr(f, key) for key in rates},
                limits=limits_of(policy, name, risk),
                result=result,
                codes=codes,
                false_pass_rate_grouped=attr(f, "false_pass_rate_grouped"),
                false_fail_rate_grouped=attr(f, "false_fail_rate_grouped"),
            )
        )
    return rows


def rows_from_alignment(report: Any, policy: Any = None, gate: Any = None) -> list[SliceRow]:
    """:func:`slice_rows` over an alignment report's slices; without a gate, the results come from
    the gate's per-slice checks under ``policy`` (:func:`~._status.preview_gate`)."""
    if gate is None:
        gate = preview_gate(report, policy)
    return slice_rows(attr(report, "slices", []) or [], policy, gate)


def rows_of(source: Any, policy: Any = None, gate: Any = None) -> list[SliceRow]:
    """The rows of ``source``: :class:`SliceRow` objects, an alignment report, the gate's figures
    or a dict holding them under ``slices``."""
    if isinstance(source, list) and (not source or isinstance(source[0], SliceRow)):
        return list(source)
    if getattr(source, "slices", None) is not None:
        return rows_from_alignment(source, policy, gate)
    slices = source.get("slices") if isinstance(source, dict) else None
    return slice_rows(slices if slices is not None else source, policy, gate)
