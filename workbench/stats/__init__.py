"""Interval and agreement statistics (thin wrappers over
scipy/statsmodels/scikit-learn/krippendorff)."""

from ._bound import (
    INTERVALS,
    Interval,
    bound_plan,
    cases_to_bound,
    too_few_cases_message,
    upper_bound,
)
from ._needed import cases_needed
from ._ordinal import (
    DEFAULT_MIN_SHARED,
    Correlation,
    MeanAbsoluteError,
    OrdinalConfusion,
    krippendorff_alpha,
    mean_absolute_error,
    ordinal_confusion,
    scale_values,
    shared_pairs,
    spearman_correlation,
    weighted_cohen_kappa,
)
from ._shortfall import Shortfall, more_without_errors, shortfall
from ._stats import (
    Kappa,
    Rate,
    cohen_kappa,
    cohen_kappa_counts,
    fleiss_kappa_table,
    krippendorff_alpha_nominal_matrix,
    wilson_rate,
)

__all__ = [
    "Correlation",
    "DEFAULT_MIN_SHARED",
    "INTERVALS",
    "Interval",
    "Kappa",
    "MeanAbsoluteError",
    "OrdinalConfusion",
    "Rate",
    "Shortfall",
    "bound_plan",
    "cases_needed",
    "cases_to_bound",
    "cohen_kappa",
    "cohen_kappa_counts",
    "fleiss_kappa_table",
    "krippendorff_alpha",
    "krippendorff_alpha_nominal_matrix",
    "mean_absolute_error",
    "more_without_errors",
    "ordinal_confusion",
    "scale_values",
    "shared_pairs",
    "shortfall",
    "spearman_correlation",
    "too_few_cases_message",
    "upper_bound",
    "weighted_cohen_kappa",
    "wilson_rate",
]
