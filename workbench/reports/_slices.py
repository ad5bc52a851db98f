"""One row per slice as a reviewer reads it: figures (the gate's or an alignment report's, or
their JSON) beside the policy's limits, and the result read from the gate's blockers
(:func:`~workbench.reports._status.slice_status`), never recomputed here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._format import DASH, attr, kn, limit_text, pct, rate_text
from ._status import preview_gate, slice_status

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
            parts.append(f"\u2264{limit_text(self.max_false_pass_rate)}")
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
            "false-pass rate [95% CI]": rate_text(self.false_pass_rate),
            "FP k/n": kn(self.false_pass_rate),
            "FP limit": limits.false_pass_text if limits else DASH,
            "basis": (
                BASIS_TEXT.get(limits.false_pass_basis, limits.false_pass_basis)
                if limits and limits.max_false_pass_rate is not None
                else DASH
            ),
            "false-fail rate [95% CI]": rate_text(self.false_fail_rate),
            "FF k/n": kn(self.false_fail_rate),
            "FF limit": limit_text(limits.max_false_fail_rate) if limits else DASH,
            "abstained": (
                f"{pct(attr(self.abstention_rate, 'rate'))} of {attr(self.abstention_rate, 'n')}"
                if attr(self.abstention_rate, "n")
                else DASH
            ),
            "abstention limit": limit_text(limits.max_abstention_rate) if limits else DASH,
            "result": self.result,
        }


def slice_rows(
    figures: Sequence[Any], policy: Any = None, gate: Any = None, *, held_out_used: bool = True
) -> list[SliceRow]:
    """One :class:`SliceRow` per slice of ``figures`` but ``(all)``, its result from ``gate`` (a
    dash without one; ``not run`` when held-out data was not used)."""
    blockers = list(attr(gate, "blockers", []) or []) if gate is not None else []
    waived = (
        [attr(w, "blocker") for w in attr(gate, "waived", []) or []] if gate is not None else []
    )
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
                coverage=attr(f, "coverage"),
                false_pass_rate=attr(f, "false_pass_rate"),
                false_fail_rate=attr(f, "false_fail_rate"),
                abstention_rate=attr(f, "abstention_rate"),
                limits=limits_of(policy, name, risk),
                result=result,
                codes=codes,
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
