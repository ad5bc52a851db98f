"""Append-only review notes: the first cause of each disagreement, as a reviewer saw it.

Notes are JSON Lines written through :class:`~workbench._io.AppendOnlyLog`: a note is never
rewritten or deleted. A later note for the same case and judge supersedes an earlier one in
:meth:`ReviewNotes.latest_by_case`, and the earlier one stays in the file.
"""

from __future__ import annotations

import csv
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, get_args

import pandas as pd
from pydantic import Field, ValidationError, field_validator

from .._csv import spreadsheet_safe
from .._io import (
    AppendOnlyLog,
    JSONRecordError,
    atomic_write_bytes,
    atomic_write_text,
    iter_jsonl_lines,
    json_problem,
    loads_json,
)
from .._load import first_error, validation_problems
from .._record import Record, SchemaTooNew
from ..errors import Problem, WorkbenchError

NOTE_SCHEMA_VERSION = 1
"""Version of the review-note record format."""

Cause = Literal[
    "gold_label_defect",
    "rubric_ambiguity",
    "missing_evidence",
    "judge_instruction_gap",
    "judge_reasoning_error",
    "parser_bug",
    "provider_failure",
    "out_of_scope",
]
CAUSES: tuple[str, ...] = get_args(Cause)
"""First causes of a disagreement, in the order a reviewer should rule them out."""

EXPORT_FORMATS: tuple[str, ...] = (".csv", ".parquet")
"""File suffixes :meth:`ReviewNotes.export` writes."""


class ReviewNote(Record):
    """One reviewer's note on one case for one judge."""

    schema_version: int = NOTE_SCHEMA_VERSION
    """Review-note record format version."""
    note_id: str = Field(min_length=1)
    """Unique id of this note."""
    case_id: str = Field(min_length=1)
    """The gold case the note is about."""
    judge_fingerprint: str | None
    """Fingerprint of the judge whose verdict was reviewed (None when the table had none)."""
    reviewer: str = Field(min_length=1)
    """Who wrote the note."""
    created_at: datetime
    """When the note was written (UTC)."""
    cause: Cause
    """The first cause of the disagreement, one of :data:`CAUSES`."""
    note: str = ""
    """Free text: the evidence for the cause."""
    error_class: str | None = None
    """The case's error class when the note was written (false_pass, false_fail ...)."""

    @field_validator("created_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("created_at needs a timezone")
        return value.astimezone(UTC)


class ReviewNotes:
    """An append-only notes file (JSON Lines of :class:`ReviewNote`).

    Opening repairs a torn last line (moved aside to ``<file>.torn``); use as a context
    manager or call :meth:`close` to release the file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._log = AppendOnlyLog(self.path)

    def add(
        self,
        case_id: str,
        cause: str,
        note: str = "",
        *,
        reviewer: str,
        judge_fingerprint: str | None = None,
        error_class: str | None = None,
    ) -> ReviewNote:
        """Validate and append one note; return it. Raises :class:`WorkbenchError` on bad input."""
        if cause not in CAUSES:
            raise WorkbenchError(
                "invalid review note",
                [
                    Problem(
                        location=str(self.path),
                        case_id=case_id,
                        code="unknown_cause",
                        message=f"cause {cause!r} is not one of the documented causes",
                        fix="use one of " + ", ".join(CAUSES),
                    )
                ],
            )
        try:
            record = ReviewNote(
                note_id=uuid.uuid4().hex,
                case_id=case_id,
                judge_fingerprint=judge_fingerprint,
                reviewer=reviewer,
                created_at=datetime.now(UTC),
                cause=cause,
                note=note,
                error_class=error_class,
            )
        except ValidationError as exc:
            raise WorkbenchError(
                "invalid review note",
                validation_problems(
                    exc,
                    at=str(self.path),
                    case_id=case_id or None,
                    code="invalid_note",
                    fix="give a case id, a reviewer and a documented cause",
                ),
            ) from None
        self._log.append(record.model_dump(mode="json"))
        return record

    def all(self) -> list[ReviewNote]:
        """Every note in file order; raises :class:`WorkbenchError` listing every bad line."""
        if not self.path.exists():
            return []
        notes: list[ReviewNote] = []
        problems: list[Problem] = []
        not_utf8: list[int] = []
        for number, text in iter_jsonl_lines(self.path, not_utf8):
            where = f"{self.path}:{number}"
            try:
                record = ReviewNote.model_validate(loads_json(text))
            except JSONRecordError as exc:
                problems.append(
                    json_problem(
                        exc,
                        where,
                        fix="notes are written by ReviewNotes.add; do not edit the file by hand",
                    )
                )
                continue
            except ValidationError as exc:
                problems.append(
                    Problem(
                        location=where,
                        code="invalid_note",
                        message=first_error(exc),
                        fix="notes are written by ReviewNotes.add; do not edit the file by hand",
                    )
                )
                continue
            except SchemaTooNew as exc:
                problems.append(exc.problem_at(where))
                continue
            notes.append(record)
        problems += [
            Problem(
                location=f"{self.path}:{n}",
                code="not_utf8",
                message="the line is not valid UTF-8",
                fix="notes are written by ReviewNotes.add; do not edit the file by hand",
            )
            for n in not_utf8
        ]
        if problems:
            raise WorkbenchError(f"{self.path}: {len(problems)} bad note line(s)", problems)
        return notes

    def latest_by_case(self, judge_fingerprint: str | None = None) -> dict[str, ReviewNote]:
        """The latest note per case (for one judge when ``judge_fingerprint`` is given).

        "Latest" is file order, not clock time: the later line supersedes in this view only.
        """
        out: dict[str, ReviewNote] = {}
        for note in self.all():
            if judge_fingerprint is None or note.judge_fingerprint == judge_fingerprint:
                out[note.case_id] = note
        return out

    def cause_counts(self, judge_fingerprint: str | None = None) -> pd.Series:
        """Cases per cause over :meth:`latest_by_case` (every cause present, zeros included)."""
        counts = dict.fromkeys(CAUSES, 0)
        for note in self.latest_by_case(judge_fingerprint).values():
            counts[note.cause] += 1
        return pd.Series(counts, name="cases", dtype=int).rename_axis("cause")

    def to_frame(
        self, judge_fingerprint: str | None = None, *, latest_only: bool = False
    ) -> pd.DataFrame:
        """The notes as a DataFrame, one row per note (or per case with ``latest_only``).

        Columns are the :class:`ReviewNote` fields in order; ``created_at`` is a UTC
        timestamp. ``judge_fingerprint`` keeps one judge's notes.
        """
        if latest_only:
            notes = list(self.latest_by_case(judge_fingerprint).values())
        else:
            notes = [
                n
                for n in self.all()
                if judge_fingerprint is None or n.judge_fingerprint == judge_fingerprint
            ]
        columns = list(ReviewNote.model_fields)
        frame = pd.DataFrame.from_records([n.model_dump() for n in notes], columns=columns)
        frame["created_at"] = pd.to_datetime(frame["created_at"], utc=True)
        for col in ("schema_version",):
            frame[col] = frame[col].astype("int64")
        return frame

    def export(
        self, path: str | Path, judge_fingerprint: str | None = None, *, latest_only: bool = False
    ) -> Path:
        """Write :meth:`to_frame` to ``path`` (``.csv`` or ``.parquet``, atomically); return it.

        The ``.csv`` is for spreadsheets: a cell starting with ``=``, ``+``, ``-``, ``@``, a tab
        or a carriage return gets a leading ``'`` (:mod:`workbench._csv`); the ``.parquet`` keeps
        every value exactly."""
        target = Path(path)
        suffix = target.suffix.lower()
        if suffix not in EXPORT_FORMATS:
            raise WorkbenchError(
                "cannot export review notes",
                [
                    Problem(
                        location=str(target),
                        code="unknown_export_format",
                        message=f"unknown file type {target.suffix or '(none)'!r}",
                        fix="name the file *.csv or *.parquet",
                    )
                ],
            )
        if target.resolve() == self.path.resolve():
            raise WorkbenchError(
                "cannot export review notes",
                [
                    Problem(
                        location=str(target),
                        code="export_over_notes",
                        message="the export would replace the notes file itself",
                        fix="export to another file",
                    )
                ],
            )
        frame = self.to_frame(judge_fingerprint, latest_only=latest_only)
        if suffix == ".csv":  # for spreadsheets: formula-like cells neutralized (workbench._csv)
            for column in frame.columns:
                if pd.api.types.is_string_dtype(frame[column]):
                    frame[column] = frame[column].map(spreadsheet_safe)
            # Every text cell quoted: a carriage return inside a note never breaks a row.
            atomic_write_text(target, frame.to_csv(index=False, quoting=csv.QUOTE_NONNUMERIC))
        else:
            import io

            buffer = io.BytesIO()
            frame.to_parquet(buffer, index=False, engine="pyarrow")
            atomic_write_bytes(target, buffer.getvalue())
        return target

    def close(self) -> None:
        """Close the underlying file."""
        self._log.close()

    def __enter__(self) -> ReviewNotes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
