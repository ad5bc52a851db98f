"""CI lanes: ``workbench ci contracts`` (deterministic, free), ``ci sentinel`` (judge-backed,
only what a change affects, under the policy's per-job cap) and ``ci release`` (certification
plus a machine-readable summary; the only lane that touches held-out data).

Each lane reports one :class:`CheckResult` per checked item, as JSON and as JUnit XML
(:func:`junit_xml`). What a lane checks is found by convention under ``data/`` or declared in
``workbench.yaml`` (:func:`discover`, :class:`CiConfig`); reviewed, exact expected failures of
deterministic checks live there too (:class:`ExpectedFailure`).
"""

from ._contracts import (
    CONTRACTS_SCHEMA_VERSION,
    DETERMINISTIC_KINDS,
    EXIT_CODES,
    LABEL_KINDS,
    ContractsReport,
    lane_outcome,
    run_contracts,
)
from ._expected import EXPECTABLE_GROUPS, apply_expected_failures
from ._git import Changes, changed_since
from ._junit import CheckResult, junit_xml, write_junit
from ._project import (
    CONFIG_FILE,
    DEFAULT_GLOBS,
    CiConfig,
    CiPaths,
    ExpectedFailure,
    Inventory,
    SentinelDefaults,
    discover,
    load_ci_config,
)
from ._release import (
    OUTCOME_EXIT,
    RELEASE_SCHEMA_VERSION,
    ReleaseSummary,
    format_release,
    run_release,
    write_release_summary,
)
from ._sentinel import (
    RUNNABLE_KINDS,
    SENTINEL_LANE_SCHEMA_VERSION,
    AffectedCandidate,
    LaneRefused,
    LaneRun,
    SentinelLaneReport,
    format_sentinel_lane,
    resolve_cap,
    run_sentinel_lane,
    run_sentinel_lane_sync,
)

__all__ = [
    "AffectedCandidate",
    "CONFIG_FILE",
    "CONTRACTS_SCHEMA_VERSION",
    "Changes",
    "CheckResult",
    "CiConfig",
    "CiPaths",
    "ContractsReport",
    "DEFAULT_GLOBS",
    "DETERMINISTIC_KINDS",
    "EXIT_CODES",
    "EXPECTABLE_GROUPS",
    "ExpectedFailure",
    "Inventory",
    "LABEL_KINDS",
    "LaneRefused",
    "LaneRun",
    "OUTCOME_EXIT",
    "RELEASE_SCHEMA_VERSION",
    "RUNNABLE_KINDS",
    "ReleaseSummary",
    "SENTINEL_LANE_SCHEMA_VERSION",
    "SentinelDefaults",
    "SentinelLaneReport",
    "apply_expected_failures",
    "changed_since",
    "discover",
    "format_release",
    "format_sentinel_lane",
    "junit_xml",
    "lane_outcome",
    "load_ci_config",
    "resolve_cap",
    "run_contracts",
    "run_release",
    "run_sentinel_lane",
    "run_sentinel_lane_sync",
    "write_junit",
    "write_release_summary",
]
