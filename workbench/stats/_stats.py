"""Interval and agreement statistics, delegated to well-kept libraries.

Wilson intervals come from statsmodels, Cohen's kappa from scikit-learn, Fleiss' kappa from
statsmodels and Krippendorff's alpha from the ``krippendorff`` package. This module only
shapes inputs and makes undefined values explicit (``None`` with a reason) instead of NaN.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict


class Rate(BaseModel):
    """A proportion with its numerator, denominator and 95% Wilson interval."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

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
        return f"{self.k}/{self.n} = {self.rate:.{digits}f} [{self.ci95_low:.{digits}f}, {self.ci95_high:.{digits}f}]"


def wilson_rate(k: int, n: int, alpha: float = 0.05) -> Rate:
    """k/n with a Wilson score interval (statsmodels ``proportion_confint(method='wilson')``)."""
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"invalid proportion {k}/{n}")
    if n == 0:
        return Rate(k=k, n=n, rate=None, ci95_low=None, ci95_high=None)
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(k, n, alpha=alpha, method="wilson")
    return Rate(k=k, n=n, rate=k / n, ci95_low=float(max(0.0, low)), ci95_high=float(min(1.0, high)))


class Kappa(BaseModel):
    """A chance-corrected agreement coefficient with its denominator."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    value: float | None
    """The coefficient, or None when undefined."""
    n: int
    """Number of items it was computed over."""
    note: str | None = None
    """Why the value is undefined, when it is."""


def cohen_kappa(a: Sequence[Any], b: Sequence[Any], labels: Sequence[Any] | None = None) -> Kappa:
    """Cohen's kappa of two aligned label sequences (scikit-learn ``cohen_kappa_score``)."""
    if len(a) != len(b):
        raise ValueError("label sequences differ in length")
    n = len(a)
    if n == 0:
        return Kappa(value=None, n=0, note="no items")
    if labels is not None and (unknown := (set(a) | set(b)) - set(labels)):
        # scikit-learn would silently drop these items while n still counted them
        raise ValueError(f"labels outside the vocabulary: {sorted(map(str, unknown))}")
    if len(set(a) | set(b)) < 2:
        return Kappa(value=None, n=n, note="only one label used by both raters: chance agreement is 1")
    from sklearn.metrics import cohen_kappa_score

    used = [lab for lab in labels if lab in set(a) | set(b)] if labels is not None else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value = float(cohen_kappa_score(list(a), list(b), labels=used))
    if math.isnan(value):
        return Kappa(value=None, n=n, note="undefined: expected agreement is 1")
    return Kappa(value=value, n=n)


def fleiss_kappa(items: Sequence[Sequence[Any]], categories: Sequence[Any]) -> Kappa:
    """Fleiss' kappa when every item has the same number of ratings (statsmodels)."""
    import numpy as np

    n = len(items)
    if n == 0:
        return Kappa(value=None, n=0, note="no items")
    counts = {len(item) for item in items}
    if len(counts) != 1:
        return Kappa(value=None, n=n, note=f"items have different numbers of raters ({sorted(counts)}); Fleiss' kappa needs the same number")
    if counts == {1}:
        return Kappa(value=None, n=n, note="one rating per item")
    from statsmodels.stats.inter_rater import fleiss_kappa as _fleiss

    index = {cat: i for i, cat in enumerate(categories)}
    _check_vocabulary((label for item in items for label in item), index)
    table = np.zeros((n, len(categories)), dtype=float)
    for row, item in enumerate(items):
        for label in item:
            table[row, index[label]] += 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value = float(_fleiss(table, method="fleiss"))
    if math.isnan(value):
        return Kappa(value=None, n=n, note="undefined: every rating uses the same category")
    return Kappa(value=value, n=n)


def krippendorff_alpha_nominal(units: Sequence[dict[str, Any]], categories: Sequence[Any]) -> Kappa:
    """Krippendorff's alpha (nominal) over units rated by any subset of raters.

    ``units`` is one ``{rater: label}`` mapping per item; missing ratings are allowed.
    """
    import numpy as np

    raters = sorted({r for unit in units for r in unit})
    pairable = [u for u in units if len(u) >= 2]
    if not pairable:
        return Kappa(value=None, n=0, note="no item has two ratings")
    if len({label for u in pairable for label in u.values()}) < 2:
        return Kappa(value=None, n=len(pairable), note="only one category used: alpha is undefined")
    import krippendorff

    index = {cat: float(i) for i, cat in enumerate(categories)}
    _check_vocabulary((label for unit in units for label in unit.values()), index)
    data = np.full((len(raters), len(units)), np.nan)
    position = {r: i for i, r in enumerate(raters)}
    for col, unit in enumerate(units):
        for rater, label in unit.items():
            data[position[rater], col] = index[label]
    value = float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal", value_domain=list(index.values())))
    return Kappa(value=value, n=len(pairable))


def _check_vocabulary(labels: Any, vocabulary: dict[Any, Any]) -> None:
    unknown = {label for label in labels if label not in vocabulary}
    if unknown:
        raise ValueError(f"labels outside the vocabulary: {sorted(map(str, unknown))}")
