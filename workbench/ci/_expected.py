"""Reviewed expected failures (``ci: expected_failures:`` in ``workbench.yaml``) applied to a lane's
checks.

Only a *failed* check of group ``control-runs`` (a candidate's controls) or
``noise-retrieval`` (a suite's retrieval assertions) can be expected to fail, and only
exactly: the check's failing ids must all be listed. Invalid input, broken lineage and
incomplete checks are never covered. An entry is strict, like a strict xfail: one that names
an id that no longer fails, a check that now passes, an unknown check, or that has expired,
is itself a problem (exit 2), so the list always states the truth.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

from ._junit import CheckResult
from ._project import CONFIG_FILE, ExpectedFailure

EXPECTABLE_GROUPS: tuple[str, ...] = ("control-runs", "noise-retrieval")
"""The check groups an expected-failure entry may name."""


def _describe(entry: ExpectedFailure) -> str:
    until = f", until {entry.expires.isoformat()}" if entry.expires else ""
    return f"accepted by {entry.approver}{until}: {entry.reason}"


def apply_expected_failures(
    checks: Sequence[CheckResult],
    entries: Sequence[ExpectedFailure],
    *,
    today: dt.date | None = None,
    known: Callable[[str], bool] = lambda check_id: True,
    strict_unrun: bool = True,
) -> list[CheckResult]:
    """``checks`` with matching failures marked ``expected_failure``, plus one ``config`` check
    per entry problem (stale, unknown, expired, not expectable).

    ``known(check_id)``: whether an entry's check names something in the project (an entry
    for an unknown check is a problem). ``strict_unrun``: whether an entry whose (known)
    check this lane did not run is a problem; False in a lane that runs only some candidates.
    """
    today = today or dt.date.today()
    out: list[CheckResult] = []
    by_id = {c.check_id: c for c in checks}
    live: dict[str, ExpectedFailure] = {}
    config: list[CheckResult] = []

    def problem(entry: ExpectedFailure, code: str, message: str) -> None:
        config.append(
            CheckResult(
                group="config",
                name=f"expected failure {entry.check}",
                status="failed",
                category="contract",
                code=code,
                message=message,
                details=[f"{CONFIG_FILE}: ci.expected_failures: {entry.check}: {message}"],
            )
        )

    for entry in entries:
        group = entry.check.split("/", 1)[0]
        if group not in EXPECTABLE_GROUPS:
            problem(
                entry,
                "expected_failure_not_allowed",
                f"only {', '.join(EXPECTABLE_GROUPS)} checks may be expected to fail; {group!r}"
                " problems are invalid input or broken lineage and must be fixed",
            )
            continue
        if entry.expires is not None and entry.expires < today:
            problem(
                entry,
                "expected_failure_expired",
                f"the entry expired on {entry.expires.isoformat()}; the failure counts again",
            )
            continue
        if entry.check in live:
            problem(entry, "expected_failure_duplicate", "the check is listed twice")
            continue
        if entry.check not in by_id:
            if not known(entry.check):
                problem(
                    entry,
                    "expected_failure_unknown",
                    "no such check in this project (a renamed candidate or suite?)",
                )
            elif strict_unrun:
                problem(entry, "expected_failure_stale", "the check did not run in this lane")
            continue
        live[entry.check] = entry

    for check in checks:
        found = live.get(check.check_id)
        if found is None:
            out.append(check)
            continue
        entry = found
        declared, actual = set(entry.failing), set(check.failing)
        if check.status == "passed":
            out.append(check)
            problem(entry, "expected_failure_stale", "the check passes now: remove the entry")
            continue
        if check.status != "failed" or check.category != "failure":
            out.append(check)  # an incomplete check is never covered
            continue
        fixed = sorted(declared - actual)
        unexpected = sorted(actual - declared)
        if fixed:
            problem(
                entry,
                "expected_failure_stale",
                f"{', '.join(fixed)} no longer fail{'s' if len(fixed) == 1 else ''}: remove"
                f" {'it' if len(fixed) == 1 else 'them'} from failing",
            )
        if unexpected:
            out.append(
                check.model_copy(
                    update={
                        "message": (
                            f"{len(unexpected)} failure(s) beyond the expected ones:"
                            f" {', '.join(unexpected)} ({len(actual & declared)} expected:"
                            f" {_describe(entry)})"
                        )
                    }
                )
            )
        else:
            out.append(
                check.model_copy(
                    update={
                        "status": "expected_failure",
                        "category": "ok",
                        "message": (
                            f"fails as expected ({len(actual)}: {', '.join(sorted(actual))});"
                            f" {_describe(entry)}"
                        ),
                    }
                )
            )
    return out + config
