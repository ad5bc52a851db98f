"""The one decision step every gate ends in: blockers and overrides -> one outcome and exit code.

:func:`decide` sorts the blockers (category, slice, code, message), applies the overrides in
force (:func:`waiver_for`), lists those that waived nothing (:func:`unapplied_overrides`), and
takes the outcome by precedence: ``evaluation_incomplete`` > ``quality_failed`` >
``review_required`` > clear (:func:`workbench.outcomes.outcome_of`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field

from .._record import Record as _Model
from ..gold import Risk
from ..outcomes import exit_code, outcome_of
from ._codes import BLOCKER_CODES, FALSE_PASS_CODES, NON_WAIVABLE_CODES, Category
from ._overrides import Override, active_overrides, expired_overrides

CATEGORY_ORDER: dict[str, int] = {"incomplete": 0, "quality": 1, "review": 2}
"""Blocker categories in precedence order (the first present decides the outcome)."""
CheckOutcome = Literal["passed", "quality_failed", "evaluation_incomplete", "review_required"]
"""The outcomes of a gate whose clear outcome is ``passed`` (ranking, noise)."""
UnappliedReason = Literal[
    "other_policy",
    "other_candidate",
    "expired",
    "not_yet_active",
    "no_matching_blocker",
    "already_waived",
    "not_covered",
    "not_waivable",
]


class Blocker(_Model):
    """One reason a gate does not pass (certify), from any feature."""

    code: str
    """Stable machine-readable name (:data:`~workbench.policy._codes.BLOCKER_CODES`)."""
    category: Category
    """``incomplete`` (evidence missing), ``quality`` (a limit is missed) or ``review``."""
    slice: str | None = None
    """The slice it concerns, or None for the whole evaluation."""
    risk: str | None = None
    """The rubric's risk level of the slice."""
    message: str
    """One sentence a reviewer understands."""
    evidence: dict[str, Any] = Field(default_factory=dict)
    """The numbers behind it: counts, denominators, rate, interval bounds, limit, basis."""
    case_ids: list[str] = Field(default_factory=list)
    """Affected cases (false passes for false-pass blockers, when a join was given)."""
    waivable: bool = True
    """Whether any override could waive it. Incomplete blockers never are."""

    def sort_key(self) -> tuple[int, str, str, str]:
        return (CATEGORY_ORDER[self.category], self.slice or "", self.code, self.message)


class WaivedBlocker(_Model):
    """A blocker an active override waived."""

    blocker: Blocker
    """The blocker as it would otherwise have counted."""
    override_id: str
    """The override that waived it."""


class UnappliedOverride(_Model):
    """An override given to a gate that waived no blocker, and why."""

    override_id: str
    """The override's id."""
    policy: str
    """The policy it names (``name@version``)."""
    reason: UnappliedReason
    """``other_policy``, ``other_candidate``, ``expired``, ``not_yet_active``,
    ``no_matching_blocker``, ``already_waived``, ``not_covered`` or ``not_waivable``."""
    details: list[str] = Field(default_factory=list)
    """One sentence per code (or the scope mismatch); counts only, never case ids."""


def blocker(
    code: str,
    message: str,
    *,
    case_ids: Sequence[str] = (),
    slice: str | None = None,
    risk: str | None = None,
    evidence: dict[str, Any] | None = None,
) -> Blocker:
    """A blocker of a registered code, its category and waivability read from the one table."""
    spec = BLOCKER_CODES[code]
    return Blocker(
        code=code,
        category=spec.category,
        slice=slice,
        risk=risk,
        message=message,
        evidence=evidence or {},
        case_ids=list(case_ids),
        waivable=spec.waivable and spec.category != "incomplete",
    )


@dataclass(frozen=True)
class Decision:
    """What :func:`decide` returns: the blockers that count, the outcome and its exit code."""

    outcome: str
    """By precedence over :attr:`blockers`' categories; the ``clear`` outcome when none."""
    exit_code: int
    """The outcome's process exit code (:mod:`workbench.outcomes`)."""
    blockers: list[Blocker]
    """Blockers no override waived, sorted (:meth:`Blocker.sort_key`)."""
    waived: list[WaivedBlocker]
    """Blockers an active override waived, in the same order."""
    unapplied: list[UnappliedOverride]
    """Every override given that waived nothing, and why, in id order."""
    expired: list[str]
    """Ids of the overrides for this policy and candidate that had expired (ignored)."""
    now: datetime
    """The time the overrides were checked against (UTC)."""

    @property
    def counts(self) -> dict[str, int]:
        """Kept blockers per category, in precedence order."""
        return {c: sum(1 for b in self.blockers if b.category == c) for c in CATEGORY_ORDER}

    def summary(self, policy: str) -> str:
        """One line: outcome, kept blockers per category, waived ones, the policy as shown."""
        detail = ", ".join(f"{n} {c}" for c, n in self.counts.items())
        return (
            f"{self.outcome.upper()}: {len(self.blockers)} blocker(s) ({detail}),"
            f" {len(self.waived)} waived by override; policy {policy}"
        )


def decide(
    blockers: Iterable[Blocker],
    overrides: Sequence[Override] = (),
    *,
    policy_label: str | None,
    fingerprint: str | None,
    now: datetime | None = None,
    clear: str = "certified",
) -> Decision:
    """Sort ``blockers``, apply the overrides in force, and decide.

    ``policy_label`` and ``fingerprint`` scope the overrides (no policy: none applies); ``now``
    (default: now, naive is UTC) decides expiry; ``clear`` is the outcome without kept blockers.
    """
    now = _aware(now)
    active = sorted(
        active_overrides(overrides, policy_label, fingerprint, now), key=lambda o: o.override_id
    )
    kept: list[Blocker] = []
    waived: list[WaivedBlocker] = []
    for b in sorted(blockers, key=Blocker.sort_key):
        override = waiver_for(b, active)
        if override is None:
            kept.append(b)
        else:
            waived.append(WaivedBlocker(blocker=b, override_id=override.override_id))
    outcome = outcome_of((b.category for b in kept), clear=clear)
    return Decision(
        outcome=outcome,
        exit_code=exit_code(outcome),
        blockers=kept,
        waived=waived,
        unapplied=unapplied_overrides(overrides, policy_label, fingerprint, now, kept, waived),
        expired=sorted(
            o.override_id for o in expired_overrides(overrides, policy_label, fingerprint, now)
        ),
        now=now,
    )


def _aware(now: datetime | None) -> datetime:
    now = now or datetime.now(UTC)
    return now if now.tzinfo is not None else now.replace(tzinfo=UTC)


def waiver_for(blocker: Blocker, overrides: Iterable[Override]) -> Override | None:
    """The first override (assumed active) that waives ``blocker``, if any.

    It must name the code and cover the blocker: its slice listed, or every one of its case ids (a
    blocker without a slice: an override listing no slices). A critical false pass is covered only
    case by case. Incomplete and non-waivable blockers are never waived.
    """
    if _never_waived(blocker):
        return None
    for override in overrides:
        if blocker.code in override.codes and _covers(blocker, override):
            return override
    return None


def _never_waived(blocker: Blocker) -> bool:
    return (
        blocker.category == "incomplete"
        or not blocker.waivable
        or blocker.code in NON_WAIVABLE_CODES
    )


def _critical_false_pass(blocker: Blocker) -> bool:
    return blocker.risk == Risk.critical.value and blocker.code in FALSE_PASS_CODES


def _covers(blocker: Blocker, override: Override) -> bool:
    cases = set(blocker.case_ids)
    case_level = bool(cases) and cases <= set(override.case_ids)
    if _critical_false_pass(blocker):
        return case_level
    if blocker.slice is not None:
        return blocker.slice in override.slices or case_level
    return not override.slices and (not cases or case_level)


def unapplied_overrides(
    overrides: Sequence[Override],
    policy_label: str | None,
    fingerprint: str | None,
    now: datetime,
    kept: Sequence[Blocker],
    waived: Sequence[WaivedBlocker],
) -> list[UnappliedOverride]:
    """Every override that waived no blocker, with the reason, in id order.

    Reasons in order: ``other_policy``, ``other_candidate``, ``expired``, ``not_yet_active``; then
    the strongest over its codes: ``not_waivable``, ``not_covered``, ``already_waived``,
    ``no_matching_blocker``.
    """
    applied = {w.override_id for w in waived}
    waived_by = {id(w.blocker): w.override_id for w in waived}
    every = [*kept, *(w.blocker for w in waived)]
    out: list[UnappliedOverride] = []
    for o in sorted(overrides, key=lambda o: o.override_id):
        if o.override_id in applied:
            continue
        out_of_force = _out_of_force(o, policy_label, fingerprint, now)
        reason, details = out_of_force or _why_no_blocker_waived(o, every, waived_by)
        out.append(
            UnappliedOverride(
                override_id=o.override_id, policy=o.policy, reason=reason, details=details
            )
        )
    return out


def _out_of_force(
    o: Override, label: str | None, fingerprint: str | None, now: datetime
) -> tuple[UnappliedReason, list[str]] | None:
    """Why the override is not in force for this policy, candidate and time (None: it is)."""
    if label is None:
        return "other_policy", ["the gate applied no policy"]
    if o.policy != label:
        return "other_policy", [f"it is for {o.policy}, the gate applied {label}"]
    if o.candidate_fingerprint is not None and o.candidate_fingerprint != fingerprint:
        return "other_candidate", [
            f"it is for candidate {o.candidate_fingerprint[:12]}, the results are of"
            f" {(fingerprint or '-')[:12]}"
        ]
    if o.expires_at <= now:
        return "expired", [f"it expired at {o.expires_at.isoformat()}"]
    if o.created_at > now:
        return "not_yet_active", [f"it starts at {o.created_at.isoformat()}"]
    return None


_RANK: dict[UnappliedReason, int] = {
    "no_matching_blocker": 0,
    "already_waived": 1,
    "not_covered": 2,
    "not_waivable": 3,
}


def _why_no_blocker_waived(
    o: Override, blockers: Sequence[Blocker], waived_by: dict[int, str]
) -> tuple[UnappliedReason, list[str]]:
    worst: UnappliedReason = "no_matching_blocker"
    details: list[str] = []
    for code in o.codes:
        matching = [b for b in blockers if b.code == code]
        if not matching:
            details.append(f"{code}: no blocker has this code")
        for b in matching:
            reason, text = _why_not_this(o, b, waived_by)
            details.append(f"{_where(b)}: {text}")
            if _RANK[reason] > _RANK[worst]:
                worst = reason
    return worst, details


def _where(b: Blocker) -> str:
    return f"{b.code} in slice {b.slice}" if b.slice else f"{b.code} (whole evaluation)"


def _why_not_this(
    o: Override, b: Blocker, waived_by: dict[int, str]
) -> tuple[UnappliedReason, str]:
    """Why the override, in force and naming ``b``'s code, did not waive ``b``."""
    if id(b) in waived_by:
        return "already_waived", f"already waived by {waived_by[id(b)]}"
    if _never_waived(b):
        return "not_waivable", _never_text(b)
    return "not_covered", _not_covered_text(o, b)


def _never_text(b: Blocker) -> str:
    if b.category == "incomplete":
        return "missing evidence (an incomplete blocker) can never be waived"
    if _critical_false_pass(b):
        return (
            "a critical false pass is waivable only by naming its false-pass cases, and the gate"
            " was given no case list (no join)"
        )
    if b.risk == Risk.critical.value:
        return "this blocker is not waivable in a critical slice"
    return "this blocker is never waivable"


def _not_covered_text(o: Override, b: Blocker) -> str:
    missing = len(set(b.case_ids) - set(o.case_ids))
    if _critical_false_pass(b):
        return (
            f"a critical false pass is waived only case by case; {missing} of its"
            f" {len(b.case_ids)} false-pass case(s) are not named"
        )
    if b.slice is None:
        return f"the override is limited to slices {', '.join(o.slices)}, the blocker has no slice"
    scope = f"slices {', '.join(o.slices)}" if o.slices else "no slice"
    cases = (
        f" and {len(o.case_ids)} case(s), {missing} of the blocker's {len(b.case_ids)} case(s)"
        " not named"
        if o.case_ids
        else ""
    )
    return f"the override covers {scope}{cases}"
