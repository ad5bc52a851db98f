"""The held-out ledger: every use of the held-out partition, append-only.

Certification writes a ``started`` entry before the first held-out call and a ``finished``
entry with the outcome afterwards, so a crashed or abandoned certification still shows up.
Running a candidate on held-out data is allowed only with a :class:`HeldOutAccess` that
matches an open ``started`` entry; ``workbench certify`` is the only thing that opens one.
"""

from __future__ import annotations

import getpass
import os
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from .._io import AppendOnlyLog, iter_jsonl_lines, loads_json, sha256_json
from ..errors import Problem, WorkbenchError
from ..gold import GoldCase

LEDGER_FILE = "held_out_ledger.jsonl"
LEDGER_SCHEMA_VERSION = 1


def held_out_manifest_sha256(dataset_sha256: str, cases: Iterable[GoldCase]) -> str:
    """Hash of what a certification judges: the dataset and every held-out case id and response hash."""
    return sha256_json(
        {
            "dataset_sha256": dataset_sha256,
            "partition": "held_out",
            "cases": [{"case_id": c.case_id, "response_hash": c.response_hash} for c in cases],
        }
    )


def current_user() -> str:
    """Who is certifying: ``$WORKBENCH_USER``, else the login name."""
    try:
        return os.environ.get("WORKBENCH_USER") or getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        return "unknown"


class LedgerEntry(BaseModel):
    """One line of the held-out ledger."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    schema_version: int = LEDGER_SCHEMA_VERSION
    entry_id: str
    """Unique id; a ``finished`` entry names its ``started`` entry in ``opens``."""
    event: Literal["started", "finished"]
    """``started`` before the first held-out call, ``finished`` with the outcome."""
    opens: str | None = None
    """For ``finished``: the ``started`` entry it closes."""
    who: str
    """The user who certified."""
    when: datetime
    """UTC time of the event."""
    candidate: str
    """``name@version``."""
    candidate_fingerprint: str
    dataset_sha256: str
    held_out_manifest_sha256: str
    report_id: str
    """``<name>/<version>/<n>`` of the report."""
    rerun_reason: str | None = None
    """Why the same candidate was certified again on the same held-out manifest."""
    outcome: str | None = None
    """For ``finished``: the gate outcome."""
    lock_sha256: str | None = None
    """For ``finished``: the report's lock hash."""
    held_out_used: bool | None = None
    """For ``finished``: whether any held-out case was judged (False when controls or lineage
    stopped certification first). A started entry never finished counts as used."""


class HeldOutLedger:
    """Append-only ledger at ``<reports_root>/held_out_ledger.jsonl``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def entries(self) -> list[LedgerEntry]:
        if not self.path.exists():
            return []
        out: list[LedgerEntry] = []
        problems: list[Problem] = []
        for number, line in iter_jsonl_lines(self.path):
            try:
                out.append(LedgerEntry.model_validate(loads_json(line)))
            except ValueError as exc:
                problems.append(Problem(location=f"{self.path}:{number}", code="ledger_invalid", message=f"unreadable ledger entry ({str(exc)[:120]})", fix="the ledger is append-only evidence: restore it from version control"))
        if problems:
            raise WorkbenchError("the held-out ledger is damaged", problems)
        return out

    def previous_uses(self, fingerprint: str, manifest_sha256: str) -> list[LedgerEntry]:
        """Earlier certifications of the same fingerprint on the same manifest that used held-out data.

        A ``started`` entry counts unless its ``finished`` entry says no held-out case was
        judged; an unfinished certification (a crash) counts as a use: fail closed.
        """
        entries = self.entries()
        unused = {e.opens for e in entries if e.event == "finished" and e.held_out_used is False}
        return [e for e in entries if e.event == "started" and e.entry_id not in unused and e.candidate_fingerprint == fingerprint and e.held_out_manifest_sha256 == manifest_sha256]

    def check_rerun(self, fingerprint: str, manifest_sha256: str, rerun_reason: str | None) -> None:
        """Refuse a second certification of the same fingerprint on the same manifest without a reason."""
        earlier = self.previous_uses(fingerprint, manifest_sha256)
        if earlier and not (rerun_reason and rerun_reason.strip()):
            listing = ", ".join(f"{e.report_id} ({e.when:%Y-%m-%d %H:%M} by {e.who})" for e in earlier)
            raise WorkbenchError(
                "refusing to certify again",
                [
                    Problem(
                        location=str(self.path),
                        code="held_out_reuse",
                        message=f"this candidate fingerprint was already certified on the same held-out manifest: {listing}",
                        fix='pass --rerun-reason "..." to certify again; the reason is recorded in the ledger and printed in the report',
                    )
                ],
            )

    def start(self, *, candidate: str, fingerprint: str, dataset_sha256: str, manifest_sha256: str, report_id: str, rerun_reason: str | None) -> LedgerEntry:
        entry = LedgerEntry(
            entry_id=f"ldg-{uuid.uuid4().hex[:16]}",
            event="started",
            who=current_user(),
            when=datetime.now(UTC),
            candidate=candidate,
            candidate_fingerprint=fingerprint,
            dataset_sha256=dataset_sha256,
            held_out_manifest_sha256=manifest_sha256,
            report_id=report_id,
            rerun_reason=rerun_reason,
        )
        self._append(entry)
        return entry

    def finish(self, started: LedgerEntry, *, outcome: str, lock_sha256: str | None, held_out_used: bool = True) -> LedgerEntry:
        entry = started.model_copy(update={"entry_id": f"ldg-{uuid.uuid4().hex[:16]}", "event": "finished", "opens": started.entry_id, "when": datetime.now(UTC), "outcome": outcome, "lock_sha256": lock_sha256, "held_out_used": held_out_used})
        self._append(entry)
        return entry

    def _append(self, entry: LedgerEntry) -> None:
        with AppendOnlyLog(self.path) as log:
            log.append(entry.model_dump(mode="json"))

    def open_entry(self, entry_id: str) -> LedgerEntry | None:
        """The ``started`` entry with this id, if it has not been finished."""
        entries = self.entries()
        finished = {e.opens for e in entries if e.event == "finished"}
        return next((e for e in entries if e.entry_id == entry_id and e.event == "started" and e.entry_id not in finished), None)


@dataclass(frozen=True)
class HeldOutAccess:
    """Permission to run a candidate on held-out data, tied to an open ledger entry."""

    ledger_path: Path
    entry: LedgerEntry

    @classmethod
    def grant(cls, ledger_path: str | Path, entry_id: str, fingerprint: str) -> HeldOutAccess:
        """Check the ledger for an open ``started`` entry of this candidate and return access."""
        ledger = HeldOutLedger(ledger_path)
        entry = ledger.open_entry(entry_id)
        if entry is None or entry.candidate_fingerprint != fingerprint:
            raise WorkbenchError(
                "held-out access refused",
                [Problem(location=str(ledger_path), code="held_out_refused", message="no open certification in the held-out ledger for this candidate", fix="the held-out partition is used only by `workbench certify`, which records the use first")],
            )
        return cls(Path(ledger_path), entry)


def refuse_held_out(partition: str, where: str) -> None:
    """Raise for the held-out partition: development and calibration never see it."""
    if partition == "held_out":
        raise WorkbenchError(
            "held-out refused",
            [Problem(location=where, code="held_out_refused", message="the held-out partition is not available here", fix="use development (tuning) or calibration (selection); held-out data is used once, by `workbench certify`")],
        )
