"""Held-out exposure read from a gold's columnar index (:class:`~workbench.gold.GoldIndex`),
for readers that never load the full dataset (``import results``): the same item keys as
:func:`~._exposure.held_out_content`, computed only for the records that can share one."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from types import SimpleNamespace
from typing import Any

from ..gold import GoldIndex
from ._content import item_key, normalize_text
from ._exposure import recorded_item_keys

_CHUNK = 1 << 16
"""Gold records read at once (bounds the Python strings alive)."""


def exposed_in_index(index: GoldIndex, judged: Iterable[str]) -> tuple[list[Any], dict[str, str]]:
    """The judged development and calibration cases with held-out content, and that content
    (item key -> held-out case): the gold's held-out records and what its ledger records. Two
    items share a key only if their responses normalize alike, so without a ledger's keys only
    the records whose normalized response a record of the other side shares are keyed."""
    import numpy as np
    import pyarrow.compute as pc

    table = index.table
    held_out = pc.equal(table["partition"], "held_out").to_numpy(zero_copy_only=False)
    held = recorded_item_keys(index.root)
    position = {case_id: i for i, case_id in enumerate(table["case_id"].to_pylist())}
    exposed = [position[c] for c in judged if c in position and not held_out[position[c]]]
    held_rows: dict[int, list[int]] = {}  # a hash of the normalized response -> held-out rows
    rows = np.flatnonzero(held_out)
    for row, item in zip(rows, _items(table, rows), strict=True):
        held_rows.setdefault(hash(normalize_text(item.response)), []).append(int(row))
    shared = [
        item
        for item in _items(table, exposed)
        if held or hash(normalize_text(item.response)) in held_rows
    ]
    responses = {hash(normalize_text(item.response)) for item in shared}
    keyed = sorted(row for h in responses for row in held_rows.get(h, ()))
    held.update((item_key(item), item.case_id) for item in _items(table, keyed))
    return [item for item in shared if item_key(item) in held], held


def _take(column: Any, bounds: Any, rows: Any) -> Any:
    """``column[rows]`` taken chunk by chunk (``ChunkedArray.take`` joins every chunk first:
    the whole index's records at once), in the order of ``rows``."""
    import numpy as np
    import pyarrow as pa

    which = np.searchsorted(bounds, rows, side="right") - 1
    order = np.argsort(which, kind="stable")
    parts = [
        column.chunk(c).take(pa.array(rows[order][which[order] == c] - bounds[c]))
        for c in np.unique(which)
    ]
    grouped = pa.concat_arrays(parts) if parts else pa.array([], pa.string())
    return grouped.take(pa.array(np.argsort(order)))


_ITEM_FIELDS = ("case_id", "input", "response", "grading_notes", "reference", "contexts")


def _items(table: Any, rows: Any) -> Iterator[SimpleNamespace]:
    """What the judge sees of the gold records at ``rows``, from their validated JSON (only these
    fields parsed), a chunk of records at a time."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    text = pa.string()
    kinds = dict.fromkeys(_ITEM_FIELDS, text) | {"contexts": pa.list_(text)}
    options = pj.ParseOptions(
        explicit_schema=pa.schema(list(kinds.items())), unexpected_field_behavior="ignore"
    )
    column = table["record"]
    bounds = np.cumsum([0, *(len(chunk) for chunk in column.chunks)])
    for start in range(0, len(rows), _CHUNK):
        records = _take(column, bounds, np.asarray(rows[start : start + _CHUNK], np.int64))
        lines = pc.binary_join_element_wise(records, "", "\n")  # one record a line
        size = pc.sum(pc.binary_length(lines)).as_py()
        parsed = pj.read_json(
            pa.BufferReader(lines.buffers()[2].slice(0, size)),
            read_options=pj.ReadOptions(use_threads=False),  # less CPU; a chunk is small
            parse_options=options,
        )
        for values in zip(*(parsed[name].to_pylist() for name in _ITEM_FIELDS), strict=True):
            yield SimpleNamespace(**dict(zip(_ITEM_FIELDS, values, strict=True)))
