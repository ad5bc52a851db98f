"""Overrides for noise blockers: the shared override store, scoped to one suite version.

A noise override is an ordinary :class:`~workbench.policy.Override` (append-only store, named
approver, expiry, case-level rationale, follow-up) whose ``policy`` is the suite's
``name@version``: the suite file is the reviewed noise policy. :func:`add_noise_override`
refuses, every problem at once, a code ``workbench noise`` never emits, a code that is never
waivable (missing evidence, cross-tenant retrieval, absent retrieval evidence: see
:data:`~workbench.policy.NON_WAIVABLE_CODES`), a slice or case the suite does not hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from pathlib import Path
from typing import TypedDict

from ..errors import Problem, WorkbenchError
from ..policy import Override, add_override, build_override
from ..policy._codes import NOISE_BLOCKER_CODES
from ._pairs import NoiseSuite

SHARED_CODES = frozenset(
    {"missing_results", "budget_exhausted", "case_limit_reached", "run_incomplete"}
)
"""Gate codes ``workbench noise`` also emits (all incomplete: never waivable)."""
NOISE_CODES = frozenset(NOISE_BLOCKER_CODES) | SHARED_CODES
"""Every code a noise report may carry."""


class _OverrideFields(TypedDict):
    """The keyword arguments of :func:`~workbench.policy.build_override` (and ``add_override``)."""

    policy: str
    approver: str
    reason: str
    expires_at: str | date | datetime
    follow_up: str
    codes: Sequence[str]
    slices: Sequence[str]
    case_ids: Sequence[str]
    candidate_fingerprint: str | None
    created_at: datetime | None


def add_noise_override(
    store: str | Path,
    suite: NoiseSuite,
    *,
    approver: str,
    reason: str,
    expires_at: str | date | datetime,
    follow_up: str,
    codes: Sequence[str],
    slices: Sequence[str] = (),
    case_ids: Sequence[str] = (),
    candidate_fingerprint: str | None = None,
    created_at: datetime | None = None,
    dry_run: bool = False,
) -> Override:
    """Validate an override of noise blockers for ``suite`` and append it to ``store`` (unless
    ``dry_run``)."""
    loc = str(store)
    problems: list[Problem] = []
    for code in codes:
        if code not in NOISE_CODES:
            problems.append(
                Problem(
                    location=loc,
                    code="override_not_noise_code",
                    message=f"{code!r} is not a blocker `workbench noise` emits",
                    fix="name a code from the noise report's blockers: "
                    + ", ".join(sorted(NOISE_BLOCKER_CODES)),
                )
            )
    for name in slices:
        if name not in suite.slices:
            problems.append(
                Problem(
                    location=loc,
                    code="override_unknown_slice",
                    message=f"slice {name!r} is not in {suite.label}",
                    fix="name one of the suite's slices: " + ", ".join(suite.slices),
                )
            )
    ids = {p.pair_id for p in suite.pairs}
    for case in case_ids:
        if case not in ids:
            problems.append(
                Problem(
                    location=loc,
                    code="override_unknown_case",
                    message=f"pair {case!r} is not in {suite.label}",
                    fix="name the pair ids the blocker lists",
                )
            )
    fields: _OverrideFields = {
        "policy": suite.label,
        "approver": approver,
        "reason": reason,
        "expires_at": expires_at,
        "follow_up": follow_up,
        "codes": codes,
        "slices": slices,
        "case_ids": case_ids,
        "candidate_fingerprint": candidate_fingerprint,
        "created_at": created_at,
    }
    try:
        built = build_override(store, **fields)
    except WorkbenchError as exc:
        problems += exc.problems
        built = None
    if problems or built is None:
        raise WorkbenchError(f"override refused: {len(problems)} problem(s)", problems)
    return built if dry_run else add_override(store, **fields)
