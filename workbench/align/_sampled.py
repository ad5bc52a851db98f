"""Which cases a run's *declared* sampling plan left out, checked before anyone believes it.

The run manifest carries the plan, its sha256 and the sampled-out case ids, frozen before the
first call. Before the alignment (and so the gate) treats a case as sampled out rather than
missing, the plan is checked and re-drawn here:

- the manifest's ``plan_sha256`` must be the plan's own hash;
- the plan must not cover held-out data (no plan may; a held-out run is always complete);
- the plan must not sample a critical slice of this gold's rubric;
- a case counts as sampled out only if the manifest lists it *and* re-drawing the plan over
  the gold's partition leaves it out too.

Anything else stays *missing* (``evaluation_incomplete``): leaving out cases without a declared,
reproducible plan is a scope change.
"""

from __future__ import annotations

from ..gold import GoldDataset
from ..runs import RunManifest
from ..sampling import SampleCase, draw_sample, plan_problems


def verified_sampled_out(manifest: RunManifest | None, dataset: GoldDataset) -> tuple[frozenset[str], str | None]:
    """``(case ids, plan sha256)`` the manifest's plan verifiably left out; empty when none."""
    record = manifest.sampling if manifest is not None else None
    if record is None or manifest is None:
        return frozenset(), None
    plan = record.plan
    if record.plan_sha256 != plan.sha256() or manifest.partition == "held_out":
        return frozenset(), None
    risks = {name: dataset.rubric.risk_of(name) for name in dataset.rubric.slices}
    if any(p.code == "sampling_critical_sampled" for p in plan_problems(plan, risks, location="manifest")):
        return frozenset(), None
    cases = dataset.partition(manifest.partition)
    redrawn = set(draw_sample(plan, [SampleCase(c.case_id, c.slice, c.group) for c in cases]).sampled_out)
    return frozenset(set(record.sampled_out) & redrawn), record.plan_sha256
