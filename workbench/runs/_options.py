"""``RunOptions``: how a run is executed, as one frozen object.

Concurrency, budget, case limit, repeats, verdict cache, retries and progress are the same
for every command that runs judges (``workbench run``, ``controls``, ``certify``,
``compare``, ``repeatability``, ``drift``, ``ranking run``, ``noise``, the CI lanes). The
CLI builds one from its options (:func:`workbench.cli._run_options.run_options`); the engine
passes it between its steps instead of seven loose arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal


@dataclass(frozen=True)
class RunOptions:
    """How a run executes (never what it judges): one value for every judge-running command."""

    concurrency: int | None = 8
    """Concurrent judge calls (None: the command's own default, e.g. a noise policy's
    max_concurrency)."""
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

    def engine_kwargs(self) -> dict[str, Any]:
        """The keyword arguments :func:`workbench.runs.run_candidate` takes for these options."""
        return {
            "concurrency": self.concurrency,
            "repeats": self.repeats,
            "budget_usd": self.budget_usd,
            "max_cases": self.max_cases,
            "cache_dir": self.cache_dir,
            "retry_errors": self.retry_errors,
            "progress": self.progress,
        }
