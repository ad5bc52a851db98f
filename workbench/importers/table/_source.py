"""Reading a source table: CSV, JSONL, Parquet or a pandas DataFrame, as rows of Python values.

CSV cells are read as text exactly as written (no type guessing); JSONL keeps JSON types;
Parquet and DataFrames are converted value by value (NaN and None are empty cells). Every row
keeps a reference a person can find: the line it starts on for CSV and JSONL (the header is
line 1), the DataFrame index label for DataFrames and Parquet.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from .._table_reader import FORMATS, TableRead, Words, read_file, read_frame, table_format

__all__ = [
    "FORMATS",
    "MAX_LISTED",
    "SourceTable",
    "read_table",
    "source_format",
    "table_from_frame",
]

MAX_LISTED = 20
"""How many row references a message lists before saying how many more there are."""

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
    max_listed=MAX_LISTED,
    parquet_detail=None,
    duplicate_title="ambiguous columns",
    duplicate_message=lambda dupes: f"columns named twice: {', '.join(dupes)}",
    duplicate_location=None,
    table_cells=True,
)
"""How ``workbench import table`` names its input and reads its cells."""


@dataclass(frozen=True)
class SourceTable(TableRead):
    """A table read into memory."""

    label: str = ""
    """How the card names the source: the file name, or ``pandas DataFrame``."""

    MAX_LISTED: ClassVar[int] = MAX_LISTED


def source_format(path: Path, declared: str | None) -> str:
    """The format of ``path``: the mapping's ``source_format``, else from the extension."""
    return table_format(path, declared, WORDS)


def read_table(path: Path, fmt: str) -> SourceTable:
    """Read a source file; raise :class:`WorkbenchError` listing every problem."""
    return SourceTable(*read_file(path, fmt, WORDS), label=path.name)


def table_from_frame(frame: Any) -> SourceTable:
    """A :class:`SourceTable` over a pandas DataFrame (rows referenced by index label)."""
    return SourceTable(*read_frame(frame, WORDS), label="pandas DataFrame")
