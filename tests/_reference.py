"""The reference libraries the tests check the workbench against, imported when first called.

statsmodels, scipy.stats and scikit-learn cost seconds of import; every pytest process
(each xdist worker) imported them while collecting the suite, for a handful of tests. The names
here are the libraries' own functions with the same signatures, so a test reads as before:
``proportion_confint(k, n, alpha=0.05, method="wilson")`` is statsmodels'.
"""

from __future__ import annotations

from typing import Any


def proportion_confint(*args: Any, **kwargs: Any) -> Any:
    """``statsmodels.stats.proportion.proportion_confint``."""
    from statsmodels.stats.proportion import proportion_confint as reference

    return reference(*args, **kwargs)


def mcnemar(*args: Any, **kwargs: Any) -> Any:
    """``statsmodels.stats.contingency_tables.mcnemar``."""
    from statsmodels.stats.contingency_tables import mcnemar as reference

    return reference(*args, **kwargs)


def fleiss_kappa(*args: Any, **kwargs: Any) -> Any:
    """``statsmodels.stats.inter_rater.fleiss_kappa``."""
    from statsmodels.stats.inter_rater import fleiss_kappa as reference

    return reference(*args, **kwargs)


def cohen_kappa_score(*args: Any, **kwargs: Any) -> Any:
    """``sklearn.metrics.cohen_kappa_score``."""
    from sklearn.metrics import cohen_kappa_score as reference

    return reference(*args, **kwargs)


def spearmanr(*args: Any, **kwargs: Any) -> Any:
    """``scipy.stats.spearmanr``."""
    from scipy.stats import spearmanr as reference

    return reference(*args, **kwargs)


def kendalltau(*args: Any, **kwargs: Any) -> Any:
    """``scipy.stats.kendalltau``."""
    from scipy.stats import kendalltau as reference

    return reference(*args, **kwargs)
