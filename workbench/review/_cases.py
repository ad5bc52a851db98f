"""Everything a reviewer needs per joined case, in a table built for fast filtering.

Filters and search read columns; the heavy parts of a case (:data:`DEFERRED`) are read when
it is shown. Held-out cases are refused: their case-level detail is restricted to certification.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..align import read_evidence
from ..errors import WorkbenchError, refusal
from ..gold import Partition, record_json
from ..results import ResultLines

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
    "raw_response",
    "raw_response_source",
    "evidence_seen",
    "attempts",
    "reviewers_disagree",
    "gold_record",
)
"""Columns of :attr:`ReviewTable.frame`, in order."""

DEFERRED: tuple[str, ...] = (
    "input",
    "response",
    "grading_notes",
    "reference",
    "contexts",
    "reviews",
    "adjudication",
    "gold_record",
    "rendered_request",
    "rendered_request_ref",
    "rendered_request_sha256",
    "raw_response",
    "raw_response_source",
    "evidence_seen",
)
"""Columns :meth:`ReviewTable.row` reads per case (empty in a :func:`review_table`'s frame)."""

CODED_COLUMNS: tuple[str, ...] = ("slice", "risk", "partition", "error_class", "outcome")

_REQUIRED = ("case_id", "slice", "error_class")
_LIST_COLUMNS = ("tags", "reviews")
_SEARCHED = ("case_id", "input", "response", "judge_reason", "error_message")


def _held_out_refusal(case_ids: Sequence[str]) -> WorkbenchError:
    shown = ", ".join(case_ids[:5]) + (", ..." if len(case_ids) > 5 else "")
    return _refusal(
        "refusing case-level review of held-out data",
        "held_out_refused",
        f"{len(case_ids)} held_out case(s) ({shown}): case-level held-out detail is restricted to"
        " certification",
        "review development (or calibration) cases; join with partition='development'",
    )


class ReviewTable:
    """One row per case (``frame``: :data:`COLUMNS`) plus filter codes (``codes``, ``categories``,
    ``tag_rows``); refuses held-out cases. ``details`` and ``search_text`` read what ``frame``
    defers (else ``frame`` holds it)."""

    def __init__(
        self,
        frame: pd.DataFrame,
        *,
        judge_fingerprint: str | None = None,
        dataset_sha256: str | None = None,
        labels: Sequence[str] | None = None,
        details: Callable[[int], dict[str, Any]] | None = None,
        search_text: Callable[[], Sequence[str]] | None = None,
    ) -> None:
        frame = _checked(frame)
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
        self.dataset_sha256 = dataset_sha256
        self.labels: tuple[str, ...] = tuple(labels) if labels else _labels_seen(frame)
        self.reviewers_disagree: np.ndarray = frame["reviewers_disagree"].to_numpy(dtype=bool)
        self._details = details
        self._search_text = search_text
        self._haystack: list[str] | None = None

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]], **meta: Any) -> ReviewTable:
        """Build a table from row dicts (missing optional columns default to empty)."""
        rows = list(records)
        return cls(
            pd.DataFrame.from_records(rows) if rows else pd.DataFrame(columns=COLUMNS), **meta
        )

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def tags(self) -> tuple[str, ...]:
        """Every tag in the table, sorted."""
        return tuple(self.tag_rows)

    def value_mask(self, column: str, values: str | Iterable[str]) -> np.ndarray:
        """Boolean mask of rows whose coded ``column`` equals ``values`` (or is one of them)."""
        wanted = {values} if isinstance(values, str) else set(values)
        # the last slot is False: code -1 (missing) indexes it
        lookup = np.array([c in wanted for c in self.categories[column]] + [False], dtype=bool)
        mask: np.ndarray = lookup[self.codes[column]]
        return mask

    def tag_mask(self, tag: str) -> np.ndarray:
        """Boolean mask of rows carrying ``tag``."""
        mask = np.zeros(len(self), dtype=bool)
        mask[self.tag_rows.get(tag, np.empty(0, dtype=np.int64))] = True
        return mask

    def counts(self, column: str, positions: np.ndarray | None = None) -> dict[str, int]:
        """Rows per value of a coded column (over ``positions`` when given)."""
        codes = self.codes[column] if positions is None else self.codes[column][positions]
        counts = np.bincount(codes[codes >= 0], minlength=len(self.categories[column]))
        return {name: int(k) for name, k in zip(self.categories[column], counts, strict=True)}

    def search_mask(self, terms: Sequence[str], within: np.ndarray | None = None) -> np.ndarray:
        """Rows whose text (:data:`_SEARCHED`, review rationales, adjudication reason) contains
        every term, case-insensitively; ``within`` (a boolean mask) limits the scan."""
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
            notes = self._search_text() if self._search_text else _review_texts(self.frame)
            hay = []
            for i, note in enumerate(notes):
                parts = [str(col[i]) for col in columns if isinstance(col[i], str)]
                hay.append("\n".join([*parts, note]).casefold())
            self._haystack = hay
        return self._haystack

    def row(self, position: int) -> dict[str, Any]:
        """One case as a plain dict (missing values are ``None``)."""
        out: dict[str, Any] = {}
        for col, value in self.frame.iloc[position].items():
            if isinstance(value, np.generic):
                value = value.item()
            missing = value is None or (isinstance(value, float) and value != value)
            out[str(col)] = None if missing else value
        if self._details is not None:
            out.update(self._details(position))
        return out


def _checked(frame: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in _REQUIRED if c not in frame.columns]
    if missing:
        message = f"missing column(s): {', '.join(missing)}"
        fix = "build the table with review_table(...) or give every record case_id, slice and"
        fix += " error_class"
        raise _refusal("not a review table", "missing_column", message, fix)
    frame = frame.reset_index(drop=True).copy()
    for col in COLUMNS:
        if col not in frame.columns:
            frame[col] = [[] for _ in range(len(frame))] if col in _LIST_COLUMNS else None
    if frame["case_id"].duplicated().any():
        dupes = frame.loc[frame["case_id"].duplicated(), "case_id"].astype(str).tolist()
        message = f"case_id(s) appear twice: {', '.join(dupes[:5])}"
        raise _refusal("duplicate cases", "duplicate_case_id", message, "one row per case")
    held = frame.loc[frame["partition"].astype(object) == Partition.held_out.value, "case_id"]
    if len(held):
        raise _held_out_refusal(held.astype(str).tolist())
    if frame["reviewers_disagree"].isna().any():
        computed = [
            len({r.get("label") for r in _tag_list(reviews) if isinstance(r, Mapping)}) > 1
            for reviews in frame["reviews"]
        ]
        frame["reviewers_disagree"] = [
            c if v is None or v != v else bool(v)
            for c, v in zip(computed, frame["reviewers_disagree"], strict=True)
        ]
    frame["reviewers_disagree"] = frame["reviewers_disagree"].astype(bool)
    extra = [c for c in frame.columns if c not in COLUMNS]
    return frame[list(COLUMNS) + extra]


def _refusal(summary: str, code: str, message: str, fix: str) -> WorkbenchError:
    return refusal(summary, "review", code, message, fix)


def _review_texts(frame: pd.DataFrame) -> list[str]:
    out = []
    for reviews, adj in zip(frame["reviews"].tolist(), frame["adjudication"].tolist(), strict=True):
        parts = [
            r["rationale"]
            for r in _tag_list(reviews)
            if isinstance(r, Mapping) and isinstance(r.get("rationale"), str)
        ]
        if isinstance(adj, Mapping) and isinstance(adj.get("reason"), str):
            parts.append(adj["reason"])
        out.append("\n".join(parts))
    return out


def _labels_seen(frame: pd.DataFrame) -> tuple[str, ...]:
    labels = [*frame["human_label"].tolist(), *frame["judge_label"].tolist()]
    return tuple(sorted({value for value in labels if isinstance(value, str)}))


def _tag_list(tags: Any) -> list[Any]:
    if isinstance(tags, str):
        return [tags]
    if isinstance(tags, list | tuple | set | frozenset | np.ndarray):
        return list(tags)
    return []


def review_table(
    gold: str | Path,
    results: str | Path,
    *,
    partition: str | None = "development",
    repeat: int = 0,
    allow_gold_change: bool = False,
) -> ReviewTable:
    """One review row per case in scope (every outcome), from
    :func:`~workbench.align.read_evidence` (refused, with every problem, when the results were
    not produced against this gold, unless ``allow_gold_change``). Raises
    :class:`WorkbenchError` (``held_out_refused``) when any case in scope is held out."""
    import pyarrow.compute as pc

    evidence = read_evidence(
        gold, results, partition=partition, repeat=repeat, allow_gold_change=allow_gold_change
    )
    cases = evidence.cases
    held = cases.filter(pc.equal(cases["partition"], Partition.held_out.value))
    if held.num_rows:
        raise _held_out_refusal(held["case_id"].to_pylist())
    index = evidence.index.table
    rows = cases["row"]
    rubric = evidence.index.rubric
    outcome = cases["outcome"]
    columns: dict[str, Any] = {
        name: cases[name].to_pylist()
        for name in ("case_id", "slice", "partition", "error_class", "outcome", "human_label")
    }
    columns |= {
        "tags": index["tags"].take(rows).to_pylist(),
        "risk": [rubric.risk_of(name) for name in columns["slice"]],
        "judge_label": cases["judge_label"].to_pylist(),
        "judge_reason": pc.if_else(pc.equal(outcome, "verdict"), cases["reason"], None).to_pylist(),
        "error_kind": cases["error_kind"].to_pylist(),
        "error_message": pc.if_else(pc.equal(outcome, "error"), cases["reason"], None).to_pylist(),
        "attempts": cases["attempts"].to_pylist(),
        "reviewers_disagree": [
            len(set(x)) > 1 for x in index["review_labels"].take(rows).to_pylist()
        ],
    }
    frame = pd.DataFrame({name: columns.get(name) for name in COLUMNS})
    return ReviewTable(
        frame,
        judge_fingerprint=evidence.report.judge_fingerprint,
        dataset_sha256=evidence.index.sha256,
        labels=rubric.labels,
        details=_Details(index["record"], cases, ResultLines(results)),
        search_text=lambda: index["search_text"].take(rows).to_pylist(),
    )


_RECORD_COLUMNS = ("input", "response", "grading_notes", "reference", "contexts")


class _Details:
    """The :data:`DEFERRED` columns of one row: its gold record and its attempt's request."""

    def __init__(self, records: Any, cases: Any, lines: ResultLines) -> None:
        self.records = records
        self.where = cases.select(["row", "case_id", "shard", "line"])
        self.lines = lines

    def __call__(self, position: int) -> dict[str, Any]:
        row, case_id, shard, line = (
            self.where[c][position].as_py() for c in self.where.column_names
        )
        record = record_json(self.records[row].as_py())  # every field, as validated
        result = self.lines.result(shard, line, case_id) if line is not None else None
        return {
            **{name: record[name] for name in _RECORD_COLUMNS},
            "reviews": record["reviews"],
            "adjudication": record["adjudication"],
            "gold_record": record,
            **{name: getattr(result, name, None) for name in DEFERRED[-6:]},
        }
