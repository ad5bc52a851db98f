"""The exception root and the problem record shared by every user-facing check: a
:class:`Problem` says where, what and how to fix; :class:`WorkbenchError` carries every problem
found (the CLI prints them and exits 2)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ._docs import add_field_docs

Severity = Literal["error", "warning"]


class Problem(BaseModel):
    """One defect found in user input."""

    model_config = ConfigDict(frozen=True, json_schema_extra=add_field_docs)

    location: str
    """Where the problem is: ``file:line`` for line-oriented files, ``file`` otherwise."""
    code: str
    """Stable machine-readable name of the check, e.g. ``response_hash_mismatch``."""
    message: str
    """What is wrong, in one sentence."""
    fix: str
    """How to fix it, in one sentence."""
    case_id: str | None = None
    """The case the problem belongs to, when there is one."""
    severity: Severity = "error"
    """``error`` blocks use of the data; ``warning`` is reported but does not block."""

    def format(self) -> str:
        who = f" case {self.case_id}:" if self.case_id else ""
        tag = "warning" if self.severity == "warning" else "error"
        return f"{self.location}:{who} {tag}: {self.message} [{self.code}] Fix: {self.fix}"


class WorkbenchError(Exception):
    """Root of every error caused by user input rather than by a bug (CLI: exit code 2)."""

    def __init__(self, summary: str, problems: Iterable[Problem] = ()) -> None:
        self.summary = summary
        self.problems = list(problems)
        super().__init__(self.__str__())

    def __str__(self) -> str:
        lines = [self.summary]
        lines += [p.format() for p in self.problems]
        return "\n".join(lines)

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of a traceback: the refusal as the CLI prints it."""
        return [f"{type(self).__name__}: {self}"]


def errors_only(problems: Iterable[Problem]) -> list[Problem]:
    """The problems that block use, without warnings."""
    return [p for p in problems if p.severity == "error"]


def problem(
    location: str,
    code: str,
    message: str,
    fix: str,
    case_id: str | None = None,
    *,
    severity: Severity = "error",
) -> Problem:
    """A :class:`Problem` from its fields in order (what most checks build)."""
    fields = {"location": location, "code": code, "message": message, "fix": fix}
    return Problem(**fields, case_id=case_id, severity=severity)


def refusal(summary: str, location: str, code: str, message: str, fix: str) -> WorkbenchError:
    """A :class:`WorkbenchError` with one problem, to ``raise``."""
    return WorkbenchError(summary, [problem(location, code, message, fix)])
