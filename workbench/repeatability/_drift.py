"""``workbench drift``: re-run the sentinels with a pinned judge and flag every changed verdict.

A *baseline* is what the same judge (same fingerprint) said about the sentinels at a known
time. It comes from, in this order of preference:

- ``against=REPORT`` (a certification report directory): the sentinel run the report holds
  (``REPORT/sentinels/``: its ``manifest.json`` and ``results.jsonl``), else the baseline
  recorded in the drift log for that report (``record_baseline=True, report=REPORT``);
- ``against=RUN`` (a run directory holding the sentinel cases, e.g. a development or
  calibration run, or an earlier drift run);
- nothing: the latest baseline recorded in the drift log for the judge's fingerprint.

A run of another judge fingerprint is refused: drift asks whether one pinned judge still says
the same thing; two versions are compared with ``workbench compare``. Without a baseline the
check is refused before any call (record one first).

Every check runs the sentinels afresh (never from the verdict cache: a cached verdict is not
a new observation; its own run directory, so nothing is resumed from an earlier check) and
flags every difference per sentinel: a changed verdict (``boundary_crossing`` when it moved
between pass and fail), an evaluator error now or before, a sentinel without a baseline
verdict, a sentinel not judged this time, a judged response that changed. Each baseline and
check is appended to the drift log (``drift_log.jsonl`` beside the gold, append-only), which
``workbench status`` reads: the latest check per judge, ``stable``, ``drifted`` or
``incomplete``.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from .._args import check_run_arguments
from .._io import (
    AppendOnlyLog,
    JSONRecordError,
    check_json,
    iter_jsonl_lines,
    max_document_bytes,
    read_json_file,
)
from .._record import Record as _Model
from ..errors import Problem, WorkbenchError
from ..gold import GoldDataset, load_dataset
from ..heldout import current_user
from ..judges import Judge, JudgeInput, load_candidate
from ..results import read_results
from ..runs import MANIFEST_FILE, RESULTS_FILE, RunManifest, WorkItem
from ._sentinels import LoadedSentinels, load_sentinels

DRIFT_SCHEMA_VERSION = 1
DRIFT_LOG_FILE = "drift_log.jsonl"
"""The drift log's file name, beside the gold dataset by default."""
SENTINEL_REPORT_DIR = "sentinels"
"""Where a certification report keeps its sentinel run (``manifest.json``, ``results.jsonl``)."""
PARTITION = "sentinels"
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
    """``verdict_changed``, ``now_error``, ``was_error``, ``no_baseline``, ``not_judged`` or
    ``input_changed`` (the judged response differs from the baseline's)."""
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
    """Drift log format version."""
    entry_id: str
    """Id of the entry."""
    kind: Literal["baseline", "check"]
    """``baseline``: the sentinels' verdicts recorded to compare later runs with; ``check``: a
    run compared with a baseline."""
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
    """Baseline: ``recorded`` (or ``incomplete``: not every sentinel was judged; never used as a
    baseline). Check: ``drifted`` (any change), ``incomplete`` (the run stopped early or a
    sentinel was not judged), else ``stable``."""


def drift_log_path_for(gold: GoldDataset | str | Path) -> Path:
    """The default drift log: ``<gold dataset directory>/drift_log.jsonl``."""
    root = (
        gold.root
        if isinstance(gold, GoldDataset)
        else (Path(gold) if Path(gold).is_dir() else Path(gold).parent)
    )
    return root / DRIFT_LOG_FILE


def _read_lock(path: Path) -> dict[str, Any]:
    """A report's ``lock.json``, read boundedly and strictly; unreadable: a one-line refusal."""
    try:
        lock = read_json_file(path)
    except (OSError, ValueError) as exc:
        lock = f"{exc}"
    if not isinstance(lock, dict):
        why = lock if isinstance(lock, str) else "not a JSON object"
        raise WorkbenchError(
            "unreadable report lock",
            [
                Problem(
                    location=str(path),
                    code="lock_unreadable",
                    message=f"lock.json cannot be read ({why[:160]})",
                    fix=(
                        "restore the report from its original copy (`workbench verify` names every"
                        " change)"
                    ),
                )
            ],
        )
    return lock


def read_drift_log(log: str | Path) -> list[DriftEntry]:
    """Every entry of a drift log, oldest first (none when it does not exist; a bad line is
    refused)."""
    path = Path(log)
    if not path.exists():
        return []
    out: list[DriftEntry] = []
    problems: list[Problem] = []
    fix = "the drift log is append-only and written by `workbench drift`; restore it"
    not_utf8: list[int] = []
    for number, line in iter_jsonl_lines(path, not_utf8, limit=max_document_bytes()):  # bounded
        try:
            check_json(line)  # duplicate keys, NaN/Infinity, too deep: refused before validation
            out.append(DriftEntry.model_validate_json(line))
        except JSONRecordError as exc:
            problems.append(
                Problem(
                    location=f"{path}:{number}",
                    code="drift_log_invalid",
                    message=f"not a drift-log entry ({exc.msg})",
                    fix=fix,
                )
            )
        except ValidationError as exc:
            problems.append(
                Problem(
                    location=f"{path}:{number}",
                    code="drift_log_invalid",
                    message=f"not a drift-log entry ({exc.error_count()} error(s))",
                    fix=fix,
                )
            )
    problems += [
        Problem(
            location=f"{path}:{n}",
            code="drift_log_invalid",
            message="not a drift-log entry (the line is not valid UTF-8)",
            fix=fix,
        )
        for n in not_utf8
    ]
    if problems:
        raise WorkbenchError(f"{path}: unreadable drift log", problems)
    return out


def latest_drift(
    log: str | Path, fingerprint: str, *, kind: Literal["baseline", "check"] = "check"
) -> DriftEntry | None:
    """The latest entry of ``kind`` for a judge fingerprint (for ``workbench status``)."""
    found = [
        e for e in read_drift_log(log) if e.candidate_fingerprint == fingerprint and e.kind == kind
    ]
    return found[-1] if found else None


def _observations(run_dir: Path, ids: list[str]) -> tuple[RunManifest, dict[str, Observation]]:
    manifest_path = run_dir / MANIFEST_FILE
    try:
        manifest = RunManifest.model_validate(read_json_file(manifest_path))
    except (OSError, ValueError) as exc:
        raise WorkbenchError(
            "unreadable baseline run",
            [
                Problem(
                    location=str(manifest_path),
                    code="manifest_invalid",
                    message=f"the run manifest cannot be read ({type(exc).__name__})",
                    fix="point at a run directory written by the workbench",
                )
            ],
        ) from None
    wanted = set(ids)
    last: dict[str, Any] = {}
    counts: dict[str, int] = {}
    for line in read_results(run_dir / RESULTS_FILE):
        r = line.result
        if r.case_id not in wanted or r.repeat != 0:
            continue
        counts[r.case_id] = counts.get(r.case_id, 0) + 1
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


def _resolve_baseline(
    against: Path | None, judge: Judge, dataset: GoldDataset, sentinels: LoadedSentinels, log: Path
) -> tuple[BaselineRef, dict[str, Observation]]:
    fingerprint = judge.identity.fingerprint()
    other_judge_fix = (
        "drift compares one pinned judge over time; compare two versions with `workbench compare`"
    )
    if against is not None and (against / "lock.json").is_file():
        lock = _read_lock(against / "lock.json")
        report_id = str(lock.get("report_id"))
        if lock.get("candidate_fingerprint") != fingerprint:
            raise WorkbenchError(
                "refusing the baseline",
                [
                    Problem(
                        location=str(against),
                        code="baseline_other_judge",
                        message=(
                            f"report {report_id} certified {lock.get('candidate')}"
                            f" ({str(lock.get('candidate_fingerprint'))[:12]}), not"
                            f" {judge.spec.label} ({fingerprint[:12]}) as it is now"
                        ),
                        fix=other_judge_fix,
                    )
                ],
            )
        stored = against / SENTINEL_REPORT_DIR
        if (stored / MANIFEST_FILE).is_file():
            manifest, found = _observations(stored, sentinels.case_ids)
            return (
                BaselineRef(
                    source="report",
                    ref=report_id,
                    run_id=manifest.run_id,
                    recorded_at=manifest.created_at,
                ),
                found,
            )
        entries = [
            e
            for e in read_drift_log(log)
            if e.kind == "baseline"
            and e.status == "recorded"
            and e.report_id == report_id
            and e.candidate_fingerprint == fingerprint
        ]
        if not entries:
            raise WorkbenchError(
                "no baseline",
                [
                    Problem(
                        location=str(against),
                        code="baseline_missing",
                        message=(
                            f"report {report_id} holds no sentinel run ({SENTINEL_REPORT_DIR}/) and"
                            f" {log} records no sentinel baseline for it"
                        ),
                        fix=(
                            "record one: `workbench drift --candidate SPEC --gold GOLD"
                            f" --record-baseline --report {against}`"
                        ),
                    )
                ],
            )
        entry = entries[-1]
        return BaselineRef(
            source="report",
            ref=f"{report_id} (drift-log entry {entry.entry_id})",
            run_id=entry.run_id,
            recorded_at=entry.recorded_at,
        ), dict(entry.observations)
    if against is not None:
        if not (against / MANIFEST_FILE).is_file():
            raise WorkbenchError(
                "no baseline",
                [
                    Problem(
                        location=str(against),
                        code="baseline_missing",
                        message=(
                            "--against is neither a certification report (lock.json) nor a run"
                            " directory (manifest.json)"
                        ),
                        fix=(
                            "point --against at a report directory or a run directory of this judge"
                        ),
                    )
                ],
            )
        manifest, found = _observations(against, sentinels.case_ids)
        if manifest.judge_fingerprint != fingerprint:
            raise WorkbenchError(
                "refusing the baseline",
                [
                    Problem(
                        location=str(against),
                        code="baseline_other_judge",
                        message=(
                            f"the run is of {manifest.judge.name}@{manifest.judge.version}"
                            f" ({manifest.judge_fingerprint[:12]}), not {judge.spec.label}"
                            f" ({fingerprint[:12]}) as it is now"
                        ),
                        fix=other_judge_fix,
                    )
                ],
            )
        return (
            BaselineRef(
                source="run",
                ref=str(against),
                run_id=manifest.run_id,
                recorded_at=manifest.created_at,
            ),
            found,
        )
    entries = [
        e
        for e in read_drift_log(log)
        if e.kind == "baseline"
        and e.status == "recorded"
        and e.candidate_fingerprint == fingerprint
    ]
    if not entries:
        raise WorkbenchError(
            "no baseline",
            [
                Problem(
                    location=str(log),
                    code="baseline_missing",
                    message=(
                        f"no sentinel baseline of {judge.spec.label} ({fingerprint[:12]}) is"
                        f" recorded in {log}"
                    ),
                    fix=(
                        "record one first (`workbench drift ... --record-baseline`, at"
                        " certification time), or give --against REPORT|RUN"
                    ),
                )
            ],
        )
    entry = entries[-1]
    return BaselineRef(
        source="drift_log", ref=entry.entry_id, run_id=entry.run_id, recorded_at=entry.recorded_at
    ), dict(entry.observations)


def _changes(
    sentinels: LoadedSentinels,
    dataset: GoldDataset,
    before: dict[str, Observation],
    after: dict[str, Observation],
) -> list[SentinelChange]:
    rubric = dataset.rubric
    out: list[SentinelChange] = []

    def view(label: str | None) -> str | None:
        return rubric.pass_fail(label) if label is not None and label in rubric.labels else None

    for case in sentinels.cases:
        b, a = before.get(case.case_id), after.get(case.case_id)
        risk = rubric.risk_of(case.slice)

        def flag(
            kind: ChangeKind,
            crossing: bool = False,
            _c: Any = case,
            _r: str | None = risk,
            _b: Observation | None = b,
            _a: Observation | None = a,
        ) -> None:
            out.append(
                SentinelChange(
                    case_id=_c.case_id,
                    slice=_c.slice,
                    risk=_r,
                    kind=kind,
                    before=_b.shown() if _b else None,
                    after=_a.shown() if _a else None,
                    boundary_crossing=crossing,
                )
            )

        if a is None:
            flag("not_judged")
            continue
        if b is None:
            flag("no_baseline")
            continue
        if a.response_hash != b.response_hash:
            flag("input_changed")
        if b.value is not None and a.value is None:
            flag("now_error")
        elif b.value is None and a.value is not None:
            flag("was_error")
        elif b.value != a.value:
            views = {view(b.value), view(a.value)}
            flag("verdict_changed", crossing=views == {"pass", "fail"})
    return out


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
    """Run the sentinels and record a baseline or a check in the drift log (module doc).

    ``report`` (with ``record_baseline``): bind the baseline to a certification report of the
    same fingerprint. ``out``: the parent of this entry's run directory (default
    ``runs/drift/<name@version>``); each entry gets its own ``<entry_id>`` below it.
    """
    from ..gold import gold_lineage
    from ..migration import BudgetInsufficient, estimate_run
    from ..runs import RunOptions, run_items

    check_run_arguments(concurrency=concurrency, budget_usd=budget_usd)

    dataset = gold if isinstance(gold, GoldDataset) else load_dataset(gold)
    judge = candidate if not isinstance(candidate, str | Path) else load_candidate(candidate)
    loaded = load_sentinels(sentinels, dataset)
    log_path = Path(log) if log is not None else drift_log_path_for(dataset)
    fingerprint = judge.identity.fingerprint()
    if record_baseline and against is not None:
        raise WorkbenchError(
            "conflicting options",
            [
                Problem(
                    location="--against",
                    code="baseline_and_against",
                    message="a baseline is recorded, not compared",
                    fix="drop --against when recording a baseline",
                )
            ],
        )
    baseline: BaselineRef | None = None
    before: dict[str, Observation] = {}
    report_id: str | None = None
    if record_baseline:
        if report is not None:
            lock_path = Path(report) / "lock.json"
            if not lock_path.is_file():
                raise WorkbenchError(
                    "not a report",
                    [
                        Problem(
                            location=str(report),
                            code="report_missing",
                            message=(
                                "--report is not a certification report directory (no lock.json)"
                            ),
                            fix="point at reports/<candidate>/<version>/<n>",
                        )
                    ],
                )
            lock = _read_lock(lock_path)
            if lock.get("candidate_fingerprint") != fingerprint:
                raise WorkbenchError(
                    "refusing the baseline",
                    [
                        Problem(
                            location=str(report),
                            code="baseline_other_judge",
                            message=(
                                f"report {lock.get('report_id')} certified {lock.get('candidate')}"
                                f" ({str(lock.get('candidate_fingerprint'))[:12]}), not"
                                f" {judge.spec.label} ({fingerprint[:12]})"
                            ),
                            fix="record the baseline with the certified candidate's spec",
                        )
                    ],
                )
            report_id = str(lock.get("report_id"))
    else:
        baseline, before = _resolve_baseline(
            Path(against) if against is not None else None, judge, dataset, loaded, log_path
        )
    entry_id = f"drift-{uuid.uuid4().hex[:12]}"
    run_dir = (
        Path(out) if out is not None else Path("runs") / "drift" / judge.spec.label
    ) / entry_id
    items = [WorkItem(c.case_id, c.response_hash, 0, JudgeInput.from_case(c)) for c in loaded.cases]
    if budget_usd is not None:
        estimate = estimate_run("sentinels", judge, items, run_dir, cache_dir=False)
        if estimate.needed_usd > budget_usd + 1e-12:
            raise BudgetInsufficient(
                "the budget does not cover the sentinel run: nothing was started",
                [
                    Problem(
                        location="--budget-usd",
                        code="budget_insufficient",
                        message=(
                            f"{len(items)} sentinel call(s) of {judge.spec.label} need up to"
                            f" ${estimate.needed_usd:.4f}, the budget is ${budget_usd:.4f}"
                        ),
                        fix=f"give --budget-usd {estimate.needed_usd:.4f} or more",
                    )
                ],
            )
    check = getattr(judge, "check_gold", None)
    if check is not None:
        check(dataset)
    summary = await run_items(
        judge,
        items,
        run_dir,
        RunOptions(
            repeats=1,
            concurrency=concurrency,
            budget_usd=budget_usd,
            cache_dir=False,
            progress=progress,
        ),
        partition=PARTITION,
        dataset_sha256=dataset.sha256,
        grid=True,
        lineage=gold_lineage(dataset, loaded.cases),
    )
    _, after = _observations(run_dir, loaded.case_ids)
    if record_baseline:
        status: Literal["recorded", "stable", "drifted", "incomplete"] = (
            "recorded"
            if summary.status == "complete"
            and len(after) == len(loaded.cases)
            and all(o.value is not None for o in after.values())
            else "incomplete"
        )
        changes: list[SentinelChange] = []
    else:
        changes = _changes(loaded, dataset, before, after)
        if summary.status != "complete" or any(c.kind == "not_judged" for c in changes):
            status = "incomplete"
        else:
            status = "drifted" if changes else "stable"
    entry = DriftEntry(
        entry_id=entry_id,
        kind="baseline" if record_baseline else "check",
        recorded_at=datetime.now(UTC),
        who=current_user(),
        candidate=judge.spec.label,
        candidate_fingerprint=fingerprint,
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
        status=status,
    )
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with AppendOnlyLog(log_path) as out_log:
        out_log.append(entry.model_dump(mode="json"))
    return entry


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
        for cid in entry.sentinel_ids:
            o = entry.observations.get(cid)
            lines.append(f"  {cid}: {o.shown() if o else 'not judged'}")
        return "\n".join(lines)
    b = entry.baseline
    assert b is not None
    lines = [
        f"drift check {entry.entry_id}: {entry.candidate} ({entry.candidate_fingerprint[:12]}) on"
        f" {len(entry.sentinel_ids)} sentinel(s) against {b.source} {b.ref}:"
        f" {entry.status.upper()}{where}"
    ]
    for c in entry.changes:
        lines.append(
            f"  CHANGED {c.case_id} ({c.slice}{', ' + c.risk if c.risk else ''}): {c.kind}"
            f" {c.before} -> {c.after}" + (" BOUNDARY" if c.boundary_crossing else "")
        )
    if not entry.changes:
        lines.append("  every sentinel gave the baseline's verdict")
    return "\n".join(lines)
