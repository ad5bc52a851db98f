"""Drawing a plan's sample: deterministic, group-aware, stable when cases are added.

Within a slice each case's key is ``(sha256("<seed>:group:<group>"), sha256("<seed>:case:<id>"))``,
so it depends on no other case: cases are taken in key order, a whole group at a time, until the
slice's target is reached. Units run reserved first: critical slices and slices with a
reservation, then the rest, each by risk then name (:mod:`workbench.runs._limits`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._plan import RISK_ORDER, SamplingPlan

RESERVED_PRIORITY = 0
OTHER_PRIORITY = 1


@dataclass(frozen=True)
class SampleCase:
    """What the sampler needs of a case: its id, slice and group (source prompt family)."""

    case_id: str
    slice: str
    group: str | None = None


@dataclass(frozen=True)
class SliceDraw:
    """How one slice was drawn."""

    slice: str
    cases: int
    target: int
    sampled: int
    complete: bool


@dataclass(frozen=True)
class Sample:
    """The outcome of :func:`draw_sample`."""

    plan_sha256: str
    sampled: tuple[str, ...]
    """Case ids drawn, in the input order (as ``sampled_out``, those left out)."""
    sampled_out: tuple[str, ...]
    slices: tuple[SliceDraw, ...]


def _h(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sample_key(seed: int, case: SampleCase) -> tuple[str, str]:
    group = case.group if case.group is not None else case.case_id
    return (_h(f"{seed}:group:{group}"), _h(f"{seed}:case:{case.case_id}"))


def draw_sample(plan: SamplingPlan, cases: Sequence[SampleCase]) -> Sample:
    """Draw ``plan``'s sample of ``cases`` (see the module doc); unsampled slices stay whole."""
    by_slice: dict[str, list[SampleCase]] = {}
    for case in cases:
        by_slice.setdefault(case.slice, []).append(case)
    keep: set[str] = set()
    draws: list[SliceDraw] = []
    for name, members in by_slice.items():
        entry = plan.entry(name)
        target = entry.target(len(members))
        if not entry.sampled or target >= len(members):
            keep.update(c.case_id for c in members)  # an unsampled slice's target is every case
            draws.append(SliceDraw(name, len(members), target, len(members), not entry.sampled))
            continue
        groups: dict[str, list[SampleCase]] = {}
        for case in sorted(members, key=lambda c: sample_key(plan.seed, c)):
            groups.setdefault(sample_key(plan.seed, case)[0], []).append(case)
        taken = 0
        for group_key in sorted(groups):
            if taken >= target:
                break
            keep.update(c.case_id for c in groups[group_key])
            taken += len(groups[group_key])
        draws.append(SliceDraw(name, len(members), target, taken, False))
    return Sample(
        plan_sha256=plan.sha256(),
        sampled=tuple(c.case_id for c in cases if c.case_id in keep),
        sampled_out=tuple(c.case_id for c in cases if c.case_id not in keep),
        slices=tuple(draws),
    )


@dataclass(frozen=True)
class Lanes:
    """The work order and budget holds a plan gives a run, per slice."""

    priority: Mapping[str, int]
    """slice -> :data:`RESERVED_PRIORITY` or :data:`OTHER_PRIORITY`."""
    holds: Mapping[str, float]
    """slice -> US dollars held for it while it has unfinished units."""

    def order_key(
        self, slice_name: str | None, risks: Mapping[str, str | None]
    ) -> tuple[int, int, str]:
        """Sort key of a unit of ``slice_name``: lane, risk, slice name."""
        name = slice_name or ""
        return (
            self.priority.get(name, OTHER_PRIORITY),
            RISK_ORDER.get(risks.get(name) or "", len(RISK_ORDER)),
            name,
        )


def plan_lanes(
    plan: SamplingPlan | None, risks: Mapping[str, str | None], budget_usd: float | None
) -> Lanes:
    """The lanes of a run under ``plan``: critical slices and slices with a reservation first."""
    reserved = {name for name, risk in risks.items() if risk == "critical"}
    holds: dict[str, float] = {}
    if plan is not None:
        reserved |= {name for name, entry in plan.slices.items() if entry.reserved}
        holds = {name: value for name, value in plan.reservations(budget_usd).items() if value > 0}
    return Lanes(
        priority={
            name: RESERVED_PRIORITY if name in reserved else OTHER_PRIORITY for name in risks
        },
        holds=holds,
    )
