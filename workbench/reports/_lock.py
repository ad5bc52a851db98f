"""Locked reports: every file hashed, the lock hashed over canonical JSON, files read-only, chained.

``lock.json`` records the sha256 of every file in the report directory and, by name, of the
evidence a reviewer asks about (gold dataset, held-out manifest, candidate spec, policy, run
records, executed notebook, HTML). ``lock_sha256`` is the hash of the lock's canonical JSON
without that field. ``previous_report`` links the report to the one before it for the same
candidate version, so a report cannot silently disappear from the chain.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from .. import __version__
from .._io import atomic_write_text, sha256_file, sha256_json
from ..errors import Problem

LOCK_FILE = "lock.json"
LOCK_SCHEMA_VERSION = 1


class PreviousReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    report_id: str
    lock_sha256: str


class Lock(BaseModel):
    """The content of ``lock.json``."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    schema_version: int = LOCK_SCHEMA_VERSION
    report_id: str
    """``<candidate>/<version>/<n>``."""
    created_at: datetime
    candidate: str
    """``name@version``."""
    candidate_fingerprint: str
    outcome: str
    """certified | quality_failed | evaluation_incomplete | review_required."""
    blockers: list[dict[str, Any]]
    """The gate's blockers, sorted, with their evidence."""
    evidence: dict[str, str | None]
    """Named hashes: gold_dataset, gold_file, held_out_manifest, candidate_spec, policy, run_records, run_manifest, executed_notebook, html."""
    files: dict[str, str]
    """sha256 of every file in the report directory except lock.json, by relative path."""
    versions: dict[str, str]
    """workbench, ragas and python versions."""
    git: dict[str, Any]
    """``{commit, dirty}`` of the working tree certification ran from (None outside git)."""
    ledger_entry: dict[str, Any]
    """The held-out ledger entry opened for this certification."""
    rerun_reason: str | None
    previous_report: PreviousReport | None
    timings_s: dict[str, float]
    """Wall time of kernel start, notebook run and render (informational)."""
    lock_sha256: str = ""
    """sha256 over the canonical JSON of this lock without this field."""

    def content_sha256(self) -> str:
        return sha256_json(self.model_dump(mode="json", exclude={"lock_sha256"}))


def hash_tree(root: Path) -> dict[str, str]:
    """sha256 of every regular file under ``root`` except the lock, by POSIX relative path."""
    return {p.relative_to(root).as_posix(): sha256_file(p) for p in sorted(root.rglob("*")) if p.is_file() and p.name != LOCK_FILE}


def git_state(cwd: Path | None = None) -> dict[str, Any]:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, check=True, timeout=10).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd, capture_output=True, text=True, check=True, timeout=10).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": dirty}


def versions() -> dict[str, str]:
    from ..judges import ragas_version

    return {"workbench": __version__, "ragas": ragas_version(), "python": sys.version.split()[0]}


def write_lock(report_dir: Path, lock: Lock) -> Lock:
    sealed = lock.model_copy(update={"lock_sha256": lock.content_sha256()})
    atomic_write_text(report_dir / LOCK_FILE, json.dumps(sealed.model_dump(mode="json"), indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    return sealed


def read_lock(report_dir: Path) -> Lock:
    return Lock.model_validate(json.loads((report_dir / LOCK_FILE).read_text(encoding="utf-8")))


def make_read_only(root: Path) -> None:
    """Remove write permission from every file and directory of a report."""
    for path in sorted(root.rglob("*"), reverse=True):
        mode = path.stat().st_mode
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    root.chmod(root.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def verify_report(report_dir: str | Path, reports_root: str | Path | None = None) -> list[Problem]:
    """Recompute every hash of a report; one problem per changed, missing or added file."""
    root = Path(report_dir)
    if root.name == LOCK_FILE:
        root = root.parent
    lock_path = root / LOCK_FILE
    if not lock_path.exists():
        return [Problem(location=str(lock_path), code="lock_missing", message="the report has no lock.json", fix="point at a report directory written by `workbench certify`")]
    try:
        lock = read_lock(root)
    except (ValueError, OSError) as exc:
        return [Problem(location=str(lock_path), code="lock_unreadable", message=f"lock.json cannot be read ({str(exc)[:120]})", fix="the lock was altered; restore the report from its original copy")]
    problems: list[Problem] = []
    if lock.content_sha256() != lock.lock_sha256:
        problems.append(Problem(location=str(lock_path), code="lock_changed", message="lock.json was modified: its content no longer matches lock_sha256", fix="restore lock.json; a lock is never edited"))
    actual = hash_tree(root)
    for rel, digest in sorted(lock.files.items()):
        if rel not in actual:
            problems.append(Problem(location=str(root / rel), code="file_missing", message="a locked file is missing", fix="restore the file from the original report"))
        elif actual[rel] != digest:
            problems.append(Problem(location=str(root / rel), code="file_changed", message="the file changed after the report was locked", fix="restore the original file; to change a report, certify again (a new report number)"))
    for rel in sorted(set(actual) - set(lock.files)):
        problems.append(Problem(location=str(root / rel), code="file_added", message="a file was added after the report was locked", fix="remove it; reports are immutable"))
    if lock.previous_report is not None:
        base = Path(reports_root) if reports_root else root.parents[2]
        previous = base / lock.previous_report.report_id
        if not (previous / LOCK_FILE).exists():
            problems.append(Problem(location=str(previous), code="chain_broken", message=f"the previous report {lock.previous_report.report_id} is missing", fix="restore the previous report; reports form a chain and none may be removed"))
        else:
            try:
                prev_lock = read_lock(previous)
            except (ValueError, OSError):
                prev_lock = None
            if prev_lock is None or prev_lock.lock_sha256 != lock.previous_report.lock_sha256:
                problems.append(Problem(location=str(previous / LOCK_FILE), code="chain_broken", message="the previous report's lock does not match the hash recorded in this report", fix="restore the previous report's original lock"))
    return problems


def writable(path: Path) -> bool:
    return os.access(path, os.W_OK)
