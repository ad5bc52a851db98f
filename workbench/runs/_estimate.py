"""What a planned run will still cost, from the engine's own estimator, before anything starts.

Units settled in the run directory or held by the cache are free; the rest cost one call
*reservation* each (:class:`~workbench.runs._limits.Estimator`). Retries are not included.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from .._docs import add_field_docs
from .._io import sha256_json
from ..judges import Judge
from ._cache import open_cache
from ._engine import Recorded, WorkItem, _max_attempts, _read_attempts
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
    """Units already settled in the run directory."""
    cached: int
    """Units whose verdict the cache holds."""
    calls: int
    """Units that still need a call."""
    reservation_usd: float
    """Sum of the reservations for those calls (one attempt each)."""
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
    """Price what :func:`run_items` would still call for ``items`` into ``out_dir``."""
    recorded = _read_attempts(Path(out_dir) / RESULTS_FILE)
    state = Recorded().add(items, recorded, _max_attempts(judge), retry_errors=False)
    cache = open_cache(cache_dir, judge.identity.fingerprint())
    estimator = Estimator(judge)
    cached = calls = 0
    reserved = 0.0
    for unit in state.units:
        if cache is not None:
            key = sha256_json(judge.render(unit.item.judge_input, unit.ref))
            if cache.get(key, unit.item.repeat) is not None:
                cached += 1
                continue
        calls += 1
        reserved += estimator.estimate(unit.item.judge_input).reservation
    if cache is not None:
        cache.close()
    return RunEstimate(
        run=run,
        judge=judge.spec.label,
        planned=len(items),
        settled=state.resumed,
        cached=cached,
        calls=calls,
        reservation_usd=reserved,
        recorded_usd=state.spent,
        method=estimator.method,
    )
