"""The committed-tree guard (tests/_guard.py) fails a session that wrote into data/, also under
xdist.

Each case runs pytest in a subprocess on a throwaway git checkout, so the exit code and the line
are those a user or CI sees.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from _inner_pytest import run_pytest

TESTS = Path(__file__).resolve().parent

CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
from _guard import pytest_sessionfinish, pytest_sessionstart  # noqa: F401
"""

SUITE = """
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_writes_a_ledger_into_data():
    (ROOT / "data" / "held_out_ledger.jsonl").write_text("{}\\n")


def test_reads_only():
    assert (ROOT / "data" / "gold.jsonl").read_text() == "x\\n"


def test_reads_only_too():
    assert (ROOT / "notebooks").is_dir()
"""


def _checkout(tmp_path: Path, *, writer: bool) -> Path:
    root = tmp_path / "project"
    (root / "data").mkdir(parents=True)
    (root / "notebooks").mkdir()
    (root / "data" / "gold.jsonl").write_text("x\n")
    (root / "notebooks" / "keep").write_text("")
    (root / "tests").mkdir()
    (root / "tests" / "conftest.py").write_text(CONFTEST)
    suite = (
        SUITE if writer else SUITE.replace("def test_writes_a_ledger_into_data", "def _not_a_test")
    )
    (root / "tests" / "test_suite.py").write_text(suite)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*git, "add", "."], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=root, check=True)
    return root


def _pytest(root: Path, workers: int) -> subprocess.CompletedProcess[str]:
    return run_pytest(root, root / "tests", workers=workers)


@pytest.mark.parametrize("workers", [0, 2], ids=["serial", "xdist"])
def test_a_write_into_data_fails_the_session(tmp_path: Path, workers: int) -> None:
    proc = _pytest(_checkout(tmp_path, writer=True), workers)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "3 passed" in proc.stdout  # every test passed: only the guard fails the session
    assert (
        proc.stdout.count(
            "tests wrote into committed trees (use a tmp copy): ?? data/held_out_ledger.jsonl"
        )
        == 1
    ), proc.stdout


def test_a_session_that_only_reads_passes(tmp_path: Path) -> None:
    proc = _pytest(_checkout(tmp_path, writer=False), 0)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout and "committed trees" not in proc.stdout
