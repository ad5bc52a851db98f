"""``RunOptions``: how a run is executed, as one frozen object.

Concurrency, budget, case limit, repeats, verdict cache, retries, progress and the executor are
the same for every command that runs judges (``workbench run``, ``controls``, ``certify``,
``compare``, ``repeatability``, ``drift``, ``ranking run``, ``noise``, the CI lanes). The CLI
builds one from its options (:func:`workbench.cli._run_options.run_options`) and the library
functions take it whole: :func:`~workbench.runs.run_candidate`, :func:`~workbench.runs.run_items`
and the Ray executor (:func:`workbench.runs._ray.run_candidate_ray`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .._args import check_run_arguments
from ..errors import Problem, WorkbenchError


@dataclass(frozen=True)
class RunOptions:
    """How a run executes (never what it judges): one value for every judge-running command."""

    concurrency: int | None = 8
    """Concurrent judge calls (None: the command's own default, e.g. a noise policy's
    max_concurrency). With the Ray executor, the total over every shard."""
    budget_usd: float | None = None
    """Stop scheduling calls before recorded spend could exceed this (None: no budget)."""
    max_cases: int | None = None
    """Start calls for at most this many case x repeat pairs in this invocation (None: all)."""
    repeats: int = 1
    """Judge each case this many times."""
    cache_dir: str | Path | None | Literal[False] = None
    """Verdict cache directory: None for the default, a path, or False to disable the cache."""
    retry_errors: bool = False
    """Give cases whose last attempt is a final evaluator error another round."""
    progress: bool = True
    """Show a progress bar."""
    executor: Literal["local", "ray"] = "local"
    """``local``: this process; ``ray``: ``shards`` Ray tasks (:mod:`workbench.runs._ray`)."""
    shards: int | None = None
    """Ray executor: the number of shards the cases are split into (by case-id hash)."""
    calls_per_second: float | None = None
    """Ray executor: start at most this many calls a second over all shards (a token bucket)."""

    def check(self) -> RunOptions:
        """``self`` when every option a run uses is valid; else the first bad one, raised as a
        :class:`~workbench.errors.WorkbenchError` (what a notebook parameter may get wrong)."""
        check_run_arguments(
            concurrency=self.concurrency,
            budget_usd=self.budget_usd,
            max_cases=self.max_cases,
            repeats=self.repeats,
        )
        if self.executor != "ray":
            return self
        shards, rate = self.shards, self.calls_per_second
        if not isinstance(shards, int) or isinstance(shards, bool) or shards < 1:
            raise refusal(
                "invalid_shards",
                "--shards",
                "--shards must be at least 1",
                "give the number of Ray tasks to split the run into",
            )
        if rate is not None and (not math.isfinite(rate) or rate <= 0):
            raise refusal(
                "invalid_rate",
                "--calls-per-second",
                "--calls-per-second must be a positive number",
                "give the calls per second allowed over all shards",
            )
        return self


DEFAULT_OPTIONS = RunOptions()
"""The options of a run no one configured: 8 calls at once, no budget, the default cache."""


def refusal(code: str, location: str, message: str, fix: str, summary: str = "") -> WorkbenchError:
    """A :class:`~workbench.errors.WorkbenchError` of one problem (the run engine's refusals)."""
    return WorkbenchError(
        summary or message, [Problem(location=location, code=code, message=message, fix=fix)]
    )
