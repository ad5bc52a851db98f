"""The ``browser`` and ``notebook`` markers stay true: an unmarked test that executes a notebook
fails.

``make test-fast`` deselects ``-m "not browser and not notebook"``, which only works if every
test that launches chromium or runs a notebook kernel carries its marker. So each test's setup
and call are watched: ``papermill.execute_notebook`` (every in-process notebook run, certification
included) and :func:`browser_support.launch_chromium` report here through :func:`note`, and a test
without the matching marker fails, naming it. A kernel run in a subprocess (``workbench certify``
or papermill as a child process) is seen when the run has a kernel zygote (``make test``,
``tests/_kernels.py``): the zygote logs the test each kernel was forked for. One that starts
fresh (``WORKBENCH_TEST_FRESH_KERNELS=1``, or an environment without the zygote's variables) is
not seen: those tests are marked by hand.

``tests/conftest.py`` imports the hooks below, which is how pytest finds them.
"""

from __future__ import annotations

import functools
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from _kernels import kernels_forked_for

KINDS = ("browser", "notebook")
_seen: Counter[str] = Counter()


def note(kind: str) -> None:
    """Record that the running test did something that needs the ``kind`` marker."""
    _seen[kind] += 1


def _watch_papermill() -> None:
    papermill = sys.modules.get("papermill")
    if papermill is None or getattr(papermill.execute_notebook, "_workbench_watched", False):
        return
    original = papermill.execute_notebook

    @functools.wraps(original)
    def execute_notebook(*args: Any, **kwargs: Any) -> Any:
        note("notebook")
        return original(*args, **kwargs)

    execute_notebook._workbench_watched = True  # type: ignore[attr-defined]
    papermill.execute_notebook = execute_notebook


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.items and not session.config.option.collectonly:
        import papermill  # noqa: F401  (certification imports it lazily; watch it from the first test)

        _watch_papermill()


def _check(item: pytest.Item) -> Iterator[None]:
    _watch_papermill()
    _seen.clear()
    yield
    if kernels_forked_for(item.nodeid):  # a kernel of this test, a subprocess's included
        note("notebook")
    missing = [kind for kind in KINDS if _seen[kind] and item.get_closest_marker(kind) is None]
    if missing:
        pytest.fail(
            f"{item.nodeid} "
            + " and ".join(
                f"{'executes a notebook' if k == 'notebook' else 'launches a browser'} without"
                f" @pytest.mark.{k}"
                for k in missing
            )
            + " (or its fixture does): mark it, so `make test-fast` deselects it",
            pytrace=False,
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    return (yield from _check(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    return (yield from _check(item))
