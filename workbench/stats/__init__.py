"""Interval and agreement statistics (thin wrappers over scipy/statsmodels/scikit-learn/krippendorff)."""

from ._stats import Kappa, Rate, cohen_kappa, fleiss_kappa, krippendorff_alpha_nominal, wilson_rate

__all__ = ["Kappa", "Rate", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha_nominal", "wilson_rate"]
