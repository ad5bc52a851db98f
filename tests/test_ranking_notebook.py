"""``04_ranking.ipynb`` executes headless with papermill on the demo fixtures and shows the
battery's findings.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import papermill
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "04_ranking.ipynb"


def _free_port_urls(run_root: Path, candidate: Path) -> set[str]:
    """The URLs the notebook's runs called (``run.json`` ``endpoint_url``), checked to be the free
    ports the notebook's local model bound (the spec names only the variable).
    """
    urls = {
        json.loads(p.read_text(encoding="utf-8"))["endpoint_url"]
        for p in run_root.rglob("run.json")
    }
    assert (
        "base_url" not in yaml.safe_load(candidate.read_text(encoding="utf-8"))["endpoint"]
    )  # no fixed port to fall back to
    assert urls and all(
        u and re.fullmatch(r"http://127\.0\.0\.1:[1-9][0-9]*/v1", u) for u in urls
    ), urls
    return urls


def _execute(tmp_path: Path, **parameters: object) -> str:
    out = tmp_path / "out.ipynb"
    papermill.execute_notebook(
        str(NOTEBOOK),
        str(out),
        parameters={"run_root": str(tmp_path / "runs"), **parameters},
        cwd=str(ROOT / "notebooks"),
        progress_bar=False,
        kernel_name="python3",
    )
    return json.dumps([c.get("outputs", []) for c in nbformat.read(out, as_version=4).cells])


def test_committed_thin_without_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code)
    assert "parameters" in code[0].metadata.get("tags", [])
    assert all(len(c.source.splitlines()) <= 12 for c in code)  # library calls and displays only


@pytest.mark.notebook
def test_llm_ranker_battery_finds_the_position_bias_and_applies_the_release_rules(
    tmp_path: Path,
) -> None:
    # The notebook serves the demo ranking model on a free port (never a fixed one that another
    # run may hold), so this test has no reason to skip.
    text = _execute(tmp_path)
    assert "support-llm-ranker@1" in text and "quality_failed" in text
    # calibration: two reviewers, one adjudicated disagreement; label history; the frozen edit
    # refused
    assert (
        "Adjudicated disagreement: **refund-destination-003**" in text
        and "disputed_unadjudicated" in text
    )
    assert "support-ranking@2" in text and "relabelled" in text
    assert "frozen_case_edited" in text and "refund-timing-013" in text
    # the threshold from reviewed examples equals the policy's
    assert "threshold **0.028** (0 misclassified)" in text and "`max_agreement_drop: 0.028`" in text
    # confirmed vs unconfirmed, report-only
    assert "ranking_reversal_confirmed" in text and "ranking_reversal_unconfirmed" in text
    assert "confirmed" in text and "unconfirmed" in text
    assert (
        "report only: outcome quality_failed (exit 1 when enforced)" in text
        and "(exit code 0)" in text
    )
    # leakage, slices, side by side, failure artifacts with reproduction and owners
    assert "the first one shown" in text and "ranking_metric_defect" in text
    assert "refund_policy" in text and "reversal_attempts" in text
    assert "scalar passes, ranking does not" in text and "scalar fails, ranking passes" in text
    assert (
        "workbench ranking replay --candidate" in text
        and "Evaluation team" in text
        and "Ragas 0.4.3" in text
    )
    # fixture changes since the last run, privacy and prune, rotation
    assert "chargeback-009" in text and "S. Lindqvist" in text
    assert "capture **digest_and_excerpts**" in text and "lock problems after pruning: 0" in text
    assert "rotation plan: 85 attempts; exhaustive battery: 189" in text
    assert "No integration defects." in text and "repeatability (identical presentations)" in text
    assert (
        "<svg" in text and "first places by presented position" in text
    )  # the Altair charts, inline SVG
    run = tmp_path / "runs" / "support-llm-ranker@1" / "support-ranking@1"
    assert len((run / "results.jsonl").read_text().splitlines()) == 189
    assert (run / "failures" / "refund-timing-013.json").exists() and (
        run / "ranking_lock.json"
    ).exists()
    report = json.loads((run / "ranking_report.json").read_text())
    assert (
        report["repeatability"]["stable_cases"]["rate"] == 1.0
        and report["gate"]["outcome"] == "quality_failed"
    )
    history = (tmp_path / "runs" / "history" / "support-ranking.jsonl").read_text().splitlines()
    assert [json.loads(line)["fixtures"] for line in history] == [
        "support-ranking@1",
        "support-ranking@2",
    ]
    assert (
        len(
            _free_port_urls(
                tmp_path / "runs", ROOT / "data" / "candidates" / "support-llm-ranker@1.yaml"
            )
        )
        == 1
    )


@pytest.mark.notebook
def test_deterministic_ranker_routes_editorial_drift_to_review(tmp_path: Path) -> None:
    text = _execute(
        tmp_path, candidate="../data/candidates/policy-ranker@1.yaml", serve_fake_llm=False
    )
    assert (
        "policy-ranker@1" in text
        and "review_required" in text
        and "ranking_editorial_drift" in text
    )
    assert "stable_disagreement" in text and "chargeback-009" in text
