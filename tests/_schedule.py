"""How the suite is spread over pytest-xdist workers (``make test``: ``-n auto --dist loadscope``).

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


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def slow_modules_first(items: list[pytest.Item]) -> None:
    """Modules with the most notebook and browser tests first, the rest in file order.

    Each such test costs seconds (a kernel, a certification, chromium), so their count ranks the
    modules; the order within a module is kept.
    """
    weight: Counter[str] = Counter()
    for item in items:
        if any(item.get_closest_marker(kind) for kind in KINDS):
            weight[_module(item)] += 1
    first_seen: dict[str, int] = {}
    for index, item in enumerate(items):
        first_seen.setdefault(_module(item), index)
    items.sort(key=lambda item: (-weight[m := _module(item)], first_seen[m]))
