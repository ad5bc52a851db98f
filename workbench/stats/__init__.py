"""Interval and agreement statistics (thin wrappers over scipy/statsmodels/scikit-learn/krippendorff)."""

from ._bound import (
    INTERVALS,
    BoundPlan,
    Interval,
    bound_plan,
    cases_to_bound,
    too_few_cases_message,
    upper_bound,
)
from ._needed import cases_needed
from ._stats import Kappa, Rate, cohen_kappa, fleiss_kappa, krippendorff_alpha_nominal, wilson_rate

__all__ = [
    "INTERVALS",
    "BoundPlan",
    "Interval",
    "Kappa",
    "Rate",
    "bound_plan",
    "cases_needed",
    "cases_to_bound",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha_nominal",
    "too_few_cases_message",
    "upper_bound",
    "wilson_rate",
]
