"""Repeatability of label judges, sentinels and drift.

``workbench repeatability`` (:func:`run_repeatability`) runs one pinned judge K times over a
partition and reports flips, majority shares, boundary crossings and cost per repeat; studies
are logged so certification can check a policy's ``max_flip_rate``
(:func:`latest_study`, :func:`repeatability_blockers`). ``workbench drift`` (:func:`run_drift`)
runs the declared sentinel cases (``sentinels.yaml``) and compares their verdicts with a
baseline, flagging every change in an append-only drift log; the CI sentinel lane runs and
compares them the same way (:func:`run_sentinels`, :func:`sentinel_changes`).
"""

from ._drift import (
    SENTINEL_PARTITION,
    DriftEntry,
    Observation,
    SentinelChange,
    append_drift,
    drift_log_path_for,
    format_drift,
    latest_drift,
    read_drift_log,
    recorded_baseline,
    run_drift,
    run_drift_sync,
    run_sentinels,
    sentinel_changes,
    sentinel_items,
    verify_drift_run,
)
from ._sentinels import (
    SENTINELS_FILE,
    Sentinel,
    SentinelSet,
    load_sentinels,
    sentinels_path_for,
    sentinels_snapshot,
)
from ._study import (
    DEFAULT_PARTITION,
    CaseRepeatability,
    RepeatabilityStudy,
    RepeatCost,
    SliceRepeatability,
    format_study,
    latest_study,
    read_studies,
    repeatability_blockers,
    run_repeatability,
    run_repeatability_sync,
    studies_of,
    studies_path_for,
)

__all__ = [
    "DEFAULT_PARTITION",
    "SENTINELS_FILE",
    "SENTINEL_PARTITION",
    "CaseRepeatability",
    "DriftEntry",
    "Observation",
    "RepeatCost",
    "RepeatabilityStudy",
    "Sentinel",
    "SentinelChange",
    "SentinelSet",
    "SliceRepeatability",
    "append_drift",
    "drift_log_path_for",
    "format_drift",
    "format_study",
    "latest_drift",
    "latest_study",
    "load_sentinels",
    "read_drift_log",
    "read_studies",
    "recorded_baseline",
    "repeatability_blockers",
    "run_drift",
    "run_drift_sync",
    "run_repeatability",
    "run_repeatability_sync",
    "run_sentinels",
    "sentinel_changes",
    "sentinel_items",
    "sentinels_path_for",
    "sentinels_snapshot",
    "studies_of",
    "studies_path_for",
    "verify_drift_run",
]
