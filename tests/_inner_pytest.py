"""Run a small pytest session in a subprocess, as the suite's own hooks see one.

Used by the tests of the suite's plugins (the datasets marker, the write guard, the markers
check): each writes a throwaway suite and runs it here. The session gets no cache, no langsmith
plugin, empty ``addopts`` (the project's own are not the point), and the environment without
the outer session's ``PYTEST_*`` variables.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def inner_env(*, drop: tuple[str, ...] = ()) -> dict[str, str]:
    """This process's environment without ``PYTEST_*`` variables and the names in ``drop``."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k not in drop}


def run_pytest(
    root: Path,
    target: Path,
    *args: str,
    workers: int = 0,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """``pytest -q`` on ``target`` with ``root`` as rootdir and working directory; ``workers``
    > 0 runs it on that many xdist workers; ``args`` go before the rootdir."""
    parallel = ["-p", "xdist", "-n", str(workers)] if workers else []
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:langsmith_plugin",
            "-o",
            "addopts=",
            *args,
            *parallel,
            "--rootdir",
            str(root),
            str(target),
        ],
        cwd=root,
        env=dict(env) if env is not None else inner_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
