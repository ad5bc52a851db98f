"""Controls for single-response judges: positive, negative, boundary, verbosity, terminology,
adversarial, missing- and conflicting-evidence cases whose human label is known by construction.

``load_suite(path)`` reads and checks a suite (every problem at once); ``await
run_controls(judge, suite, out_dir)`` runs the judge through the run engine and returns a
:class:`ControlsReport` whose ``blockers(blocking_roles)`` feed the release gate.
"""

from ._run import (
    ROLE_MESSAGES,
    ControlOutcome,
    ControlsReport,
    RoleSummary,
    SetSummary,
    SuiteRef,
    control_outcomes,
    default_run_dir,
    evaluate_controls,
    format_controls,
    run_controls,
    run_controls_sync,
    work_items,
)
from ._suite import ROLES, ControlSuite, load_suite, suite_release, suite_snapshot

__all__ = [
    "ROLES",
    "ROLE_MESSAGES",
    "ControlOutcome",
    "ControlSuite",
    "ControlsReport",
    "RoleSummary",
    "SetSummary",
    "SuiteRef",
    "default_run_dir",
    "control_outcomes",
    "evaluate_controls",
    "format_controls",
    "load_suite",
    "run_controls",
    "run_controls_sync",
    "suite_release",
    "suite_snapshot",
    "work_items",
]
