"""The one decision (:func:`decide`): a certification's outcome from the evidence stored in its
report (every file the gate reads), made by certification and again by ``workbench verify``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .._io import atomic_write_text, read_json_file, read_jsonl_records, sha256_file, write_jsonl
from .._lock import Lock
from ..align import AlignmentReport, Join, alignment_report, join_results
from ..errors import WorkbenchError, problem
from ..gold import GoldCase, GoldDataset, Rubric
from ..heldout import held_out_manifest_sha256
from ..migration import LoadedMapping, MigrationEvidence
from ..policy import (
    Blocker,
    GateResult,
    NotEvaluated,
    Policy,
    blocker,
    evaluate_gate,
    load_overrides,
    load_policy,
)
from ..runs import RunDir

RUN_DIR = "restricted/run"  # run records are case-level held-out evidence
CONTROLS_DIR = "controls"
RESTRICTED_DIR = "restricted"
GATE_FILE = "gate.json"
LINEAGE_FILE = "lineage.json"
FIGURES_FILE = "figures.json"
GOLD_DIR = "restricted/gold"
HELD_OUT_GOLD = "restricted/gold/held_out.jsonl"
RUBRIC_JSON = "restricted/gold/rubric.json"
HELD_OUT_NOT_USED = "blocking controls failed, so the held-out partition was not used"


class EvidenceError(Exception):
    """The report lacks, or cannot read, evidence the outcome is decided from."""

    def __init__(self, code: str, message: str, where: str) -> None:
        super().__init__(message)
        fix = (
            "restore the report from its original copy; an outcome that cannot be recomputed is"
            " not verified"
        )
        self.problem = problem(where, code, message, fix)


@dataclass(frozen=True)
class Subject:
    """Who the gate judges: the candidate (and, for a migration, the baseline beside it)."""

    candidate: str
    candidate_fingerprint: str
    baseline: str | None = None
    baseline_fingerprint: str | None = None


@dataclass(frozen=True)
class Decision:
    """What :func:`decide` decided from a report's files (no alignment: controls failed)."""

    gate: GateResult
    alignment: AlignmentReport | None = None
    join: Join | None = None
    migration: MigrationEvidence | None = None


@dataclass(frozen=True)
class Recomputed:
    gate: dict[str, Any] | None
    """The public gate (as in gate.json); None when certification failed before the gate."""
    figures: dict[str, Any] | None
    migration: Any = None


def lineage_blockers(rows: list[dict[str, Any]]) -> list[Blocker]:
    """One non-waivable ``lineage_failed`` blocker per lineage check that did not hold; a check
    with a ``code`` (a review finding: ``prompt_holds_held_out``) gives a blocker of that code,
    a ``warning`` check none."""
    found = [
        blocker(
            row["code"],
            f"{row['check']}: found {row['actual']}",
            evidence={"expected": str(row["expected"]), "actual": str(row["actual"])},
        )
        for row in rows
        if not row["ok"] and row.get("code")
    ]
    return found + [
        Blocker(
            code="lineage_failed",
            category="incomplete",
            slice=None,
            message=f"lineage check failed: {row['check']}",
            evidence={"expected": str(row["expected"]), "actual": str(row["actual"])},
            case_ids=[],
            waivable=False,
        )
        for row in rows
        if not row["ok"] and not row.get("code") and not row.get("warning")
    ]


def public_gate(gate: GateResult) -> dict[str, Any]:
    """The gate as shared in the report: case ids replaced by counts."""
    data = gate.model_dump(mode="json")
    for key in ("blockers", "waived"):
        for item in data.get(key, []):
            block = item.get("blocker", item)
            if block.get("case_ids"):
                block["case_count"] = len(block["case_ids"])
            block["case_ids"] = []
    return data


def figures_of(report: AlignmentReport | None) -> dict[str, Any] | None:
    """The alignment figures the gate read, per slice and overall, without case ids."""
    if report is None:
        return None
    return {
        "status": report.status,
        "overall": report.overall.model_dump(mode="json"),
        "slices": [s.model_dump(mode="json") for s in report.slices],
        "confusion": report.confusion.model_dump(mode="json"),
    }


def write_gold_evidence(report_dir: Path, dataset: GoldDataset) -> None:
    """Store the held-out gold records and the rubric."""
    held_out = [c.model_dump(mode="json") for c in dataset.partition("held_out")]
    write_jsonl(report_dir / HELD_OUT_GOLD, held_out)
    # Not key-sorted: the order of the rubric's slices is the order of the report's rows.
    rubric = json.dumps(dataset.rubric.model_dump(mode="json"), indent=2, ensure_ascii=False)
    atomic_write_text(report_dir / RUBRIC_JSON, rubric + "\n")


def read_gold_evidence(report_dir: Path, dataset_sha256: str) -> GoldDataset:
    """A :class:`GoldDataset` of the stored held-out records."""
    rubric = Rubric.model_validate(read_json_file(report_dir / RUBRIC_JSON))
    cases = [GoldCase.model_validate(row) for row in read_jsonl_records(report_dir / HELD_OUT_GOLD)]
    return GoldDataset(
        root=report_dir / GOLD_DIR,
        gold_path=report_dir / HELD_OUT_GOLD,
        rubric=rubric,
        records=tuple(cases),
        cases={c.case_id: c for c in cases},
        history={},
        superseded_by={},
        card=None,
        evidence_ids=None,
        sha256=dataset_sha256,
    )


def decide(
    report_dir: Path,
    subject: Subject,
    *,
    policy: Policy | None,
    policy_path: Path,
    dataset: GoldDataset,
    now: datetime,
    overrides: list[Any],
    suite: Any | None,
    mapping: LoadedMapping | None,
) -> Decision:
    """The gate on the evidence stored in ``report_dir``; ``dataset`` is the held-out gold stored
    in the report, ``now`` the certification's start (overrides expire against it)."""
    lineage = lineage_blockers(read_json_file(report_dir / LINEAGE_FILE))
    controls = _control_blockers(report_dir, policy, suite, subject.candidate_fingerprint)
    if controls:
        not_used = NotEvaluated(
            reason=HELD_OUT_NOT_USED,
            judge=subject.candidate,
            dataset_sha256=dataset.sha256,
            partition="held_out",
        )
        gate = evaluate_gate(
            not_used,
            policy,
            rubric=dataset.rubric,
            extra_blockers=[*controls, *lineage],
            policy_sha256=sha256_file(policy_path) if policy else None,
            fingerprint=subject.candidate_fingerprint,
        )
        return Decision(gate)
    run = RunDir(report_dir / RUN_DIR)
    lines = run.read_results(migrate=True, gold=dataset)
    join = join_results(dataset, lines, partition="held_out", location=str(run.results))
    alignment = alignment_report(
        join, results_path=str(run.results) if run.results.exists() else None
    )
    from ._migration import lifecycle_blockers

    extra, migration = lifecycle_blockers(
        report_dir, subject, policy, dataset, lines, suite, mapping
    )
    gate = evaluate_gate(
        alignment,
        policy,
        rubric=dataset.rubric,
        run=run.read_summary(),
        overrides=overrides,
        now=now,
        join=join,
        extra_blockers=[*lineage, *extra],
        fingerprint=subject.candidate_fingerprint,
    )
    return Decision(gate, alignment, join, migration)


def _control_blockers(
    report_dir: Path, policy: Policy | None, suite: Any | None, fingerprint: str
) -> list[Blocker]:
    if policy is None or policy.controls is None or suite is None:
        return []
    from ..migration import mapped_controls

    report = mapped_controls(suite, report_dir / CONTROLS_DIR, None)
    if report.judge_fingerprint != fingerprint:
        message = "the control records are of another judge than the certified candidate"
        raise EvidenceError("evidence_mismatch", message, str(report_dir / CONTROLS_DIR))
    return list(report.blockers(policy.controls.blocking_roles))


def _path(report_dir: Path, lock: Lock, name: str) -> Path | None:
    rel = lock.input_files.get(name)
    if rel is None:
        return None
    path = (report_dir / rel).resolve()
    if report_dir.resolve() not in path.parents:
        message = f"input {name} points outside the report ({rel})"
        raise EvidenceError("evidence_invalid", message, str(report_dir / "lock.json"))
    return path


def recompute(report_dir: Path, lock: Lock) -> Recomputed:
    """Re-run the gate on the report's evidence. Raises :class:`EvidenceError`."""
    try:
        return _recompute(report_dir, lock)
    except EvidenceError:
        raise
    except WorkbenchError as exc:
        first = exc.problems[0] if exc.problems else None
        detail = f"{first.code}: {first.message}" if first else exc.summary
        message = f"the stored evidence is refused ({detail[:200]})"
        where = first.location if first else str(report_dir)
        raise EvidenceError("evidence_invalid", message, where) from None
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        message = (
            f"the evidence to recompute the outcome cannot be read ({type(exc).__name__}:"
            f" {str(exc)[:160]})"
        )
        raise EvidenceError("evidence_missing", message, str(report_dir)) from None


def _recompute(report_dir: Path, lock: Lock) -> Recomputed:
    where = str(report_dir / "lock.json")
    if lock.schema_version < 2:
        message = (
            f"lock format {lock.schema_version} stores no evidence to recompute the outcome from"
        )
        raise EvidenceError("evidence_missing", message, where)
    if [b.get("code") for b in lock.blockers] == ["certification_failed"]:
        return Recomputed(None, None)  # the notebook failed before the gate: only incomplete
    policy_path = _path(report_dir, lock, "policy")
    dataset_sha = lock.evidence.get("gold_dataset")
    missing = [
        why
        for failed, why in (
            (policy_path is None, "the lock names no policy file"),
            (not dataset_sha, "the lock records no gold dataset hash"),
            (lock.evaluated_at is None, "the lock records no evaluation time for override expiry"),
        )
        if failed
    ]
    if missing:
        raise EvidenceError("evidence_missing", "; ".join(missing), where)
    assert policy_path is not None and dataset_sha and lock.evaluated_at is not None
    policy = load_policy(policy_path)
    dataset = read_gold_evidence(report_dir, dataset_sha)
    held_out = held_out_manifest_sha256(dataset.sha256, dataset.partition("held_out"))
    if held_out != lock.evidence.get("held_out_manifest"):
        message = "the stored held-out gold records do not hash to the lock's held-out manifest"
        raise EvidenceError("evidence_mismatch", message, str(report_dir / "restricted" / "gold"))
    suite_path = _path(report_dir, lock, "controls")
    if policy.controls is not None and suite_path is None:
        message = "the policy declares controls but the report holds no control suite"
        raise EvidenceError("evidence_missing", message, where)
    from ..controls import load_suite
    from ._migration import stored_mapping

    overrides_path = _path(report_dir, lock, "overrides")
    decision = decide(
        report_dir,
        Subject(
            lock.candidate, lock.candidate_fingerprint, lock.baseline, lock.baseline_fingerprint
        ),
        policy=policy,
        policy_path=policy_path,
        dataset=dataset,
        now=lock.evaluated_at,
        overrides=load_overrides(overrides_path) if overrides_path is not None else [],
        suite=load_suite(suite_path) if suite_path is not None and policy.controls else None,
        mapping=stored_mapping(report_dir, lock) if lock.baseline_fingerprint else None,
    )
    return Recomputed(
        public_gate(decision.gate), figures_of(decision.alignment), decision.migration
    )
