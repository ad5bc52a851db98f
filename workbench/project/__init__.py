"""A workbench project: where its root is, and ``workbench init`` to start one.

The root is the folder holding ``data/`` and ``notebooks/`` (``$WORKBENCH_PROJECT_ROOT``
overrides); notebooks resolve paths against it, so they run the same from the root and from
``notebooks/``. :func:`init_project` writes a new project's commented, fail-closed templates.
"""

from ._init import TEMPLATES, init_project
from ._root import PROJECT_ROOT_ENV, project_path, project_root

__all__ = [
    "PROJECT_ROOT_ENV",
    "TEMPLATES",
    "init_project",
    "project_path",
    "project_root",
]
