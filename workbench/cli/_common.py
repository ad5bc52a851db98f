"""Shared CLI plumbing: user errors become a problem list on stderr and exit code 2."""

from __future__ import annotations

import functools
import json
import math
import sys
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click

from ..errors import WorkbenchError, problem
from ..outcomes import ExitCode

F = TypeVar("F", bound=Callable[..., Any])


class FiniteFloatRange(click.FloatRange):
    """``click.FloatRange`` that also refuses ``nan`` and infinities."""

    name = "finite float range"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        converted = super().convert(value, param, ctx)
        if converted is not None and not math.isfinite(converted):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return converted


BUDGET_USD = FiniteFloatRange(min=0)


def report_problems(exc: WorkbenchError) -> None:
    click.echo(f"error: {exc.summary}", err=True)
    for p in exc.problems:
        click.echo(p.format(), err=True)


def refuse_each(
    summary: str,
    items: Iterable[str],
    code: str,
    message: str,
    fix: str,
    location: str | None = None,
) -> None:
    """Raise one :class:`WorkbenchError` with a problem per item, if any: ``message`` and ``fix``
    format the item (``{0}``), located at ``location`` or else at the item."""
    problems = [
        problem(location or item, code, message.format(item), fix.format(item)) for item in items
    ]
    if problems:
        raise WorkbenchError(summary, problems)


def user_errors(func: F) -> F:
    """Turn :class:`WorkbenchError` into a readable problem list and exit code 2, no traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except WorkbenchError as exc:
            report_problems(exc)
            sys.exit(ExitCode.INVALID_INPUT)

    return wrapper  # type: ignore[return-value]


def echo_json(obj: Any) -> None:
    """Print JSON deterministically (sorted keys, two-space indent)."""
    click.echo(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False))


def project_golds(start: str) -> list[str]:
    """The gold dataset directories of the project holding ``start`` (else the working
    directory's), found as the CI lanes find them; none outside a project."""
    from pathlib import Path

    from ..approval import project_config
    from ..ci import discover

    config = project_config(start) or project_config(Path.cwd())
    if config is None:
        return []
    return [str(g) for g in discover(config.parent).gold]
