"""Run a small pytest session in a subprocess, as the suite's own hooks see one.

Used by the tests of the suite's plugins (the datasets marker, the write guard, the markers
check): each writes a throwaway suite and runs it here. The session gets no cache, empty
``addopts`` (the project's own are not the point), the environment without the outer session's
``PYTEST_*`` variables, and only the plugins it names: setuptools entry-point plugins are not
loaded (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``), xdist is passed with ``-p`` when workers are asked
for. Loading the installed ones (hypothesis, anyio, langsmith, ...) took 0.27 of each run's
0.42 s of CPU, in 22 runs per suite, and none of them is what these tests check.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def inner_env(*, drop: tuple[str, ...] = ()) -> dict[str, str]:
    """This process's environment without ``PYTEST_*`` variables and the names in ``drop``, with
    entry-point plugins off (``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k not in drop}
    return {**env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


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
