"""How many more decided cases a slice needs before its rate limit can be shown: :func:`shortfall`.

One function for the gate's sample-size blockers and the report's "+N", so the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ._bound import Interval, cases_to_bound, upper_bound
from ._needed import cases_needed

BOUND_FRACTION = 0.5
"""The true rate, as a fraction of the limit, the gate's "to bound" figure plans for."""
_SEARCH_LIMIT = 10_000_000


@dataclass(frozen=True)
class Shortfall:
    """The sample-size figures of one limit over one slice (see the module docstring)."""

    have: int
    """Decided cases in the rate's denominator."""
    errors: int
    """Errors among them (false passes or false fails)."""
    limit: float | None
    """The rate limit, or None for a count-only limit (``max_false_passes``)."""
    basis: Literal["upper_95", "point"]
    """What the gate compares with the limit: the upper 95% Wilson bound or the observed rate."""
    needed_at_zero_errors: int | None
    """Decided cases the limit needs with no error at all (None: no sample can show it)."""
    needed_to_bound: int | None
    """Upper_95 basis: cases to bound the limit at ``at_fraction`` of it (else None)."""
    at_fraction: float
    """The fraction of the limit ``needed_to_bound`` plans for (0.5: half the limit)."""
    interval: Interval
    """The interval of every figure: ``wilson``, the gate's."""
    more: int | None
    """Further decided cases the slice needs ("+N"; None when no sample can show the limit)."""

    @property
    def bound_at_rate(self) -> float | None:
        """The true rate ``needed_to_bound`` plans for (``at_fraction · limit``)."""
        return (
            self.at_fraction * self.limit
            if self.limit is not None and self.basis == "upper_95"
            else None
        )

    @property
    def planned_already(self) -> bool:
        """True when the slice has at least ``needed_to_bound`` cases."""
        return self.needed_to_bound is not None and self.have >= self.needed_to_bound


def more_without_errors(errors: int, have: int, limit: float | None) -> int | None:
    """Error-free cases to add before the Wilson upper bound is within ``limit`` (None: never)."""
    if limit is None or limit <= 0:
        return None
    if errors == 0:
        needed = cases_needed(limit)
        return None if needed is None else max(0, needed - have)
    if float(upper_bound(errors, max(have, 1))) <= limit:
        return 0
    low, high = max(have, 1), max(have, 1) * 2
    while float(upper_bound(errors, high)) > limit:
        low, high = high, high * 2
        if high > _SEARCH_LIMIT:
            return None
    while high - low > 1:
        mid = (low + high) // 2
        if float(upper_bound(errors, mid)) <= limit:
            high = mid
        else:
            low = mid
    return high - have


def shortfall(
    have: int,
    errors: int,
    limit: float | None,
    basis: Literal["upper_95", "point"],
    *,
    at_fraction: float = BOUND_FRACTION,
) -> Shortfall:
    """The sample-size figures (Wilson) for ``errors`` out of ``have`` against ``limit``: ``more``
    is ``to_bound - have`` while short of it, else :func:`more_without_errors`."""
    interval: Interval = "wilson"
    at_zero: int | None
    to_bound: int | None
    more: int | None
    if limit is None or basis == "point":
        at_zero, to_bound, more = 1, None, max(0, 1 - have)
    else:
        at_zero = cases_needed(limit)
        to_bound = cases_to_bound(limit, at_fraction, interval)
        if to_bound is None:
            more = None
        elif have < to_bound:
            more = to_bound - have
        else:
            more = more_without_errors(errors, have, limit)
    return Shortfall(
        have,
        errors,
        limit,
        basis,
        needed_at_zero_errors=at_zero,
        needed_to_bound=to_bound,
        at_fraction=at_fraction,
        interval=interval,
        more=more,
    )
