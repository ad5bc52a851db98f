"""Approved inputs: content-addressed, frozen as releases through one mechanism, one lineage
check at every use.

Gold datasets, ranking fixtures, noise pair suites and their claim review panels, and control
suites are *approved inputs*. Each kind's loader reduces its input to a :class:`Snapshot`
(item field hashes, recorded changes) and runs :func:`check_lineage` against the release log
of its folder (``releases.jsonl``) and the project's approver list (``approvers:`` in
``workbench.yaml``); ``workbench freeze PATH --approver NAME`` appends a :class:`Release`
for any of them (:func:`freeze`). The refusal codes are the same for every kind: see
:mod:`workbench.approval._lineage`.
"""

from ._approvers import (
    REVIEWERS_KEY,
    Approvers,
    current_user,
    load_approvers,
    project_config,
)
from ._freeze import freeze
from ._kinds import freeze_path, snapshot_of
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
