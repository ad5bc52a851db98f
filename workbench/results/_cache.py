"""Checked results, kept: the narrow columns of a JSON Lines results file the columnar reader
vouched for, cached under the file's sha256 and the workbench version (docs/formats.md#results
cache), so a later read hashes the file and reads its columns instead of parsing every field.

Fails closed: the key is the sha256 of the bytes read now (a changed file is another key); an
entry is written only when every block passed and the file hashed the same before and after its
read; an entry whose bytes differ from the sha256 its note records is ignored and rewritten."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .._io import atomic_write_bytes, max_line_bytes, open_for_reading, sha256_file, sha256_json

if TYPE_CHECKING:
    from io import BufferedIOBase

    import pyarrow as pa

    from ._contract import JudgeIdentity

CACHE_FORMAT = 1
"""Version of the cached layout; part of the key."""
SWITCH_ENV = "WORKBENCH_RESULTS_CACHE"
"""``WORKBENCH_RESULTS_CACHE=off`` disables the results cache (every read parses in full)."""


def cache_dir() -> Path | None:
    """``$WORKBENCH_CACHE_DIR/results`` (default ``~/.cache/judge-workbench/results``), or None
    when ``WORKBENCH_RESULTS_CACHE=off``."""
    if os.environ.get(SWITCH_ENV, "").strip().lower() in ("off", "0", "no", "false"):
        return None
    raw = os.environ.get("WORKBENCH_CACHE_DIR", "").strip()
    return (Path(raw) if raw else Path.home() / ".cache" / "judge-workbench") / "results"


def _read_bytes(path: Path) -> bytearray:
    """A file's bytes, read into one buffer of its size."""
    with open_for_reading(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        buf = bytearray(size)
        got = cast("BufferedIOBase", fh).readinto(buf)
    if got != size:
        raise OSError(f"{path}: read {got} of {size} bytes")
    return buf


def _key(sha256: str) -> str:
    from .. import __version__

    return sha256_json(
        {
            "format": CACHE_FORMAT,
            "workbench": __version__,
            "results": sha256,
            "max_line_bytes": max_line_bytes(),  # a longer limit accepts other files
        }
    )


@dataclass(frozen=True)
class Cached:
    """A cache entry: the checked narrow columns of one file and its judges."""

    sha256: str
    """sha256 of the results file the entry was read for."""
    table: pa.Table
    """The columns :data:`~workbench.results._columnar.NARROW` (``shard`` as written)."""
    identities: dict[str, JudgeIdentity]
    """``fingerprint -> judge identity`` of every judge in the file."""


def load(directory: Path, path: Path, schema: pa.Schema) -> tuple[str, Cached | None]:
    """The file's sha256 and its cache entry, None when there is none to trust (absent, torn,
    edited, of another layout, or naming a judge its fingerprint does not hash)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ._contract import JudgeIdentity

    sha = sha256_file(path)
    key = _key(sha)
    entry, note = directory / f"results-{key}.arrow", directory / f"results-{key}.json"
    try:
        recorded = json.loads(note.read_bytes())
        data = pa.py_buffer(_read_bytes(entry))  # not mapped: a file cut short under a map
        if hashlib.sha256(memoryview(data)).hexdigest() != recorded["content_sha256"]:
            return sha, None  # edited or torn: read the file again, rewrite the entry
        table = pa.ipc.open_stream(data).read_all()
        identities = {
            fp: JudgeIdentity.model_validate(raw) for fp, raw in recorded["identities"].items()
        }
        if (
            recorded["key"] != key
            or not table.schema.equals(schema)
            or any(identity.fingerprint() != fp for fp, identity in identities.items())
            or set(identities) != set(pc.unique(table["judge_fingerprint"]).to_pylist())
        ):
            return sha, None
    except (OSError, ValueError, TypeError, KeyError, AttributeError, pa.ArrowException):
        return sha, None
    return sha, Cached(sha, table, identities)


class _Hashing:
    """A binary file that hashes what is written to it."""

    def __init__(self, fh: Any) -> None:
        self.fh = fh
        self.digest = hashlib.sha256()
        self.closed = False

    def write(self, data: Any) -> int:
        self.digest.update(data)
        return int(self.fh.write(data))

    def flush(self) -> None:
        self.fh.flush()

    def close(self) -> None:
        self.closed = True


class Writer:
    """An entry written block by block into a temporary file, kept only by :meth:`commit`."""

    def __init__(self, directory: Path, schema: pa.Schema) -> None:
        import pyarrow as pa

        directory.mkdir(parents=True, exist_ok=True)
        fd, self.tmp = tempfile.mkstemp(prefix=".results-", suffix=".tmp", dir=directory)
        self.directory = directory
        self.fh = os.fdopen(fd, "wb")
        self.sink = _Hashing(self.fh)
        self.broken = False
        self.writer = pa.ipc.new_stream(pa.PythonFile(self.sink, mode="w"), schema)

    def add(self, block: pa.Table) -> None:
        import pyarrow as pa

        if self.broken:
            return
        try:
            self.writer.write_table(block)
        except (OSError, pa.ArrowException):  # e.g. a full disk: the read goes on uncached
            self.broken = True

    def commit(self, sha256: str, identities: dict[str, Any]) -> None:
        """Keep the entry as the one of ``sha256`` (nothing when a write failed)."""
        import pyarrow as pa

        if self.broken:
            self.discard()
            return
        key = _key(sha256)
        note = {"key": key, "content_sha256": "", "identities": identities}
        try:
            self.writer.close()
            self.fh.close()
            note["content_sha256"] = self.sink.digest.hexdigest()
            os.replace(self.tmp, self.directory / f"results-{key}.arrow")
            atomic_write_bytes(self.directory / f"results-{key}.json", json.dumps(note).encode())
        except (OSError, pa.ArrowException):  # a read-only or full cache only costs speed
            self.discard()

    def discard(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()
        with contextlib.suppress(OSError):
            self.fh.close()
        with contextlib.suppress(OSError):
            os.unlink(self.tmp)
