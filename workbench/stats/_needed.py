"""How many cases a rate limit needs before a sample can show it: :func:`cases_needed`.

The gate compares a slice's false-pass (or false-fail) rate with a policy limit on the
``upper_95`` basis: the upper end of the 95% interval must be within the limit. With zero
errors observed, the Wilson upper bound over ``n`` cases has the closed form

    upper(0, n) = z² / (n + z²),   z = 1.959964 (two-sided 95%), z² = 3.841459,

which is within a limit ``L`` exactly when ``n >= z² (1 - L) / L``. The smallest such whole
``n`` is what a slice needs at the very least; every error observed needs more.
"""

from __future__ import annotations

import math
from typing import Literal

from ._stats import wilson_rate

Interval = Literal["wilson"]
Z2_95 = 3.841458820694124
"""z squared for the two-sided 95% interval (z = 1.959964)."""


def cases_needed(limit: float, interval: Interval = "wilson") -> int | None:
    """Smallest ``n`` whose 95% upper bound with zero errors out of ``n`` is within ``limit``.

    "Within" is ``upper <= limit``, the comparison the gate makes. The interval is the one the
    gate uses (``wilson``: the Wilson score interval as computed by statsmodels
    ``proportion_confint(0, n, method="wilson")``, closed form ``z²/(n + z²)``). The closed-form
    answer ``ceil(z² (1 - L) / L)`` is then checked against the gate's own interval function at
    ``n`` and ``n - 1``, so a rounding difference at the boundary cannot make the figure wrong
    by one.

    Returns ``None`` when no sample can show the limit (``limit <= 0``: the upper bound is
    positive for every finite ``n``). At least one case is always needed (``limit >= 1``
    gives 1): a rate over no case is undefined, never within a limit.
    """
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
