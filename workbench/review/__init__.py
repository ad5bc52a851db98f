"""Case review: per-case review tables, append-only review notes, gold-correction drafts,
verdict transitions.

Development and calibration only: every entry point refuses held-out cases, whose
case-level detail is restricted to certification.
"""

from ._cases import (
    COLUMNS,
    DEFERRED,
    DISAGREEMENT_CLASSES,
    ERROR_CLASSES,
    ReviewTable,
    review_table,
)
from ._drafts import GoldCorrectionDraft, GoldCorrectionDrafts, drafts_path
from ._notes import CAUSES, ReviewNote, ReviewNotes
from ._transition_reviews import (
    DECISIONS,
    PendingTransition,
    TransitionReview,
    TransitionReviews,
    read_transition_reviews,
    transition_reviews_path_for,
)
from ._transitions import transition_summary, transitions

__all__ = [
    "DECISIONS",
    "PendingTransition",
    "TransitionReview",
    "TransitionReviews",
    "read_transition_reviews",
    "transition_reviews_path_for",
    "CAUSES",
    "COLUMNS",
    "DEFERRED",
    "DISAGREEMENT_CLASSES",
    "ERROR_CLASSES",
    "GoldCorrectionDraft",
    "GoldCorrectionDrafts",
    "ReviewNote",
    "ReviewNotes",
    "ReviewTable",
    "drafts_path",
    "review_table",
    "transition_summary",
    "transitions",
]
