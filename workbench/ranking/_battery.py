"""The position-bias battery: every fixture under several presentation orders, plus a repeat
baseline of the identity order (plans: docs/formats.md, "Ranking fixtures").
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import math
import random
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._args import check_int, check_run_arguments
from .._io import atomic_write_json, read_json_file
from .._lock import LOCK_FILE, RETIRED_LOCKS
from ..errors import refusal
from ._capture import (
    CaptureConfig,
    CapturingJudge,
    adopt_cached_payloads,
    register_run,
    write_capture_config,
)
from ._fixtures import NEUTRAL_LABELS, FixtureSet, RankingFixture, as_fixture_set
from ._judges import PresentedCandidate, RankingInput

if TYPE_CHECKING:  # the run engine loads only when a battery runs (importing ranking stays light)
    from ..judges import Judge
    from ..runs import RunSummary, WorkItem

PARTITION = "ranking"
"""The partition label ranking runs record."""
BATTERY_FILE = "battery.json"
Plan = Literal["exhaustive", "rotation"]


def rotation_shift(n: int, seed: int, key: str) -> int:
    """The seeded, non-identity cyclic shift of the rotation plan (1 .. n-1; 0 when n < 2)."""
    if n < 2:
        return 0
    digest = int(hashlib.sha256(f"{seed}:{key}".encode()).hexdigest(), 16)
    return 1 + digest % (n - 1)


def presentation_orders(
    n: int, *, max_exhaustive: int = 4, sample: int = 8, seed: int = 0, key: str = ""
) -> list[tuple[int, ...]]:
    """The presented orders (index tuples) for ``n`` candidates: all ``n!`` when
    ``n <= max_exhaustive`` or ``n! <= sample``, else ``sample`` distinct ones (identity, cyclic
    rotations, then seeded random permutations)."""
    if n < 1:
        return []
    if n <= max_exhaustive or math.factorial(n) <= sample:
        return list(itertools.permutations(range(n)))
    if sample < 1:
        raise ValueError("sample must be at least 1")
    identity = tuple(range(n))
    chosen = [identity[shift:] + identity[:shift] for shift in range(min(n, sample))]
    seen = set(chosen)
    rng = random.Random(f"{seed}:{key}")
    while len(chosen) < sample:
        perm = list(identity)
        rng.shuffle(perm)
        candidate = tuple(perm)
        if candidate not in seen:
            seen.add(candidate)
            chosen.append(candidate)
    return chosen


def _item(
    fixture: RankingFixture,
    order: tuple[int, ...],
    repeat: int,
    battery: Literal["position", "repeat"],
    permutation_index: int,
    repetition: int,
    rotation: int | None = None,
) -> WorkItem:
    from ..runs import WorkItem

    presented = [fixture.candidates[i] for i in order]
    labels = NEUTRAL_LABELS[: len(presented)]
    judge_input = RankingInput(
        user_input=fixture.user_input,
        context=[p.text for p in fixture.context],
        candidates=[
            PresentedCandidate(label=label, text=c.text)
            for label, c in zip(labels, presented, strict=True)
        ],
    )
    presentation: dict[str, Any] = {
        "battery": battery,
        "presented_order": [c.id for c in presented],
        "labels": {label: c.id for label, c in zip(labels, presented, strict=True)},
        "permutation_index": permutation_index,
        "repetition": repetition,
        "direction": fixture.direction,
        "allowed_values": len(presented),  # the Ragas count: every candidate ranked once
    }
    if rotation is not None:
        presentation["rotation"] = rotation
    return WorkItem(
        case_id=fixture.case_id,
        digest=fixture.source_candidates_sha256,
        repeat=repeat,
        judge_input=judge_input,
        presentation=presentation,
    )


def position_battery(
    fixtures: FixtureSet | str | Path | Iterable[RankingFixture],
    *,
    plan: Plan = "exhaustive",
    max_exhaustive: int = 4,
    sample: int = 8,
    seed: int = 0,
    repeats: int = 3,
) -> list[WorkItem]:
    """Per fixture: the position battery (or one rotation), then ``repeats`` identical ones."""
    check_int(repeats, "repeats", minimum=0)
    check_int(sample, "sample", minimum=1)
    check_int(max_exhaustive, "max_exhaustive", minimum=0)
    if plan not in ("exhaustive", "rotation"):
        raise ValueError(f"unknown plan {plan!r}: exhaustive or rotation")
    items: list[WorkItem] = []
    for fixture in as_fixture_set(fixtures).fixtures:
        n = len(fixture.candidates)
        identity = tuple(range(n))
        if plan == "rotation" and not fixture.diagnostic:
            shift = rotation_shift(n, seed, fixture.case_id)
            orders = [identity[shift:] + identity[:shift]]
            items.append(_item(fixture, orders[0], 0, "position", 0, 0, rotation=shift))
        else:
            orders = presentation_orders(
                n, max_exhaustive=max_exhaustive, sample=sample, seed=seed, key=fixture.case_id
            )
            for k, order in enumerate(orders):
                items.append(_item(fixture, order, k, "position", k, 0))
        for r in range(repeats):
            items.append(_item(fixture, identity, len(orders) + r, "repeat", 0, r))
    return items


async def run_ranking(
    judge: Judge,
    fixtures: FixtureSet | str | Path | Iterable[RankingFixture],
    out_dir: str | Path,
    *,
    plan: Plan = "exhaustive",
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
    capture: CaptureConfig | None = None,
    candidate_path: str | Path | None = None,
    items: list[WorkItem] | None = None,
) -> RunSummary:
    """Run the battery through the run engine (resumable, cached, budgeted); ``items``: a replay."""
    from ..runs import RunOptions, run_items

    check_run_arguments(concurrency=concurrency, budget_usd=budget_usd, max_cases=max_cases)
    fixture_set = as_fixture_set(fixtures)
    out = Path(out_dir)
    if any((out / name).exists() for name in (LOCK_FILE, *RETIRED_LOCKS)):
        raise refusal(
            "run locked",
            str(out),
            "run_locked",
            "the run directory is locked (lock.json): nothing may be added to it",
            "use a new output directory",
        )
    battery: dict[str, Any] = dict(
        plan=plan, max_exhaustive=max_exhaustive, sample=sample, seed=seed, repeats=repeats
    )
    if items is None:
        items = position_battery(fixture_set, **battery)
        write_battery(out, fixture_set, battery, candidate_path, judge.identity.fingerprint())
    config = capture or CaptureConfig()
    out.mkdir(parents=True, exist_ok=True)
    write_capture_config(out, config)
    summary = await run_items(
        CapturingJudge(judge, out, config),
        items,
        out_dir,
        RunOptions(
            concurrency=concurrency,
            budget_usd=budget_usd,
            max_cases=max_cases,
            cache_dir=cache_dir,
            retry_errors=retry_errors,
            progress=progress,
        ),
        partition=PARTITION,
        dataset_sha256=fixture_set.dataset_sha256,
    )
    if cache_dir is not False:
        from ..runs import default_cache_dir

        cache_root = Path(cache_dir) if cache_dir else default_cache_dir()
        register_run(cache_root, summary.run_id, out)
        adopt_cached_payloads(out, cache_root)
    return summary


def write_battery(
    out: Path,
    fixture_set: FixtureSet,
    battery: dict[str, Any],
    candidate_path: str | Path | None,
    fingerprint: str,
) -> dict[str, Any]:
    """Record the battery of a run (``battery.json``); refuse a resumed run with another battery."""
    record = {
        **battery,
        "fixtures": fixture_set.label,
        "fixtures_path": fixture_set.source,
        "fixtures_sha256": fixture_set.dataset_sha256,
        "candidate_spec": str(candidate_path) if candidate_path is not None else None,
        "judge_fingerprint": fingerprint,
        "allowed_values": {f.case_id: len(f.candidates) for f in fixture_set.fixtures},
    }
    path = out / BATTERY_FILE
    if path.exists():
        before = _load_battery(path)
        keep = (*_PLAN_KEYS, "fixtures_sha256", "judge_fingerprint")
        if {k: before.get(k) for k in keep} != {k: record[k] for k in keep}:
            raise refusal(
                "battery changed",
                str(path),
                "battery_changed",
                f"the run directory holds another battery ({ {k: before.get(k) for k in keep} })",
                "use a new --out directory for another plan, fixture version or judge",
            )
        return before
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, record)
    return record


_PLAN_KEYS = ("plan", "max_exhaustive", "sample", "seed", "repeats")
"""The battery parameters a run records (and a report reads to plan its attempts)."""


def _load_battery(path: Path) -> dict[str, Any]:
    """``battery.json``, read strictly; an unreadable or edited one is refused (exit 2)."""
    try:
        record = read_json_file(path)
    except (OSError, ValueError) as exc:
        record = f"{exc}"
    if not isinstance(record, dict):
        why = record if isinstance(record, str) else "not a JSON object"
        raise refusal(
            "unreadable battery",
            str(path),
            "battery_unreadable",
            f"the run's battery record cannot be read ({why[:160]})",
            "restore battery.json as the run wrote it, or use a new --out directory",
        )
    return record


def read_battery(run_dir: str | Path) -> dict[str, Any] | None:
    """The ``battery.json`` of a run directory, if any."""
    path = Path(run_dir) / BATTERY_FILE
    return _load_battery(path) if path.exists() else None


def run_ranking_sync(*args: Any, **kwargs: Any) -> RunSummary:
    """:func:`run_ranking` for scripts and the CLI (not inside a running event loop)."""
    return asyncio.run(run_ranking(*args, **kwargs))
