"""The position-bias battery: every fixture under several presentation orders, plus a repeat baseline.

Two separate, labelled baselines per fixture (``presentation["battery"]``):

- ``position``: the candidates under different presented orders. All permutations when a
  fixture has at most ``max_exhaustive`` candidates; otherwise a fixed-seed sample of
  ``sample`` permutations: the identity order first, then the cyclic rotations (so every
  candidate is shown at every position once when ``sample`` allows), then seeded random
  permutations. A changing winner here is *position sensitivity*.
- ``repeat``: the identity order, ``repeats`` times. A changing winner here is judge
  variation (sampling, provider), with position held fixed: *repeatability*.

Every work item has a repeat index unique within its fixture (position items first, then the
repeat baseline), its digest is the fixture's ``source_candidates_sha256``, and its
presentation is ``{"battery", "presented_order", "labels", "permutation_index",
"repetition", "direction"}``.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import random
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._args import check_int
from ._fixtures import NEUTRAL_LABELS, FixtureSet, RankingFixture, as_fixture_set
from ._judges import PresentedCandidate, RankingInput

if TYPE_CHECKING:  # the run engine imports the judges package, which registers these kinds
    from ..judges import Judge
    from ..runs import RunSummary
    from ..runs._engine import WorkItem

PARTITION = "ranking"
"""The partition label ranking runs record."""


def presentation_orders(n: int, *, max_exhaustive: int = 4, sample: int = 8, seed: int = 0, key: str = "") -> list[tuple[int, ...]]:
    """The presented orders (index tuples into the fixture's candidates) for ``n`` candidates.

    All ``n!`` permutations (identity first) when ``n <= max_exhaustive`` or ``n! <= sample``;
    otherwise ``sample`` distinct permutations: identity, cyclic rotations, then permutations
    drawn from ``random.Random(f"{seed}:{key}")``.
    """
    if n < 1:
        return []
    if n <= max_exhaustive or math.factorial(n) <= sample:
        return list(itertools.permutations(range(n)))
    if sample < 1:
        raise ValueError("sample must be at least 1")
    identity = tuple(range(n))
    chosen: list[tuple[int, ...]] = [identity]
    seen = {identity}
    for shift in range(1, n):
        if len(chosen) >= sample:
            break
        rotation = identity[shift:] + identity[:shift]
        chosen.append(rotation)
        seen.add(rotation)
    rng = random.Random(f"{seed}:{key}")
    while len(chosen) < sample:
        perm = list(identity)
        rng.shuffle(perm)
        candidate = tuple(perm)
        if candidate not in seen:
            seen.add(candidate)
            chosen.append(candidate)
    return chosen


def _item(fixture: RankingFixture, order: tuple[int, ...], repeat: int, battery: Literal["position", "repeat"], permutation_index: int, repetition: int) -> WorkItem:
    from ..runs._engine import WorkItem

    presented = [fixture.candidates[i] for i in order]
    labels = NEUTRAL_LABELS[: len(presented)]
    judge_input = RankingInput(
        user_input=fixture.user_input,
        context=[p.text for p in fixture.context],
        candidates=[PresentedCandidate(label=label, text=c.text) for label, c in zip(labels, presented, strict=True)],
    )
    presentation: dict[str, Any] = {
        "battery": battery,
        "presented_order": [c.id for c in presented],
        "labels": {label: c.id for label, c in zip(labels, presented, strict=True)},
        "permutation_index": permutation_index,
        "repetition": repetition,
        "direction": fixture.direction,
    }
    return WorkItem(case_id=fixture.case_id, digest=fixture.source_candidates_sha256, repeat=repeat, judge_input=judge_input, presentation=presentation)


def position_battery(
    fixtures: FixtureSet | str | Path | Iterable[RankingFixture],
    *,
    max_exhaustive: int = 4,
    sample: int = 8,
    seed: int = 0,
    repeats: int = 3,
) -> list[WorkItem]:
    """The planned work items: a position battery and a repeatability baseline per fixture.

    ``repeats`` = 0 plans the position battery only.
    """
    check_int(repeats, "repeats", minimum=0)
    check_int(sample, "sample", minimum=1)
    check_int(max_exhaustive, "max_exhaustive", minimum=0)
    items: list[WorkItem] = []
    for fixture in as_fixture_set(fixtures).fixtures:
        orders = presentation_orders(len(fixture.candidates), max_exhaustive=max_exhaustive, sample=sample, seed=seed, key=fixture.case_id)
        for k, order in enumerate(orders):
            items.append(_item(fixture, order, k, "position", k, 0))
        identity = tuple(range(len(fixture.candidates)))
        for r in range(repeats):
            items.append(_item(fixture, identity, len(orders) + r, "repeat", 0, r))
    return items


async def run_ranking(
    judge: Judge,
    fixtures: FixtureSet | str | Path | Iterable[RankingFixture],
    out_dir: str | Path,
    *,
    max_exhaustive: int = 4,
    sample: int = 8,
    seed: int = 0,
    repeats: int = 3,
    concurrency: int = 8,
    budget_usd: float | None = None,
    max_cases: int | None = None,
    cache_dir: str | Path | None | Literal[False] = None,
    retry_errors: bool = False,
    progress: bool = True,
) -> RunSummary:
    """Run the battery through the run engine (resumable, cached, budgeted); ``await`` it in notebooks.

    Partition label ``ranking``; the dataset hash is the fixture file's sha256.
    """
    from ..runs._engine import run_items

    fixture_set = as_fixture_set(fixtures)
    items = position_battery(fixture_set, max_exhaustive=max_exhaustive, sample=sample, seed=seed, repeats=repeats)
    return await run_items(
        judge,
        items,
        out_dir,
        partition=PARTITION,
        dataset_sha256=fixture_set.dataset_sha256,
        concurrency=concurrency,
        budget_usd=budget_usd,
        max_cases=max_cases,
        cache_dir=cache_dir,
        retry_errors=retry_errors,
        progress=progress,
    )


def run_ranking_sync(*args: Any, **kwargs: Any) -> RunSummary:
    """:func:`run_ranking` for scripts and the CLI (not inside a running event loop)."""
    return asyncio.run(run_ranking(*args, **kwargs))
