"""How often the gate's rate rule is wrong: its operating characteristics by simulation.

The gate clears a slice's rate limit when the upper end of the 95% interval is within it
(``upper_95`` basis), fails it when the observed rate is above it, and asks for review in
between; a candidate is certified only when every slice clears. That is an intersection-union
test: each slice is a one-sided test at 2.5%, and the chance of certifying a judge whose true
rate sits at the limit in any one slice is at most that slice's chance of clearing, whatever the
others do, so no multiplicity correction applies. :func:`operating_curve` measures it: planted
judges with a known true rate judge the policy's slice sizes and group structure (cases of a
group share a rate drawn from a beta distribution with intra-class correlation ``icc``), and the
rule runs on each draw, with the grouped bound (:mod:`._grouped`) or the plain Wilson bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from .._docs import add_field_docs
from ._grouped import grouped_ends
from ._stats import _Z_975, wilson_ends

if TYPE_CHECKING:
    import numpy as np


class OperatingPoint(BaseModel):
    """The gate's outcome probabilities for one slice design at one true rate."""

    model_config = ConfigDict(frozen=True, json_schema_extra=add_field_docs)

    true_rate: float
    """The planted judge's true error rate."""
    limit: float
    """The policy's limit for the rate."""
    p_clear: float
    """Chance the upper 95% bound is within the limit (the slice does not block)."""
    p_review: float
    """Chance the observed rate is within the limit but the bound is not (review required)."""
    p_fail: float
    """Chance the observed rate is above the limit (quality failed)."""


def _upper_bounds(events: np.ndarray, sizes: np.ndarray, grouped: bool) -> np.ndarray:
    """Upper 95% bounds of each row of ``events`` (draws x groups) over groups of ``sizes``."""
    import numpy as np

    if grouped:
        return grouped_ends(events, sizes)[3]
    n = float(sizes.sum())
    p = events.sum(axis=1) / n
    high: np.ndarray = np.minimum(wilson_ends(p * n, n, _Z_975, np.sqrt)[1], 1.0)
    return high


def slice_operating_point(
    group_sizes: Sequence[int],
    limit: float,
    true_rate: float,
    *,
    icc: float = 0.0,
    grouped: bool = True,
    draws: int = 4000,
    seed: int = 0,
) -> OperatingPoint:
    """P(clear), P(review), P(fail) of one slice of ``group_sizes`` cases per group, when the
    judge's true rate is ``true_rate`` (fixed seed: the same figures every call)."""
    import numpy as np

    sizes = np.asarray([m for m in group_sizes if m > 0], dtype=np.int64)
    if not len(sizes) or not 0 <= true_rate <= 1 or not 0 <= icc < 1:
        raise ValueError("need cases, a true rate in [0, 1] and an icc in [0, 1)")
    rng = np.random.default_rng(seed)
    rates = np.full((draws, len(sizes)), true_rate)
    if icc > 0 and 0 < true_rate < 1:
        scale = (1 - icc) / icc
        rates = rng.beta(true_rate * scale, (1 - true_rate) * scale, size=rates.shape)
    events = rng.binomial(sizes[None, :], rates)
    observed = events.sum(axis=1) / sizes.sum()
    clear = _upper_bounds(events, sizes, grouped) <= limit
    fail = observed > limit
    return OperatingPoint(
        true_rate=true_rate,
        limit=limit,
        p_clear=float(clear.mean()),
        p_review=float((~clear & ~fail).mean()),
        p_fail=float(fail.mean()),
    )


def operating_curve(
    slices: dict[str, tuple[Sequence[int], float]],
    fractions: Sequence[float] = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0),
    *,
    icc: float = 0.0,
    grouped: bool = True,
    draws: int = 4000,
    seed: int = 0,
) -> dict[str, list[OperatingPoint]]:
    """Each slice's outcome probabilities with its true rate at each fraction of its limit.

    ``slices`` maps a slice name to (cases per group, limit). The chance of certifying is at
    most the smallest slice's ``p_clear`` at the same true rates (intersection-union)."""
    return {
        name: [
            slice_operating_point(
                sizes,
                limit,
                min(1.0, f * limit),
                icc=icc,
                grouped=grouped,
                draws=draws,
                seed=seed,
            )
            for f in fractions
        ]
        for name, (sizes, limit) in slices.items()
    }
