"""Lineage: results are compared only with the gold they were produced against (issue 8 §2).

The reproduction first: results of a real run on dataset X, aligned against a copy whose
rubric version changed and one adjudicated label was flipped in place, used to come out
COMPLETE with exit 0. They must be refused (exit 2) naming the case and what changed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import make_case

from workbench.cli import main
from workbench.gold import load_dataset
from workbench.judges import load_candidate
from workbench.runs import run_candidate_sync

POLICY = {
    "schema_version": 1,
    "name": "test-release",
    "version": "1",
    "owner": "QA lead",
    "rationale": "Limits for the unit-test rubric, written before results.",
    "slices": {
        "billing": {"risk": "critical", "max_false_passes": 0, "max_false_pass_rate": 0.5, "min_n": 0},
        "general": {"risk": "low", "max_false_pass_rate": 1.0, "false_pass_rate_basis": "point", "min_n": 0},
        "empty": {"risk": "medium", "min_n": 0},
    },
}
SPEC = {"name": "kw", "version": "1", "kind": "ragas-function", "labels": ["pass", "fail"], "function": "judge_fixtures:keyword_judge"}


def _cases() -> list[dict]:
    return [
        make_case("d1", "pass", response="A refund is possible after review."),
        make_case("d2", "fail", response="No money back, ever."),
        make_case("d3", "fail", response="Refund everything automatically."),
        make_case("c1", "pass", response="refund", partition="calibration"),
    ]


@pytest.fixture
def run_dir(make_dataset, tmp_path: Path) -> tuple[Path, Path]:
    """(gold directory, run directory) of a complete run of kw@1 on the development partition."""
    gold = make_dataset(_cases())
    spec = tmp_path / "kw@1.yaml"
    spec.write_text(yaml.safe_dump(SPEC), encoding="utf-8")
    out = tmp_path / "run"
    summary = run_candidate_sync(load_candidate(spec), load_dataset(gold), "development", out, progress=False, cache_dir=False)
    assert summary.status == "complete"
    return gold, out


def changed_copy(gold: Path, target: Path, *, flip: str | None = "d2", rubric_version: str | None = "r2", edit: dict | None = None) -> Path:
    """A copy of ``gold`` with the rubric version changed and one adjudicated label flipped in place."""
    shutil.copytree(gold, target)
    rubric = yaml.safe_load((target / "rubric.yaml").read_text(encoding="utf-8"))
    if rubric_version is not None:
        rubric["version"] = rubric_version
        (target / "rubric.yaml").write_text(yaml.safe_dump(rubric, sort_keys=False), encoding="utf-8")
    rows = [json.loads(line) for line in (target / "gold.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:
        row["rubric_version"] = rubric["version"]
        if row["case_id"] == flip:
            new = "pass" if row["adjudication"]["label"] == "fail" else "fail"
            row["adjudication"]["label"] = new
        if edit and row["case_id"] in edit:
            row.update(edit[row["case_id"]])
    (target / "gold.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return target


def test_reproduction_changed_rubric_and_flipped_label_is_refused(run_dir: tuple[Path, Path], tmp_path: Path) -> None:
    gold, out = run_dir
    copy = changed_copy(gold, tmp_path / "copy")
    result = CliRunner().invoke(main, ["align", "--gold", str(copy), "--results", str(out / "results.jsonl"), "--partition", "development"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "[gold_changed]" in result.output
    changed = [line for line in result.output.splitlines() if "case d2:" in line]
    assert changed and "label" in changed[0], result.output
    assert not any("case d1:" in line or "case d3:" in line for line in result.output.splitlines())
    assert "r1" in result.output and "r2" in result.output  # the rubric version change is named
    gate = CliRunner().invoke(main, ["gate", "--gold", str(copy), "--results", str(out / "results.jsonl"), "--policy", str(policy_file(tmp_path))])
    assert gate.exit_code == 2 and "[gold_changed]" in gate.output, gate.output
    assert [line for line in gate.output.splitlines() if "case d2:" in line and "label" in line]


def policy_file(directory: Path) -> Path:
    path = directory / "test-release@1.yaml"
    path.write_text(yaml.safe_dump(POLICY, sort_keys=False), encoding="utf-8")
    return path
