"""The session fails when a test wrote into a committed tree (data/, notebooks/, examples/).

A held-out ledger beside data/demo or an executed notebook under notebooks/ would change what
the next certification sees, so tests work on tmp copies. The check compares ``git status``
of those trees at the start and at the end of the session and, if anything changed, prints
the paths and makes pytest exit 1.

It runs in the process that owns the session: the only one, or the pytest-xdist controller,
which takes the first snapshot before any worker starts and the last one after every worker
finished, so a write on any worker is caught exactly once. ``tests/conftest.py`` imports the
hooks below, which is how pytest finds them.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

GUARDED = ("data", "notebooks", "examples")
"""Committed trees no test may write into (a held-out ledger beside data/demo, an executed notebook
...).
"""

_BEFORE = pytest.StashKey[str | None]()


def guarded_state(root: Path) -> str | None:
    """``git status --porcelain`` of the guarded trees, or None outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all", "--", *GUARDED],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None  # not a git checkout: nothing to compare
    return out.stdout


def _owns_the_session(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")  # an xdist worker leaves the check to the controller


def pytest_sessionstart(session: pytest.Session) -> None:
    if _owns_the_session(session.config):
        session.config.stash[_BEFORE] = guarded_state(session.config.rootpath)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if not _owns_the_session(config):
        return
    before = config.stash.get(_BEFORE, None)
    after = guarded_state(config.rootpath)
    if before is None or after is None or after == before:
        return
    changed = sorted(set(after.splitlines()) - set(before.splitlines())) or [
        "(a file was restored or removed)"
    ]
    message = "tests wrote into committed trees (use a tmp copy): " + "; ".join(changed[:10])
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
    reporter: Any = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(message, red=True, bold=True)
    else:
        print(message)
