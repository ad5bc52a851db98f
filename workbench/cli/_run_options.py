"""One set of click options for every command that runs judges, gathered into :class:`RunOptions`.

``@run_options("concurrency", "budget", "no_cache", "no_progress")`` adds those options, in
that order, and hands the command one ``options: RunOptions`` instead of their values. A
command whose options sit apart in its help adds the others with :func:`run_option` (same
table); every option of the table a command has ends up in its ``options``. Per-command
help text, type or default is given as an override: ``budget={"help": "..."}``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from ..runs import RunOptions
from ._common import BUDGET_USD

OPTIONS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "concurrency": (
        ("--concurrency",),
        {
            "type": click.IntRange(min=1),
            "default": 8,
            "show_default": True,
            "help": "Concurrent judge calls.",
        },
    ),
    "budget": (
        ("--budget-usd",),
        {
            "type": BUDGET_USD,
            "default": None,
            "help": "Stop scheduling calls before recorded spend could exceed this.",
        },
    ),
    "max_cases": (
        ("--max-cases",),
        {
            "type": click.IntRange(min=0),
            "default": None,
            "help": "Start calls for at most this many case x repeat pairs in this invocation.",
        },
    ),
    "repeats": (
        ("--repeat", "repeats"),
        {
            "type": click.IntRange(min=1),
            "default": 1,
            "show_default": True,
            "help": "Judge each case K times (repeatability).",
        },
    ),
    "cache": (
        ("--cache", "cache_dir"),
        {
            "type": click.Path(path_type=str),
            "default": None,
            "help": (
                "Verdict cache directory (default $WORKBENCH_CACHE_DIR or"
                " ~/.cache/judge-workbench)."
            ),
        },
    ),
    "no_cache": (
        ("--no-cache",),
        {"is_flag": True, "help": "Neither read nor write the verdict cache."},
    ),
    "retry_errors": (
        ("--retry-errors",),
        {
            "is_flag": True,
            "help": "Give cases whose last attempt is a final evaluator error another round.",
        },
    ),
    "no_progress": (("--no-progress",), {"is_flag": True, "help": "Hide the progress bar."}),
    "executor": (
        ("--executor",),
        {
            "type": click.Choice(["local", "ray"]),
            "default": "local",
            "show_default": True,
            "help": (
                "local: this process; ray: --shards Ray tasks (extra: pip install"
                " 'judge-workbench[ray]'; RAY_ADDRESS selects an existing cluster)."
            ),
        },
    ),
    "shards": (
        ("--shards",),
        {
            "type": click.IntRange(min=1),
            "default": None,
            "help": (
                "With --executor ray: split the cases into N shards by case-id hash"
                " (OUT/shards/<k>/); a resume gives the same N."
            ),
        },
    ),
    "calls_per_second": (
        ("--calls-per-second",),
        {
            "type": click.FloatRange(min=0, min_open=True),
            "default": None,
            "help": (
                "With --executor ray: start at most this many judge calls a second over all"
                " shards (a token bucket)."
            ),
        },
    ),
}
"""Every run option: its click declaration and default settings (overridable per command)."""

_PARAMS = (
    "concurrency",
    "budget_usd",
    "max_cases",
    "repeats",
    "cache_dir",
    "no_cache",
    "retry_errors",
    "no_progress",
    "executor",
    "shards",
    "calls_per_second",
)
"""The parameter names the options above can give a command."""


class _RunOption(click.Option):
    """A click option declared by :data:`OPTIONS` (its value goes into the command's
    ``options``)."""


def run_option(name: str, **override: Any) -> Callable[[Any], Any]:
    """The click option ``name`` of :data:`OPTIONS`, with ``override`` applied to its settings."""
    decls, settings = OPTIONS[name]
    return click.option(*decls, cls=_RunOption, **{**settings, **override})


def _gather(kwargs: dict[str, Any]) -> RunOptions:
    """Pop the run options' values from a command's arguments into one :class:`RunOptions`.

    Only the options this command declared through :data:`OPTIONS` are taken: a command's own
    option of the same name (``workbench repeatability --repeats K``) stays its own argument.
    """
    declared = {
        p.name for p in click.get_current_context().command.params if isinstance(p, _RunOption)
    }
    found = {name: kwargs.pop(name) for name in _PARAMS if name in kwargs and name in declared}
    no_cache = found.pop("no_cache", False)
    cache_dir = found.pop("cache_dir", None)
    no_progress = found.pop("no_progress", False)
    return RunOptions(**found, cache_dir=False if no_cache else cache_dir, progress=not no_progress)


def fixed_concurrency(options: RunOptions) -> int:
    """``options.concurrency`` of a command whose ``--concurrency`` has a default (never None)."""
    assert options.concurrency is not None, "--concurrency has a default in this command"
    return options.concurrency


def run_options(
    *names: str, **overrides: dict[str, Any]
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add the run options ``names`` (in help order) and pass the command ``options:
    RunOptions``."""
    unknown = [n for n in [*names, *overrides] if n not in OPTIONS]
    if unknown:
        raise ValueError(f"unknown run options: {unknown}")

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        if getattr(fn, "__run_options__", False):
            raise ValueError(
                "a command takes one @run_options; add the options placed apart with run_option()"
            )

        @functools.wraps(fn)
        def command(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, options=_gather(kwargs), **kwargs)

        for name in reversed(names):
            command = run_option(name, **overrides.get(name, {}))(command)
        command.__run_options__ = True  # type: ignore[attr-defined]
        return command

    return decorate
