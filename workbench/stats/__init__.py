"""Interval and agreement statistics (thin wrappers over scipy/statsmodels/scikit-learn/krippendorff)."""

from ._needed import cases_needed
from ._stats import Kappa, Rate, cohen_kappa, fleiss_kappa, krippendorff_alpha_nominal, wilson_rate

__all__ = ["Kappa", "Rate", "cases_needed", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha_nominal", "wilson_rate"]
