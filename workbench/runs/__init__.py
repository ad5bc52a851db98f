"""The run engine: frozen manifests, append-only results, resumable execution."""

from ._engine import RESULTS_FILE, SUMMARY_FILE, RunSummary, run_candidate, run_candidate_sync
from ._manifest import MANIFEST_FILE, ManifestCase, RunManifest, freeze_manifest

__all__ = [
    "MANIFEST_FILE",
    "RESULTS_FILE",
    "SUMMARY_FILE",
    "ManifestCase",
    "RunManifest",
    "RunSummary",
    "freeze_manifest",
    "run_candidate",
    "run_candidate_sync",
]
