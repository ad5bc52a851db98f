"""Pairwise judges: accuracy in both presentation orders, position consistency and position bias."""

from ._analysis import (
    DENOMINATORS,
    ORIGINAL_REPEAT,
    PAIRWISE_SCHEMA_VERSION,
    SWAPPED_REPEAT,
    UPSTREAM_KEYS,
    MissingResult,
    OrderStats,
    PairwiseError,
    PairwiseReport,
    PairwiseSlice,
    format_pairwise,
    pairwise_report,
    upstream_figures,
)

__all__ = [
    "DENOMINATORS",
    "ORIGINAL_REPEAT",
    "PAIRWISE_SCHEMA_VERSION",
    "SWAPPED_REPEAT",
    "UPSTREAM_KEYS",
    "MissingResult",
    "OrderStats",
    "PairwiseError",
    "PairwiseReport",
    "PairwiseSlice",
    "format_pairwise",
    "pairwise_report",
    "upstream_figures",
]
