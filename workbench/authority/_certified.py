"""What a locked certification report says: what it saw and what it grants (:func:`read_report`),
and the last certified report of a judge that verifies (:func:`last_certified`)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .._docs import add_field_docs
from .._io import read_json_file, sha256_file
from .._signing import LockSignature
from ..errors import Problem, WorkbenchError, problem
from ._grant import AuthorityGrant, grant_for

GATE_FILE = "gate.json"
RUN_MANIFEST = "restricted/run/manifest.json"


class ReportFacts(BaseModel):
    """A certification report as the authority commands read it (:func:`read_report`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=add_field_docs)

    report_id: str
    """``<candidate>/<version>/<n>``."""
    report_dir: str
    """Absolute path of the report directory."""
    created_at: datetime
    """When the report was locked."""
    candidate: str
    """``name@version`` certified."""
    candidate_fingerprint: str
    """Its fingerprint."""
    outcome: str
    """The locked outcome."""
    lock_sha256: str
    """The lock's hash."""
    verified: bool
    """Whether ``workbench verify`` finds nothing wrong with it (False also when not checked)."""
    problems: list[str] = Field(default_factory=list)
    """What verification found, one line each."""
    policy: str | None
    """``name@version`` of the policy certified under."""
    policy_sha256: str | None
    """sha256 of the report's policy copy, as locked."""
    ragas_version: str | None
    """The Ragas version installed when it was certified."""
    rubric_version: str | None
    """The gold's rubric version it was certified against."""
    dataset_sha256: str | None
    """The gold dataset's hash it was certified on."""
    gold_release: str | None
    """The frozen gold release of that dataset state (None: not frozen)."""
    gold: str | None
    """Absolute path of the gold dataset directory it was certified on."""
    model: str | None
    """The judge's model name as certified (None for deterministic judges)."""
    grant: AuthorityGrant
    """What it grants: at most its policy's use, only in its scope."""
    certified_by: str | None = None
    """Who certified it; never its own authority's approver."""
    signature: LockSignature | None = None
    """The lock's Ed25519 signature (None: unsigned)."""

    @property
    def certified(self) -> bool:
        """Outcome ``certified`` and verified: complete evidence."""
        return self.outcome == "certified" and self.verified


def open_report(
    report_dir: str | Path,
    *,
    verify: bool = True,
    gold: str | Path | None = None,
    point: str = "point",
    trusted: dict[bytes, str] | None = None,
) -> tuple[Path, Any, dict[str, Any], list[Problem]] | tuple[Path, None, None, list[Problem]]:
    """A report's directory, lock and ``gate.json`` (None when unreadable) with what verification
    found; never raises for bad content. ``point`` begins the fixes; ``gold``: verify against its
    ledger; ``trusted``: the keys the signature must be by."""
    from .._lock import LOCK_FILE, read_lock, verify_lock

    root = Path(report_dir)
    if root.name == LOCK_FILE and root.is_file():
        root = root.parent
    loc = str(root)
    if not (root / LOCK_FILE).is_file():
        message = "no certification report here (no lock.json)"
        fix = f"{point} at reports/<candidate>/<version>/<n> written by `workbench certify`"
        return root, None, None, [problem(loc, "report_missing", message, fix)]
    fix = (
        "restore the report as certified (`workbench verify` names every change); an altered"
        " report is no evidence"
    )
    problems = [
        problem(
            p.location,
            "report_unverified",
            f"the report does not verify: {p.message} [{p.code}]",
            fix,
        )
        for p in (verify_lock(root, gold=gold, trusted=trusted).problems if verify else [])
        if p.severity == "error"
    ]
    try:
        lock = read_lock(root)
        gate = read_json_file(root / GATE_FILE)
        if not isinstance(gate, dict):
            raise ValueError("gate.json is not a JSON object")
    except (OSError, ValueError) as exc:
        why = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        message = f"lock.json or gate.json cannot be read ({why})"
        problems.append(
            problem(loc, "report_unreadable", message, f"{point} at an intact certification report")
        )
        return root, None, None, problems
    return root, lock, gate, problems


def _grant(
    root: Path, lock: Any, gate: dict[str, Any], problems: list[Problem]
) -> tuple[AuthorityGrant, str | None, str | None]:
    """What the report's own policy copy grants (and that policy's label and sha256)."""
    from ..policy import load_policy

    def nothing(why: str) -> AuthorityGrant:
        return AuthorityGrant(
            policy=None,
            outcome=lock.outcome,
            requested=None,
            use="none",
            scope=None,
            withheld=[why],
            report_id=lock.report_id,
            lock_sha256=lock.lock_sha256,
        )

    rel = lock.input_files.get("policy")
    if not rel or not (root / rel).is_file():
        message = "the report holds no copy of the policy it was certified under"
        fix = "point at a report written by `workbench certify`"
        problems.append(problem(str(root), "report_policy_missing", message, fix))
        return nothing("the report's policy copy is missing"), None, None
    sha = sha256_file(root / rel)
    try:
        policy = load_policy(root / rel)
    except WorkbenchError as exc:
        problems += exc.problems
        return nothing("the report's policy copy does not load"), None, sha
    fix = "restore the report as certified"
    if sha != lock.evidence.get("policy"):
        message = "the report's policy copy is not the one its lock records"
        problems.append(problem(str(root / rel), "report_policy_changed", message, fix))
    if gate.get("outcome") != lock.outcome:
        message = f"gate.json says {gate.get('outcome')!r}, the lock {lock.outcome!r}"
        problems.append(problem(str(root / GATE_FILE), "report_outcome_mismatch", message, fix))
    grant = grant_for(policy, gate, report_id=lock.report_id, lock_sha256=lock.lock_sha256)
    return grant, policy.label, sha


def read_report(
    report_dir: str | Path,
    *,
    verify: bool = True,
    gold: str | Path | None = None,
    trusted: dict[bytes, str] | None = None,
) -> tuple[ReportFacts | None, list[Problem]]:
    """Verify ``report_dir`` and read its facts (``(None, problems)`` when unreadable); never
    raises for bad content. ``facts.verified`` is False with any problem or without ``verify``."""
    root, lock, gate, problems = open_report(report_dir, verify=verify, gold=gold, trusted=trusted)
    if lock is None or gate is None:
        return None, problems
    grant, policy_label, policy_sha = _grant(root, lock, gate, problems)
    try:
        raw = read_json_file(root / RUN_MANIFEST)
    except (OSError, ValueError):
        raw = None
    manifest: dict[str, Any] = raw if isinstance(raw, dict) else {}
    judge: dict[str, Any] = manifest["judge"] if isinstance(manifest.get("judge"), dict) else {}
    facts = ReportFacts(
        report_id=lock.report_id,
        report_dir=str(root.resolve()),
        created_at=lock.created_at,
        candidate=lock.candidate,
        candidate_fingerprint=lock.candidate_fingerprint,
        outcome=lock.outcome,
        lock_sha256=lock.lock_sha256,
        verified=verify and not problems,
        problems=[p.format() for p in problems],
        policy=policy_label,
        policy_sha256=policy_sha,
        ragas_version=lock.versions.get("ragas"),
        rubric_version=gate.get("rubric_version"),
        dataset_sha256=lock.evidence.get("gold_dataset"),
        gold_release=manifest.get("gold_release"),
        gold=lock.gold,
        model=judge.get("model"),
        grant=grant,
        certified_by=lock.ledger_entry.get("who"),
        signature=lock.signature,
    )
    return facts, problems


def _split(judge: str) -> tuple[str, str | None]:
    name, _, version = judge.partition("@")
    return name, (version or None)


def last_certified(
    judge: str,
    reports_root: str | Path = "reports",
    *,
    exclude_version: str | None = None,
    gold: str | Path | None = None,
) -> ReportFacts | None:
    """The newest report of ``judge`` (a name, or ``name@version``) under ``reports_root`` whose
    outcome is ``certified`` and which verifies, or None; ``exclude_version`` is left out."""
    from .._lock import LOCK_FILE, report_dirs

    name, version = _split(judge)
    candidates: list[tuple[datetime, Path]] = []
    for d in report_dirs(Path(reports_root)):
        if (
            d.parent.parent.name != name
            or (version is not None and d.parent.name != version)
            or d.parent.name == exclude_version
        ):
            continue
        try:
            lock = json.loads((d / LOCK_FILE).read_text(encoding="utf-8"))
            created = datetime.fromisoformat(str(lock["created_at"]).replace("Z", "+00:00"))
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            continue
        if lock.get("outcome") == "certified":
            candidates.append((created, d))
    for _, d in sorted(candidates, key=lambda item: item[0], reverse=True):
        facts, _problems = read_report(d, gold=gold)
        if facts is not None and facts.certified:
            return facts
    return None
