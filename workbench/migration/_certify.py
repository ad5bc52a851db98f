"""Migration certification (``certify --baseline``, ``workbench verify``): the new and the old
judge version on the same held-out cases, and the blockers it adds (never waivable):

  ==============================  ==========  ==================================================
  code                            category    when
  ==============================  ==========  ==================================================
  critical_transition_unreviewed  review      a changed critical verdict has no review as it stands
  critical_transition_rejected    quality     a transition review rejected such a change
  label_unmapped                  incomplete  an old verdict is outside the rubric and unmapped
  baseline_incomplete             incomplete  the baseline's run stopped early or lacks a case
  ==============================  ==========  ==================================================
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from .._record import Record as _Model
from ..align import join_results
from ..gold import GoldDataset
from ..results import ResultLine
from ._compare import (
    CaseTransition,
    SliceComparison,
    case_transitions,
    map_old_lines,
    risk_order,
    summarize,
)
from ._mapping import LoadedMapping

if TYPE_CHECKING:
    from ..policy import Blocker
    from ..review import PendingTransition, TransitionReview

# The policy package (its gate, about 20 ms) and the review package (pandas) are imported where
# a blocker or a pending transition is built, so that ``workbench compare`` does not load them.

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
    """For a changed critical verdict: ``accepted``, ``rejected`` or ``unreviewed``; else None."""
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
    """sha256 of the label mapping applied to the old verdicts (None: none)."""
    baseline_run_status: str | None
    """The baseline's held-out run status (``complete`` / ``incomplete``)."""
    baseline_controls: str | None
    """The baseline's control status; None without a suite."""
    cases: int
    """Held-out cases compared."""
    slices: list[SliceComparison]
    """Per slice (critical first): transitions, changed verdicts, paired rates."""
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
        """The changed critical verdicts as transitions a reviewer can decide."""
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
    """Transitions, the public summary and the migration blockers (``reviews``: the latest
    transition review per case for this pair of fingerprints)."""
    rubric = dataset.rubric
    mapped, raw, observed = map_old_lines(old_lines, mapping)
    covered = mapping.mapping.mapping if mapping else {}
    unmapped = sorted(v for v in observed if v not in rubric.labels and v not in covered)
    blockers = [_unmapped_blocker(unmapped, raw, baseline, rubric.version, mapping)]
    mapped = [m for m in mapped if m.result.value is None or m.result.value in rubric.labels]
    rows = case_transitions(
        rubric,
        join_results(dataset, mapped, partition="held_out", location="baseline held-out results"),
        join_results(
            dataset, list(new_lines), partition="held_out", location="candidate held-out results"
        ),
        raw,
    )
    missing_old = [t.case_id for o, _, t in rows if o.outcome == "missing"]
    blockers.append(_baseline_blocker(baseline, baseline_run_status, missing_old))
    pair = (baseline_fingerprint, candidate_fingerprint)
    out_rows, used = _reviewed_rows([t for _, _, t in rows], reviews, pair)
    counts: dict[str, Counter[str]] = {}
    for r in out_rows:
        if r.review is not None:
            counts.setdefault(r.transition.slice, Counter())[r.review] += 1
    names = sorted(counts, key=risk_order(rubric))
    for name in names:
        blockers += _review_blockers(
            name, rubric.risk_of(name), out_rows, reviews, (baseline, candidate)
        )
    groups = {cid: case.group for cid, case in dataset.cases.items()}
    slices, overall, matrix = summarize(rows, rubric, groups)
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
        overall=overall,
        matrix=matrix,
        reviews=[
            SliceReview(
                slice=name,
                needs_review=sum(counts[name].values()),
                accepted=counts[name]["accepted"],
                rejected=counts[name]["rejected"],
                unreviewed=counts[name]["unreviewed"],
            )
            for name in names
        ],
    )
    return MigrationEvidence(
        summary=summary, rows=out_rows, blockers=[b for b in blockers if b], reviews_used=used
    )


def _unmapped_blocker(
    unmapped: list[str],
    raw: dict[str, str],
    baseline: str,
    rubric_version: str,
    mapping: LoadedMapping | None,
) -> Blocker | None:
    if not unmapped:
        return None
    from ..policy import blocker

    return blocker(
        "label_unmapped",
        f"the baseline {baseline} gave verdicts {unmapped} that are not labels of rubric"
        f" {rubric_version} and no reviewed mapping covers: an unmapped label blocks the"
        " comparison",
        evidence={"labels": ", ".join(unmapped), "label_mapping": mapping and mapping.sha256},
        case_ids=sorted(cid for cid, v in raw.items() if v in unmapped),
    )


def _baseline_blocker(baseline: str, status: str | None, missing: list[str]) -> Blocker | None:
    if status == "complete" and not missing:
        return None
    without = f" and {len(missing)} case(s) have no old result" if missing else ""
    from ..policy import blocker

    return blocker(
        "baseline_incomplete",
        f"the baseline {baseline}'s held-out run is {status or 'missing'}{without}: the"
        " transitions cannot all be shown",
        evidence={"run_status": status, "cases_without_old_result": len(missing)},
        case_ids=missing,
    )


def _reviewed_rows(
    transitions: list[CaseTransition],
    reviews: dict[str, TransitionReview],
    fingerprints: tuple[str, str],
) -> tuple[list[TransitionRow], list[TransitionReview]]:
    """Each transition with its review status (by the review that saw it as it stands)."""
    out: list[TransitionRow] = []
    used: list[TransitionReview] = []
    for t in transitions:
        row = TransitionRow(
            transition=t,
            old_verdict=verdict_text(t.old_label, t.old_category),
            new_verdict=verdict_text(t.new_label, t.new_category),
            review="unreviewed" if t.needs_review else None,
            review_id=None,
        )
        review = reviews.get(t.case_id) if t.needs_review else None
        if review is not None and review.matches(_pending(row, fingerprints)):
            status = "accepted" if review.decision == "accept" else "rejected"
            row = row.model_copy(update={"review": status, "review_id": review.review_id})
            used.append(review)
        out.append(row)
    return out, used


def _review_blockers(
    name: str,
    risk: str | None,
    rows: list[TransitionRow],
    reviews: dict[str, TransitionReview],
    labels: tuple[str, str],
) -> list[Blocker]:
    """A critical slice's changed verdicts without a review (review), or rejected (quality)."""
    from ..policy import blocker

    baseline, candidate = labels
    mine = [r for r in rows if r.transition.slice == name and r.review is not None]
    ids = {
        status: sorted(r.transition.case_id for r in mine if r.review == status)
        for status in ("accepted", "rejected", "unreviewed")
    }
    stale = sum(1 for case_id in ids["unreviewed"] if case_id in reviews)
    out = []
    if ids["unreviewed"]:
        note = f" ({stale} review(s) saw another verdict and no longer count)" if stale else ""
        out.append(
            blocker(
                "critical_transition_unreviewed",
                f"slice {name}: {len(ids['unreviewed'])} of {len(mine)} changed verdict(s)"
                f" between {baseline} and {candidate} have no evidence-based transition review"
                f"{note}; review each (`workbench review transition` or the review widget), then"
                " `workbench certify --resume-review REPORT`",
                slice=name,
                risk=risk,
                evidence={
                    "cases": len(ids["unreviewed"]),
                    "changed": len(mine),
                    "accepted": len(ids["accepted"]),
                    "rejected": len(ids["rejected"]),
                    "stale_reviews": stale,
                },
                case_ids=ids["unreviewed"],
            )
        )
    if ids["rejected"]:
        out.append(
            blocker(
                "critical_transition_rejected",
                f"slice {name}: a transition review rejected {len(ids['rejected'])} changed"
                f" verdict(s) of {candidate} against {baseline}: on the cited evidence the change"
                " is not acceptable",
                slice=name,
                risk=risk,
                evidence={"cases": len(ids["rejected"]), "changed": len(mine)},
                case_ids=ids["rejected"],
            )
        )
    return out


def evidence_ids_for(
    dataset: GoldDataset | None, case_id: str
) -> tuple[frozenset[str] | None, tuple[str, ...]]:
    """The ids a transition review of ``case_id`` may cite, and the ones the case cites."""
    if dataset is None:
        return None, ()
    case = dataset.cases.get(case_id)
    reviews = case.reviews if case else ()
    cited = tuple(
        dict.fromkeys([*(case.evidence if case else ()), *(e for r in reviews for e in r.evidence)])
    )
    return frozenset(cited if dataset.evidence_ids is None else dataset.evidence_ids), cited


def pending_transitions(
    rows: Iterable[TransitionRow],
    *,
    old_fingerprint: str,
    new_fingerprint: str,
    report_id: str,
    dataset: GoldDataset | None = None,
) -> list[PendingTransition]:
    """Every changed verdict in a critical slice of ``rows``, as a transition to review."""
    pair = (old_fingerprint, new_fingerprint)
    return [_pending(r, pair, report_id, dataset) for r in rows if r.transition.needs_review]


def _pending(
    row: TransitionRow,
    fingerprints: tuple[str, str],
    report_id: str = "",
    dataset: GoldDataset | None = None,
) -> PendingTransition:
    from ..review import PendingTransition

    t = row.transition
    allowed, cited = evidence_ids_for(dataset, t.case_id)
    return PendingTransition(
        old_fingerprint=fingerprints[0],
        new_fingerprint=fingerprints[1],
        case_id=t.case_id,
        slice=t.slice,
        human_label=t.human_label,
        old_verdict=row.old_verdict,
        new_verdict=row.new_verdict,
        report_id=report_id,
        evidence_ids=allowed,
        cited=cited,
    )
