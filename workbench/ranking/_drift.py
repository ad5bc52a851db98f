"""One change per ranking release, the drift jobs, and the scalar gate's retirement.

Seed 000: "Test generation drift and evaluator drift in separate jobs" and "Do not change the
judge, rubric, candidate generator, and artifact format in the same release". Against the last
passing run of the fixture set in the history, a run changes the *generation* (the candidate
texts, user input or context of a fixture: its ``source_candidates_sha256``), the *evaluator*
(the judge fingerprint: model, prompt, parameters, Ragas version), neither, or both.
:func:`release_change` refuses both at once, and a declared drift job (``--job generation`` holds
the judge fixed, ``--job evaluator`` holds the candidates fixed) that changes the other layer.

"Retire the old gate once the new contract has owners, calibration data, and a documented escape
path for a genuine evaluator incident": :func:`retire_scalar` checks those and that the scalar
gate ran side by side at least once, then appends a :class:`ScalarRetirement` to the history
log; later runs of the set refuse ``--scalar``.

Both rules hold every caller, not only ``workbench ranking run``: :func:`record_run` decides the
release change against the log itself and refuses a two-change release (nothing appended), and
:func:`~workbench.ranking.ranking_gate` (so :func:`~workbench.ranking.ranking_report`) and
:func:`record_run` refuse scalar rows after the retirement. The CLI calls the same functions
earlier, before any judge call.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import AwareDatetime, Field, RootModel

from .._load import Problems
from .._record import Record as _Frozen
from .._record import append_to_log
from ..errors import Problem, WorkbenchError, problem
from ._fixtures import FixtureSet
from ._gate import (
    History,
    RankingHistoryEntry,
    history_entry,
    history_lines,
    read_history_lines,
)
from ._policy import RankingPolicy

if TYPE_CHECKING:
    from ._analysis import RankingReport

DriftJob = Literal["generation", "evaluator"]
SCALAR_RETIRED: Literal["workbench.ranking.scalar_retired"] = "workbench.ranking.scalar_retired"


class ReleaseChange(_Frozen):
    """What a ranking run changes against the last passing run of its fixture set."""

    job: DriftJob | None
    """The declared drift job (None: none declared)."""
    change: Literal["first", "none", "generation", "evaluator"]
    """``generation`` (candidate texts), ``evaluator`` (the judge), ``none``, or ``first`` (no
    passing run to compare with)."""
    baseline: str | None
    """``recorded_at judge`` of the last passing run compared with."""
    changed_fixtures: list[str]
    """Fixtures whose candidates (user input, context, candidate texts) differ from the
    baseline's."""
    judge_before: str | None
    """The baseline's judge and fingerprint prefix."""
    judge_now: str
    """This run's judge and fingerprint prefix."""


class ScalarRetirement(_Frozen):
    """The record that retires the scalar gate of a fixture set (a line of the history log)."""

    schema_version: int = 1
    """Record format version."""
    kind: Literal["workbench.ranking.scalar_retired"] = SCALAR_RETIRED
    """Record type."""
    recorded_at: AwareDatetime
    """When the scalar gate was retired (UTC)."""
    fixtures_name: str
    """The fixture set whose scalar gate is retired."""
    approver: str
    """Who approved the retirement (a name in the project's ``approvers:``)."""
    reason: str
    """Why the ranking gate now decides alone (what the side-by-side runs showed)."""
    escape_path: str
    """The documented escape path for a genuine evaluator incident."""
    policy: str
    """The ranking policy (``name@version``) whose owners and calibration the retirement
    relies on."""
    owners: dict[str, str]
    """The four owners, from the policy."""
    calibration: str
    """The agreement-drop threshold and the reviewed examples it was chosen from."""
    side_by_side_runs: int
    """History runs of the set that compared the scalar gate beside the ranking gate."""
    scalar_pass_ranking_fail: list[str]
    """Cases the scalar gate passed and the ranking gate did not, in those runs."""


class HistoryLine(RootModel[RankingHistoryEntry | ScalarRetirement]):
    """One line of the ranking history log: a gated run or the scalar gate's retirement."""

    root: Annotated[RankingHistoryEntry | ScalarRetirement, Field(discriminator="kind")]
    """The record, by its ``kind``."""


def _short(judge: str | None, fingerprint: str | None) -> str:
    return f"{judge or '(unknown judge)'} (fingerprint {(fingerprint or '-')[:12]})"


def release_change(
    fixture_set: FixtureSet,
    judge: str | None,
    fingerprint: str | None,
    history: History,
    job: DriftJob | None = None,
    where: str = "--history",
) -> ReleaseChange:
    """What this run changes since the last passing run in the history (log path or lines);
    refuses (exit 2) a run that changes both the candidates and the judge, or the layer its
    drift job holds fixed."""
    mine = [
        h
        for h in history_lines(history)
        if isinstance(h, RankingHistoryEntry) and h.fixtures_name == fixture_set.name
    ]
    base = next((h for h in reversed(mine) if h.outcome == "passed"), None)
    now = _short(judge, fingerprint)
    if base is None:
        return ReleaseChange(
            job=job, change="first", baseline=None, changed_fixtures=[], judge_before=None,
            judge_now=now,
        )  # fmt: skip
    digests = {f.case_id: f.source_candidates_sha256 for f in fixture_set.fixtures}
    changed = [
        cid
        for cid, case in base.cases.items()
        if cid in digests and case.candidates_sha256 not in (None, digests[cid])
    ]
    before = _short(base.judge, base.judge_fingerprint)
    judge_changed = base.judge_fingerprint != fingerprint
    problems = _change_problems(where, job, changed, judge_changed, before, now)
    if problems:
        raise WorkbenchError("one change per release", problems)
    return ReleaseChange(
        job=job,
        change="generation" if changed else "evaluator" if judge_changed else "none",
        baseline=f"{base.recorded_at.isoformat()} {base.judge}",
        changed_fixtures=changed,
        judge_before=before,
        judge_now=now,
    )


def _change_problems(
    where: str,
    job: DriftJob | None,
    changed: list[str],
    judge_changed: bool,
    before: str,
    now: str,
) -> list[Problem]:
    generation = f"the candidates of {len(changed)} fixture(s) changed ({', '.join(changed)})"
    evaluator = f"the judge changed ({before} -> {now})"
    since = "since the last passing run"
    if changed and judge_changed:
        message = f"this run changes two layers {since}: {generation} and {evaluator}"
        fix = (
            "release one change at a time: run the passing judge on the new candidates (--job"
            " generation), record it, then the new judge on those frozen candidates (--job"
            " evaluator)"
        )
        return [problem(where, "two_changes_in_one_release", message, fix)]
    if job == "generation" and judge_changed:
        message = f"a generation-drift job holds the judge fixed, but {evaluator} {since}"
        fix = "run the judge of the last passing run, or run this judge as --job evaluator"
        return [problem(where, "generation_job_judge_changed", message, fix)]
    if job == "evaluator" and changed:
        message = f"an evaluator-drift job holds the candidates fixed, but {generation} {since}"
        fix = "rank the candidates of the last passing run, or run them as --job generation"
        return [problem(where, "evaluator_job_candidates_changed", message, fix)]
    return []


def scalar_retirement(history: History, fixtures_name: str) -> ScalarRetirement | None:
    """The retirement of the set's scalar gate in a history (log path or lines), if retired."""
    return next(
        (
            x
            for x in history_lines(history)
            if isinstance(x, ScalarRetirement) and x.fixtures_name == fixtures_name
        ),
        None,
    )


def refuse_retired_scalar(history: History, fixtures_name: str) -> None:
    """Scalar rows (``--scalar``, ``scalar=``) after the set's scalar gate was retired in the
    history (log path or lines) are a user error (exit 2)."""
    retired = scalar_retirement(history, fixtures_name)
    if retired is not None:
        message = (
            f"the scalar gate of {fixtures_name} was retired on"
            f" {retired.recorded_at.date().isoformat()} by {retired.approver} ({retired.reason})"
        )
        fix = "drop --scalar (the scalar rows): the ranking gate decides"
        raise WorkbenchError(
            "scalar gate retired", [problem("--scalar", "scalar_retired", message, fix)]
        )


def record_run(
    path: str | Path,
    report: RankingReport,
    fixture_set: FixtureSet,
    now: datetime | None = None,
    *,
    job: DriftJob | None = None,
) -> RankingHistoryEntry:
    """Append a gated report to the history log (append-only) and return the entry, with the
    :func:`release_change` decided here against the log. Refused (exit 2, nothing appended): a
    release changing both the candidates and the judge (or the layer ``job`` holds fixed), and
    a scalar comparison after the set's scalar gate was retired."""
    lines = read_history_lines(path)
    if report.gate is not None and report.gate.side_by_side is not None:
        refuse_retired_scalar(lines, fixture_set.name)
    change = release_change(
        fixture_set, report.judge, report.judge_fingerprint, lines, job=job, where=str(path)
    )
    entry = history_entry(report, fixture_set, now, change)
    append_to_log(path, entry)
    return entry


def retire_scalar(
    history: str | Path,
    fixtures_name: str,
    policy: RankingPolicy,
    *,
    approver: str,
    reason: str,
    escape_path: str,
    now: datetime | None = None,
) -> ScalarRetirement:
    """Check the seed's conditions (owners, calibration data, an escape path, side-by-side
    runs; a known approver; not retired already), every problem at once, then append the record
    to the history log."""
    from ..approval import load_approvers

    where = str(history)
    lines = read_history_lines(history)
    runs = [
        x
        for x in lines
        if isinstance(x, RankingHistoryEntry)
        and x.fixtures_name == fixtures_name
        and x.scalar_compared
    ]
    problems = Problems(
        _retirement_problems(where, fixtures_name, policy, escape_path, runs, lines)
    )
    start = Path(policy.source).parent if policy.source else Path(history).parent
    problems += load_approvers(start).problems(approver, "--approver", "approver")
    problems.raise_if_any("the scalar gate cannot be retired")
    assert policy.owners is not None and policy.agreement_drop_evidence is not None
    record = ScalarRetirement(
        recorded_at=(now or datetime.now(UTC)).replace(microsecond=0),
        fixtures_name=fixtures_name,
        approver=approver,
        reason=reason,
        escape_path=escape_path,
        policy=policy.label,
        owners=policy.owners.model_dump(),
        calibration=f"max_agreement_drop {policy.max_agreement_drop} chosen from"
        f" {policy.agreement_drop_evidence}",
        side_by_side_runs=len(runs),
        scalar_pass_ranking_fail=sorted({c for r in runs for c in r.scalar_pass_ranking_fail}),
    )
    append_to_log(history, record)
    return record


def _retirement_problems(
    where: str,
    fixtures_name: str,
    policy: RankingPolicy,
    escape_path: str,
    runs: list[RankingHistoryEntry],
    lines: Sequence[RankingHistoryEntry | ScalarRetirement],
) -> list[Problem]:
    pol = policy.source or policy.label
    checks = [
        (
            policy.owners is None,
            pol,
            "retirement_owners_missing",
            f"the policy {policy.label} names no owners",
            "name the four owners (owners: application, evaluation, platform, domain_reviewer)",
        ),
        (
            policy.max_agreement_drop is None or policy.agreement_drop_evidence is None,
            pol,
            "retirement_uncalibrated",
            f"the policy {policy.label} has no agreement-drop threshold chosen from reviewed"
            " examples (calibration data)",
            "set max_agreement_drop and agreement_drop_evidence (docs/formats.md, Ranking policy)",
        ),
        (
            not escape_path.strip(),
            "--escape-path",
            "retirement_no_escape_path",
            "no documented escape path for a genuine evaluator incident",
            "name it, e.g. 'workbench override add --policy <ranking policy> ...' and its owner",
        ),
        (
            not runs,
            where,
            "retirement_no_side_by_side",
            f"no run of {fixtures_name} in the history compared the scalar gate beside the"
            " ranking gate",
            "run `workbench ranking run ... --scalar SCALAR.jsonl` first and review the cases",
        ),
        (
            any(
                isinstance(x, ScalarRetirement) and x.fixtures_name == fixtures_name for x in lines
            ),
            where,
            "scalar_retired",
            f"the scalar gate of {fixtures_name} is already retired",
            "nothing to do",
        ),
    ]
    return [problem(at, code, message, fix) for bad, at, code, message, fix in checks if bad]
