"""Human-human agreement: how consistently qualified reviewers apply the rubric.

A judge cannot be expected to agree with humans more reliably than humans agree with each
other; this report is the baseline the alignment figures are read against.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..gold import GoldCase, GoldDataset, Partition
from ..stats import Kappa, Rate, cohen_kappa, fleiss_kappa, krippendorff_alpha_nominal, wilson_rate

AGREEMENT_SCHEMA_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)


class PairAgreement(_Model):
    """Agreement of two reviewers over the cases both reviewed."""

    reviewer_a: str
    reviewer_b: str
    n: int
    """Cases both reviewed."""
    raw_agreement: Rate
    """Share of those cases with the same label, with a 95% Wilson interval."""
    cohen_kappa: Kappa
    """Cohen's kappa over the same cases."""


class AgreementBlock(_Model):
    """Agreement statistics over one set of cases."""

    cases: int
    """Cases in the block."""
    reviewers: list[str]
    """Reviewers who reviewed at least one case."""
    pairs: list[PairAgreement]
    """Every reviewer pair with at least one shared case."""
    krippendorff_alpha: Kappa
    """Krippendorff's alpha (nominal) over all reviewers; tolerates missing ratings."""
    fleiss_kappa: Kappa
    """Fleiss' kappa; defined only when every case has the same number of reviews."""
    disagreement: Rate
    """Share of cases whose reviewers did not all give the same label."""


class AgreementReport(_Model):
    """Human agreement overall and per slice (``workbench agreement --json``)."""

    schema_version: int = AGREEMENT_SCHEMA_VERSION
    dataset_sha256: str
    rubric_version: str
    partition: str | None
    """The partition analysed, or None for all."""
    labels: list[str]
    overall: AgreementBlock
    slices: dict[str, AgreementBlock]

    def pairs_frame(self) -> Any:
        """Reviewer pairs of every block (``(all)`` and each slice) as a pandas DataFrame."""
        import pandas as pd

        rows = []
        for name, block in [("(all)", self.overall), *self.slices.items()]:
            for p in block.pairs:
                rows.append(
                    {
                        "slice": name,
                        "reviewer_a": p.reviewer_a,
                        "reviewer_b": p.reviewer_b,
                        "n": p.n,
                        "raw_agreement": p.raw_agreement.rate,
                        "ci95_low": p.raw_agreement.ci95_low,
                        "ci95_high": p.raw_agreement.ci95_high,
                        "cohen_kappa": p.cohen_kappa.value,
                    }
                )
        return pd.DataFrame(rows)

    def summary_frame(self) -> Any:
        """One row per block: cases, disagreement, Krippendorff's alpha and Fleiss' kappa."""
        import pandas as pd

        return pd.DataFrame(
            [
                {
                    "slice": name,
                    "cases": block.cases,
                    "disagreement": block.disagreement.rate,
                    "krippendorff_alpha": block.krippendorff_alpha.value,
                    "fleiss_kappa": block.fleiss_kappa.value,
                }
                for name, block in [("(all)", self.overall), *self.slices.items()]
            ]
        ).set_index("slice")


def agreement_block(cases: list[GoldCase], labels: list[str]) -> AgreementBlock:
    """Compute pairwise, Fleiss and Krippendorff agreement over ``cases``' reviews."""
    units = [{review.reviewer: review.label for review in case.reviews} for case in cases]
    reviewers = sorted({r for unit in units for r in unit})
    pairs: list[PairAgreement] = []
    for a, b in combinations(reviewers, 2):
        shared = [(u[a], u[b]) for u in units if a in u and b in u]
        if not shared:
            continue
        la = [x for x, _ in shared]
        lb = [y for _, y in shared]
        agreed = sum(1 for x, y in shared if x == y)
        pairs.append(
            PairAgreement(
                reviewer_a=a,
                reviewer_b=b,
                n=len(shared),
                raw_agreement=wilson_rate(agreed, len(shared)),
                cohen_kappa=cohen_kappa(la, lb, labels=labels),
            )
        )
    disagreeing = sum(1 for case in cases if case.reviewers_disagree)
    return AgreementBlock(
        cases=len(cases),
        reviewers=reviewers,
        pairs=pairs,
        krippendorff_alpha=krippendorff_alpha_nominal(units, labels),
        fleiss_kappa=fleiss_kappa([[r.label for r in case.reviews] for case in cases], labels),
        disagreement=wilson_rate(disagreeing, len(cases)),
    )


def human_agreement(dataset: GoldDataset, partition: str | Partition | None = None) -> AgreementReport:
    """Human agreement over the active cases of a dataset, overall and per slice."""
    cases = dataset.partition(partition)
    labels = list(dataset.rubric.labels)
    # Every rubric slice is reported, also with no cases, as in the alignment report.
    by_slice: dict[str, list[GoldCase]] = {name: [] for name in dataset.rubric.slices}
    for case in cases:
        by_slice.setdefault(case.slice, []).append(case)
    return AgreementReport(
        dataset_sha256=dataset.sha256,
        rubric_version=dataset.rubric.version,
        partition=Partition(partition).value if partition else None,
        labels=labels,
        overall=agreement_block(cases, labels),
        slices={name: agreement_block(cases_, labels) for name, cases_ in by_slice.items()},
    )
