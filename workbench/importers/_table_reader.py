"""One reader of tables for both importers: CSV, JSONL, Parquet or a pandas DataFrame.

``workbench import results`` (:mod:`._results_source`) and ``workbench import table``
(:mod:`.table._source`) read their input here; each names it in its own words
(:class:`Words`: "the predictions" or "the source") so their problems read as before.

CSV cells are text exactly as written (an empty cell is empty, nothing else is guessed);
JSONL keeps JSON types; Parquet files and DataFrames are converted value by value (NaN and
None are empty cells, numpy scalars become Python numbers). Every row keeps a reference a
person can find: the line it starts on for CSV and JSONL (the CSV header is line 1), the
index label for Parquet and DataFrames.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from .._io import (
    MAX_LINE_BYTES_ENV,
    JSONRecordError,
    canonical_json,
    loads_json,
    max_document_bytes,
    read_bounded,
)
from ..errors import Problem, WorkbenchError

FORMATS: dict[str, str] = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}
"""File extension -> table format."""

FILES_FIX = "point at a .csv, .jsonl or .parquet file"


@dataclass(frozen=True)
class Words:
    """How one importer names its input in problems (and how it reads cells)."""

    subject: str
    """``predictions`` or ``source``: "cannot read the ...", "unreadable ..."."""
    file: str
    """The input file: "the predictions file does not exist"."""
    table: str
    """The input table: "the predictions table has no rows"."""
    empty_title: str
    """The error title of an empty table."""
    rows_fix: str
    """What a table holds, one row per what ("one row per judged case")."""
    format_title: str
    """The error title of an unknown format."""
    format_fix: str
    """How to name the format."""
    max_listed: int
    """How many row references a message lists before saying how many more there are."""
    parquet_detail: int | None
    """How many characters of a Parquet reader's error a message quotes (None: all)."""
    duplicate_title: str
    """The error title of a DataFrame naming a column twice."""
    duplicate_message: Callable[[list[str]], str]
    """Its message, given the duplicated names."""
    duplicate_location: str | None
    """Where that problem points (None: the file, or ``DataFrame``)."""
    table_cells: bool
    """Read cells as ``import table`` does: blank strings and non-finite numbers are empty,
    arrays and mappings are converted inside, timestamps are ISO text."""


@dataclass(frozen=True)
class TableRead:
    """A table read into memory (each importer's table type extends it)."""

    location: str
    """Where problems point: the file path, or ``DataFrame``."""
    format: str
    """csv, jsonl, parquet or dataframe."""
    columns: tuple[str, ...]
    """The column names, in order."""
    rows: tuple[dict[str, Any], ...]
    """One mapping of column to cell per row."""
    refs: tuple[Any, ...]
    """Per row: its line (csv, jsonl) or its index label (parquet, dataframe)."""
    sha256: str
    """sha256 of the file's bytes, or of the canonical JSON of a DataFrame's cells."""

    MAX_LISTED: ClassVar[int] = 12
    """How many row references :meth:`describe` lists."""

    @property
    def unit(self) -> str:
        return "line" if self.format in ("csv", "jsonl") else "row"

    def where(self, i: int) -> str:
        """Location of row ``i`` for a problem."""
        if self.unit == "line":
            return f"{self.location}:{self.refs[i]}"
        return f"{self.location} row {self.refs[i]}"

    def describe(self, indices: list[int]) -> str:
        """``lines 3, 5 and 9`` / ``row 7``, listing at most :attr:`MAX_LISTED`."""
        refs = [str(self.refs[i]) for i in indices]
        shown = ", ".join(refs[: self.MAX_LISTED])
        if len(refs) > self.MAX_LISTED:
            shown += f" and {len(refs) - self.MAX_LISTED} more"
        return f"{self.unit}{'s' if len(refs) > 1 else ''} {shown}"


Parts = tuple[str, str, tuple[str, ...], tuple[dict[str, Any], ...], tuple[Any, ...], str]
"""``(location, format, columns, rows, refs, sha256)``: the fields of a :class:`TableRead`."""


def _problem(location: str, code: str, message: str, fix: str) -> Problem:
    return Problem(location=location, code=code, message=message, fix=fix)


def table_format(path: Path, declared: str | None, words: Words) -> str:
    """The format of ``path``: the declared one, else from the extension."""
    if declared:
        return declared
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise WorkbenchError(
            words.format_title,
            [
                _problem(
                    str(path),
                    "source_format_unknown",
                    f"cannot tell the format of {path.name!r} from its extension",
                    words.format_fix,
                )
            ],
        )
    return fmt


def read_file(path: Path, fmt: str, words: Words) -> Parts:
    """Read a table file; raise :class:`WorkbenchError` listing every problem."""
    loc = str(path)
    title = f"cannot read the {words.subject}"
    if path.is_dir() or not path.exists():
        what = "is a directory, not a table" if path.is_dir() else "does not exist"
        problem = _problem(loc, "source_missing", f"{words.file} {what}", FILES_FIX)
        raise WorkbenchError(title, [problem])
    try:
        # Bounded: a pipe or /dev/zero is refused; the document limit (256 MiB by default).
        data = read_bounded(
            path, limit=max_document_bytes(), setting=MAX_LINE_BYTES_ENV, fix=FILES_FIX
        )
    except WorkbenchError as exc:
        raise WorkbenchError(title, list(exc.problems)) from None
    digest = hashlib.sha256(data).hexdigest()
    if fmt == "csv":
        columns, rows, refs = _read_csv(data, loc, words)
    elif fmt == "jsonl":
        columns, rows, refs = _read_jsonl(data, loc, words)
    else:
        columns, rows, refs = _read_frame(_parquet(data, loc, words), loc, words)
    if not rows:
        raise WorkbenchError(
            words.empty_title,
            [
                _problem(
                    loc,
                    "source_empty",
                    f"{words.table} has no rows",
                    f"point at a table with {words.rows_fix}",
                )
            ],
        )
    return loc, fmt, tuple(columns), tuple(rows), tuple(refs), digest


def _parquet(data: bytes, loc: str, words: Words) -> Any:
    import pandas as pd

    try:
        return pd.read_parquet(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - any reader failure is a bad file
        detail = str(exc)[: words.parquet_detail] if words.parquet_detail else str(exc)
        raise WorkbenchError(
            f"cannot read the {words.subject}",
            [
                _problem(
                    loc,
                    "source_malformed",
                    f"not a readable Parquet file ({type(exc).__name__}: {detail})",
                    "export the table again as Parquet, or as CSV or JSONL",
                )
            ],
        ) from None


def read_frame(frame: Any, words: Words) -> Parts:
    """The parts of a table over a pandas DataFrame (rows referenced by their index label)."""
    columns, rows, refs = _read_frame(frame, "DataFrame", words)
    if not rows:
        raise WorkbenchError(
            words.empty_title,
            [
                _problem(
                    "DataFrame",
                    "source_empty",
                    "the DataFrame has no rows",
                    f"pass a table with {words.rows_fix}",
                )
            ],
        )
    digest = hashlib.sha256(
        canonical_json(
            {"columns": columns, "rows": [[_jsonable(r.get(c)) for c in columns] for r in rows]}
        ).encode("utf-8")
    ).hexdigest()
    return "DataFrame", "dataframe", tuple(columns), tuple(rows), tuple(refs), digest


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
    data: bytes, loc: str, words: Words
) -> tuple[list[str], list[dict[str, Any]], list[int]]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise WorkbenchError(
            f"unreadable {words.subject}",
            [
                _problem(
                    loc,
                    "source_encoding",
                    f"the CSV is not valid UTF-8 (byte {exc.start})",
                    "save the table as UTF-8 CSV",
                )
            ],
        ) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    problems: list[Problem] = []
    header: list[str] | None = None
    rows: list[dict[str, Any]] = []
    refs: list[int] = []
    ragged: dict[int, list[int]] = {}
    previous_end = 0
    try:
        for record in reader:
            start = previous_end + 1
            previous_end = reader.line_num
            if not record or (len(record) <= 1 and not "".join(record).strip()):
                continue
            if header is None:
                header = [cell.strip() for cell in record]
                seen: set[str] = set()
                for i, name in enumerate(header):
                    if not name:
                        problems.append(
                            _problem(
                                f"{loc}:{start}",
                                "source_header",
                                f"column {i + 1} of the header has no name",
                                "name every column in the header row",
                            )
                        )
                    elif name in seen:
                        problems.append(
                            _problem(
                                f"{loc}:{start}",
                                "source_header",
                                f"the header names column {name!r} twice",
                                "give every column a unique name",
                            )
                        )
                    seen.add(name)
                continue
            if len(record) != len(header):
                ragged.setdefault(len(record), []).append(start)
                continue
            rows.append(
                {
                    name: cell if cell != "" else None
                    for name, cell in zip(header, record, strict=True)
                }
            )
            refs.append(start)
    except csv.Error as exc:
        problems.append(
            _problem(
                f"{loc}:{reader.line_num}",
                "source_malformed",
                f"malformed CSV ({exc})",
                "check the quoting of this line",
            )
        )
    for count, lines in sorted(ragged.items()):
        shown = ", ".join(map(str, lines[: words.max_listed])) + (
            f" and {len(lines) - words.max_listed} more" if len(lines) > words.max_listed else ""
        )
        problems.append(
            _problem(
                f"{loc}:{lines[0]}",
                "source_malformed",
                f"{len(lines)} row(s) have {count} field(s) but the header has {len(header or [])}"
                f" (lines {shown})",
                "give every row one field per header column (quote fields holding commas or"
                " newlines)",
            )
        )
    if problems:
        raise WorkbenchError(f"{loc}: malformed CSV ({len(problems)} problem(s))", problems)
    return list(header or []), rows, refs


def _read_jsonl(
    data: bytes, loc: str, words: Words
) -> tuple[list[str], list[dict[str, Any]], list[int]]:
    problems: list[Problem] = []
    columns: dict[str, None] = {}
    rows: list[dict[str, Any]] = []
    refs: list[int] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            value = loads_json(
                raw.decode("utf-8")
            )  # strict: duplicate keys, NaN/Infinity, too deep refused
        except UnicodeDecodeError as exc:
            problems.append(
                _problem(
                    f"{loc}:{number}",
                    "source_encoding",
                    f"the line is not valid UTF-8 (byte {exc.start})",
                    "save the table as UTF-8",
                )
            )
            continue
        except JSONRecordError as exc:
            code = (
                "source_malformed" if exc.code in ("malformed_json", "json_too_deep") else exc.code
            )
            problems.append(
                _problem(
                    f"{loc}:{number}", code, exc.msg, "write one complete JSON object per line"
                )
            )
            continue
        if not isinstance(value, dict):
            problems.append(
                _problem(
                    f"{loc}:{number}",
                    "source_malformed",
                    f"the line holds a JSON {type(value).__name__}, not an object",
                    "write one JSON object (column: value) per line",
                )
            )
            continue
        for key in value:
            columns.setdefault(str(key), None)
        clean = _empty_to_none if words.table_cells else _same
        rows.append({str(k): clean(v) for k, v in value.items()})
        refs.append(number)
    if problems:
        raise WorkbenchError(
            f"{loc}: malformed JSON Lines ({len(problems)} problem(s))", problems[:50]
        )
    return list(columns), rows, refs


def _same(value: Any) -> Any:
    return value


def _empty_to_none(value: Any) -> Any:
    if value is None or (isinstance(value, str) and value == ""):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _python(value: Any, table_cells: bool) -> Any:
    """A DataFrame cell as a plain Python value (NaN/None/NA -> None; see
    :attr:`Words.table_cells`)."""
    if value is None:
        return None
    if table_cells and hasattr(value, "tolist") and not isinstance(value, str | bytes):
        value = value.tolist()  # numpy scalars and arrays
    elif (
        hasattr(value, "item")
        and not isinstance(value, str | bytes)
        and getattr(value, "ndim", 0) == 0
    ):
        value = value.item()  # numpy scalar
    if table_cells and isinstance(value, list | tuple):
        return [_python(v, table_cells) for v in value]
    if table_cells and isinstance(value, dict):
        return {str(k): _python(v, table_cells) for k, v in value.items()}
    if isinstance(value, float) and (
        not math.isfinite(value) if table_cells else math.isnan(value)
    ):
        return None
    try:
        import pandas as pd

        if value is pd.NA or value is pd.NaT:
            return None
        if table_cells and isinstance(value, pd.Timestamp):
            return value.isoformat()
    except ImportError:  # pragma: no cover - pandas is a dependency
        pass
    if table_cells and isinstance(value, str) and value == "":
        return None
    return value


def _read_frame(
    frame: Any, loc: str, words: Words
) -> tuple[list[str], list[dict[str, Any]], list[Any]]:
    columns = [str(c) for c in frame.columns]
    dupes = sorted({c for c in columns if columns.count(c) > 1})
    if dupes:
        raise WorkbenchError(
            words.duplicate_title,
            [
                _problem(
                    words.duplicate_location or loc,
                    "source_header",
                    words.duplicate_message(dupes),
                    "give every column a unique name",
                )
            ],
        )
    rows: list[dict[str, Any]] = []
    refs: list[Any] = []
    cells = words.table_cells
    for index, record in zip(frame.index, frame.itertuples(index=False, name=None), strict=True):
        rows.append(
            {name: _python(cell, cells) for name, cell in zip(columns, record, strict=True)}
        )
        refs.append(_python(index, cells))
    return columns, rows, refs
