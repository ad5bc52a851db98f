"""Release policies, the gate and overrides, with every number checked by hand.

Wilson upper bound for 0 events in n trials, closed form: z²/(n + z²), z² = 3.841459.
0/10 -> 3.841459/13.841459 = 0.27753; 0/6 -> 0.39031.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import (
    approve,
    make_case,
    make_result,
    result_lines,
    undocumented_fields,
    write_results,
)
from lineage_support import stamped

from workbench.align import alignment_report, join_results
from workbench.cli.gate import gate as gate_cmd
from workbench.cli.override import override as override_cmd
from workbench.errors import WorkbenchError
from workbench.gold import load_dataset, load_rubric
from workbench.policy import (
    NON_WAIVABLE_CODES,
    POLICY_SCHEMA_VERSION,
    Blocker,
    GateResult,
    Override,
    Policy,
    SlicePolicy,
    active_overrides,
    add_override,
    evaluate_gate,
    format_gate,
    load_overrides,
    load_policy,
    override_id_of,
    policy_sha256,
)
from workbench.policy._overrides import _OverrideBody
from workbench.runs import RunSummary

ROOT = Path(__file__).resolve().parents[1]
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
Z2 = 3.841458820694124
TIMEOUT = {"kind": "timeout", "message": "no answer"}
OTHER_FP = "f" * 64

BASE_POLICY: dict[str, Any] = {
    "schema_version": 1,
    "name": "test-release",
    "version": "1",
    "owner": "QA lead",
    "rationale": "Limits for the unit-test rubric, written before results.",
    "rubric_version": "r1",
    # imported results that equal every held-out label need controls (predictions_match_labels)
    "controls": {"suite": "controls.yaml"},
    "slices": {
        "billing": {
            "risk": "critical",
            "max_false_passes": 0,
            "max_false_pass_rate": 0.5,
            "max_abstention_rate": 0.1,
        },
        "general": {"risk": "low", "max_false_pass_rate": 0.5, "false_pass_rate_basis": "point"},
        "empty": {"risk": "medium", "min_n": 0},
    },
}


@pytest.fixture(autouse=True)
def _approvers(tmp_path: Path) -> None:
    """Who may approve this test project's overrides (the store's workbench.yaml)."""
    approve(tmp_path, "A", "Dana Reviewer", "Lee")


def make_policy(**changes: Any) -> Policy:
    """BASE_POLICY with top-level changes; ``slices`` entries are merged per slice (None
    drops one).
    """
    raw = json.loads(json.dumps(BASE_POLICY))
    for slice_name, spec in changes.pop("slices", {}).items():
        if spec is None:
            raw["slices"].pop(slice_name, None)
        else:
            raw["slices"][slice_name] = {**raw["slices"].get(slice_name, {}), **spec}
    raw.update(changes)
    return Policy.model_validate(raw)


def cases_for(
    spec: dict[str, list[tuple[str, str | None]]], partition: str = "held_out"
) -> tuple[list[dict], list[dict]]:
    """``{slice: [(human_label, judge_value | None (missing) | "ERR"), ...]}`` -> cases, results.

    Held-out by default: only held-out results are ``certified`` (elsewhere the clear outcome
    is the advisory ``would_certify``)."""
    cases, rows = [], []
    for slice_name, items in spec.items():
        for i, (human, judge) in enumerate(items):
            case = make_case(
                f"{slice_name[:3]}-{i:02d}", human, slice=slice_name, partition=partition
            )
            cases.append(case)
            if judge == "ERR":
                rows.append(make_result(case, error=TIMEOUT))
            elif judge is not None:
                rows.append(make_result(case, judge))
    return cases, rows


def clean_spec(
    billing_fails: int = 10, general_fails: int = 2
) -> dict[str, list[tuple[str, str | None]]]:
    """Every verdict aligned: billing 10 fails + 5 passes, general 4 passes + 2 fails."""
    return {
        "billing": [("fail", "fail")] * billing_fails + [("pass", "pass")] * 5,
        "general": [("pass", "pass")] * 4 + [("fail", "fail")] * general_fails,
    }


class Evaluated:
    def __init__(self, make_dataset, spec: dict[str, list[tuple[str, str | None]]]) -> None:
        cases, rows = cases_for(spec)
        self.dataset = load_dataset(make_dataset(cases))
        self.join = join_results(self.dataset, result_lines(rows), partition="held_out")
        self.report = alignment_report(self.join)

    def gate(self, policy: Policy | None, **kw: Any) -> GateResult:
        kw.setdefault("join", self.join)
        kw.setdefault("now", NOW)
        kw.setdefault("rubric", self.dataset.rubric)
        return evaluate_gate(self.report, policy, **kw)


@pytest.fixture
def evaluated(make_dataset):
    return lambda spec: Evaluated(make_dataset, spec)


def codes(result: GateResult) -> list[str]:
    return [b.code for b in result.blockers]


def only(result: GateResult, code: str) -> Blocker:
    found = [b for b in result.blockers if b.code == code]
    assert len(found) == 1, codes(result)
    return found[0]


def run_summary(**changes: Any) -> RunSummary:
    fields: dict[str, Any] = {
        "run_id": "run-1",
        "status": "complete",
        "stop_reason": None,
        "judge": "rubric-judge@1",
        "judge_fingerprint": (
            hashlib.sha256(
                json.dumps(
                    {
                        "name": "rubric-judge",
                        "version": "1",
                        "kind": "imported",
                        "model": None,
                        "prompt_sha256": None,
                        "ragas_version": None,
                        "params": {},
                    },
                    sort_keys=True,
                    separators=(",", ":"),
                ).encode()
            ).hexdigest()
        ),
        "partition": "held_out",
        "planned": 21,
        "verdicts": 21,
        "errors": 0,
        "errors_by_kind": {},
        "calls": 21,
        "retries": 0,
        "cache_hits": 0,
        "resumed": 0,
        "cost_usd": 0.5,
        "budget_usd": 1.0,
        "max_cases": None,
        "tokens_in": 0,
        "tokens_out": 0,
        "unrun": [],
        "pending_retry": [],
        "results_path": "results.jsonl",
    }
    fields.update(changes)
    return RunSummary(**fields)


# ---------------------------------------------------------------- outcomes and rules


def test_clean_results_are_certified(evaluated) -> None:
    ev = evaluated(clean_spec())
    result = ev.gate(make_policy(), policy_sha256="ab" * 32)
    assert result.outcome == "certified" and result.blockers == [] and result.exit_code == 0
    assert result.policy is not None and result.policy.sha256 == "ab" * 32
    assert result.summary.startswith("CERTIFIED: 0 blocker(s)")
    assert result.judge == "rubric-judge@1" and result.partition == "held_out"


def test_wilson_upper_bound_by_hand_upper_fails_point_passes(evaluated) -> None:
    ev = evaluated(clean_spec(general_fails=10))  # general: 0 false passes of 10 human fails
    upper = 0 / 10, Z2 / (10 + Z2)
    assert upper[1] == pytest.approx(0.27753, abs=1e-5)
    point = ev.gate(
        make_policy(
            slices={"general": {"max_false_pass_rate": 0.25, "false_pass_rate_basis": "point"}}
        )
    )
    assert point.outcome == "certified"
    bounded = ev.gate(
        make_policy(
            slices={"general": {"max_false_pass_rate": 0.25, "false_pass_rate_basis": "upper_95"}}
        )
    )
    # 0 observed false passes: the judge did not disagree, the sample is too small to bound
    # the slice. That is review_required, never quality_failed.
    assert bounded.outcome == "review_required"
    b = only(bounded, "false_pass_rate_unproven")
    assert (b.category, b.slice, b.risk) == ("review", "general", "low")
    assert b.evidence["false_passes"] == 0 and b.evidence["human_fails_decided"] == 10
    assert b.evidence["ci95_high"] == pytest.approx(upper[1], abs=1e-9)
    assert (
        b.evidence["compared"] == b.evidence["ci95_high"]
        and b.evidence["limit"] == 0.25
        and b.evidence["basis"] == "upper_95"
    )
    # n >= z²(1-L)/L = 3.8415 * 0.75 / 0.25 = 11.52 -> 12 human fails would show the limit
    assert b.evidence["verdicts_needed_at_zero_errors"] == 12
    assert Z2 / (12 + Z2) <= 0.25 < Z2 / (11 + Z2)
    # and with 12 fails, no false pass, the same limit is met
    assert (
        evaluated(clean_spec(general_fails=12))
        .gate(
            make_policy(
                slices={
                    "general": {"max_false_pass_rate": 0.25, "false_pass_rate_basis": "upper_95"}
                }
            )
        )
        .outcome
        == "certified"
    )


def test_point_basis_boundary_is_inclusive(evaluated) -> None:
    spec = clean_spec()
    spec["general"] = [("pass", "pass")] * 4 + [("fail", "pass")] + [("fail", "fail")] * 9  # 1/10
    policy = make_policy(slices={"general": {"max_false_pass_rate": 0.1}})
    assert evaluated(spec).gate(policy).outcome == "certified"  # 0.1 <= 0.1
    spec["general"][-1] = ("fail", "pass")  # 2/10 = 0.2 > 0.1
    b = only(evaluated(spec).gate(policy), "false_pass_rate_exceeded")
    assert (
        b.evidence["rate"] == 0.2
        and b.evidence["compared"] == 0.2
        and b.evidence["basis"] == "point"
    )
    assert sorted(b.case_ids) == ["gen-04", "gen-13"]


def test_critical_false_pass_count(evaluated) -> None:
    spec = clean_spec()
    spec["billing"][3] = ("fail", "pass")  # 1 false pass of 10 human fails: upper 0.404 <= 0.5
    result = evaluated(spec).gate(make_policy())
    assert result.outcome == "quality_failed" and result.exit_code == 1
    assert codes(result) == ["false_passes_exceeded"]
    b = result.blockers[0]
    assert b.slice == "billing" and b.risk == "critical" and b.case_ids == ["bil-03"]
    assert b.evidence == {
        "false_passes": 1,
        "human_fails_decided": 10,
        "limit": 0,
        "decided": 15,
        "cases": 15,
        "coverage": 1.0,
    }
    assert "1 false passes" in b.message and "0 allowed" in b.message


def test_false_fail_rate(evaluated) -> None:
    spec = clean_spec()
    spec["general"] = (
        [("pass", "fail")] + [("pass", "pass")] * 3 + [("fail", "fail")] * 2
    )  # 1/4 = 0.25
    ev = evaluated(spec)
    assert (
        ev.gate(make_policy(slices={"general": {"max_false_fail_rate": 0.25}})).outcome
        == "certified"
    )
    b = only(
        ev.gate(make_policy(slices={"general": {"max_false_fail_rate": 0.2}})),
        "false_fail_rate_exceeded",
    )
    assert (
        b.category == "quality"
        and b.evidence["false_fails"] == 1
        and b.evidence["human_passes_decided"] == 4
    )
    assert (
        b.evidence["rate"] == 0.25 and b.evidence["basis"] == "point" and b.case_ids == ["gen-00"]
    )
    upper = ev.gate(
        make_policy(
            slices={"general": {"max_false_fail_rate": 0.5, "false_fail_rate_basis": "upper_95"}}
        )
    )
    # Wilson upper for 1/4: (p + z²/2n + z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)
    p, n = 0.25, 4
    wilson = (p + Z2 / (2 * n) + (Z2 * (p * (1 - p) / n + Z2 / (4 * n * n))) ** 0.5) / (1 + Z2 / n)
    assert wilson == pytest.approx(0.69936, abs=1e-5)
    # observed 0.25 is within 0.5 but the bound is not: too few cases, review
    unproven = only(upper, "false_fail_rate_unproven")
    assert unproven.category == "review" and unproven.evidence["ci95_high"] == pytest.approx(
        wilson, abs=1e-9
    )
    assert upper.outcome == "review_required"
    # observed above the limit on the upper basis is a quality failure
    strict = ev.gate(
        make_policy(
            slices={"general": {"max_false_fail_rate": 0.2, "false_fail_rate_basis": "upper_95"}}
        )
    )
    assert (
        only(strict, "false_fail_rate_exceeded").category == "quality"
        and strict.outcome == "quality_failed"
    )


def test_too_few_cases_is_review_and_critical_is_not_waivable(evaluated) -> None:
    ev = evaluated(clean_spec())
    result = ev.gate(
        make_policy(min_n_per_slice=7)
    )  # billing 15 verdicts, general 6, empty min_n 0
    assert result.outcome == "review_required" and result.exit_code == 4
    b = only(result, "too_few_cases")
    assert (b.slice, b.category, b.waivable) == ("general", "review", True)
    assert b.evidence == {"decided": 6, "verdicts": 6, "abstentions": 0, "cases": 6, "min_n": 7}
    crit = only(ev.gate(make_policy(slices={"billing": {"min_n": 16}})), "too_few_cases")
    assert crit.slice == "billing" and not crit.waivable and "critical slice" in crit.message
    # a declared slice with no cases needs min_n 0 to pass: the default (1) blocks it
    empty = only(ev.gate(make_policy(slices={"empty": {"min_n": None}})), "too_few_cases")
    assert empty.slice == "empty" and empty.evidence["verdicts"] == 0


def test_rate_with_zero_denominator_is_unbounded(evaluated) -> None:
    spec = clean_spec()
    spec["general"] = [("pass", "pass")] * 6  # no human fail at all
    result = evaluated(spec).gate(make_policy())
    b = only(result, "rate_unbounded")
    assert result.outcome == "review_required"
    assert (
        b.slice == "general"
        and b.evidence["human_fails_decided"] == 0
        and b.evidence["rate"] == "false_pass_rate"
    )
    # human fails whose only results are errors leave the denominator at 0 as well
    spec["general"] = [("pass", "pass")] * 6 + [("fail", "ERR")]
    both = evaluated(spec).gate(make_policy(max_evaluator_errors=1))
    assert codes(both) == ["rate_unbounded"] and both.blockers[0].evidence["human_fails"] == 1
    # in a critical slice it cannot be waived
    spec = clean_spec()
    spec["billing"] = [("pass", "pass")] * 5
    crit = only(evaluated(spec).gate(make_policy()), "rate_unbounded")
    assert crit.slice == "billing" and not crit.waivable


def test_no_policy_is_never_certified(evaluated) -> None:
    result = evaluated(clean_spec()).gate(None)
    assert result.outcome == "review_required" and codes(result) == ["policy_missing"]
    assert result.policy is None and not result.blockers[0].waivable


def test_policy_and_rubric_must_fit(evaluated) -> None:
    ev = evaluated(clean_spec())
    assert codes(ev.gate(make_policy(rubric_version="r0"))) == ["policy_rubric_mismatch"]
    missing = ev.gate(make_policy(slices={"general": None}))
    b = only(missing, "slice_not_in_policy")
    assert (
        b.slice == "general"
        and b.evidence == {"cases": 6, "verdicts": 6}
        and missing.outcome == "review_required"
    )
    unknown = ev.gate(make_policy(slices={"nowhere": {"risk": "low"}}))
    assert only(unknown, "policy_unknown_slice").slice == "nowhere"
    risk = ev.gate(make_policy(slices={"general": {"risk": "high"}}))
    assert only(risk, "policy_risk_mismatch").evidence == {"policy": "high", "rubric": "low"}
    part = ev.gate(make_policy(partition="development"))
    assert only(part, "partition_mismatch").evidence == {
        "policy": "development",
        "report": "held_out",
    }
    other = load_rubric(ev.dataset.root / "rubric.yaml").model_copy(update={"version": "r2"})
    mismatched = ev.gate(make_policy(), rubric=other)
    assert (
        codes(mismatched) == ["policy_rubric_mismatch", "rubric_mismatch"]
        and mismatched.outcome == "review_required"
    )


def test_missing_results_are_incomplete_never_a_pass(evaluated) -> None:
    spec = clean_spec()
    spec["billing"][0] = ("fail", None)
    spec["general"][1] = ("pass", None)
    spec["billing"][1] = ("fail", "pass")  # a quality blocker too: incomplete still wins
    result = evaluated(spec).gate(make_policy())
    assert result.outcome == "evaluation_incomplete" and result.exit_code == 3
    b = only(result, "missing_results")
    assert b.category == "incomplete" and not b.waivable
    assert b.evidence == {
        "missing": 2,
        "cases_in_scope": 21,
        "missing_by_slice": {"billing": 1, "general": 1},
    }
    assert b.case_ids == ["bil-00", "gen-01"]
    assert "false_passes_exceeded" in codes(result)


def test_no_cases_in_scope(make_dataset) -> None:
    cases, rows = cases_for(clean_spec(), "development")
    dataset = load_dataset(make_dataset(cases))
    join = join_results(dataset, result_lines(rows), partition="held_out")
    result = evaluate_gate(alignment_report(join), make_policy(), rubric=dataset.rubric, now=NOW)
    assert result.outcome == "evaluation_incomplete" and "no_cases" in codes(result)


def test_evaluator_errors(evaluated) -> None:
    spec = clean_spec()
    spec["general"] += [("pass", "ERR"), ("fail", "ERR")]
    ev = evaluated(spec)
    b = only(ev.gate(make_policy()), "evaluator_errors_exceeded")
    assert b.category == "incomplete"
    assert b.evidence == {
        "errors": 2,
        "limit": 0,
        "cases_in_scope": 23,
        "errors_by_kind": {"timeout": 2},
        "errors_by_slice": {"general": 2},
    }
    assert b.case_ids == ["gen-06", "gen-07"]
    assert ev.gate(make_policy(max_evaluator_errors=2)).outcome == "certified"
    assert ev.gate(None).outcome == "evaluation_incomplete"  # no policy: no error is allowed


def test_run_summary_blockers(evaluated) -> None:
    ev = evaluated(clean_spec())
    policy = make_policy(max_cost_usd=1.0)
    assert ev.gate(policy, run=run_summary()).outcome == "certified"
    budget = ev.gate(
        policy,
        run=run_summary(status="incomplete", stop_reason="budget_exhausted", unrun=["x#0", "y#0"]),
    )
    b = only(budget, "budget_exhausted")
    assert (
        budget.outcome == "evaluation_incomplete"
        and b.case_ids == ["x", "y"]
        and b.evidence["unrun"] == 2
    )
    limit = ev.gate(
        policy,
        run=run_summary(status="incomplete", stop_reason="max_cases", max_cases=3, unrun=["x#0"]),
    )
    assert only(limit, "case_limit_reached").evidence == {"max_cases": 3, "unrun": 1, "planned": 21}
    pending = ev.gate(policy, run=run_summary(status="incomplete", pending_retry=["bil-00#0"]))
    assert codes(pending) == ["pending_retries"] and pending.blockers[0].case_ids == ["bil-00"]
    other = ev.gate(policy, run=run_summary(status="incomplete", unrun=["x#0"]))
    assert codes(other) == ["run_incomplete"]
    cost = ev.gate(policy, run=run_summary(cost_usd=1.25))
    assert (
        cost.outcome == "review_required"
        and only(cost, "cost_exceeded").evidence["cost_usd"] == 1.25
    )
    assert only(cost, "cost_exceeded").evidence["limit_usd"] == 1.0 and cost.blockers[0].waivable
    assert codes(ev.gate(policy)) == ["cost_unverified"]
    assert codes(ev.gate(make_policy())) == []  # no cost limit: nothing to verify
    assert codes(ev.gate(policy, run=run_summary(judge_fingerprint=OTHER_FP))) == ["run_mismatch"]


def test_a_sub_cent_spend_limit_is_shown_as_approved(evaluated) -> None:
    """Before: a limit of $0.005 was printed rounded to cents, as "$0.01" (issue 30)."""
    ev = evaluated(clean_spec())
    over = only(
        ev.gate(make_policy(max_cost_usd=0.005), run=run_summary(cost_usd=0.0125)), "cost_exceeded"
    )
    assert over.message == "The run spent $0.0125, more than the approved $0.005."
    unverified = only(ev.gate(make_policy(max_cost_usd=2.0)), "cost_unverified")
    assert unverified.message.startswith("The policy limits spend to $2.00 but")


def test_precedence_and_deterministic_order(evaluated) -> None:
    spec = clean_spec()
    spec["billing"][2] = ("fail", "pass")  # quality in billing
    spec["general"][0] = ("pass", None)  # incomplete
    ev = evaluated(spec)
    policy = make_policy(slices={"general": {"min_n": 50}})  # review in general
    result = ev.gate(policy)
    assert result.outcome == "evaluation_incomplete"
    assert [(b.category, b.slice, b.code) for b in result.blockers] == [
        ("incomplete", None, "missing_results"),
        ("quality", "billing", "false_passes_exceeded"),
        ("review", "general", "too_few_cases"),
    ]
    assert result.summary.startswith(
        "EVALUATION_INCOMPLETE: 3 blocker(s) (1 incomplete, 1 quality, 1 review)"
    )
    again = ev.gate(policy)
    assert again.model_dump_json() == result.model_dump_json()
    spec["general"][0] = ("pass", "pass")
    assert evaluated(spec).gate(policy).outcome == "quality_failed"
    assert evaluated(clean_spec()).gate(policy).outcome == "review_required"
    text = format_gate(result)
    assert "false_passes=1" in text and "human_fails_decided=10" in text and "cases: bil-02" in text


def test_good_aggregate_never_offsets_a_slice(evaluated) -> None:
    spec = clean_spec()
    spec["billing"][0] = ("fail", "pass")
    spec["general"] = [("fail", "fail")] * 200 + [("pass", "pass")] * 200
    ev = evaluated(spec)
    # the overall row (1 of 210 human fails, upper bound 0.026) would meet the billing limit of 0.05
    assert ev.report.overall.false_pass_rate.ci95_high < 0.05
    result = ev.gate(
        make_policy(slices={"billing": {"max_false_passes": None, "max_false_pass_rate": 0.05}})
    )
    b = only(result, "false_pass_rate_exceeded")
    assert result.outcome == "quality_failed" and b.slice == "billing"
    assert all(blk.slice != "(all)" for blk in result.blockers)


def test_extra_blockers(evaluated) -> None:
    ev = evaluated(clean_spec())
    lineage = Blocker(
        code="lineage_unverified",
        category="quality",
        message="The prompt hash is not in the lineage record.",
    )
    assert ev.gate(make_policy(), extra_blockers=[lineage]).outcome == "quality_failed"
    control = Blocker(
        code="control_failed",
        category="incomplete",
        message="A control case has no verdict.",
        waivable=True,
    )
    result = ev.gate(make_policy(), extra_blockers=[control, lineage])
    assert (
        codes(result) == ["control_failed", "lineage_unverified"]
        and not result.blockers[0].waivable
    )
    ovr = make_override(codes=["control_failed", "lineage_unverified"])
    waived = ev.gate(make_policy(), extra_blockers=[control, lineage], overrides=[ovr])
    assert codes(waived) == ["control_failed"] and [w.blocker.code for w in waived.waived] == [
        "lineage_unverified"
    ]


# ---------------------------------------------------------------- overrides


def make_override(**fields: Any) -> Override:
    """An override built in memory (bypassing add_override's refusals) with a correct id."""
    body: dict[str, Any] = {
        "schema_version": 1,
        "approver": "Dana Reviewer",
        "created_at": (NOW - timedelta(days=1)).isoformat(),
        "policy": "test-release@1",
        "candidate_fingerprint": None,
        "codes": [],
        "slices": [],
        "case_ids": [],
        "reason": "reviewed case by case",
        "expires_at": (NOW + timedelta(days=30)).isoformat(),
        "follow_up": "JIRA-123",
    }
    body.update(fields)
    checked = _OverrideBody.model_validate(body)
    return Override(
        **checked.model_dump(), override_id=override_id_of(checked.model_dump(mode="json"))
    )


def fp_spec() -> dict[str, list[tuple[str, str | None]]]:
    spec = clean_spec()
    spec["billing"][1] = ("fail", "pass")
    spec["billing"][4] = ("fail", "pass")  # 2 critical false passes: bil-01, bil-04
    spec["general"] = (
        [("pass", "pass")] * 4 + [("fail", "pass")] + [("fail", "fail")] * 3
    )  # gen-04: 1/4
    return spec


def fp_policy() -> Policy:
    """Billing tolerates its two false passes (Wilson upper of 2/10 is 0.51); general does not."""
    return make_policy(
        slices={
            "billing": {"max_false_passes": 2, "max_false_pass_rate": 0.9},
            "general": {"max_false_pass_rate": 0.2},
        }
    )


def test_slice_level_override_waives_non_critical_blocker(evaluated) -> None:
    ev = evaluated(fp_spec())
    policy = fp_policy()
    assert codes(ev.gate(policy)) == ["false_pass_rate_exceeded"]
    ovr = make_override(codes=["false_pass_rate_exceeded"], slices=["general"])
    result = ev.gate(policy, overrides=[ovr])
    assert result.outcome == "certified" and result.blockers == []
    assert [(w.blocker.code, w.blocker.slice, w.override_id) for w in result.waived] == [
        ("false_pass_rate_exceeded", "general", ovr.override_id)
    ]
    assert ovr.override_id.startswith("ovr-") and len(ovr.override_id) == 20
    # an override must name the code, not just the slice
    assert (
        ev.gate(
            policy,
            overrides=[make_override(codes=["false_fail_rate_exceeded"], slices=["general"])],
        ).outcome
        == "quality_failed"
    )
    # a case-level override naming the false-pass case also works outside critical slices
    assert (
        ev.gate(
            policy,
            overrides=[make_override(codes=["false_pass_rate_exceeded"], case_ids=["gen-04"])],
        ).outcome
        == "certified"
    )


def test_expired_override_is_ignored_and_reported(evaluated) -> None:
    ev = evaluated(fp_spec())
    policy = fp_policy()
    old = make_override(
        codes=["false_pass_rate_exceeded"],
        slices=["general"],
        created_at=(NOW - timedelta(days=20)).isoformat(),
        expires_at=(NOW - timedelta(days=1)).isoformat(),
    )
    exactly = make_override(
        codes=["false_pass_rate_exceeded"],
        slices=["general"],
        expires_at=NOW.isoformat(),
        reason="expires now",
    )
    result = ev.gate(policy, overrides=[old, exactly])
    assert result.outcome == "quality_failed" and result.waived == []
    assert result.expired_overrides == sorted([old.override_id, exactly.override_id])
    assert active_overrides([old, exactly], policy, ev.report.judge_fingerprint, NOW) == []


def test_incomplete_blockers_are_never_waived(evaluated, tmp_path) -> None:
    spec = clean_spec()
    spec["general"][0] = ("pass", None)
    spec["general"].append(("fail", "ERR"))
    ev = evaluated(spec)
    ovr = make_override(
        codes=["missing_results", "evaluator_errors_exceeded"],
        slices=["general"],
        case_ids=["gen-00", "gen-06"],
    )
    result = ev.gate(make_policy(), overrides=[ovr])
    assert (
        result.outcome == "evaluation_incomplete"
        and codes(result) == ["evaluator_errors_exceeded", "missing_results"]
        and result.waived == []
    )
    with pytest.raises(WorkbenchError) as exc:
        add_override(
            tmp_path / "o.jsonl",
            policy="test-release@1",
            approver="A",
            reason="r",
            expires_at="2027-01-01",
            follow_up="F",
            codes=["missing_results", "policy_missing"],
        )
    assert [p.code for p in exc.value.problems] == ["override_code_not_waivable"] * 2
    assert not (tmp_path / "o.jsonl").exists() or (tmp_path / "o.jsonl").read_bytes() == b""
    assert {
        "missing_results",
        "budget_exhausted",
        "pending_retries",
        "policy_missing",
    } <= NON_WAIVABLE_CODES


def test_critical_false_pass_needs_case_level_review_of_every_case(evaluated) -> None:
    ev = evaluated(fp_spec())
    policy = make_policy(slices={"billing": {"max_false_pass_rate": 0.9}})
    b = only(ev.gate(policy), "false_passes_exceeded")
    assert b.slice == "billing" and b.case_ids == ["bil-01", "bil-04"] and b.waivable
    slice_level = make_override(codes=["false_passes_exceeded"], slices=["billing"])
    assert ev.gate(policy, overrides=[slice_level]).outcome == "quality_failed"
    partial = make_override(codes=["false_passes_exceeded"], case_ids=["bil-01"])
    assert ev.gate(policy, overrides=[partial]).outcome == "quality_failed"
    full = make_override(
        codes=["false_passes_exceeded"], case_ids=["bil-01", "bil-04"], slices=["billing"]
    )
    result = ev.gate(policy, overrides=[slice_level, partial, full])
    assert result.outcome == "certified" and [w.override_id for w in result.waived] == [
        full.override_id
    ]
    # without the join, the false-pass cases are unknown: nothing can be waived
    blind = ev.gate(policy, overrides=[full], join=None)
    assert (
        blind.outcome == "quality_failed"
        and not blind.blockers[0].waivable
        and blind.blockers[0].case_ids == []
    )


def test_critical_bound_without_false_passes_cannot_be_waived(evaluated) -> None:
    ev = evaluated(clean_spec())
    policy = make_policy(slices={"billing": {"max_false_pass_rate": 0.2}})  # 0/10: upper 0.2775
    b = only(ev.gate(policy), "false_pass_rate_unproven")
    assert b.risk == "critical" and b.case_ids == [] and not b.waivable and b.category == "review"
    ovr = make_override(codes=["false_pass_rate_unproven"], slices=["billing"])
    assert ev.gate(policy, overrides=[ovr]).outcome == "review_required"
    too_few = make_override(codes=["too_few_cases"], slices=["billing"])
    assert (
        ev.gate(make_policy(slices={"billing": {"min_n": 99}}), overrides=[too_few]).outcome
        == "review_required"
    )


def test_override_scoping_by_candidate_and_policy(evaluated) -> None:
    ev = evaluated(fp_spec())
    policy = fp_policy()
    waiver = {"codes": ["false_pass_rate_exceeded"], "slices": ["general"]}
    other = make_override(**waiver, candidate_fingerprint=OTHER_FP)
    assert ev.gate(policy, overrides=[other]).outcome == "quality_failed"
    mine = make_override(**waiver, candidate_fingerprint=ev.report.judge_fingerprint)
    assert ev.gate(policy, overrides=[mine]).outcome == "certified"
    assert (
        ev.gate(policy, overrides=[make_override(**waiver, policy="test-release@2")]).outcome
        == "quality_failed"
    )
    future = make_override(**waiver, created_at=(NOW + timedelta(days=1)).isoformat())
    assert ev.gate(policy, overrides=[future]).outcome == "quality_failed"
    assert ev.gate(None, overrides=[mine]).outcome == "review_required"
    # the candidate being certified scopes the overrides; results of another judge are refused
    assert (
        ev.gate(policy, overrides=[mine], fingerprint=ev.report.judge_fingerprint).outcome
        == "certified"
    )
    wrong = ev.gate(policy, overrides=[other], fingerprint=OTHER_FP)
    assert (
        wrong.outcome == "review_required"
        and codes(wrong) == ["candidate_mismatch"]
        and wrong.judge_fingerprint == OTHER_FP
    )
    assert not wrong.blockers[0].waivable


def test_minimal_gate_result_for_callers_without_a_report() -> None:
    blocker = Blocker(
        code="certification_failed",
        category="incomplete",
        message="The notebook failed.",
        waivable=False,
    )
    result = GateResult(
        outcome="evaluation_incomplete",
        blockers=[blocker],
        waived=[],
        policy=None,
        summary="failed",
    )
    assert (
        result.exit_code == 3 and result.expired_overrides == [] and result.dataset_sha256 is None
    )
    assert "gate:       EVALUATION_INCOMPLETE" in format_gate(result)


def test_global_blocker_waived_by_override_without_slices(evaluated) -> None:
    ev = evaluated(clean_spec())
    policy = make_policy(max_cost_usd=1.0)
    run = run_summary(cost_usd=1.5)
    scoped = make_override(codes=["cost_exceeded"], slices=["general"])
    assert ev.gate(policy, run=run, overrides=[scoped]).outcome == "review_required"
    ovr = make_override(codes=["cost_exceeded"])
    result = ev.gate(policy, run=run, overrides=[ovr])
    assert result.outcome == "certified" and result.waived[0].blocker.code == "cost_exceeded"


def test_override_store_is_append_only(tmp_path) -> None:
    store = tmp_path / "policies" / "overrides.jsonl"
    first = add_override(
        store,
        policy="test-release@1",
        approver="Dana Reviewer",
        reason="verified by hand",
        expires_at="2027-01-15",
        follow_up="JIRA-1",
        codes=["false_passes_exceeded"],
        case_ids=["b2", "b1", "b1"],
        created_at=NOW,
    )
    assert first.case_ids == ["b1", "b2"] and first.expires_at == datetime(2027, 1, 15, tzinfo=UTC)
    assert first.override_id == override_id_of(first.model_dump(mode="json"))
    before = store.read_bytes()
    second = add_override(
        store,
        policy=make_policy(),
        approver="Lee",
        reason="cost approved",
        expires_at=datetime(2027, 2, 1, tzinfo=UTC),
        follow_up="FIN-2",
        codes=["cost_exceeded"],
        created_at=NOW,
    )
    assert second.policy == "test-release@1"
    assert store.read_bytes().startswith(before) and len(store.read_bytes().splitlines()) == 2
    assert load_overrides(store) == [first, second]
    with pytest.raises(WorkbenchError) as exc:
        add_override(
            store,
            policy="test-release@1",
            approver="Dana Reviewer",
            reason="verified by hand",
            expires_at="2027-01-15",
            follow_up="JIRA-1",
            codes=["false_passes_exceeded"],
            case_ids=["b1", "b2"],
            created_at=NOW,
        )
    assert exc.value.problems[0].code == "override_duplicate"
    assert load_overrides(tmp_path / "absent.jsonl") == []


def test_add_override_refusals_are_listed_together(tmp_path) -> None:
    with pytest.raises(WorkbenchError) as exc:
        add_override(
            tmp_path / "o.jsonl",
            policy="no-version",
            approver=" ",
            reason="r",
            expires_at="2026-11-01",
            follow_up="",
            codes=[],
            created_at=NOW,
        )
    text = str(exc.value)
    for field in ("policy", "codes", "follow_up"):
        assert field in text
    with pytest.raises(WorkbenchError, match="expires_at must be after created_at"):
        add_override(
            tmp_path / "o.jsonl",
            policy="p@1",
            approver="A",
            reason="r",
            expires_at="2026-11-01",
            follow_up="F",
            codes=["x"],
            created_at=NOW,
        )
    with pytest.raises(WorkbenchError, match="not a date"):
        add_override(
            tmp_path / "o.jsonl",
            policy="p@1",
            approver="A",
            reason="r",
            expires_at="next week",
            follow_up="F",
            codes=["x"],
            created_at=NOW,
        )


def test_bad_override_lines_are_reported_with_line_numbers(tmp_path) -> None:
    store = tmp_path / "o.jsonl"
    good = add_override(
        store,
        policy="p@1",
        approver="A",
        reason="r",
        expires_at="2027-01-01",
        follow_up="F",
        codes=["cost_exceeded"],
        created_at=NOW,
    )
    edited = {**good.model_dump(mode="json"), "reason": "quietly changed"}
    with store.open("a", encoding="utf-8") as fh:
        fh.write("{not json\n")
        fh.write(json.dumps(edited) + "\n")
        fh.write(json.dumps(good.model_dump(mode="json")) + "\n")
        fh.write(json.dumps({**good.model_dump(mode="json"), "schema_version": 9}) + "\n")
    with pytest.raises(WorkbenchError) as exc:
        load_overrides(store)
    found = [(p.location.rsplit(":", 1)[1], p.code) for p in exc.value.problems]
    assert found == [
        ("2", "override_malformed"),
        ("3", "override_invalid"),
        ("4", "override_duplicate"),
        ("5", "schema_version_newer"),
    ]
    assert "edited" in exc.value.problems[1].message


# ---------------------------------------------------------------- policy files


def write_policy(directory: Path, raw: dict[str, Any], name: str | None = None) -> Path:
    path = directory / (name or f"{raw['name']}@{raw['version']}.yaml")
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def test_policy_file_loads_and_hashes(tmp_path) -> None:
    path = write_policy(tmp_path, {**BASE_POLICY, "version": 1, "created": "2026-11-01"})
    assert path.name == "test-release@1.yaml"
    policy = load_policy(path)
    assert (
        policy.label == "test-release@1"
        and policy.version == "1"
        and policy.created.isoformat() == "2026-11-01"
    )
    assert policy.min_n_for("empty") == 0 and policy.min_n_for("billing") == 1
    assert policy.slices["billing"].false_pass_rate_basis == "upper_95"
    assert policy.slices["general"].false_fail_rate_basis == "point"
    assert policy_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_policy_problems_are_all_reported_at_once(tmp_path) -> None:
    raw = json.loads(json.dumps(BASE_POLICY))
    raw["owner"] = ""
    del raw["rationale"]
    raw["slices"]["billing"]["false_pass_rate_basis"] = "point"
    raw["slices"]["general"]["max_false_passes"] = -1
    raw["slices"]["general"]["max_false_pass_rate"] = 1.5
    raw["max_evaluator_errors"] = -2
    raw["surprise"] = True
    path = write_policy(tmp_path, raw, name="test-release@2.yaml")
    with pytest.raises(WorkbenchError) as exc:
        load_policy(path)
    messages = [p.message for p in exc.value.problems]
    assert exc.value.problems[0].code == "policy_filename" and "test-release@1" in messages[0]
    joined = "\n".join(messages)
    for needle in (
        "owner",
        "rationale",
        "slices.general.max_false_passes",
        "slices.general.max_false_pass_rate",
        "max_evaluator_errors",
        "surprise",
    ):
        assert needle in joined
    crit = [m for m in messages if m.startswith("slices.billing")]
    assert len(crit) == 1 and "critical slice must use false_pass_rate_basis upper_95" in crit[0]
    assert all(p.location == str(path) and p.fix for p in exc.value.problems)


def test_critical_slice_rules(tmp_path) -> None:
    raw = json.loads(json.dumps(BASE_POLICY))
    raw["slices"]["billing"] = {"risk": "critical", "max_false_passes": 0}
    with pytest.raises(WorkbenchError) as exc:
        load_policy(write_policy(tmp_path, raw))
    assert "slices.billing" in str(exc.value) and "must set max_false_pass_rate" in str(exc.value)
    raw["slices"]["billing"] = {
        "risk": "critical",
        "max_false_pass_rate": 0.1,
        "false_pass_rate_basis": "point",
    }
    with pytest.raises(WorkbenchError, match="slices.billing"):
        load_policy(write_policy(tmp_path, raw))


def test_unreadable_policy_files(tmp_path) -> None:
    with pytest.raises(WorkbenchError) as exc:
        load_policy(tmp_path / "absent@1.yaml")
    assert exc.value.problems[0].code == "policy_missing"
    (tmp_path / "bad@1.yaml").write_text("name: [unclosed\n", encoding="utf-8")
    with pytest.raises(WorkbenchError) as exc:
        load_policy(tmp_path / "bad@1.yaml")
    assert exc.value.problems[0].code == "policy_yaml"
    (tmp_path / "list@1.yaml").write_text("- a\n", encoding="utf-8")
    with pytest.raises(WorkbenchError, match="mapping"):
        load_policy(tmp_path / "list@1.yaml")
    newer = write_policy(
        tmp_path, {**BASE_POLICY, "name": "newer", "schema_version": POLICY_SCHEMA_VERSION + 1}
    )
    with pytest.raises(WorkbenchError) as exc:
        load_policy(newer)
    assert exc.value.problems[0].code == "schema_version_newer"


def test_demo_policy_covers_every_demo_slice() -> None:
    path = ROOT / "data" / "policies" / "support-release@1.yaml"
    policy = load_policy(path)
    rubric = load_rubric(ROOT / "data" / "demo" / "rubric.yaml")
    assert (
        policy.label == "support-release@1" and policy.owner.strip() and len(policy.rationale) > 200
    )
    assert policy.rubric_version == rubric.version and policy.partition == "held_out"
    assert set(policy.slices) == set(rubric.slices)
    for name, spec in policy.slices.items():
        assert spec.risk.value == rubric.risk_of(name), name
        assert spec.max_false_pass_rate is not None, name
    for name in rubric.critical_slices:
        spec = policy.slices[name]
        assert spec.max_false_passes == 0 and spec.false_pass_rate_basis == "upper_95"
    assert policy.max_evaluator_errors == 0 and policy.max_cost_usd is not None


# ---------------------------------------------------------------- command line


@pytest.fixture
def cli_files(tmp_path, make_dataset):
    """Writes a dataset, a results file for a spec, and the test policy; returns a builder."""

    def build(
        spec: dict[str, list[tuple[str, str | None]]], **policy_changes: Any
    ) -> dict[str, str]:
        cases, rows = cases_for(spec, "development")  # held-out results: only a certification's
        gold = make_dataset(cases)
        results = write_results(
            tmp_path / f"results-{len(list(tmp_path.iterdir()))}.jsonl", stamped(rows, gold)
        )  # with the gold's lineage
        raw = json.loads(make_policy(**policy_changes).model_dump_json(exclude_none=True))
        policies = tmp_path / "policies"
        policies.mkdir(exist_ok=True)
        policy = write_policy(policies, raw)
        return {"gold": str(gold), "results": str(results), "policy": str(policy)}

    return build


def gate_args(files: dict[str, str], *extra: str) -> list[str]:
    return [
        "--gold",
        files["gold"],
        "--results",
        files["results"],
        "--policy",
        files["policy"],
        "--partition",
        "development",
        *extra,
    ]


@pytest.mark.parametrize(
    ("mutate", "outcome", "exit_code"),
    [
        (lambda s: None, "would_certify", 6),  # development results never certify
        (lambda s: s["billing"].__setitem__(0, ("fail", "pass")), "quality_failed", 1),
        (lambda s: s["billing"].__setitem__(0, ("fail", None)), "evaluation_incomplete", 3),
        (
            lambda s: s["general"].__setitem__(slice(None), [("pass", "pass")] * 4),
            "review_required",
            4,
        ),
    ],
    ids=["would_certify", "quality_failed", "evaluation_incomplete", "review_required"],
)
def test_gate_cli_exit_codes(cli_files, mutate, outcome, exit_code) -> None:
    spec = clean_spec()
    mutate(spec)
    files = cli_files(spec)
    result = CliRunner().invoke(gate_cmd, gate_args(files, "--json"))
    assert result.exit_code == exit_code, result.output
    body = json.loads(result.output)
    assert body["outcome"] == outcome and body["kind"] == "workbench.gate"
    assert (
        body["policy"]["sha256"] == hashlib.sha256(Path(files["policy"]).read_bytes()).hexdigest()
    )
    text = CliRunner().invoke(gate_cmd, gate_args(files))
    assert text.exit_code == exit_code and f"gate:       {outcome.upper()}" in text.output


def test_gate_cli_text_lines_and_invalid_input(cli_files, tmp_path) -> None:
    spec = clean_spec()
    spec["billing"][0] = ("fail", "pass")
    files = cli_files(spec)
    out = CliRunner().invoke(gate_cmd, gate_args(files))
    line = next(ln for ln in out.output.splitlines() if "false_passes_exceeded" in ln)
    assert (
        line.strip().startswith("[quality] billing:")
        and "false_passes=1" in line
        and "limit=0" in line
        and "bil-00" in line
    )
    bad = CliRunner().invoke(
        gate_cmd,
        [
            "--gold",
            files["gold"],
            "--results",
            files["results"],
            "--policy",
            str(tmp_path / "nope@1.yaml"),
        ],
    )
    assert bad.exit_code == 2 and "policy_missing" in bad.output and "Traceback" not in bad.output
    both = CliRunner().invoke(
        gate_cmd,
        [
            "--gold",
            str(tmp_path / "no-gold"),
            "--results",
            files["results"],
            "--policy",
            str(tmp_path / "nope@1.yaml"),
        ],
    )
    assert both.exit_code == 2 and "policy_missing" in both.output and "gold_missing" in both.output
    run_json = tmp_path / "run.json"
    run_json.write_text('{"status": "weird"}', encoding="utf-8")
    bad_run = CliRunner().invoke(gate_cmd, gate_args(files, "--run", str(run_json)))
    assert bad_run.exit_code == 2 and "run_invalid" in bad_run.output


def test_gate_cli_with_run_and_overrides(cli_files, tmp_path) -> None:
    files = cli_files(clean_spec(), max_cost_usd=1.0)
    assert CliRunner().invoke(gate_cmd, gate_args(files)).exit_code == 4  # cost_unverified
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    summary = run_summary(cost_usd=3.0, partition="development")
    (run_dir / "run.json").write_text(summary.model_dump_json(), encoding="utf-8")
    over = CliRunner().invoke(gate_cmd, gate_args(files, "--run", str(run_dir)))
    assert over.exit_code == 4 and "cost_exceeded" in over.output and "cost_usd=3" in over.output
    store = tmp_path / "overrides.jsonl"
    added = CliRunner().invoke(
        override_cmd,
        [
            "add",
            "--policy",
            files["policy"],
            "--approver",
            "Dana Reviewer",
            "--reason",
            "one-off re-run approved",
            "--expires",
            "2099-01-01",
            "--follow-up",
            "FIN-7",
            "--code",
            "cost_exceeded",
            "--store",
            str(store),
        ],
    )
    assert added.exit_code == 0, added.output
    assert added.output.startswith("ovr-") and "test-release@1" in added.output
    ok = CliRunner().invoke(
        gate_cmd, gate_args(files, "--run", str(run_dir / "run.json"), "--overrides", str(store))
    )
    assert ok.exit_code == 6, ok.output  # would certify: development results, advisory
    assert "waived by ovr-" in ok.output
    listed = CliRunner().invoke(override_cmd, ["list", "--store", str(store)])
    assert (
        listed.exit_code == 0
        and "[active] test-release@1" in listed.output
        and "Dana Reviewer" in listed.output
    )
    as_json = CliRunner().invoke(override_cmd, ["list", "--store", str(store), "--json"])
    assert json.loads(as_json.output)[0]["codes"] == ["cost_exceeded"]
    refused = CliRunner().invoke(
        override_cmd,
        [
            "add",
            "--policy",
            "test-release@1",
            "--approver",
            "A",
            "--reason",
            "r",
            "--expires",
            "2099-01-01",
            "--follow-up",
            "F",
            "--code",
            "missing_results",
            "--store",
            str(store),
        ],
    )
    assert refused.exit_code == 2 and "override_code_not_waivable" in refused.output
    assert (
        CliRunner()
        .invoke(override_cmd, ["list", "--store", str(tmp_path / "none.jsonl")])
        .output.startswith("no overrides")
    )


@pytest.mark.parametrize("command", [[], ["add"], ["list"]])
def test_override_commands_have_help(command) -> None:
    result = CliRunner().invoke(override_cmd, [*command, "--help"])
    assert result.exit_code == 0 and "Usage:" in result.output


def test_gate_command_has_help() -> None:
    result = CliRunner().invoke(gate_cmd, ["--help"])
    assert result.exit_code == 0 and "Exit code: 0 certified" in result.output


@pytest.mark.parametrize("model", [Policy, SlicePolicy, Override, Blocker, GateResult])
def test_every_field_has_a_docstring(model) -> None:
    assert undocumented_fields(model) == []


def test_every_gate_code_is_in_the_module_table() -> None:
    import re

    import workbench.policy._gate as gate_module

    source = Path(gate_module.__file__).read_text(encoding="utf-8")
    emitted = set(re.findall(r'code="([a-z_]+)"', source)) | set(
        re.findall(r'_blocker\(\s*"([a-z_]+)"', source)
    )
    emitted |= {f"{kind}_rate_exceeded" for kind in ("false_pass", "false_fail")}
    emitted.discard("rate_exceeded")
    assert len(emitted) > 20
    table = gate_module.__doc__ or ""
    assert sorted(c for c in emitted if f"\n{c} " not in table) == []
    from workbench.policy import codes_of

    assert emitted >= NON_WAIVABLE_CODES & set(codes_of("gate"))  # other features emit their own
