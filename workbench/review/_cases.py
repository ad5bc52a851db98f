"""Everything a reviewer needs per joined case, in a table built for fast filtering.

:func:`review_cases` puts each case of a :class:`~workbench.align.Join` beside its gold
record (input, response, evidence, every human review, the adjudication) and the request the
judge actually received. It refuses the held-out partition: case-level held-out detail is
restricted to certification, and this table feeds development and calibration review.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..align import Join, lineage_problems
from ..errors import Problem, WorkbenchError
from ..gold import GoldDataset, Partition
from ..results import ResultLine

ERROR_CLASSES: tuple[str, ...] = (
    "false_pass",
    "false_fail",
    "disagreement",
    "error",
    "missing",
    "aligned",
)
"""Every error class of the join, disagreements first."""
DISAGREEMENT_CLASSES: tuple[str, ...] = ("false_pass", "false_fail", "disagreement", "error")
"""The classes a reviewer reads by default: wrong verdicts and evaluator errors."""

COLUMNS: tuple[str, ...] = (
    "case_id",
    "slice",
    "risk",
    "partition",
    "tags",
    "error_class",
    "outcome",
    "human_label",
    "judge_label",
    "judge_reason",
    "error_kind",
    "error_message",
    "input",
    "response",
    "grading_notes",
    "reference",
    "contexts",
    "reviews",
    "adjudication",
    "rendered_request",
    "rendered_request_ref",
    "rendered_request_sha256",
    "attempts",
    "reviewers_disagree",
    "gold_record",
)
"""Columns of :attr:`ReviewTable.frame`, in order."""

CODED_COLUMNS: tuple[str, ...] = ("slice", "risk", "partition", "error_class", "outcome")
"""Columns stored as pandas categoricals, with their integer codes precomputed."""

_REQUIRED = ("case_id", "slice", "error_class")
_LIST_COLUMNS = ("tags", "reviews")
_SEARCHED = ("case_id", "input", "response", "judge_reason", "error_message")
"""Text columns the search covers, besides every review rationale and the adjudication reason."""


def _held_out_refusal(case_ids: Sequence[str]) -> WorkbenchError:
    shown = ", ".join(case_ids[:5]) + (", ..." if len(case_ids) > 5 else "")
    return WorkbenchError(
        "refusing case-level review of held-out data",
        [
            Problem(
                location="review",
                code="held_out_refused",
                message=(
                    f"{len(case_ids)} held_out case(s) ({shown}): case-level held-out detail is"
                    " restricted to certification"
                ),
                fix="review development (or calibration) cases; join with partition='development'",
            )
        ],
    )


class ReviewTable:
    """One row per case for review: a pandas DataFrame plus precomputed filter codes.

    ``frame`` holds :data:`COLUMNS`; :data:`CODED_COLUMNS` are categoricals whose integer
    codes (``-1`` for a missing value) are in ``codes[column]`` and whose values are in
    ``categories[column]``. ``tag_rows`` maps each tag to the sorted row positions carrying
    it. A table never holds held-out cases: construction refuses them.
    """

    def __init__(
        self,
        frame: pd.DataFrame,
        *,
        judge_fingerprint: str | None = None,
        dataset_sha256: str | None = None,
        labels: Sequence[str] | None = None,
    ) -> None:
        missing = [c for c in _REQUIRED if c not in frame.columns]
        if missing:
            raise WorkbenchError(
                "not a review table",
                [
                    Problem(
                        location="review",
                        code="missing_column",
                        message=f"missing column(s): {', '.join(missing)}",
                        fix=(
                            "build the table with review_cases(...) or give every record case_id,"
                            " slice and error_class"
                        ),
                    )
                ],
            )
        frame = frame.reset_index(drop=True).copy()
        n = len(frame)
        for col in COLUMNS:
            if col not in frame.columns:
                frame[col] = [[] for _ in range(n)] if col in _LIST_COLUMNS else None
        if frame["case_id"].duplicated().any():
            dupes = frame.loc[frame["case_id"].duplicated(), "case_id"].astype(str).tolist()
            raise WorkbenchError(
                "duplicate cases",
                [
                    Problem(
                        location="review",
                        code="duplicate_case_id",
                        message=f"case_id(s) appear twice: {', '.join(dupes[:5])}",
                        fix="one row per case",
                    )
                ],
            )
        held = (
            frame.loc[frame["partition"].astype(object) == Partition.held_out.value, "case_id"]
            .astype(str)
            .tolist()
        )
        if held:
            raise _held_out_refusal(held)
        if frame["reviewers_disagree"].isna().any():
            computed = [_reviewers_disagree(r) for r in frame["reviews"]]
            frame["reviewers_disagree"] = [
                c if v is None or v != v else bool(v)
                for c, v in zip(computed, frame["reviewers_disagree"], strict=True)
            ]
        frame["reviewers_disagree"] = frame["reviewers_disagree"].astype(bool)
        extra = [c for c in frame.columns if c not in COLUMNS]
        frame = frame[list(COLUMNS) + extra]
        self.codes: dict[str, np.ndarray] = {}
        self.categories: dict[str, tuple[str, ...]] = {}
        for col in CODED_COLUMNS:
            cat = pd.Categorical(frame[col].astype(object))
            frame[col] = cat
            self.codes[col] = np.asarray(cat.codes)
            self.categories[col] = tuple(str(v) for v in cat.categories)
        rows: dict[str, list[int]] = {}
        for pos, tags in enumerate(frame["tags"]):
            for tag in _tag_list(tags):
                rows.setdefault(str(tag), []).append(pos)
        self.tag_rows: dict[str, np.ndarray] = {
            t: np.asarray(rows[t], dtype=np.int64) for t in sorted(rows)
        }
        self.frame: pd.DataFrame = frame
        self.judge_fingerprint = judge_fingerprint
        """Fingerprint of the judge whose verdicts the table holds (None if unknown)."""
        self.dataset_sha256 = dataset_sha256
        """Hash of the gold dataset the table was built from (None if unknown)."""
        self.labels: tuple[str, ...] = tuple(labels) if labels else _labels_seen(frame)
        """The label vocabulary (the rubric's when built by :func:`review_cases`)."""
        self.reviewers_disagree: np.ndarray = frame["reviewers_disagree"].to_numpy(dtype=bool)
        """Boolean per row: the human reviewers gave different labels."""
        self._haystack: list[str] | None = None

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]], **meta: Any) -> ReviewTable:
        """Build a table from row dicts (missing optional columns default to empty)."""
        rows = list(records)
        return cls(
            pd.DataFrame.from_records(rows) if rows else pd.DataFrame(columns=list(COLUMNS)), **meta
        )

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, **meta: Any) -> ReviewTable:
        """Build a table from a DataFrame with at least case_id, slice and error_class."""
        return cls(frame, **meta)

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def tags(self) -> tuple[str, ...]:
        """Every tag in the table, sorted."""
        return tuple(self.tag_rows)

    def value_mask(self, column: str, values: str | Iterable[str]) -> np.ndarray:
        """Boolean mask of rows whose coded ``column`` equals ``values`` (or is one of them)."""
        wanted = {values} if isinstance(values, str) else set(values)
        lookup = np.fromiter(
            (c in wanted for c in self.categories[column]),
            dtype=bool,
            count=len(self.categories[column]),
        )
        lookup = np.append(lookup, False)  # code -1 (missing) indexes this last slot
        mask: np.ndarray = lookup[self.codes[column]]
        return mask

    def tag_mask(self, tag: str) -> np.ndarray:
        """Boolean mask of rows carrying ``tag``."""
        mask = np.zeros(len(self), dtype=bool)
        rows = self.tag_rows.get(tag)
        if rows is not None:
            mask[rows] = True
        return mask

    def counts(self, column: str, positions: np.ndarray | None = None) -> dict[str, int]:
        """Rows per value of a coded column (over ``positions`` when given)."""
        codes = self.codes[column] if positions is None else self.codes[column][positions]
        counts = np.bincount(codes[codes >= 0], minlength=len(self.categories[column]))
        return {name: int(k) for name, k in zip(self.categories[column], counts, strict=True)}

    def search_mask(self, terms: Sequence[str], within: np.ndarray | None = None) -> np.ndarray:
        """Rows whose searchable text contains every term (case-insensitive substrings).

        The text is the case id, input, response, judge reason, evaluator error message, every
        review rationale and the adjudication reason. ``within`` (a boolean mask) limits the
        scan: rows outside it are False.
        """
        hay = self._searchable()
        hits: list[int] = (
            list(range(len(hay))) if within is None else np.flatnonzero(within).tolist()
        )
        for term in (t.casefold() for t in terms if t):
            hits = [i for i in hits if term in hay[i]]
        mask = np.zeros(len(hay), dtype=bool)
        mask[hits] = True
        return mask

    def _searchable(self) -> list[str]:
        if self._haystack is None:
            columns = [self.frame[c].tolist() for c in _SEARCHED]
            reviews = self.frame["reviews"].tolist()
            adjudications = self.frame["adjudication"].tolist()
            hay = []
            for i in range(len(self.frame)):
                parts = [str(col[i]) for col in columns if isinstance(col[i], str)]
                for review in _tag_list(reviews[i]):
                    if isinstance(review, Mapping) and isinstance(review.get("rationale"), str):
                        parts.append(review["rationale"])
                adj = adjudications[i]
                if isinstance(adj, Mapping) and isinstance(adj.get("reason"), str):
                    parts.append(adj["reason"])
                hay.append("\n".join(parts).casefold())
            self._haystack = hay
        return self._haystack

    def row(self, position: int) -> dict[str, Any]:
        """One case as a plain dict (missing values are ``None``)."""
        out: dict[str, Any] = {}
        for col, value in self.frame.iloc[position].items():
            if isinstance(value, np.generic):
                value = value.item()
            out[str(col)] = None if _is_missing(value) else value
        return out


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def _reviewers_disagree(reviews: Any) -> bool:
    labels = {r.get("label") for r in _tag_list(reviews) if isinstance(r, Mapping)}
    return len(labels) > 1


def _labels_seen(frame: pd.DataFrame) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for col in ("human_label", "judge_label"):
        for value in frame[col].tolist():
            if isinstance(value, str):
                seen.setdefault(value)
    return tuple(sorted(seen))


def _tag_list(tags: Any) -> list[Any]:
    if isinstance(tags, str):
        return [tags]
    if isinstance(tags, list | tuple | set | frozenset | np.ndarray):
        return list(tags)
    return []


def review_cases(dataset: GoldDataset, join: Join, results: Sequence[ResultLine]) -> ReviewTable:
    """One review row per joined case (every outcome), refusing held-out cases.

    ``results`` are the result lines the join was built from; each case's counted attempt is
    found by the join's ``result_line`` and supplies the evaluator-visible request.
    Raises :class:`WorkbenchError` (``held_out_refused``) when any joined case is held out,
    (``lineage_unchecked``, ``gold_changed``) when the join's lineage was not checked or does
    not hold (a mismatch accepted with ``allow_gold_change`` is reviewable), and
    (``result_line_mismatch``) when a counted line is absent or belongs to another case.
    """
    held = [c.case_id for c in join.cases if c.partition == Partition.held_out.value]
    if held:
        raise _held_out_refusal(held)
    if dataset.sha256 != join.dataset.sha256:
        raise WorkbenchError(
            "dataset mismatch",
            [
                Problem(
                    location="review",
                    code="different_datasets",
                    message="the join was built on another dataset",
                    fix="pass the dataset the join was built from",
                )
            ],
        )
    refused = lineage_problems(join, where="review", allow_forced=True)
    if refused:
        raise WorkbenchError(
            "refusing to review results against gold they were not produced against", refused
        )
    by_line = {r.line: r for r in results}
    problems: list[Problem] = []
    records: list[dict[str, Any]] = []
    rubric = dataset.rubric
    for jc in join.cases:
        gold = dataset.cases[jc.case_id]
        request = request_ref = request_sha = None
        if jc.result_line is not None:
            line = by_line.get(jc.result_line)
            if line is None or line.result.case_id != jc.case_id:
                problems.append(
                    Problem(
                        location=f"results:{jc.result_line}",
                        case_id=jc.case_id,
                        code="result_line_mismatch",
                        message=(
                            "the counted attempt is not among the given results"
                            if line is None
                            else f"the counted line holds case {line.result.case_id!r}"
                        ),
                        fix="pass the same result lines the join was built from",
                    )
                )
            else:
                request, request_ref = (
                    line.result.rendered_request,
                    line.result.rendered_request_ref,
                )
                request_sha = line.result.rendered_request_sha256
        records.append(
            {
                "case_id": jc.case_id,
                "slice": jc.slice,
                "risk": rubric.risk_of(jc.slice),
                "partition": jc.partition,
                "tags": list(jc.tags),
                "error_class": jc.error_class,
                "outcome": jc.outcome,
                "human_label": jc.human_label,
                "judge_label": jc.judge_label,
                "judge_reason": jc.reason if jc.outcome == "verdict" else None,
                "error_kind": jc.error_kind,
                "error_message": jc.reason if jc.outcome == "error" else None,
                "input": gold.input,
                "response": gold.response,
                "grading_notes": gold.grading_notes,
                "reference": gold.reference,
                "contexts": list(gold.contexts) if gold.contexts is not None else None,
                "reviews": [r.model_dump(mode="json") for r in gold.reviews],
                "adjudication": (
                    gold.adjudication.model_dump(mode="json") if gold.adjudication else None
                ),
                "rendered_request": request,
                "rendered_request_ref": request_ref,
                "rendered_request_sha256": request_sha,
                "attempts": jc.attempts,
                "reviewers_disagree": gold.reviewers_disagree,
                "gold_record": gold.model_dump(mode="json"),
            }
        )
    if problems:
        raise WorkbenchError(
            f"refusing to build the review table: {len(problems)} problem(s)", problems
        )
    frame = pd.DataFrame.from_records(records, columns=list(COLUMNS))
    return ReviewTable(
        frame,
        judge_fingerprint=join.judge_fingerprint,
        dataset_sha256=dataset.sha256,
        labels=rubric.labels,
    )
