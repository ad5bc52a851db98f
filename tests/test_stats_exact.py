"""``workbench.stats._exact``: Fisher's exact test and Benjamini-Hochberg q-values without
importing scipy.stats, equal (``==``, not approximately) to scipy's and statsmodels' results."""

from __future__ import annotations

import itertools
import subprocess
import sys
from fractions import Fraction
from math import comb

import numpy as np
import pytest
from scipy.stats import fisher_exact
from statsmodels.stats.multitest import multipletests

from workbench.stats import bh_qvalues, fisher_exact_p
from workbench.stats._exact import fdr_bh


def test_fisher_by_hand() -> None:
    # Lady tasting tea: 3 of 4 right. Tables at least as extreme: a = 0, 1, 3, 4 of C(8, 4) = 70.
    p = Fraction(comb(4, 0) ** 2 + comb(4, 1) ** 2 + comb(4, 3) ** 2 + comb(4, 4) ** 2, 70)
    assert fisher_exact_p([[3, 1], [1, 3]]) == pytest.approx(float(p), rel=1e-12)  # 34/70
    assert fisher_exact_p([[2, 2], [2, 2]]) == 1.0  # the most likely table
    assert fisher_exact_p([[0, 5], [0, 7]]) == 1.0  # an empty column
    with pytest.raises(ValueError, match="nonnegative"):
        fisher_exact_p([[1, -1], [2, 3]])


def test_fisher_equals_scipy_on_every_small_table() -> None:
    tables = itertools.product(range(11), repeat=4)
    different = [
        t
        for t in tables
        if fisher_exact_p([[t[0], t[1]], [t[2], t[3]]])
        != float(fisher_exact([[t[0], t[1]], [t[2], t[3]]]).pvalue)
    ]
    assert different == []


def test_fisher_equals_scipy_on_random_tables() -> None:
    rng = np.random.default_rng(31)
    for high in (40, 400, 5000):  # Boost's factorial, prime-table and Lanczos regimes
        for a, b, c, d in rng.integers(0, high, size=(300, 4)).tolist():
            assert fisher_exact_p([[a, b], [c, d]]) == float(fisher_exact([[a, b], [c, d]]).pvalue)
    # A cell against the rest of a slice, as the breakdown tests it: tiny and lopsided tables.
    for k, n, total_k, total_n in [(0, 1, 0, 82), (1, 1, 1, 82), (5, 9, 7, 82), (0, 3, 40, 82)]:
        table = [[k, n - k], [total_k - k, total_n - n - (total_k - k)]]
        assert fisher_exact_p(table) == float(fisher_exact(table).pvalue)


def test_fdr_bh_equals_statsmodels() -> None:
    rng = np.random.default_rng(7)
    cases = [[0.5], [0.01, 0.04, 0.03, 0.2], [1.0, 1.0, 0.0], [0.02, 0.02, 0.02, 0.9]]
    cases += [rng.random(n).tolist() for n in (2, 5, 17, 60)]
    cases += [rng.choice([0.001, 0.01, 0.05, 0.5, 1.0], size=30).tolist()]  # ties
    for pvalues in cases:
        assert fdr_bh(pvalues) == multipletests(pvalues, method="fdr_bh")[1].tolist()
    assert bh_qvalues([0.01, None, 0.04]) == [0.02, None, 0.04]  # by hand: 0.01 * 2 / 1


def test_neither_imports_scipy_stats_or_statsmodels() -> None:
    code = (
        "import sys\n"
        "from workbench.stats import bh_qvalues, fisher_exact_p\n"
        "fisher_exact_p([[3, 1], [1, 3]]); bh_qvalues([0.1, 0.2])\n"
        "print(sorted(m for m in sys.modules if m in ('scipy.stats', 'statsmodels')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_without_scipys_private_hypergeometric_functions_the_public_test_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from workbench.stats import _exact

    # as a scipy release that renamed one (scipy.stats itself still calls the real ones)
    monkeypatch.setattr(_exact, "_BOOST", (*_exact._BOOST, "_hypergeom_renamed"))
    monkeypatch.setattr(_exact, "_Hypergeom", None)  # the private path is not taken
    for table in ([[3, 1], [1, 3]], [[0, 9], [7, 2]], [[12, 40], [3, 90]]):
        assert fisher_exact_p(table) == float(fisher_exact(table).pvalue)
