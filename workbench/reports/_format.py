"""How numbers read in tables, charts and reports: percentages with intervals, rounded for display.

Display only: the exact values stay in ``gate.json``, ``figures.json`` and the alignment report.
A value that does not exist (a rate over no case, a kappa that is undefined) is shown as
:data:`DASH` with a footnote, never as ``NaN``, ``None`` or ``n/a``.
"""

from __future__ import annotations

import math
from typing import Any

DASH = "\u2013"
"""Shown for a value that does not exist; every table that shows it carries :data:`DASH_NOTE`."""
DASH_NOTE = (
    f"{DASH} : no case enters the denominator, so the value does not exist (it is never read as 0"
    " or as a pass)."
)


def missing(value: Any) -> bool:
    """True for None and NaN (what tables show as a dash)."""
    if value is None:
        return True
    try:
        return isinstance(value, float) and math.isnan(value)
    except TypeError:
        return False


def pct(value: float | None, digits: int = 0) -> str:
    """``0.2833`` -> ``"28%"``; small non-zero values keep a digit (``"0.4%"``); None -> dash."""
    if missing(value):
        return DASH
    assert value is not None
    scaled = 100 * value
    if digits == 0 and 0 < abs(scaled) < 1:
        return f"{scaled:.1f}%"
    return f"{scaled:.{digits}f}%"


def _pct_bare(value: float) -> str:
    scaled = 100 * value
    if 0 < abs(scaled) < 1:
        return f"{scaled:.1f}"
    return f"{scaled:.0f}"


def rate_text(rate: Any) -> str:
    """A :class:`~workbench.stats.Rate` (or its dict) as ``"28% [17–43%]"``; dash without a
    denominator."""
    value, low, high = _get(rate, "rate"), _get(rate, "ci95_low"), _get(rate, "ci95_high")
    if missing(value):
        return DASH
    if missing(low) or missing(high):
        return pct(value)
    return f"{pct(value)} [{_pct_bare(low)}{DASH}{_pct_bare(high)}%]"


def kn(rate: Any) -> str:
    """``"k/n"`` of a rate (``"0/0"`` when no case entered it; a dash when there is no rate at
    all)."""
    k, n = _get(rate, "k"), _get(rate, "n")
    if k is None or n is None:
        return DASH
    return f"{k}/{n}"


def number(value: Any, digits: int = 2) -> str:
    """A number for display: floats rounded (``0.0967741`` -> ``"0.097"`` at 2 significant decimals
    kept
    readable), ints as they are, None/NaN as a dash, other values as text."""
    if missing(value):
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 1:
            return f"{value:.{digits}f}".rstrip("0").rstrip(".")
        text = f"{value:.{digits + 1}f}".rstrip("0").rstrip(".")
        return text if text not in ("0", "-0") else f"{value:.2g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {number(v, digits)}" for k, v in value.items()) or DASH
    if isinstance(value, (list, tuple)):
        return ", ".join(number(v, digits) for v in value) or DASH
    return str(value)


def limit_text(value: float | None) -> str:
    """A rate limit as a percentage (``0.2`` -> ``"20%"``); dash when the policy sets none."""
    return DASH if value is None else pct(value)


def _get(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
