"""Notebooks are committed without outputs and execute headless with papermill on the demo data."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import nbformat
import papermill
import pytest
import yaml
from conftest import current_project

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_without_outputs_and_with_a_parameters_cell(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code)
    assert any("parameters" in c.metadata.get("tags", []) for c in code)


def _execute(*args: object, **kwargs: object) -> object:
    """papermill over an IPC kernel (as certification runs it): no TCP port, no warning."""
    from workbench.reports._certify import kernel_manager_class

    with kernel_manager_class() as manager:
        return papermill.execute_notebook(*args, kernel_manager_class=manager, **kwargs)  # type: ignore[arg-type]


def _html_outputs(nb: nbformat.NotebookNode) -> list[str]:
    return [
        "".join(o.get("data", {}).get("text/html", ""))
        for c in nb.cells
        for o in c.get("outputs", [])
    ]


def _assert_tables_read_at_a_glance(nb: nbformat.NotebookNode) -> None:
    """Styled tables: no NaN or None cell, no pandas index column."""
    tables = [h for h in _html_outputs(nb) if "<table" in h]
    assert tables
    for html in tables:
        cells = re.findall(r"<td[^>]*>(.*?)</td>", html, flags=re.S)
        assert not [c for c in cells if c.strip() in ("NaN", "nan", "None", "<NA>")], html[:300]
        assert 'class="row_heading' not in html and 'class="blank level0' not in html, (
            "a table shows its index"
        )


@pytest.mark.notebook
def test_overview_runs_from_the_notebooks_folder_and_shows_alignment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Jupyter's way, in a fresh copy of the project (its workbench.yaml, data/ and notebooks/
    only): the kernel starts in notebooks/ with the default parameters, whose project-relative
    paths still resolve, and the runs go under the project's runs/."""
    from workbench.project import PROJECT_ROOT_ENV

    monkeypatch.delenv(PROJECT_ROOT_ENV, raising=False)
    project = tmp_path / "proj"
    for part in ("data", "notebooks"):
        shutil.copytree(ROOT / part, project / part)
    shutil.copyfile(ROOT / "workbench.yaml", project / "workbench.yaml")  # marks the root
    out = tmp_path / "out.ipynb"
    _execute(
        str(project / "notebooks" / "00_overview.ipynb"),
        str(out),
        cwd=str(project / "notebooks"),
        progress_bar=False,
        kernel_name="python3",
    )
    nb = nbformat.read(out, as_version=4)
    text = json.dumps([c.get("outputs", []) for c in nb.cells])
    assert f"project root: {project.resolve()}" in text
    runs = project / "runs" / "notebooks" / "00_overview"
    assert not (project / "notebooks" / "runs").exists() and not (tmp_path / "runs").exists()
    assert "rubric-judge@1" in text and "rubric-judge@2" in text and "rubric-judge@3" in text
    assert (
        "false-pass rate [95% CI]" in text and "FP limit" in text
    )  # the per-slice table, with the policy's limits
    html = "".join(_html_outputs(nb))
    for label in ("rubric-judge@1", "rubric-judge@2", "rubric-judge@3"):
        assert f"Judge error rates by slice: {label}" in html  # a chart per candidate
    assert (
        html.count("<svg") >= 7 and "Confusion: adjudicated label" in html
    )  # 3 charts, 3 heatmaps, the comparison
    assert "black rule: the policy limit" in html and "(missing)" in html
    assert re.search(r"\d+% \[\d+\u2013\d+%\]|\d+% \[\d+–\d+%\]", html)  # rates as "28% [17–43%]"
    _assert_tables_read_at_a_glance(nb)
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "Why the demo LLM judge's verdicts mirror the rubric judges" in source
    results = list(runs.glob("*/development/results.jsonl"))  # rubric-judge@1, @2 and @3
    assert len(results) == 3 and all(len(p.read_text().splitlines()) > 100 for p in results)


@pytest.mark.notebook
def test_overview_refuses_the_held_out_partition(tmp_path: Path) -> None:
    with pytest.raises(papermill.PapermillExecutionError) as info:
        _execute(
            str(ROOT / "notebooks" / "00_overview.ipynb"),
            str(tmp_path / "out.ipynb"),
            parameters={"partition": "held_out", "run_root": str(tmp_path / "runs")},
            cwd=str(ROOT / "notebooks"),
            progress_bar=False,
            kernel_name="python3",
        )
    assert "never uses the held-out partition" in str(info.value)
    assert not (tmp_path / "runs").exists()


@pytest.mark.notebook
def test_develop_notebook_tunes_compares_and_builds_the_review_widget(tmp_path: Path) -> None:
    out = tmp_path / "dev.ipynb"
    _execute(
        str(ROOT / "notebooks" / "01_develop.ipynb"),
        str(out),
        parameters={
            "run_root": str(tmp_path / "runs"),
            "notes_path": str(tmp_path / "notes.jsonl"),
            "save_to": str(tmp_path / "candidates"),
        },
        cwd=str(ROOT / "notebooks"),
        progress_bar=False,
        kernel_name="python3",
    )
    nb = nbformat.read(out, as_version=4)
    text = json.dumps([c.get("outputs", []) for c in nb.cells])
    assert "support-llm-judge@2-draft" in text and "critical_broken" in text
    assert "Judge error rates by slice" in text and "Confusion: adjudicated label" in text
    _assert_tables_read_at_a_glance(nb)
    assert "application/vnd.jupyter.widget-view+json" in text  # the review widget was displayed
    assert (tmp_path / "candidates" / "support-llm-judge@2-draft.yaml").exists()
    # The demo model was served on a free port and reached through $WORKBENCH_DEMO_LLM_URL.
    assert (
        len(
            _free_port_urls(
                tmp_path / "runs", ROOT / "data" / "candidates" / "support-llm-judge@1.yaml"
            )
        )
        == 1
    )


@pytest.mark.notebook
def test_calibrate_notebook_compares_and_records_a_selection(tmp_path: Path) -> None:
    out = tmp_path / "cal.ipynb"
    selections = tmp_path / "selections.jsonl"
    _execute(
        str(ROOT / "notebooks" / "02_calibrate.ipynb"),
        str(out),
        parameters={
            "run_root": str(tmp_path / "runs"),
            "selections_path": str(selections),
            "select": "rubric-judge@2",
            "selection_reason": "fewest false fails",
            "save_to": str(tmp_path / "candidates"),
            "accept_failing": True,  # saved only because accepted: refused without, below
        },
        cwd=str(ROOT / "notebooks"),
        progress_bar=False,
        kernel_name="python3",
    )
    nb = nbformat.read(out, as_version=4)
    text = json.dumps([c.get("outputs", []) for c in nb.cells])
    assert "p_mcnemar" in text and "policy_outcome_on_calibration" in text
    assert (
        "false_pass_rate_upper_95" in text and "coverage-judge@2: threshold" in text
    )  # threshold chosen and frozen
    assert "Score calibration on calibration: coverage-judge@1" in text and "ECE " in text
    assert (
        "needed_upper_95" in text and "short_held_out" in text and "<svg" in text
    )  # the sample-size plan and its chart
    assert (
        "rubric-judge@2 -> rubric-judge@3: complete" in text
        and "needs_review" in text
        and "still_wrong" in text
    )  # the migration section
    assert (tmp_path / "runs" / "compare" / "comparison.json").exists()
    html = "".join(_html_outputs(nb))
    assert (
        "Threshold sweep on calibration" in html
        and "false-pass limit 20% (upper 95% bound)" in html
    )  # the sweep with the limit drawn
    assert (
        "by candidate" in html and html.count('class="wb-candidate"') == 4
    )  # blockers folded per candidate
    # No threshold of the demo's coverage judge meets the demo policy: warned, and saved only
    # because accept_failing=True says so, in the saved version's description.
    assert "fails the policy on calibration" in html and "accept_failing=True" in html
    saved = yaml.safe_load((tmp_path / "candidates" / "coverage-judge@2.yaml").read_text())
    assert "accept_failing=True although it fails" in saved["description"]
    _assert_tables_read_at_a_glance(nb)
    record = json.loads(selections.read_text().splitlines()[0])
    assert record["selected"] == "rubric-judge@2" and len(record["compared"]) == 5


@pytest.mark.notebook
def test_calibrate_notebook_refuses_to_save_a_failing_threshold_unless_accepted(
    tmp_path: Path,
) -> None:
    """Saving refused without accept_failing=True (the accepted save: the test above)."""
    base = {
        "run_root": str(tmp_path / "runs"),
        "selections_path": str(tmp_path / "sel.jsonl"),
        "candidates": ["../data/candidates/rubric-judge@2.yaml"],
        "serve_fake_llm": False,
        "save_to": str(tmp_path / "candidates"),
    }
    with pytest.raises(papermill.PapermillExecutionError) as info:
        _execute(
            str(ROOT / "notebooks" / "02_calibrate.ipynb"),
            str(tmp_path / "refused.ipynb"),
            parameters=base,
            cwd=str(ROOT / "notebooks"),
            progress_bar=False,
            kernel_name="python3",
        )
    assert "threshold_fails_policy" in str(info.value) and "accept_failing=True" in str(info.value)
    assert not (tmp_path / "candidates").exists() or not list((tmp_path / "candidates").iterdir())


@pytest.mark.notebook
def test_calibrate_notebook_on_a_project_without_a_score_candidate_or_migration(
    tmp_path: Path,
) -> None:
    """A user's project names no score candidate, controls or migration in workbench.yaml: the
    notebook's parameters left at None run none of the demo's (before, they named the demo's
    coverage judge and rubric-judge@2 -> @3, run silently on the user's gold)."""
    config = current_project() / "workbench.yaml"
    data = yaml.safe_load(config.read_text())
    optional = ("score_candidate", "controls", "migration_old", "migration_new")
    config.write_text(yaml.safe_dump({k: v for k, v in data.items() if k not in optional}))
    out = tmp_path / "cal.ipynb"
    _execute(
        str(ROOT / "notebooks" / "02_calibrate.ipynb"),
        str(out),
        parameters={
            "run_root": str(tmp_path / "runs"),
            "selections_path": str(tmp_path / "sel.jsonl"),
            "candidates": [
                "../data/candidates/rubric-judge@1.yaml",
                "../data/candidates/rubric-judge@2.yaml",
            ],
            "serve_fake_llm": False,
            "select": "rubric-judge@2",
            "selection_reason": "r",
        },
        cwd=str(ROOT / "notebooks"),
        progress_bar=False,
        kernel_name="python3",
    )
    text = json.dumps([c.get("outputs", []) for c in nbformat.read(out, as_version=4).cells])
    assert "No score-based candidate given" in text and "Threshold sweep" not in text
    assert "No migration given" in text and "rubric-judge@3" not in text
    assert "coverage-judge" not in text and not (tmp_path / "runs" / "compare").exists()
    for key in optional:  # the summary on top names each, and that nothing was given
        assert f"{key}: (none) (from none)" in text, key
    assert len(json.loads((tmp_path / "sel.jsonl").read_text().splitlines()[0])["compared"]) == 2


@pytest.mark.notebook
@pytest.mark.parametrize("name", ["01_develop.ipynb", "02_calibrate.ipynb"])
def test_phase_notebooks_refuse_held_out(name: str, tmp_path: Path) -> None:
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "held_out" not in source  # no phase notebook even names the held-out partition
    from workbench.errors import WorkbenchError
    from workbench.phases import PhaseSession

    with pytest.raises(WorkbenchError) as refused:
        PhaseSession(ROOT / "data" / "demo", partition="held_out", run_root=tmp_path)  # type: ignore[arg-type]
    assert [p.code for p in refused.value.problems] == ["held_out_refused"]


def test_certification_notebook_has_no_widgets() -> None:
    nb = nbformat.read(ROOT / "notebooks" / "03_certify.ipynb", as_version=4)
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "ipywidgets" not in source and "widget" not in source.lower()
