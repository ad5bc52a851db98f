"""The ``notebook`` and ``browser`` markers are registered, enforced and selectable
(tests/_markers.py).

``make test-fast`` deselects ``-m "not browser and not notebook"``; a test that executes a notebook
without the marker would slip into it, so such a test fails. The small suites below run in a
subprocess with a stand-in ``papermill`` (no kernel), so the exit codes are those a user sees.
"""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

from _inner_pytest import inner_env, run_pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

CONFTEST = f"""
import sys, types
sys.path.insert(0, {str(TESTS)!r})
fake = types.ModuleType("papermill")
fake.execute_notebook = lambda *a, **k: "executed"
sys.modules["papermill"] = fake
from _markers import (  # noqa: F401
    pytest_collection_finish,
    pytest_runtest_call,
    pytest_runtest_setup,
)


def pytest_configure(config):
    config.addinivalue_line("markers", "notebook: runs a notebook")
    config.addinivalue_line("markers", "browser: drives a browser")
"""

SUITE = """
import papermill
import pytest


@pytest.fixture(scope="module")
def certified():
    return papermill.execute_notebook("03_certify.ipynb", "out.ipynb")


def test_unmarked_runs_a_notebook():
    assert papermill.execute_notebook("a.ipynb", "b.ipynb") == "executed"


def test_unmarked_through_a_module_fixture(certified):
    assert certified == "executed"


@pytest.mark.notebook
def test_marked_runs_a_notebook():
    assert papermill.execute_notebook("a.ipynb", "b.ipynb") == "executed"


def test_plain():
    assert True
"""


def _pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (tmp_path / "test_suite.py").write_text(SUITE, encoding="utf-8")
    return run_pytest(tmp_path, tmp_path, "--strict-markers", *args)


def test_an_unmarked_notebook_run_fails_and_names_the_marker(tmp_path: Path) -> None:
    proc = _pytest(tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 failed, 2 passed, 1 error" in proc.stdout, (
        proc.stdout
    )  # the fixture's run fails its setup
    assert (
        "test_suite.py::test_unmarked_runs_a_notebook executes a notebook without"
        " @pytest.mark.notebook" in proc.stdout
    )
    assert (
        "test_suite.py::test_unmarked_through_a_module_fixture executes a notebook without"
        " @pytest.mark.notebook" in proc.stdout
    )


SUBPROCESS_SUITE = """
import os
from pathlib import Path


def test_unmarked_kernel_in_a_subprocess():
    # What the zygote logs when it forks a kernel whose client ran under this test (a
    # `workbench certify` child process, say): papermill is never called in this process.
    log = Path(os.environ["WORKBENCH_TEST_KERNEL_ZYGOTE"]).with_name("zygote.log")
    with log.open("a", encoding="utf-8") as out:
        out.write(f"forked kernel 11 for client 10 in {os.environ['PYTEST_CURRENT_TEST']}\\n")


def test_plain():
    assert True
"""


def test_an_unmarked_kernel_in_a_subprocess_fails_through_the_zygotes_log(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (tmp_path / "test_suite.py").write_text(SUBPROCESS_SUITE, encoding="utf-8")
    zygote = tmp_path / "zygote"
    zygote.mkdir()
    env = inner_env(drop=("WORKBENCH_TEST_KERNEL_ZYGOTE",))
    env["WORKBENCH_TEST_KERNEL_ZYGOTE"] = str(zygote / "zygote.sock")
    proc = run_pytest(tmp_path, tmp_path, "--strict-markers", env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 failed, 1 passed" in proc.stdout, proc.stdout
    assert (
        "test_suite.py::test_unmarked_kernel_in_a_subprocess executes a notebook without"
        " @pytest.mark.notebook" in proc.stdout
    )


def test_the_fast_selection_deselects_the_marked(tmp_path: Path) -> None:
    proc = _pytest(tmp_path, "-m", "not browser and not notebook", "-k", "not unmarked")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed, 3 deselected" in proc.stdout, proc.stdout


def _make_dry_run(target: str, *variables: str) -> str:
    """The command ``make <target>`` runs, as make prints it (the venv taken as made)."""
    proc = subprocess.run(
        ["make", "--no-print-directory", "-n", "-o", ".venv/.installed", "-o", "FORCE"]
        + [*variables, target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return next(line for line in proc.stdout.splitlines() if " -m pytest " in line)


def test_markers_are_registered_and_make_has_both_lanes() -> None:
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert {m.split(":", 1)[0] for m in ini["markers"]} >= {"browser", "notebook"}
    fast, full = (_make_dry_run(target) for target in ("test-fast", "test"))
    assert '-m "not browser and not notebook"' in fast, fast
    assert "not browser" not in full and "not notebook" not in full  # `make test` runs everything
    for command in (fast, full):  # in parallel on pytest-xdist, a module per worker at a time
        assert "-m pytest" in command and "-n " in command and "--dist loadscope" in command
    # Scratch files on the tmpfs TEST_TMPDIR names (empty: the system's temporary directory).
    on_tmpfs = _make_dry_run("test", "TEST_TMPDIR=/dev/shm/wb-x")
    assert on_tmpfs.startswith("mkdir -p /dev/shm/wb-x && TMPDIR=/dev/shm/wb-x ")
    assert on_tmpfs.endswith("-o tmp_path_retention_policy=failed")
    plain = _make_dry_run("test", "TEST_TMPDIR=")
    assert plain.startswith(".venv/bin/python -m pytest") and "TMPDIR" not in plain
