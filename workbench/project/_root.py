"""Where the project is, so notebooks resolve paths the same way from any working directory.

A notebook's parameters name project files relative to the **project root** (``data/demo``,
``runs/...``), never relative to the working directory. Jupyter starts a kernel in the
notebook's folder, papermill in the folder it was called from; :func:`project_path` makes
both mean the same file.

The project root is ``$WORKBENCH_PROJECT_ROOT`` when set, else the nearest folder, from the
working directory upwards, that holds both a ``data/`` and a ``notebooks/`` folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import refusal

PROJECT_ROOT_ENV = "WORKBENCH_PROJECT_ROOT"
"""Environment variable that names the project root explicitly."""

PROJECT_MARKERS: tuple[str, ...] = ("data", "notebooks")
"""Folders a project root holds."""


def project_root(start: str | Path | None = None) -> Path:
    """The project root.

    ``$WORKBENCH_PROJECT_ROOT``, else the nearest ancestor of ``start`` (default: the working
    directory) holding ``data/`` and ``notebooks/``.

    Raises :class:`~workbench.errors.WorkbenchError` when there is none.
    """
    explicit = os.environ.get(PROJECT_ROOT_ENV)
    if explicit:
        root = Path(explicit).expanduser().resolve()
        if not root.is_dir():
            raise refusal(
                "no project root",
                PROJECT_ROOT_ENV,
                "project_root_missing",
                f"{PROJECT_ROOT_ENV}={explicit} is not a directory",
                f"point {PROJECT_ROOT_ENV} at the project folder (the one holding data/ and"
                " notebooks/), or unset it",
            )
        return root
    here = Path(start if start is not None else Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if all((folder / marker).is_dir() for marker in PROJECT_MARKERS):
            return folder
    raise refusal(
        "no project root",
        str(here),
        "project_root_missing",
        f"neither {here} nor any folder above it holds both"
        f" {' and '.join(m + '/' for m in PROJECT_MARKERS)}",
        f"run from inside the project (its root or notebooks/), or set {PROJECT_ROOT_ENV}",
    )


def project_path(path: str | Path, start: str | Path | None = None) -> Path:
    """``path`` as an absolute path.

    Unchanged when absolute, else resolved against :func:`project_root`.
    """
    path = Path(path).expanduser()
    return path if path.is_absolute() else project_root(start) / path
