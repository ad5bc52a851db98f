"""CI lanes: ``workbench ci contracts`` (deterministic, free), ``ci sentinel`` (judge-backed,
what a change affects, under a cap) and ``ci release`` (certification and a summary). Each
reports one :class:`CheckResult` per checked item, as JSON and JUnit XML."""

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
