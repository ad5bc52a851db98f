"""How the suite is spread over pytest-xdist workers (``make test``: ``-n <cores + 2>``,
``--dist loadscope``).

Under ``--dist loadscope`` a worker takes a whole scope (a module, or a class) at a time, so module
fixtures such as a certified report are built once, and asks for the next scope when it has at
most two tests left. The wall time is then about ``max(longest scope, total / workers)`` only if
the long scopes start first: a long module handed out last runs alone while the other worker idles.

pytest-xdist reorders the scopes by their number of tests (``--loadscope-reorder``, its default),
which puts the many quick unit-test modules first and the few long certification, notebook and
browser modules last. :func:`configure` turns that reordering off, so the order set here by
:func:`slow_modules_first` is the order the workers receive.

``tests/conftest.py`` calls both from its hooks.
"""

from __future__ import annotations

from collections import Counter

import pytest

KINDS = ("notebook", "browser")
"""Markers of the tests that start a notebook kernel or a browser: seconds each, not ms."""


def configure(config: pytest.Config) -> None:
    """Keep the collection order under ``--dist loadscope`` (xdist would sort by test count)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


MEASURED_S: dict[str, int] = {
    "test_authority.py": 338,
    "test_authority_trust.py": 250,
    "test_fail_closed_join.py": 245,
    "test_certify_warm_kernel.py": 224,
    "test_heldout_ledger.py": 220,
    "test_browser_widget.py": 204,
    "test_endpoints.py": 187,
    "test_ci_contracts.py": 177,
    "test_align_columnar.py": 150,
    "test_llm_runs.py": 145,
    "test_certify_pinned.py": 143,
    "test_migration_certify.py": 126,
    "test_heldout_identity.py": 124,
    "test_evidence.py": 122,
    "test_ci_judged_lanes.py": 115,
    "test_report_present.py": 113,
    "test_runs_fail_closed.py": 113,
    "test_startup_deferral.py": 108,
    "test_stale.py": 99,
    "test_verify.py": 98,
    "test_notebooks.py": 93,
    "test_certify.py": 93,
    "test_browser.py": 91,
    "test_noise.py": 85,
    "test_endpoint_errors.py": 80,
    "test_heldout_exposure.py": 77,
    "test_lifecycle_commands.py": 73,
    "test_llmbar.py": 69,
    "test_browser_annotation.py": 68,
    "test_judge_kinds.py": 68,
    "test_ranking_process.py": 64,
    "test_import_graph.py": 62,
    "test_ranking_notebook.py": 61,
}
"""Seconds per module (the sum of its tests' wall times, fixtures included) in a measured run:
``bench/bench_tests.py --by-process`` on main at 999da12, 2026-12-07, load 5 -> 17 (bench/README.md,
"Test suite", thirteenth pass); every module of 60 s or more.

Only the order matters: the longest first. A module not listed, or one that got faster, still
runs; a new long module without notebook or browser tests should be added here.
"""


WAITING_FIRST = ("test_ray_executor.py", "test_llm_runs.py", "test_runs_fail_closed.py")
"""Modules long in wall time and short in CPU time, handed out before everything else.

They mostly wait: for Ray's daemons and workers to start and for a killed driver's workers to
die (``test_ray_executor.py``: 62 s of wall time, 14 s of CPU), for scripted timeouts, retries
and killed runs (the other two: 17-23 s of wall time, 5-6 s of CPU each). Run first, their waits
overlap the other worker's certifications; run last (file order put Ray last), the other worker
had finished and a core sat idle for the last minute of the suite (measured 2026-12-02:
``make test`` 319 s, 137 % CPU).
"""


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def slow_modules_first(items: list[pytest.Item]) -> None:
    """The waiting modules first (:data:`WAITING_FIRST`, in that order), then the measured long
    modules (longest first), then the modules with the most notebook and browser tests, then the
    rest in file order; the order within a module is kept.

    Each notebook or browser test costs seconds (a kernel, a certification, chromium), so their
    count ranks the modules the table above does not know.
    """
    weight: Counter[str] = Counter()
    for item in items:
        if any(item.get_closest_marker(kind) for kind in KINDS):
            weight[_module(item)] += 1
    first_seen: dict[str, int] = {}
    for index, item in enumerate(items):
        first_seen.setdefault(_module(item), index)

    def key(item: pytest.Item) -> tuple[int, int, int, int]:
        module = _module(item)
        name = module.rsplit("/", 1)[-1]
        waiting = WAITING_FIRST.index(name) if name in WAITING_FIRST else len(WAITING_FIRST)
        return (waiting, -MEASURED_S.get(name, 0), -weight[module], first_seen[module])

    items.sort(key=key)
