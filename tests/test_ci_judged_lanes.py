"""``workbench ci sentinel`` for ranking and noise judges: a changed judge runs through the lane
and the feature's own gate decides (``--scope pr``: must-win fixtures and the noise sentinel set;
``scheduled``: everything).

Each test works in a temporary git repository holding a copy of the demo project. The ranking
judges are deterministic ``ragas-ranking-function`` candidates; the noise judge talks to the
demo's scripted NoiseSensitivity model on a free port.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from ci_support import assert_junit_shape, git, git_project, junit_cases
from click.testing import CliRunner

from workbench.ci import LaneRefused, run_sentinel_lane_sync
from workbench.cli.main import main
from workbench.demo import noise as demo_noise
from workbench.noise import load_pairs
from workbench.ranking import load_fixtures

RANKER = "data/candidates/policy-ranker@1.yaml"
FIXTURES = "data/ranking/support-ranking@2.yaml"
LOCAL_RANKERS = """
from ragas.metrics import ranking_metric

from workbench.demo.ranking import evidence_phrases


def _order(context, candidates, best_first):
    evidence = "\\n".join(context)
    scored = [(len(evidence_phrases(c["text"], evidence)), c["label"]) for c in candidates]
    sign = -1 if best_first else 1
    return [label for _, label in sorted(scored, key=lambda s: (sign * s[0], s[1]))]


@ranking_metric(name="worst_first", allowed_values=3)
def worst_first(user_input, context, candidates):
    return _order(context, candidates, best_first=False)


@ranking_metric(name="broken", allowed_values=3)
def broken(user_input, context, candidates):
    raise RuntimeError("the ranking service is down")
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    repo = git_project(tmp_path / "repo")
    (repo / "ci_rankers.py").write_text(LOCAL_RANKERS, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "local rankers")
    monkeypatch.syspath_prepend(str(repo))
    monkeypatch.delitem(sys.modules, "ci_rankers", raising=False)
    yield repo
    monkeypatch.delitem(sys.modules, "ci_rankers", raising=False)


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def _use_function(project: Path, function: str) -> None:
    _edit(project / RANKER, "function: workbench.demo.ranking:policy_evidence_order", function)


def _judged_cases(run_dir: Path) -> set[str]:
    """The fixture ids the ranking run judged (its results file)."""
    results = run_dir / "policy-ranker@1" / "ranking" / "support-ranking@2" / "results.jsonl"
    lines = results.read_text(encoding="utf-8").splitlines()
    return {json.loads(line)["case_id"] for line in lines if line.strip()}


def test_a_ranking_judge_that_loses_a_must_win_fixture_fails_the_pr_lane(
    project: Path, tmp_path: Path
) -> None:
    # Before this lane ran ranking judges, this change ended "not covered", exit 3.
    _use_function(project, "function: ci_rankers:worst_first")
    report = run_sentinel_lane_sync(project, since="HEAD", out=tmp_path / "lane")
    assert report.exit_code == 1, [(c.check_id, c.code) for c in report.checks]
    assert report.scope == "pr" and report.outcome == "failed"
    (affected,) = report.affected
    assert affected.candidate == "policy-ranker@1" and affected.covered
    gate = next(c for c in report.checks if "under support-ranking-release@1" in c.name)
    assert gate.group == "ranking" and gate.status == "failed" and gate.category == "failure"
    assert gate.code == "ranking_reversal_confirmed"
    must_win = {
        f.case_id for f in load_fixtures(project / FIXTURES).fixtures if f.gate == "must-win"
    }
    assert gate.failing and set(gate.failing) <= must_win
    # The pull-request scope judged the must-win fixtures and nothing else.
    assert _judged_cases(Path(report.run_dir)) == must_win
    # The report-only rollout policy reads the same results and never fails the lane.
    rollout = next(c for c in report.checks if "under support-ranking-rollout@1" in c.name)
    assert rollout.status == "passed" and "QUALITY_FAILED" in rollout.message
    assert [r.purpose for r in report.runs] == ["ranking"] and report.runs[0].status == "complete"
    gate_dir = Path(report.run_dir) / "policy-ranker@1" / "ranking" / "support-ranking@2" / "gate"
    assert (gate_dir / "support-ranking-release@1" / "ranking_report.json").is_file()
    # a failure artifact per failing fixture, replayable from the fixture file itself
    failures = gate_dir / "support-ranking-release@1" / "failures"
    assert {p.stem for p in failures.glob("*.json")} >= set(gate.failing)
    artifact = json.loads((failures / f"{gate.failing[0]}.json").read_text(encoding="utf-8"))
    assert f"{FIXTURES} --case {gate.failing[0]}" in artifact["reproduce"]


def test_the_scheduled_scope_runs_the_monitor_only_fixtures_too(
    project: Path, tmp_path: Path
) -> None:
    _edit(project / RANKER, "(reproducible, not a quality rule).", "(reproducible); edited.")
    pr = run_sentinel_lane_sync(project, since="HEAD", out=tmp_path / "pr")
    assert pr.exit_code == 0 and pr.outcome == "passed", [c.message for c in pr.checks]
    fixtures = load_fixtures(project / FIXTURES).fixtures
    assert "chargeback-009" not in _judged_cases(Path(pr.run_dir))
    junit = tmp_path / "scheduled.xml"
    run = CliRunner().invoke(
        main,
        [
            "ci", "sentinel", "--since", "HEAD", "--project", str(project), "--scope",
            "scheduled", "--out", str(tmp_path / "scheduled"), "--junit", str(junit), "--json",
        ],
    )  # fmt: skip
    assert run.exit_code == 4, run.output
    report = json.loads(run.output)
    assert report["scope"] == "scheduled" and report["budget_source"] == (
        "policy ci_scheduled_budget_usd"
    )
    assert _judged_cases(Path(report["run_dir"])) == {f.case_id for f in fixtures}
    (gate,) = [c for c in report["checks"] if c["name"].endswith("support-ranking-release@1")]
    assert gate["category"] == "review" and gate["code"] == "ranking_editorial_drift"
    assert gate["failing"] == ["chargeback-009"]  # a monitor-only fixture
    name = "ranking/policy-ranker@1 on support-ranking@2 under support-ranking-release@1"
    assert junit_cases(assert_junit_shape(junit.read_text(encoding="utf-8")))[name] == "failure"


def test_a_ranking_judge_whose_run_fails_is_incomplete_not_a_pass(
    project: Path, tmp_path: Path
) -> None:
    _use_function(project, "function: ci_rankers:broken")
    report = run_sentinel_lane_sync(project, since="HEAD", out=tmp_path / "lane")
    assert report.exit_code == 3 and report.outcome == "incomplete"
    gates = [c for c in report.checks if c.group == "ranking"]
    assert len(gates) == 2
    # the enforcing policy and the report-only one: incomplete is never waived into a pass
    enforced = next(c for c in gates if c.name.endswith("support-ranking-release@1"))
    assert enforced.status == "error" and enforced.category == "incomplete"
    assert "EVALUATION_INCOMPLETE" in enforced.message
    # report-only mode (the rollout policy) never sets the exit code; its check names the outcome
    rollout = next(c for c in gates if c.name.endswith("support-ranking-rollout@1"))
    assert rollout.status == "passed" and "EVALUATION_INCOMPLETE" in rollout.message


@pytest.fixture
def noise_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    monkeypatch.setenv("DEMO_LLM_API_KEY", "test-placeholder-key")
    server = demo_noise.serve(env=None)
    monkeypatch.setenv(demo_noise.DEMO_NOISE_URL_ENV, server.base_url)
    yield server
    server.stop()


def test_a_changed_noise_judge_runs_the_sentinel_pairs_under_the_noise_gate(
    project: Path, noise_model, tmp_path: Path
) -> None:
    _edit(project / "data" / "candidates" / "noise-judge@1.yaml", "timeout_s: 20", "timeout_s: 25")
    report = run_sentinel_lane_sync(project, since="HEAD", out=tmp_path / "lane")
    assert report.exit_code == 4 and report.outcome == "review_required"
    checks = {c.check_id: c for c in report.checks}
    gate = checks["noise/noise-judge@1 on support-noise@2"]
    assert gate.category == "review" and gate.code == "noise_reference_defect_review"
    assert gate.failing == ["ctl-refdef-gift-cards"]
    assert "noise/noise-judge@1 on support-noise-baseline@2" in checks
    # pr scope: the controls and the frozen sentinel set, never the other candidate pairs
    noise_runs = [r for r in report.runs if r.purpose == "noise"]
    assert len(noise_runs) == 4  # controls and candidates of each of the two suites
    saved = json.loads(
        (
            Path(report.run_dir)
            / "noise-judge@1"
            / "noise"
            / "support-noise@2"
            / "noise_report.json"
        ).read_text(encoding="utf-8")
    )
    assert saved["sentinels_only"] is True and saved["outcome"] == "review_required"
    assert {p["pair_id"] for p in saved["pairs"]} == {"ref-timing", "ship-cutoff"}
    assert 0 < report.cost_usd <= report.estimate_usd <= report.budget_usd == 0.15
    assert report.calls == sum(r.calls for r in report.runs) > 0


def test_ranking_and_noise_runs_are_priced_under_the_cap_before_any_call(
    project: Path, noise_model, tmp_path: Path
) -> None:
    _edit(project / "data" / "candidates" / "noise-judge@1.yaml", "timeout_s: 20", "timeout_s: 25")
    with pytest.raises(LaneRefused) as refused:
        run_sentinel_lane_sync(
            project, since="HEAD", out=tmp_path / "lane", budget_usd=0.01, scope="scheduled"
        )
    assert "ci_scheduled_budget_usd" in refused.value.problems[0].location
    report = refused.value.report
    (budget,) = [c for c in report.checks if c.group == "budget"]
    assert budget.code == "budget_insufficient" and report.exit_code == 3
    assert report.estimate_usd > 0.01 and noise_model.call_count == 0 and report.runs == []


SUITE = "data/noise/support-noise@2.yaml"
SUITES = (SUITE, "data/noise/support-noise-baseline@2.yaml")


def _noise_ledger_entries() -> list[object]:
    """The noise entries of the project's held-out ledger (the one ``run_noise`` writes to)."""
    from workbench.heldout import HeldOutLedger, ledger_path_for

    path = ledger_path_for(SUITE)
    return [e for e in HeldOutLedger(path).entries() if e.kind == "noise"] if path.is_file() else []


def test_the_scheduled_scope_never_scores_held_out_pairs_and_runs_again_the_next_night(
    project: Path, noise_model, tmp_path: Path
) -> None:
    # Before CI lanes excluded held-out pairs, each nightly run recorded a held-out use, and the
    # next run (here already the second suite, which shares held-out content with the first)
    # was refused with held_out_reuse.
    _edit(project / "data" / "candidates" / "noise-judge@1.yaml", "timeout_s: 20", "timeout_s: 25")
    held_out = {
        (suite.label, p.pair_id, p.item_id(m))
        for suite in (load_pairs(project / path) for path in SUITES)
        for p in suite.active()
        if p.partition == "held_out"
        for m in ("clean", "noisy")
    }
    assert len({pid for _, pid, _ in held_out}) == 4 and len(held_out) == 16
    nights = []
    for night in ("night-1", "night-2"):
        report = run_sentinel_lane_sync(
            project, since="HEAD", out=tmp_path / night, scope="scheduled"
        )
        gates = {c.name: c for c in report.checks if c.group == "noise"}
        assert set(gates) == {f"noise-judge@1 on {Path(s).stem}" for s in SUITES}
        # each suite reaches its own gate (the demo's forbidden-source retrieval failure),
        # never a refusal for a reused held-out partition
        assert {(c.category, c.code) for c in gates.values()} == {
            ("failure", "retrieval_forbidden_source")
        }, [c.details for c in gates.values()]
        nights.append((report.exit_code, sorted((c.name, c.code) for c in gates.values())))
        for path in SUITES:
            label = Path(path).stem
            run_dir = Path(report.run_dir) / "noise-judge@1" / "noise" / label
            run = json.loads((run_dir / "noise_run.json").read_text(encoding="utf-8"))
            assert run["held_out_excluded"] is True and run["held_out_entry"] is None
            saved = json.loads((run_dir / "noise_report.json").read_text(encoding="utf-8"))
            assert saved["held_out_excluded"] is True and saved["pairs"]
            reported = {p["pair_id"] for p in saved["pairs"]}
            assert not reported & {pid for s, pid, _ in held_out if s == label}
            judged = {
                json.loads(line)["case_id"]
                for results in run_dir.rglob("results.jsonl")
                for line in results.read_text(encoding="utf-8").splitlines()
                if line.strip()
            }
            assert judged and not judged & {item for s, _, item in held_out if s == label}
    assert nights[0] == nights[1] and nights[0][0] == 1
    assert _noise_ledger_entries() == []


def test_the_pr_scope_does_not_run_a_suite_whose_sentinels_are_held_out(
    project: Path, noise_model, tmp_path: Path
) -> None:
    _edit(project / "data" / "candidates" / "noise-judge@1.yaml", "timeout_s: 20", "timeout_s: 25")
    # a new suite version (the frozen one cannot change) that names a held-out sentinel
    text = (project / SUITE).read_text(encoding="utf-8")
    text = text.replace("version: '2'\n", "version: '3'\nsupersedes: '2'\n", 1)
    new = project / "data" / "noise" / "support-noise@3.yaml"
    new.write_text(text.replace("sentinels:\n", "sentinels:\n- ref-late-request\n", 1), "utf-8")
    run = CliRunner().invoke(
        main,
        [
            "ci", "sentinel", "--since", "HEAD", "--project", str(project), "--out",
            str(tmp_path / "lane"),
        ],
    )  # fmt: skip
    assert run.exit_code == 3, run.output
    line = (
        "ERROR            noise/noise-judge@1 on support-noise@3: not run: the pr scope would"
        " score 1 held-out pair(s) (sentinel ref-late-request) and CI lanes never score"
        " held-out pairs"
    )
    assert line in run.output
    assert "support-noise@3.yaml: in a new suite version, move them to development" in run.output
    # the other suite still runs (its sentinels are not held out); this one makes no call
    assert "run noise     noise-judge@1 on support-noise-baseline@2" in run.output
    assert "on support-noise@3:" not in run.output.replace(line, "")
    assert _noise_ledger_entries() == []
