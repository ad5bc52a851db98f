"""How many more decided cases a slice needs before its rate limit can be shown: :func:`shortfall`.

One function gives the numbers the gate's sample-size blockers cite (``rate_unbounded``,
``false_pass_rate_unproven``, ``false_fail_rate_unproven``, in their message and evidence) and
the certification report's "+N more human-fail cases", so the two always agree. Two figures,
each labelled where it is shown:

- **at zero errors** (:func:`~workbench.stats.cases_needed`): the fewest decided cases whose
  95% Wilson upper bound is within the limit if the judge never errs: the floor, reached only
  by a perfect judge;
- **to bound at half the limit** (:func:`~workbench.stats.cases_to_bound` with
  ``at_fraction = 0.5``, Wilson, the gate's interval): the fewest cases such that, for that many
  and every larger sample, a judge whose true rate is half the limit shows the limit. This is
  the planning figure of ``workbench plan`` and what the blockers cite
  (:func:`~workbench.stats.too_few_cases_message`).

``more`` (the figure a report shows as "+N") is ``to_bound - have`` while the slice has fewer
decided cases than that. When it already has as many, the bound is above the limit because its
observed rate is above half the limit, so ``more`` is the number of further cases, none of them
an error, that would bring the bound within it (:func:`more_without_errors`). On the ``point``
basis (or a count-only limit) one decided case is enough to compare, so ``to_bound`` is None
and ``more`` is ``1 - have`` at least 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ._bound import Interval, cases_to_bound, upper_bound
from ._needed import cases_needed

BOUND_FRACTION = 0.5
"""The true rate, as a fraction of the limit, the gate's "to bound" figure plans for (half the
limit)."""
_SEARCH_LIMIT = 10_000_000


@dataclass(frozen=True)
class Shortfall:
    """The sample-size figures of one limit over one slice (see the module docstring)."""

    have: int
    """Decided cases in the rate's denominator (human-fail or human-pass cases judged pass or
    fail)."""
    errors: int
    """Errors among them (false passes or false fails)."""
    limit: float | None
    """The rate limit, or None for a count-only limit (``max_false_passes``)."""
    basis: Literal["upper_95", "point"]
    """What the gate compares with the limit: the upper 95% Wilson bound or the observed rate."""
    needed_at_zero_errors: int | None
    """Decided cases the limit needs with no error at all (1 on the point basis or a count-only
    limit); None when no sample can show it (a limit of 0 on the upper_95 basis)."""
    needed_to_bound: int | None
    """Upper_95 basis: cases to bound the limit at a true rate of ``at_fraction`` of it (None when
    no sample can, and on the point basis, where no bound is compared)."""
    at_fraction: float
    """The fraction of the limit ``needed_to_bound`` plans for (0.5: half the limit)."""
    interval: Interval
    """The interval of every figure: ``wilson``, the gate's."""
    more: int | None
    """Further decided cases the slice needs: ``needed_to_bound - have`` while ``have`` is below it,
    else the cases without a further error that bring the bound within the limit; on the point
    basis ``max(0, 1 - have)``. None when no sample can show the limit."""

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
        """True when the slice has at least ``needed_to_bound`` cases (its observed rate is the
        problem)."""
        return self.needed_to_bound is not None and self.have >= self.needed_to_bound


def more_without_errors(errors: int, have: int, limit: float | None) -> int | None:
    """Decided cases to add, none of them an error, before the 95% Wilson upper bound of
    ``errors`` out of ``have + more`` is within ``limit``; None when no sample can show it."""
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
    """The sample-size figures for ``errors`` out of ``have`` decided cases against ``limit`` on
    ``basis``.

    Every figure uses the gate's interval, the 95% Wilson score interval.
    """
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
