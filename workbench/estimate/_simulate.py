"""Simulated traffic with a known true pass rate (``06_production_estimate`` and the coverage
test): one seed draws the certification counts, traffic verdicts and a labelled sample."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from .._docs import add_field_docs
from ._estimate import (
    UNSTABLE_BELOW,
    ProductionEstimate,
    RGInterval,
    SliceEstimate,
    SliceInput,
    estimate_slices,
    methods,
)


class SimulatedSlice(BaseModel):
    """One slice of a simulation scenario."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=add_field_docs)

    slice: str
    """Slice name."""
    risk: str | None = None
    """Risk level shown beside it."""
    true_pass_rate: float = Field(ge=0, le=1)
    """The human-pass rate of the traffic: the truth the estimates are checked against."""
    sensitivity: float = Field(ge=0, le=1)
    """The judge's true P(pass | human pass)."""
    specificity: float = Field(ge=0, le=1)
    """The judge's true P(fail | human fail)."""
    traffic: int = Field(ge=1)
    """Production cases (all decided)."""
    certified_passes: int = Field(ge=1)
    """Held-out human-pass cases the certification judged (sensitivity's denominator)."""
    certified_fails: int = Field(ge=1)
    """Held-out human-fail cases the certification judged (specificity's denominator)."""


DEMO_SCENARIO: tuple[SimulatedSlice, ...] = tuple(
    SimulatedSlice(
        slice=name,
        risk=risk,
        true_pass_rate=rate,
        sensitivity=se,
        specificity=sp,
        traffic=traffic,
        certified_passes=passes,
        certified_fails=fails,
    )
    for name, risk, rate, se, sp, traffic, passes, fails in (
        ("refund_policy", "critical", 0.60, 0.97, 0.80, 1500, 80, 60),
        ("billing_payments", "high", 0.70, 0.95, 0.75, 2500, 120, 60),
        ("shipping_delivery", "medium", 0.85, 0.97, 0.65, 3000, 150, 50),
    )
)
"""A three-slice scenario: a lenient judge (it passes some answers reviewers fail), so the naive
pass rate is too high everywhere."""


def truths(scenario: Sequence[SimulatedSlice] = DEMO_SCENARIO) -> dict[str, float]:
    """The true pass rate of every slice and ``(all)``: what the intervals should hold."""
    total = sum(s.traffic for s in scenario)
    overall = sum(s.traffic / total * s.true_pass_rate for s in scenario)
    return {s.slice: s.true_pass_rate for s in scenario} | {"(all)": overall}


def simulate(
    scenario: Sequence[SimulatedSlice] = DEMO_SCENARIO,
    *,
    labelled: int = 0,
    seed: int = 0,
    interval: RGInterval = "bootstrap",
    unstable_below: float = UNSTABLE_BELOW,
) -> ProductionEstimate:
    """One draw of the scenario, estimated exactly as real traffic is (without a report)."""
    rng = np.random.default_rng(seed)
    total = sum(s.traffic for s in scenario)
    if labelled > total:
        raise ValueError(f"labelled sample {labelled} is larger than the traffic {total}")
    sample = np.zeros(total, dtype=bool)
    sample[rng.choice(total, size=labelled, replace=False)] = True
    inputs: list[SliceInput] = []
    start = 0
    for s in scenario:
        human = rng.random(s.traffic) < s.true_pass_rate
        judge = np.where(
            human, rng.random(s.traffic) < s.sensitivity, rng.random(s.traffic) >= s.specificity
        )
        revealed = np.where(sample[start : start + s.traffic], human.astype(float), np.nan)
        start += s.traffic
        inputs.append(
            SliceInput(
                slice=s.slice,
                risk=s.risk,
                judge_pass=judge.astype(float),
                human_pass=revealed,
                se_x=int(rng.binomial(s.certified_passes, s.sensitivity)),
                se_n=s.certified_passes,
                sp_x=int(rng.binomial(s.certified_fails, s.specificity)),
                sp_n=s.certified_fails,
            )
        )
    rows, overall = estimate_slices(
        inputs, interval=interval, seed=seed, unstable_below=unstable_below
    )
    return ProductionEstimate(
        status="complete",
        confidence=0.95,
        interval=interval,
        seed=seed if interval == "bootstrap" else None,
        unstable_below=unstable_below,
        methods=methods(labelled > 0, interval, seed),
        certification=None,
        inputs={"simulation_seed": str(seed), "labelled": str(labelled)},
        slices=rows,
        overall=overall,
        warnings=[],
    )


def _covers(low: float | None, high: float | None, truth: float) -> bool:
    return low is not None and high is not None and low <= truth <= high


def coverage(
    scenario: Sequence[SimulatedSlice] = DEMO_SCENARIO,
    seeds: Iterable[int] = range(500),
    *,
    labelled: int = 300,
    interval: RGInterval = "bootstrap",
) -> Any:  # a pandas.DataFrame
    """How often each 95% interval holds the truth, per slice and overall, over ``seeds``, with
    mean interval widths and biases (``ppi_*`` None without a labelled sample)."""
    import pandas as pd

    truth = truths(scenario)
    tally: dict[str, dict[str, list[float]]] = {name: {} for name in truth}
    seeds = list(seeds)
    for seed in seeds:
        est = simulate(scenario, labelled=labelled, seed=seed, interval=interval)
        for row in [*est.slices, est.overall]:
            _tally(tally[row.slice], row, truth[row.slice])
    return pd.DataFrame(
        [
            {"slice": name, "truth": truth[name], "draws": len(seeds)}
            | {k: float(np.mean(t[k])) if t.get(k) else None for k in _COLUMNS}
            for name, t in tally.items()
        ]
    )


_COLUMNS = (
    "naive_coverage",
    "corrected_coverage",
    "ppi_coverage",
    "naive_width",
    "corrected_width",
    "ppi_width",
    "naive_bias",
    "corrected_bias",
)


def _tally(t: dict[str, list[float]], row: SliceEstimate, truth: float) -> None:
    n, c, p = row.naive, row.corrected, row.ppi
    values = {
        "naive_coverage": _covers(n.ci95_low, n.ci95_high, truth),
        "corrected_coverage": _covers(c.ci95_low, c.ci95_high, truth),
        "naive_width": (n.ci95_high or 0) - (n.ci95_low or 0),
        "corrected_width": (
            (c.ci95_high or 0) - (c.ci95_low or 0) if c.estimate is not None else np.nan
        ),
        "naive_bias": (n.rate or 0) - truth,
        "corrected_bias": (c.raw if c.raw is not None else np.nan) - truth,
    }
    if p is not None:
        values |= {
            "ppi_coverage": _covers(p.ci95_low, p.ci95_high, truth),
            "ppi_width": p.ci95_high - p.ci95_low,
        }
    for key, value in values.items():
        t.setdefault(key, []).append(value)


def estimate_chart(
    estimate: ProductionEstimate, truth: dict[str, float] | None = None
) -> Any:  # an altair.Chart
    """Naive, corrected and PPI estimates with their 95% intervals per slice (and the truth)."""
    import altair as alt
    import pandas as pd

    rows = []
    for r in [*estimate.slices, estimate.overall]:
        c = r.corrected
        shown: list[tuple[str, float | None, float | None, float | None]] = [
            ("naive", r.naive.rate, r.naive.ci95_low, r.naive.ci95_high),
            ("corrected (Rogan-Gladen)", c.estimate, c.ci95_low, c.ci95_high),
        ]
        if r.ppi is not None:
            shown.append(("PPI", r.ppi.estimate, r.ppi.ci95_low, r.ppi.ci95_high))
        rows += [(r.slice, *m) for m in shown if m[1] is not None]
    data = pd.DataFrame(rows, columns=["slice", "method", "estimate", "low", "high"])
    base = alt.Chart(data).encode(
        y=alt.Y("slice:N", title=None, sort=None),
        yOffset=alt.YOffset("method:N"),
        color=alt.Color("method:N", title=None, legend=alt.Legend(orient="bottom")),
    )
    layers = [
        base.mark_rule(strokeWidth=2).encode(
            x=alt.X("low:Q", title="human-pass rate with 95% interval"), x2=alt.X2("high:Q")
        ),
        base.mark_point(filled=True, size=50).encode(
            x=alt.X("estimate:Q"),
            tooltip=[alt.Tooltip(f) for f in ("slice", "method", "estimate", "low", "high")],
        ),
    ]
    if truth:
        marks = pd.DataFrame([{"slice": k, "truth": v} for k, v in truth.items()])
        layers.append(
            alt.Chart(marks)
            .mark_tick(color="black", thickness=2, size=28)
            .encode(
                y=alt.Y("slice:N", sort=None),
                x=alt.X("truth:Q"),
                tooltip=[alt.Tooltip("slice"), alt.Tooltip("truth")],
            )
        )
    return alt.layer(*layers).properties(
        width=460,
        title="Pass rate: naive vs corrected vs PPI"
        + (" (black tick: the true rate)" if truth else ""),
    )
