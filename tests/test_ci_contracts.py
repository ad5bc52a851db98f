"""``workbench ci contracts``: every file and the lineage between them, deterministic controls, no
model call.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from ci_support import ROOT, assert_junit_shape, copy_project, junit_cases
from click.testing import CliRunner, Result

import workbench.ci
from workbench.approval import Approvers
from workbench.ci import (
    CheckResult,
    ContractsReport,
    ExpectedFailure,
    apply_expected_failures,
    discover,
    junit_xml,
    run_contracts,
)
from workbench.cli.main import main


def _edit_yaml(path: Path, **changes: object) -> None:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    raw.update(changes)
    path.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True), encoding="utf-8")


def _check(report, check_id: str) -> CheckResult:
    found = [c for c in report.checks if c.check_id == check_id]
    assert found, (check_id, [c.check_id for c in report.checks])
    return found[0]


def _codes(report) -> set[str]:
    return {c.code for c in report.checks if c.code}


def _contracts_through_the_cli(
    monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> tuple[Result, ContractsReport]:
    """``workbench ci contracts ARGS`` and the report its one call of run_contracts returned."""
    returned: list[ContractsReport] = []

    def kept(*a: Any, **kw: Any) -> ContractsReport:
        returned.append(run_contracts(*a, **kw))
        return returned[-1]

    monkeypatch.setattr(workbench.ci, "run_contracts", kept)  # the CLI imports it when run
    result = CliRunner().invoke(main, ["ci", "contracts", *args])
    (report,) = returned
    return result, report


# ------------------------------------------------------------------------------ the demo project


def test_the_demo_project_passes_with_its_reviewed_expected_failures(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "ci",
            "contracts",
            "--project",
            str(ROOT),
            "--junit",
            str(tmp_path / "c.xml"),
            "--out",
            str(tmp_path / "run"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "outcome: PASSED (exit 0)" in result.output
    (run_dir,) = (tmp_path / "run").iterdir()  # one directory of its own per invocation
    report = json.loads((run_dir / "contracts.json").read_text(encoding="utf-8"))
    statuses = {c["group"] + "/" + c["name"]: c["status"] for c in report["checks"]}
    # Every kind of file was found and checked.
    for check_id in (
        "gold/data/demo",
        "gold/data/demo release",
        "gold/data/demo sentinels",
        "candidates/data/candidates/support-llm-judge@2.yaml",
        "policies/data/policies/support-release@3.yaml",
        "policies/data/policies/support-ranking-release@1.yaml",
        "controls/data/controls/support-controls@1.yaml",
        "ranking/data/ranking/support-ranking@2.yaml",
        "ranking/data/ranking/agreement-drop-review@1.yaml",
        "noise/data/noise/support-noise@2.yaml",
        "noise/data/noise/support-noise@2.panel.yaml",
    ):
        assert statuses[check_id] == "passed", check_id
    # The three deterministic candidates ran over the controls and fail exactly as reviewed.
    expected = {k for k, v in statuses.items() if v == "expected_failure"}
    assert expected == {
        "control-runs/rubric-judge@1 on support-controls@1",
        "control-runs/rubric-judge@2 on support-controls@1",
        "control-runs/rubric-judge@3 on support-controls@1",
        "control-runs/coverage-judge@1 on support-controls@1",
        "noise-retrieval/support-noise@2",
        "noise-retrieval/support-noise-baseline@2",
    }
    assert not any(k.startswith("control-runs/support-llm") for k in statuses)  # no model call
    root = assert_junit_shape((tmp_path / "c.xml").read_text(encoding="utf-8"))
    cases = junit_cases(root)
    assert cases["control-runs/rubric-judge@2 on support-controls@1"] == "skipped"
    assert cases["gold/data/demo"] == "passed" and len(cases) == len(statuses)
    assert (
        run_dir / "controls" / "rubric-judge@2" / "support-controls@1" / "results.jsonl"
    ).is_file()
    again = run_contracts(ROOT, out=tmp_path / "run")  # a second invocation never resumes the first
    assert again.exit_code == 0 and len(list((tmp_path / "run").iterdir())) == 2


def test_without_the_reviewed_list_the_demo_control_failures_fail_the_lane(tmp_path: Path) -> None:
    # Before this lane nothing ran the controls on a change; now a failing judge fails CI.
    project = copy_project(tmp_path / "p", config=False)
    report = run_contracts(project, out=tmp_path / "run")
    assert report.exit_code == 1 and report.outcome == "failed"
    check = _check(report, "control-runs/rubric-judge@2 on support-controls@1")
    assert (
        check.status == "failed"
        and "neg-lockout" in check.failing
        and "adv-fake-grading-note" in check.failing
    )
    xml = junit_xml("contracts", report.checks)
    assert (
        junit_cases(assert_junit_shape(xml))["control-runs/rubric-judge@2 on support-controls@1"]
        == "failure"
    )


# ------------------------------------------------------------------------------ contract problems
# (exit 2)


@pytest.mark.parametrize(
    ("case", "code", "check_id"),
    [
        ("unknown_slice", "policy_unknown_slice", "policies/data/policies/support-release@2.yaml"),
        ("controls_missing", "controls_missing", "policies/data/policies/support-release@3.yaml"),
        (
            "labels",
            "candidate_labels_unknown",
            "candidates/data/candidates/support-llm-judge@1.yaml",
        ),
        ("parent", "candidate_parent_missing", "candidates/data/candidates/rubric-judge@2.yaml"),
        ("not_frozen", "gold_not_frozen", "gold/data/demo release"),
        ("edited", "frozen_case_edited", "gold/data/demo"),
        ("fixture", "frozen_case_edited", "ranking/data/ranking/support-ranking@2.yaml"),
        (
            "ranking_policy",
            "policy_fixtures_missing",
            "policies/data/policies/support-ranking-release@1.yaml",
        ),
        (
            "suite_rubric",
            "controls_rubric_unknown",
            "controls/data/controls/support-controls@1.yaml",
        ),
        ("noise_frozen", "frozen_header_edited", "noise/data/noise/support-noise@2.yaml"),
        ("suite_edited", "frozen_case_edited", "controls/data/controls/support-controls@1.yaml"),
        ("sentinel", "held_out_sentinel", "gold/data/demo sentinels"),
    ],
)
def test_each_broken_contract_is_reported_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, code: str, check_id: str
) -> None:
    project = copy_project(tmp_path / "p")
    c_xml = tmp_path / "c.xml"
    data = project / "data"
    if case == "unknown_slice":
        # @2: @3 also names every slice in its authority scope, which fails to load first.
        text = (data / "policies" / "support-release@2.yaml").read_text(encoding="utf-8")
        (data / "policies" / "support-release@2.yaml").write_text(
            text.replace("  escalation_handoff:\n", "  escalation_handof:\n"), encoding="utf-8"
        )
    elif case == "controls_missing":
        text = (data / "policies" / "support-release@3.yaml").read_text(encoding="utf-8")
        (data / "policies" / "support-release@3.yaml").write_text(
            text.replace("support-controls@1.yaml", "support-controls@9.yaml"), encoding="utf-8"
        )
    elif case == "labels":
        _edit_yaml(
            data / "candidates" / "support-llm-judge@1.yaml", labels=["pass", "fail", "maybe"]
        )
    elif case == "parent":
        (data / "candidates" / "rubric-judge@1.yaml").unlink()
    elif case == "not_frozen":
        (data / "demo" / "releases.jsonl").unlink()
    elif case == "edited":
        lines = (data / "demo" / "gold.jsonl").read_text(encoding="utf-8").splitlines()
        record = json.loads(lines[0])
        record["grading_notes"] = (record.get("grading_notes") or "") + " (edited in place)"
        lines[0] = json.dumps(record, ensure_ascii=False)
        (data / "demo" / "gold.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    elif case == "fixture":
        text = (data / "ranking" / "support-ranking@2.yaml").read_text(encoding="utf-8")
        (data / "ranking" / "support-ranking@2.yaml").write_text(
            text.replace(
                "  - reset-link-only is right but", "  - reset-link-only is correct but", 1
            ),
            encoding="utf-8",
        )
    elif case == "ranking_policy":
        text = (data / "policies" / "support-ranking-release@1.yaml").read_text(encoding="utf-8")
        (data / "policies" / "support-ranking-release@1.yaml").write_text(
            text.replace("fixtures: support-ranking\n", "fixtures: support-rankings\n"),
            encoding="utf-8",
        )
    elif case == "suite_rubric":  # an unfrozen suite: its rubric is checked against the gold's
        (data / "controls" / "releases.jsonl").unlink()
        _edit_yaml(
            data / "controls" / "support-controls@1.yaml", rubric_version="support-policy-2025.01"
        )
    elif case == "suite_edited":
        text = (data / "controls" / "support-controls@1.yaml").read_text(encoding="utf-8")
        (data / "controls" / "support-controls@1.yaml").write_text(
            text.replace("expected_label: fail", "expected_label: pass", 1), encoding="utf-8"
        )
    elif case == "noise_frozen":
        text = (data / "noise" / "support-noise@2.yaml").read_text(encoding="utf-8")
        (data / "noise" / "support-noise@2.yaml").write_text(
            text.replace("description: '", "description: 'Edited. ", 1), encoding="utf-8"
        )
    elif case == "sentinel":
        held = next(
            json.loads(line)["case_id"]
            for line in (data / "demo" / "gold.jsonl").read_text(encoding="utf-8").splitlines()
            if json.loads(line)["partition"] == "held_out"
        )
        text = (data / "demo" / "sentinels.yaml").read_text(encoding="utf-8")
        (data / "demo" / "sentinels.yaml").write_text(
            text + f"  - case_id: {held}\n    reason: a held-out case must never be a sentinel\n",
            encoding="utf-8",
        )
    # One run of the contracts: the CLI's, whose report (what run_contracts returned) is kept.
    result, report = _contracts_through_the_cli(
        monkeypatch,
        ["--project", str(project), "--out", str(tmp_path / "run"), "--junit", str(c_xml)],
    )
    check = _check(report, check_id)
    assert check.status == "failed" and check.category == "contract", check
    assert any(code in line for line in check.details), check.details
    assert report.exit_code == 2 and report.outcome == "contract_problems"
    assert result.exit_code == 2 and code in result.output and "Traceback" not in result.output
    assert junit_cases(assert_junit_shape(c_xml.read_text(encoding="utf-8")))[check_id] == "failure"


def test_each_policy_contract_is_its_own_problem(tmp_path: Path) -> None:
    """Policies that name a rubric no gold uses, a suite of another rubric or without a
    blocking role, and fixtures that are not frozen: each check lists exactly its problems."""
    project = copy_project(tmp_path / "p")
    data = project / "data"
    (data / "ranking" / "releases.jsonl").unlink()
    for name in ("support-release@1.yaml", "support-release@2.yaml"):
        path = data / "policies" / name
        text = path.read_text(encoding="utf-8")
        old, new = (
            "rubric_version: support-policy-2026.09",
            "rubric_version: support-policy-2025.01",
        )
        path.write_text(text.replace(old, new), encoding="utf-8")
    suite = yaml.safe_load((data / "controls" / "support-controls@1.yaml").read_text("utf-8"))
    suite["name"] = "mini-controls"
    suite["controls"] = [c for c in suite["controls"] if c["role"] == "positive"]
    (data / "extra").mkdir()
    (data / "extra" / "mini-controls@1.yaml").write_text(yaml.safe_dump(suite), "utf-8")
    path = data / "policies" / "support-release@3.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace("../controls/support-controls@1.yaml", "../extra/mini-controls@1.yaml"),
        "utf-8",
    )
    report = run_contracts(project, out=tmp_path / "run")
    found = {
        c.check_id.rpartition("/")[2]: [line.partition(": error: ")[2] for line in c.details]
        for c in report.checks
        if c.group == "policies"
    }
    fixtures = (
        "the policy requires frozen fixtures and support-ranking@1 (the current version) is not"
        " frozen [policy_fixtures_not_frozen] Fix: freeze it: `workbench freeze"
        f" {data / 'ranking' / 'support-ranking@1.yaml'} --approver NAME`"
    )
    unknown = (
        "no valid gold dataset of the project uses rubric 'support-policy-2025.01'"
        " [policy_rubric_unknown] Fix: write the policy for a rubric the project has (a new"
        " version), or add that gold"
    )
    assert found == {
        "support-ranking-release@1.yaml": [fixtures],
        "support-ranking-rollout@1.yaml": [fixtures],
        "support-release@1.yaml": [unknown],
        "support-release@2.yaml": [
            unknown,
            "the control suite support-controls@1 follows rubric support-policy-2026.09, the"
            " policy rubric support-policy-2025.01 [controls_rubric_mismatch] Fix: name a suite"
            " written for the policy's rubric",
        ],
        "support-release@3.yaml": [
            "blocking roles ['negative', 'adversarial'] have no control in mini-controls@1:"
            " certification would stop there as incomplete [controls_role_missing] Fix: add"
            " controls of those roles to a new suite version, or review the blocking roles"
        ],
    }


def test_an_empty_or_mistyped_project_never_passes(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    report = run_contracts(empty, out=tmp_path / "r1")
    assert report.exit_code == 2 and "nothing_to_check" in _codes(report)
    project = copy_project(tmp_path / "p", config=False)
    (project / "workbench.yaml").write_text(
        "ci:\n  paths:\n    candidates: [data/candidate/*.yaml]\n", encoding="utf-8"
    )
    report = run_contracts(project, out=tmp_path / "r2")
    assert report.exit_code == 2 and _check(report, "config/workbench.yaml").code == "ci_path_empty"
    (project / "workbench.yaml").write_text("ci:\n  pathz: {}\n", encoding="utf-8")
    assert run_contracts(project, out=tmp_path / "r3").exit_code == 2


def test_declared_paths_replace_the_convention(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "p", config=False)
    shutil.move(project / "data" / "candidates", project / "judges")
    (project / "workbench.yaml").write_text(
        "ci:\n  paths:\n    candidates: [judges/*.yaml]\n", encoding="utf-8"
    )
    inv = discover(project)
    assert (
        inv.problems == []
        and len(inv.candidates) == 9
        and all(p.parent.name == "judges" for p in inv.candidates)
    )


# ------------------------------------------------------------------------------ incomplete (exit 3)


def test_a_deterministic_candidate_without_verdicts_is_incomplete_never_passed(
    tmp_path: Path,
) -> None:
    project = copy_project(tmp_path / "p")
    spec = {
        "schema_version": 1,
        "name": "broken-judge",
        "version": "1",
        "kind": "ragas-function",
        "labels": ["pass", "fail"],
        "function": "weak_judges:always_raises",
    }
    (project / "data" / "candidates" / "broken-judge@1.yaml").write_text(
        yaml.safe_dump(spec), encoding="utf-8"
    )
    report = run_contracts(project, out=tmp_path / "run")
    check = _check(report, "control-runs/broken-judge@1 on support-controls@1")
    assert (
        check.status == "error"
        and check.category == "incomplete"
        and check.code == "control_incomplete"
    )
    assert report.exit_code == 3 and report.outcome == "incomplete"


# ------------------------------------------------------------------------------ expected failures


def _config(project: Path) -> dict:
    return yaml.safe_load((project / "workbench.yaml").read_text(encoding="utf-8"))


def _write_config(project: Path, config: dict) -> None:
    (project / "workbench.yaml").write_text(
        yaml.safe_dump(config, sort_keys=False), encoding="utf-8"
    )


def test_a_failure_beyond_the_reviewed_ones_fails_the_lane(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "p")
    config = _config(project)
    entry = next(
        e
        for e in config["ci"]["expected_failures"]
        if e["check"].startswith("control-runs/rubric-judge@2")
    )
    entry["failing"].remove("neg-lockout")
    _write_config(project, config)
    report = run_contracts(project, out=tmp_path / "run")
    check = _check(report, "control-runs/rubric-judge@2 on support-controls@1")
    assert check.status == "failed" and "beyond the expected ones: neg-lockout" in check.message
    assert report.exit_code == 1


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda e: e["failing"].append("pos-lockout"), "expected_failure_stale"),
        (lambda e: e.update(expires="2020-01-01"), "expected_failure_expired"),
        (
            lambda e: e.update(check="control-runs/rubric-judge@7 on support-controls@1"),
            "expected_failure_unknown",
        ),
        (
            lambda e: e.update(check="policies/data/policies/support-release@3.yaml"),
            "expected_failure_not_allowed",
        ),
    ],
)
def test_the_reviewed_list_must_state_the_truth(tmp_path: Path, mutate, code: str) -> None:
    project = copy_project(tmp_path / "p")
    config = _config(project)
    entry = next(
        e
        for e in config["ci"]["expected_failures"]
        if e["check"].startswith("control-runs/rubric-judge@2")
    )
    mutate(entry)
    _write_config(project, config)
    report = run_contracts(project, out=tmp_path / "run")
    assert code in _codes(report)
    assert report.exit_code == 2


def test_an_incomplete_check_is_never_covered_by_an_expected_failure() -> None:
    check = CheckResult(
        group="control-runs",
        name="j@1 on s@1",
        status="error",
        category="incomplete",
        code="control_incomplete",
        failing=["a"],
    )
    entry = ExpectedFailure(
        check="control-runs/j@1 on s@1", failing=["a"], reason="r", approver="a"
    )
    listed = Approvers(frozenset({"a"}), Path("workbench.yaml"))
    (out,) = apply_expected_failures([check], [entry], approvers=listed, today=dt.date(2026, 1, 1))
    assert out.status == "error" and out.category == "incomplete"
    failed = check.model_copy(update={"status": "failed", "category": "failure"})
    (out,) = apply_expected_failures([failed], [entry], approvers=listed, today=dt.date(2026, 1, 1))
    assert (
        out.status == "expected_failure" and out.category == "ok" and "accepted by a" in out.message
    )
