"""How many cases a rate limit needs when the judge is not perfect: :func:`cases_to_bound`.

For a limit ``L`` and a true rate ``r = f·L``, the cases needed are the smallest ``n`` such
that for it **and every larger** ``m`` the two-sided 95% upper bound (Wilson, or
Clopper-Pearson) of ``floor(r·m)`` errors out of ``m`` is within ``L``; ``first_n`` is the
first crossing (the bound can rise again when the error count steps up). At ``f = 0`` the
Wilson figure equals :func:`~workbench.stats.cases_needed`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from .._docs import add_field_docs

if TYPE_CHECKING:
    import numpy as np

Interval = Literal["wilson", "clopper-pearson"]
INTERVALS: tuple[str, ...] = ("wilson", "clopper-pearson")
_METHOD = {"wilson": "wilson", "clopper-pearson": "beta"}
MAX_CASES = 1 << 23
"""Largest sample :func:`bound_plan` searches (8,388,608 cases); beyond it the plan is ``None``."""
_EPS = 1e-9  # floor(r·n) of a product like 0.05·20 that lands a hair under a whole number


class BoundPlan(BaseModel):
    """Cases one rate limit needs, by the definition in :mod:`workbench.stats._bound`."""

    model_config = ConfigDict(frozen=True, json_schema_extra=add_field_docs)

    limit: float
    """The policy's rate limit ``L``."""
    at_fraction: float
    """The true rate planned for, as a fraction ``f`` of the limit."""
    true_rate: float
    """``f·L``."""
    interval: Interval
    """``wilson`` (the gate's) or ``clopper-pearson``; two-sided 95%."""
    needed: int | None
    """The cases needed (module docstring); None when no sample up to :data:`MAX_CASES` can."""
    first_n: int | None
    """Smallest n at which the bound first falls within the limit."""
    errors_at_needed: int | None
    """``floor(f·L·needed)``: the errors the planned sample holds."""
    max_errors_at_needed: int | None
    """The most errors out of ``needed`` cases whose upper bound is still within the limit."""
    power: float | None
    """P(Binomial(needed, f·L) <= max_errors_at_needed): the chance the sample shows the limit."""


def upper_bound(
    errors: float | np.ndarray, n: int | np.ndarray, interval: Interval = "wilson"
) -> float | np.ndarray:
    """Upper end of the two-sided 95% interval of ``errors / n`` (statsmodels
    ``proportion_confint``; the Wilson end computed here, equal to the last bit)."""
    import numpy as np

    if interval not in _METHOD:
        raise ValueError(f"unknown interval {interval!r}; use one of {', '.join(INTERVALS)}")
    if interval == "wilson":
        from ._stats import _Z_975, wilson_ends

        count, nobs = np.asarray(errors, dtype=np.double), np.asarray(n, dtype=np.double)
        high = np.clip(wilson_ends(count, nobs, _Z_975, np.sqrt)[1], 0, 1)
    else:
        from statsmodels.stats.proportion import proportion_confint

        high = proportion_confint(errors, n, alpha=0.05, method=_METHOD[interval])[1]
    if np.ndim(high) == 0:
        return float(min(1.0, float(high)))
    bounded: np.ndarray = np.minimum(1.0, np.asarray(high, dtype=float))
    return bounded


def _errors(rate: float, n: np.ndarray) -> np.ndarray:
    import numpy as np

    return np.floor(rate * n + _EPS)


def _needed(
    limit: float, at_fraction: float, interval: Interval
) -> tuple[float, int | None, int | None]:
    """``(true rate, needed, first_n)`` of :func:`bound_plan`."""
    import numpy as np

    if interval not in _METHOD:
        raise ValueError(f"unknown interval {interval!r}; use one of {', '.join(INTERVALS)}")
    if not (0 <= at_fraction < 1) or math.isnan(at_fraction):
        raise ValueError(f"at_fraction must be in [0, 1), got {at_fraction}")
    rate = at_fraction * limit if limit > 0 else 0.0
    if math.isnan(limit) or limit <= 0:
        return rate, None, None
    if limit >= 1:
        return rate, 1, 1
    horizon = _horizon(limit, rate, interval)
    if horizon is None:
        return rate, None, None
    ns = np.arange(1, horizon + 1)
    upper = np.asarray(upper_bound(_errors(rate, ns), ns, interval))
    within = upper <= limit
    if not within[-1]:  # pragma: no cover - the horizon is chosen so the bound holds there
        return rate, None, None
    outside = np.flatnonzero(~within)
    needed = int(outside[-1]) + 2 if outside.size else 1
    return rate, needed, int(np.argmax(within)) + 1


def bound_plan(limit: float, at_fraction: float = 0.5, interval: Interval = "wilson") -> BoundPlan:
    """Cases needed so the 95% upper bound can fall within ``limit`` at a true rate of
    ``at_fraction·limit`` (module docstring); ``ValueError`` for a bad interval or fraction."""
    import numpy as np

    rate, needed, first_n = _needed(limit, at_fraction, interval)
    errors: int | None = None
    max_errors: int | None = None
    power: float | None = None
    if needed is not None:
        errors = int(_errors(rate, np.array([needed]))[0])
        if limit >= 1:
            max_errors, power = 1, 1.0
        else:
            from scipy.stats import binom

            max_errors = _max_errors(needed, limit, interval)
            power = float(binom.cdf(max_errors, needed, rate))
    return BoundPlan(
        limit=limit,
        at_fraction=at_fraction,
        true_rate=rate,
        interval=interval,
        needed=needed,
        first_n=first_n,
        errors_at_needed=errors,
        max_errors_at_needed=max_errors,
        power=power,
    )


def cases_to_bound(
    limit: float, at_fraction: float = 0.5, interval: Interval = "wilson"
) -> int | None:
    """``bound_plan(limit, at_fraction, interval).needed``: the planned number of cases."""
    return _needed(limit, at_fraction, interval)[1]


def _max_errors(n: int, limit: float, interval: Interval) -> int:
    """Most errors out of ``n`` whose upper bound is within ``limit`` (-1 when even 0 is not)."""
    import numpy as np

    ks = np.arange(0, min(n, math.ceil(limit * n) + 1) + 1)
    upper = np.asarray(upper_bound(ks, np.full_like(ks, n), interval))
    ok = np.flatnonzero(upper <= limit)
    return int(ok[-1]) if ok.size else -1


def _horizon(limit: float, rate: float, interval: Interval) -> int | None:
    """An n beyond which the bound at ``floor(rate·n)`` errors stays within the limit: the first
    power of two where the bound at ``rate·n`` (not below it) is within, at 1x to 64x."""
    n = 16
    while n <= MAX_CASES:
        if all(
            upper_bound(rate * m, m, interval) <= limit for m in (n, 2 * n, 4 * n, 8 * n, 64 * n)
        ):
            return n
        n *= 2
    return None


def too_few_cases_message(
    slice_name: str,
    have: int,
    limit: float,
    *,
    human: Literal["fail", "pass"] = "fail",
    at_fraction: float = 0.5,
    interval: Interval = "wilson",
) -> str:
    """The sentence a ``too few cases`` blocker cites, e.g. ``"account_security: 6 human-fail
    cases; the limit 0.10 needs at least 127 to bound at 0.05 (Wilson)"``."""
    true_rate, needed, _ = _needed(limit, at_fraction, interval)
    name = "Wilson" if interval == "wilson" else "Clopper-Pearson"
    head = f"{slice_name}: {have} human-{human} case{'s' if have != 1 else ''}"
    if needed is None:
        return (
            f"{head}; no sample can bound the limit {_rate(limit)} at {_rate(true_rate)} ({name})"
        )
    return (
        f"{head}; the limit {_rate(limit)} needs at least {needed} to bound at"
        f" {_rate(true_rate)} ({name})"
    )


def _rate(value: float) -> str:
    """Two decimals (``0.10``), more when two would round the figure (``0.025``, not ``0.03``)."""
    text = f"{value:.2f}"
    return text if math.isclose(float(text), value, abs_tol=1e-12) else f"{value:.6g}"
