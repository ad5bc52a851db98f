"""``workbench authority``: grant, promote, demote, revoke and attach in shadow.

The promotion path is advisory -> route -> block, one step at a time (no skipping: each step
is a separate, approved entry). What each step needs:

- **grant** (a judge without authority starts at ``advisory``; a judge with authority keeps
  its level, capped by the new report, which becomes its evidence: this is how a recertified
  judge is rebound to its new report; it keeps ``block`` only with a stable drift check made
  after the new report, else it continues at ``route`` until promoted again): a certified report of
  exactly this version (its lock
  names the spec's current fingerprint) that verifies, whose policy grants a use
  (:func:`~workbench.authority.grant_for`), and that is not stale (:mod:`._stale`). After a
  revocation, only a report certified after it.
- **promote** (one step up): the same, and the report must grant at least the next level. To
  ``block`` also a sentinel drift check of this fingerprint, ``stable``, recorded after the
  report (``workbench drift``): a judge blocks unattended only once it has been seen to keep
  its verdicts after certification.
- **demote** (down, one step by default or ``to`` any lower level) and **revoke** (to
  ``none``): a reason only, never evidence, and even on a damaged record: rollback must always
  be fast. The evidence that triggered it stays where it is; nothing is deleted.
- **shadow**: a judge without authority is attached beside one that has authority; its
  verdicts are recorded by ``workbench run --shadow-of`` and never used.

Every entry names the report, the approver, the reason and the date.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import Problem, WorkbenchError
from ..heldout import current_user
from ..judges import load_candidate
from ._certified import ReportFacts, read_report
from ._grant import LEVELS, level_rank, lower, next_level
from ._location import authority_path_for
from ._record import AuthorityEntry, AuthorityRecord, JudgeAuthority, RecordRead, new_entry_id
from ._stale import gold_state, staleness

if TYPE_CHECKING:
    from ..repeatability import DriftEntry


def _p(location: str, code: str, message: str, fix: str) -> Problem:
    return Problem(location=location, code=code, message=message, fix=fix)


def _text_problems(
    approver: str | None, reason: str | None, *, approver_required: bool
) -> list[Problem]:
    problems = []
    if approver_required and not (approver and approver.strip()):
        problems.append(
            _p(
                "--approver",
                "approver_missing",
                "the entry needs a named approver",
                "give --approver NAME: the person accountable for this authority",
            )
        )
    if not (reason and reason.strip()):
        problems.append(
            _p(
                "--reason",
                "reason_missing",
                "the entry needs a reason",
                'give --reason "..." in words a later reader understands',
            )
        )
    return problems


def _open(gold: str | Path) -> AuthorityRecord:
    return AuthorityRecord(authority_path_for(gold))


def _damaged(record: AuthorityRecord, read: RecordRead) -> list[Problem]:
    if read.ok:
        return []
    return [
        _p(
            str(record.path),
            "authority_record_damaged",
            f"the authority record is damaged ({len(read.problems)} problem(s)): nothing can be"
            " granted on it",
            "restore the record from version control or a backup; demote and revoke still work",
        ),
        *read.problems,
    ]


def _latest_check(gold: str | Path, fingerprint: str) -> tuple[DriftEntry | None, str]:
    """The latest drift check of ``fingerprint`` in the gold's drift log, and how it reads."""
    from ..repeatability import drift_log_path_for, latest_drift

    log = drift_log_path_for(gold)
    try:
        entry = latest_drift(log, fingerprint)
    except WorkbenchError as exc:
        return None, f"the drift log {log} cannot be read ({exc.summary})"
    if entry is None:
        return None, f"no drift check of fingerprint {fingerprint[:12]} in {log}"
    return (
        entry,
        f"drift check {entry.entry_id} of {entry.recorded_at:%Y-%m-%d %H:%M} is {entry.status}",
    )


def _evidence(
    gold: str | Path, spec: str | Path, report: str | Path, state: JudgeAuthority | None
) -> tuple[ReportFacts | None, str, list[Problem]]:
    """The report as evidence for the judge at ``spec``: every reason it is not enough."""
    judge = load_candidate(spec)
    label, fingerprint = judge.spec.label, judge.identity.fingerprint()
    facts, problems = read_report(report)
    if facts is None:
        return None, label, problems
    loc = str(report)
    fix_certify = (
        f"certify {label} as it is now (`workbench certify --candidate {spec} ...`) and use that"
        " report"
    )
    if facts.candidate != label or facts.candidate_fingerprint != fingerprint:
        problems.append(
            _p(
                loc,
                "report_other_judge",
                f"the report certified {facts.candidate} ({facts.candidate_fingerprint[:12]}), not"
                f" {label} as the spec is now ({fingerprint[:12]})",
                fix_certify,
            )
        )
    if facts.outcome != "certified":
        problems.append(
            _p(
                loc,
                "report_not_certified",
                f"the report's outcome is {facts.outcome!r}: only a certified report is evidence"
                " for authority",
                fix_certify,
            )
        )
    elif facts.grant.use == "none":
        problems.append(
            _p(
                loc,
                "report_grants_nothing",
                f"the report grants no authority: {'; '.join(facts.grant.withheld)}",
                "certify under a policy that declares use and scope (a new policy version)",
            )
        )
    for reason in staleness(facts, gold_state(gold), spec):
        problems.append(
            _p(
                loc,
                "judge_stale",
                f"stale: {reason.message}",
                "recertify the judge as it is now, on the gold as it is now",
            )
        )
    revoked = state.revoked_at if state is not None else None
    if revoked is not None and facts.created_at <= revoked:
        problems.append(
            _p(
                loc,
                "report_before_revocation",
                f"{label} was revoked on {revoked:%Y-%m-%d %H:%M}; this report was certified before"
                f" that ({facts.created_at:%Y-%m-%d %H:%M})",
                "the evidence that triggered the revocation is not answered by an older report:"
                " certify again",
            )
        )
    return facts, label, problems


def _entry(
    judge: str,
    event: str,
    authority: str,
    previous: str,
    facts: ReportFacts | None,
    spec: str | Path | None,
    approver: str,
    reason: str,
    *,
    scope: object | None = None,
    carry: AuthorityEntry | None = None,
    shadow_of: str | None = None,
) -> AuthorityEntry:
    fields: dict[str, object] = {
        "report_id": None,
        "report_dir": None,
        "lock_sha256": None,
        "candidate_fingerprint": None,
        "candidate_spec": str(Path(spec).resolve()) if spec is not None else None,
        "policy": None,
        "granted_use": None,
    }
    if facts is not None:
        fields.update(
            report_id=facts.report_id,
            report_dir=facts.report_dir,
            lock_sha256=facts.lock_sha256,
            candidate_fingerprint=facts.candidate_fingerprint,
            policy=facts.policy,
            granted_use=facts.grant.use,
        )
    elif carry is not None:
        fields.update(
            report_id=carry.report_id,
            report_dir=carry.report_dir,
            lock_sha256=carry.lock_sha256,
            candidate_fingerprint=carry.candidate_fingerprint,
            candidate_spec=carry.candidate_spec,
            policy=carry.policy,
            granted_use=carry.granted_use,
        )
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


def grant(
    gold: str | Path, candidate: str | Path, report: str | Path, *, approver: str, reason: str
) -> AuthorityEntry:
    """Record a certified report as the evidence for a judge's authority (module doc)."""
    problems = _text_problems(approver, reason, approver_required=True)
    record = _open(gold)
    with record.locked():
        read = record.read()
        problems += _damaged(record, read)
        label = load_candidate(candidate).spec.label
        state = read.judges().get(label)
        facts, label, more = _evidence(gold, candidate, report, state)
        problems += more
        if problems or facts is None:
            raise WorkbenchError(
                f"refusing to grant {label} authority: {len(problems)} problem(s)", problems
            )
        current = state.authority if state is not None else "none"
        level = lower(current if current != "none" else "advisory", facts.grant.use)
        if level == "block" and not _drift_after(gold, facts)[0]:
            # block rests on sentinels seen stable after *this* report: promote again once checked
            level = "route"
        return record.append(
            _entry(
                label,
                "granted",
                level,
                current,
                facts,
                candidate,
                approver,
                reason,
                scope=facts.grant.scope,
            ),
            read,
        )


def _drift_after(gold: str | Path, facts: ReportFacts) -> tuple[bool, str]:
    """Whether the latest drift check of the certified fingerprint is stable and made after the
    report."""
    entry, how = _latest_check(gold, facts.candidate_fingerprint)
    if entry is None or entry.status != "stable":
        return False, how
    if entry.recorded_at <= facts.created_at:
        return False, f"{how}, made before the report ({facts.created_at:%Y-%m-%d %H:%M})"
    return True, how


def promote(
    gold: str | Path, candidate: str | Path, report: str | Path, *, approver: str, reason: str
) -> AuthorityEntry:
    """One step up the path advisory -> route -> block (module doc)."""
    problems = _text_problems(approver, reason, approver_required=True)
    record = _open(gold)
    with record.locked():
        read = record.read()
        problems += _damaged(record, read)
        label = load_candidate(candidate).spec.label
        state = read.judges().get(label)
        current = state.authority if state is not None else "none"
        target = next_level(current)
        if current == "none":
            problems.append(
                _p(
                    label,
                    "not_granted",
                    f"{label} holds no authority: promotion starts from advisory",
                    f"grant it first: `workbench authority grant --gold {gold} --candidate"
                    f" {candidate} --report REPORT --approver A --reason R`",
                )
            )
        elif target is None:
            problems.append(
                _p(
                    label,
                    "already_block",
                    f"{label} already holds block, the last step",
                    "nothing to promote; widen its scope by certifying under a policy with a wider"
                    " scope, then grant",
                )
            )
        facts, label, more = _evidence(gold, candidate, report, state)
        problems += more
        if (
            facts is not None
            and target is not None
            and facts.grant.use != "none"
            and level_rank(facts.grant.use) < level_rank(target)
        ):
            problems.append(
                _p(
                    str(report),
                    "report_grants_less",
                    f"the report grants {facts.grant.use}, the next step is {target}",
                    f"certify under a policy that declares use: {target} (or block) to promote"
                    " further",
                )
            )
        if facts is not None and target == "block":
            stable, detail = _drift_after(gold, facts)
            if not stable:
                problems.append(
                    _p(
                        str(report),
                        "drift_check_required",
                        "block needs a stable sentinel drift check of this fingerprint after"
                        f" certification: {detail}",
                        "record the baseline with the report and check: `workbench drift"
                        f" --candidate {candidate} --gold {gold} --record-baseline --report"
                        f" {report}`, then `workbench drift --candidate {candidate} --gold {gold}`",
                    )
                )
        if problems or facts is None or target is None:
            raise WorkbenchError(
                f"refusing to promote {label}: {len(problems)} problem(s)", problems
            )
        return record.append(
            _entry(
                label,
                "promoted",
                target,
                current,
                facts,
                candidate,
                approver,
                reason,
                scope=facts.grant.scope,
            ),
            read,
        )


def demote(
    gold: str | Path, judge: str, *, reason: str, to: str | None = None, approver: str | None = None
) -> tuple[AuthorityEntry, list[Problem]]:
    """Lower a judge's authority (one step, or to ``to``); a reason is all it needs.

    Returns the entry and the record's problems (a damaged record is appended to anyway).
    """
    problems = _text_problems(approver, reason, approver_required=False)
    if to is not None and to not in LEVELS:
        problems.append(
            _p(
                "--to",
                "level_invalid",
                f"unknown authority level {to!r}",
                f"choose one of {', '.join(LEVELS)}",
            )
        )
    record = _open(gold)
    with record.locked():
        read = record.read()
        state = read.judges().get(judge)
        target: str | None = None
        if state is None:
            problems.append(
                _p(
                    judge,
                    "judge_unknown",
                    f"the authority record {record.path} has no entry for {judge}"
                    + (" (the record is damaged: use revoke)" if not read.ok else ""),
                    "name the judge as name@version, as `workbench status` lists it",
                )
            )
        elif not problems:
            current = state.authority
            target = (
                to
                if to is not None
                else (LEVELS[level_rank(current) - 1] if current != "none" else None)
            )
            if target is None or level_rank(target) >= level_rank(current):
                problems.append(
                    _p(
                        judge,
                        "not_lower",
                        f"{judge} holds {current}; {target or 'nothing'} is not lower",
                        "name a lower level with --to, or revoke",
                    )
                )
        if problems or state is None or target is None:
            raise WorkbenchError(
                f"refusing to demote {judge}: {len(problems)} problem(s)", problems
            )
        entry = _entry(
            judge,
            "demoted",
            target,
            state.authority,
            None,
            None,
            approver or current_user(),
            reason,
            scope=state.last.scope if target != "none" else None,
            carry=state.evidence or state.last,
        )
        return record.append(entry, read), read.problems


def revoke(
    gold: str | Path, judge: str, *, reason: str, approver: str | None = None
) -> tuple[AuthorityEntry, list[Problem]]:
    """Take all authority from a judge (and detach it from a shadow); a reason is all it needs.

    On a damaged record a judge the record no longer shows can still be revoked.
    """
    problems = _text_problems(approver, reason, approver_required=False)
    record = _open(gold)
    with record.locked():
        read = record.read()
        state = read.judges().get(judge)
        if state is None and read.ok:
            problems.append(
                _p(
                    judge,
                    "judge_unknown",
                    f"the authority record {record.path} has no entry for {judge}",
                    "name the judge as name@version, as `workbench status` lists it",
                )
            )
        elif state is not None and state.authority == "none" and state.shadow_of is None:
            problems.append(
                _p(
                    judge,
                    "nothing_to_revoke",
                    f"{judge} holds no authority and runs in no shadow",
                    "nothing to do",
                )
            )
        if problems:
            raise WorkbenchError(
                f"refusing to revoke {judge}: {len(problems)} problem(s)", problems
            )
        previous = state.authority if state is not None else "none"
        carry = (state.evidence or state.last) if state is not None else None
        entry = _entry(
            judge,
            "revoked",
            "none",
            previous,
            None,
            None,
            approver or current_user(),
            reason,
            carry=carry,
        )
        return record.append(entry, read), read.problems


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
    record = _open(gold)
    judge = load_candidate(candidate)
    label = judge.spec.label
    with record.locked():
        read = record.read()
        problems += _damaged(record, read)
        states = read.judges()
        current = states.get(of)
        if label == of:
            problems.append(
                _p(
                    "--of",
                    "shadow_of_itself",
                    f"{label} cannot run in shadow of itself",
                    "name the judge holding authority",
                )
            )
        elif current is None or current.authority == "none":
            problems.append(
                _p(
                    "--of",
                    "shadow_of_without_authority",
                    f"{of} holds no authority in {record.path}",
                    "attach a shadow to the judge that holds authority (see `workbench status`)",
                )
            )
        mine = states.get(label)
        if mine is not None and mine.authority != "none":
            problems.append(
                _p(
                    label,
                    "shadow_has_authority",
                    f"{label} holds {mine.authority}: a shadow has no authority",
                    f"revoke it first (`workbench authority revoke --gold {gold} --judge {label}"
                    " --reason ...`), then attach it in shadow",
                )
            )
        facts: ReportFacts | None = None
        if report is not None:
            facts, more = read_report(report)
            problems += more
            if facts is not None and (
                facts.candidate != label
                or facts.candidate_fingerprint != judge.identity.fingerprint()
            ):
                problems.append(
                    _p(
                        str(report),
                        "report_other_judge",
                        f"the report is of {facts.candidate} ({facts.candidate_fingerprint[:12]}),"
                        f" not {label} as the spec is now",
                        "give a report of this candidate, or none",
                    )
                )
        if problems:
            raise WorkbenchError(
                f"refusing to attach {label} in shadow: {len(problems)} problem(s)", problems
            )
        return record.append(
            _entry(
                label,
                "shadow",
                "none",
                mine.authority if mine else "none",
                facts,
                candidate,
                approver,
                reason,
                shadow_of=of,
            ),
            read,
        )
