"""Reading a predictions table for ``workbench import results`` (the reading itself is
:mod:`._table_reader`'s), and reading its cells.

Ragas: a Ragas ``@experiment`` that returns a ``MetricResult`` object in its row dict gets it
written to its CSV as ``MetricResult(value=..., reason='...')``; :func:`metric_result` unpacks
such a cell into its value and reason.
"""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path
from typing import Any

from ._registry import refuse
from ._table_reader import FORMATS, TableRead, Words, canonical, read_file, read_frame
from ._table_reader import table_format as _table_format

__all__ = [
    "FORMATS",
    "Table",
    "as_text",
    "is_empty",
    "metric_result",
    "read_table",
    "table_format",
    "table_from_frame",
]

Table = TableRead

WORDS = Words(
    subject="predictions",
    file="the predictions file",
    table="the predictions table",
    empty_title="no predictions",
    rows_fix="one row per judged case",
    format_title="unknown predictions format",
    format_fix=(
        "name the file .csv, .jsonl or .parquet, or set format: csv | jsonl | parquet in the"
        " mapping (--format)"
    ),
    listed=12,
    table_cells=False,
)
"""How ``workbench import results`` names its input."""


def table_format(path: Path, declared: str | None) -> str:
    """The format of ``path``: the declared one, else from the extension."""
    return _table_format(path, declared, WORDS)


def read_table(path: Path, fmt: str) -> Table:
    """Read a predictions file; raise :class:`WorkbenchError` listing every problem."""
    return read_file(path, fmt, WORDS, path.name)


def table_from_frame(frame: Any) -> Table:
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
    return read_frame(frame, WORDS, "DataFrame")


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
    """A cell as the text a mapping compares: :func:`canonical`, numbers written as text too
    (``1``, ``1.0``, ``"1"`` and ``"1.00"`` are all ``1``; ``"0.50"`` and ``0.5`` are ``0.5``)."""
    text = canonical(value)
    if isinstance(value, str) and re.fullmatch(r"[+-]?\d+(\.\d*)?", text):
        return canonical(float(text)) if "." in text else str(int(text))
    return text


_METRIC_RESULT = re.compile(
    r"^MetricResult\(value=(?P<value>.*?)(?:, reason=(?P<reason>(?:'.*'|\".*\")))?\)$", re.DOTALL
)


def metric_result(value: Any) -> tuple[Any, str | None] | None:
    """``(value, reason)`` of a cell holding a Ragas ``MetricResult`` (object or its CSV text),
    else None."""
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
