"""Reading a source table: CSV, JSONL, Parquet or a pandas DataFrame, as rows of Python values.

CSV cells are read as text exactly as written (no type guessing); JSONL keeps JSON types;
Parquet and DataFrames are converted value by value (NaN and None are empty cells). Every row
keeps a reference a person can find: the line it starts on for CSV and JSONL (the header is
line 1), the DataFrame index label for DataFrames and Parquet.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..._io import (
    MAX_LINE_BYTES_ENV,
    JSONRecordError,
    canonical_json,
    loads_json,
    max_document_bytes,
    read_bounded,
)
from ...errors import Problem, WorkbenchError

FORMATS: dict[str, str] = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}
"""File extension -> source format."""

MAX_LISTED = 20
"""How many row references a message lists before saying how many more there are."""


@dataclass(frozen=True)
class SourceTable:
    """A table read into memory."""

    location: str
    """Where problems point: the file path, or ``DataFrame``."""
    label: str
    """How the card names the source: the file name, or ``pandas DataFrame``."""
    format: str
    """csv, jsonl, parquet or dataframe."""
    columns: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]
    refs: tuple[Any, ...]
    """Per row: its line (csv, jsonl) or its index label (parquet, dataframe)."""
    sha256: str
    """sha256 of the file's bytes, or of the canonical JSON of a DataFrame's rows."""

    @property
    def unit(self) -> str:
        return "line" if self.format in ("csv", "jsonl") else "row"

    def where(self, i: int) -> str:
        """Location of row ``i`` for a problem."""
        if self.unit == "line":
            return f"{self.location}:{self.refs[i]}"
        return f"{self.location} row {self.refs[i]}"

    def describe(self, indices: list[int]) -> str:
        """``lines 3, 5 and 9`` / ``row 7``, listing at most :data:`MAX_LISTED`."""
        refs = [str(self.refs[i]) for i in indices]
        unit = self.unit + ("s" if len(refs) > 1 else "")
        shown = ", ".join(refs[:MAX_LISTED])
        if len(refs) > MAX_LISTED:
            shown += f" and {len(refs) - MAX_LISTED} more"
        return f"{unit} {shown}"


def _problem(location: str, code: str, message: str, fix: str) -> Problem:
    return Problem(location=location, code=code, message=message, fix=fix)


def source_format(path: Path, declared: str | None) -> str:
    """The format of ``path``: the mapping's ``source_format``, else from the extension."""
    if declared:
        return declared
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise WorkbenchError(
            "unknown source format",
            [
                _problem(
                    str(path),
                    "source_format_unknown",
                    f"cannot tell the format of {path.name!r} from its extension",
                    "name the file .csv, .jsonl or .parquet, or set source_format: csv | jsonl |"
                    " parquet in the mapping",
                )
            ],
        )
    return fmt


def read_table(path: Path, fmt: str) -> SourceTable:
    """Read a source file; raise :class:`WorkbenchError` listing every problem."""
    loc = str(path)
    if path.is_dir() or not path.exists():
        what = "is a directory, not a table" if path.is_dir() else "does not exist"
        raise WorkbenchError(
            "cannot read the source",
            [
                _problem(
                    loc,
                    "source_missing",
                    f"the source table {what}",
                    "point at a .csv, .jsonl or .parquet file",
                )
            ],
        )
    try:
        # Bounded: a pipe or /dev/zero is refused; the document limit (256 MiB by default).
        data = read_bounded(
            path,
            limit=max_document_bytes(),
            setting=MAX_LINE_BYTES_ENV,
            fix="point at a .csv, .jsonl or .parquet file",
        )
    except WorkbenchError as exc:
        raise WorkbenchError("cannot read the source", list(exc.problems)) from None
    digest = hashlib.sha256(data).hexdigest()
    if fmt == "csv":
        columns, rows, refs = _read_csv(data, loc)
    elif fmt == "jsonl":
        columns, rows, refs = _read_jsonl(data, loc)
    else:
        import pandas as pd

        try:
            frame = pd.read_parquet(io.BytesIO(data))
        except Exception as exc:  # noqa: BLE001 - any reader failure is a bad source
            raise WorkbenchError(
                "cannot read the source",
                [
                    _problem(
                        loc,
                        "source_malformed",
                        f"not a readable Parquet file ({type(exc).__name__}: {exc})",
                        "export the table again as Parquet, or as CSV or JSONL",
                    )
                ],
            ) from None
        columns, rows, refs = _read_frame(frame, loc)
    if not rows:
        raise WorkbenchError(
            "empty source",
            [
                _problem(
                    loc,
                    "source_empty",
                    "the source table has no rows",
                    "point at a table with one row per case (wide) or per review (long)",
                )
            ],
        )
    return SourceTable(
        location=loc,
        label=path.name,
        format=fmt,
        columns=tuple(columns),
        rows=tuple(rows),
        refs=tuple(refs),
        sha256=digest,
    )


def table_from_frame(frame: Any) -> SourceTable:
    """A :class:`SourceTable` over a pandas DataFrame (rows referenced by index label)."""
    columns, rows, refs = _read_frame(frame, "DataFrame")
    if not rows:
        raise WorkbenchError(
            "empty source",
            [
                _problem(
                    "DataFrame",
                    "source_empty",
                    "the DataFrame has no rows",
                    "pass a table with one row per case (wide) or per review (long)",
                )
            ],
        )
    digest = hashlib.sha256(
        canonical_json(
            {"columns": columns, "rows": [[_jsonable(r.get(c)) for c in columns] for r in rows]}
        ).encode("utf-8")
    ).hexdigest()
    return SourceTable(
        location="DataFrame",
        label="pandas DataFrame",
        format="dataframe",
        columns=tuple(columns),
        rows=tuple(rows),
        refs=tuple(refs),
        sha256=digest,
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


def _read_csv(data: bytes, loc: str) -> tuple[list[str], list[dict[str, Any]], list[int]]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise WorkbenchError(
            "unreadable source",
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
            if not record or all(not cell.strip() for cell in record) and len(record) <= 1:
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
        shown = ", ".join(map(str, lines[:MAX_LISTED])) + (
            f" and {len(lines) - MAX_LISTED} more" if len(lines) > MAX_LISTED else ""
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


def _read_jsonl(data: bytes, loc: str) -> tuple[list[str], list[dict[str, Any]], list[int]]:
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
        rows.append({str(k): _empty_to_none(v) for k, v in value.items()})
        refs.append(number)
    if problems:
        raise WorkbenchError(
            f"{loc}: malformed JSON Lines ({len(problems)} problem(s))", problems[:50]
        )
    return list(columns), rows, refs


def _empty_to_none(value: Any) -> Any:
    if value is None or (isinstance(value, str) and value == ""):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _python(value: Any) -> Any:
    """A pandas/numpy cell as a plain Python value; missing values are None."""
    if value is None:
        return None
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        value = value.tolist()  # numpy scalars and arrays
    if isinstance(value, list | tuple):
        return [_python(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _python(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    try:
        import pandas as pd

        if value is pd.NA or value is pd.NaT:
            return None
        if isinstance(value, pd.Timestamp):
            return value.isoformat()
    except ImportError:  # pragma: no cover - pandas is a dependency
        pass
    if isinstance(value, str) and value == "":
        return None
    return value


def _read_frame(frame: Any, loc: str) -> tuple[list[str], list[dict[str, Any]], list[Any]]:
    names = [str(c) for c in frame.columns]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise WorkbenchError(
            "ambiguous columns",
            [
                _problem(
                    loc,
                    "source_header",
                    f"columns named twice: {', '.join(duplicates)}",
                    "give every column a unique name",
                )
            ],
        )
    rows: list[dict[str, Any]] = []
    refs: list[Any] = []
    columns = list(frame.columns)
    for index, values in zip(frame.index, frame.itertuples(index=False, name=None), strict=True):
        rows.append({str(c): _python(v) for c, v in zip(columns, values, strict=True)})
        refs.append(_python(index))
    return names, rows, refs
