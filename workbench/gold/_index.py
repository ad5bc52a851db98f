"""A validated gold release, once, as a columnar index in a cache keyed by its dataset sha256
(docs/formats.md#gold-index-cache); the gold file's sha256 is remembered by its ``stat``, as
git's index does."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from .._io import (
    atomic_write,
    atomic_write_bytes,
    open_for_reading,
    sha256_file,
    sha256_json,
    sha256_stream,
)
from ..approval import RELEASES_FILE, Release, project_config, read_release_log
from ._columnar import stream_index
from ._dataset import CARD_FILE, RUBRIC_FILE, GoldDataset, Released, load_dataset, resolve_paths
from ._records import GoldCase
from ._rubric import Rubric, load_rubric

if TYPE_CHECKING:
    import pyarrow as pa

INDEX_FORMAT = 5
"""Version of the cached index layout; part of the cache key (3: the group; 4: the response
length, the reviewers' confidences and the metadata, for breakdowns by case field; 5: ``record``
is the line as written when the index is built in one pass, :func:`record_json` reads it)."""
CACHE_ENV = "WORKBENCH_CACHE_DIR"
"""Environment variable naming the cache directory (shared with the verdict cache)."""
SWITCH_ENV = "WORKBENCH_GOLD_INDEX"
"""``WORKBENCH_GOLD_INDEX=off`` disables the gold index cache (every call validates in full)."""
MEMO_MARGIN_NS = 2_000_000_000
"""A gold file's hash is remembered only when it last changed at least this long before hashing."""
INDEX_COLUMNS = (
    ("case_id", "partition", "slice", "group", "label", "response_hash")
    + ("active", "tags", "reviewers")
    + ("review_labels", "search_text", "record")
    + ("response_chars", "confidences", "metadata")
)
"""One row per gold record in file order; ``active`` is False for superseded records;
``search_text`` is what the review widget searches; ``record`` is the record's JSON (its line as
written, or as validated: :func:`record_json` reads either as the validated record);
``response_chars`` the response's length in characters; ``confidences`` each review's confidence
(null when not stated); ``metadata`` the record's metadata as text (a string as it is, any other
value as JSON)."""
INDEX_CHUNK = 1 << 16
"""Records per chunk when an index is built (bounds the Python values alive at once)."""


def cache_dir() -> Path | None:
    """Where gold indexes are cached, or None when ``WORKBENCH_GOLD_INDEX=off``."""
    if os.environ.get(SWITCH_ENV, "").strip().lower() in ("off", "0", "no", "false"):
        return None
    raw = os.environ.get(CACHE_ENV, "").strip()
    return (Path(raw) if raw else Path.home() / ".cache" / "judge-workbench") / "gold-index"


@dataclass(frozen=True)
class GoldIndex(Released):
    """What an analysis needs of a validated gold dataset, columnar, with the attributes of
    :class:`GoldDataset` that lineage checks read; :meth:`dataset` loads the full dataset."""

    root: Path
    gold_path: Path
    rubric: Rubric
    sha256: str
    releases: tuple[Release, ...]
    table: pa.Table
    """Columns :data:`INDEX_COLUMNS`, one row per record, in file order."""
    from_cache: bool
    """True when the index was read from the cache instead of validating the dataset."""

    def dataset(self) -> GoldDataset:
        """The full, validated dataset (slow: validates every record)."""
        return load_dataset(self.gold_path)

    def superseded_by(self) -> dict[str, str]:
        """Every superseded id -> the active id at the end of its chain (as
        :attr:`GoldDataset.superseded_by`; the records are read only when one is inactive)."""
        import json

        import pyarrow.compute as pc

        if pc.all(self.table["active"]).as_py() is not False:
            return {}
        replaced_by: dict[str, str] = {}
        for text in self.table["record"].to_pylist():
            record = json.loads(text)  # as written or as validated: `supersedes` is absent or set
            if record.get("supersedes") is not None:
                replaced_by[record["supersedes"]] = record["case_id"]
        out: dict[str, str] = {}
        for old, new in replaced_by.items():
            while new in replaced_by:
                new = replaced_by[new]
            out[old] = new
        return out

    def case_ids(self, partition: str | None = None) -> list[str]:
        """Active case ids of one partition (all when None), in file order."""
        import pyarrow.compute as pc

        mask = self.table["active"]
        if partition is not None:
            mask = pc.and_(mask, pc.equal(self.table["partition"], partition))
        ids: list[str] = self.table["case_id"].filter(mask).to_pylist()
        return ids


def _hash_file(path: Path) -> str | None:
    """sha256 of a file read once in blocks, or None when it does not exist."""
    if not path.exists():
        return None
    with open_for_reading(path) as fh:
        return sha256_stream(fh)


def _stat_key(stat: os.stat_result) -> list[int]:
    return [stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]


def _hash_gold_file(path: Path, directory: Path | None) -> tuple[str | None, list[int] | None]:
    """sha256 of the gold file, from the memo when ``stat`` is unchanged; None if absent. Second:
    the ``stat`` key when the file was read now and had settled (what the memo remembers), so a
    later read may trust the hash while the key holds; None otherwise."""
    if directory is None:
        return _hash_file(path), None
    try:
        before = os.stat(path)
    except FileNotFoundError:
        return None, None
    memo = directory / f"sha-{hashlib.sha256(str(path.resolve()).encode()).hexdigest()}.json"
    key = _stat_key(before)
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        entry = json.loads(memo.read_bytes())
        remembered = entry["sha256"]
        if entry["stat"] == key and isinstance(remembered, str) and len(remembered) == 64:
            return remembered, None  # a remembered hash is never trusted for another read
    started = time.time_ns()
    sha = _hash_file(path)
    if (
        sha is not None
        and _stat_key(os.stat(path)) == key  # not changed while it was read
        and max(before.st_mtime_ns, before.st_ctime_ns) < started - MEMO_MARGIN_NS
    ):
        with contextlib.suppress(OSError):  # a read-only cache only costs speed
            atomic_write_bytes(memo, json.dumps({"stat": key, "sha256": sha}).encode())
        return sha, key
    return sha, None


def gold_index(path: str | Path) -> GoldIndex:
    """The columnar index of a validated gold dataset, cached; raises
    :class:`~workbench.errors.WorkbenchError` as :func:`~workbench.gold.load_dataset` does."""
    root, gold_path = resolve_paths(path)
    rubric_path = root / RUBRIC_FILE
    directory = cache_dir()
    try:
        rubric = load_rubric(rubric_path)
        gold_sha, hashed = _hash_gold_file(gold_path, directory)
    except Exception:  # noqa: BLE001 - any trouble: the full validation reports it in its words
        return _build(path, root, gold_path, None, None)
    if gold_sha is None:
        return _build(path, root, gold_path, None, None)
    evidence = rubric_path.parent / rubric.evidence_snapshot if rubric.evidence_snapshot else None
    try:
        digest = sha256_json(
            {
                "gold": gold_sha,
                "rubric": sha256_file(rubric_path),
                "evidence": sha256_file(evidence) if evidence else None,
            }
        )
        key = sha256_json(
            {
                "format": INDEX_FORMAT,
                "workbench": _version(),
                "dataset": digest,
                "card": _hash_file(root / CARD_FILE),
                "releases": _hash_file(root / RELEASES_FILE),
                # the approver list decides whether the releases' approvers are valid
                "approvers": _approvers_key(root),
            }
        )
    except Exception:  # noqa: BLE001 - e.g. a missing evidence snapshot: validation reports it
        return _build(path, root, gold_path, None, None)
    cached = _read(directory / f"gold-{key}.arrow", key, digest) if directory is not None else None
    if cached is not None:
        releases = _gold_releases(root)
        return GoldIndex(root, gold_path, rubric, digest, releases, cached, from_cache=True)
    unchanged = (lambda: _stat_key(os.stat(gold_path)) == hashed) if hashed is not None else None
    if directory is not None and _stream(root, gold_path, key, digest, unchanged):
        table = _read(directory / f"gold-{key}.arrow", key, digest)
        if table is not None:
            rubric = load_rubric(root / RUBRIC_FILE)
            return GoldIndex(root, gold_path, rubric, digest, _gold_releases(root), table, False)
    return _build(path, root, gold_path, key if directory is not None else None, digest)


def _stream(
    root: Path, gold_path: Path, key: str, digest: str, unchanged: Callable[[], bool] | None
) -> bool:
    """Build the index in one pass (``gold/_columnar.py``); False when it cannot."""
    target = cache_dir() / f"gold-{key}.arrow"  # type: ignore[operator]
    schema = _stamped(index_schema(), key, digest)
    return stream_index(root, gold_path, target, schema, digest, unchanged)


def _gold_releases(root: Path) -> tuple[Release, ...]:
    if not (root / RELEASES_FILE).exists():
        return ()
    return tuple(r for r in read_release_log(root).releases if r.kind == "gold")


def _approvers_key(root: Path) -> str | None:
    """The project configuration's hash (its approvers and reviewers check the gold)."""
    config = project_config(root)
    return _hash_file(config) if config is not None else None


def _version() -> str:
    from .. import __version__

    return __version__


def _build(
    path: str | Path, root: Path, gold_path: Path, key: str | None, digest: str | None
) -> GoldIndex:
    dataset = load_dataset(path)
    table = index_table(dataset)
    index = GoldIndex(
        root, gold_path, dataset.rubric, dataset.sha256, dataset.releases, table, False
    )
    del dataset  # the records (gigabytes at a million cases) are not kept while writing
    if key is not None and index.sha256 == digest:  # the files did not change while validating
        _write(cache_dir() / f"gold-{key}.arrow", index.table, key, digest)  # type: ignore[operator]
    return index


def index_schema() -> pa.Schema:
    """The types of :data:`INDEX_COLUMNS`."""
    import pyarrow as pa

    strings, lists = pa.string(), pa.list_(pa.string())
    kinds = dict.fromkeys(INDEX_COLUMNS, strings)
    kinds.update(dict.fromkeys(("tags", "reviewers", "review_labels", "confidences"), lists))
    kinds.update(active=pa.bool_(), response_chars=pa.int64())
    kinds.update(metadata=pa.map_(strings, strings))
    return pa.schema(list(kinds.items()))


def record_json(text: str) -> dict[str, Any]:
    """A row's ``record`` as the validated record's JSON (every field, defaults included)."""
    return GoldCase.model_validate_json(text).model_dump(mode="json")


def index_table(dataset: GoldDataset) -> pa.Table:
    """The index columns of a loaded dataset (built in chunks: a column's Python values for
    a chunk of records at a time, never for the whole dataset)."""
    import pyarrow as pa

    active = dataset.cases
    columns: dict[str, Callable[[GoldCase], Any]] = {
        "case_id": lambda r: r.case_id,
        "partition": lambda r: r.partition.value,
        "slice": lambda r: r.slice,
        "group": lambda r: r.group,
        "label": lambda r: r.gold_label,
        "response_hash": lambda r: r.response_hash,
        "active": lambda r: active.get(r.case_id) is r,
        "tags": lambda r: r.tags,
        "reviewers": lambda r: [v.reviewer for v in r.reviews],
        "review_labels": lambda r: [v.label for v in r.reviews],
        "search_text": _search_text,
        "record": lambda r: r.model_dump_json(),
        "response_chars": lambda r: len(r.response),
        "confidences": lambda r: [v.confidence for v in r.reviews],
        "metadata": _metadata_text,
    }
    records = dataset.records
    chunks = range(0, max(len(records), 1), INDEX_CHUNK)
    schema = index_schema()
    return pa.table(
        {
            f.name: pa.chunked_array(
                [
                    pa.array([columns[f.name](r) for r in records[i : i + INDEX_CHUNK]], f.type)
                    for i in chunks
                ],
                f.type,
            )
            for f in schema
        }
    )


def _metadata_text(record: GoldCase) -> list[tuple[str, str]]:
    """The metadata as ``(key, text)`` pairs: a string as it is, any other value as JSON."""
    return [
        (key, value if isinstance(value, str) else json.dumps(value, sort_keys=True))
        for key, value in sorted(record.metadata.items())
    ]


def _search_text(record: GoldCase) -> str:
    """The input, response, review rationales and adjudication reason, one per line."""
    reason = record.adjudication.reason if record.adjudication else None
    parts = [record.input, record.response, *(v.rationale for v in record.reviews), reason]
    return "\n".join(p for p in parts if p is not None)


def _read(path: Path, key: str, digest: str) -> pa.Table | None:
    import pyarrow as pa

    if not path.is_file():
        return None
    try:
        with pa.memory_map(str(path)) as source:
            table = pa.ipc.open_file(source).read_all()
    except (OSError, pa.ArrowException):
        return None  # unreadable or torn: rebuilt
    meta = table.schema.metadata or {}
    if (
        meta.get(b"workbench.key") != key.encode()
        or meta.get(b"workbench.dataset_sha256") != digest.encode()
    ):
        return None  # never trusted when the sha differs
    if tuple(table.column_names) != INDEX_COLUMNS:
        return None
    return table.replace_schema_metadata(None)


def _stamped(schema: pa.Schema, key: str, digest: str) -> pa.Schema:
    """``schema`` with the cache key and dataset hash a cached index is trusted by."""
    meta = {"key": key, "dataset_sha256": digest, "format": str(INDEX_FORMAT)}
    return schema.with_metadata({f"workbench.{k}": v for k, v in meta.items()})


def _write(path: Path, table: pa.Table, key: str, digest: str) -> None:
    """Write the index atomically, streamed to the file (never whole in memory twice)."""
    import pyarrow as pa

    stamped = table.replace_schema_metadata(_stamped(table.schema, key, digest).metadata)

    def write(fh: BinaryIO) -> None:
        with pa.ipc.new_file(fh, stamped.schema) as writer:
            writer.write_table(stamped)

    with contextlib.suppress(OSError):  # a read-only or full cache only costs speed
        atomic_write(path, write)
