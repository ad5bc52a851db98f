"""Proposed gold corrections: a reviewer drafts, an adjudicator decides.

When a review note says the gold label is wrong (cause ``gold_label_defect``), the widget can
draft a superseding gold record: a copy of the case's gold record with a new ``case_id``,
``supersedes`` pointing at the case, and an adjudication carrying the proposed label and
the note's reason (no adjudicator yet). Drafts are appended to their own JSON Lines file,
by default beside the notes file (``<notes>.gold_drafts.jsonl``). Nothing here writes to a
gold dataset: an adjudicator reviews a draft, fills in ``adjudicator`` and appends the record
to ``gold.jsonl`` by hand, where the usual validation applies.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from .._io import AppendOnlyLog, JSONRecordError, iter_jsonl_lines, json_problem, loads_json
from .._load import Problems, first_error, validation_problems
from .._record import Record, SchemaTooNew
from ..errors import Problem, WorkbenchError
from ..gold import GoldCase
from ._notes import ReviewNote

DRAFT_SCHEMA_VERSION = 1
"""Version of the gold-correction draft record format."""


class GoldCorrectionDraft(Record):
    """A proposed superseding gold record, waiting for an adjudicator. Never applied
    automatically."""

    schema_version: int = DRAFT_SCHEMA_VERSION
    """Draft record format version."""
    draft_id: str = Field(min_length=1)
    """Unique id of this draft."""
    created_at: datetime
    """When the draft was written (UTC)."""
    drafted_by: str = Field(min_length=1)
    """The reviewer who proposed the correction."""
    note_id: str = Field(min_length=1)
    """The review note (cause ``gold_label_defect``) whose text is the reason."""
    supersedes: str = Field(min_length=1)
    """``case_id`` of the gold record the draft would correct."""
    current_label: str | None
    """The gold label when the draft was written."""
    proposed_label: str = Field(min_length=1)
    """The label the reviewer proposes."""
    reason: str = Field(min_length=1)
    """Why: the review note's text."""
    judge_fingerprint: str | None = None
    """The judge whose disagreement led to the note (None when unknown)."""
    dataset_sha256: str | None = None
    """Hash of the gold dataset the reviewed case came from (None when unknown)."""
    status: Literal["proposed"] = "proposed"
    """Always ``proposed``: an adjudicator decides, and applies it by hand."""
    record: dict[str, Any] | None = None
    """The proposed gold record (a valid ``GoldCase`` with a new ``case_id``, ``supersedes``
    and an adjudication with the proposed label, the reason and no adjudicator yet); None when
    the review table did not carry the gold record."""


def drafts_path(notes_path: str | Path) -> Path:
    """Where drafts go by default: ``<notes stem>.gold_drafts.jsonl`` beside the notes file."""
    p = Path(notes_path)
    return p.with_name(f"{p.stem}.gold_drafts.jsonl")


def proposed_record(
    gold_record: dict[str, Any], *, case_id: str, proposed_label: str, reason: str
) -> dict[str, Any]:
    """The superseding record: the gold record with a new id, ``supersedes`` and a new adjudication.

    Reviews stay as they were (preliminary labels are never replaced). Raises
    :class:`WorkbenchError` if the result is not a valid gold record.
    """
    record = {k: v for k, v in gold_record.items()}
    old_id = str(record.get("case_id"))
    record.update(
        case_id=case_id,
        supersedes=old_id,
        adjudication={"label": proposed_label, "reason": reason, "adjudicator": None},
    )
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
        if not self.path.exists():
            return []
        drafts: list[GoldCorrectionDraft] = []
        problems: list[Problem] = []
        not_utf8: list[int] = []
        for number, text in iter_jsonl_lines(self.path, not_utf8):
            try:
                draft = GoldCorrectionDraft.model_validate(loads_json(text))
            except JSONRecordError as exc:
                problems.append(
                    json_problem(
                        exc,
                        f"{self.path}:{number}",
                        fix="drafts are written by the review widget; do not edit the file by hand",
                    )
                )
                continue
            except ValidationError as exc:
                problems.append(
                    Problem(
                        location=f"{self.path}:{number}",
                        code="invalid_draft",
                        message=first_error(exc),
                        fix="drafts are written by the review widget; do not edit the file by hand",
                    )
                )
                continue
            except SchemaTooNew as exc:
                problems.append(exc.problem_at(f"{self.path}:{number}"))
                continue
            drafts.append(draft)
        problems += [
            Problem(
                location=f"{self.path}:{n}",
                code="not_utf8",
                message="the line is not valid UTF-8",
                fix="drafts are written by the review widget; do not edit the file by hand",
            )
            for n in not_utf8
        ]
        if problems:
            raise WorkbenchError(f"{self.path}: {len(problems)} bad draft line(s)", problems)
        return drafts

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
        """Validate and append a draft proposing ``proposed_label`` for ``note.case_id``.

        Refuses (:class:`WorkbenchError`) a note whose cause is not ``gold_label_defect``, a
        note without text (the reason), a label outside ``labels`` and a label equal to the
        current one.
        """
        problems = _draft_problems(note, proposed_label, current_label, labels, str(self.path))
        problems.raise_if_any("cannot draft a gold correction")
        earlier = sum(1 for d in self.all() if d.supersedes == note.case_id)
        record = None
        if gold_record is not None:
            record = proposed_record(
                gold_record,
                case_id=f"{note.case_id}-c{earlier + 1}",
                proposed_label=proposed_label,
                reason=note.note.strip(),
            )
        draft = GoldCorrectionDraft(
            draft_id=uuid.uuid4().hex,
            created_at=datetime.now(UTC),
            drafted_by=note.reviewer,
            note_id=note.note_id,
            supersedes=note.case_id,
            current_label=current_label,
            proposed_label=proposed_label,
            reason=note.note.strip(),
            judge_fingerprint=note.judge_fingerprint,
            dataset_sha256=dataset_sha256,
            record=record,
        )
        if self._log is None:
            self._log = AppendOnlyLog(self.path)
        self._log.append(draft.model_dump(mode="json"))
        return draft

    def close(self) -> None:
        """Close the underlying file (if a draft was written)."""
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
    """Why a note cannot become a draft: not a gold defect, no reason, a label outside the
    rubric or the label the gold already has."""
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
