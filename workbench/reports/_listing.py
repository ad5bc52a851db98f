"""The reports root read with the held-out ledger: each report's ``started.json`` ties it to its
ledger entry, so a killed certification stays tied to it and a truncated ledger is caught."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

from .._io import read_jsonl_records
from .._lock import LOCK_FILE, STARTED_FILE, read_lock, report_dirs
from ..errors import Problem, WorkbenchError, problem, refusal
from ..heldout import HeldOutLedger, LedgerEntry, PreviousReport, check_recorded, write_marker
from ..heldout import read_marker as read_heldout_marker


def write_started_marker(report_dir: Path, entry: LedgerEntry, ledger_path: Path) -> None:
    """Tie a freshly allocated report directory to its ``started`` ledger entry."""
    write_marker(report_dir / STARTED_FILE, "workbench.certification_started", entry, ledger_path)


def read_marker(report_dir: Path) -> dict[str, Any] | None:
    """The ``started.json`` of a report directory (None when absent or unreadable)."""
    return read_heldout_marker(report_dir / STARTED_FILE)


def closing_entry(entries: list[LedgerEntry], entry_id: str) -> LedgerEntry | None:
    """The entry that closed ``entry_id`` (finished or aborted), or None while it is open."""
    return next((e for e in entries if e.opens == entry_id and e.event != "started"), None)


def ledgers_of(reports_root: Path) -> list[Path]:
    """The ledgers the reports under ``reports_root`` were recorded in."""
    paths: dict[str, None] = {}
    for d in report_dirs(reports_root):
        marker = read_marker(d)
        if marker is not None:
            paths[marker["ledger_path"]] = None
            continue
        try:
            lock = read_lock(d)
        except (ValueError, OSError, RecursionError):
            continue
        if lock.ledger_path:
            paths[lock.ledger_path] = None
    return [Path(p) for p in paths]


def check_ledger_complete(
    ledger: HeldOutLedger, entries: list[LedgerEntry], reports_root: Path
) -> None:
    """Refuse when a report on disk names a ledger entry this ledger lacks (lines were removed)."""
    recorded = [
        (f"report {marker.get('report_id', d.name)}", marker["entry_id"])
        for d in report_dirs(reports_root)
        if (marker := read_marker(d)) is not None and Path(marker["ledger_path"]) == ledger.path
    ]
    check_recorded(ledger, entries, recorded)


def _status_in(
    ledger_path: Path, entry_id: str, ledger: HeldOutLedger, entries: list[LedgerEntry]
) -> tuple[str | None, LedgerEntry | None]:
    pool = entries if ledger_path == ledger.path else HeldOutLedger(ledger_path).read().entries
    closing = closing_entry(pool, entry_id)
    if not any(e.entry_id == entry_id for e in pool):
        return None, None
    return ("open" if closing is None else closing.event), closing


def previous_report(
    reports_root: Path,
    name: str,
    version: str,
    n: int,
    ledger: HeldOutLedger,
    entries: list[LedgerEntry],
) -> PreviousReport | None:
    """The report before ``n`` of this candidate version (locked, aborted or still running); a
    directory that never got a ledger entry is skipped."""
    for k in range(n - 1, 0, -1):
        d = reports_root / name / version / str(k)
        report_id = f"{name}/{version}/{k}"
        if (d / LOCK_FILE).exists():
            try:
                return PreviousReport(
                    report_id=report_id, lock_sha256=read_lock(d).lock_sha256, status="locked"
                )
            except (ValueError, OSError, RecursionError):
                message = f"the lock of the previous report {report_id} cannot be read"
                fix = f"run `workbench verify {d}` and restore the report; reports form a chain"
                raise refusal(
                    "cannot certify", str(d / LOCK_FILE), "previous_report_unreadable", message, fix
                ) from None
        marker = read_marker(d)
        if marker is None:
            continue
        status, closing = _status_in(
            Path(marker["ledger_path"]), marker["entry_id"], ledger, entries
        )
        if status == "finished" and closing is not None:  # its lock is gone: verify says so
            return PreviousReport(report_id=report_id, lock_sha256=closing.lock_sha256)
        if status in ("open", "aborted"):
            return PreviousReport(report_id=report_id, status=_STATUS[status])
    return None


_STATUS: dict[str, Any] = {"open": "running", "aborted": "aborted"}


def reconcile_ledgers(paths: list[Path]) -> list[Problem]:
    """Mark dead certifications ``aborted`` in each ledger; problems of ledgers that cannot be."""
    problems: list[Problem] = []
    for path in paths:
        if not path.exists():
            continue
        try:
            HeldOutLedger(path).reconcile()
        except WorkbenchError as exc:
            problems.extend(exc.problems)
        except OSError as exc:
            message = f"cannot mark aborted certifications ({exc.strerror or exc})"
            fix = "make the ledger's directory writable"
            problems.append(problem(str(path), "ledger_unwritable", message, fix))
    return problems


def list_reports(
    reports_root: str | Path = "reports", *, ledgers: list[Path] | None = None
) -> list[dict[str, Any]]:
    """Every report directory under ``reports_root``, newest last: locked reports with their
    outcome, others as ``aborted``, ``running``, ``unrecorded`` (dead certifications first
    marked ``aborted``)."""
    root = Path(reports_root)
    paths = ledgers_for(root, ledgers or [])
    reconcile_ledgers(paths)
    entries = {p: HeldOutLedger(p).read().entries for p in paths}
    rows = [_row(d, d.relative_to(root).as_posix(), entries) for d in report_dirs(root)]
    rows.sort(key=lambda r: (r.get("created_at") or "", r["report_id"]))
    return rows


def format_report_row(row: dict[str, Any]) -> str:
    """One row of :func:`list_reports` as ``workbench reports`` prints it."""
    rerun = ("rerun: " + row["rerun_reason"]) if row.get("rerun_reason") else ""
    return (
        f"{(row.get('created_at') or '')[:19]:<20} {row['report_id']:<36} {row['status']:<10}"
        f" {row['outcome']:<22} blockers {row.get('blockers', '-')!s:<3} {row.get('who') or '':<10}"
        f" {rerun}"
    )


def ledgers_for(reports_root: str | Path, extra: list[Path]) -> list[Path]:
    """``extra`` ledgers, then those the reports under ``reports_root`` were recorded in."""
    return list(dict.fromkeys([*extra, *ledgers_of(Path(reports_root))]))


def ledger_problems(reports_root: str | Path, extra: list[Path]) -> list[Problem]:
    """What is wrong with the chain of each ledger of :func:`ledgers_for`."""
    return [
        p for path in ledgers_for(reports_root, extra) for p in HeldOutLedger(path).read().problems
    ]


class LedgerBlock(TypedDict):
    """One held-out ledger as ``workbench reports --ledger`` shows it (its JSON output)."""

    ledger: str
    exists: bool
    chain_ok: bool
    problems: list[dict[str, Any]]
    entries: list[dict[str, Any]]


def read_ledgers(
    reports_root: str | Path, extra: list[Path]
) -> tuple[list[LedgerBlock], list[Problem]]:
    """Every held-out use in the ledgers of :func:`ledgers_for`, and every problem found."""
    paths = ledgers_for(reports_root, extra)
    if not paths:
        message = "no report here names a held-out ledger"
        fix = "pass --gold DATASET to show that dataset's ledger"
        raise refusal("no held-out ledger", str(reports_root), "ledger_not_found", message, fix)
    problems = reconcile_ledgers(paths)
    blocks: list[LedgerBlock] = []
    for path in paths:
        read = HeldOutLedger(path).read()
        problems += [p for p in read.problems if p not in problems]
        blocks.append(
            {
                "ledger": str(path),
                "exists": path.exists(),
                "chain_ok": not read.problems,
                "problems": [p.model_dump(mode="json") for p in read.problems],
                "entries": [e.model_dump(mode="json") for e in read.entries],
            }
        )
    return blocks, problems


def format_ledger(block: LedgerBlock) -> str:
    """A ledger of :func:`read_ledgers`: its state, then one line per entry."""
    state = "chain intact" if block["chain_ok"] else "CHAIN BROKEN"
    lines = [
        f"ledger {block['ledger']}: {len(block['entries'])} entries, {state}"
        + ("" if block["exists"] else " (no ledger yet)")
    ]
    lines += [
        f"{e['when'][:19]}  {e['event']:<8} {e['who']:<12} {e['candidate']:<28}"
        f" {e['candidate_fingerprint'][:12]}  {e['report_id']:<32}"
        f" {e.get('outcome') or '':<22} {e.get('rerun_reason') or ''}"
        for e in block["entries"]
    ]
    return "\n".join(lines)


def _row(d: Path, report_id: str, ledgers: dict[Path, list[LedgerEntry]]) -> dict[str, Any]:
    marker = read_marker(d)
    if (d / LOCK_FILE).exists():
        try:
            lock = read_lock(d)
        except (ValueError, OSError, RecursionError):
            started = (marker or {}).get("started_at", "")
            row = {"report_id": report_id, "status": "locked", "outcome": "(unreadable lock)"}
            return {**row, "created_at": started}
        return {
            "report_id": lock.report_id,
            "status": "locked",
            "created_at": lock.created_at.isoformat(timespec="seconds"),
            "candidate": lock.candidate,
            "outcome": lock.outcome,
            "blockers": len(lock.blockers),
            "rerun_reason": lock.rerun_reason,
            "who": lock.ledger_entry.get("who"),
            "lock_sha256": lock.lock_sha256[:12],
            "signed": lock.signature is not None,
        }
    if marker is None:
        outcome = "(no ledger entry: stopped before it started)"
        return {
            "report_id": report_id,
            "status": "unrecorded",
            "outcome": outcome,
            "created_at": "",
        }
    entries = ledgers.get(Path(marker["ledger_path"]), [])
    started = next((e for e in entries if e.entry_id == marker["entry_id"]), None)
    closing = closing_entry(entries, marker["entry_id"])
    status = (
        "unrecorded"
        if started is None
        else "running"
        if closing is None
        else ("aborted" if closing.event == "aborted" else "lock missing")
    )
    outcome = (
        f"{closing.outcome} (lock.json missing)" if closing and status == "lock missing" else status
    )
    return {
        "report_id": report_id,
        "status": status,
        "outcome": outcome,
        "created_at": str(marker.get("started_at", ""))[:19],
        "candidate": started.candidate if started else None,
        "who": started.who if started else None,
        "rerun_reason": started.rerun_reason if started else None,
    }


LEGACY_LEDGER = "held_out_ledger.jsonl"


def check_legacy_ledger(
    reports_root: Path, fingerprint: str, manifest_sha256: str, rerun_reason: str | None
) -> None:
    """Refuse a re-use recorded in a pre-chain ledger inside the reports root (it still counts)."""
    legacy = reports_root / LEGACY_LEDGER
    if not legacy.is_file() or (rerun_reason and rerun_reason.strip()):
        return
    try:
        rows = read_jsonl_records(legacy)
        if not all(isinstance(row, dict) for row in rows):
            raise ValueError("a record is not an object")
    except (OSError, ValueError, RecursionError) as exc:
        message = (
            f"the earlier held-out ledger in the reports root cannot be read ({str(exc)[:100]})"
        )
        fix = "restore it from version control: the uses it records still count"
        raise refusal(
            "cannot certify", str(legacy), "legacy_ledger_invalid", message, fix
        ) from None
    unused = {
        r.get("opens")
        for r in rows
        if r.get("event") == "finished" and r.get("held_out_used") is False
    }
    earlier = [
        str(r.get("report_id"))
        for r in rows
        if r.get("event") == "started"
        and r.get("entry_id") not in unused
        and (r.get("candidate_fingerprint"), r.get("held_out_manifest_sha256"))
        == (fingerprint, manifest_sha256)
    ]
    if earlier:
        message = (
            "the earlier held-out ledger in this reports root records this candidate fingerprint"
            f" on the same held-out manifest: {', '.join(earlier)}"
        )
        fix = (
            'pass --rerun-reason "..." to certify again; the reason is recorded in the ledger and'
            " printed in the report"
        )
        raise refusal("refusing to certify again", str(legacy), "held_out_reuse", message, fix)
