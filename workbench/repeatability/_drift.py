"""``workbench drift``: re-run the sentinels afresh with a pinned judge and flag every verdict
that changed since a baseline of the same fingerprint; baselines and checks go to the hash-chained
drift log beside the gold, each bound to the sha256 of its sentinel run."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from .._args import check_run_arguments
from .._chain import ChainedLog, ChainTerms
from .._io import read_json_file, sha256_file
from .._record import Record as _Model
from ..approval import current_user
from ..errors import Problem, WorkbenchError, problem, refusal
from ..gold import GoldDataset, load_dataset
from ..judges import Judge, JudgeInput, load_candidate
from ..outcomes import exit_code
from ..results import MANIFEST_FILE, RunManifest, read_results
from ..runs import RESULTS_FILE, RunSummary, WorkItem
from ..stats import GroupedRate, clustered_rate
from ._log import beside_gold
from ._sentinels import LoadedSentinels, load_sentinels

DRIFT_SCHEMA_VERSION = 2
CHAINED_SINCE = 2
"""The first drift-log format whose entries are hash-chained and bound to their run."""
CLOCK_SKEW = timedelta(minutes=5)
"""How far in the future an entry's time may lie (clocks differ a little), no further."""
LOCK_TIMEOUT_S = 60.0
DRIFT_LOG_FILE = "drift_log.jsonl"
"""The drift log's file name, beside the gold dataset by default."""
SENTINEL_REPORT_DIR = "sentinels"
"""Where a certification report keeps its sentinel run (``manifest.json``, ``results.jsonl``)."""
SENTINEL_PARTITION = "sentinels"
"""The partition label of a sentinel run's manifest and results."""
ChangeKind = Literal[
    "verdict_changed", "now_error", "was_error", "no_baseline", "not_judged", "input_changed"
]


class Observation(_Model):
    """What the judge said about one sentinel in one run (its last attempt)."""

    value: str | None
    """The verdict, or None."""
    error: str | None
    """The evaluator error kind when there is no verdict."""
    response_hash: str
    """The response judged."""
    request_sha256: str | None
    """sha256 of the evaluator-visible request."""
    attempts: int
    """Attempts made."""

    def shown(self) -> str:
        return self.value if self.value is not None else f"error:{self.error}"


class SentinelChange(_Model):
    """One flagged difference between the baseline and this check."""

    case_id: str
    """The sentinel."""
    slice: str
    """Its slice."""
    risk: str | None
    """The slice's risk."""
    kind: ChangeKind
    """What changed (``input_changed``: the judged response differs from the baseline's)."""
    before: str | None
    """The baseline's verdict (``error:<kind>`` for an error), or None."""
    after: str | None
    """This check's, likewise."""
    boundary_crossing: bool
    """The verdict moved between pass and fail."""


class BaselineRef(_Model):
    """Where a check's baseline came from."""

    source: Literal["drift_log", "run", "report"]
    """The kind of source."""
    ref: str
    """The drift-log entry id, the run directory or the report id."""
    run_id: str | None
    """The baseline run's id."""
    recorded_at: datetime | None
    """When the baseline was made."""


class DriftEntry(_Model):
    """One line of the drift log: a baseline or a check."""

    schema_version: int = DRIFT_SCHEMA_VERSION
    """Drift log format version (2: hash-chained, bound to the run's results)."""
    entry_id: str
    """Id of the entry."""
    kind: Literal["baseline", "check"]
    """``baseline``: verdicts recorded to compare later runs with; ``check``: a comparison."""
    recorded_at: datetime
    """When (UTC)."""
    who: str
    """Who ran it."""
    candidate: str
    """``name@version``."""
    candidate_fingerprint: str
    """The judge fingerprint."""
    dataset_sha256: str
    """The gold the sentinels were drawn from."""
    rubric_version: str
    """Its rubric version."""
    sentinels_path: str
    """The sentinel file."""
    sentinels_sha256: str
    """Its sha256."""
    sentinel_ids: list[str]
    """The sentinel case ids, in file order."""
    run_dir: str
    """The run directory of this entry's sentinel run."""
    run_id: str
    """Its run id."""
    run_status: str
    """``complete`` or ``incomplete``."""
    observations: dict[str, Observation]
    """The verdict (or error) per sentinel."""
    report_id: str | None = None
    """For a baseline recorded for a certification report: its report id."""
    baseline: BaselineRef | None = None
    """For a check: the baseline it was compared with."""
    changes: list[SentinelChange] = Field(default_factory=list)
    """For a check: every flagged difference."""
    status: Literal["recorded", "stable", "drifted", "incomplete"]
    """``incomplete``: the run stopped early or a sentinel was not judged (such a baseline is
    never used); a check with any change is ``drifted``."""
    run_results_sha256: str | None = None
    """sha256 of the sentinel run's ``results.jsonl``: the one run the entry summarizes."""
    previous_sha256: str | None = None
    """``entry_sha256`` of the line before this one (None for the first line): the chain."""
    entry_sha256: str = ""
    """sha256 over the canonical JSON of this entry without this field."""

    @property
    def exit_code(self) -> int:
        """``workbench drift``'s exit: 3 incomplete, 4 drifted (review), else 0."""
        if self.status == "incomplete":
            return exit_code("incomplete")
        return exit_code("review_required" if self.status == "drifted" else "complete")


def drift_log_path_for(gold: GoldDataset | str | Path) -> Path:
    """The default drift log: ``<gold dataset directory>/drift_log.jsonl``."""
    return beside_gold(gold, DRIFT_LOG_FILE)


FIX_DRIFT_LOG = (
    "the drift log is append-only evidence written by `workbench drift`: restore it from version"
    " control or a backup; never edit or write its lines"
)
_TERMS = ChainTerms(
    invalid="drift_log_invalid",
    broken="drift_log_chain_broken",
    unreadable="drift_log_unreadable",
    noun="drift-log entry",
    fix=FIX_DRIFT_LOG,
    busy="drift_log_busy",
    busy_title="drift log busy",
    busy_subject="the drift log lock",
    busy_fix="wait for the other `workbench drift` to finish, then run again",
    drop_torn_tail=True,
)


def _chain(log: str | Path) -> ChainedLog[DriftEntry]:
    version, timeout = DRIFT_SCHEMA_VERSION, LOCK_TIMEOUT_S
    return ChainedLog(log, DriftEntry, _TERMS, schema_version=version, lock_timeout_s=timeout)


def _line_problems(entry: DriftEntry, where: str, now: datetime) -> list[Problem]:
    if entry.schema_version < CHAINED_SINCE:
        message = (
            "the drift log was written before drift entries were hash-chained and bound to their"
            " sentinel run: nothing in it can be relied on"
        )
        fix = (
            "move the old log aside (e.g. to drift_log.v1.jsonl, kept as history) and record a new"
            " baseline and check with `workbench drift`"
        )
        return [problem(where, "drift_log_unchained", message, fix)]
    when = entry.recorded_at if entry.recorded_at.tzinfo else entry.recorded_at.replace(tzinfo=UTC)
    if when > now + CLOCK_SKEW:
        message = (
            f"entry {entry.entry_id} is dated {when:%Y-%m-%d %H:%M:%S} UTC, in the future (now"
            f" {now:%Y-%m-%d %H:%M:%S} UTC)"
        )
        return [problem(where, "drift_entry_future", message, FIX_DRIFT_LOG)]
    return []


def _read_chain(log: str | Path) -> tuple[list[DriftEntry], list[Problem]]:
    path = Path(log)
    if not path.exists():
        return [], []
    chain = _chain(path)
    rows, unreadable = chain.rows()
    if unreadable:
        return [], unreadable
    now = datetime.now(UTC)
    entries, problems = chain.verify(rows, lambda e, _n, where: _line_problems(e, where, now))
    unchained = [p for p in problems if p.code == "drift_log_unchained"]
    return entries, (unchained or problems)  # an old log: one cause, one fix


def read_drift_log(log: str | Path) -> list[DriftEntry]:
    """Every entry of a drift log, oldest first; refused as a whole (every problem at once) when a
    line is unreadable, the chain broken, an entry dated in the future or the log unchained."""
    entries, problems = _read_chain(log)
    if problems:
        raise WorkbenchError(f"{log}: the drift log cannot be relied on", problems)
    return entries


def append_drift(log: str | Path, entry: DriftEntry) -> DriftEntry:
    """Chain ``entry`` to the drift log's last line and append it (refused on a damaged log)."""
    chain = _chain(log)
    with chain.locked():
        entries, problems = _read_chain(log)
        if problems:
            raise WorkbenchError(f"refusing to append to the drift log {log}", problems)
        return chain.append(entry, entries[-1].entry_sha256 if entries else None)


def verify_drift_run(entry: DriftEntry, *, after: datetime | None = None) -> list[Problem]:
    """Why ``entry`` does not summarize the sentinel run it names (started after ``after``)."""
    where = entry.run_dir
    fix = (
        "a drift check is evidence only with the sentinel run it summarizes: restore the run"
        " directory, or run `workbench drift` again"
    )
    results = Path(entry.run_dir) / RESULTS_FILE
    if entry.run_results_sha256 is None:
        message = f"entry {entry.entry_id} names no sha256 of its sentinel run's results"
        return [problem(where, "drift_run_unbound", message, fix)]
    if not results.is_file():
        message = f"the sentinel run of entry {entry.entry_id} is missing ({results})"
        return [problem(where, "drift_run_missing", message, fix)]
    if sha256_file(results) != entry.run_results_sha256:
        message = f"the sentinel run's results changed after entry {entry.entry_id} was recorded"
        return [problem(str(results), "drift_run_changed", message, fix)]
    try:
        manifest, observed = sentinel_observations(Path(entry.run_dir), entry.sentinel_ids)
    except WorkbenchError as exc:
        return list(exc.problems)
    if (manifest.run_id, manifest.judge_fingerprint) != (entry.run_id, entry.candidate_fingerprint):
        message = (
            f"the run is {manifest.run_id} of {manifest.judge_fingerprint[:12]}; entry"
            f" {entry.entry_id} names {entry.run_id} of {entry.candidate_fingerprint[:12]}"
        )
        return [problem(where, "drift_run_other", message, fix)]
    if observed != entry.observations:
        message = f"entry {entry.entry_id} records other verdicts than its sentinel run holds"
        return [problem(where, "drift_run_mismatch", message, fix)]
    if after is not None and manifest.created_at <= after:
        message = (
            f"the sentinel run of entry {entry.entry_id} started"
            f" {manifest.created_at:%Y-%m-%d %H:%M:%S}, not after {after:%Y-%m-%d %H:%M:%S}"
        )
        return [problem(where, "drift_run_too_early", message, fix)]
    return []


def latest_drift(
    log: str | Path, fingerprint: str, *, kind: Literal["baseline", "check"] = "check"
) -> DriftEntry | None:
    """The latest entry of ``kind`` for a judge fingerprint (for ``workbench status``)."""
    found = [
        e for e in read_drift_log(log) if (e.candidate_fingerprint, e.kind) == (fingerprint, kind)
    ]
    return found[-1] if found else None


def recorded_baseline(
    log: str | Path, fingerprint: str, report_id: str | None = None
) -> DriftEntry | None:
    """The latest complete baseline recorded for ``fingerprint`` (and, given, for that report)."""
    found = [
        e
        for e in read_drift_log(log)
        if e.kind == "baseline"
        and e.status == "recorded"
        and e.candidate_fingerprint == fingerprint
        and (report_id is None or e.report_id == report_id)
    ]
    return found[-1] if found else None


def _report_lock(report: Path, judge: Judge, other: str, now: str = "") -> dict[str, Any]:
    """The report's lock, refused when it certified another fingerprint (``other``: the fix)."""
    path = report / "lock.json"
    if not path.is_file():
        message = "--report is not a certification report directory (no lock.json)"
        fix = "point at reports/<candidate>/<version>/<n>"
        raise refusal("not a report", str(report), "report_missing", message, fix)
    try:
        lock = read_json_file(path)
    except (OSError, ValueError) as exc:
        lock = f"{exc}"
    if not isinstance(lock, dict):
        why = lock if isinstance(lock, str) else "not a JSON object"
        message = f"lock.json cannot be read ({why[:160]})"
        fix = "restore the report from its original copy (`workbench verify` names every change)"
        raise refusal("unreadable report lock", str(path), "lock_unreadable", message, fix)
    fingerprint = judge.identity.fingerprint()
    if lock.get("candidate_fingerprint") != fingerprint:
        message = (
            f"report {lock.get('report_id')} certified {lock.get('candidate')}"
            f" ({str(lock.get('candidate_fingerprint'))[:12]}), not {judge.spec.label}"
            f" ({fingerprint[:12]}){now}"
        )
        raise refusal("refusing the baseline", str(report), "baseline_other_judge", message, other)
    return lock


def sentinel_observations(
    run_dir: Path, ids: list[str]
) -> tuple[RunManifest, dict[str, Observation]]:
    """The run's manifest and the last attempt (repeat 0) of each of ``ids`` it judged."""
    manifest_path = run_dir / MANIFEST_FILE
    try:
        manifest = RunManifest.model_validate(read_json_file(manifest_path))
    except (OSError, ValueError) as exc:
        raise refusal(
            "unreadable baseline run",
            str(manifest_path),
            "manifest_invalid",
            f"the run manifest cannot be read ({type(exc).__name__})",
            "point at a run directory written by the workbench",
        ) from None
    wanted = set(ids)
    last: dict[str, Any] = {}
    counts: Counter[str] = Counter()
    for r in (line.result for line in read_results(run_dir / RESULTS_FILE)):
        if r.case_id in wanted and r.repeat == 0:
            counts[r.case_id] += 1
            if r.case_id not in last or r.attempt > last[r.case_id].attempt:
                last[r.case_id] = r
    found = {
        cid: Observation(
            value=r.value,
            error=r.error.kind if r.error else None,
            response_hash=r.response_hash,
            request_sha256=r.rendered_request_sha256,
            attempts=counts[cid],
        )
        for cid, r in last.items()
    }
    return manifest, found


Baseline = tuple[BaselineRef, dict[str, Observation]]
_OTHER_JUDGE_FIX = (
    "drift compares one pinned judge over time; compare two versions with `workbench compare`"
)


def _run_baseline(
    run: Path, source: Literal["run", "report"], ref: str, ids: list[str]
) -> tuple[RunManifest, Baseline]:
    manifest, found = sentinel_observations(run, ids)
    at = BaselineRef(
        source=source, ref=ref, run_id=manifest.run_id, recorded_at=manifest.created_at
    )
    return manifest, (at, found)


def _logged_baseline(
    entry: DriftEntry, source: Literal["drift_log", "report"], ref: str
) -> Baseline:
    at = BaselineRef(source=source, ref=ref, run_id=entry.run_id, recorded_at=entry.recorded_at)
    return at, dict(entry.observations)


def _report_baseline(report: Path, judge: Judge, ids: list[str], log: Path) -> Baseline:
    lock = _report_lock(report, judge, _OTHER_JUDGE_FIX, " as it is now")
    report_id = str(lock.get("report_id"))
    stored = report / SENTINEL_REPORT_DIR
    if (stored / MANIFEST_FILE).is_file():
        return _run_baseline(stored, "report", report_id, ids)[1]
    entry = recorded_baseline(log, judge.identity.fingerprint(), report_id)
    if entry is None:
        raise refusal(
            "no baseline",
            str(report),
            "baseline_missing",
            f"report {report_id} holds no sentinel run ({SENTINEL_REPORT_DIR}/) and {log} records"
            " no sentinel baseline for it",
            "record one: `workbench drift --candidate SPEC --gold GOLD --record-baseline --report"
            f" {report}`",
        )
    return _logged_baseline(entry, "report", f"{report_id} (drift-log entry {entry.entry_id})")


def _resolve_baseline(against: Path | None, judge: Judge, ids: list[str], log: Path) -> Baseline:
    """``against`` a report (its sentinel run, else the baseline logged for it) or a run, else the
    latest baseline logged for the judge's fingerprint."""
    fingerprint = judge.identity.fingerprint()
    if against is not None and (against / "lock.json").is_file():
        return _report_baseline(against, judge, ids, log)
    if against is not None:
        if not (against / MANIFEST_FILE).is_file():
            message = (
                "--against is neither a certification report (lock.json) nor a run directory"
                " (manifest.json)"
            )
            fix = "point --against at a report directory or a run directory of this judge"
            raise refusal("no baseline", str(against), "baseline_missing", message, fix)
        manifest, baseline = _run_baseline(against, "run", str(against), ids)
        if manifest.judge_fingerprint != fingerprint:
            raise refusal(
                "refusing the baseline",
                str(against),
                "baseline_other_judge",
                f"the run is of {manifest.judge.name}@{manifest.judge.version}"
                f" ({manifest.judge_fingerprint[:12]}), not {judge.spec.label}"
                f" ({fingerprint[:12]}) as it is now",
                _OTHER_JUDGE_FIX,
            )
        return baseline
    entry = recorded_baseline(log, fingerprint)
    if entry is None:
        raise refusal(
            "no baseline",
            str(log),
            "baseline_missing",
            f"no sentinel baseline of {judge.spec.label} ({fingerprint[:12]}) is recorded in {log}",
            "record one first (`workbench drift ... --record-baseline`, at certification time), or"
            " give --against REPORT|RUN",
        )
    return _logged_baseline(entry, "drift_log", entry.entry_id)


def sentinel_changes(
    sentinels: LoadedSentinels,
    dataset: GoldDataset,
    before: dict[str, Observation],
    after: dict[str, Observation],
) -> list[SentinelChange]:
    """Every difference per sentinel between a baseline's observations and this run's."""
    rubric = dataset.rubric
    views: dict[str | None, str | None] = {x: rubric.pass_fail(x) for x in rubric.labels}
    out: list[SentinelChange] = []
    for case in sentinels.cases:
        b, a = before.get(case.case_id), after.get(case.case_id)
        kinds: list[tuple[ChangeKind, bool]] = []
        if a is None:
            kinds.append(("not_judged", False))
        elif b is None:
            kinds.append(("no_baseline", False))
        else:
            if a.response_hash != b.response_hash:
                kinds.append(("input_changed", False))
            if b.value is not None and a.value is None:
                kinds.append(("now_error", False))
            elif b.value is None and a.value is not None:
                kinds.append(("was_error", False))
            elif b.value != a.value:
                crossing = {views.get(b.value), views.get(a.value)} == {"pass", "fail"}
                kinds.append(("verdict_changed", crossing))
        out += [
            SentinelChange(
                case_id=case.case_id,
                slice=case.slice,
                risk=rubric.risk_of(case.slice),
                kind=kind,
                before=b.shown() if b else None,
                after=a.shown() if a else None,
                boundary_crossing=crossing,
            )
            for kind, crossing in kinds
        ]
    return out


CHANGED_KINDS: frozenset[str] = frozenset({"verdict_changed", "now_error", "was_error"})
"""The change kinds that count a sentinel as changed in :func:`sentinel_change_rate`."""


def sentinel_change_rate(sentinels: LoadedSentinels, changes: list[SentinelChange]) -> GroupedRate:
    """Sentinels whose verdict changed over the sentinels judged in both runs, the cases of one
    gold group one cluster (:func:`workbench.stats.clustered_rate`, the slices' interval)."""
    unjudged = {c.case_id for c in changes if c.kind in ("not_judged", "no_baseline")}
    changed = {c.case_id for c in changes if c.kind in CHANGED_KINDS}
    return clustered_rate(
        (case.group, case.case_id in changed)
        for case in sentinels.cases
        if case.case_id not in unjudged
    )


def sentinel_items(loaded: LoadedSentinels) -> list[WorkItem]:
    """One work item per sentinel (repeat 0)."""
    return [WorkItem(c.case_id, c.response_hash, 0, JudgeInput.from_case(c)) for c in loaded.cases]


async def run_sentinels(
    judge: Judge,
    loaded: LoadedSentinels,
    dataset: GoldDataset,
    run_dir: Path,
    *,
    budget_usd: float | None,
    concurrency: int,
    progress: bool,
) -> tuple[RunSummary, dict[str, Observation]]:
    """Run the sentinels afresh (never cached) into ``run_dir``; its summary and observations."""
    from ..gold import gold_lineage
    from ..runs import RunOptions, run_items

    options = RunOptions(
        concurrency=concurrency, budget_usd=budget_usd, cache_dir=False, progress=progress
    )
    summary = await run_items(
        judge,
        sentinel_items(loaded),
        run_dir,
        options,
        partition=SENTINEL_PARTITION,
        dataset_sha256=dataset.sha256,
        grid=True,
        lineage=gold_lineage(dataset, loaded.cases),
    )
    return summary, sentinel_observations(run_dir, loaded.case_ids)[1]


def _compared_with(
    record_baseline: bool,
    against: str | Path | None,
    report: str | Path | None,
    judge: Judge,
    ids: list[str],
    log: Path,
) -> tuple[BaselineRef | None, dict[str, Observation], str | None]:
    if record_baseline and against is not None:
        message = "a baseline is recorded, not compared"
        fix = "drop --against when recording a baseline"
        raise refusal("conflicting options", "--against", "baseline_and_against", message, fix)
    if not record_baseline:
        where = Path(against) if against is not None else None
        baseline, before = _resolve_baseline(where, judge, ids, log)
        return baseline, before, None
    if report is None:
        return None, {}, None
    fix = "record the baseline with the certified candidate's spec"
    return None, {}, str(_report_lock(Path(report), judge, fix).get("report_id"))


def _check_budget(judge: Judge, loaded: LoadedSentinels, run_dir: Path, budget_usd: float) -> None:
    from ..migration import BudgetInsufficient
    from ..runs import estimate_run

    items = sentinel_items(loaded)
    estimate = estimate_run("sentinels", judge, items, run_dir, cache_dir=False)
    if estimate.needed_usd > budget_usd + 1e-12:
        message = (
            f"{len(items)} sentinel call(s) of {judge.spec.label} need up to"
            f" ${estimate.needed_usd:.4f}, the budget is ${budget_usd:.4f}"
        )
        fix = f"give --budget-usd {estimate.needed_usd:.4f} or more"
        raise BudgetInsufficient(
            "the budget does not cover the sentinel run: nothing was started",
            [problem("--budget-usd", "budget_insufficient", message, fix)],
        )


def _status(
    record_baseline: bool,
    summary: RunSummary,
    after: dict[str, Observation],
    changes: list[SentinelChange],
    sentinels: int,
) -> Literal["recorded", "stable", "drifted", "incomplete"]:
    if record_baseline:
        judged = len(after) == sentinels and all(o.value is not None for o in after.values())
        return "recorded" if summary.status == "complete" and judged else "incomplete"
    if summary.status != "complete" or any(c.kind == "not_judged" for c in changes):
        return "incomplete"
    return "drifted" if changes else "stable"


async def run_drift(
    candidate: Judge | str | Path,
    gold: GoldDataset | str | Path,
    *,
    against: str | Path | None = None,
    sentinels: str | Path | None = None,
    out: str | Path | None = None,
    log: str | Path | None = None,
    record_baseline: bool = False,
    report: str | Path | None = None,
    budget_usd: float | None = None,
    concurrency: int = 8,
    progress: bool = True,
) -> DriftEntry:
    """Run the sentinels and log a baseline (bound to ``report`` when given) or a check; the run
    goes to ``<out>/<entry_id>`` (default ``runs/drift/<name@version>``)."""
    check_run_arguments(concurrency=concurrency, budget_usd=budget_usd)
    dataset = gold if isinstance(gold, GoldDataset) else load_dataset(gold)
    judge = candidate if not isinstance(candidate, str | Path) else load_candidate(candidate)
    loaded = load_sentinels(sentinels, dataset)
    log_path = Path(log) if log is not None else drift_log_path_for(dataset)
    read_drift_log(log_path)  # a damaged or unchained log is refused before any call
    baseline, before, report_id = _compared_with(
        record_baseline, against, report, judge, loaded.case_ids, log_path
    )
    entry_id = f"drift-{uuid.uuid4().hex[:12]}"
    parent = Path(out) if out is not None else Path("runs") / "drift" / judge.spec.label
    run_dir = (parent / entry_id).resolve()
    if budget_usd is not None:
        _check_budget(judge, loaded, run_dir, budget_usd)
    check = getattr(judge, "check_gold", None)
    if check is not None:
        check(dataset)
    summary, after = await run_sentinels(
        judge,
        loaded,
        dataset,
        run_dir,
        budget_usd=budget_usd,
        concurrency=concurrency,
        progress=progress,
    )
    changes = [] if record_baseline else sentinel_changes(loaded, dataset, before, after)
    entry = DriftEntry(
        entry_id=entry_id,
        kind="baseline" if record_baseline else "check",
        recorded_at=datetime.now(UTC),
        who=current_user(),
        candidate=judge.spec.label,
        candidate_fingerprint=judge.identity.fingerprint(),
        dataset_sha256=dataset.sha256,
        rubric_version=dataset.rubric.version,
        sentinels_path=loaded.path,
        sentinels_sha256=loaded.sha256,
        sentinel_ids=loaded.case_ids,
        run_dir=str(run_dir),
        run_id=summary.run_id,
        run_status=summary.status,
        observations=after,
        report_id=report_id,
        baseline=baseline,
        changes=changes,
        status=_status(record_baseline, summary, after, changes, len(loaded.cases)),
        run_results_sha256=(
            sha256_file(run_dir / RESULTS_FILE) if (run_dir / RESULTS_FILE).is_file() else None
        ),
    )
    return append_drift(log_path, entry)


def run_drift_sync(*args: Any, **kwargs: Any) -> DriftEntry:
    """:func:`run_drift` for scripts and the CLI."""
    return asyncio.run(run_drift(*args, **kwargs))


def format_drift(entry: DriftEntry, log: str | Path | None = None) -> str:
    """A plain-text account for the terminal."""
    where = f" (log {log})" if log else ""
    if entry.kind == "baseline":
        bound = f" for report {entry.report_id}" if entry.report_id else ""
        lines = [
            f"baseline {entry.entry_id}{bound}: {entry.candidate}"
            f" ({entry.candidate_fingerprint[:12]}) on {len(entry.sentinel_ids)} sentinel(s):"
            f" {entry.status.upper()}{where}"
        ]
        observed = entry.observations
        lines += [
            f"  {c}: {o.shown() if (o := observed.get(c)) else 'not judged'}"
            for c in entry.sentinel_ids
        ]
        return "\n".join(lines)
    b = entry.baseline
    assert b is not None
    lines = [
        f"drift check {entry.entry_id}: {entry.candidate} ({entry.candidate_fingerprint[:12]}) on"
        f" {len(entry.sentinel_ids)} sentinel(s) against {b.source} {b.ref}:"
        f" {entry.status.upper()}{where}"
    ]
    lines += [
        f"  CHANGED {c.case_id} ({c.slice}{', ' + c.risk if c.risk else ''}): {c.kind}"
        f" {c.before} -> {c.after}" + (" BOUNDARY" if c.boundary_crossing else "")
        for c in entry.changes
    ] or ["  every sentinel gave the baseline's verdict"]
    return "\n".join(lines)
