"""CI enforces the code's form: `.ci/run` runs `make lint`, which runs the three checks."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_make_lint_with_the_same_extras_as_make_test() -> None:
    run = (ROOT / ".ci" / "run").read_text()
    calls = [line.strip() for line in run.splitlines() if re.match(r"\s*make ", line)]
    assert "make test EXTRAS=test,ray || status=$?" in calls
    # the same extras: make would otherwise reinstall .venv without the Ray extra
    assert "make lint EXTRAS=test,ray || status=$?" in calls


def test_make_lint_checks_format_lint_and_types() -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nlint:", 1)[1].split("\n\n", 1)[0]
    assert "ruff format --check workbench tests bench" in recipe
    assert "ruff check workbench tests bench" in recipe
    assert "mypy" in recipe


def test_line_length_is_enforced_and_mypy_is_strict() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert config["tool"]["ruff"]["line-length"] == 100
    lint = config["tool"]["ruff"]["lint"]
    assert "E" in lint["select"] and "E501" not in lint.get("ignore", [])
    assert config["tool"]["mypy"]["strict"] is True
    assert config["tool"]["mypy"]["packages"] == ["workbench"]
    assert "mypy>=1.10" in config["project"]["optional-dependencies"]["test"]
