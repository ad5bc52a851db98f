"""The gate's operating characteristics on a policy and a gold: ``workbench plan --simulate``.

For every slice limit the gate bounds (``upper_95`` basis), planted judges whose true rate is a
fraction of the limit judge the slice's real cases of the gate's partition, in their real groups
(human-fail cases for a false-pass limit, human-pass cases for a false-fail limit), with an
assumed intra-class correlation of errors within a group. Slices hold different cases, so with
every slice at the same fraction of its limit P(certified) is the product of the slices'
chances to clear, and P(quality_failed) is one minus the product of their chances not to fail.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .._record import Record as _Model
from ..gold import GoldDataset, Risk
from ..policy import Policy
from ..stats import OperatingPoint, slice_operating_point

FRACTIONS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0)
"""True rates simulated, as fractions of each limit."""


class SliceCurve(_Model):
    """One bounded limit: its design and outcome probabilities along the true rate."""

    slice: str
    """The policy's slice."""
    requirement: str
    """``false_pass_rate`` or ``false_fail_rate``."""
    cases: int
    """Cases in the rate's denominator in the gate's partition."""
    groups: int
    """Groups those cases come from."""
    points: list[OperatingPoint]
    """One per fraction of the limit."""


class GateCurve(_Model):
    """The whole gate's outcome probabilities with every slice at one fraction of its limit."""

    fraction: float
    """True rate as a fraction of each limit."""
    p_certified: float
    """Every slice clears."""
    p_review_required: float
    """No slice fails, one or more cannot be bounded."""
    p_quality_failed: float
    """Some slice's observed rate is above its limit."""


class OperatingReport(_Model):
    """``workbench plan --simulate``: the figures and the assumptions they rest on."""

    policy: str
    partition: str
    icc: float
    """Assumed intra-class correlation of a judge's errors within a group."""
    draws: int
    seed: int
    slices: list[SliceCurve]
    gate: list[GateCurve]


def _designs(
    policy: Policy, dataset: GoldDataset, partition: str
) -> list[tuple[str, str, list[int], float]]:
    """(slice, requirement, cases per group, limit) of every limit bounded on ``upper_95``."""
    rubric = dataset.rubric
    sizes: dict[tuple[str, str | None], Counter[str]] = {}
    for case in dataset.cases.values():
        if case.partition.value == partition:
            sizes.setdefault((case.slice, case.gold_label), Counter())[case.group] += 1
    designs = []
    for name, spec in policy.slices.items():
        critical = (rubric.risk_of(name) or spec.risk.value) == Risk.critical.value
        limits = [
            (
                "false_pass_rate",
                rubric.fail_label,
                spec.max_false_pass_rate,
                "upper_95" if critical else spec.false_pass_rate_basis,
            ),
            (
                "false_fail_rate",
                rubric.pass_label,
                spec.max_false_fail_rate,
                spec.false_fail_rate_basis,
            ),
        ]
        for requirement, label, limit, basis in limits:
            groups = sizes.get((name, label), Counter())
            if limit is not None and basis == "upper_95" and groups:
                designs.append((name, requirement, sorted(groups.values()), limit))
    return designs


def simulate_gate(
    policy: Policy,
    dataset: GoldDataset,
    *,
    icc: float = 0.3,
    fractions: tuple[float, ...] = FRACTIONS,
    draws: int = 4000,
    seed: int = 0,
) -> OperatingReport:
    """Outcome probabilities of the gate on ``dataset``'s cases of the policy's partition."""
    partition = policy.partition or "held_out"
    slices = [
        SliceCurve(
            slice=name,
            requirement=requirement,
            cases=sum(sizes),
            groups=len(sizes),
            points=[
                slice_operating_point(
                    sizes, limit, min(1.0, f * limit), icc=icc, draws=draws, seed=seed
                )
                for f in fractions
            ],
        )
        for name, requirement, sizes, limit in _designs(policy, dataset, partition)
    ]
    gate = []
    for i, fraction in enumerate(fractions):
        clear = not_fail = 1.0
        for curve in slices:
            clear *= curve.points[i].p_clear
            not_fail *= 1 - curve.points[i].p_fail
        gate.append(
            GateCurve(
                fraction=fraction,
                p_certified=clear,
                p_review_required=max(0.0, not_fail - clear),
                p_quality_failed=1 - not_fail,
            )
        )
    return OperatingReport(
        policy=policy.label,
        partition=partition,
        icc=icc,
        draws=draws,
        seed=seed,
        slices=slices,
        gate=gate,
    )


def format_simulation(report: OperatingReport) -> str:
    """The report as text: one line per slice limit, then the whole gate."""
    labels = [f"{c.slice} {c.requirement} <= {c.points[0].limit:g}" for c in report.slices]
    width = max([len("slice limit"), *map(len, labels)])
    fractions = [g.fraction for g in report.gate]
    lines = [
        f"Gate operating characteristics: policy {report.policy}, partition {report.partition},"
        f" intra-group correlation {report.icc:g}, {report.draws} draws (seed {report.seed})",
        "P(slice clears its limit) when the judge's true rate is a fraction of the limit:",
        f"  {'slice limit':<{width}} cases groups " + " ".join(f"{f:>5.2f}x" for f in fractions),
    ]
    for label, curve in zip(labels, report.slices, strict=True):
        cells = " ".join(f"{p.p_clear:>6.3f}" for p in curve.points)
        lines.append(f"  {label:<{width}} {curve.cases:>5} {curve.groups:>6} {cells}")
    if not report.slices:
        lines.append("  no slice limit is bounded on upper_95 with cases in this partition")
    lines.append("Whole gate, every slice at the same fraction of its limit:")
    lines += [
        f"  {g.fraction:>5.2f}x  certified {g.p_certified:.3f}  review_required"
        f" {g.p_review_required:.3f}  quality_failed {g.p_quality_failed:.3f}"
        for g in report.gate
    ]
    return "\n".join(lines)


def simulation_frames(report: OperatingReport) -> tuple[Any, Any]:
    """Two DataFrames: the slice limits simulated (cases, groups, P(clear) at the limit), and
    the whole gate's P(certified), P(review_required), P(quality_failed) against the true rate
    (as a fraction of each limit, and each kind of limit's true rates)."""
    import pandas as pd

    designs = pd.DataFrame(
        [
            {
                "slice": c.slice,
                "limit": f"{c.requirement} <= {c.points[0].limit:g}",
                "cases": c.cases,
                "groups": c.groups,
                "P(clear) at the limit": next(
                    (p.p_clear for p in c.points if p.true_rate == min(1.0, p.limit)), None
                ),
            }
            for c in report.slices
        ],
        columns=["slice", "limit", "cases", "groups", "P(clear) at the limit"],
    )
    rows = []
    for i, g in enumerate(report.gate):
        rates: dict[str, set[str]] = {}
        for c in report.slices:
            rates.setdefault(f"true {c.requirement}", set()).add(f"{c.points[i].true_rate:.3f}")
        rows.append(
            {"true rate / limit": f"{g.fraction:.2f}x"}
            | {name: " / ".join(sorted(v)) for name, v in rates.items()}
            | {
                "P(certified)": g.p_certified,
                "P(review_required)": g.p_review_required,
                "P(quality_failed)": g.p_quality_failed,
            }
        )
    return designs, pd.DataFrame(rows)
