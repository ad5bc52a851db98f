"""CSV written for people: a cell a spreadsheet would run as a formula (CSV injection: starting
with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) is prefixed with a single quote, as
OWASP recommends (:func:`spreadsheet_safe`). These files are never read back."""

from __future__ import annotations

from typing import Any

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make a spreadsheet cell a formula."""


def spreadsheet_safe(value: Any) -> Any:
    """``value`` with a ``'`` in front when it is text starting with a formula prefix."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value
