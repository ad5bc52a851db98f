"""One input loader: a UTF-8 file -> strict YAML with line numbers -> a model -> problems, every
problem at its line, collected and raised together."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, NoReturn

import yaml
from pydantic import ValidationError

from ._io import SAFE_LOADER, DuplicateYAMLKey, YAMLTooDeep, read_bounded, yaml_loads
from .errors import Problem, Severity, WorkbenchError, problem, refusal

Path_ = tuple[Any, ...]
"""A path into a parsed document: mapping keys and sequence indexes, outermost first."""


def read_utf8(
    path: str | os.PathLike[str],
    *,
    code: str,
    what: str,
    summary: str | None = None,
    fix: str | None = None,
    location: str | None = None,
) -> str:
    """The file's text, read boundedly (:func:`workbench._io.read_bounded`) and decoded; not UTF-8
    raises :class:`WorkbenchError` with one ``code`` problem (``what`` names the file)."""
    loc = location or os.fspath(path)
    data = read_bounded(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        message = f"not valid UTF-8 (byte {exc.start})"
        fix = fix or f"save the {what} as UTF-8"
        raise refusal(summary or f"unreadable {what}", loc, code, message, fix) from None


def yaml_problem(
    exc: yaml.YAMLError,
    location: str,
    *,
    code: str,
    fix: str = "correct the YAML syntax",
    severity: Severity = "error",
    split: bool = False,
) -> Problem:
    """The :class:`Problem` for refused YAML, at ``file:line`` when the parser knows the line; with
    ``split``, a repeated key and too-deep nesting get their own codes."""
    mark = getattr(exc, "problem_mark", None)
    where = f"{location}:{mark.line + 1}" if mark is not None else location
    why = getattr(exc, "problem", None) or (str(exc).splitlines() or [type(exc).__name__])[0]
    message = f"not valid YAML ({why})"
    if split and isinstance(exc, YAMLTooDeep):
        where, code, message = location, "yaml_too_deep", exc.problem
        fix = "flatten the file; no workbench file nests this deeply"
    elif split and isinstance(exc, DuplicateYAMLKey):
        code, message, fix = (
            "duplicate_yaml_key",
            str(exc.problem),
            "keep exactly one of the repeated keys",
        )
    return Problem(location=where, code=code, message=message, fix=fix, severity=severity)


def parse_yaml_text(
    text: str,
    location: str,
    *,
    code: str,
    summary: str,
    fix: str = "correct the YAML syntax",
    severity: Severity = "error",
    split: bool = False,
) -> Any:
    """Parse YAML strictly (:func:`workbench._io.yaml_loads`); raise :class:`WorkbenchError`
    with the one :func:`yaml_problem` when it is refused."""
    try:
        return yaml_loads(text)
    except yaml.YAMLError as exc:
        raise WorkbenchError(
            summary,
            [yaml_problem(exc, location, code=code, fix=fix, severity=severity, split=split)],
        ) from None


def yaml_lines(source: str | yaml.Node | None, *, root: bool = False) -> dict[Path_, int]:
    """The 1-based line of every mapping key and sequence item, by its path in the document (with
    ``root``, the empty path too); empty when the text does not parse. Non-scalar keys and nodes
    reached again through an alias are not descended into (an alias bomb costs one visit per node).
    """
    node = _composed(source)
    lines: dict[Path_, int] = {}
    if node is None:
        return lines
    if root:
        lines[()] = node.start_mark.line + 1
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, Path_]] = [(node, ())]
    while stack:
        current, path = stack.pop()
        if id(current) not in seen:
            seen.add(id(current))
            stack.extend(reversed(_children(current, path, lines)))  # depth first, in order
    return lines


def _composed(source: str | yaml.Node | None) -> yaml.Node | None:
    """The document's node tree (None when it is empty or does not parse)."""
    if source is None or isinstance(source, yaml.Node):
        return source
    try:
        return yaml.compose(source, Loader=SAFE_LOADER)
    except (yaml.YAMLError, RecursionError):
        return None


def _children(
    node: yaml.Node, path: Path_, lines: dict[Path_, int]
) -> list[tuple[yaml.Node, Path_]]:
    """The nodes under ``node`` with their paths, each path's line recorded in ``lines``."""
    children: list[tuple[yaml.Node, Path_]] = []
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                lines.setdefault((*path, key.value), key.start_mark.line + 1)
                children.append((value, (*path, key.value)))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[(*path, i)] = item.start_mark.line + 1
            children.append((item, (*path, i)))
    return children


class Lines:
    """``file:line`` of a path in a document: the line of the deepest part of it that exists (a part
    is also tried as text: pydantic may report the YAML key ``0`` as the integer ``0``)."""

    def __init__(self, location: str, lines: Mapping[Path_, int]) -> None:
        self.location = location
        self.lines = lines

    def found(self, *path: Any) -> Path_:
        """The deepest path in the document along ``path``; a part it lacks (a pydantic union tag)
        is passed over."""
        out: Path_ = ()
        for part in path:
            for candidate in (part, str(part)):
                if (*out, candidate) in self.lines:
                    out = (*out, candidate)
                    break
        return out

    def line(self, *path: Any) -> int | None:
        """The line of the deepest existing part of ``path``, or None."""
        return self.lines.get(self.found(*path))

    def at(self, *path: Any) -> str:
        """``file:line`` of ``path`` (see :meth:`line`), or ``file`` when no part of it exists."""
        line = self.line(*path)
        return f"{self.location}:{line}" if line else self.location


@dataclass(frozen=True)
class YAMLFile:
    """A YAML file read by :func:`load_yaml`: its text, its parsed data and its line map."""

    location: str
    """The file as problems name it."""
    text: str
    """The UTF-8 text."""
    data: Any
    """The parsed document."""

    @cached_property
    def lines(self) -> Lines:
        """The line of every path in the document (built on first use)."""
        return Lines(self.location, yaml_lines(self.text))

    def at(self, *path: Any) -> str:
        """``file:line`` of a path in the document (see :meth:`Lines.at`)."""
        return self.lines.at(*path)


_MISSING = object()


def load_yaml(
    path: str | os.PathLike[str],
    *,
    prefix: str,
    what: str,
    missing_fix: str,
    shape: tuple[str, str] | None,
    missing_message: str | None = None,
    encoding_code: str | None = None,
    yaml_code: str | None = None,
    shape_code: str | None = None,
    if_empty: Any = _MISSING,
) -> YAMLFile:
    """Read a YAML file that must exist and hold a mapping (when ``shape`` = ``(message, fix)``);
    raise :class:`WorkbenchError` with one problem: ``<prefix>_missing``, the bounded read's codes,
    ``<prefix>_encoding``, ``<prefix>_yaml`` or ``<prefix>_shape`` (the ``*_code`` arguments
    override them). An empty document becomes ``if_empty`` when that is given."""
    path = Path(path)
    loc = str(path)
    if not path.is_file():
        message = missing_message or f"the {what} file does not exist"
        raise refusal(f"no {what}", loc, f"{prefix}_missing", message, missing_fix)
    text = read_utf8(path, code=encoding_code or f"{prefix}_encoding", what=what)
    data = parse_yaml_text(
        text, loc, code=yaml_code or f"{prefix}_yaml", summary=f"unreadable {what}"
    )
    if data is None and if_empty is not _MISSING:
        data = if_empty
    if shape is not None and not isinstance(data, dict):
        raise refusal(f"unreadable {what}", loc, shape_code or f"{prefix}_shape", *shape)
    return YAMLFile(location=loc, text=text, data=data)


def peek_yaml(path: str | os.PathLike[str]) -> Any:
    """A YAML file's parsed content, or None when it cannot be read or parsed (to sniff a kind)."""
    try:
        return yaml_loads(read_bounded(path).decode("utf-8"))
    except (WorkbenchError, UnicodeDecodeError, yaml.YAMLError):
        return None


def read_config(path: str | os.PathLike[str]) -> tuple[Any, Problem | None]:
    """An optional project configuration file: its parsed content (None when absent or empty), or
    the :class:`Problem` that it cannot be read."""
    if not Path(path).is_file():
        return None, None
    try:
        loaded = load_yaml(
            path, prefix="config", what="project configuration", missing_fix="", shape=None
        )
    except WorkbenchError as exc:
        return None, exc.problems[0]
    return loaded.data, None


def read_yaml(
    path: str | os.PathLike[str], *, prefix: str, fix: str = "correct the YAML syntax"
) -> Any:
    """Read a small YAML file strictly; raise :class:`WorkbenchError` with one problem
    (``<prefix>_encoding``, ``<prefix>_yaml``, ``duplicate_yaml_key``, ``yaml_too_deep``, or the
    bounded read's)."""
    loc = os.fspath(path)
    text = read_utf8(path, code=f"{prefix}_encoding", what="file", summary=f"{loc}: not UTF-8")
    return parse_yaml(text, loc, prefix=prefix, fix=fix)


def parse_yaml(
    text: str,
    loc: str,
    *,
    prefix: str,
    fix: str = "correct the YAML syntax",
    severity: Severity = "error",
) -> Any:
    """Parse YAML text strictly (see :func:`read_yaml`); ``loc`` names it in problems."""
    try:
        return yaml_loads(text)
    except yaml.YAMLError as exc:
        problem = yaml_problem(
            exc, loc, code=f"{prefix}_yaml", fix=fix, severity=severity, split=True
        )
        summary = {"yaml_too_deep": "too deep", "duplicate_yaml_key": "duplicate key"}.get(
            problem.code, "not valid YAML"
        )
        raise WorkbenchError(f"{loc}: {summary}", [problem]) from None


def error_field(error: Mapping[str, Any], root: str = "") -> str:
    """The dotted path of one pydantic error (``controls.3.role``), or ``root`` for the document."""
    return ".".join(map(str, error["loc"])) or root


def rule_error(error: Mapping[str, Any]) -> Any:
    """The exception a model's validator raised for this error (its checks), if any."""
    return (error.get("ctx") or {}).get("error")


def first_error(exc: ValidationError) -> str:
    """The message of the first error, for records reported as one problem each."""
    return str(exc.errors(include_url=False)[0]["msg"])


Located = str | Callable[..., str]
"""Where problems go: one location for all, or a function of the error's path (``Lines.at``)."""


def validation_problems(
    exc: ValidationError,
    *,
    at: Located,
    code: str | Callable[[Mapping[str, Any]], str],
    fix: str | Callable[[Mapping[str, Any]], str],
    root: str = "",
    base: Path_ = (),
    case_id: str | None = None,
    message: Callable[[Mapping[str, Any], str], str] | None = None,
    keep: Callable[[Mapping[str, Any]], bool] | None = None,
    expand: Callable[[Mapping[str, Any], str, str], list[Problem] | None] | None = None,
    severity: Severity = "error",
) -> list[Problem]:
    """One :class:`Problem` per pydantic error, ``<dotted path>: <message>`` unless ``message``.

    ``code`` and ``fix`` are fixed or chosen per error; ``at`` is a location or a function of the
    error's path (after ``base``) such as :meth:`Lines.at`. ``keep(error)`` false leaves an error
    out; ``expand(error, dotted, location)`` may replace it by its own problems."""
    out: list[Problem] = []
    for err in exc.errors(include_url=False):
        if keep is not None and not keep(err):
            continue
        dotted = error_field(err, root)
        where = at if isinstance(at, str) else at(*base, *err["loc"])
        expanded = expand(err, dotted, where) if expand is not None else None
        if expanded is not None:
            out += expanded
            continue
        what = message(err, dotted) if message else f"{dotted}: {err['msg']}"
        kind, how = (x if isinstance(x, str) else x(err) for x in (code, fix))
        out.append(problem(where, kind, what, how, case_id, severity=severity))
    return out


class Problems(list[Problem]):
    """Every problem found in one input, raised together by :meth:`raise_if_any`."""

    def add(
        self,
        location: str,
        code: str,
        message: str,
        fix: str,
        *,
        case_id: str | None = None,
        severity: Severity = "error",
    ) -> None:
        """Record one problem."""
        self.append(problem(location, code, message, fix, case_id, severity=severity))

    def raise_if_any(self, summary: str) -> None:
        """Raise one :class:`WorkbenchError` listing every problem, if there are any."""
        if self:
            self.fail(summary)

    def fail(self, summary: str) -> NoReturn:
        """Raise one :class:`WorkbenchError` with every problem recorded so far."""
        raise WorkbenchError(summary, list(self))
