"""The click options of every command that runs judges, gathered into one :class:`RunOptions`.

``@run_options("concurrency", "budget", ...)`` adds those options in that order and passes the
command ``options: RunOptions``; options placed apart in the help use :func:`run_option`.
Per-command settings are overrides: ``budget={"help": "..."}``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from ..runs import RunOptions
from ._common import BUDGET_USD


def _entry(*decls: str, **settings: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    return decls, {"show_default": True, **settings} if "default" in settings else settings


_RAY = "With --executor ray:"
OPTIONS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "concurrency": _entry(
        "--concurrency", type=click.IntRange(min=1), default=8, help="Concurrent judge calls."
    ),
    "budget": _entry(
        "--budget-usd",
        type=BUDGET_USD,
        help="Stop scheduling calls before recorded spend could exceed this.",
    ),
    "max_cases": _entry(
        "--max-cases",
        type=click.IntRange(min=0),
        help="Start calls for at most this many case x repeat pairs in this invocation.",
    ),
    "repeats": _entry(
        "--repeat",
        "repeats",
        type=click.IntRange(min=1),
        default=1,
        help="Judge each case K times (repeatability).",
    ),
    "cache": _entry(
        "--cache",
        "cache_dir",
        type=click.Path(path_type=str),
        help="Verdict cache directory (default $WORKBENCH_CACHE_DIR or ~/.cache/judge-workbench).",
    ),
    "no_cache": _entry(
        "--no-cache", is_flag=True, help="Neither read nor write the verdict cache."
    ),
    "retry_errors": _entry(
        "--retry-errors",
        is_flag=True,
        help="Give cases whose last attempt is a final evaluator error another round.",
    ),
    "no_progress": _entry("--no-progress", is_flag=True, help="Hide the progress bar."),
    "executor": _entry(
        "--executor",
        type=click.Choice(["local", "ray"]),
        default="local",
        help="local: this process; ray: --shards Ray tasks (judge-workbench[ray]).",
    ),
    "shards": _entry(
        "--shards",
        type=click.IntRange(min=1),
        help=f"{_RAY} split the cases into N shards (resume with the same N).",
    ),
    "calls_per_second": _entry(
        "--calls-per-second",
        type=click.FloatRange(min=0, min_open=True),
        help=f"{_RAY} at most this many judge calls a second over all shards.",
    ),
    "ray_cpus_per_shard": _entry(
        "--ray-cpus-per-shard",
        type=click.FloatRange(min=0, min_open=True),
        help=f"{_RAY} CPUs each shard asks Ray for (default 0.25; 1 for a CPU-bound judge).",
    ),
}


class _RunOption(click.Option):
    """A click option declared by :data:`OPTIONS`."""


def run_option(name: str, **override: Any) -> Callable[[Any], Any]:
    """The click option ``name`` of :data:`OPTIONS`, with ``override`` applied."""
    decls, settings = OPTIONS[name]
    return click.option(*decls, cls=_RunOption, **{**settings, **override})


def _gather(kwargs: dict[str, Any]) -> RunOptions:
    """Pop the values of the options declared through :data:`OPTIONS` (not a command's own
    option of the same name) into one :class:`RunOptions`."""
    params = click.get_current_context().command.params
    found = {p.name: kwargs.pop(p.name) for p in params if isinstance(p, _RunOption) and p.name}
    no_cache = found.pop("no_cache", False)
    cache_dir = found.pop("cache_dir", None)
    no_progress = found.pop("no_progress", False)
    return RunOptions(**found, cache_dir=False if no_cache else cache_dir, progress=not no_progress)


def fixed_concurrency(options: RunOptions) -> int:
    assert options.concurrency is not None, "--concurrency has a default in this command"
    return options.concurrency


def run_options(
    *names: str, **overrides: dict[str, Any]
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add the run options ``names`` and pass the command ``options: RunOptions``."""
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


ENGINE = ("concurrency", "budget_usd", "cache_dir", "progress")


def engine(options: RunOptions, names: tuple[str, ...] = ENGINE) -> dict[str, Any]:
    """The run engine's keyword arguments ``names`` taken from ``options``."""
    return {name: getattr(options, name) for name in names}
