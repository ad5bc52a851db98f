"""``workbench ci sentinel --since REF``: only what a change affects, on sentinels and controls,
under the cap.

Each test works in a temporary git repository holding a copy of the demo project; the LLM
candidate talks to the demo's scripted model on a free port (``serve_demo_llm``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from ci_support import assert_junit_shape, git, git_project, junit_cases
from click.testing import CliRunner

from workbench.ci import Changes, discover, run_sentinel_lane_sync
from workbench.ci._sentinel import affected_candidates
from workbench.cli.main import main
from workbench.phases import serve_demo_llm
from workbench.repeatability import run_drift_sync

GUIDE = (
    "Terminology guide: these abbreviations and synonyms state the same concept as the term they\n"
    "stand for: 2FA, MFA and two-step verification (two-factor authentication); RMA (return\n"
    "authorization); biz days and working days (business days); ID check (identity\n"
    "verification); OTP (one-time passcode); DPO (data protection officer). A prohibited claim\n"
    'that the response explicitly denies ("we do not ...") is not asserted.\n\n'
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return git_project(tmp_path / "repo")


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DEMO_LLM_API_KEY", "test-placeholder-key")
    server = serve_demo_llm(latency_s=0.0)
    yield server
    server.stop()


def _change_prompt(project: Path) -> None:
    prompt = project / "data" / "candidates" / "prompts" / "support-llm-judge@1.md"
    text = prompt.read_text(encoding="utf-8")
    head, sep, rest = text.partition("\n\n")
    prompt.write_text(head + sep + GUIDE + rest, encoding="utf-8")


def _statuses(report) -> dict[str, str]:
    return {c.check_id: c.status for c in report.checks}


def test_a_changed_prompt_runs_only_its_candidate_and_flags_control_failures_and_drift(
    project: Path, model, tmp_path: Path
) -> None:
    _change_prompt(project)
    gold_before = sorted(p.name for p in (project / "data" / "demo").iterdir())
    report = run_sentinel_lane_sync(project, since="HEAD", out=tmp_path / "lane1")
    # Only the candidate whose prompt changed, for that reason.
    assert [(a.candidate, a.covered, a.reasons) for a in report.affected] == [
        ("support-llm-judge@1", True, ["prompt: data/candidates/prompts/support-llm-judge@1.md"])
    ]
    assert {r.candidate for r in report.runs} == {
        "support-llm-judge@1",
        "support-llm-judge@1 at HEAD",
    }
    assert [r.purpose for r in report.runs] == ["controls", "sentinels", "baseline"]
    # Cost and tokens are those of the calls actually made, under the policy's cap.
    assert report.calls == model.call_count == 33 + 6 + 6
    assert report.budget_source == "policy ci_budget_usd" and report.budget_usd == 0.15
    assert 0 < report.cost_usd <= report.estimate_usd <= report.budget_usd
    assert report.tokens_in > 0 and report.tokens_out > 0
    assert report.tokens_in == sum(r.tokens_in for r in report.runs)
    statuses = _statuses(report)
    assert (
        statuses["control-runs/support-llm-judge@1 on support-controls@1"] == "failed"
    )  # the demo model is steerable
    sentinels = next(c for c in report.checks if c.check_id == "sentinels/support-llm-judge@1")
    assert (
        sentinels.status == "failed"
        and sentinels.category == "review"
        and sentinels.code == "sentinel_drift"
    )
    assert (
        sentinels.failing == ["prv-05-02"] and "BOUNDARY" in sentinels.details[0]
    )  # 'PII' now passes: the guide
    assert "changed sentinels 1 of" in sentinels.message  # with its gold groups and interval
    assert report.exit_code == 1 and report.outcome == "failed"
    # Nothing was written beside the gold (no drift log, no ledger).
    assert sorted(p.name for p in (project / "data" / "demo").iterdir()) == gold_before
    assert (
        json.loads((Path(report.run_dir) / "sentinel.json").read_text(encoding="utf-8"))[
            "exit_code"
        ]
        == 1
    )
    assert Path(report.run_dir).parent == tmp_path / "lane1"

    # Reviewed, exact control failures in workbench.yaml: what is left is the drift (exit 4,
    # review).
    config = yaml.safe_load((project / "workbench.yaml").read_text(encoding="utf-8"))
    controls = next(c for c in report.checks if c.check_id.startswith("control-runs/"))
    config["ci"]["expected_failures"].append(
        {
            "check": controls.check_id,
            "failing": controls.failing,
            "reason": "the demo model obeys steering text",
            "approver": "Support Quality lead (demo)",
        }
    )
    (project / "workbench.yaml").write_text(
        yaml.safe_dump(config, sort_keys=False), encoding="utf-8"
    )
    report = run_sentinel_lane_sync(project, since="HEAD", out=tmp_path / "lane2")
    assert (
        _statuses(report)["control-runs/support-llm-judge@1 on support-controls@1"]
        == "expected_failure"
    )
    assert report.exit_code == 4 and report.outcome == "review_required"

    # The change is intended: a reviewer records the new baseline; the lane compares with it.
    entry = run_drift_sync(
        project / "data" / "candidates" / "support-llm-judge@1.yaml",
        project / "data" / "demo",
        record_baseline=True,
        out=tmp_path / "drift",
        progress=False,
    )
    assert entry.status == "recorded"
    report = run_sentinel_lane_sync(project, since="HEAD", out=tmp_path / "lane3")
    sentinels = next(c for c in report.checks if c.check_id == "sentinels/support-llm-judge@1")
    assert sentinels.status == "passed" and "drift log" in sentinels.details[0]
    assert [r.purpose for r in report.runs] == ["controls", "sentinels"]  # no baseline run needed
    assert report.exit_code == 0


def test_cli_prints_cost_and_tokens_and_writes_junit(project: Path, model, tmp_path: Path) -> None:
    _change_prompt(project)
    junit = tmp_path / "sentinel.xml"
    result = CliRunner().invoke(
        main,
        [
            "ci",
            "sentinel",
            "--since",
            "HEAD",
            "--project",
            str(project),
            "--out",
            str(tmp_path / "lane"),
            "--junit",
            str(junit),
        ],
    )
    assert result.exit_code == 1, result.output
    assert "cost $0.00" in result.output and "tokens" in result.output and " in + " in result.output
    cases = junit_cases(assert_junit_shape(junit.read_text(encoding="utf-8")))
    assert cases == {
        "budget/per-job cap": "passed",
        "control-runs/support-llm-judge@1 on support-controls@1": "failure",
        "sentinels/support-llm-judge@1": "failure",
    }


def test_nothing_judge_facing_changed_means_nothing_runs(
    project: Path, model, tmp_path: Path
) -> None:
    (project / "NOTES.md").write_text("not a judge file\n", encoding="utf-8")
    card = project / "data" / "demo" / "card.md"
    card.write_text(card.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "docs")
    report = run_sentinel_lane_sync(project, since="HEAD~1", out=tmp_path / "lane")
    assert report.changed_files == ["NOTES.md", "data/demo/card.md"]
    assert (
        report.affected == []
        and report.runs == []
        and report.cost_usd == 0
        and model.call_count == 0
    )
    assert report.exit_code == 0


def test_a_cap_too_small_refuses_before_any_call(project: Path, model, tmp_path: Path) -> None:
    _change_prompt(project)
    junit = tmp_path / "s.xml"
    result = CliRunner().invoke(
        main,
        [
            "ci",
            "sentinel",
            "--since",
            "HEAD",
            "--project",
            str(project),
            "--budget-usd",
            "0.001",
            "--out",
            str(tmp_path / "lane"),
            "--junit",
            str(junit),
        ],
    )
    assert result.exit_code == 3, result.output
    assert "budget_insufficient" in result.output and "nothing was started" in result.output
    (run_dir,) = (tmp_path / "lane").iterdir()
    assert model.call_count == 0 and [p.name for p in run_dir.iterdir()] == ["sentinel.json"]
    assert (
        junit_cases(assert_junit_shape(junit.read_text(encoding="utf-8")))["budget/per-job cap"]
        == "error"
    )
    above = CliRunner().invoke(
        main,
        [
            "ci",
            "sentinel",
            "--since",
            "HEAD",
            "--project",
            str(project),
            "--budget-usd",
            "1",
            "--out",
            str(tmp_path / "lane2"),
        ],
    )
    assert above.exit_code == 2 and "budget_above_policy" in above.output and model.call_count == 0


def test_a_policy_without_a_ci_cap_needs_one(project: Path, model, tmp_path: Path) -> None:
    _change_prompt(project)
    result = CliRunner().invoke(
        main,
        [
            "ci",
            "sentinel",
            "--since",
            "HEAD",
            "--project",
            str(project),
            "--policy",
            str(project / "data" / "policies" / "support-release@2.yaml"),
            "--out",
            str(tmp_path / "lane"),
        ],
    )
    assert result.exit_code == 2 and "ci_budget_missing" in result.output and model.call_count == 0


def test_an_unknown_ref_or_no_repository_is_invalid_input(project: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "ci",
            "sentinel",
            "--since",
            "no-such-branch",
            "--project",
            str(project),
            "--out",
            str(tmp_path / "l"),
        ],
    )
    assert (
        result.exit_code == 2
        and "git_ref_unknown" in result.output
        and "Traceback" not in result.output
    )
    bare = tmp_path / "bare"
    bare.mkdir()
    result = CliRunner().invoke(
        main,
        [
            "ci",
            "sentinel",
            "--since",
            "HEAD",
            "--project",
            str(bare),
            "--out",
            str(tmp_path / "l2"),
        ],
    )
    assert result.exit_code == 2 and "not_a_git_repository" in result.output


def test_an_affected_kind_this_lane_cannot_run_is_incomplete(
    project: Path, model, tmp_path: Path
) -> None:
    # imported verdicts are replayed, never re-run: the lane names the command that checks them
    spec = "name: ext\nversion: '1'\nkind: imported\nlabels: [pass, fail]\nresults: ext.jsonl\n"
    (project / "data" / "candidates" / "ext@1.yaml").write_text(spec, encoding="utf-8")
    report = run_sentinel_lane_sync(project, since="HEAD", out=tmp_path / "lane")
    (check,) = report.checks
    assert (
        check.check_id == "sentinels/ext@1"
        and check.status == "error"
        and check.code == "not_covered"
    )
    assert "workbench ci contracts" in check.message
    assert report.exit_code == 3 and model.call_count == 0


def test_a_changed_function_module_without_a_recorded_baseline_is_incomplete(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = project / "ci_local_judge.py"
    module.write_text(
        "from ragas.metrics import discrete_metric\n\n\n"
        "@discrete_metric(name='local_judge', allowed_values=['pass', 'fail'])\n"
        "def local_judge(response: str, grading_notes: str):\n"
        "    return 'pass' if len(response) > 40 else 'fail'\n",
        encoding="utf-8",
    )
    spec = {
        "schema_version": 1,
        "name": "local-judge",
        "version": "1",
        "kind": "ragas-function",
        "labels": ["pass", "fail"],
        "function": "ci_local_judge:local_judge",
    }
    (project / "data" / "candidates" / "local-judge@1.yaml").write_text(
        yaml.safe_dump(spec), encoding="utf-8"
    )
    git(project, "add", "-A")
    git(project, "commit", "-qm", "local judge")
    monkeypatch.syspath_prepend(str(project))
    monkeypatch.delitem(sys.modules, "ci_local_judge", raising=False)
    module.write_text(module.read_text(encoding="utf-8").replace("> 40", "> 80"), encoding="utf-8")
    report = run_sentinel_lane_sync(project, since="HEAD", out=tmp_path / "lane")
    assert [(a.candidate, a.reasons) for a in report.affected] == [
        ("local-judge@1", ["function module: ci_local_judge.py"])
    ]
    sentinels = next(c for c in report.checks if c.check_id == "sentinels/local-judge@1")
    assert (
        sentinels.status == "error"
        and sentinels.code == "baseline_missing"
        and "cannot be rebuilt" in sentinels.message
    )
    assert report.exit_code == 3 and report.cost_usd == 0
    monkeypatch.delitem(sys.modules, "ci_local_judge", raising=False)


def test_shared_files_affect_every_label_candidate_and_only_them(project: Path) -> None:
    inv = discover(project)
    demo = project / "data" / "demo"
    shared = {
        (demo / "rubric.yaml").resolve(): "rubric",
        (demo / "sentinels.yaml").resolve(): "sentinels",
    }
    top = project.resolve()
    rubric_change = Changes(top=top, ref="HEAD", commit="0" * 40, files=("data/demo/rubric.yaml",))
    found, removed, problems = affected_candidates(inv, rubric_change, shared)
    labels = {c.spec.label for c in found}
    assert labels == {
        "coverage-judge@1",
        "rubric-judge@1",
        "rubric-judge@2",
        "rubric-judge@3",
        "support-llm-judge@1",
        "support-llm-judge@2",
    }
    assert removed == [] and problems == []
    (project / "workbench.yaml").write_text(
        "ci:\n  sentinel:\n    judge_code: [lib/*.py]\n", encoding="utf-8"
    )
    code_change = Changes(top=top, ref="HEAD", commit="0" * 40, files=("lib/client.py",))
    found, _, _ = affected_candidates(discover(project), code_change, shared)
    assert {c.spec.label for c in found} == labels and all(c.code_changed for c in found)
    deleted = Changes(
        top=top, ref="HEAD", commit="0" * 40, files=("data/candidates/old-judge@1.yaml",)
    )
    assert affected_candidates(inv, deleted, shared)[1] == ["data/candidates/old-judge@1.yaml"]


def test_changes_are_measured_from_the_branch_point(project: Path, model, tmp_path: Path) -> None:
    git(project, "checkout", "-qb", "feature")
    (project / "NOTES.md").write_text("feature work\n", encoding="utf-8")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "feature")
    git(project, "checkout", "-q", "main")
    _change_prompt(project)  # the base branch moves on after the branch point
    git(project, "commit", "-qam", "base changes a prompt")
    git(project, "checkout", "-q", "feature")
    report = run_sentinel_lane_sync(project, since="main", out=tmp_path / "lane")
    assert report.changed_files == ["NOTES.md"] and report.affected == [] and model.call_count == 0
