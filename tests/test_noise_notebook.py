"""05_noise_sensitivity.ipynb: committed without outputs; executes headless on the demo suite."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import papermill
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "05_noise_sensitivity.ipynb"


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


def test_committed_without_outputs_with_a_parameters_cell() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code)
    params = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert (
        len(params) == 1
        and "serve_fake_llm = True" in params[0].source
        and "run_root" in params[0].source
    )


@pytest.mark.notebook
def test_notebook_runs_controls_first_and_shows_scores_against_limits(tmp_path: Path) -> None:
    out = tmp_path / "noise.ipynb"
    papermill.execute_notebook(
        str(NOTEBOOK),
        str(out),
        parameters={"run_root": str(tmp_path / "runs")},
        cwd=str(ROOT / "notebooks"),
        progress_bar=False,
        kernel_name="python3",
    )
    text = json.dumps([c.get("outputs", []) for c in nbformat.read(out, as_version=4).cells])
    assert (
        "No problems." in text
        and "lower_is_better" in text
        and "lower is better" in text
        and "frozen as" in text
    )
    assert (
        "retrieval_forbidden_source" in text and "ship-lost" in text
    )  # the retrieval assertion failing on a forbidden source
    assert (
        "all separated" in text and "ctl-adv-injected-policy" in text and "routed_to_review" in text
    )  # every control role
    assert (
        "ship-address" in text and "delta" in text and "abstained" in text
    )  # per-pair deltas, abstention
    assert (
        "max_noisy_score" in text and "noise_score_exceeded" in text
    )  # per slice vs limits, blocker
    assert "stable" in text  # sentinel repeats
    assert "bought_by_refusing" in text and "ci95_low" in text  # baseline versus candidate
    assert "aligned claims agree" in text and "boundary:" in text  # the claim panel
    assert "per slice (metric vs reviewers" in text and "composition: ok" in text
    assert "Held-out use: ledger entry" in text  # the demo scores held-out pairs: recorded
    assert "No pair declares an injected instruction." in text
    assert "With the override" in text and "noise_reference_defect_review by ovr-" in text
    assert "<svg" in text and "quality_failed" in text
    assert len(list((tmp_path / "runs").glob("*/*/controls/results.jsonl"))) == 1
    assert len(list((tmp_path / "runs").glob("*/*/candidates/results.jsonl"))) == 1
    assert len(list((tmp_path / "runs").glob("*/*/baseline/candidates/results.jsonl"))) == 1
    assert (
        len(_free_port_urls(tmp_path / "runs", ROOT / "data" / "candidates" / "noise-judge@1.yaml"))
        == 1
    )
