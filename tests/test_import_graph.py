"""No import cycles between workbench's packages (issue 14, §3; issue 27: function bodies too).

The graph is static: every module of ``workbench/`` is parsed with :mod:`ast`, and every
import statement (module level, class bodies, ``if``/``try`` blocks *and function bodies*; not
``if TYPE_CHECKING:``) becomes an edge between the two *nodes*: ``workbench.<first
component>`` (a subpackage or a top-level module) and the root ``workbench``. An import deferred
into a function body is still a dependency: counting it keeps a deferred import from hiding a
cycle. Imports inside one node are not edges.

``python tests/test_import_graph.py`` prints the graph.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "workbench"
_spec = importlib.util.spec_from_file_location("code_size", ROOT / "bench" / "code_size.py")
assert _spec is not None and _spec.loader is not None
code_size = importlib.util.module_from_spec(_spec)
sys.modules["code_size"] = code_size
_spec.loader.exec_module(code_size)

ALLOWED_CYCLES: list[frozenset[str]] = []
"""Strongly connected groups of packages tolerated for now, each with the reason. Empty: the
one cycle there was (judges <-> noise, judges <-> ranking, through the kind registry) is gone,
and any new one fails :func:`test_no_import_cycles_between_packages`."""


def import_graph(package_root: Path = PACKAGE) -> dict[str, set[str]]:
    """node -> the nodes its modules import (bench/code_size.py builds it: one graph for the
    figures and this test)."""
    return code_size.import_graph(package_root)


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    return [frozenset(c) for c in code_size.cycles(graph)]


def format_graph(graph: dict[str, set[str]]) -> str:
    return "\n".join(
        f"{a} -> {', '.join(sorted(b)) or '(nothing)'}" for a, b in sorted(graph.items())
    )


def test_no_import_cycles_between_packages() -> None:
    graph = import_graph()
    found = [c for c in cycles(graph) if c not in ALLOWED_CYCLES]
    assert found == [], (
        "import cycles between packages: "
        + "; ".join(" <-> ".join(sorted(c)) for c in found)
        + "\n"
        + format_graph(graph)
    )


def test_the_graph_sees_the_packages_and_their_known_edges() -> None:
    graph = import_graph()
    assert {
        "workbench.judges",
        "workbench.noise",
        "workbench.ranking",
        "workbench.runs",
        "workbench.cli",
        "workbench._io",
    } <= set(graph)
    # the kind packages import the registry; the registry imports neither of them
    assert (
        "workbench.judges" in graph["workbench.noise"]
        and "workbench.judges" in graph["workbench.ranking"]
    )
    assert not {"workbench.noise", "workbench.ranking"} & graph["workbench.judges"]


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "pkg"


def test_a_cycle_through_relative_and_submodule_imports_is_found(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a/__init__.py": "from . import _x\n",
            "pkg/a/_x.py": "from ..b import thing\n",
            "pkg/b/__init__.py": "try:\n    from ..a import _x\nexcept ImportError:\n    pass\n",
            "pkg/c.py": "import pkg.a\n",
        },
    )
    graph = import_graph(root)
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}, "pkg.c": {"pkg.a"}}
    assert cycles(graph) == [frozenset({"pkg.a", "pkg.b"})]


def test_imports_inside_functions_are_edges_and_type_checking_ones_are_not(
    tmp_path: Path,
) -> None:
    root = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from .b import f\n",
            "pkg/b.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from .a import x\n"
                "def f():\n    from . import a\n"
                "class C:\n    def m(self):\n        import pkg.a\n"
            ),
        },
    )
    graph = import_graph(root)
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}}
    assert cycles(graph) == [frozenset({"pkg.a", "pkg.b"})]  # hidden by a deferred import


def test_importing_the_registry_loads_no_kind_package() -> None:
    probe = (
        "import sys, workbench.judges as j; print(sorted(m for m in sys.modules if"
        " m.startswith(('workbench.noise', 'workbench.ranking'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


if __name__ == "__main__":
    graph = import_graph()
    print(format_graph(graph))
    print("cycles:", [sorted(c) for c in cycles(graph)] or "none")
