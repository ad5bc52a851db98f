"""From source rows to gold cases: case keys, groups, partitions, reviews, labels and
adjudication."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import ValidationError

from ..._io import JSONRecordError, loads_json
from ..._load import validation_problems
from ...errors import Problem, WorkbenchError
from ...gold import PARTITIONS, Adjudication, GoldCase, Partition, Review, Risk, Rubric
from ...gold._rubric import UNSET_RISK
from ._mapping import RULE_TEXT, TableMapping, canonical
from ._source import SourceTable

CONFIDENCES = ("low", "medium", "high")


def assign_partition(group: str, seed: int, fractions: dict[str, float]) -> Partition:
    """The partition of ``group`` under ``seed`` and ``fractions`` (development, calibration,
    held_out).

    The group's position in [0, 1) is the first 60 bits of sha256(seed, group): it depends on
    nothing but the seed and the group's own name, so adding, removing or reordering other
    rows never moves a group. Position below ``development`` -> development, below
    ``development + calibration`` -> calibration, otherwise held_out; a partition with share 0
    never receives a group.
    """
    digest = hashlib.sha256(f"workbench-partition\x1f{seed}\x1f{group}".encode()).hexdigest()
    position = int(digest[:15], 16) / float(16**15)
    names = [name for name in PARTITIONS if fractions.get(name, 0) > 0]
    upper = 0.0
    for name in names[:-1]:
        upper += fractions[name]
        if position < upper:
            return Partition(name)
    return Partition(names[-1])


def input_group(text: str) -> str:
    """The group of an input under ``group: {hash_of: input}``: same text up to case and
    whitespace."""
    return "g-" + hashlib.sha256(" ".join(text.lower().split()).encode("utf-8")).hexdigest()[:16]


def generated_case_id(input_text: str, response: str) -> str:
    """``case-`` + 16 hex digits of sha256(input, response): stable across runs and row order."""
    return "case-" + hashlib.sha256(f"{input_text}\x1f{response}".encode()).hexdigest()[:16]


@dataclass
class Issues:
    """Problems in source rows, one per (code, message, fix), listing the rows that have it."""

    table: SourceTable
    items: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)
    extra: list[Problem] = field(default_factory=list)

    def add(self, code: str, message: str, fix: str, row: int | list[int]) -> None:
        rows = row if isinstance(row, list) else [row]
        self.items.setdefault((code, message, fix), []).extend(rows)

    def problems(self) -> list[Problem]:
        out = list(self.extra)
        for (code, message, fix), rows in self.items.items():
            rows = sorted(set(rows))
            out.append(
                Problem(
                    location=self.table.where(rows[0]),
                    code=code,
                    message=f"{message} ({self.table.describe(rows)})",
                    fix=fix,
                )
            )
        return out

    def __bool__(self) -> bool:
        return bool(self.items or self.extra)


@dataclass
class RowReview:
    reviewer: str
    label: str  # canonical source value
    rationale: str | None
    confidence: str | None
    row: int


@dataclass
class Row:
    index: int
    key: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    """Case-level values that every row of a case must agree on."""
    tags: list[str] = field(default_factory=list)
    reviews: list[RowReview] = field(default_factory=list)
    adjudicated: str | None = None
    adjudicator: str | None = None
    adjudication_reason: str | None = None


@dataclass
class Pending:
    """A case the adjudication could not settle: it needs a person."""

    case_id: str
    partition: str
    slice: str
    reviews: list[tuple[str, str]]
    rows: str
    why: str


@dataclass
class Built:
    cases: list[GoldCase]
    pending: list[Pending]
    rubric: dict[str, Any]
    """The drafted rubric (risk ``unset`` on slices nobody has rated yet)."""
    slice_counts: dict[str, int]
    settled: dict[str, int]
    """How the gold labels were decided: ``column``, ``rule`` and ``pending`` counts."""
    notes: list[str]


class _Reader:
    """Cell access with the problem bookkeeping every column shares."""

    def __init__(self, table: SourceTable, issues: Issues) -> None:
        self.table = table
        self.issues = issues

    def raw(self, i: int, column: str) -> Any:
        return self.table.rows[i].get(column)

    def text(self, i: int, column: str, *, required: bool = False, what: str = "") -> str | None:
        value = self.raw(i, column)
        if value is None or (isinstance(value, str) and not value.strip()):
            if required:
                self.issues.add(
                    "value_missing",
                    f"column {column!r} ({what}) is empty",
                    f"fill in {what} on every row, or drop those rows from the source",
                    i,
                )
            return None
        if isinstance(value, str):
            return value
        if isinstance(value, bool | int | float):
            return canonical(value)
        self.issues.add(
            "value_not_text",
            f"column {column!r} ({what}) holds a {type(value).__name__}, not text",
            f"give {what} as text",
            i,
        )
        return None

    def key(self, i: int, column: str, *, what: str) -> str | None:
        value = self.raw(i, column)
        if value is None or (isinstance(value, str) and not value.strip()):
            self.issues.add(
                "value_missing",
                f"column {column!r} ({what}) is empty",
                f"fill in {what} on every row",
                i,
            )
            return None
        if isinstance(value, list | dict):
            self.issues.add(
                "value_not_text",
                f"column {column!r} ({what}) holds a {type(value).__name__}",
                f"give {what} as text or a number",
                i,
            )
            return None
        return canonical(value)


def build_cases(table: SourceTable, mapping: TableMapping, *, at: Any) -> Built:
    """Turn the rows into gold cases and a drafted rubric; raise listing every problem found."""
    issues = Issues(table)
    reader = _Reader(table, issues)
    rows = [_read_row(reader, mapping, i) for i in range(len(table.rows))]

    # Cases: rows that share a key (long form) or one row each (wide form).
    by_key: dict[str, list[Row]] = {}
    for row in rows:
        if row.key is not None:
            by_key.setdefault(row.key, []).append(row)
    cases: dict[str, _Case] = {}
    for key, members in by_key.items():
        if mapping.reviews.form == "wide" and len(members) > 1:
            how = (
                f"case id column {mapping.case_id.column!r}"
                if mapping.case_id
                else "the same input and response"
            )
            issues.add(
                "duplicate_case",
                f"case {key!r} appears on several rows ({how}); in wide form each case is one row",
                "keep one row per case, or add a case id column that tells them apart",
                [r.index for r in members],
            )
            continue
        cases[key] = _merge(key, members, issues, mapping)

    _check_labels(cases, mapping, issues, table)
    _check_reviews(cases, issues, mapping)
    _assign(cases, mapping, issues, table)
    if issues:
        problems = issues.problems()
        raise WorkbenchError(
            f"{table.location}: {len(problems)} problem(s) in the source rows", problems
        )

    rubric, rubric_problems, notes = _draft_rubric(cases, mapping, at)
    if rubric_problems:
        raise WorkbenchError(
            f"{at('rubric')}: the drafted rubric is not valid ({len(rubric_problems)} problem(s))",
            rubric_problems,
        )
    return _finish(cases, mapping, rubric, table, notes)


def _read_row(reader: _Reader, m: TableMapping, i: int) -> Row:
    row = Row(index=i)
    f = row.fields
    f["input"] = reader.text(i, m.input.column, required=True, what="the input")
    f["response"] = reader.text(i, m.response.column, required=True, what="the response")
    for name in ("reference", "grading_notes"):
        spec = getattr(m, name)
        if spec is None:
            f[name] = None
        elif spec.value is not None:
            f[name] = spec.value
        else:
            f[name] = reader.text(i, spec.column, what=name.replace("_", " "))
    if (
        (m.reference is not None or m.grading_notes is not None)
        and f["reference"] is None
        and f["grading_notes"] is None
        and f["input"] is not None
    ):
        cols = [
            getattr(m, n).column
            for n in ("reference", "grading_notes")
            if getattr(m, n) is not None and getattr(m, n).column
        ]
        reader.issues.add(
            "grading_evidence_missing",
            "the row has neither grading notes nor a reference (columns"
            f" {', '.join(map(repr, cols))} are empty)",
            "fill in the grading notes or the reference, or give grading_notes: {value: ...} in the"
            " mapping",
            i,
        )
    f["contexts"] = _contexts(reader, m, i) if m.contexts is not None else None
    f["slice"] = (
        m.slice.value
        if m.slice.value is not None
        else reader.key(i, m.slice.column or "", what="the slice")
    )
    if m.group.column is not None:
        f["group"] = reader.key(i, m.group.column, what="the group")
    else:
        f["group"] = input_group(f["input"]) if f["input"] is not None else None
    if m.partition.column is not None:
        value = reader.key(i, m.partition.column, what="the partition")
        if value is not None:
            if m.partition.values is not None:
                part = m.partition.values.get(value)
            else:
                part = Partition(value) if value in PARTITIONS else None
            if part is None:
                allowed = (
                    ", ".join(m.partition.values) if m.partition.values else ", ".join(PARTITIONS)
                )
                reader.issues.add(
                    "partition_value_unknown",
                    f"partition value {value!r} in column {m.partition.column!r} is not one of"
                    f" {allowed}",
                    "map it under partition: {column: ..., values: {<value>: development |"
                    " calibration | held_out}}, or correct the rows",
                    i,
                )
            f["partition"] = part.value if part is not None else None
        else:
            f["partition"] = None
    meta: dict[str, Any] = {}
    for column in m.metadata:
        value = reader.raw(i, column)
        if value is not None:
            meta[column] = value
    f["metadata"] = json.dumps(meta, sort_keys=True, ensure_ascii=False, default=str)
    for column in m.tags:
        value = reader.raw(i, column)
        if value is None:
            continue
        items = (
            value
            if isinstance(value, list)
            else str(value).split(m.tag_separator)
            if isinstance(value, str)
            else [canonical(value)]
        )
        row.tags += [canonical(t) for t in items if t is not None and canonical(t)]
    row.reviews = _reviews(reader, m, i)
    adj = m.adjudication
    if adj.column is not None:
        value = reader.raw(i, adj.column)
        if value is not None and not (isinstance(value, str) and not value.strip()):
            row.adjudicated = canonical(value)
        if adj.adjudicator is not None:
            row.adjudicator = (
                adj.adjudicator.value
                if adj.adjudicator.value is not None
                else reader.text(i, adj.adjudicator.column or "", what="the adjudicator")
            )
        if adj.reason is not None:
            row.adjudication_reason = reader.text(i, adj.reason, what="the adjudication reason")
    if m.case_id is not None:
        row.key = reader.key(i, m.case_id.column, what="the case id")
    elif f["input"] is not None and f["response"] is not None:
        row.key = generated_case_id(f["input"], f["response"])
    return row


def _contexts(reader: _Reader, m: TableMapping, i: int) -> list[str] | None:
    spec = m.contexts
    assert spec is not None
    value = reader.raw(i, spec.column)
    if value is None:
        return None
    if isinstance(value, str) and spec.json_list:
        try:
            value = loads_json(value)  # strict: duplicate keys, NaN/Infinity, too deep refused
        except JSONRecordError as exc:
            reader.issues.add(
                "contexts_invalid",
                f"column {spec.column!r} is not a JSON list ({exc.msg})",
                "write the passages as a JSON list of strings, or use separator: instead of"
                " json_list",
                i,
            )
            return None
    if isinstance(value, str):
        parts = value.split(spec.separator) if spec.separator else [value]
        passages = [p.strip() for p in parts if p.strip()]
        return passages or None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        passages = [v for v in value if v.strip()]
        return passages or None
    reader.issues.add(
        "contexts_invalid",
        f"column {spec.column!r} holds a {type(value).__name__}, not passages",
        "give the passages as a list of strings or as text",
        i,
    )
    return None


def _reviews(reader: _Reader, m: TableMapping, i: int) -> list[RowReview]:
    spec = m.reviews
    out: list[RowReview] = []

    def one(
        reviewer: str | None,
        label_col: str,
        rationale_col: str | None,
        confidence_col: str | None,
        *,
        required: bool,
    ) -> None:
        label = reader.raw(i, label_col)
        if label is None or (isinstance(label, str) and not label.strip()):
            if required:
                reader.issues.add(
                    "value_missing",
                    f"column {label_col!r} (the review label) is empty",
                    "fill in the label on every review row, or drop the rows without one",
                    i,
                )
            elif reviewer is not None and spec.pairs is not None:
                reader.issues.add(
                    "review_incomplete",
                    f"reviewer column names {reviewer!r} but label column {label_col!r} is empty",
                    "give the label, or clear the reviewer cell",
                    i,
                )
            return
        if isinstance(label, list | dict):
            reader.issues.add(
                "value_not_text",
                f"column {label_col!r} (the review label) holds a {type(label).__name__}",
                "give one label per cell",
                i,
            )
            return
        if reviewer is None:
            return
        confidence = (
            reader.text(i, confidence_col, what="the confidence") if confidence_col else None
        )
        out.append(
            RowReview(
                reviewer=reviewer,
                label=canonical(label),
                rationale=(
                    reader.text(i, rationale_col, what="the rationale") if rationale_col else None
                ),
                confidence=confidence.strip().lower() if confidence else None,
                row=i,
            )
        )

    if spec.form == "long":
        assert spec.reviewer is not None and spec.label is not None
        reviewer = reader.key(i, spec.reviewer, what="the reviewer")
        one(reviewer, spec.label, spec.rationale, spec.confidence, required=True)
    elif spec.columns is not None:
        for name, cols in spec.columns.items():
            one(name, cols.label, cols.rationale, cols.confidence, required=False)
    else:
        for pair in spec.pairs or []:
            value = reader.raw(i, pair.reviewer)
            reviewer = (
                None
                if value is None or (isinstance(value, str) and not value.strip())
                else canonical(value)
            )
            label = reader.raw(i, pair.label)
            if (
                reviewer is None
                and label is not None
                and not (isinstance(label, str) and not label.strip())
            ):
                reader.issues.add(
                    "review_incomplete",
                    f"label column {pair.label!r} is filled but reviewer column {pair.reviewer!r}"
                    " is empty",
                    "name the reviewer, or clear the label",
                    i,
                )
                continue
            one(reviewer, pair.label, pair.rationale, pair.confidence, required=False)
    return out


@dataclass
class _Case:
    case_id: str
    rows: list[int]
    fields: dict[str, Any]
    tags: list[str]
    reviews: list[RowReview]
    adjudicated: str | None
    adjudicator: str | None
    adjudication_reason: str | None
    partition: str | None = None


_FIELD_NAMES = {
    "input": "input",
    "response": "response",
    "reference": "reference",
    "grading_notes": "grading notes",
    "contexts": "contexts",
    "slice": "slice",
    "group": "group",
    "partition": "partition",
    "metadata": "metadata columns",
}


def _merge(key: str, members: list[Row], issues: Issues, m: TableMapping) -> _Case:
    first = members[0]
    for name, label in _FIELD_NAMES.items():
        values = {json.dumps(r.fields.get(name), sort_keys=True) for r in members}
        if len(values) > 1:
            issues.add(
                "case_rows_conflict",
                f"case {key!r}: its rows give different {label}",
                "every row of a case must carry the same case-level values; correct the rows, or"
                " give the cases different ids",
                [r.index for r in members],
            )
    adjudicated = {r.adjudicated for r in members if r.adjudicated is not None}
    if len(adjudicated) > 1:
        issues.add(
            "case_rows_conflict",
            f"case {key!r}: its rows give different adjudicated labels"
            f" ({', '.join(sorted(adjudicated))})",
            "give the adjudicated label once per case, or the same on every row",
            [r.index for r in members],
        )
    tags: list[str] = []
    for r in members:
        tags += [t for t in r.tags if t not in tags]
    return _Case(
        case_id=key,
        rows=[r.index for r in members],
        fields=dict(first.fields),
        tags=tags,
        reviews=[rv for r in members for rv in r.reviews],
        adjudicated=next(iter(adjudicated)) if len(adjudicated) == 1 else None,
        adjudicator=next((r.adjudicator for r in members if r.adjudicator), None),
        adjudication_reason=next(
            (r.adjudication_reason for r in members if r.adjudication_reason), None
        ),
    )


def _check_labels(
    cases: dict[str, _Case], m: TableMapping, issues: Issues, table: SourceTable
) -> None:
    unmapped: dict[str, list[int]] = {}
    bad_confidence: dict[str, list[int]] = {}
    adj_col = m.adjudication.column
    for case in cases.values():
        for review in case.reviews:
            if m.labels is not None and review.label not in m.labels:
                unmapped.setdefault(review.label, []).append(review.row)
            if review.confidence is not None and review.confidence not in CONFIDENCES:
                bad_confidence.setdefault(review.confidence, []).append(review.row)
        if (
            case.adjudicated is not None
            and m.labels is not None
            and case.adjudicated not in m.labels
        ):
            unmapped.setdefault(case.adjudicated, []).extend(case.rows)
    label_cols = _label_columns(m)
    for value, rows in unmapped.items():
        issues.add(
            "label_unmapped",
            f"label value {value!r} (in {', '.join(label_cols + ([adj_col] if adj_col else []))})"
            f" has no entry in the mapping's labels ({', '.join(map(repr, m.labels or {}))})",
            f"add {value!r}: <rubric label> under labels: in the mapping, or correct those rows",
            rows,
        )
    for value, rows in bad_confidence.items():
        issues.add(
            "confidence_invalid",
            f"confidence {value!r} is not low, medium or high",
            "write low, medium or high in the confidence column, or drop confidence from the"
            " mapping",
            rows,
        )


def _label_columns(m: TableMapping) -> list[str]:
    r = m.reviews
    if r.form == "long":
        return [r.label or ""]
    if r.columns is not None:
        return [c.label for c in r.columns.values()]
    return [p.label for p in r.pairs or []]


def _check_reviews(cases: dict[str, _Case], issues: Issues, m: TableMapping) -> None:
    for case in cases.values():
        if not case.reviews:
            issues.add(
                "no_reviews",
                f"case {case.case_id!r} has no review",
                "every case needs at least one review: fill in a label column, or drop the rows",
                case.rows,
            )
            continue
        counts = Counter(r.reviewer for r in case.reviews)
        for reviewer, n in counts.items():
            if n > 1:
                issues.add(
                    "duplicate_reviewer",
                    f"case {case.case_id!r}: reviewer {reviewer!r} reviews it {n} times",
                    "keep one review per reviewer and case (record a changed mind in the"
                    " adjudication)",
                    [r.row for r in case.reviews if r.reviewer == reviewer],
                )
        need = m.rubric.min_reviews
        if need is not None and len(case.reviews) < need:
            issues.add(
                "too_few_reviews",
                f"case {case.case_id!r} has {len(case.reviews)} review(s); the mapping's"
                f" rubric.min_reviews is {need}",
                "collect more reviews, drop the case, or lower rubric.min_reviews",
                case.rows,
            )


def _assign(cases: dict[str, _Case], m: TableMapping, issues: Issues, table: SourceTable) -> None:
    if m.partition.assign is not None:
        seed, fractions = m.partition.assign.seed, m.partition.assign.fractions()
        for case in cases.values():
            group = case.fields.get("group")
            case.partition = (
                assign_partition(group, seed, fractions).value if group is not None else None
            )
        return
    partitions_of_group: dict[str, dict[str, list[int]]] = {}
    for case in cases.values():
        case.partition = case.fields.get("partition")
        group = case.fields.get("group")
        if group is not None and case.partition is not None:
            partitions_of_group.setdefault(group, {}).setdefault(case.partition, []).extend(
                case.rows
            )
    for group, parts in partitions_of_group.items():
        if len(parts) > 1:
            detail = "; ".join(
                f"{p}: {table.describe(sorted(rows))}" for p, rows in sorted(parts.items())
            )
            issues.add(
                "group_leakage",
                f"group {group!r} is in {len(parts)} partitions ({detail})",
                "put every case of a group in one partition, or let the tool assign partitions by"
                " group (partition: {assign: ...})",
                sorted(r for rows in parts.values() for r in rows),
            )


def _draft_rubric(
    cases: dict[str, _Case], m: TableMapping, at: Any
) -> tuple[dict[str, Any], list[Problem], list[str]]:
    hints = m.rubric
    notes: list[str] = []
    found: list[str] = []

    def label_of(value: str) -> str:
        return m.labels[value] if m.labels is not None else value

    for case in cases.values():
        for review in case.reviews:
            if label_of(review.label) not in found:
                found.append(label_of(review.label))
        if case.adjudicated is not None and label_of(case.adjudicated) not in found:
            found.append(label_of(case.adjudicated))
    problems: list[Problem] = []
    if hints.labels is not None:
        labels = list(hints.labels)
        missing = [label for label in found if label not in labels]
        if missing:
            problems.append(
                Problem(
                    location=at("rubric", "labels"),
                    code="mapping_invalid",
                    message=(
                        f"rubric.labels leaves out {', '.join(map(repr, missing))}, which the data"
                        " uses"
                    ),
                    fix=(
                        "list every label the data uses under rubric.labels, or map those values to"
                        " listed labels"
                    ),
                )
            )
    elif m.labels is not None:
        labels = list(dict.fromkeys(m.labels.values()))
    else:
        labels = sorted(found)
    pass_label = hints.pass_label or ("pass" if "pass" in labels and "fail" in labels else None)
    fail_label = hints.fail_label or ("fail" if "pass" in labels and "fail" in labels else None)
    if m.adjudication.rule == "any_fail" and fail_label is None:
        problems.append(
            Problem(
                location=at("adjudication", "rule"),
                code="mapping_invalid",
                message="rule any_fail needs a fail label, and the labels have none named fail",
                fix="set rubric.fail_label (and rubric.pass_label) in the mapping",
            )
        )
    if pass_label is None:
        notes.append(
            "the rubric declares no pass and fail labels, so align and the gate cannot count false"
            " passes; set rubric.pass_label and rubric.fail_label in the mapping if the labels are"
            " pass/fail verdicts"
        )
    others = [
        label
        for label in labels
        if label not in (pass_label, fail_label) and label not in hints.abstain_labels
    ]
    if pass_label is not None and others:
        notes.append(
            f"label(s) {', '.join(map(repr, others))} are neither pass, fail nor abstain labels;"
            " declare rubric.abstain_labels if they mean the reviewer abstained"
        )
    min_reviews = hints.min_reviews or max(
        1, min((len(c.reviews) for c in cases.values()), default=1)
    )
    slices = {
        name: {"risk": UNSET_RISK, "description": ""}
        for name in sorted({c.fields["slice"] for c in cases.values()})
    }
    criterion = hints.criterion or ""
    rubric = {
        "schema_version": 1,
        "name": m.name,
        "version": hints.version,
        "criterion": criterion,
        "labels": labels,
        "pass_label": pass_label,
        "fail_label": fail_label,
        "abstain_labels": list(hints.abstain_labels),
        "min_reviews": min_reviews,
        "slices": slices,
    }
    # Check the draft as the loader will, with a stand-in risk for the slices still unset.
    probe = {
        **rubric,
        "slices": {
            k: {**v, "risk": Risk.low.value if v["risk"] == UNSET_RISK else v["risk"]}
            for k, v in slices.items()
        },
    }
    if len(labels) >= 2 or hints.labels is not None:
        try:
            Rubric.model_validate(probe)
        except ValidationError as exc:
            problems += validation_problems(
                exc,
                at=at,
                base=("rubric",),
                code="mapping_invalid",
                root="rubric",
                message=lambda err, where: (
                    f"drafted rubric {where}: {err['msg'].removeprefix('Value error, ')}"
                ),
                fix=(
                    "correct the rubric hints (rubric.labels, pass_label, fail_label,"
                    " abstain_labels) or the label mapping"
                ),
            )
    else:
        problems.append(
            Problem(
                location=at("labels") if m.labels is not None else at("reviews"),
                code="mapping_invalid",
                message=(
                    f"the data uses {len(labels)} label(s) ({', '.join(labels)}); a rubric needs at"
                    " least two"
                ),
                fix=(
                    "list the whole vocabulary under rubric.labels (e.g. [pass, fail]) so labels"
                    " the data does not show yet are declared"
                ),
            )
        )
    return rubric, problems, notes


def _finish(
    cases: dict[str, _Case],
    m: TableMapping,
    rubric: dict[str, Any],
    table: SourceTable,
    notes: list[str],
) -> Built:
    fail_label = rubric["fail_label"]
    out: list[GoldCase] = []
    pending: list[Pending] = []
    settled = {"column": 0, "rule": 0, "pending": 0}
    slice_counts: Counter[str] = Counter()

    def label_of(value: str) -> str:
        return m.labels[value] if m.labels is not None else value

    for case in cases.values():
        f = case.fields
        reviews = [
            Review(
                reviewer=r.reviewer,
                label=label_of(r.label),
                rationale=r.rationale,
                confidence=r.confidence,
            )
            for r in case.reviews
        ]
        adjudication: Adjudication | None = None
        why = ""
        if case.adjudicated is not None:
            reason = (
                case.adjudication_reason
                or f"adjudicated label from source column {m.adjudication.column!r}"
            )
            adjudication = Adjudication(
                label=label_of(case.adjudicated), reason=reason, adjudicator=case.adjudicator
            )
            settled["column"] += 1
        elif m.adjudication.rule is not None:
            label = decide(m.adjudication.rule, [r.label for r in reviews], fail_label)
            counts = ", ".join(
                f"{k} {v}" for k, v in sorted(Counter(r.label for r in reviews).items())
            )
            if label is not None:
                adjudication = Adjudication(
                    label=label,
                    reason=f"rule {m.adjudication.rule}: {counts}",
                    adjudicator=f"rule:{m.adjudication.rule}",
                )
                settled["rule"] += 1
            else:
                why = f"rule {m.adjudication.rule} cannot settle {counts}"
        else:
            why = f"no adjudicated label in column {m.adjudication.column!r}"
        if adjudication is None:
            settled["pending"] += 1
            pending.append(
                Pending(
                    case.case_id,
                    case.partition or "",
                    f["slice"],
                    [(r.reviewer, r.label) for r in reviews],
                    table.describe(case.rows),
                    why,
                )
            )
        metadata = json.loads(f["metadata"])
        try:
            gold = GoldCase(
                case_id=case.case_id,
                partition=Partition(cast(str, case.partition)),  # None: refused below
                group=f["group"],
                slice=f["slice"],
                tags=case.tags,
                rubric_version=rubric["version"],
                input=f["input"],
                response=f["response"],
                response_hash=hashlib.sha256(f["response"].encode("utf-8")).hexdigest(),
                grading_notes=f["grading_notes"],
                reference=f["reference"],
                contexts=f["contexts"],
                reviews=reviews,
                adjudication=adjudication,
                metadata=metadata,
            )
        except ValidationError as exc:  # pragma: no cover - every field was checked above
            raise WorkbenchError(
                f"case {case.case_id!r} cannot be built; this is an importer defect, please"
                " report it",
                [
                    Problem(
                        location=table.where(case.rows[0]),
                        code="importer_defect",
                        message=str(exc),
                        fix="report this with the row",
                    )
                ],
            ) from None
        out.append(gold)
        slice_counts[f["slice"]] += 1
    return Built(
        cases=out,
        pending=pending,
        rubric=rubric,
        slice_counts=dict(slice_counts),
        settled=settled,
        notes=notes,
    )


def decide(rule: str, labels: list[str], fail_label: str | None) -> str | None:
    """The gold label ``rule`` gives for these review labels, or None when it cannot settle them.

    ``majority``: a label more than half of the reviews give. ``any_fail``: the fail label when
    any review gives it, else the label every review gives. ``unanimous_else_review``: the label
    every review gives. See :data:`workbench.importers.table.RULE_TEXT`.
    """
    if not labels:
        return None
    counts = Counter(labels)
    if rule == "majority":
        label, n = counts.most_common(1)[0]
        return label if n * 2 > len(labels) else None
    if rule == "any_fail" and fail_label is not None and fail_label in counts:
        return fail_label
    if rule in ("any_fail", "unanimous_else_review"):
        return labels[0] if len(counts) == 1 else None
    raise ValueError(f"unknown rule {rule!r}; known: {', '.join(RULE_TEXT)}")


def merge_previous(
    rubric: dict[str, Any], previous: Any, *, criterion_given: bool
) -> dict[str, Any]:
    """The drafted rubric with what a person already decided in an existing ``rubric.yaml``.

    Kept: each slice's ``risk`` (when it is a real level) and ``description``, slices a person
    declared with a real risk that the data does not use (yet), and the ``criterion`` unless
    the mapping gives one. Everything else comes from the data and the mapping again.
    """
    if not isinstance(previous, dict):
        return rubric
    valid = {r.value for r in Risk}
    raw_slices = previous.get("slices")
    old_slices: dict[Any, Any] = raw_slices if isinstance(raw_slices, dict) else {}
    slices: dict[str, dict[str, str]] = {}
    for name, spec in rubric["slices"].items():
        old = old_slices.get(name)
        old = old if isinstance(old, dict) else {}
        slices[name] = {
            "risk": old["risk"] if old.get("risk") in valid else spec["risk"],
            "description": (
                old["description"]
                if isinstance(old.get("description"), str)
                else spec["description"]
            ),
        }
    for name in sorted(k for k in old_slices if isinstance(k, str)):
        old = old_slices[name]
        if name not in slices and isinstance(old, dict) and old.get("risk") in valid:
            slices[name] = {
                "risk": old["risk"],
                "description": (
                    old["description"] if isinstance(old.get("description"), str) else ""
                ),
            }
    criterion = rubric["criterion"]
    if not criterion_given and isinstance(previous.get("criterion"), str):
        criterion = previous["criterion"]
    return {**rubric, "criterion": criterion, "slices": slices}
