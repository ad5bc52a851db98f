"""Human-human agreement: pairwise Cohen's kappa, Fleiss' kappa and Krippendorff's alpha; weighted
kappa, ordinal/interval alpha and Spearman on ordered rubrics."""

from ..stats import DEFAULT_MIN_SHARED
from ._agreement import (
    AgreementBlock,
    AgreementReport,
    PairAgreement,
    agreement_block,
    human_agreement,
)

__all__ = [
    "DEFAULT_MIN_SHARED",
    "AgreementBlock",
    "AgreementReport",
    "PairAgreement",
    "agreement_block",
    "human_agreement",
]
