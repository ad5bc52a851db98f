"""Certification (``workbench certify``): check every input, open a ``started`` ledger entry,
copy the inputs, run ``03_certify.ipynb``, render, seal the lock and close the entry.
:func:`resume_review` re-evaluates a locked migration report with the reviews recorded since."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from .._args import check_run_arguments
from .._io import atomic_write_json, atomic_write_text, read_json_file, sha256_file
from .._lock import Lock, git_state, make_read_only, maybe_sha256, seal, versions
from .._redact import environment_secrets, secrets_in_files
from .._signing import Signer, load_signer
from ..errors import WorkbenchError, problem, refusal
from ..gold import GoldDataset, load_dataset
from ..heldout import (
    HeldOutLedger,
    LedgerEntry,
    PreviousReport,
    Use,
    gold_directory,
    held_out_manifest_sha256,
    held_out_use_line,
    item_keys,
    ledger_path_for,
    open_use,
)
from ..judges import Judge, load_candidate
from ..migration import (
    BASELINE_CONTROLS_DIR,
    BASELINE_RUN_DIR,
    MIGRATION_FILE,
    REVIEWS_SNAPSHOT,
    TRANSITIONS_FILE,
)
from ..policy import (
    Blocker,
    GateResult,
    Policy,
    certifier_waiver_problems,
    check_policy_against_rubric,
    load_overrides,
    load_policy,
)
from ..project import pinned_project_root, project_root
from ..runs import RunDir, check_shown
from ._kernel import KernelSeed, native_kernel
from ._listing import (
    check_ledger_complete,
    check_legacy_ledger,
    previous_report,
    write_started_marker,
)
from ._migration import (
    BASELINE_INPUTS,
    MAPPING_COPY,
    SENTINELS_DIR,
    check_migration_inputs,
    copy_spec,
    locked_migration,
    needs_repeatability,
)
from ._provenance import (
    Provenance,
    advisory_section,
    advisory_title,
    cap_unpinned,
    notebook_provenance,
    packaged_notebook,
)
from ._recompute import (
    CONTROLS_DIR,
    FIGURES_FILE,
    GATE_FILE,
    HELD_OUT_GOLD,
    LINEAGE_FILE,
    RUBRIC_JSON,
    RUN_DIR,
    public_gate,
)
from ._render import not_run_html, render_html, warm_render

EXECUTED_NOTEBOOK = "certification.ipynb"
HTML_FILE = "report.html"
INPUTS_DIR = "inputs"

_LOCKED_EVIDENCE: tuple[str, ...] = (INPUTS_DIR, CONTROLS_DIR, "baseline", RUN_DIR)
_LOCKED_EVIDENCE += ("restricted/baseline", SENTINELS_DIR, "repeatability")
"""What :func:`resume_review` copies from the locked report (everything judged, nothing decided)."""


@dataclass(frozen=True)
class CertificationResult:
    """What one certification (or re-evaluation) wrote: the locked report and its outcome."""

    report_dir: Path
    report_id: str
    outcome: str
    blockers: list[dict[str, Any]]
    lock_sha256: str
    timings_s: dict[str, float]
    advisory: str | None = None
    """The advisory note, when a custom notebook the policy does not pin ran."""
    held_out_use: str = ""
    """The earlier uses of the held-out content (empty for a re-evaluation)."""

    def to_json(self) -> dict[str, Any]:
        """The result as ``workbench certify --json`` prints it."""
        return {**dataclasses.asdict(self), "report_dir": str(self.report_dir)}

    def format(self) -> str:
        """The report, the outcome with the lock's hash, every blocker, and the timings."""
        lines = [
            *([self.advisory] if self.advisory else []),
            f"report: {self.report_dir}",
            *([self.held_out_use] if self.held_out_use else []),
            f"outcome: {self.outcome.upper()} ({len(self.blockers)} blocker(s)); lock sha256"
            f" {self.lock_sha256}",
        ]
        for b in self.blockers:
            where = f", {b['slice']}" if b.get("slice") else ""
            lines.append(f"  - {b['code']} [{b['category']}{where}]: {b['message']}")
        lines.append("timings: " + ", ".join(f"{k} {v:.2f}s" for k, v in self.timings_s.items()))
        return "\n".join(lines)


def resolve_budget(
    policy: Policy, requested: float | None, policy_path: str | Path
) -> float | None:
    """The policy's ``budget_usd`` unless a lower one is asked (a higher one is refused)."""
    if policy.budget_usd is None or requested is None:
        return requested if policy.budget_usd is None else policy.budget_usd
    if requested > policy.budget_usd:
        message = (
            f"--budget-usd {requested:g} is above the policy's budget_usd {policy.budget_usd:g}"
        )
        fix = (
            f"drop --budget-usd (the policy's ${policy.budget_usd:g} is used) or give a lower one;"
            " a larger budget needs a new policy version"
        )
        where = f"{policy_path}: budget_usd"
        raise refusal("cannot certify", where, "budget_above_policy", message, fix)
    return requested


def _entry_fields(judge: Judge, dataset: GoldDataset, root: Path, **more: Any) -> dict[str, Any]:
    fields = {"candidate": judge.spec.label, "dataset_sha256": dataset.sha256}
    return fields | {"reports_root": root, "gold": gold_directory(dataset.root), **more}


@dataclass(frozen=True)
class _Inputs:
    """Every input of one certification, checked before the ledger is touched."""

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
    provenance: Provenance

    @property
    def fingerprint(self) -> str:
        return self.judge.identity.fingerprint()

    @property
    def manifest_sha(self) -> str:
        return held_out_manifest_sha256(self.dataset.sha256, self.dataset.partition("held_out"))

    @cached_property
    def held_out_keys(self) -> frozenset[str]:
        return item_keys(self.dataset.partition("held_out"))

    def entry_fields(self, root: Path, rerun_reason: str | None) -> dict[str, Any]:
        old = self.old_judge
        migration = {"kind": "migration", "baseline": old.spec.label} if old else {}
        if old is not None:
            migration["baseline_fingerprint"] = old.identity.fingerprint()
        return _entry_fields(
            self.judge,
            self.dataset,
            root,
            fingerprint=self.fingerprint,
            manifest_sha256=self.manifest_sha,
            rerun_reason=rerun_reason,
            budget_usd=self.budget,
            **migration,
        )


@dataclass
class _Job:
    """One certification between its ``started`` entry and its lock."""

    use: Use
    judge: Judge
    dataset: GoldDataset
    notebook: Path
    report_dir: Path
    previous: PreviousReport | None
    budget: float | None = None
    signer: Signer | None = None
    concurrency: int = 8
    max_cases: int | None = None
    kernel_name: str = "python3"
    resumes: PreviousReport | None = None
    resume_from: Path | None = None
    copies: dict[str, Path] = field(default_factory=dict)
    policy_file: str | None = None
    provenance: Provenance | None = None
    seed: KernelSeed | None = None

    @property
    def report_id(self) -> str:
        return self.entry.report_id

    @property
    def ledger(self) -> HeldOutLedger:
        return self.use.ledger

    @property
    def entry(self) -> LedgerEntry:
        return self.use.entry


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
    warm_kernel: bool = False,
) -> CertificationResult:
    """Certify ``candidate`` on the held-out partition of ``gold`` under ``policy``, in the gold's
    own ledger. ``baseline`` makes it a migration certification; ``label_mapping`` maps the
    baseline's labels (required when the rubric lacks any of them). ``warm_kernel``: the kernel
    is forked from this process once the inputs are checked (``reports/_kernel.py``; for the
    command-line process only)."""
    check_run_arguments(concurrency=concurrency, budget_usd=budget_usd, max_cases=max_cases)
    ledger = HeldOutLedger(ledger_path_for(gold))  # refused first outside a project
    seeds: list[KernelSeed | None] = []
    try:
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
            judge_loaded=lambda: seeds.append(_seed(warm_kernel, kernel_name)),
        )
        job = _start(ledger, inputs, Path(reports_root), rerun_reason)
    except BaseException:
        _discard(seeds[0] if seeds else None)
        raise

    def copy_inputs() -> dict[str, Path]:  # inside the held-out use: a failure aborts it
        job.seed = seeds[0] if seeds else None
        job.signer, job.budget, job.concurrency = inputs.signer, inputs.budget, concurrency
        job.provenance, job.max_cases, job.kernel_name = inputs.provenance, max_cases, kernel_name
        job.policy_file = str(inputs.policy_path.resolve())
        return _copy_inputs(
            job.report_dir,
            inputs.candidate,
            inputs.policy_path,
            inputs.overrides,
            baseline=inputs.baseline,
            label_mapping=inputs.mapping,
        )

    return _execute(job, copy_inputs)


def _seed(warm_kernel: bool, kernel_name: str) -> KernelSeed | None:
    """The warm kernel's seed, forked now (the ledger not yet touched; for a certification, once
    the candidate's judge is built, so the seed's imports overlap the other checks: a refused
    certification discards it); none when it cannot be forked (the kernel then starts as a new
    process)."""
    if not (warm_kernel and native_kernel(kernel_name)):
        return None
    try:
        return KernelSeed()
    except OSError:
        return None


def _discard(seed: KernelSeed | None) -> None:
    if seed is not None:
        seed.discard()


def _check_control_suite(policy: Path, controls: Any) -> None:
    from ..controls import load_suite, suite_release

    suite = load_suite((policy.parent / controls.suite).resolve())
    if controls.require_frozen and suite_release(suite) is None:
        message = (
            f"the policy requires a frozen control suite and {suite.label} is not"
            " frozen: it could be edited between certifications"
        )
        fix = f"freeze it: workbench freeze {suite.path} --approver NAME"
        raise refusal("cannot certify", str(suite.path), "controls_unfrozen", message, fix)


def _check_dataset(dataset: GoldDataset) -> None:
    """Refuse a gold without held-out cases, or whose current state is no frozen release."""
    where = str(dataset.gold_path)
    if not dataset.partition("held_out"):
        fix = "certification needs a held_out partition"
        message = "the dataset has no held-out cases"
        raise refusal("cannot certify", where, "no_held_out", message, fix)
    if dataset.release is not None:
        return
    latest = dataset.releases[-1].release_id if dataset.releases else None
    message = f"the gold's current state (sha256 {dataset.sha256[:12]}) is not a frozen release" + (
        f"; the latest release is {latest}" if latest else "; it was never frozen"
    )
    fix = f"freeze it (`workbench freeze {dataset.gold_path.parent} --approver NAME`), then certify"
    raise refusal("cannot certify", where, "gold_not_frozen", message, fix)


def _check_paths(policy: Path, notebook: Path, mapping: Path | None, baseline: Path | None) -> None:
    problems = [
        problem(str(where), code, message, fix)
        for failed, where, code, message, fix in (
            (
                not policy.exists(),
                policy,
                "policy_missing",
                "the policy file does not exist",
                "point --policy at data/policies/<name>@<version>.yaml; certification without a"
                " policy is never possible",
            ),
            (
                not notebook.exists(),
                notebook,
                "notebook_missing",
                "the certification notebook is missing",
                "drop --notebook to run the notebook shipped in the package",
            ),
            (
                mapping is not None and baseline is None,
                "--label-mapping",
                "mapping_without_baseline",
                "a label mapping translates a baseline's verdicts, but no --baseline was given",
                "give --baseline OLD with --label-mapping, or drop --label-mapping",
            ),
        )
        if failed
    ]
    if problems:
        raise WorkbenchError("cannot certify", problems)


def _path(value: str | Path | None) -> Path | None:
    return Path(value) if value else None


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
    judge_loaded: Callable[[], object] = lambda: None,
) -> _Inputs:
    """Load and check every input; nothing is written. ``judge_loaded`` is called once the
    candidate's judge is built (its module and Ragas imported)."""
    candidate, policy, gold = Path(candidate), Path(policy), Path(gold)
    baseline_path, mapping_path = (
        Path(p) if p is not None else None for p in (baseline, label_mapping)
    )
    custom = _path(notebook)
    notebook_path = custom or packaged_notebook()
    _check_paths(policy, notebook_path, mapping_path, baseline_path)
    judge = load_candidate(candidate)
    judge_loaded()
    policy_model = load_policy(policy)
    if policy_model.controls is not None:
        _check_control_suite(policy, policy_model.controls)
    dataset = load_dataset(gold)
    _check_dataset(dataset)
    check_policy_against_rubric(policy_model, dataset.rubric, policy_path=policy)
    old_judge = None
    if baseline_path is not None:
        old_judge, _ = check_migration_inputs(judge, baseline_path, mapping_path, dataset)
    for each in (judge, old_judge):  # before the ledger: a prompt that omits the evidence
        if each is not None:
            check_shown(each, dataset.partition("held_out"), str(dataset.gold_path))
    budget = resolve_budget(policy_model, budget_usd, policy)
    if old_judge is not None and budget is not None:
        _check_paired_budget(judge, old_judge, dataset, budget)
    overrides_path = _path(overrides) or policy.parent / "overrides.jsonl"
    if overrides_path.exists() and (
        waived_by_me := certifier_waiver_problems(
            load_overrides(overrides_path), policy_model, judge.identity.fingerprint()
        )
    ):
        raise WorkbenchError("cannot certify", waived_by_me)
    _check_side_logs(dataset, policy_model, migration=old_judge is not None)
    signer = load_signer(sign_key) if sign_key is not None else None
    provenance = notebook_provenance(custom, policy_model)
    paths = (candidate, policy, gold, notebook_path, baseline_path, mapping_path, overrides_path)
    loaded = (judge, policy_model, dataset, old_judge, budget, signer, provenance)
    return _Inputs(*paths, *loaded)


def work_items(cases: Iterable[Any]) -> list[Any]:
    """Gold cases as run-engine work items."""
    from ..judges import JudgeInput
    from ..runs import WorkItem

    return [WorkItem(c.case_id, c.response_hash, 0, JudgeInput.from_case(c)) for c in cases]


def _check_paired_budget(judge: Judge, old: Judge, dataset: GoldDataset, budget: float) -> None:
    from ..migration import BudgetInsufficient
    from ..runs import estimate_run

    items = work_items(dataset.partition("held_out"))
    needed = sum(
        estimate_run(name, j, items, Path("/nonexistent-run-dir"), cache_dir=False).needed_usd
        for name, j in (("candidate", judge), ("baseline", old))
    )
    if needed > budget + 1e-12:
        message = (
            f"judging {len(items)} held-out case(s) with {judge.spec.label} and"
            f" {old.spec.label} needs up to ${needed:.4f} (the engine's reservations, one attempt"
            f" per call), the budget is ${budget:.4f}"
        )
        fix = (
            f"give --budget-usd {needed:.4f} or more (a new policy version if it is above the"
            " policy's budget_usd); certifying on fewer cases is a scope change, not a saving"
        )
        raise BudgetInsufficient(
            "the budget does not cover both versions: nothing was started",
            [problem("--budget-usd", "budget_insufficient", message, fix)],
        )


def _check_side_logs(dataset: GoldDataset, policy: Policy, *, migration: bool = True) -> None:
    """Refuse, before any held-out use, a damaged log the notebook reads beside the gold."""
    from ..repeatability import load_sentinels, read_studies, sentinels_path_for, studies_path_for
    from ..review import read_transition_reviews, transition_reviews_path_for

    studies = studies_path_for(dataset)
    if studies.exists() or needs_repeatability(policy):
        read_studies(studies)
    if migration:
        read_transition_reviews(transition_reviews_path_for(dataset.root))
    if sentinels_path_for(dataset).exists():
        load_sentinels(None, dataset)


def _allocate(reports_root: Path, name: str, version: str) -> tuple[Path, int]:
    base = reports_root / name / version
    base.mkdir(parents=True, exist_ok=True)
    n = max((int(p.name) for p in base.iterdir() if p.is_dir() and p.name.isdigit()), default=0)
    while True:
        n += 1
        with contextlib.suppress(FileExistsError):
            (base / str(n)).mkdir()  # exclusive: a report is never overwritten
            return base / str(n), n


def _start(ledger: HeldOutLedger, inputs: _Inputs, root: Path, rerun_reason: str | None) -> _Job:
    def check_reuse(entries: list[LedgerEntry]) -> dict[str, Any]:  # a re-use needs a reason
        keys = inputs.held_out_keys
        prior = ledger.check_rerun(keys, inputs.manifest_sha, rerun_reason, entries)
        check_legacy_ledger(root, inputs.fingerprint, inputs.manifest_sha, rerun_reason)
        return {"held_out_keys": keys, "prior": prior}

    fields = inputs.entry_fields(root, rerun_reason)
    return _open_entry(
        ledger, root, inputs.judge, inputs.dataset, inputs.notebook, fields, check_reuse
    )


def _open_entry(
    ledger: HeldOutLedger,
    root: Path,
    judge: Judge,
    dataset: GoldDataset,
    notebook: Path,
    fields: dict[str, Any],
    check: Callable[[list[LedgerEntry]], dict[str, Any]] | None = None,
) -> _Job:
    """Open the held-out use (:func:`heldout.open_use`: under the ledger lock, dead uses closed):
    check the ledger knows every report of ``root`` (and ``check``, which returns more entry
    fields), allocate the report directory and start its entry, named in the directory."""
    name, version = judge.spec.name, judge.spec.version
    slot: dict[str, Any] = {}  # what prepare allocated, and the entry once started

    def prepare(entries: list[LedgerEntry]) -> dict[str, Any]:
        check_ledger_complete(ledger, entries, root)
        more = fields | (check(entries) if check is not None else {})
        slot["report_dir"], n = _allocate(root, name, version)
        slot["previous"] = previous_report(root, name, version, n, ledger, entries)
        return more | {"report_id": f"{name}/{version}/{n}", "previous_report": slot["previous"]}

    def started(entry: LedgerEntry) -> None:
        slot["entry"] = entry
        write_started_marker(slot["report_dir"], entry, ledger.path)

    try:
        use = open_use(ledger, prepare, started=started)
    except BaseException:
        if "report_dir" in slot and "entry" not in slot:  # nothing was recorded for it
            shutil.rmtree(slot["report_dir"], ignore_errors=True)
        raise
    return _Job(use, judge, dataset, notebook, slot["report_dir"], slot["previous"])


def _execute(job: _Job, copy: Callable[[], dict[str, Path]]) -> CertificationResult:
    """Copy the inputs, run the notebook and lock the report inside the held-out use (any
    failure aborts its entry; the liveness hold is always released)."""
    try:
        with job.use:
            job.copies = copy()
            result = _run_and_lock(job)
    finally:
        _discard(job.seed)
    make_read_only(job.report_dir)
    return result


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
            message = f"the policy's control suite {declared.suite!r} does not exist"
            fix = "restore the suite or correct controls.suite in the policy"
            raise refusal("cannot certify", str(policy), "controls_missing", message, fix)
        copies["controls"] = inputs / "controls" / suite.name
        copies["controls"].parent.mkdir()
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


def resume_review(
    report: str | Path,
    *,
    gold: str | Path | None = None,
    notebook: str | Path | None = None,
    kernel_name: str = "python3",
    sign_key: str | Path | None = None,
    warm_kernel: bool = False,
) -> CertificationResult:
    """Re-evaluate a locked migration report with the transition reviews recorded since, as a new
    report linked to it (nothing judged again, no held-out use). Refused (exit 2) for a report
    that does not verify, or whose gold or candidate changed since. ``warm_kernel`` as for
    :func:`certify`."""
    custom = _path(notebook)
    notebook_path = custom or packaged_notebook()
    refused = "cannot re-evaluate the report"
    first, lock, dataset = locked_migration(report, gold, refused=refused, notebook=notebook_path)
    if "/".join(first.resolve().parts[-3:]) != lock.report_id:
        message = f"the report is not inside its reports root (expected .../{lock.report_id})"
        fix = "resume the report where certification wrote it"
        raise refusal(refused, str(first), "report_moved", message, fix)
    judge = load_candidate(first / str(lock.input_files.get("candidate")))
    if judge.identity.fingerprint() != lock.candidate_fingerprint:
        message = (
            "the candidate copied in the report now has fingerprint"
            f" {judge.identity.fingerprint()[:12]}, the report certified"
            f" {lock.candidate_fingerprint[:12]} (its code or the installed Ragas changed)"
        )
        fix = "certify the candidate as it is now (a new certification)"
        raise refusal(refused, str(first), "candidate_changed", message, fix)
    signer = load_signer(sign_key) if sign_key is not None else None
    policy = load_policy(first / str(lock.input_files.get("policy")))
    _check_side_logs(dataset, policy)
    root = first.resolve().parents[2]
    ledger = HeldOutLedger(ledger_path_for(dataset.root))
    fields = _entry_fields(
        judge,
        dataset,
        root,
        fingerprint=lock.candidate_fingerprint,
        manifest_sha256=str(lock.evidence.get("held_out_manifest")),
        rerun_reason=None,
        kind="review_reevaluation",
        baseline=lock.baseline,
        baseline_fingerprint=lock.baseline_fingerprint,
        resumes=lock.report_id,
    )
    provenance = notebook_provenance(custom, policy)
    seed = _seed(warm_kernel, kernel_name)
    try:
        job = _open_entry(ledger, root, judge, dataset, notebook_path, fields)
    except BaseException:
        _discard(seed)
        raise
    job.seed, job.signer, job.kernel_name, job.resume_from = seed, signer, kernel_name, first
    job.policy_file, job.provenance = lock.policy_file, provenance
    job.resumes = PreviousReport(report_id=lock.report_id, lock_sha256=lock.lock_sha256)

    def copy_locked() -> dict[str, Path]:
        for rel in _LOCKED_EVIDENCE:
            if (first / rel).is_dir():
                (job.report_dir / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copytree(first / rel, job.report_dir / rel, copy_function=shutil.copyfile)
        for path in job.report_dir.rglob("*"):  # writable until this report is locked
            path.chmod(path.stat().st_mode | 0o200)
        copies = {name: job.report_dir / rel for name, rel in lock.input_files.items() if rel}
        copies["baseline"] = job.report_dir / str(lock.input_files.get("baseline"))
        return copies

    return _execute(job, copy_locked)


def _run_and_lock(job: _Job) -> CertificationResult:
    t0 = time.perf_counter()
    executed = job.report_dir / EXECUTED_NOTEBOOK
    inputs = _input_hashes(job)
    with pinned_project_root(project_root()):  # the kernel runs in the report directory
        failure = _execute_notebook(job, executed)
    executed_at = time.perf_counter()
    _check_inputs_unchanged(job, inputs)
    gate_path = job.report_dir / GATE_FILE
    gate = read_json_file(gate_path) if gate_path.exists() else None
    if failure is not None or gate is None:
        gate = public_gate(_failed_gate(failure, job.judge))
        atomic_write_json(gate_path, gate)
    if (capped := cap_unpinned(gate, job.provenance)) is not gate:
        gate = capped
        atomic_write_json(gate_path, gate)
    provenance = job.provenance if job.provenance and job.provenance.advisory else None
    advisory = advisory_title(provenance) if provenance else None
    title = f"Certification report: {job.judge.spec.label} ({job.report_id})"
    title = f"{advisory} - {title}" if advisory else title
    notice = [advisory_section(provenance)] if provenance else []
    html = render_html(executed, title, notice) if executed.exists() else not_run_html()
    atomic_write_text(job.report_dir / HTML_FILE, html)
    rendered_at = time.perf_counter()
    timings = _timings(executed, t0, executed_at, rendered_at)
    _refuse_secrets(job.report_dir, job.judge)
    lock = seal(job.report_dir, _lock_of(job, gate, timings, failure is None), job.signer)
    run = RunDir(job.report_dir / RUN_DIR)
    # Any held-out run directory (even a partial run) is a use; a re-evaluation judged nothing.
    job.use.finish(
        outcome=gate["outcome"],
        lock_sha256=lock.lock_sha256,
        held_out_used=run.path.exists() and job.entry.uses_held_out,
        run_id=_run_id(run),
        run_records_sha256=lock.evidence["run_records"],
        baseline_run_records_sha256=lock.evidence.get("baseline_run_records"),
    )
    timings["lock"] = round(time.perf_counter() - rendered_at, 3)
    outcome, blockers, use = gate["outcome"], gate["blockers"], held_out_use_line(job.entry)
    return CertificationResult(
        job.report_dir, job.report_id, outcome, blockers, lock.lock_sha256, timings, advisory, use
    )


def _refuse_secrets(report_dir: Path, judge: Judge) -> None:
    """No secret of the environment, in any encoded form, in a report that is locked."""
    secrets = environment_secrets([judge.spec.endpoint.api_key_env])
    problems = [
        problem(
            str(report_dir / rel),
            "secret_in_report",
            f"{rel} holds the value of ${name} ({', '.join(forms)} form) after redaction: the"
            " report is not locked",
            f"rotate ${name}'s credential; find what wrote it into the report (a judge's reason"
            " or error, the gold data, the notebook's output) and remove it at its source; delete"
            " the unlocked report (the ledger keeps the held-out use) and certify again",
        )
        for rel, name, forms in secrets_in_files(report_dir, secrets)
    ]
    if problems:
        raise WorkbenchError(
            f"refusing to lock {report_dir}: it holds a secret of the environment", problems
        )


def _input_hashes(job: _Job) -> dict[str, str | None]:
    return {name: maybe_sha256(path) for name, path in sorted(job.copies.items())}


def _check_inputs_unchanged(job: _Job, before: dict[str, str | None]) -> None:
    """Refuse a notebook that changed an input copied into the report."""
    changed = [name for name, digest in _input_hashes(job).items() if before.get(name) != digest]
    if changed:
        fix = "certify with the notebook shipped in the package (drop --notebook)"
        problems = [
            problem(
                str(job.copies[name]),
                "input_changed_by_notebook",
                f"the certification notebook changed the {name} copied into the report: nothing"
                " it decided can be trusted",
                fix,
            )
            for name in changed
        ]
        raise WorkbenchError("certification refused", problems)


def _notebook_node(job: _Job) -> Any:
    """The notebook, parsed from the bytes whose sha256 the lock records."""
    import nbformat

    data = job.notebook.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if job.provenance is not None and digest != job.provenance.notebook_sha256:
        message = (
            f"the certification notebook changed after it was checked (sha256"
            f" {job.provenance.notebook_sha256[:12]} -> {digest[:12]})"
        )
        fix = "certify again; drop --notebook to run the notebook shipped in the package"
        raise refusal("certification refused", str(job.notebook), "notebook_changed", message, fix)
    reads: Any = nbformat.reads  # untyped
    return reads(data.decode("utf-8"), as_version=4)


@contextlib.contextmanager
def kernel_manager_class(seed: KernelSeed | None = None) -> Iterator[type]:
    """An ``AsyncKernelManager`` class whose kernels talk over IPC sockets in a private temporary
    directory (nothing listens on TCP), removed afterwards; with ``seed``, its kernel is the
    seed when the kernel spec runs this interpreter's ``ipykernel_launcher``."""
    from jupyter_client.manager import AsyncKernelManager

    directory = Path(tempfile.mkdtemp(prefix="wbk-", dir="/tmp" if Path("/tmp").is_dir() else None))

    class IPCKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs: Any) -> None:
            kwargs.setdefault("transport", "ipc")
            kwargs.setdefault("ip", str(directory / "kernel"))
            super().__init__(**kwargs)

        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            if seed is None or not seed.accepts(kernel_cmd):
                await super()._async_launch_kernel(kernel_cmd, **kw)
                return
            cwd = str(kw.get("cwd") or Path.cwd())
            process = seed.launch(kernel_cmd, dict(kw.get("env") or os.environ), cwd)
            provisioner: Any = self.provisioner  # a LocalProvisioner, given the seed's process
            provisioner.process, provisioner.pid, provisioner.cwd = process, process.pid, cwd
            provisioner.pgid = process.pid  # the seed leads its own session
            self._reconcile_connection_info(provisioner.connection_info)

    try:
        yield IPCKernelManager
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _execute_notebook(job: _Job, executed: Path) -> Exception | None:
    """Run the notebook headless; its failure (if any) is returned, not raised."""
    import papermill

    names = ("candidate", "policy", "baseline", "label_mapping", "overrides", "controls")
    parameters = {
        **{n: str(job.copies[n].resolve()) if n in job.copies else "" for n in names},
        "gold": str(job.dataset.gold_path.resolve()),
        "resume_from": str(job.resume_from.resolve()) if job.resume_from is not None else "",
        "report_dir": str(job.report_dir.resolve()),
        "ledger_path": str(job.ledger.path),
        "certification_token": job.use.token,
        "concurrency": job.concurrency,
        "max_cases": job.max_cases,
    }
    notebook = _notebook_node(job)
    warm_render()  # now, beside the seed's imports, rather than after the notebook
    try:
        with kernel_manager_class(job.seed) as manager:
            papermill.execute_notebook(
                notebook,
                str(executed),
                parameters=parameters,
                cwd=str(job.report_dir),
                kernel_name=job.kernel_name,
                progress_bar=False,
                log_output=False,
                kernel_manager_class=manager,
            )
    except papermill.PapermillExecutionError as exc:
        failure: Exception = exc
        return failure
    return None


def _evidence(job: _Job) -> dict[str, str | None]:
    """The named hashes of the lock (docs/formats.md#report-lock)."""
    d, copies = job.report_dir, job.copies

    def copy(name: str) -> str | None:
        return maybe_sha256(copies[name]) if name in copies else None

    run, baseline_run = RunDir(d / RUN_DIR), RunDir(d / BASELINE_RUN_DIR)
    files = {
        "lineage": LINEAGE_FILE,
        "figures": FIGURES_FILE,
        "held_out_gold": HELD_OUT_GOLD,
        "rubric": RUBRIC_JSON,
        "executed_notebook": EXECUTED_NOTEBOOK,
        "html": HTML_FILE,
    }
    evidence: dict[str, str | None] = {
        "gold_dataset": job.dataset.sha256,
        "gold_file": sha256_file(job.dataset.gold_path),
        "held_out_manifest": job.entry.held_out_manifest_sha256,
        "candidate_spec": sha256_file(copies["candidate"]),
        "policy": sha256_file(copies["policy"]),
        "overrides": copy("overrides"),
        "control_suite": copy("controls"),
        "control_records": maybe_sha256(RunDir(d / CONTROLS_DIR).results),
        "run_records": maybe_sha256(run.results),
        "run_manifest": maybe_sha256(run.manifest),
        **{name: maybe_sha256(d / rel) for name, rel in files.items()},
    }
    if "baseline" in copies:
        evidence |= {
            "baseline_spec": sha256_file(copies["baseline"]),
            "label_mapping": copy("label_mapping"),
            "baseline_control_records": maybe_sha256(RunDir(d / BASELINE_CONTROLS_DIR).results),
            "baseline_run_records": maybe_sha256(baseline_run.results),
            "baseline_run_manifest": maybe_sha256(baseline_run.manifest),
            "transitions": maybe_sha256(d / TRANSITIONS_FILE),
            "transition_reviews": maybe_sha256(d / REVIEWS_SNAPSHOT),
            "migration": maybe_sha256(d / MIGRATION_FILE),
        }
    for name, path in (
        ("repeatability_studies", d / "repeatability" / "studies.jsonl"),
        ("sentinel_records", RunDir(d / SENTINELS_DIR).results),
    ):
        if path.exists():
            evidence[name] = sha256_file(path)
    return evidence


def _lock_of(job: _Job, gate: dict[str, Any], timings: dict[str, float], ran: bool) -> Lock:
    from ..authority import grant_for, requested_authority

    d, entry = job.report_dir, job.entry
    rel = {name: path.relative_to(d).as_posix() for name, path in job.copies.items()}
    policy = load_policy(job.copies["policy"])
    read = {
        name: read_json_file(d / file) if (d / file).exists() and ran else None
        for name, file in (("figures", FIGURES_FILE), ("migration", MIGRATION_FILE))
    }
    inputs: tuple[str, ...] = ("candidate", "policy", "overrides", "controls")
    inputs += ("baseline", "label_mapping") if "baseline" in rel else ()
    return Lock(
        report_id=job.report_id,
        created_at=datetime.now(UTC),
        candidate=job.judge.spec.label,
        candidate_fingerprint=entry.candidate_fingerprint,
        outcome=gate["outcome"],
        blockers=gate["blockers"],
        figures=read["figures"],
        evaluated_at=entry.when,
        budget_usd=job.budget,
        evidence=_evidence(job),
        input_files={name: rel.get(name) for name in inputs},
        versions=versions(),
        git=git_state(),
        gold=entry.gold,
        ledger_path=str(job.ledger.path),
        policy_file=job.policy_file,
        ledger_entry=entry.model_dump(mode="json"),
        rerun_reason=entry.rerun_reason,
        previous_report=job.previous,
        timings_s=timings,
        kind=entry.kind,
        baseline=entry.baseline,
        baseline_fingerprint=entry.baseline_fingerprint,
        resumes=job.resumes,
        migration=read["migration"],
        requested_authority=requested_authority(policy).model_dump(mode="json"),
        grant=grant_for(policy, gate, report_id=job.report_id).model_dump(mode="json"),
        last_certified=_last_certified(policy, job),
        provenance=job.provenance.model_dump(mode="json") if job.provenance else None,
    )


def _last_certified(policy: Policy, job: _Job) -> dict[str, Any] | None:
    from ..authority import beside_candidate

    context = beside_candidate(
        policy, job.judge.spec.label, job.entry.reports_root, job.dataset.root
    )
    last = context.last_certified
    if last is None:
        return None
    facts = last.model_dump(include={"report_id", "candidate", "candidate_fingerprint", "outcome"})
    return facts | {"stale": [r.message for r in context.last_certified_stale]}


def _run_id(run: RunDir) -> str | None:
    try:
        summary = run.read_summary()
    except (ValueError, OSError):
        return None
    return summary.run_id if summary is not None else None


def _failed_gate(failure: Exception | None, judge: Judge) -> GateResult:
    evidence: dict[str, Any] = {}
    if failure is None:
        message = "the certification notebook wrote no gate result"
    else:
        message = (
            "the certification notebook failed before the gate ran; no outcome other than"
            " incomplete is possible"
        )
        evidence = {
            "cell": getattr(failure, "cell_index", None),
            "error": getattr(failure, "ename", type(failure).__name__),
            "detail": str(getattr(failure, "evalue", failure))[:300],
        }
    blocker = Blocker(
        code="certification_failed",
        category="incomplete",
        slice=None,
        message=message,
        evidence=evidence,
        case_ids=[],
        waivable=False,
    )
    summary = f"{judge.spec.label}: evaluation incomplete ({message})"
    return GateResult(
        outcome="evaluation_incomplete", blockers=[blocker], waived=[], policy=None, summary=summary
    )


def _timings(executed: Path, t0: float, executed_at: float, rendered_at: float) -> dict[str, float]:
    out = {
        "notebook_total": round(executed_at - t0, 3),
        "render": round(rendered_at - executed_at, 3),
    }
    try:
        nb = json.loads(executed.read_text(encoding="utf-8"))
        cells = [c.get("metadata", {}).get("papermill", {}) for c in nb["cells"]]
        run = float(sum(c.get("duration") or 0.0 for c in cells))
        out["cells_run"] = round(run, 3)
        out["kernel_start_and_overhead"] = round(out["notebook_total"] - run, 3)
    except (OSError, ValueError, KeyError):
        pass
    return out
