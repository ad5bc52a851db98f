"""Which cases a run's *declared* sampling plan left out, checked before anyone believes it.

The run manifest carries the plan, its sha256 and the sampled-out case ids, frozen before the
first call. Before the alignment (and so the gate) treats a case as sampled out rather than
missing, the plan is checked and re-drawn here:

- the caller must *declare* the plan it accepts (the policy's ``sampling:`` for the gate, the
  ``--policy`` or ``--sampling-plan`` of ``workbench align``), and its sha256 must equal the
  manifest's: a run drawn under another plan, or under a plan nobody declared to the reader,
  is not accepted;
- the manifest's ``plan_sha256`` must be the recorded plan's own hash;
- the plan must not cover held-out data (no plan may; a held-out run is always complete);
- the plan must not sample a critical slice of this gold's rubric;
- a case counts as sampled out only if the manifest lists it *and* re-drawing the plan over
  the gold's partition leaves it out too.

Anything else stays *missing* (``evaluation_incomplete``): leaving out cases without a declared,
reproducible plan is a scope change. The reason a recorded plan was not accepted is returned so
the report and the gate can say it.
"""

from __future__ import annotations

from ..gold import GoldDataset
from ..results import RunManifest
from ..sampling import SampleCase, SamplingPlan, draw_sample, plan_problems


def verified_sampled_out(
    manifest: RunManifest | None, dataset: GoldDataset, declared: SamplingPlan | None = None
) -> tuple[frozenset[str], str | None, str | None]:
    """``(case ids, plan sha256, rejection)``: the cases the manifest's plan verifiably left out
    (empty when none), the plan's hash, and why a recorded plan was not accepted (None when it
    was, or when the run has no plan)."""
    record = manifest.sampling if manifest is not None else None
    if record is None or manifest is None or not record.sampled_out:
        return frozenset(), None, None
    plan = record.plan
    short = record.plan_sha256[:12]
    if record.plan_sha256 != plan.sha256():
        return (
            frozenset(),
            None,
            (
                f"the run manifest's sampling plan does not match its recorded sha256 {short}: the"
                " manifest was edited"
            ),
        )
    if declared is None:
        return (
            frozenset(),
            None,
            (
                f"the run was drawn under sampling plan {short}, but no plan was declared to accept"
                " it (the policy has no `sampling:`)"
            ),
        )
    if declared.sha256() != record.plan_sha256:
        return (
            frozenset(),
            None,
            (
                f"the run was drawn under sampling plan {short}, not under the declared plan"
                f" {declared.sha256()[:12]}"
            ),
        )
    if manifest.partition == "held_out":
        return frozenset(), None, "a sampling plan never applies to held-out data"
    risks = {name: dataset.rubric.risk_of(name) for name in dataset.rubric.slices}
    critical = [
        p.message
        for p in plan_problems(plan, risks, location="manifest")
        if p.code == "sampling_critical_sampled"
    ]
    if critical:
        return frozenset(), None, critical[0]
    cases = dataset.partition(manifest.partition)
    redrawn = set(
        draw_sample(plan, [SampleCase(c.case_id, c.slice, c.group) for c in cases]).sampled_out
    )
    listed = set(record.sampled_out)
    if not listed <= redrawn:
        extra = sorted(listed - redrawn)
        return (
            frozenset(listed & redrawn),
            record.plan_sha256,
            (
                f"the manifest lists {len(extra)} sampled-out case(s) the plan does not leave out"
                f" when re-drawn ({', '.join(extra[:5])}): they count as missing"
            ),
        )
    return frozenset(listed), record.plan_sha256, None
