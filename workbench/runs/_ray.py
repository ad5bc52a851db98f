"""The Ray executor: one run split into N shards, each run by the unchanged engine on a Ray worker.

The driver plans and freezes the run as a local run does, plus the shard plan (:mod:`._shards`),
while Ray starts in a thread. Shard hosts (:class:`ShardHost`, one worker process for the shards
that share a CPU) take shards from a queue. One actor, :class:`GlobalLimits`, holds that queue
and the budget, case limit, breaker, lanes and a token bucket for every shard, so
:mod:`._limits`' guarantee holds for the whole run. The driver merges the shard results into
the summary a local run writes; a shard whose host died leaves the run *incomplete*, and
re-running resumes every shard. ``RAY_ADDRESS`` selects a cluster.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from .._io import atomic_write_json, read_json_file
from .._redact import redact
from ..errors import Problem, WorkbenchError, problem
from ..gold import GOLD_FILE, Partition, load_dataset, resolve_paths
from ..judges import Judge, load_candidate, load_spec
from ..results import ManifestCase, ManifestSampling, RunManifest
from ..sampling import SamplingPlan, plan_lanes
from ._cache import default_cache_dir
from ._engine import (
    Recorded,
    RunSummary,
    WorkItem,
    _freeze,
    _max_attempts,
    _Plan,
    _secrets,
    _Tally,
    endpoint_of,
    gold_items,
    plan_partition,
    read_recorded,
    record_invocation,
    run_lock,
    run_plan,
    slice_risks,
    summarize,
)
from ._limits import CallEstimate, Estimator, Limits
from ._manifest import run_lineage
from ._options import DEFAULT_OPTIONS, RunOptions, refusal
from ._rundir import RunDir
from ._shards import WORKER_FILE, ShardPlan, merge_results, shard_of

DEFAULT_CPUS_PER_SHARD = 0.25
"""A shard's CPU request by default: a shard mostly waits on its endpoint, so four share a CPU
and every shard of ``--shards N`` runs at once on a small machine (``--concurrency`` is the total
over the shards, so shards that wait for a CPU would leave that concurrency unused)."""

RAY_MISSING = (
    "the Ray executor needs the optional extra: pip install 'judge-workbench[ray]' (or pip install"
    " -e '.[ray]' in a checkout)"
)


def ray_available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass(frozen=True)
class ShardLanes:
    """A sampling plan's lanes over every shard (the rules of :mod:`._limits`)."""

    priority: dict[str, int]
    holds: dict[str, float]
    units: dict[int, dict[str, int]]
    """Per shard, per slice: the units this invocation runs."""
    spent: dict[str, float]


class GlobalLimits:
    """The Ray actor behind every shard's limits: one :class:`~._limits.Limits` plus a token
    bucket (``calls_per_second``, at most one saved: at most ``1 + rate * t`` calls start in
    ``t`` seconds, over all shards); and the queue of shards the hosts (:class:`ShardHost`)
    take the next shard from when one of theirs ends."""

    def __init__(
        self,
        budget_usd: float | None,
        max_cases: int | None,
        spent: float,
        breaker_after: int,
        endpoint: str | None,
        calls_per_second: float | None,
        pricing: Any = None,
        observed_out: int | None = None,
        lanes: ShardLanes | None = None,
        tasks: list[_ShardTask] | None = None,
    ) -> None:
        self.pricing = pricing
        self.queue = list(reversed(tasks or []))
        self.taken: dict[int, int] = {}
        """Per shard taken: the host that took it."""
        self.answers: dict[int, dict[str, Any]] = {}
        """Per shard ended: its answer (:func:`run_shard`'s, or ``{"error": why}``)."""
        units = lanes.units if lanes else {}
        lane_kw: dict[str, Any] = {}
        if lanes is not None:
            total = sum((Counter(per_slice) for per_slice in units.values()), Counter[str]())
            lane_kw = {"priority": lanes.priority, "holds": lanes.holds, "lane_spent": lanes.spent}
            lane_kw["lane_units"] = dict(total)
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
        self.burst = self.tokens = 1.0
        self.last = time.monotonic()
        self.bucket: asyncio.Lock | None = None
        self.calls = 0
        self.max_out: int | None = observed_out
        # per shard: (reservation, lane) of calls in flight; open and unstarted reserved units
        self.held: dict[int, list[tuple[float, str | None]]] = {}
        self.open = {shard: Counter(per_slice) for shard, per_slice in units.items()}
        self.unstarted = {
            shard: sum(n for name, n in per_slice.items() if self._reserved(name))
            for shard, per_slice in units.items()
        }

    async def configure(self, *settings: Any, **named: Any) -> None:
        """Set the run's limits and shards (as the constructor does): the actor is made while
        the driver still plans the run, so that its process is up when the shards start."""
        self.__init__(*settings, **named)  # type: ignore[misc]

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
        self, shard: int, estimate: CallEstimate, first_call: bool, lane: str | None = None
    ) -> tuple[bool, dict[str, Any]]:
        """:meth:`Limits.admit`, the expected cost priced with the run's largest output (under a
        budget after the probe settled)."""
        lim, tokens_in, cap = self.limits, estimate.tokens_in, estimate.tokens_out_cap
        if lim.budget_usd is not None:
            async with lim.cond:
                await lim.cond.wait_for(
                    lambda: lim.halted or not (lim.settled == 0 and lim.in_flight > 0)
                )
        max_out, pricing = self.max_out, self.pricing
        if (
            max_out is not None
            and pricing is not None
            and tokens_in is not None
            and cap is not None
        ):
            estimate = replace(estimate, expected=float(pricing.cost(tokens_in, min(cap, max_out))))
        if not await self.limits.admit(estimate, first_call, lane):
            return False, self._state()
        if first_call and self._reserved(lane) and shard in self.unstarted:
            self.unstarted[shard] -= 1
        reservation = estimate.reservation
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
        if shard not in self.open:  # no lanes, or the shard was released
            return
        await self.limits.unit_done(lane, started=started)
        if lane is not None and lane in self.open[shard]:
            self.open[shard][lane] -= 1
        if not started and self._reserved(lane):
            self.unstarted[shard] -= 1

    async def release(self, shard: int) -> dict[str, Any]:
        """A shard's task ended: free its calls' reservations and its lanes (a dead worker's)."""
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
        return self._state()

    async def take(self, host: int) -> _ShardTask | None:
        """The next shard for ``host`` to run (none when every shard was taken)."""
        if not self.queue:
            return None
        task = self.queue.pop()
        self.taken[task.index] = host
        return task

    async def finish(self, shard: int, answer: dict[str, Any]) -> None:
        self.answers[shard] = answer
        await self.release(shard)

    async def lost(self, host: int, why: str) -> None:
        """``host`` died: each shard it was running ended with ``why``, its calls released."""
        for shard in [s for s, h in self.taken.items() if h == host and s not in self.answers]:
            await self.finish(shard, {"error": why})

    async def abandon(self, why: str) -> None:
        """No host is left: each shard still queued ended with ``why``."""
        while self.queue:
            await self.finish(self.queue.pop().index, {"error": why})

    async def outstanding(self) -> int:
        """Shards not ended yet (queued, or running on a host)."""
        return len(self.queue) + len(set(self.taken) - set(self.answers))

    async def ended(self) -> dict[int, dict[str, Any]]:
        return self.answers


class RemoteLimits(Limits):
    """A shard's limits: every decision is the :class:`GlobalLimits` actor's."""

    def __init__(self, actor: Any, shard: int, *args: Any, **settings: Any) -> None:
        super().__init__(*args, **settings)
        self.actor, self.shard = actor, shard
        self.observed: int | None = None

    def observe(self, tokens_in: int | None, tokens_out: int | None) -> None:
        if tokens_in is not None and tokens_out is not None and tokens_out > 0:
            self.observed = tokens_out  # sent with the settle that follows

    def _sync(self, state: dict[str, Any]) -> None:
        self.spent = state["spent"]
        self.stop_reason = state["stop_reason"]
        detail = state["stop_detail"]
        self.stop_detail = redact(detail, self.secrets) if detail else None

    async def admit(
        self, estimate: CallEstimate, first_call: bool, lane: str | None = None
    ) -> bool:
        ok, state = await self.actor.admit.remote(self.shard, estimate, first_call, lane)
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
        error = redact(error, self.secrets) if error else None
        state = await self.actor.settle.remote(
            self.shard, estimate.reservation, cost, called, endpoint_failure, error, observed, lane
        )
        self._sync(state)

    async def unit_done(self, lane: str | None, *, started: bool) -> None:
        if self.priority:  # lanes only under a sampling plan
            await self.actor.unit_done.remote(self.shard, lane, started)


@dataclass(frozen=True)
class _ShardTask:
    """What a shard's task is given: the candidate and gold to load, how to run, which cases."""

    candidate: str
    gold: str
    partition: str
    options: RunOptions
    sampling: dict[str, Any] | None = None
    sampling_source: str | None = None
    out: str = ""
    index: int = 0
    case_ids: list[str] = field(default_factory=list)


def run_shard(task: _ShardTask, actor: Any) -> dict[str, Any]:
    """One shard, in a Ray worker: ``{"summary": ...}`` or ``{"problems": [...]}``."""
    out = RunDir(task.out).shard(task.index).path
    out.mkdir(parents=True, exist_ok=True)
    worker = {"pid": os.getpid(), "host": socket.gethostname()}
    atomic_write_json(out / WORKER_FILE, {**worker, "started_at": datetime.now(UTC).isoformat()})
    try:
        judge = load_candidate(task.candidate)
        dataset = load_dataset(task.gold)
        by_id = {c.case_id: c for c in dataset.partition(task.partition)}
        cases = [by_id[i] for i in task.case_ids if i in by_id]  # a changed gold: manifest refuses
        risks = slice_risks(dataset)
        sampling = ManifestSampling.model_validate(task.sampling) if task.sampling else None
        lanes = plan_lanes(sampling.plan, risks, task.options.budget_usd) if sampling else None
        lineage = run_lineage(judge, dataset, cases)
        plan = _Plan(
            task.partition,
            dataset.sha256,
            True,
            lineage,
            lanes,
            risks,
            sampling,
            task.sampling_source,
        )
        options = replace(task.options, progress=False)
        remote = partial(RemoteLimits, actor, task.index)
        items = gold_items(cases, options.repeats)
        summary = asyncio.run(run_plan(judge, items, out, options, plan, remote))
    except WorkbenchError as exc:
        return {"problems": [p.model_dump(mode="json") for p in exc.problems]}
    return {"summary": summary.model_dump(mode="json")}


def _why(exc: BaseException) -> str:
    """An exception as one line: its type and its message's first line."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {(text.splitlines()[0] if text else '')[:200]}"


class ShardHost:
    """A Ray actor: one worker process that runs shards, several at once (each ``serve`` call
    is a thread of its own, each shard's engine on its own event loop), so the judge's
    libraries are imported once per host rather than once per shard. Each ``serve`` takes the
    next shard from the limits actor until none is left, so a host that ends early takes
    another's share."""

    def __init__(self, candidate: str, gold: str) -> None:
        try:  # imports the judge's libraries while the driver prepares the run
            load_candidate(candidate)
            load_dataset(gold)
        except Exception:  # noqa: BLE001  best effort: a shard reports the real problem
            pass

    def serve(self, actor: Any, host: int) -> int:
        """Run shards until the queue is empty; the number run."""
        import ray

        ran = 0
        while (task := ray.get(actor.take.remote(host))) is not None:
            try:
                answer = run_shard(task, actor)
            except Exception as exc:  # noqa: BLE001  the shard ends; the host goes on
                answer = {"error": _why(exc)}
            ray.get(actor.finish.remote(task.index, answer))
            ran += 1
        return ran


def host_layout(shards: int, cpus: float) -> tuple[int, int]:
    """``(hosts, shards per host)`` for ``shards`` shards asking ``cpus`` CPUs each: a host
    runs the shards that share one CPU (``1 / cpus``; one when a shard asks a whole CPU or
    more), and asks Ray for their CPUs together."""
    per_host = max(1, min(shards, int(1 / cpus + 1e-9)))
    return -(-shards // per_host), per_host


_AUTH_VARIABLES = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")
_TOKEN: list[str] = []
"""This process's token for the local Ray instances it starts (Ray's token loader keeps the
first token it reads, so every instance of one process uses the same one)."""
START_TRIES = 3
"""Local starts tried before giving up. On a loaded machine Ray's raylet can miss its start-up
window ("timed out during startup"): it waits a fixed 30 s for its dashboard agent, a Python
process that imports most of Ray, and exits when the agent is late (seen at load average > 10
on 2 cores); a later start, its imports in the page cache, often makes it."""


@contextmanager
def local_auth() -> Iterator[None]:
    """Token authentication for a local Ray instance, the token in this process's environment.

    Ray 2.52+ turns token authentication on for a local ``ray.init()`` when ``RAY_AUTH_MODE`` is
    unset and, finding no token, writes a new one to ``~/.ray/auth_token``
    (``ray._private.authentication.authentication_token_setup``). Given ``RAY_AUTH_TOKEN`` it
    writes nothing, and Ray's processes inherit the token from the driver. A user's own
    ``RAY_AUTH_*`` settings are kept as they are; what this sets (Ray adds
    ``RAY_AUTH_MODE=token``) is removed when the block ends.
    """
    if any(name in os.environ for name in _AUTH_VARIABLES):
        yield
        return
    if not _TOKEN:
        _TOKEN.append(secrets.token_hex(32))
    os.environ["RAY_AUTH_TOKEN"] = _TOKEN[0]
    try:
        yield
    finally:
        for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN"):
            os.environ.pop(name, None)


OBJECT_STORE_BYTES = 100 * 1024 * 1024
"""A local instance's object store: shards pass only small records through it (Ray's default
is 30% of the machine's memory, and its minimum 75 MiB)."""
_NODES: list[Any] = []
"""The head nodes :func:`start_local` started (stopped by :func:`stop_local`)."""


def _start_node(**settings: Any) -> Any:
    """A new head node with only what a run needs: no dashboard, no autoscaler monitor, no log
    monitor (a run's workers log to the session directory; the driver does not print their
    output), and a small object store. ``ray.init`` takes none of these settings (it starts
    all three monitors), hence Ray's own ``Node``, as ``ray.init`` and ``ray start`` use it."""
    from ray._private.node import Node
    from ray._private.parameter import RayParams

    only: dict[str, Any] = {"include_dashboard": False, "include_log_monitor": False}
    params = RayParams(no_monitor=True, object_store_memory=OBJECT_STORE_BYTES, **only, **settings)
    return Node(params, head=True, shutdown_at_exit=False, spawn_reaper=True)


def start_local(tries: int = START_TRIES, **settings: Any) -> None:
    """Start a new local Ray instance (:func:`_start_node`: never one that ``ray start`` left
    running on this machine) and connect to it, tried ``tries`` times when it times out
    starting; ``settings`` go to the node (e.g. ``num_cpus``). Call it inside
    :func:`local_auth`; :func:`stop_local` ends it."""
    import ray

    for attempt in range(1, tries + 1):
        before = _children()
        try:
            node = _start_node(**settings)
        except (ImportError, TypeError):  # a Ray whose private Node or RayParams differ
            _stop(_children() - before)
            _init_local(**settings)
            return
        except Exception as error:  # Ray raises a bare Exception for this timeout
            _stop(_children() - before)
            if attempt == tries or "timed out during startup" not in str(error):
                raise
            continue
        _NODES.append(node)
        try:
            ray.init(address=node.address, log_to_driver=False)
        except BaseException:
            stop_local()
            raise
        return


def _init_local(**settings: Any) -> None:
    """The public start, for a Ray release whose ``Node`` this module cannot drive: the same
    instance, with the dashboard off and the small object store (its monitors run)."""
    import ray

    ray.init(
        address="local",  # a new instance, never one `ray start` left running
        include_dashboard=False,
        object_store_memory=OBJECT_STORE_BYTES,
        log_to_driver=False,
        **settings,
    )


def stop_local() -> None:
    """Disconnect, and end the processes of the instances :func:`start_local` started."""
    import ray

    ray.shutdown()
    while _NODES:
        _NODES.pop().kill_all_processes(check_alive=False, allow_graceful=True)


def _children() -> set[int]:
    """This process's descendants: its children, theirs, ... (the raylet's agents outlive a
    killed raylet), from ``/proc``; none where there is no ``/proc``."""
    parent_of: dict[int, int] = {}
    try:
        entries = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return set()
    for name in entries:
        try:
            stat = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        parent_of[int(name)] = int(stat[stat.rfind(b")") + 2 :].split()[1])  # after the state
    found, frontier = set[int](), {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parent_of.items() if parent in frontier} - found
        found |= frontier
    return found


def _stop(pids: set[int]) -> None:
    """End the processes a failed start started: Ray's ``shutdown`` does not know them
    (its node object was never made), and its GCS, dashboard and monitors would keep running
    (and loading the machine) until the driver exits."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            continue


@contextmanager
def ray_session() -> Iterator[None]:
    """Connected to ``RAY_ADDRESS``, or to a local Ray instance started for the block (and
    stopped after it); an instance already connected in this process is used as it is."""
    import ray

    if ray.is_initialized():
        yield
        return
    if os.environ.get("RAY_ADDRESS"):
        ray.init(log_to_driver=False)
        try:
            yield
        finally:
            ray.shutdown()
        return
    with local_auth():
        start_local()
        try:
            yield
        finally:
            stop_local()


def split_concurrency(total: int, shards: int) -> list[int]:
    """``--concurrency`` shared by ``shards``: the shares sum to ``total`` (each at least 1)."""
    return [max(1, total // shards + (k < total % shards)) for k in range(shards)]


def cpus_per_shard(options: RunOptions) -> float:
    """The CPUs a shard's task asks for (``--ray-cpus-per-shard``; default
    :data:`DEFAULT_CPUS_PER_SHARD`)."""
    cpus = options.ray_cpus_per_shard
    return DEFAULT_CPUS_PER_SHARD if cpus is None else cpus


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
            message = f"the shard plan cannot be read ({str(exc)[:120]})"
            fix = "restore shards.json or run into a new --out directory"
            raise refusal("shards_invalid", str(path), message, fix) from None
        if existing.shards != shards:
            raise refusal(
                "shards_changed",
                str(path),
                f"this run was split into {existing.shards} shards, not {shards}: each case's"
                " attempts live in its shard's file",
                f"resume with --shards {existing.shards}, or run into a new --out directory",
            )
        if existing != plan:
            message = "the shard plan does not match this run's manifest"
            fix = "restore shards.json or run into a new --out directory"
            raise refusal("shards_changed", str(path), message, fix)
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
    options: RunOptions = DEFAULT_OPTIONS,
    *,
    sampling: SamplingPlan | None = None,
    sampling_source: str | None = None,
) -> RunSummary:
    """Run the candidate spec over ``partition`` of ``gold`` in ``options.shards`` Ray tasks.

    ``concurrency``, ``budget_usd``, ``max_cases`` and ``calls_per_second`` hold for all shards
    together; ``sampling`` as for :func:`~._engine.run_candidate`. Held-out data is refused.
    """
    if options.check().executor != "ray":
        message = f"run_candidate_ray runs the Ray executor, not {options.executor!r}"
        fix = "pass RunOptions(executor='ray', shards=N), or run locally with run_candidate"
        raise refusal("executor_mismatch", "executor", message, fix)
    if not ray_available():
        fix = "install the extra, or run with --executor local"
        raise refusal("ray_missing", "--executor ray", RAY_MISSING, fix)
    out = Path(out_dir).resolve()
    cache = options.cache_dir  # one absolute path every worker uses (False: no cache)
    cache = (
        False if cache is False else str(Path(cache).resolve() if cache else default_cache_dir())
    )
    options = replace(options, cache_dir=cache)
    task = _ShardTask(str(Path(candidate).resolve()), str(Path(gold).resolve()), "", options)
    _check_before_start(task, out)
    with _ray_started(task) as started:  # Ray starts while the driver plans and freezes
        judge, dataset = load_candidate(task.candidate), load_dataset(task.gold)
        plan, items = plan_partition(
            judge, dataset, partition, out, options, None, sampling, sampling_source
        )
        task = replace(
            task,
            partition=plan.partition,
            sampling=plan.sampling.model_dump(mode="json") if plan.sampling else None,
            sampling_source=sampling_source,
            out=str(out),
        )
        out.mkdir(parents=True, exist_ok=True)
        with run_lock(out):
            return _drive(judge, plan, items, out, task, started)


def _check_before_start(task: _ShardTask, out: Path) -> None:
    """What can be refused without Ray, refused before it starts (a local start takes seconds):
    the candidate's spec, the gold file's existence, a run directory of the local executor.
    Loading the judge and validating the gold stay beside Ray's start."""
    problems: list[Problem] = []
    try:
        load_spec(task.candidate)
    except WorkbenchError as exc:
        problems.extend(exc.problems)
    gold_path = resolve_paths(task.gold)[1]
    if not gold_path.exists():
        fix = f"point at a dataset directory containing {GOLD_FILE}, or at the .jsonl file itself"
        problems.append(
            problem(str(gold_path), "gold_missing", "the gold file does not exist", fix)
        )
    if RunDir(out).results.exists() and not RunDir(out).shards_file.exists():
        message = "this run directory holds a run of the local executor"
        fix = "resume it without --executor ray, or give this run its own --out directory"
        problems.append(problem(str(out), "executor_mismatch", message, fix))
    if problems:
        raise WorkbenchError("refusing to start Ray", problems)


def _drive(
    judge: Judge,
    plan: _Plan,
    items: list[WorkItem],
    out: Path,
    task: _ShardTask,
    started: _Started,
) -> RunSummary:
    options = task.options
    manifest = _freeze(judge, items, out, options.repeats, plan)
    by_shard = _freeze_plan(out, manifest, options.shards or 1)
    recorded, units = _read_shards(out, by_shard, items, judge, options.retry_errors)
    lanes = plan.lanes
    shard_lanes = (
        ShardLanes(dict(lanes.priority), dict(lanes.holds), units, recorded.lane_spent)
        if lanes is not None
        else None
    )
    limits_args = (
        options.budget_usd,
        options.max_cases,
        recorded.spent,
        judge.spec.endpoint.circuit_breaker_after,
        endpoint_of(judge),
        options.calls_per_second,
        judge.spec.pricing,
        max(recorded.observed) if recorded.observed else None,
        shard_lanes,
    )
    results, warnings, final = _run_shards(out, by_shard, task, limits_args, started)
    problems = [
        Problem.model_validate(problem)
        for _, answer in sorted(results.items())
        for problem in answer.get("problems", [])
    ]
    if problems:
        raise WorkbenchError("a shard refused to run", problems)
    merge_results(out, len(by_shard), RunDir(out).results)
    summary = _merged_summary(judge, manifest, out, items, plan, options, results, warnings, final)
    record_invocation(
        RunDir(out),
        summary,
        executor="ray",
        shards=len(by_shard),
        concurrency=options.concurrency,
        calls_per_second=options.calls_per_second,
        retry_errors=options.retry_errors,
        cache=options.cache_dir is not False,
    )
    return summary


def _read_shards(
    out: Path, by_shard: list[list[str]], items: list[WorkItem], judge: Judge, retry_errors: bool
) -> tuple[Recorded, dict[int, dict[str, int]]]:
    """What every shard's results hold, and per shard, per slice, the units still to run."""
    recorded, units = Recorded(), {}
    for index, case_ids in enumerate(by_shard):
        ids = set(case_ids)
        before = len(recorded.units)
        recorded.add(
            [i for i in items if i.case_id in ids],
            read_recorded(RunDir(out).shard(index).results),
            _max_attempts(judge),
            retry_errors,
        )
        left = Counter(u.item.slice or "" for u in recorded.units[before:])
        if left:
            units[index] = dict(left)
    return recorded, units


class _Started:
    """Ray started in a thread while the driver prepares the run: the session (:func:`ray_session`)
    and the shard hosts, whose processes import the judge's libraries meanwhile."""

    abandoned: threading.Thread | None = None
    """The thread of a start given up by a refusal, still starting or stopping Ray: the next
    start waits for it."""

    def __init__(self, task: _ShardTask) -> None:
        if _Started.abandoned is not None:
            _Started.abandoned.join()
            _Started.abandoned = None
        self.layout = host_layout(task.options.shards or 1, cpus_per_shard(task.options))
        self.hosts: list[Any] = []
        self.limits: Any = None
        self.error: BaseException | None = None
        self.up, self.done = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._run, args=(task,), daemon=True)
        self.thread.start()

    def _run(self, task: _ShardTask) -> None:
        """Start, then hold the session until :meth:`close`: Ray starts its GCS and raylet with
        ``PR_SET_PDEATHSIG``, which kills them when the *thread* that started them ends."""
        with ExitStack() as session:
            try:
                session.enter_context(ray_session())
                self._start(task)
            except BaseException as exc:  # raised in the driver's thread by ready()
                self.error = exc
            self.up.set()
            self.done.wait()
            if self.hosts:  # killed here, so that an abandoned start leaves no actor either
                import ray

                for actor in [*self.hosts, self.limits]:
                    ray.kill(actor)

    def _start(self, task: _ShardTask) -> None:
        import ray

        hosts, per_host = self.layout
        cpus = cpus_per_shard(task.options) * per_host
        host: Any = ray.remote(ShardHost)
        host = host.options(num_cpus=cpus, max_concurrency=per_host, max_restarts=0)
        self.hosts = [host.remote(task.candidate, task.gold) for _ in range(hosts)]
        limits: Any = ray.remote(num_cpus=0)(GlobalLimits)
        self.limits = limits.remote(None, None, 0.0, 1, None, None)

    def ready(self) -> list[Any]:
        self.up.wait()
        if self.error is not None:
            raise self.error
        return self.hosts

    def abandon(self) -> None:
        """A refusal during the start: return now; the thread stops Ray once it is up (a
        command exits at once instead of after Ray's start)."""
        self.done.set()
        _Started.abandoned = self.thread

    def close(self) -> None:
        if _Started.abandoned is self.thread:
            return
        self.up.wait()
        self.done.set()
        self.thread.join()


@contextmanager
def _ray_started(task: _ShardTask) -> Iterator[_Started]:
    started = _Started(task)
    try:
        yield started
    except WorkbenchError:
        started.abandon()
        raise
    finally:
        started.close()


def _run_shards(
    out: Path,
    by_shard: list[list[str]],
    task: _ShardTask,
    limits_args: tuple[Any, ...],
    started: _Started,
) -> tuple[dict[int, dict[str, Any]], list[str], dict[str, Any]]:
    """Queue every shard with cases in the limits actor and let the hosts run them: each
    finished shard's answer, a warning per shard that died, and the actor's final state."""
    import ray

    hosts = started.ready()
    active = [i for i, ids in enumerate(by_shard) if ids]
    options = replace(task.options, executor="local")
    shares = split_concurrency(task.options.concurrency or 1, len(active))
    tasks = [
        replace(task, options=replace(options, concurrency=share), index=i, case_ids=by_shard[i])
        for i, share in zip(active, shares, strict=True)
    ]
    actor = started.limits
    ray.get(actor.configure.remote(*limits_args, tasks))
    calls = {
        host.serve.remote(actor, k): k
        for k, host in enumerate(hosts)
        for _ in range(started.layout[1])
    }
    pending = list(calls)
    # until every shard ended (a host Ray cannot place, its CPUs taken, is not waited for)
    while pending and ray.get(actor.outstanding.remote()):
        ready, pending = ray.wait(pending, num_returns=1)
        try:
            ray.get(ready[0])
        except ray.exceptions.RayError as exc:  # the host died: its shards' calls are released
            ray.get(actor.lost.remote(calls[ready[0]], _why(exc)))
    ray.get(actor.abandon.remote("no shard host was left to run it"))  # every host died
    answers: dict[int, dict[str, Any]] = ray.get(actor.ended.remote())
    final: dict[str, Any] = ray.get(actor.state.remote())
    warnings = [
        f"shard {i:03d} did not finish ({answer['error']}); its settled cases are kept, rerun the"
        " same command to resume it"
        for i, answer in sorted(answers.items())
        if "error" in answer
    ]
    return {i: a for i, a in answers.items() if "error" not in a}, warnings, final


_COUNTED = ("calls", "retries", "cache_hits")


def _merged_summary(
    judge: Judge,
    manifest: RunManifest,
    out: Path,
    items: list[WorkItem],
    plan: _Plan,
    options: RunOptions,
    results: dict[int, dict[str, Any]],
    warnings: list[str],
    final: dict[str, Any],
) -> RunSummary:
    done = {
        i: RunSummary.model_validate(a["summary"])
        for i, a in sorted(results.items())
        if "summary" in a
    }
    summaries = list(done.values())
    counters = Counter({k: sum(getattr(s, k) for s in summaries) for k in _COUNTED})
    secrets = _secrets(judge)
    limits = Limits(
        options.budget_usd,
        options.max_cases,
        final["spent"],
        breaker_after=1,
        endpoint=None,
        secrets=secrets,
    )
    limits.stop_reason = final["stop_reason"]
    limits.stop_detail = redact(final["stop_detail"], secrets) if final["stop_detail"] else None
    for message in warnings + [f"shard {i:03d}: {w}" for i, s in done.items() for w in s.warnings]:
        limits.warn(message)
    seen = [s.max_output_tokens_observed for s in summaries if s.max_output_tokens_observed]
    estimator = Estimator(judge, max(seen) if seen else None)
    estimator.method = next((s.estimate_method for s in summaries if s.estimate_method), None)
    tally = _Tally(counters, sum(s.resumed for s in summaries), _max_attempts(judge), estimator)
    slice_of = {i.case_id: i.slice for i in items}
    summary = summarize(manifest, judge, RunDir(out).results, tally, limits, slice_of, plan)
    if warnings and summary.status == "complete":  # a shard that failed is never a pass
        summary = summary.model_copy(update={"status": "incomplete"})
    return summary
