"""Issue 12: ``review_required`` blockers about too few cases cite the plan's number.

The gate's message and evidence, the certification report's blocker headline and ``workbench
plan`` give one figure: the decided cases needed to bound the limit at half of it (Wilson).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _reference import proportion_confint
from click.testing import CliRunner
from test_policy import Evaluated, clean_spec, make_policy, only, write_policy

from workbench.cli import main
from workbench.policy import Blocker
from workbench.reports import group_blockers
from workbench.stats import cases_needed, cases_to_bound, shortfall, too_few_cases_message


@pytest.fixture
def evaluated(make_dataset):
    return lambda spec: Evaluated(make_dataset, spec)


def _planned(
    tmp_path: Path,
    ev: Evaluated,
    policy_raw: dict[str, Any],
    slice_name: str,
    requirement: str = "false_pass_rate",
) -> dict[str, Any]:
    """The row ``workbench plan --json`` prints for ``slice_name``'s ``requirement``."""
    path = write_policy(tmp_path, policy_raw)
    out = CliRunner().invoke(
        main, ["plan", "--policy", str(path), "--gold", str(ev.dataset.root), "--json"]
    )
    assert out.exit_code in (0, 4), out.output
    return next(
        r
        for r in json.loads(out.output)["rows"]
        if r["slice"] == slice_name and r["requirement"] == requirement
    )


def _raw(policy) -> dict[str, Any]:
    return json.loads(policy.model_dump_json(exclude_none=True))


def test_planned_figure_by_hand_against_statsmodels() -> None:
    """0.10 at half the limit: 127 cases (6 errors), and 126 with 6 errors is still above it."""
    assert cases_to_bound(0.10) == 127
    assert (
        proportion_confint(6, 127, alpha=0.05, method="wilson")[1] <= 0.10
    )  # floor(0.05 * 127) = 6
    assert (
        proportion_confint(6, 126, alpha=0.05, method="wilson")[1] > 0.10
    )  # floor(0.05 * 126) = 6
    assert (
        too_few_cases_message("account_security", 6, 0.10)
        == "account_security: 6 human-fail cases; the limit 0.10 needs at least 127 to bound at"
        " 0.05 (Wilson)"
    )
    need = shortfall(6, 0, 0.10, "upper_95")
    assert (need.needed_to_bound, need.needed_at_zero_errors, need.more) == (
        127,
        cases_needed(0.10),
        121,
    )


def test_unproven_blocker_headline_and_plan_agree(evaluated, tmp_path: Path) -> None:
    ev = evaluated(clean_spec(general_fails=6))  # general: 0 false passes of 6 human fails
    policy = make_policy(
        slices={"general": {"max_false_pass_rate": 0.10, "false_pass_rate_basis": "upper_95"}}
    )
    b = only(ev.gate(policy), "false_pass_rate_unproven")
    row = _planned(tmp_path, ev, _raw(policy), "general")
    planned = row["needed"]
    assert (
        planned == cases_to_bound(0.10) == 127
        and row["have"]["held_out"] == 6
        and row["shortfall"]["held_out"] == 121
    )
    # the gate cites the plan's number, in its words, then the zero-error floor, labelled
    assert (
        f"general: 6 human-fail cases; the limit 0.10 needs at least {planned} to bound at 0.05"
        " (Wilson)" in b.message
    )
    assert f"At zero errors: {cases_needed(0.10)} human-fail cases" in b.message
    assert (
        b.evidence["verdicts_needed_to_bound_at_half_limit"] == planned
        and b.evidence["more_verdicts_needed"] == planned - 6
    )
    assert b.evidence["verdicts_needed_at_zero_errors"] == cases_needed(0.10) == 35
    # the report's headline: the same figures
    (group,) = [g for g in group_blockers([b.model_dump(mode="json")]) if g.slice == "general"]
    assert group.more_cases == row["shortfall"]["held_out"] == 121
    assert (
        f"121 more human-fail cases judged pass or fail needed: {planned} to bound it at half the"
        " limit (35 at zero errors)" in group.headline
    )


def test_unbounded_blocker_cites_the_plan(evaluated, tmp_path: Path) -> None:
    # general: no human-fail case at all, so the false-pass limit cannot be checked
    spec = clean_spec()
    spec["general"] = [("pass", "pass")] * 4
    ev = evaluated(spec)
    policy = make_policy(
        slices={"general": {"max_false_pass_rate": 0.20, "false_pass_rate_basis": "upper_95"}}
    )
    b = only(ev.gate(policy), "rate_unbounded")
    planned = _planned(tmp_path, ev, _raw(policy), "general")["needed"]
    assert planned == cases_to_bound(0.20) == 61
    assert (
        "To bound at half the limit: general: 0 human-fail cases; the limit 0.20 needs at least"
        f" {planned} to bound at 0.10 (Wilson). At zero errors: {cases_needed(0.20)} human-fail"
        " cases" in b.message
    )
    assert (
        b.evidence["verdicts_needed_to_bound_at_half_limit"]
        == planned
        == b.evidence["more_verdicts_needed"]
    )
    (group,) = [g for g in group_blockers([b.model_dump(mode="json")]) if g.slice == "general"]
    assert (
        group.more_cases == planned
        and f"{planned} are needed to bound it at half the limit"
        f" ({cases_needed(0.20)} at zero errors)"
        in group.headline
    )


def test_enough_cases_but_rate_above_half_the_limit(evaluated) -> None:
    """With the planned number already there, the blocker says so and counts the error-free cases
    still needed.
    """
    spec = clean_spec()
    spec["general"] = (
        [("pass", "pass")] * 4 + [("fail", "pass")] * 9 + [("fail", "fail")] * 121
    )  # 9 / 130: 0.069, above 0.05
    ev = evaluated(spec)
    b = only(
        ev.gate(
            make_policy(
                slices={
                    "general": {"max_false_pass_rate": 0.10, "false_pass_rate_basis": "upper_95"}
                }
            )
        ),
        "false_pass_rate_unproven",
    )
    more = b.evidence["more_verdicts_needed"]
    assert (
        b.evidence["human_fails_decided"]
        == 130
        > b.evidence["verdicts_needed_to_bound_at_half_limit"]
        == 127
    )
    # by hand: the smallest m with the Wilson upper bound of 9 / (130 + m) within 0.10
    assert (
        proportion_confint(9, 130 + more, alpha=0.05, method="wilson")[1]
        <= 0.10
        < proportion_confint(9, 130 + more - 1, alpha=0.05, method="wilson")[1]
    )
    assert (
        "The slice has that many, but its observed rate is above half the limit" in b.message
        and f"{more} more human-fail cases" in b.message
    )
    (group,) = [g for g in group_blockers([b.model_dump(mode="json")]) if g.slice == "general"]
    assert (
        group.more_cases == more
        and f"{more} more human-fail cases judged pass or fail"
        " (with no further false pass) would bound it"
        in group.headline
    )


def test_old_gate_json_without_the_fields_gets_the_same_figures() -> None:
    """A gate.json written before the sample-size fields: the report computes the gate's numbers."""
    old = Blocker(
        code="false_pass_rate_unproven",
        category="review",
        slice="s",
        risk="critical",
        message="too few",
        evidence={
            "false_passes": 0,
            "human_fails_decided": 6,
            "rate": 0.0,
            "ci95_low": 0.0,
            "ci95_high": 0.39,
            "basis": "upper_95",
            "compared": 0.39,
            "limit": 0.1,
            "verdicts_needed_at_zero_errors": 35,
        },
        waivable=False,
    )
    (group,) = group_blockers([old.model_dump(mode="json")])
    assert (
        group.more_cases == 121
        and "127 to bound it at half the limit (35 at zero errors)" in group.headline
    )
