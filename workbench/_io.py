"""Canonical JSON, content hashes, atomic writes and append-only JSON Lines.

Every hash the workbench records is a sha256 over canonical JSON: sorted keys, UTF-8, no
insignificant whitespace. Every file it writes is written atomically (temporary file in the
same directory, fsync, rename), except evidence logs, which are append-only JSON Lines with
one flushed and fsynced record per line.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any


def canonical_json(obj: Any) -> str:
    """Serialize ``obj`` deterministically for hashing."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


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
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        # mkstemp creates the file private (0600); give it the mode a plain open() would.
        os.chmod(tmp, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
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
        line = json.dumps(record, ensure_ascii=False, sort_keys=True).encode("utf-8") + b"\n"
        self._fh.write(line)
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> AppendOnlyLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _last_newline_end(fh: Any, size: int, block: int = 1 << 16) -> int:
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


def iter_jsonl_lines(path: str | os.PathLike[str], not_utf8: list[int] | None = None) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for each non-blank line, 1-based.

    A line that is not valid UTF-8 raises :class:`UnicodeDecodeError`, unless ``not_utf8`` is
    given: then its number is appended there and reading continues, so that a caller can
    report every bad line at once.
    """
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
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
            gc.enable()
