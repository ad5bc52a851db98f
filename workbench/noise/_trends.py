"""The records of a baseline comparison (:mod:`._compare`)."""

from __future__ import annotations

from typing import Literal

from .._record import Record as _Model
from ._evidence import Component
from ._pairs import DIRECTION


class PairDelta(_Model):
    """One candidate pair, baseline against candidate."""

    pair_id: str
    """The pair."""
    slice: str
    """Its slice."""
    mode: str
    """Its mode (the same on both sides)."""
    baseline_clean: float | None
    """Baseline clean score."""
    baseline_noisy: float | None
    """Baseline noisy score."""
    candidate_clean: float | None
    """Candidate clean score."""
    candidate_noisy: float | None
    """Candidate noisy score."""
    noisy_delta: float | None
    """candidate noisy - baseline noisy (positive: the change made noise adoption worse)."""
    pair_delta_change: float | None
    """(candidate noisy - clean) - (baseline noisy - clean)."""
    status: Literal["compared", "not_comparable"]
    """``not_comparable`` when a side has no counted noisy score."""
    first_change: Component | Literal["none"] | None = None
    """The first boundary that differs, in debugging order: ``corpus``, ``query_rewrite``,
    ``reranker``, ``retrieval``, ``response``, ``reference``, ``evaluator``, ``aggregation``,
    ``gate``; ``none`` when nothing differs (None: a side lacks the hashes)."""
    detail: str
    """Why not comparable, or the scores in words."""


class SliceDelta(_Model):
    """Mean paired difference of one slice with its interval."""

    slice: str
    """The slice."""
    n: int
    """Compared pairs."""
    baseline_mean: float | None
    """Mean baseline noisy score over the compared pairs."""
    candidate_mean: float | None
    """Mean candidate noisy score over the compared pairs."""
    mean_delta: float | None
    """Mean of candidate - baseline noisy scores."""
    ci95_low: float | None
    """Lower bound of the 95% t interval of the mean delta (None when n < 2)."""
    ci95_high: float | None
    """Upper bound."""
    method: str = "paired t interval"
    """How the interval was computed."""


class Trend(_Model):
    """A warning trend: never a blocker, a reason to look before it becomes one."""

    kind: Literal["pair_worse", "slice_worse", "bought_by_refusing", "change_elsewhere"]
    """What moved (``change_elsewhere``: a pair's first change sits before the suite's declared
    change under review)."""
    slice: str
    """Where."""
    pair_id: str | None
    """The pair, for pair-level trends."""
    message: str
    """One sentence."""


class NoiseComparison(_Model):
    """Baseline versus candidate on the same frozen pairs (``NoiseReport.comparison``)."""

    baseline: str
    """``name@version`` of the baseline suite."""
    baseline_source: str
    """Where the baseline came from: a suite scored now, or a results directory."""
    candidate: str
    """``name@version`` of the candidate suite."""
    evaluator_model: str | None
    """The evaluator model of both sides."""
    ragas_version: str | None
    """The Ragas version of both sides."""
    prompt_sha256: str | None
    """The scoring prompt (metric source) hash of both sides."""
    scoring_fingerprint: str | None = None
    """The scoring configuration both sides share (:func:`~workbench.noise.scoring_fingerprint`)."""
    pairs: list[PairDelta]
    """Every candidate pair."""
    slices: list[SliceDelta]
    """Per slice."""
    warnings: list[Trend]
    """Warning trends (non-blocking)."""
    direction: str = DIRECTION
    """Always ``lower_is_better``."""
