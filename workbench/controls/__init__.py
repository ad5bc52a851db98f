"""Controls for single-response judges: positive, negative, boundary, verbosity, terminology,
adversarial, missing- and conflicting-evidence cases whose human label is known by construction.

``load_suite(path)`` reads and checks a suite (every problem at once); ``await
run_controls(judge, suite, out_dir)`` runs the judge through the run engine and returns a
:class:`ControlsReport` whose ``blockers(blocking_roles)`` feed the release gate.
"""

from ._run import (
    CONTROLS_SCHEMA_VERSION,
    PARTITION,
    REPORT_FILE,
    ROLE_MESSAGES,
    ControlOutcome,
    ControlRow,
    ControlsReport,
    ControlStatus,
    RoleSummary,
    SetSummary,
    SuiteRef,
    control_outcomes,
    evaluate_controls,
    format_controls,
    run_controls,
    run_controls_sync,
    work_items,
)
from ._suite import (
    JUDGE_HIDDEN_FIELDS,
    ROLES,
    SET_MEMBERS,
    SUITE_SCHEMA_VERSION,
    Control,
    ControlChange,
    ControlSuite,
    load_suite,
    suite_release,
    suite_snapshot,
    suite_snapshot_of,
)

__all__ = [
    "CONTROLS_SCHEMA_VERSION",
    "JUDGE_HIDDEN_FIELDS",
    "PARTITION",
    "REPORT_FILE",
    "ROLES",
    "ROLE_MESSAGES",
    "SET_MEMBERS",
    "SUITE_SCHEMA_VERSION",
    "Control",
    "ControlChange",
    "ControlOutcome",
    "ControlRow",
    "ControlStatus",
    "ControlSuite",
    "ControlsReport",
    "RoleSummary",
    "SetSummary",
    "SuiteRef",
    "control_outcomes",
    "evaluate_controls",
    "format_controls",
    "load_suite",
    "run_controls",
    "run_controls_sync",
    "suite_release",
    "suite_snapshot",
    "suite_snapshot_of",
    "work_items",
]
