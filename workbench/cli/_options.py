"""The options several commands share, each declared once (:data:`SHARED`).

``@option(name, dest=None, **override)`` adds one to a command, overriding any setting (most
often the help); an entry without a help text means something different in every command, so
:func:`option` refuses it without ``help=``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple, TypeVar

import click

from ..errors import refusal
from ..outcomes import ExitCode
from ._common import echo_json, report_problems

F = TypeVar("F", bound=Callable[..., Any])

PATH = click.Path(path_type=str)

GOLD_HELP = "Gold dataset directory or gold.jsonl."


class Shared(NamedTuple):
    """One shared option: its flags (and parameter name) and its click settings."""

    decls: tuple[str, ...]
    settings: dict[str, Any]


def _shared(*decls: str, path: bool = True, **settings: Any) -> Shared:
    return Shared(decls, {"type": PATH, **settings} if path else settings)


_REQUIRED = {"required": True}
SHARED: dict[str, Shared] = {
    "json": _shared("--json", "as_json", path=False, is_flag=True, help="Print JSON."),
    "gold": _shared("--gold", **_REQUIRED, help=GOLD_HELP),
    "candidate": _shared(
        "--candidate",
        **_REQUIRED,
        help="Candidate spec, e.g. data/candidates/<name>@<version>.yaml.",
    ),
    "policy": _shared(
        "--policy", **_REQUIRED, help="Release policy, data/policies/<name>@<version>.yaml."
    ),
    "results": _shared(
        "--results",
        **_REQUIRED,
        help="Judge results: a JSON Lines file, or a directory of result shards (*.jsonl,"
        " *.parquet), judge-result contract.",
    ),
    "report": _shared("--report", **_REQUIRED, help=None),
    "out": _shared("--out", help=None),
    "reports": _shared(
        "--reports",
        "reports_root",
        default="reports",
        show_default=True,
        help="Reports root directory.",
    ),
    "overrides": _shared("--overrides", help=None),
    "trust": _shared(
        "--trust",
        help="File of trusted Ed25519 public keys, one OpenSSH key per line; the lock must be"
        " signed by one of them.",
    ),
    "sign": _shared(
        "--sign",
        "sign_key",
        help="Sign the lock with this Ed25519 private key (OpenSSH or PEM format).",
    ),
    "notebook": _shared(
        "--notebook",
        help="Custom certification notebook (default: the one shipped in the package). Its sha256"
        " is locked; unless the policy pins it (certification.notebook_sha256) the report is"
        " advisory, never certified.",
    ),
    "partition": _shared(
        "--partition", **_REQUIRED, type=click.Choice(["development", "calibration"]), help=None
    ),
    "rerun_reason": _shared("--rerun-reason", path=False, help=None),
    "seed": _shared("--seed", type=int, default=0, show_default=True, help=None),
    "label_mapping": _shared("--label-mapping", help=None),
    "junit": _shared("--junit", "junit_path", help="Write a JUnit XML report here."),
    "approver": _shared("--approver", path=False, **_REQUIRED, help=None),
    "reason": _shared("--reason", path=False, **_REQUIRED, help=None),
    "judge": _shared("--judge", path=False, help="Only this judge (name@version)."),
    "min_shared": _shared(
        "--min-shared",
        type=click.IntRange(min=1),
        default=10,  # workbench.stats.DEFAULT_MIN_SHARED (tests/test_cli.py checks it)
        show_default=True,
        help="List only reviewer pairs sharing at least this many cases; the others are counted as"
        " left out.",
    ),
    "force": _shared(
        "--force", path=False, is_flag=True, help="Replace a dataset already in --out."
    ),
}


class SharedOption(click.Option):
    """A click option declared by :data:`SHARED`."""


def option(name: str, dest: str | None = None, **override: Any) -> Callable[[F], F]:
    """The shared option ``name``, with ``override`` applied; ``dest`` renames the parameter."""
    decls, settings = SHARED[name]
    settings = {**settings, **override}
    if settings.get("help") is None:
        raise ValueError(f"{decls[0]} means something else in every command: give help=")
    return click.option(*(decls[:1] + (dest,) if dest else decls), cls=SharedOption, **settings)


def options(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    """Several option decorators as one, in help order."""

    def decorate(command: F) -> F:
        for add in reversed(decorators):
            command = add(command)
        return command

    return decorate


def path(*decls: str, help: str, required: bool = False, **more: Any) -> Callable[[F], F]:
    """A one-off path option given as text (``required`` only when asked)."""
    return click.option(*decls, required=required, type=PATH, help=help, **more)


def shown(*decls: str, default: Any, help: str, **more: Any) -> Callable[[F], F]:
    """A one-off option whose default ``--help`` shows."""
    return click.option(*decls, default=default, show_default=True, help=help, **more)


def show(result: Any, as_json: bool, *text: Callable[[Any], str]) -> None:
    """``result`` as JSON (``--json``), else each ``text(result)`` line."""
    if as_json:
        echo_json(result.model_dump(mode="json"))
    else:
        for line in text:
            click.echo(line(result))


@contextmanager
def budget_refusal() -> Iterator[None]:
    """A run whose budget cannot cover it is refused before any call: exit 3, amount printed."""
    from ..migration import BudgetInsufficient

    try:
        yield
    except BudgetInsufficient as exc:
        report_problems(exc)
        sys.exit(ExitCode.INCOMPLETE)


def flag(*decls: str, help: str) -> Callable[[F], F]:
    """A one-off on/off option."""
    return click.option(*decls, is_flag=True, help=help)


def refuse_sign_without_lock(sign_key: str | None, lock: bool, summary: str) -> None:
    """``--sign`` signs a run's lock: refused without ``--lock``."""
    if sign_key and not lock:
        message = "--sign signs the run's lock, but --lock was not given"
        raise refusal(summary, "--sign", "sign_without_lock", message, "add --lock, or drop --sign")
