"""How many cases a rate limit needs at zero errors: :func:`cases_needed`."""

from __future__ import annotations

import math
from typing import Literal

from ._stats import wilson_rate

Interval = Literal["wilson"]
Z2_95 = 3.841458820694124
"""z squared for the two-sided 95% interval (z = 1.959964)."""


def cases_needed(limit: float, interval: Interval = "wilson") -> int | None:
    """Smallest ``n`` whose Wilson 95% upper bound with zero errors, ``z²/(n + z²)``, is within
    ``limit`` (checked against :func:`wilson_rate` at the boundary); None when ``limit <= 0``."""
    if interval != "wilson":
        raise ValueError(f"unknown interval {interval!r}; the gate uses 'wilson'")
    if math.isnan(limit) or limit <= 0:
        return None
    if limit >= 1:
        return 1
    n = max(1, math.ceil(Z2_95 * (1 - limit) / limit))
    while _upper(n) > limit:
        n += 1
    while n > 1 and _upper(n - 1) <= limit:
        n -= 1
    return n


def _upper(n: int) -> float:
    high = wilson_rate(0, n).ci95_high
    assert high is not None
    return high
