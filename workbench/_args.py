"""Checks for arguments of the library functions that notebooks and scripts call.

A notebook parameter arrives as whatever papermill injected: the string ``"8"`` for a
concurrency, ``0``, or a number for a partition. The library refuses such values with a
:class:`~workbench.errors.WorkbenchError` (one problem, with a fix), never a ``TypeError``
deep inside the run engine or a silently "corrected" value.
"""

from __future__ import annotations

import math
from typing import Any

from .errors import Problem, WorkbenchError


def _refuse(name: str, code: str, message: str, fix: str) -> WorkbenchError:
    return WorkbenchError(
        f"invalid {name}", [Problem(location=name, code=code, message=message, fix=fix)]
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_concurrency(value: Any, name: str = "concurrency") -> int:
    """``value`` if it is a whole number of at least 1 (not a bool, float or string)."""
    if not _is_int(value) or value < 1:
        raise _refuse(
            name,
            "invalid_concurrency",
            f"{name} must be a whole number of at least 1, got {value!r}",
            f"set {name} to the number of calls in flight, e.g. 8 (an int, not a string)",
        )
    return int(value)


def check_budget(value: Any, name: str = "budget_usd") -> float | None:
    """``None`` or a finite number of US dollars, at least 0."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise _refuse(
            name,
            "invalid_budget",
            f"{name} must be a finite number of US dollars of at least 0, or None, got {value!r}",
            f"set {name} to e.g. 1.5 (a number, not a string), or None for no budget",
        )
    return float(value)


def check_max_cases(value: Any, name: str = "max_cases") -> int | None:
    """``None`` or a whole number of at least 0 (the CLI's ``--max-cases`` allows 0)."""
    if value is None:
        return None
    if not _is_int(value) or value < 0:
        raise _refuse(
            name,
            "invalid_max_cases",
            f"{name} must be a whole number of at least 0, or None, got {value!r}",
            f"set {name} to e.g. 10, or None for no limit",
        )
    return int(value)


def check_repeats(value: Any, name: str = "repeats") -> int:
    """A whole number of at least 1."""
    if not _is_int(value) or value < 1:
        raise _refuse(
            name,
            "invalid_repeats",
            f"{name} must be a whole number of at least 1, got {value!r}",
            f"set {name} to e.g. 1",
        )
    return int(value)


def check_int(value: Any, name: str, *, minimum: int) -> int:
    """``value`` if it is a whole number of at least ``minimum`` (not a bool, float or string)."""
    if not _is_int(value) or value < minimum:
        raise _refuse(
            name,
            "invalid_argument",
            f"{name} must be a whole number of at least {minimum}, got {value!r}",
            f"set {name} to a whole number of at least {minimum} (an int, not a string)",
        )
    return int(value)


def check_run_arguments(
    *, concurrency: Any, budget_usd: Any = None, max_cases: Any = None, repeats: Any = 1
) -> None:
    """Every run-engine argument at once (the first bad one is raised)."""
    check_concurrency(concurrency)
    check_budget(budget_usd)
    check_max_cases(max_cases)
    check_repeats(repeats)
