"""jsonschema's IRI grammar (``rfc3987_syntax``, about a second per process), built on first use
instead of at import; ``WORKBENCH_DEFER_IRI_GRAMMAR=0`` turns it off."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
import types
from typing import Any

_NAME = "rfc3987_syntax"
SWITCH = "WORKBENCH_DEFER_IRI_GRAMMAR"
"""Set to ``0`` to import ``rfc3987_syntax`` as it ships (the grammar built at import)."""
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
    """Install the stand-in; False when switched off, or the package is absent or in use."""
    if os.environ.get(SWITCH, "1") == "0" or _NAME in sys.modules or "jsonschema" in sys.modules:
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
