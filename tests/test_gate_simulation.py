"""``workbench plan --simulate`` (issue 32): the gate's outcome probabilities on a policy's real
slice sizes and groups; at the limit the chance of certifying stays <= 5%."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_case
from workbench.gold import load_dataset
from workbench.planning._simulate import format_simulation, simulate_gate
from workbench.policy import Policy, load_policy

ROOT = Path(__file__).resolve().parents[1]
POLICY: dict[str, Any] = {
    "schema_version": 1,
    "name": "sim",
    "version": "1",
    "owner": "QA lead",
    "rationale": "Limits for the simulation test.",
    "rubric_version": "r1",
    "slices": {
        "billing": {"risk": "critical", "max_false_pass_rate": 0.2, "max_abstention_rate": 0.1},
        "general": {"risk": "low", "max_false_pass_rate": 0.5, "false_pass_rate_basis": "point"},
        "empty": {"risk": "medium", "min_n": 0},
    },
}


def _gold(make_dataset, per_group: int, groups: int) -> Any:
    cases = [
        make_case(f"b{g}-{i}", "fail", slice="billing", partition="held_out", group=f"g{g}")
        for g in range(groups)
        for i in range(per_group)
    ]
    cases += [make_case("p1", "pass", slice="billing", partition="held_out")]
    cases += [make_case("d1", "fail", slice="billing", partition="development")]
    return load_dataset(make_dataset(cases))


def test_only_the_gate_partition_and_bounded_limits_are_simulated(make_dataset) -> None:
    report = simulate_gate(Policy.model_validate(POLICY), _gold(make_dataset, 3, 30), draws=2000)
    assert [(c.slice, c.requirement, c.cases, c.groups) for c in report.slices] == [
        ("billing", "false_pass_rate", 90, 30)
    ]  # general is on the point basis; the development case and the pass case are not counted
    at = {g.fraction: g for g in report.gate}
    assert at[0.0].p_certified == 1.0 and at[2.0].p_quality_failed > 0.99
    assert at[1.0].p_certified <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 2000)
    for g in report.gate:
        assert g.p_certified + g.p_review_required + g.p_quality_failed == pytest.approx(1.0)
    certified = [g.p_certified for g in report.gate]
    assert certified == sorted(certified, reverse=True)
    text = format_simulation(report)
    assert "billing false_pass_rate <= 0.2" in text and "   90     30" in text


def test_a_few_large_groups_can_never_certify(make_dataset) -> None:
    # 12 human-fail cases in 2 groups: each group counts once when there is no false pass,
    # and 2 cases cannot bound 20%
    report = simulate_gate(Policy.model_validate(POLICY), _gold(make_dataset, 6, 2), draws=500)
    assert all(g.p_certified == 0.0 for g in report.gate)


def test_demo_policy_figures() -> None:
    report = simulate_gate(
        load_policy(ROOT / "data/policies/support-release@3.yaml"),
        load_dataset(ROOT / "data/demo"),
        draws=500,
    )
    assert {(c.slice, c.cases, c.groups) for c in report.slices} == {
        ("refund_policy", 6, 2),
        ("account_security", 6, 2),
    }
    assert report.partition == "held_out"
    assert all(g.p_certified == 0.0 for g in report.gate)


def test_plan_simulate_command() -> None:
    import json

    from click.testing import CliRunner

    from workbench.cli.main import main

    args = ["plan", "--policy", str(ROOT / "data/policies/support-release@3.yaml")]
    args += ["--gold", str(ROOT / "data/demo"), "--simulate", "--json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["partition"] == "held_out" and report["icc"] == 0.3
    assert [g["fraction"] for g in report["gate"]][:2] == [0.0, 0.25]
    bad = CliRunner().invoke(main, [*args[:-1], "--icc", "1"])
    assert bad.exit_code == 2 and "--icc" in bad.output


def test_certification_report_section_on_the_demo_policy() -> None:
    from workbench.planning import simulation_frames
    from workbench.reports import operating_tables

    policy = load_policy(ROOT / "data/policies/support-release@3.yaml")
    dataset = load_dataset(ROOT / "data/demo")
    designs, gate = operating_tables(policy, dataset, draws=500)
    assert "refund_policy" in designs.to_html() and "P(clear) at the limit" in designs.to_html()
    html = gate.to_html()
    assert "P(certified)" in html and "true false_pass_rate" in html and "1.00x" in html
    _, frame = simulation_frames(simulate_gate(policy, dataset, draws=500))
    assert list(frame["true false_pass_rate"])[:3] == ["0.000", "0.050", "0.100"]
    assert (frame["P(certified)"] == 0.0).all()  # 6 human-fail cases in 2 groups per slice
    total = frame["P(certified)"] + frame["P(review_required)"] + frame["P(quality_failed)"]
    assert total.tolist() == pytest.approx([1.0] * len(frame))


def test_gate_frames_at_the_limit_certify_at_most_5_percent(make_dataset) -> None:
    from workbench.planning import simulation_frames

    report = simulate_gate(Policy.model_validate(POLICY), _gold(make_dataset, 1, 90), draws=2000)
    designs, frame = simulation_frames(report)
    at_limit = frame[frame["true rate / limit"] == "1.00x"].iloc[0]
    assert at_limit["true false_pass_rate"] == "0.200"
    assert at_limit["P(certified)"] <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 2000)
    assert designs.iloc[0]["P(clear) at the limit"] == at_limit["P(certified)"]
    assert frame.iloc[0]["P(certified)"] == 1.0  # a judge that never errs clears 90 cases
