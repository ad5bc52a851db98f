"""Reading a source table (CSV, JSONL, Parquet or a pandas DataFrame) for ``import table``;
the reading itself is :mod:`.._table_reader`'s."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._table_reader import FORMATS, TableRead, Words, read_file, read_frame, table_format

__all__ = ["FORMATS", "SourceTable", "read_table", "source_format", "table_from_frame"]

SourceTable = TableRead

WORDS = Words(
    subject="source",
    file="the source table",
    table="the source table",
    empty_title="empty source",
    rows_fix="one row per case (wide) or per review (long)",
    format_title="unknown source format",
    format_fix=(
        "name the file .csv, .jsonl or .parquet, or set source_format: csv | jsonl | parquet in"
        " the mapping"
    ),
    listed=20,
    table_cells=True,
)
"""How ``workbench import table`` names its input and reads its cells."""


def source_format(path: Path, declared: str | None) -> str:
    """The format of ``path``: the mapping's ``source_format``, else from the extension."""
    return table_format(path, declared, WORDS)


def read_table(path: Path, fmt: str) -> SourceTable:
    """Read a source file; raise :class:`WorkbenchError` listing every problem."""
    return read_file(path, fmt, WORDS, path.name)


def table_from_frame(frame: Any) -> SourceTable:
    """A table over a pandas DataFrame (rows referenced by index label)."""
    return read_frame(frame, WORDS, "pandas DataFrame")
