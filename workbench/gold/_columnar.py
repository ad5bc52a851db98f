"""The first index of a gold dataset in one streaming pass (issue 31): each block of
``gold.jsonl`` is parsed once, by Arrow's JSON reader, proven free of errors column by column
(every check :func:`~workbench.gold.validate_dataset` makes that can fail a dataset), and its
index rows are written to the cache before the next block is read.

A proof, not a second validator: whatever the columns cannot vouch for (a line Arrow refuses or
reads differently from :func:`~workbench.gold.GoldCase`, a defaulted field written as ``null``, a
metadata value that is not text, a release of another state of the dataset, any
failed check) makes :func:`stream_index` return False, and the caller validates in full, which
names every problem (errors and their fixes stay those of :mod:`._dataset`)."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from pydantic import TypeAdapter

from .._io import atomic_write, max_line_bytes, open_for_reading, sha256_file, sha256_json
from ..approval import REVIEWERS_KEY, check_lineage, load_approvers, read_release_log
from ..errors import WorkbenchError, errors_only
from ._card import read_card
from ._dataset import CARD_FILE, RUBRIC_FILE, _read_rubric, check_identities, normalize_text
from ._records import GOLD_SCHEMA_VERSION, PARTITIONS
from ._release import snapshot_of_records
from ._rubric import Rubric

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

BLOCK_BYTES = 1 << 25
"""Bytes of ``gold.jsonl`` read, parsed and indexed at a time (bounds the memory of a build)."""
DEFAULTED = ("schema_version", "tags", "evidence", "metadata", "escalate", "spans", "blinded")
"""Fields with a default that refuse ``null``: Arrow reads an absent field and a ``null`` alike,
so a line writing one of them as ``null`` is left to the full validation."""
_NULL_KEY = r'"(?:{})"\s*:\s*null|\\[u/](?:[^"\\]|\\.)*"\s*:\s*null'.format("|".join(DEFAULTED))
"""A defaulted field written as ``null``, or any key holding ``null`` whose name is spelled with
an escape that decodes to a plain character (``\\u``, ``\\/``): from its first escape to its
closing quote, then the colon (only a key is followed by one)."""
_NULL = re.compile(rb"null")
"""What every match of :data:`_NULL_KEY` holds: a block without it needs no line searched."""
_ASCII_SPACE = "[\t\n\x0b\x0c\r\x1c-\x1f ]+"
"""What ``str.split()`` splits an ASCII text at (``normalize_text``)."""
_PLAIN_KEY = re.compile(r"[^\"\\\x00-\x1f]+")
"""A metadata key written as itself in JSON (no escapes), so a pattern can find it."""


class _NotProven(Exception):
    """A block (or the whole file) the columns cannot vouch for: validate in full."""


def gold_schema() -> pa.Schema:
    """The types of :class:`~workbench.gold.GoldCase` as Arrow reads them (``metadata``, free
    form, is inferred)."""
    import pyarrow as pa

    s, texts = pa.string(), pa.list_(pa.string())
    span = pa.struct([("field", s), ("start", pa.int64()), ("end", pa.int64()), ("text", s)])
    review = pa.struct(
        [("reviewer", s), ("label", s), ("confidence", s), ("rationale", s), ("evidence", texts)]
        + [("escalate", pa.bool_()), ("spans", pa.list_(span)), ("assigned_at", s)]
        + [("completed_at", s), ("training_version", s), ("blinded", texts)]
    )
    adjudication = pa.struct([("label", s), ("reason", s), ("adjudicator", s)])
    return pa.schema(
        [("schema_version", pa.int64()), ("case_id", s), ("partition", s), ("group", s)]
        + [("slice", s), ("tags", texts), ("rubric_version", s), ("input", s), ("response", s)]
        + [("response_hash", s), ("grading_notes", s), ("reference", s), ("contexts", texts)]
        + [("evidence", texts), ("reviews", pa.list_(review)), ("adjudication", adjudication)]
        + [("supersedes", s)]
    )


@dataclass
class _Context:
    """What every block is checked against, and what the blocks leave for the file-wide checks."""

    rubric: Rubric
    evidence_ids: frozenset[str] | None
    reviewers: frozenset[str]
    schema: pa.Schema
    ids: list[pa.Array]
    partitions: list[pa.Array]
    groups: list[pa.Array]
    keys: list[np.ndarray]
    supersedes: list[pa.Array]
    hashes: list[pa.Array]


def stream_index(
    root: Path,
    gold_path: Path,
    target: Path,
    index_schema: pa.Schema,
    digest: str,
    unchanged: Callable[[], bool] | None = None,
) -> bool:
    """Prove the dataset valid and write its index to ``target`` in one pass (a second pass over
    the index marks corrected records inactive); False (nothing written) when the columns cannot
    vouch for it or it changed since ``digest`` was taken: ``unchanged`` says so from the file's
    ``stat`` (as the memo of its hash does), else the file is hashed again while it is read."""
    context = _context(root, gold_path, digest)
    if context is None:
        return False
    gold_digest = hashlib.sha256() if unchanged is None else None
    superseded: list[pa.Array] = []

    def write(fh: BinaryIO) -> None:
        import pyarrow as pa

        with pa.ipc.new_file(fh, index_schema) as writer:
            for data in _blocks(gold_path, gold_digest):
                writer.write_batch(_index_block(data, context, index_schema))
            superseded.append(_check_file(context))
        rubric_path = root / RUBRIC_FILE
        snapshot = context.rubric.evidence_snapshot
        evidence = sha256_file(rubric_path.parent / snapshot) if snapshot else None
        gold = gold_digest.hexdigest() if gold_digest is not None else None
        files = {"gold": gold, "rubric": sha256_file(rubric_path), "evidence": evidence}
        if (unchanged is not None and not unchanged()) or (
            gold is not None and sha256_json(files) != digest
        ):
            raise _NotProven("the dataset changed while it was read")

    first = target.with_name(f".{target.name}.first")
    try:
        atomic_write(first, write)
        if len(superseded[0]):
            _mark_superseded(first, target, superseded[0], index_schema)
        else:
            os.replace(first, target)
    except (_NotProven, OSError):
        return False
    finally:
        first.unlink(missing_ok=True)
    return True


def _mark_superseded(source: Path, target: Path, superseded: pa.Array, schema: pa.Schema) -> None:
    """``source`` written to ``target`` with the records a correction supersedes inactive, one
    batch at a time."""
    import pyarrow as pa
    import pyarrow.compute as pc

    position = schema.get_field_index("active")
    with pa.memory_map(str(source)) as mapped:
        reader = pa.ipc.open_file(mapped)

        def write(fh: BinaryIO) -> None:
            with pa.ipc.new_file(fh, schema) as writer:
                for i in range(reader.num_record_batches):
                    batch = reader.get_batch(i)
                    active = pc.invert(pc.is_in(batch.column("case_id"), superseded))
                    writer.write_batch(batch.set_column(position, "active", active))

        atomic_write(target, write)


def _context(root: Path, gold_path: Path, digest: str) -> _Context | None:
    """The rubric, evidence ids and reviewer list, when they, the card and the release log have
    no problem. A frozen dataset is proven only in the state every release froze (``digest``):
    its records are then those the releases hashed; after any other release, lineage compares
    every record (the full validation)."""
    problems: list[Any] = []
    rubric, _, evidence_ids = _read_rubric(root, problems)
    problems.extend(read_card(root / CARD_FILE)[1])
    try:
        log = read_release_log(root)
        listed = load_approvers(root, REVIEWERS_KEY)
    except WorkbenchError:
        return None
    if log.releases:
        if any(r.kind == "gold" and r.dataset_sha256 != digest for r in log.releases):
            return None
        problems.extend(check_lineage(snapshot_of_records(root, [], digest, str(gold_path)), log))
    if rubric is None or errors_only(problems) or log.problems:
        return None
    return _Context(rubric, evidence_ids, listed.names, gold_schema(), *([] for _ in range(6)))


def _blocks(path: Path, digest: Any) -> Iterator[memoryview]:
    """The file in blocks of whole lines, ``digest`` (if any) fed every byte; each block read
    into a buffer of its own behind the previous block's unfinished line (no copy of a block)."""
    rest = b""
    with open_for_reading(path) as fh:
        while True:
            buf = bytearray(len(rest) + BLOCK_BYTES)
            buf[: len(rest)] = rest
            view = memoryview(buf)
            got = fh.readinto(view[len(rest) :])  # type: ignore[attr-defined]
            if not got:
                break
            if digest is not None:
                digest.update(view[len(rest) : len(rest) + got])
            end = len(rest) + got
            cut = buf.rfind(b"\n", 0, end) + 1
            if cut:
                yield view[:cut]
            rest = bytes(view[cut:end])
    if rest:
        yield memoryview(rest)


def _parse_block(data: memoryview, schema: pa.Schema) -> tuple[pa.Array, pa.Table]:
    """The block's non-blank lines (as text) and their records, one row a line (the block is
    read in place: Arrow is handed its buffer, parsed as one chunk)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    limit = max_line_bytes()
    try:  # one UTF-8 check and one split for the block, not one per line
        block = pa.py_buffer(data)
        bounds = pa.py_buffer(np.array([0, block.size], np.int32))
        text = pa.Array.from_buffers(pa.binary(), 1, [None, bounds, block]).cast(pa.string())
        raw = pc.split_pattern(text, "\n")[0].values
        if pc.max(pc.binary_length(raw)).as_py() > limit:
            raise _NotProven("a line too long")
        lines = pc.utf8_trim(raw, " \t\r\x0b\x0c")  # what ``bytes.strip`` strips
        lines = lines.filter(pc.not_equal(lines, ""))
        if len(lines) == 0 or not pc.all(pc.starts_with(lines, "{")).as_py():
            raise _NotProven("a line that is not one object")  # so every line yields a row
        table = pj.read_json(
            pa.BufferReader(block),
            read_options=pj.ReadOptions(block_size=block.size + 1, use_threads=False),
            parse_options=pj.ParseOptions(
                explicit_schema=schema, unexpected_field_behavior="infer"
            ),
        ).combine_chunks()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise _NotProven(str(exc)) from None
    if table.num_rows != len(lines):
        raise _NotProven("a line holds more than one object")
    return lines, table


def _index_block(data: memoryview, context: _Context, schema: pa.Schema) -> pa.RecordBatch:
    """Parse and prove one block; its index rows."""
    lines, table = _parse_block(data, context.schema)
    _check_shape(table, lines, context.schema, _NULL.search(data) is not None)
    reviews = _Reviews(table["reviews"].chunk(0))
    _check_values(table, reviews)
    _check_rubric_fit(table, reviews, context)
    context.ids.append(table["case_id"].chunk(0))
    context.partitions.append(table["partition"].chunk(0))
    context.groups.append(table["group"].chunk(0))
    context.keys.append(_input_keys(table))
    context.supersedes.append(table["supersedes"].chunk(0))
    context.hashes.append(table["response_hash"].chunk(0))
    return _index_batch(table, lines, reviews, schema)


def _column(table: pa.Table, name: str) -> pa.Array:
    return table[name].chunk(0)


def _check_shape(table: pa.Table, lines: pa.Array, schema: pa.Schema, nulls: bool) -> None:
    """Only the record's fields, with their types; no defaulted field written as ``null`` (the
    lines are searched for one only when the block holds a ``null`` at all: ``nulls``)."""
    import pyarrow.compute as pc

    extra = set(table.column_names) - set(schema.names) - {"metadata"}
    if extra or any(
        table.schema.field(f.name).type != f.type for f in schema if f.name in table.column_names
    ):
        raise _NotProven("unknown fields or types")
    if "metadata" in table.column_names:
        _check_metadata(_column(table, "metadata"), lines, nulls)
    if nulls and pc.any(pc.match_substring_regex(lines, _NULL_KEY)).as_py():
        raise _NotProven("a defaulted field, or a key spelled with escapes, written as null")


def _check_metadata(metadata: pa.Array, lines: pa.Array, nulls: bool) -> None:
    """Metadata values are text (a ``null`` value, told apart from an absent key, is not)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = metadata.type
    if pa.types.is_null(kind):
        return
    if not pa.types.is_struct(kind):
        raise _NotProven("metadata that is not an object")
    for child in kind:
        if child.type != pa.string() or not _PLAIN_KEY.fullmatch(child.name):
            raise _NotProven("a metadata value that is not text")
        values = pc.struct_field(metadata, child.name)
        if (
            nulls
            and values.null_count
            and pc.any(
                pc.match_substring_regex(lines, f'"{_literal(child.name)}"\\s*:\\s*null')
            ).as_py()
        ):
            raise _NotProven("a metadata value written as null")


def _literal(text: str) -> str:
    """``text`` as an RE2 pattern that matches it literally."""
    return "".join("\\" + c if c in "\\.^$|?*+()[]{}" else c for c in text)


class _Reviews:
    """The reviews of a block's rows, flattened: one entry a review, ``rows`` its row."""

    def __init__(self, reviews: pa.Array) -> None:
        import pyarrow.compute as pc

        self.lists = reviews
        self.values = reviews.flatten()
        self.rows = pc.list_parent_indices(reviews)

    def field(self, name: str) -> pa.Array:
        import pyarrow.compute as pc

        return pc.struct_field(self.values, name)

    def per_row(self, name: str) -> pa.Array:
        """``[review.<name> for review in case.reviews]`` for every row."""
        import pyarrow as pa
        import pyarrow.compute as pc

        offsets = self.lists.offsets
        offsets = pc.subtract(offsets, offsets[0])  # the flattened values start at offsets[0]
        return pa.ListArray.from_arrays(offsets, self.field(name))


def _none(mask: pa.Array) -> bool:
    """No row of ``mask`` is true (nulls count as false)."""
    import pyarrow.compute as pc

    return not pc.any(mask).as_py()


REQUIRED = ("case_id", "partition", "group", "slice", "rubric_version", "input", "response") + (
    "response_hash",
    "reviews",
    "adjudication",
)
"""Fields without a default (an absent one reads as null)."""


def _check_values(table: pa.Table, reviews: _Reviews) -> None:
    """What pydantic checks of each record: required fields present, non-empty where a minimum
    length is set, no null in a list, enumerations, the schema version, grading evidence,
    review timestamps and cited spans."""
    import pyarrow.compute as pc

    def column(name: str) -> pa.Array:
        return _column(table, name)

    label = pc.struct_field(column("adjudication"), "label")
    texts = [column(n) for n in ("case_id", "group", "slice", "rubric_version")]
    texts += [reviews.field("reviewer"), reviews.field("label"), label]
    lists = [column(n) for n in ("tags", "contexts", "evidence")]
    lists += [reviews.field(n) for n in ("evidence", "blinded")]
    no_evidence = pc.and_(pc.is_null(column("grading_notes")), pc.is_null(column("reference")))
    checks: dict[str, Callable[[], Any]] = {
        "a required field is missing": lambda: any(column(n).null_count for n in REQUIRED),
        "a text is empty": lambda: any(t.null_count or not _none(pc.equal(t, "")) for t in texts),
        "a null in a list": lambda: (
            reviews.values.null_count or any(x.flatten().null_count for x in lists)
        ),
        "a span or a timestamp pydantic refuses": lambda: not _annotations_valid(table, reviews),
        "an unknown confidence": lambda: not _all_in(reviews.field("confidence"), _CONFIDENCE),
        "a newer schema": lambda: not _none(pc.greater(column("schema_version"), _VERSION)),
        "no grading evidence": lambda: not _none(no_evidence),
    }
    for why, failed in checks.items():
        if failed():
            raise _NotProven(why)


_STAMPS = ("assigned_at", "completed_at")
_CONFIDENCE = ("low", "medium", "high")
_VERSION = GOLD_SCHEMA_VERSION
_SPAN_FIELDS = ("input", "response", "grading_notes", "reference")
_DATETIMES: TypeAdapter[list[datetime]] = TypeAdapter(list[datetime])


def _annotations_valid(table: pa.Table, reviews: _Reviews) -> bool:
    """Review timestamps read as pydantic reads them (one call for the block), and each cited
    span is the text of its case at its offsets (``Span.cited_in``)."""
    import json

    import pyarrow.compute as pc
    from pydantic import ValidationError

    stamps = [v for n in _STAMPS for v in pc.unique(reviews.field(n)).drop_null().to_pylist()]
    try:
        _DATETIMES.validate_json(json.dumps(stamps))
    except ValidationError:
        return False
    cited = reviews.field("spans").flatten()
    if any(pc.struct_field(cited, n).null_count for n in ("field", "start", "end", "text")):
        return False
    rows = pc.take(reviews.rows, pc.list_parent_indices(reviews.field("spans")))  # case rows
    fields, starts, ends, texts = (
        pc.struct_field(cited, n).to_pylist() for n in ("field", "start", "end", "text")
    )
    if not set(fields) <= set(_SPAN_FIELDS):
        return False
    cases = {f: pc.take(_column(table, f), rows).to_pylist() for f in set(fields)}
    return all(
        start >= 0 and end > 0 and text and (cases[field][i] or "")[start:end] == text
        for i, (field, start, end, text) in enumerate(zip(fields, starts, ends, texts, strict=True))
    )


def _texts(values: Any) -> pa.Array:
    import pyarrow as pa

    return pa.array(list(values), pa.string())


def _all_in(values: pa.Array, allowed: Any) -> bool:
    import pyarrow.compute as pc

    return bool(pc.all(pc.is_in(values.drop_null(), _texts(allowed))).as_py() is not False)


def _check_rubric_fit(table: pa.Table, reviews: _Reviews, context: _Context) -> None:
    """``_check_records`` and ``_check_reviewers`` of every row: the response hash, the rubric's
    version, slices, labels and minimum reviews, distinct reviewers, resolvable evidence, listed
    reviewers and adjudicators."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rubric = context.rubric
    adjudication = _column(table, "adjudication")
    if not (
        _all_in(_column(table, "partition"), PARTITIONS)
        and _all_in(_column(table, "rubric_version"), [rubric.version])
        and _all_in(_column(table, "slice"), rubric.slices)
        and _all_in(reviews.field("label"), rubric.labels)
        and _all_in(pc.struct_field(adjudication, "label"), rubric.labels)
        and _none(pc.less(pc.list_value_length(reviews.lists), rubric.min_reviews))
    ):
        raise _NotProven("a record does not fit the rubric")
    pairs = pa.table({"row": reviews.rows, "reviewer": reviews.field("reviewer")})
    if pairs.group_by(["row", "reviewer"]).aggregate([]).num_rows != pairs.num_rows:
        raise _NotProven("a reviewer reviews a case twice")
    cited = [reviews.field("evidence").flatten(), _column(table, "evidence").flatten()]
    if any(len(c) for c in cited) and (
        context.evidence_ids is None or not all(_all_in(c, context.evidence_ids) for c in cited)
    ):
        raise _NotProven("unresolved evidence")
    if context.reviewers:
        names = pc.unique(reviews.field("reviewer")).to_pylist()
        names += pc.unique(pc.struct_field(adjudication, "adjudicator")).drop_null().to_pylist()
        if any(name.strip() not in context.reviewers for name in names):
            raise _NotProven("a reviewer not on the project's list")
    responses = _column(table, "response").to_pylist()
    hashes = _column(table, "response_hash").to_pylist()
    for response, expected in zip(responses, hashes, strict=True):
        if hashlib.sha256(response.encode("utf-8")).hexdigest() != expected:
            raise _NotProven("a response hash does not match")


def _input_keys(table: pa.Table) -> np.ndarray:
    """A hash of each row's input after :func:`normalize_text` (``_check_near_duplicates``
    compares input and response: an input in one partition only clears its rows); in Arrow for
    ASCII, in Python for the rest."""
    import numpy as np
    import pyarrow.compute as pc

    texts = _column(table, "input")
    words = pc.ascii_split_whitespace(pc.ascii_lower(texts))  # no \x1c-\x1f: str.split's are
    out: list[str] = pc.binary_join(words, " ").to_pylist()
    other = pc.or_(
        pc.invert(pc.string_is_ascii(texts)), pc.match_substring_regex(texts, "[\x1c-\x1f]")
    )
    for i in pc.indices_nonzero(other).to_pylist():
        out[i] = normalize_text(texts[i].as_py())
    return np.fromiter(map(hash, out), dtype=np.int64, count=len(out))


def _check_file(context: _Context) -> pa.Array:
    """``_check_cross_records`` and ``_check_near_duplicates``: distinct case ids, each group in
    one partition, correction chains that hold, the same item never in two partitions (an input
    shared across partitions, even by a hash's chance, is left to the full validation); returns
    the ids of the records a correction supersedes."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if not context.ids:
        raise _NotProven("no records")
    ids = pa.chunked_array(context.ids, pa.string())
    if pc.count_distinct(ids).as_py() != len(ids):
        raise _NotProven("a case id used twice")
    partitions = pa.chunked_array(context.partitions, pa.string())
    groups = pa.table({"group": pa.chunked_array(context.groups, pa.string()), "p": partitions})
    if _spread(groups, "group"):
        raise _NotProven("a group in two partitions")
    supersedes = pa.chunked_array(context.supersedes, pa.string())
    superseded = pc.unique(supersedes.drop_null())
    if len(superseded):
        columns = (ids, partitions, groups["group"], supersedes, context.hashes)
        ident = zip(
            range(len(ids)), *(pa.chunked_array(c).to_pylist() for c in columns), strict=True
        )
        if check_identities(list(ident), ""):
            raise _NotProven("a correction that does not hold")
    keys = pa.table({"key": pa.array(np.concatenate(context.keys)), "p": partitions})
    if _spread(keys.filter(pc.invert(pc.is_in(ids, superseded))), "key"):
        raise _NotProven("the same item in two partitions")
    return superseded


def _spread(table: pa.Table, key: str) -> bool:
    """Some value of ``key`` is in more than one partition (column ``p``)."""
    import pyarrow.compute as pc

    spread = table.group_by(key).aggregate([("p", "count_distinct")])
    return bool(len(spread) and pc.max(spread["p_count_distinct"]).as_py() > 1)


def _index_batch(
    table: pa.Table, lines: pa.Array, reviews: _Reviews, schema: pa.Schema
) -> pa.RecordBatch:
    """The index rows of a proven block (``gold/_index.py:index_table`` of its records; every
    record active until :func:`_mark_superseded`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    texts = pa.list_(pa.string())
    adjudication = _column(table, "adjudication")
    columns = {
        "case_id": _column(table, "case_id"),
        "partition": _column(table, "partition"),
        "slice": _column(table, "slice"),
        "group": _column(table, "group"),
        "label": pc.struct_field(adjudication, "label"),
        "response_hash": _column(table, "response_hash"),
        "active": pa.array([True] * table.num_rows, pa.bool_()),
        "tags": _column(table, "tags").fill_null(pa.scalar([], texts)),
        "reviewers": reviews.per_row("reviewer"),
        "review_labels": reviews.per_row("label"),
        "search_text": _search_text(table, reviews),
        "record": lines,
        "response_chars": pc.cast(pc.utf8_length(_column(table, "response")), pa.int64()),
        "confidences": reviews.per_row("confidence"),
        "metadata": _metadata_map(table),
    }
    return pa.record_batch([columns[f.name].cast(f.type) for f in schema], schema=schema)


def _search_text(table: pa.Table, reviews: _Reviews) -> pa.Array:
    """The input, response, review rationales and adjudication reason, one per line (``None``
    parts left out)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rationale = reviews.field("rationale")
    given = pc.is_valid(rationale)
    rows = pc.filter(reviews.rows, given).to_numpy()
    counts = np.bincount(rows, minlength=table.num_rows)
    offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]), pa.int32())
    joined = pc.binary_join(pa.ListArray.from_arrays(offsets, pc.filter(rationale, given)), "\n")
    joined = pc.if_else(pa.array(counts > 0), joined, pa.scalar(None, pa.string()))
    reason = pc.struct_field(_column(table, "adjudication"), "reason")
    parts = [_column(table, "input"), _column(table, "response"), joined, reason]
    return pc.binary_join_element_wise(*parts, "\n", null_handling="skip")


def _metadata_map(table: pa.Table) -> pa.Array:
    """Each row's metadata as ``(key, text)`` pairs in key order (every value is text)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = table.num_rows
    kind = table.schema.field("metadata").type if "metadata" in table.column_names else None
    names = (
        sorted(child.name for child in kind)
        if kind is not None and pa.types.is_struct(kind)
        else []
    )
    metadata = _column(table, "metadata") if names else None
    rows, order, values = [], [], []
    for j, name in enumerate(names):
        column = pc.struct_field(metadata, name)
        present = pc.is_valid(column)
        rows.append(pc.indices_nonzero(present).to_numpy())
        order.append(np.full(len(rows[-1]), j))
        values.append(pc.filter(column, present))
    row = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    sort = np.lexsort((np.concatenate(order), row)) if rows else np.zeros(0, np.int64)
    keys = pa.array(
        np.array(names, dtype=object)[np.concatenate(order)[sort]] if rows else [], pa.string()
    )
    items = pa.concat_arrays(values).take(pa.array(sort)) if rows else pa.array([], pa.string())
    offsets = pa.array(np.concatenate([[0], np.cumsum(np.bincount(row, minlength=n))]), pa.int32())
    return pa.MapArray.from_arrays(offsets, keys, items)
