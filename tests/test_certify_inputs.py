"""Issue 8 §8, certification inputs: no default dataset, and a policy checked against the rubric
before the held-out ledger is touched (exit 2, held-out data not used)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from workbench.cli import main
from workbench.gold import load_dataset
from workbench.heldout import LEDGER_FILE
from workbench.policy import load_policy
from workbench.policy._consistency import policy_rubric_problems

ROOT = Path(__file__).resolve().parents[1]
CANDIDATE = ROOT / "data" / "candidates" / "rubric-judge@2.yaml"
POLICY = ROOT / "data" / "policies" / "support-release@1.yaml"
DEMO = ROOT / "data" / "demo"


def test_certify_has_no_default_gold(tmp_path: Path) -> None:
    assert not (DEMO / LEDGER_FILE).exists()
    result = CliRunner().invoke(
        main,
        [
            "certify",
            "--candidate",
            str(CANDIDATE),
            "--policy",
            str(POLICY),
            "--reports",
            str(tmp_path / "r"),
        ],
    )
    assert result.exit_code == 2 and "Missing option '--gold'" in result.output
    assert (
        not (tmp_path / "r").exists() and not (DEMO / LEDGER_FILE).exists()
    )  # the demo data was not certified


def _unknown_slice(p: dict[str, Any]) -> None:
    p["slices"]["refunds_typo"] = dict(p["slices"]["shipping_delivery"])


def _missing_slice(p: dict[str, Any]) -> None:
    del p["slices"]["escalation_handoff"]


def _risk_mismatch(p: dict[str, Any]) -> None:
    p["slices"]["shipping_delivery"]["risk"] = "low"


def _wrong_partition(p: dict[str, Any]) -> None:
    p["partition"] = "calibration"


def _rubric_version(p: dict[str, Any]) -> None:
    p["rubric_version"] = "support-policy-2025.01"


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (_unknown_slice, "policy_unknown_slice"),
        (_missing_slice, "slice_not_in_policy"),
        (_risk_mismatch, "policy_risk_mismatch"),
        (_wrong_partition, "partition_mismatch"),
        (_rubric_version, "policy_rubric_mismatch"),
    ],
    ids=["unknown_slice", "missing_slice", "risk_mismatch", "wrong_partition", "rubric_version"],
)
def test_a_policy_that_does_not_fit_the_rubric_is_refused_before_the_ledger(
    tmp_path: Path, change, code: str
) -> None:
    gold = tmp_path / "gold"
    shutil.copytree(DEMO, gold)
    raw = yaml.safe_load(POLICY.read_text())
    change(raw)
    policy = tmp_path / POLICY.name
    policy.write_text(yaml.safe_dump(raw, sort_keys=False))
    assert load_policy(policy)  # a valid policy file on its own
    result = CliRunner().invoke(
        main,
        [
            "certify",
            "--candidate",
            str(CANDIDATE),
            "--policy",
            str(policy),
            "--gold",
            str(gold),
            "--reports",
            str(tmp_path / "r"),
        ],
    )
    assert result.exit_code == 2 and code in result.output and "Traceback" not in result.output
    assert "the held-out partition was not used" in result.output
    assert sorted(p.name for p in gold.iterdir()) == sorted(
        p.name for p in DEMO.iterdir()
    )  # no ledger, no lock file
    assert not (tmp_path / "r").exists()


def test_the_demo_policies_fit_the_demo_rubric() -> None:
    rubric = load_dataset(DEMO).rubric
    for path in sorted((ROOT / "data" / "policies").glob("*@*.yaml")):
        if yaml.safe_load(path.read_text(encoding="utf-8")).get("kind") == "ranking":
            continue  # ranking policies gate fixtures, not a gold rubric (workbench.ranking)
        assert policy_rubric_problems(load_policy(path), rubric, policy_path=path) == [], path
