"""``workbench verify`` of a certification (after :func:`workbench._lock.verify_lock`): the lock
against its ledger entry, the gate re-run, the ledger, the held-out records, the chain."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from .._io import iter_jsonl_lines, read_json_file
from .._lock import (
    LOCK_FILE,
    RETIRED_LOCKS,
    Lock,
    Verification,
    read_lock,
    report_dirs,
    resolve_report_path,
    verify_lock,
)
from ..errors import Problem, WorkbenchError, refusal
from ..gold import GoldCase, load_dataset
from ..heldout import (
    HeldOutLedger,
    LedgerEntry,
    PreviousReport,
    content_key,
    gold_directory,
    ledger_path_for,
)
from ..review import transition_reviews_path_for
from ._listing import closing_entry, read_marker
from ._provenance import Provenance, cap_unpinned
from ._recompute import GATE_FILE, HELD_OUT_GOLD, EvidenceError, read_gold_evidence, recompute

verify_one = verify_lock
"""Verify one locked report of any kind (:func:`workbench._lock.verify_lock`)."""
_WHERE = (
    "point at a report directory (reports/<candidate>/<version>/<n>), its lock.json, a reports"
    " root, or a run directory locked with --lock"
)


def _canon(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)


def check_certification(
    root: Path, lock: Lock, result: Verification, gold: str | Path | None
) -> None:
    """The checks of a certification-like report (module doc); without ``gold``, unverified."""
    _check_consistency(root, lock, result)
    provenance = _check_provenance(root, lock, result)
    _check_outcome(root, lock, result, gold, provenance)
    if gold is None:
        result.checks["gold"] = "not checked: no --gold"
        result.unverified = (
            "the held-out records stored in the report were not compared with the real gold"
            " dataset: verify with --gold G (the certified dataset, whose ledger must record"
            " this lock)"
        )
    else:
        _check_gold(root, lock, gold, result)
    entries, started = _check_ledger(root, lock, gold, result)
    _check_chain(root, lock, entries, started, result)


def _check_provenance(root: Path, lock: Lock, result: Verification) -> Provenance | None:
    if lock.provenance is None:
        result.checks["provenance"] = "not recorded (a lock written before provenance was locked)"
        return None
    try:
        provenance = Provenance.model_validate(lock.provenance)
    except ValueError:
        message = "the lock's provenance is not a workbench version, notebook and package hash"
        result.fail("provenance", root / LOCK_FILE, "provenance_invalid", message)
        return None
    advisory = " - ADVISORY: not a certification" if provenance.advisory else ""
    result.checks["provenance"] = (
        f"workbench {provenance.workbench}, {provenance.notebook} notebook sha256"
        f" {provenance.notebook_sha256[:12]}, package sha256"
        f" {provenance.package_sha256[:12]}{advisory}"
    )
    return provenance


def _check_gold(root: Path, lock: Lock, gold: str | Path, result: Verification) -> None:
    """The stored held-out records against the held-out cases of ``gold``: exactly them while
    it is the certified dataset; once it moved on, each must still be one of the held-out
    records in its history (so a later, legitimate change is not called a forgery)."""
    failed = [b.get("code") for b in lock.blockers] == ["certification_failed"]
    if not (root / HELD_OUT_GOLD).exists() and failed:
        result.ok("gold", "ok (certification failed before held-out records were stored)")
        return
    try:
        stored = read_gold_evidence(root, str(lock.evidence.get("gold_dataset")))
        history, active, sha, where = _gold_held_out(gold)
    except WorkbenchError as exc:
        result.problems.extend(exc.problems)
        result.checks["gold"] = "failed"
        return
    except (OSError, ValueError, RecursionError) as exc:
        message = f"the stored held-out records cannot be read ({type(exc).__name__})"
        result.fail("gold", root / HELD_OUT_GOLD, "evidence_missing", message)
        return
    mine = {c.case_id: content_key(c) for c in stored.partition("held_out")}
    same = sha is not None and sha == lock.evidence.get("gold_dataset")
    changed = "stored in the report differ from every version of the gold dataset's record (label,"
    checks = {
        "gold_case_changed": (
            [i for i in mine if i in history and mine[i] not in history[i]],
            changed + " slice, input or response)",
        ),
        "gold_case_missing": (
            [i for i in mine if i not in history],
            "stored in the report are not held-out cases of the gold dataset",
        ),
        "gold_case_added": (
            [i for i in active if i not in mine] if same else [],
            "of the gold dataset are not in the report",
        ),
    }
    fix = (
        "verify against the dataset the report certified; a report whose stored held-out records"
        " are not the real gold's is no certification of it"
    )
    for code, (ids, what) in checks.items():
        if ids:
            shown = ", ".join(sorted(ids)[:10]) + (" ..." if len(ids) > 10 else "")
            result.fail("gold", where, code, f"{len(ids)} held-out case(s) {what}: {shown}", fix)
    since = "" if same else "; the gold changed since certification (`workbench status` names it)"
    result.ok("gold", f"ok ({len(mine)} held-out case(s) as in {where}{since})")


def _gold_held_out(gold: str | Path) -> tuple[dict[str, set[str]], set[str], str | None, str]:
    path = gold_directory(gold) / "gold.jsonl"
    try:
        dataset = load_dataset(gold)
        sha: str | None = dataset.sha256
        records: Iterable[GoldCase] = dataset.records  # every version, superseded ones too
    except WorkbenchError:  # staleness, not forgery: the records are read one by one
        if not path.is_file():
            message = "the gold dataset to verify against has no gold.jsonl"
            fix = "pass --gold the certified dataset directory"
            raise refusal("gold not found", str(path), "gold_missing", message, fix) from None
        sha, records = None, _readable_records(path)
    history: dict[str, set[str]] = {}
    superseded: set[str] = set()
    for case in records:
        if case.supersedes:
            superseded.add(case.supersedes)
        if case.partition == "held_out":
            history.setdefault(case.case_id, set()).add(content_key(case))
    return history, set(history) - superseded, sha, str(path)


def _readable_records(path: Path) -> Iterator[Any]:
    for _number, line in iter_jsonl_lines(path):
        with contextlib.suppress(ValueError):
            yield GoldCase.model_validate_json(line)


def _check_consistency(root: Path, lock: Lock, result: Verification) -> None:
    """The lock against its own copy of the started ledger entry."""
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
        ("budget_usd", lock.budget_usd, entry.get("budget_usd")),
        ("evaluated_at", lock.evaluated_at and lock.evaluated_at.isoformat(), _iso(entry)),
        ("previous_report", _dump(lock.previous_report), entry.get("previous_report")),
        ("kind", lock.kind, entry.get("kind", "certification")),
        ("baseline", lock.baseline, entry.get("baseline")),
        ("baseline_fingerprint", lock.baseline_fingerprint, entry.get("baseline_fingerprint")),
        ("resumes", lock.resumes.report_id if lock.resumes else None, entry.get("resumes")),
    ]
    for name, mine, recorded in pairs:
        if _canon(mine) != _canon(recorded):
            message = f"the lock's {name} ({mine!r}) differs from its ledger entry's ({recorded!r})"
            result.fail("lock", root / LOCK_FILE, "lock_inconsistent", message)


def _dump(previous: PreviousReport | None) -> dict[str, Any] | None:
    return previous.model_dump(mode="json") if previous else None


def _iso(entry: dict[str, Any]) -> str | None:
    value = entry.get("when")
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).isoformat()
    except ValueError:
        return value


def _gate_file(root: Path, result: Verification) -> dict[str, Any]:
    with contextlib.suppress(OSError, ValueError, RecursionError):
        if isinstance(gate := read_json_file(root / GATE_FILE), dict):
            return gate
    message = "gate.json is missing or unreadable"
    result.fail("outcome", root / GATE_FILE, "gate_unreadable", message)
    return {}


def _check_outcome(
    root: Path,
    lock: Lock,
    result: Verification,
    gold: str | Path | None = None,
    provenance: Provenance | None = None,
) -> None:
    gate_file = _gate_file(root, result)
    try:
        again = recompute(root, lock)
    except EvidenceError as exc:
        result.problems.append(exc.problem)
        result.checks["outcome"] = "failed"
        return
    if again.gate is None:  # the notebook failed before the gate: only incomplete is possible
        if {lock.outcome, gate_file.get("outcome")} != {"evaluation_incomplete"}:
            message = (
                "the certification failed before its gate ran, so its outcome can only be"
                f" evaluation_incomplete; the lock says {lock.outcome}"
            )
            result.fail("outcome", root / LOCK_FILE, "outcome_mismatch", message)
        result.ok("outcome", "ok (certification failed before the gate: incomplete)")
        return
    _compare_gate(root, lock, cap_unpinned(again.gate, provenance), gate_file, result)
    if _canon(lock.figures) != _canon(again.figures):
        message = (
            "the lock's figures differ from the alignment recomputed from the run records and gold"
            " evidence"
        )
        result.fail("outcome", root / LOCK_FILE, "figures_mismatch", message)
    if again.migration is not None:
        _check_migration(root, lock, again.migration, gold, result)
    result.ok("outcome", "ok (recomputed from the evidence)")


def _compare_gate(
    root: Path,
    lock: Lock,
    expected: dict[str, Any],
    gate_file: dict[str, Any],
    result: Verification,
) -> None:
    if lock.outcome != expected["outcome"]:
        message = (
            f"the lock says {lock.outcome} but the gate re-run on the report's evidence says"
            f" {expected['outcome']}"
        )
        result.fail("outcome", root / LOCK_FILE, "outcome_mismatch", message)
    if _canon(lock.blockers) != _canon(expected["blockers"]):
        mine = [b.get("code") for b in lock.blockers]
        theirs = [b["code"] for b in expected["blockers"]]
        same = "same codes, different messages or figures"
        detail = f"codes {mine} vs {theirs}" if mine != theirs else same
        message = (
            f"the lock's blockers differ from the gate re-run on the report's evidence ({detail})"
        )
        result.fail("outcome", root / LOCK_FILE, "blockers_mismatch", message)
    for key in ("outcome", "blockers", "waived", "expired_overrides"):
        if _canon(gate_file.get(key)) != _canon(expected.get(key)):
            message = f"gate.json's {key} differs from the gate re-run on the report's evidence"
            result.fail("outcome", root / GATE_FILE, "gate_mismatch", message)


def _check_migration(
    root: Path, lock: Lock, migration: Any, gold: str | Path | None, result: Verification
) -> None:
    from ._migration import migration_problems

    gold_dir = Path(gold) if gold is not None else (Path(lock.gold) if lock.gold else None)
    log = transition_reviews_path_for(gold_dir) if gold_dir and gold_dir.exists() else None
    for problem in migration_problems(root, lock, migration, log):
        result.fail("migration", problem.location, problem.code, problem.message)
    result.ok("migration", "ok (transitions and reviews recomputed)")


def _locate_ledger(lock: Lock, gold: str | Path | None, result: Verification) -> Path | None:
    if gold is not None:
        return ledger_path_for(gold)
    if lock.gold and Path(lock.gold).is_dir():
        path = ledger_path_for(lock.gold)
        if lock.ledger_path and Path(lock.ledger_path) != path:
            message = (
                f"the lock names ledger {lock.ledger_path}, but the certified dataset's ledger is"
                f" {path}"
            )
            result.fail("ledger", lock.ledger_path, "ledger_mismatch", message)
        return path
    result.checks["ledger"] = (
        f"not checked: the certified dataset {lock.gold or '(not recorded)'} is not on this"
        " machine (pass --gold to check against its ledger)"
    )
    return None


def _read_ledger(
    lock: Lock, gold: str | Path | None, result: Verification
) -> tuple[Path | None, list[LedgerEntry] | None]:
    try:
        path = _locate_ledger(lock, gold, result)
    except WorkbenchError as exc:
        result.problems.extend(exc.problems)
        result.checks["ledger"] = "failed"
        return None, None
    if path is None:
        return None, None
    if not path.is_file():
        message = "the held-out ledger of the certified dataset is missing"
        fix = "restore the ledger from version control or a backup"
        result.fail("ledger", path, "ledger_missing", message, fix)
        return None, None
    ledger = HeldOutLedger(path)
    with contextlib.suppress(WorkbenchError, OSError):  # a damaged ledger is reported below
        ledger.reconcile()  # dead certifications are marked aborted first
    read = ledger.read()
    result.problems += read.problems
    if read.problems:
        result.checks["ledger"] = "failed"
    return path, read.entries


def _check_ledger(
    root: Path, lock: Lock, gold: str | Path | None, result: Verification
) -> tuple[list[LedgerEntry] | None, LedgerEntry | None]:
    path, entries = _read_ledger(lock, gold, result)
    if path is None or entries is None:
        return entries, None
    entry_id = lock.ledger_entry.get("entry_id")
    started = next((e for e in entries if e.entry_id == entry_id and e.event == "started"), None)
    if started is None:
        message = (
            f"the ledger has no started entry {entry_id} for this report (a line was removed, or"
            " the lock names an entry that never existed)"
        )
        result.fail("ledger", path, "ledger_entry_missing", message)
        return entries, None
    if _canon(started.model_dump(mode="json")) != _canon(lock.ledger_entry):
        message = "the lock's copy of its started ledger entry differs from the ledger's"
        result.fail("ledger", path, "ledger_mismatch", message)
    _check_closing(path, lock, closing_entry(entries, started.entry_id), result)
    reports_root = _reports_root(root, lock)
    if reports_root is not None:
        for e in entries:
            if e.event == "started" and e.reports_root == started.reports_root:
                _check_on_disk(reports_root, e, result)
    result.ok("ledger")
    return entries, started


def _check_closing(
    path: Path, lock: Lock, closing: LedgerEntry | None, result: Verification
) -> None:
    if closing is None or closing.event != "finished":
        state = "still open" if closing is None else closing.event
        message = f"the ledger does not record this certification as finished ({state})"
        result.fail("ledger", path, "ledger_not_finished", message)
    elif closing.lock_sha256 != lock.lock_sha256:
        message = (
            f"the ledger recorded lock sha256 {closing.lock_sha256} for {lock.report_id}; this lock"
            f" is {lock.lock_sha256} (the lock was rewritten)"
        )
        result.fail("ledger", path, "lock_not_in_ledger", message)
    elif closing.outcome != lock.outcome:
        message = (
            f"the ledger recorded outcome {closing.outcome} for {lock.report_id}; the lock says"
            f" {lock.outcome}"
        )
        result.fail("ledger", path, "outcome_not_in_ledger", message)


def _check_on_disk(reports_root: Path, entry: LedgerEntry, result: Verification) -> None:
    if not (reports_root / entry.report_id).is_dir():
        message = (
            f"the ledger records report {entry.report_id} (started {entry.when:%Y-%m-%d %H:%M} by"
            f" {entry.who}) but it is not on disk"
        )
        fix = "restore the report; reports are never deleted"
        result.fail("ledger", reports_root / entry.report_id, "report_missing", message, fix)


def _reports_root(root: Path, lock: Lock) -> Path | None:
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
    result: Verification,
) -> None:
    if started is not None and _canon(_dump(started.previous_report)) != _canon(
        _dump(lock.previous_report)
    ):
        recorded, mine = started.previous_report, lock.previous_report
        message = (
            f"the ledger recorded previous report {recorded and recorded.report_id!r} for this"
            f" report, the lock names {mine and mine.report_id!r}"
        )
        result.fail("chain", root / LOCK_FILE, "chain_mismatch", message)
    reports_root = _reports_root(root, lock)
    if reports_root is None:
        result.ok("chain", "not checked: the report is not inside its reports root (copied alone)")
        return
    if lock.previous_report is None:
        _check_first(root, lock, reports_root, result)
    for link in (lock.previous_report, lock.resumes):
        if link is not None:
            _check_link(reports_root, link, entries, result)
    result.ok("chain")


def _check_first(root: Path, lock: Lock, reports_root: Path, result: Verification) -> None:
    """A lock naming no previous report: no earlier report of its version may exist."""
    name, version, n = lock.report_id.split("/")
    earlier = [
        d
        for d in report_dirs(reports_root)
        if (d.parent.parent.name, d.parent.name) == (name, version)
        and int(d.name) < int(n)
        and ((d / LOCK_FILE).exists() or read_marker(d) is not None)
    ]
    if earlier:
        message = (
            "the lock names no previous report, but"
            f" {earlier[-1].relative_to(reports_root).as_posix()} precedes it"
        )
        fix = "restore the original lock; reports form a chain"
        result.fail("chain", root / LOCK_FILE, "chain_broken", message, fix)


def _check_link(
    reports_root: Path,
    link: PreviousReport,
    entries: list[LedgerEntry] | None,
    result: Verification,
) -> None:
    linked = reports_root / link.report_id
    if not linked.is_dir():
        message = f"the linked report {link.report_id} is missing"
        fix = "restore the report; reports form a chain and none may be removed"
        result.fail("chain", linked, "chain_broken", message, fix)
    elif link.status == "locked":
        try:
            other = read_lock(linked)
            intact = other.lock_sha256 == link.lock_sha256 == other.content_sha256()
        except (ValueError, OSError, RecursionError):
            intact = False
        if not intact:
            message = (
                f"the lock of {link.report_id} is not the one this report's chain recorded (its"
                " hash differs, or its content no longer hashes to it)"
            )
            fix = "restore the linked report's original lock"
            result.fail("chain", linked / LOCK_FILE, "chain_broken", message, fix)
    elif link.status == "aborted" and not _still_aborted(linked, entries):
        message = (
            f"the previous report {link.report_id} is recorded as aborted, but its directory is"
            " not that aborted certification"
        )
        result.fail("chain", linked, "chain_broken", message)


def _still_aborted(directory: Path, entries: list[LedgerEntry] | None) -> bool:
    marker = read_marker(directory)
    if (directory / LOCK_FILE).exists() or marker is None:
        return False
    if entries is None:
        return True
    closing = closing_entry(entries, marker["entry_id"])
    return closing is not None and closing.event == "aborted"


def verify_report(
    report_dir: str | Path,
    reports_root: str | Path | None = None,
    *,
    gold: str | Path | None = None,
    trusted: dict[bytes, str] | None = None,
) -> list[Problem]:
    """Every problem :func:`verify_one` finds (empty: verified); ``reports_root`` is ignored."""
    return verify_lock(report_dir, gold=gold, trusted=trusted).problems


def verify_path(
    path: str | Path, *, gold: str | Path | None = None, trusted: dict[bytes, str] | None = None
) -> list[Verification]:
    """Verify a locked report, its ``lock.json``, or every report under a reports root (with
    ``gold``, also those its ledger records but the disk lacks). Raises :class:`WorkbenchError`
    when ``path`` is none of these."""
    p = resolve_report_path(path)
    if p.is_dir() and _is_report(p):
        return [verify_lock(p, gold=gold, trusted=trusted)]
    dirs = report_dirs(p) if p.is_dir() else []
    if not dirs:
        code, why = ("not_a_report", "the directory holds no lock.json and no reports")
        if not p.is_dir():
            why = "not a report directory or a lock"
        if not p.exists():
            code, why = "report_missing", "no such file or directory"
        raise refusal("nothing to verify", str(path), code, why, _WHERE)
    out = [verify_lock(d, gold=gold, trusted=trusted) for d in dirs if (d / LOCK_FILE).exists()]
    if gold is not None:
        flagged = {pr.location for r in out for pr in r.problems if pr.code == "report_missing"}
        out += [m for m in _missing_from_root(p, gold) if str(m.path) not in flagged]
    return out


def _is_report(directory: Path) -> bool:
    return (
        (directory / LOCK_FILE).exists()
        or read_marker(directory) is not None
        or any((directory / name).exists() for name in RETIRED_LOCKS)
    )


def _missing_from_root(reports_root: Path, gold: str | Path) -> list[Verification]:
    base = reports_root.resolve()
    out = []
    for e in HeldOutLedger(ledger_path_for(gold)).read().entries:
        if e.event == "started" and e.reports_root == str(base):
            missing = Verification(path=base / e.report_id, report_id=e.report_id)
            _check_on_disk(base, e, missing)
            out += [missing] if missing.problems else []
    return out
