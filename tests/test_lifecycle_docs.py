"""The migration, repeatability and drift records are documented field by field; every command
docs/lifecycle.md names exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import undocumented_fields
from pydantic import BaseModel

from workbench.cli.main import main
from workbench.migration import (
    CandidateSide,
    CaseTransition,
    ComparisonReport,
    ControlComparison,
    ControlsSideBySide,
    KeyCount,
    LabelMapping,
    McNemar,
    RateDelta,
    RequestParity,
    SliceComparison,
)
from workbench.migration._compare import BudgetLine, MappingRef
from workbench.repeatability import (
    CaseRepeatability,
    DriftEntry,
    Observation,
    RepeatabilityStudy,
    RepeatCost,
    Sentinel,
    SentinelChange,
    SentinelSet,
    SliceRepeatability,
)
from workbench.repeatability._drift import BaselineRef
from workbench.results import ResultMigration
from workbench.runs import RunEstimate

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
LIFECYCLE = (ROOT / "docs" / "lifecycle.md").read_text(encoding="utf-8")
MODELS = [
    ResultMigration,
    LabelMapping,
    MappingRef,
    ComparisonReport,
    CandidateSide,
    RateDelta,
    McNemar,
    SliceComparison,
    CaseTransition,
    ControlComparison,
    ControlsSideBySide,
    BudgetLine,
    RunEstimate,
    RequestParity,
    KeyCount,
    RepeatabilityStudy,
    CaseRepeatability,
    SliceRepeatability,
    RepeatCost,
    SentinelSet,
    Sentinel,
    DriftEntry,
    Observation,
    SentinelChange,
    BaselineRef,
]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_field_is_documented_with_a_docstring(model: type[BaseModel]) -> None:
    assert [name for name in model.model_fields if f"`{name}`" not in DOC] == []
    assert undocumented_fields(model, "schema_version") == []


def test_every_command_the_lifecycle_guide_names_exists() -> None:
    # in code spans and at the start of code-block lines
    named = set(re.findall(r"`workbench ([a-z][a-z-]*(?: [a-z][a-z-]*)?)", LIFECYCLE)) | set(
        re.findall(r"^workbench ([a-z][a-z-]*(?: [a-z][a-z-]*)?)", LIFECYCLE, re.MULTILINE)
    )
    assert named
    for command in sorted(named):
        words = command.split()
        result = CliRunner().invoke(main, [*words, "--help"])
        if result.exit_code != 0:  # a command followed by its first argument or by prose
            result = CliRunner().invoke(main, [words[0], "--help"])
        assert result.exit_code == 0, command
