"""Notebook widgets. The view models are pure Python; ipywidgets is imported by the views."""

from ._review_widget import (
    ALL_CASES,
    ALL_DISAGREEMENTS,
    ALL_SLICES,
    ANY_TAG,
    ReviewModel,
    ReviewWidget,
    case_html,
)

__all__ = [
    "ALL_CASES",
    "ALL_DISAGREEMENTS",
    "ALL_SLICES",
    "ANY_TAG",
    "ReviewModel",
    "ReviewWidget",
    "case_html",
]
