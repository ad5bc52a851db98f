"""The run engine: execute a judge candidate over one partition of a gold dataset.

Every attempt is appended to ``results.jsonl`` in the judge-result contract, one line per
record, flushed and fsynced before the attempt counts as done, by a single writer thread so the
event loop never blocks on the disk; records of calls that finish together share one write and
one fsync (:mod:`._writer`, group commit). Re-running the same command resumes: a case with a
verdict, or with a final error, is not called again; a torn last line left by a crash is
repaired first.

Limits are checked before every call, retries included (:mod:`._limits`: the budget with
its stated guarantee, ``max_cases`` and the circuit breaker): when one is reached no new
call is scheduled, completed evidence is kept, and the run ends *incomplete* with every
unrun case and every case stopped mid-retry listed. Incomplete is never a pass.

One invocation at a time writes a run directory: a second one is refused at once (a lock
file, ``.run.lock``). Everything recorded from a provider is redacted (:mod:`workbench._redact`).
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from filelock import FileLock, Timeout
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_result,
    stop_after_attempt,
    wait_exponential_jitter,
)

from .._args import check_run_arguments
from .._io import AppendOnlyLog, atomic_write_json, iter_jsonl_lines, loads_json, sha256_json
from .._record import LooseRecord
from .._redact import redact, redact_values
from ..errors import Problem, WorkbenchError
from ..gold import GoldDataset, GoldLineage, Partition, partition_name
from ..heldout import HeldOutAccess
from ..judges import CaseRef, Judge, JudgeInput, NotAvailable, Verdict
from ..results import RESULT_SCHEMA_VERSION, JudgeResult
from ..sampling import Lanes, SamplingPlan
from ._cache import VerdictCache, default_cache_dir
from ._costs import SliceCost, slice_costs
from ._limits import CallEstimate, Estimator, Limits, StopReason
from ._manifest import (
    ManifestCase,
    ManifestSampling,
    ManifestUnit,
    RunManifest,
    freeze_manifest,
    run_lineage,
)
from ._options import RunOptions
from ._planned import plan_cases
from ._rundir import SHARDS_FILE, RunDir
from ._writer import RecordWriter

RUN_SUMMARY_SCHEMA_VERSION = 3


class RunSummary(LooseRecord):
    """How a run stands after an invocation. ``incomplete`` is never a pass."""

    schema_version: int = RUN_SUMMARY_SCHEMA_VERSION
    """Run summary format version. 2 added ``schema_version``, ``stop_detail``, the
    ``circuit_breaker`` stop reason, the estimate fields and ``warnings``; 3 added
    ``sampling_plan_sha256``, ``sampling_plan_source``, ``sampled_out`` and ``slice_costs``. An
    older run.json (no such fields) still reads, with those fields empty."""
    run_id: str
    status: Literal["complete", "incomplete"]
    """``complete`` when every case x repeat has a verdict or a final evaluator error."""
    stop_reason: StopReason | None
    """Why scheduling stopped early in this invocation, if it did: ``budget_exhausted``,
    ``max_cases`` or ``circuit_breaker``."""
    stop_detail: str | None = None
    """The stop in words: the figures that stopped the budget, or for the circuit breaker the
    number and kinds of consecutive endpoint failures, the endpoint URL and the last error."""
    judge: str
    judge_fingerprint: str
    partition: str
    planned: int
    """Case x repeat pairs in the manifest."""
    verdicts: int
    errors: int
    """Pairs whose last attempt is an evaluator error (final or awaiting retry)."""
    errors_by_kind: dict[str, int]
    calls: int
    """Judge calls made by this invocation (retries included, cache hits excluded)."""
    retries: int
    """Of those calls, how many were retries."""
    cache_hits: int
    """Verdicts reused from the cache by this invocation."""
    resumed: int
    """Pairs already settled by an earlier invocation and not called again."""
    cost_usd: float
    """Spend recorded in the run directory, all invocations."""
    budget_usd: float | None
    max_cases: int | None
    tokens_in: int
    tokens_out: int
    unrun: list[str]
    """``case_id#repeat`` pairs with no result at all."""
    pending_retry: list[str]
    """``case_id#repeat`` pairs stopped mid-retry: the last attempt is a retryable error with
    attempts left (rerun the same command to continue them)."""
    results_path: str
    endpoint_url: str | None = None
    """The base URL this invocation's judge called, resolved from the candidate's
    ``endpoint.base_url_env`` when set (no query string); None for judges without an endpoint.
    Not part of the fingerprint, so the local demo model may move ports between runs."""
    estimate_method: str | None = None
    """How call reservations were computed: ``tiktoken:<encoding>`` or ``rule`` (prompt
    tokens, see the README's budget section) or ``estimate_cost`` (the kind's own estimate)."""
    max_output_tokens_observed: int | None = None
    """The largest output a call reported, the expected output of later calls (never above
    the cap)."""
    warnings: list[str] = []
    """Things the run recorded but did not stop for, e.g. a call whose reported usage exceeded
    its reservation (the budget guarantee assumes it does not)."""
    sampling_plan_sha256: str | None = None
    """The declared sampling plan the cases were drawn under (also in the manifest), or None
    when every case of the partition was planned."""
    sampling_plan_source: str | None = None
    """Where the plan came from: ``policy <name@version>`` or the plan file's path."""
    sampled_out: list[str] = []
    """Case ids the declared plan left out: never planned, never judged, never a pass. They are
    not ``unrun`` (which lists planned pairs without a result)."""
    slice_costs: list[SliceCost] = []
    """Cost and tokens per judged case, per slice then ``(all)``: total, median, p95 (nearest
    rank) and max (:mod:`workbench.runs._costs`)."""


@dataclass(frozen=True)
class WorkItem:
    """One planned judge call: what the judge sees and how its result is keyed.

    ``judge_input`` is whatever the judge kind takes: a :class:`~workbench.judges.JudgeInput`
    for single-response judges, a ranking or noise input for those kinds. ``digest`` ties the
    result to the exact judged content (the gold response hash, or a candidates digest).
    """

    case_id: str
    digest: str
    repeat: int
    judge_input: Any
    presentation: dict[str, Any] | None = None
    slice: str | None = None
    """The case's slice: its lane under a sampling plan, and its row in the cost figures."""


@dataclass
class _Unit:
    item: WorkItem
    next_attempt: int
    ref: CaseRef
    admitted: bool = False

    @property
    def judge_input(self) -> Any:
        return self.item.judge_input

    @property
    def repeat(self) -> int:
        return self.item.repeat


class _wait_retry_after:
    """Exponential backoff with jitter, but never shorter than the provider's Retry-After."""

    def __init__(self, cap_s: float = 60.0) -> None:
        self.fallback = wait_exponential_jitter(initial=0.25, max=20.0)
        self.cap_s = cap_s

    def __call__(self, state: RetryCallState) -> float:
        fallback = float(self.fallback(state))
        verdict = state.outcome.result() if state.outcome and not state.outcome.failed else None
        retry_after = getattr(verdict, "retry_after_s", None)
        if retry_after is None:
            return fallback
        return float(min(self.cap_s, max(fallback, retry_after)))


_WAIT = _wait_retry_after()
"""One wait strategy for every unit (it holds no per-unit state)."""


def _row_problem(row: Any) -> str | None:
    """What makes a recorded line unusable for resuming, or None."""
    if not isinstance(row, dict):
        return "it is not a JSON object"
    if not isinstance(row.get("case_id"), str) or not row["case_id"]:
        return "case_id is missing or not a string"
    for name in ("repeat", "attempt"):
        value = row.get(name, 0 if name == "repeat" else None)
        if (
            not isinstance(value, int)
            or isinstance(value, bool)
            or value < (0 if name == "repeat" else 1)
        ):
            return f"{name} is missing or not a valid integer"
    error = row.get("error")
    if error is not None and (
        not isinstance(error, dict) or not isinstance(error.get("kind"), str)
    ):
        return "error is neither null nor an object with a kind"
    cost = row.get("cost_usd")
    if cost is not None and (
        isinstance(cost, bool)
        or not isinstance(cost, int | float)
        or not math.isfinite(cost)
        or cost < 0
    ):
        return "cost_usd is not a finite non-negative number"
    for name in ("tokens_in", "tokens_out"):
        value = row.get(name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            return f"{name} is not a non-negative integer"
    return None


def _read_attempts(path: Path) -> dict[tuple[str, int], list[dict[str, Any]]]:  # noqa: C901
    """Recorded attempts per (case_id, repeat), in attempt order.

    A line that is not a usable record (a corrupt line in the middle; a torn *last* line is
    repaired before this) is refused with its line number: resuming past it could call a
    settled case again or lose spend.
    """
    found: dict[tuple[str, int], list[dict[str, Any]]] = {}
    if not path.exists():
        return found
    problems: list[Problem] = []

    def refuse(number: int, problem: str) -> None:
        problems.append(
            Problem(
                location=f"{path}:{number}",
                code="results_corrupt",
                message=f"line {number} of the run's results cannot be resumed from: {problem}",
                fix=(
                    "restore results.jsonl from a copy, or move the run directory aside and run"
                    " into a new --out (a torn last line alone is repaired automatically)"
                ),
            )
        )

    not_utf8: list[int] = []
    for number, line in iter_jsonl_lines(path, not_utf8):  # bounded: a line too long is refused
        while not_utf8:
            refuse(not_utf8.pop(0), "it is not valid UTF-8")
        if len(problems) >= 10:
            break
        try:
            row = loads_json(
                line
            )  # strict: duplicate keys, NaN/Infinity and too-deep nesting refused
        except ValueError as exc:
            problem: str | None = f"it is not valid JSON ({str(exc)[:80]})"
        else:
            problem = _row_problem(row)
        if problem is not None:
            refuse(number, problem)
            continue
        found.setdefault((row["case_id"], row.get("repeat", 0)), []).append(row)
    for number in not_utf8:
        refuse(number, "it is not valid UTF-8")
    if problems:
        raise WorkbenchError("refusing to resume: results.jsonl has corrupt lines", problems[:10])
    for rows in found.values():
        rows.sort(key=lambda r: r["attempt"])
    return found


def _max_attempts(judge: Judge) -> int:
    return judge.spec.endpoint.max_retries + 1


def _state(
    rows: list[dict[str, Any]], max_attempts: int
) -> Literal["verdict", "final_error", "pending_retry"]:
    if any(r.get("error") is None for r in rows):
        return "verdict"
    last = rows[-1]["error"]
    if last.get("retryable") and len(rows) < max_attempts:
        return "pending_retry"
    return "final_error"


async def run_candidate(
    judge: Judge,
    dataset: GoldDataset,
    partition: str | Partition,
    out_dir: str | Path,
    *,
    concurrency: int = 8,
    repeats: int = 1,
    budget_usd: float | None = None,
    max_cases: int | None = None,
    cache_dir: str | Path | None | Literal[False] = None,
    retry_errors: bool = False,
    progress: bool = True,
    held_out_access: HeldOutAccess | None = None,
    sampling: SamplingPlan | None = None,
    sampling_source: str | None = None,
) -> RunSummary:
    """Run ``judge`` on every case of ``partition``, resumably; ``await`` it in notebooks.

    ``cache_dir``: None for the default cache, a path, or False to disable the cache.
    ``retry_errors``: give cases whose last attempt is a final error another round of attempts.
    ``held_out_access``: required for the held-out partition; only certification grants it,
    after recording the use in the held-out ledger.
    ``sampling``: a declared plan (:mod:`workbench.sampling`), checked against the rubric, the
    partition (never held-out) and the budget; only its sample is planned, reserved slices
    run first, and the plan, its sha256 and every sampled-out case id are frozen in the
    manifest before the first call. ``sampling_source`` names where the plan came from.
    """
    check_run_arguments(
        concurrency=concurrency, budget_usd=budget_usd, max_cases=max_cases, repeats=repeats
    )
    part = Partition(partition_name(partition)).value
    if part == "held_out" and (
        held_out_access is None or not held_out_access.covers(judge.identity.fingerprint())
    ):
        raise WorkbenchError(
            "held-out refused",
            [
                Problem(
                    location=str(out_dir),
                    code="held_out_refused",
                    message=(
                        "running a candidate on the held-out partition needs an open certification"
                        " in the held-out ledger"
                    ),
                    fix=(
                        "use development or calibration; held-out data is judged only by `workbench"
                        " certify`"
                    ),
                )
            ],
        )
    cases = dataset.partition(part)
    if not cases:
        raise WorkbenchError(
            "nothing to run",
            [
                Problem(
                    location=str(dataset.gold_path),
                    code="empty_partition",
                    message=f"partition {part!r} has no cases",
                    fix="choose a partition that has cases",
                )
            ],
        )
    planned = plan_cases(dataset, cases, part, budget_usd, sampling, sampling_source)
    cases, risks = planned.cases, planned.risks
    recorded_plan, lanes = planned.sampling, planned.lanes
    items = [
        WorkItem(c.case_id, c.response_hash, r, JudgeInput.from_case(c), slice=c.slice)
        for c in cases
        for r in range(repeats)
    ]
    # imported judges refuse results produced against other gold
    lineage = run_lineage(judge, dataset, cases)
    return await run_items(
        judge,
        items,
        out_dir,
        partition=part,
        dataset_sha256=dataset.sha256,
        repeats=repeats,
        grid=True,
        concurrency=concurrency,
        budget_usd=budget_usd,
        max_cases=max_cases,
        cache_dir=cache_dir,
        retry_errors=retry_errors,
        progress=progress,
        lineage=lineage,
        lanes=lanes,
        risks=risks,
        sampling=recorded_plan,
        sampling_source=sampling_source,
    )


async def run_items(
    judge: Judge,
    items: list[WorkItem],
    out_dir: str | Path,
    *,
    partition: str,
    dataset_sha256: str,
    repeats: int = 1,
    grid: bool = False,
    concurrency: int = 8,
    budget_usd: float | None = None,
    max_cases: int | None = None,
    cache_dir: str | Path | None | Literal[False] = None,
    retry_errors: bool = False,
    progress: bool = True,
    lineage: GoldLineage | None = None,
    lanes: Lanes | None = None,
    risks: Mapping[str, str | None] | None = None,
    sampling: ManifestSampling | None = None,
    sampling_source: str | None = None,
    limits_factory: Callable[..., Limits] | None = None,
) -> RunSummary:
    """The engine for any planned work items (controls, ranking batteries, noise pairs ...).

    ``partition`` is a label recorded in the manifest and every result; ``held_out`` is
    refused here: held-out gold runs only through :func:`run_candidate` with access.
    ``grid`` says the items are every case x every repeat (the manifest then stores the
    cases only). ``lanes`` (:func:`workbench.sampling.plan_lanes`): items are reordered
    reserved lanes first (stable) and admitted by :class:`~._limits.Limits`'s lane rules;
    ``risks`` (slice -> risk) orders the lanes and the cost figures; ``sampling`` is the plan
    record frozen in the manifest (production traffic can be sampled this way: draw with
    :func:`workbench.sampling.draw_sample`, give the items their slices).
    ``limits_factory`` replaces :class:`~._limits.Limits` (same arguments), e.g.
    with limits held by a Ray actor for every shard of a sharded run (:mod:`._ray`).
    """
    check_run_arguments(
        concurrency=concurrency, budget_usd=budget_usd, max_cases=max_cases, repeats=repeats
    )
    out = Path(out_dir)
    _prepare_run_dir(
        items, out_dir, partition=partition, grid=grid, sampling=sampling, budget_usd=budget_usd
    )
    if lanes is not None:
        order = risks or {}
        items = sorted(items, key=lambda i: lanes.order_key(i.slice, order))
    options = RunOptions(
        concurrency=concurrency,
        budget_usd=budget_usd,
        max_cases=max_cases,
        repeats=repeats,
        cache_dir=cache_dir,
        retry_errors=retry_errors,
        progress=progress,
    )
    with _run_lock(out):
        return await _run_locked(
            judge,
            items,
            out,
            partition=partition,
            dataset_sha256=dataset_sha256,
            repeats=repeats,
            grid=grid,
            options=options,
            lineage=lineage,
            lanes=lanes,
            risks=risks,
            sampling=sampling,
            sampling_source=sampling_source,
            limits_factory=limits_factory,
        )


def _prepare_run_dir(
    items: list[WorkItem],
    out_dir: str | Path,
    *,
    partition: str,
    grid: bool,
    sampling: ManifestSampling | None,
    budget_usd: float | None,
) -> None:
    """Refuse what cannot run (held-out outside certification, a sharded directory, no items, a bad
    budget); create the directory."""
    if partition == "held_out" and not grid:
        raise WorkbenchError(
            "held-out refused",
            [
                Problem(
                    location=str(out_dir),
                    code="held_out_refused",
                    message="held-out gold is judged only through certification",
                    fix="use development or calibration",
                )
            ],
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if RunDir(out).shards_file.exists():
        raise WorkbenchError(
            "sharded run directory",
            [
                Problem(
                    location=str(out),
                    code="executor_mismatch",
                    message=(
                        f"this run directory holds a sharded run ({SHARDS_FILE}); its results live"
                        " in its shard directories"
                    ),
                    fix=(
                        "resume it with the same command and --executor ray --shards N, or give"
                        " this run its own --out directory"
                    ),
                )
            ],
        )
    if not items:
        raise WorkbenchError(
            "nothing to run",
            [
                Problem(
                    location=str(out),
                    code="empty_plan",
                    message="there is nothing to judge",
                    fix="give at least one case",
                )
            ],
        )
    if sampling is not None and partition == "held_out":
        raise WorkbenchError(
            "held-out refused",
            [
                Problem(
                    location=str(out_dir),
                    code="sampling_held_out",
                    message=(
                        "a sampling plan cannot be applied to the held-out partition: certification"
                        " judges every held-out case"
                    ),
                    fix="run held-out data only through `workbench certify`, without a plan",
                )
            ],
        )
    if budget_usd is not None and (budget_usd < 0 or not math.isfinite(budget_usd)):
        raise WorkbenchError(
            "invalid budget",
            [
                Problem(
                    location="--budget-usd",
                    code="invalid_budget",
                    message="the budget is negative or not finite",
                    fix="give a budget of 0 or more",
                )
            ],
        )


@contextmanager
def _run_lock(out: Path) -> Iterator[None]:
    """Hold ``.run.lock``: one invocation at a time writes a run directory; a second is refused at
    once."""
    run_lock = FileLock(RunDir(out).lock)
    try:
        run_lock.acquire(timeout=0)
    except Timeout:
        raise WorkbenchError(
            "run directory busy",
            [
                Problem(
                    location=str(out),
                    code="run_locked",
                    message="another workbench run is writing to this run directory right now",
                    fix=(
                        "wait for it to finish (then rerun to resume), or give this run its own"
                        " --out directory"
                    ),
                )
            ],
        ) from None
    except OSError as exc:
        raise WorkbenchError(
            "run directory not writable",
            [
                Problem(
                    location=str(RunDir(out).lock),
                    code="run_unwritable",
                    message=f"cannot lock the run directory ({exc.strerror or type(exc).__name__})",
                    fix=(
                        "give a writable --out directory (a locked report's run records are"
                        " read-only)"
                    ),
                )
            ],
        ) from None
    try:
        yield
    finally:
        run_lock.release()


def _secrets(judge: Judge) -> list[str]:
    """Values to redact from everything this judge's run records."""
    found = list(judge.secrets()) if hasattr(judge, "secrets") else []
    env = getattr(getattr(judge.spec, "endpoint", None), "api_key_env", None)
    if env and os.environ.get(env):
        found.append(os.environ[env])
    return found


async def _run_locked(
    judge: Judge,
    items: list[WorkItem],
    out: Path,
    *,
    partition: str,
    dataset_sha256: str,
    repeats: int,
    grid: bool,
    options: RunOptions,
    lineage: GoldLineage | None,
    lanes: Lanes | None,
    risks: Mapping[str, str | None] | None,
    sampling: ManifestSampling | None,
    sampling_source: str | None,
    limits_factory: Callable[..., Limits] | None = None,
) -> RunSummary:
    """Freeze the manifest, read what is recorded, run what is left and write the summary."""
    fingerprint = judge.identity.fingerprint()
    manifest_cases = list(
        {
            (i.case_id, i.digest): ManifestCase(case_id=i.case_id, response_hash=i.digest)
            for i in items
        }.values()
    )
    units_plan = (
        None
        if grid
        else [
            ManifestUnit(case_id=i.case_id, repeat=i.repeat, presentation=i.presentation)
            for i in items
        ]
    )
    manifest, _ = freeze_manifest(
        out,
        judge.identity,
        fingerprint,
        dataset_sha256,
        partition,
        repeats if grid else max(i.repeat for i in items) + 1,
        manifest_cases,
        units_plan,
        lineage,
        sampling,
    )
    run_dir = RunDir(out)
    AppendOnlyLog(run_dir.results).close()  # repairs a torn last line before reading
    recorded = _read_attempts(run_dir.results)
    max_attempts = _max_attempts(judge)
    units, resumed = _plan_units(items, recorded, max_attempts, options.retry_errors)
    slice_of = {i.case_id: i.slice for i in items}
    limits = _limits(judge, recorded, units, slice_of, lanes, options, limits_factory)
    run = _Execution(
        judge,
        manifest,
        partition,
        run_dir,
        limits,
        options,
        max_attempts,
        len(items),
        resumed,
        recorded,
    )
    await run.execute(units)
    summary = _summarize(
        manifest,
        judge,
        run_dir.results,
        run.counters,
        resumed,
        limits,
        max_attempts,
        run.estimator,
        slice_of,
        risks or {},
        sampling_source,
    )
    atomic_write_json(run_dir.summary, summary.model_dump(mode="json"))
    with AppendOnlyLog(run_dir.invocations) as invocations:
        invocations.append(
            {
                "finished_at": datetime.now(UTC).isoformat(),
                "concurrency": options.concurrency,
                "retry_errors": options.retry_errors,
                "cache": run.cache is not None,
                **summary.model_dump(mode="json", exclude={"unrun", "pending_retry"}),
            }
        )
    return summary


def _plan_units(
    items: list[WorkItem],
    recorded: Mapping[tuple[str, int], list[dict[str, Any]]],
    max_attempts: int,
    retry_errors: bool,
) -> tuple[list[_Unit], int]:
    """The items still to judge (each with its next attempt number) and how many are settled
    already."""
    units: list[_Unit] = []
    resumed = 0
    for item in items:
        rows = recorded.get((item.case_id, item.repeat), [])
        state = _state(rows, max_attempts) if rows else None
        if state == "verdict" or (state == "final_error" and not retry_errors):
            resumed += 1
            continue
        next_attempt = rows[-1]["attempt"] + 1 if rows else 1
        units.append(
            _Unit(
                item,
                next_attempt,
                CaseRef(item.case_id, item.digest, item.repeat, item.presentation),
            )
        )
    return units, resumed


def _limits(
    judge: Judge,
    recorded: Mapping[tuple[str, int], list[dict[str, Any]]],
    units: list[_Unit],
    slice_of: Mapping[str, str | None],
    lanes: Lanes | None,
    options: RunOptions,
    limits_factory: Callable[..., Limits] | None,
) -> Limits:
    """The run's limits, starting from the spend already recorded (per lane under a sampling
    plan)."""
    spent = sum(float(r.get("cost_usd") or 0.0) for rows in recorded.values() for r in rows)
    lane_kw: dict[str, Any] = {}
    if lanes is not None:
        lane_spent: dict[str, float] = {}
        for (case_id, _repeat), rows in recorded.items():
            lane = slice_of.get(case_id)
            if lane is not None:
                lane_spent[lane] = lane_spent.get(lane, 0.0) + sum(
                    float(r.get("cost_usd") or 0.0) for r in rows
                )
        lane_kw = {
            "priority": dict(lanes.priority),
            "holds": dict(lanes.holds),
            "lane_units": Counter(u.item.slice or "" for u in units),
            "lane_spent": lane_spent,
        }
    endpoint = getattr(judge, "endpoint_url", None)
    return (limits_factory or Limits)(
        options.budget_usd,
        options.max_cases,
        spent,
        breaker_after=judge.spec.endpoint.circuit_breaker_after,
        endpoint=endpoint if isinstance(endpoint, str) else None,
        secrets=_secrets(judge),
        **lane_kw,
    )


class _Execution:
    """One invocation's judging: workers take units, settle each from the cache or by calls, record
    every attempt."""

    def __init__(
        self,
        judge: Judge,
        manifest: RunManifest,
        partition: str,
        run_dir: RunDir,
        limits: Limits,
        options: RunOptions,
        max_attempts: int,
        total: int,
        resumed: int,
        recorded: Mapping[tuple[str, int], list[dict[str, Any]]],
    ) -> None:
        self.judge, self.manifest, self.partition, self.limits, self.options, self.max_attempts = (
            judge,
            manifest,
            partition,
            limits,
            options,
            max_attempts,
        )
        self.fingerprint = judge.identity.fingerprint()
        self.secrets = _secrets(judge)
        observed = [
            int(r["tokens_out"])
            for rows in recorded.values()
            for r in rows
            if r.get("tokens_out")
            and r.get("tokens_in") is not None
            and not r.get("cached_from_run_id")
        ]
        self.estimator = Estimator(judge, max(observed) if observed else None)
        cache_dir = options.cache_dir
        self.cache = (
            VerdictCache(Path(cache_dir) if cache_dir else default_cache_dir(), self.fingerprint)
            if cache_dir is not False
            else None
        )
        self.log = AppendOnlyLog(run_dir.results)
        self.writer = RecordWriter(self.log, self.cache, asyncio.get_running_loop())
        if hasattr(judge, "prepare"):
            judge.prepare(options.concurrency)
        self.counters: Counter[str] = Counter()
        self.bar = _progress(total, resumed, judge.spec.label, options.progress)

    async def execute(self, units: list[_Unit]) -> None:
        """Settle every unit with ``concurrency`` workers, then close the judge, log, cache and
        bar."""
        queue: asyncio.Queue[_Unit] = asyncio.Queue()
        for unit in units:
            queue.put_nowait(unit)
        try:
            await asyncio.gather(
                *(
                    self.worker(queue)
                    for _ in range(max(1, min(self.options.concurrency or 1, len(units) or 1)))
                )
            )
        finally:
            if hasattr(self.judge, "aclose"):
                await self.judge.aclose()
            self.writer.close()
            self.log.close()
            if self.cache is not None:
                self.cache.close()
            if self.bar is not None:
                self.bar.close()

    async def worker(self, queue: asyncio.Queue[_Unit]) -> None:
        while True:
            try:
                unit = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            tracked = self.limits.tracks_units  # else unit_done does nothing: no task for it
            if self.limits.stop_reason is None:
                try:
                    await self.settle_unit(unit)
                finally:
                    if tracked:
                        await asyncio.shield(
                            self.limits.unit_done(unit.item.slice, started=unit.admitted)
                        )
            elif tracked:  # drain: nothing new is scheduled after a limit is reached
                await self.limits.unit_done(unit.item.slice, started=False)

    async def append(self, result: JudgeResult, request_key: str | None) -> None:
        """Record one attempt (and cache a verdict): returns once it is durable (:mod:`._writer`,
        group commit with the records of calls that finish together)."""
        await self.writer.append(result, request_key)

    async def settle_unit(self, unit: _Unit) -> None:
        """A unit's verdict from the cache, else from its attempts (retried while retryable and not
        halted)."""
        # The request key only addresses the cache: without one it is not computed.
        request_key = (
            sha256_json(self.judge.render(unit.judge_input, unit.ref))
            if self.cache is not None
            else None
        )
        cached = (
            self.cache.get(request_key, unit.repeat)
            if self.cache is not None and request_key is not None
            else None
        )
        if cached is not None:
            await self.append(self.reused(unit, cached), None)
            self.counters["cache_hits"] += 1
            _tick(self.bar, self.counters, self.limits)
            return
        verdict = await self.attempts(unit, request_key)
        if verdict is not None and verdict.error is not None:
            self.counters["errors"] += 1
        if verdict is not None:
            _tick(self.bar, self.counters, self.limits)

    def reused(self, unit: _Unit, cached: JudgeResult) -> JudgeResult:
        """A cached verdict recorded as this run's attempt, at no cost."""
        manifest = self.manifest
        reused = cached.model_copy(
            update={
                "case_id": unit.item.case_id,
                "response_hash": unit.item.digest,
                "presentation": unit.item.presentation,
                "run_id": manifest.run_id,
                "partition": self.partition,
                "started_at": datetime.now(UTC),
                "latency_s": 0.0,
                "tokens_in": None,
                "tokens_out": None,
                "cost_usd": 0.0,
                "attempt": unit.next_attempt,
                "cached_from_run_id": cached.cached_from_run_id or cached.run_id,
                "schema_version": RESULT_SCHEMA_VERSION,
                "migration": None,
                "dataset_sha256": (
                    manifest.dataset_sha256 if manifest.rubric_version is not None else None
                ),
                "rubric_version": manifest.rubric_version,
            }
        )
        return JudgeResult.model_validate(reused.model_dump())

    async def attempts(self, unit: _Unit, request_key: str | None) -> Verdict | None:
        """Call the judge for ``unit`` until a verdict, a final error, the unit's attempts run out
        or a limit halts."""
        max_attempts, next_attempt = self.max_attempts, unit.next_attempt
        attempts_left = (
            max_attempts
            if self.options.retry_errors or next_attempt == 1
            else max(1, max_attempts - next_attempt + 1)
        )
        verdict: Verdict | None = None
        limits = self.limits

        def retryable(v: Verdict | None) -> bool:
            return v is not None and v.error is not None and v.retryable and not limits.halted

        retrying = AsyncRetrying(
            stop=stop_after_attempt(attempts_left),
            wait=_WAIT,
            retry=retry_if_result(retryable),
            retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
        )
        async for attempt in retrying:
            with attempt:
                n = attempt.retry_state.attempt_number
                verdict = await self.one_attempt(
                    unit, next_attempt + n - 1, first=(n == 1), request_key=request_key
                )
            if attempt.retry_state.outcome is not None and not attempt.retry_state.outcome.failed:
                attempt.retry_state.set_result(verdict)
        return verdict

    async def one_attempt(
        self, unit: _Unit, attempt: int, first: bool, request_key: str | None
    ) -> Verdict | None:
        """One admitted call: its cost settled with the limits and the attempt recorded (None when
        not admitted)."""
        judge, limits = self.judge, self.limits
        estimate: CallEstimate = self.estimator.estimate(unit.judge_input)
        lane = unit.item.slice
        if not await limits.admit(estimate, first, lane):
            return None
        unit.admitted = True
        started = datetime.now(UTC)
        t0 = time.perf_counter()
        try:
            verdict = await judge.evaluate(unit.judge_input, unit.ref)
        except NotAvailable:
            await limits.settle(estimate, 0.0, called=False, lane=lane)
            return None
        except BaseException:
            await asyncio.shield(limits.settle(estimate, 0.0, called=False, lane=lane))
            raise
        latency = time.perf_counter() - t0
        cost = self.checked_cost(unit, attempt, verdict, estimate)
        await limits.settle(
            estimate,
            cost,
            called=True,
            endpoint_failure=verdict.endpoint_failure if verdict.error is not None else None,
            error=verdict.error.message if verdict.error is not None else None,
            lane=lane,
        )
        sent = (
            verdict.rendered_request
            if verdict.rendered_request is not None
            else judge.render(unit.judge_input, unit.ref)
        )
        await self.append(
            self.make_result(unit, attempt, verdict, started, latency, sent, cost),
            request_key if verdict.error is None else None,
        )
        self.counters["calls"] += 1
        if not first:
            self.counters["retries"] += 1
        return verdict

    def checked_cost(
        self, unit: _Unit, attempt: int, verdict: Verdict, estimate: CallEstimate
    ) -> float:
        """The call's cost (the reservation when the judge reports an invalid one); usage beyond the
        reservation is warned about."""
        limits = self.limits
        cost = (
            verdict.cost_usd
            if verdict.cost_usd is not None
            else self.judge.spec.pricing.cost(verdict.tokens_in, verdict.tokens_out)
        )
        if not math.isfinite(cost) or cost < 0:
            limits.warn(
                f"{unit.item.case_id}#{unit.repeat} attempt {attempt}: the judge reported a cost of"
                f" {cost!r}; recorded as the call's reservation"
            )
            cost = estimate.reservation
        self.estimator.observe(verdict.tokens_in, verdict.tokens_out)
        limits.observe(verdict.tokens_in, verdict.tokens_out)
        if cost > estimate.reservation + 1e-12:
            limits.warn(
                f"{unit.item.case_id}#{unit.repeat} attempt {attempt}: reported usage"
                f" ({verdict.tokens_in} input, {verdict.tokens_out} output tokens, ${cost:.6f})"
                f" exceeds the call's reservation (${estimate.reservation:.6f}:"
                f" {estimate.tokens_in} input, {estimate.tokens_out_cap} output tokens); the budget"
                " guarantee assumes it does not"
            )
        return cost

    def make_result(
        self,
        unit: _Unit,
        attempt: int,
        verdict: Verdict,
        started: datetime,
        latency: float,
        sent: Any,
        cost: float,
    ) -> JudgeResult:
        """The judge-result record of one call, redacted."""
        secrets, manifest = self.secrets, self.manifest
        error = verdict.error
        if error is not None:
            error = error.model_copy(update={"message": redact(error.message, secrets)})
        sent = redact_values(sent, secrets)
        return JudgeResult(
            case_id=unit.item.case_id,
            response_hash=unit.item.digest,
            value=verdict.value,
            reason=redact(verdict.reason, secrets) if verdict.reason is not None else None,
            score=verdict.score,
            order=(
                [redact(x, secrets) for x in verdict.order] if verdict.order is not None else None
            ),
            judge=self.judge.identity,
            judge_fingerprint=self.fingerprint,
            run_id=manifest.run_id,
            partition=self.partition,
            started_at=started,
            latency_s=verdict.latency_s if verdict.latency_s is not None else latency,
            tokens_in=verdict.tokens_in,
            tokens_out=verdict.tokens_out,
            cost_usd=cost,
            error=error,
            attempt=attempt,
            repeat=unit.repeat,
            rendered_request_sha256=sha256_json(sent),
            rendered_request=sent,
            presentation=unit.item.presentation,
            dataset_sha256=manifest.dataset_sha256 if manifest.rubric_version is not None else None,
            rubric_version=manifest.rubric_version,
        )


def _summarize(
    manifest: RunManifest,
    judge: Judge,
    results_path: Path,
    counters: Counter[str],
    resumed: int,
    limits: Limits,
    max_attempts: int,
    estimator: Estimator,
    slice_of: Mapping[str, str | None],
    risks: Mapping[str, str | None],
    sampling_source: str | None,
) -> RunSummary:
    recorded = _read_attempts(results_path)
    kinds: Counter[str] = Counter()
    verdicts = 0
    unrun: list[str] = []
    pending: list[str] = []
    planned = manifest.planned()
    for case_id, repeat in planned:
        rows = recorded.get((case_id, repeat))
        if not rows:
            unrun.append(f"{case_id}#{repeat}")
            continue
        state = _state(rows, max_attempts)
        if state == "verdict":
            verdicts += 1
            continue
        kinds[rows[-1]["error"]["kind"]] += 1
        if state == "pending_retry":
            pending.append(f"{case_id}#{repeat}")
    rows_all = [r for rows in recorded.values() for r in rows]
    return RunSummary(
        run_id=manifest.run_id,
        status="incomplete" if unrun or pending or limits.stop_reason else "complete",
        stop_reason=limits.stop_reason,
        stop_detail=limits.stop_detail,
        judge=judge.spec.label,
        judge_fingerprint=manifest.judge_fingerprint,
        partition=manifest.partition,
        planned=len(planned),
        verdicts=verdicts,
        errors=sum(kinds.values()),
        errors_by_kind=dict(sorted(kinds.items())),
        calls=counters["calls"],
        retries=counters["retries"],
        cache_hits=counters["cache_hits"],
        resumed=resumed,
        cost_usd=round(sum(float(r.get("cost_usd") or 0.0) for r in rows_all), 10),
        budget_usd=limits.budget_usd,
        max_cases=limits.max_cases,
        tokens_in=sum(int(r.get("tokens_in") or 0) for r in rows_all),
        tokens_out=sum(int(r.get("tokens_out") or 0) for r in rows_all),
        unrun=unrun,
        endpoint_url=getattr(judge, "endpoint_url", None),
        pending_retry=pending,
        results_path=str(results_path),
        estimate_method=estimator.method,
        max_output_tokens_observed=estimator.max_out,
        warnings=limits.summary_warnings(),
        sampling_plan_sha256=manifest.sampling.plan_sha256 if manifest.sampling else None,
        sampling_plan_source=sampling_source if manifest.sampling else None,
        sampled_out=list(manifest.sampling.sampled_out) if manifest.sampling else [],
        slice_costs=slice_costs(rows_all, slice_of, risks),
    )


def _progress(total: int, initial: int, label: str, enabled: bool) -> Any:
    """A tqdm bar on a terminal or in a notebook; one line per 10% when output is not a terminal."""
    if not enabled:
        return None
    from ._progress import progress_bar

    return progress_bar(total=total, initial=initial, label=label)


def _tick(bar: Any, counters: Counter[str], limits: Limits) -> None:
    if bar is None:
        return
    bar.update(1)
    bar.set_postfix(
        errors=counters["errors"],
        spend=f"${limits.spent:.4f}",
        cached=counters["cache_hits"],
        refresh=False,
    )


def run_candidate_sync(*args: Any, **kwargs: Any) -> RunSummary:
    """:func:`run_candidate` for scripts and the CLI (not inside a running event loop)."""
    return asyncio.run(run_candidate(*args, **kwargs))
