"""The gate bounds rates over the gold's groups (issue 32): a slice whose cases come from a few
groups is not shown good by counting each case as independent."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from conftest import make_case, make_result, result_lines

from workbench.align import alignment_report, join_results
from workbench.gold import load_dataset
from workbench.policy import Policy, evaluate_gate
from workbench.stats import grouped_rate, shortfall, wilson_rate

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
POLICY: dict[str, Any] = {
    "schema_version": 1,
    "name": "grouped",
    "version": "1",
    "owner": "QA lead",
    "rationale": "Limits for the grouped-gate test.",
    "rubric_version": "r1",
    "controls": {"suite": "controls.yaml"},
    "slices": {
        "billing": {"risk": "critical", "max_false_pass_rate": 0.2, "max_abstention_rate": 0.1},
        "general": {"risk": "low", "min_n": 0},
        "empty": {"risk": "medium", "min_n": 0},
    },
}


def _gate(make_dataset, groups: int, per_group: int) -> Any:
    cases = [
        make_case(f"b{g}-{i}", "fail", slice="billing", partition="held_out", group=f"g{g}")
        for g in range(groups)
        for i in range(per_group)
    ]
    cases += [make_case(f"p{i}", "pass", slice="billing", partition="held_out") for i in range(5)]
    dataset = load_dataset(make_dataset(cases))
    rows = [make_result(c, c["adjudication"]["label"]) for c in cases]  # every verdict right
    join = join_results(dataset, result_lines(rows), partition="held_out")
    report = alignment_report(join)
    result = evaluate_gate(
        report, Policy.model_validate(POLICY), join=join, now=NOW, rubric=dataset.rubric
    )
    return report, result


def test_thirty_independent_cases_bound_twenty_percent(make_dataset) -> None:
    report, result = _gate(make_dataset, groups=30, per_group=1)
    billing = next(s for s in report.slices if s.slice == "billing")
    assert billing.false_pass_rate_grouped is None  # one case per group: Wilson is right
    assert billing.false_pass_rate.ci95_high == wilson_rate(0, 30).ci95_high < 0.2
    assert "false_pass_rate_unproven" not in [b.code for b in result.blockers]


def test_thirty_cases_from_three_groups_do_not(make_dataset) -> None:
    report, result = _gate(make_dataset, groups=3, per_group=10)
    billing = next(s for s in report.slices if s.slice == "billing")
    grouped = billing.false_pass_rate_grouped
    assert grouped == grouped_rate([0, 0, 0], [10, 10, 10])
    assert (grouped.groups, grouped.n_effective) == (3, 3.0) and grouped.ci95_high > 0.2
    assert billing.false_pass_rate.ci95_high < 0.2  # plain Wilson would have cleared it
    blocker = next(b for b in result.blockers if b.code == "false_pass_rate_unproven")
    assert blocker.category == "review" and result.outcome == "review_required"
    assert blocker.evidence["groups"] == 3 and blocker.evidence["compared"] == grouped.ci95_high
    assert "3 groups" in blocker.message
    # the plan is in groups too: Wilson needs 61 independent human-fail cases to bound 0.2 at
    # 0.1; at 10 cases a group (design effect 10) that is 610 cases, 61 groups, 580 more
    assert shortfall(30, 0, 0.2, "upper_95").needed_to_bound == 61
    assert blocker.evidence["cases_needed_to_bound_grouped"] == 610
    assert blocker.evidence["groups_needed_to_bound"] == 61
    assert "about 610 human-fail cases judged pass or fail (61 groups of 10.0), 580 more" in (
        blocker.message
    )


def test_splitting_groups_in_a_frozen_gold_to_narrow_the_bound_is_refused(tmp_path) -> None:
    """Insider attack: give every held-out case of the frozen demo gold its own group, so the
    grouped bound falls back to per-case Wilson. The release lineage covers ``group``: refused."""
    import json
    import shutil
    from pathlib import Path

    from click.testing import CliRunner

    from workbench.cli.main import main

    gold = tmp_path / "gold"
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "demo", gold)
    path = gold / "gold.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:
        if record["partition"] == "held_out":
            record["group"] = f"solo-{record['case_id']}"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = CliRunner().invoke(main, ["validate", str(gold)])
    assert result.exit_code == 2
    assert "[frozen_case_edited]" in result.output and "group" in result.output


def test_the_grouped_plan_counts_groups_without_rounding_twice() -> None:
    """The demo's critical slices: 5 human-fail cases in 2 groups, zero false passes (design
    effect 2.5). Wilson needs 61 independent cases to bound 0.2 at 0.1: 61 groups of 2.5 cases,
    152.5 -> 153 cases (the plan once said 62 groups, rounding the cases up first)."""
    from workbench.policy._gate import _grouped_plan

    evidence: dict[str, Any] = {}
    text = _grouped_plan(
        shortfall(5, 0, 0.2, "upper_95"), {"design_effect": 2.5, "groups": 2}, "fail", evidence
    )
    assert evidence == {"cases_needed_to_bound_grouped": 153, "groups_needed_to_bound": 61}
    assert "about 153 human-fail cases judged pass or fail (61 groups of 2.5), 148 more" in text


def test_the_report_shows_the_groups_and_the_interval_the_gate_bounds(make_dataset) -> None:
    """The per-slice table and the slice chart show what the gate decided on: ``k/n in g groups``
    and the grouped interval (Wilson over 30 cases would read 0-11%, a pass at a 20% limit, while
    the gate says the bound is over it: the table contradicted the gate)."""
    from workbench.reports import slice_table
    from workbench.reports._charts import slice_error_data
    from workbench.reports._slices import rows_of

    report, result = _gate(make_dataset, groups=3, per_group=10)
    policy = Policy.model_validate(POLICY)
    billing = next(s for s in report.slices if s.slice == "billing")
    grouped = billing.false_pass_rate_grouped
    row = next(r for r in rows_of(report, policy, result) if r.slice == "billing").record()
    assert row["FP k/n"] == "0/30 in 3 groups"
    high = round(grouped.ci95_high * 100)
    assert row["false-pass rate [95% CI]"].endswith(f"{high}%]") and high > 20
    assert (
        f"{round(billing.false_pass_rate.ci95_high * 100)}%]" not in row["false-pass rate [95% CI]"]
    )
    assert row["FF k/n"] == "0/5"  # passes are one case a group: the plain Wilson interval
    table = slice_table(report, policy, result)
    assert "0/30 in 3 groups" in table.to_html()
    chart = slice_error_data(report, policy, result)
    fp = chart[(chart["slice"] == "billing (critical)") & chart["metric"].str.startswith("false-p")]
    assert fp["high"].item() == grouped.ci95_high > 0.2
    assert fp["k/n"].item() == "0/30 in 3 groups" and fp["label"].item() == "0/30"
