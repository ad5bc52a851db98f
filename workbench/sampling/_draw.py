"""Drawing a plan's sample: deterministic, group-aware, stable when cases are added.

**Order.** Within a slice, every case gets a key that depends only on the seed and the case:
``(sha256("<seed>:group:<group>"), sha256("<seed>:case:<case_id>"))``. Cases are taken in
key order, a whole group at a time (cases of one source prompt or paraphrase family stay
together), until the slice's target (``size``, or ``ceil(fraction x cases)``) is reached: a
sample has at least the target and fewer than one more group beyond it.

**Reproducible.** The same seed and the same cases give the same sample, in any input order.

**Stable.** A case's key depends on no other case, so adding cases never reorders the existing
ones: with a fixed ``size``, a case left out stays left out, and a sampled case leaves the
sample only when a new case (of a group ranked ahead of it) takes its place.

**Work order.** Units run *reserved first*: every critical slice and every slice with a
reservation (by risk, then name), then the other slices (by risk, then name); the engine
admits no call of a later lane while a reserved unit has not started
(:mod:`workbench.runs._limits`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._plan import RISK_ORDER, SamplingPlan

RESERVED_PRIORITY = 0
"""Lane priority of critical slices and slices with a reservation: they run first."""
OTHER_PRIORITY = 1
"""Lane priority of every other slice."""


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
    """Cases of the slice offered to the sampler."""
    target: int
    """Cases the plan asks for (size, or ceil(fraction x cases); all when complete)."""
    sampled: int
    """Cases drawn (whole groups: at least ``target``)."""
    complete: bool
    """True when the slice is judged completely."""


@dataclass(frozen=True)
class Sample:
    """The outcome of :func:`draw_sample`."""

    plan_sha256: str
    sampled: tuple[str, ...]
    """Case ids drawn, in the input order."""
    sampled_out: tuple[str, ...]
    """Case ids the plan leaves out, in the input order."""
    slices: tuple[SliceDraw, ...]
    """Per slice, in the order slices first appear in the input."""


def _h(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sample_key(seed: int, case: SampleCase) -> tuple[str, str]:
    """A case's place in its slice's order: sha256 of the seed and its group, then of its id."""
    group = case.group if case.group is not None else case.case_id
    return (_h(f"{seed}:group:{group}"), _h(f"{seed}:case:{case.case_id}"))


def draw_sample(plan: SamplingPlan, cases: Sequence[SampleCase]) -> Sample:
    """Draw ``plan``'s sample of ``cases`` (see the module doc). Pure: no I/O, no randomness
    beyond the seed. Slices the plan does not list (and complete slices) are kept whole."""
    by_slice: dict[str, list[SampleCase]] = {}
    for case in cases:
        by_slice.setdefault(case.slice, []).append(case)
    keep: set[str] = set()
    draws: list[SliceDraw] = []
    for name, members in by_slice.items():
        entry = plan.entry(name)
        target = entry.target(len(members))
        if not entry.sampled or target >= len(members):
            keep.update(c.case_id for c in members)
            draws.append(
                SliceDraw(
                    name,
                    len(members),
                    len(members) if not entry.sampled else target,
                    len(members),
                    not entry.sampled,
                )
            )
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
    """slice -> US dollars held for it while it has unfinished units (reserved slices only)."""

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
