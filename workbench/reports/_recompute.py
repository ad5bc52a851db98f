"""Decide a locked report's outcome again, from the evidence stored in the report.

``workbench verify`` does not take a lock's word for its outcome: it re-runs the gate with the
same functions certification used, on the report's own files (see
:mod:`workbench.reports._evaluation` for the list), with the certification's start time as
"now" for override expiry, and compares outcome, blockers, waivers and figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._io import read_json_file, sha256_file
from .._lock import Lock
from ..align import alignment_report, join_results
from ..errors import Problem, WorkbenchError
from ..heldout import held_out_manifest_sha256
from ..policy import NotEvaluated, evaluate_gate, load_overrides, load_policy
from ..results import JudgeIdentity
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
class Recomputed:
    gate: dict[str, Any] | None
    """The public gate (as in gate.json), or None when certification failed before the gate."""
    figures: dict[str, Any] | None
    migration: Any = None
    """For a migration: the recomputed :class:`~workbench.migration._certify.MigrationEvidence`."""


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
        return Recomputed(
            None, None
        )  # the notebook failed before the gate: only incomplete is possible
    policy_path = _path(report_dir, lock, "policy")
    if policy_path is None:
        raise EvidenceError("evidence_missing", "the lock names no policy file", where)
    policy = load_policy(policy_path)
    rows = read_json_file(report_dir / LINEAGE_FILE)
    lineage = lineage_blockers(rows)
    fingerprint = lock.candidate_fingerprint
    dataset_sha = lock.evidence.get("gold_dataset")
    if not dataset_sha:
        raise EvidenceError("evidence_missing", "the lock records no gold dataset hash", where)
    dataset = read_gold_evidence(report_dir, dataset_sha)
    if held_out_manifest_sha256(dataset.sha256, dataset.partition("held_out")) != lock.evidence.get(
        "held_out_manifest"
    ):
        raise EvidenceError(
            "evidence_mismatch",
            "the stored held-out gold records do not hash to the lock's held-out manifest",
            str(report_dir / "restricted" / "gold"),
        )
    control_blockers = []
    suite = None
    if policy.controls is not None:
        from ..controls import evaluate_controls, load_suite
        from ..controls._run import _outcomes

        suite_path = _path(report_dir, lock, "controls")
        if suite_path is None:
            raise EvidenceError(
                "evidence_missing",
                "the policy declares controls but the report holds no control suite",
                where,
            )
        suite = load_suite(suite_path)
        identity = JudgeIdentity.model_validate(
            read_json_file(report_dir / CONTROLS_DIR / "controls.json")["judge_identity"]
        )
        if identity.fingerprint() != fingerprint:
            raise EvidenceError(
                "evidence_mismatch",
                "the control records are of another judge than the certified candidate",
                str(report_dir / CONTROLS_DIR),
            )
        report = evaluate_controls(
            suite,
            _outcomes(suite, RunDir(report_dir / CONTROLS_DIR).results, fingerprint),
            judge=identity,
        )
        control_blockers = report.blockers(policy.controls.blocking_roles)
    if control_blockers:
        held_out_not_used = NotEvaluated(
            reason=HELD_OUT_NOT_USED,
            judge=lock.candidate,
            dataset_sha256=dataset.sha256,
            partition="held_out",
        )
        gate = evaluate_gate(
            held_out_not_used,
            policy,
            rubric=dataset.rubric,
            extra_blockers=[*control_blockers, *lineage],
            policy_sha256=sha256_file(policy_path),
            fingerprint=fingerprint,
        )
        return Recomputed(public_gate(gate), None)
    if lock.evaluated_at is None:
        raise EvidenceError(
            "evidence_missing", "the lock records no evaluation time for override expiry", where
        )
    run = RunDir(report_dir / RUN_DIR)
    results_path = run.results
    # A locked report's records cannot be rewritten: records written under an older result
    # schema are read through the explicit, versioned migration (each says what it filled).
    lines = run.read_results(migrate=True, gold=dataset)
    join = join_results(dataset, lines, partition="held_out", location=str(results_path))
    alignment = alignment_report(
        join, results_path=str(results_path) if results_path.exists() else None
    )
    summary = run.read_summary()
    overrides_path = _path(report_dir, lock, "overrides")
    overrides = load_overrides(overrides_path) if overrides_path is not None else []
    # What certification added beside the policy's limits: repeatability, migration (transitions,
    # reviews).
    from ._migration import recompute_lifecycle_blockers

    extra, migration = recompute_lifecycle_blockers(report_dir, lock, policy, dataset, lines, suite)
    gate = evaluate_gate(
        alignment,
        policy,
        rubric=dataset.rubric,
        run=summary,
        overrides=overrides,
        now=lock.evaluated_at,
        join=join,
        extra_blockers=[*lineage, *extra],
        fingerprint=fingerprint,
    )
    return Recomputed(public_gate(gate), figures_of(alignment), migration)
