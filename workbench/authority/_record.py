"""The authority record: what each judge may do, since when, on which evidence, approved by whom.

One append-only, hash-chained JSON Lines file with a head file, appended under a lock, as the
held-out ledger. A judge's authority is its last entry's. A damaged record grants nothing;
only demotions and revocations are appended to it.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from .._chain import ChainedLog, ChainTerms, content_sha256
from .._io import atomic_write_json
from .._record import Record
from ..errors import Problem, problem
from ..policy import PolicyScope
from ._grant import Level, describe_scope

AUTHORITY_SCHEMA_VERSION = 1
LOCK_TIMEOUT_S = 60.0
Event = Literal["granted", "promoted", "demoted", "revoked", "shadow"]
FIX_RESTORE = (
    "the authority record is append-only evidence: restore it (and its .head file) from version"
    " control or a backup; never edit or delete its lines"
)


class AuthorityEntry(Record):
    """One line of the authority record."""

    schema_version: int = AUTHORITY_SCHEMA_VERSION
    """Authority record format version."""
    entry_id: str
    """Unique id of the entry (``auth-`` + 16 hex digits)."""
    judge: str
    """The judge, ``name@version``."""
    event: Event
    """``granted``, ``promoted`` (one step up), ``demoted``, ``revoked`` or ``shadow``."""
    authority: Level
    """The judge's authority after this entry."""
    previous_authority: Level
    """Its authority before."""
    scope: PolicyScope | None
    """The scope the authority applies in after this entry (None with ``none``)."""
    report_id: str | None
    """The certification report the authority rests on (or rested on); None when none."""
    report_dir: str | None
    """Absolute path of that report."""
    lock_sha256: str | None
    """That report's lock hash: the entry is bound to exactly that report."""
    candidate_fingerprint: str | None
    """The fingerprint the report certified."""
    candidate_spec: str | None
    """Absolute path of the candidate spec the judge runs from (read for staleness)."""
    policy: str | None
    """``name@version`` of the policy the report was certified under."""
    granted_use: Level | None
    """What that report grants (the ceiling of this judge's authority on its evidence)."""
    shadow_of: str | None
    """For ``shadow``: the judge (``name@version``) this one runs beside."""
    approver: str
    """Who approved the entry (for ``demoted``/``revoked`` by default who recorded it)."""
    reason: str
    """Why, in the approver's words."""
    when: datetime
    """When the entry was recorded (UTC)."""
    recorded_by: str
    """The user who ran the command."""
    previous_sha256: str | None
    """``entry_sha256`` of the line before this one (None for the first line): the chain."""
    entry_sha256: str = ""
    """sha256 over the canonical JSON of this entry without this field."""

    def content_sha256(self) -> str:
        return content_sha256(self)

    def describe(self) -> str:
        """One line: the event, the levels, scope, shadow and report, who approved it and why."""
        scope = f" on {describe_scope(self.scope)}" if self.scope is not None else ""
        report = f"; report {self.report_id}" if self.report_id else ""
        shadow = f" in shadow of {self.shadow_of}" if self.shadow_of else ""
        return (
            f"{self.event} {self.judge}: {self.previous_authority} -> {self.authority}{scope}"
            f"{shadow}{report}; approved by {self.approver}: {self.reason} ({self.entry_id},"
            f" {self.when:%Y-%m-%d %H:%M} UTC)"
        )


@dataclass(frozen=True)
class JudgeAuthority:
    """A judge's state in the record: its last entry, and its history."""

    judge: str
    last: AuthorityEntry
    entries: tuple[AuthorityEntry, ...]

    @property
    def authority(self) -> Level:
        return self.last.authority

    @property
    def evidence(self) -> AuthorityEntry | None:
        """The last entry naming a report (the evidence the authority rests on)."""
        return next((e for e in reversed(self.entries) if e.report_dir), None)

    @property
    def revoked_at(self) -> datetime | None:
        """When it was last revoked, if ever."""
        return next((e.when for e in reversed(self.entries) if e.event == "revoked"), None)

    @property
    def shadow_of(self) -> str | None:
        """The judge it currently runs in shadow of."""
        return self.last.shadow_of if self.last.event == "shadow" else None


@dataclass(frozen=True)
class RecordRead:
    """Every entry that parsed, and every problem found."""

    entries: list[AuthorityEntry]
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def judges(self) -> dict[str, JudgeAuthority]:
        """Every judge with an entry, in order of first appearance."""
        grouped: dict[str, list[AuthorityEntry]] = {}
        for e in self.entries:
            grouped.setdefault(e.judge, []).append(e)
        return {
            name: JudgeAuthority(name, items[-1], tuple(items)) for name, items in grouped.items()
        }


_TERMS = ChainTerms(
    invalid="authority_record_invalid",
    broken="authority_chain_broken",
    unreadable="authority_record_unreadable",
    noun="entry",
    fix=FIX_RESTORE,
    busy="authority_record_busy",
    busy_title="authority record busy",
    busy_subject="the record's lock",
    busy_fix="retry in a moment",
)


class AuthorityRecord:
    """The append-only, hash-chained authority record at ``path`` (a :class:`ChainedLog`)."""

    def __init__(self, path: str | Path) -> None:
        self.log = ChainedLog(
            path,
            AuthorityEntry,
            _TERMS,
            schema_version=AUTHORITY_SCHEMA_VERSION,
            lock_timeout_s=LOCK_TIMEOUT_S,
        )
        self.path = self.log.path
        self.head_path = self.path.with_name(f".{self.path.name}.head")
        self.lock_path = self.log.lock_path

    def read(self) -> RecordRead:
        """Parse every line and check the chain and the head; never raises for bad content."""
        head = self._read_head()
        if not self.path.exists():
            if head is not None and head.get("entries"):
                message = (
                    f"the record is gone but its head says it held {head.get('entries')} entries"
                )
                return RecordRead(
                    [], [_restore(str(self.path), "authority_record_missing", message)]
                )
            return RecordRead([])
        if not self.path.is_file():
            message = "the record cannot be read (it is not a file)"
            fix = "make the record readable"
            return RecordRead([], [problem(str(self.path), _TERMS.unreadable, message, fix)])
        rows, unreadable = self.log.rows()
        if unreadable:
            return RecordRead([], unreadable)
        seen: set[str] = set()

        def unique_ids(entry: AuthorityEntry, number: int, where: str) -> list[Problem]:
            twice = entry.entry_id in seen
            seen.add(entry.entry_id)
            message = f"entry id {entry.entry_id} appears twice"
            return [_restore(where, _TERMS.broken, message)] if twice else []

        entries, problems = self.log.verify(rows, unique_ids)
        found = self._head_problem(head, entries)
        return RecordRead(entries, problems + ([found] if found else []))

    def _read_head(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.head_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RecursionError):
            return {"unreadable": True}
        return data if isinstance(data, dict) else {"unreadable": True}

    def _head_problem(
        self, head: dict[str, Any] | None, entries: list[AuthorityEntry]
    ) -> Problem | None:
        """What the head says is wrong with the record's end (lines deleted at the end, which the
        chain alone cannot show, leave the head ahead of the record)."""
        record, loc = str(self.path), str(self.head_path)
        if not entries:
            if head is not None and head.get("entries"):
                message = (
                    f"the record holds no entry but its head says {head.get('entries')}: lines"
                    " were removed"
                )
                return _restore(record, "authority_record_truncated", message)
            return None
        if head is None:
            message = (
                f"the record has {len(entries)} entries but no head file: lines removed at its end"
                " could not be told"
            )
            return _restore(loc, "authority_head_missing", message)
        if head.get("unreadable") or not isinstance(head.get("entries"), int):
            return _restore(loc, "authority_head_invalid", "the head file cannot be read")
        count, digest = head["entries"], head.get("entry_sha256")
        if count > len(entries):
            message = (
                f"the head says the record held {count} entries, it holds {len(entries)}: lines"
                " were removed at its end"
            )
            return _restore(record, "authority_record_truncated", message)
        if count < 1 or entries[count - 1].entry_sha256 != digest:
            message = f"entry {count} of the record is not the one the head names"
            return _restore(loc, "authority_head_mismatch", message)
        if count < len(entries) - 1:
            # An append is followed by its head at once; a crash leaves the head one entry
            # behind at most.
            message = (
                f"the head names entry {count} of {len(entries)}: entries were appended without"
                " the workbench"
            )
            return _restore(loc, "authority_head_mismatch", message)
        return None

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """Hold the record's file lock (every append happens under it)."""
        return self.log.locked()

    def append(self, entry: AuthorityEntry, read: RecordRead) -> AuthorityEntry:
        """Chain ``entry`` to ``read``'s last entry and append it, then move the head (left alone on
        a damaged record). Caller holds :meth:`locked`."""
        previous = read.entries[-1].entry_sha256 if read.entries else None
        sealed = self.log.append(entry, previous)
        if read.ok:
            atomic_write_json(
                self.head_path,
                {"entries": len(read.entries) + 1, "entry_sha256": sealed.entry_sha256},
            )
        return sealed


def _restore(location: str, code: str, message: str) -> Problem:
    return problem(location, code, message, FIX_RESTORE)


def new_entry_id() -> str:
    return f"auth-{uuid.uuid4().hex[:16]}"
