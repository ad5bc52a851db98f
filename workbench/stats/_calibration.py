"""Calibration of a judge's score against human labels: a reliability table and the expected
calibration error (ECE) with a cluster-bootstrap interval.

A score in [0, 1] read as the judge's probability that the human label is ``pass`` is calibrated
when, among cases scored about ``s``, a share ``s`` are human passes. :func:`score_calibration`
bins the scores into ``bins`` equal-width bins (a score on an inner edge goes to the lower bin,
as scikit-learn's ``calibration_curve`` does), gives each bin its mean score and its observed
share of human passes with a 95% Wilson interval (the reliability diagram's points and bars),
and the ECE: the case-weighted mean of ``|mean score - observed share|`` over the bins.

The ECE's 95% interval is a percentile cluster bootstrap on a fixed seed: whole groups (the
cases of one gold group, or each case when no groups are given) are resampled with replacement
``resamples`` times and the ECE recomputed. Unlike a rate's bound the ECE is never exactly zero
on a sample, so the bootstrap does not collapse here, and resampling groups keeps the interval
honest when a group's cases are alike. The ECE is biased upward on small bins: read its interval
beside the bins' counts.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from .._docs import add_field_docs
from ._stats import Rate, wilson_rate

if TYPE_CHECKING:
    import numpy as np


class CalibrationBin(BaseModel):
    """One score bin of a reliability diagram."""

    model_config = ConfigDict(frozen=True, json_schema_extra=add_field_docs)

    low: float
    """Lower edge of the bin (excluded, except for the first bin)."""
    high: float
    """Upper edge of the bin (included)."""
    mean_score: float | None
    """Mean score of its cases (None when empty)."""
    observed: Rate
    """Human passes among its cases, with a 95% Wilson interval."""


class ScoreCalibration(BaseModel):
    """A score's calibration against human pass/fail labels."""

    model_config = ConfigDict(frozen=True, json_schema_extra=add_field_docs)

    n: int
    """Cases with a score and a human pass or fail label."""
    groups: int
    """Groups those cases come from (the bootstrap resamples them)."""
    bins: list[CalibrationBin]
    """Equal-width bins over [0, 1], empty ones included."""
    ece: float | None
    """Expected calibration error: sum over bins of (cases / n) * |mean score - observed|."""
    ece_ci95_low: float | None
    """Lower end of the ECE's 95% percentile cluster-bootstrap interval."""
    ece_ci95_high: float | None
    """Upper end of it."""
    resamples: int
    """Bootstrap resamples drawn."""
    seed: int
    """The bootstrap's seed (the same figures every call)."""


def _bin_of(scores: np.ndarray, bins: int) -> np.ndarray:
    import numpy as np

    edges = np.linspace(0.0, 1.0, bins + 1)
    return np.searchsorted(edges[1:-1], scores)  # as sklearn's calibration_curve


def _ece(bin_of: np.ndarray, scores: np.ndarray, passed: np.ndarray, bins: int) -> float:
    import numpy as np

    n = np.bincount(bin_of, minlength=bins)
    score_sum = np.bincount(bin_of, weights=scores, minlength=bins)
    pass_sum = np.bincount(bin_of, weights=passed, minlength=bins)
    return float(np.abs(score_sum - pass_sum).sum() / n.sum())


def _bootstrap(
    bin_of: np.ndarray,
    scores: np.ndarray,
    passed: np.ndarray,
    group_code: np.ndarray,
    bins: int,
    resamples: int,
    seed: int,
) -> tuple[float, float]:
    """Percentile interval of the ECE over ``resamples`` resamples of whole groups."""
    import numpy as np

    rng = np.random.default_rng(seed)
    groups = int(group_code.max()) + 1
    members = [np.flatnonzero(group_code == g) for g in range(groups)]
    values = []
    for _ in range(resamples):
        rows = np.concatenate([members[g] for g in rng.integers(0, groups, size=groups)])
        values.append(_ece(bin_of[rows], scores[rows], passed[rows], bins))
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def score_calibration(
    scores: Sequence[float],
    human_passed: Sequence[bool],
    groups: Sequence[Hashable] | None = None,
    *,
    bins: int = 10,
    resamples: int = 1000,
    seed: int = 0,
) -> ScoreCalibration:
    """The reliability bins and ECE of ``scores`` (each in [0, 1]: the judge's probability of a
    human pass) against ``human_passed``; ``groups`` (one per case) are resampled whole by the
    bootstrap. Raises ``ValueError`` on a score outside [0, 1] or lengths that differ."""
    import numpy as np

    if len(scores) != len(human_passed) or (groups is not None and len(groups) != len(scores)):
        raise ValueError("scores, labels and groups must have one entry per case")
    s = np.asarray(scores, dtype=float)
    if len(s) and not ((s >= 0) & (s <= 1)).all():
        raise ValueError("scores must lie in [0, 1] (a probability of a human pass)")
    if bins < 1 or resamples < 0:
        raise ValueError("need at least one bin and a non-negative number of resamples")
    passed = np.asarray(human_passed, dtype=float)
    keys = list(groups) if groups is not None else list(range(len(s)))
    code = {k: i for i, k in enumerate(dict.fromkeys(keys))}
    group_code = np.array([code[k] for k in keys], dtype=np.int64)
    bin_of = _bin_of(s, bins)
    edges = np.linspace(0.0, 1.0, bins + 1)
    rows = [
        CalibrationBin(
            low=float(edges[b]),
            high=float(edges[b + 1]),
            mean_score=float(s[bin_of == b].mean()) if (bin_of == b).any() else None,
            observed=wilson_rate(int(passed[bin_of == b].sum()), int((bin_of == b).sum())),
        )
        for b in range(bins)
    ]
    ece = _ece(bin_of, s, passed, bins) if len(s) else None
    low = high = None
    if len(s) and resamples:
        low, high = _bootstrap(bin_of, s, passed, group_code, bins, resamples, seed)
    return ScoreCalibration(
        n=len(s),
        groups=len(code),
        bins=rows,
        ece=ece,
        ece_ci95_low=low,
        ece_ci95_high=high,
        resamples=resamples,
        seed=seed,
    )
