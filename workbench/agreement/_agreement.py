"""Human-human agreement: how consistently qualified reviewers apply the rubric, the baseline
the alignment figures are read against.

Nominal figures are always reported; ordinal and numeric rubrics add weighted kappa, Spearman
and ordinal/interval alpha over the scale labels. Reviews are read columnar (:class:`Ratings`)
and every figure comes from :mod:`workbench.stats`' arithmetic on integer codes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._record import LooseRecord as _Model
from ..gold import (
    DISAGREEMENT_BASIS,
    GoldCase,
    GoldDataset,
    GoldIndex,
    Partition,
    gold_index,
    partition_name,
)
from ..stats import (
    DEFAULT_MIN_SHARED,
    Correlation,
    Kappa,
    Rate,
    cohen_kappa_counts,
    fleiss_kappa_table,
    krippendorff_alpha,
    krippendorff_alpha_nominal_matrix,
    spearman_correlation,
    weighted_cohen_kappa,
    wilson_rate,
)

AGREEMENT_SCHEMA_VERSION = 2


class PairAgreement(_Model):
    """Agreement of two reviewers over the cases both reviewed."""

    reviewer_a: str
    reviewer_b: str
    n: int
    """Cases both reviewed."""
    raw_agreement: Rate
    """Share of those cases with the same label, with a 95% Wilson interval."""
    cohen_kappa: Kappa
    """Cohen's kappa (nominal) over the same cases."""
    weighted_kappa_linear: Kappa | None = None
    """Ordered rubrics: linear weighted Cohen's kappa over the shared cases on the scale."""
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
    """Reviewer pairs sharing a case but fewer than ``min_shared``: not in ``pairs``."""
    krippendorff_alpha: Kappa
    """Krippendorff's alpha (nominal) over all reviewers; tolerates missing ratings."""
    krippendorff_alpha_ordinal: Kappa | None = None
    """Ordered rubrics: Krippendorff's alpha at the ordinal level, over scale labels."""
    krippendorff_alpha_interval: Kappa | None = None
    """Ordered rubrics: Krippendorff's alpha at the interval level (``scale_values``)."""
    fleiss_kappa: Kappa
    """Fleiss' kappa (nominal); defined only when every case has the same number of reviews."""
    disagreement: Rate
    """Share of cases with two or more reviews whose reviewers did not all agree (the nominal
    alpha's cases)."""


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
    """Ordered rubrics: each scale label's value (ranks 1..k on an ordinal scale)."""
    min_shared: int = DEFAULT_MIN_SHARED
    """Pair tables list reviewer pairs sharing at least this many cases."""
    disagreement_basis: str = DISAGREEMENT_BASIS
    """Which cases ``disagreement`` is computed over."""
    overall: AgreementBlock
    slices: dict[str, AgreementBlock]

    def pairs_frame(self) -> Any:
        """Reviewer pairs of every block (``(all)`` and each slice) as a pandas DataFrame."""
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
                    row.update({k: _value(getattr(p, k)) for k in _ORDERED_PAIR})
                rows.append(row)
        return pd.DataFrame(rows)

    def summary_frame(self) -> Any:
        """One row per block: cases, reviewers, pairs, disagreement, alphas and Fleiss' kappa."""
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
                row.update({k: _value(getattr(block, k)) for k in _ORDERED_ALPHAS})
            rows.append(row)
        return pd.DataFrame(rows).set_index("slice")


_ORDERED_PAIR = ("weighted_kappa_linear", "weighted_kappa_quadratic", "spearman")
_ORDERED_ALPHAS = ("krippendorff_alpha_ordinal", "krippendorff_alpha_interval")


def _value(figure: Kappa | Correlation | None) -> float | None:
    return figure.value if figure else None


@dataclass(frozen=True)
class Ratings:
    """The reviews of a set of cases, one integer triple per review (numpy arrays)."""

    cases: int
    case: Any
    """Each review's case, ``0..cases - 1``."""
    reviewer: Any
    """Each review's reviewer, a position in :attr:`reviewers` (every name, sorted)."""
    label: Any
    """Each review's label, a position in the rubric's labels."""
    reviewers: tuple[str, ...]

    @classmethod
    def of(
        cls, cases: int, case: Any, reviewers: Any, labels: Any, vocabulary: Sequence[str]
    ) -> Ratings:
        """From each review's case position, reviewer and label (sequences or Arrow string arrays);
        a label outside ``vocabulary`` raises ``ValueError``."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        reviewers, labels = pa.array(reviewers, pa.string()), pa.array(labels, pa.string())
        names = tuple(sorted(pc.unique(reviewers).to_pylist()))
        label = pc.index_in(labels, value_set=pa.array(list(vocabulary), pa.string()))
        if label.null_count:
            unknown = pc.unique(labels.filter(pc.is_null(label))).to_pylist()
            raise ValueError(f"labels outside the vocabulary: {sorted(map(str, unknown))}")
        reviewer = _integers(pc.index_in(reviewers, value_set=pa.array(names, pa.string())))
        case = np.asarray(case, dtype=np.int64)
        key = np.sort(case * len(names) + reviewer)
        if (key[1:] == key[:-1]).any():
            raise ValueError("a reviewer reviews the same case twice")  # validation refuses it
        return cls(cases, case, reviewer, _integers(label), names)

    def subset(self, keep: Any) -> Ratings:
        """The reviews of the cases where the boolean array ``keep`` is true, renumbered."""
        import numpy as np

        position = np.cumsum(keep) - 1
        mine = keep[self.case]
        return Ratings(
            cases=int(keep.sum()),
            case=position[self.case[mine]],
            reviewer=self.reviewer[mine],
            label=self.label[mine],
            reviewers=self.reviewers,
        )


def _integers(array: Any) -> Any:
    """An Arrow integer array without nulls as int64 numpy, from its buffer (pyarrow's
    ``to_numpy`` would import pandas)."""
    import numpy as np

    if not len(array):
        return np.zeros(0, dtype=np.int64)
    kind = np.dtype(f"int{array.type.bit_width}")
    values = np.frombuffer(array.buffers()[1], dtype=kind, count=array.offset + len(array))
    return values[array.offset :].astype(np.int64)


def _cases_ratings(cases: Sequence[GoldCase], labels: Sequence[str]) -> Ratings:
    reviews = [(i, r.reviewer, r.label) for i, case in enumerate(cases) for r in case.reviews]
    return Ratings.of(
        len(cases),
        [i for i, _, _ in reviews],
        [name for _, name, _ in reviews],
        [label for _, _, label in reviews],
        labels,
    )


def agreement_block(
    cases: Sequence[GoldCase] | Ratings,
    labels: list[str],
    *,
    scale_labels: Sequence[str] | None = None,
    scale_values: Mapping[str, float] | None = None,
    min_shared: int = 1,
) -> AgreementBlock:
    """Pairwise, Fleiss and Krippendorff agreement over the reviews of ``cases``; ``scale_labels``
    (in scale order, with ``scale_values``) adds the ordered figures."""
    import numpy as np

    if min_shared < 1:
        raise ValueError(f"min_shared must be at least 1, got {min_shared}")
    r = cases if isinstance(cases, Ratings) else _cases_ratings(cases, labels)
    pairs, left_out = _pairs(r, labels, scale_labels, scale_values, min_shared)
    per_case = np.bincount(r.case, minlength=r.cases)
    pairable = per_case >= 2
    alphas: dict[str, Any] = {}
    if scale_labels is not None:
        alphas = _ordered_alphas(r, labels, scale_labels, scale_values)
    return AgreementBlock(
        cases=r.cases,
        reviewers=[r.reviewers[i] for i in np.flatnonzero(_present(r)).tolist()],
        pairs=pairs,
        min_shared=min_shared,
        pairs_left_out=left_out,
        krippendorff_alpha=krippendorff_alpha_nominal_matrix(_matrix(r), len(labels)),
        fleiss_kappa=fleiss_kappa_table(_counts(r, len(labels)).astype(float)),
        disagreement=wilson_rate(int((_disagree(r) & pairable).sum()), int(pairable.sum())),
        **alphas,
    )


def _matrix(r: Ratings) -> Any:
    import numpy as np

    present = _present(r)
    row = np.cumsum(present) - 1  # a reviewer's row among those present
    data = np.full((int(present.sum()), r.cases), np.nan)
    data[row[r.reviewer], r.case] = r.label
    return data


def _present(r: Ratings) -> Any:
    import numpy as np

    return np.bincount(r.reviewer, minlength=len(r.reviewers)) > 0


def _counts(r: Ratings, labels: int) -> Any:
    import numpy as np

    cells = np.bincount(r.case * labels + r.label, minlength=r.cases * labels)
    return cells.reshape(r.cases, labels)


def _disagree(r: Ratings) -> Any:
    import numpy as np

    low = np.full(r.cases, np.iinfo(np.int64).max)
    high = np.full(r.cases, -1)
    np.minimum.at(low, r.case, r.label)
    np.maximum.at(high, r.case, r.label)
    return high > low


def _pairs(
    r: Ratings,
    labels: list[str],
    scale_labels: Sequence[str] | None,
    scale_values: Mapping[str, float] | None,
    min_shared: int,
) -> tuple[list[PairAgreement], int]:
    """Every reviewer pair sharing at least ``min_shared`` cases, and how many share fewer."""
    import numpy as np

    a, b = _pair_reviews(r)
    order = np.lexsort((r.case[a], r.reviewer[b], r.reviewer[a]))
    a, b = a[order], b[order]
    key = r.reviewer[a] * len(r.reviewers) + r.reviewer[b]
    starts = np.flatnonzero(np.diff(key, prepend=-1))
    ends = np.append(starts, len(key))[1:]
    pairs: list[PairAgreement] = []
    left_out = 0
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        if end - start < min_shared:
            left_out += 1
            continue
        la, lb = r.label[a[start:end]], r.label[b[start:end]]
        names = (r.reviewers[r.reviewer[a[start]]], r.reviewers[r.reviewer[b[start]]])
        pairs.append(_pair(names, la, lb, labels, scale_labels, scale_values))
    return pairs, left_out


def _pair_reviews(r: Ratings) -> tuple[Any, Any]:
    """Indices of both reviews of every pair of reviews of one case (first: the first name)."""
    import numpy as np

    order = np.lexsort((r.reviewer, r.case))
    case = r.case[order]
    most = int(np.bincount(case).max()) if len(case) else 0
    first, second = [], []
    for d in range(1, most):
        same = np.flatnonzero(case[d:] == case[:-d])
        first.append(order[same])
        second.append(order[same + d])
    empty = np.zeros(0, dtype=np.int64)
    return (np.concatenate(first) if first else empty, np.concatenate(second) if second else empty)


def _pair(
    names: tuple[str, str],
    la: Any,
    lb: Any,
    labels: list[str],
    scale_labels: Sequence[str] | None,
    scale_values: Mapping[str, float] | None,
) -> PairAgreement:
    import numpy as np

    k = len(labels)
    tally = np.bincount(la * k + lb, minlength=k * k)
    counts = {
        (labels[c // k], labels[c % k]): int(tally[c]) for c in np.flatnonzero(tally).tolist()
    }
    ordered: dict[str, Any] = {}
    if scale_labels is not None:
        on_scale = np.isin(la, [labels.index(x) for x in scale_labels]) & np.isin(
            lb, [labels.index(x) for x in scale_labels]
        )
        sa = [labels[x] for x in la[on_scale].tolist()]
        sb = [labels[y] for y in lb[on_scale].tolist()]
        ordered = {
            "weighted_kappa_linear": weighted_cohen_kappa(
                sa, sb, scale_labels, "linear", scale_values
            ),
            "weighted_kappa_quadratic": weighted_cohen_kappa(
                sa, sb, scale_labels, "quadratic", scale_values
            ),
            "spearman": spearman_correlation(sa, sb, scale_labels, scale_values),
        }
    return PairAgreement(
        reviewer_a=names[0],
        reviewer_b=names[1],
        n=len(la),
        raw_agreement=wilson_rate(int((la == lb).sum()), len(la)),
        cohen_kappa=cohen_kappa_counts(counts, labels),
        **ordered,
    )


def _ordered_alphas(
    r: Ratings,
    labels: list[str],
    scale_labels: Sequence[str],
    scale_values: Mapping[str, float] | None,
) -> dict[str, Kappa]:
    on_scale = set(scale_labels)
    units: list[dict[str, str]] = [{} for _ in range(r.cases)]
    for case, reviewer, label in zip(
        r.case.tolist(), r.reviewer.tolist(), r.label.tolist(), strict=True
    ):
        if labels[label] in on_scale:
            units[case][r.reviewers[reviewer]] = labels[label]
    return {
        "krippendorff_alpha_ordinal": krippendorff_alpha(units, scale_labels, "ordinal"),
        "krippendorff_alpha_interval": krippendorff_alpha(
            units, scale_labels, "interval", scale_values
        ),
    }


def _index_ratings(index: GoldIndex, partition: str | None) -> tuple[Ratings, Any]:
    import pyarrow.compute as pc

    table = index.table
    keep = table["active"]
    if partition is not None:
        keep = pc.and_(keep, pc.equal(table["partition"], partition))
    cases = table.select(["slice", "reviewers", "review_labels"]).filter(keep).combine_chunks()
    reviewers = cases["reviewers"].chunk(0) if cases.num_rows else None
    if reviewers is None:
        return Ratings.of(0, [], [], [], index.rubric.labels), cases["slice"]
    ratings = Ratings.of(
        cases.num_rows,
        _integers(pc.list_parent_indices(reviewers)),
        pc.list_flatten(reviewers),
        pc.list_flatten(cases["review_labels"].chunk(0)),
        index.rubric.labels,
    )
    return ratings, cases["slice"]


def human_agreement(
    gold: GoldDataset | GoldIndex | str | Path,
    partition: str | Partition | None = None,
    *,
    min_shared: int = DEFAULT_MIN_SHARED,
) -> AgreementReport:
    """Human agreement over the active cases of a gold dataset (loaded, its index, or its path),
    overall and per slice; pairs sharing fewer than ``min_shared`` cases are only counted."""
    import pyarrow as pa
    import pyarrow.compute as pc

    scope = partition_name(partition) if partition is not None else None
    if isinstance(gold, str | Path):
        gold = gold_index(gold)
    rubric = gold.rubric
    labels = list(rubric.labels)
    if isinstance(gold, GoldIndex):
        ratings, slice_of = _index_ratings(gold, scope)
    else:
        cases = gold.partition(scope)
        ratings = _cases_ratings(cases, labels)
        slice_of = pa.array([c.slice for c in cases], pa.string())
    encoded = pc.dictionary_encode(
        slice_of.combine_chunks() if hasattr(slice_of, "chunks") else slice_of
    )
    seen = encoded.dictionary.to_pylist()  # in order of first appearance
    slice_code = _integers(encoded.indices)
    scale_labels = rubric.scale_labels if rubric.ordered else None
    options: dict[str, Any] = {
        "scale_labels": scale_labels,
        "scale_values": rubric.scale_values,
        "min_shared": min_shared,
    }
    names = list(dict.fromkeys([*rubric.slices, *seen]))
    return AgreementReport(
        dataset_sha256=gold.sha256,
        rubric_version=rubric.version,
        partition=scope,
        labels=labels,
        scale=rubric.scale.value,
        scale_labels=scale_labels,
        scale_values=rubric.scale_values,
        min_shared=min_shared,
        overall=agreement_block(ratings, labels, **options),
        slices={
            name: agreement_block(
                ratings.subset(slice_code == (seen.index(name) if name in seen else -1)),
                labels,
                **options,
            )
            for name in names
        },
    )
