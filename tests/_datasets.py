"""Tests that need the public datasets: where they are, how they skip, and a count at the end.

- :data:`DATASETS` is ``$WORKBENCH_DATASETS_DIR`` or ``<project>/../shared/datasets``.
- A test that reads them carries the ``datasets`` marker (:data:`needs_datasets`); a test that
  uses a fixture named in :data:`DATASET_FIXTURES` gets it automatically. It skips when its
  data is absent (:func:`require`), so a fresh clone runs the rest of the suite.
- With ``WORKBENCH_REQUIRE_DATASETS=1`` (``.ci/run`` sets it: CI has the datasets) a
  ``datasets`` test that skips, for whatever reason, is reported as failed instead.
- Every session that collected such tests ends with one line: how many ran, how many skipped.
  Under pytest-xdist the controller counts the reports its workers send, so the totals are the
  whole session's.

``tests/conftest.py`` imports the hooks below, which is how pytest finds them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PROJECT = Path(__file__).resolve().parents[1]
DATASETS_ENV = "WORKBENCH_DATASETS_DIR"
REQUIRE_ENV = "WORKBENCH_REQUIRE_DATASETS"
DATASETS = Path(os.environ.get(DATASETS_ENV) or PROJECT.parent / "shared" / "datasets").resolve()
"""Root of the public datasets (``$WORKBENCH_DATASETS_DIR`` or ``../shared/datasets``)."""
DATASET_FIXTURES = frozenset({"datasets_dir"})
"""Fixtures that hand out dataset paths: a test using one is a dataset-dependent test."""
MARKER = "datasets"

needs_datasets = pytest.mark.datasets
"""Marks a test that reads the public datasets (counted, and never skipped under CI)."""

_STATE = pytest.StashKey[dict[str, str]]()


def required() -> bool:
    """Whether dataset-dependent tests must run (``WORKBENCH_REQUIRE_DATASETS`` set and not 0)."""
    return os.environ.get(REQUIRE_ENV, "").strip() not in ("", "0")


def dataset_path(*parts: str) -> Path:
    return DATASETS.joinpath(*parts)


def missing_reason(path: Path) -> str:
    return f"public datasets not present at {path} (set {DATASETS_ENV} to their directory)"


def require(path: Path) -> Path:
    """``path`` if it exists; otherwise skip the test (a failure under
    ``WORKBENCH_REQUIRE_DATASETS=1``).
    """
    if not path.exists():
        pytest.skip(missing_reason(path))
    return path


# -- hooks (imported by conftest.py) ---------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}: the test reads the public datasets ({DATASETS_ENV} or ../shared/datasets);"
        f" under {REQUIRE_ENV}=1 it may not skip",
    )
    config.stash[_STATE] = {}
    config.pluginmanager.register(_Counter(config.stash[_STATE]), "workbench-datasets-counter")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if (
            DATASET_FIXTURES & set(getattr(item, "fixturenames", ()))
            and item.get_closest_marker(MARKER) is None
        ):
            item.add_marker(needs_datasets)


_PROPERTY = "workbench_datasets"
"""The ``user_properties`` key a report carries its dataset accounting under: ``ran``, ``skipped``
or ``failed_missing``. Reports travel from pytest-xdist workers to the controller with their
``user_properties``, so the controller counts every worker's tests (a worker's stash never reaches
it)."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    if item.get_closest_marker(MARKER) is None:
        return
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.skipped:
        if required():
            reason = (
                report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            )
            report.outcome = "failed"
            report.longrepr = f"{REQUIRE_ENV}=1 and this dataset-dependent test skipped: {reason}"
            _tag(report, "failed_missing")
        else:
            _tag(report, "skipped")
    elif report.when == "call" or report.failed:
        _tag(report, "ran")


def _tag(report: pytest.TestReport, value: str) -> None:
    # A new list: the report shares its item's list, which every later phase's report would inherit.
    report.user_properties = [*report.user_properties, (_PROPERTY, value)]


class _Counter:
    """Counts reports in the process that prints the summary: the only one, or the xdist controller
    as workers send their reports (``pytest_configure`` registers it; a plugin, so the conftest
    files that import the hooks by name need nothing more)."""

    def __init__(self, state: dict[str, str]) -> None:
        self.state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for key, value in report.user_properties:
            if key != _PROPERTY:
                continue
            if value != "ran":
                self.state[report.nodeid] = (
                    value  # a skip (or its refusal) decides, whatever came before
                )
            elif self.state.get(report.nodeid) is None:
                self.state[report.nodeid] = value


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, {})
    if not state and not required():
        return
    ran = sum(1 for v in state.values() if v == "ran")
    skipped = sum(1 for v in state.values() if v == "skipped")
    refused = sum(1 for v in state.values() if v == "failed_missing")
    line = (
        f"dataset-dependent tests: {ran} ran, {skipped} skipped for lack of the public datasets at"
        f" {DATASETS}"
    )
    if required():
        line += f"; {REQUIRE_ENV}=1: {refused} failed instead of skipping"
    terminalreporter.write_line(
        line, bold=bool(skipped or refused), red=bool(refused), yellow=bool(skipped) and not refused
    )
