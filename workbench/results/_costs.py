"""Cost and tokens per slice as a distribution over judged cases (case x repeat units with a
recorded call; cached verdicts only in ``cached``), not only totals."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from .._docs import add_field_docs
from ..sampling import RISK_ORDER

ALL_SLICES = "(all)"


class Distribution(BaseModel):
    """A per-case figure over the cases of a slice."""

    model_config = ConfigDict(frozen=True, json_schema_extra=add_field_docs)

    total: float
    """Sum over the cases."""
    median: float | None
    """Median per case (None without cases)."""
    p95: float | None
    """95th percentile per case, nearest rank (None without cases)."""
    max: float | None
    """Largest per case (None without cases)."""


class SliceCost(BaseModel):
    """Cost and tokens per judged case in one slice (or ``(all)``)."""

    model_config = ConfigDict(frozen=True, json_schema_extra=add_field_docs)

    slice: str
    """Slice name, or ``(all)``."""
    risk: str | None
    """The rubric's risk level (None for ``(all)`` or when unknown)."""
    cases: int
    """Case x repeat units with at least one recorded call."""
    calls: int
    """Calls recorded for them (retries included)."""
    cached: int
    """Units whose verdict was reused from the cache (cost 0, left out of the figures)."""
    cost_usd: Distribution
    """US dollars per case."""
    tokens_in: Distribution
    """Input tokens per case, as reported by the provider."""
    tokens_out: Distribution
    """Output tokens per case, as reported by the provider."""


def percentile_nearest_rank(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank percentile: sorted value at 1-based position ``ceil(q x n)``."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q * len(ordered) - 1e-9)) - 1]


def distribution(values: Sequence[float]) -> Distribution:
    """Total, median, nearest-rank p95 and max of ``values``."""
    if not values:
        return Distribution(total=0.0, median=None, p95=None, max=None)
    p95 = percentile_nearest_rank(values, 0.95)
    return Distribution(
        total=math.fsum(values),
        median=float(statistics.median(values)),
        p95=None if p95 is None else float(p95),
        max=float(max(values)),
    )


Usage = tuple[int, float, int, int, int]
"""Per case x repeat unit: (calls, cost USD, tokens in, tokens out, cached attempts)."""


def unit_usage(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, int], Usage]:
    """Sum result ``rows`` (dicts in the judge-result contract) per case x repeat unit."""
    found: dict[tuple[str, int], list[float]] = {}
    for row in rows:
        figures = found.setdefault(
            (str(row["case_id"]), int(row.get("repeat") or 0)), [0, 0.0, 0, 0, 0]
        )
        if row.get("cached_from_run_id"):
            figures[4] += 1
            continue
        figures[0] += 1
        figures[1] += float(row.get("cost_usd") or 0.0)
        figures[2] += int(row.get("tokens_in") or 0)
        figures[3] += int(row.get("tokens_out") or 0)
    return {k: (int(v[0]), float(v[1]), int(v[2]), int(v[3]), int(v[4])) for k, v in found.items()}


def slice_costs(
    rows: Iterable[Mapping[str, Any]],
    slice_of: Mapping[str, str | None],
    risk_of: Mapping[str, str | None] | None = None,
) -> list[SliceCost]:
    """Per-slice cost and token distributions of result ``rows`` (dicts), then ``(all)``, slices
    in risk order then by name (``slice_of``: case id -> slice)."""
    return costs_from_usage(unit_usage(rows), slice_of, risk_of)


def costs_from_usage(
    usage: Mapping[tuple[str, int], Usage],
    slice_of: Mapping[str, str | None],
    risk_of: Mapping[str, str | None] | None = None,
) -> list[SliceCost]:
    """:func:`slice_costs` from per-unit sums (:func:`unit_usage`, or a join's ``usage``)."""
    called = {k: v for k, v in usage.items() if v[0] > 0}
    cached = {k for k, v in usage.items() if v[0] == 0 and v[4] > 0}
    risks = risk_of or {}
    names = sorted(
        {s for s in (slice_of.get(case) for case, _ in usage) if s},
        key=lambda s: (RISK_ORDER.get(risks.get(s) or "", len(RISK_ORDER)), s),
    )

    def row_for(
        name: str, risk: str | None, keys: list[tuple[str, int]], cached_n: int
    ) -> SliceCost:
        values = [called[k] for k in keys]
        return SliceCost(
            slice=name,
            risk=risk,
            cases=len(keys),
            calls=sum(v[0] for v in values),
            cached=cached_n,
            cost_usd=distribution([v[1] for v in values]),
            tokens_in=distribution([float(v[2]) for v in values]),
            tokens_out=distribution([float(v[3]) for v in values]),
        )

    out = [
        row_for(
            name,
            risks.get(name),
            [k for k in called if slice_of.get(k[0]) == name],
            sum(1 for k in cached if slice_of.get(k[0]) == name),
        )
        for name in names
    ]
    out.append(row_for(ALL_SLICES, None, list(called), len(cached)))
    return out


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:.6f}".rstrip("0").rstrip(".") if value else "$0"


def _count(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if value != int(value) else str(int(value))


_HEADER = (
    ["slice", "risk", "cases", "calls"]
    + ["cost total", "cost/case median", "p95", "max"]
    + ["tokens in/case median", "p95", "max", "tokens out/case median", "p95", "max"]
)


def slice_cost_rows(costs: Sequence[SliceCost], *, tokens: bool = True) -> list[list[str]]:
    """The cost table as text cells, header first: per slice, cost (and, with ``tokens``, tokens
    in and out) per case as median / p95 / max, and totals."""

    def spread(d: Distribution, fmt: Any) -> list[str]:
        return [fmt(d.median), fmt(d.p95), fmt(d.max)]

    header = _HEADER if tokens else _HEADER[:8]
    return [header] + [
        [c.slice, c.risk or "", str(c.cases), str(c.calls), _money(c.cost_usd.total)]
        + spread(c.cost_usd, _money)
        + (spread(c.tokens_in, _count) + spread(c.tokens_out, _count) if tokens else [])
        for c in costs
    ]


def format_slice_costs(costs: Sequence[SliceCost]) -> str:
    """A fixed-width table: per slice, cost and tokens per case (median / p95 / max), totals."""
    rows = slice_cost_rows(costs)
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADER))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )
