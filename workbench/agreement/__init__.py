"""Human-human agreement: pairwise Cohen's kappa, Fleiss' kappa and Krippendorff's alpha; weighted
kappa, ordinal/interval alpha and Spearman on ordered rubrics."""

from ..stats import DEFAULT_MIN_SHARED
from ._agreement import (
    AGREEMENT_SCHEMA_VERSION,
    AgreementBlock,
    AgreementReport,
    PairAgreement,
    agreement_block,
    human_agreement,
)

__all__ = [
    "AGREEMENT_SCHEMA_VERSION",
    "DEFAULT_MIN_SHARED",
    "AgreementBlock",
    "AgreementReport",
    "PairAgreement",
    "agreement_block",
    "human_agreement",
]
