"""Certification: run a candidate once on held-out data and lock the report.

:func:`certify` is what ``workbench certify`` calls. It is a straight line:

    check inputs -> refuse an unexplained re-certification -> allocate reports/<c>/<v>/<n>
    -> copy the inputs -> open a held-out ledger entry -> execute 03_certify.ipynb with
    papermill -> render HTML -> hash everything into lock.json -> close the ledger entry
    -> make the report read-only.

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

from .._io import atomic_write_json, atomic_write_text, sha256_file
from ..agreement import human_agreement
from ..align import AlignmentReport, Join, align_results, alignment_report, read_run_manifest
from ..errors import Problem, WorkbenchError
from ..gold import GoldDataset, load_dataset
from ..heldout import (
    LEDGER_FILE,
    HeldOutAccess,
    HeldOutLedger,
    LedgerEntry,
    held_out_manifest_sha256,
)
from ..judges import Judge, load_candidate, load_spec
from ..policy import Blocker, GateResult, Policy, evaluate_gate, load_overrides, load_policy
from ..results import read_results
from ..runs import RunSummary, run_candidate
from ._lock import (
    LOCK_FILE,
    Lock,
    PreviousReport,
    git_state,
    hash_tree,
    make_read_only,
    read_lock,
    versions,
    write_lock,
)
from ._render import render_html

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


def _previous(reports_root: Path, name: str, version: str, n: int) -> PreviousReport | None:
    for k in range(n - 1, 0, -1):
        candidate = reports_root / name / version / str(k)
        if (candidate / LOCK_FILE).exists():
            return PreviousReport(report_id=f"{name}/{version}/{k}", lock_sha256=read_lock(candidate).lock_sha256)
    return None


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
) -> CertificationResult:
    """Certify ``candidate`` on the held-out partition of ``gold`` under ``policy``."""
    import papermill

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
    declared = load_policy(policy).controls
    if declared is not None:
        from ..controls import load_suite

        load_suite((policy.parent / declared.suite).resolve())
    dataset = load_dataset(gold)
    held_out = dataset.partition("held_out")
    if not held_out:
        raise WorkbenchError("cannot certify", [Problem(location=str(dataset.gold_path), code="no_held_out", message="the dataset has no held-out cases", fix="certification needs a held_out partition")])
    overrides_path = Path(overrides) if overrides else policy.parent / "overrides.jsonl"
    if overrides_path.exists():
        load_overrides(overrides_path)
    fingerprint = judge.identity.fingerprint()
    manifest_sha = held_out_manifest_sha256(dataset.sha256, held_out)
    ledger = HeldOutLedger(root / LEDGER_FILE)
    ledger.check_rerun(fingerprint, manifest_sha, rerun_reason)

    report_dir, n = _allocate(root, judge.spec.name, judge.spec.version)
    report_id = f"{judge.spec.name}/{judge.spec.version}/{n}"
    previous = _previous(root, judge.spec.name, judge.spec.version, n)
    copies = _copy_inputs(report_dir, candidate, policy, overrides_path)
    entry = ledger.start(candidate=judge.spec.label, fingerprint=fingerprint, dataset_sha256=dataset.sha256, manifest_sha256=manifest_sha, report_id=report_id, rerun_reason=rerun_reason)

    t0 = time.perf_counter()
    parameters = {
        "candidate": str(copies["candidate"].resolve()),
        "policy": str(copies["policy"].resolve()),
        "gold": str(Path(gold).resolve()),
        "overrides": str(copies["overrides"].resolve()) if "overrides" in copies else "",
        "controls": str(copies["controls"].resolve()) if "controls" in copies else "",
        "report_dir": str(report_dir.resolve()),
        "ledger_path": str(ledger.path.resolve()),
        "ledger_entry_id": entry.entry_id,
        "concurrency": concurrency,
        "budget_usd": budget_usd,
        "max_cases": max_cases,
    }
    failure: Exception | None = None
    executed = report_dir / EXECUTED_NOTEBOOK
    try:
        papermill.execute_notebook(str(notebook_path), str(executed), parameters=parameters, cwd=str(report_dir), kernel_name=kernel_name, progress_bar=False, log_output=False)
    except papermill.PapermillExecutionError as exc:
        failure = exc
    executed_at = time.perf_counter()
    gate = _read_gate(report_dir)
    if failure is not None or gate is None:
        gate = _public_gate(_failed_gate(failure, judge))
        atomic_write_json(report_dir / GATE_FILE, gate)
    html = render_html(executed, title=f"Certification report: {judge.spec.label} ({report_id})") if executed.exists() else "<p>the certification notebook did not run</p>"
    atomic_write_text(report_dir / HTML_FILE, html)
    rendered_at = time.perf_counter()
    timings = _timings(executed, t0, executed_at, rendered_at)
    lock = write_lock(
        report_dir,
        Lock(
            report_id=report_id,
            created_at=datetime.now(UTC),
            candidate=judge.spec.label,
            candidate_fingerprint=fingerprint,
            outcome=gate["outcome"],
            blockers=gate["blockers"],
            evidence={
                "gold_dataset": dataset.sha256,
                "gold_file": sha256_file(dataset.gold_path),
                "held_out_manifest": manifest_sha,
                "candidate_spec": sha256_file(copies["candidate"]),
                "policy": sha256_file(copies["policy"]),
                "overrides": sha256_file(copies["overrides"]) if "overrides" in copies else None,
                "control_suite": sha256_file(copies["controls"]) if "controls" in copies else None,
                "control_records": _maybe_sha(report_dir / CONTROLS_DIR / "results.jsonl"),
                "run_records": _maybe_sha(report_dir / RUN_DIR / "results.jsonl"),
                "run_manifest": _maybe_sha(report_dir / RUN_DIR / "manifest.json"),
                "executed_notebook": _maybe_sha(executed),
                "html": sha256_file(report_dir / HTML_FILE),
            },
            files=hash_tree(report_dir),
            versions=versions(),
            git=git_state(),
            ledger_entry=entry.model_dump(mode="json"),
            rerun_reason=rerun_reason,
            previous_report=previous,
            timings_s=timings,
        ),
    )
    # Any held-out record (even a partial run) is a use; no record at all means controls or
    # lineage stopped certification before held-out data was touched.
    ledger.finish(entry, outcome=gate["outcome"], lock_sha256=lock.lock_sha256, held_out_used=(report_dir / RUN_DIR / "results.jsonl").exists())
    make_read_only(report_dir)
    timings["lock"] = round(time.perf_counter() - rendered_at, 3)
    return CertificationResult(report_dir, report_id, gate["outcome"], gate["blockers"], lock.lock_sha256, timings)


def _maybe_sha(path: Path) -> str | None:
    return sha256_file(path) if path.exists() else None


def _read_gate(report_dir: Path) -> dict[str, Any] | None:
    path = report_dir / GATE_FILE
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def _failed_gate(failure: Exception | None, judge: Judge) -> GateResult:
    if failure is not None:
        evidence = {"cell": getattr(failure, "cell_index", None), "error": getattr(failure, "ename", type(failure).__name__), "detail": str(getattr(failure, "evalue", failure))[:300]}
        message = "the certification notebook failed before the gate ran; no outcome other than incomplete is possible"
    else:
        evidence = {}
        message = "the certification notebook wrote no gate result"
    blocker = Blocker(code="certification_failed", category="incomplete", slice=None, message=message, evidence=evidence, case_ids=[], waivable=False)
    return GateResult(outcome="evaluation_incomplete", blockers=[blocker], waived=[], policy=None, summary=f"{judge.spec.label}: evaluation incomplete ({message})")


def _public_gate(gate: GateResult) -> dict[str, Any]:
    """The gate as shared in the report: case ids replaced by counts (held-out detail is restricted)."""
    data = gate.model_dump(mode="json")
    for key in ("blockers", "waived"):
        for item in data.get(key, []):
            block = item.get("blocker", item)
            if block.get("case_ids"):
                block["case_count"] = len(block["case_ids"])
            block["case_ids"] = []
    return data


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
    """The evaluation steps of ``03_certify.ipynb``, callable and testable outside the notebook."""

    def __init__(
        self,
        *,
        candidate: str | Path,
        policy: str | Path,
        gold: str | Path,
        report_dir: str | Path,
        ledger_path: str | Path,
        ledger_entry_id: str,
        overrides: str | Path | None = None,
        controls: str | Path | None = None,
        concurrency: int = 8,
        budget_usd: float | None = None,
        max_cases: int | None = None,
    ) -> None:
        self.report_dir = Path(report_dir)
        self.controls_path = Path(controls) if controls else None
        self.candidate_path = Path(candidate)
        self.policy_path = Path(policy)
        self.judge: Judge = load_candidate(candidate)
        self.dataset: GoldDataset = load_dataset(gold)
        self.policy: Policy | None = load_policy(policy) if self.policy_path.exists() else None
        self.overrides = load_overrides(overrides) if overrides and Path(overrides).exists() else []
        self.ledger_path = Path(ledger_path)
        ledger = HeldOutLedger(ledger_path)
        self.ledger_entry: LedgerEntry | None = ledger.open_entry(ledger_entry_id)
        self.ledger_entry_id = ledger_entry_id
        self.concurrency = concurrency
        self.budget_usd = budget_usd
        self.max_cases = max_cases
        self.lineage: list[dict[str, Any]] = []
        self.controls: Any | None = None
        self.control_blockers: list[Blocker] = []
        self.summary: RunSummary | None = None
        self.join: Join | None = None
        self.alignment: AlignmentReport | None = None
        self.gate: GateResult | None = None

    # -- steps ----------------------------------------------------------------------------

    def check_lineage(self) -> list[dict[str, Any]]:
        """Deterministic checks that the judge and the humans saw the same items and rubric."""
        entry = self.ledger_entry
        held_out = self.dataset.partition("held_out")
        fingerprint = self.judge.identity.fingerprint()
        other_groups = {c.group for c in self.dataset.cases.values() if c.partition.value != "held_out"}
        leaked = sorted({c.group for c in held_out} & other_groups)
        checks = [
            ("ledger entry open for this certification", entry is not None, self.ledger_entry_id, "open" if entry else "missing or already finished"),
            ("candidate fingerprint", entry is not None and entry.candidate_fingerprint == fingerprint, entry.candidate_fingerprint if entry else None, fingerprint),
            ("gold dataset sha256", entry is not None and entry.dataset_sha256 == self.dataset.sha256, entry.dataset_sha256 if entry else None, self.dataset.sha256),
            ("held-out manifest sha256", entry is not None and entry.held_out_manifest_sha256 == held_out_manifest_sha256(self.dataset.sha256, held_out), entry.held_out_manifest_sha256 if entry else None, held_out_manifest_sha256(self.dataset.sha256, held_out)),
            ("partition isolation (no held-out group elsewhere)", not leaked, "0 shared groups", f"{len(leaked)} shared groups"),
            ("rubric version (policy vs gold)", self.policy is None or self.policy.rubric_version in (None, self.dataset.rubric.version), getattr(self.policy, "rubric_version", None), self.dataset.rubric.version),
            ("policy present", self.policy is not None, str(self.policy_path.name), "loaded" if self.policy else "missing"),
            ("gold release (recorded in the run manifest)", True, "releases.jsonl beside the gold", self.dataset.release.release_id if self.dataset.release else "(not frozen)"),
        ]
        self.lineage = [{"check": name, "ok": bool(ok), "expected": expected, "actual": actual} for name, ok, expected, actual in checks]
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
        access = HeldOutAccess.grant(self.ledger_path, self.ledger_entry_id, self.judge.identity.fingerprint())
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
        """Align, apply the gate, write gate.json and the restricted case-level files."""
        blockers = list(extra_blockers or []) + self.control_blockers
        for row in self.lineage:
            if not row["ok"]:
                blockers.append(Blocker(code="lineage_failed", category="incomplete", slice=None, message=f"lineage check failed: {row['check']}", evidence={"expected": str(row["expected"]), "actual": str(row["actual"])}, case_ids=[], waivable=False))
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
        gate = evaluate_gate(self.alignment, self.policy, rubric=self.dataset.rubric, run=self.summary, overrides=self.overrides, now=datetime.now(UTC), join=self.join, extra_blockers=blockers, fingerprint=self.judge.identity.fingerprint())
        self._save_gate(gate)
        self._write_restricted()
        return gate

    def _gate_without_held_out(self, blockers: list[Blocker]) -> GateResult:
        from ..policy import PolicyRef

        order = {"incomplete": 0, "quality": 1, "review": 2}
        blockers = sorted(blockers, key=lambda b: (order[b.category], b.slice or "", b.code))
        categories = {b.category for b in blockers}
        outcome = "evaluation_incomplete" if "incomplete" in categories else "quality_failed" if "quality" in categories else "review_required"
        ref = PolicyRef(name=self.policy.name, version=self.policy.version, sha256=sha256_file(self.policy_path)) if self.policy else None
        return GateResult(
            outcome=outcome,
            blockers=blockers,
            waived=[],
            policy=ref,
            summary=f"{outcome.upper()}: blocking controls failed, so the held-out partition was not used ({len(blockers)} blocker(s))",
            judge=self.judge.spec.label,
            judge_fingerprint=self.judge.identity.fingerprint(),
            dataset_sha256=self.dataset.sha256,
            rubric_version=self.dataset.rubric.version,
            partition="held_out",
        )

    def _save_gate(self, gate: GateResult) -> GateResult:
        self.gate = gate
        atomic_write_json(self.report_dir / GATE_FILE, _public_gate(gate))
        return gate

    def _write_restricted(self) -> None:
        from ._restricted import write_restricted

        assert self.join is not None and self.gate is not None
        write_restricted(self.report_dir / RESTRICTED_DIR, self.dataset, self.join, self.report_dir / RUN_DIR / "results.jsonl", self.gate)

    # -- what the report shows --------------------------------------------------------------

    def run_rows(self) -> list[dict[str, Any]]:
        path = self.report_dir / RUN_DIR / "results.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_gate_json(report_dir: Path, gate: GateResult) -> None:
    atomic_write_json(report_dir / GATE_FILE, _public_gate(gate))


def list_reports(reports_root: str | Path = "reports") -> list[dict[str, Any]]:
    """Every locked report under ``reports_root`` with its outcome, newest last."""
    root = Path(reports_root)
    rows = []
    for lock_path in sorted(root.glob(f"*/*/*/{LOCK_FILE}")):
        try:
            lock = read_lock(lock_path.parent)
        except (ValueError, OSError):
            rows.append({"report_id": lock_path.parent.relative_to(root).as_posix(), "outcome": "(unreadable lock)"})
            continue
        rows.append(
            {
                "report_id": lock.report_id,
                "created_at": lock.created_at.isoformat(timespec="seconds"),
                "candidate": lock.candidate,
                "outcome": lock.outcome,
                "blockers": len(lock.blockers),
                "rerun_reason": lock.rerun_reason,
                "who": lock.ledger_entry.get("who"),
                "lock_sha256": lock.lock_sha256[:12],
            }
        )
    rows.sort(key=lambda r: (r.get("created_at") or "", r["report_id"]))
    return rows



