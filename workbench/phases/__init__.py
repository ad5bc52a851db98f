"""Development and calibration phases as library calls (the notebooks only call and display)."""

from ._calibrate import (
    CalibrationSession,
    Selection,
    choose_threshold,
    freeze_threshold,
    paired_comparison,
    record_selection,
    threshold_sweep,
)
from ._session import DEMO_LLM_URL_ENV, DevelopSession, PhaseSession, serve_demo_llm

__all__ = [
    "DEMO_LLM_URL_ENV",
    "CalibrationSession",
    "DevelopSession",
    "PhaseSession",
    "Selection",
    "choose_threshold",
    "freeze_threshold",
    "paired_comparison",
    "record_selection",
    "serve_demo_llm",
    "threshold_sweep",
]
