"""Declared, stratified sampling (issue 12 §3): the plan and its rules, the deterministic draw,
the plan hash in the run manifest, the scope align/gate accept, reserved-first budget lanes,
and cost/token distributions per slice.

Every run here goes over HTTP to ``workbench.testing.FakeLLM`` on 127.0.0.1 (port 0); its
usage (and so the cost) grows with the prompt, so cases differ in cost.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import make_case

from workbench.cli.main import main
from workbench.errors import WorkbenchError
from workbench.gold import load_dataset
from workbench.judges import load_candidate
from workbench.policy import load_policy
from workbench.results import distribution, slice_costs
from workbench.results._costs import percentile_nearest_rank
from workbench.runs import RunOptions, run_candidate_sync
from workbench.runs._limits import CallEstimate, Limits
from workbench.sampling import (
    SampleCase,
    SamplingPlan,
    check_plan,
    draw_sample,
    load_sampling_plan,
    plan_lanes,
)
from workbench.testing import FakeLLM, Reply, Rule

KEY_ENV = "WB_TEST_JUDGE_KEY"
PROMPT = (
    "Notes:\n{grading_notes}\n\nQuestion: {user_input}\n\nResponse:\n{response}\n\nAnswer pass or"
    " fail."
)

POLICY: dict[str, Any] = {
    "schema_version": 1,
    "name": "sampled-release",
    "version": "1",
    "owner": "QA lead",
    "rationale": "Limits for the unit-test rubric, written before results.",
    "rubric_version": "r1",
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
PLAN: dict[str, Any] = {
    "seed": 7,
    "applies_to": ["development", "production"],
    "rationale": "general is low risk and large: half of it bounds its rate well enough.",
    "slices": {"general": {"fraction": 0.5}, "billing": {"reserve_usd": 0.5}},
}


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-sampling")


def write_spec(directory: Path, base_url: str) -> Path:
    spec = {
        "name": "llm",
        "version": "1",
        "kind": "ragas-llm",
        "labels": ["pass", "fail"],
        "model": "fake-judge",
        "prompt": PROMPT,
        "endpoint": {
            "base_url": base_url,
            "api_key_env": KEY_ENV,
            "timeout_s": 2,
            "max_retries": 2,
        },
        "params": {"temperature": 0, "max_tokens": 100},
        "pricing": {"input_per_million_usd": 1000.0, "output_per_million_usd": 2000.0},
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "llm@1.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def write_policy(
    directory: Path, sampling: dict[str, Any] | None, name: str = "sampled-release"
) -> Path:
    raw = {**json.loads(json.dumps(POLICY)), "name": name}
    if sampling is not None:
        raw["sampling"] = sampling
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}@1.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def gold_cases(
    general: int = 10, billing: int = 4, general_first: bool = True
) -> list[dict[str, Any]]:
    """Cases whose response length (so cost) varies; general cases come first in the file."""
    g = [
        make_case(
            f"g{i}",
            "pass",
            slice="general",
            group=f"fam{i // 2}",
            response="refund in five days " * (1 + i),
        )
        for i in range(general)
    ]
    b = [
        make_case(
            f"b{i}", "pass", slice="billing", response=f"BILLING-CASE {i} " + "charge " * (1 + i)
        )
        for i in range(billing)
    ]
    return g + b if general_first else b + g


def run_cli(*args: str) -> Any:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def results_of(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


# ------------------------------------------------------------------ the plan and its rules


def test_a_policy_that_samples_a_critical_slice_is_refused_with_a_fix(
    tmp_path: Path, make_dataset
) -> None:
    bad = write_policy(
        tmp_path, {**PLAN, "slices": {"billing": {"size": 2}, "general": {"fraction": 0.5}}}
    )
    with pytest.raises(WorkbenchError) as caught:
        load_policy(bad)
    codes = [p.code for p in caught.value.problems]
    assert codes == ["sampling_critical_sampled"]
    assert (
        "billing" in caught.value.problems[0].message
        and "remove size/fraction" in caught.value.problems[0].fix
    )
    # the run command refuses it before any call: exit 2, one line with the fix, no traceback
    result = run_cli(
        "run",
        "--candidate",
        write_spec(tmp_path, "http://127.0.0.1:9/v1"),
        "--gold",
        make_dataset(gold_cases()),
        "--partition",
        "development",
        "--out",
        tmp_path / "out",
        "--policy",
        bad,
        "--no-progress",
    )
    assert result.exit_code == 2, result.output
    assert "sampling_critical_sampled" in result.output and "remove size/fraction" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "out" / "manifest.json").exists()


def test_a_plan_file_lists_every_problem_at_once(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "seed": 1,
                "applies_to": ["held_out", "development"],
                "rationale": "x",
                "slices": {
                    "general": {"size": 3, "fraction": 0.2},
                    "billing": {"reserve_share": 0.7},
                    "empty": {"reserve_share": 0.6},
                },
            }
        ),
        encoding="utf-8",
    )
    with pytest.raises(WorkbenchError) as caught:
        load_sampling_plan(path)
    codes = sorted(p.code for p in caught.value.problems)
    assert codes == ["sampling_held_out", "sampling_owner", "sampling_size_conflict"], codes
    # with the shape fixed, the shares that add up to more than the budget are named
    path.write_text(
        yaml.safe_dump(
            {
                "seed": 1,
                "owner": "QA",
                "applies_to": ["development"],
                "rationale": "x",
                "slices": {"billing": {"reserve_share": 0.7}, "empty": {"reserve_share": 0.6}},
            }
        ),
        encoding="utf-8",
    )
    with pytest.raises(WorkbenchError) as caught:
        load_sampling_plan(path)
    assert [p.code for p in caught.value.problems] == ["sampling_reserve_shares"]


def test_run_refuses_unknown_slices_reservations_over_budget_and_held_out(
    tmp_path: Path, make_dataset
) -> None:
    gold = make_dataset([*gold_cases(), make_case("h1", "pass", partition="held_out")])
    spec = write_spec(tmp_path, "http://127.0.0.1:9/v1")
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        yaml.safe_dump(
            {
                **PLAN,
                "owner": "QA",
                "slices": {"nope": {"size": 1}, "billing": {"reserve_usd": 5.0}},
            }
        ),
        encoding="utf-8",
    )
    result = run_cli(
        "run",
        "--candidate",
        spec,
        "--gold",
        gold,
        "--partition",
        "development",
        "--out",
        tmp_path / "o1",
        "--sampling-plan",
        plan,
        "--budget-usd",
        "1",
        "--no-progress",
    )
    assert result.exit_code == 2, result.output
    assert (
        "sampling_unknown_slice" in result.output
        and "sampling_reservations_exceed_budget" in result.output
    )
    ok = write_policy(tmp_path, PLAN)
    result = run_cli(
        "run",
        "--candidate",
        spec,
        "--gold",
        gold,
        "--partition",
        "calibration",
        "--out",
        tmp_path / "o2",
        "--policy",
        ok,
        "--no-progress",
    )
    assert result.exit_code == 2 and (
        "sampling_scope_not_covered" in result.output or "empty_partition" in result.output
    ), result.output
    declared = load_policy(ok).sampling
    assert declared is not None
    with pytest.raises(WorkbenchError) as refused:  # held-out runs only through certify
        run_candidate_sync(
            load_candidate(spec),
            load_dataset(gold),
            "held_out",
            tmp_path / "o3",
            RunOptions(progress=False),
            sampling=declared,
        )
    assert "held_out_refused" in [p.code for p in refused.value.problems]
    assert not (tmp_path / "o3" / "manifest.json").exists()
    with pytest.raises(WorkbenchError) as caught:
        check_plan(
            declared, {"billing": "critical", "general": "low"}, location="plan", scope="held_out"
        )
    assert [p.code for p in caught.value.problems] == ["sampling_held_out"]


# ------------------------------------------------------------------ the draw


def cases_for_draw(n: int = 40) -> list[SampleCase]:
    return [
        SampleCase(f"c{i}", "general" if i % 4 else "billing", group=f"grp{i // 3}")
        for i in range(n)
    ]


def test_the_draw_is_deterministic_group_aware_and_sized() -> None:
    plan = SamplingPlan.model_validate({**PLAN, "slices": {"general": {"fraction": 0.25}}})
    cases = cases_for_draw()
    first = draw_sample(plan, cases)
    shuffled = cases[:]
    random.Random(3).shuffle(shuffled)
    assert set(draw_sample(plan, shuffled).sampled) == set(
        first.sampled
    )  # input order does not matter
    general = [c for c in cases if c.slice == "general"]
    drawn = [c for c in general if c.case_id in first.sampled]
    target = math.ceil(0.25 * len(general))
    # at least the target, less than one more group beyond it
    biggest_group = max(sum(1 for c in general if c.group == g) for g in {c.group for c in general})
    assert target <= len(drawn) < target + biggest_group
    for g in {c.group for c in drawn}:  # whole groups only
        assert all(c.case_id in first.sampled for c in general if c.group == g)
    # billing (not listed) is complete
    assert all(c.case_id in first.sampled for c in cases if c.slice == "billing")
    # another seed draws another sample (for at least one of a few seeds)
    others = [
        set(draw_sample(plan.model_copy(update={"seed": s}), cases).sampled) for s in (8, 9, 10)
    ]
    assert any(o != set(first.sampled) for o in others)
    assert plan.model_copy(update={"seed": 8}).sha256() != plan.sha256()


def test_adding_cases_never_moves_a_left_out_case_into_the_sample() -> None:
    plan = SamplingPlan.model_validate({**PLAN, "slices": {"general": {"size": 6}}})
    cases = cases_for_draw(40)
    before = draw_sample(plan, cases)
    after = draw_sample(
        plan, [*cases, *(SampleCase(f"n{i}", "general", group=f"new{i}") for i in range(10))]
    )
    assert before.sampled_out and set(before.sampled_out) <= set(after.sampled_out)


# ------------------------------------------------------------------ runs, manifests, align and gate


@pytest.fixture
def sampled_run(tmp_path: Path, make_dataset) -> dict[str, Any]:
    gold = make_dataset(gold_cases())
    policy = write_policy(tmp_path / "policies", PLAN)
    with FakeLLM(default=Reply(value="pass")) as server:
        spec = write_spec(tmp_path, server.base_url)
        out = tmp_path / "run"
        result = run_cli(
            "run",
            "--candidate",
            spec,
            "--gold",
            gold,
            "--partition",
            "development",
            "--out",
            out,
            "--policy",
            policy,
            "--no-progress",
        )
        calls = server.call_count
    return {
        "gold": gold,
        "policy": policy,
        "spec": spec,
        "out": out,
        "result": result,
        "calls": calls,
        "tmp": tmp_path,
    }


def test_a_run_under_a_plan_records_the_plan_hash_and_judges_only_the_sample(
    sampled_run: dict[str, Any],
) -> None:
    result, out = sampled_run["result"], sampled_run["out"]
    assert result.exit_code == 0, result.output
    plan = load_policy(sampled_run["policy"]).sampling
    assert plan is not None
    manifest = json.loads((out / "manifest.json").read_text())
    summary = json.loads((out / "run.json").read_text())
    assert manifest["sampling"]["plan_sha256"] == plan.sha256() == summary["sampling_plan_sha256"]
    dataset = load_dataset(sampled_run["gold"])
    expected = draw_sample(
        plan, [SampleCase(c.case_id, c.slice, c.group) for c in dataset.partition("development")]
    )
    judged = {r["case_id"] for r in results_of(out)}
    assert judged == set(expected.sampled) and sampled_run["calls"] == len(judged)
    assert (
        sorted(manifest["sampling"]["sampled_out"])
        == sorted(expected.sampled_out)
        == sorted(summary["sampled_out"])
    )
    assert all(
        not c.startswith("b") for c in summary["sampled_out"]
    )  # critical billing is complete
    assert 0 < len(summary["sampled_out"]) < 10
    assert "sampled out (" in result.output and plan.sha256()[:12] in result.output
    assert "cost and tokens per judged case, by slice" in result.output and "p95" in result.output
    # a resume under another plan is a different run
    other = write_policy(sampled_run["tmp"] / "other", {**PLAN, "seed": 8})
    again = run_cli(
        "run",
        "--candidate",
        sampled_run["spec"],
        "--gold",
        sampled_run["gold"],
        "--partition",
        "development",
        "--out",
        out,
        "--policy",
        other,
        "--no-progress",
    )
    assert (
        again.exit_code == 2 and "manifest_changed" in again.output and "sampling" in again.output
    )


def gate(run: dict[str, Any], policy: Path) -> tuple[int, dict[str, Any]]:
    result = run_cli(
        "gate",
        "--gold",
        run["gold"],
        "--results",
        run["out"] / "results.jsonl",
        "--policy",
        policy,
        "--run",
        run["out"],
        "--json",
    )
    body = result.output[result.output.index("{") :]
    return result.exit_code, json.loads(body)


def test_gate_accepts_the_sampled_scope_only_under_the_policy_plan(
    sampled_run: dict[str, Any],
) -> None:
    out = sampled_run["out"]
    n_out = len(json.loads((out / "run.json").read_text())["sampled_out"])
    code, result = gate(sampled_run, sampled_run["policy"])
    codes = [b["code"] for b in result["blockers"]]
    assert "missing_results" not in codes and "sampled_out" in codes
    assert code == 4 and result["outcome"] == "review_required"  # a sample is never certified
    sampled = next(b for b in result["blockers"] if b["code"] == "sampled_out")
    assert sampled["evidence"]["sampled_out"] == n_out and not sampled["waivable"]
    # the same run under a policy without a plan: leaving cases out is a scope change
    bare = write_policy(sampled_run["tmp"] / "bare", None)
    code, result = gate(sampled_run, bare)
    missing = next(b for b in result["blockers"] if b["code"] == "missing_results")
    assert code == 3 and result["outcome"] == "evaluation_incomplete"
    assert missing["evidence"]["missing"] == n_out and "no plan was declared" in missing["message"]
    # ... and under a policy declaring another plan (another seed)
    other = write_policy(sampled_run["tmp"] / "other", {**PLAN, "seed": 8})
    code, result = gate(sampled_run, other)
    missing = next(b for b in result["blockers"] if b["code"] == "missing_results")
    assert code == 3 and "not under the declared plan" in missing["message"]


def _uncount(out: Path) -> None:
    """Lower the last invocation's call count by one in ``run.json`` and ``invocations.jsonl``."""
    summary = json.loads((out / "run.json").read_text(encoding="utf-8"))
    summary["calls"] -= 1
    (out / "run.json").write_text(json.dumps(summary), encoding="utf-8")
    lines = (out / "invocations.jsonl").read_text(encoding="utf-8").splitlines()
    last = json.loads(lines[-1])
    last["calls"] -= 1
    text = "".join(line + "\n" for line in [*lines[:-1], json.dumps(last)])
    (out / "invocations.jsonl").write_text(text, encoding="utf-8")


def test_a_manifest_edited_to_hide_a_dropped_case_does_not_shrink_the_scope(
    sampled_run: dict[str, Any],
) -> None:
    out = sampled_run["out"]
    rows = results_of(out)
    dropped = next(r for r in rows if r["case_id"].startswith("g"))
    (out / "results.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows if r is not dropped), encoding="utf-8"
    )
    refused = run_cli("align", "--gold", sampled_run["gold"], "--results", out / "results.jsonl")
    assert refused.exit_code == 2 and "attempts_missing" in refused.output  # the run counted it
    _uncount(out)  # a forger who also lowers the run's counts
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["sampling"]["sampled_out"] = sorted(
        [*manifest["sampling"]["sampled_out"], dropped["case_id"]]
    )
    (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    code, result = gate(sampled_run, sampled_run["policy"])
    missing = next(b for b in result["blockers"] if b["code"] == "missing_results")
    assert code == 3 and missing["case_ids"] == [dropped["case_id"]]
    assert "does not leave out when re-drawn" in missing["message"]
    # a plan edited in the manifest (its hash no longer matches) is not accepted at all
    manifest["sampling"]["plan"]["seed"] = 99
    (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    code, result = gate(sampled_run, sampled_run["policy"])
    assert (
        code == 3
        and "edited"
        in next(b for b in result["blockers"] if b["code"] == "missing_results")["message"]
    )


def test_align_shows_the_sample_and_cost_distributions(sampled_run: dict[str, Any]) -> None:
    out = sampled_run["out"]
    plain = run_cli(
        "align", "--gold", sampled_run["gold"], "--results", out / "results.jsonl", "--json"
    )
    report = json.loads(plain.output[plain.output.index("{") :])
    assert (
        report["status"] == "incomplete" and report["sampling_rejected"]
    )  # no declared plan given
    declared = run_cli(
        "align",
        "--gold",
        sampled_run["gold"],
        "--results",
        out / "results.jsonl",
        "--policy",
        sampled_run["policy"],
        "--json",
    )
    report = json.loads(declared.output[declared.output.index("{") :])
    assert (
        report["status"] == "complete"
        and report["sampled_out_case_ids"]
        and report["sampling_rejected"] is None
    )
    # cost per judged case by slice, checked against the results by hand
    rows = results_of(out)
    for row in report["costs"]:
        mine = [
            r for r in rows if row["slice"] == "(all)" or r["case_id"].startswith(row["slice"][0])
        ]
        costs = sorted(r["cost_usd"] for r in mine)
        assert row["cases"] == len(mine) and row["cost_usd"]["max"] == pytest.approx(costs[-1])
        assert row["cost_usd"]["p95"] == pytest.approx(costs[math.ceil(0.95 * len(costs)) - 1])
        assert row["cost_usd"]["total"] == pytest.approx(sum(costs))
        assert row["tokens_in"]["max"] == max(r["tokens_in"] for r in mine)
    assert len({r["cost_usd"] for r in rows}) > 1  # the figures are not all the same number
    text = run_cli(
        "align",
        "--gold",
        sampled_run["gold"],
        "--results",
        out / "results.jsonl",
        "--policy",
        sampled_run["policy"],
    ).output
    assert (
        "Cost per judged case" in text and "median" in text and "p95" in text and "sampled:" in text
    )


def test_cost_distribution_by_hand() -> None:
    assert percentile_nearest_rank([5, 1, 3, 2, 4], 0.95) == 5
    assert percentile_nearest_rank(list(range(1, 21)), 0.95) == 19  # ceil(0.95 x 20) = 19th
    d = distribution([1.0, 2.0, 3.0, 10.0])
    assert (d.total, d.median, d.p95, d.max) == (16.0, 2.5, 10.0, 10.0)
    rows = [
        {"case_id": "a", "repeat": 0, "cost_usd": 0.1, "tokens_in": 10, "tokens_out": 1},
        {
            "case_id": "a",
            "repeat": 0,
            "cost_usd": 0.2,
            "tokens_in": 20,
            "tokens_out": 2,
        },  # a retry: the case costs 0.3
        {"case_id": "b", "repeat": 0, "cost_usd": 0.5, "tokens_in": 50, "tokens_out": 5},
        {
            "case_id": "c",
            "repeat": 0,
            "cost_usd": 0.0,
            "tokens_in": 0,
            "tokens_out": 0,
            "cached_from_run_id": "r0",
        },
    ]
    out = {
        c.slice: c
        for c in slice_costs(rows, {"a": "x", "b": "x", "c": "y"}, {"x": "high", "y": "critical"})
    }
    assert (
        out["x"].cases == 2
        and out["x"].calls == 3
        and out["x"].cost_usd.median == pytest.approx(0.4)
        and out["x"].cost_usd.max == pytest.approx(0.5)
    )
    assert out["x"].tokens_in.total == 80 and out["y"].cases == 0 and out["y"].cached == 1
    assert out["(all)"].cases == 2


# ------------------------------------------------------------------ reserved budget


def test_lower_lanes_cannot_spend_a_reserved_slice_hold() -> None:
    """The admission rule, step by step (no server, no timing)."""

    async def scenario() -> list[str]:
        log: list[str] = []
        limits = Limits(
            1.0,
            None,
            0.0,
            breaker_after=5,
            endpoint=None,
            secrets=[],
            priority={"crit": 0, "low": 1},
            holds={"crit": 0.5},
            lane_units={"crit": 1, "low": 3},
            lane_spent={},
        )
        call = CallEstimate(expected=0.3, reservation=0.3, tokens_in=1, tokens_out_cap=1)
        small = CallEstimate(expected=0.1, reservation=0.1, tokens_in=1, tokens_out_cap=1)
        # a lower call waits while the reserved unit has not started
        waiting = asyncio.ensure_future(limits.admit(call, True, "low"))
        await asyncio.sleep(0.05)
        log.append(f"low before crit started: {'waiting' if not waiting.done() else 'admitted'}")
        assert await limits.admit(small, True, "crit")
        await limits.settle(small, 0.1, called=True, lane="crit")  # crit has spent 0.1 of its 0.5
        assert await asyncio.wait_for(waiting, 1)
        await limits.settle(call, 0.3, called=True, lane="low")  # spent 0.4; crit still holds 0.4
        log.append(f"spent {limits.spent:.1f}")
        second = asyncio.ensure_future(
            limits.admit(call, True, "low")
        )  # 0.4 + 0.3 + 0.4 held > 1.0
        await asyncio.sleep(0.05)
        log.append(f"low into the hold: {'waiting' if not second.done() else 'admitted'}")
        assert limits.stop_reason is None  # waiting, not stopping the run
        await limits.unit_done("crit", started=True)  # crit finished: its hold is released
        assert await asyncio.wait_for(second, 1)
        log.append("low after crit finished: admitted")
        return log

    assert asyncio.run(scenario()) == [
        "low before crit started: waiting",
        "spent 0.4",
        "low into the hold: waiting",
        "low after crit finished: admitted",
    ]


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_run_stopped_by_budget_never_leaves_a_critical_case_unrun(
    tmp_path: Path, make_dataset, concurrency: int
) -> None:
    # general cases come first in the gold: without a plan they are judged first
    gold = make_dataset(gold_cases(general=10, billing=4, general_first=True))
    plan = SamplingPlan.model_validate(
        {**PLAN, "slices": {"general": {"fraction": 1.0}, "billing": {"reserve_share": 0.5}}}
    )
    dataset = load_dataset(gold)
    with FakeLLM(default=Reply(value="pass")) as server:
        spec = write_spec(tmp_path, server.base_url)
        judge = load_candidate(spec)
        total = run_candidate_sync(
            judge,
            dataset,
            "development",
            tmp_path / "measure",
            RunOptions(progress=False, cache_dir=False),
        ).cost_usd
        budget = total * 0.5  # room for about half of the cases
        control = run_candidate_sync(
            judge,
            dataset,
            "development",
            tmp_path / "plain",
            RunOptions(budget_usd=budget, concurrency=concurrency, progress=False, cache_dir=False),
        )
        assert control.stop_reason == "budget_exhausted"
        assert any(u.startswith("b") for u in control.unrun)  # the failure mode a plan prevents
        summary = run_candidate_sync(
            judge,
            dataset,
            "development",
            tmp_path / "planned",
            RunOptions(budget_usd=budget, concurrency=concurrency, progress=False, cache_dir=False),
            sampling=plan,
        )
    assert summary.status == "incomplete" and summary.stop_reason == "budget_exhausted"
    assert summary.cost_usd <= budget + 1e-12
    assert not [u for u in summary.unrun if u.startswith("b")], summary.unrun
    rows = results_of(tmp_path / "planned")
    assert {r["case_id"] for r in rows if r["value"] is not None} >= {f"b{i}" for i in range(4)}
    assert [
        u for u in summary.unrun if u.startswith("g")
    ]  # the budget did run out, on the lower lane
    first_general = min(r["started_at"] for r in rows if r["case_id"].startswith("g"))
    assert all(
        r["started_at"] <= first_general
        for r in rows
        if r["case_id"].startswith("b") and r["attempt"] == 1
    )
    costs = {c.slice: c for c in summary.slice_costs}
    assert costs["billing"].cases == 4 and costs["general"].cases == len(
        {r["case_id"] for r in rows if r["case_id"].startswith("g")}
    )


def test_a_reserved_slice_retry_is_paid_from_its_hold(tmp_path: Path, make_dataset) -> None:
    """billing's first attempts fail (429, retried after 0.3 s); meanwhile the lower lane may
    spend only what billing's hold leaves, so billing's retries still fit in the budget."""
    gold = make_dataset(gold_cases(general=12, billing=2))
    dataset = load_dataset(gold)
    plan = SamplingPlan.model_validate(
        {**PLAN, "slices": {"general": {"fraction": 1.0}, "billing": {"reserve_share": 0.4}}}
    )
    rules = [Rule(reply=Reply(fault="http_429"), contains="BILLING-CASE", times=2)]
    with FakeLLM(default=Reply(value="pass")) as server:
        total = run_candidate_sync(
            load_candidate(write_spec(tmp_path, server.base_url)),
            dataset,
            "development",
            tmp_path / "measure",
            RunOptions(progress=False, cache_dir=False),
        ).cost_usd
    budget = total * 0.6
    with FakeLLM(rules=rules, default=Reply(value="pass"), retry_after_s=0.3) as server:
        judge = load_candidate(write_spec(tmp_path, server.base_url))
        summary = run_candidate_sync(
            judge,
            dataset,
            "development",
            tmp_path / "out",
            RunOptions(budget_usd=budget, concurrency=4, progress=False, cache_dir=False),
            sampling=plan,
        )
    rows = results_of(tmp_path / "out")
    billing = [r for r in rows if r["case_id"].startswith("b")]
    assert sorted((r["case_id"], r["attempt"], r["value"]) for r in billing) == [
        ("b0", 1, None),
        ("b0", 2, "pass"),
        ("b1", 1, None),
        ("b1", 2, "pass"),
    ]
    assert summary.stop_reason == "budget_exhausted" and summary.cost_usd <= budget + 1e-12
    lanes = plan_lanes(plan, {"billing": "critical", "general": "low", "empty": "medium"}, budget)
    assert lanes.holds == {"billing": pytest.approx(0.4 * budget)}


def test_the_certification_report_table_shows_the_distribution_per_slice(make_dataset) -> None:
    from workbench.reports import cost_by_slice

    dataset = load_dataset(make_dataset(gold_cases(general=3, billing=2)))
    rows = [
        {"case_id": "g0", "repeat": 0, "cost_usd": 0.1, "tokens_in": 10, "tokens_out": 1},
        {"case_id": "g1", "repeat": 0, "cost_usd": 0.3, "tokens_in": 30, "tokens_out": 3},
        {"case_id": "g2", "repeat": 0, "cost_usd": 0.2, "tokens_in": 20, "tokens_out": 2},
        {"case_id": "b0", "repeat": 0, "cost_usd": 0.9, "tokens_in": 90, "tokens_out": 9},
    ]
    frame = cost_by_slice(rows, dataset)
    assert list(frame.index) == ["billing", "general", "(all)"]  # critical first
    assert frame.loc["general", "cost_usd_median"] == pytest.approx(0.2) and frame.loc[
        "general", "cost_usd_max"
    ] == pytest.approx(0.3)
    assert frame.loc["(all)", "cost_usd_p95"] == pytest.approx(0.9) and frame.loc[
        "(all)", "tokens_in_median"
    ] == pytest.approx(25)
