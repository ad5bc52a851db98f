"""Interval and agreement statistics: Wilson intervals, Cohen's and Fleiss' kappa as closed
forms equal to the last bit to statsmodels / scikit-learn (tests/test_stats.py; importing
those libraries is slow), Krippendorff's alpha from ``krippendorff``. Undefined values are
``None`` with a reason, never NaN.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Collection, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from .._docs import add_field_docs


class Rate(BaseModel):
    """A proportion with its numerator, denominator and 95% Wilson interval."""

    model_config = ConfigDict(frozen=True, json_schema_extra=add_field_docs)

    k: int
    """Numerator (e.g. false passes)."""
    n: int
    """Denominator (e.g. human fails with a judge verdict)."""
    rate: float | None
    """k / n, or None when n is 0."""
    ci95_low: float | None
    """Lower bound of the 95% Wilson score interval."""
    ci95_high: float | None
    """Upper bound of the 95% Wilson score interval."""

    def format(self, digits: int = 3) -> str:
        if self.rate is None:
            return f"{self.k}/{self.n} (undefined)"
        return (
            f"{self.k}/{self.n} = {self.rate:.{digits}f} [{self.ci95_low:.{digits}f},"
            f" {self.ci95_high:.{digits}f}]"
        )


_Z_975 = 1.9599639845400545
"""``scipy.stats.norm.isf(0.025)``: the critical value of a two-sided 95% interval."""


def _critical(alpha: float) -> float:
    if alpha == 0.05:
        return _Z_975
    from scipy.stats import norm  # other levels are rare: pay for scipy only then

    return float(norm.isf(alpha / 2.0))


def wilson_ends(count: Any, nobs: Any, crit: float, sqrt: Callable[[Any], Any]) -> tuple[Any, Any]:
    """The Wilson interval's ends, unclipped, in statsmodels' order of operations (floats with
    ``math.sqrt`` or float64 arrays with ``numpy.sqrt``)."""
    q = count / nobs
    crit2 = crit * crit  # numpy squares by multiplying; Python's float ** 2 calls pow()
    denom = 1 + crit2 / nobs
    center = (q + crit2 / (2 * nobs)) / denom
    dist = crit * sqrt(q * (1.0 - q) / nobs + crit2 / (4.0 * (nobs * nobs)))
    dist /= denom
    return center - dist, center + dist


def wilson_interval(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """The Wilson score interval of k/n (n > 0), clipped to [0, 1]."""
    low, high = wilson_ends(float(k), float(n), _critical(alpha), math.sqrt)
    return min(max(low, 0.0), 1.0), min(max(high, 0.0), 1.0)


def wilson_rate(k: int, n: int, alpha: float = 0.05) -> Rate:
    """k/n with a Wilson score interval (closed form, equal to statsmodels' ``wilson``)."""
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"invalid proportion {k}/{n}")
    if n == 0:
        return Rate(k=k, n=n, rate=None, ci95_low=None, ci95_high=None)
    low, high = wilson_interval(k, n, alpha)
    return Rate(k=k, n=n, rate=k / n, ci95_low=low, ci95_high=high)


class Kappa(BaseModel):
    """A chance-corrected agreement coefficient with its denominator."""

    model_config = ConfigDict(frozen=True, json_schema_extra=add_field_docs)

    value: float | None
    """The coefficient, or None when undefined."""
    n: int
    """Number of items it was computed over."""
    note: str | None = None
    """Why the value is undefined, when it is."""


def cohen_kappa(a: Sequence[Any], b: Sequence[Any], labels: Sequence[Any] | None = None) -> Kappa:
    """Cohen's kappa of two aligned label sequences (equal to scikit-learn's)."""
    if len(a) != len(b):
        raise ValueError("label sequences differ in length")
    counts: dict[tuple[Any, Any], int] = {}
    for pair in zip(a, b, strict=True):
        counts[pair] = counts.get(pair, 0) + 1
    return cohen_kappa_counts(counts, labels)


def cohen_kappa_counts(
    counts: dict[tuple[Any, Any], int], labels: Sequence[Any] | None = None
) -> Kappa:
    """Cohen's kappa from ``{(label_a, label_b): count}``, scikit-learn's arithmetic over the
    labels used, in vocabulary order (sorted without ``labels``)."""
    counts = {pair: c for pair, c in counts.items() if c}
    n = sum(counts.values())
    if n == 0:
        return Kappa(value=None, n=0, note="no items")
    seen = {lab for pair in counts for lab in pair}
    if labels is not None:  # scikit-learn would silently drop these items while n counted them
        _check_vocabulary(seen, set(labels))
    if len(seen) < 2:
        return Kappa(
            value=None, n=n, note="only one label used by both raters: chance agreement is 1"
        )
    import numpy as np

    used = [lab for lab in labels if lab in seen] if labels is not None else sorted(seen)
    index = {lab: i for i, lab in enumerate(used)}
    confusion = np.zeros((len(used), len(used)), dtype=np.float64)
    for (x, y), c in counts.items():
        confusion[index[x], index[y]] += c
    sum0 = np.sum(confusion, axis=0)
    sum1 = np.sum(confusion, axis=1)
    expected = np.outer(sum0, sum1) / np.sum(sum0)
    weights = np.ones((len(used), len(used)), dtype=np.float64)
    np.fill_diagonal(weights, 0)
    denominator = np.sum(weights * expected)
    if denominator == 0:
        return Kappa(value=None, n=n, note="undefined: expected agreement is 1")
    value = float(1 - np.sum(weights * confusion) / denominator)
    if math.isnan(value):
        return Kappa(value=None, n=n, note="undefined: expected agreement is 1")
    return Kappa(value=value, n=n)


def fleiss_kappa_table(table: Any) -> Kappa:
    """Fleiss' kappa of an items x categories count table (same number of ratings, 2+, per item),
    in the order of operations of statsmodels' ``fleiss_kappa(table, method="fleiss")``."""
    import numpy as np

    n, raters = len(table), sorted({int(c) for c in np.unique(table.sum(1))})
    if n == 0:
        return Kappa(value=None, n=0, note="no items")
    if len(raters) != 1:
        why = f"items have different numbers of raters ({raters})"
        return Kappa(value=None, n=n, note=f"{why}; Fleiss' kappa needs the same number")
    if raters == [1]:
        return Kappa(value=None, n=n, note="one rating per item")
    n_rat = table.sum(1).max()
    p_cat = table.sum(0) / table.sum()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p_mean = (((table * table).sum(1) - n_rat) / (n_rat * (n_rat - 1.0))).mean()
        p_mean_exp = (p_cat * p_cat).sum()
        value = float((p_mean - p_mean_exp) / (1 - p_mean_exp))
    if math.isnan(value):
        return Kappa(value=None, n=n, note="undefined: every rating uses the same category")
    return Kappa(value=value, n=n)


def krippendorff_alpha_nominal_matrix(data: Any, categories: int) -> Kappa:
    """Krippendorff's alpha (nominal) of a raters x units matrix of category positions (NaN: not
    rated); ``n``: units with at least two ratings."""
    import krippendorff
    import numpy as np

    rated = ~np.isnan(data)
    pairable = rated.sum(axis=0) >= 2
    n = int(pairable.sum())
    if not n:
        return Kappa(value=None, n=0, note="no item has two ratings")
    given = data[:, pairable][rated[:, pairable]]
    if given.min() == given.max():  # fewer than two categories
        return Kappa(value=None, n=n, note="only one category used: alpha is undefined")
    value = float(
        krippendorff.alpha(
            reliability_data=data,
            level_of_measurement="nominal",
            value_domain=[float(i) for i in range(categories)],
        )
    )
    return Kappa(value=value, n=n)


def _check_vocabulary(labels: Any, vocabulary: Collection[Any]) -> None:
    unknown = {label for label in labels if label not in vocabulary}
    if unknown:
        raise ValueError(f"labels outside the vocabulary: {sorted(map(str, unknown))}")
