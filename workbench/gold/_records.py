"""Gold records: one human-reviewed, adjudicated case per JSON line (the judge never sees one,
only a :class:`workbench.judges.JudgeInput` of allow-listed fields)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from .._record import Record as _Record
from ..errors import refusal

GOLD_SCHEMA_VERSION = 1
"""Version of the gold record format this package reads and writes."""


class Partition(StrEnum):
    """Where a case may be used. Groups of paraphrases never straddle partitions."""

    development = "development"
    """Prompt tuning: disagreements may be inspected case by case."""
    calibration = "calibration"
    """Candidate selection: untouched by tuning."""
    held_out = "held_out"
    """Certification only: used once per candidate, case detail is restricted."""


PARTITIONS: tuple[str, ...] = tuple(p.value for p in Partition)


def partition_name(value: Any, name: str = "partition") -> str:
    """The partition's name if ``value`` is one of the documented partitions (a string or the
    enum); :class:`~workbench.errors.WorkbenchError` (``invalid_partition``) otherwise."""
    if not isinstance(value, str) or str(value) not in PARTITIONS:
        message = f"{name} must be one of {', '.join(PARTITIONS)}, got {value!r}"
        fix = f"set {name} to one of {', '.join(repr(p) for p in PARTITIONS)}"
        raise refusal(f"invalid {name}", name, "invalid_partition", message, fix)
    return str(value)


Confidence = Literal["low", "medium", "high"]
SpanField = Literal["input", "response", "grading_notes", "reference"]


class Span(_Record):
    """A passage a reviewer cited: ``text`` is ``case.<field>[start:end]`` (checked)."""

    field: SpanField
    """The case field the passage is in."""
    start: int = Field(ge=0, strict=True)
    """Offset of the first character (Python string index)."""
    end: int = Field(gt=0, strict=True)
    """Offset after the last character."""
    text: str = Field(min_length=1)
    """The cited text itself, so a reader need not count."""

    def cited_in(self, case: Any) -> bool:
        """Whether ``case`` (a gold case or a queued one) has this text at this place."""
        return bool((getattr(case, self.field, None) or "")[self.start : self.end] == self.text)


class Review(_Record):
    """One reviewer's independent, blinded label for a case."""

    reviewer: str = Field(min_length=1)
    """Stable pseudonymous reviewer id, e.g. ``reviewer-a``."""
    label: str = Field(min_length=1)
    """A label from the rubric's vocabulary."""
    confidence: Confidence | None = None
    """The reviewer's confidence category."""
    rationale: str | None = None
    """Why the reviewer chose the label, citing evidence."""
    evidence: list[str] = Field(default_factory=list)
    """Ids of evidence passages the reviewer cited; they must resolve in the evidence snapshot."""
    escalate: bool = Field(default=False, strict=True)
    """The reviewer asked for adjudication regardless of agreement."""
    spans: list[Span] = Field(default_factory=list)
    """Passages of the case the reviewer cited (offsets into its text)."""
    assigned_at: datetime | None = None
    """When the case was assigned to the reviewer (annotation operations)."""
    completed_at: datetime | None = None
    """When the reviewer submitted the label."""
    training_version: str | None = None
    """The reviewer-training material the reviewer had completed."""
    blinded: list[str] = Field(default_factory=list)
    """What the reviewer was not shown, e.g. ``model_identity``, ``other_reviews``."""


class Adjudication(_Record):
    """The final human label, decided after independent reviews."""

    label: str = Field(min_length=1)
    """The gold label: the only label the judge is compared with."""
    reason: str | None = None
    """Why the adjudicator decided this label."""
    adjudicator: str | None = None
    """Who adjudicated."""


class GoldCase(_Record):
    """One case of a gold dataset, as stored on one line of ``gold.jsonl``."""

    schema_version: int = Field(default=GOLD_SCHEMA_VERSION, strict=True)
    """Gold record format version."""
    case_id: str = Field(min_length=1)
    """Unique, stable id. A correction is a new record with a new id that ``supersedes`` the old
    one."""
    partition: Partition
    """development, calibration or held_out."""
    group: str = Field(min_length=1)
    """Source prompt or paraphrase family; every case of a group must share one partition."""
    slice: str = Field(min_length=1)
    """Risk slice declared in the rubric; alignment is reported per slice."""
    tags: list[str] = Field(default_factory=list)
    """Free-form tags for filtering, e.g. ``abbreviation`` or ``long-answer``."""
    rubric_version: str = Field(min_length=1)
    """The rubric version the reviewers applied; must equal the rubric's version."""
    input: str
    """The user input the response answers. Shown to the judge."""
    response: str
    """The pre-existing response under judgment, exactly as reviewers saw it. Shown to the judge."""
    response_hash: str
    """sha256 (lowercase hex) of the UTF-8 response; ties judge results to this exact text."""
    grading_notes: str | None = None
    """Controlled evidence for grading: required concepts, prohibited claims. Shown to the judge."""
    reference: str | None = None
    """A reference answer. Shown to the judge."""
    contexts: list[str] | None = None
    """Retrieved or supplied context passages. Shown to the judge."""
    evidence: list[str] = Field(default_factory=list)
    """Ids of evidence passages in the dataset's evidence snapshot that this case relies on."""
    reviews: list[Review]
    """Independent reviews. Preliminary labels are preserved, never replaced."""
    adjudication: Adjudication | None = None
    """The final label. Required for every case; validation reports its absence."""
    supersedes: str | None = None
    """``case_id`` of the record this one corrects."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Provenance and response-generation metadata (source, model, sampling date ...)."""

    @model_validator(mode="after")
    def _needs_grading_evidence(self) -> GoldCase:
        if self.grading_notes is None and self.reference is None:
            raise ValueError("a case needs grading_notes or reference (or both)")
        for review in self.reviews:
            for span in review.spans:
                if not span.cited_in(self):
                    raise PydanticCustomError(
                        "span_mismatch",
                        "reviewer {reviewer}'s span {where} is not the text {text} of the case",
                        {
                            "reviewer": review.reviewer,
                            "where": f"{span.field}[{span.start}:{span.end}]",
                            "text": repr(span.text),
                        },
                    )
        return self

    @property
    def gold_label(self) -> str | None:
        """The adjudicated label, or ``None`` when the case has no adjudication."""
        return self.adjudication.label if self.adjudication else None

    @property
    def reviewers_disagree(self) -> bool:
        return len({r.label for r in self.reviews}) > 1
