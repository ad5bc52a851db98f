"""``RunOptions``: how a run is executed, one frozen object for every judge-running command."""

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
    """Concurrent judge calls (None: the command's default); with Ray, over every shard."""
    budget_usd: float | None = None
    """Stop scheduling calls before recorded spend could exceed this (None: no budget)."""
    max_cases: int | None = None
    """Start calls for at most this many case x repeat pairs in this invocation (None: all)."""
    repeats: int = 1
    """Judge each case this many times."""
    cache_dir: str | Path | None | Literal[False] = None
    """Verdict cache directory: None for the default, a path, or False for no cache."""
    retry_errors: bool = False
    """Give cases whose last attempt is a final error another round."""
    progress: bool = True
    executor: Literal["local", "ray"] = "local"
    """``local``: this process; ``ray``: ``shards`` Ray tasks (:mod:`workbench.runs._ray`)."""
    shards: int | None = None
    """Ray executor: the number of shards."""
    calls_per_second: float | None = None
    """Ray executor: start at most this many calls a second over all shards (a token bucket)."""
    ray_cpus_per_shard: float | None = None
    """Ray executor: the CPUs each shard asks Ray for (None: 0.25, so shards waiting on an
    endpoint share a CPU; 1 or more for a CPU-bound judge)."""

    def check(self) -> RunOptions:
        """``self`` when every option is valid; else a WorkbenchError for the first bad one."""
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
            message = "--shards must be at least 1"
            fix = "give the number of Ray tasks to split the run into"
            raise refusal("invalid_shards", "--shards", message, fix)
        if rate is not None and (not math.isfinite(rate) or rate <= 0):
            message = "--calls-per-second must be a positive number"
            fix = "give the calls per second allowed over all shards"
            raise refusal("invalid_rate", "--calls-per-second", message, fix)
        _check_cpus(self.ray_cpus_per_shard)
        return self


def _check_cpus(cpus: float | None) -> None:
    """Ray takes a fraction of one CPU (to 4 decimals) or a whole number of CPUs."""
    if cpus is None:
        return
    whole = math.isfinite(cpus) and cpus >= 1 and cpus == int(cpus)
    if not (whole or (0 < cpus < 1 and round(cpus, 4) == cpus)):
        message = (
            "--ray-cpus-per-shard must be a fraction of one CPU (at most 4 decimals) or a whole"
            " number of CPUs"
        )
        fix = "give e.g. 0.25 for shards that wait on an endpoint, 1 for a CPU-bound judge"
        raise refusal("invalid_cpus_per_shard", "--ray-cpus-per-shard", message, fix)


DEFAULT_OPTIONS = RunOptions()


def refusal(code: str, location: str, message: str, fix: str, summary: str = "") -> WorkbenchError:
    return WorkbenchError(
        summary or message, [Problem(location=location, code=code, message=message, fix=fix)]
    )
