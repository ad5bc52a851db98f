"""Every field of every documented format appears in docs/formats.md (and has a docstring)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import undocumented_fields
from pydantic import BaseModel

from workbench.align import AlignmentReport, SliceAlignment
from workbench.gold import Adjudication, Ambiguity, ErrorCost, GoldCase, Review, Rubric
from workbench.heldout import LedgerEntry
from workbench.judges import CandidateSpec
from workbench.phases import Selection
from workbench.policy import Blocker, GateResult, Policy, SlicePolicy
from workbench.policy._overrides import Override
from workbench.reports import Lock
from workbench.results import Distribution, JudgeIdentity, JudgeResult, ManifestSampling, SliceCost
from workbench.review import GoldCorrectionDraft, ReviewNote
from workbench.sampling import SamplingPlan, SliceSampling

DOC = (Path(__file__).resolve().parents[1] / "docs" / "formats.md").read_text(encoding="utf-8")


DOCUMENTED = [
    GoldCase,
    Review,
    Adjudication,
    Rubric,
    ErrorCost,
    Ambiguity,
    JudgeResult,
    JudgeIdentity,
    CandidateSpec,
    AlignmentReport,
    SliceAlignment,
    Policy,
    SlicePolicy,
    GateResult,
    Blocker,
    Override,
    ReviewNote,
    GoldCorrectionDraft,
    Selection,
    LedgerEntry,
    Lock,
    SamplingPlan,
    SliceSampling,
    ManifestSampling,
    SliceCost,
    Distribution,
]


@pytest.mark.parametrize("model", DOCUMENTED)
def test_every_field_is_documented(model: type[BaseModel]) -> None:
    undocumented = [
        name
        for name in model.model_fields
        if f"`{name}`" not in DOC
        and f"{name}:" not in DOC
        and f"{{{name}" not in DOC
        and f" {name}," not in DOC
        and f" {name}}}" not in DOC
    ]
    assert undocumented == []


@pytest.mark.parametrize(
    "model",
    [
        GoldCase,
        Review,
        Adjudication,
        Rubric,
        ErrorCost,
        Ambiguity,
        JudgeResult,
        JudgeIdentity,
        CandidateSpec,
        SliceAlignment,
        SamplingPlan,
        SliceSampling,
        ManifestSampling,
        SliceCost,
        Distribution,
    ],
)
def test_every_field_has_a_docstring(model: type[BaseModel]) -> None:
    assert undocumented_fields(model, "schema_version") == []


def test_every_validation_code_is_documented() -> None:
    import re

    source = "".join(
        p.read_text()
        for p in (Path(__file__).resolve().parents[1] / "workbench" / "gold").glob("*.py")
    )
    codes = set(re.findall(r'code="([a-z_0-9]+)"', source)) | set(
        re.findall(r'add\(\s*"([a-z_0-9]+)"', source)
    )
    assert codes, "no codes found"
    assert sorted(c for c in codes if f"`{c}`" not in DOC) == []
