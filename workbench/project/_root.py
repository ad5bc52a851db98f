"""Where the project is: one root for the held-out ledger, the approver list and notebook paths.

It is found from the working directory (or ``$WORKBENCH_PROJECT_ROOT``), never from an input, so
a ``workbench.yaml`` dropped into a data directory does not move it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from ..errors import refusal

PROJECT_ROOT_ENV = "WORKBENCH_PROJECT_ROOT"
PROJECT_CONFIG = "workbench.yaml"


def project_root(start: str | Path | None = None) -> Path:
    """``$WORKBENCH_PROJECT_ROOT``, else the nearest ancestor of ``start`` (default: the working
    directory) holding ``workbench.yaml``; ``project_root_missing`` when there is none."""
    explicit = os.environ.get(PROJECT_ROOT_ENV)
    if explicit:
        root = Path(explicit).expanduser().resolve()
        if not root.is_dir():
            raise refusal(
                "no project root",
                PROJECT_ROOT_ENV,
                "project_root_missing",
                f"{PROJECT_ROOT_ENV}={explicit} is not a directory",
                f"point {PROJECT_ROOT_ENV} at the project folder (the one holding"
                f" {PROJECT_CONFIG}), or unset it",
            )
        return root
    here = Path(start if start is not None else Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / PROJECT_CONFIG).is_file():
            return folder
    raise refusal(
        "no project root",
        str(here),
        "project_root_missing",
        f"neither {here} nor any folder above it holds {PROJECT_CONFIG}",
        "run from inside the project (its root or a folder below it); a new project starts with"
        f" `workbench init`; or set {PROJECT_ROOT_ENV}",
    )


def find_project_root() -> Path | None:
    """:func:`project_root` from the working directory, or None when there is no project."""
    from ..errors import WorkbenchError

    try:
        return project_root()
    except WorkbenchError:
        return None


def project_path(path: str | Path, start: str | Path | None = None) -> Path:
    """``path`` unchanged when absolute, else resolved against :func:`project_root`."""
    path = Path(path).expanduser()
    return path if path.is_absolute() else project_root(start) / path


@contextlib.contextmanager
def pinned_project_root(root: Path) -> Iterator[None]:
    """Set ``$WORKBENCH_PROJECT_ROOT`` to ``root`` for what starts meanwhile (a notebook kernel
    runs in another folder but must find the same ledger), then restore it."""
    before = os.environ.get(PROJECT_ROOT_ENV)
    os.environ[PROJECT_ROOT_ENV] = str(root)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(PROJECT_ROOT_ENV, None)
        else:
            os.environ[PROJECT_ROOT_ENV] = before
