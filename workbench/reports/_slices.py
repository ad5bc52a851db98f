"""One row per slice as a reviewer reads it: figures beside the policy's limits and the result.

The figures come from the gate (:class:`~workbench.policy.SliceFigures`, also in ``gate.json``)
or from an alignment report (:class:`~workbench.align.SliceAlignment`); both carry the same
fields, so a row can be built from either, and from their JSON dicts. The *result* of a slice
is read from the gate's blockers, never recomputed here: :func:`~workbench.reports._status.
slice_status` (``fail``, ``incomplete``, ``review``, ``waived``, ``pass``, ``not run``, ``-``)
is the one vocabulary every per-slice surface uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._format import DASH, kn, limit_text, pct, rate_text
from ._status import preview_gate, slice_status

RESULT_ORDER = {
    "fail": 0,
    "incomplete": 1,
    "review": 2,
    "waived": 3,
    "pass": 4,
    "not run": 5,
    DASH: 6,
}
BASIS_TEXT = {"upper_95": "upper bound", "point": "observed"}


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if obj is None:
        return default
    return obj.get(name, default) if isinstance(obj, dict) else getattr(obj, name, default)


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
    spec = _get(_get(policy, "slices", {}) or {}, slice_name) if policy is not None else None
    if spec is None:
        return None
    critical = (risk or _risk_value(_get(spec, "risk"))) == "critical"
    fp_basis = "upper_95" if critical else _get(spec, "false_pass_rate_basis", "upper_95")
    abstention = _get(spec, "max_abstention_rate")
    return SliceLimits(
        max_false_passes=_get(spec, "max_false_passes"),
        max_false_pass_rate=_get(spec, "max_false_pass_rate"),
        false_pass_basis=fp_basis,
        max_false_fail_rate=_get(spec, "max_false_fail_rate"),
        false_fail_basis=_get(spec, "false_fail_rate_basis", "point"),
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

    @property
    def over_limit(self) -> bool:
        """A quality or review blocker names this slice."""
        return self.result in ("fail", "review", "incomplete")

    def fp_compared(self) -> float | None:
        """The figure the gate compared with the false-pass limit (upper bound or observed)."""
        if self.limits is None:
            return None
        key = "ci95_high" if self.limits.false_pass_basis == "upper_95" else "rate"
        value = _get(self.false_pass_rate, key)
        return None if value is None else float(value)

    def record(self) -> dict[str, Any]:
        """Display strings, the columns of the report's per-slice table."""
        limits = self.limits
        return {
            "slice": self.slice,
            "risk": self.risk or DASH,
            "n": self.n,
            "coverage": (
                f"{pct(_get(self.coverage, 'rate'))} ({self.decided}/{self.n})"
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
                f"{pct(_get(self.abstention_rate, 'rate'))} of {_get(self.abstention_rate, 'n')}"
                if _get(self.abstention_rate, "n")
                else DASH
            ),
            "abstention limit": limit_text(limits.max_abstention_rate) if limits else DASH,
            "result": self.result,
        }


def slice_rows(
    figures: Sequence[Any], policy: Any = None, gate: Any = None, *, held_out_used: bool = True
) -> list[SliceRow]:
    """One :class:`SliceRow` per slice of ``figures`` (the ``(all)`` row is left out).

    ``gate`` (a :class:`~workbench.policy.GateResult` or its JSON) gives each slice's result;
    without it the result is a dash. ``held_out_used=False`` marks every slice ``not run``.
    """
    blockers = list(_get(gate, "blockers", []) or []) if gate is not None else []
    waived = (
        [_get(w, "blocker") for w in _get(gate, "waived", []) or []] if gate is not None else []
    )
    rows = []
    for f in figures:
        name = _get(f, "slice")
        if name == "(all)":
            continue
        risk = _get(f, "risk") or ""
        result, codes = slice_status(
            name, blockers, waived, gated=gate is not None, held_out_used=held_out_used
        )
        rows.append(
            SliceRow(
                slice=name,
                risk=risk,
                n=int(_get(f, "n", 0)),
                decided=int(_get(f, "decided", 0)),
                coverage=_get(f, "coverage"),
                false_pass_rate=_get(f, "false_pass_rate"),
                false_fail_rate=_get(f, "false_fail_rate"),
                abstention_rate=_get(f, "abstention_rate"),
                limits=limits_of(policy, name, risk),
                result=result,
                codes=codes,
            )
        )
    return rows


def rows_from_alignment(report: Any, policy: Any = None, gate: Any = None) -> list[SliceRow]:
    """:func:`slice_rows` over an :class:`~workbench.align.AlignmentReport`'s slices; without a
    gate but with a policy, each slice's result comes from the gate's per-slice checks
    (:func:`~workbench.reports._status.preview_gate`)."""
    if gate is None:
        gate = preview_gate(report, policy)
    return slice_rows(_get(report, "slices", []) or [], policy, gate)
