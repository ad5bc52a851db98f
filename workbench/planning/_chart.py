"""The plan as a chart: the 95% upper bound as a function of n, per limit (Altair, rendered
offline)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..stats import Interval, bound_plan, upper_bound
from ._plan import SamplePlan


def bound_curve(
    limit: float, at_fraction: float = 0.5, interval: Interval = "wilson", n_max: int | None = None
) -> Any:
    """A DataFrame of the upper bound vs n: at ``floor(at_fraction·limit·n)`` errors and at zero
    errors."""
    import pandas as pd

    plan = bound_plan(limit, at_fraction, interval)
    top = n_max or max(20, int((plan.needed or 100) * 1.5))
    ns = np.arange(1, top + 1)
    errors = np.floor(plan.true_rate * ns + 1e-9)
    planned = np.asarray(upper_bound(errors, ns, interval))
    zero = np.asarray(upper_bound(np.zeros_like(ns), ns, interval))
    label = f"limit {limit:g}"
    frames = [
        pd.DataFrame(
            {
                "n": ns,
                "upper_95": planned,
                "errors": errors.astype(int),
                "curve": f"at true rate {plan.true_rate:.3g} (floor of rate x n errors)",
                "limit": label,
            }
        ),
        pd.DataFrame(
            {"n": ns, "upper_95": zero, "errors": 0, "curve": "with zero errors", "limit": label}
        ),
    ]
    return pd.concat(frames, ignore_index=True)


def plan_chart(plan: SamplePlan, limits: list[float] | None = None) -> Any:
    """Upper 95% bound vs n, one panel per rate limit (default: those on the ``upper_95`` basis,
    else all), with the limit (dashed) and the planned n (red)."""
    import altair as alt

    rate_limits = [
        (r.limit, r.basis) for r in plan.rows if r.requirement != "min_n" and r.limit is not None
    ]
    chosen = (
        limits
        or sorted({limit for limit, basis in rate_limits if basis == "upper_95"})
        or sorted({limit for limit, _ in rate_limits})
    )
    name = "Wilson" if plan.interval == "wilson" else "Clopper-Pearson"
    panels = []
    for limit in chosen:
        p = bound_plan(limit, plan.at_fraction, plan.interval)
        data = bound_curve(limit, plan.at_fraction, plan.interval)
        line = (
            alt.Chart(data)
            .mark_line(interpolate="step-after")
            .encode(
                x=alt.X("n:Q", title="decided cases n"),
                y=alt.Y(
                    "upper_95:Q",
                    title=f"upper 95% bound ({name})",
                    scale=alt.Scale(domain=[0, min(1.0, max(0.3, 3 * limit))], clamp=True),
                ),
                color=alt.Color(
                    "curve:N", title=None, legend=alt.Legend(orient="bottom", labelLimit=400)
                ),
                tooltip=[alt.Tooltip(field) for field in ("n", "errors", "upper_95")],
            )
        )
        marks = alt.Chart(data.head(1).assign(value=limit, needed=p.needed))
        layers = [
            line,
            marks.mark_rule(strokeDash=[4, 3], color="black").encode(y=alt.Y("value:Q")),
        ]
        if p.needed is not None:
            layers.append(
                marks.mark_rule(color="firebrick").encode(
                    x=alt.X("needed:Q"), tooltip=[alt.Tooltip("needed")]
                )
            )
            layers.append(
                marks.mark_text(align="left", dx=4, dy=-60, color="firebrick").encode(
                    x=alt.X("needed:Q"), text=alt.TextValue(f"n = {p.needed}")
                )
            )
        panels.append(
            alt.layer(*layers).properties(
                width=320, height=200, title=f"limit {limit:g}, true rate {p.true_rate:.3g}"
            )
        )
    return alt.concat(*panels, columns=3).properties(
        title=(
            "Upper 95% bound vs n (dashed: the limit; red: the planned n at a true rate of"
            f" {plan.at_fraction:g} x limit)"
        )
    )
