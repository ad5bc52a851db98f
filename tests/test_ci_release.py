"""``workbench ci release``: certify, verify, and a machine-readable summary (JSON and JUnit)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from ci_support import ROOT, assert_junit_shape, junit_cases
from click.testing import CliRunner

from workbench.cli.main import main
from workbench.heldout import HeldOutLedger, ledger_path_for

CANDIDATE = ROOT / "data" / "candidates" / "rubric-judge@2.yaml"
NOTEBOOK = ROOT / "notebooks" / "03_certify.ipynb"


def _gold(tmp_path: Path) -> Path:
    gold = tmp_path / "gold"
    shutil.copytree(ROOT / "data" / "demo", gold)  # the held-out ledger lives beside it
    return gold


@pytest.mark.notebook
def test_release_certifies_verifies_and_summarizes(tmp_path: Path) -> None:
    from test_authority import keypair

    gold = _gold(tmp_path)
    (tmp_path / "keys").mkdir()
    private, public = keypair(tmp_path / "keys")  # the CI release key
    policy = ROOT / "data" / "policies" / "support-release@1.yaml"
    summary_path, junit = tmp_path / "out" / "release.json", tmp_path / "out" / "release.xml"
    result = CliRunner().invoke(
        main,
        [
            "ci",
            "release",
            "--candidate",
            str(CANDIDATE),
            "--policy",
            str(policy),
            "--gold",
            str(gold),
            "--reports",
            str(tmp_path / "reports"),
            "--json",
            str(summary_path),
            "--junit",
            str(junit),
            "--notebook",
            str(NOTEBOOK),
            "--sign",
            str(private),
        ],
    )
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    # rubric-judge@2 passes a critical refund case the reviewers failed: quality failed.
    assert (
        summary["outcome"] == "quality_failed" and result.exit_code == summary["exit_code"] == 1
    ), result.output
    assert summary["kind"] == "workbench.ci.release" and summary["schema_version"] == 1
    assert summary["verified"] is True and summary["verify_problems"] == []
    lock = json.loads((Path(summary["report_dir"]) / "lock.json").read_text(encoding="utf-8"))
    assert (
        summary["lock_sha256"] == lock["lock_sha256"] and summary["report_id"] == lock["report_id"]
    )
    assert lock["signature"] is not None  # signed with the CI key: verifies against it
    trusted = CliRunner().invoke(
        main, ["verify", summary["report_dir"], "--gold", str(gold), "--trust", str(public)]
    )
    assert trusted.exit_code == 0 and "signature: trusted" in trusted.output, trusted.output
    assert [b["code"] for b in summary["blockers"]] == [
        b["code"] for b in lock["blockers"]
    ] and "false_passes_exceeded" in [b["code"] for b in summary["blockers"]]
    assert (
        summary["calls"] == 82 and summary["cost_usd"] == 0.0
    )  # 82 held-out cases, a free function judge
    # The held-out use is in the gold's ledger, exactly once.
    finished = [e for e in HeldOutLedger(ledger_path_for(gold)).entries() if e.event == "finished"]
    assert (
        len(finished) == 1
        and finished[0].held_out_used is True
        and finished[0].report_id == summary["report_id"]
    )
    cases = junit_cases(assert_junit_shape(junit.read_text(encoding="utf-8")))
    assert cases[f"certification/{summary['report_id']}"] == "failure"
    assert cases[f"verify/{summary['report_id']}"] == "passed"
    assert sum(k.startswith("blockers/") for k in cases) == len(summary["blockers"])
    assert "release: QUALITY_FAILED (exit 1)" in result.output and "verified: yes" in result.output


def test_invalid_input_is_exit_2_with_its_summary_and_no_held_out_use(tmp_path: Path) -> None:
    gold = _gold(tmp_path)
    summary_path, junit = tmp_path / "release.json", tmp_path / "release.xml"
    result = CliRunner().invoke(
        main,
        [
            "ci",
            "release",
            "--candidate",
            str(CANDIDATE),
            "--policy",
            str(tmp_path / "nope@1.yaml"),
            "--gold",
            str(gold),
            "--reports",
            str(tmp_path / "reports"),
            "--json",
            str(summary_path),
            "--junit",
            str(junit),
            "--notebook",
            str(NOTEBOOK),
        ],
    )
    assert (
        result.exit_code == 2
        and "policy_missing" in result.output
        and "Traceback" not in result.output
    )
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    assert (
        summary["outcome"] == "invalid_input"
        and summary["exit_code"] == 2
        and summary["report_dir"] is None
    )
    assert any("policy_missing" in p for p in summary["problems"])
    assert junit_cases(assert_junit_shape(junit.read_text(encoding="utf-8"))) == {
        "certification/rubric-judge@2": "failure"
    }
    assert not ledger_path_for(gold).exists() and not (tmp_path / "reports").exists()
