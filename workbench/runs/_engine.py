"""The run engine: execute a judge candidate over one partition of a gold dataset.

Every attempt is appended to ``results.jsonl`` (fsynced, by one writer thread: :mod:`._writer`).
Re-running resumes: a case with a verdict or a final error is not called again. Limits
(:mod:`._limits`) stop scheduling and leave the run *incomplete*, never a pass. One invocation
at a time writes a run directory (``.run.lock``). Provider output is redacted.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from filelock import FileLock, Timeout

from .._io import (
    AppendOnlyLog,
    atomic_write_json,
    canonical_json,
    iter_jsonl_lines,
    loads_json,
    sha256_json,
    sha256_text,
)
from .._record import LooseRecord
from .._redact import redact, redact_values
from ..errors import Problem, WorkbenchError, problem
from ..gold import GoldCase, GoldDataset, GoldLineage, Partition, partition_name
from ..heldout import HeldOutAccess, describe_leaks, prompt_leaks
from ..judges import (
    EVIDENCE_ARGUMENTS,
    JUDGE_VISIBLE_FIELDS,
    CaseRef,
    HoldsResources,
    Judge,
    JudgeInput,
    ModelJudge,
    NotAvailable,
    PromptedJudge,
    ReplayJudge,
    Verdict,
    evidence_seen,
    self_preference,
)
from ..results import (
    RESULT_SCHEMA_VERSION,
    JudgeResult,
    ManifestCase,
    ManifestSampling,
    ManifestUnit,
    RunManifest,
    SliceCost,
    slice_costs,
)
from ..sampling import Lanes, SampleCase, SamplingPlan, check_plan, draw_sample, plan_lanes
from ._cache import open_cache
from ._limits import CallEstimate, Estimator, Limits, StopReason
from ._manifest import freeze_manifest
from ._manifest import run_lineage as run_lineage
from ._options import DEFAULT_OPTIONS, RunOptions, refusal
from ._progress import progress_bar
from ._rundir import SHARDS_FILE, RunDir
from ._writer import RecordWriter

RUN_SUMMARY_SCHEMA_VERSION = 3


class RunSummary(LooseRecord):
    """How a run stands after an invocation. ``incomplete`` is never a pass."""

    schema_version: int = RUN_SUMMARY_SCHEMA_VERSION
    """An older run.json (without the later fields) still reads, with those fields empty."""
    run_id: str
    status: Literal["complete", "incomplete"]
    """``complete`` when every case x repeat has a verdict or a final evaluator error."""
    stop_reason: StopReason | None
    """Why scheduling stopped early in this invocation, if it did."""
    stop_detail: str | None = None
    """The stop in words, with its figures and fix (never the key)."""
    judge: str
    judge_fingerprint: str
    partition: str
    planned: int
    """Case x repeat pairs in the manifest."""
    verdicts: int
    errors: int
    """Pairs whose last attempt is an evaluator error."""
    errors_by_kind: dict[str, int]
    calls: int
    """Judge calls made by this invocation (retries included, cache hits excluded)."""
    retries: int
    cache_hits: int
    resumed: int
    """Pairs settled by an earlier invocation."""
    cost_usd: float
    """Spend recorded in the run directory, all invocations."""
    budget_usd: float | None
    max_cases: int | None
    tokens_in: int
    tokens_out: int
    unrun: list[str]
    """``case_id#repeat`` pairs with no result at all."""
    pending_retry: list[str]
    """``case_id#repeat`` pairs stopped mid-retry (rerun the same command to continue them)."""
    results_path: str
    endpoint_url: str | None = None
    """The base URL this invocation's judge called (no query string; not fingerprinted)."""
    estimate_method: str | None = None
    """How reservations were computed: ``tiktoken:<encoding>``, ``rule`` or ``estimate_cost``."""
    max_output_tokens_observed: int | None = None
    warnings: list[str] = []
    """Things the run recorded but did not stop for (e.g. usage above a reservation)."""
    sampling_plan_sha256: str | None = None
    """The declared sampling plan's sha256, None when every case was planned."""
    sampling_plan_source: str | None = None
    sampled_out: list[str] = []
    """Case ids the plan left out: never judged, never a pass (not ``unrun``)."""
    slice_costs: list[SliceCost] = []
    """Cost and tokens per judged case, per slice then ``(all)``."""


@dataclass(frozen=True)
class WorkItem:
    """One planned judge call. ``judge_input`` is whatever the judge kind takes; ``digest`` ties
    the result to the judged content; ``slice`` is its lane and cost row."""

    case_id: str
    digest: str
    repeat: int
    judge_input: Any
    presentation: dict[str, Any] | None = None
    slice: str | None = None


@dataclass
class _Unit:
    item: WorkItem
    next_attempt: int
    ref: CaseRef
    admitted: bool = False


def backoff_s(retry: int, retry_after_s: float | None) -> float:
    """Seconds before retry ``retry`` (1, 2, ...): 0.25 s doubling plus up to 1 s of jitter, at
    most 20 s; never shorter than Retry-After (capped at 60 s)."""
    wait: float = min(20.0, 0.25 * 2.0 ** (retry - 1) + random.uniform(0.0, 1.0))
    return wait if retry_after_s is None else min(60.0, max(wait, retry_after_s))


def _row_problem(row: Any) -> str | None:
    """What makes a recorded line unusable for resuming, or None."""
    if not isinstance(row, dict):
        return "it is not a JSON object"
    if not isinstance(row.get("case_id"), str) or not row["case_id"]:
        return "case_id is missing or not a string"
    for name, least in (("repeat", 0), ("attempt", 1)):
        if not _whole(row.get(name, 0 if name == "repeat" else None), least):
            return f"{name} is missing or not a valid integer"
    error = row.get("error")
    if error is not None and not (isinstance(error, dict) and isinstance(error.get("kind"), str)):
        return "error is neither null nor an object with a kind"
    cost = row.get("cost_usd")
    finite = isinstance(cost, float) and math.isfinite(cost) and cost >= 0
    if cost is not None and not (_whole(cost) or finite):
        return "cost_usd is not a finite non-negative number"
    for name in ("tokens_in", "tokens_out"):
        if row.get(name) is not None and not _whole(row[name]):
            return f"{name} is not a non-negative integer"
    return None


def _whole(value: Any, least: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _read_attempts(path: Path) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """Recorded attempts per (case_id, repeat), in attempt order; a corrupt line is refused."""
    found: dict[tuple[str, int], list[dict[str, Any]]] = {}
    if not path.exists():
        return found
    problems: list[Problem] = []
    not_utf8: list[int] = []
    for number, line in iter_jsonl_lines(path, not_utf8):  # bounded: a line too long is refused
        problems += [_corrupt(path, n, "it is not valid UTF-8") for n in not_utf8]
        not_utf8.clear()
        if len(problems) >= 10:
            break
        try:  # strict: duplicate keys, NaN/Infinity and too-deep nesting refused
            row = loads_json(line)
        except ValueError as exc:
            problem: str | None = f"it is not valid JSON ({str(exc)[:80]})"
        else:
            problem = _row_problem(row)
        if problem is not None:
            problems.append(_corrupt(path, number, problem))
            continue
        found.setdefault((row["case_id"], row.get("repeat", 0)), []).append(row)
    problems += [_corrupt(path, n, "it is not valid UTF-8") for n in not_utf8]
    if problems:
        raise WorkbenchError("refusing to resume: results.jsonl has corrupt lines", problems[:10])
    for rows in found.values():
        rows.sort(key=lambda r: r["attempt"])
    return found


def _corrupt(path: Path, number: int, why: str) -> Problem:
    return problem(
        f"{path}:{number}",
        "results_corrupt",
        f"line {number} of the run's results cannot be resumed from: {why}",
        "restore results.jsonl from a copy, or move the run directory aside and run into a"
        " new --out (a torn last line alone is repaired automatically)",
    )


def read_recorded(path: Path) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """The attempts recorded in a results file, after repairing a torn last line."""
    if path.exists():
        AppendOnlyLog(path).close()
    return _read_attempts(path)


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


def _settled(rows: list[dict[str, Any]], max_attempts: int, retry_errors: bool) -> bool:
    """Whether a (case, repeat) with these recorded attempts is not run again."""
    state = _state(rows, max_attempts) if rows else None
    return state == "verdict" or (state == "final_error" and not retry_errors)


def _cost(rows: list[dict[str, Any]]) -> float:
    return sum(float(r.get("cost_usd") or 0.0) for r in rows)


def _observed_outputs(rows: list[dict[str, Any]]) -> list[int]:
    called = [r for r in rows if r.get("tokens_in") is not None and not r.get("cached_from_run_id")]
    return [int(r["tokens_out"]) for r in called if r.get("tokens_out")]


@dataclass
class Recorded:
    """What a run's results hold before an invocation, and what it still runs."""

    units: list[_Unit] = field(default_factory=list)
    resumed: int = 0
    spent: float = 0.0
    lane_spent: dict[str, float] = field(default_factory=dict)
    observed: list[int] = field(default_factory=list)
    """Output tokens reported by recorded calls that reached the model."""

    def add(
        self,
        items: list[WorkItem],
        recorded: Mapping[tuple[str, int], list[dict[str, Any]]],
        max_attempts: int,
        retry_errors: bool,
    ) -> Recorded:
        """Take in one results file's attempts and the items planned from it."""
        slice_of = {i.case_id: i.slice for i in items}
        for (case_id, _), rows in recorded.items():
            self.spent += _cost(rows)
            lane = slice_of.get(case_id)
            if lane is not None:
                self.lane_spent[lane] = self.lane_spent.get(lane, 0.0) + _cost(rows)
            self.observed += _observed_outputs(rows)
        for item in items:
            rows = recorded.get((item.case_id, item.repeat), [])
            if _settled(rows, max_attempts, retry_errors):
                self.resumed += 1
                continue
            ref = CaseRef(item.case_id, item.digest, item.repeat, item.presentation)
            self.units.append(_Unit(item, rows[-1]["attempt"] + 1 if rows else 1, ref))
        return self


async def run_candidate(
    judge: Judge,
    dataset: GoldDataset,
    partition: str | Partition,
    out_dir: str | Path,
    options: RunOptions = DEFAULT_OPTIONS,
    *,
    held_out_access: HeldOutAccess | None = None,
    sampling: SamplingPlan | None = None,
    sampling_source: str | None = None,
) -> RunSummary:
    """Run ``judge`` on every case of ``partition``, resumably; ``await`` it in notebooks.

    ``held_out_access`` is required for the held-out partition (only certification grants it).
    ``sampling``: a declared plan (:mod:`workbench.sampling`); only its sample is planned and the
    plan is frozen in the manifest. ``sampling_source`` names where it came from.
    """
    options = _local(options)
    plan, items = plan_partition(
        judge, dataset, partition, out_dir, options, held_out_access, sampling, sampling_source
    )
    return await run_plan(judge, items, out_dir, options, plan)


def slice_risks(dataset: GoldDataset) -> dict[str, str | None]:
    """slice -> risk, from the gold's rubric (orders lanes and cost figures)."""
    return {name: dataset.rubric.risk_of(name) for name in dataset.rubric.slices}


def plan_partition(
    judge: Judge,
    dataset: GoldDataset,
    partition: str | Partition,
    out_dir: str | Path,
    options: RunOptions,
    held_out_access: HeldOutAccess | None,
    sampling: SamplingPlan | None,
    sampling_source: str | None,
) -> tuple[_Plan, list[WorkItem]]:
    """What a run of ``judge`` on ``partition`` plans, and its work items (every repeat): every
    case of the partition, or the plan's sample with reserved lanes first (stable)."""
    part = Partition(partition_name(partition)).value
    if part == "held_out" and (
        held_out_access is None or not held_out_access.covers(judge.identity.fingerprint())
    ):
        raise refusal(
            "held_out_refused",
            str(out_dir),
            "running a candidate on the held-out partition needs an open certification in the"
            " held-out ledger",
            "use development or calibration; held-out data is judged only by `workbench certify`",
            summary="held-out refused",
        )
    cases = dataset.partition(part)
    if not cases:
        message = f"partition {part!r} has no cases"
        fix = "choose a partition that has cases"
        raise refusal(
            "empty_partition", str(dataset.gold_path), message, fix, summary="nothing to run"
        )
    check_shown(judge, cases, str(dataset.gold_path))
    risks = slice_risks(dataset)
    record, lanes = None, None
    if sampling is not None:
        location = sampling_source or "sampling plan"
        budget = options.budget_usd
        check_plan(sampling, risks, location=location, scope=part, budget_usd=budget)
        sample = draw_sample(sampling, [SampleCase(c.case_id, c.slice, c.group) for c in cases])
        kept = set(sample.sampled)
        record = ManifestSampling(
            plan=sampling,
            plan_sha256=sample.plan_sha256,
            sampled_out=sorted(sample.sampled_out),
            slices={
                d.slice: {"cases": d.cases, "target": d.target, "sampled": d.sampled}
                for d in sample.slices
            },
        )
        lanes = plan_lanes(sampling, risks, budget)
        cases = sorted(
            (c for c in cases if c.case_id in kept), key=lambda c: lanes.order_key(c.slice, risks)
        )
    lineage = run_lineage(judge, dataset, cases)
    notices = exposure_notices(judge, dataset, cases)
    plan = _Plan(
        part, dataset.sha256, True, lineage, lanes, risks, record, sampling_source, notices
    )
    return plan, gold_items(cases, options.repeats)


def exposure_notices(judge: Judge, dataset: GoldDataset, cases: list[GoldCase]) -> tuple[str, ...]:
    """What a run warns about before judging: a judge model of the family that generated the
    responses (self-preference), and a prompt holding held-out case text (leakage)."""
    found = [self_preference(judge.identity.model, cases)]
    if isinstance(judge, PromptedJudge):
        leaks = prompt_leaks(judge.template, dataset.partition("held_out"))
        if leaks:
            found.append(
                f"prompt leakage: the prompt template holds text of {describe_leaks(leaks)}: a"
                " judge tuned on held-out examples is certified on what it has seen; take them"
                " out of the prompt (certification routes it to review)"
            )
    return tuple(f for f in found if f)


def check_shown(judge: Judge, cases: list[GoldCase], where: str) -> None:
    """Refuse a prompt that omits evidence the cases carry (``grading_notes``, ``reference``) and
    its spec does not declare omitted: the judge would decide without what reviewers read."""
    shown = judge.shown_fields() if isinstance(judge, PromptedJudge) else None
    if shown is None:
        return
    argument = {arg: name for name, arg in JUDGE_VISIBLE_FIELDS.items()}
    declared = set(judge.spec.omitted_fields)
    carried = {a: sum(bool(getattr(c, argument[a])) for c in cases) for a in EVIDENCE_ARGUMENTS}
    problems = [
        problem(
            where,
            "prompt_omits_evidence",
            f"the prompt of {judge.spec.label} never shows {{{name}}}, which {count} of the"
            f" {len(cases)} cases to judge carry: the judge would decide without the evidence"
            " reviewers read",
            f"add {{{name}}} to the prompt template, or, if leaving it out is deliberate, name it"
            f" in the spec's omitted_fields: [{name}] (a new version)",
        )
        for name, count in carried.items()
        if count and name not in shown and name not in declared
    ]
    if problems:
        raise WorkbenchError("prompt omits evidence", problems)


def gold_items(cases: list[GoldCase], repeats: int) -> list[WorkItem]:
    """Every repeat of each gold case, as work items."""
    return [
        WorkItem(c.case_id, c.response_hash, r, JudgeInput.from_case(c), slice=c.slice)
        for c in cases
        for r in range(repeats)
    ]


async def run_items(
    judge: Judge,
    items: list[WorkItem],
    out_dir: str | Path,
    options: RunOptions = DEFAULT_OPTIONS,
    *,
    partition: str,
    dataset_sha256: str,
    grid: bool = False,
    lineage: GoldLineage | None = None,
) -> RunSummary:
    """The engine for any planned work items (controls, ranking batteries, noise pairs ...).

    ``partition`` is a label recorded in the manifest and every result (``held_out`` only with
    ``grid``). ``grid``: the items are every case x every repeat (the manifest stores the cases
    only).
    """
    plan = _Plan(partition, dataset_sha256, grid, lineage, None, {}, None, None)
    return await run_plan(judge, items, out_dir, _local(options), plan)


async def run_plan(
    judge: Judge,
    items: list[WorkItem],
    out_dir: str | Path,
    options: RunOptions,
    plan: _Plan,
    limits_factory: Callable[..., Limits] | None = None,
) -> RunSummary:
    """:func:`run_items` for a checked ``options`` and a made plan."""
    out = Path(out_dir)
    _prepare_run_dir(items, out, plan)
    if plan.lanes is not None:
        lanes = plan.lanes
        items = sorted(items, key=lambda i: lanes.order_key(i.slice, plan.risks))
    with run_lock(out):
        return await _run_locked(judge, items, out, options, plan, limits_factory or Limits)


def _local(options: RunOptions) -> RunOptions:
    if options.check().executor != "local":
        raise refusal(
            "executor_mismatch",
            "executor",
            f"run_candidate and run_items run in this process, not on the {options.executor!r}"
            " executor",
            "run a sharded run with workbench.runs._ray.run_candidate_ray (or the CLI's --executor"
            " ray)",
        )
    return options


@dataclass(frozen=True)
class _Plan:
    """What a run records besides its items, in the manifest and the summary."""

    partition: str
    dataset_sha256: str
    grid: bool
    lineage: GoldLineage | None
    lanes: Lanes | None
    risks: Mapping[str, str | None]
    sampling: ManifestSampling | None
    sampling_source: str | None
    notices: tuple[str, ...] = ()
    """Warnings the run records before its first call (self-preference, prompt leakage)."""


def _prepare_run_dir(items: list[WorkItem], out: Path, plan: _Plan) -> None:
    """Refuse what cannot run; create the directory."""
    if plan.partition == "held_out" and not plan.grid:
        message = "held-out gold is judged only through certification"
        fix = "use development or calibration"
        raise refusal("held_out_refused", str(out), message, fix, summary="held-out refused")
    if plan.partition == "held_out" and plan.sampling is not None:
        raise refusal(
            "sampling_held_out",
            str(out),
            "a sampling plan cannot be applied to the held-out partition: certification judges"
            " every held-out case",
            "run held-out data only through `workbench certify`, without a plan",
            summary="held-out refused",
        )
    out.mkdir(parents=True, exist_ok=True)
    if RunDir(out).shards_file.exists():
        raise refusal(
            "executor_mismatch",
            str(out),
            f"this run directory holds a sharded run ({SHARDS_FILE}); its results live in its"
            " shard directories",
            "resume it with the same command and --executor ray --shards N, or give this run its"
            " own --out directory",
            summary="sharded run directory",
        )
    if not items:
        message = "there is nothing to judge"
        fix = "give at least one case"
        raise refusal("empty_plan", str(out), message, fix, summary="nothing to run")


@contextmanager
def run_lock(out: Path) -> Iterator[None]:
    """Hold ``.run.lock``; a second invocation is refused at once."""
    lock = FileLock(RunDir(out).lock)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise refusal(
            "run_locked",
            str(out),
            "another workbench run is writing to this run directory right now",
            "wait for it to finish (then rerun to resume), or give this run its own --out"
            " directory",
            summary="run directory busy",
        ) from None
    except OSError as exc:
        message = f"cannot lock the run directory ({exc.strerror or type(exc).__name__})"
        fix = "give a writable --out directory (a locked report's run records are read-only)"
        summary = "run directory not writable"
        raise refusal("run_unwritable", str(RunDir(out).lock), message, fix, summary) from None
    try:
        yield
    finally:
        lock.release()


def endpoint_of(judge: Judge) -> str | None:
    return judge.endpoint_url if isinstance(judge, ModelJudge) else None


def _secrets(judge: Judge) -> list[str]:
    found = list(judge.secrets()) if isinstance(judge, ModelJudge) else []
    env = judge.spec.endpoint.api_key_env
    if env and os.environ.get(env):
        found.append(os.environ[env])
    return found


async def _run_locked(
    judge: Judge,
    items: list[WorkItem],
    out: Path,
    options: RunOptions,
    plan: _Plan,
    limits_factory: Callable[..., Limits],
) -> RunSummary:
    manifest = _freeze(judge, items, out, options.repeats, plan)
    run_dir = RunDir(out)
    max_attempts = _max_attempts(judge)
    recorded = read_recorded(run_dir.results)
    state = Recorded().add(items, recorded, max_attempts, options.retry_errors)
    limits = limits_factory(
        options.budget_usd,
        options.max_cases,
        state.spent,
        **limit_settings(judge, plan.lanes, state),
    )
    for notice in plan.notices:
        limits.warn(notice)
    run = _Execution(judge, manifest, plan.partition, run_dir, limits, options, state)
    await run.execute(state.units, total=len(items))
    summary = summarize(
        manifest,
        judge,
        run_dir.results,
        _Tally(run.counters, state.resumed, max_attempts, run.estimator),
        limits,
        {i.case_id: i.slice for i in items},
        plan,
    )
    record_invocation(
        run_dir,
        summary,
        concurrency=options.concurrency,
        retry_errors=options.retry_errors,
        cache=run.cache is not None,
    )
    return summary


def _freeze(
    judge: Judge, items: list[WorkItem], out: Path, repeats: int, plan: _Plan
) -> RunManifest:
    cases = {
        (i.case_id, i.digest): ManifestCase(case_id=i.case_id, response_hash=i.digest)
        for i in items
    }
    units = (
        None
        if plan.grid
        else [
            ManifestUnit(case_id=i.case_id, repeat=i.repeat, presentation=i.presentation)
            for i in items
        ]
    )
    manifest, _ = freeze_manifest(
        out,
        judge.identity,
        judge.identity.fingerprint(),
        plan.dataset_sha256,
        plan.partition,
        repeats if plan.grid else max(i.repeat for i in items) + 1,
        list(cases.values()),
        units,
        plan.lineage,
        plan.sampling,
    )
    return manifest


def limit_settings(judge: Judge, lanes: Lanes | None, state: Recorded) -> dict[str, Any]:
    """The keyword arguments of :class:`~._limits.Limits` for ``judge``'s run."""
    settings: dict[str, Any] = {
        "breaker_after": judge.spec.endpoint.circuit_breaker_after,
        "endpoint": endpoint_of(judge),
        "secrets": _secrets(judge),
        "key_env": judge.spec.endpoint.api_key_env,
    }
    if lanes is not None:
        settings |= {
            "priority": dict(lanes.priority),
            "holds": dict(lanes.holds),
            "lane_units": Counter(u.item.slice or "" for u in state.units),
            "lane_spent": state.lane_spent,
        }
    return settings


def record_invocation(run_dir: RunDir, summary: RunSummary, **settings: Any) -> None:
    """Write ``run.json`` and append the invocation (its settings and summary) to
    ``invocations.jsonl``."""
    atomic_write_json(run_dir.summary, summary.model_dump(mode="json"))
    with AppendOnlyLog(run_dir.invocations) as invocations:
        invocations.append(
            {
                "finished_at": datetime.now(UTC).isoformat(),
                **settings,
                **summary.model_dump(mode="json", exclude={"unrun", "pending_retry"}),
            }
        )


class _Execution:
    """One invocation's judging: workers settle units from the cache or by calls."""

    def __init__(
        self,
        judge: Judge,
        manifest: RunManifest,
        partition: str,
        run_dir: RunDir,
        limits: Limits,
        options: RunOptions,
        state: Recorded,
    ) -> None:
        self.judge, self.manifest, self.partition = judge, manifest, partition
        self.limits, self.options = limits, options
        self.max_attempts = _max_attempts(judge)
        self.fingerprint = judge.identity.fingerprint()
        self.secrets = _secrets(judge)
        self.raw_source = (
            "imported"
            if isinstance(judge, ReplayJudge)
            else "no_answer"
            if isinstance(judge, ModelJudge)
            else "no_model_call"
        )
        shown = judge.shown_fields() if isinstance(judge, PromptedJudge) else None
        self.unshown = [] if shown is None else sorted(set(JUDGE_VISIBLE_FIELDS.values()) - shown)
        self.estimator = Estimator(judge, max(state.observed) if state.observed else None)
        self.cache = open_cache(options.cache_dir, self.fingerprint)
        self.log = AppendOnlyLog(run_dir.results)
        self.writer = RecordWriter(self.log, self.cache, asyncio.get_running_loop())
        self.counters: Counter[str] = Counter()
        self.resumed = state.resumed
        self.bar: Any = None

    async def execute(self, units: list[_Unit], *, total: int) -> None:
        if isinstance(self.judge, ModelJudge):
            self.judge.prepare(self.options.concurrency or 1)
        self.bar = _progress(total, self.resumed, self.judge.spec.label, self.options.progress)
        queue: asyncio.Queue[_Unit] = asyncio.Queue()
        for unit in units:
            queue.put_nowait(unit)
        workers = max(1, min(self.options.concurrency or 1, len(units) or 1))
        try:
            await asyncio.gather(*(self.worker(queue) for _ in range(workers)))
        finally:
            if isinstance(self.judge, HoldsResources):
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

    async def settle_unit(self, unit: _Unit) -> None:
        """A unit's verdict from the cache, else from its attempts."""
        request_key = None
        if self.cache is not None:
            request_key = sha256_json(self.judge.render(unit.item.judge_input, unit.ref))
            cached = self.cache.get(request_key, unit.item.repeat)
            if cached is not None:
                await self.writer.append(self.reused(unit, cached), None)
                self.counters["cache_hits"] += 1
                self.tick()
                return
        verdict = await self.attempts(unit, request_key)
        if verdict is not None:
            self.counters["errors"] += verdict.error is not None
            self.tick()

    def tick(self) -> None:
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix(
                errors=self.counters["errors"],
                spend=f"${self.limits.spent:.4f}",
                cached=self.counters["cache_hits"],
                refresh=False,
            )

    def reused(self, unit: _Unit, cached: JudgeResult) -> JudgeResult:
        """A cached verdict recorded as this run's attempt, at no cost."""
        update = {
            **self.stamp(unit),
            "started_at": datetime.now(UTC),
            "latency_s": 0.0,
            "tokens_in": None,
            "tokens_out": None,
            "cost_usd": 0.0,
            "attempt": unit.next_attempt,
            "cached_from_run_id": cached.cached_from_run_id or cached.run_id,
            "schema_version": RESULT_SCHEMA_VERSION,
            "migration": None,
        }
        return JudgeResult.model_validate(cached.model_copy(update=update).model_dump())

    def stamp(self, unit: _Unit) -> dict[str, Any]:
        manifest = self.manifest
        return {
            "case_id": unit.item.case_id,
            "response_hash": unit.item.digest,
            "presentation": unit.item.presentation,
            "run_id": manifest.run_id,
            "partition": self.partition,
            "dataset_sha256": (
                manifest.dataset_sha256 if manifest.rubric_version is not None else None
            ),
            "rubric_version": manifest.rubric_version,
        }

    async def attempts(self, unit: _Unit, request_key: str | None) -> Verdict | None:
        """Call the judge until a verdict, a final error, no attempts left or a halt."""
        first = unit.next_attempt
        allowed = (
            self.max_attempts
            if self.options.retry_errors or first == 1
            else max(1, self.max_attempts - first + 1)
        )
        verdict: Verdict | None = None
        for n in range(allowed):
            if n:
                await asyncio.sleep(backoff_s(n, verdict.retry_after_s if verdict else None))
            verdict = await self.one_attempt(
                unit, first + n, first=(n == 0), request_key=request_key
            )
            if verdict is None or verdict.error is None or not verdict.retryable:
                break
            if self.limits.halted:
                break
        return verdict

    async def one_attempt(
        self, unit: _Unit, attempt: int, first: bool, request_key: str | None
    ) -> Verdict | None:
        """One admitted call, settled and recorded (None when not admitted)."""
        judge, limits, lane = self.judge, self.limits, unit.item.slice
        estimate: CallEstimate = self.estimator.estimate(unit.item.judge_input)
        if not await limits.admit(estimate, first, lane):
            return None
        unit.admitted = True
        started = datetime.now(UTC)
        t0 = time.perf_counter()
        try:
            verdict = await judge.evaluate(unit.item.judge_input, unit.ref)
        except NotAvailable:
            await limits.settle(estimate, 0.0, called=False, lane=lane)
            return None
        except BaseException:
            await asyncio.shield(limits.settle(estimate, 0.0, called=False, lane=lane))
            raise
        latency = time.perf_counter() - t0
        cost = self.checked_cost(unit, attempt, verdict, estimate)
        error = verdict.error
        await limits.settle(
            estimate,
            cost,
            called=True,
            endpoint_failure=verdict.endpoint_failure if error is not None else None,
            error=error.message if error is not None else None,
            lane=lane,
        )
        record = self.make_result(unit, attempt, verdict, started, latency, cost)
        await self.writer.append(record, request_key if error is None else None)
        self.counters["calls"] += 1
        self.counters["retries"] += not first
        return verdict

    def checked_cost(
        self, unit: _Unit, attempt: int, verdict: Verdict, estimate: CallEstimate
    ) -> float:
        """The call's cost (the reservation when invalid); usage beyond it is warned about."""
        limits, where = self.limits, f"{unit.item.case_id}#{unit.item.repeat} attempt {attempt}"
        cost = (
            verdict.cost_usd
            if verdict.cost_usd is not None
            else self.judge.spec.pricing.cost(verdict.tokens_in, verdict.tokens_out)
        )
        if not math.isfinite(cost) or cost < 0:
            limits.warn(
                f"{where}: the judge reported a cost of {cost!r}; recorded as the call's"
                " reservation"
            )
            cost = estimate.reservation
        self.estimator.observe(verdict.tokens_in, verdict.tokens_out)
        limits.observe(verdict.tokens_in, verdict.tokens_out)
        if cost > estimate.reservation + 1e-12:
            limits.warn(
                f"{where}: reported usage ({verdict.tokens_in} input, {verdict.tokens_out} output"
                f" tokens, ${cost:.6f}) exceeds the call's reservation"
                f" (${estimate.reservation:.6f}: {estimate.tokens_in} input,"
                f" {estimate.tokens_out_cap} output tokens); the budget guarantee assumes it"
                " does not"
            )
        return cost

    def make_result(
        self,
        unit: _Unit,
        attempt: int,
        verdict: Verdict,
        started: datetime,
        latency: float,
        cost: float,
    ) -> JudgeResult:
        secrets = self.secrets
        error = verdict.error
        if error is not None:
            error = error.model_copy(update={"message": redact(error.message, secrets)})
        sent = verdict.rendered_request
        if sent is None:
            sent = self.judge.render(unit.item.judge_input, unit.ref)
        seen = evidence_seen(unit.item.judge_input, sent, self.unshown)
        sent, sent_sha256 = _redacted_request(sent, secrets)
        raw = verdict.raw_response
        return JudgeResult(
            **self.stamp(unit),
            value=verdict.value,
            reason=redact(verdict.reason, secrets) if verdict.reason is not None else None,
            score=verdict.score,
            order=None if verdict.order is None else [redact(x, secrets) for x in verdict.order],
            judge=self.judge.identity,
            judge_fingerprint=self.fingerprint,
            started_at=started,
            latency_s=verdict.latency_s if verdict.latency_s is not None else latency,
            tokens_in=verdict.tokens_in,
            tokens_out=verdict.tokens_out,
            cost_usd=cost,
            error=error,
            attempt=attempt,
            repeat=unit.item.repeat,
            rendered_request_sha256=sent_sha256,
            rendered_request=sent,
            raw_response=None if raw is None else redact(raw, secrets),
            raw_response_source=verdict.raw_response_source
            or (self.raw_source if raw is None else "provider"),
            evidence_seen=seen,
        )


_JSON_ESCAPED = frozenset('"\\' + "".join(map(chr, range(32))))


def _redacted_request(sent: Any, secrets: list[str]) -> tuple[Any, str]:
    """``sent`` with the values of ``secrets`` redacted (:func:`redact_values`) and the sha256 of
    its canonical JSON. A secret that JSON writes as it is (no quote, backslash or control
    character) and that the canonical JSON does not hold is in none of its strings, so when no
    secret is there the walk is skipped and the text already made is hashed."""
    text = canonical_json(sent)
    if any(s and (s in text or not _JSON_ESCAPED.isdisjoint(s)) for s in secrets):
        sent = redact_values(sent, secrets)
        text = canonical_json(sent)
    return sent, sha256_text(text)


@dataclass(frozen=True)
class _Tally:
    counters: Counter[str]
    resumed: int
    max_attempts: int
    estimator: Estimator


def summarize(
    manifest: RunManifest,
    judge: Judge,
    results_path: Path,
    tally: _Tally,
    limits: Limits,
    slice_of: Mapping[str, str | None],
    plan: _Plan,
) -> RunSummary:
    recorded = _read_attempts(results_path)
    kinds: Counter[str] = Counter()
    verdicts, unrun, pending = 0, [], []
    planned = manifest.planned()
    for case_id, repeat in planned:
        rows = recorded.get((case_id, repeat))
        if not rows:
            unrun.append(f"{case_id}#{repeat}")
            continue
        state = _state(rows, tally.max_attempts)
        if state == "verdict":
            verdicts += 1
            continue
        kinds[rows[-1]["error"]["kind"]] += 1
        if state == "pending_retry":
            pending.append(f"{case_id}#{repeat}")
    rows_all = [r for rows in recorded.values() for r in rows]
    sampling = manifest.sampling
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
        calls=tally.counters["calls"],
        retries=tally.counters["retries"],
        cache_hits=tally.counters["cache_hits"],
        resumed=tally.resumed,
        cost_usd=round(_cost(rows_all), 10),
        budget_usd=limits.budget_usd,
        max_cases=limits.max_cases,
        tokens_in=sum(int(r.get("tokens_in") or 0) for r in rows_all),
        tokens_out=sum(int(r.get("tokens_out") or 0) for r in rows_all),
        unrun=unrun,
        endpoint_url=endpoint_of(judge),
        pending_retry=pending,
        results_path=str(results_path),
        estimate_method=tally.estimator.method,
        max_output_tokens_observed=tally.estimator.max_out,
        warnings=limits.summary_warnings(),
        sampling_plan_sha256=sampling.plan_sha256 if sampling else None,
        sampling_plan_source=plan.sampling_source if sampling else None,
        sampled_out=list(sampling.sampled_out) if sampling else [],
        slice_costs=slice_costs(rows_all, slice_of, plan.risks),
    )


def _progress(total: int, initial: int, label: str, enabled: bool) -> Any:
    return progress_bar(total=total, initial=initial, label=label) if enabled else None


def run_candidate_sync(*args: Any, **kwargs: Any) -> RunSummary:
    """:func:`run_candidate` for scripts and the CLI (not inside a running event loop)."""
    return asyncio.run(run_candidate(*args, **kwargs))
