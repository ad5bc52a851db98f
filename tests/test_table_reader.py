"""The table reader both importers share (``workbench/importers/_table_reader.py``).

``import table`` and ``import results`` read CSV, JSONL, Parquet and DataFrames through one
reader and refuse a bad table with the same codes; each names its input in its own words.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from workbench.errors import WorkbenchError
from workbench.importers._table_reader import PREDICTIONS, SOURCE

READERS = [
    pytest.param(PREDICTIONS, "predictions", id="import-results"),
    pytest.param(SOURCE, "source", id="import-table"),
]


def _refused(read: Any, *args: Any) -> WorkbenchError:
    with pytest.raises(WorkbenchError) as info:
        read(*args)
    return info.value


@pytest.mark.parametrize(("reader", "subject"), READERS)
def test_a_malformed_csv_lists_every_problem(tmp_path: Path, reader: Any, subject: str) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,,a\n1,2,3\n1,2\n1,2,3,4\n\n4,5\n", encoding="utf-8")
    error = _refused(reader.read_table, path, "csv")
    found = [(p.code, p.location, p.message) for p in error.problems]
    assert found == [
        ("source_header", f"{path}:1", "column 2 of the header has no name"),
        ("source_header", f"{path}:1", "the header names column 'a' twice"),
        (
            "source_malformed",
            f"{path}:3",
            "2 row(s) have 2 field(s) but the header has 3 (lines 3, 6)",
        ),
        (
            "source_malformed",
            f"{path}:4",
            "1 row(s) have 4 field(s) but the header has 3 (lines 4)",
        ),
    ]


@pytest.mark.parametrize(("reader", "subject"), READERS)
def test_unreadable_tables_are_refused_with_their_code(
    tmp_path: Path, reader: Any, subject: str
) -> None:
    latin = tmp_path / "latin.csv"
    latin.write_bytes("name\ncaf\xe9\n".encode("latin-1"))
    assert [p.code for p in _refused(reader.read_table, latin, "csv").problems] == [
        "source_encoding"
    ]
    lines = tmp_path / "t.jsonl"
    lines.write_text('{"a": 1}\n[1, 2]\n{"a": \n', encoding="utf-8")
    error = _refused(reader.read_table, lines, "jsonl")
    assert [(p.code, p.location) for p in error.problems] == [
        ("source_malformed", f"{lines}:2"),
        ("source_malformed", f"{lines}:3"),
    ]
    parquet = tmp_path / "t.parquet"
    parquet.write_bytes(b"not parquet")
    error = _refused(reader.read_table, parquet, "parquet")
    assert [p.code for p in error.problems] == ["source_malformed"]
    assert error.problems[0].message.startswith("not a readable Parquet file")
    header_only = tmp_path / "empty.csv"
    header_only.write_text("a,b\n", encoding="utf-8")
    error = _refused(reader.read_table, header_only, "csv")
    assert [p.code for p in error.problems] == ["source_empty"]
    assert subject in error.problems[0].message


@pytest.mark.parametrize(("reader", "subject"), READERS)
def test_a_table_format_comes_from_the_declaration_or_the_extension(
    tmp_path: Path, reader: Any, subject: str
) -> None:
    fmt = reader.table_format
    assert fmt(tmp_path / "t.ndjson", None) == "jsonl"
    assert fmt(tmp_path / "t.txt", "csv") == "csv"
    error = _refused(fmt, tmp_path / "t.txt", None)
    assert [p.code for p in error.problems] == ["source_format_unknown"]


@pytest.mark.parametrize(("reader", "subject"), READERS)
def test_a_dataframe_naming_a_column_twice_is_refused(reader: Any, subject: str) -> None:
    frame = pd.DataFrame([[1, 2]], columns=["a", "a"])
    error = _refused(reader.table_from_frame, frame)
    assert [(p.code, p.location) for p in error.problems] == [("source_header", "DataFrame")]
    assert error.problems[0].message == "the table names column(s) 'a' more than once"
    assert subject in error.summary
    error = _refused(reader.table_from_frame, pd.DataFrame({"a": []}))
    assert [p.code for p in error.problems] == ["source_empty"]


def test_only_import_table_reads_cells_as_table_cells() -> None:
    frame = pd.DataFrame({"a": ["", "x"], "b": [float("inf"), 1.5], "c": [[1, 2], [3]]})
    results = PREDICTIONS.table_from_frame(frame)
    table = SOURCE.table_from_frame(frame)
    assert results.rows[0] == {"a": "", "b": float("inf"), "c": [1, 2]}
    assert table.rows[0] == {"a": None, "b": None, "c": [1, 2]}
    assert (results.label, table.label) == ("DataFrame", "pandas DataFrame")
    error = _refused(PREDICTIONS.table_from_frame, [{"a": 1}])
    assert [p.code for p in error.problems] == ["source_not_dataframe"]
