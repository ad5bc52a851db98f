"""How numbers read in tables, charts and reports (display only: exact values stay in the JSON
files). A value that does not exist is shown as :data:`DASH`, never ``NaN`` or ``None``."""

from __future__ import annotations

import math
from typing import Any

DASH = "\u2013"
DASH_NOTE = (
    f"{DASH} : no case enters the denominator, so the value does not exist (it is never read as 0"
    " or as a pass)."
)


def attr(obj: Any, name: str, default: Any = None) -> Any:
    """``obj[name]`` of a dict, ``obj.name`` of an object; ``default`` when absent or None."""
    if obj is None:
        return default
    return obj.get(name, default) if isinstance(obj, dict) else getattr(obj, name, default)


def missing(value: Any) -> bool:
    """True for None and NaN (what tables show as a dash)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def pct(value: float | None, digits: int = 0) -> str:
    """``0.2833`` -> ``"28%"``; small non-zero values keep a digit (``"0.4%"``); None -> dash."""
    if missing(value):
        return DASH
    assert value is not None
    scaled = 100 * value
    if digits == 0 and 0 < abs(scaled) < 1:
        return f"{scaled:.1f}%"
    return f"{scaled:.{digits}f}%"


def rate_text(rate: Any) -> str:
    """A :class:`~workbench.stats.Rate` (or its dict) as ``"28% [17–43%]"``."""
    value, low, high = attr(rate, "rate"), attr(rate, "ci95_low"), attr(rate, "ci95_high")
    if missing(value):
        return DASH
    if missing(low) or missing(high):
        return pct(value)
    return f"{pct(value)} [{pct(low).removesuffix('%')}{DASH}{pct(high)}]"


def kn(rate: Any) -> str:
    """``"k/n"`` of a rate (a dash when there is no rate)."""
    k, n = attr(rate, "k"), attr(rate, "n")
    if k is None or n is None:
        return DASH
    return f"{k}/{n}"


def number(value: Any, digits: int = 2) -> str:
    """A value for display: floats rounded (``0.0967741`` -> ``"0.097"``), bools as yes/no,
    None/NaN as a dash, dicts and lists joined, other values as text."""
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
