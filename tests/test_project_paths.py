"""Notebooks resolve paths against the project root, and 00_overview's printed command works as
printed. (00_overview run from the notebooks/ folder with its default paths, as Jupyter runs it:
``test_notebooks.py::test_overview_runs_from_the_notebooks_folder_and_shows_alignment``.)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from _kernel_zygote import ENV_FRESH

from workbench.errors import WorkbenchError
from workbench.project import PROJECT_ROOT_ENV, project_path, project_root

ROOT = Path(__file__).resolve().parents[1]
OVERVIEW = ROOT / "notebooks" / "00_overview.ipynb"


def _printed_command() -> str:
    """The headless command 00_overview prints in its first cell (the backticked line with
    papermill).
    """
    intro = nbformat.read(OVERVIEW, as_version=4).cells[0].source
    commands = [c for c in re.findall(r"`([^`]+)`", intro) if "papermill" in c]
    assert len(commands) == 1, commands
    return commands[0]


def _copy_project(dest: Path) -> Path:
    """A fresh project: the repository's workbench.yaml (what marks the root), data/ and
    notebooks/ (nothing else), so runs never touch the repo.
    """
    shutil.copytree(ROOT / "data", dest / "data")
    shutil.copyfile(ROOT / "workbench.yaml", dest / "workbench.yaml")
    shutil.copytree(ROOT / "notebooks", dest / "notebooks")
    return dest


def _outputs(path: Path) -> str:
    return json.dumps([c.get("outputs", []) for c in nbformat.read(path, as_version=4).cells])


def test_project_root_from_root_from_notebooks_and_from_deeper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(PROJECT_ROOT_ENV, raising=False)
    project = _copy_project(tmp_path / "proj")
    assert project_root(project) == project.resolve()
    assert project_root(project / "notebooks") == project.resolve()
    assert project_root(project / "data" / "demo") == project.resolve()
    assert project_path("data/demo", project / "notebooks") == project.resolve() / "data" / "demo"
    absolute = tmp_path / "elsewhere"
    assert project_path(absolute, project) == absolute  # absolute paths are kept


def test_project_root_is_refused_outside_a_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(PROJECT_ROOT_ENV, raising=False)
    (tmp_path / "data").mkdir()  # data/ and notebooks/ without workbench.yaml are no project
    (tmp_path / "notebooks").mkdir()
    with pytest.raises(WorkbenchError) as info:
        project_root(tmp_path)
    assert [p.code for p in info.value.problems] == ["project_root_missing"]
    assert PROJECT_ROOT_ENV in info.value.problems[0].fix


def test_project_root_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PROJECT_ROOT_ENV, str(tmp_path))
    assert project_root("/") == tmp_path.resolve()
    monkeypatch.setenv(PROJECT_ROOT_ENV, str(tmp_path / "nope"))
    with pytest.raises(WorkbenchError, match="not a directory") as info:
        project_root()
    assert [p.code for p in info.value.problems] == ["project_root_missing"]


def test_overview_parameters_are_project_relative() -> None:
    params = next(
        c
        for c in nbformat.read(OVERVIEW, as_version=4).cells
        if "parameters" in c.metadata.get("tags", [])
    )
    assert "../" not in params.source  # nothing relative to notebooks/


@pytest.mark.notebook  # papermill in a subprocess: tests/_markers.py cannot see it
def test_overview_printed_command_works_as_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run the exact command from 00_overview's first cell in a shell at the project root."""
    monkeypatch.delenv(PROJECT_ROOT_ENV, raising=False)
    project = _copy_project(tmp_path / "proj")
    command = _printed_command()
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        ENV_FRESH: "1",  # as in a user's shell: the kernel a new interpreter (tests/_kernels.py)
    }
    done = subprocess.run(
        ["bash", "-c", command], cwd=project, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = re.search(r"papermill \S+ (\S+)", command)
    assert out is not None
    executed = project / out.group(1)
    text = _outputs(executed)
    assert f"project root: {project.resolve()}" in text
    assert "rubric-judge@1" in text and "rubric-judge@2" in text and "false-pass rate" in text
    # the command asked for calibration, and the runs went under the project's runs/
    assert (
        len(
            list(
                (project / "runs" / "notebooks" / "00_overview").glob("*/calibration/results.jsonl")
            )
        )
        == 3
    )  # rubric-judge@1, @2 and @3
