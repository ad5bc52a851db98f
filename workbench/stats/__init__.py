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
from ._calibration import CalibrationBin, ScoreCalibration, score_calibration
from ._grouped import GroupedRate, clustered_rate, grouped_rate
from ._needed import cases_needed
from ._operating import OperatingPoint, operating_curve, slice_operating_point
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
from ._paired import exact_mcnemar, paired_rate_difference
from ._power import bh_qvalues, mcnemar_pairs_needed, rule_out_rate
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
    "CalibrationBin",
    "Correlation",
    "DEFAULT_MIN_SHARED",
    "GroupedRate",
    "INTERVALS",
    "Interval",
    "Kappa",
    "MeanAbsoluteError",
    "OperatingPoint",
    "OrdinalConfusion",
    "Rate",
    "ScoreCalibration",
    "Shortfall",
    "bh_qvalues",
    "bound_plan",
    "cases_needed",
    "cases_to_bound",
    "clustered_rate",
    "cohen_kappa",
    "cohen_kappa_counts",
    "exact_mcnemar",
    "fleiss_kappa_table",
    "grouped_rate",
    "krippendorff_alpha",
    "krippendorff_alpha_nominal_matrix",
    "mcnemar_pairs_needed",
    "mean_absolute_error",
    "more_without_errors",
    "operating_curve",
    "ordinal_confusion",
    "paired_rate_difference",
    "rule_out_rate",
    "scale_values",
    "score_calibration",
    "shared_pairs",
    "shortfall",
    "slice_operating_point",
    "spearman_correlation",
    "too_few_cases_message",
    "upper_bound",
    "weighted_cohen_kappa",
    "wilson_rate",
]
