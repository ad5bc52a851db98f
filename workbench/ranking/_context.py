"""Context sensitivity across fixtures: "A beats B alone, loses to B when C is added".

Two fixtures of one set are *related* when they share the user input and the context (the same
texts) and every candidate text of the smaller one is also a candidate of the larger one (ids may
differ: candidates are matched by their text). For every pair of shared candidates the judge's
valid attempts are counted in both fixtures; a pair one candidate wins in most attempts alone and
loses in most attempts beside the added candidates is a :class:`ContextSensitivity` finding (an
independence-of-irrelevant-alternatives violation). It is evidence about the evaluator, not a
clean application regression (seed 000, "Why a ranked list can reveal what a score hides"), so
the gate routes it to review (``ranking_context_sensitive``), naming both fixtures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations

from .._record import Record as _Frozen
from ..stats import Rate, wilson_rate
from ._fixtures import FixtureSet, RankingFixture


class ContextSensitivity(_Frozen):
    """A candidate pair ordered one way alone and the other way once more candidates are added."""

    smaller: str
    """The fixture with fewer candidates (the pair ranked with less company)."""
    larger: str
    """The fixture that adds candidates to the smaller one's."""
    winner_alone: str
    """The candidate (id in ``smaller``) that wins the pair in most attempts of ``smaller``."""
    loser_alone: str
    """The other candidate of the pair (id in ``smaller``)."""
    added: list[str]
    """The candidates of ``larger`` (its ids) that ``smaller`` does not have."""
    alone: Rate
    """Attempts of ``smaller`` ranking ``winner_alone`` above ``loser_alone`` over its valid
    attempts."""
    together: Rate
    """Attempts of ``larger`` ranking ``winner_alone`` above ``loser_alone`` over its valid
    attempts (below half: the order flipped)."""
    message: str
    """The finding in words."""


def _related(small: RankingFixture, large: RankingFixture) -> dict[str, str] | None:
    """Candidate ids of ``small`` -> ids of ``large`` when ``large`` extends ``small``."""
    if len(small.candidates) >= len(large.candidates) or small.user_input != large.user_input:
        return None
    if [p.text for p in small.context] != [p.text for p in large.context]:
        return None
    by_text = {c.text: c.id for c in large.candidates}
    mapping = {c.id: by_text.get(c.text) for c in small.candidates}
    if any(v is None for v in mapping.values()):
        return None
    return {k: v for k, v in mapping.items() if v is not None}


def _above(orders: Sequence[Sequence[str]], a: str, b: str) -> Rate:
    """Best-first orders with ``a`` above ``b``, over the orders."""
    return wilson_rate(sum(list(o).index(a) < list(o).index(b) for o in orders), len(orders))


def context_sensitivity(
    fixture_set: FixtureSet, orders: Mapping[str, Sequence[Sequence[str]]]
) -> list[ContextSensitivity]:
    """Every flipped pair between related fixtures; ``orders``: each fixture's valid returned
    orders, best first (fixtures without one are skipped: nothing to compare)."""
    out: list[ContextSensitivity] = []
    for small in fixture_set.fixtures:
        for large in fixture_set.fixtures:
            mapping = _related(small, large)
            if mapping is None or not orders.get(small.case_id) or not orders.get(large.case_id):
                continue
            added = [c for c in large.candidate_ids if c not in mapping.values()]
            for a, b in combinations(small.candidate_ids, 2):
                alone = _above(orders[small.case_id], a, b)
                together = _above(orders[large.case_id], mapping[a], mapping[b])
                if 2 * alone.k == alone.n or 2 * together.k == together.n:
                    continue  # a tie in either fixture: no majority order to contradict
                if (2 * alone.k > alone.n) == (2 * together.k > together.n):
                    continue
                if 2 * alone.k < alone.n:  # name the pair by its winner alone
                    a, b = b, a
                    alone = _above(orders[small.case_id], a, b)
                    together = _above(orders[large.case_id], mapping[a], mapping[b])
                out.append(_finding(small, large, a, b, added, alone, together))
    return out


def _finding(
    small: RankingFixture,
    large: RankingFixture,
    a: str,
    b: str,
    added: list[str],
    alone: Rate,
    together: Rate,
) -> ContextSensitivity:
    message = (
        f"{a} beats {b} alone in {small.case_id} ({alone.k}/{alone.n} attempts) but loses to it"
        f" in {large.case_id}, where {', '.join(added)} is added (ranked above it in"
        f" {together.k}/{together.n} attempts): the judge's order depends on the other"
        " candidates shown"
    )
    return ContextSensitivity(
        smaller=small.case_id,
        larger=large.case_id,
        winner_alone=a,
        loser_alone=b,
        added=added,
        alone=alone,
        together=together,
        message=message,
    )
