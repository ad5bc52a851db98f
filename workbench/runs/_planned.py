"""The cases a run plans: the whole partition, or a sampling plan's draw.

One function for both executors (the local engine, :mod:`._engine`, and the Ray driver,
:mod:`._ray`), so the same plan freezes the same manifest whichever runs it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..gold import GoldCase, GoldDataset
from ..sampling import Lanes, SampleCase, SamplingPlan, check_plan, draw_sample, plan_lanes
from ._manifest import ManifestSampling

__all__ = ["Planned", "plan_cases", "slice_risks"]


def slice_risks(dataset: GoldDataset) -> dict[str, str | None]:
    """slice -> risk, from the gold's rubric (orders lanes and cost figures)."""
    return {name: dataset.rubric.risk_of(name) for name in dataset.rubric.slices}


@dataclass(frozen=True)
class Planned:
    """The cases a run plans and the plan they were drawn under."""

    cases: list[GoldCase]
    """Every case of the partition, or the plan's sample, in the partition's order."""
    risks: dict[str, str | None]
    """slice -> risk."""
    sampling: ManifestSampling | None = None
    """The plan's record frozen in the manifest (None without a plan)."""
    lanes: Lanes | None = None
    """The plan's lanes (None without a plan)."""


def plan_cases(
    dataset: GoldDataset,
    cases: list[GoldCase],
    part: str,
    budget_usd: float | None,
    plan: SamplingPlan | None,
    source: str | None,
) -> Planned:
    """Check ``plan`` against the gold and the budget, and draw its sample from ``cases``."""
    risks = slice_risks(dataset)
    if plan is None:
        return Planned(cases, risks)
    check_plan(plan, risks, location=source or "sampling plan", scope=part, budget_usd=budget_usd)
    sample = draw_sample(plan, [SampleCase(c.case_id, c.slice, c.group) for c in cases])
    kept = set(sample.sampled)
    record = ManifestSampling(
        plan=plan,
        plan_sha256=sample.plan_sha256,
        sampled_out=sorted(sample.sampled_out),
        slices={
            d.slice: {"cases": d.cases, "target": d.target, "sampled": d.sampled}
            for d in sample.slices
        },
    )
    return Planned(
        [c for c in cases if c.case_id in kept], risks, record, plan_lanes(plan, risks, budget_usd)
    )
