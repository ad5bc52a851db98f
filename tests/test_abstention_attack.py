"""Issue 8 §1, reproduced: a judge that abstains, or never separates pass from fail, is refused.

Every judge here is trivial; before the fix the gate certified the first, third and fourth
(exit 0) on a policy without critical slices. The policies below use only fields that existed
before the fix (no ``max_abstention_rate``), so the same tests show the old behaviour.

Data: ``billing`` (declared high risk here) 10 human fails + 10 human passes + 1 human
review_required; ``general`` (low) 5 + 5; ``empty`` declared without cases.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import RUBRIC, make_case, make_result, result_lines, write_results
from lineage_support import stamped

from workbench.align import alignment_report, join_results
from workbench.cli.gate import gate as gate_cmd
from workbench.gold import load_dataset
from workbench.policy import GateResult, Policy, evaluate_gate

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
NO_CRITICAL_RUBRIC: dict[str, Any] = {
    **RUBRIC,
    "slices": {**RUBRIC["slices"], "billing": {"risk": "high"}},
}
POLICY: dict[str, Any] = {
    "schema_version": 1,
    "name": "lenient-release",
    "version": "1",
    "owner": "QA lead",
    "rationale": (
        "No critical slice; false passes limited on the observed rate; false fails not limited."
    ),
    "rubric_version": "r1",
    "slices": {
        "billing": {
            "risk": "high",
            "max_false_passes": 1,
            "max_false_pass_rate": 0.2,
            "false_pass_rate_basis": "point",
        },
        "general": {"risk": "low", "max_false_pass_rate": 0.3, "false_pass_rate_basis": "point"},
        "empty": {"risk": "medium", "min_n": 0},
    },
}


def cases() -> list[dict[str, Any]]:
    out = [make_case(f"bil-f{i}", "fail", slice="billing") for i in range(10)]
    out += [make_case(f"bil-p{i}", "pass", slice="billing") for i in range(10)]
    out += [make_case("bil-r0", "review_required", slice="billing")]
    out += [make_case(f"gen-f{i}", "fail") for i in range(5)]
    out += [make_case(f"gen-p{i}", "pass") for i in range(5)]
    return out


JUDGES = {
    # every verdict review_required: 0 agreement on pass/fail, nothing in any denominator
    "all_abstain": lambda human: "review_required",
    "all_pass": lambda human: "pass",
    "all_fail": lambda human: "fail",
    # one decided label only: fails what humans fail, abstains on everything else
    "constant_label": lambda human: "fail" if human == "fail" else "review_required",
}


def rows_for(judge: str) -> list[dict[str, Any]]:
    return [make_result(c, JUDGES[judge](c["adjudication"]["label"])) for c in cases()]


def gate_for(make_dataset, judge: str, policy: dict[str, Any] = POLICY) -> GateResult:
    dataset = load_dataset(make_dataset(cases(), rubric=NO_CRITICAL_RUBRIC))
    join = join_results(dataset, result_lines(rows_for(judge)), partition="development")
    return evaluate_gate(
        alignment_report(join),
        Policy.model_validate(policy),
        rubric=dataset.rubric,
        join=join,
        now=NOW,
    )


# judge -> (outcome, exit code, blocker codes that must be present)
EXPECTED = {
    "all_abstain": (
        "quality_failed",
        1,
        {"constant_verdict", "abstention_rate_exceeded", "rate_unbounded"},
    ),
    "all_pass": (
        "quality_failed",
        1,
        {"constant_verdict", "false_passes_exceeded", "false_pass_rate_exceeded"},
    ),
    "all_fail": ("quality_failed", 1, {"constant_verdict"}),
    "constant_label": ("quality_failed", 1, {"constant_verdict", "abstention_rate_exceeded"}),
}


@pytest.mark.parametrize("judge", list(JUDGES))
def test_trivial_judge_is_refused_by_the_library(make_dataset, judge: str) -> None:
    result = gate_for(make_dataset, judge)
    outcome, exit_code, required = EXPECTED[judge]
    found = {b.code for b in result.blockers}
    assert result.outcome == outcome and result.exit_code == exit_code, (
        result.outcome,
        sorted(found),
    )
    assert required <= found, sorted(found)
    constant = [b for b in result.blockers if b.code == "constant_verdict"]
    assert len(constant) == 1 and constant[0].slice is None and not constant[0].waivable
    assert constant[0].evidence["human_passes"] == 15 and constant[0].evidence["human_fails"] == 15


def test_all_abstain_is_refused_even_when_every_abstention_is_allowed(make_dataset) -> None:
    """Abstention allowed everywhere by the policy: still no certification (defense in depth)."""
    policy = json.loads(json.dumps(POLICY))
    for spec in policy["slices"].values():
        spec["max_abstention_rate"] = 1.0
    result = gate_for(make_dataset, "all_abstain", policy)
    assert result.outcome == "quality_failed"
    assert {b.code for b in result.blockers} == {
        "constant_verdict",
        "rate_unbounded",
        "too_few_cases",
    }
    unbounded = [b for b in result.blockers if b.code == "rate_unbounded"]
    assert {b.slice for b in unbounded} == {"billing", "general"}
    assert all(
        b.evidence["human_fails_decided"] == 0
        and "human-fail case judged pass or fail" in b.message
        for b in unbounded
    )


def write_policy(directory: Path, raw: dict[str, Any]) -> Path:
    path = directory / f"{raw['name']}@{raw['version']}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("judge", list(JUDGES))
def test_trivial_judge_is_refused_by_the_cli(make_dataset, tmp_path: Path, judge: str) -> None:
    gold = make_dataset(cases(), rubric=NO_CRITICAL_RUBRIC)
    results = write_results(tmp_path / f"{judge}.jsonl", stamped(rows_for(judge), gold))
    policy = write_policy(tmp_path, POLICY)
    args = [
        "--gold",
        str(gold),
        "--results",
        str(results),
        "--policy",
        str(policy),
        "--partition",
        "development",
    ]
    outcome, exit_code, required = EXPECTED[judge]
    as_json = CliRunner().invoke(gate_cmd, [*args, "--json"])
    assert as_json.exit_code == exit_code, as_json.output
    body = json.loads(as_json.output)
    assert body["outcome"] == outcome and required <= {b["code"] for b in body["blockers"]}
    text = CliRunner().invoke(gate_cmd, args)
    assert text.exit_code == exit_code and f"gate:       {outcome.upper()}" in text.output
    assert "constant_verdict" in text.output and "CERTIFIED" not in text.output
