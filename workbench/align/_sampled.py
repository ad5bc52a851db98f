"""Which cases a run's *declared* sampling plan left out, checked before anyone believes it:
anything the checks cannot confirm stays *missing*."""

from __future__ import annotations

from ..gold import GoldDataset
from ..results import RunManifest
from ..sampling import SampleCase, SamplingPlan, draw_sample, plan_problems


def verified_sampled_out(
    manifest: RunManifest | None, dataset: GoldDataset, declared: SamplingPlan | None = None
) -> tuple[frozenset[str], str | None, str | None]:
    """``(case ids, plan sha256, rejection)``: the cases the manifest's plan verifiably left out,
    the plan's hash, and why a recorded plan was not accepted (None when it was, or there is
    none)."""
    record = manifest.sampling if manifest is not None else None
    if record is None or manifest is None or not record.sampled_out:
        return frozenset(), None, None
    plan = record.plan
    short = record.plan_sha256[:12]
    if record.plan_sha256 != plan.sha256():
        return _rejected(
            f"the run manifest's sampling plan does not match its recorded sha256 {short}: the"
            " manifest was edited"
        )
    if declared is None:
        return _rejected(
            f"the run was drawn under sampling plan {short}, but no plan was declared to accept"
            " it (the policy has no `sampling:`)"
        )
    if declared.sha256() != record.plan_sha256:
        return _rejected(
            f"the run was drawn under sampling plan {short}, not under the declared plan"
            f" {declared.sha256()[:12]}"
        )
    if manifest.partition == "held_out":
        return _rejected("a sampling plan never applies to held-out data")
    risks = {name: dataset.rubric.risk_of(name) for name in dataset.rubric.slices}
    critical = [
        p.message
        for p in plan_problems(plan, risks, location="manifest")
        if p.code == "sampling_critical_sampled"
    ]
    if critical:
        return _rejected(critical[0])
    cases = dataset.partition(manifest.partition)
    redrawn = set(
        draw_sample(plan, [SampleCase(c.case_id, c.slice, c.group) for c in cases]).sampled_out
    )
    listed = set(record.sampled_out)
    extra = sorted(listed - redrawn)
    why = (
        f"the manifest lists {len(extra)} sampled-out case(s) the plan does not leave out when"
        f" re-drawn ({', '.join(extra[:5])}): they count as missing"
    )
    return frozenset(listed & redrawn), record.plan_sha256, why if extra else None


def _rejected(why: str) -> tuple[frozenset[str], None, str]:
    return frozenset(), None, why
