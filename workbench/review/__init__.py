"""Case review: per-case review tables, append-only review notes, gold-correction drafts,
verdict transitions.

Development and calibration only: every entry point refuses held-out cases, whose
case-level detail is restricted to certification.
"""

from ._cases import (
    CODED_COLUMNS,
    COLUMNS,
    DEFERRED,
    DISAGREEMENT_CLASSES,
    ERROR_CLASSES,
    ReviewTable,
    review_table,
)
from ._drafts import (
    DRAFT_SCHEMA_VERSION,
    GoldCorrectionDraft,
    GoldCorrectionDrafts,
    drafts_path,
    proposed_record,
)
from ._notes import CAUSES, EXPORT_FORMATS, NOTE_SCHEMA_VERSION, Cause, ReviewNote, ReviewNotes
from ._transition_reviews import (
    DECISIONS,
    PendingTransition,
    TransitionReview,
    TransitionReviews,
    read_transition_reviews,
    transition_reviews_path_for,
)
from ._transitions import CHANGES, TRANSITION_COLUMNS, change_of, transition_summary, transitions

__all__ = [
    "DECISIONS",
    "PendingTransition",
    "TransitionReview",
    "TransitionReviews",
    "read_transition_reviews",
    "transition_reviews_path_for",
    "CAUSES",
    "CHANGES",
    "CODED_COLUMNS",
    "COLUMNS",
    "DEFERRED",
    "DISAGREEMENT_CLASSES",
    "DRAFT_SCHEMA_VERSION",
    "ERROR_CLASSES",
    "EXPORT_FORMATS",
    "GoldCorrectionDraft",
    "GoldCorrectionDrafts",
    "NOTE_SCHEMA_VERSION",
    "TRANSITION_COLUMNS",
    "Cause",
    "ReviewNote",
    "ReviewNotes",
    "ReviewTable",
    "change_of",
    "drafts_path",
    "proposed_record",
    "review_table",
    "transition_summary",
    "transitions",
]
