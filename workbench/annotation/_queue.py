"""Blinded gold annotation: queue unlabelled cases, assign them to the project's reviewers, collect
independent reviews, adjudicate them into gold records (docs/annotation.md).

Three append-only logs under ``<gold>/annotation/``: ``cases.jsonl`` (cases awaiting labels),
``assignments.jsonl`` and ``reviews.jsonl``. Adjudicating a case appends the finished
:class:`~workbench.gold.GoldCase` (its reviews, each with assignment and completion times, rubric
and training version and what was blinded, and the adjudication) to ``gold.jsonl``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from filelock import FileLock
from pydantic import Field, ValidationError

from .._chain import ChainedLog, ChainTerms
from .._io import AppendOnlyLog, iter_jsonl_lines, loads_json, sha256_text
from .._load import Problems
from .._record import Record
from ..approval import REVIEWERS_KEY, load_approvers
from ..errors import WorkbenchError, errors_only, refusal
from ..gold import (
    RUBRIC_FILE,
    Adjudication,
    GoldCase,
    Review,
    Rubric,
    Span,
    load_rubric,
    resolve_paths,
)

DIRECTORY = "annotation"
BLINDED = ("model_identity", "candidate_status", "judge_verdict", "other_reviews", "metadata")
"""What a reviewer is never shown: recorded on every review the queue collects."""
E = TypeVar("E", bound="_Entry")
Status = Literal["assigned", "in_review", "ready", "disagreement", "escalated", "adjudicated"]


class _Entry(Record):
    """A line of an annotation log: hash-chained (:class:`workbench._chain.ChainedLog`), so an
    edited, inserted or deleted line is refused at the next read."""

    schema_version: int = 1
    entry_id: str = ""
    previous_sha256: str | None = None
    entry_sha256: str = ""


_TERMS = ChainTerms(
    invalid="annotation_log_invalid",
    broken="annotation_chain_broken",
    unreadable="annotation_log_unreadable",
    noun="entry",
    fix="restore the annotation log from version control: it is append-only and hash-chained",
    busy="annotation_log_busy",
    busy_title="annotation log busy",
    busy_subject="the annotation log's lock",
    busy_fix="retry in a moment",
    drop_torn_tail=True,
)


class QueuedCase(_Entry):
    """One case waiting for its reviews."""

    case: GoldCase


class Assignment(_Entry):
    """One case assigned to one reviewer."""

    case_id: str
    reviewer: str
    assigned_at: datetime
    assigned_by: str
    """Who assigned it."""
    rubric_version: str
    training_version: str | None = None
    """The reviewer-training material the reviewer must have completed."""


class QueuedReview(_Entry):
    """One submitted review, as logged: the case and the review."""

    case_id: str
    review: Review


class BlindedCase(Record):
    """What a reviewer sees: the case's text and evidence, nothing about models, judges or other
    reviewers."""

    case_id: str
    slice: str
    input: str
    response: str
    grading_notes: str | None = None
    reference: str | None = None
    contexts: list[str] | None = None
    evidence: list[dict[str, str]] = Field(default_factory=list)
    """The cited evidence passages (``id``, ``text``)."""
    labels: list[str]
    """The rubric's label vocabulary."""
    criterion: str = ""
    """The rubric's criterion: the question the reviewer answers."""
    boundaries: dict[str, str] = Field(default_factory=dict)
    """Per label, the observable condition that puts a case in it (the rubric's ``boundaries``)."""
    precedence: list[str] = Field(default_factory=list)
    """The labels that win when several boundaries apply, the deciding one first."""
    ambiguity: str = ""
    """What to do with a case the rubric cannot settle (the rubric's ``ambiguity`` rule)."""


@dataclass(frozen=True)
class CaseStatus:
    """Where one queued case stands."""

    case_id: str
    slice: str
    status: Status
    reviewers: tuple[str, ...]
    """Assigned reviewers, in order."""
    labels: dict[str, str]
    """Submitted labels by reviewer (for adjudicators, never for reviewers)."""


def _now(now: datetime | None) -> datetime:
    return (now or datetime.now(UTC)).astimezone(UTC)


class Annotations:
    """The annotation queue of one gold dataset (directory or ``gold.jsonl``)."""

    def __init__(self, gold: str | Path) -> None:
        self.root, self.gold_path = resolve_paths(gold)
        self.dir = self.root / DIRECTORY
        self.rubric: Rubric = load_rubric(self.root / RUBRIC_FILE)

    # -- reading ----------------------------------------------------------------------------
    def _chain(self, name: str, model: type[E]) -> ChainedLog[E]:
        return ChainedLog(self.dir / name, model, _TERMS, schema_version=1, lock_timeout_s=30)

    def _log(self, name: str, model: type[E]) -> list[E]:
        """Every entry of one log, its chain checked; every problem refused together."""
        log = self._chain(name, model)
        if not log.path.exists():
            return []
        rows, problems = log.rows()
        entries, broken = log.verify(rows)
        if errors_only([*problems, *broken]):
            raise WorkbenchError(f"{log.path}: the annotation log is damaged", [*problems, *broken])
        return entries

    def _append(self, name: str, model: type[E], entries: Iterable[E]) -> None:
        log = self._chain(name, model)
        with log.locked():
            existing = self._log(name, model)
            previous = existing[-1].entry_sha256 if existing else None
            for entry in entries:
                previous = log.append(entry, previous).entry_sha256

    def cases(self) -> dict[str, GoldCase]:
        return {q.case.case_id: q.case for q in self._log("cases.jsonl", QueuedCase)}

    def assignments(self) -> list[Assignment]:
        return self._log("assignments.jsonl", Assignment)

    def reviews(self) -> list[QueuedReview]:
        return self._log("reviews.jsonl", QueuedReview)

    def gold_ids(self) -> set[str]:
        if not self.gold_path.exists():
            return set()
        ids = set()
        for _number, line in iter_jsonl_lines(self.gold_path, []):
            record = loads_json(line)
            if isinstance(record, dict):
                ids.add(str(record.get("case_id")))
        return ids

    def reviewers(self) -> frozenset[str]:
        return load_approvers(self.root, REVIEWERS_KEY).names

    # -- queueing ---------------------------------------------------------------------------
    def queue(
        self,
        records: Sequence[dict[str, Any]],
        reviewers: Sequence[str],
        *,
        assigned_by: str,
        per_case: int = 2,
        training_version: str | None = None,
        source: str = "cases",
        now: datetime | None = None,
    ) -> list[Assignment]:
        """Queue unlabelled case records and assign each to ``per_case`` of ``reviewers`` (the
        least loaded first); every problem of every record is refused together."""
        problems = Problems()
        self._check_people(reviewers, problems, "reviewer", min_count=per_case)
        taken = self.gold_ids() | set(self.cases())
        cases: list[GoldCase] = []
        for number, record in enumerate(records, start=1):
            case = self._queued_case(record, f"{source}:{number}", taken, problems)
            if case is not None:
                taken.add(case.case_id)
                cases.append(case)
        problems.raise_if_any(f"{source}: nothing was queued")
        load = Counter(a.reviewer for a in self.assignments())
        at, out = _now(now), []
        for case in cases:
            chosen = sorted(reviewers, key=lambda name: (load[name], reviewers.index(name)))
            for reviewer in chosen[:per_case]:
                load[reviewer] += 1
                out.append(
                    Assignment(
                        entry_id=f"{case.case_id}/{reviewer}",
                        case_id=case.case_id,
                        reviewer=reviewer,
                        assigned_at=at,
                        assigned_by=assigned_by,
                        rubric_version=self.rubric.version,
                        training_version=training_version,
                    )
                )
        with FileLock(str(self.dir / ".lock")):
            queued = (QueuedCase(entry_id=c.case_id, case=c) for c in cases)
            self._append("cases.jsonl", QueuedCase, queued)
            self._append("assignments.jsonl", Assignment, out)
        return out

    def _check_people(
        self, names: Iterable[str], problems: Problems, role: str, min_count: int = 1
    ) -> None:
        listed, names = self.reviewers(), list(names)
        fix = f"name people listed under `{REVIEWERS_KEY}:` in the project's workbench.yaml"
        if not listed:
            problems.add(
                str(self.root), "reviewers_undeclared", "the project lists no reviewers", fix
            )
        for name in names:
            if listed and name not in listed:
                problems.add(role, "reviewer_unknown", f"{role} {name!r} is not listed", fix)
        if len(set(names)) < min_count:
            message = f"{min_count} distinct {role}s are needed per case, {len(set(names))} given"
            problems.add(role, "too_few_reviewers", message, f"name at least {min_count}")

    def _queued_case(
        self, record: dict[str, Any], where: str, taken: set[str], problems: Problems
    ) -> GoldCase | None:
        if not isinstance(record, dict):
            problems.add(where, "case_invalid", "not a JSON object", "write one case per line")
            return None
        if record.get("reviews") or record.get("adjudication"):
            problems.add(
                where,
                "case_labelled",
                "the case already carries reviews or an adjudication",
                "queue unlabelled cases only: reviews come from the queue",
            )
            return None
        record = {"rubric_version": self.rubric.version, "reviews": [], **record}
        if "response_hash" not in record and isinstance(record.get("response"), str):
            record["response_hash"] = sha256_text(record["response"])
        try:
            case = GoldCase.model_validate(record)
        except ValidationError as exc:
            for error in exc.errors():
                at = ".".join(str(p) for p in error["loc"]) or "(record)"
                problems.add(
                    f"{where}: {at}",
                    "case_invalid",
                    error["msg"],
                    "fix the field as docs/formats.md#gold-records describes",
                )
            return None
        if case.case_id in taken:
            problems.add(
                where,
                "case_id_taken",
                f"case {case.case_id!r} is already in the gold or the queue",
                "give the case a new id",
            )
        if case.slice not in self.rubric.slices:
            problems.add(
                where,
                "slice_unknown",
                f"slice {case.slice!r} is not in the rubric",
                f"use one of {', '.join(self.rubric.slices)}",
            )
        if case.rubric_version != self.rubric.version:
            problems.add(
                where,
                "rubric_version_mismatch",
                f"rubric_version"
                f" {case.rubric_version!r} is not the rubric's {self.rubric.version!r}",
                "drop rubric_version: the queue sets it",
            )
        return case

    # -- reviewing --------------------------------------------------------------------------
    def _assigned(self, reviewer: str) -> list[Assignment]:
        return [a for a in self.assignments() if a.reviewer == reviewer]

    def next_for(self, reviewer: str) -> BlindedCase | None:
        """The reviewer's next assigned case without their review (None: nothing left)."""
        done = {(r.case_id, r.review.reviewer) for r in self.reviews()}
        finished = self.gold_ids()
        for a in self._assigned(reviewer):
            if (a.case_id, reviewer) not in done and a.case_id not in finished:
                return self.blinded(a.case_id)
        return None

    def blinded(self, case_id: str) -> BlindedCase:
        """The case as a reviewer sees it (see :data:`BLINDED`)."""
        case = self.cases().get(case_id)
        if case is None:
            raise refusal(
                "no such case",
                case_id,
                "case_unknown",
                f"case {case_id!r} is not queued",
                "see `workbench annotate status`",
            )
        return BlindedCase(
            case_id=case.case_id,
            slice=case.slice,
            input=case.input,
            response=case.response,
            grading_notes=case.grading_notes,
            reference=case.reference,
            contexts=case.contexts,
            evidence=[{"id": i, "text": self._passages().get(i, "")} for i in case.evidence],
            labels=list(self.rubric.labels),
            criterion=self.rubric.criterion,
            boundaries=dict(self.rubric.boundaries),
            precedence=list(self.rubric.precedence),
            ambiguity=self.rubric.ambiguity.rule() if self.rubric.ambiguity else "",
        )

    def _passages(self) -> dict[str, str]:
        if not self.rubric.evidence_snapshot:
            return {}
        path = self.root / self.rubric.evidence_snapshot
        out: dict[str, str] = {}
        if path.exists():
            for _number, line in iter_jsonl_lines(path, []):
                row = loads_json(line)
                if isinstance(row, dict) and "id" in row:
                    out[str(row["id"])] = str(row.get("text", ""))
        return out

    def _who(
        self,
        case_id: str,
        reviewer: str,
        assignment: Assignment | None,
        where: str,
        problems: Problems,
    ) -> None:
        """The case is queued, assigned to ``reviewer`` and not yet reviewed by them."""
        if case_id not in self.cases():
            problems.add(
                where,
                "case_unknown",
                f"case {case_id!r} is not in the queue",
                "see `workbench annotate status` for the queued cases",
            )
        elif assignment is None:
            problems.add(
                where,
                "not_assigned",
                f"case {case_id!r} is not assigned to {reviewer}",
                "review a case `workbench annotate next` gives you",
            )
        elif any(r.case_id == case_id and r.review.reviewer == reviewer for r in self.reviews()):
            problems.add(
                where,
                "already_reviewed",
                "this reviewer already labelled the case",
                "reviews are independent and final; tell the adjudicator",
            )

    def submit(
        self,
        reviewer: str,
        case_id: str,
        label: str,
        *,
        confidence: Literal["low", "medium", "high"] | None = None,
        rationale: str | None = None,
        spans: Sequence[Span | dict[str, Any]] = (),
        evidence: Sequence[str] = (),
        escalate: bool = False,
        now: datetime | None = None,
    ) -> Review:
        """Record ``reviewer``'s independent label for an assigned case; refused (every problem
        at once) when not assigned, already reviewed, or the label, spans or evidence are off."""
        where = f"{case_id} ({reviewer})"
        assignment = next((a for a in self._assigned(reviewer) if a.case_id == case_id), None)
        problems = Problems()
        self._who(case_id, reviewer, assignment, where, problems)
        if label not in self.rubric.labels:
            problems.add(
                where,
                "label_unknown",
                f"label {label!r} is not in the rubric",
                f"use one of {', '.join(self.rubric.labels)}",
            )
        cited = [s if isinstance(s, Span) else _span(s, where, problems) for s in spans]
        case = self.cases().get(case_id)
        if case is not None:
            _check_citations(case, [s for s in cited if s is not None], evidence, where, problems)
        problems.raise_if_any("the review was not recorded")
        assert assignment is not None
        review = Review(
            reviewer=reviewer,
            label=label,
            confidence=confidence,
            rationale=rationale or None,
            evidence=list(evidence),
            escalate=escalate,
            spans=[s for s in cited if s is not None],
            assigned_at=assignment.assigned_at,
            completed_at=_now(now),
            training_version=assignment.training_version,
            blinded=list(BLINDED),
        )
        with FileLock(str(self.dir / ".lock")):
            if any(r.case_id == case_id and r.review.reviewer == reviewer for r in self.reviews()):
                raise refusal(
                    "the review was not recorded",
                    where,
                    "already_reviewed",
                    "this reviewer already labelled the case",
                    "tell the adjudicator",
                )
            entry = QueuedReview(entry_id=f"{case_id}/{reviewer}", case_id=case_id, review=review)
            self._append("reviews.jsonl", QueuedReview, [entry])
        return review

    # -- adjudicating -----------------------------------------------------------------------
    def status(self) -> list[CaseStatus]:
        """Every queued case: assigned, in review, ready (reviews agree), disagreement,
        escalated or adjudicated."""
        assigned: dict[str, list[str]] = {}
        for a in self.assignments():
            assigned.setdefault(a.case_id, []).append(a.reviewer)
        labels: dict[str, dict[str, str]] = {}
        escalated = set()
        for r in self.reviews():
            labels.setdefault(r.case_id, {})[r.review.reviewer] = r.review.label
            if r.review.escalate:
                escalated.add(r.case_id)
        finished = self.gold_ids()
        out = []
        for case in self.cases().values():
            names, got = tuple(assigned.get(case.case_id, [])), labels.get(case.case_id, {})
            status: Status
            if case.case_id in finished:
                status = "adjudicated"
            elif not got:
                status = "assigned"
            elif len(got) < len(names):
                status = "in_review"
            elif case.case_id in escalated:
                status = "escalated"
            else:
                status = "ready" if len(set(got.values())) == 1 else "disagreement"
            out.append(CaseStatus(case.case_id, case.slice, status, names, got))
        return out

    def adjudicate(
        self, case_id: str, label: str, *, adjudicator: str, reason: str | None = None
    ) -> GoldCase:
        """Append the finished gold record of ``case_id``: every assigned review is in, the
        adjudicator is a listed reviewer who did not review the case."""
        return self._adjudicate([(case_id, label, reason)], adjudicator)[0]

    def adjudicate_agreements(self, adjudicator: str) -> list[GoldCase]:
        """Adjudicate every ``ready`` case (reviewers agree, nobody escalated) with the agreed
        label."""
        ready = [
            (s.case_id, next(iter(s.labels.values())), "Reviewers agree.")
            for s in self.status()
            if s.status == "ready" and adjudicator not in s.reviewers
        ]
        return self._adjudicate(ready, adjudicator) if ready else []

    def _adjudicate(
        self, decisions: Sequence[tuple[str, str, str | None]], adjudicator: str
    ) -> list[GoldCase]:
        problems = Problems()
        self._check_people([adjudicator], problems, "adjudicator")
        states = {s.case_id: s for s in self.status()}
        cases, reviews = self.cases(), self.reviews()
        out: list[GoldCase] = []
        for case_id, label, reason in decisions:
            state = states.get(case_id)
            if state is None or state.status in ("assigned", "in_review", "adjudicated"):
                why = "not queued" if state is None else state.status.replace("_", " ")
                problems.add(
                    case_id,
                    "not_ready",
                    f"case {case_id!r} is {why}",
                    "adjudicate once every assigned review is in",
                )
                continue
            if adjudicator in state.reviewers:
                problems.add(
                    case_id,
                    "adjudicator_reviewed",
                    f"{adjudicator} reviewed the case",
                    "another listed person adjudicates",
                )
            if label not in self.rubric.labels:
                problems.add(
                    case_id,
                    "label_unknown",
                    f"label {label!r} is not in the rubric",
                    f"use one of {', '.join(self.rubric.labels)}",
                )
            given = [r.review for r in reviews if r.case_id == case_id]
            decided = Adjudication(label=label, reason=reason, adjudicator=adjudicator)
            update = {"reviews": given, "adjudication": decided}
            out.append(cases[case_id].model_copy(update=update))
        problems.raise_if_any("nothing was adjudicated")
        with FileLock(str(self.dir / ".lock")):
            if set(self.gold_ids()) & {c.case_id for c in out}:
                raise refusal(
                    "nothing was adjudicated",
                    str(self.gold_path),
                    "not_ready",
                    "a case was adjudicated meanwhile",
                    "run the command again",
                )
            with AppendOnlyLog(self.gold_path) as log:
                log.append_many(c.model_dump(mode="json", exclude_none=True) for c in out)
        return out


def _check_citations(
    case: GoldCase, spans: Sequence[Span], evidence: Sequence[str], where: str, problems: Problems
) -> None:
    for span in spans:
        if not span.cited_in(case):
            problems.add(
                where,
                "span_mismatch",
                f"{span.field}[{span.start}:{span.end}] is not {span.text!r}",
                "select the text again",
            )
    for passage in evidence:
        if passage not in case.evidence:
            problems.add(
                where,
                "evidence_unknown",
                f"evidence {passage!r} is not cited by the case",
                f"cite one of {case.evidence}",
            )


def _span(raw: dict[str, Any], where: str, problems: Problems) -> Span | None:
    if raw.get("start") == -1 and raw.get("text"):
        problems.add(
            where,
            "span_mismatch",
            f"{raw['text']!r} is not in the case's {raw.get('field')}",
            "quote the text exactly as the case has it",
        )
        return None
    try:
        return Span.model_validate(raw)
    except ValidationError as exc:
        problems.add(
            where,
            "span_invalid",
            f"{raw!r}: {exc.errors()[0]['msg']}",
            "give a span as field:start:end with start < end",
        )
        return None


def parse_span(text: str, case: BlindedCase | GoldCase) -> dict[str, Any]:
    """``field:start:end`` (or ``field:"quoted text"``: the first occurrence) as a span record."""
    field, _, rest = text.partition(":")
    body = (
        getattr(case, field, None)
        if field in ("input", "response", "grading_notes", "reference")
        else None
    )
    if not isinstance(body, str):
        return {"field": field, "start": -1, "end": 0, "text": ""}
    if rest.startswith('"') and rest.endswith('"') and len(rest) > 1:
        quote = rest[1:-1]
        start = body.find(quote)
        return {"field": field, "start": start, "end": start + len(quote), "text": quote}
    start_text, _, end_text = rest.partition(":")
    try:
        start, end = int(start_text), int(end_text)
    except ValueError:
        return {"field": field, "start": -1, "end": 0, "text": ""}
    return {"field": field, "start": start, "end": end, "text": body[start:end]}


def counts(statuses: Iterable[CaseStatus]) -> dict[str, int]:
    """Cases per status."""
    return dict(Counter(s.status for s in statuses))


def reviewer_progress(annotations: Annotations) -> dict[str, tuple[int, int]]:
    """``(completed, assigned)`` per reviewer."""
    done = Counter(r.review.reviewer for r in annotations.reviews())
    assigned = Counter(a.reviewer for a in annotations.assignments())
    return {name: (done[name], n) for name, n in sorted(assigned.items())}
