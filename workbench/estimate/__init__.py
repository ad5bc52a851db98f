"""Bias-corrected pass rates on unlabelled production traffic (``workbench estimate``): a certified
judge's verdicts corrected per slice (Rogan-Gladen), and prediction-powered inference."""

from ._estimate import (
    CertificationRef,
    CorrectedEstimate,
    PPIEstimate,
    ProductionEstimate,
    RGInterval,
    SliceEstimate,
    SliceInput,
    estimate_frame,
    estimate_slices,
    format_estimate,
)
from ._methods import adjusted_variance, ppi_mean, rogan_gladen
from ._production import estimate_production
from ._simulate import (
    DEMO_SCENARIO,
    coverage,
    estimate_chart,
    simulate,
    truths,
)

__all__ = [
    "RGInterval",
    "DEMO_SCENARIO",
    "CertificationRef",
    "CorrectedEstimate",
    "PPIEstimate",
    "ProductionEstimate",
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
    "rogan_gladen",
    "simulate",
    "truths",
]
