"""The run engine: frozen manifests, append-only results, resumable execution."""

from ._attempts import attempt_problems
from ._cache import VerdictCache, default_cache_dir
from ._engine import (
    RunSummary,
    WorkItem,
    check_shown,
    run_candidate,
    run_candidate_sync,
    run_items,
)
from ._estimate import RunEstimate, estimate_run
from ._manifest import freeze_manifest
from ._options import RunOptions
from ._rundir import INVOCATIONS_FILE, LOCK_FILE, RESULTS_FILE, SUMMARY_FILE, RunDir

__all__ = [
    "INVOCATIONS_FILE",
    "LOCK_FILE",
    "RESULTS_FILE",
    "SUMMARY_FILE",
    "RunDir",
    "RunEstimate",
    "RunOptions",
    "RunSummary",
    "WorkItem",
    "VerdictCache",
    "attempt_problems",
    "check_shown",
    "default_cache_dir",
    "estimate_run",
    "freeze_manifest",
    "run_candidate",
    "run_candidate_sync",
    "run_items",
]
