"""The run engine: frozen manifests, append-only results, resumable execution."""

from ._cache import VerdictCache, default_cache_dir
from ._engine import (
    INVOCATIONS_FILE,
    LOCK_FILE,
    RESULTS_FILE,
    SUMMARY_FILE,
    RunSummary,
    WorkItem,
    run_candidate,
    run_candidate_sync,
    run_items,
)
from ._manifest import (
    MANIFEST_FILE,
    ManifestCase,
    ManifestSampling,
    ManifestUnit,
    RunManifest,
    freeze_manifest,
)

__all__ = [
    "INVOCATIONS_FILE",
    "LOCK_FILE",
    "MANIFEST_FILE",
    "RESULTS_FILE",
    "SUMMARY_FILE",
    "ManifestCase",
    "ManifestUnit",
    "ManifestSampling",
    "RunManifest",
    "RunSummary",
    "WorkItem",
    "VerdictCache",
    "default_cache_dir",
    "freeze_manifest",
    "run_candidate",
    "run_candidate_sync",
    "run_items",
]
