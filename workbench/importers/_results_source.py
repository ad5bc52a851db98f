"""Reading a predictions table for ``workbench import results``: CSV, JSONL, Parquet or a DataFrame.

CSV cells are text exactly as written (an empty cell is empty, nothing else is guessed);
JSONL keeps JSON types; Parquet files and DataFrames are converted value by value (NaN and
None are empty cells, numpy scalars become Python numbers). Every row keeps a reference a
person can find: the line it starts on for CSV and JSONL (the CSV header is line 1), the
index label for Parquet and DataFrames.

Ragas: a Ragas ``@experiment`` that returns a ``MetricResult`` object in its row dict gets it
written to its CSV as ``MetricResult(value=..., reason='...')``; :func:`metric_result` unpacks
such a cell into its value and reason.
"""

from __future__ import annotations

import ast
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
from ..errors import Problem, WorkbenchError

FORMATS: dict[str, str] = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}
"""File extension -> table format."""

MAX_LISTED = 12
"""How many row references a message lists before saying how many more there are."""


@dataclass(frozen=True)
class Table:
    """A predictions table read into memory."""

    location: str
    """Where problems point: the file path, or ``DataFrame``."""
    name: str
    """How summaries name the source: the file name, or ``DataFrame``."""
    format: str
    """csv, jsonl, parquet or dataframe."""
    columns: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]
    refs: tuple[Any, ...]
    """Per row: its line (csv, jsonl) or its index label (parquet, dataframe)."""
    sha256: str
    """sha256 of the file's bytes, or of the canonical JSON of a DataFrame's cells."""

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
        shown = ", ".join(refs[:MAX_LISTED])
        if len(refs) > MAX_LISTED:
            shown += f" and {len(refs) - MAX_LISTED} more"
        return f"{self.unit}{'s' if len(refs) > 1 else ''} {shown}"


def _problem(location: str, code: str, message: str, fix: str) -> Problem:
    return Problem(location=location, code=code, message=message, fix=fix)


def table_format(path: Path, declared: str | None) -> str:
    """The format of ``path``: the declared one, else from the extension."""
    if declared:
        return declared
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise WorkbenchError(
            "unknown predictions format",
            [
                _problem(
                    str(path),
                    "source_format_unknown",
                    f"cannot tell the format of {path.name!r} from its extension",
                    "name the file .csv, .jsonl or .parquet, or set format: csv | jsonl | parquet"
                    " in the mapping (--format)",
                )
            ],
        )
    return fmt


def read_table(path: Path, fmt: str) -> Table:
    """Read a predictions file; raise :class:`WorkbenchError` listing every problem."""
    loc = str(path)
    if path.is_dir() or not path.exists():
        what = "is a directory, not a table" if path.is_dir() else "does not exist"
        raise WorkbenchError(
            "cannot read the predictions",
            [
                _problem(
                    loc,
                    "source_missing",
                    f"the predictions file {what}",
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
        raise WorkbenchError("cannot read the predictions", list(exc.problems)) from None
    digest = hashlib.sha256(data).hexdigest()
    if fmt == "csv":
        columns, rows, refs = _read_csv(data, loc)
    elif fmt == "jsonl":
        columns, rows, refs = _read_jsonl(data, loc)
    else:
        import pandas as pd

        try:
            frame = pd.read_parquet(io.BytesIO(data))
        except Exception as exc:  # noqa: BLE001 - any reader failure is a bad file
            raise WorkbenchError(
                "cannot read the predictions",
                [
                    _problem(
                        loc,
                        "source_malformed",
                        f"not a readable Parquet file ({type(exc).__name__}: {str(exc)[:160]})",
                        "export the table again as Parquet, or as CSV or JSONL",
                    )
                ],
            ) from None
        columns, rows, refs = _read_frame(frame)
    if not rows:
        raise WorkbenchError(
            "no predictions",
            [
                _problem(
                    loc,
                    "source_empty",
                    "the predictions table has no rows",
                    "point at a table with one row per judged case",
                )
            ],
        )
    return Table(
        location=loc,
        name=path.name,
        format=fmt,
        columns=tuple(columns),
        rows=tuple(rows),
        refs=tuple(refs),
        sha256=digest,
    )


def table_from_frame(frame: Any) -> Table:
    """A :class:`Table` over a pandas DataFrame (rows referenced by their index label)."""
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise WorkbenchError(
            "not a DataFrame",
            [
                _problem(
                    "DataFrame",
                    "source_not_dataframe",
                    f"expected a pandas DataFrame, got {type(frame).__name__}",
                    "pass a DataFrame (e.g. EvaluationResult.to_pandas())",
                )
            ],
        )
    columns, rows, refs = _read_frame(frame)
    if not rows:
        raise WorkbenchError(
            "no predictions",
            [
                _problem(
                    "DataFrame",
                    "source_empty",
                    "the DataFrame has no rows",
                    "pass a table with one row per judged case",
                )
            ],
        )
    digest = hashlib.sha256(
        canonical_json(
            {"columns": columns, "rows": [[_jsonable(r.get(c)) for c in columns] for r in rows]}
        ).encode("utf-8")
    ).hexdigest()
    return Table(
        location="DataFrame",
        name="DataFrame",
        format="dataframe",
        columns=tuple(columns),
        rows=tuple(rows),
        refs=tuple(refs),
        sha256=digest,
    )


def is_empty(value: Any) -> bool:
    """None, NaN, an empty or blank string: no value."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, str):
        return not value.strip()
    return False


def as_text(value: Any) -> str:
    """A cell as the text a mapping compares: ``1``, ``1.0``, ``"1"`` and ``"1.00"`` are all ``1``
    (``"0.50"`` and ``0.5`` are ``0.5``); booleans are ``true``/``false``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    text = str(value).strip()
    if text.lower() in ("true", "false"):
        return text.lower()
    if re.fullmatch(r"[+-]?\d+", text):
        return str(int(text))
    if re.fullmatch(r"[+-]?\d+\.\d*", text):
        return as_text(float(text))
    return text


_METRIC_RESULT = re.compile(
    r"^MetricResult\(value=(?P<value>.*?)(?:, reason=(?P<reason>(?:'.*'|\".*\")))?\)$", re.DOTALL
)


def metric_result(value: Any) -> tuple[Any, str | None] | None:
    """``(value, reason)`` of a cell holding a Ragas ``MetricResult`` (object or its CSV text), else None."""
    if type(value).__name__ == "MetricResult" and hasattr(value, "value"):
        reason = getattr(value, "reason", None)
        return value.value, reason if isinstance(reason, str) else None
    if not isinstance(value, str):
        return None
    found = _METRIC_RESULT.match(value.strip())
    if found is None:
        return None
    reason = None
    if found.group("reason") is not None:
        try:
            parsed = ast.literal_eval(found.group("reason"))
        except (ValueError, SyntaxError):
            return None
        reason = parsed if isinstance(parsed, str) else None
    return found.group("value"), reason


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
            "unreadable predictions",
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
        rows.append({str(k): v for k, v in value.items()})
        refs.append(number)
    if problems:
        raise WorkbenchError(
            f"{loc}: malformed JSON Lines ({len(problems)} problem(s))", problems[:50]
        )
    return list(columns), rows, refs


def _python(value: Any) -> Any:
    """A DataFrame cell as a plain Python value (NaN/None/NA -> None)."""
    if value is None:
        return None
    if (
        hasattr(value, "item")
        and not isinstance(value, str | bytes)
        and getattr(value, "ndim", 0) == 0
    ):
        value = value.item()  # numpy scalar
    if isinstance(value, float) and math.isnan(value):
        return None
    try:
        import pandas as pd

        if value is pd.NA or value is pd.NaT:
            return None
    except ImportError:  # pragma: no cover - pandas is a dependency
        pass
    return value


def _read_frame(frame: Any) -> tuple[list[str], list[dict[str, Any]], list[Any]]:
    columns = [str(c) for c in frame.columns]
    if len(set(columns)) != len(columns):
        dupes = sorted({c for c in columns if columns.count(c) > 1})
        raise WorkbenchError(
            "malformed table",
            [
                _problem(
                    "DataFrame",
                    "source_header",
                    f"the table names column(s) {', '.join(map(repr, dupes))} more than once",
                    "give every column a unique name",
                )
            ],
        )
    rows: list[dict[str, Any]] = []
    refs: list[Any] = []
    for index, record in zip(frame.index, frame.itertuples(index=False, name=None), strict=True):
        rows.append({name: _python(cell) for name, cell in zip(columns, record, strict=True)})
        refs.append(_python(index))
    return columns, rows, refs
