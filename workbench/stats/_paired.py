"""Paired statistics for two judges on the same cases: Tango's score interval for the difference
of paired proportions (Statistics in Medicine 17 (1998) 891-908) and the exact McNemar test."""

from __future__ import annotations

import math

Z95 = 1.959963984540054
"""The 0.975 quantile of the standard normal distribution."""
_EDGE = 1e-12


def tango_statistic(new_only: int, old_only: int, n: int, d: float) -> float:
    """Tango's score statistic T(d) (module doc); +-inf where its variance vanishes."""
    x, y = new_only, old_only
    a = 2.0 * n
    b = -x - y + (2.0 * n - x + y) * d
    c = -y * d * (1.0 - d)
    q = (math.sqrt(max(0.0, b * b - 4.0 * a * c)) - b) / (2.0 * a)
    variance = n * (2.0 * q + d * (1.0 - d))
    numerator = x - y - n * d
    if variance <= 0.0:
        return 0.0 if numerator == 0 else math.copysign(math.inf, numerator)
    return numerator / math.sqrt(variance)


def paired_rate_difference(
    both: int, old_only: int, new_only: int, neither: int
) -> tuple[float | None, float | None, float | None]:
    """``(new rate - old rate, low, high)`` over ``n = both + old_only + new_only + neither``
    cases, with its 95% Tango interval; ``(None, None, None)`` when n is 0."""
    if min(both, old_only, new_only, neither) < 0:
        raise ValueError("counts must be non-negative")
    n = both + old_only + new_only + neither
    if n == 0:
        return None, None, None
    estimate = (new_only - old_only) / n

    def stat(d: float) -> float:
        return tango_statistic(new_only, old_only, n, d)

    def root(target: float, lo: float, hi: float) -> float:
        # T decreases in d: find where it crosses ``target`` between lo and hi.
        for _ in range(200):
            mid = (lo + hi) / 2.0
            if stat(mid) > target:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2.0

    low = -1.0 if stat(-1.0 + _EDGE) <= Z95 else root(Z95, -1.0 + _EDGE, estimate)
    high = 1.0 if stat(1.0 - _EDGE) >= -Z95 else root(-Z95, estimate, 1.0 - _EDGE)
    return estimate, max(-1.0, low), min(1.0, high)


def exact_mcnemar(
    old_right_new_wrong: int, old_wrong_new_right: int, both_right: int = 0, both_wrong: int = 0
) -> float:
    """Two-sided exact McNemar p-value of the discordant pairs (1.0 when there are none)."""
    if old_right_new_wrong + old_wrong_new_right == 0:
        return 1.0
    from statsmodels.stats.contingency_tables import mcnemar

    return float(
        mcnemar(
            [[both_right, old_right_new_wrong], [old_wrong_new_right, both_wrong]], exact=True
        ).pvalue
    )
