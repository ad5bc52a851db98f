"""Notebook widgets. The view models are pure Python; ipywidgets and anywidget are imported
by the views only."""

from ._model import (
    ALL_CASES,
    ALL_DISAGREEMENTS,
    ALL_SLICES,
    ANY_TAG,
    FILTERS,
    ReviewModel,
    count_label,
)
from ._render import KEY_LEGEND, case_html, pretty_request
from ._review_widget import NO_CAUSE, ReviewWidget
from ._transition_form import TransitionReviewForm, transition_review_form

__all__ = [
    "ALL_CASES",
    "ALL_DISAGREEMENTS",
    "ALL_SLICES",
    "ANY_TAG",
    "FILTERS",
    "KEY_LEGEND",
    "NO_CAUSE",
    "ReviewModel",
    "ReviewWidget",
    "TransitionReviewForm",
    "case_html",
    "count_label",
    "pretty_request",
    "transition_review_form",
]
