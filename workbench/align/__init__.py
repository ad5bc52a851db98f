"""Alignment analysis: join judge results to gold, then confusion and per-slice error rates."""

from ._join import ErrorClass, Join, JoinedCase, Outcome, classify, join_results
from ._report import (
    ALIGNMENT_SCHEMA_VERSION,
    ERROR_COLUMN,
    MISSING_COLUMN,
    AlignmentReport,
    CaseError,
    Confusion,
    SliceAlignment,
    align,
    alignment_report,
    cases_frame,
    confusion_table,
    format_report,
    slice_alignment,
)

__all__ = [
    "ALIGNMENT_SCHEMA_VERSION",
    "ERROR_COLUMN",
    "MISSING_COLUMN",
    "AlignmentReport",
    "CaseError",
    "Confusion",
    "ErrorClass",
    "Join",
    "JoinedCase",
    "Outcome",
    "SliceAlignment",
    "align",
    "alignment_report",
    "cases_frame",
    "classify",
    "confusion_table",
    "format_report",
    "join_results",
    "slice_alignment",
]
