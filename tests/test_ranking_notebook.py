"""``04_ranking.ipynb`` executes headless with papermill on the demo fixtures and shows the battery's findings."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import papermill
import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "04_ranking.ipynb"


def _free_port_urls(run_root: Path, candidate: Path) -> set[str]:
    """The URLs the notebook's runs called (``run.json`` ``endpoint_url``), checked to be free ports, not the spec's default."""
    urls = {json.loads(p.read_text(encoding="utf-8"))["endpoint_url"] for p in run_root.rglob("run.json")}
    default = yaml.safe_load(candidate.read_text(encoding="utf-8"))["endpoint"]["base_url"]
    assert urls and default not in urls and all(u and u.startswith("http://127.0.0.1:") for u in urls), urls
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


def test_llm_ranker_battery_finds_the_position_bias(tmp_path: Path) -> None:
    # The notebook serves the demo ranking model on a free port (never a fixed one that another
    # run may hold), so this test has no reason to skip.
    text = _execute(tmp_path)
    assert "support-llm-ranker@1" in text and "NOT PASSED" in text
    assert "must-win reversal in 1 case(s): damaged-item-005" in text
    assert "Must-win reversals (blocking)" in text and "Monitor-only drift (not blocking)" in text
    assert "chargeback-009" in text and "email-change-012" in text  # monitor-only drift
    assert "No integration defects." in text
    assert "repeatability (identical presentations)" in text
    assert "position sensitivity (across permutations)" in text
    assert "position_sensitive" in text  # the failure artifact's diagnosis
    assert "<svg" in text and "first places by presented position" in text  # the Altair chart, inline SVG
    run = tmp_path / "runs" / "support-llm-ranker@1" / "support-ranking@1"
    assert len((run / "results.jsonl").read_text().splitlines()) == 180
    assert (run / "failures" / "damaged-item-005.json").exists()
    report = json.loads((run / "ranking_report.json").read_text())
    assert report["repeatability"]["stable_cases"]["rate"] == 1.0 and report["position_sensitivity"]["stable_cases"]["k"] == 8
    assert len(_free_port_urls(tmp_path / "runs", ROOT / "data" / "candidates" / "support-llm-ranker@1.yaml")) == 1


def test_deterministic_ranker_passes_with_monitor_only_drift(tmp_path: Path) -> None:
    text = _execute(tmp_path, candidate="../data/candidates/policy-ranker@1.yaml", serve_fake_llm=False)
    assert "policy-ranker@1" in text and "PASSED (complete)" in text and "No blockers." in text
    assert "stable_disagreement" in text and "chargeback-009" in text
