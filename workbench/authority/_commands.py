"""``workbench authority``: grant, promote, demote, revoke and attach in shadow.

The path is advisory -> route -> block, one approved step at a time. A grant or promotion needs
a certified report of exactly this version that verifies against the gold's ledger, is not
stale, and grants the level; ``route`` and ``block`` need a lock signed by a trusted key, and
``block`` a stable drift check made after the report. The approver must be listed and must
not be the certifier. Demotion and revocation need only a reason, even on a damaged record.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from .._signing import load_trust
from ..approval import current_user
from ..errors import Problem, WorkbenchError, problem
from ..judges import load_candidate
from ..policy import AUTHORITY_CONTROL_ROLES, CONTROLS_NOT_REQUIRED
from ._certified import ReportFacts, read_report
from ._grant import LEVELS, level_rank, lower, next_level
from ._location import authority_path_for
from ._record import AuthorityEntry, AuthorityRecord, JudgeAuthority, RecordRead, new_entry_id
from ._stale import gold_state, staleness
from ._trust import approver_problems, ledger_problems, project_trust, signature_problems

_FIX_JUDGE = "name the judge as name@version, as `workbench status` lists it"


def _text_problems(
    approver: str | None, reason: str | None, *, approver_required: bool
) -> list[Problem]:
    problems = []
    if approver_required and not (approver and approver.strip()):
        problems.append(
            problem(
                "--approver",
                "approver_missing",
                "the entry needs a named approver",
                "give --approver NAME: the person accountable for this authority",
            )
        )
    if not (reason and reason.strip()):
        problems.append(
            problem(
                "--reason",
                "reason_missing",
                "the entry needs a reason",
                'give --reason "..." in words a later reader understands',
            )
        )
    return problems


@contextmanager
def _locked(
    gold: str | Path, problems: list[Problem], *, grants: bool
) -> Iterator[tuple[AuthorityRecord, RecordRead]]:
    """The record of ``gold``, read under its lock; a damaged record refuses what ``grants``."""
    record = AuthorityRecord(authority_path_for(gold))
    with record.locked():
        read = record.read()
        if grants and not read.ok:
            problems += [
                problem(
                    str(record.path),
                    "authority_record_damaged",
                    f"the authority record is damaged ({len(read.problems)} problem(s)): nothing"
                    " can be granted on it",
                    "restore the record from version control or a backup; demote and revoke still"
                    " work",
                ),
                *read.problems,
            ]
        yield record, read


def _refuse_if(problems: list[Problem], what: str) -> None:
    if problems:
        raise WorkbenchError(f"refusing to {what}: {len(problems)} problem(s)", problems)


def _drift_after(gold: str | Path, facts: ReportFacts) -> tuple[bool, str]:
    """Whether the latest drift check of the certified fingerprint is stable and after the report,
    and how it reads."""
    from ..repeatability import drift_log_path_for, latest_drift, verify_drift_run

    log, fingerprint = drift_log_path_for(gold), facts.candidate_fingerprint
    try:
        entry = latest_drift(log, fingerprint)
    except WorkbenchError as exc:
        found = "; ".join(p.format() for p in exc.problems[:3])
        return False, f"the drift log {log} cannot be relied on ({exc.summary}: {found})"
    if entry is None:
        return False, f"no drift check of fingerprint {fingerprint[:12]} in {log}"
    unrelied = verify_drift_run(entry, after=facts.created_at)
    if unrelied:
        found = "; ".join(p.format() for p in unrelied)
        return False, f"drift check {entry.entry_id} cannot be relied on: {found}"
    how = f"drift check {entry.entry_id} of {entry.recorded_at:%Y-%m-%d %H:%M} is {entry.status}"
    if entry.status != "stable":
        return False, how
    if entry.recorded_at <= facts.created_at:
        return False, f"{how}, made before the report ({facts.created_at:%Y-%m-%d %H:%M})"
    return True, how


def _given_trust(trust: str | Path | None, problems: list[Problem]) -> dict[bytes, str] | None:
    if trust is None:
        return None
    try:
        return load_trust(trust)
    except WorkbenchError as exc:
        problems += exc.problems
        return {}


def _evidence(
    gold: str | Path,
    spec: str | Path,
    report: str | Path,
    state: JudgeAuthority | None,
    trusted: dict[bytes, str] | None,
) -> tuple[ReportFacts | None, list[Problem]]:
    """Every reason the report is not enough evidence for the judge at ``spec`` on ``gold``."""
    judge = load_candidate(spec)
    label, fingerprint = judge.spec.label, judge.identity.fingerprint()
    facts, problems = read_report(report, gold=gold, trusted=trusted)
    if facts is None:
        return None, problems
    loc = str(report)
    problems += ledger_problems(gold, facts, loc)
    fix_certify = (
        f"certify {label} as it is now (`workbench certify --candidate {spec} ...`) and use that"
        " report"
    )
    if facts.candidate != label or facts.candidate_fingerprint != fingerprint:
        message = (
            f"the report certified {facts.candidate} ({facts.candidate_fingerprint[:12]}), not"
            f" {label} as the spec is now ({fingerprint[:12]})"
        )
        problems.append(problem(loc, "report_other_judge", message, fix_certify))
    if facts.outcome != "certified":
        message = (
            f"the report's outcome is {facts.outcome!r}: only a certified report is evidence for"
            " authority"
        )
        problems.append(problem(loc, "report_not_certified", message, fix_certify))
    elif facts.grant.use == "none":
        message = f"the report grants no authority: {'; '.join(facts.grant.withheld)}"
        fix = "certify under a policy that declares use and scope (a new policy version)"
        problems.append(problem(loc, "report_grants_nothing", message, fix))
    fix_stale = "recertify the judge as it is now, on the gold as it is now"
    problems += [
        problem(loc, "judge_stale", f"stale: {r.message}", fix_stale)
        for r in staleness(facts, gold_state(gold), spec)
    ]
    revoked = state.revoked_at if state is not None else None
    if revoked is not None and facts.created_at <= revoked:
        message = (
            f"{label} was revoked on {revoked:%Y-%m-%d %H:%M}; this report was certified before"
            f" that ({facts.created_at:%Y-%m-%d %H:%M})"
        )
        fix = (
            "the evidence that triggered the revocation is not answered by an older report:"
            " certify again"
        )
        problems.append(problem(loc, "report_before_revocation", message, fix))
    return facts, problems


def _entry(
    judge: str,
    event: str,
    authority: str,
    previous: str,
    approver: str,
    reason: str,
    *,
    facts: ReportFacts | None = None,
    spec: str | Path | None = None,
    carry: AuthorityEntry | None = None,
    scope: object | None = None,
    shadow_of: str | None = None,
) -> AuthorityEntry:
    """A new entry, its evidence from ``facts`` (a report just checked) or ``carry``."""
    keys = ("report_id", "report_dir", "lock_sha256", "candidate_fingerprint", "policy")
    fields: dict[str, object] = dict.fromkeys(keys)
    fields["granted_use"] = None
    fields["candidate_spec"] = str(Path(spec).resolve()) if spec is not None else None
    if facts is not None:
        fields.update({k: getattr(facts, k) for k in keys}, granted_use=facts.grant.use)
    elif carry is not None:
        fields.update({k: getattr(carry, k) for k in (*keys, "granted_use", "candidate_spec")})
    return AuthorityEntry(
        entry_id=new_entry_id(),
        judge=judge,
        event=event,
        authority=authority,
        previous_authority=previous,
        scope=scope,
        shadow_of=shadow_of,
        approver=approver.strip(),
        reason=reason.strip(),
        when=datetime.now(UTC),
        recorded_by=current_user(),
        previous_sha256=None,
        **fields,
    )


def _trusted_step(
    gold: str | Path,
    facts: ReportFacts | None,
    approver: str,
    level: str | None,
    trust: str | Path | None,
    where: str,
) -> list[Problem]:
    """Why the step to ``level`` is not from trusted evidence (approver; signature for route and
    block)."""
    if facts is None:
        return []
    out = approver_problems(gold, approver, facts.certified_by) if approver.strip() else []
    if level is not None:
        out += signature_problems(facts, level, project_trust(gold, trust), where)
    return out


def grant(
    gold: str | Path,
    candidate: str | Path,
    report: str | Path,
    *,
    approver: str,
    reason: str,
    trust: str | Path | None = None,
) -> AuthorityEntry:
    """Record a certified report as the evidence for a judge's authority; ``trust``: a file of
    public keys that narrows the project's."""
    problems = _text_problems(approver, reason, approver_required=True)
    trusted = _given_trust(trust, problems)
    with _locked(gold, problems, grants=True) as (record, read):
        label = load_candidate(candidate).spec.label
        state = read.judges().get(label)
        facts, more = _evidence(gold, candidate, report, state, trusted)
        problems += more
        current = state.authority if state is not None else "none"
        level: str | None = None
        if facts is not None:
            level = lower(current if current != "none" else "advisory", facts.grant.use)
            if level == "block" and not _drift_after(gold, facts)[0]:
                # block rests on sentinels seen stable after *this* report: promote again then
                level = "route"
        problems += _trusted_step(gold, facts, approver, level, trust, str(report))
        _refuse_if(problems, f"grant {label} authority")
        assert facts is not None and level is not None
        entry = _entry(
            label,
            "granted",
            level,
            current,
            approver,
            reason,
            facts=facts,
            spec=candidate,
            scope=facts.grant.scope,
        )
        return record.append(entry, read)


def _step_problems(
    gold: str | Path, candidate: str | Path, label: str, current: str
) -> list[Problem]:
    if current == "none":
        message = f"{label} holds no authority: promotion starts from advisory"
        fix = (
            f"grant it first: `workbench authority grant --gold {gold} --candidate {candidate}"
            " --report REPORT --approver A --reason R`"
        )
        return [problem(label, "not_granted", message, fix)]
    if next_level(current) is None:
        message = f"{label} already holds block, the last step"
        fix = (
            "nothing to promote; widen its scope by certifying under a policy with a wider scope,"
            " then grant"
        )
        return [problem(label, "already_block", message, fix)]
    return []


def _promotion_problems(
    gold: str | Path, candidate: str | Path, report: str | Path, target: str, facts: ReportFacts
) -> list[Problem]:
    """What the report and the drift log lack for the step to ``target``."""
    out = []
    capped = [w for w in facts.grant.withheld if CONTROLS_NOT_REQUIRED in w]
    if capped and level_rank(target) > level_rank("advisory"):
        fix = f"certify under a policy whose controls block on {', '.join(AUTHORITY_CONTROL_ROLES)}"
        out.append(problem(str(report), CONTROLS_NOT_REQUIRED, capped[0], fix))
    elif facts.grant.use != "none" and level_rank(facts.grant.use) < level_rank(target):
        message = f"the report grants {facts.grant.use}, the next step is {target}"
        fix = f"certify under a policy that declares use: {target} (or block) to promote further"
        out.append(problem(str(report), "report_grants_less", message, fix))
    stable, detail = _drift_after(gold, facts) if target == "block" else (True, "")
    if not stable:
        message = (
            "block needs a stable sentinel drift check of this fingerprint after certification:"
            f" {detail}"
        )
        fix = (
            "record the baseline with the report and check: `workbench drift --candidate"
            f" {candidate} --gold {gold} --record-baseline --report {report}`, then `workbench"
            f" drift --candidate {candidate} --gold {gold}`"
        )
        out.append(problem(str(report), "drift_check_required", message, fix))
    return out


def promote(
    gold: str | Path,
    candidate: str | Path,
    report: str | Path,
    *,
    approver: str,
    reason: str,
    trust: str | Path | None = None,
) -> AuthorityEntry:
    """One step up advisory -> route -> block; ``trust`` as for :func:`grant`."""
    problems = _text_problems(approver, reason, approver_required=True)
    trusted = _given_trust(trust, problems)
    with _locked(gold, problems, grants=True) as (record, read):
        label = load_candidate(candidate).spec.label
        state = read.judges().get(label)
        current = state.authority if state is not None else "none"
        target = next_level(current)
        problems += _step_problems(gold, candidate, label, current)
        facts, more = _evidence(gold, candidate, report, state, trusted)
        problems += more
        if facts is not None and target is not None:
            problems += _promotion_problems(gold, candidate, report, target, facts)
        problems += _trusted_step(gold, facts, approver, target, trust, str(report))
        _refuse_if(problems, f"promote {label}")
        assert facts is not None and target is not None
        entry = _entry(
            label,
            "promoted",
            target,
            current,
            approver,
            reason,
            facts=facts,
            spec=candidate,
            scope=facts.grant.scope,
        )
        return record.append(entry, read)


def _unknown(judge: str, record: AuthorityRecord, note: str = "") -> Problem:
    message = f"the authority record {record.path} has no entry for {judge}{note}"
    return problem(judge, "judge_unknown", message, _FIX_JUDGE)


def demote(
    gold: str | Path, judge: str, *, reason: str, to: str | None = None, approver: str | None = None
) -> tuple[AuthorityEntry, list[Problem]]:
    """Lower a judge's authority (one step, or to ``to``); return the entry and the record's
    problems (a damaged record is appended to anyway)."""
    problems = _text_problems(approver, reason, approver_required=False)
    if approver is not None and approver.strip():
        problems += approver_problems(gold, approver, None)
    if to is not None and to not in LEVELS:
        message = f"unknown authority level {to!r}"
        problems.append(
            problem("--to", "level_invalid", message, f"choose one of {', '.join(LEVELS)}")
        )
    with _locked(gold, problems, grants=False) as (record, read):
        state = read.judges().get(judge)
        target: str | None = None
        if state is None:
            note = " (the record is damaged: use revoke)" if not read.ok else ""
            problems.append(_unknown(judge, record, note))
        elif not problems:
            current = state.authority
            below = LEVELS[level_rank(current) - 1] if current != "none" else None
            target = to if to is not None else below
            if target is None or level_rank(target) >= level_rank(current):
                message = f"{judge} holds {current}; {target or 'nothing'} is not lower"
                fix = "name a lower level with --to, or revoke"
                problems.append(problem(judge, "not_lower", message, fix))
        _refuse_if(problems, f"demote {judge}")
        assert state is not None and target is not None
        entry = _entry(
            judge,
            "demoted",
            target,
            state.authority,
            approver or current_user(),
            reason,
            scope=state.last.scope if target != "none" else None,
            carry=state.evidence or state.last,
        )
        return record.append(entry, read), read.problems


def revoke(
    gold: str | Path, judge: str, *, reason: str, approver: str | None = None
) -> tuple[AuthorityEntry, list[Problem]]:
    """Take all authority from a judge (and detach it from a shadow), even on a damaged record."""
    problems = _text_problems(approver, reason, approver_required=False)
    if approver is not None and approver.strip():
        problems += approver_problems(gold, approver, None)
    with _locked(gold, problems, grants=False) as (record, read):
        state = read.judges().get(judge)
        if state is None and read.ok:
            problems.append(_unknown(judge, record))
        elif state is not None and state.authority == "none" and state.shadow_of is None:
            message = f"{judge} holds no authority and runs in no shadow"
            problems.append(problem(judge, "nothing_to_revoke", message, "nothing to do"))
        _refuse_if(problems, f"revoke {judge}")
        previous = state.authority if state is not None else "none"
        carry = (state.evidence or state.last) if state is not None else None
        entry = _entry(
            judge, "revoked", "none", previous, approver or current_user(), reason, carry=carry
        )
        return record.append(entry, read), read.problems


def _shadow_problems(
    gold: str | Path, label: str, of: str, read: RecordRead, record: AuthorityRecord
) -> list[Problem]:
    states = read.judges()
    current, mine = states.get(of), states.get(label)
    out = []
    if label == of:
        message = f"{label} cannot run in shadow of itself"
        out.append(problem("--of", "shadow_of_itself", message, "name the judge holding authority"))
    elif current is None or current.authority == "none":
        out.append(
            problem(
                "--of",
                "shadow_of_without_authority",
                f"{of} holds no authority in {record.path}",
                "attach a shadow to the judge that holds authority (see `workbench status`)",
            )
        )
    if mine is not None and mine.authority != "none":
        out.append(
            problem(
                label,
                "shadow_has_authority",
                f"{label} holds {mine.authority}: a shadow has no authority",
                f"revoke it first (`workbench authority revoke --gold {gold} --judge {label}"
                " --reason ...`), then attach it in shadow",
            )
        )
    return out


def attach_shadow(
    gold: str | Path,
    candidate: str | Path,
    of: str,
    *,
    approver: str,
    reason: str,
    report: str | Path | None = None,
) -> AuthorityEntry:
    """Attach the judge at ``candidate`` in shadow to ``of``, a judge holding authority."""
    problems = _text_problems(approver, reason, approver_required=True)
    judge = load_candidate(candidate)
    label = judge.spec.label
    with _locked(gold, problems, grants=True) as (record, read):
        problems += _shadow_problems(gold, label, of, read, record)
        facts: ReportFacts | None = None
        if report is not None:
            facts, more = read_report(report, gold=gold)
            problems += more
            if facts is not None and (
                facts.candidate != label
                or facts.candidate_fingerprint != judge.identity.fingerprint()
            ):
                message = (
                    f"the report is of {facts.candidate} ({facts.candidate_fingerprint[:12]}), not"
                    f" {label} as the spec is now"
                )
                fix = "give a report of this candidate, or none"
                problems.append(problem(str(report), "report_other_judge", message, fix))
        if approver.strip():
            certifier = facts.certified_by if facts is not None else None
            problems += approver_problems(gold, approver, certifier)
        _refuse_if(problems, f"attach {label} in shadow")
        mine = read.judges().get(label)
        previous = mine.authority if mine else "none"
        entry = _entry(
            label,
            "shadow",
            "none",
            previous,
            approver,
            reason,
            facts=facts,
            spec=candidate,
            shadow_of=of,
        )
        return record.append(entry, read)
