"""The held-out ledger: every use of the held-out partition, append-only and hash-chained.

``certify`` writes ``started`` before the first held-out call and ``finished`` after; an entry
whose process died is closed ``aborted`` by the next reader. The re-use check and the
``started`` entry are decided under one file lock; a running certification holds a liveness
lock; the notebook runs once per one-time token. Running on held-out data needs a matching
:class:`HeldOutAccess`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from filelock import FileLock, Timeout
from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from .._chain import ChainedLog, ChainTerms, content_sha256
from .._docs import add_field_docs
from .._io import sha256_json, sha256_text
from .._record import Record
from ..approval import current_user
from ..errors import Problem, WorkbenchError, problem, refusal
from ..gold import GoldCase
from ._items import ContentUses, content_uses, read_keys, store_keys

LEDGER_SCHEMA_VERSION = 3
LOCK_TIMEOUT_S = 120.0
"""How long a command waits for another one's check-then-start before giving up (exit 2)."""

Event = Literal["started", "finished", "aborted"]
Kind = Literal["certification", "migration", "review_reevaluation", "noise"]
"""What a ledger entry records: one candidate, a migration (candidate and baseline under one
entry), a re-evaluation of a locked report (nothing judged), or a noise run that scored a pair
suite's held-out pairs (``gold`` is the suite file)."""
_OMITTED_WHEN_DEFAULT: dict[str, object] = {
    "kind": "certification",
    "baseline": None,
    "baseline_fingerprint": None,
    "resumes": None,
    "baseline_run_records_sha256": None,
    "held_out_items_sha256": None,
    "held_out_items": None,
    "held_out_prior_uses": None,
    "held_out_overlap": None,
}
"""Fields added after format 2, omitted when unused so old entries hash as before."""
FIX_RESTORE = (
    "the ledger is append-only evidence: restore it from version control or a backup; never edit or"
    " delete its lines"
)


def held_out_manifest_sha256(dataset_sha256: str, cases: Iterable[GoldCase]) -> str:
    """Hash of the dataset and every held-out case id and response hash."""
    return sha256_json(
        {
            "dataset_sha256": dataset_sha256,
            "partition": "held_out",
            "cases": [{"case_id": c.case_id, "response_hash": c.response_hash} for c in cases],
        }
    )


def token_sha256(token: str) -> str:
    """The hash of a certification token, as the ledger records it."""
    return sha256_text(token)


class PreviousReport(BaseModel):
    """The report before this one for the same candidate version in the same reports root."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=add_field_docs)

    report_id: str
    """``<candidate>/<version>/<n>`` of the previous report."""
    lock_sha256: str | None = None
    """Its ``lock_sha256`` (None when it never got a lock: aborted or still running)."""
    status: Literal["locked", "aborted", "running"] = "locked"
    """``locked``, ``aborted`` or ``running``."""


class LedgerEntry(Record):
    """One line of the held-out ledger."""

    schema_version: int = LEDGER_SCHEMA_VERSION
    """Ledger line format version."""
    entry_id: str
    """Unique id; a ``finished`` or ``aborted`` entry names its ``started`` entry in ``opens``."""
    event: Event
    """``started``, ``finished`` or ``aborted``."""
    opens: str | None = None
    """For ``finished`` and ``aborted``: the ``started`` entry it closes."""
    who: str
    """The user who certified (for ``aborted``: who noticed)."""
    when: datetime
    """UTC time of the event (for ``started``: the gate's "now")."""
    candidate: str
    """``name@version``."""
    candidate_fingerprint: str
    """The certified candidate's fingerprint."""
    dataset_sha256: str
    """The gold dataset's hash."""
    held_out_manifest_sha256: str
    """Hash of the dataset hash and every held-out case id and response hash."""
    report_id: str
    """``<name>/<version>/<n>`` of the report."""
    reports_root: str
    """Absolute path of the reports root the report was written under."""
    gold: str
    """Absolute path of the gold dataset directory certified on."""
    rerun_reason: str | None = None
    """Why the same candidate was certified again on the same held-out manifest."""
    budget_usd: float | None = None
    """The spend limit the held-out run ran under."""
    previous_report: PreviousReport | None = None
    """The previous report of this candidate version in the reports root."""
    token_sha256: str | None = None
    """For ``started``: sha256 of the one-time token ``certify`` gave the notebook."""
    outcome: str | None = None
    """For ``finished``: the gate outcome; ``aborted`` for an aborted entry."""
    lock_sha256: str | None = None
    """For ``finished``: the report's lock hash."""
    held_out_used: bool | None = None
    """For ``finished``: whether any held-out case was judged."""
    run_id: str | None = None
    """For ``finished``: the held-out run's id (None when no held-out run was made)."""
    run_records_sha256: str | None = None
    """For ``finished``: sha256 of the held-out run's ``results.jsonl``."""
    kind: Kind = "certification"
    """``certification``, ``migration``, ``review_reevaluation`` or ``noise``; omitted when
    ``certification``."""
    baseline: str | None = None
    """For ``migration``: ``name@version`` of the baseline."""
    baseline_fingerprint: str | None = None
    """For ``migration``: the baseline's fingerprint."""
    resumes: str | None = None
    """For ``review_reevaluation``: the report id whose run records are reused."""
    baseline_run_records_sha256: str | None = None
    """For a ``finished`` migration: sha256 of the baseline's held-out ``results.jsonl``."""
    held_out_items_sha256: str | None = None
    """sha256 of the sorted item keys of the held-out cases judged (the sidecar's name); None
    before item keys were recorded."""
    held_out_items: int | None = None
    """How many held-out items the sidecar holds."""
    held_out_prior_uses: int | None = None
    """How many earlier recorded uses judged any of these items."""
    held_out_overlap: float | None = None
    """The share (0 to 1) of these held-out items an earlier use judged."""
    previous_sha256: str | None = None
    """``entry_sha256`` of the line before this one (None for the first line): the chain."""
    entry_sha256: str = ""
    """sha256 over the canonical JSON of this entry without this field."""

    @model_serializer(mode="wrap")
    def _omit_unused_fields(self, handler: SerializerFunctionWrapHandler) -> object:
        data = handler(self)
        if isinstance(data, dict):
            for name, default in _OMITTED_WHEN_DEFAULT.items():
                if name in data and data[name] == default:
                    del data[name]
        return data

    def content_sha256(self) -> str:
        return content_sha256(self)

    @property
    def uses_held_out(self) -> bool:
        """Whether the entry's kind judges held-out cases (a re-evaluation never does)."""
        return self.kind != "review_reevaluation"

    def covers(self, fingerprint: str) -> bool:
        """Whether the entry judges held-out cases with this fingerprint (candidate or baseline)."""
        return self.uses_held_out and fingerprint in (
            self.candidate_fingerprint,
            self.baseline_fingerprint,
        )


@dataclass(frozen=True)
class LedgerRead:
    """Everything read from a ledger file: the entries that parsed, and every problem found."""

    entries: list[LedgerEntry]
    problems: list[Problem]

    @property
    def ok(self) -> bool:
        return not self.problems


class RunningHold:
    """The liveness lock a running certification holds."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = FileLock(str(path))
        self._lock.acquire(timeout=0)

    def release(self) -> None:
        if self._lock.is_locked:
            self._lock.release()
        with contextlib.suppress(OSError):
            self.path.unlink()


_TERMS = ChainTerms(
    invalid="ledger_invalid",
    broken="ledger_chain_broken",
    unreadable="ledger_unreadable",
    noun="ledger entry",
    fix=FIX_RESTORE,
    busy="ledger_busy",
    busy_title="held-out ledger busy",
    busy_subject="the ledger lock",
    busy_fix="wait for the other certification to start, then retry",
    drop_torn_tail=True,
)


class HeldOutLedger:
    """The append-only, hash-chained ledger of a project's held-out uses."""

    def __init__(self, path: str | Path) -> None:
        self.log = ChainedLog(
            path,
            LedgerEntry,
            _TERMS,
            schema_version=LEDGER_SCHEMA_VERSION,
            lock_timeout_s=LOCK_TIMEOUT_S,
        )
        self.path = self.log.path
        self.lock_path = self.log.lock_path
        self.running_dir = self.path.with_name(f".{self.path.name}.running")

    # -- reading ---------------------------------------------------------------------------

    def read(self) -> LedgerRead:
        """Parse every line and check the chain; never raises for bad content."""
        if not self.path.exists():
            return LedgerRead([], [])
        if not self.path.is_file():
            message = "the ledger path is not a file"
            return LedgerRead([], [problem(str(self.path), "ledger_invalid", message, FIX_RESTORE)])
        rows, unreadable = self.log.rows()
        if unreadable:
            return LedgerRead([], unreadable)
        seen: dict[str, LedgerEntry] = {}

        def closes_a_start(entry: LedgerEntry, number: int, where: str) -> list[Problem]:
            opened = seen.get(entry.opens) if entry.opens is not None else None
            seen[entry.entry_id] = entry
            if entry.event == "started" or (opened is not None and opened.event == "started"):
                return []
            message = (
                f"chain broken at line {number}: {entry.event} entry closes {entry.opens!r},"
                " which is no started entry before it"
            )
            return [problem(where, _TERMS.broken, message, FIX_RESTORE)]

        entries, problems = self.log.verify(rows, closes_a_start)
        return LedgerRead(entries, problems)

    def entries(self) -> list[LedgerEntry]:
        """Every entry; raise :class:`WorkbenchError` on an unreadable line or a broken chain."""
        result = self.read()
        if result.problems:
            raise WorkbenchError(
                f"the held-out ledger {self.path} is damaged: it cannot show which certifications"
                " used the held-out partition",
                result.problems,
            )
        return result.entries

    @staticmethod
    def _closing(entries: list[LedgerEntry]) -> dict[str, LedgerEntry]:
        return {e.opens: e for e in entries if e.event != "started" and e.opens}

    def open_entries(self, entries: list[LedgerEntry] | None = None) -> list[LedgerEntry]:
        entries = self.entries() if entries is None else entries
        closed = self._closing(entries)
        return [e for e in entries if e.event == "started" and e.entry_id not in closed]

    def status_of(self, entry_id: str, entries: list[LedgerEntry] | None = None) -> str | None:
        """``open``, ``finished`` or ``aborted`` for a started entry; None when absent."""
        entries = self.entries() if entries is None else entries
        if not any(e.entry_id == entry_id and e.event == "started" for e in entries):
            return None
        closing = self._closing(entries).get(entry_id)
        return "open" if closing is None else closing.event

    def previous_uses(
        self,
        fingerprint: str,
        manifest_sha256: str,
        entries: list[LedgerEntry] | None = None,
        *,
        exclude: str | None = None,
    ) -> list[LedgerEntry]:
        """Earlier uses of held-out data by this fingerprint on this manifest (open, aborted and
        crashed ones count; a migration counts for both judges; a re-evaluation never)."""
        entries = self.entries() if entries is None else entries
        unused = {e.opens for e in entries if e.event == "finished" and e.held_out_used is False}
        return [
            e
            for e in entries
            if e.event == "started"
            and e.entry_id != exclude
            and e.entry_id not in unused
            and e.covers(fingerprint)
            and e.held_out_manifest_sha256 == manifest_sha256
        ]

    def content_uses(
        self,
        keys: frozenset[str],
        manifest_sha256: str,
        entries: list[LedgerEntry] | None = None,
        *,
        exclude: str | None = None,
    ) -> ContentUses:
        """Every earlier use that judged any of the held-out items ``keys``."""
        entries = self.entries() if entries is None else entries
        return content_uses(self.path, keys, manifest_sha256, entries, exclude=exclude)

    def uses_before(self, entry: LedgerEntry) -> ContentUses:
        """The uses before ``entry`` that judged any of its held-out items."""
        entries = self.entries()
        index = next((i for i, e in enumerate(entries) if e.entry_id == entry.entry_id), None)
        before = entries if index is None else entries[:index]
        if entry.held_out_items_sha256 is None:
            earlier = self.previous_uses(
                entry.candidate_fingerprint, entry.held_out_manifest_sha256, before
            )
            return ContentUses(earlier)
        keys = read_keys(self.path, entry.held_out_items_sha256)
        if keys is None:
            raise refusal(
                "the held-out ledger cannot show which held-out content was used",
                str(self.path),
                "ledger_items_missing",
                f"the held-out items of ledger entry {entry.entry_id} are missing",
                FIX_RESTORE,
            )
        return self.content_uses(keys, entry.held_out_manifest_sha256, before)

    def check_rerun(
        self,
        keys: frozenset[str],
        manifest_sha256: str,
        rerun_reason: str | None,
        entries: list[LedgerEntry] | None = None,
    ) -> ContentUses:
        """Refuse, without a reason, a certification whose held-out content an earlier use judged;
        return the earlier uses."""
        uses = self.content_uses(keys, manifest_sha256, entries)
        if uses.entries and not (rerun_reason and rerun_reason.strip()):
            raise WorkbenchError("refusing to certify again", [_reuse_problem(self.path, uses)])
        return uses

    # -- liveness --------------------------------------------------------------------------

    def running_lock_path(self, entry_id: str) -> Path:
        return self.running_dir / f"{entry_id}.lock"

    def is_running(self, entry_id: str) -> bool:
        """Whether a live process holds the certification's liveness lock."""
        path = self.running_lock_path(entry_id)
        if not path.exists():
            return False
        probe = FileLock(str(path))
        try:
            probe.acquire(timeout=0)
        except Timeout:
            return True
        probe.release()
        return False

    def claim_token(self, entry: LedgerEntry) -> None:
        """Use the entry's token once: a second notebook run for the same entry is refused."""
        self.running_dir.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(
                self.running_dir / f"{entry.entry_id}.claimed",
                os.O_CREAT | os.O_EXCL | os.O_WRONLY,
                0o644,
            )
        except FileExistsError:
            raise refusal(
                "held-out access refused",
                str(self.path),
                "certification_token_used",
                f"the certification token of ledger entry {entry.entry_id} was already used",
                "a certification notebook runs once per `workbench certify`; run `workbench"
                " certify` again",
            ) from None
        os.close(fd)

    # -- writing ---------------------------------------------------------------------------

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """Hold the ledger's file lock: check-then-start and every append happen under it."""
        return self.log.locked()

    def reconcile(self) -> list[LedgerEntry]:
        """Mark every open certification whose process is gone ``aborted``; return those entries.
        Raises on a damaged ledger."""
        with self.locked():
            entries = self.entries()
            aborted = []
            for entry in self.open_entries(entries):
                if not self.is_running(entry.entry_id):
                    aborted.append(self._close(entry, "aborted", who=current_user()))
                    self._cleanup(entry.entry_id)
            return aborted

    def start(
        self,
        *,
        candidate: str,
        fingerprint: str,
        dataset_sha256: str,
        manifest_sha256: str,
        report_id: str,
        reports_root: str | Path,
        gold: str | Path,
        rerun_reason: str | None,
        budget_usd: float | None = None,
        previous_report: PreviousReport | None = None,
        kind: Kind = "certification",
        baseline: str | None = None,
        baseline_fingerprint: str | None = None,
        resumes: str | None = None,
        held_out_keys: frozenset[str] | None = None,
        prior: ContentUses | None = None,
    ) -> tuple[LedgerEntry, str, RunningHold]:
        """Append a ``started`` entry (under :meth:`locked`); return it, its one-time token and the
        liveness hold. ``held_out_keys`` go to the sidecar first."""
        items: dict[str, object] = {}
        if held_out_keys is not None:
            digest, count = store_keys(self.path, held_out_keys)
            prior = prior if prior is not None else ContentUses(total=count)
            items = {
                "held_out_items_sha256": digest,
                "held_out_items": count,
                "held_out_prior_uses": prior.count,
                "held_out_overlap": round(prior.overlap, 6),
            }
        entry_id = _new_id()
        token = secrets.token_hex(32)
        self.running_dir.mkdir(parents=True, exist_ok=True)
        hold = RunningHold(self.running_lock_path(entry_id))
        try:
            entry = self._append(
                LedgerEntry(
                    entry_id=entry_id,
                    event="started",
                    who=current_user(),
                    when=datetime.now(UTC),
                    candidate=candidate,
                    candidate_fingerprint=fingerprint,
                    dataset_sha256=dataset_sha256,
                    held_out_manifest_sha256=manifest_sha256,
                    report_id=report_id,
                    reports_root=str(Path(reports_root).resolve()),
                    gold=str(Path(gold).resolve()),
                    rerun_reason=rerun_reason,
                    budget_usd=budget_usd,
                    previous_report=previous_report,
                    token_sha256=token_sha256(token),
                    kind=kind,
                    baseline=baseline,
                    baseline_fingerprint=baseline_fingerprint,
                    resumes=resumes,
                    **items,
                )
            )
        except BaseException:
            hold.release()
            raise
        return entry, token, hold

    def finish(
        self,
        started: LedgerEntry,
        *,
        outcome: str,
        lock_sha256: str | None,
        held_out_used: bool = True,
        run_id: str | None = None,
        run_records_sha256: str | None = None,
        baseline_run_records_sha256: str | None = None,
    ) -> LedgerEntry:
        with self.locked():
            return self._close(
                started,
                "finished",
                outcome=outcome,
                lock_sha256=lock_sha256,
                held_out_used=held_out_used,
                run_id=run_id,
                run_records_sha256=run_records_sha256,
                baseline_run_records_sha256=baseline_run_records_sha256,
            )

    def abort(self, started: LedgerEntry) -> LedgerEntry:
        """Close an entry whose certification failed in this process (counts as a use)."""
        with self.locked():
            if self.status_of(started.entry_id) != "open":
                return started
            return self._close(started, "aborted")

    def _close(self, started: LedgerEntry, event: Event, **update: object) -> LedgerEntry:
        """Append the entry closing ``started``; caller holds :meth:`locked`."""
        if event == "aborted":
            update = {"outcome": "aborted", "held_out_used": started.uses_held_out, **update}
        fields: dict[str, object] = {"entry_id": _new_id(), "event": event}
        fields |= {"opens": started.entry_id, "when": datetime.now(UTC), "token_sha256": None}
        return self._append(started.model_copy(update=fields | update))

    def _cleanup(self, entry_id: str) -> None:
        for name in (f"{entry_id}.lock", f"{entry_id}.claimed"):
            with contextlib.suppress(OSError):
                (self.running_dir / name).unlink()

    def release(self, entry_id: str, hold: RunningHold | None) -> None:
        """Drop the liveness lock and the token claim of a closed entry."""
        if hold is not None:
            hold.release()
        self._cleanup(entry_id)

    def _append(self, entry: LedgerEntry) -> LedgerEntry:
        """Chain ``entry`` to the last line and append it. Caller holds :meth:`locked`."""
        entries = self.entries()
        return self.log.append(entry, entries[-1].entry_sha256 if entries else None)

    # -- lookups ---------------------------------------------------------------------------

    def open_entry(self, entry_id: str) -> LedgerEntry | None:
        """The ``started`` entry with this id, if it has not been closed."""
        return next((e for e in self.open_entries() if e.entry_id == entry_id), None)

    def open_entry_for_token(self, token: str) -> LedgerEntry | None:
        """The open ``started`` entry whose token hash matches ``token``."""
        digest = token_sha256(token)
        return next(
            (
                e
                for e in self.open_entries()
                if e.token_sha256 is not None and secrets.compare_digest(e.token_sha256, digest)
            ),
            None,
        )


def _new_id() -> str:
    return f"ldg-{uuid.uuid4().hex[:16]}"


def _reuse_problem(path: Path, uses: ContentUses) -> Problem:
    return problem(
        str(path),
        "held_out_reuse",
        f"{uses.describe()}: {uses.seen} of these {uses.total} held-out item(s) were already"
        f" judged (or are being judged) by {uses.listing()}",
        'pass --rerun-reason "..." to certify again; the reason is recorded in the ledger and'
        " printed in the report",
    )


_CERTIFY_FIRST = (
    "the held-out partition is used only by `workbench certify`, which records the use first"
)


@dataclass(frozen=True)
class HeldOutAccess:
    """Permission to run a candidate on held-out data, tied to an open ledger entry."""

    ledger_path: Path
    entry: LedgerEntry

    def covers(self, fingerprint: str) -> bool:
        """Whether this access lets a judge with ``fingerprint`` run on held-out data."""
        return self.entry.covers(fingerprint)

    def __post_init__(self) -> None:
        # Constructed by hand, access still needs the dataset's own ledger to hold the open entry.
        from ._location import ledger_path_for

        canonical = ledger_path_for(self.entry.gold)
        ledger = HeldOutLedger(canonical)
        if (
            Path(self.ledger_path).resolve() != canonical
            or not self.entry.uses_held_out
            or ledger.status_of(self.entry.entry_id) != "open"
            or self.entry not in ledger.entries()
        ):
            raise refusal(
                "held-out access refused",
                str(self.ledger_path),
                "held_out_refused",
                "the access does not name an open certification in the dataset's own held-out"
                " ledger",
                _CERTIFY_FIRST,
            )

    @classmethod
    def grant(cls, ledger_path: str | Path, entry_id: str, fingerprint: str) -> HeldOutAccess:
        """Access for an open ``started`` entry of this candidate (or baseline); none for a
        re-evaluation."""
        ledger = HeldOutLedger(ledger_path)
        entry = ledger.open_entry(entry_id)
        if entry is None or not entry.covers(fingerprint):
            raise refusal(
                "held-out access refused",
                str(ledger_path),
                "held_out_refused",
                "no open certification in the held-out ledger for this candidate",
                _CERTIFY_FIRST,
            )
        return cls(Path(ledger_path), entry)


def refuse_held_out(partition: str, where: str) -> None:
    """Raise for the held-out partition: development and calibration never see it."""
    if partition == "held_out":
        raise refusal(
            "held-out refused",
            where,
            "held_out_refused",
            "the held-out partition is not available here",
            "use development (tuning) or calibration (selection); held-out data is used once, by"
            " `workbench certify`",
        )
