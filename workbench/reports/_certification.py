"""The evaluation steps of ``03_certify.ipynb``: :class:`Certification`. They write every file
the gate reads into the report, so ``workbench verify`` can decide the outcome again."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from .._args import check_run_arguments
from .._io import atomic_write_json, read_jsonl_records, write_jsonl
from ..agreement import human_agreement
from ..align import AlignmentReport, Join, align_results, read_run_manifest
from ..errors import WorkbenchError, refusal
from ..gold import GoldDataset, load_dataset
from ..heldout import (
    HeldOutAccess,
    HeldOutLedger,
    LedgerEntry,
    held_out_manifest_sha256,
    item_keys,
    items_sha256,
    ledger_path_for,
    prompt_leaks,
)
from ..judges import Judge, PromptedJudge, load_candidate, self_preference
from ..migration import (
    BASELINE_CONTROLS_DIR,
    BASELINE_RUN_DIR,
    REVIEWS_SNAPSHOT,
    LoadedMapping,
    MigrationEvidence,
    load_label_mapping,
    map_old_lines,
    mapped_controls,
)
from ..policy import Blocker, GateResult, Policy, load_overrides, load_policy
from ..runs import RunDir, RunOptions, RunSummary, run_candidate
from ._certify import work_items
from ._migration import (
    SENTINELS_DIR,
    needs_repeatability,
    snapshot_studies,
    write_migration,
    write_transitions_html,
)
from ._recompute import (
    CONTROLS_DIR,
    FIGURES_FILE,
    GATE_FILE,
    LINEAGE_FILE,
    RESTRICTED_DIR,
    RUN_DIR,
    Subject,
    decide,
    figures_of,
    public_gate,
    read_gold_evidence,
    write_gold_evidence,
)
from ._restricted import CODE_DIR, write_code_copy, write_restricted

_NOT_BY_CERTIFY = "run `workbench certify`; the certification notebook is executed only by it"


def _check(name: str, expected: Any, actual: Any, ok: bool | None = None) -> dict[str, Any]:
    held = expected == actual if ok is None else ok
    return {"check": name, "ok": bool(held), "expected": expected, "actual": actual}


def exposure_checks(judge: Judge, held_out: list[Any]) -> list[dict[str, Any]]:
    """The lineage rows of prompt leakage (a review blocker, ``prompt_holds_held_out``) and
    self-preference (a warning); counts only (the lineage is public, held-out ids are not)."""
    template = judge.template if isinstance(judge, PromptedJudge) else ""
    leaks = prompt_leaks(template, held_out)
    fields = Counter(f for leak in leaks for f in leak.fields)
    found = f"{len(leaks)} held-out cases" + (
        f" ({', '.join(f'{f} {n}' for f, n in sorted(fields.items()))})" if leaks else ""
    )
    preference = self_preference(judge.identity.model, held_out)
    generator = "responses of another model family"
    return [
        _check("judge prompt holds no held-out case text", "0 held-out cases", found, not leaks)
        | {"code": "prompt_holds_held_out"},
        _check(
            "judge model not of the responses' generator family (self-preference)",
            generator,
            preference or generator,
            preference is None,
        )
        | {"warning": True},
    ]


class Certification:
    """The evaluation steps of ``03_certify.ipynb``. Refused unless ``workbench certify`` opened
    it: an open entry of the gold's ledger must carry the hash of ``certification_token``, match
    this run and be held by a live ``certify`` process; the token then works no more."""

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
        check_run_arguments(concurrency=concurrency, max_cases=max_cases)
        self.report_dir = Path(report_dir)
        self.controls_path = Path(controls) if controls else None
        self.candidate_path, self.policy_path = Path(candidate), Path(policy)
        self.judge: Judge = load_candidate(candidate)
        self.baseline_judge: Judge | None = load_candidate(baseline) if baseline else None
        self.mapping: LoadedMapping | None = (
            load_label_mapping(label_mapping) if label_mapping else None
        )
        self.resume_from: Path | None = Path(resume_from) if resume_from else None
        self.dataset: GoldDataset = load_dataset(gold)
        self.policy: Policy | None = load_policy(policy) if self.policy_path.exists() else None
        self.overrides = load_overrides(overrides) if overrides and Path(overrides).exists() else []
        self.ledger = HeldOutLedger(ledger_path_for(gold))
        self.ledger_entry: LedgerEntry = self._open(ledger_path, certification_token)
        self.ledger_path = self.ledger.path
        self.ledger_entry_id = self.ledger_entry.entry_id
        self._copy_code()
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

    def _refuse(self, code: str, message: str, fix: str = _NOT_BY_CERTIFY) -> WorkbenchError:
        summary = "certification refused: the held-out partition was not used"
        return refusal(summary, str(self.ledger.path), code, message, fix)

    def _open(self, ledger_path: str | Path | None, token: str) -> LedgerEntry:
        if ledger_path and Path(ledger_path).resolve() != self.ledger.path:
            raise self._refuse(
                "ledger_mismatch",
                f"ledger {ledger_path} is not the held-out ledger of this dataset"
                f" ({self.ledger.path})",
                "the ledger belongs to the gold dataset; no other ledger is accepted",
            )
        if not isinstance(token, str) or not token:
            raise self._refuse("certification_not_opened", "no certification token was given")
        entry = self.ledger.open_entry_for_token(token)  # raises on a damaged ledger
        if entry is None:
            message = "no open certification in the held-out ledger carries this token"
            raise self._refuse("certification_not_opened", message)
        refused = self._entry_mismatch(entry) or self._entry_not_live(entry)
        if refused is not None:
            raise self._refuse(*refused)
        self.ledger.claim_token(entry)
        return entry

    def _entry_mismatch(self, entry: LedgerEntry) -> tuple[str, str] | None:
        baseline = self.baseline_judge
        baseline_fp = baseline.identity.fingerprint() if baseline is not None else None
        kind = (
            "review_reevaluation"
            if self.resume_from is not None
            else ("migration" if baseline_fp else "certification")
        )
        resumes = "/".join(self.resume_from.resolve().parts[-3:]) if self.resume_from else None
        mismatches = [
            (
                (Path(entry.reports_root) / entry.report_id).resolve() != self.report_dir.resolve(),
                "report_dir_mismatch",
                f"the ledger entry opened report {entry.report_id}, not {self.report_dir}",
            ),
            (
                entry.candidate_fingerprint != self.judge.identity.fingerprint(),
                "candidate_mismatch",
                f"the ledger entry opened a certification of {entry.candidate}, not of this"
                " candidate",
            ),
            (
                entry.baseline_fingerprint != baseline_fp,
                "baseline_mismatch",
                "the ledger entry opened a certification with baseline"
                f" {entry.baseline or '(none)'}, not"
                f" {baseline.spec.label if baseline else '(none)'}",
            ),
            (
                entry.kind != kind,
                "entry_kind_mismatch",
                f"the ledger entry is a {entry.kind}, not a {kind}",
            ),
            (
                resumes is not None and entry.resumes != resumes,
                "resumes_mismatch",
                f"the ledger entry re-evaluates report {entry.resumes}, not {self.resume_from}",
            ),
        ]
        return next(((code, message) for bad, code, message in mismatches if bad), None)

    def _entry_not_live(self, entry: LedgerEntry) -> tuple[str, str] | None:
        if not self.ledger.is_running(entry.entry_id):
            return (
                "certification_not_running",
                f"the `workbench certify` process that opened ledger entry {entry.entry_id} is not"
                " running",
            )
        if not entry.uses_held_out or (entry.rerun_reason and entry.rerun_reason.strip()):
            return None
        earlier = self.ledger.uses_before(entry)
        if not earlier.entries:
            return None
        return (
            "held_out_reuse",
            f"{earlier.describe()} ({', '.join(e.report_id for e in earlier.entries)}) and the"
            " entry gives no re-run reason",
        )

    def check_lineage(self) -> list[dict[str, Any]]:
        """Checks that the judge and the humans saw the same items and rubric."""
        entry, dataset, policy = self.ledger_entry, self.dataset, self.policy
        held_out = dataset.partition("held_out")
        others = {c.group for c in dataset.cases.values() if c.partition.value != "held_out"}
        leaked = len({c.group for c in held_out} & others)
        status = self.ledger.status_of(entry.entry_id)
        wanted, rubric = getattr(policy, "rubric_version", None), dataset.rubric.version
        release = dataset.release.release_id if dataset.release else "(not frozen)"
        fingerprint = self.judge.identity.fingerprint()
        manifest = held_out_manifest_sha256(dataset.sha256, held_out)
        self.lineage = [
            _check("ledger entry open for this certification", entry.entry_id, status or "missing")
            | {"ok": status == "open"},
            _check("candidate fingerprint", entry.candidate_fingerprint, fingerprint),
            _check("gold dataset sha256", entry.dataset_sha256, dataset.sha256),
            _check("held-out manifest sha256", entry.held_out_manifest_sha256, manifest),
        ]
        if (items := entry.held_out_items_sha256) is not None:
            content = items_sha256(item_keys(held_out))
            self.lineage.append(_check("held-out items sha256 (content)", items, content))
        isolation = "partition isolation (no held-out group elsewhere)"
        found, present = f"{leaked} shared groups", "loaded" if policy else "missing"
        self.lineage += [
            _check(isolation, "0 shared groups", found, not leaked),
            _check("rubric version (policy vs gold)", wanted, rubric, wanted in (None, rubric)),
            _check("policy present", self.policy_path.name, present, policy is not None),
            _check(
                "gold release (recorded in the run manifest)",
                "releases.jsonl beside the gold",
                release,
                dataset.release is not None,
            ),
        ]
        if (old := self.baseline_judge) is not None:
            old_fp = old.identity.fingerprint()
            self.lineage.append(_check("baseline fingerprint", entry.baseline_fingerprint, old_fp))
        self.lineage += exposure_checks(self.judge, held_out)
        atomic_write_json(self.report_dir / LINEAGE_FILE, self.lineage)
        return self.lineage

    @property
    def lineage_ok(self) -> bool:
        """Every lineage check held (a review finding or a warning row does not stop the run)."""
        return bool(self.lineage) and all(
            row["ok"] or row.get("code") or row.get("warning") for row in self.lineage
        )

    def _suite(self) -> Any:
        from ..controls import load_suite

        assert self.policy is not None and self.policy.controls is not None
        return load_suite(
            self.controls_path or (self.policy_path.parent / self.policy.controls.suite).resolve()
        )

    async def run_controls(self) -> Any | None:
        """Run the control suite (on both versions of a migration) before any held-out call; a
        failed blocking role of the candidate is a blocker (held-out data is then not used)."""
        if self.policy is None or self.policy.controls is None:
            return None
        from ..controls import run_controls

        suite = self._suite()
        judges: list[tuple[Judge, str, LoadedMapping | None]] = [(self.judge, CONTROLS_DIR, None)]
        if self.baseline_judge is not None:
            judges.append((self.baseline_judge, BASELINE_CONTROLS_DIR, self.mapping))
        reports = []
        for judge, directory, mapping in judges:
            fresh = None
            if self.resume_from is None:
                fresh = await run_controls(
                    judge,
                    suite,
                    self.report_dir / directory,
                    concurrency=self.concurrency,
                    cache_dir=False,
                    progress=False,
                )
            if fresh is None or judge is not self.judge:  # the baseline's: verdicts mapped
                fresh = mapped_controls(suite, self.report_dir / directory, mapping)
            reports.append(fresh)
        self.controls = reports[0]
        self.baseline_controls = reports[1] if len(reports) > 1 else None
        self.control_blockers = list(self.controls.blockers(self.policy.controls.blocking_roles))
        return self.controls

    @property
    def controls_ok(self) -> bool:
        return not self.control_blockers

    async def run_held_out(self) -> RunSummary | None:
        """Run the candidate (and the baseline) once on held-out data, when lineage holds and
        controls pass; with a budget, the candidate may spend what the baseline's reservation
        leaves. A re-evaluation judges nothing: it reads the copied runs' summaries."""
        if not self.lineage:
            self.check_lineage()
        if not self.lineage_ok or not self.controls_ok:
            return None
        if self.resume_from is not None:
            self.summary = RunDir(self.report_dir / RUN_DIR).read_summary()
            self.baseline_summary = RunDir(self.report_dir / BASELINE_RUN_DIR).read_summary()
            return self.summary
        limit = self.budget_usd
        if limit is not None and self.baseline_judge is not None:
            from ..runs import estimate_run

            reserved = estimate_run(
                "baseline",
                self.baseline_judge,
                work_items(self.dataset.partition("held_out")),
                self.report_dir / BASELINE_RUN_DIR,
                cache_dir=False,
            )
            limit = max(0.0, limit - reserved.needed_usd)
        self.summary = await self._held_out_run(self.judge, RUN_DIR, limit)
        if self.baseline_judge is not None:
            rest = self._left(self.summary.cost_usd)
            self.baseline_summary = await self._held_out_run(
                self.baseline_judge, BASELINE_RUN_DIR, rest
            )
        return self.summary

    def _options(self, **more: Any) -> RunOptions:
        return RunOptions(concurrency=self.concurrency, cache_dir=False, progress=False, **more)

    def _left(self, spent: float) -> float | None:
        return None if self.budget_usd is None else max(0.0, self.budget_usd - spent)

    async def _held_out_run(self, judge: Judge, directory: str, limit: float | None) -> RunSummary:
        access = HeldOutAccess.grant(
            self.ledger.path, self.ledger_entry_id, judge.identity.fingerprint()
        )
        return await run_candidate(
            judge,
            self.dataset,
            "held_out",
            self.report_dir / directory,
            self._options(budget_usd=limit, max_cases=self.max_cases),
            held_out_access=access,
        )

    async def run_sentinels(self) -> RunSummary | None:
        """After a held-out run, run the candidate on the gold's sentinels into
        ``REPORT/sentinels/`` (the baseline of ``workbench drift --against REPORT``; no ledger
        use, no gate input). A re-evaluation keeps the copied run."""
        from ..repeatability import SENTINEL_PARTITION, load_sentinels, sentinels_path_for

        if self.summary is None or self.resume_from is not None:
            return None
        if not sentinels_path_for(self.dataset).exists():
            return None
        from ..gold import gold_lineage
        from ..runs import run_items

        loaded = load_sentinels(None, self.dataset)
        baseline_cost = self.baseline_summary.cost_usd if self.baseline_summary else 0.0
        self.sentinels = await run_items(
            self.judge,
            work_items(loaded.cases),
            self.report_dir / SENTINELS_DIR,
            self._options(repeats=1, budget_usd=self._left(self.summary.cost_usd + baseline_cost)),
            partition=SENTINEL_PARTITION,
            dataset_sha256=self.dataset.sha256,
            grid=True,
            lineage=gold_lineage(self.dataset, loaded.cases),
        )
        return self.sentinels

    def evaluate(self) -> GateResult:
        """Store what the gate reads in the report, decide (:func:`~._recompute.decide`, as
        ``workbench verify`` does again), and write gate.json, the figures and the restricted
        evidence."""
        if not self.lineage:
            self.check_lineage()
        write_gold_evidence(self.report_dir, self.dataset)
        if not self.control_blockers:
            self._store_lifecycle_evidence()
        baseline = self.baseline_judge
        subject = Subject(
            self.judge.spec.label,
            self.judge.identity.fingerprint(),
            baseline.spec.label if baseline else None,
            baseline.identity.fingerprint() if baseline else None,
        )
        decision = decide(
            self.report_dir,
            subject,
            policy=self.policy,
            policy_path=self.policy_path,
            dataset=read_gold_evidence(self.report_dir, self.dataset.sha256),
            now=self.ledger_entry.when,
            overrides=self.overrides,
            suite=self._suite() if self.policy and self.policy.controls else None,
            mapping=self.mapping,
        )
        self.gate, self.join, self.alignment = decision.gate, decision.join, decision.alignment
        atomic_write_json(self.report_dir / GATE_FILE, public_gate(decision.gate))
        if decision.alignment is not None:
            self.human = human_agreement(self.dataset, "held_out")
            atomic_write_json(self.report_dir / FIGURES_FILE, figures_of(decision.alignment))
            if decision.migration is not None:
                self.migration = decision.migration
                write_migration(self.report_dir, decision.migration)
            self._write_restricted()
        return decision.gate

    def _store_lifecycle_evidence(self) -> None:
        from ..repeatability import studies_of, studies_path_for
        from ..review import TransitionReviews, transition_reviews_path_for

        runs: list[tuple[RunDir, LoadedMapping | None]] = [
            (RunDir(self.report_dir / RUN_DIR), None)
        ]
        if self.baseline_judge is not None:
            runs.append((RunDir(self.report_dir / BASELINE_RUN_DIR), self.mapping))
        for run, mapping in runs:
            if not run.results.exists():
                continue
            mapped, _, _ = map_old_lines(run.read_results(), mapping)
            labels = self.dataset.rubric.labels
            align_results(
                self.dataset,
                [m for m in mapped if m.result.value is None or m.result.value in labels],
                partition="held_out",
                manifest=read_run_manifest(run.results),
                location=str(run.results),
            )
        fingerprint = self.judge.identity.fingerprint()
        if self.resume_from is None:
            log = studies_path_for(self.dataset)
            mine = studies_of(log, fingerprint) if log.exists() else []
            if mine or needs_repeatability(self.policy):
                snapshot_studies(self.report_dir, mine)
        if self.baseline_judge is not None:
            in_log = TransitionReviews(transition_reviews_path_for(self.dataset.root))
            reviews = in_log.in_effect(self.baseline_judge.identity.fingerprint(), fingerprint)
            snapshot = [reviews[k].model_dump(mode="json") for k in sorted(reviews)]
            write_jsonl(self.report_dir / REVIEWS_SNAPSHOT, snapshot)

    def _copy_code(self) -> None:
        """Keep the code the candidate (and a baseline) runs in ``restricted/[baseline_]code/``."""

        restricted = self.report_dir / RESTRICTED_DIR
        write_code_copy(restricted / CODE_DIR, self.judge)
        if self.baseline_judge is not None:
            write_code_copy(restricted / f"baseline_{CODE_DIR}", self.baseline_judge)

    def _write_restricted(self) -> None:
        assert self.join is not None and self.gate is not None
        report_id = self.ledger_entry.report_id
        restricted = self.report_dir / RESTRICTED_DIR
        write_restricted(restricted, self.dataset, self.join, self.gate, report_id=report_id)
        if self.migration is not None:
            write_transitions_html(restricted, self.migration, report_id=report_id)

    def run_rows(self) -> list[dict[str, Any]]:
        path = RunDir(self.report_dir / RUN_DIR).results
        return read_jsonl_records(path) if path.exists() else []

    def grant(self, gate: GateResult | None = None) -> Any:
        """What this certification grants (:func:`~workbench.authority.grant_for`)."""
        from ..authority import AuthorityGrant, grant_for

        gate = gate or self.gate
        report_id = self.ledger_entry.report_id
        if self.policy is None or gate is None:
            return AuthorityGrant(
                policy=None,
                outcome=getattr(gate, "outcome", None),
                requested=None,
                use="none",
                scope=None,
                withheld=["no policy or no gate"],
                report_id=report_id,
            )
        return grant_for(self.policy, public_gate(gate), report_id=report_id)

    def beside(self) -> Any:
        """:func:`~workbench.authority.beside_candidate` of this candidate."""
        from ..authority import beside_candidate

        if self.policy is None:
            return None
        return beside_candidate(
            self.policy, self.judge.spec.label, self.ledger_entry.reports_root, self.dataset.root
        )
