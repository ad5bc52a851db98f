"""Sample-size planning for a policy: :func:`plan_policy`, what ``workbench plan`` prints.

Per slice, the **decided** cases the gate needs for each requirement: a rate limit on the
``upper_95`` basis needs :func:`workbench.stats.bound_plan`'s n (a judge at ``at_fraction`` of
the limit still bounded under it, for that n and every larger one); a ``point`` limit or a
count-only limit needs one case; ``min_n`` its count. The plan compares with the adjudicated
cases of each partition (the best case: abstentions and errors need more) and prints the
shortfall.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from .._record import Record as _Model
from ..gold import PARTITIONS, GoldDataset, Risk
from ..policy import Policy, policy_sha256
from ..stats import Interval, bound_plan, cases_needed

PLAN_SCHEMA_VERSION = 1
Requirement = Literal["false_pass_rate", "false_fail_rate", "min_n"]
CaseKind = Literal["human_fail", "human_pass", "all"]


class PlanRow(_Model):
    """One requirement of one slice: the cases it needs and what each partition has."""

    slice: str
    """Rubric slice."""
    risk: str | None
    """The rubric's risk level of the slice."""
    requirement: Requirement
    """``false_pass_rate``, ``false_fail_rate`` or ``min_n``."""
    cases: CaseKind
    """Which decided cases count: ``human_fail``, ``human_pass`` or ``all``."""
    limit: float | None
    """The rate limit, or for ``min_n`` the count (None: a count-only false-pass limit)."""
    basis: str | None = None
    """``upper_95`` or ``point`` as the gate applies it."""
    true_rate: float | None = None
    """The true rate planned for: ``at_fraction × limit``."""
    needed: int | None
    """Decided cases the gate needs; None: no sample can show the limit."""
    needed_upper_95: int | None = None
    """The interval figure (see module doc), shown on every basis."""
    needed_at_zero_errors: int | None = None
    """Cases the upper bound needs with no error at all."""
    errors_at_needed: int | None = None
    """``floor(true_rate × needed_upper_95)``: errors the planned sample holds."""
    power: float | None = None
    """Chance that ``needed_upper_95`` cases drawn at the true rate show the limit."""
    have: dict[str, int]
    """Adjudicated cases of this kind in the slice, by partition."""
    have_groups: dict[str, int] = Field(default_factory=dict)
    """The gold groups those cases come from, by partition (rate rows): the gate bounds over
    groups, so cases of few groups show less than their count."""
    shortfall: dict[str, int]
    """``max(0, needed - have)`` by partition; empty when ``needed`` is None."""
    note: str = ""
    """A caveat, e.g. a count limit that any planned error breaks."""


class SamplePlan(_Model):
    """The plan for one policy on one dataset: ``workbench plan --json``."""

    schema_version: int = PLAN_SCHEMA_VERSION
    """Plan format version."""
    kind: Literal["workbench.plan"] = "workbench.plan"
    """Document kind."""
    policy: str
    """``name@version`` of the policy."""
    policy_sha256: str | None
    """sha256 of the policy file, when planned from one."""
    dataset_sha256: str
    """Hash of the gold dataset counted."""
    rubric_version: str
    """The dataset's rubric version."""
    gate_partition: str | None
    """The partition the policy certifies on, where the shortfall matters."""
    at_fraction: float
    """The true rate planned for, as a fraction of each limit."""
    interval: Interval
    """``wilson`` (the gate's) or ``clopper-pearson``, two-sided 95%."""
    partitions: list[str]
    """Partitions counted, in order."""
    rows: list[PlanRow]
    """Requirements, slice by slice in the policy's order."""

    def short(self, partition: str | None = None) -> list[PlanRow]:
        """Rows with a shortfall (or no possible sample) in ``partition`` (default: the gate's)."""
        part = partition or self.gate_partition or "held_out"
        return [r for r in self.rows if r.needed is None or r.shortfall.get(part, 0) > 0]


def _counts(
    dataset: GoldDataset,
) -> tuple[Counter[tuple[str, str, str]], dict[tuple[str, str, str], set[str]]]:
    """Cases, and the groups they come from, by (slice, partition, kind)."""
    rubric = dataset.rubric
    kinds = {rubric.fail_label: "human_fail", rubric.pass_label: "human_pass"}
    counts: Counter[tuple[str, str, str]] = Counter()
    groups: dict[tuple[str, str, str], set[str]] = {}
    for case in dataset.cases.values():
        for kind in (kinds.get(case.gold_label, "other"), "all"):
            counts[(case.slice, case.partition.value, kind)] += 1
            groups.setdefault((case.slice, case.partition.value, kind), set()).add(case.group)
    return counts, groups


def _group_note(row: PlanRow, have_groups: dict[str, int], partition: str) -> PlanRow:
    """The row with its groups, and a note when the gate partition's cases share groups: the need
    is then up to that many groups (when a group's cases are alike), not cases."""
    row = row.model_copy(update={"have_groups": have_groups})
    have, groups = row.have.get(partition, 0), have_groups.get(partition, 0)
    if row.needed is None or row.needed <= 1 or groups >= have:
        return row
    note = (
        f"the {have} {row.cases.replace('_', '-')} cases of {partition} come from {groups}"
        f" groups: the gate bounds over groups, so when a group's cases are alike it needs up to"
        f" {row.needed} groups, not cases (plan --simulate --icc shows the chance)"
    )
    return row.model_copy(update={"note": "; ".join(filter(None, [row.note, note]))})


def _count_note(row: PlanRow, count: int | None) -> PlanRow:
    if count is None or row.limit is None or row.needed is None or row.true_rate is None:
        return row
    errors = int(row.true_rate * row.needed + 1e-9)
    if errors <= count:
        return row
    note = (
        f"max_false_passes {count} also applies: a judge at the planned true rate makes {errors}"
        f" false passes in {row.needed} cases and fails the count limit whatever n; with no false"
        f" pass at all, {row.needed_at_zero_errors} cases bound the rate"
    )
    return row.model_copy(update={"note": note})


def plan_policy(
    policy: Policy,
    dataset: GoldDataset,
    *,
    at_fraction: float = 0.5,
    interval: Interval = "wilson",
    policy_path: str | Path | None = None,
) -> SamplePlan:
    """Plan every slice of ``policy`` and compare with ``dataset``'s adjudicated counts per
    partition."""
    rubric = dataset.rubric
    counts, groups = _counts(dataset)
    partitions = list(PARTITIONS)
    gate = policy.partition or "held_out"
    rows: list[PlanRow] = []
    for name, spec in policy.slices.items():
        risk = rubric.risk_of(name) or spec.risk.value
        have = {k: {p: counts[(name, p, k)] for p in partitions} for k in _KINDS}
        in_groups = {k: {p: len(groups.get((name, p, k), ())) for p in partitions} for k in _KINDS}
        head = (name, risk, at_fraction, interval)
        if spec.max_false_passes is not None or spec.max_false_pass_rate is not None:
            basis = "upper_95" if risk == Risk.critical.value else spec.false_pass_rate_basis
            row = _rate_row(*head, "false_pass_rate", spec.max_false_pass_rate, basis, have)
            row = _count_note(row, spec.max_false_passes)
            rows.append(_group_note(row, in_groups[row.cases], gate))
        if spec.max_false_fail_rate is not None:
            limit, basis = spec.max_false_fail_rate, spec.false_fail_rate_basis
            row = _rate_row(*head, "false_fail_rate", limit, basis, have)
            rows.append(_group_note(row, in_groups[row.cases], gate))
        min_n = policy.min_n_for(name)
        if min_n > 0:
            rows.append(
                PlanRow(
                    slice=name,
                    risk=risk,
                    requirement="min_n",
                    cases="all",
                    limit=float(min_n),
                    needed=min_n,
                    have=have["all"],
                    shortfall={p: max(0, min_n - have["all"][p]) for p in partitions},
                )
            )
    return SamplePlan(
        policy=policy.label,
        policy_sha256=policy_sha256(policy_path) if policy_path else None,
        dataset_sha256=dataset.sha256,
        rubric_version=rubric.version,
        gate_partition=policy.partition,
        at_fraction=at_fraction,
        interval=interval,
        partitions=partitions,
        rows=rows,
    )


_KINDS: tuple[CaseKind, ...] = ("human_fail", "human_pass", "all")


def _rate_row(
    name: str,
    risk: str | None,
    at_fraction: float,
    interval: Interval,
    requirement: Requirement,
    limit: float | None,
    basis: str,
    have_all: dict[CaseKind, dict[str, int]],
) -> PlanRow:
    cases: CaseKind = "human_fail" if requirement == "false_pass_rate" else "human_pass"
    have = have_all[cases]
    # a count-only false-pass limit: one decided human-fail case, as the gate's rate_unbounded rule
    plan = bound_plan(limit, at_fraction, interval) if limit is not None else None
    needed = plan.needed if plan is not None and basis == "upper_95" else 1
    if limit is None:
        zero = None
    elif interval == "wilson":
        zero = cases_needed(limit)
    else:
        zero = bound_plan(limit, 0.0, interval).needed
    return PlanRow(
        slice=name,
        risk=risk,
        requirement=requirement,
        cases=cases,
        limit=limit,
        basis=basis if limit is not None else None,
        true_rate=plan.true_rate if plan else None,
        needed=needed,
        needed_upper_95=plan.needed if plan else None,
        needed_at_zero_errors=zero,
        errors_at_needed=plan.errors_at_needed if plan else None,
        power=plan.power if plan else None,
        have=have,
        shortfall={p: max(0, needed - n) for p, n in have.items()} if needed is not None else {},
        note="" if limit is not None else "count-only limit: one decided case makes it checkable",
    )


def plan_frame(plan: SamplePlan) -> Any:  # a pandas.DataFrame
    """The plan as a table: one row per requirement, have/short per partition."""
    import pandas as pd

    records = []
    for r in plan.rows:
        row = r.model_dump(exclude={"errors_at_needed", "have", "have_groups", "shortfall", "note"})
        row["power"] = None if r.power is None else round(r.power, 3)
        for p in plan.partitions:
            row[f"have_{p}"] = r.have.get(p, 0)
            row[f"short_{p}"] = r.shortfall.get(p)
        row["note"] = r.note
        records.append(row)
    return pd.DataFrame(records)


def format_plan(plan: SamplePlan, partitions: Sequence[str] | None = None) -> str:
    """Fixed-width text of the plan with the shortfall per partition."""
    parts = list(partitions or plan.partitions)
    name = "Wilson score" if plan.interval == "wilson" else "Clopper-Pearson (exact)"
    lines = [
        f"plan:       {plan.policy}"
        + (f" (sha256 {plan.policy_sha256[:12]})" if plan.policy_sha256 else ""),
        (
            f"data:       dataset {plan.dataset_sha256[:12]}, rubric {plan.rubric_version}; the"
            f" gate certifies on {plan.gate_partition or '(any partition)'}"
        ),
        (
            f"method:     {name} two-sided 95% upper bound <= limit at floor(true_rate x n) errors,"
            f" for n and every larger n; true rate = {plan.at_fraction:g} x limit"
        ),
        (
            "            'have' counts adjudicated cases; the gate counts decided verdicts"
            " (abstentions and errors need more)"
        ),
    ]
    columns = "slice|risk|requirement|limit|basis|true rate|needed|upper_95 n|zero-error n|power"
    header = columns.split("|") + [f"{p} have/short" for p in parts]
    rows = [header]
    for r in plan.rows:
        limit = (
            "-"
            if r.limit is None
            else (f"{int(r.limit)} cases" if r.requirement == "min_n" else f"{r.limit:g}")
        )
        cells = [
            r.slice,
            r.risk or "",
            f"{r.requirement} ({r.cases.replace('_', '-')})",
            limit,
            r.basis or "-",
            "-" if r.true_rate is None else f"{r.true_rate:.3g}",
            "impossible" if r.needed is None else str(r.needed),
            "-" if r.needed_upper_95 is None else str(r.needed_upper_95),
            "-" if r.needed_at_zero_errors is None else str(r.needed_at_zero_errors),
            "-" if r.power is None else f"{r.power:.2f}",
        ]
        for p in parts:
            short = r.shortfall.get(p)
            cells.append(
                f"{r.have.get(p, 0)}/"
                + ("-" if short is None else ("ok" if short == 0 else f"short {short}"))
            )
        rows.append(cells)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines += [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    notes = [f"  {r.slice} {r.requirement}: {r.note}" for r in plan.rows if r.note]
    if notes:
        lines.append("notes:")
        lines += notes
    gate = plan.gate_partition or "held_out"
    short_rows = plan.short(gate)
    lines.append(
        f"{gate}: {len(short_rows)} of {len(plan.rows)} requirement(s) short"
        + (": " + ", ".join(f"{r.slice} {r.requirement}" for r in short_rows) if short_rows else "")
    )
    return "\n".join(lines)
