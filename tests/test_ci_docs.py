"""Every field of the CI records and configuration is documented in docs/formats.md and has a
docstring.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import undocumented_fields
from pydantic import BaseModel

from workbench.ci import (
    AffectedCandidate,
    CheckResult,
    CiConfig,
    CiPaths,
    ContractsReport,
    ExpectedFailure,
    LaneRun,
    ReleaseSummary,
    SentinelDefaults,
    SentinelLaneReport,
)
from workbench.policy import Policy

DOC = (Path(__file__).resolve().parents[1] / "docs" / "formats.md").read_text(encoding="utf-8")
MODELS = [
    CheckResult,
    CiConfig,
    CiPaths,
    SentinelDefaults,
    ExpectedFailure,
    ContractsReport,
    SentinelLaneReport,
    AffectedCandidate,
    LaneRun,
    ReleaseSummary,
]


@pytest.mark.parametrize("model", MODELS)
def test_every_ci_field_is_documented_with_a_docstring(model: type[BaseModel]) -> None:
    assert [n for n in model.model_fields if f"`{n}`" not in DOC] == []
    assert undocumented_fields(model) == []


def test_the_policy_ci_cap_is_documented() -> None:
    assert "ci_budget_usd" not in undocumented_fields(Policy) and "`ci_budget_usd`" in DOC
