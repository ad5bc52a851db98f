"""What a planned run will still cost, from the engine's own estimator, before anything starts.

For each planned run: the units already settled in its run directory (a verdict, or a final
evaluator error, as the engine resumes them), the units the verdict cache already holds, and,
for the rest, the sum of the engine's call *reservations*
(:class:`~workbench.runs._limits.Estimator`: the rendered prompt's input estimate plus the full
output cap, or the kind's own ``estimate_cost``). One attempt per unit: retries are not included, so
a run that needs retries may still stop at the budget and be marked incomplete.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from .._docs import add_field_docs
from .._io import sha256_json
from ..judges import CaseRef, Judge
from ._cache import VerdictCache, default_cache_dir
from ._engine import WorkItem, _max_attempts, _read_attempts, _state
from ._limits import Estimator
from ._rundir import RESULTS_FILE


class RunEstimate(BaseModel):
    """The estimated remaining cost of one planned run."""

    model_config = ConfigDict(frozen=True, json_schema_extra=add_field_docs)

    run: str
    """Which run (e.g. ``old``, ``new``, ``controls old``)."""
    judge: str
    """``name@version``."""
    planned: int
    """Case x repeat units in the plan."""
    settled: int
    """Units already settled in the run directory (not called again)."""
    cached: int
    """Units whose verdict the cache holds (reused at no cost)."""
    calls: int
    """Units that still need a call."""
    reservation_usd: float
    """Sum of the engine's reservations for those calls (one attempt each)."""
    recorded_usd: float
    """Spend already recorded in the run directory."""
    method: str | None
    """How reservations were priced (``tiktoken:<encoding>``, ``rule`` or ``estimate_cost``)."""

    @property
    def needed_usd(self) -> float:
        """Recorded spend plus the reservations still to come."""
        return self.recorded_usd + self.reservation_usd


def estimate_run(
    run: str,
    judge: Judge,
    items: list[WorkItem],
    out_dir: str | Path,
    *,
    cache_dir: str | Path | None | Literal[False] = None,
) -> RunEstimate:
    """Price what :func:`run_items` would still call for ``items`` into
    ``out_dir``."""
    out = Path(out_dir)
    recorded = _read_attempts(out / RESULTS_FILE) if (out / RESULTS_FILE).exists() else {}
    max_attempts = _max_attempts(judge)
    spent = sum(float(r.get("cost_usd") or 0.0) for rows in recorded.values() for r in rows)
    cache = (
        VerdictCache(
            Path(cache_dir) if cache_dir else default_cache_dir(), judge.identity.fingerprint()
        )
        if cache_dir is not False
        else None
    )
    estimator = Estimator(judge)
    settled = cached = calls = 0
    reserved = 0.0
    for item in items:
        rows = recorded.get((item.case_id, item.repeat))
        if rows and _state(rows, max_attempts) in ("verdict", "final_error"):
            settled += 1
            continue
        ref = CaseRef(item.case_id, item.digest, item.repeat, item.presentation)
        if (
            cache is not None
            and cache.get(sha256_json(judge.render(item.judge_input, ref)), item.repeat) is not None
        ):
            cached += 1
            continue
        calls += 1
        reserved += estimator.estimate(item.judge_input).reservation
    if cache is not None:
        cache.close()
    return RunEstimate(
        run=run,
        judge=judge.spec.label,
        planned=len(items),
        settled=settled,
        cached=cached,
        calls=calls,
        reservation_usd=reserved,
        recorded_usd=spent,
        method=estimator.method,
    )
