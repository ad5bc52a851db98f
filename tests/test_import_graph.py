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

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "workbench"

ALLOWED_CYCLES: list[frozenset[str]] = []
"""Strongly connected groups of packages tolerated for now, each with the reason. Empty: the
one cycle there was (judges <-> noise, judges <-> ranking, through the kind registry) is gone,
and any new one fails :func:`test_no_import_cycles_between_packages`."""


def _module_name(path: Path, package_root: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(package_root.parent).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def _executed_imports(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of ``body``, function bodies included, ``TYPE_CHECKING`` blocks
    left out."""
    for statement in body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            yield statement
            continue
        if isinstance(statement, ast.If) and "TYPE_CHECKING" in ast.unparse(statement.test):
            yield from _executed_imports(statement.orelse)
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _executed_imports(getattr(statement, field, None) or [])
        for handler in getattr(statement, "handlers", None) or []:
            yield from _executed_imports(handler.body)
        for case in getattr(statement, "cases", None) or []:
            yield from _executed_imports(case.body)


def _targets(statement: ast.Import | ast.ImportFrom, package: str, modules: set[str]) -> list[str]:
    """The modules an import statement loads (``from m import x`` is ``m.x`` when x is a module)."""
    if isinstance(statement, ast.Import):
        return [alias.name for alias in statement.names]
    if statement.level:
        base = package.split(".")
        base = base[: len(base) - (statement.level - 1)]
        module = ".".join([*base, statement.module] if statement.module else base)
    else:
        module = statement.module or ""
    return [
        f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in statement.names
    ]


def _node(module: str, top: str) -> str | None:
    parts = module.split(".")
    if parts[0] != top:
        return None
    return ".".join(parts[:2])


def import_graph(package_root: Path = PACKAGE) -> dict[str, set[str]]:
    """node -> the nodes its modules import at import time (no self edges)."""
    top = package_root.name
    sources = {_module_name(p, package_root): p for p in sorted(package_root.rglob("*.py"))}
    modules = {name for name, _ in sources}
    graph: dict[str, set[str]] = {}
    for (name, is_package), path in sources.items():
        source = _node(name, top)
        assert source is not None
        graph.setdefault(source, set())
        package = name if is_package else name.rpartition(".")[0]
        for statement in _executed_imports(ast.parse(path.read_text(encoding="utf-8")).body):
            for target in _targets(statement, package, modules):
                node = _node(target, top)
                if node is not None and node != source:
                    graph[source].add(node)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected groups of more than one node (Tarjan), i.e. the import cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(frozenset(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


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
