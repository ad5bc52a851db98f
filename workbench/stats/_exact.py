"""Fisher's exact test and Benjamini-Hochberg q-values as scipy and statsmodels compute them,
bit for bit, without importing ``scipy.stats`` (``statsmodels.stats.multitest`` imports it too):
about 1.2 s of CPU in each process, a certification's kernel included, against the 0.2 s of
``scipy.special``, whose hypergeometric functions (Boost's, as ``scipy.stats.hypergeom`` calls
them) are the ones used here. ``tests/test_stats_exact.py`` compares both with ``==`` against
``scipy.stats.fisher_exact`` and ``statsmodels``' ``multipletests(method="fdr_bh")``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

_EPSILON = 1e-14
"""``fisher_exact``'s relative tolerance for tables as likely as the observed one."""


class _Hypergeom:
    """``scipy.stats.hypergeom``'s pmf, cdf and sf at integer ``k`` for one population: ``M``
    items, ``n`` of them marked, ``N`` drawn (``rv_discrete``'s support checks and clipping)."""

    def __init__(self, M: Any, n: Any, N: Any) -> None:
        import numpy as np

        self.args = (np.int64(n), np.int64(N), np.int64(M))
        self.low, self.high = max(N - (M - n), 0), min(n, N)

    def _call(self, name: str, k: int) -> float:
        import numpy as np
        from scipy.special import _ufuncs

        function: Any = getattr(_ufuncs, name)
        return float(np.clip(function(np.int64(k), *self.args), 0, 1))

    def pmf(self, k: int) -> float:
        return self._call("_hypergeom_pmf", k) if self.low <= k <= self.high else 0.0

    def cdf(self, k: int) -> float:
        if k >= self.high:
            return 1.0
        return self._call("_hypergeom_cdf", k) if k >= self.low else 0.0

    def sf(self, k: int) -> float:
        if k < self.low:
            return 1.0
        return self._call("_hypergeom_sf", k) if k < self.high else 0.0


def _binary_search(a: Callable[[int], float], d: float, lo: int, hi: int) -> int:
    """The ``i`` in ``[lo, hi]`` with ``a(i) <= d < a(i + 1)``, ``a`` ascending (scipy's
    ``_binary_search_for_binom_tst``)."""
    while lo < hi:
        mid = lo + (hi - lo) // 2
        value = a(mid)
        if value < d:
            lo = mid + 1
        elif value > d:
            hi = mid - 1
        else:
            return mid
    return lo if a(lo) <= d else lo - 1


_BOOST = ("_hypergeom_pmf", "_hypergeom_cdf", "_hypergeom_sf")
"""The private ``scipy.special._ufuncs`` names used; if a scipy release drops one, the public
``scipy.stats.fisher_exact`` answers instead (slower to import, same value)."""


def _boost_available() -> bool:
    try:
        from scipy.special import _ufuncs
    except ImportError:  # pragma: no cover - scipy is a dependency
        return False
    return all(hasattr(_ufuncs, name) for name in _BOOST)


def fisher_exact_p(table: Sequence[Sequence[int]]) -> float:
    """Two-sided p-value of Fisher's exact test on the 2x2 ``table`` of counts, equal to
    ``scipy.stats.fisher_exact(table).pvalue``. Raises ``ValueError`` on a negative count."""
    (a, b), (c, d) = ((int(x) for x in row) for row in table)
    if min(a, b, c, d) < 0:
        raise ValueError("All values in `table` must be nonnegative.")
    if not _boost_available():
        from scipy.stats import fisher_exact

        return float(fisher_exact([[a, b], [c, d]]).pvalue)
    if 0 in (a + c, b + d, a + b, c + d):
        return 1.0
    n1, n2, n = a + b, c + d, a + c
    dist = _Hypergeom(n1 + n2, n1, n)
    mode = int((n + 1) * (n1 + 1) / (n1 + n2 + 2))
    pexact, pmode = dist.pmf(a), dist.pmf(mode)
    gamma = 1 + _EPSILON
    if abs(pexact - pmode) / max(pexact, pmode) <= _EPSILON:
        return 1.0
    if a < mode:
        plower = dist.cdf(a)
        if dist.pmf(n) > pexact * gamma:
            return plower
        guess = _binary_search(lambda x: -dist.pmf(x), -pexact * gamma, mode, n)
        return min(plower + dist.sf(guess), 1.0)
    pupper = dist.sf(a - 1)
    if dist.pmf(0) > pexact * gamma:
        return pupper
    guess = _binary_search(dist.pmf, pexact * gamma, 0, mode)
    return min(pupper + dist.cdf(guess), 1.0)


def fdr_bh(pvalues: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values in the order given, equal to
    ``statsmodels.stats.multitest.multipletests(pvalues, method="fdr_bh")[1]``."""
    import numpy as np

    p = np.asarray(pvalues, dtype=float)
    order = np.argsort(p)
    ranked = np.take(p, order)
    ecdf = np.arange(1, len(ranked) + 1) / float(len(ranked))
    adjusted = np.minimum.accumulate((ranked / ecdf)[::-1])[::-1]
    adjusted[adjusted > 1] = 1
    out = np.empty_like(adjusted)
    out[order] = adjusted
    return [float(v) for v in out]
