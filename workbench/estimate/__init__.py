"""Bias-corrected pass rates on unlabelled production traffic (``workbench estimate``).

A certified judge's verdicts on production cases, corrected with the sensitivity and
specificity its certification measured per slice (Rogan-Gladen, delta-method interval), and,
when a small labelled sample of the same traffic exists, prediction-powered inference.
"""

from ._estimate import (
    ESTIMATE_SCHEMA_VERSION,
    UNSTABLE_BELOW,
    CertificationRef,
    CorrectedEstimate,
    PPIEstimate,
    ProductionEstimate,
    SliceEstimate,
    SliceInput,
    estimate_frame,
    estimate_slices,
    format_estimate,
)
from ._methods import PPIResult, RGResult, adjusted_variance, ppi_mean, rogan_gladen
from ._production import estimate_production, read_certification, read_slice_map, read_traffic
from ._simulate import (
    DEMO_SCENARIO,
    SimulatedSlice,
    coverage,
    estimate_chart,
    simulate,
    true_overall,
    truths,
)

__all__ = [
    "DEMO_SCENARIO",
    "ESTIMATE_SCHEMA_VERSION",
    "UNSTABLE_BELOW",
    "CertificationRef",
    "CorrectedEstimate",
    "PPIEstimate",
    "PPIResult",
    "ProductionEstimate",
    "RGResult",
    "SimulatedSlice",
    "SliceEstimate",
    "SliceInput",
    "adjusted_variance",
    "coverage",
    "estimate_chart",
    "estimate_frame",
    "estimate_production",
    "estimate_slices",
    "format_estimate",
    "ppi_mean",
    "read_certification",
    "read_slice_map",
    "read_traffic",
    "rogan_gladen",
    "simulate",
    "true_overall",
    "truths",
]
