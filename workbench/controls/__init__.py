"""Controls for single-response judges: cases whose human label is known by construction
(:func:`load_suite`), run by :func:`run_controls` into a :class:`ControlsReport`."""

from ._run import (
    ROLE_MESSAGES,
    ControlOutcome,
    ControlsReport,
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
