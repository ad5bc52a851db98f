"""Development and calibration phases as library calls (the notebooks only call and display)."""

from ._calibrate import (
    CalibrationSession,
    FrozenThreshold,
    Selection,
    choose_threshold,
    freeze_threshold,
    paired_comparison,
    record_selection,
    threshold_failures,
    threshold_sweep,
)
from ._session import DEMO_LLM_URL_ENV, DevelopSession, Iteration, PhaseSession, serve_demo_llm

__all__ = [
    "DEMO_LLM_URL_ENV",
    "CalibrationSession",
    "FrozenThreshold",
    "DevelopSession",
    "Iteration",
    "PhaseSession",
    "Selection",
    "choose_threshold",
    "freeze_threshold",
    "paired_comparison",
    "record_selection",
    "threshold_failures",
    "serve_demo_llm",
    "threshold_sweep",
]
