"""The git questions the sentinel lane asks: what changed since a ref, and what a file was then."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import WorkbenchError, refusal


@dataclass(frozen=True)
class Changes:
    """The files changed since a ref: ``git diff --name-only REF`` plus untracked files."""

    top: Path
    """The repository's top-level directory."""
    ref: str
    """The ref as given."""
    commit: str
    """The commit compared with: the merge base of the ref and ``HEAD`` (the branch point)."""
    files: tuple[str, ...]
    """Changed paths relative to ``top`` (committed, staged, unstaged, untracked), sorted."""

    def absolute(self) -> set[Path]:
        return {(self.top / f).resolve() for f in self.files}


def _git(top: Path | str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(top), *args], capture_output=True, text=True, check=False
    )


def _refuse(location: str, code: str, message: str, fix: str) -> WorkbenchError:
    return refusal("cannot find what changed", location, code, message, fix)


def changed_since(root: str | Path, ref: str) -> Changes:
    """Every file changed since the merge base of ``ref`` and ``HEAD``."""
    try:
        top_run = _git(root, "rev-parse", "--show-toplevel")
    except FileNotFoundError:
        fix = "install git; the sentinel lane asks git what changed"
        raise _refuse("git", "git_missing", "git is not installed", fix) from None
    if top_run.returncode != 0:
        message = f"{root} is not inside a git repository ({top_run.stderr.strip()[:160]})"
        fix = "run the lane in a clone of the project"
        raise _refuse(str(root), "not_a_git_repository", message, fix)
    top = Path(top_run.stdout.strip()).resolve()
    if ref.startswith("-"):
        fix = "give a branch, tag or commit, e.g. origin/main"
        raise _refuse("--since", "git_ref_unknown", f"{ref!r} is not a ref", fix)
    resolved = _git(top, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if resolved.returncode != 0:
        message = f"{ref!r} is not a commit of this repository"
        fix = "fetch it first (a shallow CI checkout lacks history: fetch-depth 0), or give another"
        raise _refuse("--since", "git_ref_unknown", message, f"{fix} ref")
    commit = resolved.stdout.strip()
    # From the branch point: what the base branch changed since is not this change.
    base = _git(top, "merge-base", commit, "HEAD")
    if base.returncode == 0 and base.stdout.strip():
        commit = base.stdout.strip()
    diff = _git(top, "diff", "--name-only", "--no-renames", commit, "--")
    if diff.returncode != 0:
        message = f"git diff failed ({diff.stderr.strip()[:160]})"
        raise _refuse("--since", "git_diff_failed", message, "check the ref and the repository")
    untracked = _git(top, "ls-files", "--others", "--exclude-standard")
    lines = (diff.stdout + "\n" + untracked.stdout).splitlines()
    files = {line.strip() for line in lines if line.strip()}
    return Changes(top=top, ref=ref, commit=commit, files=tuple(sorted(files)))


def show_at(changes: Changes, path: Path) -> bytes | None:
    """The content of ``path`` at the ref, or None when it did not exist there."""
    try:
        rel = path.resolve().relative_to(changes.top).as_posix()
    except ValueError:
        return None
    command = ["git", "-C", str(changes.top), "show", f"{changes.commit}:{rel}"]
    run = subprocess.run(command, capture_output=True, check=False)  # bytes, as stored
    return run.stdout if run.returncode == 0 else None
