"""Locked reports: one lock format (:class:`Lock`, ``lock.json``) and one verification for every
kind; :func:`verify_lock` checks the lock, files, payloads, signature and its kind's checks, and
never raises for bad content."""

from __future__ import annotations

import importlib
import json
import stat
import subprocess
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import SerializerFunctionWrapHandler, model_serializer

from . import __version__
from ._io import (
    atomic_write_text,
    iter_jsonl_lines,
    loads_json,
    read_json_file,
    sha256_file,
    sha256_json,
)
from ._record import Record, SchemaTooNew
from ._signing import LockSignature, Signer, check_signature
from .errors import Problem, problem, refusal
from .heldout import PreviousReport

LOCK_FILE = "lock.json"
LOCK_SCHEMA_VERSION = 2
STARTED_FILE = "started.json"
"""Written when a certification's ledger entry opens (:mod:`workbench.reports._listing`)."""
PRUNE_LOG = "payloads/pruned.jsonl"
"""Where ``workbench prune`` records each payload it deleted (append-only, not hashed)."""
RETIRED_LOCKS = {"ranking_lock.json": "ranking lock format 1"}
"""Lock files of older formats this workbench refuses to read, never silently accepts."""
Kind = Literal["certification", "migration", "review_reevaluation", "ranking", "noise"]
KIND_CHECKS: dict[str, str] = {
    "certification": "workbench.reports:check_certification",
    "migration": "workbench.reports:check_certification",
    "review_reevaluation": "workbench.reports:check_certification",
    "ranking": "workbench.ranking:check_ranking_lock",
    "noise": "workbench.noise:check_noise_lock",
}
"""The checks of each kind, ``module:function(root, lock, result, gold)``, imported when used."""
RUN_OUTCOMES = frozenset(
    {"passed", "quality_failed", "evaluation_incomplete", "review_required", "unknown"}
)
"""The outcomes a locked ranking or noise run can have (``unknown``: a ranking run, no gate)."""
RESTORE = (
    "restore the report from its original copy; to change a report, make a new one (certify"
    " again: a new report number; a run: a new --out)"
)
UNSIGNED = (
    "unsigned: the hashes only show accidental change; anyone who can write the report can rewrite"
    " it and its lock (sign with --sign KEY)"
)
_OMITTED_WHEN_DEFAULT: dict[str, Any] = {
    "kind": "certification",
    **dict.fromkeys(("baseline", "baseline_fingerprint", "resumes", "migration"), None),
    **dict.fromkeys(("requested_authority", "grant", "last_certified", "payloads"), None),
    **dict.fromkeys(("policy_file", "provenance"), None),
}
"""Fields added to lock format 2 later: a lock without them dumps, and hashes, as before."""


class Lock(Record):
    """The content of ``lock.json``: one format for every kind of locked report."""

    KIND: ClassVar[str] = "report lock"

    schema_version: int = LOCK_SCHEMA_VERSION
    """Lock format version."""
    report_id: str
    """A certification: ``<candidate>/<version>/<n>``; a run: ``<kind>/<judge>/<subject>``."""
    created_at: datetime
    """When the lock was written (UTC)."""
    candidate: str
    """``name@version`` of the judge the report is about."""
    candidate_fingerprint: str
    """Its fingerprint."""
    outcome: str
    """The gate's outcome (a run's ``passed`` when it passed)."""
    blockers: list[dict[str, Any]]
    """The gate's blockers, sorted, with their evidence (case ids replaced by counts)."""
    figures: dict[str, Any] | None = None
    """A certification's alignment figures the gate read (no case ids); None for runs."""
    evaluated_at: datetime | None = None
    """The time overrides were checked against: the ``started`` ledger entry's ``when``."""
    budget_usd: float | None = None
    """The spend limit the held-out run ran under."""
    evidence: dict[str, str | None]
    """Named hashes a reviewer asks about (docs/formats.md#report-lock lists them per kind)."""
    input_files: dict[str, str | None] = {}
    """Paths, relative to the report directory, of the evidence ``verify`` recomputes from."""
    files: dict[str, str] = {}
    """sha256 of every file but the top-level lock.json and the payloads, by relative POSIX path."""
    versions: dict[str, str]
    """workbench, ragas and python versions."""
    git: dict[str, Any]
    """``{commit, dirty}`` of the working tree the report was made from (None outside git)."""
    gold: str | None = None
    """Absolute path of the gold dataset directory certified on."""
    ledger_path: str | None = None
    """Absolute path of the held-out ledger the certification was recorded in."""
    policy_file: str | None = None
    """Absolute path of the policy file certified under; None for runs and older locks."""
    ledger_entry: dict[str, Any] = {}
    """The ``started`` held-out ledger entry opened for this certification (runs: none)."""
    rerun_reason: str | None = None
    """Why the same candidate was certified again on the same held-out manifest."""
    previous_report: PreviousReport | None = None
    """The previous report of the same candidate version, as the ledger records it (a chain)."""
    timings_s: dict[str, float] = {}
    """Wall time of kernel start, notebook run and render (informational)."""
    kind: Kind = "certification"
    """``certification``, ``migration``, ``review_reevaluation``, ``ranking`` or ``noise``."""
    baseline: str | None = None
    """For a migration (and its re-evaluation): ``name@version`` of the baseline."""
    baseline_fingerprint: str | None = None
    """Its fingerprint (the ledger entry records both)."""
    resumes: PreviousReport | None = None
    """For a re-evaluation: the locked report whose run records it reused, a second chain."""
    migration: dict[str, Any] | None = None
    """For a migration: the public migration summary (``migration.json``)."""
    requested_authority: dict[str, Any] | None = None
    """The use and scope the policy asks for (:class:`~workbench.authority.RequestedAuthority`)."""
    grant: dict[str, Any] | None = None
    """What this certification grants (:func:`~workbench.authority.grant_for`)."""
    last_certified: dict[str, Any] | None = None
    """The last complete certified other version of the judge (informational)."""
    payloads: dict[str, str] | None = None
    """A ranking run: sha256 of every request payload, present or pruned."""
    provenance: dict[str, Any] | None = None
    """A certification: what ran it (:class:`~workbench.reports.Provenance`); None in older locks.
    """
    lock_sha256: str = ""
    """sha256 over the canonical JSON of this lock without this field and ``signature``."""
    signature: LockSignature | None = None
    """Ed25519 signature over ``lock_sha256`` (``--sign KEY``); outside the hashed content."""

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


def unhashed(payloads: Collection[str] | None) -> set[str]:
    """What :func:`hash_tree` leaves to the payload check: the payloads and their prune log."""
    return set() if payloads is None else {*payloads, PRUNE_LOG}


def hash_tree(root: Path, skip: Collection[str] = ()) -> dict[str, str]:
    """sha256 of every file under ``root`` but the top-level lock.json and ``skip``, by POSIX
    relative path (a ``lock.json`` deeper down is hashed like any other file)."""
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if rel == LOCK_FILE or rel in skip or p.is_dir():
            continue
        out[rel] = sha256_file(p) if p.is_file() else "(not a regular file)"
    return out


def maybe_sha256(path: Path) -> str | None:
    return sha256_file(path) if path.exists() else None


def git_state(cwd: Path | None = None) -> dict[str, Any]:
    def git(*args: str) -> str:
        run = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=10
        )
        return run.stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": dirty}


def versions() -> dict[str, str]:
    from .judges import ragas_version

    return {"workbench": __version__, "ragas": ragas_version(), "python": sys.version.split()[0]}


def write_lock(report_dir: Path, lock: Lock, signer: Signer | None = None) -> Lock:
    """Write ``lock`` as it is (its ``files`` included) with its hash, signed when ``signer``."""
    sealed = lock.model_copy(update={"lock_sha256": lock.content_sha256(), "signature": None})
    if signer is not None:
        sealed = sealed.model_copy(update={"signature": signer.sign(sealed.lock_sha256)})
    text = json.dumps(sealed.model_dump(mode="json"), indent=2, sort_keys=True, ensure_ascii=False)
    atomic_write_text(report_dir / LOCK_FILE, text + "\n")
    return sealed


def seal(report_dir: Path, lock: Lock, signer: Signer | None = None) -> Lock:
    """Hash every file of ``report_dir`` into ``lock`` and write it (:func:`write_lock`)."""
    files = hash_tree(report_dir, unhashed(lock.payloads))
    return write_lock(report_dir, lock.model_copy(update={"files": files}), signer)


def lock_run(
    run_dir: str | Path,
    *,
    kind: Kind,
    subject: str,
    candidate: str,
    fingerprint: str,
    outcome: str,
    blockers: list[dict[str, Any]],
    evidence: dict[str, str | None],
    payloads: dict[str, str] | None = None,
    signer: Signer | None = None,
    now: datetime | None = None,
) -> Lock:
    """Lock a run directory (a ranking or noise run); refused when it is already locked."""
    root = Path(run_dir)
    if (root / LOCK_FILE).exists() or any((root / name).exists() for name in RETIRED_LOCKS):
        message = "the run is already locked"
        fix = "use a new --out directory for a new run"
        raise refusal("already locked", str(root / LOCK_FILE), "run_locked", message, fix)
    lock = Lock(
        kind=kind,
        report_id=f"{kind}/{candidate}/{subject}",
        created_at=(now or datetime.now(UTC)).replace(microsecond=0),
        candidate=candidate,
        candidate_fingerprint=fingerprint,
        outcome=outcome,
        blockers=blockers,
        evidence=evidence,
        versions=versions(),
        git=git_state(),
        payloads=payloads,
    )
    return seal(root, lock, signer)


def read_lock(report_dir: str | Path) -> Lock:
    """The lock of a report directory (or of its ``lock.json``). Raises ValueError, OSError or
    :class:`~workbench._record.SchemaTooNew`."""
    path = resolve_report_path(report_dir)
    try:
        return Lock.model_validate(read_json_file(path / LOCK_FILE))
    except SchemaTooNew as exc:
        raise exc.at(str(path / LOCK_FILE)) from None


def report_dirs(reports_root: Path) -> list[Path]:
    """Every ``<candidate>/<version>/<n>`` directory under ``reports_root``, in order."""
    if not reports_root.is_dir():
        return []
    found = [p for p in reports_root.glob("*/*/*") if p.is_dir() and p.name.isdigit()]
    return sorted(found, key=lambda p: (p.parent.parent.name, p.parent.name, int(p.name)))


def resolve_report_path(path: str | Path) -> Path:
    """A report directory from ``path`` (the directory or its ``lock.json``)."""
    p = Path(path)
    return p.parent if p.name == LOCK_FILE and p.is_file() else p


def make_read_only(root: Path) -> None:
    """Remove write permission from every file and directory of a report."""
    no_write = ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    for path in [*sorted(root.rglob("*"), reverse=True), root]:
        path.chmod(path.stat().st_mode & no_write)


@dataclass
class Verification:
    """The result of verifying one locked report (each check ``ok``, ``failed`` or ``not
    checked``)."""

    path: Path
    kind: str | None = None
    report_id: str | None = None
    outcome: str | None = None
    lock_sha256: str | None = None
    files: int = 0
    problems: list[Problem] = field(default_factory=list)
    checks: dict[str, str] = field(default_factory=dict)
    signature: str = "not checked"
    unverified: str | None = None
    """Why an intact report is still not verified (a certification checked without its gold)."""

    @property
    def intact(self) -> bool:
        """No check failed."""
        return not self.problems

    @property
    def status(self) -> str:
        """``verified``, ``not_verified`` (a deciding check could not run) or ``failed``."""
        if self.problems:
            return "failed"
        return "not_verified" if self.unverified else "verified"

    @property
    def verified(self) -> bool:
        return self.status == "verified"

    def fail(
        self, check: str, location: str | Path, code: str, message: str, fix: str = RESTORE
    ) -> None:
        self.problems.append(problem(str(location), code, message, fix))
        self.checks[check] = "failed"

    def ok(self, check: str, note: str = "ok") -> None:
        self.checks.setdefault(check, note)

    def to_json(self) -> dict[str, Any]:
        names: tuple[str, ...] = ("kind", "report_id", "verified", "status", "intact")
        names += ("unverified", "outcome", "lock_sha256", "files", "checks", "signature")
        problems = [p.model_dump(mode="json") for p in self.problems]
        return {
            "path": str(self.path),
            **{n: getattr(self, n) for n in names},
            "problems": problems,
        }


KindCheck = Callable[[Path, Lock, Verification, "str | Path | None"], None]


def verify_lock(
    path: str | Path, *, gold: str | Path | None = None, trusted: dict[bytes, str] | None = None
) -> Verification:
    """Verify one locked report of any kind (module doc); never raises for bad content."""
    root = resolve_report_path(path)
    result = Verification(path=root)
    lock = _read_for_verification(root, result)
    if lock is None:
        return result
    result.kind, result.report_id, result.outcome = lock.kind, lock.report_id, lock.outcome
    result.lock_sha256, result.files = lock.lock_sha256, len(lock.files)
    if lock.content_sha256() != lock.lock_sha256:
        message = "lock.json was modified: its content no longer matches lock_sha256"
        fix = "restore lock.json; a lock is never edited"
        result.fail("lock", root / LOCK_FILE, "lock_changed", message, fix)
    result.ok("lock")
    check_files(root, lock, result)
    if lock.payloads is not None:
        check_payloads(root, lock.payloads, result)
    check_lock_signature(lock, trusted, result)
    if lock.kind in ("ranking", "noise") and lock.outcome not in RUN_OUTCOMES:
        result.fail(  # a run is never a certification, whatever its lock claims
            "outcome",
            root / LOCK_FILE,
            "outcome_invalid",
            f"a {lock.kind} run's outcome is one of {sorted(RUN_OUTCOMES)}, not {lock.outcome!r}",
        )
    module, _, name = KIND_CHECKS[lock.kind].partition(":")
    kind_check: KindCheck = getattr(importlib.import_module(module), name)
    kind_check(root, lock, result, gold)
    return result


def _read_for_verification(root: Path, result: Verification) -> Lock | None:
    lock_path = root / LOCK_FILE
    retired = next((n for n in RETIRED_LOCKS if (root / n).is_file()), None)
    if not lock_path.is_file() and retired is not None:
        result.fail(
            "lock",
            root / retired,
            "lock_format_retired",
            f"{retired} ({RETIRED_LOCKS[retired]}) was written by an older workbench; this one"
            " reads only lock.json (lock format 2) and never takes an older lock's word",
            "verify it with the workbench that locked it, or make the run again into a new --out"
            " with --lock",
        )
    elif not lock_path.is_file() and (root / STARTED_FILE).is_file():
        message = (
            "this certification never finished (it was aborted, or is still running): there is"
            " no lock to verify"
        )
        fix = "see `workbench reports`; certify again to get a locked report"
        result.fail("lock", lock_path, "report_unlocked", message, fix)
    elif not lock_path.is_file():
        message = "the directory has no lock.json"
        fix = (
            "point at a report directory written by `workbench certify`, or a run locked with"
            " --lock"
        )
        result.fail("lock", lock_path, "lock_missing", message, fix)
    else:
        try:
            return read_lock(root)
        except SchemaTooNew as exc:  # fail closed: a newer lock is never verified
            newer = exc.problems[0]
            result.fail("lock", lock_path, newer.code, newer.message, newer.fix)
        except (ValueError, OSError, RecursionError, UnicodeDecodeError) as exc:
            first = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
            message = f"lock.json cannot be read ({first})"
            fix = "the lock was altered; restore the report from its original copy"
            result.fail("lock", lock_path, "lock_unreadable", message, fix)
    return None


def check_files(root: Path, lock: Lock, result: Verification) -> None:
    """Every locked file present with its hash; none added (payloads are checked apart)."""
    actual = hash_tree(root, unhashed(lock.payloads))
    for rel, digest in sorted(lock.files.items()):
        if rel not in actual:
            result.fail("files", root / rel, "file_missing", "a locked file is missing")
        elif actual[rel] != digest:
            result.fail(
                "files", root / rel, "file_changed", "the file changed after the report was locked"
            )
    for rel in sorted(set(actual) - set(lock.files)):
        message = "a file was added after the report was locked"
        fix = "remove it; locked reports are immutable"
        result.fail("files", root / rel, "file_added", message, fix)
    result.ok("files")


def pruned_payloads(run_dir: Path) -> dict[str, dict[str, Any]]:
    """The prune log: payload path -> its deletion record (raises ValueError on a bad line)."""
    path = run_dir / PRUNE_LOG
    if not path.exists():
        return {}
    rows = [loads_json(line) for _, line in iter_jsonl_lines(path)]
    if not all(isinstance(r, dict) and isinstance(r.get("payload"), str) for r in rows):
        raise ValueError("a prune record is not an object naming its payload")
    return {row["payload"]: row for row in rows}


def check_payloads(root: Path, payloads: dict[str, str], result: Verification) -> None:
    """Each payload present with its hash, or deleted by ``workbench prune`` after its expiry."""
    try:
        pruned = pruned_payloads(root)
    except (ValueError, OSError) as exc:
        result.fail("payloads", root / PRUNE_LOG, "prune_log_unreadable", f"{exc}"[:160])
        return
    for rel in sorted(set(pruned) - set(payloads)):
        result.fail(
            "payloads",
            root / PRUNE_LOG,
            "prune_record_unknown",
            f"the prune log records the deletion of {rel}, which the lock does not list",
        )
    for rel, digest in sorted(payloads.items()):
        target = root / rel
        if target.is_file():
            if sha256_file(target) != digest:
                message = "the payload no longer matches its recorded sha256"
                fix = "restore the payload or let it be pruned; payloads are never edited"
                result.fail("payloads", target, "payload_changed", message, fix)
        else:
            _check_pruned(target, pruned.get(rel), digest, result)
    result.ok("payloads", "ok (present with their hash, or pruned after their expiry)")


def _check_pruned(
    target: Path, row: dict[str, Any] | None, digest: str, result: Verification
) -> None:
    if row is None or row.get("payload_sha256") != digest:
        message = "a payload is missing and the prune log does not record its deletion"
        fix = "restore the payload; only `workbench prune` removes payloads, after their expiry"
        result.fail("payloads", target, "payload_missing", message, fix)
        return
    try:
        early = datetime.fromisoformat(row["pruned_at"]) < datetime.fromisoformat(row["expired_at"])
    except (KeyError, TypeError, ValueError):
        early = True
    if early:
        message = "the prune log records a deletion before the payload's declared expiry"
        fix = "payloads are kept for their declared retention; restore it"
        result.fail("payloads", target, "payload_pruned_early", message, fix)


def check_lock_signature(
    lock: Lock, trusted: dict[bytes, str] | None, result: Verification
) -> None:
    if lock.signature is None:
        result.signature = UNSIGNED
        if trusted is None:
            result.checks["signature"] = "unsigned"
            return
        message = "the lock is unsigned, so it cannot be checked against the trusted keys"
        fix = "ask for a report locked with --sign KEY"
        result.fail("signature", LOCK_FILE, "unsigned", message, fix)
        return
    status, detail = check_signature(lock.signature, lock.lock_sha256, trusted)
    result.signature = detail
    fixes = {
        "invalid": "the lock or its signature was altered; restore the original report",
        "untrusted": "add the signer's public key to the trust file only if you trust it",
    }
    if status in fixes:
        result.fail("signature", LOCK_FILE, f"signature_{status}", detail, fixes[status])
    else:
        result.checks["signature"] = status


def check_report_file(
    root: Path, lock: Lock, result: Verification, report_file: str, said: dict[str, Any]
) -> None:
    """A run's checks: its report file says (``said``) the lock's outcome, judge, blocker codes."""
    mine = {
        "outcome": lock.outcome,
        "judge_fingerprint": lock.candidate_fingerprint,
        "blocker codes": [b.get("code") for b in lock.blockers],
    }
    for name, value in mine.items():
        if said.get(name) != value:
            result.fail(
                "outcome",
                root / LOCK_FILE,
                "outcome_mismatch",
                f"the lock's {name} ({value!r}) differs from {report_file}'s ({said.get(name)!r})",
            )
    result.ok("outcome", f"ok (the lock says what {report_file} says)")
