"""Abstention limits, coverage, decided denominators and cases_needed, checked by hand.

Wilson upper bound with 0 events in n trials: z²/(n + z²), z² = 3.841459 (z = 1.959964).
Smallest n within a limit L: n >= z²(1 - L)/L, e.g.
L = 0.10: 3.841459 * 9    = 34.57 -> 35;  L = 0.25: 3.841459 * 3 = 11.52 -> 12;
L = 0.05: 3.841459 * 19   = 72.99 -> 73;  L = 0.20: 3.841459 * 4 = 15.37 -> 16;
L = 0.30: 3.841459 * 7/3  =  8.96 ->  9;  L = 0.50: 3.841459     =  3.84 ->  4.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _reference import proportion_confint
from click.testing import CliRunner
from conftest import approve, make_case, make_result, result_lines, write_results
from lineage_support import stamped
from test_policy import NOW, Evaluated, clean_spec, make_override, make_policy, only, write_policy

from workbench.align import alignment_report, format_report, join_results
from workbench.cli.align import align as align_cmd
from workbench.cli.gate import gate as gate_cmd
from workbench.errors import WorkbenchError
from workbench.gold import load_dataset
from workbench.policy import format_gate, load_policy
from workbench.reports._present import agreement_summary, disagreement_counts
from workbench.stats import cases_needed

Z2 = 3.841458820694124
RR = "review_required"


# ---------------------------------------------------------------- cases_needed


@pytest.fixture(autouse=True)
def _approvers(tmp_path: Path) -> None:
    """Who may approve this test project's overrides (the store's workbench.yaml)."""
    approve(tmp_path, "A")


@pytest.mark.parametrize(
    ("limit", "expected"),
    [(0.10, 35), (0.25, 12), (0.05, 73), (0.20, 16), (0.30, 9), (0.50, 4), (0.01, 381)],
)
def test_cases_needed_by_hand_and_against_statsmodels(limit: float, expected: int) -> None:
    assert cases_needed(limit) == expected
    assert cases_needed(limit, interval="wilson") == expected
    # the closed form and statsmodels agree: n is within the limit, n - 1 is not
    assert Z2 / (expected + Z2) <= limit < Z2 / (expected - 1 + Z2)
    assert proportion_confint(0, expected, alpha=0.05, method="wilson")[1] <= limit
    assert proportion_confint(0, expected - 1, alpha=0.05, method="wilson")[1] > limit


def test_cases_needed_at_the_edges() -> None:
    assert cases_needed(0.0) is None  # no finite sample bounds a rate at 0
    assert cases_needed(1.0) == 1  # a rate over no case is never within a limit
    # a limit placed exactly on a boundary value is met at that n (the gate compares <=)
    exact = float(proportion_confint(0, 20, alpha=0.05, method="wilson")[1])
    assert cases_needed(exact) == 20
    with pytest.raises(ValueError, match="wilson"):
        cases_needed(0.1, interval="clopper")  # type: ignore[arg-type]


# ---------------------------------------------------------------- policy rules


def test_critical_slice_without_abstention_limit_is_refused_naming_slice_and_fix(
    tmp_path: Path,
) -> None:
    raw = json.loads(make_policy().model_dump_json(exclude_none=True))
    del raw["slices"]["billing"]["max_abstention_rate"]
    raw["slices"]["general"].pop("max_abstention_rate", None)  # not critical: may be omitted
    with pytest.raises(WorkbenchError) as exc:
        load_policy(write_policy(tmp_path, raw))
    (problem,) = exc.value.problems
    assert problem.code == "policy_critical_abstention_limit"
    assert "'billing'" in problem.message and "max_abstention_rate" in problem.message
    assert "add max_abstention_rate" in problem.fix
    # both critical rules broken: both reported at once
    raw["slices"]["billing"]["false_pass_rate_basis"] = "point"
    with pytest.raises(WorkbenchError) as exc:
        load_policy(write_policy(tmp_path, raw))
    assert sorted(p.code for p in exc.value.problems) == [
        "policy_critical_abstention_limit",
        "policy_critical_basis",
    ]


def test_demo_policies_declare_abstention_limits() -> None:
    root = Path(__file__).resolve().parents[1] / "data" / "policies"
    for name in ("support-release@1.yaml", "support-release@2.yaml"):
        policy = load_policy(root / name)
        assert all(spec.max_abstention_rate is not None for spec in policy.slices.values()), name


# ---------------------------------------------------------------- gate


@pytest.fixture
def evaluated(make_dataset):
    return lambda spec: Evaluated(make_dataset, spec)


def test_omitted_abstention_limit_means_zero(evaluated) -> None:
    spec = clean_spec()
    spec["general"].append(("pass", RR))  # 1 abstention of 7 verdicts in a slice without a limit
    result = evaluated(spec).gate(make_policy())
    b = only(result, "abstention_rate_exceeded")
    assert result.outcome == "quality_failed" and (b.slice, b.category, b.waivable) == (
        "general",
        "quality",
        True,
    )
    assert (
        b.evidence["abstentions"],
        b.evidence["verdicts"],
        b.evidence["limit"],
        b.evidence["limit_declared"],
    ) == (1, 7, 0.0, False)
    assert (b.evidence["decided"], b.evidence["cases"]) == (6, 7) and b.case_ids == ["gen-06"]
    assert "no max_abstention_rate" in b.message
    # declared: the limit is inclusive, 1/7 = 0.143
    assert (
        evaluated(spec)
        .gate(make_policy(slices={"general": {"max_abstention_rate": 1 / 7}}))
        .outcome
        == "certified"
    )
    assert "abstention_rate_exceeded" in {
        x.code
        for x in (
            evaluated(spec)
            .gate(make_policy(slices={"general": {"max_abstention_rate": 0.14}}))
            .blockers
        )
    }
    # a slice-level override waives it outside critical slices
    ovr = make_override(codes=["abstention_rate_exceeded"], slices=["general"])
    assert evaluated(spec).gate(make_policy(), overrides=[ovr]).outcome == "certified"


def test_critical_abstention_limit_is_not_waivable(evaluated) -> None:
    spec = clean_spec()
    spec["billing"] += [("fail", RR), ("pass", RR)]  # 2 of 17 = 0.118 > 0.1
    result = evaluated(spec).gate(
        make_policy(),
        overrides=[make_override(codes=["abstention_rate_exceeded"], slices=["billing"])],
    )
    b = only(result, "abstention_rate_exceeded")
    assert (
        result.outcome == "quality_failed"
        and b.slice == "billing"
        and not b.waivable
        and result.waived == []
    )
    assert (
        b.evidence["abstentions"] == 2
        and b.evidence["verdicts"] == 17
        and b.evidence["limit_declared"] is True
    )
    spec["billing"].pop()  # 1 of 16 = 0.0625 <= 0.1
    assert evaluated(spec).gate(make_policy()).outcome == "certified"


def test_abstentions_never_enter_false_pass_numerators_or_denominators(evaluated) -> None:
    spec = clean_spec()
    # billing: 2 false passes, 8 human fails abstained, 5 passes aligned
    spec["billing"] = [("fail", "pass")] * 2 + [("fail", RR)] * 8 + [("pass", "pass")] * 5
    ev = evaluated(spec)
    billing = next(s for s in ev.report.slices if s.slice == "billing")
    # before the fix the rate was 2 of 10 (abstentions diluted it); now 2 of 2
    assert (billing.false_pass_rate.k, billing.false_pass_rate.n, billing.false_pass_rate.rate) == (
        2,
        2,
        1.0,
    )
    assert (billing.false_fail_rate.k, billing.false_fail_rate.n) == (0, 5)
    assert (billing.verdicts, billing.abstentions, billing.decided, billing.n) == (15, 8, 7, 15)
    assert billing.coverage.rate == pytest.approx(
        7 / 15
    ) and billing.abstention_rate.rate == pytest.approx(8 / 15)
    result = ev.gate(
        make_policy(
            slices={
                "billing": {
                    "max_false_passes": 5,
                    "max_false_pass_rate": 0.9,
                    "max_abstention_rate": 1.0,
                }
            }
        )
    )
    b = only(result, "false_pass_rate_exceeded")
    assert (b.evidence["false_passes"], b.evidence["human_fails_decided"], b.evidence["rate"]) == (
        2,
        2,
        1.0,
    )
    assert (b.evidence["decided"], b.evidence["cases"]) == (7, 15)


def test_no_decided_human_fail_is_review_and_says_how_many_are_needed(evaluated) -> None:
    spec = clean_spec()
    spec["billing"] = [("fail", RR)] * 10 + [("pass", "pass")] * 5 + [("pass", "fail")]
    ev = evaluated(spec)
    policy = make_policy(
        slices={"billing": {"max_false_pass_rate": 0.1, "max_abstention_rate": 1.0}}
    )
    result = ev.gate(
        policy, overrides=[make_override(codes=["rate_unbounded"], slices=["billing"])]
    )
    b = only(result, "rate_unbounded")
    assert (
        result.outcome == "review_required"
        and b.slice == "billing"
        and not b.waivable
        and result.waived == []
    )
    assert b.evidence["human_fails"] == 10 and b.evidence["human_fails_decided"] == 0
    assert b.evidence["verdicts_needed_at_zero_errors"] == 35 == cases_needed(0.1)
    assert "At zero errors: 35 human-fail cases judged pass or fail" in b.message
    assert (
        "billing: 0 human-fail cases; the limit 0.10 needs at least 127 to bound at 0.05 (Wilson)"
        in b.message
    )  # the plan's figure
    assert (
        b.evidence["verdicts_needed_to_bound_at_half_limit"]
        == 127
        == b.evidence["more_verdicts_needed"]
    )
    # outside critical slices: 1 on the point basis, waivable by slice
    spec = clean_spec()
    spec["general"] = [("pass", "pass")] * 4 + [("fail", RR)] * 2
    general = only(
        evaluated(spec).gate(make_policy(slices={"general": {"max_abstention_rate": 0.5}})),
        "rate_unbounded",
    )
    assert (
        general.waivable
        and general.evidence["verdicts_needed_at_zero_errors"] == 1
        and general.evidence["basis"] == "point"
    )
    # a count limit alone is not met without a decided human fail either
    count_only = make_policy(
        slices={
            "general": {
                "max_false_pass_rate": None,
                "max_false_passes": 0,
                "max_abstention_rate": 0.5,
            }
        }
    )
    alone = only(evaluated(spec).gate(count_only), "rate_unbounded")
    assert alone.evidence["max_false_passes"] == 0 and alone.evidence["limit"] is None
    # the same for false-fail limits and human passes
    spec["general"] = [("pass", RR)] * 4 + [("fail", "fail")] * 2
    ff = evaluated(spec).gate(
        make_policy(
            slices={
                "general": {
                    "max_false_fail_rate": 0.25,
                    "false_fail_rate_basis": "upper_95",
                    "max_abstention_rate": 1.0,
                }
            }
        )
    )
    b = only(ff, "rate_unbounded")
    assert (
        b.evidence["rate"] == "false_fail_rate"
        and b.evidence["human_passes_decided"] == 0
        and b.evidence["verdicts_needed_at_zero_errors"] == 12
    )


def test_unproven_message_uses_cases_needed(evaluated) -> None:
    result = evaluated(clean_spec()).gate(
        make_policy(slices={"billing": {"max_false_pass_rate": 0.05}})
    )
    b = only(result, "false_pass_rate_unproven")
    assert (
        b.evidence["verdicts_needed_at_zero_errors"] == 73 == cases_needed(0.05)
        and "73 human-fail cases" in b.message
    )


def test_min_n_counts_decided_verdicts(evaluated) -> None:
    spec = clean_spec()
    spec["general"] = [("pass", "pass")] * 4 + [("fail", "fail")] * 2 + [("pass", RR)] * 3
    result = evaluated(spec).gate(
        make_policy(min_n_per_slice=7, slices={"general": {"max_abstention_rate": 0.5}})
    )
    b = only(result, "too_few_cases")
    assert b.evidence == {"decided": 6, "verdicts": 9, "abstentions": 3, "cases": 9, "min_n": 7}


def test_constant_verdict_per_slice_and_not_for_errors(evaluated, tmp_path: Path) -> None:
    spec = clean_spec()
    spec["general"] = [("pass", "pass")] * 4 + [("fail", "pass")] * 2  # general: only "pass"
    result = evaluated(spec).gate(make_policy(slices={"general": {"max_false_pass_rate": 1.0}}))
    b = only(result, "constant_verdict")
    assert b.slice == "general" and not b.waivable and b.evidence["among"] == "with a verdict"
    # a human fail that only errored leaves the slice to the error and rate blockers
    spec["general"] = [("pass", "pass")] * 4 + [("fail", "ERR")]
    codes = {x.code for x in evaluated(spec).gate(make_policy(max_evaluator_errors=1)).blockers}
    assert "constant_verdict" not in codes and "rate_unbounded" in codes
    # the override store cannot waive it
    with pytest.raises(WorkbenchError) as exc:
        from workbench.policy import add_override

        add_override(
            tmp_path / "never-written.jsonl",
            policy="test-release@1",
            approver="A",
            reason="r",
            expires_at="2099-01-01",
            follow_up="F",
            codes=["constant_verdict"],
            created_at=NOW,
        )
    assert [p.code for p in exc.value.problems] == ["override_code_not_waivable"]
    assert not (tmp_path / "never-written.jsonl").exists()


# ---------------------------------------------------------------- coverage shown


def abstaining_files(make_dataset, tmp_path: Path) -> dict[str, str]:
    cases = [make_case(f"c{i}", "fail" if i < 4 else "pass", slice="general") for i in range(8)]
    rows = [
        make_result(c, RR if i in (0, 4) else c["adjudication"]["label"])
        for i, c in enumerate(cases)
    ]
    gold = make_dataset(cases)
    results = write_results(tmp_path / "results.jsonl", stamped(rows, gold))
    raw = json.loads(
        make_policy(slices={"general": {"max_abstention_rate": 0.25}}).model_dump_json(
            exclude_none=True
        )
    )
    (tmp_path / "pol").mkdir(exist_ok=True)
    return {
        "gold": str(gold),
        "results": str(results),
        "policy": str(write_policy(tmp_path / "pol", raw)),
    }


def test_align_shows_coverage_in_text_and_json(make_dataset, tmp_path: Path) -> None:
    files = abstaining_files(make_dataset, tmp_path)
    body = json.loads(
        CliRunner()
        .invoke(align_cmd, ["--gold", files["gold"], "--results", files["results"], "--json"])
        .output
    )
    assert body["schema_version"] == 3
    general = next(s for s in body["slices"] if s["slice"] == "general")
    assert (general["verdicts"], general["abstentions"], general["decided"]) == (8, 2, 6)
    assert general["coverage"]["k"] == 6 and general["coverage"]["n"] == 8
    assert (general["false_pass_rate"]["n"], general["false_fail_rate"]["n"]) == (3, 3)
    assert general["judge_labels"] == {"pass": 3, "fail": 3, RR: 2}
    text = (
        CliRunner()
        .invoke(align_cmd, ["--gold", files["gold"], "--results", files["results"]])
        .output
    )
    assert "8 verdicts (6 decided, 2 abstentions)" in text and "coverage:   6/8 = 0.75" in text
    row = next(line for line in text.splitlines() if line.startswith("general"))
    assert row.split()[-3:] == ["0.75", "8", "low"]  # coverage 6/8 beside the rates
    wide = (
        CliRunner()
        .invoke(align_cmd, ["--gold", files["gold"], "--results", files["results"], "--wide"])
        .output
    )
    row = next(line for line in wide.splitlines() if line.startswith("general"))
    assert "6/8 = 0.75" in row and "0/3" in row  # coverage beside the FP column


def test_gate_shows_coverage_and_figures_in_text_and_json(make_dataset, tmp_path: Path) -> None:
    files = abstaining_files(make_dataset, tmp_path)
    args = ["--gold", files["gold"], "--results", files["results"], "--policy", files["policy"]]
    body = json.loads(CliRunner().invoke(gate_cmd, [*args, "--json"]).output)
    assert body["schema_version"] == 2
    general = next(f for f in body["figures"] if f["slice"] == "general")
    assert (
        general["decided"],
        general["abstentions"],
        general["coverage"]["k"],
        general["coverage"]["n"],
    ) == (6, 2, 6, 8)
    assert general["abstention_rate"]["rate"] == 0.25 and general["false_pass_rate"]["n"] == 3
    assert [f["slice"] for f in body["figures"]][-1] == "(all)"
    text = CliRunner().invoke(gate_cmd, args).output
    assert "figures (coverage = decided verdicts / cases in scope" in text
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("general"))
    assert "6/8 0.75" in line and "2/8 0.25" in line and "0/3 0.00" in line


def test_report_frames_show_coverage(make_dataset) -> None:
    cases = [make_case(f"c{i}", "fail" if i < 4 else "pass", slice="general") for i in range(8)]
    rows = [
        make_result(c, RR if i in (0, 4) else c["adjudication"]["label"])
        for i, c in enumerate(cases)
    ]
    dataset = load_dataset(make_dataset(cases))
    join = join_results(dataset, result_lines(rows))
    frame = disagreement_counts(join)
    assert (
        int(frame.loc["general", "abstained"]),
        int(frame.loc["general", "decided"]),
        int(frame.loc["general", "cases"]),
    ) == (2, 6, 8)
    assert frame.loc["general", "coverage"] == 0.75 and frame.loc["(all)", "coverage"] == 0.75
    report = alignment_report(join)
    slices = report.slice_frame()
    assert (
        slices.loc["general", "coverage"] == "6/8 = 0.75"
        and int(slices.loc["general", "abstained"]) == 2
    )

    class Human:
        overall = None
        slices: dict[str, Any] = {}

    summary = agreement_summary(report, Human())
    assert (
        summary.loc["general", "coverage"] == 0.75
        and summary.loc["general", "abstention_rate"] == 0.25
    )
    assert "coverage:   6/8" in format_report(report)


def test_format_gate_lists_figures_even_without_blockers(evaluated) -> None:
    result = evaluated(clean_spec()).gate(make_policy())
    assert result.outcome == "certified"
    text = format_gate(result)
    assert "15/15 1.00" in text and "(all)" in text
