"""The code a function judge runs: its own package's modules and its third-party versions.

:func:`code_coverage` follows the imports (static, :mod:`ast`; packages' ``__init__`` included)
of the function's module through the judge's own code (its top-level package, or a script's
directory); any other non-stdlib import is a dependency, recorded with its installed version.
Dynamic imports and data files are not covered. Every call reads and hashes every covered file
again (an edit between two calls in one process is always seen); only what is derived from a
file's bytes (its imports, a distribution's version from its ``METADATA``) is reused, keyed by the
sha256 of those bytes, never by path or mtime.
"""

from __future__ import annotations

import ast
import email.parser
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


_Step = tuple[tuple[str, str | None] | None, str | None]
"""One dotted prefix's look at the disk: (the file importing it runs, with its package, or None;
the folder to go on in, or None to stop)."""


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


_IMPORTS: dict[tuple[str, str | None], tuple[str, ...]] = {}
"""The imports of a source, by (sha256 of its bytes, its package): never by path or mtime."""
_CACHE_LIMIT = 4096


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


def _read(path: str, package: str | None) -> _Source:
    with open(path, "rb") as fh:
        data = fh.read()
    sha256 = hashlib.sha256(data).hexdigest()
    names = _IMPORTS.get((sha256, package))
    if names is None:
        try:
            names = _imports(ast.parse(data, filename=path), package)
        except (SyntaxError, ValueError):  # hashed all the same; it cannot import anything we see
            names = ()
        if len(_IMPORTS) >= _CACHE_LIMIT:
            _IMPORTS.clear()
        _IMPORTS[(sha256, package)] = names
    return _Source(data, sha256, names)


def _step(base: str, part: str, package: str) -> _Step:
    folder = os.path.join(base, part)
    init = os.path.join(folder, "__init__.py")
    if os.path.isfile(init):
        return (init, package), folder
    if os.path.isfile(folder + ".py"):
        return (folder + ".py", package.rpartition(".")[0] or None), None
    return None, folder if os.path.isdir(folder) else None


def _resolve(name: str, root: str, steps: dict[str, _Step]) -> list[tuple[str, str | None]]:
    """The files of ``root`` importing ``name`` runs (``__init__.py`` on the way), each with its
    package; empty when ``name`` is not under ``root``. ``steps`` holds the prefixes already
    looked up in this one call (one look at the disk per prefix, not per name)."""
    parts = name.split(".")
    out: list[tuple[str, str | None]] = []
    base: str | None = root
    prefix = ""
    for part in parts:
        prefix = f"{prefix}.{part}" if prefix else part
        step = steps.get(prefix)
        if step is None:
            step = steps[prefix] = _step(str(base), part, prefix)
        found, base = step
        if found is not None:
            out.append(found)
        if base is None:
            break
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


_VERSIONS: dict[str, str] = {}
"""A distribution's version, by the sha256 of its ``METADATA`` bytes: never by path or mtime."""


def _metadata_bytes(dist: metadata.Distribution) -> bytes | None:
    folder = getattr(dist, "_path", None)  # PathDistribution: its .dist-info folder
    if folder is None:
        return None
    try:
        with open(os.path.join(str(folder), "METADATA"), "rb") as fh:
            return fh.read()
    except OSError:
        return None


def _parsed_version(data: bytes) -> str | None:
    """The ``Version`` header of core metadata bytes (what ``Distribution.version`` reads)."""
    header = email.parser.BytesHeaderParser().parsebytes(data)
    version = header["Version"]
    return str(version) if version else None


def _version(name: str) -> str:
    """The installed version of distribution ``name``, read from its metadata at every call."""
    dist = _distribution(name)
    data = _metadata_bytes(dist) if dist is not None else None
    if data is None:  # no METADATA file where it was: installed anew, or not a folder
        _distribution.cache_clear()
        dist = _distribution(name)
        data = _metadata_bytes(dist) if dist is not None else None
    if data is None:
        try:
            version = dist.version if dist is not None else None
        except (OSError, TypeError, ValueError):
            version = None
        return str(version) if version else NOT_INSTALLED
    key = hashlib.sha256(data).hexdigest()
    if key not in _VERSIONS:
        if len(_VERSIONS) >= _CACHE_LIMIT:
            _VERSIONS.clear()
        _VERSIONS[key] = _parsed_version(data) or NOT_INSTALLED
    return _VERSIONS[key]


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
    steps: dict[str, _Step] = {}
    pending += _resolve(name, root, steps)[:-1]  # the packages above it ran first
    seen: dict[str, _Source] = {}
    resolved: dict[str, list[tuple[str, str | None]]] = {}
    external: set[str] = set()
    while pending:
        path, pkg = pending.pop()
        if path in seen:
            continue
        seen[path] = source = _read(path, pkg)
        for imported in source.imports:
            head = imported.partition(".")[0]
            if top is not None and head != top:
                external.add(head)
                continue
            if imported not in resolved:
                resolved[imported] = _resolve(imported, root, steps)
            pending += resolved[imported]
            if top is None and not resolved[imported] and not _exists(root, head):
                external.add(head)
    rel = {_relative(p, root): s for p, s in seen.items()}
    ordered = sorted(rel)
    return CodeCoverage(
        root=root_path,
        files={k: rel[k].data for k in ordered},
        manifest={k: rel[k].sha256 for k in ordered},
        dependencies=_dependencies(external),
    )


def _relative(path: str, root: str) -> str:
    """``path`` relative to ``root`` in POSIX form (a plain cut when it lies under ``root``)."""
    under = root.rstrip(os.sep) + os.sep
    if path.startswith(under) and os.sep == "/":
        return path[len(under) :]
    return Path(os.path.relpath(path, root)).as_posix()


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
