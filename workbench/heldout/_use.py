"""One held-out use, start to end: the one orchestration ``certify`` and ``noise`` share.

:func:`open_use` decides under the ledger lock: it closes the entries of dead processes
(``aborted``: they count), reads the ledger, asks the caller's ``prepare`` for the checks and
the ``started`` fields (a refusal raises there, before anything is written), appends the
``started`` entry and takes the liveness hold. The :class:`Use` it returns is a context
manager: an exception in its body, or a body that never called :meth:`Use.finish`, closes the
entry ``aborted`` (fail closed: the use counts); the hold is always released.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from .._io import atomic_write_json, read_json_file
from ..errors import WorkbenchError, problem
from ._ledger import HeldOutLedger, LedgerEntry, RunningHold

Prepare = Callable[[list[LedgerEntry]], dict[str, Any]]
"""Given the reconciled entries, raise for a refused use or return :meth:`HeldOutLedger.start`'s
fields."""


@dataclass
class Use:
    """An open held-out use: its ``started`` entry, the notebook's one-time token, the hold."""

    ledger: HeldOutLedger
    """The ledger the use is recorded in."""
    entry: LedgerEntry
    """The ``started`` entry."""
    token: str
    """The one-time token (the certification notebook claims the entry with it)."""
    _hold: RunningHold | None = field(repr=False)
    """The liveness lock (None once released)."""
    closed: LedgerEntry | None = None
    """The ``finished`` entry, once :meth:`finish` appended it."""

    def finish(self, **fields: Any) -> LedgerEntry:
        """Append the ``finished`` entry (:meth:`HeldOutLedger.finish`'s fields)."""
        self.closed = self.ledger.finish(self.entry, **fields)
        return self.closed

    def release(self) -> None:
        """Close the entry ``aborted`` unless it finished, and drop the hold (idempotent)."""
        try:
            if self.closed is None:
                self.ledger.abort(self.entry)  # a no-op once another reader closed it
        finally:
            self.ledger.release(self.entry.entry_id, self._hold)
            self._hold = None

    def __enter__(self) -> Use:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()


def open_use(
    ledger: HeldOutLedger,
    prepare: Prepare,
    *,
    started: Callable[[LedgerEntry], object] | None = None,
) -> Use:
    """Check and start a held-out use under the ledger lock (module doc); ``started`` runs under
    the lock too, once the entry is appended (a failure there aborts the entry)."""
    with ledger.locked():
        ledger.reconcile()
        fields = prepare(ledger.entries())
        entry, token, hold = ledger.start(**fields)
        use = Use(ledger, entry, token, hold)
        try:
            if started is not None:
                started(entry)
        except BaseException:
            use.release()
            raise
    return use


def check_recorded(
    ledger: HeldOutLedger, entries: list[LedgerEntry], recorded: Iterable[tuple[str, str]]
) -> None:
    """Refuse a ledger that lacks an entry a use's output names (``(what, entry_id)`` pairs):
    lines were removed from it, which its chain cannot show when they were the last ones."""
    known = {e.entry_id for e in entries}
    problems = [
        problem(
            str(ledger.path),
            "ledger_truncated",
            f"{what} was recorded as ledger entry {entry_id}, which the ledger no longer has:"
            " lines were removed",
            "restore the held-out ledger from version control or a backup; it is append-only"
            " evidence",
        )
        for what, entry_id in recorded
        if entry_id not in known
    ]
    if problems:
        raise WorkbenchError(f"the held-out ledger {ledger.path} is incomplete", problems)


MARKER_SCHEMA_VERSION = 1


def write_marker(path: Path, kind: str, entry: LedgerEntry, ledger_path: Path) -> None:
    """Tie the directory of ``path`` (a report, a run) to its ``started`` entry: what a resume,
    a listing and :func:`check_recorded` check it against."""
    atomic_write_json(
        path,
        {
            "schema_version": MARKER_SCHEMA_VERSION,
            "kind": kind,
            "report_id": entry.report_id,
            "entry_id": entry.entry_id,
            "entry_sha256": entry.entry_sha256,
            "ledger_path": str(ledger_path),
            "gold": entry.gold,
            "started_at": entry.when.isoformat(),
        },
    )


def read_marker(path: Path) -> dict[str, Any] | None:
    """A marker :func:`write_marker` wrote (None when absent, unreadable or malformed)."""
    try:
        data = read_json_file(path)
    except (OSError, ValueError, RecursionError):
        return None
    return (
        data
        if isinstance(data, dict)
        and isinstance(data.get("entry_id"), str)
        and isinstance(data.get("ledger_path"), str)
        else None
    )
