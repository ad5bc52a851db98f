"""``workbench verify``: is this report the one certification produced, and does it say what its
evidence says?

For each report, every check ends ``ok``, ``failed`` or ``not checked: <why>``:

- **lock**: ``lock.json`` parses and its content hashes to its ``lock_sha256``;
- **files**: every file of the report directory (all but the top-level ``lock.json``) has the
  hash the lock records; none is missing, none was added;
- **outcome**: the gate re-run on the report's own evidence gives the lock's outcome, blockers,
  waivers and figures, and ``gate.json`` agrees (:mod:`workbench.reports._recompute`);
- **ledger**: the held-out ledger of the certified dataset has an intact chain, holds this
  report's ``started`` entry exactly as the lock copies it, and a ``finished`` entry with this
  lock's hash; no report of the same reports root that the ledger knows is missing on disk.
  Not checked when the dataset (hence its ledger) is not on this machine and no ``--gold``
  is given;
- **chain**: the previous report the lock names exists with the recorded lock hash (or as
  the aborted directory it was); a lock naming no previous report while an earlier one
  exists is refused. Not checked when the report was copied out of its reports root;
- **signature**: an Ed25519 signature over ``lock_sha256`` is valid and, with ``--trust``,
  made by a trusted key. An unsigned lock shows only accidental change.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._io import read_json_file
from .._record import SchemaTooNew
from ..errors import Problem, WorkbenchError
from ..heldout import HeldOutLedger, LedgerEntry, ledger_path_for
from ._listing import read_marker, report_dirs
from ._lock import LOCK_FILE, Lock, hash_tree, read_lock
from ._recompute import EvidenceError, recompute
from ._signing import check_signature

GATE_FILE = "gate.json"
UNSIGNED = (
    "unsigned: the hashes only show accidental change; anyone who can write the report can rewrite"
    " it and its lock (sign with `workbench certify --sign KEY`)"
)
RESTORE = (
    "restore the report from its original copy; to change a report, certify again (a new report"
    " number)"
)


@dataclass
class ReportVerification:
    """The result of verifying one report directory."""

    path: Path
    report_id: str | None = None
    outcome: str | None = None
    lock_sha256: str | None = None
    files: int = 0
    problems: list[Problem] = field(default_factory=list)
    checks: dict[str, str] = field(default_factory=dict)
    signature: str = "not checked"

    @property
    def verified(self) -> bool:
        return not self.problems

    def fail(
        self, check: str, location: str | Path, code: str, message: str, fix: str = RESTORE
    ) -> None:
        self.problems.append(Problem(location=str(location), code=code, message=message, fix=fix))
        self.checks[check] = "failed"

    def ok(self, check: str) -> None:
        self.checks.setdefault(check, "ok")

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "report_id": self.report_id,
            "verified": self.verified,
            "outcome": self.outcome,
            "lock_sha256": self.lock_sha256,
            "files": self.files,
            "checks": self.checks,
            "signature": self.signature,
            "problems": [p.model_dump(mode="json") for p in self.problems],
        }


def resolve_report_path(path: str | Path) -> Path:
    """A report directory from ``path`` (the directory or its ``lock.json``)."""
    p = Path(path)
    return p.parent if p.name == LOCK_FILE and p.is_file() else p


def _canon(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)


def verify_one(
    path: str | Path, *, gold: str | Path | None = None, trusted: dict[bytes, str] | None = None
) -> ReportVerification:
    """Verify one report directory; never raises for bad content (every finding is a problem)."""
    root = resolve_report_path(path)
    result = ReportVerification(path=root)
    lock_path = root / LOCK_FILE
    if not lock_path.is_file():
        if read_marker(root) is not None:
            result.fail(
                "lock",
                lock_path,
                "report_unlocked",
                "this certification never finished (it was aborted, or is still running): there is"
                " no lock to verify",
                "see `workbench reports`; certify again to get a locked report",
            )
        else:
            result.fail(
                "lock",
                lock_path,
                "lock_missing",
                "the report has no lock.json",
                "point at a report directory written by `workbench certify`",
            )
        return result
    try:
        lock = read_lock(root)
    except SchemaTooNew as exc:  # fail closed: a lock this workbench cannot read is never verified
        newer = exc.problems[0]
        result.fail("lock", lock_path, newer.code, newer.message, newer.fix)
        return result
    except (ValueError, OSError, RecursionError, UnicodeDecodeError) as exc:
        result.fail(
            "lock",
            lock_path,
            "lock_unreadable",
            "lock.json cannot be read"
            f" ({str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__})",
            "the lock was altered; restore the report from its original copy",
        )
        return result
    result.report_id, result.outcome, result.lock_sha256, result.files = (
        lock.report_id,
        lock.outcome,
        lock.lock_sha256,
        len(lock.files),
    )
    if lock.content_sha256() != lock.lock_sha256:
        result.fail(
            "lock",
            lock_path,
            "lock_changed",
            "lock.json was modified: its content no longer matches lock_sha256",
            "restore lock.json; a lock is never edited",
        )
    result.ok("lock")
    _check_files(root, lock, result)
    _check_consistency(root, lock, result)
    _check_outcome(root, lock, result, gold)
    _check_signature(lock, trusted, result)
    entries, started = _check_ledger(root, lock, gold, result)
    _check_chain(root, lock, entries, started, result)
    return result


def _check_files(root: Path, lock: Lock, result: ReportVerification) -> None:
    actual = hash_tree(root)
    for rel, digest in sorted(lock.files.items()):
        if rel not in actual:
            result.fail("files", root / rel, "file_missing", "a locked file is missing")
        elif actual[rel] != digest:
            result.fail(
                "files", root / rel, "file_changed", "the file changed after the report was locked"
            )
    for rel in sorted(set(actual) - set(lock.files)):
        result.fail(
            "files",
            root / rel,
            "file_added",
            "a file was added after the report was locked",
            "remove it; reports are immutable",
        )
    result.ok("files")


def _check_consistency(root: Path, lock: Lock, result: ReportVerification) -> None:
    """The lock against its own copy of the started ledger entry (a naive edit shows here)."""
    entry = lock.ledger_entry
    pairs: list[tuple[str, Any, Any]] = [
        ("candidate_fingerprint", lock.candidate_fingerprint, entry.get("candidate_fingerprint")),
        ("evidence.gold_dataset", lock.evidence.get("gold_dataset"), entry.get("dataset_sha256")),
        (
            "evidence.held_out_manifest",
            lock.evidence.get("held_out_manifest"),
            entry.get("held_out_manifest_sha256"),
        ),
        ("report_id", lock.report_id, entry.get("report_id")),
        ("rerun_reason", lock.rerun_reason, entry.get("rerun_reason")),
    ]
    if lock.schema_version >= 2:
        pairs += [
            ("budget_usd", lock.budget_usd, entry.get("budget_usd")),
            (
                "evaluated_at",
                lock.evaluated_at.isoformat() if lock.evaluated_at else None,
                _iso(entry.get("when")),
            ),
            (
                "previous_report",
                lock.previous_report.model_dump(mode="json") if lock.previous_report else None,
                entry.get("previous_report"),
            ),
        ]
    pairs += [  # a migration: both fingerprints under the one entry (omitted from older entries)
        ("kind", lock.kind, entry.get("kind", "certification")),
        ("baseline", lock.baseline, entry.get("baseline")),
        ("baseline_fingerprint", lock.baseline_fingerprint, entry.get("baseline_fingerprint")),
        ("resumes", lock.resumes.report_id if lock.resumes else None, entry.get("resumes")),
    ]
    for name, mine, recorded in pairs:
        if _canon(mine) != _canon(recorded):
            result.fail(
                "lock",
                root / LOCK_FILE,
                "lock_inconsistent",
                f"the lock's {name} ({mine!r}) differs from its ledger entry's ({recorded!r})",
            )


def _iso(value: Any) -> str | None:
    from datetime import datetime

    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).isoformat()
    except ValueError:
        return value


def _check_outcome(
    root: Path, lock: Lock, result: ReportVerification, gold: str | Path | None = None
) -> None:
    try:
        gate_file = read_json_file(root / GATE_FILE)
    except (OSError, ValueError, RecursionError):
        gate_file = None
    if not isinstance(gate_file, dict):
        result.fail(
            "outcome", root / GATE_FILE, "gate_unreadable", "gate.json is missing or unreadable"
        )
        gate_file = {}
    try:
        again = recompute(root, lock)
    except EvidenceError as exc:
        result.problems.append(exc.problem)
        result.checks["outcome"] = "failed"
        return
    if again.gate is None:
        # The notebook failed before the gate: the only outcome such a report may carry.
        if (
            lock.outcome != "evaluation_incomplete"
            or gate_file.get("outcome") != "evaluation_incomplete"
        ):
            result.fail(
                "outcome",
                root / LOCK_FILE,
                "outcome_mismatch",
                "the certification failed before its gate ran, so its outcome can only be"
                f" evaluation_incomplete; the lock says {lock.outcome}",
            )
        result.checks.setdefault("outcome", "ok (certification failed before the gate: incomplete)")
        return
    expected = again.gate
    if lock.outcome != expected["outcome"]:
        result.fail(
            "outcome",
            root / LOCK_FILE,
            "outcome_mismatch",
            f"the lock says {lock.outcome} but the gate re-run on the report's evidence says"
            f" {expected['outcome']}",
        )
    if _canon(lock.blockers) != _canon(expected["blockers"]):
        mine, theirs = (
            [b.get("code") for b in lock.blockers],
            [b["code"] for b in expected["blockers"]],
        )
        detail = (
            f"codes {mine} vs {theirs}"
            if mine != theirs
            else "same codes, different messages or figures"
        )
        result.fail(
            "outcome",
            root / LOCK_FILE,
            "blockers_mismatch",
            f"the lock's blockers differ from the gate re-run on the report's evidence ({detail})",
        )
    if again.migration is not None:
        from ..review._transition_reviews import transition_reviews_path_for
        from ._migration import migration_problems

        gold_dir = Path(gold) if gold is not None else (Path(lock.gold) if lock.gold else None)
        log = (
            transition_reviews_path_for(gold_dir)
            if gold_dir is not None and gold_dir.exists()
            else None
        )
        for problem in migration_problems(root, lock, again.migration, log):
            result.fail("migration", problem.location, problem.code, problem.message)
        result.checks.setdefault("migration", "ok (transitions and reviews recomputed)")
    if _canon(lock.figures) != _canon(again.figures):
        result.fail(
            "outcome",
            root / LOCK_FILE,
            "figures_mismatch",
            "the lock's figures differ from the alignment recomputed from the run records and gold"
            " evidence",
        )
    for key in ("outcome", "blockers", "waived", "expired_overrides"):
        if _canon(gate_file.get(key)) != _canon(expected.get(key)):
            result.fail(
                "outcome",
                root / GATE_FILE,
                "gate_mismatch",
                f"gate.json's {key} differs from the gate re-run on the report's evidence",
            )
    result.checks.setdefault("outcome", "ok (recomputed from the evidence)")


def _check_signature(
    lock: Lock, trusted: dict[bytes, str] | None, result: ReportVerification
) -> None:
    if lock.signature is None:
        result.signature = UNSIGNED
        if trusted is not None:
            result.fail(
                "signature",
                "lock.json",
                "unsigned",
                "the lock is unsigned, so it cannot be checked against the trusted keys",
                "ask for a report certified with `workbench certify --sign KEY`",
            )
        else:
            result.checks["signature"] = "unsigned"
        return
    status, detail = check_signature(lock.signature, lock.lock_sha256, trusted)
    result.signature = detail
    if status == "invalid":
        result.fail(
            "signature",
            "lock.json",
            "signature_invalid",
            detail,
            "the lock or its signature was altered; restore the original report",
        )
    elif status == "untrusted":
        result.fail(
            "signature",
            "lock.json",
            "signature_untrusted",
            detail,
            "add the signer's public key to the trust file only if you trust it",
        )
    else:
        result.checks["signature"] = status


def _locate_ledger(lock: Lock, gold: str | Path | None, result: ReportVerification) -> Path | None:
    if gold is not None:
        return ledger_path_for(gold)
    if lock.gold and Path(lock.gold).is_dir():
        path = ledger_path_for(lock.gold)
        if lock.ledger_path and Path(lock.ledger_path) != path:
            result.fail(
                "ledger",
                lock.ledger_path,
                "ledger_mismatch",
                f"the lock names ledger {lock.ledger_path}, but the certified dataset's ledger is"
                f" {path}",
            )
        return path
    where = lock.gold or "(not recorded)"
    result.checks["ledger"] = (
        f"not checked: the certified dataset {where} is not on this machine (pass --gold to check"
        " against its ledger)"
    )
    return None


def _check_ledger(
    root: Path, lock: Lock, gold: str | Path | None, result: ReportVerification
) -> tuple[list[LedgerEntry] | None, LedgerEntry | None]:
    try:
        path = _locate_ledger(lock, gold, result)
    except WorkbenchError as exc:
        result.problems.extend(exc.problems)
        result.checks["ledger"] = "failed"
        return None, None
    if path is None:
        return None, None
    if not path.is_file():
        result.fail(
            "ledger",
            path,
            "ledger_missing",
            "the held-out ledger of the certified dataset is missing",
            "restore the ledger from version control or a backup",
        )
        return None, None
    ledger = HeldOutLedger(path)
    with contextlib.suppress(WorkbenchError, OSError):  # a damaged ledger is reported below
        ledger.reconcile()  # dead certifications are marked aborted first
    read = ledger.read()
    for problem in read.problems:
        result.problems.append(problem)
        result.checks["ledger"] = "failed"
    entries = read.entries
    entry_id = lock.ledger_entry.get("entry_id")
    started = next((e for e in entries if e.entry_id == entry_id and e.event == "started"), None)
    if started is None:
        result.fail(
            "ledger",
            path,
            "ledger_entry_missing",
            f"the ledger has no started entry {entry_id} for this report (a line was removed, or"
            " the lock names an entry that never existed)",
        )
        return entries, None
    if _canon(started.model_dump(mode="json")) != _canon(lock.ledger_entry):
        result.fail(
            "ledger",
            path,
            "ledger_mismatch",
            "the lock's copy of its started ledger entry differs from the ledger's",
        )
    closing = next(
        (e for e in entries if e.opens == started.entry_id and e.event != "started"), None
    )
    if closing is None or closing.event != "finished":
        state = "still open" if closing is None else closing.event
        result.fail(
            "ledger",
            path,
            "ledger_not_finished",
            f"the ledger does not record this certification as finished ({state})",
        )
    elif closing.lock_sha256 != lock.lock_sha256:
        result.fail(
            "ledger",
            path,
            "lock_not_in_ledger",
            f"the ledger recorded lock sha256 {closing.lock_sha256} for {lock.report_id}; this lock"
            f" is {lock.lock_sha256} (the lock was rewritten)",
        )
    elif closing.outcome != lock.outcome:
        result.fail(
            "ledger",
            path,
            "outcome_not_in_ledger",
            f"the ledger recorded outcome {closing.outcome} for {lock.report_id}; the lock says"
            f" {lock.outcome}",
        )
    reports_root = _reports_root(root, lock)
    if reports_root is not None:
        for e in entries:
            if (
                e.event == "started"
                and e.reports_root == started.reports_root
                and not (reports_root / e.report_id).is_dir()
            ):
                result.fail(
                    "ledger",
                    reports_root / e.report_id,
                    "report_missing",
                    f"the ledger records report {e.report_id} (started {e.when:%Y-%m-%d %H:%M} by"
                    f" {e.who}) but it is not on disk",
                    "restore the report; reports are never deleted",
                )
    result.ok("ledger")
    return entries, started


def _reports_root(root: Path, lock: Lock) -> Path | None:
    """The reports root the report sits in, when it still sits at ``<root>/<report_id>``."""
    parts = lock.report_id.split("/")
    resolved = root.resolve()
    if len(parts) != 3 or list(resolved.parts[-3:]) != parts:
        return None
    return resolved.parents[2]


def _check_chain(
    root: Path,
    lock: Lock,
    entries: list[LedgerEntry] | None,
    started: LedgerEntry | None,
    result: ReportVerification,
) -> None:
    reports_root = _reports_root(root, lock)
    if started is not None:
        recorded = (
            started.previous_report.model_dump(mode="json") if started.previous_report else None
        )
        mine = lock.previous_report.model_dump(mode="json") if lock.previous_report else None
        if _canon(recorded) != _canon(mine):
            result.fail(
                "chain",
                root / LOCK_FILE,
                "chain_mismatch",
                f"the ledger recorded previous report {recorded and recorded['report_id']!r} for"
                f" this report, the lock names {mine and mine['report_id']!r}",
            )
    if reports_root is None:
        result.checks.setdefault(
            "chain", "not checked: the report is not inside its reports root (copied on its own)"
        )
        return
    previous = lock.previous_report
    name, version, n = lock.report_id.split("/")
    earlier = [
        d
        for d in report_dirs(reports_root)
        if d.parent.parent.name == name
        and d.parent.name == version
        and int(d.name) < int(n)
        and ((d / LOCK_FILE).exists() or read_marker(d) is not None)
    ]
    if previous is None:
        if earlier:
            result.fail(
                "chain",
                root / LOCK_FILE,
                "chain_broken",
                "the lock names no previous report, but"
                f" {earlier[-1].relative_to(reports_root).as_posix()} precedes it",
                "restore the original lock; reports form a chain",
            )
        result.ok("chain")
        return
    prev_dir = reports_root / previous.report_id
    if not prev_dir.is_dir():
        result.fail(
            "chain",
            prev_dir,
            "chain_broken",
            f"the previous report {previous.report_id} is missing",
            "restore the previous report; reports form a chain and none may be removed",
        )
    elif previous.status == "locked":
        try:
            prev_lock = read_lock(prev_dir)
        except (ValueError, OSError, RecursionError):
            prev_lock = None
        if prev_lock is None or prev_lock.lock_sha256 != previous.lock_sha256:
            result.fail(
                "chain",
                prev_dir / LOCK_FILE,
                "chain_broken",
                "the previous report's lock does not match the hash recorded in this report",
                "restore the previous report's original lock",
            )
    elif previous.status == "aborted":
        marker = read_marker(prev_dir)
        status = None
        if marker is not None and entries is not None:
            closing = next(
                (e for e in entries if e.opens == marker["entry_id"] and e.event != "started"), None
            )
            status = closing.event if closing else "open"
        if (
            (prev_dir / LOCK_FILE).exists()
            or marker is None
            or (entries is not None and status != "aborted")
        ):
            result.fail(
                "chain",
                prev_dir,
                "chain_broken",
                f"the previous report {previous.report_id} is recorded as aborted, but its"
                " directory is not that aborted certification",
            )
    result.ok("chain")


def verify_report(
    report_dir: str | Path,
    reports_root: str | Path | None = None,
    *,
    gold: str | Path | None = None,
    trusted: dict[bytes, str] | None = None,
) -> list[Problem]:
    """Every problem :func:`verify_one` finds (an empty list: verified). ``reports_root`` is ignored
    (kept for callers)."""
    return verify_one(report_dir, gold=gold, trusted=trusted).problems


def verify_path(
    path: str | Path, *, gold: str | Path | None = None, trusted: dict[bytes, str] | None = None
) -> list[ReportVerification]:
    """Verify a report directory, its ``lock.json``, or every report under a reports root.

    For a reports root, reports the ledgers know but the disk lacks are found too. Raises
    :class:`WorkbenchError` when ``path`` is neither.
    """
    p = resolve_report_path(path)
    if not p.exists():
        raise WorkbenchError(
            "nothing to verify",
            [
                Problem(
                    location=str(path),
                    code="report_missing",
                    message="no such file or directory",
                    fix=(
                        "point at a report directory (reports/<candidate>/<version>/<n>), its"
                        " lock.json, or a reports root"
                    ),
                )
            ],
        )
    if not p.is_dir():
        raise WorkbenchError(
            "nothing to verify",
            [
                Problem(
                    location=str(path),
                    code="not_a_report",
                    message="not a report directory or a lock.json",
                    fix=(
                        "point at a report directory (reports/<candidate>/<version>/<n>), its"
                        " lock.json, or a reports root"
                    ),
                )
            ],
        )
    if (p / LOCK_FILE).exists() or read_marker(p) is not None:
        return [verify_one(p, gold=gold, trusted=trusted)]
    dirs = report_dirs(p)
    if not dirs:
        raise WorkbenchError(
            "nothing to verify",
            [
                Problem(
                    location=str(path),
                    code="not_a_report",
                    message="the directory holds no lock.json and no reports",
                    fix=(
                        "point at a report directory (reports/<candidate>/<version>/<n>), its"
                        " lock.json, or a reports root"
                    ),
                )
            ],
        )
    out = [verify_one(d, gold=gold, trusted=trusted) for d in dirs if (d / LOCK_FILE).exists()]
    if gold is not None:
        flagged = {pr.location for r in out for pr in r.problems if pr.code == "report_missing"}
        out += [m for m in _missing_from_root(p, gold) if str(m.path) not in flagged]
    return out


def _missing_from_root(reports_root: Path, gold: str | Path) -> list[ReportVerification]:
    """Reports the dataset's ledger records under this reports root that are not on disk."""
    ledger = HeldOutLedger(ledger_path_for(gold))
    out = []
    base = reports_root.resolve()
    for e in ledger.read().entries:
        if (
            e.event == "started"
            and e.reports_root == str(base)
            and not (base / e.report_id).is_dir()
        ):
            missing = ReportVerification(path=base / e.report_id, report_id=e.report_id)
            missing.fail(
                "ledger",
                base / e.report_id,
                "report_missing",
                f"the ledger records report {e.report_id} (started {e.when:%Y-%m-%d %H:%M} by"
                f" {e.who}) but it is not on disk",
                "restore the report; reports are never deleted",
            )
            out.append(missing)
    return out
