"""Human-human agreement: pairwise Cohen's kappa, Fleiss' kappa and Krippendorff's alpha."""

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
    "AgreementBlock",
    "AgreementReport",
    "PairAgreement",
    "agreement_block",
    "human_agreement",
]
