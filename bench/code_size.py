"""Size and structure of the ``workbench`` package (issue 27's figures, one command).

``python bench/code_size.py [--json] [--package workbench]`` prints:

- ``lines``: newline count of every ``*.py`` under the package (what ``wc -l`` counts);
- ``files``; ``functions_over_60``, ``functions_over_80``, ``functions_over_100`` (a function's
  lines run from its ``def`` to its last line, decorators excluded, nested functions counted
  on their own as well);
- ``exported``: public names of the subpackages' ``__init__`` (``__all__`` when there is one,
  else every public name bound there) and ``exported_unused_outside``: those nothing outside
  the subpackage uses from its face. A name ``N`` of ``workbench.x`` counts as used when

  - a module of another node (``workbench.<y>`` nodes, as in tests/test_import_graph.py)
    imports it, ``TYPE_CHECKING`` blocks included, from the face (``from ..x import N``) or
    from one of the node's modules (the imports tests/test_package_faces.py still allows: the
    face offers what they will take), or names it in a lazy ``module:function`` reference
    (``"workbench.x:N"``);
  - a Python file under ``tests/``, ``bench/`` or ``examples/``, or a code cell of a notebook
    (``notebooks/*.ipynb`` and the package's own ``*.ipynb``), imports it from the face
    (``from workbench.x import N``), reaches it as an attribute of the face (``workbench.x.N``,
    or ``x.N`` after ``from workbench import x`` / ``import workbench.x as x``) or names it
    in a ``module:function`` string;
  - ``README.md`` or a page of ``docs/`` writes ``workbench.x.N``, ``workbench.x:N`` or
    ``x.N``, or lists it in a ``from workbench.x import ...`` line.

  A test's, script's or notebook's import from one of the subpackage's private modules
  (``workbench.x._m``) is not a use of its face (tests may use their package's private modules);
  ``--unused`` lists them, per package;
- ``private_imports``: imports of another node's private module (``workbench.a._b`` imported
  from outside ``workbench.a``), counted per statement;
- ``function_body_imports``: import statements inside function bodies that reach another node;
- ``cycles_with_function_imports``: strongly connected groups of nodes when every import,
  function bodies included, is an edge (``TYPE_CHECKING`` blocks excluded).

``--check`` is what ``make lint`` runs: it fails (exit 1) when a function is over
``MAX_FUNCTION_LINES`` (80) and not in the ratchet file, when a listed one grew, or when a
listed one is gone or back under the limit (take it off the list: the list only shrinks).
The ratchet file, ``bench/long_functions.txt``, names each remaining long function as
``path:name lines``.

No third-party import: the system's Python runs it.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_FUNCTION_LINES = 80
"""No function of the package is longer (def to last line, decorators excluded)."""
RATCHET = ROOT / "bench" / "long_functions.txt"
"""The functions still over the limit, each with its length: the list may only shrink."""


def _module_name(path: Path, root: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_package else parts), is_package


def _imports(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement outside ``if TYPE_CHECKING:``, with whether it is in a function."""

    def walk(
        node: ast.AST, in_function: bool
    ) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for other in child.orelse:
                    yield from walk_one(other, in_function)
                continue
            yield from walk_one(child, in_function)

    def walk_one(
        node: ast.AST, in_function: bool
    ) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, in_function
            return
        inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        yield from walk(node, inner)

    yield from walk(tree, False)


def _targets(stmt: ast.Import | ast.ImportFrom, package: str, modules: set[str]) -> list[str]:
    if isinstance(stmt, ast.Import):
        return [a.name for a in stmt.names]
    if stmt.level:
        base = package.split(".")
        base = base[: len(base) - (stmt.level - 1)]
        module = ".".join([*base, stmt.module] if stmt.module else base)
    else:
        module = stmt.module or ""
    return [f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in stmt.names]


def _imported_names(stmt: ast.Import | ast.ImportFrom, package: str) -> tuple[str, list[str]]:
    if isinstance(stmt, ast.Import):
        return "", []
    if stmt.level:
        base = package.split(".")
        base = base[: len(base) - (stmt.level - 1)]
        module = ".".join([*base, stmt.module] if stmt.module else base)
    else:
        module = stmt.module or ""
    return module, [a.name for a in stmt.names]


def _node(module: str, top: str) -> str | None:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == top else None


def _cross_imports(
    tree: ast.AST, name: str, is_package: bool, modules: set[str], top: str
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool, str, str]]:
    """``(statement, in a function, target module, target node)`` of every import of module
    ``name`` that reaches another node (``TYPE_CHECKING`` blocks left out)."""
    source = _node(name, top)
    package = name if is_package else name.rpartition(".")[0]
    for stmt, in_function in _imports(tree):
        for target in _targets(stmt, package, modules):
            node = _node(target, top)
            if node is not None and node != source:
                yield stmt, in_function, target, node


def _sources(package: Path) -> dict[tuple[str, bool], Path]:
    return {_module_name(p, package): p for p in sorted(package.rglob("*.py"))}


def import_graph(package: Path) -> dict[str, set[str]]:
    """node -> the nodes its modules import, function bodies included (no self edges).

    Nodes are ``<top>.<first component>`` and the root ``<top>``; tests/test_import_graph.py
    fails on any cycle of this graph."""
    top = package.name
    sources = _sources(package)
    modules = {name for name, _ in sources}
    graph: dict[str, set[str]] = {}
    for (name, is_package), path in sources.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        edges = _cross_imports(tree, name, is_package, modules, top)
        graph.setdefault(str(_node(name, top)), set()).update(node for *_, node in edges)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _exports(tree: ast.Module) -> set[str]:
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets
        ):
            value = stmt.value
            if isinstance(value, (ast.List, ast.Tuple)):
                return {e.value for e in value.elts if isinstance(e, ast.Constant)}
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom):
            names |= {a.asname or a.name for a in stmt.names}
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            names |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
    return {n for n in names if not n.startswith("_")}


def _lazy_references(tree: ast.AST, top: str) -> Iterator[tuple[str, str]]:
    """``(workbench.x, N)`` for every string constant ``"workbench.x:N"`` (a lazy reference)."""
    pattern = re.compile(rf"({re.escape(top)}\.\w+):(\w+)")
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found = pattern.fullmatch(node.value)
            if found:
                yield found[1], found[2]


def _python_uses(text: str, top: str, faces: set[str]) -> Iterator[tuple[str, str]]:
    """The face names a script or a notebook's code uses (see the module's docstring)."""
    yield from _written_uses(text, top, faces)
    try:
        tree = ast.parse(text)
    except SyntaxError:  # a notebook cell with shell or magic lines: the written uses only
        return
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in faces:
            yield from ((node.module, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == top:
            for a in node.names:
                if f"{top}.{a.name}" in faces:
                    aliases[a.asname or a.name] = f"{top}.{a.name}"
        elif isinstance(node, ast.Import):
            aliases.update({a.asname: a.name for a in node.names if a.asname and a.name in faces})
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
        ):
            yield aliases[node.value.id], node.attr


def _written_uses(
    text: str, top: str, faces: set[str], *, short: bool = False
) -> Iterator[tuple[str, str]]:
    """``workbench.x.N`` and ``workbench.x:N`` in any text; with ``short``, ``x.N`` too and the
    names of ``from workbench.x import ...`` lines (the docs' code blocks)."""
    for face, name in re.findall(rf"\b({re.escape(top)}\.\w+)[.:](\w+)", text):
        if face in faces:
            yield face, name
    if not short:
        return
    subpackages = "|".join(sorted(f.rpartition(".")[2] for f in faces))
    for sub, name in re.findall(rf"(?<![\w.])({subpackages})\.(\w+)", text):
        yield f"{top}.{sub}", name
    for face, names in re.findall(rf"from ({re.escape(top)}\.\w+) import \(?([\w, ]+)", text):
        if face in faces:
            yield from ((face, n.strip()) for n in names.split(",") if n.strip())


def _uses_beside(root: Path, top: str, faces: set[str]) -> Iterator[tuple[str, str]]:
    """The face names the tests, bench scripts, examples, notebooks and docs use."""
    for folder in ("tests", "bench", "examples"):
        for path in sorted((root / folder).rglob("*.py")):
            yield from _python_uses(path.read_text(encoding="utf-8"), top, faces)
    for path in sorted([*(root / "notebooks").glob("*.ipynb"), *(root / top).rglob("*.ipynb")]):
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
        for cell in cells:
            if cell.get("cell_type") == "code":
                source = cell.get("source", "")
                text = "".join(source) if isinstance(source, list) else source
                yield from _python_uses(text, top, faces)
    for path in sorted([root / "README.md", *(root / "docs").glob("*.md")]):
        if path.exists():
            yield from _written_uses(path.read_text(encoding="utf-8"), top, faces, short=True)


def measure(package: Path) -> dict[str, object]:
    top = package.name
    sources = _sources(package)
    modules = {name for name, _ in sources}
    lines = 0
    sizes: list[tuple[int, str]] = []
    private_imports: list[str] = []
    body_imports = 0
    graph: dict[str, set[str]] = {}
    used_from_outside: dict[str, set[str]] = {}
    exported: dict[str, set[str]] = {}
    for (name, is_package), path in sources.items():
        text = path.read_text(encoding="utf-8")
        lines += text.count("\n")
        tree = ast.parse(text)
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                sizes.append(
                    (fn.end_lineno - fn.lineno + 1, f"{path.relative_to(package.parent)}:{fn.name}")
                )
        source = _node(name, top)
        assert source is not None
        graph.setdefault(source, set())
        if is_package and name.count(".") == 1:
            exported[name] = _exports(tree)
        package_name = name if is_package else name.rpartition(".")[0]
        in_body: set[int] = set()
        for stmt, in_function, target, node in _cross_imports(tree, name, is_package, modules, top):
            graph[source].add(node)
            parts = target.split(".")
            if len(parts) > 2 and any(p.startswith("_") for p in parts[2:]):
                private_imports.append(f"{path.relative_to(package.parent)}:{stmt.lineno} {target}")
            if in_function:
                in_body.add(id(stmt))
        body_imports += len(in_body)
        for stmt in ast.walk(tree):  # every import here, ``TYPE_CHECKING`` blocks included
            if isinstance(stmt, ast.ImportFrom):
                module, names = _imported_names(stmt, package_name)
                node = _node(module, top) if module else None
                if node is not None and node != source:  # from the face or a module of the node
                    used_from_outside.setdefault(node, set()).update(names)
        for face, used in _lazy_references(tree, top):
            if face != source:
                used_from_outside.setdefault(face, set()).add(used)
    for face, used in _uses_beside(package.parent, top, set(exported)):
        used_from_outside.setdefault(face, set()).add(used)
    exported_total = sum(len(v) for v in exported.values())
    unused = {k: sorted(v - used_from_outside.get(k, set())) for k, v in sorted(exported.items())}
    sizes.sort(reverse=True)
    return {
        "lines": lines,
        "files": len(sources),
        "functions_over_60": sum(1 for n, _ in sizes if n > 60),
        "functions_over_80": sum(1 for n, _ in sizes if n > 80),
        "functions_over_100": sum(1 for n, _ in sizes if n > 100),
        "longest_functions": [f"{where} ({n})" for n, where in sizes[:5]],
        "exported": exported_total,
        "exported_unused_outside": sum(len(v) for v in unused.values()),
        "unused_exports": {k: v for k, v in unused.items() if v},
        "private_imports": len(private_imports),
        "function_body_imports": body_imports,
        "cycles_with_function_imports": cycles(graph),
    }


def function_sizes(package: Path) -> dict[str, int]:
    """``path:qualified name`` -> lines, for every function of the package."""
    out: dict[str, int] = {}
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(package.parent).as_posix()

        _visit(tree, rel, "", out)
    return out


def _visit(node: ast.AST, rel: str, prefix: str, out: dict[str, int]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}{child.name}"
            if not isinstance(child, ast.ClassDef):
                assert child.end_lineno is not None
                out[f"{rel}:{name}"] = child.end_lineno - child.lineno + 1
            _visit(child, rel, f"{name}.", out)


def read_ratchet(path: Path = RATCHET) -> dict[str, int]:
    """The ratchet file's ``path:name lines`` entries (blank lines and ``#`` comments skipped)."""
    if not path.exists():
        return {}
    entries: dict[str, int] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            where, _, lines = line.rpartition(" ")
            entries[where] = int(lines)
    return entries


def check(package: Path, ratchet: dict[str, int]) -> list[str]:
    """Every breach of the function-size limit and its ratchet, as sentences."""
    sizes = function_sizes(package)
    problems: list[str] = []
    for where, lines in sorted(sizes.items()):
        allowed = ratchet.get(where)
        if lines > MAX_FUNCTION_LINES and allowed is None:
            problems.append(f"{where} has {lines} lines (limit {MAX_FUNCTION_LINES}): split it")
        elif allowed is not None and lines > allowed:
            problems.append(f"{where} grew from {allowed} to {lines} lines: it may only shrink")
    for where in sorted(ratchet):
        lines = sizes.get(where)
        if lines is None or lines <= MAX_FUNCTION_LINES:
            state = "is gone" if lines is None else f"is {lines} lines now"
            problems.append(f"{where} {state}: take it off {RATCHET.name}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default=str(ROOT / "workbench"))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--check", action="store_true", help="enforce the function-size limit")
    parser.add_argument(
        "--unused", action="store_true", help="list each package's exports unused outside it"
    )
    parser.add_argument(
        "--write-ratchet",
        action="store_true",
        help=f"write {RATCHET.name} with the long functions of today (it may only shrink)",
    )
    args = parser.parse_args(argv)
    if args.write_ratchet:
        sizes = function_sizes(Path(args.package).resolve())
        long = {k: v for k, v in sorted(sizes.items()) if v > MAX_FUNCTION_LINES}
        header = (
            f"# Functions still over {MAX_FUNCTION_LINES} lines: `path:name lines`. make lint fails"
            " when one grows or a new one appears;\n# take a function off when it is split"
            " (bench/code_size.py --check).\n"
        )
        RATCHET.write_text(header + "".join(f"{k} {v}\n" for k, v in long.items()), "utf-8")
        return 0
    if args.check:
        problems = check(Path(args.package).resolve(), read_ratchet())
        for line in problems:
            print(f"error: {line}", file=sys.stderr)
        return 1 if problems else 0
    figures = measure(Path(args.package).resolve())
    unused = figures.pop("unused_exports")
    if args.unused:
        figures = {"unused_exports": unused}
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for key, value in figures.items():
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
