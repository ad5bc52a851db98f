"""A workbench project: where its root is, and ``workbench init`` to start one.

The root is ``$WORKBENCH_PROJECT_ROOT``, else the nearest folder from the working directory
upwards holding ``workbench.yaml``: the held-out ledger and the approver list are the root's,
and notebooks resolve paths against it, so they run the same from the root and from
``notebooks/``. :func:`init_project` writes a new project's commented, fail-closed templates.
"""

from ._init import TEMPLATES, init_project
from ._root import (
    PROJECT_CONFIG,
    PROJECT_ROOT_ENV,
    find_project_root,
    pinned_project_root,
    project_path,
    project_root,
)

__all__ = [
    "PROJECT_CONFIG",
    "PROJECT_ROOT_ENV",
    "TEMPLATES",
    "find_project_root",
    "init_project",
    "pinned_project_root",
    "project_path",
    "project_root",
]
