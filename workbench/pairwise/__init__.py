"""Pairwise judges: accuracy in both presentation orders, position consistency and position bias."""

from ._analysis import (
    DENOMINATORS,
    PairwiseReport,
    format_pairwise,
    pairwise_report,
    upstream_figures,
)

__all__ = [
    "DENOMINATORS",
    "PairwiseReport",
    "format_pairwise",
    "pairwise_report",
    "upstream_figures",
]
