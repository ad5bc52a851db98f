"""Locked reports: every file hashed, the lock hashed over canonical JSON, files read-only, chained.

``lock.json`` records the sha256 of every file in the report directory (all but the top-level
``lock.json`` itself) and, by name, of the evidence a reviewer asks about (gold dataset,
held-out manifest, candidate spec, policy, run records, lineage, figures, held-out gold
records, executed notebook, HTML), with the outcome, blockers and figures ``workbench verify``
recomputes from that evidence. ``lock_sha256`` is the hash of the lock's canonical JSON without
that field and the signature. ``previous_report`` links the report to the one before it for
the same candidate version (as the held-out ledger recorded it), so a report cannot silently
disappear from the chain. An optional Ed25519 ``signature`` over ``lock_sha256`` (see
:mod:`workbench.reports._signing`) shows who produced the lock; verification lives in
:mod:`workbench.reports._verify`.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from pydantic import SerializerFunctionWrapHandler, model_serializer

from .. import __version__
from .._io import atomic_write_text, read_json_file, sha256_file, sha256_json
from .._record import Record, SchemaTooNew
from ..heldout import PreviousReport
from ._signing import LockSignature, Signer

LOCK_FILE = "lock.json"
LOCK_SCHEMA_VERSION = 2
_OMITTED_WHEN_DEFAULT: dict[str, Any] = {
    "kind": "certification",
    "baseline": None,
    "baseline_fingerprint": None,
    "resumes": None,
    "migration": None,
    "requested_authority": None,
    "grant": None,
    "last_certified": None,
}
"""Fields added to lock format 2 later: a lock without them dumps, and so hashes, as before."""


class Lock(Record):
    """The content of ``lock.json``."""

    KIND: ClassVar[str] = "report lock"

    schema_version: int = LOCK_SCHEMA_VERSION
    """Lock format version (2: outcome recomputable from the stored evidence, ledger-bound,
    signable)."""
    report_id: str
    """``<candidate>/<version>/<n>``."""
    created_at: datetime
    """When the lock was written (UTC)."""
    candidate: str
    """``name@version``."""
    candidate_fingerprint: str
    """The certified candidate's fingerprint."""
    outcome: str
    """certified | quality_failed | evaluation_incomplete | review_required."""
    blockers: list[dict[str, Any]]
    """The gate's blockers, sorted, with their evidence (case ids replaced by counts)."""
    figures: dict[str, Any] | None = None
    """The alignment figures the gate read (overall, per slice, confusion; no case ids); None
    when no held-out alignment was made (controls failed, the notebook failed)."""
    evaluated_at: datetime | None = None
    """The time overrides were checked against: the ``started`` ledger entry's ``when``."""
    budget_usd: float | None = None
    """The spend limit the held-out run ran under (policy ``budget_usd`` or a lower
    ``--budget-usd``)."""
    evidence: dict[str, str | None]
    """Named hashes: gold_dataset, gold_file, held_out_manifest, candidate_spec, policy, overrides,
    control_suite, control_records, run_records, run_manifest, lineage, figures, held_out_gold,
    rubric, executed_notebook, html; for a migration also baseline_spec, label_mapping,
    baseline_control_records, baseline_run_records, baseline_run_manifest, transitions,
    transition_reviews, migration; when present repeatability_studies and sentinel_records."""
    input_files: dict[str, str | None] = {}
    """Where the evidence ``verify`` recomputes from lies in the report: candidate, policy,
    overrides, controls, and for a migration baseline and label_mapping (paths relative to the
    report directory)."""
    files: dict[str, str]
    """sha256 of every file in the report directory except the top-level lock.json, by relative
    path."""
    versions: dict[str, str]
    """workbench, ragas and python versions."""
    git: dict[str, Any]
    """``{commit, dirty}`` of the working tree certification ran from (None outside git)."""
    gold: str | None = None
    """Absolute path of the gold dataset directory certified on."""
    ledger_path: str | None = None
    """Absolute path of the held-out ledger the certification was recorded in."""
    ledger_entry: dict[str, Any]
    """The ``started`` held-out ledger entry opened for this certification."""
    rerun_reason: str | None
    """Why the same candidate was certified again on the same held-out manifest."""
    previous_report: PreviousReport | None
    """The previous report of the same candidate version (``{report_id, lock_sha256, status}``),
    as the ledger's started entry records it: a chain."""
    timings_s: dict[str, float]
    """Wall time of kernel start, notebook run and render (informational)."""
    kind: str = "certification"
    """The ledger entry's kind: ``certification``, ``migration`` (``certify --baseline``) or
    ``review_reevaluation`` (``certify --resume-review``). Omitted when ``certification``."""
    baseline: str | None = None
    """For a migration (and its re-evaluation): ``name@version`` of the baseline judged beside the
    candidate."""
    baseline_fingerprint: str | None = None
    """Its fingerprint (the ledger entry records both)."""
    resumes: PreviousReport | None = None
    """For a re-evaluation: the locked report whose run records it reused (``{report_id,
    lock_sha256, status}``)."""
    migration: dict[str, Any] | None = None
    """For a migration: the public migration summary (``migration.json``: counts per slice,
    matrix, transition-review counts; no case ids), recomputed by ``verify``."""
    requested_authority: dict[str, Any] | None = None
    """The use and scope the policy asks for (:class:`~workbench.authority.RequestedAuthority`)."""
    grant: dict[str, Any] | None = None
    """What this certification grants (:func:`~workbench.authority.grant_for` on the policy copy
    and the gate; ``lock_sha256`` left out). ``verify`` recomputes it from the same inputs."""
    last_certified: dict[str, Any] | None = None
    """The last complete certified other version of the judge when this report was written,
    shown beside the candidate and never used in its place (``{report_id, candidate,
    candidate_fingerprint, outcome, stale}``; None: there was none). Informational: ``verify``
    does not recompute it (later reports change the answer)."""
    lock_sha256: str = ""
    """sha256 over the canonical JSON of this lock without this field and ``signature``."""
    signature: LockSignature | None = None
    """Ed25519 signature over ``lock_sha256`` (``certify --sign``); outside the hashed content."""

    @model_serializer(mode="wrap")
    def _omit_unused_fields(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name, default in _OMITTED_WHEN_DEFAULT.items():
                if name in data and data[name] == default:
                    del data[name]
        return data

    def content_sha256(self) -> str:
        return sha256_json(self.model_dump(mode="json", exclude={"lock_sha256", "signature"}))


def hash_tree(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` except the top-level lock.json, by POSIX relative path.

    Only the one ``lock.json`` at the top is left out: a file of that name anywhere else (say
    ``restricted/lock.json``) is hashed like any other, so adding one is caught.
    """
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if rel == LOCK_FILE or p.is_dir():
            continue
        out[rel] = sha256_file(p) if p.is_file() else "(not a regular file)"
    return out


def git_state(cwd: Path | None = None) -> dict[str, Any]:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no"],
                cwd=cwd,
                capture_output=True,
                text=True,
                check=True,
                timeout=10,
            ).stdout.strip()
        )
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": dirty}


def versions() -> dict[str, str]:
    from ..judges import ragas_version

    return {"workbench": __version__, "ragas": ragas_version(), "python": sys.version.split()[0]}


def write_lock(report_dir: Path, lock: Lock, signer: Signer | None = None) -> Lock:
    sealed = lock.model_copy(update={"lock_sha256": lock.content_sha256(), "signature": None})
    if signer is not None:
        sealed = sealed.model_copy(update={"signature": signer.sign(sealed.lock_sha256)})
    atomic_write_text(
        report_dir / LOCK_FILE,
        json.dumps(sealed.model_dump(mode="json"), indent=2, sort_keys=True, ensure_ascii=False)
        + "\n",
    )
    return sealed


def read_lock(report_dir: Path) -> Lock:
    """The lock of a report directory (or of ``.../lock.json`` itself). Raises ValueError or
    OSError,
    and :class:`~workbench._record.SchemaTooNew` (located at the file) for a lock written by a newer
    workbench."""
    path = Path(report_dir)
    if path.name == LOCK_FILE and path.is_file():
        path = path.parent
    try:
        return Lock.model_validate(read_json_file(path / LOCK_FILE))
    except SchemaTooNew as exc:
        raise exc.at(str(path / LOCK_FILE)) from None


def make_read_only(root: Path) -> None:
    """Remove write permission from every file and directory of a report."""
    for path in sorted(root.rglob("*"), reverse=True):
        mode = path.stat().st_mode
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    root.chmod(root.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def writable(path: Path) -> bool:
    return os.access(path, os.W_OK)
