"""Run Python code in a fresh interpreter (what a command imports starts from nothing there)."""

from __future__ import annotations

import subprocess
import sys


def run_fresh(code: str) -> str:
    """The stdout of ``python -c code``; fails the test with the exit code and stderr when the
    child does not exit 0 (a crash shows why)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, (out.returncode, out.stderr[-3000:])
    return out.stdout
