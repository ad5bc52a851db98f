"""Statistics against closed forms, hand arithmetic and independent libraries."""

from __future__ import annotations

import math
import warnings
from statistics import NormalDist

import krippendorff
import numpy as np
import pytest
from _fresh import run_fresh
from _reference import cohen_kappa_score, proportion_confint
from _reference import fleiss_kappa as sm_fleiss
from conftest import alpha_by_coincidences, alpha_nominal_of, fleiss_of

from workbench.stats import cohen_kappa, wilson_rate

Z = NormalDist().inv_cdf(0.975)  # 1.959963...


def wilson_closed_form(k: int, n: int) -> tuple[float, float]:
    """Wilson score interval: (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)."""
    p = k / n
    denom = 1 + Z**2 / n
    centre = (p + Z**2 / (2 * n)) / denom
    half = Z * math.sqrt(p * (1 - p) / n + Z**2 / (4 * n**2)) / denom
    return centre - half, centre + half


# ---------------------------------------------------------------- Wilson


@pytest.mark.parametrize(
    ("k", "n"), [(0, 1), (0, 10), (1, 10), (3, 10), (5, 10), (10, 10), (7, 33), (1, 1000)]
)
def test_wilson_matches_closed_form_and_statsmodels(k, n):
    rate = wilson_rate(k, n)
    low, high = wilson_closed_form(k, n)
    sm_low, sm_high = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert (rate.k, rate.n, rate.rate) == (k, n, k / n)
    assert rate.ci95_low == pytest.approx(max(0.0, low), abs=1e-12)
    assert rate.ci95_high == pytest.approx(min(1.0, high), abs=1e-12)
    assert rate.ci95_low == pytest.approx(sm_low, abs=1e-12)
    assert rate.ci95_high == pytest.approx(sm_high, abs=1e-12)
    assert 0.0 <= rate.ci95_low <= rate.rate <= rate.ci95_high <= 1.0


def test_wilson_textbook_value():
    # 0/10: upper = z²/n / (1 + z²/n) = 0.38415/1.38415 = 0.2775 (the "rule of three"-like bound)
    upper = (Z**2 / 10) / (1 + Z**2 / 10)
    assert upper == pytest.approx(0.2775, abs=1e-4)
    assert wilson_rate(0, 10).ci95_high == pytest.approx(upper, abs=1e-12)
    assert wilson_rate(0, 10).ci95_low == 0.0


def test_wilson_n_zero_is_undefined():
    rate = wilson_rate(0, 0)
    assert (rate.rate, rate.ci95_low, rate.ci95_high) == (None, None, None)
    assert rate.n == 0 and "undefined" in rate.format()


@pytest.mark.parametrize(("k", "n"), [(-1, 5), (6, 5), (0, -1)])
def test_wilson_rejects_impossible_proportions(k, n):
    with pytest.raises(ValueError, match="invalid proportion"):
        wilson_rate(k, n)


# ---------------------------------------------------------------- Cohen


def test_cohen_kappa_hand_computed():
    # confusion (a rows, b cols): pass/pass 4, pass/fail 2, fail/pass 1, fail/fail 3; n = 10
    a = ["pass"] * 6 + ["fail"] * 4
    b = ["pass"] * 4 + ["fail"] * 2 + ["pass"] * 1 + ["fail"] * 3
    # p_o = 7/10; p_e = (6/10)(5/10) + (4/10)(5/10) = 0.5; kappa = (0.7 - 0.5)/(1 - 0.5) = 0.4
    kappa = cohen_kappa(a, b)
    assert kappa.value == pytest.approx(0.4, abs=1e-12)
    assert kappa.n == 10 and kappa.note is None
    assert kappa.value == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_cohen_kappa_unused_vocabulary_labels_do_not_change_it():
    a = ["pass", "pass", "fail", "fail"]
    b = ["pass", "fail", "fail", "fail"]
    # p_o = 3/4; p_e = (2/4)(1/4) + (2/4)(3/4) = 1/2; kappa = (3/4 - 1/2)/(1/2) = 0.5
    assert cohen_kappa(a, b, labels=["pass", "fail", "review_required"]).value == pytest.approx(0.5)


def test_cohen_kappa_three_labels_against_sklearn():
    a = ["pass", "fail", "review_required", "pass", "fail", "pass", "review_required", "fail"]
    b = ["pass", "fail", "pass", "pass", "review_required", "fail", "review_required", "fail"]
    # p_o = 5/8; marginals a (p,f,r) = 3,3,2 ; b = 3,3,2
    # p_e = (9 + 9 + 4)/64 = 22/64; kappa = (40/64 - 22/64)/(42/64) = 18/42 = 3/7
    assert cohen_kappa(a, b).value == pytest.approx(3 / 7, abs=1e-12)
    assert cohen_kappa(a, b).value == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_cohen_kappa_complete_disagreement_is_minus_one():
    # p_o = 0, p_e = 1/2·1/2 + 1/2·1/2 = 1/2 -> kappa = -1
    assert cohen_kappa(["pass", "fail"], ["fail", "pass"]).value == pytest.approx(-1.0)


def test_cohen_kappa_single_label_is_undefined_with_a_note():
    kappa = cohen_kappa(["pass"] * 5, ["pass"] * 5)
    assert kappa.value is None and kappa.n == 5 and kappa.note


def test_cohen_kappa_no_items_and_length_mismatch():
    assert cohen_kappa([], []).value is None
    assert cohen_kappa([], []).n == 0
    with pytest.raises(ValueError, match="differ in length"):
        cohen_kappa(["pass"], ["pass", "fail"])


# ---------------------------------------------------------------- Fleiss


def test_fleiss_kappa_hand_computed():
    items = [["p", "p", "p"], ["p", "p", "f"], ["f", "f", "f"], ["p", "f", "f"]]
    # P_i = (sum n_ij^2 - n) / (n(n-1)) with n = 3: 1, (4+1-3)/6 = 1/3, 1, 1/3 -> P_bar = 2/3
    # p_pass = 6/12, p_fail = 6/12 -> P_e = 1/2; kappa = (2/3 - 1/2)/(1 - 1/2) = 1/3
    kappa = fleiss_of(items, ["p", "f"])
    assert kappa.value == pytest.approx(1 / 3, abs=1e-12)
    assert kappa.n == 4
    table = np.array([[3, 0], [2, 1], [0, 3], [1, 2]])
    assert kappa.value == pytest.approx(sm_fleiss(table, method="fleiss"), abs=1e-12)


def test_fleiss_kappa_textbook_example():
    # Fleiss (1971) / Wikipedia: 10 subjects, 14 raters, 5 categories, kappa = 0.210
    table = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    items = [[cat for cat, count in enumerate(row, start=1) for _ in range(count)] for row in table]
    kappa = fleiss_of(items, [1, 2, 3, 4, 5])
    assert kappa.value == pytest.approx(0.210, abs=5e-4)
    assert kappa.value == pytest.approx(sm_fleiss(np.array(table), method="fleiss"), abs=1e-12)


@pytest.mark.parametrize("seed", range(40))
def test_fleiss_kappa_equals_statsmodels_to_the_last_bit(seed):
    """The closed form against statsmodels on random tables: 1-60 items, 2-9 raters, 2-6
    categories, skewed and uniform (every value compared with ==, not approx)."""
    rng = np.random.default_rng(seed)
    items_n, raters, cats = (
        int(rng.integers(1, 61)),
        int(rng.integers(2, 10)),
        int(rng.integers(2, 7)),
    )
    weights = rng.dirichlet(np.full(cats, 0.3 if seed % 2 else 5.0))
    items = [list(rng.choice(cats, size=raters, p=weights)) for _ in range(items_n)]
    table = np.zeros((items_n, cats))
    for row, item in enumerate(items):
        for label in item:
            table[row, label] += 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = float(sm_fleiss(table, method="fleiss"))
    got = fleiss_of([[int(x) for x in item] for item in items], list(range(cats))).value
    if math.isnan(want):
        assert got is None
    else:
        assert got == want


def test_fleiss_kappa_needs_no_statsmodels():
    """The closed form imports neither statsmodels nor scipy (0.7 s in every certification)."""
    code = (
        "import sys; import numpy as np; from workbench.stats import fleiss_kappa_table; "
        "k = fleiss_kappa_table(np.array([[2.0, 1.0], [0.0, 3.0]])); "
        "print(k.value is not None, 'statsmodels' in sys.modules, 'scipy' in sys.modules)"
    )
    assert run_fresh(code).split() == ["True", "False", "False"]


def test_fleiss_kappa_unequal_rater_counts_is_undefined_with_a_note():
    kappa = fleiss_of([["p", "p"], ["p", "f", "f"]], ["p", "f"])
    assert kappa.value is None and kappa.n == 2 and "different numbers of raters" in kappa.note


def test_fleiss_kappa_degenerate_cases():
    assert fleiss_of([], ["p", "f"]).value is None
    assert fleiss_of([["p"], ["f"]], ["p", "f"]).value is None
    same = fleiss_of([["p", "p"], ["p", "p"]], ["p", "f"])
    assert same.value is None and same.note


# ---------------------------------------------------------------- Krippendorff

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 observers, 12 units,
# values 1..5, None = missing. Published nominal alpha = 0.743.
KRIPP = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}


def kripp_units() -> list[dict[str, int]]:
    return [{r: vals[i] for r, vals in KRIPP.items() if vals[i] is not None} for i in range(12)]


def test_krippendorff_alpha_textbook_example():
    units = kripp_units()
    alpha = alpha_nominal_of(units, [1, 2, 3, 4, 5])
    assert alpha.value == pytest.approx(0.743, abs=5e-4)
    assert alpha.value == pytest.approx(alpha_by_coincidences(units), abs=1e-12)
    data = np.array(
        [[np.nan if v is None else v for v in vals] for vals in KRIPP.values()], dtype=float
    )
    assert alpha.value == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"), abs=1e-12
    )
    # unit 12 has a single rating and is not pairable: 11 units count
    assert alpha.n == 11


def test_krippendorff_alpha_with_string_labels_and_missing_raters():
    units = [
        {"a": "pass", "b": "pass"},
        {"a": "pass", "b": "fail", "c": "fail"},
        {"a": "fail", "c": "fail"},
        {"b": "pass", "c": "pass"},
        {"a": "fail", "b": "fail", "c": "pass"},
        {"a": "pass"},
    ]
    alpha = alpha_nominal_of(units, ["pass", "fail", "review_required"])
    assert alpha.value == pytest.approx(alpha_by_coincidences(units), abs=1e-12)
    assert alpha.n == 5


def test_krippendorff_alpha_undefined_cases():
    assert alpha_nominal_of([{"a": "pass"}, {"b": "fail"}], ["pass", "fail"]).value is None
    same = alpha_nominal_of([{"a": "pass", "b": "pass"}] * 3, ["pass", "fail"])
    assert same.value is None and same.n == 3 and same.note


def test_cohen_kappa_refuses_labels_outside_the_vocabulary():
    # scikit-learn would drop the ("x", "x") item and still n would say 3
    with pytest.raises(ValueError, match="outside the vocabulary"):
        cohen_kappa(["x", "pass", "fail"], ["x", "fail", "fail"], labels=["pass", "fail"])


# ------------------------------------------- closed forms equal the libraries to the last bit


def test_wilson_closed_form_equals_statsmodels_exactly():
    """The hot path computes Wilson intervals itself; the report must not change by one bit."""
    # n above 2**26.5 too: there n*n is no longer exact, and Python's float ** 2 (pow) and
    # numpy's square (a multiply) can differ in the last bit
    big = [96_556_801, 97_690_605, 98_073_729, 99_433_037, 123_456_789, 987_654_321]
    for n in [*range(1, 60), 99, 100, 101, 997, 1000, 33_333, 100_000, 1_000_000, *big]:
        for k in sorted(k for k in {0, 1, 2, n // 7, n // 3, n // 2, n - 1, n} if 0 <= k <= n):
            rate = wilson_rate(k, n)
            sm_low, sm_high = proportion_confint(k, n, alpha=0.05, method="wilson")
            assert (rate.ci95_low, rate.ci95_high) == (float(sm_low), float(sm_high)), (k, n)
    for alpha in (0.1, 0.01):
        rate = wilson_rate(7, 33, alpha=alpha)
        assert (rate.ci95_low, rate.ci95_high) == tuple(
            map(float, proportion_confint(7, 33, alpha=alpha, method="wilson"))
        )


def test_cohen_kappa_closed_form_equals_sklearn_exactly():
    rng = np.random.default_rng(11)
    vocab = ["pass", "fail", "review_required"]
    for trial in range(300):
        n = int(rng.integers(2, 400))
        k = int(rng.integers(2, 4))
        a = [vocab[i] for i in rng.integers(0, k, n)]
        b = [x if rng.random() < 0.7 else vocab[int(rng.integers(0, k))] for x in a]
        if len(set(a) | set(b)) < 2:
            continue
        used = [lab for lab in vocab if lab in set(a) | set(b)]
        ours = cohen_kappa(a, b, labels=vocab).value
        reference = float(cohen_kappa_score(a, b, labels=used))
        assert ours == reference or (ours is None and math.isnan(reference)), trial
        assert (
            cohen_kappa(a, b).value == float(cohen_kappa_score(a, b))
            or cohen_kappa(a, b).value is None
        )
