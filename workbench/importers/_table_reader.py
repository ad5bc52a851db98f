"""One reader of tables (CSV, JSONL, Parquet, a DataFrame) for ``import results``
(:data:`PREDICTIONS`) and ``import table`` (:data:`SOURCE`); each row keeps its line (the CSV
header is line 1) or its index label."""

from __future__ import annotations

import csv
import hashlib
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._io import (
    MAX_LINE_BYTES_ENV,
    JSONRecordError,
    canonical_json,
    loads_json,
    max_document_bytes,
    read_bounded,
)
from .._load import Problems
from ..errors import Problem, WorkbenchError, problem
from ._registry import refuse

FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
FORMATS |= {".parquet": "parquet", ".pq": "parquet"}

FILES_FIX = "point at a .csv, .tsv, .jsonl or .parquet file"


@dataclass(frozen=True)
class TableRead:
    """A table read into memory."""

    location: str
    """Where problems point: the file path, or ``DataFrame``."""
    format: str
    """csv, tsv, jsonl, parquet or dataframe."""
    columns: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]
    refs: tuple[Any, ...]
    """Per row: its line (csv, jsonl) or its index label (parquet, dataframe)."""
    sha256: str
    """sha256 of the file's bytes, or of the canonical JSON of a DataFrame's cells."""
    label: str
    """How summaries and the card name the source: the file name, or the DataFrame's label."""
    listed: int = 12
    """How many row references :meth:`describe` lists."""

    @property
    def unit(self) -> str:
        return "line" if self.format in ("csv", "tsv", "jsonl") else "row"

    def where(self, i: int) -> str:
        """Location of row ``i`` for a problem."""
        return f"{self.location}{':' if self.unit == 'line' else ' row '}{self.refs[i]}"

    def describe(self, indices: list[int]) -> str:
        """``lines 3, 5 and 9`` / ``row 7``, listing at most :attr:`listed`."""
        refs = [str(self.refs[i]) for i in indices]
        return f"{self.unit}{'s' if len(refs) > 1 else ''} {_listed(refs, self.listed)}"


@dataclass(frozen=True)
class Words:
    """One importer's reader: how its problems name the input, and how it reads cells."""

    subject: str
    """``predictions`` or ``source``: "cannot read the ...", "unknown ... format"."""
    file: str
    table: str
    empty_title: str
    rows_fix: str
    format_key: str
    listed: int
    """How many row references a message lists."""
    table_cells: bool
    """Read cells as ``import table`` does: blanks and non-finite numbers are empty, arrays and
    mappings converted inside, timestamps ISO text."""
    frame_label: str

    def table_format(self, path: Path, declared: str | None) -> str:
        """The format of ``path``: the declared one, else from the extension."""
        if declared:
            return declared
        if path.suffix.lower() not in FORMATS:
            refuse(
                f"unknown {self.subject} format",
                str(path),
                "source_format_unknown",
                f"cannot tell the format of {path.name!r} from its extension",
                "name the file .csv, .tsv, .jsonl or .parquet, or set"
                f" {self.format_key}: csv | tsv | jsonl | parquet in the mapping"
                + (" (--format)" if self.format_key == "format" else ""),
            )
        return FORMATS[path.suffix.lower()]

    def read_table(self, path: Path, fmt: str) -> TableRead:
        """Read a table file; raise :class:`WorkbenchError` listing every problem."""
        loc = str(path)
        title = f"cannot read the {self.subject}"
        if path.is_dir() or not path.exists():
            what = "is a directory, not a table" if path.is_dir() else "does not exist"
            refuse(title, loc, "source_missing", f"{self.file} {what}", FILES_FIX)
        try:  # bounded: a pipe or /dev/zero is refused
            data = read_bounded(
                path, limit=max_document_bytes(), setting=MAX_LINE_BYTES_ENV, fix=FILES_FIX
            )
        except WorkbenchError as exc:
            raise WorkbenchError(title, list(exc.problems)) from None
        if fmt in ("csv", "tsv"):
            columns, rows, refs = _read_csv(data, loc, self, "\t" if fmt == "tsv" else ",")
        elif fmt == "jsonl":
            columns, rows, refs = _read_jsonl(data, loc, self)
        else:
            columns, rows, refs = _read_frame(_parquet(data, loc, self), loc, self)
        return self._table(
            loc, fmt, columns, rows, refs, hashlib.sha256(data).hexdigest(), path.name
        )

    def _table(
        self, loc: str, fmt: str, columns: Any, rows: Any, refs: Any, sha256: str, label: str
    ) -> TableRead:
        if not rows:
            fix = f"{'pass' if fmt == 'dataframe' else 'point at'} a table with {self.rows_fix}"
            what = "the DataFrame" if fmt == "dataframe" else self.table
            refuse(self.empty_title, loc, "source_empty", f"{what} has no rows", fix)
        return TableRead(
            loc, fmt, tuple(columns), tuple(rows), tuple(refs), sha256, label, self.listed
        )

    def table_from_frame(self, frame: Any) -> TableRead:
        """A table over a pandas DataFrame (rows referenced by their index label)."""
        import pandas as pd

        if not isinstance(frame, pd.DataFrame):
            refuse(
                "not a DataFrame",
                "DataFrame",
                "source_not_dataframe",
                f"expected a pandas DataFrame, got {type(frame).__name__}",
                "pass a DataFrame (e.g. EvaluationResult.to_pandas())",
            )
        columns, rows, refs = _read_frame(frame, "DataFrame", self)
        cells = {"columns": columns, "rows": [[_jsonable(r.get(c)) for c in columns] for r in rows]}
        sha256 = hashlib.sha256(canonical_json(cells).encode("utf-8")).hexdigest()
        return self._table("DataFrame", "dataframe", columns, rows, refs, sha256, self.frame_label)


PREDICTIONS = Words(
    subject="predictions", file="the predictions file", table="the predictions table",
    empty_title="no predictions", rows_fix="one row per judged case", format_key="format",
    listed=12, table_cells=False, frame_label="DataFrame",
)  # fmt: skip
SOURCE = Words(
    subject="source", file="the source table", table="the source table",
    empty_title="empty source", rows_fix="one row per case (wide) or per review (long)",
    format_key="source_format", listed=20, table_cells=True, frame_label="pandas DataFrame",
)  # fmt: skip


class RowIssues:
    """Problems in a table's rows: :meth:`add` groups a code and ``key`` (default: message and
    fix) into one problem naming every row (at ``{rows}``, counted at ``{n}``); :meth:`at` records
    one row's problem."""

    def __init__(self, table: TableRead) -> None:
        self.table, self.single = table, Problems()
        self.grouped: dict[tuple[str, str, str | None], tuple[str, str, list[int]]] = {}

    def add(
        self,
        code: str,
        message: str,
        fix: str,
        rows: int | list[int],
        *,
        key: str | None = None,
        case_id: str | None = None,
    ) -> None:
        group = (code, f"{message}\x1f{fix}" if key is None else key, case_id)
        listed = self.grouped.setdefault(group, (message, fix, []))[2]
        listed.extend(rows if isinstance(rows, list) else [rows])

    def at(self, i: int, code: str, message: str, fix: str, case_id: str | None = None) -> None:
        self.single.add(self.table.where(i), code, message, fix, case_id=case_id)

    def __bool__(self) -> bool:
        return bool(self.single or self.grouped)

    def problems(self) -> list[Problem]:
        out = list(self.single)
        for (code, _, case_id), (message, fix, rows) in self.grouped.items():
            rows = sorted(set(rows))
            listed = self.table.describe(rows)
            if "{rows}" in message:
                text = message.replace("{rows}", listed).replace("{n}", str(len(rows)))
            else:
                text = f"{message} ({listed})"
            out.append(problem(self.table.where(rows[0]), code, text, fix, case_id))
        return out


def _listed(items: list[str], most: int) -> str:
    extra = f" and {len(items) - most} more" if len(items) > most else ""
    return ", ".join(items[:most]) + extra


def canonical(value: Any) -> str:
    """The text a cell or a mapping key compares as: ``1``, ``1.0``, ``"1"`` are ``"1"``, ``True``
    and ``"true"`` are ``"true"``, text is stripped."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    text = str(value).strip()
    return text.lower() if text.lower() in ("true", "false") else text


def as_text(value: Any) -> str:
    """:func:`canonical`, numeric text too (``"1.00"`` is ``1``, ``"0.50"`` is ``0.5``)."""
    text = canonical(value)
    if isinstance(value, str) and re.fullmatch(r"[+-]?\d+(\.\d*)?", text):
        return canonical(float(text)) if "." in text else str(int(text))
    return text


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def is_empty(value: Any) -> bool:
    """None, NaN, an empty or blank string: no value."""
    return math.isnan(value) if isinstance(value, float) else _blank(value)


def number_as_text(value: Any) -> Any:
    """A number where a name belongs, as text: YAML reads ``version: 1`` as an int."""
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def _parquet(data: bytes, loc: str, words: Words) -> Any:
    import pandas as pd

    try:
        return pd.read_parquet(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - any reader failure is a bad file
        refuse(
            f"cannot read the {words.subject}",
            loc,
            "source_malformed",
            f"not a readable Parquet file ({type(exc).__name__}: {str(exc)[:160]})",
            "export the table again as Parquet, or as CSV or JSONL",
        )


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, str | int | bool):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


def _read_csv(
    data: bytes, loc: str, words: Words, delimiter: str = ","
) -> tuple[list[str], list[dict[str, Any]], list[int]]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        message = f"the CSV is not valid UTF-8 (byte {exc.start})"
        refuse(
            f"unreadable {words.subject}",
            loc,
            "source_encoding",
            message,
            "save the table as UTF-8 CSV",
        )
    problems = Problems()
    records, error = _csv_records(text, loc, delimiter)
    header = [cell.strip() for cell in records[0][1]] if records else []
    if records:
        _check_header(header, f"{loc}:{records[0][0]}", problems)
    problems += [error] if error is not None else []
    rows: list[dict[str, Any]] = []
    refs: list[int] = []
    ragged: dict[int, list[str]] = {}
    for start, record in records[1:]:
        if len(record) != len(header):
            ragged.setdefault(len(record), []).append(str(start))
        else:
            rows.append({name: cell or None for name, cell in zip(header, record, strict=True)})
            refs.append(start)
    for count, lines in sorted(ragged.items()):
        problems.add(
            f"{loc}:{lines[0]}",
            "source_malformed",
            f"{len(lines)} row(s) have {count} field(s) but the header has {len(header)}"
            f" (lines {_listed(lines, words.listed)})",
            "give every row one field per header column (quote fields holding commas or newlines)",
        )
    problems.raise_if_any(f"{loc}: malformed CSV ({len(problems)} problem(s))")
    return header, rows, refs


def _csv_records(
    text: str, loc: str, delimiter: str = ","
) -> tuple[list[tuple[int, list[str]]], Problem | None]:
    """The non-blank records with their first line, and the quoting error that ended reading."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    records: list[tuple[int, list[str]]] = []
    previous_end = 0
    try:
        for record in reader:
            start, previous_end = previous_end + 1, reader.line_num
            if record and (len(record) > 1 or "".join(record).strip()):
                records.append((start, record))
    except csv.Error as exc:
        where, fix = f"{loc}:{reader.line_num}", "check the quoting of this line"
        return records, problem(where, "source_malformed", f"malformed CSV ({exc})", fix)
    return records, None


def _check_header(header: list[str], where: str, problems: Problems) -> None:
    for i, name in enumerate(header):
        if not name:
            message = f"column {i + 1} of the header has no name"
            problems.add(where, "source_header", message, "name every column in the header row")
        elif name in header[:i]:
            message = f"the header names column {name!r} twice"
            problems.add(where, "source_header", message, "give every column a unique name")


def _read_jsonl(
    data: bytes, loc: str, words: Words
) -> tuple[list[str], list[dict[str, Any]], list[int]]:
    problems = Problems()
    columns: dict[str, None] = {}
    rows: list[dict[str, Any]] = []
    refs: list[int] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        where = f"{loc}:{number}"
        try:
            value = loads_json(raw.decode("utf-8"))  # strict: duplicate keys, NaN/Infinity, depth
        except UnicodeDecodeError as exc:
            message = f"the line is not valid UTF-8 (byte {exc.start})"
            problems.add(where, "source_encoding", message, "save the table as UTF-8")
            continue
        except JSONRecordError as exc:
            bad = exc.code in ("malformed_json", "json_too_deep")
            fix = "write one complete JSON object per line"
            problems.add(where, "source_malformed" if bad else exc.code, exc.msg, fix)
            continue
        if not isinstance(value, dict):
            message = f"the line holds a JSON {type(value).__name__}, not an object"
            fix = "write one JSON object (column: value) per line"
            problems.add(where, "source_malformed", message, fix)
            continue
        columns.update(dict.fromkeys(map(str, value)))
        clean = words.table_cells
        rows.append({str(k): _empty_to_none(v) if clean else v for k, v in value.items()})
        refs.append(number)
    if problems:
        summary = f"{loc}: malformed JSON Lines ({len(problems)} problem(s))"
        raise WorkbenchError(summary, problems[:50])
    return list(columns), rows, refs


def _empty_to_none(value: Any) -> Any:
    empty = value == "" or (isinstance(value, float) and not math.isfinite(value))
    return None if empty else value


def _python(value: Any, table_cells: bool) -> Any:
    """A DataFrame cell as a plain Python value (see :attr:`Words.table_cells`)."""
    if value is None:
        return None
    numpy = not isinstance(value, str | bytes)
    if table_cells and numpy and hasattr(value, "tolist"):
        value = value.tolist()  # numpy scalars and arrays
    elif numpy and hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        value = value.item()  # numpy scalar
    if table_cells and isinstance(value, list | tuple):
        return [_python(v, table_cells) for v in value]
    if table_cells and isinstance(value, dict):
        return {str(k): _python(v, table_cells) for k, v in value.items()}
    if isinstance(value, float) and (
        not math.isfinite(value) if table_cells else math.isnan(value)
    ):
        return None
    return _pandas_value(value, table_cells)


def _pandas_value(value: Any, table_cells: bool) -> Any:
    import pandas as pd

    if value is pd.NA or value is pd.NaT:
        return None
    if table_cells and isinstance(value, pd.Timestamp):
        return value.isoformat()
    if table_cells and isinstance(value, str) and value == "":
        return None
    return value


def _read_frame(
    frame: Any, loc: str, words: Words
) -> tuple[list[str], list[dict[str, Any]], list[Any]]:
    columns = [str(c) for c in frame.columns]
    dupes = sorted({c for c in columns if columns.count(c) > 1})
    if dupes:
        message = f"the table names column(s) {', '.join(map(repr, dupes))} more than once"
        fix = "give every column a unique name"
        refuse(f"cannot read the {words.subject}", loc, "source_header", message, fix)
    cells = words.table_cells
    rows = [
        {name: _python(cell, cells) for name, cell in zip(columns, record, strict=True)}
        for record in frame.itertuples(index=False, name=None)
    ]
    return columns, rows, [_python(index, cells) for index in frame.index]
