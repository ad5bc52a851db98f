"""``workbench init DIR``: a new project's templates (:data:`TEMPLATES`), every one commented and
fail-closed: what a person must decide is left blank where a loader refuses it, so nothing runs
on an unwritten template. Existing files are never overwritten.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import WorkbenchError, problem, refusal

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")

TEMPLATES: tuple[tuple[str, str], ...] = (
    ("rubric.yaml", "data/{name}/rubric.yaml"),
    ("card.md", "data/{name}/card.md"),
    ("mapping.yaml", "data/{name}/mapping.yaml"),
    ("policy.yaml", "data/policies/{name}@1.yaml"),
    ("candidate.yaml", "data/candidates/{name}-judge@1.yaml"),
    ("prompt.md", "data/candidates/prompts/{name}-judge@1.md"),
    ("controls.yaml", "data/controls/{name}-controls@1.yaml"),
    ("workbench.yaml", "workbench.yaml"),
    ("NEXT_STEPS.md", "NEXT_STEPS.md"),
)
"""Template file (in ``workbench/project/templates``) -> path it is written to, relative to DIR."""


@dataclass(frozen=True)
class InitResult:
    """What :func:`init_project` wrote."""

    root: Path
    name: str
    files: tuple[Path, ...]


def notebooks_dir() -> str:
    """The workbench checkout's ``notebooks/`` (absolute), or a placeholder."""
    candidate = Path(__file__).resolve().parents[2] / "notebooks"
    return (
        str(candidate)
        if (candidate / "01_develop.ipynb").exists()
        else "<path to your judge-workbench checkout>/notebooks"
    )


def render(template: str, *, name: str, root: Path, today: dt.date | None = None) -> str:
    """The text of one template for project ``name`` at ``root``."""
    text = resources.files(__package__).joinpath("templates", template).read_text(encoding="utf-8")
    replacements = {
        "__NAME__": name,
        "__DIR__": str(root.resolve()),
        "__NOTEBOOKS__": notebooks_dir(),
        "__DATE__": (today or dt.date.today()).isoformat(),
    }
    for token, value in replacements.items():
        text = text.replace(token, value)
    return text


def _refuse_target(root: Path, chosen: str) -> None:
    problems = []
    if not NAME_PATTERN.match(chosen):
        message = (
            f"{chosen!r} cannot name a dataset, policy and candidate (letters, digits, '.', '_' and"
            " '-', starting with a letter or digit)"
        )
        fix = "pass --name with such a name, e.g. --name support-faq"
        problems.append(problem(str(root), "init_name_invalid", message, fix))
    if root.exists() and not root.is_dir():
        message = "the path is a file, not a directory"
        fix = "point workbench init at a new or existing directory"
        problems.append(problem(str(root), "init_not_directory", message, fix))
    if problems:
        raise WorkbenchError("cannot create the project", problems)


def init_project(directory: str | Path, *, name: str | None = None) -> InitResult:
    """Write a new project's templates into ``directory``; on any problem raise listing every
    one, and write nothing."""
    root = Path(directory)
    chosen = name if name is not None else root.resolve().name
    _refuse_target(root, chosen)
    targets = [(template, root / target.format(name=chosen)) for template, target in TEMPLATES]
    existing = [path for _, path in targets if path.exists() or path.is_symlink()]
    if existing:
        fix = "move it away, or run workbench init on another directory or with another --name"
        raise WorkbenchError(
            f"refusing to overwrite {len(existing)} existing file(s); nothing was written",
            [
                problem(str(path), "init_file_exists", "the file already exists", fix)
                for path in existing
            ],
        )
    today = dt.date.today()
    written: list[Path] = []
    try:
        for template, path in targets:
            _create(path, render(template, name=chosen, root=root, today=today))
            written.append(path)
    except OSError as exc:
        done = ", ".join(map(str, written)) or "none"
        if isinstance(exc, FileExistsError):  # created by someone else since the check
            raise refusal(
                "refusing to overwrite an existing file",
                str(exc.filename),
                "init_file_exists",
                "the file appeared while the project was being written",
                f"check who else writes into the directory; files already written: {done}",
            ) from None
        raise refusal(
            "cannot create the project",
            str(exc.filename or root),
            "init_unwritable",
            f"writing failed ({exc.strerror or exc})",
            f"point workbench init at a writable directory; files already written: {done}",
        ) from None
    return InitResult(root=root, name=chosen, files=tuple(written))


def _create(path: Path, text: str) -> None:
    """Write ``text`` to a new file ``path``, atomically, never replacing an existing file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)  # fails if path exists: never replaces
        except FileExistsError as exc:
            raise FileExistsError(exc.errno, exc.strerror, str(path)) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
