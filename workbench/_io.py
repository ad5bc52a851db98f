"""Canonical JSON, content hashes, atomic writes, append-only JSON Lines and bounded, strict
readers (docs/formats.md#reading-rules-for-every-file)."""

from __future__ import annotations

import contextlib
import errno
import gc
import hashlib
import json
import math
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from .errors import Problem, problem, refusal

_CANONICAL = json.JSONEncoder(
    sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
)
"""What ``json.dumps`` builds anew at every call with these options (it keeps no state between
calls): built once, as a gold's thousands of per-case hashes call it."""


def canonical_json(obj: Any) -> str:
    """Serialize ``obj`` deterministically for hashing."""
    return _CANONICAL.encode(obj)


def sha256_text(text: str) -> str:
    """Hex sha256 of the UTF-8 encoding of ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_json(obj: Any) -> str:
    """Hex sha256 of the canonical JSON of ``obj``."""
    return sha256_text(canonical_json(obj))


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file's bytes."""
    with open(path, "rb") as fh:
        return sha256_stream(fh)


def sha256_stream(fh: BinaryIO) -> str:
    """Hex sha256 of what is left in an open binary file, read into one reused buffer (a fresh
    one per read costs a page fault per 4 kB)."""
    digest = hashlib.sha256()
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    while got := fh.readinto(buf):  # type: ignore[attr-defined]
        digest.update(view[:got])
    return digest.hexdigest()


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half."""
    atomic_write(path, lambda fh: fh.write(data))


def atomic_write(path: str | os.PathLike[str], write: Callable[[BinaryIO], object]) -> None:
    """Write ``path`` with ``write`` (given the open file): readers see the old file or the new."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(target.parent)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write pretty, key-sorted JSON atomically (human-readable, still deterministic)."""
    atomic_write_text(path, json.dumps(obj, sort_keys=True, ensure_ascii=False, indent=2) + "\n")


def write_jsonl(path: str | os.PathLike[str], rows: Iterable[Any]) -> int:
    """Write JSON Lines atomically; returns the number of rows."""
    lines = [json.dumps(row, ensure_ascii=False, sort_keys=True) for row in rows]
    atomic_write_text(path, "".join(line + "\n" for line in lines))
    return len(lines)


def jsonl_line(record: Any) -> bytes:
    """One record as :class:`AppendOnlyLog` writes it: sorted keys, UTF-8, one line."""
    return json.dumps(record, ensure_ascii=False, sort_keys=True).encode("utf-8") + b"\n"


class AppendOnlyLog:
    """An append-only JSON Lines file with one fsynced record per line; a torn last line is
    repaired on open (:meth:`repair`)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.repaired_bytes = self.repair()
        self._fh = open(self.path, "ab")  # noqa: SIM115  (held open for the life of the log)

    def repair(self) -> int:
        """Repair a torn last line; return the number of bytes moved aside to ``<log>.torn``
        (a complete JSON object missing only its newline is kept and terminated)."""
        if not self.path.exists():
            return 0
        size = self.path.stat().st_size
        with open(self.path, "rb") as fh:
            if size == 0:
                return 0
            fh.seek(size - 1)
            if fh.read(1) == b"\n":
                return 0
            cut = _last_newline_end(fh, size)
            fh.seek(cut)
            tail = fh.read()
        try:
            complete = isinstance(json.loads(tail), dict)  # a cut number could still parse
        except ValueError:
            complete = False
        if complete:
            _synced(self.path, "ab", lambda fh: fh.write(b"\n"))
            return 0
        _synced(
            self.path.with_suffix(self.path.suffix + ".torn"),
            "ab",
            lambda fh: fh.write(tail + b"\n"),
        )
        _synced(self.path, "r+b", lambda fh: fh.truncate(cut))
        return len(tail)

    def append(self, record: Any) -> None:
        self.append_lines([jsonl_line(record)])

    def append_many(self, records: Iterable[Any]) -> None:
        """Append several records with one write, flush and fsync (a group commit)."""
        self.append_lines([jsonl_line(record) for record in records])

    def append_lines(self, lines: Sequence[bytes]) -> None:
        """Append complete lines made by :func:`jsonl_line`: one write, flush and fsync."""
        if not lines:
            return
        self._fh.write(lines[0] if len(lines) == 1 else b"".join(lines))
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> AppendOnlyLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _synced(path: Path, mode: str, write: Callable[[BinaryIO], object]) -> None:
    with open(path, mode) as fh:
        write(fh)  # type: ignore[arg-type]
        fh.flush()
        os.fsync(fh.fileno())


def _last_newline_end(fh: BinaryIO, size: int, block: int = 1 << 16) -> int:
    """Offset just past the last newline of an open binary file (0 when there is none)."""
    end = size
    while end > 0:
        start = max(0, end - block)
        fh.seek(start)
        chunk = fh.read(end - start)
        found = chunk.rfind(b"\n")
        if found != -1:
            return start + found + 1
        end = start
    return 0


MAX_LINE_BYTES_ENV = "WORKBENCH_MAX_LINE_BYTES"
DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024
MAX_YAML_BYTES_ENV = "WORKBENCH_MAX_YAML_BYTES"
DEFAULT_MAX_YAML_BYTES = 4 * 1024 * 1024


def _limit(env: str, default: int) -> int:
    raw = os.environ.get(env, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        message = f"{env}={raw!r} is not a positive whole number of bytes"
        fix = f"set {env} to a number of bytes such as {default}, or unset it for the default"
        raise refusal(f"invalid {env}", env, "invalid_setting", message, fix)
    return value


def max_line_bytes() -> int:
    """The longest line a JSON Lines reader accepts: ``$WORKBENCH_MAX_LINE_BYTES`` or 8 MiB."""
    return _limit(MAX_LINE_BYTES_ENV, DEFAULT_MAX_LINE_BYTES)


def max_yaml_bytes() -> int:
    """The largest YAML or text file a reader accepts: ``$WORKBENCH_MAX_YAML_BYTES`` or 4 MiB."""
    return _limit(MAX_YAML_BYTES_ENV, DEFAULT_MAX_YAML_BYTES)


def max_document_bytes() -> int:
    """The largest whole JSON file, or JSON Lines record that grows with the dataset (a run
    manifest, a gold release), any reader accepts: ``32 x`` :func:`max_line_bytes`."""
    return 32 * max_line_bytes()


def open_for_reading(
    path: str | os.PathLike[str], *, fix: str = "point at a readable file"
) -> BinaryIO:
    """Open a file for binary reading, or raise :class:`WorkbenchError` with one problem:
    ``file_missing``, ``not_a_file`` (a directory, named pipe or socket: a pipe without a writer
    would block forever) or ``unreadable_file``. Devices such as ``/dev/zero`` open."""
    loc = os.fspath(path)
    kinds = {stat.S_ISDIR: "a directory", stat.S_ISFIFO: "a named pipe", stat.S_ISSOCK: "a socket"}
    try:
        mode = os.stat(loc).st_mode
        kind = next((name for test, name in kinds.items() if test(mode)), None)
        if kind is None:
            return open(loc, "rb")
    except FileNotFoundError:
        raise refusal(
            f"{loc}: missing", loc, "file_missing", "the file does not exist", fix
        ) from None
    except IsADirectoryError:
        kind = "a directory"
    except OSError as exc:
        raise refusal(
            f"{loc}: unreadable",
            loc,
            "unreadable_file",
            f"the file cannot be read ({exc.strerror or exc})",
            "check the path and its permissions (the workbench only needs to read it)",
        ) from None
    raise refusal(f"{loc}: not a file", loc, "not_a_file", f"this is {kind}, not a file", fix)


def read_bounded(
    path: str | os.PathLike[str],
    *,
    limit: int | None = None,
    fix: str = "point at a readable file",
    setting: str = MAX_YAML_BYTES_ENV,
) -> bytes:
    """A whole (small) file's bytes, refusing more than ``limit`` (default :func:`max_yaml_bytes`;
    at most ``limit + 1`` bytes are read). ``setting`` is the variable the refusal says to raise."""
    limit = max_yaml_bytes() if limit is None else limit
    with open_for_reading(path, fix=fix) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        loc = os.fspath(path)
        raise refusal(
            f"{loc}: too large",
            loc,
            "file_too_large",
            f"the file is larger than {limit} bytes",
            f"point at the intended file; if it really is this large, raise {setting} (bytes)",
        )
    return data


def iter_jsonl_lines(
    path: str | os.PathLike[str],
    not_utf8: list[int] | None = None,
    *,
    limit: int | None = None,
    digest: Any = None,
) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for each non-blank line, 1-based. A line that is not UTF-8
    raises :class:`UnicodeDecodeError` or goes to ``not_utf8``; one longer than ``limit`` (default
    :func:`max_line_bytes`) is refused (``line_too_long``); ``digest`` is fed every byte read."""
    limit = max_line_bytes() if limit is None else limit
    with open_for_reading(path) as fh:
        number = 0
        while True:
            raw = fh.readline(limit + 1)
            if digest is not None:
                digest.update(raw)
            if not raw:
                return
            number += 1
            if len(raw) > limit and raw[-1:] != b"\n":
                loc = f"{os.fspath(path)}:{number}"
                raise refusal(
                    f"{loc}: line too long",
                    loc,
                    "line_too_long",
                    f"the line is longer than {limit} bytes",
                    _FIXES["line_too_long"],
                )
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                if not_utf8 is None:
                    raise
                not_utf8.append(number)
                continue
            stripped = line.strip()
            if stripped:
                yield number, stripped


def read_json_file(path: str | os.PathLike[str], *, limit: int | None = None) -> Any:
    """A whole JSON file, read boundedly and parsed strictly: :class:`OSError` when it cannot be
    opened (a pipe or socket unopened), :class:`JSONRecordError` for content larger than ``limit``
    (default :func:`max_document_bytes`), not UTF-8 or not strict JSON."""
    limit = max_document_bytes() if limit is None else limit
    with _open_plain(path) as fh:
        info = os.fstat(fh.fileno())
        too_large = stat.S_ISREG(info.st_mode) and info.st_size > limit
        data = b"" if too_large else fh.read(limit + 1)
    if too_large or len(data) > limit:
        raise JSONRecordError(
            "file_too_large",
            f"the file is larger than {limit} bytes (raise {MAX_LINE_BYTES_ENV} if it really is"
            " this large)",
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JSONRecordError(
            "not_utf8", f"the file is not valid UTF-8 (byte {exc.start})"
        ) from None
    return loads_json(text)


def read_jsonl_records(path: str | os.PathLike[str], *, limit: int | None = None) -> list[Any]:
    """Every non-blank line of a JSON Lines file, parsed strictly, with the exceptions of
    :func:`read_json_file` (``line_too_long`` past ``limit``); messages name the line."""
    limit = max_line_bytes() if limit is None else limit
    out: list[Any] = []
    with _open_plain(path) as fh:
        number = 0
        while True:
            raw = fh.readline(limit + 1)
            if not raw:
                return out
            number += 1
            if len(raw) > limit and raw[-1:] != b"\n":
                raise JSONRecordError(
                    "line_too_long",
                    f"line {number} is longer than {limit} bytes (raise {MAX_LINE_BYTES_ENV} if"
                    " records really are this long)",
                )
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise JSONRecordError(
                    "not_utf8", f"line {number} is not valid UTF-8 (byte {exc.start})"
                ) from None
            try:
                out.append(loads_json(text))
            except JSONRecordError as exc:
                raise JSONRecordError(exc.code, f"line {number}: {exc.msg}") from None


def _open_plain(path: str | os.PathLike[str]) -> BinaryIO:
    """``open(path, "rb")``, but a named pipe or socket raises :class:`OSError` unopened."""
    loc = os.fspath(path)
    mode = os.stat(loc).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        raise OSError(errno.EINVAL, "a named pipe or socket, not a file", loc)
    return open(loc, "rb")


class JSONRecordError(ValueError):
    """A JSON text the workbench refuses, with the problem ``code`` to report."""

    def __init__(self, code: str, msg: str) -> None:
        super().__init__(msg)
        self.code = code
        self.msg = msg


def _object_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise JSONRecordError(
                    "duplicate_json_key", f"duplicate key {key!r} in one JSON object"
                )
            seen.add(key)
    return obj


def _constant(name: str) -> Any:
    raise JSONRecordError("non_finite_number", f"{name} is not a number JSON allows")


def _float(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):
        raise JSONRecordError("non_finite_number", f"{text[:40]} is too large for a number")
    return value


def _check_pairs(pairs: list[tuple[str, Any]]) -> None:
    if len(dict(pairs)) != len(pairs):
        _object_pairs(pairs)


_DECODER = json.JSONDecoder(
    object_pairs_hook=_object_pairs, parse_constant=_constant, parse_float=_float
)
_CHECKER = json.JSONDecoder(
    object_pairs_hook=_check_pairs, parse_constant=_constant, parse_float=_float
)


def loads_json(text: str) -> Any:
    """Parse one JSON text strictly, refusing duplicate keys, ``NaN``/``Infinity``, float
    overflow and too-deep nesting with :class:`JSONRecordError` (a ``ValueError``)."""
    return _strict(_DECODER, text)


def check_json(text: str) -> None:
    """Refuse ``text`` exactly as :func:`loads_json` would, without keeping what it parsed (for
    readers that then validate it with ``Model.model_validate_json``)."""
    _strict(_CHECKER, text)


MAX_JSON_DEPTH = 200
"""The deepest nesting of arrays and objects a record may have: what pydantic's JSON parser
reads (``model_validate_json``), so whatever this module accepts the models can read. Fixed,
not Python's recursion limit, which other code in the process may raise."""
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _too_deep(text: str) -> bool:
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:  # depth <= number of openers
        return False
    depth = 0
    for char in _JSON_STRING.sub('""', text):
        if char in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return True
        elif char in "]}":
            depth -= 1
    return False


def _strict(decoder: json.JSONDecoder, text: str) -> Any:
    if _too_deep(text):
        raise JSONRecordError("json_too_deep", "the JSON is nested too deeply to read")
    try:
        return decoder.decode(text)
    except JSONRecordError:
        raise
    except json.JSONDecodeError as exc:
        raise JSONRecordError(
            "malformed_json", f"malformed JSON ({exc.msg} at column {exc.colno})"
        ) from None
    except RecursionError:
        raise JSONRecordError("json_too_deep", "the JSON is nested too deeply to read") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise JSONRecordError("malformed_json", f"malformed JSON ({str(exc)[:120]})") from None


WRONG_TYPE_ERRORS: dict[str, str] = {
    "int_type": "a whole number",
    "float_type": "a number",
    "bool_type": "true or false",
    "string_type": "a string",
}
"""Pydantic error types that readers report as ``wrong_type``."""
WRONG_TYPE_FIX = (
    "write the value with its JSON type: numbers and true/false without quotes, whole numbers"
    " without a decimal point"
)


def json_problem(
    exc: JSONRecordError, location: str, *, case_id: str | None = None, fix: str | None = None
) -> Problem:
    """The :class:`Problem` for a refused JSON record, with a fix for its code."""
    fix = fix or _FIXES.get(exc.code, "correct the JSON")
    return problem(location, exc.code, exc.msg, fix, case_id)


_FIXES = {
    "malformed_json": (
        "each line must be one complete JSON object; a torn last line means the writer crashed"
    ),
    "duplicate_json_key": (
        "keep exactly one of the repeated keys; JSON readers disagree on which one wins"
    ),
    "non_finite_number": "write a finite number or null; NaN and Infinity are not JSON",
    "json_too_deep": "flatten the record; no workbench record nests this deeply",
    "line_too_long": (
        "each line must be one JSON record; if records really are this long, raise"
        f" {MAX_LINE_BYTES_ENV} (bytes)"
    ),
    "file_too_large": (
        f"point at the intended file; if it really is this large, raise {MAX_LINE_BYTES_ENV}"
        " (bytes)"
    ),
    "not_utf8": "save the file as UTF-8",
}


SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser where PyYAML was built with it: about 20x faster, same documents."""


_MERGE_TAG = "tag:yaml.org,2002:merge"


class _StrictYAMLLoader(SAFE_LOADER):  # type: ignore[misc]  # yaml is untyped (Any)
    """A safe loader that refuses a key repeated in one mapping (merge keys aside)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
                continue
            key = self.construct_object(key_node)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key; SafeLoader reports it itself
                continue
            if first is not None:  # no context: str(exc) starts with the problem itself
                message = f"found duplicate key {key!r} (first on line {first})"
                raise DuplicateYAMLKey(None, None, message, key_node.start_mark)
            seen[key] = key_node.start_mark.line + 1
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


class DuplicateYAMLKey(yaml.constructor.ConstructorError):  # type: ignore[misc]  # untyped yaml
    """A YAML mapping repeats a key (the last one would silently win)."""


class YAMLTooDeep(yaml.YAMLError):  # type: ignore[misc]  # yaml is untyped (Any)
    """The YAML nests deeper than the interpreter can follow."""

    problem = "the YAML is nested too deeply to read"
    problem_mark = None

    def __str__(self) -> str:
        return self.problem


def yaml_loads(text: str) -> Any:
    """``yaml.safe_load`` that refuses duplicate keys (:class:`DuplicateYAMLKey`) and too-deep
    nesting (:class:`YAMLTooDeep`), both ``yaml.YAMLError``."""
    try:
        return yaml.load(text, Loader=_StrictYAMLLoader)  # noqa: S506 - a safe loader subclass
    except RecursionError:
        raise YAMLTooDeep() from None
    except yaml.MarkedYAMLError as exc:
        if exc.problem == "exceeded maximum nesting depth":  # libyaml's limit: 1,000 levels
            raise YAMLTooDeep() from None
        raise


@contextlib.contextmanager
def bulk_load() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many long-lived, acyclic records."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            # Freeze first, or the next full collection rescans every record (1.24x CPU in align).
            gc.freeze()
            gc.enable()
