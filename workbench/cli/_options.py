"""Short forms of the options and endings several commands share: a path option, ``--json``
and showing a result with it, and the exit of a command whose budget refused it or whose
outcome needs review."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from ..outcomes import ExitCode
from ._common import echo_json, report_problems

GOLD_HELP = "Gold dataset directory or gold.jsonl."


def path(*decls: str, help: str, required: bool = False, **more: Any) -> Callable[[Any], Any]:
    """A ``click.Path`` option given as text (``required`` only when asked)."""
    return click.option(
        *decls, required=required, type=click.Path(path_type=str), help=help, **more
    )


def json_flag(help: str) -> Callable[[Any], Any]:
    """``--json`` (the command's ``as_json``)."""
    return click.option("--json", "as_json", is_flag=True, help=help)


def show(result: Any, as_json: bool, *text: Callable[[Any], str]) -> None:
    """``result`` as JSON (``--json``), else each ``text(result)`` line."""
    if as_json:
        echo_json(result.model_dump(mode="json"))
    else:
        for line in text:
            click.echo(line(result))


@contextmanager
def budget_refusal() -> Iterator[None]:
    """A run refused before any call because its budget cannot cover it exits 3 (incomplete),
    with the amount needed printed."""
    from ..migration import BudgetInsufficient

    try:
        yield
    except BudgetInsufficient as exc:
        report_problems(exc)
        sys.exit(ExitCode.INCOMPLETE)


def exit_with(complete: bool, review: bool) -> None:
    """3 when incomplete, else 4 when something needs review, else 0."""
    if not complete:
        sys.exit(ExitCode.INCOMPLETE)
    sys.exit(ExitCode.REVIEW_REQUIRED if review else ExitCode.OK)
