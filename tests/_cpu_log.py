"""Per-test CPU for ``bench/bench_tests.py --by-process``: where the suite's CPU goes, by module.

When ``WORKBENCH_BENCH_TEST_LOG`` names a file, each test appends one line to it: the worker's
pid, the test's node id, its wall time and the CPU it used from setup to teardown, in the worker
(``RUSAGE_SELF``) and in the child processes the worker waited for meanwhile
(``RUSAGE_CHILDREN``: a ``workbench`` command, a nested pytest run, a forked CLI runner). A
module's fixtures are counted with its first test (setup) and its last (teardown). Kernels forked
by the zygote are the zygote's children, not the worker's: ``bench_tests.py`` adds them from the
process log, by the test they name.

Without the variable nothing is registered (``tests/conftest.py``).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Generator
from typing import Any

import pytest

LOG_ENV = "WORKBENCH_BENCH_TEST_LOG"


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, Any, None]:
    wall = time.perf_counter()
    own, children = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    yield
    row = {
        "pid": os.getpid(),
        "test": item.nodeid,
        "wall_s": round(time.perf_counter() - wall, 4),
        "cpu_s": round(_cpu(resource.RUSAGE_SELF) - own, 4),
        "children_cpu_s": round(_cpu(resource.RUSAGE_CHILDREN) - children, 4),
    }
    with open(os.environ[LOG_ENV], "a", encoding="utf-8") as log:  # one short line: atomic
        log.write(json.dumps(row) + "\n")


def configure(config: pytest.Config) -> None:
    """Register the per-test log when ``bench_tests.py`` asked for it."""
    if os.environ.get(LOG_ENV):
        config.pluginmanager.register(sys.modules[__name__], "workbench-cpu-log")
