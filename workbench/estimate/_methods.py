"""The estimators behind ``workbench estimate``: Rogan-Gladen ``(p + Sp - 1) / (Se + Sp - 1)``
(1978) and prediction-powered inference (Angelopoulos et al. 2023); docs/formats.md has the
formulas and intervals."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054  # two-sided 95% normal quantile


@dataclass(frozen=True)
class RGResult:
    """A Rogan-Gladen estimate before it is shaped into a record."""

    raw: float | None
    """Unclipped estimate (None when J <= 0)."""
    se: float | None
    youden: float
    youden_low: float


def adjusted_variance(successes: float, n: float, z: float = Z95) -> float:
    """Variance of the Agresti-Coull-adjusted proportion ``(x + z²/2)/(n + z²)``."""
    m = n + z * z
    p = (successes + z * z / 2) / m
    return p * (1 - p) / m


def rogan_gladen(
    passes: int, n: int, se_x: int, se_n: int, sp_x: int, sp_n: int, z: float = Z95
) -> RGResult:
    """Rogan-Gladen estimate of the human-pass rate with its delta-method standard error."""
    if n <= 0 or se_n <= 0 or sp_n <= 0:
        raise ValueError(
            "rogan_gladen needs decided traffic verdicts and both certification denominators"
        )
    p, se, sp = passes / n, se_x / se_n, sp_x / sp_n
    j = se + sp - 1
    v_se, v_sp = adjusted_variance(se_x, se_n, z), adjusted_variance(sp_x, sp_n, z)
    j_low = j - z * math.sqrt(v_se + v_sp)
    if j <= 0:
        return RGResult(raw=None, se=None, youden=j, youden_low=j_low)
    raw = (p + sp - 1) / j
    pi = min(1.0, max(0.0, raw))
    var = (adjusted_variance(passes, n, z) + pi * pi * v_se + (1 - pi) ** 2 * v_sp) / (j * j)
    return RGResult(raw=raw, se=math.sqrt(var), youden=j, youden_low=j_low)


def rogan_gladen_draws(
    passes: int,
    n: int,
    se_x: int,
    se_n: int,
    sp_x: int,
    sp_n: int,
    rng: np.random.Generator,
    draws: int = 4000,
) -> np.ndarray:
    """Parametric-bootstrap draws of the unclipped estimate (Jeffreys Beta per proportion)."""
    p, se, sp = (
        rng.beta(x + 0.5, m - x + 0.5, draws) for x, m in ((passes, n), (se_x, se_n), (sp_x, sp_n))
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (p + sp - 1) / (se + sp - 1)
    return np.nan_to_num(out, nan=0.5, posinf=1e9, neginf=-1e9)


@dataclass(frozen=True)
class PPIResult:
    """A prediction-powered mean estimate (Angelopoulos et al. 2023)."""

    estimate: float
    se: float
    rectifier: float
    """``mean(y_labelled - f_labelled)``: the correction the labelled sample applies."""
    labelled: int
    unlabelled: int


def ppi_mean(
    y_labelled: Sequence[float] | np.ndarray,
    f_labelled: Sequence[float] | np.ndarray,
    f_unlabelled: Sequence[float] | np.ndarray,
) -> PPIResult:
    """Prediction-powered point estimate and standard error of a mean (at least two labelled and
    two unlabelled cases)."""
    y, fl, fu = (np.asarray(v, dtype=float) for v in (y_labelled, f_labelled, f_unlabelled))
    if y.shape != fl.shape:
        raise ValueError("labelled predictions and labels differ in length")
    if y.size < 2 or fu.size < 2:
        raise ValueError("PPI needs at least two labelled and two unlabelled cases")
    residual = fl - y
    estimate = float(fu.mean() - residual.mean())
    se = math.sqrt(float(fu.var(ddof=1)) / fu.size + float(residual.var(ddof=1)) / y.size)
    return PPIResult(
        estimate=estimate,
        se=se,
        rectifier=float(-residual.mean()),
        labelled=int(y.size),
        unlabelled=int(fu.size),
    )


def clip01(value: float) -> float:
    return min(1.0, max(0.0, value))
