"""Override records: a named approver waives specific gate blockers, for a limited time.

The store (default ``data/policies/overrides.jsonl``) is append-only. An ``override_id`` is
``ovr-`` + 16 hex digits of the sha256 of the record without its id, so an edited line no longer
loads. :func:`add_override` refuses every problem at once before writing; which blockers an
override waives is decided by :func:`workbench.policy.decide`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any, ClassVar

from pydantic import AwareDatetime, Field, ValidationError, model_validator

from .._io import AppendOnlyLog, JSONRecordError, iter_jsonl_lines, loads_json, sha256_json
from .._load import validation_problems
from .._record import Record, SchemaTooNew
from ..approval import Approvers, current_user, load_approvers
from ..errors import Problem, WorkbenchError, problem, refusal
from ..gold import Risk
from ._codes import BLOCKER_CODES, CRITICAL_NEVER_WAIVABLE, FALSE_PASS_CODES, Feature
from ._policy import NAME_PATTERN, Policy, load_policy

OVERRIDE_SCHEMA_VERSION = 2
"""2: adds ``author`` (who recorded the override; never its approver)."""
DEFAULT_OVERRIDES_PATH = Path("data/policies/overrides.jsonl")
DEFAULT_POLICIES_DIR = Path("data/policies")
_POLICY_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*@[A-Za-z0-9][A-Za-z0-9_.\-]*$")


@dataclass(frozen=True)
class OverrideScope:
    """What an override is checked against when added: the policy it names, the codes it may
    waive and, when known, the slices and cases (:func:`scope_of` for a release policy)."""

    label: str
    """``name@version`` of the policy the override names."""
    feature: Feature = "gate"
    """The check whose blocker codes it may name (:data:`~workbench.policy.BLOCKER_CODES`)."""
    slices: Mapping[str, str | None] | None = None
    """Slice -> risk level of every slice the policy declares; None: slices are not checked."""
    case_ids: frozenset[str] | None = None
    """Every case id the blockers can name; None: case ids are not checked."""


def scope_of(policy: Policy | OverrideScope | str) -> OverrideScope:
    """The scope of a release policy (its slices and crossed cells and their risk), or of
    ``name@version`` alone."""
    if isinstance(policy, OverrideScope):
        return policy
    if isinstance(policy, str):
        return OverrideScope(label=policy)
    return OverrideScope(
        label=policy.label,
        slices={name: s.risk.value for name, s in {**policy.cells, **policy.slices}.items()},
    )


class _OverrideBody(Record):
    """Every field of an override but its id (the id is a hash of these)."""

    KIND: ClassVar[str] = "override"

    schema_version: int = OVERRIDE_SCHEMA_VERSION
    """Override record format version."""
    approver: str = Field(min_length=1)
    """Who approved the waiver: a project approver, never the override's author."""
    author: str | None = None
    """Who recorded the override; None only on records before schema 2."""
    created_at: AwareDatetime
    """When the override was recorded (UTC)."""
    policy: str = Field(pattern=NAME_PATTERN[:-1] + r"@[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    """The policy it applies to, ``name@version``; other policies ignore it."""
    candidate_fingerprint: str | None = None
    """When set, it applies only to results of this judge fingerprint."""
    codes: list[str] = Field(min_length=1)
    """Blocker codes it may waive."""
    slices: list[str] = Field(default_factory=list)
    """Slices it covers. Empty: blockers without a slice, or those whose cases are all listed."""
    case_ids: list[str] = Field(default_factory=list)
    """Cases reviewed one by one: the only way to waive a critical false pass (list them all)."""
    reason: str = Field(min_length=1)
    """Why the blocker is acceptable, with the evidence reviewed."""
    expires_at: AwareDatetime
    """When it stops applying; must be after ``created_at``."""
    follow_up: str = Field(min_length=1)
    """Ticket or action that removes the need for the override."""

    @model_validator(mode="after")
    def _checks(self) -> _OverrideBody:
        if self.expires_at <= self.created_at:
            raise ValueError("expires_at must be after created_at")
        for name in ("approver", "reason", "follow_up"):
            if not getattr(self, name).strip():
                raise ValueError(f"{name} must be written, not blank")
        return self


class Override(_OverrideBody):
    """One approved waiver, exactly as stored on one line of the override store."""

    override_id: str = Field(pattern=r"^ovr-[0-9a-f]{16}$")
    """``ovr-`` + 16 hex digits of the sha256 over the record without this field."""

    @model_validator(mode="after")
    def _id_matches(self) -> Override:
        # the fields the line holds: a schema-1 line has no author and hashes without one
        if self.override_id != override_id_of(self.model_dump(mode="json", exclude_unset=True)):
            raise ValueError(
                "override_id does not match the record's content (the line was edited after it was"
                " written)"
            )
        return self

    def applies_to(self, policy_label: str, fingerprint: str | None) -> bool:
        """True when the override is for this policy and (if scoped) this candidate."""
        return self.policy == policy_label and (
            self.candidate_fingerprint is None or self.candidate_fingerprint == fingerprint
        )

    def is_active(self, now: datetime) -> bool:
        """True between ``created_at`` (inclusive) and ``expires_at`` (exclusive)."""
        return self.created_at <= now < self.expires_at


def override_id_of(record: dict[str, Any]) -> str:
    """The id of a record: ``ovr-`` + sha256 prefix of its canonical JSON without the id."""
    body = {k: v for k, v in record.items() if k != "override_id"}
    return "ovr-" + sha256_json(body)[:16]


def expiry_from(value: str | date | datetime) -> datetime:
    """An aware UTC datetime from ``YYYY-MM-DD`` (00:00 UTC that day) or an ISO datetime."""
    if isinstance(value, str):
        try:
            value = (
                datetime.fromisoformat(value)
                if "T" in value or " " in value
                else date.fromisoformat(value)
            )
        except ValueError:
            raise refusal(
                "invalid expiry",
                "--expires",
                "override_invalid",
                f"{value!r} is not a date (YYYY-MM-DD) or an ISO datetime",
                "give the expiry as YYYY-MM-DD",
            ) from None
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return datetime.combine(value, time(0, 0), tzinfo=UTC)


def _policy_label(policy: Policy | OverrideScope | str) -> str:
    return policy if isinstance(policy, str) else policy.label


def build_override(
    path: str | Path,
    *,
    policy: Policy | OverrideScope | str,
    approver: str,
    reason: str,
    expires_at: str | date | datetime,
    follow_up: str,
    codes: Sequence[str],
    slices: Sequence[str] = (),
    case_ids: Sequence[str] = (),
    candidate_fingerprint: str | None = None,
    created_at: datetime | None = None,
    author: str | None = None,
) -> Override:
    """Validate an override without writing it; raise :class:`WorkbenchError` with every problem
    (codes, scope: :func:`check_override_scope`, expiry, blank fields); ``path`` locates them."""
    created = (created_at or datetime.now(UTC)).replace(microsecond=0)
    if created.tzinfo is None:
        created = created.replace(tzinfo=UTC)
    loc = str(path)
    problems: list[Problem] = []
    try:
        expires = expiry_from(expires_at).isoformat()
    except WorkbenchError as exc:
        problems += exc.problems
        expires = None
    record: dict[str, Any] = {
        "schema_version": OVERRIDE_SCHEMA_VERSION,
        "approver": approver,
        "author": (author or current_user()).strip(),
        "created_at": created.isoformat(),
        "policy": _policy_label(policy),
        "candidate_fingerprint": candidate_fingerprint,
        "codes": sorted(set(codes)),
        "slices": sorted(set(slices)),
        "case_ids": sorted(set(case_ids)),
        "reason": reason,
        "expires_at": expires,
        "follow_up": follow_up,
    }
    problems += check_override_scope(
        loc, policy, record["codes"], record["slices"], record["case_ids"]
    )
    problems += approval_problems(approver, record["author"], loc, load_approvers(path))
    override: Override | None = None
    if expires is not None:
        try:
            body = _OverrideBody.model_validate(record)
            override = Override(
                **body.model_dump(), override_id=override_id_of(body.model_dump(mode="json"))
            )
        except ValidationError as exc:
            problems += validation_problems(
                exc, at=loc, code="override_invalid", root="override", fix="correct this value"
            )
    if problems or override is None:
        raise WorkbenchError("override refused", problems)
    return override


def add_override(path: str | Path, **fields: Any) -> Override:
    """Validate an override (:func:`build_override`, same arguments) and append it to a store that
    loads cleanly and does not hold it yet."""
    override = build_override(path, **fields)
    loc = str(path)
    with AppendOnlyLog(path) as log:
        existing = load_overrides(path)
        if any(o.override_id == override.override_id for o in existing):
            raise refusal(
                "override refused",
                loc,
                "override_duplicate",
                f"{override.override_id} is already in the store",
                "nothing to do: the same override is already recorded",
            )
        log.append(override.model_dump(mode="json"))
    return override


def check_override_scope(
    loc: str,
    policy: Policy | OverrideScope | str,
    codes: Sequence[str],
    slices: Sequence[str],
    case_ids: Sequence[str],
) -> list[Problem]:
    """Every reason an override with these codes, slices and cases could never apply (codes
    always; slices and cases when the scope knows them)."""
    scope = scope_of(policy)
    problems = [p for code in codes if (p := _code_problem(loc, scope, code)) is not None]
    problems += _case_problems(loc, scope, case_ids)
    for name in slices:
        problems += _slice_problems(loc, scope, name, codes, case_ids)
    return problems


def _code_problem(loc: str, scope: OverrideScope, code: str) -> Problem | None:
    spec = BLOCKER_CODES.get(code)
    mine = sorted(c for c, s in BLOCKER_CODES.items() if s.feature == scope.feature and s.waivable)
    if spec is not None and not spec.waivable:
        message = f"blocker code {code!r} can never be waived ({spec.never})"
        fix = "complete the evaluation or fix the policy/inputs instead"
        return problem(loc, "override_code_not_waivable", message, fix)
    if spec is not None and spec.feature == scope.feature:
        return None
    what = "a blocker code any gate emits" if spec is None else f"a {scope.feature} blocker code"
    message = f"{code!r} is not {what}, so an override of {scope.label} could never apply"
    return problem(
        loc, "override_unknown_code", message, f"name one of the waivable codes: {', '.join(mine)}"
    )


def _case_problems(loc: str, scope: OverrideScope, case_ids: Sequence[str]) -> list[Problem]:
    if scope.case_ids is None:
        return []
    fix = "name the case ids the blocker lists"
    return [
        problem(loc, "override_unknown_case", f"case {case!r} is not in {scope.label}", fix)
        for case in case_ids
        if case not in scope.case_ids
    ]


def _slice_problems(
    loc: str, scope: OverrideScope, name: str, codes: Sequence[str], case_ids: Sequence[str]
) -> list[Problem]:
    if scope.slices is None:
        return []
    if name not in scope.slices:
        fix = "name one of the policy's slices: " + ", ".join(scope.slices)
        return [
            problem(loc, "override_unknown_slice", f"slice {name!r} is not in {scope.label}", fix)
        ]
    if scope.slices[name] != Risk.critical.value:
        return []
    problems: list[Problem] = []
    fp = sorted(set(codes) & FALSE_PASS_CODES)
    if fp and not case_ids:
        message = (
            f"slice {name!r} is critical: a false pass there ({', '.join(fp)}) is waived only case"
            " by case, never for the whole slice"
        )
        fix = (
            "review each false-pass case and name every one with --case (the gate lists them);"
            " drop --slice for these codes"
        )
        problems.append(problem(loc, "override_critical_false_pass_by_slice", message, fix))
    never = sorted(set(codes) & CRITICAL_NEVER_WAIVABLE)
    if never:
        message = f"slice {name!r} is critical: {', '.join(never)} can never be waived there"
        fix = "grow the slice or change the judge; the sample must show a critical slice is bounded"
        problems.append(problem(loc, "override_not_waivable_in_critical", message, fix))
    return problems


def describe_override(override: Override, policy: Policy | None = None) -> list[str]:
    """What an override will apply to, one line each: scope, period and every code's reach."""
    lines = [
        f"policy:    {override.policy}",
        f"candidate: {override.candidate_fingerprint or 'any judge evaluated under this policy'}",
        (
            f"in force:  from {override.created_at.isoformat()} until"
            f" {override.expires_at.isoformat()} (then ignored)"
        ),
    ]
    for code in override.codes:
        reach: list[str] = []
        for name in override.slices:
            spec = (policy.slices.get(name) or policy.cells.get(name)) if policy else None
            risk = f" ({spec.risk.value})" if spec is not None else ""
            if spec is not None and spec.risk == Risk.critical and code in FALSE_PASS_CODES:
                reach.append(
                    f"not slice {name}{risk} as a whole: a critical false pass is waived only when"
                    " every false-pass case is named below"
                )
            else:
                reach.append(f"a {code} blocker in slice {name}{risk}")
        if override.case_ids:
            shown = ", ".join(override.case_ids[:10]) + (
                f" +{len(override.case_ids) - 10} more" if len(override.case_ids) > 10 else ""
            )
            reach.append(
                f"a {code} blocker in any slice whose every case is among the"
                f" {len(override.case_ids)} named: {shown}"
            )
        if not override.slices and not override.case_ids:
            reach.append(
                f"a {code} blocker of the whole evaluation (one without a slice), never a slice's"
            )
        lines.append(f"waives:    {code}: " + "; or ".join(reach))
    return lines


def approval_problems(
    approver: str, author: str | None, location: str, approvers: Approvers
) -> list[Problem]:
    """Why an override's approval does not count: an unlisted approver, or its own author."""
    problems = approvers.problems(approver, location, "the override's approver")
    if author is not None and author.strip() == approver.strip():
        message = f"{approver!r} both recorded and approved the override"
        fix = "have another listed approver review and approve it (--approver)"
        problems.append(problem(location, "override_self_approved", message, fix))
    return problems


def certifier_waiver_problems(
    overrides: Iterable[Override],
    policy: Policy | str,
    fingerprint: str,
    certifier: str | None = None,
    now: datetime | None = None,
) -> list[Problem]:
    """An ``approver_is_certifier`` problem per override that would apply to this certification
    and was approved by ``certifier`` (default: the current user)."""
    who = (certifier or current_user()).strip()
    active = active_overrides(overrides, policy, fingerprint, now or datetime.now(UTC))
    fix = "have another listed approver approve the waiver, or have someone else certify"
    return [
        problem(
            o.override_id,
            "approver_is_certifier",
            f"the waiver {o.override_id} is approved by {o.approver!r}, who is certifying",
            fix,
        )
        for o in active
        if o.approver.strip() == who
    ]


def format_override(override: Override, now: datetime) -> str:
    """One line for a list of overrides."""
    o = override
    scope = []
    if o.slices:
        scope.append("slices " + ", ".join(o.slices))
    if o.case_ids:
        more = " ..." if len(o.case_ids) > 5 else ""
        scope.append(f"{len(o.case_ids)} case(s) " + ", ".join(o.case_ids[:5]) + more)
    if o.candidate_fingerprint:
        scope.append(f"candidate {o.candidate_fingerprint[:12]}")
    return (
        f"{o.override_id} [{'EXPIRED' if o.expires_at <= now else 'active'}] {o.policy}: codes"
        f" {', '.join(o.codes)}; {'; '.join(scope) or 'no slice'}; approved by {o.approver} on"
        f" {o.created_at.date().isoformat()}, expires {o.expires_at.isoformat()}; reason:"
        f" {o.reason}; follow-up: {o.follow_up}"
    )


def resolve_policy_ref(value: str, store: str | Path) -> Path:
    """The policy file an override names: a path, or ``name@version`` beside the store, then in
    ``data/policies/``."""
    path = Path(value)
    if path.suffix in (".yaml", ".yml") or path.exists() or not _POLICY_LABEL.match(value):
        return path
    for folder in dict.fromkeys([Path(store).parent, DEFAULT_POLICIES_DIR]):
        candidate = folder / f"{value}.yaml"
        if candidate.is_file():
            return candidate
    return Path(store).parent / f"{value}.yaml"


def policy_for_override(value: str, store: str | Path, **fields: Any) -> Policy:
    """The policy an override names, loaded; refuses with its problems and the override's own."""
    try:
        return load_policy(resolve_policy_ref(value, store))
    except WorkbenchError as exc:
        problems = [_missing_policy(p, value, store) for p in exc.problems] or [
            problem("--policy", "policy_invalid", exc.summary, "correct the policy file")
        ]
    label = value if _POLICY_LABEL.match(value) else "unknown@unknown"
    try:
        build_override(store, policy=label, **fields)
    except WorkbenchError as exc:
        problems += exc.problems
    raise WorkbenchError(f"override refused: {len(problems)} problem(s)", problems)


def _missing_policy(p: Problem, value: str, store: str | Path) -> Problem:
    if p.code != "policy_missing":
        return p
    fix = (
        f"{p.fix} (an override must name a policy file that exists and loads: a path, or"
        f" name@version found as {Path(store).parent}/<name@version>.yaml or"
        f" {DEFAULT_POLICIES_DIR}/<name@version>.yaml)"
    )
    return p.model_copy(update={"message": f"--policy {value!r}: {p.message}", "fix": fix})


def load_overrides(path: str | Path) -> list[Override]:
    """Every override in the store, in file order (none if missing); raises
    :class:`WorkbenchError` listing every bad line."""
    path = Path(path)
    if not path.exists():
        return []
    try:
        approvers = load_approvers(path)
    except WorkbenchError as exc:
        raise WorkbenchError(
            f"{path}: the override store cannot be checked", exc.problems
        ) from None
    problems: list[Problem] = []
    out: list[Override] = []
    seen: dict[str, int] = {}
    not_utf8: list[int] = []
    for number, text in iter_jsonl_lines(path, not_utf8):
        where = f"{path}:{number}"
        override = _parse_line(text, where, problems)
        if override is None:
            continue
        if override.override_id in seen:
            message = f"{override.override_id} already on line {seen[override.override_id]}"
            fix = "remove the duplicated line (a copied store)"
            problems.append(problem(where, "override_duplicate", message, fix))
            continue
        seen[override.override_id] = number
        problems += approval_problems(override.approver, override.author, where, approvers)
        out.append(override)
    fix = "restore the line from version control"
    problems += [
        problem(f"{path}:{n}", "override_encoding", "the line is not UTF-8", fix) for n in not_utf8
    ]
    if problems:
        raise WorkbenchError(f"{path}: the override store has {len(problems)} problem(s)", problems)
    return out


_RESTORE = "restore the line from version control; the store is append-only"


def _parse_line(text: str, where: str, problems: list[Problem]) -> Override | None:
    try:
        raw = loads_json(text)
    except JSONRecordError as exc:
        code = "override_malformed" if exc.code == "malformed_json" else exc.code
        problems.append(problem(where, code, f"not a valid JSON object ({exc.msg})", _RESTORE))
        return None
    if not isinstance(raw, dict):
        problems.append(problem(where, "override_malformed", "not a JSON object", _RESTORE))
        return None
    try:
        return Override.model_validate(raw)
    except SchemaTooNew as exc:
        problems.append(exc.problem_at(where))
    except ValidationError as exc:
        problems += validation_problems(
            exc,
            at=where,
            code="override_invalid",
            root="override",
            fix="restore the line from version control; add a new override instead of editing one",
        )
    return None


def active_overrides(
    overrides: Iterable[Override],
    policy: Policy | str | None,
    fingerprint: str | None,
    now: datetime,
) -> list[Override]:
    """The overrides that apply to this policy and candidate and have not expired at ``now``."""
    return [o for o in _for(overrides, policy, fingerprint) if o.is_active(now)]


def expired_overrides(
    overrides: Iterable[Override],
    policy: Policy | str | None,
    fingerprint: str | None,
    now: datetime,
) -> list[Override]:
    """The overrides for this policy and candidate that had expired by ``now`` (ignored)."""
    return [o for o in _for(overrides, policy, fingerprint) if o.expires_at <= now]


def _for(
    overrides: Iterable[Override], policy: Policy | str | None, fingerprint: str | None
) -> list[Override]:
    if policy is None:
        return []
    label = _policy_label(policy)
    return [o for o in overrides if o.applies_to(label, fingerprint)]
