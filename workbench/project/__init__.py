"""A workbench project: where its root is, and ``workbench init`` to start one.

The root is ``$WORKBENCH_PROJECT_ROOT``, else the nearest folder from the working directory
upwards holding ``workbench.yaml``: the held-out ledger and the approver list are the root's,
and notebooks resolve paths against it, so they run the same from the root and from
``notebooks/``. :func:`init_project` writes a new project's commented, fail-closed templates;
:func:`project_inputs` reads the gold dataset, policy and candidates ``workbench.yaml`` names
for the phase notebooks, and :func:`draft_policy` drafts the policy from an imported rubric.
"""

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
