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
from types import TracebackType
from typing import Any

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
