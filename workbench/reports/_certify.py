"""Certification: run a candidate once on held-out data and lock the report.

:func:`certify` is what ``workbench certify`` calls. It is a straight line:

    check every input (the policy against the dataset's rubric, the budget against the
    policy, the signing key) -> under the ledger lock: close dead certifications as aborted,
    check the ledger's chain and that it knows every report of this reports root, refuse an
    unexplained re-certification, allocate reports/<c>/<v>/<n>, open a ``started`` entry
    with a one-time token -> copy the inputs -> execute 03_certify.ipynb with papermill
    (it finds its entry by the token) -> render HTML -> hash everything into lock.json (and
    sign it) -> close the ledger entry -> make the report read-only.

The notebook does the evaluation through :class:`Certification`, so the logic lives here,
where it is tested, and the notebook only calls and displays.

A *migration certification* (``baseline=OLD``) judges the held-out partition with the
candidate and the baseline under one ledger entry of kind ``migration`` (one use; both
fingerprints recorded, so certifying either again on the same manifest is a re-use). Controls
of both run before any held-out call; a blocking control failure of the candidate stops it as
for one candidate, the baseline's controls are shown beside. The case-level transitions go to
the restricted part, counts to ``migration.json``; every changed verdict in a critical slice
needs a transition review (:mod:`workbench.review._transition_reviews`) before the outcome
can be ``certified``. Reviews come after the held-out run, so :func:`resume_review` (``certify
--resume-review REPORT``) re-evaluates a locked migration report with the reviews recorded
since: a new report number, linked to the first (``resumes``), whose run records are copied
from the locked report (held-out data is not judged again) under a ledger entry of kind
``review_reevaluation``, which is no held-out use.

Every certification also: requires a repeatability study when a policy slice sets
``max_flip_rate`` (the studies read are stored in the report); records the authority the
policy requests and the grant (:func:`~workbench.authority.grant_for`) in the lock; and runs
the candidate on the gold's sentinels (``sentinels.yaml``, never held-out cases) into
``REPORT/sentinels/`` so ``workbench drift --against REPORT`` has a baseline.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._args import check_run_arguments
from .._io import (
    atomic_write_json,
    atomic_write_text,
    read_json_file,
    read_jsonl_records,
    sha256_file,
)
from ..agreement import human_agreement
from ..align import AlignmentReport, Join, align_results, alignment_report, read_run_manifest
from ..errors import Problem, WorkbenchError
from ..gold import GoldDataset, load_dataset
from ..heldout import (
    HeldOutAccess,
    HeldOutLedger,
    LedgerEntry,
    PreviousReport,
    gold_directory,
    held_out_manifest_sha256,
    ledger_path_for,
)
from ..judges import Judge, load_candidate
from ..migration._certify import (
    BASELINE_CONTROLS_DIR,
    BASELINE_RUN_DIR,
    MIGRATION_FILE,
    REVIEWS_SNAPSHOT,
    TRANSITIONS_FILE,
    MigrationEvidence,
    evaluate_migration,
    map_old_lines,
)
from ..migration._mapping import LoadedMapping, load_label_mapping
from ..policy import (
    Blocker,
    GateResult,
    NotEvaluated,
    Policy,
    evaluate_gate,
    load_overrides,
    load_policy,
)
from ..policy._consistency import check_policy_against_rubric
from ..runs import RunDir, RunOptions, RunSummary, run_candidate
from ._evaluation import (
    FIGURES_FILE,
    HELD_OUT_GOLD,
    HELD_OUT_NOT_USED,
    LINEAGE_FILE,
    RUBRIC_JSON,
    figures_of,
    lineage_blockers,
    public_gate,
    write_gold_evidence,
)
from ._kernel import kernel_manager_class
from ._listing import (
    check_ledger_complete,
    check_legacy_ledger,
    previous_report,
    write_started_marker,
)
from ._lock import (
    Lock,
    git_state,
    hash_tree,
    make_read_only,
    versions,
    write_lock,
)
from ._migration import (
    BASELINE_INPUTS,
    MAPPING_COPY,
    SENTINELS_DIR,
    check_migration_inputs,
    control_report_from_records,
    copy_spec,
    needs_repeatability,
    repeatability_gate_blockers,
    snapshot_studies,
    stored_studies,
    write_migration,
)
from ._render import not_run_html, render_html
from ._signing import Signer, load_signer

NOTEBOOK_NAME = "03_certify.ipynb"
EXECUTED_NOTEBOOK = "certification.ipynb"
HTML_FILE = "report.html"
GATE_FILE = "gate.json"
RUN_DIR = "restricted/run"  # run records are case-level held-out evidence
INPUTS_DIR = "inputs"
RESTRICTED_DIR = "restricted"
CONTROLS_DIR = "controls"


def default_notebook() -> Path:
    """The certification notebook: the project's ``notebooks/03_certify.ipynb`` when the
    current directory has one, else the copy shipped in the package (``workbench/notebooks/``,
    package data), so an installed wheel certifies from any directory."""
    local = Path("notebooks") / NOTEBOOK_NAME
    if local.exists():
        return local
    from importlib.resources import files

    return Path(str(files("workbench") / "notebooks" / NOTEBOOK_NAME))


@dataclass(frozen=True)
class CertificationResult:
    report_dir: Path
    report_id: str
    outcome: str
    blockers: list[dict[str, Any]]
    lock_sha256: str
    timings_s: dict[str, float]


def _allocate(reports_root: Path, name: str, version: str) -> tuple[Path, int]:
    base = reports_root / name / version
    base.mkdir(parents=True, exist_ok=True)
    existing = [int(p.name) for p in base.iterdir() if p.is_dir() and p.name.isdigit()]
    n = max(existing, default=0) + 1
    while True:
        try:
            (base / str(n)).mkdir()  # exclusive: a report is never overwritten
            return base / str(n), n
        except FileExistsError:
            n += 1


def _copy_inputs(
    report_dir: Path,
    candidate: Path,
    policy: Path,
    overrides: Path | None,
    *,
    baseline: Path | None = None,
    label_mapping: Path | None = None,
) -> dict[str, Path]:
    inputs = report_dir / INPUTS_DIR
    inputs.mkdir()
    copies = {"candidate": copy_spec(candidate, inputs), "policy": inputs / policy.name}
    shutil.copyfile(policy, copies["policy"])
    declared = load_policy(policy).controls
    if declared is not None:
        suite = (policy.parent / declared.suite).resolve()
        if not suite.exists():
            raise WorkbenchError(
                "cannot certify",
                [
                    Problem(
                        location=str(policy),
                        code="controls_missing",
                        message=f"the policy's control suite {declared.suite!r} does not exist",
                        fix="restore the suite or correct controls.suite in the policy",
                    )
                ],
            )
        (inputs / "controls").mkdir()
        copies["controls"] = inputs / "controls" / suite.name
        shutil.copyfile(suite, copies["controls"])
    if overrides is not None and overrides.exists():
        copies["overrides"] = inputs / "overrides.jsonl"
        shutil.copyfile(overrides, copies["overrides"])
    if baseline is not None:
        copies["baseline"] = copy_spec(baseline, report_dir / BASELINE_INPUTS)
    if label_mapping is not None:
        copies["label_mapping"] = report_dir / MAPPING_COPY
        shutil.copyfile(label_mapping, copies["label_mapping"])
    return copies


def resolve_budget(
    policy: Policy, requested: float | None, policy_path: str | Path
) -> float | None:
    """The spend limit certification runs under: the policy's ``budget_usd`` unless a lower one is
    asked."""
    if policy.budget_usd is None:
        return requested
    if requested is None:
        return policy.budget_usd
    if requested > policy.budget_usd:
        raise WorkbenchError(
            "cannot certify",
            [
                Problem(
                    location=f"{policy_path}: budget_usd",
                    code="budget_above_policy",
                    message=(
                        f"--budget-usd {requested:g} is above the policy's budget_usd"
                        f" {policy.budget_usd:g}"
                    ),
                    fix=(
                        f"drop --budget-usd (the policy's ${policy.budget_usd:g} is used) or give a"
                        " lower one; a larger budget needs a new policy version"
                    ),
                )
            ],
        )
    return requested


def certify(
    candidate: str | Path,
    policy: str | Path,
    gold: str | Path,
    *,
    reports_root: str | Path = "reports",
    rerun_reason: str | None = None,
    concurrency: int = 8,
    budget_usd: float | None = None,
    max_cases: int | None = None,
    overrides: str | Path | None = None,
    notebook: str | Path | None = None,
    kernel_name: str = "python3",
    sign_key: str | Path | None = None,
    baseline: str | Path | None = None,
    label_mapping: str | Path | None = None,
) -> CertificationResult:
    """Certify ``candidate`` on the held-out partition of ``gold`` under ``policy``.

    Every input is checked (the policy against the dataset's rubric too) before the ledger is
    touched. The ledger is the gold dataset's own (:func:`~workbench.heldout.ledger_path_for`);
    no argument can choose another. ``baseline`` (the previous version's spec) makes it a
    migration certification (module doc); ``label_mapping`` is the reviewed mapping of the
    baseline's labels, required when the rubric lacks any of them.

    Three steps: :func:`_check_inputs`, :func:`_start` (under the ledger lock) and
    :func:`_execute` (notebook, lock, ledger entry closed, report read-only).
    """
    check_run_arguments(concurrency=concurrency, budget_usd=budget_usd, max_cases=max_cases)
    inputs = _check_inputs(
        candidate,
        policy,
        gold,
        notebook=notebook,
        baseline=baseline,
        label_mapping=label_mapping,
        budget_usd=budget_usd,
        overrides=overrides,
        sign_key=sign_key,
    )
    ledger = HeldOutLedger(ledger_path_for(inputs.gold))
    started = _start(ledger, inputs, Path(reports_root), rerun_reason)
    return _execute(
        ledger,
        inputs,
        started,
        rerun_reason,
        concurrency=concurrency,
        max_cases=max_cases,
        kernel_name=kernel_name,
    )


@dataclass(frozen=True)
class _Inputs:
    """Every input of one certification, loaded and checked before the ledger is touched."""

    candidate: Path
    policy_path: Path
    gold: Path
    notebook: Path
    baseline: Path | None
    mapping: Path | None
    overrides: Path
    judge: Judge
    policy: Policy
    dataset: GoldDataset
    old_judge: Judge | None
    budget: float | None
    signer: Signer | None

    @property
    def fingerprint(self) -> str:
        return self.judge.identity.fingerprint()

    @property
    def manifest_sha(self) -> str:
        return held_out_manifest_sha256(self.dataset.sha256, self.dataset.partition("held_out"))


@dataclass(frozen=True)
class _Started:
    """What :func:`_start` allocated and recorded: the report directory and its ``started``
    entry."""

    report_dir: Path
    report_id: str
    entry: LedgerEntry
    token: str
    hold: Any
    previous: PreviousReport | None


def _check_paths(policy: Path, notebook: Path, mapping: Path | None, baseline: Path | None) -> None:
    """The files that must exist and the option pairs that must go together, all problems at
    once."""
    problems: list[Problem] = []
    if not policy.exists():
        problems.append(
            Problem(
                location=str(policy),
                code="policy_missing",
                message="the policy file does not exist",
                fix=(
                    "point --policy at data/policies/<name>@<version>.yaml; certification without a"
                    " policy is never possible"
                ),
            )
        )
    if not notebook.exists():
        problems.append(
            Problem(
                location=str(notebook),
                code="notebook_missing",
                message="the certification notebook is missing",
                fix="run from the project root, or pass --notebook",
            )
        )
    if mapping is not None and baseline is None:
        problems.append(
            Problem(
                location="--label-mapping",
                code="mapping_without_baseline",
                message=(
                    "a label mapping translates a baseline's verdicts, but no --baseline was given"
                ),
                fix="give --baseline OLD with --label-mapping, or drop --label-mapping",
            )
        )
    if problems:
        raise WorkbenchError("cannot certify", problems)


def _check_inputs(
    candidate: str | Path,
    policy: str | Path,
    gold: str | Path,
    *,
    notebook: str | Path | None,
    baseline: str | Path | None,
    label_mapping: str | Path | None,
    budget_usd: float | None,
    overrides: str | Path | None,
    sign_key: str | Path | None,
) -> _Inputs:
    """Load and check every input (nothing is written): spec, policy, controls, dataset, budget,
    overrides, key."""
    candidate, policy, gold = Path(candidate), Path(policy), Path(gold)
    baseline_path = Path(baseline) if baseline is not None else None
    mapping_path = Path(label_mapping) if label_mapping is not None else None
    notebook_path = Path(notebook) if notebook else default_notebook()
    _check_paths(policy, notebook_path, mapping_path, baseline_path)
    judge = load_candidate(candidate)  # every input is checked before anything is written
    policy_model = load_policy(policy)
    if policy_model.controls is not None:
        from ..controls import load_suite

        load_suite((policy.parent / policy_model.controls.suite).resolve())
    dataset = load_dataset(gold)
    if not dataset.partition("held_out"):
        raise WorkbenchError(
            "cannot certify",
            [
                Problem(
                    location=str(dataset.gold_path),
                    code="no_held_out",
                    message="the dataset has no held-out cases",
                    fix="certification needs a held_out partition",
                )
            ],
        )
    check_policy_against_rubric(policy_model, dataset.rubric, policy_path=policy)
    old_judge = None
    if baseline_path is not None:
        old_judge, _mapping = check_migration_inputs(judge, baseline_path, mapping_path, dataset)
    budget = resolve_budget(policy_model, budget_usd, policy)
    if old_judge is not None and budget is not None:
        _check_paired_budget(judge, old_judge, dataset, budget)
    overrides_path = Path(overrides) if overrides else policy.parent / "overrides.jsonl"
    if overrides_path.exists():
        load_overrides(overrides_path)
    _check_side_logs(dataset, judge, policy_model, migration=old_judge is not None)
    signer = load_signer(sign_key) if sign_key is not None else None
    return _Inputs(
        candidate,
        policy,
        gold,
        notebook_path,
        baseline_path,
        mapping_path,
        overrides_path,
        judge,
        policy_model,
        dataset,
        old_judge,
        budget,
        signer,
    )


def _start(
    ledger: HeldOutLedger, inputs: _Inputs, root: Path, rerun_reason: str | None
) -> _Started:
    """Check-then-start, serialized: two certifications of one candidate give one start and one
    refusal."""
    judge, old_judge, fingerprint, manifest_sha = (
        inputs.judge,
        inputs.old_judge,
        inputs.fingerprint,
        inputs.manifest_sha,
    )
    with ledger.locked():
        ledger.reconcile()  # a certification that died is closed as aborted first
        entries = ledger.entries()
        check_ledger_complete(ledger, entries, root)
        # Only the candidate's earlier uses need a re-run reason: the baseline is judged again
        # as the reference its transitions are read against (its own earlier certification
        # already saw these cases), and this entry records its fingerprint too.
        ledger.check_rerun(fingerprint, manifest_sha, rerun_reason, entries)
        check_legacy_ledger(root, fingerprint, manifest_sha, rerun_reason)
        report_dir, n = _allocate(root, judge.spec.name, judge.spec.version)
        report_id = f"{judge.spec.name}/{judge.spec.version}/{n}"
        try:
            previous = previous_report(
                root, judge.spec.name, judge.spec.version, n, ledger, entries
            )
            migration: dict[str, Any] = (
                {
                    "kind": "migration",
                    "baseline": old_judge.spec.label,
                    "baseline_fingerprint": old_judge.identity.fingerprint(),
                }
                if old_judge is not None
                else {}
            )
            entry, token, hold = ledger.start(
                candidate=judge.spec.label,
                fingerprint=fingerprint,
                dataset_sha256=inputs.dataset.sha256,
                manifest_sha256=manifest_sha,
                report_id=report_id,
                reports_root=root,
                gold=gold_directory(inputs.gold),
                rerun_reason=rerun_reason,
                budget_usd=inputs.budget,
                previous_report=previous,
                **migration,
            )
        except BaseException:
            shutil.rmtree(report_dir, ignore_errors=True)  # nothing was recorded for it
            raise
        write_started_marker(report_dir, entry, ledger.path)
    return _Started(report_dir, report_id, entry, token, hold, previous)


def _execute(
    ledger: HeldOutLedger,
    inputs: _Inputs,
    started: _Started,
    rerun_reason: str | None,
    *,
    concurrency: int,
    max_cases: int | None,
    kernel_name: str,
) -> CertificationResult:
    """Copy the inputs, run the notebook and lock the report; any failure aborts the entry (the use
    counts)."""
    s = started
    try:
        copies = _copy_inputs(
            s.report_dir,
            inputs.candidate,
            inputs.policy_path,
            inputs.overrides,
            baseline=inputs.baseline,
            label_mapping=inputs.mapping,
        )
        result = _run_and_lock(
            inputs.judge,
            inputs.dataset,
            copies,
            inputs.notebook,
            s.report_dir,
            s.report_id,
            s.entry,
            s.token,
            ledger,
            s.previous,
            rerun_reason,
            inputs.fingerprint,
            inputs.manifest_sha,
            inputs.budget,
            concurrency,
            max_cases,
            kernel_name,
            inputs.signer,
        )
    except BaseException:
        ledger.abort(s.entry)  # fail closed: the use is recorded, and counts
        raise
    finally:
        ledger.release(s.entry.entry_id, s.hold)
    make_read_only(s.report_dir)
    return result


def _check_paired_budget(judge: Judge, old: Judge, dataset: GoldDataset, budget: float) -> None:
    """Refuse, before the ledger, a budget that cannot cover both held-out runs."""
    from ..judges import JudgeInput
    from ..migration import BudgetInsufficient, estimate_run
    from ..runs import WorkItem

    cases = dataset.partition("held_out")
    items = [WorkItem(c.case_id, c.response_hash, 0, JudgeInput.from_case(c)) for c in cases]
    estimates = [
        estimate_run(name, j, items, Path("/nonexistent-run-dir"), cache_dir=False)
        for name, j in (("candidate", judge), ("baseline", old))
    ]
    needed = sum(e.needed_usd for e in estimates)
    if needed > budget + 1e-12:
        raise BudgetInsufficient(
            "the budget does not cover both versions: nothing was started",
            [
                Problem(
                    location="--budget-usd",
                    code="budget_insufficient",
                    message=(
                        f"judging {len(cases)} held-out case(s) with {judge.spec.label} and"
                        f" {old.spec.label} needs up to ${needed:.4f} (the engine's reservations,"
                        f" one attempt per call), the budget is ${budget:.4f}"
                    ),
                    fix=(
                        f"give --budget-usd {needed:.4f} or more (a new policy version if it is"
                        " above the policy's budget_usd); certifying on fewer cases is a scope"
                        " change, not a saving"
                    ),
                )
            ],
        )


def _check_side_logs(
    dataset: GoldDataset, judge: Judge, policy: Policy, *, migration: bool = True
) -> None:
    """Read what the notebook will read beside the gold before any held-out use: a damaged
    repeatability log, transition-review log or sentinel file is refused here (exit 2)."""
    from ..repeatability import load_sentinels, read_studies, sentinels_path_for, studies_path_for
    from ..review._transition_reviews import read_transition_reviews, transition_reviews_path_for

    studies = studies_path_for(dataset)
    if studies.exists() or needs_repeatability(policy):
        read_studies(studies)
    if migration:
        read_transition_reviews(transition_reviews_path_for(dataset.root))
    if sentinels_path_for(dataset).exists():
        load_sentinels(None, dataset)


def resume_review(
    report: str | Path,
    *,
    gold: str | Path | None = None,
    notebook: str | Path | None = None,
    kernel_name: str = "python3",
    sign_key: str | Path | None = None,
) -> CertificationResult:
    """Re-evaluate a locked migration report with the transition reviews recorded since.

    Writes a new report number of the same candidate version, linked to ``report``
    (``resumes``), under a ledger entry of kind ``review_reevaluation`` (no held-out use).
    Nothing is judged again: the inputs, both control runs, both held-out runs, the sentinel
    run and the repeatability studies are copied from the locked report; only the transition
    reviews are read again, and the gate runs again (overrides checked at the re-evaluation's
    start). Refused (exit 2) for a report that does not verify, that is no migration, that
    judged no held-out case, or whose gold, candidate or policy changed since.
    """
    from ._verify import resolve_report_path, verify_one

    first = resolve_report_path(report)
    notebook_path = Path(notebook) if notebook else default_notebook()
    where = str(first)

    def refuse(code: str, message: str, fix: str) -> WorkbenchError:
        return WorkbenchError(
            "cannot re-evaluate the report",
            [Problem(location=where, code=code, message=message, fix=fix)],
        )

    if not (first / "lock.json").is_file():
        raise refuse(
            "report_missing",
            "no locked certification report here (no lock.json)",
            "point --resume-review at reports/<candidate>/<version>/<n> of a migration"
            " certification",
        )
    if not notebook_path.exists():
        raise refuse(
            "notebook_missing",
            f"the certification notebook {notebook_path} is missing",
            "run from the project root, or pass --notebook",
        )
    from ._lock import read_lock

    lock = read_lock(first)
    if lock.baseline_fingerprint is None:
        raise refuse(
            "not_a_migration",
            f"report {lock.report_id} is no migration certification: it has no transitions to"
            " review",
            "transition reviews belong to `workbench certify --candidate NEW --baseline OLD`",
        )
    if (
        lock.evidence.get("run_records") is None
        or lock.evidence.get("baseline_run_records") is None
    ):
        raise refuse(
            "held_out_not_used",
            f"report {lock.report_id} judged no held-out case (controls or lineage stopped it):"
            " there is nothing to review",
            "fix what stopped it and certify again",
        )
    gold_dir = Path(gold) if gold is not None else (Path(lock.gold) if lock.gold else None)
    if gold_dir is None or not gold_dir.exists():
        raise refuse(
            "gold_missing",
            f"the certified dataset {lock.gold} is not on this machine",
            "pass --gold with the certified dataset (its ledger and transition reviews live"
            " beside it)",
        )
    checked = verify_one(first, gold=gold_dir)
    if not checked.verified:
        raise WorkbenchError("cannot re-evaluate a report that does not verify", checked.problems)
    dataset = load_dataset(gold_dir)
    if dataset.sha256 != lock.evidence.get("gold_dataset"):
        raise refuse(
            "gold_changed",
            f"the gold dataset changed since report {lock.report_id}"
            f" ({str(lock.evidence.get('gold_dataset'))[:12]} -> {dataset.sha256[:12]})",
            "the transitions were judged against the old gold: certify again on the new gold"
            " release",
        )
    root = first.resolve().parents[2]
    if "/".join(first.resolve().parts[-3:]) != lock.report_id:
        raise refuse(
            "report_moved",
            f"the report is not inside its reports root (expected .../{lock.report_id})",
            "resume the report where certification wrote it",
        )
    candidate_copy = first / str(lock.input_files.get("candidate"))
    judge = load_candidate(candidate_copy)
    if judge.identity.fingerprint() != lock.candidate_fingerprint:
        raise refuse(
            "candidate_changed",
            "the candidate copied in the report now has fingerprint"
            f" {judge.identity.fingerprint()[:12]}, the report certified"
            f" {lock.candidate_fingerprint[:12]} (its code or the installed Ragas changed)",
            "certify the candidate as it is now (a new certification)",
        )
    baseline_copy = first / str(lock.input_files.get("baseline"))
    signer = load_signer(sign_key) if sign_key is not None else None
    _check_side_logs(dataset, judge, load_policy(first / str(lock.input_files.get("policy"))))
    ledger = HeldOutLedger(ledger_path_for(gold_dir))
    resumed = PreviousReport(
        report_id=lock.report_id, lock_sha256=lock.lock_sha256, status="locked"
    )

    with ledger.locked():
        ledger.reconcile()
        entries = ledger.entries()
        check_ledger_complete(ledger, entries, root)
        report_dir, n = _allocate(root, judge.spec.name, judge.spec.version)
        report_id = f"{judge.spec.name}/{judge.spec.version}/{n}"
        try:
            previous = previous_report(
                root, judge.spec.name, judge.spec.version, n, ledger, entries
            )
            entry, token, hold = ledger.start(
                candidate=judge.spec.label,
                fingerprint=lock.candidate_fingerprint,
                dataset_sha256=dataset.sha256,
                manifest_sha256=str(lock.evidence.get("held_out_manifest")),
                report_id=report_id,
                reports_root=root,
                gold=gold_directory(gold_dir),
                rerun_reason=None,
                budget_usd=None,
                previous_report=previous,
                kind="review_reevaluation",
                baseline=lock.baseline,
                baseline_fingerprint=lock.baseline_fingerprint,
                resumes=lock.report_id,
            )
        except BaseException:
            shutil.rmtree(report_dir, ignore_errors=True)
            raise
        write_started_marker(report_dir, entry, ledger.path)

    try:
        copies = _copy_locked_evidence(first, report_dir, lock)
        copies["baseline"] = report_dir / baseline_copy.relative_to(first)
        result = _run_and_lock(
            judge,
            dataset,
            copies,
            notebook_path,
            report_dir,
            report_id,
            entry,
            token,
            ledger,
            previous,
            None,
            lock.candidate_fingerprint,
            str(lock.evidence.get("held_out_manifest")),
            None,
            8,
            None,
            kernel_name,
            signer,
            resumes=resumed,
            resume_from=first,
        )
    except BaseException:
        ledger.abort(entry)
        raise
    finally:
        ledger.release(entry.entry_id, hold)
    make_read_only(report_dir)
    return result


_LOCKED_EVIDENCE = (
    INPUTS_DIR,
    CONTROLS_DIR,
    "baseline",
    "restricted/run",
    "restricted/baseline",
    SENTINELS_DIR,
    "repeatability",
)
"""What :func:`resume_review` copies from the locked report (everything judged; nothing decided)."""


def _copy_locked_evidence(first: Path, report_dir: Path, lock: Any) -> dict[str, Path]:
    for rel in _LOCKED_EVIDENCE:
        source = first / rel
        if source.is_dir():
            target = report_dir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(source, target, copy_function=shutil.copyfile)
    for path in report_dir.rglob("*"):  # the copies are writable until this report is locked
        path.chmod(path.stat().st_mode | 0o200)
    return {name: report_dir / rel for name, rel in lock.input_files.items() if rel}


def _run_and_lock(
    judge: Judge,
    dataset: GoldDataset,
    copies: dict[str, Path],
    notebook_path: Path,
    report_dir: Path,
    report_id: str,
    entry: LedgerEntry,
    token: str,
    ledger: HeldOutLedger,
    previous: PreviousReport | None,
    rerun_reason: str | None,
    fingerprint: str,
    manifest_sha: str,
    budget: float | None,
    concurrency: int,
    max_cases: int | None,
    kernel_name: str,
    signer: Signer | None,
    *,
    resumes: PreviousReport | None = None,
    resume_from: Path | None = None,
) -> CertificationResult:
    import papermill

    from ..authority import grant_for, requested_authority

    t0 = time.perf_counter()
    parameters = {
        "candidate": str(copies["candidate"].resolve()),
        "policy": str(copies["policy"].resolve()),
        "gold": str(dataset.gold_path.resolve()),
        "overrides": str(copies["overrides"].resolve()) if "overrides" in copies else "",
        "controls": str(copies["controls"].resolve()) if "controls" in copies else "",
        "baseline": str(copies["baseline"].resolve()) if "baseline" in copies else "",
        "label_mapping": (
            str(copies["label_mapping"].resolve()) if "label_mapping" in copies else ""
        ),
        "resume_from": str(resume_from.resolve()) if resume_from is not None else "",
        "report_dir": str(report_dir.resolve()),
        "ledger_path": str(ledger.path),
        "certification_token": token,
        "concurrency": concurrency,
        "max_cases": max_cases,
    }
    failure: Exception | None = None
    executed = report_dir / EXECUTED_NOTEBOOK
    try:
        with (
            kernel_manager_class() as manager
        ):  # IPC: no TCP port, no "TCP without encryption" warning
            papermill.execute_notebook(
                str(notebook_path),
                str(executed),
                parameters=parameters,
                cwd=str(report_dir),
                kernel_name=kernel_name,
                progress_bar=False,
                log_output=False,
                kernel_manager_class=manager,
            )
    except papermill.PapermillExecutionError as exc:
        failure = exc
    executed_at = time.perf_counter()
    gate = _read_gate(report_dir)
    if failure is not None or gate is None:
        gate = public_gate(_failed_gate(failure, judge))
        atomic_write_json(report_dir / GATE_FILE, gate)
    html = (
        render_html(executed, title=f"Certification report: {judge.spec.label} ({report_id})")
        if executed.exists()
        else not_run_html()
    )
    atomic_write_text(report_dir / HTML_FILE, html)
    rendered_at = time.perf_counter()
    timings = _timings(executed, t0, executed_at, rendered_at)
    figures_path = report_dir / FIGURES_FILE
    figures = read_json_file(figures_path) if figures_path.exists() and failure is None else None
    run_dir = report_dir / RUN_DIR
    run_id = _run_id(run_dir)
    rel = {name: path.relative_to(report_dir).as_posix() for name, path in copies.items()}
    policy_model = load_policy(copies["policy"])
    migration_path = report_dir / MIGRATION_FILE
    migration = (
        read_json_file(migration_path) if migration_path.exists() and failure is None else None
    )
    evidence: dict[str, str | None] = {
        "gold_dataset": dataset.sha256,
        "gold_file": sha256_file(dataset.gold_path),
        "held_out_manifest": manifest_sha,
        "candidate_spec": sha256_file(copies["candidate"]),
        "policy": sha256_file(copies["policy"]),
        "overrides": sha256_file(copies["overrides"]) if "overrides" in copies else None,
        "control_suite": sha256_file(copies["controls"]) if "controls" in copies else None,
        "control_records": _maybe_sha(RunDir(report_dir / CONTROLS_DIR).results),
        "run_records": _maybe_sha(RunDir(run_dir).results),
        "run_manifest": _maybe_sha(RunDir(run_dir).manifest),
        "lineage": _maybe_sha(report_dir / LINEAGE_FILE),
        "figures": _maybe_sha(figures_path),
        "held_out_gold": _maybe_sha(report_dir / HELD_OUT_GOLD),
        "rubric": _maybe_sha(report_dir / RUBRIC_JSON),
        "executed_notebook": _maybe_sha(executed),
        "html": sha256_file(report_dir / HTML_FILE),
    }
    if "baseline" in copies:
        evidence.update(
            {
                "baseline_spec": sha256_file(copies["baseline"]),
                "label_mapping": (
                    sha256_file(copies["label_mapping"]) if "label_mapping" in copies else None
                ),
                "baseline_control_records": _maybe_sha(
                    RunDir(report_dir / BASELINE_CONTROLS_DIR).results
                ),
                "baseline_run_records": _maybe_sha(RunDir(report_dir / BASELINE_RUN_DIR).results),
                "baseline_run_manifest": _maybe_sha(RunDir(report_dir / BASELINE_RUN_DIR).manifest),
                "transitions": _maybe_sha(report_dir / TRANSITIONS_FILE),
                "transition_reviews": _maybe_sha(report_dir / REVIEWS_SNAPSHOT),
                "migration": _maybe_sha(migration_path),
            }
        )
    for name, path in (
        ("repeatability_studies", report_dir / "repeatability" / "studies.jsonl"),
        ("sentinel_records", RunDir(report_dir / SENTINELS_DIR).results),
    ):
        if path.exists():
            evidence[name] = sha256_file(path)
    lock = write_lock(
        report_dir,
        Lock(
            report_id=report_id,
            created_at=datetime.now(UTC),
            candidate=judge.spec.label,
            candidate_fingerprint=fingerprint,
            outcome=gate["outcome"],
            blockers=gate["blockers"],
            figures=figures,
            evaluated_at=entry.when,
            budget_usd=budget,
            evidence=evidence,
            input_files={
                "candidate": rel["candidate"],
                "policy": rel["policy"],
                "overrides": rel.get("overrides"),
                "controls": rel.get("controls"),
                **(
                    {"baseline": rel["baseline"], "label_mapping": rel.get("label_mapping")}
                    if "baseline" in rel
                    else {}
                ),
            },
            files=hash_tree(report_dir),
            versions=versions(),
            git=git_state(),
            gold=entry.gold,
            ledger_path=str(ledger.path),
            ledger_entry=entry.model_dump(mode="json"),
            rerun_reason=rerun_reason,
            previous_report=previous,
            timings_s=timings,
            kind=entry.kind,
            baseline=entry.baseline,
            baseline_fingerprint=entry.baseline_fingerprint,
            resumes=resumes,
            migration=migration,
            requested_authority=requested_authority(policy_model).model_dump(mode="json"),
            grant=grant_for(policy_model, gate, report_id=report_id).model_dump(mode="json"),
            last_certified=_last_certified(policy_model, judge, entry, dataset),
        ),
        signer=signer,
    )
    # Any held-out run directory (even a partial run) is a use: calls may have been in flight.
    # No run directory means controls or lineage stopped certification before held-out data.
    # A review re-evaluation copied the locked run records: it judged nothing.
    used = run_dir.exists() and entry.uses_held_out
    ledger.finish(
        entry,
        outcome=gate["outcome"],
        lock_sha256=lock.lock_sha256,
        held_out_used=used,
        run_id=run_id,
        run_records_sha256=lock.evidence["run_records"],
        baseline_run_records_sha256=lock.evidence.get("baseline_run_records"),
    )
    timings["lock"] = round(time.perf_counter() - rendered_at, 3)
    return CertificationResult(
        report_dir, report_id, gate["outcome"], gate["blockers"], lock.lock_sha256, timings
    )


def _run_id(run_dir: Path) -> str | None:
    try:
        summary = RunDir(run_dir).read_summary()
        return summary.run_id if summary is not None else None
    except (ValueError, OSError):
        return None


def _maybe_sha(path: Path) -> str | None:
    return sha256_file(path) if path.exists() else None


def _read_gate(report_dir: Path) -> dict[str, Any] | None:
    path = report_dir / GATE_FILE
    if not path.exists():
        return None
    gate: dict[str, Any] = read_json_file(path)
    return gate


def _failed_gate(failure: Exception | None, judge: Judge) -> GateResult:
    if failure is not None:
        evidence = {
            "cell": getattr(failure, "cell_index", None),
            "error": getattr(failure, "ename", type(failure).__name__),
            "detail": str(getattr(failure, "evalue", failure))[:300],
        }
        message = (
            "the certification notebook failed before the gate ran; no outcome other than"
            " incomplete is possible"
        )
    else:
        evidence = {}
        message = "the certification notebook wrote no gate result"
    blocker = Blocker(
        code="certification_failed",
        category="incomplete",
        slice=None,
        message=message,
        evidence=evidence,
        case_ids=[],
        waivable=False,
    )
    return GateResult(
        outcome="evaluation_incomplete",
        blockers=[blocker],
        waived=[],
        policy=None,
        summary=f"{judge.spec.label}: evaluation incomplete ({message})",
    )


def _timings(executed: Path, t0: float, executed_at: float, rendered_at: float) -> dict[str, float]:
    out = {
        "notebook_total": round(executed_at - t0, 3),
        "render": round(rendered_at - executed_at, 3),
    }
    try:
        nb = json.loads(executed.read_text(encoding="utf-8"))
        cells = [c.get("metadata", {}).get("papermill", {}) for c in nb["cells"]]
        durations = [c.get("duration") or 0.0 for c in cells]
        run = float(sum(durations))
        out["cells_run"] = round(run, 3)
        out["kernel_start_and_overhead"] = round(out["notebook_total"] - run, 3)
    except (OSError, ValueError, KeyError):
        pass
    return out


class Certification:
    """The evaluation steps of ``03_certify.ipynb``, callable and testable outside the notebook.

    It refuses to exist unless ``workbench certify`` opened a ledger entry for it: the ledger
    is resolved from the gold dataset (a ``ledger_path`` given must be that one), an open
    ``started`` entry must carry the hash of ``certification_token``, name this report
    directory and candidate (and, for a migration, this baseline; for a re-evaluation, the
    report it resumes), and be held by a live ``certify`` process; the token is then claimed,
    so it works once.
    """

    def __init__(
        self,
        *,
        candidate: str | Path,
        policy: str | Path,
        gold: str | Path,
        report_dir: str | Path,
        certification_token: str,
        ledger_path: str | Path | None = None,
        overrides: str | Path | None = None,
        controls: str | Path | None = None,
        concurrency: int = 8,
        max_cases: int | None = None,
        baseline: str | Path | None = None,
        label_mapping: str | Path | None = None,
        resume_from: str | Path | None = None,
    ) -> None:
        # Notebook parameters arrive as papermill injected them: checked before the ledger is read.
        check_run_arguments(concurrency=concurrency, max_cases=max_cases)
        self.report_dir = Path(report_dir)
        self.controls_path = Path(controls) if controls else None
        self.candidate_path = Path(candidate)
        self.policy_path = Path(policy)
        self.judge: Judge = load_candidate(candidate)
        self.baseline_judge: Judge | None = load_candidate(baseline) if baseline else None
        self.mapping: LoadedMapping | None = (
            load_label_mapping(label_mapping) if label_mapping else None
        )
        self.resume_from: Path | None = Path(resume_from) if resume_from else None
        self.dataset: GoldDataset = load_dataset(gold)
        self.policy: Policy | None = load_policy(policy) if self.policy_path.exists() else None
        self.overrides = load_overrides(overrides) if overrides and Path(overrides).exists() else []
        self.ledger_entry: LedgerEntry = self._open(gold, ledger_path, certification_token)
        self.ledger_path = self.ledger.path
        self.ledger_entry_id = self.ledger_entry.entry_id
        self.concurrency = concurrency
        self.budget_usd = self.ledger_entry.budget_usd  # decided by certify, recorded in the ledger
        self.max_cases = max_cases
        self.lineage: list[dict[str, Any]] = []
        self.controls: Any | None = None
        self.baseline_controls: Any | None = None
        self.control_blockers: list[Blocker] = []
        self.summary: RunSummary | None = None
        self.baseline_summary: RunSummary | None = None
        self.sentinels: RunSummary | None = None
        self.join: Join | None = None
        self.alignment: AlignmentReport | None = None
        self.migration: MigrationEvidence | None = None
        self.gate: GateResult | None = None

    @property
    def is_migration(self) -> bool:
        """Whether a baseline is judged beside the candidate."""
        return self.baseline_judge is not None

    @property
    def kind(self) -> str:
        """The ledger entry's kind: certification, migration or review_reevaluation."""
        return self.ledger_entry.kind

    def _refuse(
        self,
        code: str,
        message: str,
        fix: str = "run `workbench certify`; the certification notebook is executed only by it",
    ) -> WorkbenchError:
        where = self.ledger.path if hasattr(self, "ledger") else self.report_dir
        return WorkbenchError(
            "certification refused: the held-out partition was not used",
            [Problem(location=str(where), code=code, message=message, fix=fix)],
        )

    def _open(self, gold: str | Path, ledger_path: str | Path | None, token: str) -> LedgerEntry:
        canonical = ledger_path_for(gold)
        self.ledger = HeldOutLedger(canonical)
        if ledger_path and Path(ledger_path).resolve() != canonical:
            raise self._refuse(
                "ledger_mismatch",
                f"ledger {ledger_path} is not the held-out ledger of this dataset ({canonical})",
                "the ledger belongs to the gold dataset; no other ledger is accepted",
            )
        if not isinstance(token, str) or not token:
            raise self._refuse("certification_not_opened", "no certification token was given")
        entry = self.ledger.open_entry_for_token(token)  # raises on a damaged ledger
        if entry is None:
            raise self._refuse(
                "certification_not_opened",
                "no open certification in the held-out ledger carries this token",
            )
        if (Path(entry.reports_root) / entry.report_id).resolve() != self.report_dir.resolve():
            raise self._refuse(
                "report_dir_mismatch",
                f"the ledger entry opened report {entry.report_id}, not {self.report_dir}",
            )
        if entry.candidate_fingerprint != self.judge.identity.fingerprint():
            raise self._refuse(
                "candidate_mismatch",
                f"the ledger entry opened a certification of {entry.candidate}, not of this"
                " candidate",
            )
        baseline_fp = (
            self.baseline_judge.identity.fingerprint() if self.baseline_judge is not None else None
        )
        if entry.baseline_fingerprint != baseline_fp:
            raise self._refuse(
                "baseline_mismatch",
                "the ledger entry opened a certification with baseline"
                f" {entry.baseline or '(none)'}, not"
                f" {self.baseline_judge.spec.label if self.baseline_judge else '(none)'}",
            )
        expected_kind = (
            "review_reevaluation"
            if self.resume_from is not None
            else ("migration" if baseline_fp else "certification")
        )
        if entry.kind != expected_kind:
            raise self._refuse(
                "entry_kind_mismatch", f"the ledger entry is a {entry.kind}, not a {expected_kind}"
            )
        if self.resume_from is not None and entry.resumes != "/".join(
            self.resume_from.resolve().parts[-3:]
        ):
            raise self._refuse(
                "resumes_mismatch",
                f"the ledger entry re-evaluates report {entry.resumes}, not {self.resume_from}",
            )
        if not self.ledger.is_running(entry.entry_id):
            raise self._refuse(
                "certification_not_running",
                f"the `workbench certify` process that opened ledger entry {entry.entry_id} is not"
                " running",
            )
        if entry.uses_held_out:
            earlier = self.ledger.previous_uses(
                entry.candidate_fingerprint, entry.held_out_manifest_sha256, exclude=entry.entry_id
            )
            if earlier and not (entry.rerun_reason and entry.rerun_reason.strip()):
                raise self._refuse(
                    "held_out_reuse",
                    "the held-out partition was already used for this candidate"
                    f" ({', '.join(e.report_id for e in earlier)}) and the entry gives no re-run"
                    " reason",
                )
        self.ledger.claim_token(entry)
        return entry

    # -- steps ----------------------------------------------------------------------------

    def check_lineage(self) -> list[dict[str, Any]]:
        """Deterministic checks that the judge and the humans saw the same items and rubric."""
        entry = self.ledger_entry
        held_out = self.dataset.partition("held_out")
        fingerprint = self.judge.identity.fingerprint()
        manifest = held_out_manifest_sha256(self.dataset.sha256, held_out)
        other_groups = {
            c.group for c in self.dataset.cases.values() if c.partition.value != "held_out"
        }
        leaked = sorted({c.group for c in held_out} & other_groups)
        checks = [
            (
                "ledger entry open for this certification",
                self.ledger.status_of(entry.entry_id) == "open",
                entry.entry_id,
                self.ledger.status_of(entry.entry_id) or "missing",
            ),
            (
                "candidate fingerprint",
                entry.candidate_fingerprint == fingerprint,
                entry.candidate_fingerprint,
                fingerprint,
            ),
            (
                "gold dataset sha256",
                entry.dataset_sha256 == self.dataset.sha256,
                entry.dataset_sha256,
                self.dataset.sha256,
            ),
            (
                "held-out manifest sha256",
                entry.held_out_manifest_sha256 == manifest,
                entry.held_out_manifest_sha256,
                manifest,
            ),
            (
                "partition isolation (no held-out group elsewhere)",
                not leaked,
                "0 shared groups",
                f"{len(leaked)} shared groups",
            ),
            (
                "rubric version (policy vs gold)",
                self.policy is None
                or self.policy.rubric_version in (None, self.dataset.rubric.version),
                getattr(self.policy, "rubric_version", None),
                self.dataset.rubric.version,
            ),
            (
                "policy present",
                self.policy is not None,
                str(self.policy_path.name),
                "loaded" if self.policy else "missing",
            ),
            (
                "gold release (recorded in the run manifest)",
                True,
                "releases.jsonl beside the gold",
                self.dataset.release.release_id if self.dataset.release else "(not frozen)",
            ),
        ]
        if self.baseline_judge is not None:
            fp = self.baseline_judge.identity.fingerprint()
            checks.append(
                (
                    "baseline fingerprint",
                    entry.baseline_fingerprint == fp,
                    entry.baseline_fingerprint,
                    fp,
                )
            )
        self.lineage = [
            {"check": name, "ok": bool(ok), "expected": expected, "actual": actual}
            for name, ok, expected, actual in checks
        ]
        atomic_write_json(self.report_dir / LINEAGE_FILE, self.lineage)
        return self.lineage

    @property
    def lineage_ok(self) -> bool:
        return bool(self.lineage) and all(row["ok"] for row in self.lineage)

    def _suite(self) -> Any:
        from ..controls import load_suite

        assert self.policy is not None and self.policy.controls is not None
        return load_suite(
            self.controls_path or (self.policy_path.parent / self.policy.controls.suite).resolve()
        )

    async def run_controls(self) -> Any | None:
        """Run the policy's control suite before any held-out call (for a migration: on both
        versions).

        A failed blocking role (positive, negative, adversarial by default) of the candidate
        becomes a blocker with its own text, and the held-out partition is then not used at
        all: a judge that fails its controls is not worth spending held-out data on. The
        baseline's controls are shown beside (verdicts mapped), never a blocker. A
        re-evaluation rebuilds both reports from the locked report's control records.
        """
        if self.policy is None or self.policy.controls is None:
            return None
        from ..controls import run_controls

        suite = self._suite()
        if self.resume_from is not None:
            self.controls = control_report_from_records(suite, self.report_dir / CONTROLS_DIR, None)
        else:
            self.controls = await run_controls(
                self.judge,
                suite,
                self.report_dir / CONTROLS_DIR,
                concurrency=self.concurrency,
                cache_dir=False,
                progress=False,
            )
        if self.baseline_judge is not None:
            if self.resume_from is None:
                await run_controls(
                    self.baseline_judge,
                    suite,
                    self.report_dir / BASELINE_CONTROLS_DIR,
                    concurrency=self.concurrency,
                    cache_dir=False,
                    progress=False,
                )
            self.baseline_controls = control_report_from_records(
                suite, self.report_dir / BASELINE_CONTROLS_DIR, self.mapping
            )
        self.control_blockers = list(self.controls.blockers(self.policy.controls.blocking_roles))
        return self.controls

    @property
    def controls_ok(self) -> bool:
        return not self.control_blockers

    async def run_held_out(self) -> RunSummary | None:
        """Run the candidate (and the baseline) once on held-out data, when lineage holds and
        controls pass.

        One ledger entry covers both runs; with a budget, the candidate's run may spend what
        the baseline's reservation leaves, the baseline's what the candidate's spend leaves. A
        re-evaluation judges nothing: it reads the run summaries of the copied records.
        """
        if not self.lineage:
            self.check_lineage()
        if not self.lineage_ok or not self.controls_ok:
            return None
        if self.resume_from is not None:
            self.summary = _read_summary(self.report_dir / RUN_DIR)
            self.baseline_summary = _read_summary(self.report_dir / BASELINE_RUN_DIR)
            return self.summary
        access = HeldOutAccess.grant(
            self.ledger.path, self.ledger_entry_id, self.judge.identity.fingerprint()
        )
        limit = self.budget_usd
        if limit is not None and self.baseline_judge is not None:
            from ..migration import estimate_run

            items = _held_out_items(self.dataset)
            limit = max(
                0.0,
                limit
                - estimate_run(
                    "baseline",
                    self.baseline_judge,
                    items,
                    self.report_dir / BASELINE_RUN_DIR,
                    cache_dir=False,
                ).needed_usd,
            )
        self.summary = await run_candidate(
            self.judge,
            self.dataset,
            "held_out",
            self.report_dir / RUN_DIR,
            RunOptions(
                concurrency=self.concurrency,
                budget_usd=limit,
                max_cases=self.max_cases,
                cache_dir=False,  # held-out verdicts are neither reused nor shared through a cache
                progress=False,  # progress widgets do not render in static HTML
            ),
            held_out_access=access,
        )
        if self.baseline_judge is not None:
            rest = (
                None
                if self.budget_usd is None
                else max(0.0, self.budget_usd - self.summary.cost_usd)
            )
            baseline_access = HeldOutAccess.grant(
                self.ledger.path, self.ledger_entry_id, self.baseline_judge.identity.fingerprint()
            )
            self.baseline_summary = await run_candidate(
                self.baseline_judge,
                self.dataset,
                "held_out",
                self.report_dir / BASELINE_RUN_DIR,
                RunOptions(
                    concurrency=self.concurrency,
                    budget_usd=rest,
                    max_cases=self.max_cases,
                    cache_dir=False,
                    progress=False,
                ),
                held_out_access=baseline_access,
            )
        return self.summary

    async def run_sentinels(self) -> RunSummary | None:
        """Run the candidate on the gold's sentinels (``sentinels.yaml``) into
        ``REPORT/sentinels/``.

        Only after a held-out run, never on held-out cases (the sentinel file refuses them),
        and no ledger use: it is the baseline ``workbench drift --against REPORT`` compares
        later runs of this judge with. Not a gate input. A re-evaluation keeps the copied run.
        """
        from ..repeatability import load_sentinels, sentinels_path_for

        if (
            self.summary is None
            or self.resume_from is not None
            or not sentinels_path_for(self.dataset).exists()
        ):
            return None
        from ..gold import gold_lineage
        from ..judges import JudgeInput
        from ..repeatability._drift import PARTITION
        from ..runs import WorkItem, run_items

        loaded = load_sentinels(None, self.dataset)
        items = [
            WorkItem(c.case_id, c.response_hash, 0, JudgeInput.from_case(c)) for c in loaded.cases
        ]
        spent = self.summary.cost_usd + (
            self.baseline_summary.cost_usd if self.baseline_summary else 0.0
        )
        limit = None if self.budget_usd is None else max(0.0, self.budget_usd - spent)
        self.sentinels = await run_items(
            self.judge,
            items,
            self.report_dir / SENTINELS_DIR,
            RunOptions(
                repeats=1,
                concurrency=self.concurrency,
                budget_usd=limit,
                cache_dir=False,
                progress=False,
            ),
            partition=PARTITION,
            dataset_sha256=self.dataset.sha256,
            grid=True,
            lineage=gold_lineage(self.dataset, loaded.cases),
        )
        return self.sentinels

    def evaluate(self, extra_blockers: list[Blocker] | None = None) -> GateResult:
        """Align, apply the gate, write gate.json, the figures and the restricted evidence.

        Overrides are checked against the certification's start (the ``started`` ledger
        entry's time), so ``workbench verify`` can re-run the same gate later. Beside the
        policy's limits the gate reads the repeatability studies (when a slice limits the flip
        rate, or the candidate has one) and, for a migration, the transitions and the
        transition reviews in effect; each is stored in the report first.
        """
        if not self.lineage:
            self.check_lineage()
        write_gold_evidence(self.report_dir, self.dataset)
        blockers = (
            list(extra_blockers or []) + self.control_blockers + lineage_blockers(self.lineage)
        )
        if self.control_blockers:
            # Controls failed: held-out data was deliberately not used, so there is nothing
            # held-out to align. The outcome is decided by the control (and lineage) blockers.
            not_used = NotEvaluated(
                reason=HELD_OUT_NOT_USED,
                judge=self.judge.spec.label,
                dataset_sha256=self.dataset.sha256,
                partition="held_out",
            )
            policy_sha = sha256_file(self.policy_path) if self.policy else None
            return self._save_gate(
                evaluate_gate(
                    not_used,
                    self.policy,
                    rubric=self.dataset.rubric,
                    extra_blockers=blockers,
                    policy_sha256=policy_sha,
                    fingerprint=self.judge.identity.fingerprint(),
                )
            )
        run = RunDir(self.report_dir / RUN_DIR)
        results_path = run.results
        lines = run.read_results()
        # Lineage of the held-out results against this gold (run manifest: dataset, rubric, per-case
        # hashes).
        self.join = align_results(
            self.dataset,
            lines,
            partition="held_out",
            manifest=read_run_manifest(results_path),
            location=str(results_path),
        )
        self.alignment = alignment_report(
            self.join, results_path=str(results_path) if results_path.exists() else None
        )
        self.human = human_agreement(self.dataset, "held_out")
        fingerprint = self.judge.identity.fingerprint()
        blockers += self._repeatability_blockers(fingerprint)
        if self.baseline_judge is not None:
            blockers += self._migration_blockers(lines)
        gate = evaluate_gate(
            self.alignment,
            self.policy,
            rubric=self.dataset.rubric,
            run=self.summary,
            overrides=self.overrides,
            now=self.ledger_entry.when,
            join=self.join,
            extra_blockers=blockers,
            fingerprint=fingerprint,
        )
        atomic_write_json(self.report_dir / FIGURES_FILE, figures_of(self.alignment))
        self._save_gate(gate)
        self._write_restricted()
        return gate

    def _repeatability_blockers(self, fingerprint: str) -> list[Blocker]:
        from ..repeatability import studies_of, studies_path_for

        if self.resume_from is None:
            log = studies_path_for(self.dataset)
            mine = studies_of(log, fingerprint) if log.exists() else []
            if mine or needs_repeatability(self.policy):
                snapshot_studies(self.report_dir, mine)
        return repeatability_gate_blockers(
            self.policy,
            stored_studies(self.report_dir),
            fingerprint=fingerprint,
            dataset_sha256=self.dataset.sha256,
        )

    def _migration_blockers(self, lines: list[Any]) -> list[Blocker]:
        from ..review._transition_reviews import TransitionReviews, transition_reviews_path_for

        assert self.baseline_judge is not None
        old_run = RunDir(self.report_dir / BASELINE_RUN_DIR)
        old_path = old_run.results
        old_lines = old_run.read_results()
        if (
            old_path.exists()
        ):  # the baseline's lineage against this gold (raises when it does not hold)
            mapped, _, _ = map_old_lines(old_lines, self.mapping)
            align_results(
                self.dataset,
                [
                    line
                    for line in mapped
                    if line.result.value is None or line.result.value in self.dataset.rubric.labels
                ],
                partition="held_out",
                manifest=read_run_manifest(old_path),
                location=str(old_path),
            )
        old_fp, new_fp = (
            self.baseline_judge.identity.fingerprint(),
            self.judge.identity.fingerprint(),
        )
        reviews = TransitionReviews(transition_reviews_path_for(self.dataset.root)).in_effect(
            old_fp, new_fp
        )
        self.migration = evaluate_migration(
            self.dataset,
            lines,
            old_lines,
            candidate=self.judge.spec.label,
            candidate_fingerprint=new_fp,
            baseline=self.baseline_judge.spec.label,
            baseline_fingerprint=old_fp,
            mapping=self.mapping,
            reviews=reviews,
            baseline_run_status=self.baseline_summary.status if self.baseline_summary else None,
            baseline_controls=(
                self.baseline_controls.status if self.baseline_controls is not None else None
            ),
        )
        write_migration(self.report_dir, self.migration, reviews)
        return self.migration.blockers

    def _save_gate(self, gate: GateResult) -> GateResult:
        self.gate = gate
        atomic_write_json(self.report_dir / GATE_FILE, public_gate(gate))
        return gate

    def _write_restricted(self) -> None:
        from ._migration import write_transitions_html
        from ._restricted import write_restricted

        assert self.join is not None and self.gate is not None
        write_restricted(
            self.report_dir / RESTRICTED_DIR,
            self.dataset,
            self.join,
            RunDir(self.report_dir / RUN_DIR).results,
            self.gate,
            report_id=self.ledger_entry.report_id,
        )
        if self.migration is not None:
            write_transitions_html(
                self.report_dir / RESTRICTED_DIR,
                self.migration,
                report_id=self.ledger_entry.report_id,
            )

    # -- what the report shows --------------------------------------------------------------

    def run_rows(self) -> list[dict[str, Any]]:
        path = RunDir(self.report_dir / RUN_DIR).results
        if not path.exists():
            return []
        return read_jsonl_records(path)

    def grant(self, gate: GateResult | None = None) -> Any:
        """What this certification grants (:func:`~workbench.authority.grant_for` on the policy and
        the public gate)."""
        from ..authority import AuthorityGrant, grant_for

        gate = gate or self.gate
        if self.policy is None or gate is None:
            return AuthorityGrant(
                policy=None,
                outcome=getattr(gate, "outcome", None),
                requested=None,
                use="none",
                scope=None,
                withheld=["no policy or no gate"],
                report_id=self.ledger_entry.report_id,
            )
        return grant_for(self.policy, public_gate(gate), report_id=self.ledger_entry.report_id)

    def beside(self) -> Any:
        """The authority requested and the last complete certified other version
        (:func:`~workbench.authority.beside_candidate`)."""
        from ..authority import beside_candidate

        if self.policy is None:
            return None
        return beside_candidate(
            self.policy, self.judge.spec.label, self.ledger_entry.reports_root, self.dataset.root
        )


def _last_certified(
    policy: Policy, judge: Judge, entry: LedgerEntry, dataset: GoldDataset
) -> dict[str, Any] | None:
    """The last complete certified other version beside the candidate, for the lock."""
    from ..authority import beside_candidate

    context = beside_candidate(policy, judge.spec.label, entry.reports_root, dataset.root)
    last = context.last_certified
    if last is None:
        return None
    return {
        "report_id": last.report_id,
        "candidate": last.candidate,
        "candidate_fingerprint": last.candidate_fingerprint,
        "outcome": last.outcome,
        "stale": [r.message for r in context.last_certified_stale],
    }


def _read_summary(run_dir: Path) -> RunSummary | None:
    return RunDir(run_dir).read_summary()


def _held_out_items(dataset: GoldDataset) -> list[Any]:
    from ..judges import JudgeInput
    from ..runs import WorkItem

    return [
        WorkItem(c.case_id, c.response_hash, 0, JudgeInput.from_case(c))
        for c in dataset.partition("held_out")
    ]


def write_gate_json(report_dir: Path, gate: GateResult) -> None:
    atomic_write_json(report_dir / GATE_FILE, public_gate(gate))
