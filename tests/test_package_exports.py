"""Every name a workbench package exports in ``__all__`` resolves, eagerly or lazily (PEP 562)."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import types
from pathlib import Path

import pytest

import workbench


def _packages() -> list[str]:
    """Every package, and every module whose source declares ``__all__``."""
    names = ["workbench"]
    for info in pkgutil.walk_packages(workbench.__path__, "workbench."):
        if info.ispkg or _declares_all(info.name):
            names.append(info.name)
    return sorted(names)


def _declares_all(module: str) -> bool:
    spec = importlib.util.find_spec(module)
    origin = spec.origin if spec is not None else None
    return bool(origin) and "\n__all__" in Path(origin).read_text(encoding="utf-8")


PACKAGES = _packages()


def test_the_walk_finds_the_packages() -> None:
    assert {
        "workbench.gold",
        "workbench.judges",
        "workbench.stats",
        "workbench.cli",
        "workbench.importers.table",
        "workbench.importers._results",
    } <= set(PACKAGES)


@pytest.mark.parametrize("name", PACKAGES)
def test_every_name_in_all_resolves(name: str) -> None:
    package = importlib.import_module(name)
    exported = getattr(package, "__all__", None)
    if exported is None:  # a package that exports nothing (workbench.demo: data and scripts)
        # a submodule becomes an attribute once anything imports it (workbench.demo.noise): not a
        # name the package defines
        defined = [
            n
            for n, v in vars(package).items()
            if not n.startswith("_")
            and not (isinstance(v, types.ModuleType) and v.__name__.startswith(name + "."))
        ]
        assert not defined, f"{name} has public names but no __all__"
        return
    assert len(exported) == len(set(exported)), f"{name}.__all__ lists a name twice"
    missing = [n for n in exported if not hasattr(package, n)]
    assert missing == [], f"{name}.__all__ names what {name} does not have"
    assert set(exported) <= set(dir(package)), f"dir({name}) hides exported names"


def test_a_lazy_name_that_is_not_exported_is_an_attribute_error() -> None:
    noise = importlib.import_module("workbench.noise")
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        noise.not_a_name  # noqa: B018
