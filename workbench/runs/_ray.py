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
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

from filelock import FileLock, Timeout

from .._args import check_run_arguments, partition_name
from .._io import AppendOnlyLog, atomic_write_json, read_json_file
from .._redact import redact
from ..errors import Problem, WorkbenchError
from ..gold import Partition, load_dataset
from ..judges import JudgeInput, load_candidate
from ._cache import default_cache_dir
from ._engine import (
    RunSummary,
    WorkItem,
    _max_attempts,
    _read_attempts,
    _secrets,
    _summarize,
    run_items,
)
from ._limits import CallEstimate, Limits
from ._manifest import ManifestCase, RunManifest, freeze_manifest, run_lineage
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


class GlobalLimits:
    """The Ray actor behind every shard's limits: budget, case limit, breaker and token bucket.

    It wraps one :class:`~._limits.Limits` (the local engine's rules, unchanged) on the actor's
    event loop, and adds a token bucket: ``calls_per_second`` tokens a second, at most
    ``burst`` saved. A call starts only once it is admitted *and* has taken a token, so in any
    window of ``t`` seconds at most ``burst + calls_per_second * t`` calls start, over all shards.
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
    ) -> None:
        self.pricing = pricing
        self.limits = Limits(
            budget_usd, max_cases, spent, breaker_after=breaker_after, endpoint=endpoint, secrets=[]
        )
        self.rate = calls_per_second
        self.burst = float(burst)
        self.tokens = float(burst)
        self.last = time.monotonic()
        self.bucket: asyncio.Lock | None = None
        self.calls = 0
        self.max_out: int | None = observed_out
        """The largest output any call of the run has reported in this invocation, over all shards."""
        self.held: dict[int, list[float]] = {}
        """Per shard: the reservations of its calls in flight, released if its worker dies."""

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
    ) -> tuple[bool, dict[str, Any]]:
        """Admit a call as :meth:`Limits.admit` does; its expected cost priced with the run's largest output.

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
        if not await self.limits.admit(estimate, first_call):
            return False, self._state()
        self.held.setdefault(shard, []).append(reservation)
        await self._token()
        if self.limits.halted:  # stopped while this call waited for its token: it does not start
            await self.settle(shard, reservation, 0.0, False, None, None)
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
    ) -> dict[str, Any]:
        if tokens_out is not None and tokens_out > 0:
            self.max_out = tokens_out if self.max_out is None else max(self.max_out, tokens_out)
        held = self.held.get(shard, [])
        if reservation not in held:  # the shard was released (its worker died): nothing to settle
            return self._state()
        held.remove(reservation)
        await self.limits.settle(
            CallEstimate(reservation, reservation),
            cost,
            called=called,
            endpoint_failure=endpoint_failure,
            error=error,
        )
        return self._state()

    async def release(self, shard: int) -> dict[str, Any]:
        """A shard's worker died: free the reservations of its calls in flight, so others go on.

        What those calls cost is unknown (never recorded); the recorded spend is what a resume
        starts from, as after a crash of a local run.
        """
        held = self.held.pop(shard, [])
        lim = self.limits
        async with lim.cond:
            lim.reserved = max(0.0, lim.reserved - sum(held))
            lim.in_flight -= len(held)
            lim.cond.notify_all()
        return self._state()

    async def state(self) -> dict[str, Any]:
        return self._state()


class RemoteLimits(Limits):
    """A shard's limits: every decision is the :class:`GlobalLimits` actor's (same interface).

    ``lane`` is accepted for the engine's interface; shards run without sampling lanes.

    Calls report their usage to the actor, which prices every call's expected cost with the
    largest output reported by any shard (as a local run does with its own calls).
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
        )
        self._sync(state)


def _shard_items(
    dataset: Any, partition: str, case_ids: set[str], repeats: int
) -> tuple[list[Any], list[WorkItem]]:
    cases = [c for c in dataset.partition(partition) if c.case_id in case_ids]
    return cases, [
        WorkItem(c.case_id, c.response_hash, r, JudgeInput.from_case(c))
        for c in cases
        for r in range(repeats)
    ]


def run_shard(task: dict[str, Any], actor: Any) -> dict[str, Any]:
    """One shard, in a Ray worker: the engine on the shard's cases, limits from ``actor``.

    Returns ``{"summary": ...}`` or ``{"problems": [...]}`` (a :class:`WorkbenchError`).
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
            dataset, task["partition"], set(task["case_ids"]), task["repeats"]
        )
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
    concurrency: int = 8,
    repeats: int = 1,
    budget_usd: float | None = None,
    max_cases: int | None = None,
    cache_dir: str | Path | None | Literal[False] = None,
    retry_errors: bool = False,
    calls_per_second: float | None = None,
    burst: int = 1,
) -> RunSummary:
    """Run the candidate at ``candidate`` (a spec path) over ``partition`` of ``gold`` in ``shards`` Ray tasks.

    ``concurrency`` is the total: each shard runs ``ceil(concurrency / shards)`` calls at once.
    ``budget_usd``, ``max_cases`` and ``calls_per_second`` hold for all shards together.
    Held-out data is refused (certification runs locally, once).
    """
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
            cases,
            part,
            out,
            candidate_path,
            gold_path,
            shards=shards,
            concurrency=concurrency,
            repeats=repeats,
            budget_usd=budget_usd,
            max_cases=max_cases,
            cache_dir=cache_dir,
            retry_errors=retry_errors,
            calls_per_second=calls_per_second,
            burst=burst,
        )
    finally:
        lock.release()


def _drive(
    judge: Any,
    dataset: Any,
    cases: list[Any],
    part: str,
    out: Path,
    candidate_path: str,
    gold_path: str,
    *,
    shards: int,
    concurrency: int,
    repeats: int,
    budget_usd: float | None,
    max_cases: int | None,
    cache_dir: str | Path | None | Literal[False],
    retry_errors: bool,
    calls_per_second: float | None,
    burst: int,
) -> RunSummary:
    import ray

    fingerprint = judge.identity.fingerprint()
    lineage = run_lineage(judge, dataset, cases)
    manifest_cases = list(
        {
            (c.case_id, c.response_hash): ManifestCase(
                case_id=c.case_id, response_hash=c.response_hash
            )
            for c in cases
        }.values()
    )
    manifest, _ = freeze_manifest(
        out,
        judge.identity,
        fingerprint,
        dataset.sha256,
        part,
        repeats,
        manifest_cases,
        None,
        lineage,
    )
    by_shard = _freeze_plan(out, manifest, shards)
    spent = 0.0
    observed: list[int] = []
    for index in range(shards):
        path = RunDir(out).shard(index).results
        if path.exists():
            AppendOnlyLog(path).close()  # repairs a torn last line before reading
            recorded = [r for rows in _read_attempts(path).values() for r in rows]
            spent += sum(float(r.get("cost_usd") or 0.0) for r in recorded)
            observed += [
                int(r["tokens_out"])
                for r in recorded
                if r.get("tokens_out")
                and r.get("tokens_in") is not None
                and not r.get("cached_from_run_id")
            ]
    active = [i for i, ids in enumerate(by_shard) if ids]
    per_shard = max(1, math.ceil(concurrency / len(active)))
    cache: str | Literal[False] = (
        False
        if cache_dir is False
        else str(Path(cache_dir).resolve() if cache_dir else default_cache_dir())
    )
    endpoint = getattr(judge, "endpoint_url", None)
    started_ray = _connect()
    warnings: list[str] = []
    problems: list[Problem] = []
    results: dict[int, dict[str, Any]] = {}
    try:
        actor = ray.remote(num_cpus=0)(GlobalLimits).remote(
            budget_usd,
            max_cases,
            spent,
            judge.spec.endpoint.circuit_breaker_after,
            endpoint if isinstance(endpoint, str) else None,
            calls_per_second,
            max(1, burst),
            judge.spec.pricing,
            max(observed) if observed else None,
        )
        task = ray.remote(num_cpus=1, max_retries=0)(run_shard)
        refs = {
            index: task.remote(
                {
                    "index": index,
                    "dir": str(shard_dir(out, index)),
                    "candidate": candidate_path,
                    "gold": gold_path,
                    "partition": part,
                    "case_ids": by_shard[index],
                    "repeats": repeats,
                    "concurrency": per_shard,
                    "budget_usd": budget_usd,
                    "max_cases": max_cases,
                    "cache_dir": cache,
                    "retry_errors": retry_errors,
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
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                warnings.append(
                    f"shard {index:03d} did not finish ({type(exc).__name__}: {first[:200]}); its"
                    " settled cases are kept, rerun the same command to resume it"
                )
            ray.get(actor.release.remote(index))
        final = ray.get(actor.state.remote())
    finally:
        if started_ray:
            ray.shutdown()
    for _, answer in sorted(results.items()):
        for problem in answer.get("problems", []):
            problems.append(Problem.model_validate(problem))
    if problems:
        raise WorkbenchError("a shard refused to run", problems)
    merge_results(out, shards, RunDir(out).results)
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
        budget_usd, max_cases, final["spent"], breaker_after=1, endpoint=None, secrets=secrets
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
    estimator = SimpleNamespace(
        method=next((s.estimate_method for s in summaries if s.estimate_method), None),
        max_out=max(seen_out) if seen_out else None,
    )
    summary = _summarize(
        manifest,
        judge,
        RunDir(out).results,
        counters,
        resumed,
        limits,
        _max_attempts(judge),
        estimator,
        {c.case_id: c.slice for c in cases},
        {name: dataset.rubric.risk_of(name) for name in dataset.rubric.slices},
        None,
    )  # type: ignore[arg-type]
    if warnings and summary.status == "complete":
        summary = summary.model_copy(
            update={"status": "incomplete"}
        )  # a shard that failed is never a pass
    atomic_write_json(RunDir(out).summary, summary.model_dump(mode="json"))
    with AppendOnlyLog(RunDir(out).invocations) as invocations:
        invocations.append(
            {
                "finished_at": datetime.now(UTC).isoformat(),
                "executor": "ray",
                "shards": shards,
                "concurrency": concurrency,
                "calls_per_second": calls_per_second,
                "retry_errors": retry_errors,
                "cache": cache is not False,
                **summary.model_dump(mode="json", exclude={"unrun", "pending_retry"}),
            }
        )
    return summary
