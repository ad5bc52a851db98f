"""Approved inputs: content-addressed, frozen as releases (:func:`freeze`) through one
mechanism, with one lineage check (:func:`check_lineage`) at every use."""

from ._approvers import REVIEWERS_KEY, Approvers, current_user, load_approvers, project_config
from ._kinds import freeze, freeze_path, snapshot_of
from ._lineage import check_lineage, describe
from ._log import RELEASES_FILE, Release, read_release_log
from ._snapshot import Change, Snapshot, changed_fields, document_snapshot

__all__ = [
    "REVIEWERS_KEY",
    "RELEASES_FILE",
    "Approvers",
    "Change",
    "Release",
    "Snapshot",
    "changed_fields",
    "check_lineage",
    "current_user",
    "describe",
    "document_snapshot",
    "freeze",
    "freeze_path",
    "load_approvers",
    "project_config",
    "read_release_log",
    "snapshot_of",
]
