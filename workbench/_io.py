"""Canonical JSON, content hashes, atomic writes and append-only JSON Lines.

Every hash the workbench records is a sha256 over canonical JSON: sorted keys, UTF-8, no
insignificant whitespace. Every file it writes is written atomically (temporary file in the
same directory, fsync, rename), except evidence logs, which are append-only JSON Lines with
one flushed and fsynced record per line.

Every reader is bounded and strict (docs/formats.md#reading-rules-for-every-file): JSON Lines
are read in chunks of at most ``WORKBENCH_MAX_LINE_BYTES`` (8 MiB), whole JSON documents and
tables are at most 32 times that (:func:`max_document_bytes`, :func:`read_json_file`,
:func:`read_jsonl_records`), YAML and prompt files are at most ``WORKBENCH_MAX_YAML_BYTES``
(4 MiB), and JSON records refuse duplicate keys, NaN/Infinity and too-deep nesting
(:func:`loads_json`, :func:`check_json`).
"""

from __future__ import annotations

import contextlib
import errno
import gc
import hashlib
import json
import math
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from .errors import Problem, WorkbenchError


def canonical_json(obj: Any) -> str:
    """Serialize ``obj`` deterministically for hashing."""
    return json.dumps(
        obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    )


def sha256_text(text: str) -> str:
    """Hex sha256 of the UTF-8 encoding of ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_json(obj: Any) -> str:
    """Hex sha256 of the canonical JSON of ``obj``."""
    return sha256_text(canonical_json(obj))


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
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
    """Write ``path`` with ``write`` (given the open file) so that readers see the old file or
    the new one, never half: a large file is written as it is produced, never held whole."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        # mkstemp creates the file private (0600); give it the mode a plain open() would.
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
    """An append-only JSON Lines file with one durable record per line.

    Each :meth:`append` writes one complete line, flushes and fsyncs, so a crash can at
    worst leave a torn final line. :meth:`repair` finds such a line on open, moves it to a
    ``.torn`` side file (nothing is silently deleted) and truncates the log back to the last
    complete record.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.repaired_bytes = self.repair()
        self._fh = open(self.path, "ab")  # noqa: SIM115  (held open for the life of the log)

    def repair(self) -> int:
        """Repair a torn last line; return the number of bytes moved aside.

        A last line that is a complete JSON object missing only its newline (the crash came
        between the two) is kept and terminated. Anything else after the last newline is a
        partial record: it is appended to ``<log>.torn`` and cut from the log.
        """
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
            with open(self.path, "ab") as fh:
                fh.write(b"\n")
                fh.flush()
                os.fsync(fh.fileno())
            return 0
        with open(self.path.with_suffix(self.path.suffix + ".torn"), "ab") as side:
            side.write(tail + b"\n")
            side.flush()
            os.fsync(side.fileno())
        with open(self.path, "r+b") as fh:
            fh.truncate(cut)
            fh.flush()
            os.fsync(fh.fileno())
        return len(tail)

    def append(self, record: Any) -> None:
        self.append_lines([jsonl_line(record)])

    def append_many(self, records: Iterable[Any]) -> None:
        """Append several records with one write, flush and fsync (a group commit)."""
        self.append_lines([jsonl_line(record) for record in records])

    def append_lines(self, lines: Sequence[bytes]) -> None:
        """Append complete lines made by :func:`jsonl_line`: one write, flush and fsync. A
        crash can at worst tear the last line, which :meth:`repair` moves aside."""
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


# -- bounded, strict reading ------------------------------------------------------------------

MAX_LINE_BYTES_ENV = "WORKBENCH_MAX_LINE_BYTES"
"""Environment variable that overrides :data:`DEFAULT_MAX_LINE_BYTES`."""
DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024
"""Longest JSON Lines record any reader accepts (bytes, without the newline): 8 MiB."""
MAX_YAML_BYTES_ENV = "WORKBENCH_MAX_YAML_BYTES"
"""Environment variable that overrides :data:`DEFAULT_MAX_YAML_BYTES`."""
DEFAULT_MAX_YAML_BYTES = 4 * 1024 * 1024
"""Largest YAML file (rubric, candidate spec, card, prompt file) any reader accepts: 4 MiB."""


def _limit(env: str, default: int) -> int:
    raw = os.environ.get(env, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise WorkbenchError(
            f"invalid {env}",
            [
                Problem(
                    location=env,
                    code="invalid_setting",
                    message=f"{env}={raw!r} is not a positive whole number of bytes",
                    fix=(
                        f"set {env} to a number of bytes such as {default}, or unset it for the"
                        " default"
                    ),
                )
            ],
        )
    return value


def max_line_bytes() -> int:
    """The longest line a JSON Lines reader accepts: ``$WORKBENCH_MAX_LINE_BYTES`` or 8 MiB."""
    return _limit(MAX_LINE_BYTES_ENV, DEFAULT_MAX_LINE_BYTES)


def max_yaml_bytes() -> int:
    """The largest YAML or text file a reader accepts: ``$WORKBENCH_MAX_YAML_BYTES`` or 4 MiB."""
    return _limit(MAX_YAML_BYTES_ENV, DEFAULT_MAX_YAML_BYTES)


DOCUMENT_FACTOR = 32
"""A whole JSON document may be this many times :func:`max_line_bytes` (256 MiB by default)."""


def max_document_bytes() -> int:
    """The largest whole JSON file, or JSON Lines record that grows with the dataset (a run
    manifest or a gold release holds one hash set per case), any reader accepts:
    ``32 x`` :func:`max_line_bytes` (256 MiB by default; ``WORKBENCH_MAX_LINE_BYTES`` scales it)."""
    return DOCUMENT_FACTOR * max_line_bytes()


def open_for_reading(
    path: str | os.PathLike[str], *, fix: str = "point at a readable file"
) -> BinaryIO:
    """Open a file for binary reading, or raise :class:`WorkbenchError` with one problem.

    Refused: a directory or a named pipe or socket in place of the file (``not_a_file``; a
    pipe without a writer would block forever) and anything the OS will not open
    (``unreadable_file``: permissions, I/O errors). Devices such as ``/dev/zero`` open; the
    bounded readers then refuse their endless content.
    """
    loc = os.fspath(path)
    try:
        mode = os.stat(loc).st_mode
    except FileNotFoundError:
        raise WorkbenchError(
            f"{loc}: missing",
            [
                Problem(
                    location=loc, code="file_missing", message="the file does not exist", fix=fix
                )
            ],
        ) from None
    except OSError as exc:
        raise WorkbenchError(
            f"{loc}: unreadable",
            [
                Problem(
                    location=loc,
                    code="unreadable_file",
                    message=f"the file cannot be read ({exc.strerror or exc})",
                    fix="check the path and its permissions",
                )
            ],
        ) from None
    kind = (
        "a directory"
        if stat.S_ISDIR(mode)
        else "a named pipe"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else None
    )
    if kind is not None:
        raise WorkbenchError(
            f"{loc}: not a file",
            [
                Problem(
                    location=loc, code="not_a_file", message=f"this is {kind}, not a file", fix=fix
                )
            ],
        )
    try:
        return open(loc, "rb")
    except IsADirectoryError:
        raise WorkbenchError(
            f"{loc}: not a file",
            [
                Problem(
                    location=loc,
                    code="not_a_file",
                    message="this is a directory, not a file",
                    fix=fix,
                )
            ],
        ) from None
    except OSError as exc:
        raise WorkbenchError(
            f"{loc}: unreadable",
            [
                Problem(
                    location=loc,
                    code="unreadable_file",
                    message=f"the file cannot be read ({exc.strerror or exc})",
                    fix="check the path and its permissions (the workbench only needs to read it)",
                )
            ],
        ) from None


def read_bounded(
    path: str | os.PathLike[str],
    *,
    limit: int | None = None,
    fix: str = "point at a readable file",
    setting: str = MAX_YAML_BYTES_ENV,
) -> bytes:
    """A whole (small) file's bytes, refusing more than ``limit`` (default :func:`max_yaml_bytes`).

    At most ``limit + 1`` bytes are ever read, so ``/dev/zero`` or a huge file costs nothing.
    ``setting`` is the environment variable the refusal tells the user to raise (for a limit
    other than the YAML one, e.g. :func:`max_document_bytes`: ``WORKBENCH_MAX_LINE_BYTES``).
    """
    limit = max_yaml_bytes() if limit is None else limit
    with open_for_reading(path, fix=fix) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        loc = os.fspath(path)
        raise WorkbenchError(
            f"{loc}: too large",
            [
                Problem(
                    location=loc,
                    code="file_too_large",
                    message=f"the file is larger than {limit} bytes",
                    fix=(
                        f"point at the intended file; if it really is this large, raise {setting}"
                        " (bytes)"
                    ),
                )
            ],
        )
    return data


def iter_jsonl_lines(
    path: str | os.PathLike[str],
    not_utf8: list[int] | None = None,
    *,
    limit: int | None = None,
    digest: Any = None,
) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for each non-blank line, 1-based.

    A line that is not valid UTF-8 raises :class:`UnicodeDecodeError`, unless ``not_utf8`` is
    given: then its number is appended there and reading continues, so that a caller can
    report every bad line at once.

    Lines are read in bounded chunks: a line longer than :func:`max_line_bytes` raises
    :class:`WorkbenchError` (``line_too_long``, with its line number) after reading at most
    that many bytes of it, so a file without newlines (``/dev/zero``) cannot exhaust memory.
    A directory, pipe or unreadable file raises :class:`WorkbenchError` too (see
    :func:`open_for_reading`). ``limit`` replaces the line limit for logs whose records grow
    with the dataset (gold releases: :func:`max_document_bytes`). ``digest`` (a ``hashlib``
    object) is fed every byte read, so a reader that also needs the file's sha256 does not read
    the file twice.
    """
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
                raise WorkbenchError(
                    f"{loc}: line too long",
                    [
                        Problem(
                            location=loc,
                            code="line_too_long",
                            message=f"the line is longer than {limit} bytes",
                            fix=(
                                "each line must be one JSON record; if records really are this"
                                f" long, raise {MAX_LINE_BYTES_ENV} (bytes)"
                            ),
                        )
                    ],
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
    """A whole JSON file, read boundedly and parsed strictly (:func:`loads_json`).

    A drop-in for ``json.loads(Path(path).read_text(encoding="utf-8"))`` that keeps its kinds
    of exception, so callers keep their handling: :class:`OSError` when the file cannot be
    opened (missing, permissions, a directory; a named pipe or socket is refused before it is
    opened, so it can never block) and :class:`JSONRecordError`, a ``ValueError``, for its
    content: larger than ``limit`` (default :func:`max_document_bytes`; code
    ``file_too_large``, after reading at most ``limit + 1`` bytes, so ``/dev/zero`` costs
    nothing), not UTF-8, malformed, a duplicate key, ``NaN``/``Infinity`` or too deep.
    """
    limit = max_document_bytes() if limit is None else limit
    with _open_plain(path) as fh:
        info = os.fstat(fh.fileno())
        # A regular file's size is known: a too-large one is refused without reading it.
        data = b"" if stat.S_ISREG(info.st_mode) and info.st_size > limit else fh.read(limit + 1)
        too_large = len(data) > limit or (stat.S_ISREG(info.st_mode) and info.st_size > limit)
    if too_large:
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
    """Every non-blank line of a JSON Lines file, read boundedly and parsed strictly.

    A drop-in for ``[json.loads(line) for line in path.read_text().splitlines() if line.strip()]``
    with the same kinds of exception as :func:`read_json_file`: :class:`OSError` when the file
    cannot be opened, :class:`JSONRecordError` (a ``ValueError``) for a line longer than
    ``limit`` (default :func:`max_line_bytes`; code ``line_too_long``), not UTF-8, malformed,
    with a duplicate key, ``NaN``/``Infinity`` or too deep. Messages name the line number.
    """
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
    """``open(path, "rb")``, raising :class:`OSError` as it would, but refusing a named pipe or
    socket before opening it (opening a pipe without a writer would block forever)."""
    loc = os.fspath(path)
    mode = os.stat(loc).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        raise OSError(errno.EINVAL, "a named pipe or socket, not a file", loc)
    return open(loc, "rb")


class JSONRecordError(ValueError):
    """A JSON text the workbench refuses, with the problem ``code`` to report.

    ``malformed_json`` (not JSON), ``duplicate_json_key`` (the last key would silently win),
    ``non_finite_number`` (``NaN``, ``Infinity``, ``-Infinity`` or a number too large for a
    float) or ``json_too_deep`` (nested deeper than the interpreter can follow).
    """

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
    return None


_DECODER = json.JSONDecoder(
    object_pairs_hook=_object_pairs, parse_constant=_constant, parse_float=_float
)
_CHECKER = json.JSONDecoder(
    object_pairs_hook=_check_pairs, parse_constant=_constant, parse_float=_float
)


def loads_json(text: str) -> Any:
    """Parse one JSON text strictly; raise :class:`JSONRecordError` (a ``ValueError``).

    Unlike :func:`json.loads` this refuses duplicate keys, ``NaN``/``Infinity`` and numbers
    that overflow a float, and turns too-deep nesting into an error instead of a
    ``RecursionError``. Every JSON record the workbench reads goes through it (or through
    :func:`check_json`).
    """
    return _strict(_DECODER, text)


def check_json(text: str) -> None:
    """Refuse ``text`` exactly as :func:`loads_json` would, without keeping what it parsed.

    For readers that then validate the same text with pydantic's faster JSON parser
    (``Model.model_validate_json``), which would let the last duplicate key win.
    """
    _strict(_CHECKER, text)


def _strict(decoder: json.JSONDecoder, text: str) -> Any:
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
"""Pydantic error types that readers report as ``wrong_type``: records are read with strict JSON
types."""


def json_problem(
    exc: JSONRecordError, location: str, *, case_id: str | None = None, fix: str | None = None
) -> Problem:
    """The :class:`Problem` for a refused JSON record, with a fix for its code."""
    fixes = {
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
    return Problem(
        location=location,
        case_id=case_id,
        code=exc.code,
        message=exc.msg,
        fix=fix or fixes.get(exc.code, "correct the JSON"),
    )


SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser where PyYAML was built with it (the wheels are): about 20x PyYAML's own on
the demo's YAML files, with the same documents, nodes, line numbers and safe construction."""


class _StrictYAMLLoader(SAFE_LOADER):  # type: ignore[misc]  # yaml is untyped (Any)
    """A safe loader that refuses a key repeated in one mapping (merge keys aside)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if (
                not isinstance(key_node, yaml.ScalarNode)
                or key_node.tag == "tag:yaml.org,2002:merge"
            ):
                continue
            key = self.construct_object(key_node)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key; SafeLoader reports it itself
                continue
            if first is not None:
                # No context: the first line of str(exc) is the problem itself, for callers
                # that report ``str(exc).splitlines()[0]``.
                raise DuplicateYAMLKey(
                    None,
                    None,
                    f"found duplicate key {key!r} (first on line {first})",
                    key_node.start_mark,
                )
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
    nesting (:class:`YAMLTooDeep` instead of a ``RecursionError``). Both are ``yaml.YAMLError``,
    so a caller that handles syntax errors handles these too."""
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
    """Pause the cyclic garbage collector while building many long-lived records.

    Loading 100,000 records with the collector on spends most of its time re-scanning the
    records already loaded; the records contain no reference cycles, so pausing is safe.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            # Move what was loaded to the permanent generation first: re-enabling the collector
            # would otherwise rescan every record on its next full collection (1.24x CPU in align).
            gc.freeze()
            gc.enable()
