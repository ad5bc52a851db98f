"""The suite's xdist schedule (tests/_schedule.py): long modules are handed out first."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import _schedule
import pytest


class FakeItem:
    def __init__(self, nodeid: str, *markers: str) -> None:
        self.nodeid = nodeid
        self._markers = set(markers)

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self._markers else None


def test_xdist_loadscope_keeps_the_collection_order(pytestconfig: pytest.Config) -> None:
    # pytest-xdist's default (--loadscope-reorder) sorts scopes by test count, which handed the
    # few long certification and notebook modules out last; the suite turns it off.
    config: Any = SimpleNamespace(option=SimpleNamespace(loadscopereorder=True))
    _schedule.configure(config)
    assert config.option.loadscopereorder is False
    without_xdist: Any = SimpleNamespace(option=SimpleNamespace())
    _schedule.configure(without_xdist)  # no xdist option: nothing to change, no error
    assert not hasattr(without_xdist.option, "loadscopereorder")
    if hasattr(pytestconfig.option, "loadscopereorder"):
        assert pytestconfig.option.loadscopereorder is False  # this very session


def test_measured_long_modules_then_notebook_and_browser_modules_then_file_order() -> None:
    items: Any = [
        FakeItem("tests/test_ci_contracts.py::quick"),  # measured (177 s), no marker
        FakeItem("tests/test_runs_fail_closed.py::waits"),  # waits more than it computes
        FakeItem("tests/test_authority.py::promote", "notebook"),  # measured (338 s)
        FakeItem("tests/test_a.py::fast_1"),
        FakeItem("tests/test_b.py::nb_1", "notebook"),
        FakeItem("tests/test_a.py::fast_2"),
        FakeItem("tests/test_c.py::nb_1", "notebook"),
        FakeItem("tests/test_c.py::plain"),
        FakeItem("tests/test_c.py::browser_1", "browser"),
        FakeItem("tests/test_d.py::fast"),
        FakeItem("tests/test_ray_executor.py::cluster"),  # waits the longest
    ]
    _schedule.slow_modules_first(items)
    assert [item.nodeid for item in items] == [
        "tests/test_ray_executor.py::cluster",  # the waiting modules, in WAITING_FIRST's order
        "tests/test_runs_fail_closed.py::waits",
        "tests/test_authority.py::promote",  # the longest measured module
        "tests/test_ci_contracts.py::quick",
        "tests/test_c.py::nb_1",  # two slow tests
        "tests/test_c.py::plain",
        "tests/test_c.py::browser_1",
        "tests/test_b.py::nb_1",  # one
        "tests/test_a.py::fast_1",  # none: file order, order within the module kept
        "tests/test_a.py::fast_2",
        "tests/test_d.py::fast",
    ]


# -- how many workers (tests/_workers.py, the Makefile's PYTEST_WORKERS) ----------------------
def test_workers_are_the_cores_plus_two_capped_by_available_memory(tmp_path: Path) -> None:
    import subprocess
    import sys

    import _workers

    assert _workers.workers(2, None) == 4
    assert _workers.workers(2, 64.0) == 4
    assert _workers.workers(16, 8.5) == 8  # 8 GiB hold 8 workers, not 18
    assert _workers.workers(2, 0.2) == 1  # never none
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nMemAvailable:    3145728 kB\n")
    assert _workers.available_gib(str(meminfo)) == 3.0
    meminfo.write_text("MemTotal:       24000000 kB\n")  # an old kernel without the line
    assert _workers.available_gib(str(meminfo)) is None
    assert _workers.available_gib(str(tmp_path / "absent")) is None
    # As the Makefile runs it: the system's Python, one number on stdout.
    printed = subprocess.run(
        [sys.executable, _workers.__file__], capture_output=True, text=True, check=True
    ).stdout
    expected = _workers.workers(_workers.usable_cores(), _workers.available_gib())
    assert printed == f"{expected}\n"
