"""Freezing an approved input: one mechanism for every kind."""

from __future__ import annotations

from datetime import datetime

from ..errors import WorkbenchError
from ._approvers import load_approvers
from ._lineage import check_lineage
from ._log import Release, append_release, read_release_log
from ._snapshot import Snapshot


def freeze(
    snapshot: Snapshot, *, approver: str, note: str | None = None, now: datetime | None = None
) -> tuple[Release, bool]:
    """Freeze ``snapshot``; return ``(release, created)``.

    Refuses an unlisted approver and any lineage problem, every problem at once. Content already
    frozen under the same version writes nothing (``created`` False).
    """
    approvers = load_approvers(snapshot.folder)
    problems = approvers.problems(approver, "--approver", "the approver")
    problems += check_lineage(snapshot, read_release_log(snapshot.folder), approvers)
    if problems:
        raise WorkbenchError(f"cannot freeze {snapshot.label}", problems)
    return append_release(snapshot, approver=approver, note=note, now=now)
