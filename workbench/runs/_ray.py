"""The Ray executor: one run split into N shards, each run by the unchanged engine in a Ray task.

``workbench run ... --executor ray --shards N`` (extra: ``pip install .[ray]``):

1. The driver freezes the run's manifest (``OUT/manifest.json``, exactly as a local run does)
   and the shard plan (``OUT/shards.json``), and writes each shard's manifest: the run's,
   restricted to the shard's cases, with the same ``run_id`` (layout: :mod:`._shards`).
2. One Ray actor, :class:`GlobalLimits`, holds the budget, the case limit, the circuit breaker
   and a token bucket for every shard: each shard's engine asks it before every call and
   reports to it after (:class:`RemoteLimits`), so the guarantee of :mod:`._limits` holds for
   the run as a whole, reservations of calls in flight on every shard included.
3. Each shard is a Ray task that runs :func:`~._engine.run_items` on its cases in its own
   directory: the same append-only results, resume and lock as a local run.
4. The driver merges the shard results into ``OUT/results.jsonl`` and writes the merged
   ``OUT/run.json``; ``align``, ``gate`` and ``agreement`` read the run as one.

Under a sampling plan the driver checks and draws it as a local run does, freezes the sample
(reserved lanes first) and the plan's record in the manifest, and shards the sampled cases;
each shard runs with the plan's lanes, and the actor holds them for the run as a whole
(:class:`ShardLanes`): the summary is the one a local run of the same manifest writes.

A shard whose worker dies leaves the run *incomplete* (exit 3) with its settled cases kept:
re-running the same command resumes every shard, calling no settled case again. A killed
driver takes its tasks with it (Ray ends the tasks of a driver that is gone) and is resumed
the same way.

On an existing Ray cluster, set ``RAY_ADDRESS`` (``ray://host:10001`` or ``auto`` on a node of
the cluster): the same command connects to it instead of starting a local Ray. The candidate
spec, the gold dataset, ``--out`` and the cache must then be on a file system every node sees
at the same paths, the workers need ``judge-workbench`` installed, and the API key variable
the candidate names must be set in the workers' environment (the key is never sent through
Ray).
"""

from __future__ import annotations

import asyncio
import math
import os
import socket
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Literal

from filelock import FileLock, Timeout

from .._args import check_concurrency, check_run_arguments
from .._io import AppendOnlyLog, atomic_write_json, read_json_file
from .._redact import redact
from ..errors import Problem, WorkbenchError
from ..gold import GoldCase, GoldDataset, Partition, load_dataset, partition_name
from ..judges import JudgeInput, load_candidate
from ..sampling import Lanes, SamplingPlan, plan_lanes
from ._cache import default_cache_dir
from ._engine import (
    RunSummary,
    WorkItem,
    _max_attempts,
    _read_attempts,
    _secrets,
    _state,
    _summarize,
    run_items,
)
from ._limits import CallEstimate, Estimator, Limits
from ._manifest import (
    ManifestCase,
    ManifestSampling,
    RunManifest,
    freeze_manifest,
    run_lineage,
)
from ._planned import plan_cases, slice_risks
from ._rundir import RunDir
from ._shards import WORKER_FILE, ShardPlan, merge_results, shard_dir, shard_of

RAY_MISSING = (
    "the Ray executor needs the optional extra: pip install 'judge-workbench[ray]' (or pip install"
    " -e '.[ray]' in a checkout)"
)


def ray_available() -> bool:
    """True when ``ray`` can be imported."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass(frozen=True)
class ShardLanes:
    """A sampling plan's lanes for a whole sharded run: what :class:`GlobalLimits` needs.

    The same rules as a local run (:mod:`._limits`), over every shard: reserved units of any
    shard start before any lower-lane call of any shard, and each reserved slice's hold is kept
    from every shard's lower lanes while the slice has unfinished units anywhere.
    """

    priority: dict[str, int]
    """slice -> lane (0 reserved, 1 lower), :func:`workbench.sampling.plan_lanes`."""
    holds: dict[str, float]
    """slice -> US dollars held for it while it has unfinished units."""
    units: dict[int, dict[str, int]]
    """Per shard, per slice: the units this invocation runs (settled ones left out)."""
    spent: dict[str, float]
    """Per slice: the spend recorded before this invocation, over every shard."""


class GlobalLimits:
    """The Ray actor behind every shard's limits: budget, case limit, breaker, lanes, token bucket.

    It wraps one :class:`~._limits.Limits` (the local engine's rules, unchanged) on the actor's
    event loop, and adds a token bucket: ``calls_per_second`` tokens a second, at most
    ``burst`` saved. A call starts only once it is admitted *and* has taken a token, so in any
    window of ``t`` seconds at most ``burst + calls_per_second * t`` calls start, over all shards.
    Under a sampling plan (``lanes``) it also holds the lanes of every shard.
    """

    def __init__(
        self,
        budget_usd: float | None,
        max_cases: int | None,
        spent: float,
        breaker_after: int,
        endpoint: str | None,
        calls_per_second: float | None,
        burst: int,
        pricing: Any = None,
        observed_out: int | None = None,
        lanes: ShardLanes | None = None,
    ) -> None:
        self.pricing = pricing
        lane_kw: dict[str, Any] = {}
        if lanes is not None:
            total: Counter[str] = Counter()
            for per_slice in lanes.units.values():
                total.update(per_slice)
            lane_kw = {
                "priority": lanes.priority,
                "holds": lanes.holds,
                "lane_units": dict(total),
                "lane_spent": lanes.spent,
            }
        self.limits = Limits(
            budget_usd,
            max_cases,
            spent,
            breaker_after=breaker_after,
            endpoint=endpoint,
            secrets=[],
            **lane_kw,
        )
        self.rate = calls_per_second
        self.burst = float(burst)
        self.tokens = float(burst)
        self.last = time.monotonic()
        self.bucket: asyncio.Lock | None = None
        self.calls = 0
        self.max_out: int | None = observed_out
        """The largest output any call of the run reported in this invocation, any shard."""
        self.held: dict[int, list[tuple[float, str | None]]] = {}
        """Per shard: (reservation, lane) of its calls in flight, released if its worker dies."""
        self.open: dict[int, Counter[str]] = (
            {shard: Counter(units) for shard, units in lanes.units.items()} if lanes else {}
        )
        """Per shard, per slice: its units not finished yet (under a sampling plan)."""
        self.unstarted: dict[int, int] = (
            {
                shard: sum(n for name, n in units.items() if self._reserved(name))
                for shard, units in lanes.units.items()
            }
            if lanes
            else {}
        )
        """Per shard: its reserved units not started yet (under a sampling plan)."""

    def _reserved(self, lane: str | None) -> bool:
        priority = self.limits.priority
        return bool(priority) and priority.get(lane or "", 1) == 0

    def _state(self) -> dict[str, Any]:
        lim = self.limits
        return {
            "spent": lim.spent,
            "reserved": lim.reserved,
            "in_flight": lim.in_flight,
            "started": lim.started,
            "stop_reason": lim.stop_reason,
            "stop_detail": lim.stop_detail,
            "calls": self.calls,
            "max_out": self.max_out,
        }

    async def _token(self) -> None:
        if self.rate is None:
            return
        if self.bucket is None:
            self.bucket = asyncio.Lock()
        async with self.bucket:
            while True:
                now = time.monotonic()
                self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
                self.last = now
                if self.tokens >= 1.0 - 1e-9:
                    self.tokens -= 1.0
                    return
                await asyncio.sleep((1.0 - self.tokens) / self.rate)

    async def admit(
        self,
        shard: int,
        reservation: float,
        expected: float,
        tokens_in: int | None,
        tokens_out_cap: int | None,
        first_call: bool,
        lane: str | None = None,
    ) -> tuple[bool, dict[str, Any]]:
        """Admit a call as :meth:`Limits.admit` does, its expected cost priced with the run's
        largest output.

        Under a budget the probe (the invocation's first call) settles first, so a shard's first
        call is priced with the output the probe reported, not the full cap.
        """
        lim = self.limits
        if lim.budget_usd is not None:
            async with lim.cond:
                await lim.cond.wait_for(
                    lambda: lim.halted or not (lim.settled == 0 and lim.in_flight > 0)
                )
        if (
            self.max_out is not None
            and tokens_in is not None
            and tokens_out_cap is not None
            and self.pricing is not None
        ):
            expected = float(self.pricing.cost(tokens_in, min(tokens_out_cap, self.max_out)))
        estimate = CallEstimate(reservation, expected)
        if not await self.limits.admit(estimate, first_call, lane):
            return False, self._state()
        if first_call and self._reserved(lane) and shard in self.unstarted:
            self.unstarted[shard] -= 1
        self.held.setdefault(shard, []).append((reservation, lane))
        await self._token()
        if self.limits.halted:  # stopped while this call waited for its token: it does not start
            await self.settle(shard, reservation, 0.0, False, None, None, None, lane)
            return False, self._state()
        self.calls += 1
        return True, self._state()

    async def settle(
        self,
        shard: int,
        reservation: float,
        cost: float,
        called: bool,
        endpoint_failure: str | None,
        error: str | None,
        tokens_out: int | None = None,
        lane: str | None = None,
    ) -> dict[str, Any]:
        """Release a call's reservation and record its cost and outcome (:meth:`Limits.settle`)."""
        if tokens_out is not None and tokens_out > 0:
            self.max_out = tokens_out if self.max_out is None else max(self.max_out, tokens_out)
        held = self.held.get(shard, [])
        if (reservation, lane) not in held:  # the shard was released (its worker died)
            return self._state()
        held.remove((reservation, lane))
        await self.limits.settle(
            CallEstimate(reservation, reservation),
            cost,
            called=called,
            endpoint_failure=endpoint_failure,
            error=error,
            lane=lane,
        )
        return self._state()

    async def unit_done(self, shard: int, lane: str | None, started: bool) -> None:
        """A unit of ``lane`` on ``shard`` is finished (:meth:`Limits.unit_done`)."""
        if shard not in self.open:  # no lanes, or the shard was released
            return
        await self.limits.unit_done(lane, started=started)
        if lane is not None and lane in self.open[shard]:
            self.open[shard][lane] -= 1
        if not started and self._reserved(lane):
            self.unstarted[shard] -= 1

    async def release(self, shard: int) -> dict[str, Any]:
        """A shard's task ended: free the reservations of its calls still in flight and the lanes
        of its unfinished units (a worker that died), so the other shards go on.

        What those calls cost is unknown (never recorded); the recorded spend is what a resume
        starts from, as after a crash of a local run.
        """
        held = self.held.pop(shard, [])
        open_units = self.open.pop(shard, Counter())
        unstarted = self.unstarted.pop(shard, 0)
        lim = self.limits
        async with lim.cond:
            lim.reserved = max(0.0, lim.reserved - sum(r for r, _ in held))
            lim.in_flight -= len(held)
            for reservation, lane in held:
                if lane is not None and lane in lim.lane_in_flight:
                    lim.lane_in_flight[lane] = max(0.0, lim.lane_in_flight[lane] - reservation)
            for lane, n in open_units.items():
                if lane in lim.lane_open:
                    lim.lane_open[lane] -= n
            lim.unstarted_reserved -= unstarted
            lim.cond.notify_all()
        return self._state()

    async def state(self) -> dict[str, Any]:
        """The shared figures: spend, reservations, calls in flight and started, the stop."""
        return self._state()


class RemoteLimits(Limits):
    """A shard's limits: every decision is the :class:`GlobalLimits` actor's (same interface).

    Calls report their usage to the actor, which prices every call's expected cost with the
    largest output reported by any shard (as a local run does with its own calls). Under a
    sampling plan, admissions, settlements and finished units carry their lane to the actor.
    """

    def __init__(
        self,
        actor: Any,
        shard: int,
        budget_usd: float | None,
        max_cases: int | None,
        spent: float,
        *,
        breaker_after: int,
        endpoint: str | None,
        secrets: list[str],
        **lane_kw: Any,
    ) -> None:
        super().__init__(
            budget_usd,
            max_cases,
            spent,
            breaker_after=breaker_after,
            endpoint=endpoint,
            secrets=secrets,
            **lane_kw,
        )
        self.actor = actor
        self.shard = shard
        self.observed: int | None = None

    def observe(self, tokens_in: int | None, tokens_out: int | None) -> None:
        if tokens_in is not None and tokens_out is not None and tokens_out > 0:
            self.observed = tokens_out  # sent with the settle that follows

    def _sync(self, state: dict[str, Any]) -> None:
        self.spent = state["spent"]
        self.stop_reason = state["stop_reason"]
        self.stop_detail = (
            redact(state["stop_detail"], self.secrets) if state["stop_detail"] else None
        )

    async def admit(
        self, estimate: CallEstimate, first_call: bool, lane: str | None = None
    ) -> bool:
        ok, state = await self.actor.admit.remote(
            self.shard,
            estimate.reservation,
            estimate.expected,
            estimate.tokens_in,
            estimate.tokens_out_cap,
            first_call,
            lane,
        )
        self._sync(state)
        return bool(ok)

    async def settle(
        self,
        estimate: CallEstimate,
        cost: float,
        *,
        called: bool,
        endpoint_failure: str | None = None,
        error: str | None = None,
        lane: str | None = None,
    ) -> None:
        observed, self.observed = self.observed, None
        state = await self.actor.settle.remote(
            self.shard,
            estimate.reservation,
            cost,
            called,
            endpoint_failure,
            redact(error, self.secrets) if error else None,
            observed,
            lane,
        )
        self._sync(state)

    async def unit_done(self, lane: str | None, *, started: bool) -> None:
        if self.priority:  # lanes only under a sampling plan
            await self.actor.unit_done.remote(self.shard, lane, started)


def _shard_items(
    dataset: GoldDataset, partition: str, case_ids: list[str], repeats: int
) -> tuple[list[GoldCase], list[WorkItem]]:
    """The shard's cases in its manifest's order, and their work items (each with its slice)."""
    by_id = {c.case_id: c for c in dataset.partition(partition)}
    cases = [by_id[i] for i in case_ids if i in by_id]  # a changed gold: the manifest refuses
    return cases, [
        WorkItem(c.case_id, c.response_hash, r, JudgeInput.from_case(c), slice=c.slice)
        for c in cases
        for r in range(repeats)
    ]


def run_shard(task: dict[str, Any], actor: Any) -> dict[str, Any]:
    """One shard, in a Ray worker: the engine on the shard's cases, limits from ``actor``.

    Under a sampling plan (``task["sampling"]``, the manifest's record) the shard runs with
    the plan's lanes, as a local run does. Returns ``{"summary": ...}`` or
    ``{"problems": [...]}`` (a :class:`WorkbenchError`).
    """
    out = Path(task["dir"])
    atomic_write_json(
        out / WORKER_FILE,
        {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started_at": datetime.now(UTC).isoformat(),
        },
    )
    try:
        judge = load_candidate(task["candidate"])
        dataset = load_dataset(task["gold"])
        cases, items = _shard_items(
            dataset, task["partition"], list(task["case_ids"]), task["repeats"]
        )
        risks = slice_risks(dataset)
        sampling = (
            ManifestSampling.model_validate(task["sampling"]) if task.get("sampling") else None
        )
        lanes = plan_lanes(sampling.plan, risks, task["budget_usd"]) if sampling else None
        lineage = run_lineage(judge, dataset, cases)
        summary = asyncio.run(
            run_items(
                judge,
                items,
                out,
                partition=task["partition"],
                dataset_sha256=dataset.sha256,
                repeats=task["repeats"],
                grid=True,
                concurrency=task["concurrency"],
                budget_usd=task["budget_usd"],
                max_cases=task["max_cases"],
                cache_dir=task["cache_dir"],
                retry_errors=task["retry_errors"],
                progress=False,
                lineage=lineage,
                lanes=lanes,
                risks=risks,
                sampling=sampling,
                sampling_source=task.get("sampling_source"),
                limits_factory=partial(RemoteLimits, actor, task["index"]),
            )
        )
    except WorkbenchError as exc:
        return {"problems": [p.model_dump(mode="json") for p in exc.problems]}
    return {"summary": summary.model_dump(mode="json")}


def _connect() -> bool:
    """Connect to ``RAY_ADDRESS``, or start a local Ray; True when this call started it."""
    import ray

    if ray.is_initialized():
        return False
    if os.environ.get("RAY_ADDRESS"):
        ray.init(log_to_driver=False)
    else:
        ray.init(include_dashboard=False, log_to_driver=False)
    return True


def _problem(code: str, location: str, message: str, fix: str) -> WorkbenchError:
    return WorkbenchError(
        message, [Problem(location=location, code=code, message=message, fix=fix)]
    )


def _freeze_plan(out: Path, manifest: RunManifest, shards: int) -> list[list[str]]:
    """Write or check ``shards.json`` and every shard's manifest; the case ids of each shard."""
    by_shard: list[list[ManifestCase]] = [[] for _ in range(shards)]
    for case in manifest.cases:
        by_shard[shard_of(case.case_id, shards)].append(case)
    plan = ShardPlan(
        run_id=manifest.run_id, shards=shards, cases_per_shard=[len(c) for c in by_shard]
    )
    path = RunDir(out).shards_file
    if path.exists():
        try:
            existing = ShardPlan.model_validate(read_json_file(path))
        except (OSError, ValueError) as exc:
            raise _problem(
                "shards_invalid",
                str(path),
                f"the shard plan cannot be read ({str(exc)[:120]})",
                "restore shards.json or run into a new --out directory",
            ) from None
        if existing.shards != shards:
            raise _problem(
                "shards_changed",
                str(path),
                f"this run was split into {existing.shards} shards, not {shards}: each case's"
                " attempts live in its shard's file",
                f"resume with --shards {existing.shards}, or run into a new --out directory",
            )
        if existing != plan:
            raise _problem(
                "shards_changed",
                str(path),
                "the shard plan does not match this run's manifest",
                "restore shards.json or run into a new --out directory",
            )
    else:
        atomic_write_json(path, plan.model_dump(mode="json"))
    for index, cases in enumerate(by_shard):
        target = RunDir(out).shard(index).manifest
        if cases and not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(
                target, manifest.model_copy(update={"cases": cases}).model_dump(mode="json")
            )
    return [[c.case_id for c in cases] for cases in by_shard]


def run_candidate_ray(
    candidate: str | Path,
    gold: str | Path,
    partition: str | Partition,
    out_dir: str | Path,
    *,
    shards: int,
    concurrency: int | None = 8,
    repeats: int = 1,
    budget_usd: float | None = None,
    max_cases: int | None = None,
    cache_dir: str | Path | None | Literal[False] = None,
    retry_errors: bool = False,
    calls_per_second: float | None = None,
    burst: int = 1,
    sampling: SamplingPlan | None = None,
    sampling_source: str | None = None,
) -> RunSummary:
    """Run the candidate at ``candidate`` (a spec path) over ``partition`` of ``gold`` in
    ``shards`` Ray tasks.

    ``concurrency`` is the total: each shard runs ``ceil(concurrency / shards)`` calls at once.
    ``budget_usd``, ``max_cases`` and ``calls_per_second`` hold for all shards together.
    ``sampling``: a declared plan, as for :func:`~._engine.run_candidate`: checked, drawn and
    frozen in the manifest by the driver; the sampled cases are sharded, and the plan's lanes
    (reserved slices first, their holds) hold over every shard. Held-out data is refused
    (certification runs locally, once).
    """
    total = _check_ray_arguments(
        shards=shards,
        concurrency=concurrency,
        repeats=repeats,
        budget_usd=budget_usd,
        max_cases=max_cases,
        calls_per_second=calls_per_second,
    )
    part = Partition(partition_name(partition)).value
    out = Path(out_dir).resolve()
    if part == "held_out":
        raise _problem(
            "held_out_refused",
            str(out),
            "held-out data is judged only by `workbench certify`, on the local executor",
            "use development or calibration",
        )
    candidate_path, gold_path = str(Path(candidate).resolve()), str(Path(gold).resolve())
    judge = load_candidate(candidate_path)
    dataset = load_dataset(gold_path)
    cases = dataset.partition(part)
    if not cases:
        raise _problem(
            "empty_partition",
            str(dataset.gold_path),
            f"partition {part!r} has no cases",
            "choose a partition that has cases",
        )
    drawn = _draw(dataset, cases, part, budget_usd, sampling, sampling_source)
    out.mkdir(parents=True, exist_ok=True)
    if RunDir(out).results.exists() and not RunDir(out).shards_file.exists():
        raise _problem(
            "executor_mismatch",
            str(out),
            "this run directory holds a run of the local executor",
            "resume it without --executor ray, or give this run its own --out directory",
        )
    lock = FileLock(RunDir(out).lock)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise _problem(
            "run_locked",
            str(out),
            "another workbench run is writing to this run directory right now",
            "wait for it to finish (then rerun to resume), or give this run its own --out"
            " directory",
        ) from None
    try:
        return _drive(
            judge,
            dataset,
            drawn,
            out,
            _ShardTask(
                candidate=candidate_path,
                gold=gold_path,
                partition=part,
                repeats=repeats,
                budget_usd=budget_usd,
                max_cases=max_cases,
                cache_dir=_cache_path(cache_dir),
                retry_errors=retry_errors,
                sampling_source=sampling_source,
            ),
            shards=shards,
            concurrency=total,
            calls_per_second=calls_per_second,
            burst=burst,
        )
    finally:
        lock.release()


def _check_ray_arguments(
    *,
    shards: int,
    concurrency: int | None,
    repeats: int,
    budget_usd: float | None,
    max_cases: int | None,
    calls_per_second: float | None,
) -> int:
    """Refuse what a sharded run cannot start with, one problem at a time (as the CLI does);
    the total concurrency."""
    check_run_arguments(
        concurrency=concurrency, budget_usd=budget_usd, max_cases=max_cases, repeats=repeats
    )
    if shards < 1:
        raise _problem(
            "invalid_shards",
            "--shards",
            "--shards must be at least 1",
            "give the number of Ray tasks to split the run into",
        )
    if calls_per_second is not None and (
        not math.isfinite(calls_per_second) or calls_per_second <= 0
    ):
        raise _problem(
            "invalid_rate",
            "--calls-per-second",
            "--calls-per-second must be a positive number",
            "give the calls per second allowed over all shards",
        )
    if budget_usd is not None and (budget_usd < 0 or not math.isfinite(budget_usd)):
        raise _problem(
            "invalid_budget",
            "--budget-usd",
            "the budget is negative or not finite",
            "give a budget of 0 or more",
        )
    if not ray_available():
        raise _problem(
            "ray_missing",
            "--executor ray",
            RAY_MISSING,
            "install the extra, or run with --executor local",
        )
    return check_concurrency(concurrency)


def _cache_path(cache_dir: str | Path | None | Literal[False]) -> str | Literal[False]:
    """The verdict cache as an absolute path every worker uses (False: no cache)."""
    if cache_dir is False:
        return False
    return str(Path(cache_dir).resolve() if cache_dir else default_cache_dir())


@dataclass(frozen=True)
class _Drawn:
    """The cases a run plans, in execution order, and the plan they were drawn under."""

    cases: list[GoldCase]
    """The planned cases: every case of the partition, or the plan's sample (reserved lanes
    first, as the local engine orders them)."""
    risks: dict[str, str | None]
    """slice -> risk."""
    sampling: ManifestSampling | None = None
    """The plan's record frozen in the manifest."""
    lanes: Lanes | None = None
    """The plan's lanes (None without a plan)."""


def _draw(
    dataset: GoldDataset,
    cases: list[GoldCase],
    part: str,
    budget_usd: float | None,
    plan: SamplingPlan | None,
    source: str | None,
) -> _Drawn:
    """The planned cases of a local run (:func:`._planned.plan_cases`), reserved lanes first."""
    planned = plan_cases(dataset, cases, part, budget_usd, plan, source)
    lanes = planned.lanes
    if lanes is None:
        return _Drawn(planned.cases, planned.risks)
    ordered = sorted(planned.cases, key=lambda c: lanes.order_key(c.slice, planned.risks))
    return _Drawn(ordered, planned.risks, planned.sampling, lanes)


@dataclass(frozen=True)
class _ShardTask:
    """What every shard's task is given besides its index, directory, cases and concurrency."""

    candidate: str
    gold: str
    partition: str
    repeats: int
    budget_usd: float | None
    max_cases: int | None
    cache_dir: str | Literal[False]
    retry_errors: bool
    sampling_source: str | None


@dataclass
class _Recorded:
    """What the shards' results files hold before this invocation."""

    spent: float = 0.0
    observed: list[int] = field(default_factory=list)
    """Output tokens reported by calls that reached the model (not cached)."""
    units: dict[int, dict[str, int]] = field(default_factory=dict)
    """Per shard, per slice: the units this invocation runs (as the engine plans them)."""
    lane_spent: dict[str, float] = field(default_factory=dict)
    """Per slice: the recorded spend."""


def _read_shards(
    out: Path,
    by_shard: list[list[str]],
    slice_of: dict[str, str],
    repeats: int,
    max_attempts: int,
    retry_errors: bool,
) -> _Recorded:
    """Read every shard's results (repairing a torn last line): spend, outputs, units left."""
    found = _Recorded()
    for index, case_ids in enumerate(by_shard):
        path = RunDir(out).shard(index).results
        recorded: dict[tuple[str, int], list[dict[str, Any]]] = {}
        if path.exists():
            AppendOnlyLog(path).close()  # repairs a torn last line before reading
            recorded = _read_attempts(path)
        for (case_id, _repeat), rows in recorded.items():
            cost = sum(float(r.get("cost_usd") or 0.0) for r in rows)
            found.spent += cost
            lane = slice_of.get(case_id)
            if lane is not None:
                found.lane_spent[lane] = found.lane_spent.get(lane, 0.0) + cost
            found.observed += [
                int(r["tokens_out"])
                for r in rows
                if r.get("tokens_out")
                and r.get("tokens_in") is not None
                and not r.get("cached_from_run_id")
            ]
        units: Counter[str] = Counter()
        for case_id in case_ids:
            for repeat in range(repeats):
                rows = recorded.get((case_id, repeat), [])
                state = _state(rows, max_attempts) if rows else None
                if state == "verdict" or (state == "final_error" and not retry_errors):
                    continue
                units[slice_of.get(case_id) or ""] += 1
        if units:
            found.units[index] = dict(units)
    return found


def _drive(
    judge: Any,
    dataset: GoldDataset,
    drawn: _Drawn,
    out: Path,
    task: _ShardTask,
    *,
    shards: int,
    concurrency: int,
    calls_per_second: float | None,
    burst: int,
) -> RunSummary:
    """Freeze the manifest and the shard plan, run the shards, merge and summarize."""
    lineage = run_lineage(judge, dataset, drawn.cases)
    manifest_cases = list(
        {
            (c.case_id, c.response_hash): ManifestCase(
                case_id=c.case_id, response_hash=c.response_hash
            )
            for c in drawn.cases
        }.values()
    )
    manifest, _ = freeze_manifest(
        out,
        judge.identity,
        judge.identity.fingerprint(),
        dataset.sha256,
        task.partition,
        task.repeats,
        manifest_cases,
        None,
        lineage,
        drawn.sampling,
    )
    by_shard = _freeze_plan(out, manifest, shards)
    slice_of = {c.case_id: c.slice for c in drawn.cases}
    recorded = _read_shards(
        out, by_shard, slice_of, task.repeats, _max_attempts(judge), task.retry_errors
    )
    lanes = (
        ShardLanes(
            priority=dict(drawn.lanes.priority),
            holds=dict(drawn.lanes.holds),
            units=recorded.units,
            spent=recorded.lane_spent,
        )
        if drawn.lanes is not None
        else None
    )
    endpoint = getattr(judge, "endpoint_url", None)
    limits_args = (
        task.budget_usd,
        task.max_cases,
        recorded.spent,
        judge.spec.endpoint.circuit_breaker_after,
        endpoint if isinstance(endpoint, str) else None,
        calls_per_second,
        max(1, burst),
        judge.spec.pricing,
        max(recorded.observed) if recorded.observed else None,
        lanes,
    )
    results, warnings, final = _run_shards(
        out, by_shard, task, drawn.sampling, concurrency, limits_args
    )
    problems = [
        Problem.model_validate(problem)
        for _, answer in sorted(results.items())
        for problem in answer.get("problems", [])
    ]
    if problems:
        raise WorkbenchError("a shard refused to run", problems)
    merge_results(out, shards, RunDir(out).results)
    summary = _merged_summary(judge, manifest, out, drawn, task, results, warnings, final)
    atomic_write_json(RunDir(out).summary, summary.model_dump(mode="json"))
    with AppendOnlyLog(RunDir(out).invocations) as invocations:
        invocations.append(
            {
                "finished_at": datetime.now(UTC).isoformat(),
                "executor": "ray",
                "shards": shards,
                "concurrency": concurrency,
                "calls_per_second": calls_per_second,
                "retry_errors": task.retry_errors,
                "cache": task.cache_dir is not False,
                **summary.model_dump(mode="json", exclude={"unrun", "pending_retry"}),
            }
        )
    return summary


def _run_shards(
    out: Path,
    by_shard: list[list[str]],
    task: _ShardTask,
    sampling: ManifestSampling | None,
    concurrency: int,
    limits_args: tuple[Any, ...],
) -> tuple[dict[int, dict[str, Any]], list[str], dict[str, Any]]:
    """Start the limits actor and one task per shard with cases; wait for every one.

    Returns each finished shard's answer, a warning per shard that did not finish (its worker
    died) and the actor's final state.
    """
    import ray

    active = [i for i, ids in enumerate(by_shard) if ids]
    per_shard = max(1, math.ceil(concurrency / len(active)))
    started_ray = _connect()
    warnings: list[str] = []
    results: dict[int, dict[str, Any]] = {}
    try:
        actor: Any = ray.remote(num_cpus=0)(GlobalLimits).remote(*limits_args)
        remote_shard: Any = ray.remote(num_cpus=1, max_retries=0)(run_shard)
        refs = {
            index: remote_shard.remote(
                {
                    **asdict(task),
                    "index": index,
                    "dir": str(shard_dir(out, index)),
                    "case_ids": by_shard[index],
                    "concurrency": per_shard,
                    "sampling": sampling.model_dump(mode="json") if sampling else None,
                },
                actor,
            )
            for index in active
        }
        shard_of_ref = {ref: index for index, ref in refs.items()}
        pending = list(refs.values())
        while pending:  # as each shard ends: a dead one's reservations are released at once
            ready, pending = ray.wait(pending, num_returns=1)
            index = shard_of_ref[ready[0]]
            try:
                results[index] = ray.get(ready[0])
            except ray.exceptions.RayError as exc:
                text = str(exc).strip()
                first = text.splitlines()[0] if text else type(exc).__name__
                warnings.append(
                    f"shard {index:03d} did not finish ({type(exc).__name__}: {first[:200]}); its"
                    " settled cases are kept, rerun the same command to resume it"
                )
            ray.get(actor.release.remote(index))
        final: dict[str, Any] = ray.get(actor.state.remote())
    finally:
        if started_ray:
            ray.shutdown()
    return results, warnings, final


def _merged_summary(
    judge: Any,
    manifest: RunManifest,
    out: Path,
    drawn: _Drawn,
    task: _ShardTask,
    results: dict[int, dict[str, Any]],
    warnings: list[str],
    final: dict[str, Any],
) -> RunSummary:
    """The run's summary from the merged results, as a local run of the manifest writes it."""
    summaries = [
        RunSummary.model_validate(a["summary"])
        for _, a in sorted(results.items())
        if "summary" in a
    ]
    counters: Counter[str] = Counter()
    resumed = 0
    for s in summaries:
        counters.update({"calls": s.calls, "retries": s.retries, "cache_hits": s.cache_hits})
        resumed += s.resumed
    secrets = _secrets(judge)
    limits = Limits(
        task.budget_usd,
        task.max_cases,
        final["spent"],
        breaker_after=1,
        endpoint=None,
        secrets=secrets,
    )
    limits.stop_reason = final["stop_reason"]
    limits.stop_detail = redact(final["stop_detail"], secrets) if final["stop_detail"] else None
    for message in warnings + [
        f"shard {i:03d}: {w}"
        for i, a in sorted(results.items())
        if "summary" in a
        for w in a["summary"]["warnings"]
    ]:
        limits.warn(message)
    seen_out = [
        s.max_output_tokens_observed for s in summaries if s.max_output_tokens_observed is not None
    ]
    estimator = Estimator(judge, max(seen_out) if seen_out else None)
    estimator.method = next((s.estimate_method for s in summaries if s.estimate_method), None)
    summary = _summarize(
        manifest,
        judge,
        RunDir(out).results,
        counters,
        resumed,
        limits,
        _max_attempts(judge),
        estimator,
        {c.case_id: c.slice for c in drawn.cases},
        drawn.risks,
        task.sampling_source,
    )
    if warnings and summary.status == "complete":  # a shard that failed is never a pass
        summary = summary.model_copy(update={"status": "incomplete"})
    return summary
