"""Cluster-aware rates (issue 32): the grouped Wilson interval against hand-computed values,
statsmodels' cluster-robust variance and Wilson's interval, its coverage under correlation,
and the gate rule's operating characteristics (P(certify) at the limit <= 5%)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy.stats import binom
from scipy.stats import t as student_t
from statsmodels.stats.proportion import proportion_confint

from workbench.stats._grouped import grouped_rate
from workbench.stats._operating import operating_curve, slice_operating_point
from workbench.stats._power import bh_qvalues, mcnemar_pairs_needed, rule_out_rate


@pytest.mark.parametrize(("k", "n"), [(0, 1), (0, 20), (3, 20), (7, 61), (20, 20)])
def test_one_case_per_group_is_wilson(k: int, n: int) -> None:
    rate = grouped_rate([1] * k + [0] * (n - k), [1] * n)
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert (rate.groups, rate.design_effect, rate.n_effective) == (n, 1.0, n)
    assert rate.ci95_low == pytest.approx(low, abs=1e-12)
    assert rate.ci95_high == pytest.approx(high, abs=1e-12)


def test_hand_computed_design_effect_and_bound() -> None:
    # p = 3/20; spread = .25^2 + .75^2 + .75^2 + 1.25^2 = 2.75; cluster variance
    # 4/3 * 2.75 / 400 = 0.0091667; binomial .15 * .85 / 20 = 0.006375; deff = 1.43791
    rate = grouped_rate([1, 0, 0, 2], [5, 5, 5, 5])
    assert rate.design_effect == pytest.approx((4 / 3 * 2.75 / 400) / (0.15 * 0.85 / 20))
    assert rate.design_effect == pytest.approx(1.437908, abs=1e-6)
    n_eff = 20 / rate.design_effect
    c = student_t.isf(0.025, 3)
    q = 0.15
    centre = (q + c * c / (2 * n_eff)) / (1 + c * c / n_eff)
    half = c * math.sqrt(q * (1 - q) / n_eff + c * c / (4 * n_eff**2)) / (1 + c * c / n_eff)
    assert rate.ci95_high == pytest.approx(centre + half, abs=1e-12)
    assert rate.ci95_low == pytest.approx(centre - half, abs=1e-12)


def test_no_event_counts_each_group_once() -> None:
    rate = grouped_rate([0, 0, 0, 0], [5, 5, 5, 5])
    c2 = student_t.isf(0.025, 3) ** 2
    assert (rate.design_effect, rate.n_effective) == (5.0, 4.0)
    assert rate.ci95_high == pytest.approx(c2 / (4 + c2), abs=1e-12)  # Wilson at 0 of 4
    assert rate.ci95_low == 0.0


def test_design_effect_matches_statsmodels_cluster_robust_variance() -> None:
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 9, size=25)
    k = rng.binomial(sizes, rng.beta(2, 6, size=25))
    y = np.concatenate([[1] * a + [0] * (m - a) for a, m in zip(k, sizes, strict=True)])
    groups = np.repeat(np.arange(25), sizes)
    fit = sm.OLS(y, np.ones(len(y))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    p = y.mean()
    expected = max(1.0, fit.bse[0] ** 2 / (p * (1 - p) / len(y)))
    rate = grouped_rate(list(k), list(sizes))
    assert rate.design_effect == pytest.approx(expected, rel=1e-10) and rate.groups == 25


def test_grouping_never_narrows_and_refuses_bad_counts() -> None:
    for k in ([0, 1, 0, 1], [1, 1, 1, 1], [2, 0, 0, 0]):
        wide = grouped_rate(k, [2, 2, 2, 2])
        low, high = proportion_confint(sum(k), 8, alpha=0.05, method="wilson")
        assert wide.ci95_high >= high - 1e-12 and wide.ci95_low <= low + 1e-12
    assert grouped_rate([], []).rate is None
    with pytest.raises(ValueError, match="events <= cases"):
        grouped_rate([3], [2])


def _coverage(grouped: bool, rate: float = 0.2, icc: float = 0.5, draws: int = 2000) -> float:
    rng = np.random.default_rng(3)
    sizes = [5] * 12
    scale = (1 - icc) / icc
    hits = 0
    for _ in range(draws):
        k = rng.binomial(sizes, rng.beta(rate * scale, (1 - rate) * scale, size=12))
        if grouped:
            r = grouped_rate(list(k), sizes)
            lo, hi = r.ci95_low, r.ci95_high
        else:
            lo, hi = proportion_confint(int(k.sum()), 60, method="wilson")
        hits += lo <= rate <= hi
    return hits / draws


def test_grouped_interval_keeps_its_coverage_where_wilson_loses_it() -> None:
    assert _coverage(grouped=True) >= 0.93
    assert _coverage(grouped=False) < 0.85


def test_independent_slice_matches_the_exact_binomial_figure() -> None:
    n, limit = 61, 0.2
    exact = sum(
        binom.pmf(k, n, limit)
        for k in range(n + 1)
        if proportion_confint(k, n, method="wilson")[1] <= limit
    )
    point = slice_operating_point([1] * n, limit, limit, draws=20000)
    assert point.p_clear == pytest.approx(exact, abs=3 * math.sqrt(exact / 20000) + 1e-9)
    assert point.p_clear + point.p_review + point.p_fail == pytest.approx(1.0)


DESIGNS = {
    "independent 61": [1] * 61,
    "demo-like 6 groups": [6, 5, 8, 7, 10, 4],
    "12 groups of 5": [5] * 12,
    "40 pairs": [2] * 40,
}


@pytest.mark.parametrize("icc", [0.0, 0.2, 0.5])
@pytest.mark.parametrize("design", list(DESIGNS))
def test_at_the_limit_the_gate_certifies_at_most_5_percent(design: str, icc: float) -> None:
    point = slice_operating_point(DESIGNS[design], 0.2, 0.2, icc=icc, draws=4000, seed=11)
    # 4000 draws: 3 standard errors of a 5% chance are 1.0 point
    assert point.p_clear <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 4000)


def test_plain_wilson_on_grouped_cases_certifies_far_too_often() -> None:
    naive = slice_operating_point([5] * 12, 0.2, 0.2, icc=0.5, grouped=False, seed=11)
    grouped = slice_operating_point([5] * 12, 0.2, 0.2, icc=0.5, grouped=True, seed=11)
    assert naive.p_clear > 0.08 > grouped.p_clear


def test_operating_curve_rises_as_the_true_rate_falls() -> None:
    curve = operating_curve({"billing": ([2] * 40, 0.2)}, fractions=(0.0, 0.25, 0.5, 1.0, 2.0))
    clear = [p.p_clear for p in curve["billing"]]
    assert clear == sorted(clear, reverse=True) and clear[0] == 1.0 and clear[-1] == 0.0
    assert curve["billing"][-1].p_fail == 1.0
    with pytest.raises(ValueError, match="icc"):
        slice_operating_point([3], 0.2, 0.1, icc=1.0)


def test_rule_out_rate_counts_groups_not_cases() -> None:
    assert rule_out_rate([1] * 61) == pytest.approx(proportion_confint(0, 61, method="wilson")[1])
    c2 = student_t.isf(0.025, 11) ** 2
    assert rule_out_rate([5] * 12) == pytest.approx(c2 / (12 + c2))
    assert rule_out_rate([]) is None


def _exact_mcnemar_power(n: int, p10: float, p01: float, alpha: float = 0.05) -> float:
    """Exact power of the exact (binomial) McNemar test: sum over the discordant count."""
    psi, power = p10 + p01, 0.0
    for discordant in range(1, n + 1):
        b = np.arange(discordant + 1)
        tail = np.minimum(binom.cdf(b, discordant, 0.5), binom.sf(b - 1, discordant, 0.5))
        reject = np.minimum(1.0, 2 * tail) < alpha
        power += binom.pmf(discordant, n, psi) * binom.pmf(b, discordant, p10 / psi)[reject].sum()
    return float(power)


def test_mcnemar_sample_size_hand_computed_and_achieves_its_power() -> None:
    # (1.95996 * sqrt(.2) + 0.84162 * sqrt(.19))^2 / .1^2 = 154.6
    assert mcnemar_pairs_needed(0.2, 0.1) == 155
    achieved = _exact_mcnemar_power(155, 0.15, 0.05)
    assert 0.75 <= achieved <= 0.85
    assert _exact_mcnemar_power(60, 0.15, 0.05) < 0.6  # fewer pairs, less power
    with pytest.raises(ValueError, match="discordant"):
        mcnemar_pairs_needed(0.05, 0.1)


def test_bh_qvalues_by_hand() -> None:
    q = bh_qvalues([0.01, 0.04, 0.03, None, 0.2])
    assert q[3] is None
    assert q[:3] + q[4:] == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.2])
    assert bh_qvalues([]) == [] and bh_qvalues([None]) == [None]


def test_one_group_knows_nothing_and_says_so_without_nan() -> None:
    for k in (0, 1, 5):
        rate = grouped_rate([k], [5])
        assert (rate.groups, rate.n_effective, rate.ci95_low, rate.ci95_high) == (1, 1.0, 0.0, 1.0)
