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
from ..judges import Judge, load_candidate, load_spec
from ..policy import Blocker, GateResult, Policy, evaluate_gate, load_overrides, load_policy
from ..policy._consistency import check_policy_against_rubric
from ..results import read_results
from ..runs import RunSummary, run_candidate
from ._evaluation import (
    FIGURES_FILE,
    HELD_OUT_GOLD,
    LINEAGE_FILE,
    RUBRIC_JSON,
    figures_of,
    gate_without_held_out,
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
from ._render import render_html
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
    """``notebooks/03_certify.ipynb`` of the project (cwd first, then beside the package)."""
    local = Path("notebooks") / NOTEBOOK_NAME
    if local.exists():
        return local
    return Path(__file__).resolve().parents[2] / "notebooks" / NOTEBOOK_NAME


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


def _copy_inputs(report_dir: Path, candidate: Path, policy: Path, overrides: Path | None) -> dict[str, Path]:
    inputs = report_dir / INPUTS_DIR
    inputs.mkdir()
    spec, _ = load_spec(candidate)
    copies = {"candidate": inputs / candidate.name, "policy": inputs / policy.name}
    shutil.copyfile(candidate, copies["candidate"])
    if spec.prompt_file:
        prompt = (candidate.parent / spec.prompt_file).resolve()
        target = (inputs / spec.prompt_file).resolve()
        if inputs.resolve() in target.parents:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(prompt, target)
    if spec.results:
        results = (candidate.parent / spec.results).resolve()
        target = (inputs / spec.results).resolve()
        if inputs.resolve() in target.parents:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(results, target)
    shutil.copyfile(policy, copies["policy"])
    declared = load_policy(policy).controls
    if declared is not None:
        suite = (policy.parent / declared.suite).resolve()
        if not suite.exists():
            raise WorkbenchError("cannot certify", [Problem(location=str(policy), code="controls_missing", message=f"the policy's control suite {declared.suite!r} does not exist", fix="restore the suite or correct controls.suite in the policy")])
        (inputs / "controls").mkdir()
        copies["controls"] = inputs / "controls" / suite.name
        shutil.copyfile(suite, copies["controls"])
    if overrides is not None and overrides.exists():
        copies["overrides"] = inputs / "overrides.jsonl"
        shutil.copyfile(overrides, copies["overrides"])
    return copies


def resolve_budget(policy: Policy, requested: float | None, policy_path: str | Path) -> float | None:
    """The spend limit certification runs under: the policy's ``budget_usd`` unless a lower one is asked."""
    if policy.budget_usd is None:
        return requested
    if requested is None:
        return policy.budget_usd
    if requested > policy.budget_usd:
        raise WorkbenchError(
            "cannot certify",
            [Problem(location=f"{policy_path}: budget_usd", code="budget_above_policy", message=f"--budget-usd {requested:g} is above the policy's budget_usd {policy.budget_usd:g}", fix=f"drop --budget-usd (the policy's ${policy.budget_usd:g} is used) or give a lower one; a larger budget needs a new policy version")],
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
) -> CertificationResult:
    """Certify ``candidate`` on the held-out partition of ``gold`` under ``policy``.

    Every input is checked (the policy against the dataset's rubric too) before the ledger is
    touched. The ledger is the gold dataset's own (:func:`~workbench.heldout.ledger_path_for`);
    no argument can choose another.
    """
    check_run_arguments(concurrency=concurrency, budget_usd=budget_usd, max_cases=max_cases)
    candidate, policy, gold = Path(candidate), Path(policy), Path(gold)
    root = Path(reports_root)
    notebook_path = Path(notebook) if notebook else default_notebook()
    problems: list[Problem] = []
    if not policy.exists():
        problems.append(Problem(location=str(policy), code="policy_missing", message="the policy file does not exist", fix="point --policy at data/policies/<name>@<version>.yaml; certification without a policy is never possible"))
    if not notebook_path.exists():
        problems.append(Problem(location=str(notebook_path), code="notebook_missing", message="the certification notebook is missing", fix="run from the project root, or pass --notebook"))
    if problems:
        raise WorkbenchError("cannot certify", problems)
    judge = load_candidate(candidate)  # every input is checked before anything is written
    policy_model = load_policy(policy)
    if policy_model.controls is not None:
        from ..controls import load_suite

        load_suite((policy.parent / policy_model.controls.suite).resolve())
    dataset = load_dataset(gold)
    held_out = dataset.partition("held_out")
    if not held_out:
        raise WorkbenchError("cannot certify", [Problem(location=str(dataset.gold_path), code="no_held_out", message="the dataset has no held-out cases", fix="certification needs a held_out partition")])
    check_policy_against_rubric(policy_model, dataset.rubric, policy_path=policy)
    budget = resolve_budget(policy_model, budget_usd, policy)
    overrides_path = Path(overrides) if overrides else policy.parent / "overrides.jsonl"
    if overrides_path.exists():
        load_overrides(overrides_path)
    signer = load_signer(sign_key) if sign_key is not None else None
    fingerprint = judge.identity.fingerprint()
    manifest_sha = held_out_manifest_sha256(dataset.sha256, held_out)
    ledger = HeldOutLedger(ledger_path_for(gold))

    # Check-then-start, serialized: two certifications of one candidate give one start and one refusal.
    with ledger.locked():
        ledger.reconcile()  # a certification that died is closed as aborted first
        entries = ledger.entries()
        check_ledger_complete(ledger, entries, root)
        ledger.check_rerun(fingerprint, manifest_sha, rerun_reason, entries)
        check_legacy_ledger(root, fingerprint, manifest_sha, rerun_reason)
        report_dir, n = _allocate(root, judge.spec.name, judge.spec.version)
        report_id = f"{judge.spec.name}/{judge.spec.version}/{n}"
        try:
            previous = previous_report(root, judge.spec.name, judge.spec.version, n, ledger, entries)
            entry, token, hold = ledger.start(candidate=judge.spec.label, fingerprint=fingerprint, dataset_sha256=dataset.sha256, manifest_sha256=manifest_sha, report_id=report_id, reports_root=root, gold=gold_directory(gold), rerun_reason=rerun_reason, budget_usd=budget, previous_report=previous)
        except BaseException:
            shutil.rmtree(report_dir, ignore_errors=True)  # nothing was recorded for it
            raise
        write_started_marker(report_dir, entry, ledger.path)

    try:
        result = _run_and_lock(judge, dataset, candidate, policy, overrides_path, notebook_path, report_dir, report_id, entry, token, ledger, previous, rerun_reason, fingerprint, manifest_sha, budget, concurrency, max_cases, kernel_name, signer)
    except BaseException:
        ledger.abort(entry)  # fail closed: the use is recorded, and counts
        raise
    finally:
        ledger.release(entry.entry_id, hold)
    make_read_only(report_dir)
    return result


def _run_and_lock(judge: Judge, dataset: GoldDataset, candidate: Path, policy: Path, overrides_path: Path, notebook_path: Path, report_dir: Path, report_id: str, entry: LedgerEntry, token: str, ledger: HeldOutLedger, previous: PreviousReport | None, rerun_reason: str | None, fingerprint: str, manifest_sha: str, budget: float | None, concurrency: int, max_cases: int | None, kernel_name: str, signer: Signer | None) -> CertificationResult:
    import papermill

    copies = _copy_inputs(report_dir, candidate, policy, overrides_path)
    t0 = time.perf_counter()
    parameters = {
        "candidate": str(copies["candidate"].resolve()),
        "policy": str(copies["policy"].resolve()),
        "gold": str(dataset.gold_path.resolve()),
        "overrides": str(copies["overrides"].resolve()) if "overrides" in copies else "",
        "controls": str(copies["controls"].resolve()) if "controls" in copies else "",
        "report_dir": str(report_dir.resolve()),
        "ledger_path": str(ledger.path),
        "certification_token": token,
        "concurrency": concurrency,
        "max_cases": max_cases,
    }
    failure: Exception | None = None
    executed = report_dir / EXECUTED_NOTEBOOK
    try:
        with kernel_manager_class() as manager:  # IPC: no TCP port, no "TCP without encryption" warning
            papermill.execute_notebook(str(notebook_path), str(executed), parameters=parameters, cwd=str(report_dir), kernel_name=kernel_name, progress_bar=False, log_output=False, kernel_manager_class=manager)
    except papermill.PapermillExecutionError as exc:
        failure = exc
    executed_at = time.perf_counter()
    gate = _read_gate(report_dir)
    if failure is not None or gate is None:
        gate = public_gate(_failed_gate(failure, judge))
        atomic_write_json(report_dir / GATE_FILE, gate)
    html = render_html(executed, title=f"Certification report: {judge.spec.label} ({report_id})") if executed.exists() else "<p>the certification notebook did not run</p>"
    atomic_write_text(report_dir / HTML_FILE, html)
    rendered_at = time.perf_counter()
    timings = _timings(executed, t0, executed_at, rendered_at)
    figures_path = report_dir / FIGURES_FILE
    figures = read_json_file(figures_path) if figures_path.exists() and failure is None else None
    run_dir = report_dir / RUN_DIR
    run_id = _run_id(run_dir)
    rel = {name: path.relative_to(report_dir).as_posix() for name, path in copies.items()}
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
            evidence={
                "gold_dataset": dataset.sha256,
                "gold_file": sha256_file(dataset.gold_path),
                "held_out_manifest": manifest_sha,
                "candidate_spec": sha256_file(copies["candidate"]),
                "policy": sha256_file(copies["policy"]),
                "overrides": sha256_file(copies["overrides"]) if "overrides" in copies else None,
                "control_suite": sha256_file(copies["controls"]) if "controls" in copies else None,
                "control_records": _maybe_sha(report_dir / CONTROLS_DIR / "results.jsonl"),
                "run_records": _maybe_sha(run_dir / "results.jsonl"),
                "run_manifest": _maybe_sha(run_dir / "manifest.json"),
                "lineage": _maybe_sha(report_dir / LINEAGE_FILE),
                "figures": _maybe_sha(figures_path),
                "held_out_gold": _maybe_sha(report_dir / HELD_OUT_GOLD),
                "rubric": _maybe_sha(report_dir / RUBRIC_JSON),
                "executed_notebook": _maybe_sha(executed),
                "html": sha256_file(report_dir / HTML_FILE),
            },
            input_files={"candidate": rel["candidate"], "policy": rel["policy"], "overrides": rel.get("overrides"), "controls": rel.get("controls")},
            files=hash_tree(report_dir),
            versions=versions(),
            git=git_state(),
            gold=entry.gold,
            ledger_path=str(ledger.path),
            ledger_entry=entry.model_dump(mode="json"),
            rerun_reason=rerun_reason,
            previous_report=previous,
            timings_s=timings,
        ),
        signer=signer,
    )
    # Any held-out run directory (even a partial run) is a use: calls may have been in flight.
    # No run directory means controls or lineage stopped certification before held-out data.
    ledger.finish(entry, outcome=gate["outcome"], lock_sha256=lock.lock_sha256, held_out_used=run_dir.exists(), run_id=run_id, run_records_sha256=lock.evidence["run_records"])
    timings["lock"] = round(time.perf_counter() - rendered_at, 3)
    return CertificationResult(report_dir, report_id, gate["outcome"], gate["blockers"], lock.lock_sha256, timings)


def _run_id(run_dir: Path) -> str | None:
    summary = run_dir / "run.json"
    try:
        return RunSummary.model_validate(read_json_file(summary)).run_id if summary.exists() else None
    except (ValueError, OSError):
        return None


def _maybe_sha(path: Path) -> str | None:
    return sha256_file(path) if path.exists() else None


def _read_gate(report_dir: Path) -> dict[str, Any] | None:
    path = report_dir / GATE_FILE
    if not path.exists():
        return None
    return read_json_file(path)


def _failed_gate(failure: Exception | None, judge: Judge) -> GateResult:
    if failure is not None:
        evidence = {"cell": getattr(failure, "cell_index", None), "error": getattr(failure, "ename", type(failure).__name__), "detail": str(getattr(failure, "evalue", failure))[:300]}
        message = "the certification notebook failed before the gate ran; no outcome other than incomplete is possible"
    else:
        evidence = {}
        message = "the certification notebook wrote no gate result"
    blocker = Blocker(code="certification_failed", category="incomplete", slice=None, message=message, evidence=evidence, case_ids=[], waivable=False)
    return GateResult(outcome="evaluation_incomplete", blockers=[blocker], waived=[], policy=None, summary=f"{judge.spec.label}: evaluation incomplete ({message})")


def _timings(executed: Path, t0: float, executed_at: float, rendered_at: float) -> dict[str, float]:
    out = {"notebook_total": round(executed_at - t0, 3), "render": round(rendered_at - executed_at, 3)}
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
    directory and candidate, and be held by a live ``certify`` process; the token is then
    claimed, so it works once.
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
    ) -> None:
        # Notebook parameters arrive as papermill injected them: checked before the ledger is read.
        check_run_arguments(concurrency=concurrency, max_cases=max_cases)
        self.report_dir = Path(report_dir)
        self.controls_path = Path(controls) if controls else None
        self.candidate_path = Path(candidate)
        self.policy_path = Path(policy)
        self.judge: Judge = load_candidate(candidate)
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
        self.control_blockers: list[Blocker] = []
        self.summary: RunSummary | None = None
        self.join: Join | None = None
        self.alignment: AlignmentReport | None = None
        self.gate: GateResult | None = None

    def _refuse(self, code: str, message: str, fix: str = "run `workbench certify`; the certification notebook is executed only by it") -> WorkbenchError:
        where = self.ledger.path if hasattr(self, "ledger") else self.report_dir
        return WorkbenchError("certification refused: the held-out partition was not used", [Problem(location=str(where), code=code, message=message, fix=fix)])

    def _open(self, gold: str | Path, ledger_path: str | Path | None, token: str) -> LedgerEntry:
        canonical = ledger_path_for(gold)
        self.ledger = HeldOutLedger(canonical)
        if ledger_path and Path(ledger_path).resolve() != canonical:
            raise self._refuse("ledger_mismatch", f"ledger {ledger_path} is not the held-out ledger of this dataset ({canonical})", "the ledger belongs to the gold dataset; no other ledger is accepted")
        if not isinstance(token, str) or not token:
            raise self._refuse("certification_not_opened", "no certification token was given")
        entry = self.ledger.open_entry_for_token(token)  # raises on a damaged ledger
        if entry is None:
            raise self._refuse("certification_not_opened", "no open certification in the held-out ledger carries this token")
        if (Path(entry.reports_root) / entry.report_id).resolve() != self.report_dir.resolve():
            raise self._refuse("report_dir_mismatch", f"the ledger entry opened report {entry.report_id}, not {self.report_dir}")
        if entry.candidate_fingerprint != self.judge.identity.fingerprint():
            raise self._refuse("candidate_mismatch", f"the ledger entry opened a certification of {entry.candidate}, not of this candidate")
        if not self.ledger.is_running(entry.entry_id):
            raise self._refuse("certification_not_running", f"the `workbench certify` process that opened ledger entry {entry.entry_id} is not running")
        earlier = self.ledger.previous_uses(entry.candidate_fingerprint, entry.held_out_manifest_sha256, exclude=entry.entry_id)
        if earlier and not (entry.rerun_reason and entry.rerun_reason.strip()):
            raise self._refuse("held_out_reuse", f"the held-out partition was already used for this candidate ({', '.join(e.report_id for e in earlier)}) and the entry gives no re-run reason")
        self.ledger.claim_token(entry)
        return entry

    # -- steps ----------------------------------------------------------------------------

    def check_lineage(self) -> list[dict[str, Any]]:
        """Deterministic checks that the judge and the humans saw the same items and rubric."""
        entry = self.ledger_entry
        held_out = self.dataset.partition("held_out")
        fingerprint = self.judge.identity.fingerprint()
        manifest = held_out_manifest_sha256(self.dataset.sha256, held_out)
        other_groups = {c.group for c in self.dataset.cases.values() if c.partition.value != "held_out"}
        leaked = sorted({c.group for c in held_out} & other_groups)
        checks = [
            ("ledger entry open for this certification", self.ledger.status_of(entry.entry_id) == "open", entry.entry_id, self.ledger.status_of(entry.entry_id) or "missing"),
            ("candidate fingerprint", entry.candidate_fingerprint == fingerprint, entry.candidate_fingerprint, fingerprint),
            ("gold dataset sha256", entry.dataset_sha256 == self.dataset.sha256, entry.dataset_sha256, self.dataset.sha256),
            ("held-out manifest sha256", entry.held_out_manifest_sha256 == manifest, entry.held_out_manifest_sha256, manifest),
            ("partition isolation (no held-out group elsewhere)", not leaked, "0 shared groups", f"{len(leaked)} shared groups"),
            ("rubric version (policy vs gold)", self.policy is None or self.policy.rubric_version in (None, self.dataset.rubric.version), getattr(self.policy, "rubric_version", None), self.dataset.rubric.version),
            ("policy present", self.policy is not None, str(self.policy_path.name), "loaded" if self.policy else "missing"),
            ("gold release (recorded in the run manifest)", True, "releases.jsonl beside the gold", self.dataset.release.release_id if self.dataset.release else "(not frozen)"),
        ]
        self.lineage = [{"check": name, "ok": bool(ok), "expected": expected, "actual": actual} for name, ok, expected, actual in checks]
        atomic_write_json(self.report_dir / LINEAGE_FILE, self.lineage)
        return self.lineage

    @property
    def lineage_ok(self) -> bool:
        return bool(self.lineage) and all(row["ok"] for row in self.lineage)

    async def run_controls(self) -> Any | None:
        """Run the policy's control suite before any held-out call.

        A failed blocking role (positive, negative, adversarial by default) becomes a blocker
        with its own text, and the held-out partition is then not used at all: a judge that
        fails its controls is not worth spending held-out data on.
        """
        if self.policy is None or self.policy.controls is None:
            return None
        from ..controls import load_suite, run_controls

        suite = load_suite(self.controls_path or (self.policy_path.parent / self.policy.controls.suite).resolve())
        self.controls = await run_controls(self.judge, suite, self.report_dir / CONTROLS_DIR, concurrency=self.concurrency, cache_dir=False, progress=False)
        self.control_blockers = list(self.controls.blockers(self.policy.controls.blocking_roles))
        return self.controls

    @property
    def controls_ok(self) -> bool:
        return not self.control_blockers

    async def run_held_out(self) -> RunSummary | None:
        """Run the candidate once on held-out data (only when lineage holds and controls pass)."""
        if not self.lineage:
            self.check_lineage()
        if not self.lineage_ok or not self.controls_ok:
            return None
        access = HeldOutAccess.grant(self.ledger.path, self.ledger_entry_id, self.judge.identity.fingerprint())
        self.summary = await run_candidate(
            self.judge,
            self.dataset,
            "held_out",
            self.report_dir / RUN_DIR,
            concurrency=self.concurrency,
            budget_usd=self.budget_usd,
            max_cases=self.max_cases,
            cache_dir=False,  # held-out verdicts are neither reused nor shared through a cache
            progress=False,  # progress widgets do not render in static HTML
            held_out_access=access,
        )
        return self.summary

    def evaluate(self, extra_blockers: list[Blocker] | None = None) -> GateResult:
        """Align, apply the gate, write gate.json, the figures and the restricted evidence.

        Overrides are checked against the certification's start (the ``started`` ledger
        entry's time), so ``workbench verify`` can re-run the same gate later.
        """
        if not self.lineage:
            self.check_lineage()
        write_gold_evidence(self.report_dir, self.dataset)
        blockers = list(extra_blockers or []) + self.control_blockers + lineage_blockers(self.lineage)
        if self.control_blockers:
            # Controls failed: held-out data was deliberately not used, so there is nothing
            # held-out to align. The outcome is decided by the control (and lineage) blockers.
            return self._save_gate(self._gate_without_held_out(blockers))
        results_path = self.report_dir / RUN_DIR / "results.jsonl"
        lines = read_results(results_path) if results_path.exists() else []
        # Lineage of the held-out results against this gold (run manifest: dataset, rubric, per-case hashes).
        self.join = align_results(self.dataset, lines, partition="held_out", manifest=read_run_manifest(results_path), location=str(results_path))
        self.alignment = alignment_report(self.join, results_path=str(results_path) if results_path.exists() else None)
        self.human = human_agreement(self.dataset, "held_out")
        gate = evaluate_gate(self.alignment, self.policy, rubric=self.dataset.rubric, run=self.summary, overrides=self.overrides, now=self.ledger_entry.when, join=self.join, extra_blockers=blockers, fingerprint=self.judge.identity.fingerprint())
        atomic_write_json(self.report_dir / FIGURES_FILE, figures_of(self.alignment))
        self._save_gate(gate)
        self._write_restricted()
        return gate

    def _gate_without_held_out(self, blockers: list[Blocker]) -> GateResult:
        return gate_without_held_out(blockers, policy=self.policy, policy_sha256=sha256_file(self.policy_path) if self.policy else None, judge=self.judge.spec.label, fingerprint=self.judge.identity.fingerprint(), dataset_sha256=self.dataset.sha256, rubric_version=self.dataset.rubric.version)

    def _save_gate(self, gate: GateResult) -> GateResult:
        self.gate = gate
        atomic_write_json(self.report_dir / GATE_FILE, public_gate(gate))
        return gate

    def _write_restricted(self) -> None:
        from ._restricted import write_restricted

        assert self.join is not None and self.gate is not None
        write_restricted(self.report_dir / RESTRICTED_DIR, self.dataset, self.join, self.report_dir / RUN_DIR / "results.jsonl", self.gate, report_id=self.ledger_entry.report_id)

    # -- what the report shows --------------------------------------------------------------

    def run_rows(self) -> list[dict[str, Any]]:
        path = self.report_dir / RUN_DIR / "results.jsonl"
        if not path.exists():
            return []
        return read_jsonl_records(path)


def write_gate_json(report_dir: Path, gate: GateResult) -> None:
    atomic_write_json(report_dir / GATE_FILE, public_gate(gate))
