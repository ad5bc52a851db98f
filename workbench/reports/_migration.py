"""What certification adds for a migration, repeatability and authority: every input they read
is stored in the report, and ``workbench verify`` reads the same files with the same functions."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from .._html import render
from .._io import (
    atomic_write_json,
    atomic_write_text,
    read_json_file,
    read_jsonl_records,
    write_jsonl,
)
from .._lock import LOCK_FILE, Lock, read_lock, resolve_report_path, verify_lock
from ..errors import Problem, WorkbenchError, problem, refusal
from ..gold import GoldDataset, load_dataset
from ..judges import Judge, load_candidate, load_spec
from ..migration import (
    BASELINE_CONTROLS_DIR,
    BASELINE_RUN_DIR,
    MIGRATION_FILE,
    REVIEWS_SNAPSHOT,
    TRANSITIONS_FILE,
    LoadedMapping,
    MigrationEvidence,
    TransitionRow,
    evaluate_migration,
    load_label_mapping,
    mapped_controls,
    mapping_problems,
    pending_transitions,
)
from ..policy import Blocker, Policy
from ..review import (
    TransitionReview,
    TransitionReviews,
    read_transition_reviews,
    transition_reviews_path_for,
)
from ..runs import RunDir
from ._render import Section, section_html, table_section

BASELINE_INPUTS = "inputs/baseline"
MAPPING_COPY = "inputs/label_mapping.yaml"
STUDIES_COPY = "repeatability/studies.jsonl"
SENTINELS_DIR = "sentinels"
TRANSITIONS_HTML = "transitions.html"


def copy_spec(spec_path: Path, target_dir: Path) -> Path:
    """Copy a spec and the prompt or results file it names into ``target_dir``; return the copy."""
    spec, _ = load_spec(spec_path)
    target_dir.mkdir(parents=True, exist_ok=True)
    copy = target_dir / spec_path.name
    shutil.copyfile(spec_path, copy)
    for rel in (spec.prompt_file, spec.results):
        target = (target_dir / rel).resolve() if rel else None
        if rel and target is not None and target_dir.resolve() in target.parents:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile((spec_path.parent / rel).resolve(), target)
    return copy


def check_migration_inputs(
    judge: Judge, baseline: Path, label_mapping: Path | None, dataset: GoldDataset
) -> tuple[Judge, LoadedMapping | None]:
    """Load and check the baseline and the label mapping before the ledger is touched; refused
    (every problem at once) for a baseline that is the candidate, or labels the mapping does not
    carry into the rubric (:func:`~workbench.migration.mapping_problems`)."""
    old = load_candidate(baseline)
    problems: list[Problem] = []
    if old.identity.fingerprint() == judge.identity.fingerprint():
        message = f"the baseline {old.spec.label} is the candidate itself (same fingerprint)"
        fix = "give the previous version as --baseline; certify one version without --baseline"
        problems.append(problem(str(baseline), "baseline_is_candidate", message, fix))
    mapping = load_label_mapping(label_mapping) if label_mapping is not None else None
    problems += mapping_problems(
        mapping,
        old_label=old.spec.label,
        new_label=judge.spec.label,
        old_labels=list(old.spec.labels),
        new_labels=list(dataset.rubric.labels),
        location=str(baseline),
    )
    if problems:
        raise WorkbenchError(
            f"cannot certify {judge.spec.label} against {old.spec.label}: {len(problems)}"
            " problem(s)",
            problems,
        )
    return old, mapping


def write_migration(report_dir: Path, evidence: MigrationEvidence) -> None:
    """Write the public summary and the restricted transitions (the reviews are stored before)."""
    atomic_write_json(report_dir / MIGRATION_FILE, evidence.summary.model_dump(mode="json"))
    write_jsonl(report_dir / TRANSITIONS_FILE, [r.model_dump(mode="json") for r in evidence.rows])


def read_reviews_snapshot(report_dir: Path) -> dict[str, TransitionReview]:
    return {r.case_id: r for r in read_transition_reviews(report_dir / REVIEWS_SNAPSHOT)}


def snapshot_studies(report_dir: Path, studies: list[Any]) -> None:
    write_jsonl(report_dir / STUDIES_COPY, [s.model_dump(mode="json") for s in studies])


def stored_studies(report_dir: Path) -> list[Any]:
    from ..repeatability import read_studies

    path = report_dir / STUDIES_COPY
    return list(read_studies(path)) if path.exists() else []


def needs_repeatability(policy: Policy | None) -> bool:
    """Whether any slice of the policy limits the flip rate (certification then needs a study)."""
    return policy is not None and any(s.max_flip_rate is not None for s in policy.slices.values())


def repeatability_gate_blockers(
    policy: Policy | None, studies: list[Any], *, fingerprint: str, dataset_sha256: str
) -> list[Blocker]:
    """:func:`~workbench.repeatability.repeatability_blockers` on the candidate's stored studies."""
    from ..repeatability import DEFAULT_PARTITION, repeatability_blockers

    if policy is None:
        return []
    mine = [s for s in studies if s.candidate_fingerprint == fingerprint]
    latest = next((s for s in reversed(mine) if s.partition == DEFAULT_PARTITION), None)
    if latest is None and not needs_repeatability(policy):
        return []
    return repeatability_blockers(
        policy, latest, earlier=mine, fingerprint=fingerprint, dataset_sha256=dataset_sha256
    )


def write_transitions_html(
    directory: Path, evidence: MigrationEvidence, *, report_id: str | None = None
) -> None:
    """Write ``transitions.html``: the changed transitions with their review status (case ids)."""

    s = evidence.summary
    rows = [
        [t.case_id, t.slice, t.risk or "", t.human_label, r.old_verdict, r.new_verdict]
        + [t.transition, r.review or "", r.review_id or ""]
        for r in evidence.rows
        for t in [r.transition]
        if t.verdict_changed or t.needs_review
    ]
    head = ["case", "slice", "risk", "human", f"old ({s.baseline})", f"new ({s.candidate})"]
    text = render(
        "transitions.html.j2",
        baseline=s.baseline,
        candidate=s.candidate,
        report_id=report_id or "",
        head=[*head, "transition", "review", "review id"],
        rows=rows,
    )
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write_text(directory / TRANSITIONS_HTML, text)


def migration_section(summary: Any) -> Section:
    """The public migration section: transition and review counts per slice (no case ids)."""
    reviews = {r.slice: r for r in summary.reviews}
    rows = []
    for s in [*summary.slices, summary.overall]:
        r = reviews.get(s.slice)
        t = s.transitions
        rows.append(
            [s.slice, s.risk or "", s.cases, t.get("fixed", 0), t.get("broken", 0)]
            + [t.get("still_wrong", 0), s.verdict_changed]
            + ([f"{r.accepted} / {r.rejected}", r.unreviewed] if r else ["", ""])
        )
    mapping = (
        f"label mapping sha256 {summary.label_mapping_sha256[:12]}"
        if summary.label_mapping_sha256
        else "no label mapping"
    )
    return table_section(
        f"Migration {summary.baseline} \u2192 {summary.candidate}",
        ["slice", "risk", "cases", "fixed", "broken", "still wrong", "changed verdicts"]
        + ["reviewed (accepted / rejected)", "unreviewed"],
        rows,
        intro=f"Both versions judged the same {summary.cases} held-out cases under one ledger"
        f" entry; baseline run {summary.baseline_run_status}, baseline controls"
        f" {summary.baseline_controls}; {mapping}. Counts only: the cases are in the restricted"
        " part.",
    )


def migration_html(summary: Any) -> str:
    """:func:`migration_section` as HTML (the certification notebook displays it)."""
    return section_html(migration_section(summary))


def authority_section(grant: Any, beside: Any) -> Section:
    """The authority requested and granted, and the last certified version beside the candidate."""
    lines = [f"this report: {grant.describe()}"] if grant is not None else []
    if beside is not None:
        lines = [*beside.describe(), *lines]
    return Section("items", {"title": "Authority", "lines": lines})


def authority_html(grant: Any, beside: Any) -> str:
    """:func:`authority_section` as HTML."""
    return section_html(authority_section(grant, beside))


def locked_migration(
    report: str | Path, gold: str | Path | None, *, refused: str, notebook: Path | None = None
) -> tuple[Path, Lock, GoldDataset]:
    """A locked migration report that verifies, judged held-out cases, and whose gold is at hand
    and unchanged; else :class:`WorkbenchError` (exit 2) with ``refused`` as its summary."""
    root = resolve_report_path(report)

    def refuse(code: str, message: str, fix: str, where: Path = root) -> WorkbenchError:
        return refusal(refused, str(where), code, message, fix)

    if not (root / LOCK_FILE).is_file():
        raise refuse(
            "report_missing",
            "no locked certification report here (no lock.json)",
            "point at reports/<candidate>/<version>/<n> of a migration certification",
        )
    if notebook is not None and not notebook.exists():
        raise refuse(
            "notebook_missing",
            f"the certification notebook {notebook} is missing",
            "drop --notebook to run the notebook shipped in the package",
        )
    lock = read_lock(root)
    if lock.baseline_fingerprint is None:
        raise refuse(
            "not_a_migration",
            f"report {lock.report_id} is no migration certification: it has no transitions to"
            " review",
            "transition reviews belong to `workbench certify --candidate NEW --baseline OLD`",
        )
    if None in (lock.evidence.get("run_records"), lock.evidence.get("baseline_run_records")):
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
    checked = verify_lock(root, gold=gold_dir)
    if not checked.verified:
        raise WorkbenchError(
            f"{refused}: report {lock.report_id} does not verify", checked.problems
        )
    dataset = load_dataset(gold_dir)
    if dataset.sha256 != lock.evidence.get("gold_dataset"):
        raise refuse(
            "gold_changed",
            f"the gold dataset changed since report {lock.report_id}"
            f" ({str(lock.evidence.get('gold_dataset'))[:12]} -> {dataset.sha256[:12]})",
            "the transitions were judged against the old gold: certify the migration again on the"
            " new gold release",
            gold_dir,
        )
    return root, lock, dataset


def pending_for_report(
    report: str | Path, gold: str | Path | None = None
) -> tuple[list[Any], Path, Any]:
    """``(changed critical verdicts to review, transition-review log, dataset)`` of a locked
    migration report (:func:`locked_migration`)."""

    root, lock, dataset = locked_migration(report, gold, refused="no transitions to review")
    pending = pending_transitions(
        [TransitionRow.model_validate(r) for r in read_jsonl_records(root / TRANSITIONS_FILE)],
        old_fingerprint=str(lock.baseline_fingerprint),
        new_fingerprint=lock.candidate_fingerprint,
        report_id=lock.report_id,
        dataset=dataset,
    )
    return pending, transition_reviews_path_for(dataset.root), dataset


def transition_review_status(
    report: str | Path, gold: str | Path | None = None
) -> tuple[list[dict[str, Any]], Path]:
    """Every changed critical verdict of a locked migration report with its review status
    (``accepted``, ``rejected`` or ``unreviewed``), and the transition-review log's path."""
    pending, log, _ = pending_for_report(report, gold)
    reviews = (
        TransitionReviews(log).in_effect(pending[0].old_fingerprint, pending[0].new_fingerprint)
        if pending
        else {}
    )
    rows = []
    for p in pending:
        r = reviews.get(p.case_id)
        status = (r.decision + "ed") if r is not None and r.matches(p) else "unreviewed"
        fields = ("case_id", "slice", "human_label", "old_verdict", "new_verdict")
        rows.append({f: getattr(p, f) for f in fields} | {"status": status, "cited": list(p.cited)})
    return rows, log


def format_transition_status(row: dict[str, Any]) -> str:
    """One row of :func:`transition_review_status`."""
    cited = f"  (case cites {', '.join(row['cited'])})" if row["cited"] else ""
    return (
        f"{row['case_id']}  [{row['slice']}]  human {row['human_label']}:"
        f" {row['old_verdict']} -> {row['new_verdict']}  {row['status']}{cited}"
    )


def record_transition_review(
    report: str | Path,
    case_id: str,
    decision: str,
    evidence_ids: str | list[str],
    *,
    reviewer: str,
    note: str = "",
    gold: str | Path | None = None,
) -> Any:
    """Append a transition review of one changed critical verdict of a locked migration report."""

    pending, log, _ = pending_for_report(report, gold)
    match = next((p for p in pending if p.case_id == case_id), None)
    if match is None:
        known = ", ".join(p.case_id for p in pending) or "none"
        message = f"case {case_id} is no changed verdict in a critical slice of this report (those"
        message += f" are: {known})"
        fix = "review a case `workbench review transition --report REPORT --list` names"
        problems = [problem(str(report), "transition_unknown", message, fix, case_id)]
        raise WorkbenchError("no such transition", problems)
    return TransitionReviews(log).add(match, decision, evidence_ids, reviewer=reviewer, note=note)


def lifecycle_blockers(
    report_dir: Path,
    subject: Any,
    policy: Policy | None,
    dataset: GoldDataset,
    lines: list[Any],
    suite: Any | None,
    mapping: LoadedMapping | None,
) -> tuple[list[Blocker], MigrationEvidence | None]:
    """The repeatability blockers and, for a migration, the migration blockers and evidence, from
    the report's own files. ``subject``: a :class:`~._recompute.Subject`."""

    blockers = repeatability_gate_blockers(
        policy,
        stored_studies(report_dir),
        fingerprint=subject.candidate_fingerprint,
        dataset_sha256=dataset.sha256,
    )
    if subject.baseline_fingerprint is None:
        return blockers, None
    old_run = RunDir(report_dir / BASELINE_RUN_DIR)
    old_summary = old_run.read_summary()
    evidence = evaluate_migration(
        dataset,
        lines,
        old_run.read_results(migrate=True, gold=dataset),
        candidate=subject.candidate,
        candidate_fingerprint=subject.candidate_fingerprint,
        baseline=str(subject.baseline),
        baseline_fingerprint=subject.baseline_fingerprint,
        mapping=mapping,
        reviews=read_reviews_snapshot(report_dir),
        baseline_run_status=old_summary.status if old_summary else None,
        baseline_controls=_stored_baseline_controls(report_dir, subject, suite, mapping),
    )
    return blockers + evidence.blockers, evidence


def _evidence_refused(where: Path, message: str) -> WorkbenchError:
    fix = "restore the report"
    return refusal("migration evidence changed", str(where), "evidence_mismatch", message, fix)


def stored_mapping(report_dir: Path, lock: Any) -> LoadedMapping | None:
    """A migration report's label mapping, its hash checked against the lock's."""
    if not lock.input_files.get("baseline"):
        message, where = "a migration lock names no baseline spec", str(report_dir / LOCK_FILE)
        fix = "restore the report"
        raise refusal("migration evidence missing", where, "evidence_missing", message, fix)
    rel = lock.input_files.get("label_mapping")
    mapping = load_label_mapping(report_dir / rel) if rel else None
    if (mapping.sha256 if mapping else None) != lock.evidence.get("label_mapping"):
        raise _evidence_refused(
            report_dir / MAPPING_COPY,
            "the stored label mapping does not hash to the lock's label_mapping",
        )
    return mapping


def _stored_baseline_controls(
    report_dir: Path, subject: Any, suite: Any | None, mapping: LoadedMapping | None
) -> str | None:
    if suite is None or not (report_dir / BASELINE_CONTROLS_DIR / "controls.json").exists():
        return None
    report = mapped_controls(suite, report_dir / BASELINE_CONTROLS_DIR, mapping)
    if report.judge_fingerprint != subject.baseline_fingerprint:
        raise _evidence_refused(
            report_dir / BASELINE_CONTROLS_DIR,
            "the baseline control records are of another judge than the baseline the lock names",
        )
    return str(report.status)


def migration_problems(
    report_dir: Path, lock: Any, evidence: MigrationEvidence | None, gold_log: Path | None
) -> list[Problem]:
    """``verify``: migration.json, the lock's copy and the transitions against the recomputation;
    every review of the report's snapshot in the gold's log."""
    if evidence is None:
        return []
    fix = (
        "restore the report from its original copy; transitions and reviews are decided from"
        " the stored runs"
    )
    expected = evidence.summary.model_dump(mode="json")
    rows = [r.model_dump(mode="json") for r in evidence.rows]
    migration, transitions = report_dir / MIGRATION_FILE, report_dir / TRANSITIONS_FILE
    checks: list[tuple[bool, Path, str, str]] = [
        (
            (read_json_file(migration) if migration.exists() else None) != expected,
            migration,
            "migration_mismatch",
            "migration.json differs from the migration recomputed from both stored runs, the label"
            " mapping and the transition reviews",
        ),
        (
            lock.migration != expected,
            report_dir / LOCK_FILE,
            "migration_mismatch",
            "the lock's migration summary differs from the recomputed one",
        ),
        (
            (read_jsonl_records(transitions) if transitions.exists() else None) != rows,
            transitions,
            "transitions_mismatch",
            "the restricted transitions differ from the ones recomputed from both stored runs",
        ),
    ]
    out = [problem(str(where), code, message, fix) for bad, where, code, message in checks if bad]
    if gold_log is None:
        return out
    logged = (
        {r.review_id: r for r in read_transition_reviews(gold_log)} if gold_log.exists() else {}
    )
    return out + [
        problem(
            str(report_dir / REVIEWS_SNAPSHOT),
            "transition_review_unlogged",
            f"transition review {review.review_id} of the report is not in the gold's append-only"
            f" log {gold_log} as recorded",
            fix,
        )
        for review in read_reviews_snapshot(report_dir).values()
        if logged.get(review.review_id) != review
    ]
