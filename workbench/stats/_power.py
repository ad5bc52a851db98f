"""Power and minimum detectable effects: what a sample can rule out, and what a comparison needs.

- :func:`rule_out_rate`: the smallest rate limit a slice can be shown to meet, when the judge
  makes no error on it: the grouped upper bound at zero events (:mod:`._grouped`), so each group
  counts once.
- :func:`mcnemar_pairs_needed`: paired cases needed for McNemar's test to detect a change of
  ``difference`` between two judge versions' error rates with the given power, when a share
  ``discordant`` of cases change verdict (Connor, Biometrics 1987).
- :func:`bh_qvalues`: Benjamini-Hochberg adjusted p-values (statsmodels' ``fdr_bh``) for the
  many per-slice comparisons of an exploration; undefined p-values stay undefined.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ._grouped import grouped_rate


def rule_out_rate(cases_per_group: Sequence[int]) -> float | None:
    """The upper 95% bound of a slice of these groups with no error: the smallest limit it can
    prove (None without a case)."""
    return grouped_rate([0] * len(cases_per_group), list(cases_per_group)).ci95_high


def mcnemar_pairs_needed(
    discordant: float, difference: float, alpha: float = 0.05, power: float = 0.8
) -> int:
    """Paired cases McNemar's two-sided test needs to detect ``difference`` (p10 - p01, the gap
    between the two versions' error rates) when a share ``discordant`` (p10 + p01) of cases
    changes verdict."""
    d, psi = abs(difference), discordant
    if not 0 < d <= psi <= 1 or not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError("need 0 < |difference| <= discordant <= 1, alpha and power in (0, 1)")
    from scipy.stats import norm

    z_a, z_b = float(norm.isf(alpha / 2)), float(norm.isf(1 - power))
    return math.ceil((z_a * math.sqrt(psi) + z_b * math.sqrt(psi - d * d)) ** 2 / (d * d))


def bh_qvalues(pvalues: Sequence[float | None]) -> list[float | None]:
    """Benjamini-Hochberg q-values in the order given; ``None`` stays ``None``."""
    from statsmodels.stats.multitest import multipletests

    known = [i for i, p in enumerate(pvalues) if p is not None]
    q: list[float | None] = [None] * len(pvalues)
    if known:
        adjusted = multipletests([pvalues[i] for i in known], method="fdr_bh")[1]
        for i, value in zip(known, adjusted, strict=True):
            q[i] = float(value)
    return q
