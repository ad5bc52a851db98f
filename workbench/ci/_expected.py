"""Reviewed expected failures (``ci: expected_failures:``) applied to a lane's checks: only a
failed ``control-runs`` or ``noise-retrieval`` check, and only exactly; a stale, unknown, expired
or unapproved entry is itself a problem (exit 2; docs/formats.md#ci-configuration)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..approval import Approvers
from ._junit import CheckResult, problem_check
from ._project import CONFIG_FILE, ExpectedFailure

EXPECTABLE_GROUPS: tuple[str, ...] = ("control-runs", "noise-retrieval")
"""The check groups an expected-failure entry may name."""


def _describe(entry: ExpectedFailure) -> str:
    until = f", until {entry.expires.isoformat()}" if entry.expires else ""
    return f"accepted by {entry.approver}{until}: {entry.reason}"


def _entry_problem(
    entry: ExpectedFailure,
    today: dt.date,
    live: Mapping[str, Any],
    ran: Mapping[str, Any],
    known: Callable[[str], bool],
    strict_unrun: bool,
    approvers: Approvers,
) -> tuple[str, str] | None:
    """Why an entry cannot cover a check of this lane, as ``(code, message)``; None when it can."""
    unlisted = approvers.problems(entry.approver, entry.check, "the approver")
    if unlisted:
        return unlisted[0].code, f"{unlisted[0].message}: an unlisted name approves nothing"
    group = entry.check.split("/", 1)[0]
    if group not in EXPECTABLE_GROUPS:
        return (
            "expected_failure_not_allowed",
            f"only {', '.join(EXPECTABLE_GROUPS)} checks may be expected to fail; {group!r}"
            " problems are invalid input or broken lineage and must be fixed",
        )
    if entry.expires is not None and entry.expires < today:
        message = f"the entry expired on {entry.expires.isoformat()}; the failure counts again"
        return "expected_failure_expired", message
    if entry.check in live:
        return "expected_failure_duplicate", "the check is listed twice"
    if entry.check in ran:
        return None
    if not known(entry.check):
        message = "no such check in this project (a renamed candidate or suite?)"
        return "expected_failure_unknown", message
    if strict_unrun:
        return "expected_failure_stale", "the check did not run in this lane"
    return None


def _applied(
    check: CheckResult, entry: ExpectedFailure, problem: Callable[..., None]
) -> CheckResult:
    """``check`` as the entry covers it: expected, or with the failures beyond the entry named."""
    declared, actual = set(entry.failing), set(check.failing)
    if check.status == "passed":
        problem(entry, "expected_failure_stale", "the check passes now: remove the entry")
        return check
    if check.status != "failed" or check.category != "failure":
        return check  # an incomplete check is never covered
    fixed, unexpected = sorted(declared - actual), sorted(actual - declared)
    if fixed:
        one = len(fixed) == 1
        message = f"{', '.join(fixed)} no longer fail{'s' if one else ''}: remove"
        problem(
            entry, "expected_failure_stale", f"{message} {'it' if one else 'them'} from failing"
        )
    if unexpected:
        message = (
            f"{len(unexpected)} failure(s) beyond the expected ones: {', '.join(unexpected)}"
            f" ({len(actual & declared)} expected: {_describe(entry)})"
        )
        return check.model_copy(update={"message": message})
    message = f"fails as expected ({len(actual)}: {', '.join(sorted(actual))}); {_describe(entry)}"
    update = {"status": "expected_failure", "category": "ok", "message": message}
    return check.model_copy(update=update)


def apply_expected_failures(
    checks: Sequence[CheckResult],
    entries: Sequence[ExpectedFailure],
    *,
    approvers: Approvers,
    today: dt.date | None = None,
    known: Callable[[str], bool] = lambda check_id: True,
    strict_unrun: bool = True,
) -> list[CheckResult]:
    """``checks`` with matching failures marked ``expected_failure``, plus one ``config`` check
    per entry problem. ``known(check_id)``: whether an entry's check exists; ``strict_unrun``:
    whether an entry whose check this lane did not run is a problem."""
    today = today or dt.date.today()
    by_id = {c.check_id: c for c in checks}
    live: dict[str, ExpectedFailure] = {}
    config: list[CheckResult] = []

    def problem(entry: ExpectedFailure, code: str, message: str) -> None:
        details = [f"{CONFIG_FILE}: ci.expected_failures: {entry.check}: {message}"]
        name = f"expected failure {entry.check}"
        config.append(problem_check("config", name, "contract", code, message, details))

    for entry in entries:
        found = _entry_problem(entry, today, live, by_id, known, strict_unrun, approvers)
        if found is not None:
            problem(entry, *found)
        elif entry.check in by_id:
            live[entry.check] = entry
    out = [
        _applied(check, live[check.check_id], problem) if check.check_id in live else check
        for check in checks
    ]
    return out + config
