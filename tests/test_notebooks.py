"""Notebooks are committed without outputs and execute headless with papermill on the demo data."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import papermill
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_without_outputs_and_with_a_parameters_cell(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code)
    assert any("parameters" in c.metadata.get("tags", []) for c in code)


def test_overview_runs_and_shows_alignment(tmp_path: Path) -> None:
    out = tmp_path / "out.ipynb"
    papermill.execute_notebook(
        str(ROOT / "notebooks" / "00_overview.ipynb"),
        str(out),
        parameters={"run_root": str(tmp_path / "runs")},
        cwd=str(ROOT / "notebooks"),
        progress_bar=False,
        kernel_name="python3",
    )
    nb = nbformat.read(out, as_version=4)
    text = json.dumps([c.get("outputs", []) for c in nb.cells])
    assert "rubric-judge@1" in text and "rubric-judge@2" in text
    assert "false_pass" in text and "(missing)" in text  # the per-slice table and confusion rendered
    results = list((tmp_path / "runs").glob("*/development/results.jsonl"))
    assert len(results) == 2 and all(len(p.read_text().splitlines()) > 100 for p in results)


def test_overview_refuses_the_held_out_partition(tmp_path: Path) -> None:
    with pytest.raises(papermill.PapermillExecutionError) as info:
        papermill.execute_notebook(
            str(ROOT / "notebooks" / "00_overview.ipynb"),
            str(tmp_path / "out.ipynb"),
            parameters={"partition": "held_out", "run_root": str(tmp_path / "runs")},
            cwd=str(ROOT / "notebooks"),
            progress_bar=False,
            kernel_name="python3",
        )
    assert "never uses the held-out partition" in str(info.value)
    assert not (tmp_path / "runs").exists()
