"""Checks for arguments of the library functions notebooks and scripts call: a value papermill
injected with the wrong type or a mistyped keyword is refused, one problem per argument."""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from .errors import WorkbenchError, problem, refusal


def _refuse(name: str, code: str, message: str, fix: str) -> WorkbenchError:
    return refusal(f"invalid {name}", name, code, message, fix)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _whole(value: Any, name: str, minimum: int, code: str, fix: str, none: bool = False) -> Any:
    if none and value is None:
        return None
    if not _is_int(value) or value < minimum:
        also = ", or None" if none else ""
        message = f"{name} must be a whole number of at least {minimum}{also}, got {value!r}"
        raise _refuse(name, code, message, fix)
    return int(value)


def check_concurrency(value: Any, name: str = "concurrency") -> int:
    """``value`` if it is a whole number of at least 1 (not a bool, float or string)."""
    fix = f"set {name} to the number of calls in flight, e.g. 8 (an int, not a string)"
    return int(_whole(value, name, 1, "invalid_concurrency", fix))


def check_budget(value: Any, name: str = "budget_usd") -> float | None:
    """``None`` or a finite number of US dollars, at least 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
        message = (
            f"{name} must be a finite number of US dollars of at least 0, or None, got {value!r}"
        )
        fix = f"set {name} to e.g. 1.5 (a number, not a string), or None for no budget"
        raise _refuse(name, "invalid_budget", message, fix)
    return float(value)


def check_max_cases(value: Any, name: str = "max_cases") -> int | None:
    """``None`` or a whole number of at least 0 (the CLI's ``--max-cases`` allows 0)."""
    fix = f"set {name} to e.g. 10, or None for no limit"
    result: int | None = _whole(value, name, 0, "invalid_max_cases", fix, none=True)
    return result


def check_repeats(value: Any, name: str = "repeats") -> int:
    """A whole number of at least 1."""
    return int(_whole(value, name, 1, "invalid_repeats", f"set {name} to e.g. 1"))


def check_int(value: Any, name: str, *, minimum: int) -> int:
    """``value`` if it is a whole number of at least ``minimum`` (not a bool, float or string)."""
    fix = f"set {name} to a whole number of at least {minimum} (an int, not a string)"
    return int(_whole(value, name, minimum, "invalid_argument", fix))


def check_run_arguments(
    *, concurrency: Any, budget_usd: Any = None, max_cases: Any = None, repeats: Any = 1
) -> None:
    """Every run-engine argument at once (the first bad one is raised)."""
    check_concurrency(concurrency)
    check_budget(budget_usd)
    check_max_cases(max_cases)
    check_repeats(repeats)


_PAPERMILL_TEXT = (
    "papermill reads `-p NAME 3` as a number; pass text with `-r NAME 3`, or quote it in the"
    " notebook"
)


def closest(name: str, valid: Iterable[str]) -> str | None:
    """The valid name closest to a mistyped ``name`` (None when none is close)."""
    found = difflib.get_close_matches(name, list(valid), n=1, cutoff=0.6)
    return found[0] if found else None


def check_keywords(given: Mapping[str, Any], valid: Iterable[str], where: str) -> None:
    """Refuse, every one at once, keyword arguments ``where`` does not take (``unknown_argument``),
    each with the closest valid name."""
    names = sorted(valid)
    problems = []
    for name in given:
        if name in names:
            continue
        near = closest(name, names)
        message = f"{where} takes no argument {name!r}" + (
            f"; did you mean {near!r}?" if near else ""
        )
        fix = (
            f"write {near}=... (" if near else "use one of ("
        ) + f"{where} takes {', '.join(names)})"
        problems.append(problem(f"{where}({name}=...)", "unknown_argument", message, fix))
    if problems:
        raise WorkbenchError(f"invalid arguments to {where}", problems)


def check_path(value: Any, name: str, example: str) -> Any:
    """``value`` if it is a path (a string or ``os.PathLike``) (``invalid_argument``)."""
    if isinstance(value, str | os.PathLike) and str(value):
        return value
    raise _refuse(
        name,
        "invalid_argument",
        f"{name} must be a path (text), got {value!r} ({type(value).__name__})",
        f'set {name} to a path, e.g. {name}="{example}"',
    )


def _expected(error: Mapping[str, Any]) -> str:
    kind, ctx = str(error["type"]), error.get("ctx") or {}
    if kind == "string_pattern_mismatch":
        return "a name of letters, digits, '_', '.' and '-' (starting with a letter or digit)"
    if kind == "string_type":
        return "text (a string)"
    if "expected" in ctx:
        return f"one of {ctx['expected']}"
    return str(error["msg"]).removeprefix("Input should be ").removeprefix("Value error, ")


def invalid_arguments(exc: ValidationError, where: str) -> WorkbenchError:
    """A pydantic error on the arguments of ``where`` as a refusal: one ``invalid_argument``
    problem per argument, naming it, what it got and what it expects."""
    problems = []
    for error in exc.errors(include_url=False):
        if not error["loc"]:  # a rule across fields: its own message says what is wrong
            rule = str(error["msg"]).removeprefix("Value error, ")
            fix = f"correct the arguments to {where} as the message says"
            problems.append(problem(where, "invalid_argument", rule, fix))
            continue
        name = ".".join(map(str, error["loc"]))
        value = error.get("input")
        expected = _expected(error)
        message = f"{name} must be {expected}, got {value!r} ({type(value).__name__})"
        example = f', e.g. {name}="{value}"; {_PAPERMILL_TEXT}' if _numeric(value) else ""
        fix = f"pass {name} as {expected}{example}"
        problems.append(problem(f"{where}({name}=...)", "invalid_argument", message, fix))
    return WorkbenchError(f"invalid arguments to {where}", problems)


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
