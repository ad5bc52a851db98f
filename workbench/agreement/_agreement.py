"""Human-human agreement: how consistently qualified reviewers apply the rubric.

A judge cannot be expected to agree with humans more reliably than humans agree with each
other; this report is the baseline the alignment figures are read against.

Nominal figures (raw agreement, Cohen's kappa, Krippendorff's alpha, Fleiss' kappa) are always
reported. On an ordinal or numeric rubric, the report adds linear and quadratic weighted
Cohen's kappa and Spearman's rho per reviewer pair, and Krippendorff's alpha at the ordinal and
interval levels, computed over the scale labels only (abstain labels are off the scale).

Crowd scale: reviewer pairs are listed only when they share at least ``min_shared`` cases
(default :data:`DEFAULT_MIN_SHARED`); every block says how many pairs were left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._record import LooseRecord as _Model
from ..gold import GoldCase, GoldDataset, Partition
from ..gold._card import DISAGREEMENT_BASIS
from ..stats import (
    DEFAULT_MIN_SHARED,
    Correlation,
    Kappa,
    Rate,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha,
    krippendorff_alpha_nominal,
    shared_pairs,
    spearman_correlation,
    weighted_cohen_kappa,
    wilson_rate,
)

AGREEMENT_SCHEMA_VERSION = 2
"""Version of :class:`AgreementReport`'s JSON form (2: scale, ordinal figures, ``min_shared``)."""


class PairAgreement(_Model):
    """Agreement of two reviewers over the cases both reviewed."""

    reviewer_a: str
    reviewer_b: str
    n: int
    """Cases both reviewed."""
    raw_agreement: Rate
    """Share of those cases with the same label, with a 95% Wilson interval."""
    cohen_kappa: Kappa
    """Cohen's kappa over the same cases, nominal (unweighted: every disagreement counts the
    same)."""
    weighted_kappa_linear: Kappa | None = None
    """Ordered rubrics: linear weighted Cohen's kappa over the shared cases both put on the
    scale."""
    weighted_kappa_quadratic: Kappa | None = None
    """Ordered rubrics: quadratic weighted Cohen's kappa over the same cases."""
    spearman: Correlation | None = None
    """Ordered rubrics: Spearman's rank correlation over the same cases."""


class AgreementBlock(_Model):
    """Agreement statistics over one set of cases."""

    cases: int
    """Cases in the block."""
    reviewers: list[str]
    """Reviewers who reviewed at least one case."""
    pairs: list[PairAgreement]
    """Every reviewer pair sharing at least ``min_shared`` cases."""
    min_shared: int = 1
    """Pairs sharing fewer cases than this are left out of ``pairs``."""
    pairs_left_out: int = 0
    """Reviewer pairs that share at least one case but fewer than ``min_shared``: not in
    ``pairs``."""
    krippendorff_alpha: Kappa
    """Krippendorff's alpha (nominal) over all reviewers; tolerates missing ratings."""
    krippendorff_alpha_ordinal: Kappa | None = None
    """Ordered rubrics: Krippendorff's alpha at the ordinal level, over scale labels (abstain labels
    left out)."""
    krippendorff_alpha_interval: Kappa | None = None
    """Ordered rubrics: Krippendorff's alpha at the interval level, using the report's
    ``scale_values``."""
    fleiss_kappa: Kappa
    """Fleiss' kappa (nominal); defined only when every case has the same number of reviews."""
    disagreement: Rate
    """Share of cases whose reviewers did not all give the same label, among cases with two or more
    reviews: the same cases as the nominal alpha (``disagreement.n == krippendorff_alpha.n``)."""


class AgreementReport(_Model):
    """Human agreement overall and per slice (``workbench agreement --json``)."""

    schema_version: int = AGREEMENT_SCHEMA_VERSION
    dataset_sha256: str
    rubric_version: str
    partition: str | None
    """The partition analysed, or None for all."""
    labels: list[str]
    """The rubric's label vocabulary."""
    scale: str = "nominal"
    """The rubric's scale: ``nominal``, ``ordinal`` or ``numeric``."""
    scale_labels: list[str] | None = None
    """Ordered rubrics: the scale labels in scale order (abstain labels excluded)."""
    scale_values: dict[str, float] | None = None
    """Ordered rubrics: the value of each scale label used by interval alpha and Spearman (ranks
    1..k on an ordinal scale)."""
    min_shared: int = DEFAULT_MIN_SHARED
    """Pair tables list reviewer pairs sharing at least this many cases."""
    disagreement_basis: str = DISAGREEMENT_BASIS
    """Which cases ``disagreement`` is computed over."""
    overall: AgreementBlock
    slices: dict[str, AgreementBlock]

    def pairs_frame(self) -> Any:
        """Reviewer pairs of every block (``(all)`` and each slice) as a pandas DataFrame.

        Only pairs sharing at least ``min_shared`` cases; ordered rubrics add weighted kappa and
        Spearman columns.
        """
        import pandas as pd

        rows = []
        for name, block in [("(all)", self.overall), *self.slices.items()]:
            for p in block.pairs:
                row: dict[str, Any] = {
                    "slice": name,
                    "reviewer_a": p.reviewer_a,
                    "reviewer_b": p.reviewer_b,
                    "n": p.n,
                    "raw_agreement": p.raw_agreement.rate,
                    "ci95_low": p.raw_agreement.ci95_low,
                    "ci95_high": p.raw_agreement.ci95_high,
                    "cohen_kappa_nominal": p.cohen_kappa.value,
                }
                if self.scale_labels is not None:
                    row["weighted_kappa_linear"] = (
                        p.weighted_kappa_linear.value if p.weighted_kappa_linear else None
                    )
                    row["weighted_kappa_quadratic"] = (
                        p.weighted_kappa_quadratic.value if p.weighted_kappa_quadratic else None
                    )
                    row["spearman"] = p.spearman.value if p.spearman else None
                rows.append(row)
        return pd.DataFrame(rows)

    def summary_frame(self) -> Any:
        """One row per block: cases, reviewers, pairs shown and left out, disagreement, alphas and
        Fleiss' kappa."""
        import pandas as pd

        rows = []
        for name, block in [("(all)", self.overall), *self.slices.items()]:
            row: dict[str, Any] = {
                "slice": name,
                "cases": block.cases,
                "reviewers": len(block.reviewers),
                "pairs": len(block.pairs),
                "pairs_left_out": block.pairs_left_out,
                "disagreement": block.disagreement.rate,
                "krippendorff_alpha_nominal": block.krippendorff_alpha.value,
                "fleiss_kappa": block.fleiss_kappa.value,
            }
            if self.scale_labels is not None:
                row["krippendorff_alpha_ordinal"] = (
                    block.krippendorff_alpha_ordinal.value
                    if block.krippendorff_alpha_ordinal
                    else None
                )
                row["krippendorff_alpha_interval"] = (
                    block.krippendorff_alpha_interval.value
                    if block.krippendorff_alpha_interval
                    else None
                )
            rows.append(row)
        return pd.DataFrame(rows).set_index("slice")


def agreement_block(
    cases: list[GoldCase],
    labels: list[str],
    *,
    scale_labels: Sequence[str] | None = None,
    scale_values: Mapping[str, float] | None = None,
    min_shared: int = 1,
) -> AgreementBlock:
    """Compute pairwise, Fleiss and Krippendorff agreement over ``cases``' reviews.

    ``scale_labels`` (in scale order) turns on the ordered figures, computed over ratings on
    the scale; ``scale_values`` are the values interval alpha uses (default ranks 1..k).
    Pairs sharing fewer than ``min_shared`` cases are counted in ``pairs_left_out``, not listed.
    """
    if min_shared < 1:
        raise ValueError(f"min_shared must be at least 1, got {min_shared}")
    units = [{review.reviewer: review.label for review in case.reviews} for case in cases]
    reviewers = sorted({r for unit in units for r in unit})
    on_scale = set(scale_labels) if scale_labels is not None else set()
    pairs: list[PairAgreement] = []
    left_out = 0
    for (a, b), shared in shared_pairs(units).items():
        if len(shared) < min_shared:
            left_out += 1
            continue
        la = [x for x, _ in shared]
        lb = [y for _, y in shared]
        agreed = sum(1 for x, y in shared if x == y)
        ordered: dict[str, Any] = {}
        if scale_labels is not None:
            sa = [x for x, y in shared if x in on_scale and y in on_scale]
            sb = [y for x, y in shared if x in on_scale and y in on_scale]
            ordered = {
                "weighted_kappa_linear": weighted_cohen_kappa(
                    sa, sb, scale_labels, "linear", scale_values
                ),
                "weighted_kappa_quadratic": weighted_cohen_kappa(
                    sa, sb, scale_labels, "quadratic", scale_values
                ),
                "spearman": spearman_correlation(sa, sb, scale_labels, scale_values),
            }
        pairs.append(
            PairAgreement(
                reviewer_a=a,
                reviewer_b=b,
                n=len(shared),
                raw_agreement=wilson_rate(agreed, len(shared)),
                cohen_kappa=cohen_kappa(la, lb, labels=labels),
                **ordered,
            )
        )
    pairable = [case for case in cases if len(case.reviews) >= 2]
    disagreeing = sum(1 for case in pairable if case.reviewers_disagree)
    alphas: dict[str, Any] = {}
    if scale_labels is not None:
        scale_units = [
            {r: label for r, label in unit.items() if label in on_scale} for unit in units
        ]
        alphas = {
            "krippendorff_alpha_ordinal": krippendorff_alpha(scale_units, scale_labels, "ordinal"),
            "krippendorff_alpha_interval": krippendorff_alpha(
                scale_units, scale_labels, "interval", scale_values
            ),
        }
    return AgreementBlock(
        cases=len(cases),
        reviewers=reviewers,
        pairs=pairs,
        min_shared=min_shared,
        pairs_left_out=left_out,
        krippendorff_alpha=krippendorff_alpha_nominal(units, labels),
        fleiss_kappa=fleiss_kappa([[r.label for r in case.reviews] for case in cases], labels),
        disagreement=wilson_rate(disagreeing, len(pairable)),
        **alphas,
    )


def human_agreement(
    dataset: GoldDataset,
    partition: str | Partition | None = None,
    *,
    min_shared: int = DEFAULT_MIN_SHARED,
) -> AgreementReport:
    """Human agreement over the active cases of a dataset, overall and per slice.

    Ordinal and numeric rubrics add the ordered figures. Reviewer pairs sharing fewer than
    ``min_shared`` cases are left out of the pair lists and counted in ``pairs_left_out``.
    """
    cases = dataset.partition(partition)
    rubric = dataset.rubric
    labels = list(rubric.labels)
    scale_labels = rubric.scale_labels if rubric.ordered else None
    values = rubric.scale_values
    # Every rubric slice is reported, also with no cases, as in the alignment report.
    by_slice: dict[str, list[GoldCase]] = {name: [] for name in rubric.slices}
    for case in cases:
        by_slice.setdefault(case.slice, []).append(case)
    options: dict[str, Any] = {
        "scale_labels": scale_labels,
        "scale_values": values,
        "min_shared": min_shared,
    }
    return AgreementReport(
        dataset_sha256=dataset.sha256,
        rubric_version=rubric.version,
        partition=Partition(partition).value if partition else None,
        labels=labels,
        scale=rubric.scale.value,
        scale_labels=scale_labels,
        scale_values=values,
        min_shared=min_shared,
        overall=agreement_block(cases, labels, **options),
        slices={
            name: agreement_block(cases_, labels, **options) for name, cases_ in by_slice.items()
        },
    )
