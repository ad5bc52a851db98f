"""Notebook widgets. The view models are pure Python; ipywidgets and anywidget are imported
by the views only."""

from ._annotation_widget import AnnotationQueue
from ._model import ALL_CASES, ALL_DISAGREEMENTS, ALL_SLICES, ANY_TAG, ReviewModel
from ._render import case_html, pretty_request
from ._review_widget import ReviewWidget
from ._transition_form import TransitionReviewForm

__all__ = [
    "ALL_CASES",
    "AnnotationQueue",
    "ALL_DISAGREEMENTS",
    "ALL_SLICES",
    "ANY_TAG",
    "ReviewModel",
    "ReviewWidget",
    "TransitionReviewForm",
    "case_html",
    "pretty_request",
]
