"""The one decision (:func:`decide`): a certification's outcome from the evidence stored in its
report, made by certification and again by ``workbench verify`` (:func:`recompute`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .._io import read_json_file, sha256_file
from .._lock import Lock
from ..align import AlignmentReport, Join, alignment_report, join_results
from ..errors import Problem, WorkbenchError
from ..gold import GoldDataset
from ..heldout import held_out_manifest_sha256
from ..migration import LoadedMapping, MigrationEvidence
from ..policy import (
    Blocker,
    GateResult,
    NotEvaluated,
    Policy,
    evaluate_gate,
    load_overrides,
    load_policy,
)
from ..runs import RunDir
from ._evaluation import (
    HELD_OUT_NOT_USED,
    LINEAGE_FILE,
    figures_of,
    lineage_blockers,
    public_gate,
    read_gold_evidence,
)

RUN_DIR = "restricted/run"
CONTROLS_DIR = "controls"


class EvidenceError(Exception):
    """The report lacks, or cannot read, evidence the outcome is decided from."""

    def __init__(self, code: str, message: str, where: str) -> None:
        super().__init__(message)
        self.problem = Problem(
            location=where,
            code=code,
            message=message,
            fix=(
                "restore the report from its original copy; an outcome that cannot be recomputed is"
                " not verified"
            ),
        )


@dataclass(frozen=True)
class Subject:
    """Who the gate judges: the candidate (and, for a migration, the baseline beside it)."""

    candidate: str
    candidate_fingerprint: str
    baseline: str | None = None
    baseline_fingerprint: str | None = None


@dataclass(frozen=True)
class Decision:
    """What :func:`decide` decided from a report's files."""

    gate: GateResult
    alignment: AlignmentReport | None = None
    """None when controls failed (held-out data was not used)."""
    join: Join | None = None
    migration: MigrationEvidence | None = None


@dataclass(frozen=True)
class Recomputed:
    gate: dict[str, Any] | None
    """The public gate (as in gate.json); None when certification failed before the gate."""
    figures: dict[str, Any] | None
    migration: Any = None


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
        raise EvidenceError(
            "evidence_mismatch",
            "the control records are of another judge than the certified candidate",
            str(report_dir / CONTROLS_DIR),
        )
    return list(report.blockers(policy.controls.blocking_roles))


def _path(report_dir: Path, lock: Lock, name: str) -> Path | None:
    rel = lock.input_files.get(name)
    if rel is None:
        return None
    path = (report_dir / rel).resolve()
    if report_dir.resolve() not in path.parents:
        raise EvidenceError(
            "evidence_invalid",
            f"input {name} points outside the report ({rel})",
            str(report_dir / "lock.json"),
        )
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
        raise EvidenceError(
            "evidence_invalid",
            f"the stored evidence is refused ({detail[:200]})",
            first.location if first else str(report_dir),
        ) from None
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise EvidenceError(
            "evidence_missing",
            f"the evidence to recompute the outcome cannot be read ({type(exc).__name__}:"
            f" {str(exc)[:160]})",
            str(report_dir),
        ) from None


def _recompute(report_dir: Path, lock: Lock) -> Recomputed:
    where = str(report_dir / "lock.json")
    if lock.schema_version < 2:
        raise EvidenceError(
            "evidence_missing",
            f"lock format {lock.schema_version} stores no evidence to recompute the outcome from",
            where,
        )
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
        raise EvidenceError(
            "evidence_mismatch",
            "the stored held-out gold records do not hash to the lock's held-out manifest",
            str(report_dir / "restricted" / "gold"),
        )
    suite_path = _path(report_dir, lock, "controls")
    if policy.controls is not None and suite_path is None:
        raise EvidenceError(
            "evidence_missing",
            "the policy declares controls but the report holds no control suite",
            where,
        )
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
