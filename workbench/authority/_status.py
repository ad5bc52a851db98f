"""``workbench status``: every judge with an authority record, what it may do now, and why.

Effective authority: ``none`` on a damaged record or an unverified report; at most
``advisory`` without a trusted signature; at most ``route`` when stale or when the latest
drift check crossed pass/fail; otherwise the recorded one. Other drift findings are flagged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import Field

from .._record import Record as _Model
from ..errors import WorkbenchError, refusal
from ..outcomes import ExitCode
from ..policy import PolicyScope
from ._certified import read_report
from ._grant import Level, describe_scope, level_rank, lower
from ._location import authority_path_for, shadow_log_path_for
from ._record import AuthorityRecord, JudgeAuthority
from ._stale import GoldState, StaleReason, gold_state, staleness
from ._trust import Trust, ledger_problems, project_trust, signature_problems

STATUS_SCHEMA_VERSION = 1


class DriftSummary(_Model):
    """The latest sentinel drift check of the certified fingerprint."""

    entry_id: str
    """The drift-log entry."""
    recorded_at: datetime
    """When the check ran."""
    status: Literal["recorded", "stable", "drifted", "incomplete"]
    """The check's status."""
    changes: int
    """Flagged sentinel changes."""
    boundary_crossings: list[str]
    """Sentinels whose verdict moved between pass and fail."""
    critical_changes: list[str]
    """Changed sentinels in critical slices."""
    previous_status: str | None
    """The status of the check before it (None: it is the first)."""
    since_report: bool
    """Whether the check ran after the report the authority rests on."""


class ShadowPair(_Model):
    """A judge attached in shadow, with its latest shadow comparison."""

    shadow: str
    """The shadow judge (``name@version``)."""
    attached_at: datetime
    """When it was attached."""
    latest: str | None
    """The latest shadow-log entry comparing it with this judge (None: never run)."""
    recorded_at: datetime | None
    """When that comparison ran."""
    cases: int | None
    """Cases both judged."""
    disagreements: int | None
    """Cases where their verdicts differ."""
    boundary_crossings: int | None
    """Disagreements between pass and fail."""
    review: list[str] = Field(default_factory=list)
    """Disagreements in critical slices, for review."""


class JudgeStatus(_Model):
    """One judge in ``workbench status``."""

    judge: str
    """``name@version``."""
    recorded: Level
    """The authority its last record entry gives it."""
    effective: Level
    """What it may do now (module doc): at most ``recorded``."""
    scope: PolicyScope | None
    """Where the authority applies."""
    event: str
    """Its last entry's event."""
    since: datetime
    """When that entry was recorded."""
    approver: str
    """Who approved it."""
    reason: str
    """Why."""
    report_id: str | None
    """The certification report the authority rests on (the last certified report recorded)."""
    report_dir: str | None
    """Its directory."""
    report_created_at: datetime | None
    """When it was locked."""
    report_verified: bool | None
    """Whether it verifies now (None: no report)."""
    stale: bool
    """Whether anything the certification saw has changed (False when no report is recorded)."""
    stale_reasons: list[StaleReason] = Field(default_factory=list)
    """What changed."""
    drift: DriftSummary | None = None
    """The latest drift check of the certified fingerprint (None: never checked)."""
    drift_flags: list[str] = Field(default_factory=list)
    """Drift findings to read."""
    shadow_of: str | None = None
    """The judge it runs in shadow of."""
    shadows: list[ShadowPair] = Field(default_factory=list)
    """Judges attached in shadow to it."""
    limits: list[str] = Field(default_factory=list)
    """Why ``effective`` is below ``recorded``, one sentence each."""
    problems: list[str] = Field(default_factory=list)
    """What verifying its evidence found."""


class AuthorityStatus(_Model):
    """What ``workbench status`` reports (``--json``)."""

    schema_version: int = STATUS_SCHEMA_VERSION
    """Status format version."""
    record: str
    """The authority record read."""
    gold: GoldState
    """The gold as it is now."""
    ragas_version: str
    """The installed Ragas version."""
    checked_at: datetime
    """When status was computed (UTC)."""
    record_problems: list[str] = Field(default_factory=list)
    """What is wrong with the record itself (any: every judge's effective authority is none)."""
    judges: list[JudgeStatus]
    """Every judge with an entry, in order of first entry."""

    @property
    def exit_code(self) -> int:
        """1: damaged record or unverified report; 4: review required; 0 otherwise."""
        if self.record_problems or any(j.report_verified is False for j in self.judges):
            return int(ExitCode.FAILED)
        if any(
            j.effective != j.recorded
            or (
                j.recorded != "none"
                and (j.stale or (j.drift is not None and j.drift.status == "drifted"))
            )
            for j in self.judges
        ):
            return int(ExitCode.REVIEW_REQUIRED)
        return int(ExitCode.OK)


def _drift(
    gold: str | Path, fingerprint: str, since: datetime | None
) -> tuple[DriftSummary | None, list[str], bool]:
    """The latest drift check's summary, its flags, and whether it cannot be relied on."""
    from ..repeatability import drift_log_path_for, read_drift_log, verify_drift_run

    log = drift_log_path_for(gold)
    try:
        entries = read_drift_log(log)
    except WorkbenchError as exc:
        found = "; ".join(p.format() for p in exc.problems[:3])
        return None, [f"the drift log {log} cannot be relied on ({exc.summary}: {found})"], True
    checks = [e for e in entries if e.candidate_fingerprint == fingerprint and e.kind == "check"]
    if not checks:
        return (
            None,
            [f"no sentinel drift check of fingerprint {fingerprint[:12]} (`workbench drift`)"],
            False,
        )
    latest = checks[-1]
    run_problems = verify_drift_run(latest)
    previous = checks[-2].status if len(checks) > 1 else None
    summary = DriftSummary(
        entry_id=latest.entry_id,
        recorded_at=latest.recorded_at,
        status=latest.status,
        changes=len(latest.changes),
        boundary_crossings=[c.case_id for c in latest.changes if c.boundary_crossing],
        critical_changes=[c.case_id for c in latest.changes if c.risk == "critical"],
        previous_status=previous,
        since_report=since is None or latest.recorded_at > since,
    )
    flags: list[str] = []
    crossed, critical = summary.boundary_crossings, summary.critical_changes
    if latest.status == "drifted":
        flags.append(
            f"DRIFTED: {summary.changes} sentinel change(s) in check {latest.entry_id}"
            + (f", crossing pass/fail: {', '.join(crossed)}" if crossed else "")
            + (f", in critical slices: {', '.join(critical)}" if critical else "")
        )
    elif latest.status == "incomplete":
        flags.append(
            f"the latest drift check {latest.entry_id} is incomplete: not every sentinel was judged"
        )
    if previous is not None and previous != latest.status:
        flags.append(f"drift status changed: {previous} -> {latest.status}")
    if not summary.since_report:
        flags.append("no drift check since the report the authority rests on")
    flags += [f"the check's sentinel run cannot be relied on: {p.format()}" for p in run_problems]
    return summary, flags, bool(run_problems)


def _shadows(name: str, states: dict[str, JudgeAuthority], gold: str | Path) -> list[ShadowPair]:
    from ._shadow import read_shadow_log

    try:
        log = read_shadow_log(shadow_log_path_for(gold))
    except WorkbenchError:
        log = []
    out: list[ShadowPair] = []
    for other, state in states.items():
        if state.shadow_of != name:
            continue
        runs = [e for e in log if e.current == name and e.shadow == other]
        last = runs[-1] if runs else None
        seen = ("cases", "disagreements", "boundary_crossings")
        out.append(
            ShadowPair(
                shadow=other,
                attached_at=state.last.when,
                latest=last.entry_id if last else None,
                recorded_at=last.recorded_at if last else None,
                review=list(last.review) if last else [],
                **{k: getattr(last, k) if last else None for k in seen},
            )
        )
    return out


@dataclass
class _Evidence:
    """What the report an authority rests on shows now."""

    verified: bool | None = None
    created: datetime | None = None
    stale: list[StaleReason] = field(default_factory=list)
    drift: DriftSummary | None = None
    flags: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    untrusted: list[str] = field(default_factory=list)
    """Why the lock cannot carry route or block (its signature, the project's keys)."""
    drift_unusable: bool = False
    """The drift log, or the run its latest check summarizes, cannot be relied on."""


@dataclass(frozen=True)
class _Given:
    """What ``workbench status`` was given to check the evidence with."""

    gold: str | Path
    now: GoldState
    installed: str
    trusted: dict[bytes, str] | None
    trust: Trust


def _read_evidence(state: JudgeAuthority, given: _Given) -> _Evidence:
    evidence, out = state.evidence, _Evidence()
    if evidence is None or not evidence.report_dir:
        return out
    gold, now, installed = given.gold, given.now, given.installed
    facts, found = read_report(evidence.report_dir, gold=gold, trusted=given.trusted)
    if facts is not None:
        found += ledger_problems(gold, facts, evidence.report_dir)
        level = state.last.authority
        out.untrusted = [
            p.format() for p in signature_problems(facts, level, given.trust, evidence.report_dir)
        ]
    out.problems = [p.format() for p in found]
    if facts is not None and facts.lock_sha256 != evidence.lock_sha256:
        out.problems.append(
            f"{evidence.report_dir}: the report's lock is {facts.lock_sha256[:12]}, the record was"
            f" bound to {str(evidence.lock_sha256)[:12]} [report_rebound]"
        )
    out.verified = facts is not None and not found and facts.lock_sha256 == evidence.lock_sha256
    if facts is not None:
        out.created = facts.created_at
        spec = state.last.candidate_spec or evidence.candidate_spec
        out.stale = staleness(facts, now, spec, installed_ragas=installed)
        out.drift, out.flags, out.drift_unusable = _drift(
            gold, facts.candidate_fingerprint, facts.created_at
        )
    return out


def _effective(state: JudgeAuthority, damaged: bool, ev: _Evidence) -> tuple[Level, list[str]]:
    """What the judge may do now, and why that is less than recorded (module doc)."""
    effective: Level = state.last.authority
    limits: list[str] = []
    evidence = state.evidence
    if effective != "none" and damaged:
        limits.append("the authority record is damaged: no authority rests on it")
        effective = "none"
    if state.last.authority != "none" and (evidence is None or not evidence.report_dir):
        limits.append("no report is recorded for it")
        effective = "none"
    elif state.last.authority != "none" and not ev.verified:
        assert evidence is not None
        limits.append(
            f"its report {evidence.report_id} is not verified against this gold: no authority"
            " rests on it"
        )
        effective = "none"
    if ev.untrusted and level_rank(effective) > level_rank("advisory"):
        limits.append(
            f"its report's lock is not signed by a key the project trusts: held at advisory"
            f" ({'; '.join(ev.untrusted)})"
        )
        effective = lower(effective, "advisory")
    if ev.stale and level_rank(effective) > level_rank("route"):
        kinds = "; ".join(r.kind for r in ev.stale)
        limits.append(f"stale: block is withheld until the judge is recertified ({kinds})")
        effective = lower(effective, "route")
    if ev.drift_unusable and level_rank(effective) > level_rank("route"):
        limits.append("its drift evidence cannot be relied on: block is withheld")
        effective = lower(effective, "route")
    crossed = ev.drift.boundary_crossings if ev.drift is not None else []
    if crossed and level_rank(effective) > level_rank("route"):
        limits.append(
            f"its latest drift check crossed pass/fail on {', '.join(crossed)}: block is withheld"
        )
        effective = lower(effective, "route")
    return effective, limits


def _judge_status(
    state: JudgeAuthority, states: dict[str, JudgeAuthority], given: _Given, damaged: bool
) -> JudgeStatus:
    last, evidence = state.last, state.evidence
    gold = given.gold
    ev = _read_evidence(state, given)
    effective, limits = _effective(state, damaged, ev)
    return JudgeStatus(
        judge=state.judge,
        recorded=last.authority,
        effective=effective,
        scope=last.scope,
        event=last.event,
        since=last.when,
        approver=last.approver,
        reason=last.reason,
        report_id=evidence.report_id if evidence else None,
        report_dir=evidence.report_dir if evidence else None,
        report_created_at=ev.created,
        report_verified=ev.verified,
        stale=bool(ev.stale),
        stale_reasons=ev.stale,
        drift=ev.drift,
        drift_flags=ev.flags,
        shadow_of=state.shadow_of,
        shadows=_shadows(state.judge, states, gold),
        limits=limits,
        problems=ev.problems,
    )


def authority_status(
    gold: str | Path, *, judge: str | None = None, trust: str | Path | None = None
) -> AuthorityStatus:
    """Status of every judge (or ``judge``) in ``gold``'s authority record; ``trust`` narrows the
    project's keys."""
    from .._signing import load_trust
    from ..judges import ragas_version

    record = AuthorityRecord(authority_path_for(gold))
    read = record.read()
    now = gold_state(gold)
    installed = ragas_version()
    states = read.judges()
    if judge is not None and judge not in states:
        raise refusal(
            "no such judge",
            str(record.path),
            "judge_unknown",
            f"the authority record has no entry for {judge}",
            "name the judge as name@version, as `workbench status` lists it",
        )
    chosen = [states[judge]] if judge is not None else list(states.values())
    trusted = load_trust(trust) if trust is not None else None  # unreadable: refused (exit 2)
    given = _Given(gold, now, installed, trusted, project_trust(gold, trust))
    return AuthorityStatus(
        record=str(record.path),
        gold=now,
        ragas_version=installed,
        checked_at=datetime.now(UTC),
        record_problems=[p.format() for p in read.problems],
        judges=[_judge_status(s, states, given, not read.ok) for s in chosen],
    )


def _judge_lines(j: JudgeStatus) -> list[str]:
    head = f"{j.judge}: {j.effective.upper()}"
    if j.effective != j.recorded:
        head += f" (recorded {j.recorded}, effective {j.effective})"
    if j.shadow_of:
        head += f", in shadow of {j.shadow_of}"
    lines = [
        head,
        f"  scope: {describe_scope(j.scope) if j.scope else '-'}",
        f"  last entry: {j.event} {j.since:%Y-%m-%d %H:%M} by {j.approver}: {j.reason}",
    ]
    if j.report_id:
        when = f" ({j.report_created_at:%Y-%m-%d %H:%M})" if j.report_created_at else ""
        verified = "verified" if j.report_verified else "NOT VERIFIED"
        stale = "YES: " + "; ".join(r.message for r in j.stale_reasons) if j.stale else "no"
        lines += [f"  last certified report: {j.report_id}{when}, {verified}", f"  stale: {stale}"]
    if (d := j.drift) is not None:
        lines.append(
            f"  drift: {d.status} (check {d.entry_id}, {d.recorded_at:%Y-%m-%d %H:%M},"
            f" {d.changes} change(s))"
        )
    lines += [f"  drift flag: {flag}" for flag in j.drift_flags]
    for s in j.shadows:
        if s.latest is None:
            lines.append(
                f"  shadow {s.shadow}: attached {s.attached_at:%Y-%m-%d}, not run yet (`workbench"
                " run --shadow-of`)"
            )
        else:
            lines.append(
                f"  shadow {s.shadow}: {s.disagreements} disagreement(s) of {s.cases} case(s),"
                f" {s.boundary_crossings} across pass/fail"
                + (f"; review: {', '.join(s.review)}" if s.review else "")
                + f" ({s.latest})"
            )
    return (
        lines
        + [f"  LIMITED: {limit}" for limit in j.limits]
        + [f"  problem: {p}" for p in j.problems]
    )


def format_status(status: AuthorityStatus) -> str:
    """A plain-text account for the terminal."""
    g = status.gold
    lines = [
        f"authority record {status.record}; gold {g.path} (rubric {g.rubric_version}, release"
        f" {g.release or '(not frozen)'}); Ragas {status.ragas_version}"
    ]
    lines += [f"RECORD DAMAGED: {problem}" for problem in status.record_problems]
    if not status.judges:
        lines.append(
            "no judge has an authority record (grant one with `workbench authority grant`)"
        )
    for j in status.judges:
        lines += _judge_lines(j)
    return "\n".join(lines)
