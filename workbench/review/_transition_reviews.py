"""Transition reviews: a named reviewer's decision (``accept`` or ``reject``, citing evidence) on
each changed verdict in a critical slice of a migration certification, in an append-only log
beside the gold. The latest review of (old, new fingerprint, case) counts while the transition
is still the one it saw."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, get_args

from pydantic import Field, ValidationError, field_validator

from .._load import Problems, validation_problems
from .._record import Record, append_to_log
from ..errors import WorkbenchError
from ._notes import UTCDatetime, read_records

TRANSITION_REVIEW_SCHEMA_VERSION = 1
TRANSITION_REVIEWS_FILE = "transition_reviews.jsonl"
Decision = Literal["accept", "reject"]
DECISIONS: tuple[str, ...] = get_args(Decision)
"""``accept`` (the changed verdict stands on the evidence) or ``reject`` (it does not)."""
FIX = (
    "transition reviews are written by `workbench review transition` or the review widget; restore"
    " the log, never edit it"
)


class TransitionReview(Record):
    """One reviewer's decision on one changed verdict between two judge versions."""

    schema_version: int = TRANSITION_REVIEW_SCHEMA_VERSION
    review_id: str = Field(min_length=1)
    """Unique id of this review."""
    old_fingerprint: str = Field(min_length=1)
    """Fingerprint of the baseline (old version)."""
    new_fingerprint: str = Field(min_length=1)
    """Fingerprint of the candidate (new version)."""
    case_id: str = Field(min_length=1)
    """The held-out case whose verdict changed."""
    report_id: str = Field(min_length=1)
    """The certification report whose restricted part the reviewer read."""
    slice: str
    """The case's slice."""
    human_label: str
    """The adjudicated label the reviewer saw."""
    old_verdict: str
    """The old version's verdict the reviewer saw (``error`` or ``missing`` when it gave none)."""
    new_verdict: str
    """The new version's verdict the reviewer saw (likewise)."""
    decision: Decision
    """``accept`` or ``reject``."""
    evidence_ids: list[str] = Field(min_length=1)
    """The evidence the decision rests on (ids in the gold's snapshot, or cited by the case)."""
    reviewer: str = Field(min_length=1)
    """Who decided."""
    created_at: UTCDatetime
    """When (UTC)."""
    note: str = ""
    """Free text: how the evidence settles it."""

    @field_validator("evidence_ids")
    @classmethod
    def _ids(cls, value: list[str]) -> list[str]:
        cleaned = [v.strip() for v in value]
        if any(not v for v in cleaned):
            raise ValueError("an evidence id is blank")
        if len(set(cleaned)) != len(cleaned):
            raise ValueError("an evidence id is cited twice")
        return cleaned

    @field_validator("reviewer")
    @classmethod
    def _named(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name the reviewer")
        return value

    @property
    def key(self) -> tuple[str, str, str]:
        """(old fingerprint, new fingerprint, case id)."""
        return (self.old_fingerprint, self.new_fingerprint, self.case_id)

    def matches(self, pending: PendingTransition) -> bool:
        """Whether this review is of ``pending`` as it stands (same versions, case and verdicts)."""
        seen = ("old_verdict", "new_verdict", "human_label")
        return self.key == pending.key and all(
            getattr(self, k) == getattr(pending, k) for k in seen
        )


@dataclass(frozen=True)
class PendingTransition:
    """A changed verdict in a critical slice that needs a transition review."""

    old_fingerprint: str
    new_fingerprint: str
    case_id: str
    slice: str
    human_label: str
    old_verdict: str
    new_verdict: str
    report_id: str
    evidence_ids: frozenset[str] | None = None
    """The ids a review may cite (None: not known here, so any id is accepted)."""
    cited: tuple[str, ...] = field(default_factory=tuple)
    """The evidence the case itself cites, shown to the reviewer as a starting point."""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.old_fingerprint, self.new_fingerprint, self.case_id)


def transition_reviews_path_for(gold: str | Path) -> Path:
    """``<gold dataset directory>/transition_reviews.jsonl``."""
    path = Path(gold)
    root = path if path.is_dir() else path.parent
    return root.resolve() / TRANSITION_REVIEWS_FILE


def parse_evidence_ids(text: str | Iterable[str]) -> list[str]:
    """``"pol-1, pol-2"`` (or a list of such strings) -> ``["pol-1", "pol-2"]``."""
    parts = [text] if isinstance(text, str) else list(text)
    return [
        piece.strip()
        for part in parts
        for piece in str(part).replace(";", ",").split(",")
        if piece.strip()
    ]


class TransitionReviews:
    """The append-only transition-review log (JSON Lines of :class:`TransitionReview`)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def add(
        self,
        pending: PendingTransition,
        decision: str,
        evidence_ids: str | Sequence[str],
        *,
        reviewer: str,
        note: str = "",
    ) -> TransitionReview:
        """Validate and append a review of ``pending``; return it. Raises :class:`WorkbenchError`
        listing every problem (:func:`_review_problems`)."""
        ids = parse_evidence_ids(evidence_ids)
        loc = str(self.path)
        problems = _review_problems(pending, decision, ids, loc)
        problems.raise_if_any(f"invalid transition review of {pending.case_id}")
        try:
            review = TransitionReview(
                review_id=f"trv-{uuid.uuid4().hex[:16]}",
                **{k: v for k, v in asdict(pending).items() if k not in ("evidence_ids", "cited")},
                decision=decision,
                evidence_ids=ids,
                reviewer=reviewer,
                created_at=datetime.now(UTC),
                note=note,
            )
        except ValidationError as exc:
            raise WorkbenchError(
                f"invalid transition review of {pending.case_id}",
                validation_problems(
                    exc,
                    at=loc,
                    case_id=pending.case_id,
                    code="transition_review_invalid",
                    fix="name the reviewer and cite the evidence",
                ),
            ) from None
        append_to_log(self.path, review)
        return review

    def all(self) -> list[TransitionReview]:
        """Every review in file order; raises :class:`WorkbenchError` listing every bad line."""
        return read_transition_reviews(self.path)

    def in_effect(self, old_fingerprint: str, new_fingerprint: str) -> dict[str, TransitionReview]:
        """The latest review per case id for this pair of versions (file order)."""
        pair = (old_fingerprint, new_fingerprint)
        return {r.case_id: r for r in self.all() if (r.old_fingerprint, r.new_fingerprint) == pair}


def read_transition_reviews(path: str | Path) -> list[TransitionReview]:
    """Every review of a log (none when it does not exist); a bad line is refused, never skipped."""
    code, what = "transition_review_invalid", "transition-review"
    return read_records(Path(path), TransitionReview, code=code, what=what, fix=FIX)


def _review_problems(
    pending: PendingTransition, decision: str, ids: list[str], loc: str
) -> Problems:
    """Why a review of ``pending`` is refused: an unknown decision, no evidence, or evidence
    that does not resolve in the gold's snapshot."""
    problems = Problems()
    cid = pending.case_id
    if decision not in DECISIONS:
        message = f"decision {decision!r} is not one of {', '.join(DECISIONS)}"
        fix = "accept (the changed verdict stands on the evidence) or reject (it does not)"
        problems.add(loc, "transition_decision_invalid", message, fix, case_id=cid)
    cited = ", ".join(pending.cited)
    if not ids:
        message = "a transition review must cite the evidence it rests on"
        fix = "give one or more evidence ids" + (
            f" (the case cites {cited})" if pending.cited else ""
        )
        problems.add(loc, "transition_evidence_missing", message, fix, case_id=cid)
    elif pending.evidence_ids is not None:
        unknown = [i for i in ids if i not in pending.evidence_ids]
        if unknown:
            message = f"evidence id(s) {unknown} do not resolve in the gold's evidence"
            fix = "cite ids of the gold's evidence snapshot" + (
                f", e.g. the case's own {cited}" if pending.cited else ""
            )
            problems.add(loc, "unresolved_evidence", message, fix, case_id=cid)
    return problems
