"""The estimators behind ``workbench estimate``: Rogan-Gladen with a delta-method interval, and PPI.

Notation. A case *passes* when the human reviewers would label it with the rubric's pass label.
The judge's verdict is ``f`` (1 = pass, 0 = fail); ``Y`` is the human label (1 = pass, 0 = fail).
Certification measured, per slice, on decided verdicts of held-out cases:

- sensitivity ``Se`` = P(judge pass | human pass) = 1 - false-fail rate, over ``n_se``
  human-pass cases;
- specificity ``Sp`` = P(judge fail | human fail) = 1 - false-pass rate, over ``n_sp``
  human-fail cases.

**Rogan-Gladen** (Rogan & Gladen 1978, Am J Epidemiol 107:71-76). With ``p`` the judge's pass
rate on ``n`` decided traffic verdicts and Youden's ``J = Se + Sp - 1``::

    pi = (p + Sp - 1) / J

**Interval, two methods** (``interval=``), both two-sided 95% and **clipped to [0, 1]** (the
point estimate too; ``clipped`` says when either was):

- ``bootstrap`` (the default): a parametric bootstrap of the three independent proportions
  (traffic pass rate, held-out sensitivity, held-out specificity). Each of ``B`` = 4000 draws
  takes every proportion from its Jeffreys distribution ``Beta(x + 1/2, m - x + 1/2)`` and
  computes ``(p* + Sp* - 1) / (Se* + Sp* - 1)``; the interval is the 2.5th and 97.5th
  percentiles of the draws. Draws come from a generator seeded with ``(seed, slice index)``
  (``seed`` = 0 unless given), so the same inputs give the same interval. A certification
  with no error (``Sp = 1``) still varies in the draws.
- ``delta``: the delta method (first-order Taylor expansion)::

      Var(pi) = [Var(p) + pi² Var(Se) + (1 - pi)² Var(Sp)] / J²

  each variance that of an *Agresti-Coull-adjusted* proportion,
  ``x~ = (x + z²/2)/(m + z²)``, ``Var = x~(1 - x~)/(m + z²)``, so a certification with no error
  still carries the uncertainty of its few cases; the interval is ``pi ± z·sqrt(Var)``
  (``z`` = 1.959964), with the clipped ``pi`` in the variance. Closed form, a little
  conservative when Se or Sp is near 1.

**Unstable correction.** The correction divides by ``J``. When ``J`` is small (``Se + Sp``
close to 1: a judge barely better than chance) a small error in ``p``, ``Se`` or ``Sp`` moves
the estimate a lot. The estimate is flagged ``unstable`` when ``J < unstable_below`` (default
0.2) or the lower 95% bound of ``J`` (``J - z·sqrt(Var(Se) + Var(Sp))``) is at or below 0; with
``J <= 0`` it is undefined.

**Overall.** Judge errors differ by slice, so the overall estimate is stratified: the slices'
unclipped estimates weighted by their share of decided traffic verdicts (the weights are
observed counts, taken as fixed); ``bootstrap``: the same weighted sum of each draw, then
percentiles; ``delta``: ``Var = Σ w² Var_s``; then clipped.

**Prediction-powered inference** (Angelopoulos, Bates, Fannjiang, Jordan & Zrnic, 2023,
"Prediction-powered inference", Science 382(6671):669-674, doi:10.1126/science.adi6000), the
mean estimate: with ``N`` unlabelled cases (judge verdicts ``f(X~_i)``) and ``n`` labelled cases
of the same traffic (judge verdicts ``f(X_j)`` and human labels ``Y_j``), disjoint::

    theta_PP = mean_i f(X~_i) - mean_j (f(X_j) - Y_j)
    CI       = theta_PP ± z·sqrt(sigma²_f / N + sigma²_(f-Y) / n)

``sigma²_f`` the sample variance of the unlabelled predictions, ``sigma²_(f-Y)`` that of the
labelled residuals (``ddof = 1``). The interval is the paper's CLT interval; it is clipped to
[0, 1] like the others.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054
"""Two-sided 95% normal quantile."""


@dataclass(frozen=True)
class RGResult:
    """A Rogan-Gladen estimate before it is shaped into a record."""

    raw: float | None
    """Unclipped estimate (None when J <= 0)."""
    se: float | None
    """Delta-method standard error."""
    youden: float
    """J = Se + Sp - 1."""
    youden_low: float
    """Lower 95% bound of J."""


def adjusted_variance(successes: float, n: float, z: float = Z95) -> float:
    """Variance of the Agresti-Coull-adjusted proportion: ``x~(1 - x~)/(n + z²)``, ``x~ = (x +
    z²/2)/(n + z²)``."""
    m = n + z * z
    p = (successes + z * z / 2) / m
    return p * (1 - p) / m


def rogan_gladen(
    passes: int, n: int, se_x: int, se_n: int, sp_x: int, sp_n: int, z: float = Z95
) -> RGResult:
    """Rogan-Gladen estimate of the human-pass rate with its delta-method standard error.

    ``passes`` of ``n`` decided traffic verdicts are judge passes; ``se_x`` of ``se_n`` held-out
    human passes were judged pass (sensitivity); ``sp_x`` of ``sp_n`` human fails were judged
    fail (specificity). See the module docstring.
    """
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
    """Parametric-bootstrap draws of the (unclipped) Rogan-Gladen estimate, Jeffreys Beta per
    proportion."""
    p = rng.beta(passes + 0.5, n - passes + 0.5, draws)
    se = rng.beta(se_x + 0.5, se_n - se_x + 0.5, draws)
    sp = rng.beta(sp_x + 0.5, sp_n - sp_x + 0.5, draws)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (p + sp - 1) / (se + sp - 1)
    return np.nan_to_num(out, nan=0.5, posinf=1e9, neginf=-1e9)


@dataclass(frozen=True)
class PPIResult:
    """A prediction-powered mean estimate (Angelopoulos et al. 2023)."""

    estimate: float
    """``mean(f_unlabelled) - mean(f_labelled - y_labelled)``, unclipped."""
    se: float
    """``sqrt(var(f_unlabelled)/N + var(f_labelled - y_labelled)/n)``, sample variances (ddof 1)."""
    rectifier: float
    """``mean(y_labelled - f_labelled)``: the correction the labelled sample applies."""
    labelled: int
    """n."""
    unlabelled: int
    """N."""


def ppi_mean(
    y_labelled: Sequence[float] | np.ndarray,
    f_labelled: Sequence[float] | np.ndarray,
    f_unlabelled: Sequence[float] | np.ndarray,
) -> PPIResult:
    """Prediction-powered point estimate and standard error of a mean (the paper's mean estimator).

    Needs at least two labelled and two unlabelled cases (a sample variance needs two).
    """
    y = np.asarray(y_labelled, dtype=float)
    fl = np.asarray(f_labelled, dtype=float)
    fu = np.asarray(f_unlabelled, dtype=float)
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
    """``value`` clipped to [0, 1]."""
    return min(1.0, max(0.0, value))
