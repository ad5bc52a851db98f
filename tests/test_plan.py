"""Sample-size planning (``workbench plan``): hand-computed values, statsmodels, the demo policy,
the CLI.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest
from _fresh import run_fresh
from _reference import proportion_confint
from click.testing import CliRunner

from workbench.cli import main
from workbench.gold import load_dataset
from workbench.planning import format_plan, plan_chart, plan_frame, plan_policy
from workbench.policy import load_policy
from workbench.stats import (
    bound_plan,
    cases_needed,
    cases_to_bound,
    too_few_cases_message,
    upper_bound,
)

ROOT = Path(__file__).resolve().parents[1]
GOLD = ROOT / "data" / "demo"
POLICIES = [
    ROOT / "data" / "policies" / "support-release@1.yaml",
    ROOT / "data" / "policies" / "support-release@2.yaml",
]
Z = 1.959963984540054  # two-sided 95%


def wilson_upper(k: int, n: int) -> float:
    """The Wilson score upper bound written out by hand (no statsmodels)."""
    p = k / n
    centre = p + Z * Z / (2 * n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return (centre + half) / (1 + Z * Z / n)


def hand_needed(limit: float, fraction: float, uppers, horizon: int = 6000) -> tuple[int, int]:
    """(needed, first_n) by brute force over n = 1..horizon with an independent upper bound.

    ``uppers(ks, ns)`` gives the bound for every n at once (the expected error count k of each),
    so statsmodels answers in one call instead of 6,000."""
    ns = list(range(1, horizon + 1))
    ks = [math.floor(fraction * limit * n + 1e-9) for n in ns]
    within = [bool(upper <= limit) for upper in uppers(ks, ns)]
    assert within[-200:] == [True] * 200, "horizon too short for this check"
    last_out = max((i for i, ok in enumerate(within, start=1) if not ok), default=0)
    return last_out + 1, within.index(True) + 1


@pytest.mark.parametrize("limit", [0.3, 0.2, 0.1, 0.05, 0.02])
def test_zero_errors_matches_the_closed_forms(limit: float) -> None:
    # Wilson with no error: z²/(n + z²) <= L  <=>  n >= z²(1 - L)/L.
    assert (
        bound_plan(limit, 0.0, "wilson").needed
        == math.ceil(Z * Z * (1 - limit) / limit)
        == cases_needed(limit)
    )
    # Clopper-Pearson with no error: 1 - (α/2)^(1/n) <= L  <=>  n >= ln(0.025)/ln(1 - L).
    assert bound_plan(limit, 0.0, "clopper-pearson").needed == math.ceil(
        math.log(0.025) / math.log(1 - limit)
    )


@pytest.mark.parametrize(
    ("limit", "fraction"), [(0.10, 0.5), (0.30, 0.5), (0.20, 0.25), (0.05, 0.5), (0.35, 0.7)]
)
def test_wilson_plan_matches_a_hand_written_wilson_bound(limit: float, fraction: float) -> None:
    plan = bound_plan(limit, fraction, "wilson")
    assert (plan.needed, plan.first_n) == hand_needed(
        limit, fraction, lambda ks, ns: [wilson_upper(k, n) for k, n in zip(ks, ns, strict=True)]
    )
    assert plan.errors_at_needed == math.floor(fraction * limit * plan.needed + 1e-9)


@pytest.mark.parametrize(("limit", "fraction"), [(0.10, 0.5), (0.30, 0.5), (0.05, 0.5)])
def test_plans_match_statsmodels_proportion_confint(limit: float, fraction: float) -> None:
    import numpy as np

    for interval, method in (("wilson", "wilson"), ("clopper-pearson", "beta")):
        plan = bound_plan(limit, fraction, interval)  # type: ignore[arg-type]
        assert (plan.needed, plan.first_n) == hand_needed(
            limit,
            fraction,
            lambda ks, ns, m=method: proportion_confint(
                np.array(ks), np.array(ns), alpha=0.05, method=m
            )[1],
        )


@pytest.mark.parametrize("seed", range(8))
def test_wilson_upper_bound_equals_statsmodels_to_the_last_bit(seed: int) -> None:
    """The Wilson end the gate and the plans use is computed without statsmodels, with its
    arithmetic: compared with ``==`` for scalars, arrays and the real-valued counts the search
    horizon uses.

    statsmodels computes every (k, n) of a seed in one call; each workbench scalar is compared
    with its element, and statsmodels' own scalar call is compared with the same element on 200
    of the points (so the scalar comparison is the one with statsmodels' scalar answer)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    ns = np.concatenate([np.arange(1, 200), rng.integers(200, 10**7, 300)])
    pairs: list[tuple[float, int]] = []
    for n in ns.tolist():
        ks = np.unique(np.concatenate([[0, n], rng.integers(0, n + 1, 6)]))
        pairs += [(k, n) for k in ks.tolist()]
        want = proportion_confint(ks.astype(float), np.full(len(ks), n), 0.05, "wilson")[1]
        assert (upper_bound(ks.astype(float), np.full(len(ks), n)) == want).all()
        pairs.append((float(rng.uniform(0, 0.5)) * n, n))  # a real-valued count
    k_all, n_all = np.array([k for k, _ in pairs]), np.array([n for _, n in pairs])
    reference = proportion_confint(k_all, n_all, alpha=0.05, method="wilson")[1]
    for (k, n), want in zip(pairs, reference.tolist(), strict=True):
        assert upper_bound(k, n) == want, (k, n)
    for i in rng.choice(len(pairs), 200, replace=False).tolist():
        k, n = pairs[i]
        assert proportion_confint(k, n, alpha=0.05, method="wilson")[1] == reference[i], (k, n)


def test_the_gates_too_few_cases_figures_import_neither_statsmodels_nor_scipy_stats() -> None:
    """``cases_to_bound`` and the blocker's sentence (every gate, certification kernel and
    ``verify``) need no plan-only figure: no statsmodels, no scipy.stats (0.66 s per process)."""
    code = (
        "import sys; from workbench.stats import cases_to_bound, too_few_cases_message; "
        "print(cases_to_bound(0.1), too_few_cases_message('s', 6, 0.1)); "
        "print(sorted(m for m in ('statsmodels', 'scipy.stats') if m in sys.modules))"
    )
    first, second = run_fresh(code).splitlines()
    assert first.startswith(f"{cases_to_bound(0.1)} s: 6 human-fail cases; the limit 0.10 needs")
    assert second == "[]"


def test_the_worked_example_limit_010_at_half() -> None:
    # Limit 0.10, true rate 0.05, Wilson, worked by hand (wilson_upper above):
    #   n =  99: floor(4.95) = 4 errors, upper(4, 99)  = 0.0993 <= 0.10  <- first crossing
    #   n = 100: floor(5.00) = 5 errors, upper(5, 100) = 0.1118 >  0.10  <- above again
    #   n = 126: floor(6.30) = 6 errors, upper(6, 126) = 0.100002 > 0.10 <- the last n above
    #   n = 127: floor(6.35) = 6 errors, upper(6, 127) = 0.0992 <= 0.10  <- within from here on
    assert wilson_upper(4, 99) <= 0.10 < wilson_upper(5, 100)
    assert wilson_upper(6, 127) <= 0.10 < wilson_upper(6, 126)
    assert all(wilson_upper(math.floor(0.05 * n + 1e-9), n) <= 0.10 for n in range(127, 5000))
    plan = bound_plan(0.10, 0.5)
    assert (plan.first_n, plan.needed, plan.errors_at_needed) == (99, 127, 6)
    assert cases_to_bound(0.10, 0.5, "clopper-pearson") > plan.needed  # the exact interval is wider


def test_power_is_the_binomial_chance_of_showing_the_limit() -> None:
    plan = bound_plan(0.10, 0.5)
    n, kmax = plan.needed, plan.max_errors_at_needed
    assert wilson_upper(kmax, n) <= 0.10 < wilson_upper(kmax + 1, n)
    by_hand = sum(math.comb(n, k) * 0.05**k * 0.95 ** (n - k) for k in range(kmax + 1))
    assert plan.power == pytest.approx(by_hand, rel=1e-9) and 0.4 < plan.power < 0.8


def test_impossible_and_degenerate_limits() -> None:
    assert bound_plan(0.0).needed is None and cases_to_bound(-0.1) is None
    assert bound_plan(1.0).needed == 1
    with pytest.raises(ValueError, match=r"at_fraction must be in \[0, 1\)"):
        bound_plan(0.1, 1.0)
    with pytest.raises(ValueError, match="unknown interval 'wald'"):
        bound_plan(0.1, 0.5, "wald")  # type: ignore[arg-type]
    assert upper_bound(0, 35) == pytest.approx(wilson_upper(0, 35))


def test_the_message_a_too_few_cases_blocker_can_cite() -> None:
    needed = cases_to_bound(0.10, 0.5)
    assert (
        too_few_cases_message("account_security", 6, 0.10)
        == f"account_security: 6 human-fail cases; the limit 0.10 needs at least {needed} to bound"
        " at 0.05 (Wilson)"
    )
    cp = cases_to_bound(0.30, 0.5, "clopper-pearson")
    assert (
        too_few_cases_message("refund_policy", 1, 0.30, human="pass", interval="clopper-pearson")
        == f"refund_policy: 1 human-pass case; the limit 0.30 needs at least {cp} to bound at 0.15"
        " (Clopper-Pearson)"
    )
    assert "no sample can bound" in too_few_cases_message("x", 3, 0.0)


def _gold_counts() -> Counter[tuple[str, str, str]]:
    """Adjudicated labels per slice and partition, read from gold.jsonl directly (superseded records
    skipped).
    """
    records = [
        json.loads(line)
        for line in (GOLD / "gold.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    superseded = {r["supersedes"] for r in records if r.get("supersedes")}
    counts: Counter[tuple[str, str, str]] = Counter()
    for case in records:
        if case["case_id"] in superseded:
            continue
        counts[(case["slice"], case["partition"], case["adjudication"]["label"])] += 1
        counts[(case["slice"], case["partition"], "*")] += 1
    return counts


@pytest.mark.parametrize("policy_path", POLICIES, ids=lambda p: p.name)
def test_demo_policy_plan_counts_and_shortfalls(policy_path: Path) -> None:
    policy = load_policy(policy_path)
    dataset = load_dataset(GOLD)
    plan = plan_policy(policy, dataset, policy_path=policy_path)
    counts = _gold_counts()
    label = {"human_fail": "fail", "human_pass": "pass", "all": "*"}
    assert {r.slice for r in plan.rows} == set(policy.slices)
    for row in plan.rows:
        spec = policy.slices[row.slice]
        for part in plan.partitions:
            have = counts[(row.slice, part, label[row.cases])]
            assert row.have[part] == have
            assert row.shortfall[part] == max(0, row.needed - have)
        if row.requirement == "false_pass_rate":
            basis = "upper_95" if spec.risk.value == "critical" else spec.false_pass_rate_basis
            assert row.basis == basis
            assert row.needed == (
                bound_plan(spec.max_false_pass_rate).needed if basis == "upper_95" else 1
            )
        elif row.requirement == "false_fail_rate":
            assert row.needed_upper_95 == bound_plan(spec.max_false_fail_rate).needed
        else:
            assert row.needed == policy.min_n_for(row.slice)
    short = {(r.slice, r.requirement) for r in plan.short("held_out")}
    # The policy's own rationale says so: 6 held-out human fails cannot bound the critical slices,
    # and escalation_handoff has 4 held-out cases for min_n 10.
    assert short == {
        ("refund_policy", "false_pass_rate"),
        ("account_security", "false_pass_rate"),
        ("escalation_handoff", "min_n"),
    }
    critical = next(
        r for r in plan.rows if r.slice == "account_security" and r.requirement == "false_pass_rate"
    )
    assert (
        critical.needed_at_zero_errors == 35 and "max_false_passes 0 also applies" in critical.note
    )
    text = format_plan(plan)
    assert f"6/short {critical.needed - 6}" in text and "held_out: 3 of" in text
    frame = plan_frame(plan)
    assert list(frame["short_held_out"]) == [r.shortfall["held_out"] for r in plan.rows]


def test_plan_counts_the_groups_the_gate_bounds_over() -> None:
    """Issue 32: the plan said "6 cases, short 55" where the gate bounds over 2 groups; each rate
    row now carries the groups of its cases, and a note says the need is then in groups."""
    records = [json.loads(line) for line in (GOLD / "gold.jsonl").read_text().splitlines()]
    superseded = {r["supersedes"] for r in records if r.get("supersedes")}
    groups: dict[tuple[str, str, str], set[str]] = {}
    for r in records:
        if r["case_id"] not in superseded:
            key = (r["slice"], r["partition"], r["adjudication"]["label"])
            groups.setdefault(key, set()).add(r["group"])
    plan = plan_policy(load_policy(POLICIES[0]), load_dataset(GOLD))
    for row in plan.rows:
        if row.requirement != "min_n":
            label = "fail" if row.cases == "human_fail" else "pass"
            assert row.have_groups == {
                p: len(groups.get((row.slice, p, label), ())) for p in plan.partitions
            }
    critical = next(
        r for r in plan.rows if r.slice == "account_security" and r.requirement == "false_pass_rate"
    )
    assert (critical.have["held_out"], critical.have_groups["held_out"]) == (6, 2)
    assert (
        f"the 6 human-fail cases of held_out come from 2 groups: the gate bounds over groups, so"
        f" when a group's cases are alike it needs up to {critical.needed} groups"
    ) in critical.note
    assert "come from" in format_plan(plan)
    point = [r for r in plan.rows if r.basis == "point"]
    assert point and not any("come from" in r.note for r in point)  # one case: no group note


def test_plan_chart_renders_offline_with_the_planned_n() -> None:
    from workbench.reports import to_svg

    plan = plan_policy(load_policy(POLICIES[0]), load_dataset(GOLD))
    svg = to_svg(plan_chart(plan))
    assert svg.startswith("<svg") and f"n = {bound_plan(0.10).needed}" in svg and "limit 0.1" in svg


def test_cli_plan_text_json_interval_and_exit_codes(tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["plan", "--policy", str(POLICIES[1]), "--gold", str(GOLD)]
    text = runner.invoke(main, base)
    assert text.exit_code == 0, text.output
    assert "false_pass_rate (human-fail)" in text.output and "Wilson" in text.output
    data = json.loads(runner.invoke(main, [*base, "--json"]).output)
    assert (
        data["kind"] == "workbench.plan"
        and data["interval"] == "wilson"
        and data["at_fraction"] == 0.5
    )
    cp = json.loads(
        runner.invoke(
            main, [*base, "--json", "--interval", "clopper-pearson", "--at-fraction", "0.25"]
        ).output
    )
    row = next(
        r
        for r in cp["rows"]
        if r["slice"] == "refund_policy" and r["requirement"] == "false_pass_rate"
    )
    assert (
        row["needed"] == bound_plan(0.10, 0.25, "clopper-pearson").needed
        and cp["interval"] == "clopper-pearson"
    )
    assert runner.invoke(main, [*base, "--fail-short"]).exit_code == 4
    bad = runner.invoke(main, [*base, "--at-fraction", "1"])
    assert (
        bad.exit_code == 2 and "at_fraction_range" in bad.output and "Traceback" not in bad.output
    )
    missing = runner.invoke(
        main, ["plan", "--policy", str(tmp_path / "none@1.yaml"), "--gold", str(GOLD)]
    )
    assert missing.exit_code == 2 and "policy_missing" in missing.output
