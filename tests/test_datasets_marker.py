"""Tests that need ../shared/datasets are counted, and under WORKBENCH_REQUIRE_DATASETS=1 (CI) never
skip.

The hooks live in tests/_datasets.py. Each case below runs pytest in a subprocess on a small
suite that uses them, so the summary line and the exit code are those a user or CI sees.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _inner_pytest import inner_env, run_pytest

TESTS = Path(__file__).resolve().parent

CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
from _datasets import (  # noqa: F401
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_runtest_makereport,
    pytest_terminal_summary,
)
"""

SUITE = """
import pytest
from _datasets import DATASETS, needs_datasets, require


@pytest.fixture(scope="session")
def datasets_dir():
    return require(DATASETS)


@needs_datasets
def test_marked():
    assert require(DATASETS / "corpus.txt").read_text() == "data"


def test_through_the_fixture(datasets_dir):
    assert (datasets_dir / "corpus.txt").is_file()


def test_needs_nothing():
    assert True
"""


def _pytest(
    tmp_path: Path, *, present: bool, required: bool, workers: int = 0
) -> subprocess.CompletedProcess[str]:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (suite / "test_suite.py").write_text(SUITE, encoding="utf-8")
    data = tmp_path / "datasets"
    if present:
        data.mkdir()
        (data / "corpus.txt").write_text("data", encoding="utf-8")
    # CI=1 (or BUILD_NUMBER) makes pytest print the short summary untruncated, so each failure
    # message would appear twice: the subprocess sees the terminal a developer sees.
    env = inner_env(drop=("CI", "BUILD_NUMBER"))
    env.update(WORKBENCH_DATASETS_DIR=str(data), RAGAS_DO_NOT_TRACK="true")
    env.pop("WORKBENCH_REQUIRE_DATASETS", None)
    if required:
        env["WORKBENCH_REQUIRE_DATASETS"] = "1"
    return run_pytest(suite, suite, "--strict-markers", workers=workers, env=env, timeout=120)


def test_missing_datasets_skip_and_are_counted(tmp_path: Path) -> None:
    proc = _pytest(tmp_path, present=False, required=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed, 2 skipped" in proc.stdout
    assert (
        "dataset-dependent tests: 0 ran, 2 skipped for lack of the public datasets at"
        f" {tmp_path / 'datasets'}" in proc.stdout
    )


def test_under_require_a_missing_dataset_fails_instead_of_skipping(tmp_path: Path) -> None:
    proc = _pytest(tmp_path, present=False, required=True)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "skipped" not in proc.stdout.splitlines()[-1]
    # One refusal per test in its report; the short summary repeats them (in full when CI is set).
    refusals = [
        line
        for line in proc.stdout.splitlines()
        if line.startswith("WORKBENCH_REQUIRE_DATASETS=1 and this dataset-dependent test skipped")
    ]
    assert len(refusals) == 2, proc.stdout
    assert (
        "dataset-dependent tests: 0 ran, 0 skipped" in proc.stdout
        and "WORKBENCH_REQUIRE_DATASETS=1: 2 failed instead of skipping" in proc.stdout
    )


def test_present_datasets_run_and_are_counted(tmp_path: Path) -> None:
    proc = _pytest(tmp_path, present=True, required=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 passed" in proc.stdout
    assert (
        "dataset-dependent tests: 2 ran, 0 skipped" in proc.stdout
        and "0 failed instead of skipping" in proc.stdout
    )


@pytest.mark.parametrize("present", [True, False], ids=["present", "missing"])
def test_under_xdist_the_controller_counts_every_workers_tests(
    tmp_path: Path, present: bool
) -> None:
    """`make test` runs on pytest-xdist workers: the line must still give the whole session's
    totals.
    """
    proc = _pytest(tmp_path, present=present, required=True, workers=2)
    assert proc.returncode == (0 if present else 1), proc.stdout + proc.stderr
    assert "bringing up nodes" in proc.stdout, proc.stdout  # it did run on xdist workers
    if present:
        assert "3 passed" in proc.stdout
        assert (
            "dataset-dependent tests: 2 ran, 0 skipped" in proc.stdout
            and "0 failed instead of skipping" in proc.stdout
        )
    else:
        assert "1 passed" in proc.stdout and "2 failed" in proc.stdout
        assert (
            "dataset-dependent tests: 0 ran, 0 skipped" in proc.stdout
            and "2 failed instead of skipping" in proc.stdout
        )


@pytest.mark.parametrize(
    ("module", "dataset_test", "synthetic_test"),
    [
        ("test_importers.py", "test_evalsbench_cli", "test_evalsbench_missing_file_exits_2"),
        (
            "test_llmbar.py",
            "test_report_reproduces_upstream_statistics",
            "test_read_verdict_never_guesses",
        ),
        (
            "test_noise.py",
            "test_begin_example_builds_a_valid_attributed_suite",
            "test_demo_suite_and_candidate_are_valid",
        ),
    ],
)
def test_the_suites_dataset_tests_carry_the_marker(
    module: str, dataset_test: str, synthetic_test: str
) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            MARKER,
            str(TESTS / module),
        ],
        cwd=TESTS.parent,
        env={**inner_env(), "RAGAS_DO_NOT_TRACK": "true"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    selected = {
        line.split("::", 1)[1].split("[", 1)[0] for line in proc.stdout.splitlines() if "::" in line
    }
    assert dataset_test in selected and synthetic_test not in selected


MARKER = "datasets"
