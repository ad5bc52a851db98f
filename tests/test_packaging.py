"""Setup stays honest: pyproject and environment.yml agree; the two README commands exist."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_mirrors_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {
        r.replace(" ", "")
        for r in project["dependencies"]
        + [d for group in project["optional-dependencies"].values() for d in group]
    }
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    listed = {r.replace(" ", "") for r in pip_section if not r.startswith("-e")}
    assert listed == wanted, {
        "only in environment.yml": listed - wanted,
        "only in pyproject": wanted - listed,
    }


def test_ragas_pins() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert "ragas==0.4.3" in deps and "langchain-community==0.4.1" in deps


def test_readme_quick_start_and_ci() -> None:
    readme = (ROOT / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1].split("##", 1)[0]
    assert re.findall(r"^make \w+$", quick, flags=re.M) == ["make demo", "make test"]
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo: \$\(STAMP\)", makefile, re.M) and re.search(
        r"^test: \$\(STAMP\)", makefile, re.M
    )
    assert "-m venv" in makefile and "pip install" in makefile


def test_ragas_telemetry_disabled_on_import() -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "RAGAS_DO_NOT_TRACK"}
    code = "import os, workbench.judges; print(os.environ.get('RAGAS_DO_NOT_TRACK'))"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "true"


def test_the_package_data_ships_the_certification_notebook_and_py_typed() -> None:
    """An installed wheel can certify from any directory: 03_certify.ipynb is package data
    (workbench/notebooks/ links to notebooks/, the file users open) and py.typed is there.
    A stand-in for building the wheel (which needs setuptools from the package index): the
    globs setuptools applies must match both files. Built by hand: see the closing note."""
    import fnmatch
    import json

    globs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]["package-data"]["workbench"]
    package = ROOT / "workbench"
    for relative in ("py.typed", "notebooks/03_certify.ipynb"):
        assert (package / relative).is_file(), relative
        assert any(fnmatch.fnmatch(relative, g) for g in globs), relative
    shipped = json.loads((package / "notebooks" / "03_certify.ipynb").read_text(encoding="utf-8"))
    assert shipped == json.loads(
        (ROOT / "notebooks" / "03_certify.ipynb").read_text(encoding="utf-8")
    )


def test_default_notebook_is_always_the_packaged_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 28: certify runs the notebook shipped in the package, never a project's copy."""
    from workbench.reports._provenance import packaged_notebook as default_notebook

    monkeypatch.chdir(tmp_path)  # no notebooks/ here
    packaged = default_notebook()
    assert (
        packaged.is_file()
        and packaged.parent.name == "notebooks"
        and packaged.parent.parent.name == "workbench"
    )
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "03_certify.ipynb").write_text("{}", encoding="utf-8")
    assert default_notebook() == packaged  # a project's own copy is never run
