"""How many cases a rate limit needs when the judge is not perfect: :func:`cases_to_bound`.

:func:`~workbench.stats.cases_needed` answers the question at zero errors. A real judge makes
some, so a sample big enough to show a limit only when the judge never errs is usually too
small. This module plans for a judge whose true rate is a stated fraction of the limit:

**Definition.** For a limit ``L``, a fraction ``f`` (0 <= f < 1; true rate ``r = f·L``) and an
interval, let ``k(n) = floor(r·n)``: the number of errors a sample of ``n`` cases holds when it
shows the true rate, rounded down (an error count is a whole number). The cases needed are
the smallest ``n`` such that, for that ``n`` **and every larger one**, the two-sided 95% upper
bound of ``k(m)`` errors out of ``m`` cases is within the limit (``upper <= L``, the gate's
comparison). "Every larger one" matters: ``k(n)`` steps up by one as ``n`` grows, the bound
jumps up with it, and the first ``n`` where the bound falls under the limit is often followed
by larger ``n`` where it is above it again (``first_n`` reports that first crossing).

The interval is the gate's (``wilson``: Wilson score interval) or, stated, ``clopper-pearson``
(the exact binomial interval), statsmodels ``proportion_confint`` (``method="wilson"`` or
``"beta"``), ``alpha = 0.05``; the Wilson end is computed here with statsmodels' arithmetic
(tests/test_plan.py compares the two with ``==``). At ``f = 0`` the Wilson figure equals
:func:`cases_needed`.

At ``n`` cases a sample drawn at the true rate holds a random number of errors, so it shows the
limit with probability ``power`` = P(Binomial(n, r) <= k*), ``k*`` the most errors whose upper
bound is within ``L``; planning at ``floor(r·n)`` errors gives roughly even odds, not certainty.
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
    """Smallest n such that, for it and every larger n, ``floor(f·L·n)`` errors out of n have an
    upper 95% bound within the limit. None when no sample can show the limit (``L <= 0``) or it
    needs more than :data:`MAX_CASES`."""
    first_n: int | None
    """Smallest n at which the bound first falls within the limit (some larger n, where the error
    count steps up, may be above it again until ``needed``)."""
    errors_at_needed: int | None
    """``floor(f·L·needed)``: the errors the planned sample holds."""
    max_errors_at_needed: int | None
    """The most errors out of ``needed`` cases whose upper bound is still within the limit."""
    power: float | None
    """P(Binomial(needed, f·L) <= max_errors_at_needed): the chance that a sample of ``needed``
    cases drawn at the true rate shows the limit."""


def upper_bound(
    errors: float | np.ndarray, n: int | np.ndarray, interval: Interval = "wilson"
) -> float | np.ndarray:
    """Upper end of the two-sided 95% interval of ``errors / n`` (statsmodels
    ``proportion_confint``; the Wilson end computed here with its arithmetic, equal to the last
    bit, so the gate's too-few-cases figures import neither statsmodels nor scipy.stats)."""
    import numpy as np

    if interval not in _METHOD:
        raise ValueError(f"unknown interval {interval!r}; use one of {', '.join(INTERVALS)}")
    if interval == "wilson":
        high = _wilson_upper(errors, n)
    else:
        from statsmodels.stats.proportion import proportion_confint

        high = proportion_confint(errors, n, alpha=0.05, method=_METHOD[interval])[1]
    if np.ndim(high) == 0:
        return float(min(1.0, float(high)))
    bounded: np.ndarray = np.minimum(1.0, np.asarray(high, dtype=float))
    return bounded


def _wilson_upper(errors: float | np.ndarray, n: int | np.ndarray) -> float | np.ndarray:
    """``proportion_confint(errors, n, alpha=0.05, method="wilson")[1]``: both arguments as
    float64 arrays (as statsmodels takes them), clipped to [0, 1]; a float for scalars."""
    import numpy as np

    from ._stats import _critical, wilson_ends

    count = np.asarray(errors, dtype=np.double)
    nobs = np.asarray(n, dtype=np.double)
    high: np.ndarray = np.clip(wilson_ends(count, nobs, _critical(0.05), np.sqrt)[1], 0, 1)
    if np.isscalar(errors) and np.isscalar(n):
        return float(high)
    return high


def _errors(rate: float, n: np.ndarray) -> np.ndarray:
    import numpy as np

    return np.floor(rate * n + _EPS)


def _needed(
    limit: float, at_fraction: float, interval: Interval
) -> tuple[float, int | None, int | None]:
    """``(true rate, needed, first_n)`` of :func:`bound_plan`, without the figures only a plan
    shows (errors, power): the gate's too-few-cases checks ask only for ``needed``."""
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
    ``at_fraction·limit``.

    See the module docstring for the exact definition. Raises ``ValueError`` for an unknown
    interval or a fraction outside ``[0, 1)``.
    """
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
    """An n beyond which the bound at ``floor(rate·n)`` errors stays within the limit.

    The upper bound grows with the error count, so with the real-valued count ``rate·n`` it is
    at least the bound at ``floor(rate·n)``; that continuous bound falls steadily towards
    ``rate < limit`` as n grows. The first power of two where it is within the limit (checked
    again at 2x, 4x ... 64x, so a bump cannot hide) bounds the search.
    """
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
    """The sentence a ``too few cases`` blocker can cite, with the planned number.

    ``too_few_cases_message("account_security", 6, 0.10)`` ->
    ``"account_security: 6 human-fail cases; the limit 0.10 needs at least 127 to bound at 0.05
    (Wilson)"``: ``have`` decided human-fail cases (``human="pass"`` for a false-fail limit), the
    limit, the cases :func:`cases_to_bound` plans for and the true rate planned for
    (``at_fraction·limit``).
    """
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
