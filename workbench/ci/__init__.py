"""CI lanes: ``workbench ci contracts`` (deterministic, free), ``ci sentinel`` (judge-backed,
only what a change affects, under the policy's per-job cap) and ``ci release`` (certification
plus a machine-readable summary; the only lane that touches held-out data).

Each lane reports one :class:`CheckResult` per checked item, as JSON and as JUnit XML
(:func:`junit_xml`). What a lane checks is found by convention under ``data/`` or declared in
``workbench.yaml`` (:func:`discover`, :class:`CiConfig`); reviewed, exact expected failures of
deterministic checks live there too (:class:`ExpectedFailure`).
"""

from ._contracts import (
    DETERMINISTIC_KINDS,
    EXIT_CODES,
    LABEL_KINDS,
    ContractsReport,
    format_contracts,
    run_contracts,
)
from ._expected import apply_expected_failures
from ._git import Changes
from ._junit import CheckResult, junit_xml, write_junit
from ._project import CiConfig, CiPaths, ExpectedFailure, SentinelDefaults, discover
from ._release import (
    OUTCOME_EXIT,
    ReleaseSummary,
    format_release,
    run_release,
    write_release_summary,
)
from ._sentinel import (
    RUNNABLE_KINDS,
    AffectedCandidate,
    LaneRefused,
    LaneRun,
    SentinelLaneReport,
    format_sentinel_lane,
    run_sentinel_lane,
    run_sentinel_lane_sync,
)

__all__ = [
    "DETERMINISTIC_KINDS",
    "LABEL_KINDS",
    "RUNNABLE_KINDS",
    "AffectedCandidate",
    "Changes",
    "CheckResult",
    "CiConfig",
    "CiPaths",
    "ContractsReport",
    "EXIT_CODES",
    "ExpectedFailure",
    "LaneRefused",
    "LaneRun",
    "OUTCOME_EXIT",
    "ReleaseSummary",
    "SentinelDefaults",
    "SentinelLaneReport",
    "apply_expected_failures",
    "discover",
    "format_contracts",
    "format_release",
    "format_sentinel_lane",
    "junit_xml",
    "run_contracts",
    "run_release",
    "run_sentinel_lane",
    "run_sentinel_lane_sync",
    "write_junit",
    "write_release_summary",
]
