"""Migration certification: the new and the old judge version on the same held-out cases.

``workbench certify --candidate NEW --baseline OLD`` judges the held-out partition with both
versions under one held-out ledger entry (one use, both fingerprints recorded), controls of
both versions first. This module is the deterministic part certification and ``workbench
verify`` share: from the two runs' records (the old verdicts mapped through the reviewed label
mapping when the rubric renamed categories), the transition reviews in effect and the rubric,
it computes

- the case-level transitions (fixed, broken, still wrong, still right, incomplete; the
  pass/fail/abstain matrix) with :mod:`workbench.migration._compare`'s definitions: kept in
  the report's restricted part (``restricted/transitions.jsonl``);
- the public summary (``migration.json``): counts only, per slice;
- the blockers a migration adds to the gate (feature ``migration`` in
  :data:`workbench.policy.BLOCKER_CODES`, never waivable):

  ==============================  ==========  ==================================================
  code                            category    when
  ==============================  ==========  ==================================================
  critical_transition_unreviewed  review      a changed verdict in a critical slice has no
                                              transition review of it as it stands
  critical_transition_rejected    quality     a transition review rejected such a change
  label_unmapped                  incomplete  an old verdict is outside the rubric's labels and
                                              the mapping does not cover it
  baseline_incomplete             incomplete  the baseline's held-out run stopped early or a
                                              case has no old result: the comparison is partial
  ==============================  ==========  ==================================================
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from .._record import Record as _Model
from ..align import Join, JoinedCase, join_results
from ..gold import GoldDataset
from ..policy import Blocker
from ..results import ResultLine
from ..review._transition_reviews import PendingTransition, TransitionReview
from ._compare import (
    CATEGORIES,
    CaseTransition,
    SliceComparison,
    _category,
    _slice_comparison,
    _transition,
)
from ._mapping import LoadedMapping

MIGRATION_SCHEMA_VERSION = 1
MIGRATION_FILE = "migration.json"
"""The public migration summary in the report directory (counts only)."""
TRANSITIONS_FILE = "restricted/transitions.jsonl"
"""Case-level transitions with their review status (restricted)."""
REVIEWS_SNAPSHOT = "restricted/transition_reviews.jsonl"
"""The transition reviews the gate read, as they were in the log (restricted)."""
BASELINE_RUN_DIR = "restricted/baseline/run"
"""The baseline's held-out run (restricted, like the candidate's ``restricted/run``)."""
BASELINE_CONTROLS_DIR = "baseline/controls"
"""The baseline's control run (public, like ``controls/``)."""

ReviewStatus = Literal["accepted", "rejected", "unreviewed"]


class TransitionRow(_Model):
    """One held-out case under both versions, with its review status (restricted part)."""

    transition: CaseTransition
    """The case under both versions (:class:`~workbench.migration.CaseTransition`)."""
    old_verdict: str
    """The old verdict as a review names it: the mapped label, or ``error``/``missing``."""
    new_verdict: str
    """The new verdict likewise."""
    review: ReviewStatus | None
    """For a changed verdict in a critical slice: ``accepted``, ``rejected`` or ``unreviewed``; else
    None."""
    review_id: str | None
    """The transition review in effect, when there is one."""


class SliceReview(_Model):
    """Transition-review counts for one slice (public)."""

    slice: str
    """The slice."""
    needs_review: int
    """Changed verdicts in the slice (critical slices only)."""
    accepted: int
    """Reviewed and accepted."""
    rejected: int
    """Reviewed and rejected."""
    unreviewed: int
    """Without a review of the transition as it stands."""


class MigrationSummary(_Model):
    """The public part of a migration certification (``migration.json``): counts, never case ids."""

    schema_version: int = MIGRATION_SCHEMA_VERSION
    """Format version."""
    kind: Literal["workbench.migration_certification"] = "workbench.migration_certification"
    """Record kind."""
    candidate: str
    """``name@version`` of the new version."""
    candidate_fingerprint: str
    """Its fingerprint."""
    baseline: str
    """``name@version`` of the old version."""
    baseline_fingerprint: str
    """Its fingerprint."""
    label_mapping_sha256: str | None
    """sha256 of the reviewed label mapping applied to the old verdicts (None: none needed or
    given)."""
    baseline_run_status: str | None
    """The baseline's held-out run status (``complete`` / ``incomplete``)."""
    baseline_controls: str | None
    """The baseline's control status (``passed`` / ``failed`` / ``incomplete``), None without a
    suite."""
    cases: int
    """Held-out cases compared."""
    slices: list[SliceComparison]
    """Per slice (critical first): transitions, changed verdicts, rates of both versions and their
    paired difference."""
    overall: SliceComparison
    """Every case."""
    matrix: dict[str, dict[str, int]]
    """Old verdict category -> new verdict category -> cases."""
    reviews: list[SliceReview] = Field(default_factory=list)
    """Transition-review counts per critical slice with changed verdicts."""

    @property
    def needs_review(self) -> int:
        return sum(r.needs_review for r in self.reviews)

    @property
    def unreviewed(self) -> int:
        return sum(r.unreviewed for r in self.reviews)


@dataclass(frozen=True)
class MigrationEvidence:
    """Everything :func:`evaluate_migration` computes."""

    summary: MigrationSummary
    rows: list[TransitionRow]
    blockers: list[Blocker]
    reviews_used: list[TransitionReview]
    """The reviews in effect for changed critical verdicts (snapshotted into the report)."""

    def pending(
        self, report_id: str, dataset: GoldDataset | None = None
    ) -> list[PendingTransition]:
        """The changed critical verdicts as transitions a reviewer can decide (every one, reviewed
        or not)."""
        return pending_transitions(
            self.rows,
            old_fingerprint=self.summary.baseline_fingerprint,
            new_fingerprint=self.summary.candidate_fingerprint,
            report_id=report_id,
            dataset=dataset,
        )


def verdict_text(label: str | None, category: str) -> str:
    """The label, or the category (``error``/``missing``) when the version gave none."""
    return label if label is not None else category


def map_old_lines(
    lines: Sequence[ResultLine], mapping: LoadedMapping | None
) -> tuple[list[ResultLine], dict[str, str], set[str]]:
    """Old result lines with verdicts put into the new vocabulary; the raw verdict per case;
    unmapped labels.

    A verdict the mapping covers is replaced; one it does not cover is kept as it is (and
    reported when it is not a rubric label: :func:`evaluate_migration` blocks on it).
    """
    raw: dict[str, str] = {}
    out: list[ResultLine] = []
    for line in lines:
        value = line.result.value
        if value is not None:
            raw[line.result.case_id] = value
        if mapping is not None and value is not None and value in mapping.mapping.mapping:
            out.append(
                ResultLine(
                    line.line, line.result.model_copy(update={"value": mapping.apply(value)})
                )
            )
        else:
            out.append(line)
    return out, raw, set(raw.values())


def _rows(
    dataset: GoldDataset, old: Join, new: Join, raw_old: dict[str, str]
) -> list[tuple[JoinedCase, JoinedCase, CaseTransition]]:
    rubric = dataset.rubric
    new_of = {c.case_id: c for c in new.cases}
    rows = []
    for o in old.cases:
        n = new_of[o.case_id]
        risk = rubric.risk_of(o.slice)
        changed = (o.outcome, o.judge_label) != (n.outcome, n.judge_label)
        raw = raw_old.get(o.case_id)
        t = CaseTransition(
            case_id=o.case_id,
            slice=o.slice,
            risk=risk,
            human_label=o.human_label,
            old_label=o.judge_label,
            old_label_raw=raw if raw is not None and raw != o.judge_label else None,
            new_label=n.judge_label,
            old_class=o.error_class,
            new_class=n.error_class,
            old_category=_category(o, rubric),
            new_category=_category(n, rubric),
            transition=_transition(o, n),
            verdict_changed=changed,
            needs_review=changed and risk == "critical",
        )
        rows.append((o, n, t))
    return rows


def evaluate_migration(
    dataset: GoldDataset,
    new_lines: Sequence[ResultLine],
    old_lines: Sequence[ResultLine],
    *,
    candidate: str,
    candidate_fingerprint: str,
    baseline: str,
    baseline_fingerprint: str,
    mapping: LoadedMapping | None,
    reviews: dict[str, TransitionReview],
    baseline_run_status: str | None,
    baseline_controls: str | None,
) -> MigrationEvidence:
    """Transitions, the public summary and the migration blockers (module doc).

    ``reviews``: the latest transition review per case id for this pair of fingerprints
    (:meth:`~workbench.review.TransitionReviews.in_effect`). Certification and ``verify`` call
    this with the same stored files and get the same answer.
    """
    rubric = dataset.rubric
    mapped, raw, observed = map_old_lines(old_lines, mapping)
    blockers: list[Blocker] = []
    unmapped = sorted(
        label
        for label in observed
        if label not in rubric.labels and (mapping is None or label not in mapping.mapping.mapping)
    )
    if unmapped:
        blockers.append(
            Blocker(
                code="label_unmapped",
                category="incomplete",
                message=(
                    f"the baseline {baseline} gave verdicts {unmapped} that are not labels of"
                    f" rubric {rubric.version} and no reviewed mapping covers: an unmapped label"
                    " blocks the comparison"
                ),
                evidence={
                    "labels": ", ".join(unmapped),
                    "label_mapping": mapping.sha256 if mapping else None,
                },
                case_ids=sorted(cid for cid, v in raw.items() if v in unmapped),
                waivable=False,
            )
        )
        mapped = [
            line
            for line in mapped
            if line.result.value is None or line.result.value in rubric.labels
        ]
    old_join = join_results(
        dataset, mapped, partition="held_out", location="baseline held-out results"
    )
    new_join = join_results(
        dataset, list(new_lines), partition="held_out", location="candidate held-out results"
    )
    rows = _rows(dataset, old_join, new_join, raw)
    missing_old = [t.case_id for o, _, t in rows if o.outcome == "missing"]
    if baseline_run_status != "complete" or missing_old:
        blockers.append(
            Blocker(
                code="baseline_incomplete",
                category="incomplete",
                message=(
                    f"the baseline {baseline}'s held-out run is {baseline_run_status or 'missing'}"
                )
                + (f" and {len(missing_old)} case(s) have no old result" if missing_old else "")
                + ": the transitions cannot all be shown",
                evidence={
                    "run_status": baseline_run_status,
                    "cases_without_old_result": len(missing_old),
                },
                case_ids=missing_old,
                waivable=False,
            )
        )
    out_rows: list[TransitionRow] = []
    used: list[TransitionReview] = []
    per_slice: dict[str, Counter[str]] = {}
    for _, _, t in rows:
        old_v, new_v = (
            verdict_text(t.old_label, t.old_category),
            verdict_text(t.new_label, t.new_category),
        )
        status: ReviewStatus | None = None
        review_id = None
        if t.needs_review:
            review = reviews.get(t.case_id)
            pending = PendingTransition(
                old_fingerprint=baseline_fingerprint,
                new_fingerprint=candidate_fingerprint,
                case_id=t.case_id,
                slice=t.slice,
                human_label=t.human_label,
                old_verdict=old_v,
                new_verdict=new_v,
                report_id="",
            )
            if review is not None and review.matches(pending):
                status = "accepted" if review.decision == "accept" else "rejected"
                review_id = review.review_id
                used.append(review)
            else:
                status = "unreviewed"
            per_slice.setdefault(t.slice, Counter())[status] += 1
        out_rows.append(
            TransitionRow(
                transition=t,
                old_verdict=old_v,
                new_verdict=new_v,
                review=status,
                review_id=review_id,
            )
        )
    for name in sorted(per_slice):
        counts = per_slice[name]
        risk = rubric.risk_of(name)
        stale = sum(
            1
            for r in out_rows
            if r.transition.slice == name
            and r.review == "unreviewed"
            and r.transition.case_id in reviews
        )
        if counts["unreviewed"]:
            ids = sorted(
                r.transition.case_id
                for r in out_rows
                if r.transition.slice == name and r.review == "unreviewed"
            )
            blockers.append(
                Blocker(
                    code="critical_transition_unreviewed",
                    category="review",
                    slice=name,
                    risk=risk,
                    message=(
                        f"slice {name}: {len(ids)} of {sum(counts.values())} changed verdict(s)"
                        f" between {baseline} and {candidate} have no evidence-based transition"
                        " review"
                    )
                    + (
                        f" ({stale} review(s) saw another verdict and no longer count)"
                        if stale
                        else ""
                    )
                    + "; review each (`workbench review transition` or the review widget), then"
                    " `workbench certify --resume-review REPORT`",
                    evidence={
                        "cases": len(ids),
                        "changed": sum(counts.values()),
                        "accepted": counts["accepted"],
                        "rejected": counts["rejected"],
                        "stale_reviews": stale,
                    },
                    case_ids=ids,
                    waivable=False,
                )
            )
        if counts["rejected"]:
            ids = sorted(
                r.transition.case_id
                for r in out_rows
                if r.transition.slice == name and r.review == "rejected"
            )
            blockers.append(
                Blocker(
                    code="critical_transition_rejected",
                    category="quality",
                    slice=name,
                    risk=risk,
                    message=(
                        f"slice {name}: a transition review rejected {len(ids)} changed verdict(s)"
                        f" of {candidate} against {baseline}: on the cited evidence the change is"
                        " not acceptable"
                    ),
                    evidence={"cases": len(ids), "changed": sum(counts.values())},
                    case_ids=ids,
                    waivable=False,
                )
            )
    by_slice: dict[str, list[tuple[JoinedCase, JoinedCase, CaseTransition]]] = {}
    for row in rows:
        by_slice.setdefault(row[0].slice, []).append(row)
    order = {"critical": 0, "high": 1, "medium": 2, "low": 3}
    slices = [
        _slice_comparison(name, rubric.risk_of(name), by_slice[name], rubric)
        for name in sorted(by_slice, key=lambda s: (order.get(rubric.risk_of(s) or "", 9), s))
    ]
    matrix: dict[str, dict[str, int]] = {r: dict.fromkeys(CATEGORIES, 0) for r in CATEGORIES}
    for _, _, t in rows:
        matrix[t.old_category][t.new_category] += 1
    summary = MigrationSummary(
        candidate=candidate,
        candidate_fingerprint=candidate_fingerprint,
        baseline=baseline,
        baseline_fingerprint=baseline_fingerprint,
        label_mapping_sha256=mapping.sha256 if mapping else None,
        baseline_run_status=baseline_run_status,
        baseline_controls=baseline_controls,
        cases=len(rows),
        slices=slices,
        overall=_slice_comparison("(all)", None, rows, rubric),
        matrix={
            r: {c: v for c, v in cols.items() if v}
            for r, cols in matrix.items()
            if any(cols.values())
        },
        reviews=[
            SliceReview(
                slice=name,
                needs_review=sum(per_slice[name].values()),
                accepted=per_slice[name]["accepted"],
                rejected=per_slice[name]["rejected"],
                unreviewed=per_slice[name]["unreviewed"],
            )
            for name in sorted(per_slice, key=lambda s: (order.get(rubric.risk_of(s) or "", 9), s))
        ],
    )
    return MigrationEvidence(summary=summary, rows=out_rows, blockers=blockers, reviews_used=used)


def evidence_ids_for(
    dataset: GoldDataset | None, case_id: str
) -> tuple[frozenset[str] | None, tuple[str, ...]]:
    """The ids a transition review of ``case_id`` may cite, and the ones the case itself cites.

    With an evidence snapshot: the snapshot's ids. Without one: the case's own cited evidence
    (an empty set when it cites none: nothing can then be cited, and the rubric should
    declare a snapshot). Without a dataset: (None, ()): not checked here.
    """
    if dataset is None:
        return None, ()
    case = dataset.cases.get(case_id)
    cited = tuple(
        dict.fromkeys(
            [
                *(case.evidence if case else ()),
                *(e for r in (case.reviews if case else ()) for e in r.evidence),
            ]
        )
    )
    if dataset.evidence_ids is not None:
        return frozenset(dataset.evidence_ids), cited
    return frozenset(cited), cited


def pending_transitions(
    rows: Iterable[TransitionRow],
    *,
    old_fingerprint: str,
    new_fingerprint: str,
    report_id: str,
    dataset: GoldDataset | None = None,
) -> list[PendingTransition]:
    """Every changed verdict in a critical slice of ``rows``, as a transition to review."""
    out = []
    for row in rows:
        t = row.transition
        if not t.needs_review:
            continue
        allowed, cited = evidence_ids_for(dataset, t.case_id)
        out.append(
            PendingTransition(
                old_fingerprint=old_fingerprint,
                new_fingerprint=new_fingerprint,
                case_id=t.case_id,
                slice=t.slice,
                human_label=t.human_label,
                old_verdict=row.old_verdict,
                new_verdict=row.new_verdict,
                report_id=report_id,
                evidence_ids=allowed,
                cited=cited,
            )
        )
    return out


def summary_counts(summary: MigrationSummary) -> dict[str, Any]:
    """The summary as JSON (what the lock records and ``verify`` recomputes)."""
    return summary.model_dump(mode="json")
