"""Proposed gold corrections: a reviewer drafts, an adjudicator decides.

A note with cause ``gold_label_defect`` can become a draft superseding gold record, appended to
its own JSON Lines file. Nothing here writes to a gold dataset: an adjudicator fills in
``adjudicator`` and appends the record to ``gold.jsonl`` by hand.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from .._io import AppendOnlyLog
from .._load import Problems, validation_problems
from .._record import Record
from ..errors import WorkbenchError
from ..gold import GoldCase
from ._notes import ReviewNote, read_records

DRAFT_SCHEMA_VERSION = 1


class GoldCorrectionDraft(Record):
    """A proposed superseding gold record, waiting for an adjudicator (never applied here)."""

    schema_version: int = DRAFT_SCHEMA_VERSION
    draft_id: str = Field(min_length=1)
    created_at: datetime
    drafted_by: str = Field(min_length=1)
    note_id: str = Field(min_length=1)
    """The review note whose text is the reason."""
    supersedes: str = Field(min_length=1)
    """``case_id`` of the gold record the draft would correct."""
    current_label: str | None
    proposed_label: str = Field(min_length=1)
    reason: str = Field(min_length=1)
    judge_fingerprint: str | None = None
    dataset_sha256: str | None = None
    status: Literal["proposed"] = "proposed"
    record: dict[str, Any] | None = None
    """The proposed gold record (:func:`proposed_record`); None when the review table did not
    carry the gold record."""


def drafts_path(notes_path: str | Path) -> Path:
    """Where drafts go by default: ``<notes stem>.gold_drafts.jsonl`` beside the notes file."""
    p = Path(notes_path)
    return p.with_name(f"{p.stem}.gold_drafts.jsonl")


def proposed_record(
    gold_record: dict[str, Any], *, case_id: str, proposed_label: str, reason: str
) -> dict[str, Any]:
    """The gold record with a new id, ``supersedes`` and an adjudication carrying the proposed
    label and reason (no adjudicator yet); reviews unchanged. Raises :class:`WorkbenchError` if
    the result is not a valid gold record."""
    old_id = str(gold_record.get("case_id"))
    adjudication = {"label": proposed_label, "reason": reason, "adjudicator": None}
    record = {**gold_record, "case_id": case_id, "supersedes": old_id, "adjudication": adjudication}
    try:
        return GoldCase.model_validate(record).model_dump(mode="json")
    except ValidationError as exc:
        raise WorkbenchError(
            "cannot draft a gold correction",
            validation_problems(
                exc,
                at="gold draft",
                case_id=old_id,
                code="invalid_draft",
                fix="correct the gold record by hand",
            ),
        ) from None


class GoldCorrectionDrafts:
    """An append-only drafts file (JSON Lines of :class:`GoldCorrectionDraft`), opened lazily."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._log: AppendOnlyLog | None = None

    def all(self) -> list[GoldCorrectionDraft]:
        """Every draft in file order; raises :class:`WorkbenchError` listing every bad line."""
        fix = "drafts are written by the review widget; do not edit the file by hand"
        model = GoldCorrectionDraft
        return read_records(self.path, model, code="invalid_draft", what="draft", fix=fix)

    def add(
        self,
        note: ReviewNote,
        *,
        proposed_label: str,
        current_label: str | None,
        gold_record: dict[str, Any] | None = None,
        labels: tuple[str, ...] | None = None,
        dataset_sha256: str | None = None,
    ) -> GoldCorrectionDraft:
        """Validate and append a draft proposing ``proposed_label`` for ``note.case_id``; refused
        (:class:`WorkbenchError`) as :func:`_draft_problems` says."""
        problems = _draft_problems(note, proposed_label, current_label, labels, str(self.path))
        problems.raise_if_any("cannot draft a gold correction")
        earlier = sum(1 for d in self.all() if d.supersedes == note.case_id)
        reason = note.note.strip()
        record = None
        if gold_record is not None:
            new_id = f"{note.case_id}-c{earlier + 1}"
            record = proposed_record(
                gold_record, case_id=new_id, proposed_label=proposed_label, reason=reason
            )
        draft = GoldCorrectionDraft(
            draft_id=uuid.uuid4().hex,
            created_at=datetime.now(UTC),
            drafted_by=note.reviewer,
            note_id=note.note_id,
            supersedes=note.case_id,
            current_label=current_label,
            proposed_label=proposed_label,
            reason=reason,
            judge_fingerprint=note.judge_fingerprint,
            dataset_sha256=dataset_sha256,
            record=record,
        )
        if self._log is None:
            self._log = AppendOnlyLog(self.path)
        self._log.append(draft.model_dump(mode="json"))
        return draft

    def close(self) -> None:
        """Close the file (if a draft was written)."""
        if self._log is not None:
            self._log.close()

    def __enter__(self) -> GoldCorrectionDrafts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _draft_problems(
    note: ReviewNote,
    proposed_label: str,
    current_label: str | None,
    labels: tuple[str, ...] | None,
    where: str,
) -> Problems:
    """Why a note cannot become a draft: not a gold defect, no text (the reason), a label outside
    ``labels`` or the label the gold already has."""
    problems = Problems()
    cid = note.case_id
    if note.cause != "gold_label_defect":
        message = f"the note's cause is {note.cause}, not gold_label_defect"
        fix = "save a note with cause gold_label_defect first"
        problems.add(where, "not_a_gold_defect", message, fix, case_id=cid)
    if not note.note.strip():
        message = "the note has no text: an adjudicator needs the reason"
        fix = "write why the gold label is wrong in the note, then draft"
        problems.add(where, "no_reason", message, fix, case_id=cid)
    if labels and proposed_label not in labels:
        message = f"{proposed_label!r} is not one of the labels {', '.join(labels)}"
        problems.add(
            where, "unknown_label", message, "propose a label from the rubric", case_id=cid
        )
    if proposed_label == current_label:
        message = f"the gold label already is {proposed_label!r}"
        problems.add(where, "same_label", message, "propose a different label", case_id=cid)
    return problems
