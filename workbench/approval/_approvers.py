"""The project's approver list (``approvers:`` of the pinned project's ``workbench.yaml``, never
one beside an input): the only names that may freeze an approved input or approve a change."""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass
from pathlib import Path

from .._load import read_config
from ..errors import Problem, WorkbenchError, problem, refusal

PROJECT_CONFIG = "workbench.yaml"
APPROVERS_KEY = "approvers"
REVIEWERS_KEY = "reviewers"
"""The project's reviewer list (gold reviews and adjudications), loaded like the approvers."""


@dataclass(frozen=True)
class Approvers:
    """The approver list of one project (empty and ``config`` None when there is none)."""

    names: frozenset[str]
    """Every name the project lists."""
    config: Path | None
    """The ``workbench.yaml`` the list came from."""

    def problems(self, name: str | None, location: str, role: str) -> list[Problem]:
        """Why ``name`` may not act as ``role`` (e.g. "the approver"); none when listed."""
        who = (name or "").strip()
        if self.config is None or not self.names:
            message = (
                f"{role} {who!r} cannot be checked: the project has no {PROJECT_CONFIG} with an"
                f" `{APPROVERS_KEY}:` list (the project root is pinned from the working directory"
                " or $WORKBENCH_PROJECT_ROOT, never from the input)"
            )
            fix = (
                f"list the people who approve inputs in the project's {PROJECT_CONFIG}:"
                f" `{APPROVERS_KEY}: [NAME, ...]`"
            )
            return [problem(location, "approvers_missing", message, fix)]
        if who in self.names:
            return []
        message = f"{role} {who!r} is not in the project's approver list ({self.config})"
        fix = (
            f"name one of: {', '.join(sorted(self.names))}; or have the project add the person to"
            f" `{APPROVERS_KEY}:` in {PROJECT_CONFIG}"
        )
        return [problem(location, "approver_unknown", message, fix)]


def project_config(start: str | Path | None = None) -> Path | None:
    """The pinned project's ``workbench.yaml`` (None without one); ``start`` is ignored."""
    from ..project import find_project_root

    del start
    root = find_project_root()
    config = root / PROJECT_CONFIG if root is not None else None
    return config if config is not None and config.is_file() else None


def load_approvers(start: str | Path | None = None, key: str = APPROVERS_KEY) -> Approvers:
    """The approver list (or the list under ``key``) of the pinned project; raises
    :class:`WorkbenchError` (``approvers_invalid``) unless it is a list of distinct names."""
    config = project_config(start)
    if config is None:
        return Approvers(frozenset(), None)
    raw, unreadable = read_config(config)
    if unreadable is not None:
        raise WorkbenchError("invalid project configuration", [unreadable])
    value = raw.get(key) if isinstance(raw, dict) else None
    if value is None:
        return Approvers(frozenset(), config)
    names = [v.strip() for v in value if isinstance(v, str)] if isinstance(value, list) else []
    if not isinstance(value, list) or len(names) != len(value) or not all(names):
        bad = "a list of names" if not isinstance(value, list) else "names written as text"
        raise _invalid(config, f"`{key}:` must be {bad}", key)
    if len(set(names)) != len(names):
        raise _invalid(config, f"`{key}:` lists a name twice", key)
    return Approvers(frozenset(names), config)


def _invalid(config: Path, message: str, key: str = APPROVERS_KEY) -> WorkbenchError:
    fix = f"write `{key}:` as a YAML list of distinct names"
    return refusal("invalid approver list", str(config), "approvers_invalid", message, fix)


def current_user() -> str:
    """``$WORKBENCH_USER``, else the login name (the default approver; it must still be listed)."""
    try:
        return os.environ.get("WORKBENCH_USER") or getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        return "unknown"
