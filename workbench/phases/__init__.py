"""Development and calibration phases as library calls (the notebooks only call and display)."""

from ._calibrate import (
    CalibrationSession,
    Selection,
    choose_threshold,
    freeze_threshold,
    paired_comparison,
    record_selection,
    score_calibration_of,
    threshold_sweep,
)
from ._parameters import check_parameters, unknown_parameters
from ._policy import PolicyNotice, phase_policy
from ._session import DEMO_LLM_URL_ENV, DevelopSession, PhaseSession, serve_demo_llm

__all__ = [
    "DEMO_LLM_URL_ENV",
    "CalibrationSession",
    "DevelopSession",
    "PhaseSession",
    "PolicyNotice",
    "Selection",
    "check_parameters",
    "choose_threshold",
    "freeze_threshold",
    "paired_comparison",
    "phase_policy",
    "record_selection",
    "serve_demo_llm",
    "score_calibration_of",
    "threshold_sweep",
    "unknown_parameters",
]
