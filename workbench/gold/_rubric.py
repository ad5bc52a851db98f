"""The rubric: the label vocabulary, which label means pass, and the risk slices.

Stored as ``rubric.yaml`` beside ``gold.jsonl``. Cases carry the rubric version their
reviewers applied; a case reviewed under another version is a validation problem.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .._io import read_yaml
from ..errors import Problem, WorkbenchError

RUBRIC_SCHEMA_VERSION = 1


class Risk(StrEnum):
    """How much harm a wrong verdict in a slice does. ``critical`` means release-critical."""

    critical = "critical"
    high = "high"
    medium = "medium"
    low = "low"


class SliceSpec(BaseModel):
    """One risk slice."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    risk: Risk
    """Risk level; ``critical`` slices are release-critical."""
    description: str = ""
    """What belongs in the slice and why its errors matter."""


class Rubric(BaseModel):
    """The judgment contract a gold dataset was reviewed under."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    schema_version: int = Field(default=RUBRIC_SCHEMA_VERSION, strict=True)
    """Rubric file format version."""
    name: str
    """Short name of the criterion, e.g. ``support-policy-correctness``."""
    version: str
    """The rubric version every case's ``rubric_version`` must equal."""
    criterion: str = ""
    """The one-sentence contract: what the judge decides, from which evidence."""
    labels: list[str] = Field(min_length=2)
    """The label vocabulary, shared by reviewers, adjudicators and judges."""
    pass_label: str | None = None
    """The label that means pass. ``None`` for rubrics without pass/fail, e.g. preferences."""
    fail_label: str | None = None
    """The label that means fail."""
    abstain_labels: list[str] = Field(default_factory=list)
    """Labels that are neither pass nor fail (abstain, review_required); kept as their own row and column."""
    min_reviews: int = Field(default=2, ge=1, strict=True)
    """How many independent reviews every case needs."""
    slices: dict[str, SliceSpec] = Field(min_length=1)
    """Every slice a case may belong to, with its risk level."""
    evidence_snapshot: str | None = None
    """Path (relative to the rubric) of the evidence snapshot, JSON Lines of ``{id, text, source}``."""

    @model_validator(mode="after")
    def _labels_consistent(self) -> Rubric:
        vocab = set(self.labels)
        if len(vocab) != len(self.labels):
            raise ValueError("labels contains duplicates")
        for name in ("pass_label", "fail_label"):
            value = getattr(self, name)
            if value is not None and value not in vocab:
                raise ValueError(f"{name} {value!r} is not one of labels {self.labels}")
        if (self.pass_label is None) != (self.fail_label is None):
            raise ValueError("declare both pass_label and fail_label, or neither")
        if self.pass_label is not None and self.pass_label == self.fail_label:
            raise ValueError("pass_label and fail_label must differ")
        for label in self.abstain_labels:
            if label not in vocab:
                raise ValueError(f"abstain label {label!r} is not one of labels {self.labels}")
            if label in (self.pass_label, self.fail_label):
                raise ValueError(f"abstain label {label!r} cannot also be pass or fail")
        return self

    @property
    def critical_slices(self) -> list[str]:
        return [name for name, spec in self.slices.items() if spec.risk == Risk.critical]

    def risk_of(self, slice_name: str) -> str | None:
        spec = self.slices.get(slice_name)
        return spec.risk.value if spec else None


def load_rubric(path: str | Path) -> Rubric:
    """Read and check a rubric file; raise :class:`WorkbenchError` listing every problem."""
    path = Path(path)
    location = str(path)
    if not path.exists():
        raise WorkbenchError(
            "no rubric",
            [
                Problem(
                    location=location,
                    code="rubric_missing",
                    message="the rubric file does not exist",
                    fix="create rubric.yaml beside gold.jsonl declaring name, version, labels, pass_label, fail_label and slices",
                )
            ],
        )
    raw = read_yaml(path, prefix="rubric")
    if not isinstance(raw, dict):
        raise WorkbenchError(
            "unreadable rubric",
            [Problem(location=location, code="rubric_shape", message="the rubric must be a YAML mapping", fix="write the rubric as key: value pairs")],
        )
    try:
        rubric = Rubric.model_validate(raw)
    except ValidationError as exc:
        problems = [
            Problem(
                location=location,
                code="rubric_invalid",
                message=f"{'.'.join(str(p) for p in err['loc']) or 'rubric'}: {err['msg']}",
                fix="correct this rubric field; see docs/formats.md#rubric",
            )
            for err in exc.errors()
        ]
        raise WorkbenchError("invalid rubric", problems) from None
    if rubric.schema_version > RUBRIC_SCHEMA_VERSION:
        raise WorkbenchError(
            "rubric from a newer workbench",
            [Problem(location=location, code="schema_version_newer", message=f"rubric schema_version {rubric.schema_version} is newer than this workbench reads ({RUBRIC_SCHEMA_VERSION})", fix="upgrade the workbench")],
        )
    return rubric
