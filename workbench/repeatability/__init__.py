"""Repeatability of label judges, sentinels and drift.

``workbench repeatability`` (:func:`run_repeatability`) runs one pinned judge K times over a
partition and reports flips, majority shares, boundary crossings and cost per repeat; studies
are logged so certification can check a policy's ``max_flip_rate``
(:func:`latest_study`, :func:`repeatability_blockers`). ``workbench drift`` (:func:`run_drift`)
runs the declared sentinel cases (``sentinels.yaml``) and compares their verdicts with a
baseline, flagging every change in an append-only drift log.
"""

from ._drift import (
    DRIFT_LOG_FILE,
    DRIFT_SCHEMA_VERSION,
    SENTINEL_REPORT_DIR,
    DriftEntry,
    Observation,
    SentinelChange,
    drift_log_path_for,
    format_drift,
    latest_drift,
    read_drift_log,
    run_drift,
    run_drift_sync,
)
from ._sentinels import (
    SENTINELS_FILE,
    LoadedSentinels,
    Sentinel,
    SentinelSet,
    load_sentinels,
    sentinels_path_for,
    sentinels_snapshot,
    sentinels_snapshot_of,
)
from ._study import (
    DEFAULT_MIN_REPEATS,
    DEFAULT_PARTITION,
    STUDIES_FILE,
    STUDY_SCHEMA_VERSION,
    CaseRepeatability,
    RepeatabilityStudy,
    RepeatCost,
    SliceRepeatability,
    format_study,
    latest_study,
    read_studies,
    record_study,
    repeatability_blockers,
    run_repeatability,
    run_repeatability_sync,
    studies_of,
    studies_path_for,
    study_from_run,
)

__all__ = [
    "sentinels_snapshot",
    "sentinels_snapshot_of",
    "DEFAULT_MIN_REPEATS",
    "DEFAULT_PARTITION",
    "DRIFT_LOG_FILE",
    "DRIFT_SCHEMA_VERSION",
    "SENTINELS_FILE",
    "SENTINEL_REPORT_DIR",
    "STUDIES_FILE",
    "STUDY_SCHEMA_VERSION",
    "CaseRepeatability",
    "DriftEntry",
    "LoadedSentinels",
    "Observation",
    "RepeatCost",
    "RepeatabilityStudy",
    "Sentinel",
    "SentinelChange",
    "SentinelSet",
    "SliceRepeatability",
    "drift_log_path_for",
    "format_drift",
    "format_study",
    "latest_drift",
    "latest_study",
    "load_sentinels",
    "read_drift_log",
    "read_studies",
    "record_study",
    "repeatability_blockers",
    "run_drift",
    "run_drift_sync",
    "run_repeatability",
    "run_repeatability_sync",
    "sentinels_path_for",
    "studies_of",
    "studies_path_for",
    "study_from_run",
]
