"""The rubric: the label vocabulary, which label means pass, and the risk slices.

Stored as ``rubric.yaml`` beside ``gold.jsonl``. Cases carry the rubric version their
reviewers applied; a case reviewed under another version is a validation problem.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import Problem, WorkbenchError

RUBRIC_SCHEMA_VERSION = 1

UNSET_RISK = "unset"
"""The risk a drafted rubric gives every slice (``workbench import table``): a person must replace
it with a real level. :func:`load_rubric` refuses a rubric holding it (``rubric_risk_unset``)."""


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

    schema_version: int = RUBRIC_SCHEMA_VERSION
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
    min_reviews: int = Field(default=2, ge=1)
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
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise WorkbenchError(
            "unreadable rubric",
            [Problem(location=location, code="rubric_encoding", message=f"the rubric is not valid UTF-8 (byte {exc.start})", fix="save rubric.yaml as UTF-8")],
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{location}:{mark.line + 1}" if mark else location
        raise WorkbenchError(
            "unreadable rubric",
            [Problem(location=where, code="rubric_yaml", message=f"the rubric is not valid YAML ({getattr(exc, 'problem', exc)})", fix="correct the YAML syntax")],
        ) from None
    if not isinstance(raw, dict):
        raise WorkbenchError(
            "unreadable rubric",
            [Problem(location=location, code="rubric_shape", message="the rubric must be a YAML mapping", fix="write the rubric as key: value pairs")],
        )
    unset = _unset_risks(raw, path, location)
    if unset:
        # Check everything else too, so the person sees every problem at once.
        slices = raw["slices"]
        raw = {**raw, "slices": {k: ({**v, "risk": Risk.low.value} if k in {name for name, _ in unset} else v) for k, v in slices.items()}}
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
        raise WorkbenchError("invalid rubric", [p for _, p in unset] + problems) from None
    if unset:
        raise WorkbenchError(f"{location}: {len(unset)} slice(s) without a risk level", [p for _, p in unset])
    if rubric.schema_version > RUBRIC_SCHEMA_VERSION:
        raise WorkbenchError(
            "rubric from a newer workbench",
            [Problem(location=location, code="schema_version_newer", message=f"rubric schema_version {rubric.schema_version} is newer than this workbench reads ({RUBRIC_SCHEMA_VERSION})", fix="upgrade the workbench")],
        )
    return rubric


def _unset_risks(raw: dict, path: Path, location: str) -> list[tuple[str, Problem]]:
    """Slices whose ``risk`` is still :data:`UNSET_RISK`, each with a problem at its line."""
    slices = raw.get("slices")
    if not isinstance(slices, dict):
        return []
    names = [name for name, spec in slices.items() if isinstance(spec, dict) and spec.get("risk") == UNSET_RISK]
    if not names:
        return []
    lines: dict[str, int] = {}
    try:
        root = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except yaml.YAMLError:  # pragma: no cover - the file was parsed above
        root = None
    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            if key.value == "slices" and isinstance(value, yaml.MappingNode):
                for slice_key, spec in value.value:
                    line = slice_key.start_mark.line + 1
                    if isinstance(spec, yaml.MappingNode):
                        line = next((k.start_mark.line + 1 for k, _ in spec.value if k.value == "risk"), line)
                    lines[str(slice_key.value)] = line
    return [
        (
            name,
            Problem(
                location=f"{location}:{lines[name]}" if name in lines else location,
                code="rubric_risk_unset",
                message=f"slice {name!r} has risk 'unset': nobody has said how much harm a wrong verdict in it does",
                fix="set its risk to critical, high, medium or low (critical: a false pass is release-critical); the policy's risk for the slice must then equal it",
            ),
        )
        for name in names
    ]
