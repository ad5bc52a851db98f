"""Process start-up costs that are not the workbench's own, and the garbage collector's share.

jsonschema (imported by nbformat, so by papermill and nbconvert, and by Altair) registers its
``iri`` format checks with ``rfc3987_syntax`` when that package is installed (JupyterLab's
``jsonschema[format-nongpl]`` installs it). Importing ``rfc3987_syntax`` builds about forty
Earley parsers of the RFC 3987 grammar: about a second, in the certify process before the
notebook starts and again in its kernel when Altair is imported. Neither nbformat's schema
nor Vega-Lite's uses the ``iri`` formats, so that second buys nothing.

:func:`defer_rfc3987_syntax` puts a stand-in under the name ``rfc3987_syntax`` until it is
used: its ``is_valid_syntax`` (the one name jsonschema imports) and any other attribute load
the real package on first use and delegate to it, so every check gives the answer it gave
before, only the grammar is built when an ``iri`` is first checked, if ever.

CPython's cyclic garbage collector runs a young collection every 700 net allocations. Importing
Ragas, pandas and papermill allocates millions of objects that live as long as the process, and
each full collection walks all of them again: in ``workbench certify`` on the demo the collector
took 0.46 s of the parent's 3.2 s of CPU and 0.71 s of the kernel's 4.8 s (761 young and 6 full
collections). :func:`batch_gc` keeps the generations' ratios and collects 14 times less often,
from 10,000 net allocations (0.23 s and 0.28 s; the same peak memory). It is set only in the
processes the workbench owns: the ``workbench`` command (:func:`workbench.cli.run`) and the
kernels certification starts (:func:`batch_kernel_command`), never on import of the library.

Arrow's native thread pools can abort the process as it exits (``terminate called without an
active exception``, exit 134: apache/arrow#34314): C++ destructors run after the command's work
is written and its output printed, and a correct result would read as a crash to the script
that ran it. :func:`end_command` ends a finished ``workbench`` command that loaded pyarrow
without that teardown.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import importlib.util
import os
import sys
import threading
import types
from typing import Any

_NAME = "rfc3987_syntax"
_lock = threading.Lock()


class _Deferred(types.ModuleType):
    """Stands for ``rfc3987_syntax`` until an attribute other than ``is_valid_syntax`` is used."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(_real(self), name)


def _real(stand_in: types.ModuleType) -> types.ModuleType:
    with _lock:
        if sys.modules.get(_NAME) is stand_in:
            del sys.modules[_NAME]
        return importlib.import_module(_NAME)


def defer_rfc3987_syntax() -> bool:
    """Install the stand-in; ``False`` (nothing done) when the package is absent or already in
    use."""
    if os.environ.get("WORKBENCH_PATCH_IRI", "1") == "0":
        return False
    if _NAME in sys.modules or "jsonschema" in sys.modules:
        return False
    try:
        spec = importlib.util.find_spec(_NAME)
    except (ImportError, ValueError):  # pragma: no cover - a broken installation: leave it alone
        return False
    if spec is None or spec.submodule_search_locations is None:
        return False
    stand_in = _Deferred(
        _NAME, "Deferred: the real rfc3987_syntax loads on first use (workbench._startup)."
    )
    stand_in.__path__ = list(spec.submodule_search_locations)  # its submodules still import

    def is_valid_syntax(term: str, value: str) -> Any:
        return _real(stand_in).is_valid_syntax(term, value)

    stand_in.is_valid_syntax = is_valid_syntax  # type: ignore[attr-defined]
    sys.modules[_NAME] = stand_in
    return True


BATCH_GC_THRESHOLDS = (10_000, 10, 10)
"""``gc.set_threshold`` of a workbench batch process: young collections every 10,000 net
allocations (CPython's default is 700), with CPython's ratios of 10 between the generations."""

_KERNEL_LAUNCHER = ("-m", "ipykernel_launcher")
_BATCH_KERNEL_CODE = (
    "import gc, runpy; gc.set_threshold({}, {}, {}); "
    "runpy.run_module('ipykernel_launcher', run_name='__main__', alter_sys=True)"
).format(*BATCH_GC_THRESHOLDS)


def batch_gc() -> None:
    """Collect garbage as a batch process (see the module's docstring): call it first thing in a
    process the workbench owns."""
    if os.environ.get("WORKBENCH_PATCH_GC", "1") == "0":
        return
    gc.set_threshold(*BATCH_GC_THRESHOLDS)


def batch_kernel_command(command: list[str]) -> list[str]:
    """``command`` with :func:`batch_gc` set before ipykernel's launcher runs, when it is the
    standard ``python -m ipykernel_launcher ...``; any other kernel command unchanged.

    The launcher runs as ``-m`` would run it (``runpy`` with ``alter_sys``): the same
    ``sys.argv`` and, as with ``-m``, the working directory is not left on ``sys.path``.
    """
    if tuple(command[1:3]) != _KERNEL_LAUNCHER or os.environ.get("WORKBENCH_PATCH_GC") == "0":
        return list(command)
    return [command[0], "-c", _BATCH_KERNEL_CODE, *command[3:]]


def end_command(stop: SystemExit) -> None:
    """End a finished command whose process loaded pyarrow: flush standard output and error, run
    the ``atexit`` handlers (what Python runs before it finalizes) and ``os._exit`` with the
    command's exit code, so no native destructor runs. Returns, leaving the normal exit to the
    caller, when pyarrow is not loaded, a thread other than the main one is still running (the
    normal exit would wait for it), the code is not an integer or a stream cannot be flushed.
    """
    code = 0 if stop.code is None else stop.code
    if os.environ.get("WORKBENCH_PATCH_EXIT", "1") == "0":
        return
    if not isinstance(code, int) or "pyarrow" not in sys.modules:
        return
    main = threading.main_thread()
    if any(t is not main and not t.daemon and t.is_alive() for t in threading.enumerate()):
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe or stream: Python's own exit reports it
        return
    atexit._run_exitfuncs()
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)
