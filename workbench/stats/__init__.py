"""Interval and agreement statistics (thin wrappers over scipy/statsmodels/scikit-learn/krippendorff)."""

from ._needed import cases_needed
from ._ordinal import (
    DEFAULT_MIN_SHARED,
    AlphaLevel,
    Correlation,
    MeanAbsoluteError,
    OrdinalConfusion,
    Weights,
    krippendorff_alpha,
    mean_absolute_error,
    ordinal_confusion,
    scale_values,
    shared_pairs,
    spearman_correlation,
    weighted_cohen_kappa,
)
from ._stats import Kappa, Rate, cohen_kappa, fleiss_kappa, krippendorff_alpha_nominal, wilson_rate

__all__ = [
    "DEFAULT_MIN_SHARED",
    "AlphaLevel",
    "Correlation",
    "Kappa",
    "MeanAbsoluteError",
    "OrdinalConfusion",
    "Rate",
    "Weights",
    "cases_needed",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "krippendorff_alpha_nominal",
    "mean_absolute_error",
    "ordinal_confusion",
    "scale_values",
    "shared_pairs",
    "spearman_correlation",
    "weighted_cohen_kappa",
    "wilson_rate",
]
