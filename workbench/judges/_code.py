"""The code a function judge runs: its own package's modules and its third-party versions.

:func:`code_coverage` follows the imports (static, :mod:`ast`; packages' ``__init__`` included)
of the function's module through the judge's own code (its top-level package, or a script's
directory); any other non-stdlib import is a dependency, recorded with its installed version.
Dynamic imports and data files are not covered. Files are read once per (path, mtime, size).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import re
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

NOT_INSTALLED = "not installed"


@dataclass(frozen=True)
class _Source:
    data: bytes
    sha256: str
    imports: tuple[str, ...]


@dataclass(frozen=True)
class CodeCoverage:
    """The code a function judge runs, as found by :func:`code_coverage`."""

    root: Path
    """The parent of the top-level package, or the script module's own directory."""
    files: dict[str, bytes]
    """Every covered file's content, by POSIX path relative to ``root``."""
    manifest: dict[str, str]
    """Every covered file's sha256, by the same path."""
    dependencies: dict[str, str]
    """Installed version of every third-party distribution imported."""

    def params(self) -> dict[str, Any]:
        return {"code_sha256": dict(self.manifest), "dependencies": dict(self.dependencies)}


_CACHE: dict[Path, tuple[int, int, _Source]] = {}


def _statements(node: ast.AST) -> Iterator[ast.AST]:
    """Every statement under ``node``, nested ones included (cheaper than :func:`ast.walk`)."""
    for name in ("body", "orelse", "finalbody", "handlers", "cases"):
        for child in getattr(node, name, None) or ():
            if isinstance(child, ast.stmt):
                yield child
            yield from _statements(child)


def _imports(tree: ast.AST, package: str | None) -> tuple[str, ...]:
    """Absolute names of every module ``tree`` may import (``from X import y``: X and X.y)."""
    out: list[str] = []
    for node in _statements(tree):
        if isinstance(node, ast.Import):
            out += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                if package is None:
                    continue
                parts = package.split(".")
                if node.level - 1 > len(parts) - 1:
                    continue
                anchor = ".".join(parts[: len(parts) - (node.level - 1)])
                base = f"{anchor}.{base}" if base else anchor
            if not base:
                continue
            out.append(base)
            out += [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
    return tuple(dict.fromkeys(out))


def _read(path: Path, package: str | None) -> _Source:
    stat = path.stat()
    hit = _CACHE.get(path)
    if hit is not None and hit[0] == stat.st_mtime_ns and hit[1] == stat.st_size:
        return hit[2]
    data = path.read_bytes()
    try:
        tree = ast.parse(data, filename=str(path))
        names = _imports(tree, package)
    except (SyntaxError, ValueError):  # hashed all the same; it cannot import anything we see
        names = ()
    source = _Source(data, hashlib.sha256(data).hexdigest(), names)
    _CACHE[path] = (stat.st_mtime_ns, stat.st_size, source)
    return source


def _resolve(name: str, root: str) -> list[tuple[str, str | None]]:
    """The files of ``root`` importing ``name`` runs (``__init__.py`` on the way), each with its
    package; empty when ``name`` is not under ``root``."""
    parts = name.split(".")
    out: list[tuple[str, str | None]] = []
    base = root
    for i, part in enumerate(parts):
        folder = os.path.join(base, part)
        init = os.path.join(folder, "__init__.py")
        if os.path.isfile(init):
            out.append((init, ".".join(parts[: i + 1])))
        elif os.path.isfile(folder + ".py"):
            out.append((folder + ".py", ".".join(parts[:i]) or None))
            break
        elif not os.path.isdir(folder):
            break
        base = folder
    return out


def _provides(info: Path, top: str) -> bool:
    """Whether the distribution whose metadata is the folder ``info`` installs module ``top``."""
    try:
        return top in (info / "top_level.txt").read_text(encoding="utf-8").split()
    except OSError:
        pass
    try:
        record = (info / "RECORD").read_text(encoding="utf-8")
    except OSError:
        return False
    return any(
        line.startswith((f"{top}/", f"{top}.py,", f"{top}.")) for line in record.splitlines()
    )


@lru_cache(maxsize=256)
def _distribution_names(top: str) -> tuple[str, ...]:
    """The distributions that provide the top-level module ``top``: the one of that name, else one
    beside the module that names it (cheaper than ``packages_distributions``)."""
    try:
        return (metadata.distribution(top).metadata["Name"] or top,)
    except (metadata.PackageNotFoundError, ValueError):
        pass
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        spec = None
    origin = getattr(spec, "origin", None) or next(
        iter(getattr(spec, "submodule_search_locations", None) or []), None
    )
    if not origin:
        return ()
    path = Path(origin)
    site = path.parent.parent if path.name.startswith("__init__.") else path.parent
    for info in sorted(site.glob("*.dist-info")):
        if _provides(info, top):
            return (metadata.Distribution.at(info).metadata["Name"] or info.name,)
    return ()


@lru_cache(maxsize=256)
def _distribution(name: str) -> metadata.Distribution | None:
    try:
        return metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None


_VERSIONS: dict[str, tuple[int, int, str]] = {}


def _stat_of(dist: metadata.Distribution) -> tuple[int, int] | None:
    folder = getattr(dist, "_path", None)  # PathDistribution: its .dist-info folder
    try:
        stat = os.stat(os.path.join(str(folder), "METADATA")) if folder is not None else None
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size) if stat is not None else None


def _version(name: str) -> str:
    """The installed version of distribution ``name``, read again when its metadata changed."""
    dist = _distribution(name)
    stat = _stat_of(dist) if dist is not None else None
    hit = _VERSIONS.get(name)
    if stat is not None and hit is not None and hit[:2] == stat:
        return hit[2]
    try:
        version = dist.version if dist is not None else None
    except (OSError, TypeError, ValueError):
        version = None
    if not version:
        _distribution.cache_clear()
        dist = _distribution(name)
        version = dist.version if dist is not None else None
        stat = _stat_of(dist) if dist is not None else None
    if not version:
        return NOT_INSTALLED
    if stat is not None:
        _VERSIONS[name] = (*stat, str(version))
    return str(version)


def _dependencies(names: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    stdlib = sys.stdlib_module_names
    for top in sorted(names):
        if top in stdlib or top == "__main__":
            continue
        found = _distribution_names(top)
        if not found:
            out[top] = NOT_INSTALLED
        out.update({name: _version(name) for name in found})
    return dict(sorted(out.items()))


def own_root(module: ModuleType) -> tuple[Path, str | None]:
    """Where ``module``'s own code lies: the parent of its top-level package and that package's
    name, or (a script module outside any package) its directory and None."""
    file = Path(str(module.__file__)).resolve()
    top = module.__name__.partition(".")[0]
    if module.__name__ == top and not hasattr(module, "__path__"):
        return file.parent, None
    package = sys.modules.get(top)
    where = getattr(package, "__file__", None)
    folder = Path(where).parent if where else Path(list(getattr(package, "__path__", []))[0])
    return folder.resolve().parent, top


def code_coverage(module: ModuleType) -> CodeCoverage:
    """The own-code files ``module`` imports, transitively, and its dependencies."""
    root_path, top = own_root(module)
    root, name = str(root_path), module.__name__
    first = str(Path(str(module.__file__)).resolve())
    package = name if first.endswith("__init__.py") else name.rpartition(".")[0] or None
    pending: list[tuple[str, str | None]] = [(first, package)]
    pending += _resolve(name, root)[:-1]  # the packages above it ran first
    seen: dict[str, _Source] = {}
    resolved: dict[str, list[tuple[str, str | None]]] = {}
    external: set[str] = set()
    while pending:
        path, pkg = pending.pop()
        if path in seen:
            continue
        seen[path] = source = _read(Path(path), pkg)
        for imported in source.imports:
            head = imported.partition(".")[0]
            if top is not None and head != top:
                external.add(head)
                continue
            if imported not in resolved:
                resolved[imported] = _resolve(imported, root)
            pending += resolved[imported]
            if top is None and not resolved[imported] and not _exists(root, head):
                external.add(head)
    rel = {Path(os.path.relpath(p, root)).as_posix(): s for p, s in seen.items()}
    ordered = sorted(rel)
    return CodeCoverage(
        root=root_path,
        files={k: rel[k].data for k in ordered},
        manifest={k: rel[k].sha256 for k in ordered},
        dependencies=_dependencies(external),
    )


def _exists(root: str, head: str) -> bool:
    return os.path.isdir(os.path.join(root, head)) or os.path.isfile(
        os.path.join(root, head + ".py")
    )


_REQUIREMENT = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[[^\]]*\])?(.*)")
_CLAUSE = re.compile(r"\s*(~=|===|==|!=|<=|>=|<|>)\s*([^\s,]+)\s*")


def distribution_key(name: str) -> str:
    """A distribution name as package indexes compare it (``PyYAML`` and ``pyyaml`` alike)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def project_requirements(text: str) -> dict[str, str]:
    """``name -> specifier`` of a ``pyproject.toml``'s ``[project] dependencies`` (keys as
    :func:`distribution_key` makes them, no markers); empty when it cannot be read."""
    try:
        project = tomllib.loads(text).get("project", {})
    except tomllib.TOMLDecodeError:
        return {}
    listed = project.get("dependencies", []) if isinstance(project, dict) else []
    out: dict[str, str] = {}
    for line in listed if isinstance(listed, list) else []:
        found = _REQUIREMENT.fullmatch(str(line).split(";")[0])
        if found is not None:
            out[distribution_key(found.group(1))] = found.group(2).strip().strip("()").strip()
    return out


def _release(version: str) -> tuple[int, ...] | None:
    return (
        tuple(int(p) for p in version.split(".")) if re.fullmatch(r"\d+(\.\d+)*", version) else None
    )


def _clause(op: str, wanted: str, have: tuple[int, ...]) -> bool | None:
    if op in ("==", "!=") and wanted.endswith(".*"):
        prefix = _release(wanted[:-2])
        return None if prefix is None else (have[: len(prefix)] == prefix) == (op == "==")
    want = _release(wanted)
    if want is None:
        return None
    width = max(len(want), len(have))
    a, b = have + (0,) * (width - len(have)), want + (0,) * (width - len(want))
    if op == "~=":
        return a >= b and have[: len(want) - 1] == want[:-1]
    checks = {"==": a == b, "===": a == b, "!=": a != b, "<=": a <= b, ">=": a >= b}
    return checks.get(op, a < b if op == "<" else a > b)


def requirement_allows(specifier: str, version: str | None) -> bool | None:
    """Whether ``version`` meets ``specifier`` (``==0.4.3``, ``>=0.4,<0.5``, ``~=0.4.0``,
    ``==0.4.*``); None when either cannot be read as plain release numbers."""
    have = _release(version) if version else None
    if have is None:
        return None
    results = []
    for part in (p for p in specifier.split(",") if p.strip()):
        found = _CLAUSE.fullmatch(part)
        result = _clause(found.group(1), found.group(2), have) if found is not None else None
        if result is None:
            return None
        results.append(result)
    return all(results)
