"""Append-only review notes (JSON Lines): the first cause of each disagreement, as a reviewer
saw it. A note is never rewritten; a later one for the same case and judge supersedes it."""

from __future__ import annotations

import csv
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal, TypeVar, get_args

import pandas as pd
from pydantic import AfterValidator, AwareDatetime, BaseModel, Field, ValidationError

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
from ..errors import Problem, WorkbenchError, problem, refusal

NOTE_SCHEMA_VERSION = 1
M = TypeVar("M", bound=BaseModel)
UTCDatetime = Annotated[AwareDatetime, AfterValidator(lambda v: v.astimezone(UTC))]
"""A datetime with a timezone (refused without), stored in UTC."""

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
    note_id: str = Field(min_length=1)
    case_id: str = Field(min_length=1)
    judge_fingerprint: str | None
    """The judge whose verdict was reviewed (None when the table had none)."""
    reviewer: str = Field(min_length=1)
    created_at: UTCDatetime
    cause: Cause
    note: str = ""
    """Free text: the evidence for the cause."""
    error_class: str | None = None
    """The case's error class when the note was written."""


def read_records(path: Path, model: type[M], *, code: str, what: str, fix: str) -> list[M]:
    """Every line of the log ``path`` as ``model`` (none when it does not exist); raises
    :class:`WorkbenchError` listing every bad line (``code``, ``not_utf8``, JSON errors)."""
    if not path.exists():
        return []
    out: list[M] = []
    problems: list[Problem] = []
    not_utf8: list[int] = []
    for number, text in iter_jsonl_lines(path, not_utf8):
        where = f"{path}:{number}"
        try:
            out.append(model.model_validate(loads_json(text)))
        except JSONRecordError as exc:
            problems.append(json_problem(exc, where, fix=fix))
        except ValidationError as exc:
            problems.append(problem(where, code, first_error(exc), fix))
        except SchemaTooNew as exc:
            problems.append(exc.problem_at(where))
    utf8 = "the line is not valid UTF-8"
    problems += [problem(f"{path}:{n}", "not_utf8", utf8, fix) for n in not_utf8]
    if problems:
        raise WorkbenchError(f"{path}: {len(problems)} bad {what} line(s)", problems)
    return out


class ReviewNotes:
    """An append-only notes file of :class:`ReviewNote` lines (a context manager)."""

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
            message = f"cause {cause!r} is not one of the documented causes"
            fix = "use one of " + ", ".join(CAUSES)
            problems = [problem(str(self.path), "unknown_cause", message, fix, case_id)]
            raise WorkbenchError("invalid review note", problems)
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
        fix = "notes are written by ReviewNotes.add; do not edit the file by hand"
        return read_records(self.path, ReviewNote, code="invalid_note", what="note", fix=fix)

    def latest_by_case(self, judge_fingerprint: str | None = None) -> dict[str, ReviewNote]:
        """The latest note (in file order) per case, for one judge when ``judge_fingerprint`` is
        given."""
        return {n.case_id: n for n in self._of(judge_fingerprint)}

    def _of(self, judge_fingerprint: str | None) -> list[ReviewNote]:
        return [n for n in self.all() if judge_fingerprint in (None, n.judge_fingerprint)]

    def cause_counts(self, judge_fingerprint: str | None = None) -> pd.Series:
        """Cases per cause over :meth:`latest_by_case` (every cause present, zeros included)."""
        counts: Counter[str] = Counter(
            n.cause for n in self.latest_by_case(judge_fingerprint).values()
        )
        series = pd.Series({cause: counts[cause] for cause in CAUSES}, name="cases", dtype=int)
        return series.rename_axis("cause")

    def to_frame(
        self, judge_fingerprint: str | None = None, *, latest_only: bool = False
    ) -> pd.DataFrame:
        """The notes (one judge's with ``judge_fingerprint``), one row per note (per case with
        ``latest_only``); columns are the :class:`ReviewNote` fields."""
        if latest_only:
            notes = list(self.latest_by_case(judge_fingerprint).values())
        else:
            notes = self._of(judge_fingerprint)
        columns = list(ReviewNote.model_fields)
        frame = pd.DataFrame.from_records([n.model_dump() for n in notes], columns=columns)
        frame["created_at"] = pd.to_datetime(frame["created_at"], utc=True)
        frame["schema_version"] = frame["schema_version"].astype("int64")
        return frame

    def export(
        self, path: str | Path, judge_fingerprint: str | None = None, *, latest_only: bool = False
    ) -> Path:
        """Write :meth:`to_frame` to ``path`` (``.csv`` with formula-like cells neutralized by
        :mod:`workbench._csv`, or an exact ``.parquet``), atomically; return it."""
        target = Path(path)
        suffix = target.suffix.lower()
        refused = "cannot export review notes"
        if suffix not in EXPORT_FORMATS:
            message = f"unknown file type {target.suffix or '(none)'!r}"
            fix = "name the file *.csv or *.parquet"
            raise refusal(refused, str(target), "unknown_export_format", message, fix)
        if target.resolve() == self.path.resolve():
            message, fix = (
                "the export would replace the notes file itself",
                "export to another file",
            )
            raise refusal(refused, str(target), "export_over_notes", message, fix)
        frame = self.to_frame(judge_fingerprint, latest_only=latest_only)
        if suffix == ".csv":
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
        """Close the file."""
        self._log.close()

    def __enter__(self) -> ReviewNotes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
