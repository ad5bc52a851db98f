"""Judge results read columnar (Arrow), validated in one vectorized pass per block: accepts
nothing the strict reader (:func:`~workbench.results.scan_results`) refuses; when it cannot prove
a block valid it returns None and the caller runs the strict reader, which names every problem."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .._io import max_line_bytes, open_for_reading, sha256_json
from ._contract import (
    ERROR_KINDS,
    RESULT_SCHEMA_VERSION,
    JudgeIdentity,
    JudgeResult,
    missing_identity_fields,
    states_reasons,
)

if TYPE_CHECKING:
    from io import BufferedIOBase

    import pyarrow as pa

SHARD_SUFFIXES = (".jsonl", ".parquet")
"""Files of a results directory that are shards; anything else in it is ignored."""
BLOCK_BYTES = 8 << 20
"""Bytes read, parsed and checked at once (buffers reused from block to block)."""
CACHED_ROWS = 1 << 18
"""Rows of a cached file handed on at once."""

NARROW = (
    ("case_id", "response_hash", "value", "reason", "error_kind", "error_message")
    + ("judge_fingerprint", "run_id", "partition", "attempt", "repeat", "dataset_sha256")
    + ("rubric_version", "line", "shard", "cost_usd", "tokens_in", "tokens_out")
    + ("cached_from_run_id", "evidence_truncated")
)
"""The columns kept per result: what joins and lineage checks read (``evidence_truncated``: how
many judge-visible fields the judge saw only part of; null when not measured)."""

_STRINGS = ("case_id", "response_hash", "judge_fingerprint", "run_id", "partition")
_OPTIONAL_STRINGS = (
    ("value", "reason", "rendered_request_sha256", "rendered_request_ref")
    + ("cached_from_run_id",)
    + ("dataset_sha256", "rubric_version", "raw_response", "raw_response_source")
)
_JUDGE_FIELDS = {"name", "version", "kind", "model", "prompt_sha256", "ragas_version", "params"}
_ERROR_FIELDS = {"kind", "message", "retryable"}
_KEY_PREFIX = r'[{,]\s*"'
"""A key starts right after "{" or "," (inside a string a quote is always escaped)."""
_ISO = (
    r"^(000[1-9]|00[1-9]\d|0[1-9]\d\d|[1-9]\d{3})-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?"
    r"(Z|[+-]\d{2}:\d{2})$"
)
"""The times the columnar checks vouch for: ISO 8601 with seconds and an offset, year 1 or later."""
_MIGRATION_REQUIRED = ("from_version", "to_version", "function", "filled", "migrated_at")
_MIGRATION_FIELDS = {*_MIGRATION_REQUIRED, "partition_source"}


class _Refuse(Exception):
    """The vectorized checks cannot vouch for this input: use the strict reader."""


@dataclass(frozen=True)
class ColumnarResults:
    """A results file (or directory of shards) that passed the contract checks."""

    table: pa.Table
    """Columns :data:`NARROW`; ``line`` is the 1-based line (row) in shard number ``shard``."""
    sha256: str
    """sha256 of the file's bytes; for a directory, of ``{shard name: sha256}`` (canonical JSON)."""
    identities: dict[str, JudgeIdentity]
    """The verified judge identity of every fingerprint."""
    shards: tuple[Path, ...]


def resolved(path: str | Path) -> Path:
    """``path``, or for a run directory (it holds ``run.json``) the ``results.jsonl`` in it: a
    run directory is not a directory of shards (its ``invocations.jsonl`` is not results)."""
    p = Path(path)
    if p.is_dir() and (p / "run.json").is_file() and (p / "results.jsonl").is_file():
        return p / "results.jsonl"
    return p


def result_files(path: str | Path) -> list[Path]:
    """The shards of a results directory (sorted by name), or ``[path]`` for a file."""
    p = resolved(path)
    if p.is_dir():
        return sorted(
            f
            for f in p.iterdir()
            if f.suffix in SHARD_SUFFIXES and f.is_file() and not f.name.startswith(".")
        )
    return [p]


def results_sha256(path: str | Path) -> str:
    """The digest :class:`ColumnarResults` records, computed without parsing."""
    from .._io import sha256_file

    p = resolved(path)
    if p.is_dir():
        return sha256_json({f.name: sha256_file(f) for f in result_files(p)})
    return sha256_file(p)


def read_columnar(
    path: str | Path, block: Callable[[pa.Table], pa.Table] | None = None
) -> ColumnarResults | None:
    """Read and check results columnar; None when the strict reader must judge them. ``block``,
    when given, receives each checked block and returns what to keep of it (``ValueError``: hand
    the input to the strict reader)."""
    import pyarrow as pa

    p = resolved(path)
    files = result_files(p)
    if not files or not all(f.is_file() for f in files):
        return None
    tables: list[pa.Table] = []
    digests: dict[str, str] = {}
    identities: dict[str, JudgeIdentity] = {}
    try:
        for number, file in enumerate(files):
            for checked in _checked(file, number, identities, digests):
                tables.append(block(checked) if block is not None else checked)
    except (_Refuse, pa.ArrowException, OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None  # e.g. nesting deeper than the checks follow: the strict reader says why
    sha = sha256_json(digests) if p.is_dir() else digests[files[0].name]
    empty = _narrow_schema().empty_table()
    table = pa.concat_tables(tables) if tables else (block(empty) if block is not None else empty)
    return ColumnarResults(table=table, sha256=sha, identities=identities, shards=tuple(files))


def _checked(
    file: Path, number: int, identities: dict[str, JudgeIdentity], digests: dict[str, str]
) -> Iterator[pa.Table]:
    """The checked blocks of shard ``number``: from the results cache when it holds the file's
    bytes (:mod:`._cache`), else parsed and checked (and then kept in the cache); its sha256 goes
    into ``digests``."""
    from . import _cache

    directory = _cache.cache_dir() if file.suffix == ".jsonl" else None
    sha = None
    if directory is not None:
        sha, cached = _cache.load(directory, file, _narrow_schema())
        if cached is not None:
            yield from _from_cache(cached, number, identities)
            digests[file.name] = sha
            return
    writer = None
    if directory is not None:
        with contextlib.suppress(OSError):  # a read-only or full cache only costs speed
            writer = _cache.Writer(directory, _narrow_schema())
    digest = hashlib.sha256()
    blocks = _parquet_blocks if file.suffix == ".parquet" else _jsonl_blocks
    judges: set[str] = set()
    try:
        for table, first_line in blocks(file, digest):
            checked = _check(table, first_line, number, identities)
            if writer is not None:
                writer.add(checked)
                judges.update(_unique(checked["judge_fingerprint"]))
            yield checked
    except BaseException:
        if writer is not None:
            writer.discard()
        raise
    digests[file.name] = digest.hexdigest()
    if writer is not None and digest.hexdigest() == sha:  # the file did not change meanwhile
        kept = {fp: identities[fp].model_dump(mode="json") for fp in judges}
        writer.commit(digest.hexdigest(), kept)
    elif writer is not None:
        writer.discard()


def _unique(column: Any) -> list[str]:
    import pyarrow.compute as pc

    return [str(v) for v in pc.unique(column).to_pylist()]


def _from_cache(
    cached: Any, number: int, identities: dict[str, JudgeIdentity]
) -> Iterator[pa.Table]:
    """A cache entry's blocks as shard ``number``; its judges among ``identities``."""
    import numpy as np
    import pyarrow as pa

    for fp, identity in cached.identities.items():
        known = identities.get(fp)
        if known is not None and known != identity:
            raise _Refuse("one fingerprint, two identities across blocks")
        identities.setdefault(fp, identity)
    table = cached.table
    at = table.schema.get_field_index("shard")
    shard = pa.array(np.full(table.num_rows, number, dtype=np.int32))
    table = table.set_column(at, "shard", shard)
    for start in range(0, table.num_rows, CACHED_ROWS):
        yield table.slice(start, CACHED_ROWS)


def _narrow_schema() -> pa.Schema:
    import pyarrow as pa

    ints = dict.fromkeys(
        ("attempt", "repeat", "line", "tokens_in", "tokens_out", "evidence_truncated"), pa.int64()
    )
    kinds = {**ints, "shard": pa.int32(), "cost_usd": pa.float64()}
    return pa.schema([(name, kinds.get(name, pa.string())) for name in NARROW])


def _jsonl_blocks(file: Path, digest: Any) -> Any:
    """Yield ``(table, first line number)`` per block of whole lines; hash every byte read."""
    import numpy as np

    limit = max_line_bytes()
    line = 1
    buf = bytearray(2 * BLOCK_BYTES)
    kept = 0  # bytes of a partial last line carried to the front of ``buf``
    scratch = _Scratch()
    schema: pa.Schema | None = None
    before_string = np.zeros(256, dtype=bool)  # bytes that may precede a '":' inside a string
    before_string[list(b"\\ \t\r\n:[,{")] = True
    with open_for_reading(file) as fh:
        reader = cast("BufferedIOBase", fh)  # opened "rb": readinto fills the buffer in place
        while True:
            if len(buf) - kept < BLOCK_BYTES:  # a line longer than a block: grow (rare)
                buf = buf[:kept] + bytearray(BLOCK_BYTES)
            view = memoryview(buf)
            got = reader.readinto(view[kept : kept + BLOCK_BYTES])
            digest.update(view[kept : kept + got])
            if not got:
                if kept:
                    raise _Refuse("the last line has no newline")  # the strict reader says so
                return
            end = kept + got
            cut = buf.rfind(b"\n", 0, end) + 1
            if cut == 0:
                if end > limit:
                    raise _Refuse("line too long")
                kept = end
                continue
            table = _parse_lines(view[:cut], scratch, schema, before_string, limit)
            del view  # the table holds copies of its values
            schema = table.schema
            yield table, line
            line += table.num_rows
            kept = end - cut
            buf[:kept] = buf[cut:end]


def _parse_lines(
    block: memoryview, scratch: _Scratch, schema: pa.Schema | None, before_string: Any, limit: int
) -> pa.Table:
    """A block of whole lines parsed and checked (``schema``: the previous block's)."""
    import numpy as np
    import pyarrow as pa

    raw = np.frombuffer(block, dtype=np.uint8)
    ends = np.flatnonzero(scratch.equal(raw, 10))
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts
    if int(lengths.min()) <= 1 or int(lengths.max()) > limit:
        raise _Refuse("blank or too long line")
    offsets = pa.py_buffer(np.concatenate((starts, [len(block)])).astype(np.int64).tobytes())
    buffer = pa.py_buffer(block)
    lines = pa.LargeStringArray.from_buffers(len(starts), offsets, buffer)
    lines.validate(full=True)  # UTF-8
    if (raw[starts] != ord("{")).any() or (raw[ends - 1] != ord("}")).any():
        raise _Refuse("a line that is not exactly one JSON object")
    # Arrow reads an absent key as null: count the key ends ('":') each line really holds and
    # require every key Arrow's columns imply (anything unusual makes the counts differ).
    keys = _KeyEnds(raw, _key_end_hits(raw, scratch), ends, lines)
    # Without a '":' that could be inside a string, the strings need not be searched.
    strings = bool(before_string[raw[keys.hits - 1]].any()) if len(keys.hits) else False
    table = None
    if schema is not None:
        # The previous block's schema saves type inference (about 40% of the parse); when
        # Arrow refuses the block with it, or a key is absent, it is parsed again without.
        try:
            table = _parse_block(buffer, len(starts), schema)
        except pa.ArrowInvalid:
            table = None
        if table is not None and not _keys_match(table, keys, strings):
            table = None
    if table is None:
        table = _parse_block(buffer, len(starts), None)
        as_strings = _strings_for_times(table.schema)
        if as_strings is not None:
            table = _parse_block(buffer, len(starts), as_strings)
        if not _keys_match(table, keys, strings):
            raise _Refuse("a key absent on some line (Arrow would read it as null)")
    # NaN and Infinity: Arrow reads them as floats, the strict reader refuses them.
    if _non_finite(table):
        raise _Refuse("NaN/Inf/Infinity, which Arrow would accept")
    return table


def _non_finite(table: pa.Table) -> bool:
    """Whether any float in the table, nested ones included, is NaN or infinite."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def bad(array: Any) -> bool:
        kind = array.type
        if pa.types.is_floating(kind):
            return bool(pc.any(pc.invert(pc.is_finite(array))).as_py())
        if pa.types.is_struct(kind):
            return any(bad(pc.struct_field(array, i)) for i in range(kind.num_fields))
        if pa.types.is_list(kind) or pa.types.is_large_list(kind):
            return bad(pc.list_flatten(array))
        if pa.types.is_nested(kind):
            raise _Refuse(f"a column of type {kind}")  # JSON gives none: not looked into here
        return False

    return any(bad(column.combine_chunks()) for column in table.columns)


def _strings_for_times(schema: pa.Schema) -> pa.Schema | None:
    """``schema`` with every timestamp a string, or None when it has none."""
    import pyarrow as pa

    def strings(kind: Any) -> Any:
        if pa.types.is_timestamp(kind):
            return pa.string()
        if pa.types.is_struct(kind):
            return pa.struct([f.with_type(strings(f.type)) for f in kind])
        if pa.types.is_list(kind):
            return pa.list_(kind.value_field.with_type(strings(kind.value_type)))
        return kind

    fields = [f.with_type(strings(f.type)) for f in schema]
    changed = pa.schema(fields)
    return None if changed.equals(schema) else changed


def _parse_block(buffer: pa.Buffer, rows: int, schema: pa.Schema | None) -> pa.Table:
    """A block of JSON lines as a table: types inferred, or ``schema`` (no other key)."""
    import pyarrow as pa
    import pyarrow.json as pj

    explicit = {"explicit_schema": schema, "unexpected_field_behavior": "error"}
    table = pj.read_json(
        pa.BufferReader(buffer),
        read_options=pj.ReadOptions(use_threads=True, block_size=1 << 22),
        parse_options=None if schema is None else pj.ParseOptions(**explicit),
    )
    if table.num_rows != rows:
        raise _Refuse("more than one JSON value on a line")
    return table


@dataclass(frozen=True)
class _KeyEnds:
    """Where a block's keys end: the offsets of the '"' of every '":' in its bytes."""

    raw: Any
    """The block's bytes (numpy uint8)."""
    hits: Any
    ends: Any
    """The offset of each line's newline."""
    lines: Any
    """The lines (Arrow strings)."""

    @property
    def written(self) -> Any:
        """How many key ends each line holds."""
        import numpy as np

        return np.diff(np.searchsorted(self.hits, self.ends), prepend=0).astype(np.int64)

    def named(self, name: str) -> Any:
        """The offsets of the key ends of the keys written exactly as ``"name"``."""
        word = b'"' + name.encode()
        found = self.hits[self.hits >= len(word)]
        for k in range(1, len(word) + 1):  # from the name's last byte back: few are left
            found = found[self.raw[found - k] == word[-k]]
        return found

    def line_of(self, offsets: Any) -> Any:
        """The line (0-based, in the block) of each offset."""
        import numpy as np

        return np.searchsorted(self.ends, offsets)


def _keys_match(table: pa.Table, keys: _KeyEnds, strings: bool = True) -> bool:
    """Whether every line holds every key the table's columns imply: all of them, or all but
    the ``migration.filled`` keys a line leaves out (found in the bytes); the lines that still
    differ are looked at key by key (:func:`_keys_with_absent`)."""
    import numpy as np
    import pyarrow as pa

    written = keys.written
    implied = sum(
        (_keys_per_row(col.combine_chunks(), strings) for col in table.columns),
        np.full(table.num_rows, table.num_columns, dtype=np.int64),
    )
    if np.array_equal(written, implied):
        return True
    filled = _filled_absent(table, keys)
    differ = np.flatnonzero(written != implied - filled)
    if not len(differ):
        return True
    rows = pa.array(differ)
    lines = keys.lines.take(rows)
    subset = table.take(rows)
    return bool(
        np.array_equal(written[differ], _keys_with_absent(subset, lines, strings) - filled[differ])
    )


class _Scratch:
    """Boolean buffers reused from block to block by the numpy scans (``out=``)."""

    def __init__(self) -> None:
        self.buffers: dict[int, Any] = {}

    def equal(self, raw: Any, byte: int, slot: int = 0) -> Any:
        """``raw == byte`` into the buffer of ``slot``."""
        import numpy as np

        if len(self.buffers.get(slot, ())) < len(raw):
            self.buffers[slot] = np.empty(max(len(raw), 2 * BLOCK_BYTES), dtype=bool)
        return np.equal(raw, byte, out=self.buffers[slot][: len(raw)])


def _key_end_hits(raw: Any, scratch: _Scratch) -> Any:
    """The offsets of the '"' of every '":' in ``raw``."""
    import numpy as np

    pairs = scratch.equal(raw[:-1], ord('"'), 1)
    pairs &= scratch.equal(raw[1:], ord(":"), 2)
    return np.flatnonzero(pairs)


def _parquet_blocks(file: Path, digest: Any) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    with open_for_reading(file) as fh:
        data = fh.read()
    digest.update(data)
    shard = pq.ParquetFile(pa.BufferReader(data))
    for name in ("value", "reason"):  # a Parquet row has every column: present means a column
        if name not in shard.schema_arrow.names:
            raise _Refuse(f"no {name} column")
    line = 1
    for batch in shard.iter_batches(batch_size=1 << 18):
        yield pa.Table.from_batches([batch]), line
        line += batch.num_rows


def _check(
    t: pa.Table, first_line: int, shard: int, identities: dict[str, JudgeIdentity]
) -> pa.Table:
    """Every contract check the strict reader makes, over a whole block; the narrow columns."""
    _check_fields(t)
    _check_values(t)
    if "started_at" in t.column_names:
        _check_times(t["started_at"], "started_at")
    _check_migration(t)
    error_kind, error_message = _check_error(t)
    _check_judges(t, identities)
    narrow = _narrow(t, first_line, shard, error_kind, error_message)
    truncated = _check_evidence(t)
    if truncated is not None:
        narrow = narrow.set_column(
            narrow.schema.get_field_index("evidence_truncated"), "evidence_truncated", truncated
        )
    return narrow


_EVIDENCE_INTS = ("chars_in_case", "chars_sent")


def _check_evidence(t: pa.Table) -> Any:
    """``raw_response_source`` and ``evidence_seen`` as the strict reader takes them; per row,
    the fields seen truncated (None when no row measured them)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ._contract import RAW_RESPONSE_SOURCES

    if "raw_response_source" in t.column_names and not pa.types.is_null(
        t.schema.field("raw_response_source").type  # a block where no line has one
    ):
        known = pc.is_in(t["raw_response_source"], value_set=pa.array(RAW_RESPONSE_SOURCES))
        if true_any(pc.and_(pc.is_valid(t["raw_response_source"]), pc.invert(known))):
            raise _Refuse("unknown raw_response_source")
    if "evidence_seen" not in t.column_names:
        return None
    kind = t.schema.field("evidence_seen").type
    if pa.types.is_null(kind):
        return None
    _check_evidence_type(kind)
    return _truncated_per_row(t["evidence_seen"].combine_chunks(), t.num_rows)


def _check_evidence_type(kind: Any) -> None:
    import pyarrow as pa

    if not pa.types.is_list(kind) or not pa.types.is_struct(kind.value_type):
        raise _Refuse("evidence_seen is not a list of objects")
    item = kind.value_type
    if {f.name for f in item} != {"field", *_EVIDENCE_INTS, "status"}:
        raise _Refuse("evidence_seen fields")
    if any(item.field(n).type != pa.int64() for n in _EVIDENCE_INTS) or any(
        item.field(n).type != pa.string() for n in ("field", "status")
    ):
        raise _Refuse("evidence_seen types")


def _truncated_per_row(column: Any, rows: int) -> Any:
    """Per row, how many fields ``evidence_seen`` marks truncated (null where it is null);
    refuses nulls, negative counts and unknown statuses."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from ._contract import EVIDENCE_STATUSES

    flat = pc.list_flatten(column)
    if flat.null_count or any(pc.struct_field(flat, n).null_count for n in flat.type.names):
        raise _Refuse("evidence_seen null")
    if any(true_any(pc.less(pc.struct_field(flat, n), 0)) for n in _EVIDENCE_INTS):
        raise _Refuse("evidence_seen negative")
    status = pc.struct_field(flat, "status")
    if true_any(pc.invert(pc.is_in(status, value_set=pa.array(EVIDENCE_STATUSES)))):
        raise _Refuse("unknown evidence_seen status")
    parents = pc.list_parent_indices(column).to_numpy()
    cut = pc.equal(status, "truncated").to_numpy(zero_copy_only=False)
    counts = np.bincount(parents[cut], minlength=rows).astype(np.int64)
    return pa.array(counts, pa.int64(), mask=pc.is_null(column).to_numpy(zero_copy_only=False))


def _typed(t: pa.Table, name: str, *ok: Any) -> None:
    """Refuse a column of another type than ``ok`` (a column of nulls only is any type)."""
    import pyarrow as pa

    kind = t.schema.field(name).type
    if not any(kind == k for k in ok) and not pa.types.is_null(kind):
        raise _Refuse(f"{name} has type {kind}")


def _string_or_null(kind: Any, name: str) -> None:
    import pyarrow as pa

    if not (kind == pa.string() or pa.types.is_null(kind)):
        raise _Refuse(f"{name} type")


def _check_fields(t: pa.Table) -> None:
    """Known fields only, the required ones present (and not null), each of its type."""
    import pyarrow as pa

    names = set(t.column_names)
    if not names <= set(JudgeResult.model_fields):
        raise _Refuse("unknown field")
    for name in ("schema_version", "attempt", "repeat", *_STRINGS, "judge", "value", "reason"):
        if name not in names or (name not in ("value", "reason") and t[name].null_count):
            raise _Refuse(f"{name} missing")
    for name in _STRINGS:
        _typed(t, name, pa.string())
        if pa.types.is_null(t.schema.field(name).type):
            raise _Refuse(f"{name} null")
    for name in ("schema_version", "attempt", "repeat"):
        if t.schema.field(name).type != pa.int64():
            raise _Refuse(f"{name} not an integer")
    for name in _OPTIONAL_STRINGS:
        if name in names:
            _typed(t, name, pa.string())


def _check_values(t: pa.Table) -> None:
    """Ranges of versions, attempts, repeats, ids, hashes and figures; nested types."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if "order" in t.column_names:
        _typed(t, "order", pa.list_(pa.string()))
    if "presentation" in t.column_names and not (
        pa.types.is_struct(t.schema.field("presentation").type)
        or pa.types.is_null(t.schema.field("presentation").type)
    ):
        raise _Refuse("presentation is not an object")
    if (
        true_any(pc.not_equal(t["schema_version"], RESULT_SCHEMA_VERSION))
        or true_any(pc.less(t["attempt"], 1))
        or true_any(pc.less(t["repeat"], 0))
    ):
        raise _Refuse("schema_version, attempt or repeat out of range")
    if (
        true_any(pc.less(pc.utf8_length(t["case_id"]), 1))
        or true_any(pc.less(pc.utf8_length(t["partition"]), 1))
        or true_any(pc.not_equal(pc.utf8_length(t["response_hash"]), 64))
    ):
        raise _Refuse("empty case_id/partition or a response_hash not 64 characters")
    f, i = pa.float64(), pa.int64()
    kinds = {"score": f, "latency_s": f, "cost_usd": f, "tokens_in": i, "tokens_out": i}
    for name, kind in kinds.items():
        if name not in t.column_names:
            continue
        _typed(t, name, kind)
        numeric = not pa.types.is_null(t.schema.field(name).type)
        if name != "score" and numeric and true_any(pc.less(t[name], 0)):
            raise _Refuse(f"{name} negative")


def _check_times(column: Any, name: str) -> None:
    """Each value an ISO 8601 time with its offset (:data:`_ISO`), or null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = column.type
    if pa.types.is_string(kind):
        valid = pc.drop_null(column)
        if len(valid) and not pc.all(pc.match_substring_regex(valid, _ISO)).as_py():
            raise _Refuse(f"{name} format")
        pc.cast(valid, pa.timestamp("us", tz="UTC"))  # raises on an impossible date
    elif not (pa.types.is_timestamp(kind) or pa.types.is_null(kind)):
        raise _Refuse(f"{name} type")


def _check_migration(t: pa.Table) -> None:
    """``migration``: null, or a :class:`~workbench.results.ResultMigration` object."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if "migration" not in t.column_names or pa.types.is_null(t.schema.field("migration").type):
        return
    kind = t.schema.field("migration").type
    if not pa.types.is_struct(kind) or not (
        set(_MIGRATION_REQUIRED) <= {f.name for f in kind} <= _MIGRATION_FIELDS
    ):
        raise _Refuse("migration fields")
    i, s = pa.int64(), pa.string()
    for name, ok in {"from_version": i, "to_version": i, "function": s, "migrated_at": s}.items():
        if kind.field(name).type != ok:
            raise _Refuse(f"migration.{name} type")
    if not pa.types.is_struct(kind.field("filled").type):
        raise _Refuse("migration.filled is not an object")
    if "partition_source" in {f.name for f in kind}:
        _string_or_null(kind.field("partition_source").type, "migration.partition_source")
    migration = t["migration"].combine_chunks()
    migrated = pc.is_valid(migration)
    for name in _MIGRATION_REQUIRED:
        if true_any(pc.and_(migrated, pc.is_null(pc.struct_field(migration, name)))):
            raise _Refuse(f"migration.{name} null")
    _check_times(pc.struct_field(migration, "migrated_at"), "migration.migrated_at")


def _check_error(t: pa.Table) -> tuple[Any, Any]:
    """The error objects, verdict xor error; the error kinds and messages."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = t.num_rows
    names = set(t.column_names)
    has_error = pc.is_valid(t["error"]) if "error" in names else pa.array([False] * n)
    error_kind = error_message = pa.nulls(n, pa.string())
    if "error" in names and not pa.types.is_null(t.schema.field("error").type):
        _check_error_type(t.schema.field("error").type, has_error)
        error_kind = pc.struct_field(t["error"], "kind")
        error_message = pc.struct_field(t["error"], "message")
        if true_any(pc.and_(has_error, pc.or_(pc.is_null(error_kind), pc.is_null(error_message)))):
            raise _Refuse("error without kind or message")
        known = pc.is_in(error_kind, value_set=pa.array(ERROR_KINDS))
        if true_any(pc.and_(has_error, pc.invert(known))):
            raise _Refuse("unknown error kind")
    value_set = pc.is_valid(t["value"])
    score_set = pc.is_valid(t["score"]) if "score" in names else pa.array([False] * n)
    if true_any(pc.invert(pc.or_(pc.or_(value_set, score_set), has_error))) or true_any(
        pc.and_(has_error, pc.or_(value_set, score_set))
    ):
        raise _Refuse("verdict xor error")
    nothing = pa.scalar(None, pa.string())
    return pc.if_else(has_error, error_kind, nothing), pc.if_else(has_error, error_message, nothing)


def _check_error_type(etype: Any, has_error: Any) -> None:
    import pyarrow as pa

    fields = {f.name for f in etype} if pa.types.is_struct(etype) else None
    if fields is None or not {"kind", "message"} <= fields <= _ERROR_FIELDS:
        raise _Refuse("error fields")
    if etype.field("kind").type != pa.string() or etype.field("message").type != pa.string():
        raise _Refuse("error field types")
    if "retryable" not in fields:
        return
    retryable = etype.field("retryable").type
    if not (retryable == pa.bool_() or pa.types.is_null(retryable)):
        raise _Refuse("retryable type")
    if pa.types.is_null(retryable) and true_any(has_error):
        raise _Refuse("retryable null")  # null is not a bool: the strict reader refuses it


def _narrow(t: pa.Table, first_line: int, shard: int, error_kind: Any, error_message: Any) -> Any:
    """The columns :data:`NARROW` of a checked block (absent optional fields as nulls)."""
    import numpy as np
    import pyarrow as pa

    n = t.num_rows
    given = {
        "error_kind": error_kind,
        "error_message": error_message,
        "line": pa.array(range(first_line, first_line + n), pa.int64()),
        "shard": pa.array(np.full(n, shard, dtype=np.int32)),
    }
    schema = _narrow_schema()
    return pa.table(
        [
            given[f.name]
            if f.name in given
            else (t[f.name].cast(f.type) if f.name in t.column_names else pa.nulls(n, f.type))
            for f in schema
        ],
        schema=schema,
    )


def _check_judges(t: pa.Table, identities: dict[str, JudgeIdentity]) -> None:
    """One fingerprint per block, every judge the first row's, hashing to it."""
    import pyarrow.compute as pc

    judge = t["judge"].combine_chunks()
    _check_judge_fields(t.schema.field("judge").type, judge)
    fingerprints = pc.unique(t["judge_fingerprint"]).to_pylist()
    if len(fingerprints) != 1:
        raise _Refuse("several judge fingerprints")
    if not _periodic(judge, 1):
        raise _Refuse("rows of one fingerprint with different judges")
    fp = fingerprints[0]
    try:
        identity = JudgeIdentity.model_validate(judge[0].as_py())
        actual = identity.fingerprint()
    except ValueError:
        raise _Refuse("judge identity invalid") from None
    if actual != fp:
        raise _Refuse("fingerprint mismatch")
    known = identities.get(fp)
    if known is not None and known != identity:
        raise _Refuse("one fingerprint, two identities across blocks")
    identities.setdefault(fp, identity)
    if missing_identity_fields(identity):
        raise _Refuse("fingerprint fields missing")  # the strict reader names them
    if states_reasons(identity):
        _check_reasons(t)


_SPACE = r"\t\n\x0b\x0c\r \x1c-\x1f\x85\p{Z}"
"""Characters ``str.strip`` removes (``str.isspace``), as an RE2 class: a reason made only of
them is blank."""


def _check_reasons(t: pa.Table) -> None:
    """Every verdict states a reason (else the strict reader names it)."""
    import pyarrow.compute as pc

    verdicts = pc.and_(pc.is_valid(t["value"]), pc.is_null(t["error"]))
    stated = pc.fill_null(pc.match_substring_regex(t["reason"], f"[^{_SPACE}]"), False)
    if pc.any(pc.and_(verdicts, pc.invert(stated))).as_py():
        raise _Refuse("a verdict without a reason")


def _check_judge_fields(jtype: Any, judge: Any) -> None:
    """The judge identity's fields, their types, and name, version and kind not empty."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_struct(jtype):
        raise _Refuse("judge is not an object")
    fields = {f.name for f in jtype}
    if not {"name", "version", "kind"} <= fields <= _JUDGE_FIELDS:
        raise _Refuse("judge fields")
    for name in ("name", "version", "kind"):
        if jtype.field(name).type != pa.string():
            raise _Refuse(f"judge.{name} type")
        child = pc.struct_field(judge, name)
        if child.null_count or true_any(pc.less(pc.utf8_length(child), 1)):
            raise _Refuse(f"judge.{name} empty")
    for name in ("model", "prompt_sha256", "ragas_version"):
        if name in fields:
            _string_or_null(jtype.field(name).type, f"judge.{name}")
    if "params" in fields and (
        not pa.types.is_struct(jtype.field("params").type)
        or pc.struct_field(judge, "params").null_count
    ):
        raise _Refuse("judge.params is not an object")


def _periodic(array: Any, period: int) -> bool:
    """Whether ``array`` repeats its first ``period`` values (nulls included) to its end."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(array)
    if n <= period or period == 0:
        return True
    idx = pa.array(np.arange(n, dtype=np.int64) % period)
    valid = pc.is_valid(array)
    if not pc.all(pc.equal(valid, pc.take(valid, idx))).as_py():
        return False
    kind = array.type
    if pa.types.is_struct(kind):
        return all(_periodic(pc.struct_field(array, i), period) for i in range(kind.num_fields))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        lengths = pc.fill_null(pc.list_value_length(array), 0)
        if not _periodic(lengths, period):
            return False
        first = int(pc.sum(lengths.slice(0, period)).as_py() or 0)
        return _periodic(pc.list_flatten(array), first)
    if pa.types.is_null(kind):
        return True
    if pa.types.is_nested(kind):
        return False  # maps, unions: not compared here (the strict reader judges them)
    same = pc.equal(array, pc.take(array, idx))
    return bool(pc.all(pc.or_kleene(same, pc.is_null(array))).as_py())


def _keys_with_absent(table: pa.Table, lines: Any, strings: bool = True) -> Any:
    """Keys per line when top-level fields may be absent (a key looked up by name)."""
    import numpy as np
    import pyarrow.compute as pc

    nested = {name for field in table.schema for name in _all_names(field.type)}
    total = sum(
        (_keys_per_row(col.combine_chunks(), strings) for col in table.columns),
        np.zeros(table.num_rows, dtype=np.int64),
    )
    for name in table.column_names:
        column = table[name]
        if column.null_count == 0:
            total += 1
            continue
        count = pc.count_substring_regex(lines, _KEY_PREFIX + name + r'"\s*:').to_numpy(
            zero_copy_only=False
        )
        if name in nested:  # e.g. migration.filled.reason: its keys are not the top-level one
            count = count - sum(
                (_named_keys(col.combine_chunks(), name) for col in table.columns),
                np.zeros(table.num_rows, dtype=np.int64),
            )
        present = np.where(pc.is_valid(column).to_numpy(zero_copy_only=False), 1, count)
        if name in ("value", "reason") and (present <= 0).any():
            raise _Refuse(f"{name} absent on a line")
        total += present
    return total


def _filled_absent(table: pa.Table, keys: _KeyEnds) -> Any:
    """Per line, the keys of ``migration.filled`` Arrow reads as null that are not written: a
    key is written when its bytes ``"name":`` lie between the ``"filled":`` key and the first
    ``}`` after it (filled values are plain values; anything else is refused)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    absent = np.zeros(table.num_rows, dtype=np.int64)
    if "migration" not in table.column_names:
        return absent
    kind = table.schema.field("migration").type
    if not pa.types.is_struct(kind) or kind.get_field_index("filled") < 0:
        return absent
    filled = pc.struct_field(table["migration"].combine_chunks(), "filled")
    if not pa.types.is_struct(filled.type):
        return absent
    unwritten = [i for i, _ in enumerate(filled.type) if pc.struct_field(filled, i).null_count]
    if not unwritten:
        return absent
    names = [name for field in table.schema for name in _all_names(field.type)]
    if names.count("filled") != 1:
        raise _Refuse("another object with a key named 'filled'")
    if any(pa.types.is_nested(f.type) for f in filled.type) or any(
        '"' in name or "\\" in name for name in names
    ):
        raise _Refuse("a filled value that is not a plain value, or a key with a quote")
    starts = keys.named("filled")
    if len(np.unique(keys.line_of(starts))) != len(starts):
        raise _Refuse("two filled keys on a line")
    closes = np.flatnonzero(keys.raw == ord("}"))
    stops = closes[np.searchsorted(closes, starts)]  # every line ends with "}"
    valid = pc.is_valid(filled).to_numpy(zero_copy_only=False)
    for i in unwritten:
        found = keys.named(filled.type.field(i).name)
        inside = np.searchsorted(starts, found) - 1  # the last "filled": before each
        within = (inside >= 0) & (found < stops[np.maximum(inside, 0)])
        written = np.zeros(table.num_rows, dtype=bool)
        written[keys.line_of(found[within])] = True
        null = pc.is_null(pc.struct_field(filled, i)).to_numpy(zero_copy_only=False)
        absent += valid & null & ~written
    return absent


def _all_names(kind: Any) -> list[str]:
    """Every field name inside ``kind`` (structs, lists), once per field."""
    import pyarrow as pa

    out: list[str] = []
    if pa.types.is_struct(kind):
        for field in kind:
            out.append(field.name)
            out.extend(_all_names(field.type))
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
        out.extend(_all_names(kind.value_type))
    return out


def _per_row(array: Any, per_field: Callable[[Any], int], leaf: Callable[[Any], Any]) -> Any:
    """Per row, ``per_field`` summed over the fields of its objects plus ``leaf`` of its values."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(array)
    kind = array.type
    if pa.types.is_struct(kind):
        total = np.zeros(n, dtype=np.int64)
        for i, field in enumerate(kind):
            total += per_field(field) + _per_row(pc.struct_field(array, i), per_field, leaf)
        return np.where(pc.is_valid(array).to_numpy(zero_copy_only=False), total, 0)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        flat = pc.list_flatten(array)
        if not len(flat):
            return np.zeros(n, dtype=np.int64)
        parents = pc.list_parent_indices(array).to_numpy()
        weights = _per_row(flat, per_field, leaf)
        return np.bincount(parents, weights=weights, minlength=n).astype(np.int64)
    return leaf(array)


def _named_keys(array: Any, name: str) -> Any:
    """How many keys ``name`` each row's JSON holds inside its objects."""
    import numpy as np

    return _per_row(array, lambda f: f.name == name, lambda a: np.zeros(len(a), dtype=np.int64))


def _keys_per_row(array: Any, strings: bool = True) -> Any:
    """How many times '":' occurs in each row's JSON when every field is present."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    def leaf(a: Any) -> Any:
        if not (strings and (pa.types.is_string(a.type) or pa.types.is_large_string(a.type))):
            return np.zeros(len(a), dtype=np.int64)
        inner = pc.fill_null(pc.count_substring(a, '":'), 0)
        leading = pc.fill_null(pc.starts_with(a, ":"), False)
        return sum(x.to_numpy(zero_copy_only=False).astype(np.int64) for x in (inner, leading))

    return _per_row(array, lambda f: 1, leaf)


def true_any(mask: Any) -> bool:
    import pyarrow.compute as pc

    return bool(pc.any(mask).as_py())
