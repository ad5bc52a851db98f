"""Agreement on ordered scales: weighted kappa, ordinal/interval alpha, Spearman, MAE, confusion.

Every function takes the scale's labels in scale order and, where distances matter, optional
``values`` (default: ranks 1..k). Undefined values are ``None`` with a reason; labels outside
the scale are refused.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from .._docs import add_field_docs
from ._stats import Kappa, _check_vocabulary

Weights = Literal["linear", "quadratic"]
"""Disagreement weights of weighted kappa: ``|i - j|`` or ``(i - j)^2`` in scale distance."""
AlphaLevel = Literal["nominal", "ordinal", "interval", "ratio"]
"""Krippendorff's levels of measurement."""

DEFAULT_MIN_SHARED = 10
"""Rater pairs sharing fewer items than this are left out of pair tables."""


class Correlation(BaseModel):
    """A rank correlation with its denominator."""

    model_config = ConfigDict(frozen=True, json_schema_extra=add_field_docs)

    value: float | None
    """Spearman's rho, or None when undefined."""
    n: int
    """Number of paired ratings it was computed over."""
    p_value: float | None = None
    """Two-sided p-value of rho = 0 (scipy), when defined."""
    note: str | None = None
    """Why the value is undefined, when it is."""


class MeanAbsoluteError(BaseModel):
    """Mean absolute distance between two aligned ratings on an ordered scale."""

    model_config = ConfigDict(frozen=True, json_schema_extra=add_field_docs)

    value: float | None
    """Mean of ``|value(reference) - value(predicted)|``, or None with no pairs."""
    n: int
    """Number of paired ratings."""
    unit: str
    """``scale value`` (numeric scales) or ``scale step`` (ranks)."""
    note: str | None = None
    """Why the value is undefined, when it is."""


class OrdinalConfusion(BaseModel):
    """Confusion of two aligned ratings over the scale (rows reference, columns predicted)."""

    model_config = ConfigDict(frozen=True, json_schema_extra=add_field_docs)

    labels: list[str]
    """The scale labels, in scale order: the row and column order of ``matrix``."""
    matrix: list[list[int]]
    """``matrix[i][j]``: items rated ``labels[i]`` by the reference, ``labels[j]`` predicted."""
    n: int
    """Paired ratings."""
    exact: int
    """Items on the diagonal (same label)."""
    within_one: int
    """Items at most one scale step apart (the diagonal and its two neighbours)."""
    predicted_higher: int
    """Items the prediction put higher on the scale than the reference (right of the diagonal)."""
    predicted_lower: int
    """Items the prediction put lower on the scale than the reference (left of the diagonal)."""

    def to_frame(self) -> Any:
        """The matrix as a pandas DataFrame (index: reference label, columns: predicted label)."""
        import pandas as pd

        frame = pd.DataFrame(self.matrix, index=list(self.labels), columns=list(self.labels))
        frame.index.name, frame.columns.name = "reference", "predicted"
        return frame


def scale_values(
    ordered_labels: Sequence[str], values: Mapping[str, float] | None = None
) -> dict[str, float]:
    """Each scale label's value: ``values`` (checked: complete, increasing), else ranks 1..k."""
    if values is None:
        return {label: float(i) for i, label in enumerate(ordered_labels, start=1)}
    missing = [label for label in ordered_labels if label not in values]
    if missing:
        raise ValueError(f"no value for scale labels {missing}")
    numbers = [float(values[label]) for label in ordered_labels]
    if any(not math.isfinite(v) for v in numbers) or any(
        b <= a for a, b in zip(numbers, numbers[1:], strict=False)
    ):
        raise ValueError(
            f"scale values must be finite and strictly increasing in scale order; got {numbers}"
        )
    return dict(zip(ordered_labels, numbers, strict=True))


def _equally_spaced(numbers: Sequence[float]) -> bool:
    steps = [b - a for a, b in zip(numbers, numbers[1:], strict=False)]
    return all(math.isclose(s, steps[0], rel_tol=1e-9, abs_tol=1e-12) for s in steps)


def _pairs(a: Sequence[Any], b: Sequence[Any], ordered_labels: Sequence[str]) -> int:
    if len(a) != len(b):
        raise ValueError("label sequences differ in length")
    _check_vocabulary([*a, *b], set(ordered_labels))
    return len(a)


def weighted_cohen_kappa(
    a: Sequence[str],
    b: Sequence[str],
    ordered_labels: Sequence[str],
    weights: Weights,
    values: Mapping[str, float] | None = None,
) -> Kappa:
    """Linear or quadratic weighted Cohen's kappa of two aligned ratings on an ordered scale
    (scikit-learn; distances ``|v_i - v_j|`` by closed form when ``values`` are unequally
    spaced). Every scale label takes part, used or not."""
    n = _pairs(a, b, ordered_labels)
    if n == 0:
        return Kappa(value=None, n=0, note="no items")
    if len(set(a) | set(b)) < 2:
        return Kappa(
            value=None, n=n, note="only one label used by both raters: chance agreement is 1"
        )
    labels = list(ordered_labels)
    numbers = list(scale_values(labels, values).values())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if _equally_spaced(numbers):
            from sklearn.metrics import cohen_kappa_score

            value = float(cohen_kappa_score(list(a), list(b), labels=labels, weights=weights))
        else:
            value = _weighted_kappa_closed_form(a, b, labels, numbers, weights)
    if math.isnan(value):
        return Kappa(value=None, n=n, note="undefined: expected disagreement is 0")
    return Kappa(value=value, n=n)


def _weighted_kappa_closed_form(
    a: Sequence[str], b: Sequence[str], labels: list[str], numbers: list[float], weights: Weights
) -> float:
    import numpy as np

    index = {label: i for i, label in enumerate(labels)}
    k = len(labels)
    observed = np.zeros((k, k))
    for x, y in zip(a, b, strict=True):
        observed[index[x], index[y]] += 1
    observed /= observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    v = np.asarray(numbers)
    distance = np.abs(v[:, None] - v[None, :])
    w = distance if weights == "linear" else distance**2
    denominator = float((w * expected).sum())
    return float("nan") if denominator == 0 else 1.0 - float((w * observed).sum()) / denominator


def krippendorff_alpha(
    units: Sequence[Mapping[str, Any]],
    ordered_labels: Sequence[Any],
    level: AlphaLevel,
    values: Mapping[str, float] | None = None,
) -> Kappa:
    """Krippendorff's alpha over ``units`` (one ``{rater: label}`` per item); ``interval`` and
    ``ratio`` use ``values``. ``n``: units with at least two ratings."""
    import numpy as np

    raters = sorted({r for unit in units for r in unit})
    pairable = [u for u in units if len(u) >= 2]
    if not pairable:
        return Kappa(value=None, n=0, note="no item has two ratings")
    _check_vocabulary((label for unit in units for label in unit.values()), set(ordered_labels))
    if len({label for u in pairable for label in u.values()}) < 2:
        return Kappa(value=None, n=len(pairable), note="only one category used: alpha is undefined")
    import krippendorff

    if level in ("interval", "ratio"):
        number = scale_values(ordered_labels, values)
    else:
        number = {label: float(i) for i, label in enumerate(ordered_labels)}
    data = np.full((len(raters), len(units)), np.nan)
    position = {r: i for i, r in enumerate(raters)}
    for col, unit in enumerate(units):
        for rater, label in unit.items():
            data[position[rater], col] = number[label]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value = float(
            krippendorff.alpha(
                reliability_data=data,
                level_of_measurement=level,
                value_domain=list(number.values()),
            )
        )
    if math.isnan(value):
        return Kappa(value=None, n=len(pairable), note="undefined: expected disagreement is 0")
    return Kappa(value=value, n=len(pairable))


def spearman_correlation(
    a: Sequence[str],
    b: Sequence[str],
    ordered_labels: Sequence[str],
    values: Mapping[str, float] | None = None,
) -> Correlation:
    """Spearman's rank correlation of two aligned ratings (``scipy.stats.spearmanr``)."""
    n = _pairs(a, b, ordered_labels)
    if n < 3:
        return Correlation(
            value=None, n=n, note=f"{n} paired rating(s): a rank correlation needs at least 3"
        )
    if len(set(a)) < 2 or len(set(b)) < 2:
        return Correlation(
            value=None,
            n=n,
            note="one rater gave the same label to every shared item: correlation is undefined",
        )
    from scipy.stats import spearmanr

    number = scale_values(ordered_labels, values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = spearmanr([number[x] for x in a], [number[y] for y in b])
    rho, p = float(result.statistic), float(result.pvalue)
    if math.isnan(rho):
        return Correlation(value=None, n=n, note="undefined correlation")
    return Correlation(value=rho, n=n, p_value=None if math.isnan(p) else p)


def mean_absolute_error(
    reference: Sequence[str],
    predicted: Sequence[str],
    ordered_labels: Sequence[str],
    values: Mapping[str, float] | None = None,
) -> MeanAbsoluteError:
    """Mean absolute distance between aligned ratings, in scale values or steps (ranks)."""
    n = _pairs(reference, predicted, ordered_labels)
    unit = "scale value" if values is not None else "scale step"
    if n == 0:
        return MeanAbsoluteError(value=None, n=0, unit=unit, note="no items")
    from sklearn.metrics import mean_absolute_error as _mae

    number = scale_values(ordered_labels, values)
    value = float(_mae([number[x] for x in reference], [number[y] for y in predicted]))
    return MeanAbsoluteError(value=value, n=n, unit=unit)


def ordinal_confusion(
    reference: Sequence[str], predicted: Sequence[str], ordered_labels: Sequence[str]
) -> OrdinalConfusion:
    """The full confusion over the ordered scale, with direction counts."""
    import numpy as np

    n = _pairs(reference, predicted, ordered_labels)
    labels = list(ordered_labels)
    if n == 0:
        matrix = np.zeros((len(labels), len(labels)), dtype=int)
    else:
        from sklearn.metrics import confusion_matrix

        matrix = confusion_matrix(list(reference), list(predicted), labels=labels)
    rows, cols = np.indices(matrix.shape)
    return OrdinalConfusion(
        labels=labels,
        matrix=matrix.astype(int).tolist(),
        n=n,
        exact=int(np.trace(matrix)),
        within_one=int(matrix[np.abs(rows - cols) <= 1].sum()),
        predicted_higher=int(matrix[cols > rows].sum()),
        predicted_lower=int(matrix[cols < rows].sum()),
    )


def shared_pairs(
    units: Sequence[Mapping[str, Any]],
) -> dict[tuple[str, str], list[tuple[Any, Any]]]:
    """For every rater pair (sorted names) that rated a unit together, their aligned labels."""
    out: dict[tuple[str, str], list[tuple[Any, Any]]] = {}
    for unit in units:
        for x, y in combinations(sorted(unit), 2):
            out.setdefault((x, y), []).append((unit[x], unit[y]))
    return dict(sorted(out.items()))
