"""A workbench project: its root, its inputs, ``workbench init`` and the drafted policy."""

from ._config import INPUT_KEYS, ProjectInputs, declared_inputs, project_inputs
from ._draft import PolicyDraft, draft_policy
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
    "INPUT_KEYS",
    "PROJECT_CONFIG",
    "PROJECT_ROOT_ENV",
    "TEMPLATES",
    "PolicyDraft",
    "ProjectInputs",
    "declared_inputs",
    "draft_policy",
    "find_project_root",
    "init_project",
    "pinned_project_root",
    "project_inputs",
    "project_path",
    "project_root",
]
