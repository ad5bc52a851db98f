"""What certification adds for a migration, repeatability and authority, shared with ``verify``.

Certification stores every input these read in the report, and ``workbench verify`` reads
the same files with the same functions:

====================================  =======================================================
file                                  what
====================================  =======================================================
inputs/baseline/<spec>.yaml           the baseline's spec (``certify --baseline``)
inputs/label_mapping.yaml             the reviewed label mapping (its sha256 is in the lock)
baseline/controls/results.jsonl       the baseline's control run (shown beside the candidate's)
restricted/baseline/run/              the baseline's held-out run
restricted/transitions.jsonl          case-level transitions with their review status
restricted/transition_reviews.jsonl   the transition reviews in effect when the gate ran
migration.json                        the public migration summary (counts only)
repeatability/studies.jsonl           the candidate's repeatability studies the gate read
sentinels/                            the candidate's sentinel run (for ``workbench drift``)
====================================  =======================================================
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from .._io import atomic_write_json, read_json_file, write_jsonl
from ..errors import Problem, WorkbenchError
from ..gold import GoldDataset
from ..judges import Judge, load_candidate, load_spec
from ..migration._certify import (
    BASELINE_CONTROLS_DIR,
    BASELINE_RUN_DIR,
    MIGRATION_FILE,
    REVIEWS_SNAPSHOT,
    TRANSITIONS_FILE,
    MigrationEvidence,
    TransitionRow,
)
from ..migration._mapping import LoadedMapping, load_label_mapping, mapping_problems
from ..policy import Blocker, Policy
from ..review._transition_reviews import TransitionReview, read_transition_reviews

BASELINE_INPUTS = "inputs/baseline"
MAPPING_COPY = "inputs/label_mapping.yaml"
STUDIES_COPY = "repeatability/studies.jsonl"
SENTINELS_DIR = "sentinels"


def copy_spec(spec_path: Path, target_dir: Path) -> Path:
    """Copy a candidate spec and the prompt or results file it names into ``target_dir``; return the
    spec copy."""
    spec, _ = load_spec(spec_path)
    target_dir.mkdir(parents=True, exist_ok=True)
    copy = target_dir / spec_path.name
    shutil.copyfile(spec_path, copy)
    for rel in (spec.prompt_file, spec.results):
        if rel:
            source = (spec_path.parent / rel).resolve()
            target = (target_dir / rel).resolve()
            if target_dir.resolve() in target.parents:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
    return copy


def check_migration_inputs(
    judge: Judge, baseline: Path, label_mapping: Path | None, dataset: GoldDataset
) -> tuple[Judge, LoadedMapping | None]:
    """Load the baseline and the label mapping and check them before the ledger is touched.

    Refused (every problem at once): a baseline that is the candidate itself; old labels the
    rubric lacks without a reviewed mapping (renamed categories), or a mapping that leaves a
    label unmapped, maps to labels the rubric lacks or was reviewed for other versions.
    """
    old = load_candidate(baseline)
    problems: list[Problem] = []
    if old.identity.fingerprint() == judge.identity.fingerprint():
        problems.append(
            Problem(
                location=str(baseline),
                code="baseline_is_candidate",
                message=f"the baseline {old.spec.label} is the candidate itself (same fingerprint)",
                fix=(
                    "give the previous version as --baseline; certify one version without"
                    " --baseline"
                ),
            )
        )
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


def control_report_from_records(suite: Any, run_dir: Path, mapping: LoadedMapping | None) -> Any:
    """A control report rebuilt from a control run's stored records, verdicts mapped when a mapping
    is given."""
    from ..controls import ControlOutcome, evaluate_controls
    from ..controls._run import _outcomes
    from ..results import JudgeIdentity
    from ..runs import RunDir

    identity = JudgeIdentity.model_validate(
        read_json_file(run_dir / "controls.json")["judge_identity"]
    )
    outcomes = _outcomes(suite, RunDir(run_dir).results, identity.fingerprint())
    if mapping is not None:
        outcomes = {
            cid: (
                ControlOutcome(verdict=mapping.apply(o.verdict), reason=o.reason, error=o.error)
                if o.verdict is not None and o.verdict in mapping.mapping.mapping
                else o
            )
            for cid, o in outcomes.items()
        }
    return evaluate_controls(suite, outcomes, judge=identity)


def write_migration(
    report_dir: Path, evidence: MigrationEvidence, reviews: dict[str, TransitionReview]
) -> None:
    """The public summary, the restricted transitions and the snapshot of the reviews in effect."""
    atomic_write_json(report_dir / MIGRATION_FILE, evidence.summary.model_dump(mode="json"))
    write_jsonl(report_dir / TRANSITIONS_FILE, [r.model_dump(mode="json") for r in evidence.rows])
    write_jsonl(
        report_dir / REVIEWS_SNAPSHOT, [reviews[k].model_dump(mode="json") for k in sorted(reviews)]
    )


def read_reviews_snapshot(report_dir: Path) -> dict[str, TransitionReview]:
    """The transition reviews a report's gate read (one per case id)."""
    return {r.case_id: r for r in read_transition_reviews(report_dir / REVIEWS_SNAPSHOT)}


def read_transitions(report_dir: Path) -> list[TransitionRow]:
    """The restricted transitions of a migration report."""
    from .._io import read_jsonl_records

    return [
        TransitionRow.model_validate(row)
        for row in read_jsonl_records(report_dir / TRANSITIONS_FILE)
    ]


def snapshot_studies(report_dir: Path, studies: list[Any]) -> None:
    """Store the repeatability studies the gate reads (the candidate's, in log order)."""
    write_jsonl(report_dir / STUDIES_COPY, [s.model_dump(mode="json") for s in studies])


def stored_studies(report_dir: Path) -> list[Any]:
    """The studies a report stored (none when it stored none)."""
    from ..repeatability import RepeatabilityStudy, read_studies

    path = report_dir / STUDIES_COPY
    if not path.exists():
        return []
    out = read_studies(path)
    assert all(isinstance(s, RepeatabilityStudy) for s in out)
    return out


def needs_repeatability(policy: Policy | None) -> bool:
    """Whether any slice of the policy limits the flip rate (certification then needs a study)."""
    return policy is not None and any(s.max_flip_rate is not None for s in policy.slices.values())


def repeatability_gate_blockers(
    policy: Policy | None, studies: list[Any], *, fingerprint: str, dataset_sha256: str
) -> list[Blocker]:
    """:func:`~workbench.repeatability.repeatability_blockers` on stored studies: the latest
    calibration study of the candidate, with every earlier one for boundary crossings."""
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


def baseline_paths(report_dir: Path) -> dict[str, Path]:
    return {"run": report_dir / BASELINE_RUN_DIR, "controls": report_dir / BASELINE_CONTROLS_DIR}


TRANSITIONS_HTML = "transitions.html"
"""The restricted page listing every transition of a migration certification, case by case."""


def write_transitions_html(
    directory: Path, evidence: MigrationEvidence, *, report_id: str | None = None
) -> None:
    """``restricted/transitions.html``: the transitions with their review status (restricted: case
    ids)."""
    from .._html import render
    from .._io import atomic_write_text

    s = evidence.summary
    rows = [
        [
            t.case_id,
            t.slice,
            t.risk or "",
            t.human_label,
            r.old_verdict,
            r.new_verdict,
            t.transition,
            r.review or "",
            r.review_id or "",
        ]
        for r in evidence.rows
        for t in [r.transition]
        if t.verdict_changed or t.needs_review
    ]
    head = [
        "case",
        "slice",
        "risk",
        "human",
        f"old ({s.baseline})",
        f"new ({s.candidate})",
        "transition",
        "review",
        "review id",
    ]
    text = render(
        "transitions.html.j2",
        baseline=s.baseline,
        candidate=s.candidate,
        report_id=report_id or "",
        head=head,
        rows=rows,
    )
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write_text(directory / TRANSITIONS_HTML, text)


def migration_html(summary: Any) -> str:
    """The public migration section: transitions per slice and transition-review counts (no
    case ids)."""
    from .._html import fragment

    head = [
        "slice",
        "risk",
        "cases",
        "fixed",
        "broken",
        "still wrong",
        "changed verdicts",
        "reviewed (accepted / rejected)",
        "unreviewed",
    ]
    reviews = {r.slice: r for r in summary.reviews}
    rows = []
    for s in [*summary.slices, summary.overall]:
        r = reviews.get(s.slice)
        rows.append(
            [
                s.slice,
                s.risk or "",
                s.cases,
                s.transitions.get("fixed", 0),
                s.transitions.get("broken", 0),
                s.transitions.get("still_wrong", 0),
                s.verdict_changed,
                f"{r.accepted} / {r.rejected}" if r else "",
                r.unreviewed if r else "",
            ]
        )
    mapping = (
        f"label mapping sha256 {summary.label_mapping_sha256[:12]}"
        if summary.label_mapping_sha256
        else "no label mapping"
    )
    return str(fragment("fragments.html.j2", "migration", summary, mapping, head, rows))


def authority_html(grant: Any, beside: Any) -> str:
    """The authority requested and granted, and the last complete certified version beside the
    candidate."""
    from .._html import fragment

    lines = [f"this report: {grant.describe()}"] if grant is not None else []
    if beside is not None:
        lines = [*beside.describe(), *lines]
    return str(fragment("fragments.html.j2", "authority", lines))


def pending_for_report(
    report: str | Path, gold: str | Path | None = None
) -> tuple[list[Any], Path, Any]:
    """The changed critical verdicts of a locked migration report, as transitions to review.

    Returns ``(pending, transition-review log path, dataset)``. The report must verify (a
    review of tampered transitions would decide nothing real); the evidence ids a review may
    cite come from the certified gold. Raises :class:`WorkbenchError` (exit 2).
    """
    from ..gold import load_dataset
    from ..migration._certify import evidence_ids_for
    from ..review._transition_reviews import PendingTransition, transition_reviews_path_for
    from ._lock import read_lock
    from ._verify import resolve_report_path, verify_one

    root = resolve_report_path(report)
    if not (root / "lock.json").is_file():
        raise WorkbenchError(
            "no transitions to review",
            [
                Problem(
                    location=str(root),
                    code="report_missing",
                    message="no locked certification report here (no lock.json)",
                    fix=(
                        "point --report at reports/<candidate>/<version>/<n> of a migration"
                        " certification"
                    ),
                )
            ],
        )
    lock = read_lock(root)
    if lock.baseline_fingerprint is None or not (root / TRANSITIONS_FILE).exists():
        raise WorkbenchError(
            "no transitions to review",
            [
                Problem(
                    location=str(root),
                    code="not_a_migration",
                    message=(
                        f"report {lock.report_id} holds no transitions (no migration certification,"
                        " or held-out data was not used)"
                    ),
                    fix=(
                        "transition reviews belong to `workbench certify --candidate NEW --baseline"
                        " OLD`"
                    ),
                )
            ],
        )
    gold_dir = Path(gold) if gold is not None else (Path(lock.gold) if lock.gold else None)
    if gold_dir is None or not gold_dir.exists():
        raise WorkbenchError(
            "no transitions to review",
            [
                Problem(
                    location=str(root),
                    code="gold_missing",
                    message=f"the certified dataset {lock.gold} is not on this machine",
                    fix=(
                        "pass --gold with the certified dataset (the transition-review log lives"
                        " beside it)"
                    ),
                )
            ],
        )
    checked = verify_one(root, gold=gold_dir)
    if not checked.verified:
        raise WorkbenchError(
            f"report {lock.report_id} does not verify: its transitions cannot be reviewed",
            checked.problems,
        )
    dataset = load_dataset(gold_dir)
    if dataset.sha256 != lock.evidence.get("gold_dataset"):
        raise WorkbenchError(
            "no transitions to review",
            [
                Problem(
                    location=str(gold_dir),
                    code="gold_changed",
                    message="the gold dataset changed since the report was certified",
                    fix="certify the migration again on the new gold release",
                )
            ],
        )
    pending = []
    for row in read_transitions(root):
        t = row.transition
        if not t.needs_review:
            continue
        allowed, cited = evidence_ids_for(dataset, t.case_id)
        pending.append(
            PendingTransition(
                old_fingerprint=lock.baseline_fingerprint,
                new_fingerprint=lock.candidate_fingerprint,
                case_id=t.case_id,
                slice=t.slice,
                human_label=t.human_label,
                old_verdict=row.old_verdict,
                new_verdict=row.new_verdict,
                report_id=lock.report_id,
                evidence_ids=allowed,
                cited=cited,
            )
        )
    return pending, transition_reviews_path_for(dataset.root), dataset


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
    from ..review._transition_reviews import TransitionReviews

    pending, log, _ = pending_for_report(report, gold)
    match = next((p for p in pending if p.case_id == case_id), None)
    if match is None:
        known = ", ".join(p.case_id for p in pending) or "none"
        raise WorkbenchError(
            "no such transition",
            [
                Problem(
                    location=str(report),
                    case_id=case_id,
                    code="transition_unknown",
                    message=(
                        f"case {case_id} is no changed verdict in a critical slice of this report"
                        f" (those are: {known})"
                    ),
                    fix="review a case `workbench review transition --report REPORT --list` names",
                )
            ],
        )
    return TransitionReviews(log).add(match, decision, evidence_ids, reviewer=reviewer, note=note)


def recompute_lifecycle_blockers(
    report_dir: Path,
    lock: Any,
    policy: Policy,
    dataset: GoldDataset,
    lines: list[Any],
    suite: Any | None,
) -> tuple[list[Blocker], MigrationEvidence | None]:
    """What certification added to the gate beside the policy's limits, from the report's own
    files (``workbench verify``): repeatability blockers from the stored studies and, for a
    migration, the migration blockers from both stored runs, the stored label mapping and
    the stored snapshot of transition reviews."""
    from ..runs import RunDir

    blockers = repeatability_gate_blockers(
        policy,
        stored_studies(report_dir),
        fingerprint=lock.candidate_fingerprint,
        dataset_sha256=dataset.sha256,
    )
    if lock.baseline_fingerprint is None:
        return blockers, None
    spec_rel = lock.input_files.get("baseline")
    if not spec_rel:
        raise WorkbenchError(
            "migration evidence missing",
            [
                Problem(
                    location=str(report_dir / "lock.json"),
                    code="evidence_missing",
                    message="a migration lock names no baseline spec",
                    fix="restore the report",
                )
            ],
        )
    mapping_rel = lock.input_files.get("label_mapping")
    mapping = load_label_mapping(report_dir / mapping_rel) if mapping_rel else None
    if (mapping.sha256 if mapping else None) != lock.evidence.get("label_mapping"):
        raise WorkbenchError(
            "migration evidence changed",
            [
                Problem(
                    location=str(report_dir / MAPPING_COPY),
                    code="evidence_mismatch",
                    message="the stored label mapping does not hash to the lock's label_mapping",
                    fix="restore the report",
                )
            ],
        )
    old_run = RunDir(report_dir / BASELINE_RUN_DIR)
    old_lines = old_run.read_results(migrate=True, gold=dataset)
    old_summary = old_run.read_summary()
    controls = None
    if suite is not None and (report_dir / BASELINE_CONTROLS_DIR / "controls.json").exists():
        report = control_report_from_records(suite, report_dir / BASELINE_CONTROLS_DIR, mapping)
        if report.judge_fingerprint != lock.baseline_fingerprint:
            raise WorkbenchError(
                "migration evidence changed",
                [
                    Problem(
                        location=str(report_dir / BASELINE_CONTROLS_DIR),
                        code="evidence_mismatch",
                        message=(
                            "the baseline control records are of another judge than the baseline"
                            " the lock names"
                        ),
                        fix="restore the report",
                    )
                ],
            )
        controls = report.status
    evidence = evaluate_migration_from(
        dataset,
        lines,
        old_lines,
        lock=lock,
        mapping=mapping,
        reviews=read_reviews_snapshot(report_dir),
        baseline_run_status=old_summary.status if old_summary else None,
        baseline_controls=controls,
    )
    return blockers + evidence.blockers, evidence


def evaluate_migration_from(
    dataset: GoldDataset,
    lines: list[Any],
    old_lines: list[Any],
    *,
    lock: Any,
    mapping: LoadedMapping | None,
    reviews: dict[str, TransitionReview],
    baseline_run_status: str | None,
    baseline_controls: str | None,
) -> MigrationEvidence:
    from ..migration._certify import evaluate_migration

    return evaluate_migration(
        dataset,
        lines,
        old_lines,
        candidate=lock.candidate,
        candidate_fingerprint=lock.candidate_fingerprint,
        baseline=str(lock.baseline),
        baseline_fingerprint=str(lock.baseline_fingerprint),
        mapping=mapping,
        reviews=reviews,
        baseline_run_status=baseline_run_status,
        baseline_controls=baseline_controls,
    )


def migration_problems(
    report_dir: Path, lock: Any, evidence: MigrationEvidence | None, gold_log: Path | None
) -> list[Problem]:
    """``verify``: migration.json, the lock's copy and the restricted transitions against the
    recomputation; every review in the report's snapshot present in the gold's log."""
    from .._io import read_jsonl_records

    out: list[Problem] = []
    if evidence is None:
        return out

    def fail(where: Path, code: str, message: str) -> None:
        out.append(
            Problem(
                location=str(where),
                code=code,
                message=message,
                fix=(
                    "restore the report from its original copy; transitions and reviews are decided"
                    " from the stored runs"
                ),
            )
        )

    expected = evidence.summary.model_dump(mode="json")
    stored = (
        read_json_file(report_dir / MIGRATION_FILE)
        if (report_dir / MIGRATION_FILE).exists()
        else None
    )
    if stored != expected:
        fail(
            report_dir / MIGRATION_FILE,
            "migration_mismatch",
            "migration.json differs from the migration recomputed from both stored runs, the label"
            " mapping and the transition reviews",
        )
    if lock.migration != expected:
        fail(
            report_dir / "lock.json",
            "migration_mismatch",
            "the lock's migration summary differs from the recomputed one",
        )
    rows = (
        read_jsonl_records(report_dir / TRANSITIONS_FILE)
        if (report_dir / TRANSITIONS_FILE).exists()
        else None
    )
    if rows != [r.model_dump(mode="json") for r in evidence.rows]:
        fail(
            report_dir / TRANSITIONS_FILE,
            "transitions_mismatch",
            "the restricted transitions differ from the ones recomputed from both stored runs",
        )
    if gold_log is not None:
        logged = (
            {r.review_id: r for r in read_transition_reviews(gold_log)} if gold_log.exists() else {}
        )
        for review in read_reviews_snapshot(report_dir).values():
            if logged.get(review.review_id) != review:
                fail(
                    report_dir / REVIEWS_SNAPSHOT,
                    "transition_review_unlogged",
                    f"transition review {review.review_id} of the report is not in the gold's"
                    f" append-only log {gold_log} as recorded",
                )
    return out
