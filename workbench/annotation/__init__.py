"""Blinded gold annotation: a queue of unlabelled cases, independent reviews, adjudication."""

from ._queue import (
    BLINDED,
    Annotations,
    Assignment,
    BlindedCase,
    CaseStatus,
    QueuedReview,
    counts,
    parse_span,
    reviewer_progress,
)

__all__ = [
    "BLINDED",
    "Annotations",
    "Assignment",
    "BlindedCase",
    "CaseStatus",
    "QueuedReview",
    "counts",
    "parse_span",
    "reviewer_progress",
]
