"""From source rows to gold cases: keys, groups, partitions, reviews, labels, adjudication."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import ValidationError

from ..._io import JSONRecordError, loads_json
from ..._load import Problems, validation_problems
from ...errors import Problem, WorkbenchError
from ...gold import (
    CONTRACT_FIELDS,
    PARTITIONS,
    UNSET_RISK,
    Adjudication,
    GoldCase,
    Partition,
    Review,
    Risk,
    Rubric,
)
from .._registry import refuse
from .._table_reader import RowIssues, TableRead, _blank, canonical
from ._mapping import TableMapping
from ._nested import NestedReviews, RowReview

CONFIDENCES = ("low", "medium", "high")


def assign_partition(group: str, seed: int, fractions: dict[str, float]) -> Partition:
    """The partition of ``group``: 60 bits of sha256(seed, group) against the cumulative
    ``fractions``, so no other row moves it; a share of 0 gets no group."""
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
    """The group of an input: same text up to case and whitespace."""
    return "g-" + hashlib.sha256(" ".join(text.lower().split()).encode("utf-8")).hexdigest()[:16]


@dataclass
class _Case:
    """One source row, or (long form) the rows sharing a case key, merged."""

    rows: list[int]
    case_id: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    reviews: list[RowReview] = field(default_factory=list)
    adjudicated: str | None = None
    adjudicator: str | None = None
    adjudication_reason: str | None = None
    partition: str | None = None


@dataclass
class Pending:
    case_id: str
    partition: str
    slice: str
    reviews: list[tuple[str, str]]
    rows: str
    why: str


@dataclass
class Built:
    cases: tuple[GoldCase, ...]
    pending: tuple[Pending, ...]
    rubric: dict[str, Any]
    settled: dict[str, int]
    notes: tuple[str, ...]


class _Reader:
    def __init__(self, table: TableRead, issues: RowIssues, m: TableMapping) -> None:
        self.table, self.issues, self.m = table, issues, m
        self.nested = NestedReviews(m.reviews, issues) if m.reviews.form == "nested" else None

    def raw(self, i: int, column: str) -> Any:
        return self.table.rows[i].get(column)

    def text(
        self, i: int, column: str, what: str, *, required: bool = False, key: bool = False
    ) -> str | None:
        """A cell as text (``key``: an id, always required, a number allowed)."""
        value = self.raw(i, column)
        if _blank(value):
            if required or key:
                drop = "" if key else ", or drop those rows from the source"
                fix = f"fill in {what} on every row{drop}"
                self.issues.add("value_missing", f"column {column!r} ({what}) is empty", fix, i)
            return None
        if isinstance(value, str) and not key:
            return value
        scalar = (
            not isinstance(value, list | dict) if key else isinstance(value, bool | int | float)
        )
        if scalar:
            return canonical(value)
        holds = f"column {column!r} ({what}) holds a {type(value).__name__}"
        fix = f"give {what} as text" + (" or a number" if key else "")
        self.issues.add("value_not_text", holds if key else f"{holds}, not text", fix, i)
        return None

    def spec(self, spec: Any, i: int, what: str) -> str | None:
        if spec is None:
            return None
        return spec.value if spec.value is not None else self.text(i, spec.column, what)


def build_cases(table: TableRead, mapping: TableMapping, *, at: Any) -> Built:
    """The rows as gold cases and a drafted rubric; raise listing every problem found."""
    issues = RowIssues(table)
    reader = _Reader(table, issues, mapping)
    rows = [_read_row(reader, i) for i in range(len(table.rows))]
    if reader.nested is not None:
        reader.nested.finish()
    cases = _cases(rows, mapping, issues)
    _check_labels(cases, mapping, issues)
    _check_reviews(cases, issues, mapping)
    _assign(cases, mapping, issues, table)
    if issues:
        problems = issues.problems()
        summary = f"{table.location}: {len(problems)} problem(s) in the source rows"
        raise WorkbenchError(summary, problems)
    rubric, problems, notes = _draft_rubric(cases, mapping, at)
    if problems:
        summary = f"{at('rubric')}: the drafted rubric is not valid ({len(problems)} problem(s))"
        raise WorkbenchError(summary, problems)
    return _finish(cases, mapping, rubric, table, notes)


def _cases(rows: list[_Case], mapping: TableMapping, issues: RowIssues) -> dict[str, _Case]:
    by_key: dict[str, list[_Case]] = {}
    for row in rows:
        if row.case_id is not None:
            by_key.setdefault(row.case_id, []).append(row)
    cases: dict[str, _Case] = {}
    for key, members in by_key.items():
        if mapping.reviews.form == "long" or len(members) == 1:
            cases[key] = _merge(key, members, issues)
            continue
        col = mapping.case_id
        how = f"case id column {col.column!r}" if col else "the same input and response"
        issues.add(
            "duplicate_case",
            f"case {key!r} appears on several rows ({how}); in {mapping.reviews.form} form"
            " each case is one row",
            "keep one row per case, or add a case id column that tells them apart",
            [i for r in members for i in r.rows],
        )
    return cases


def _read_row(reader: _Reader, i: int) -> _Case:
    m = reader.m
    row = _Case(rows=[i], fields=_fields(reader, i), tags=_tags(reader, i))
    row.reviews = _reviews(reader, i)
    adj = m.adjudication
    if adj.column is not None:
        value = reader.raw(i, adj.column)
        row.adjudicated = None if _blank(value) else canonical(value)
        row.adjudicator = reader.spec(adj.adjudicator, i, "the adjudicator")
        if adj.reason is not None:
            row.adjudication_reason = reader.text(i, adj.reason, "the adjudication reason")
    inp, response = row.fields["input"], row.fields["response"]
    if m.case_id is not None:
        row.case_id = reader.text(i, m.case_id.column, "the case id", key=True)
    elif inp is not None and response is not None:
        row.case_id = "case-" + hashlib.sha256(f"{inp}\x1f{response}".encode()).hexdigest()[:16]
    return row


def _fields(reader: _Reader, i: int) -> dict[str, Any]:
    m = reader.m
    f: dict[str, Any] = {
        "input": reader.text(i, m.input.column, "the input", required=True),
        "response": reader.text(i, m.response.column, "the response", required=True),
        "reference": reader.spec(m.reference, i, "reference"),
        "grading_notes": reader.spec(m.grading_notes, i, "grading notes"),
    }
    if f["reference"] is None and f["grading_notes"] is None and f["input"] is not None:
        cols = [spec.column for spec in (m.reference, m.grading_notes) if spec and spec.column]
        reader.issues.add(
            "grading_evidence_missing",
            "the row has neither grading notes nor a reference (columns"
            f" {', '.join(map(repr, cols))} are empty)",
            "fill in the grading notes or the reference, or give grading_notes: {value: ...} in the"
            " mapping",
            i,
        )
    f["contexts"] = _contexts(reader, i) if m.contexts is not None else None
    f["slice"] = m.slice.value or reader.text(i, m.slice.column or "", "the slice", key=True)
    if m.group.column is not None:
        f["group"] = reader.text(i, m.group.column, "the group", key=True)
    else:
        f["group"] = input_group(f["input"]) if f["input"] is not None else None
    f["partition"] = _partition(reader, i) if m.partition.column is not None else None
    meta = {c: reader.raw(i, c) for c in m.metadata if reader.raw(i, c) is not None}
    f["metadata"] = json.dumps(meta, sort_keys=True, ensure_ascii=False, default=str)
    return f


def _partition(reader: _Reader, i: int) -> str | None:
    column, values = reader.m.partition.column or "", reader.m.partition.values
    value = reader.text(i, column, "the partition", key=True)
    if value is None:
        return None
    if values is not None:
        part = values.get(value)
    else:
        part = Partition(value) if value in PARTITIONS else None
    if part is None:
        reader.issues.add(
            "partition_value_unknown",
            f"partition value {value!r} in column {column!r} is not one of"
            f" {', '.join(values) if values else ', '.join(PARTITIONS)}",
            "map it under partition: {column: ..., values: {<value>: development | calibration |"
            " held_out}}, or correct the rows",
            i,
        )
    return part.value if part is not None else None


def _tags(reader: _Reader, i: int) -> list[str]:
    tags: list[str] = []
    for column in reader.m.tags:
        value = reader.raw(i, column)
        if isinstance(value, list):
            items = value
        elif isinstance(value, str):
            items = value.split(reader.m.tag_separator)
        else:
            items = [] if value is None else [canonical(value)]
        tags += [canonical(t) for t in items if t is not None and canonical(t)]
    return tags


def _contexts(reader: _Reader, i: int) -> list[str] | None:
    spec = reader.m.contexts
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
        return [p.strip() for p in parts if p.strip()] or None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v for v in value if v.strip()] or None
    reader.issues.add(
        "contexts_invalid",
        f"column {spec.column!r} holds a {type(value).__name__}, not passages",
        "give the passages as a list of strings or as text",
        i,
    )
    return None


def _review_columns(spec: Any) -> list[tuple[str | None, str | None, str, Any, Any]]:
    """Per review a row may hold: reviewer name or column, label, rationale, confidence columns."""
    if spec.form in ("long", "nested"):
        return [(None, spec.reviewer, spec.label, spec.rationale, spec.confidence)]
    if spec.columns is not None:
        return [(n, None, c.label, c.rationale, c.confidence) for n, c in spec.columns.items()]
    return [(None, p.reviewer, p.label, p.rationale, p.confidence) for p in spec.pairs or []]


def _reviews(reader: _Reader, i: int) -> list[RowReview]:
    if reader.nested is not None:  # form: nested
        return reader.nested.row(i, reader.raw(i, reader.nested.column))
    out: list[RowReview] = []
    long = reader.m.reviews.form == "long"
    for name, reviewer_col, label_col, rationale_col, confidence_col in _review_columns(
        reader.m.reviews
    ):
        reviewer = name
        if long:
            reviewer = reader.text(i, reviewer_col or "", "the reviewer", key=True)
        elif reviewer_col is not None:
            value = reader.raw(i, reviewer_col)
            reviewer = None if _blank(value) else canonical(value)
            if reviewer is None and not _blank(reader.raw(i, label_col)):
                reader.issues.add(
                    "review_incomplete",
                    f"label column {label_col!r} is filled but reviewer column {reviewer_col!r}"
                    " is empty",
                    "name the reviewer, or clear the label",
                    i,
                )
                continue
        label = _label(reader, i, label_col, reviewer, long=long, paired=reviewer_col is not None)
        if label is None or reviewer is None:
            continue
        confidence = reader.text(i, confidence_col, "the confidence") if confidence_col else None
        rationale = reader.text(i, rationale_col, "the rationale") if rationale_col else None
        confidence = confidence.strip().lower() if confidence else None
        out.append(RowReview(reviewer, label, rationale, confidence, i))
    return out


def _label(
    reader: _Reader, i: int, column: str, reviewer: str | None, *, long: bool, paired: bool
) -> str | None:
    label = reader.raw(i, column)
    if _blank(label) and long:
        reader.issues.add(
            "value_missing",
            f"column {column!r} (the review label) is empty",
            "fill in the label on every review row, or drop the rows without one",
            i,
        )
    elif _blank(label) and reviewer is not None and paired:
        reader.issues.add(
            "review_incomplete",
            f"reviewer column names {reviewer!r} but label column {column!r} is empty",
            "give the label, or clear the reviewer cell",
            i,
        )
    elif isinstance(label, list | dict):
        message = f"column {column!r} (the review label) holds a {type(label).__name__}"
        reader.issues.add("value_not_text", message, "give one label per cell", i)
    elif not _blank(label):
        return canonical(label)
    return None


_FIELD_NAMES = {
    **{n: n.replace("_", " ") for n in ("input", "response", "reference", "grading_notes")},
    **{n: n for n in ("contexts", "slice", "group", "partition")},
    "metadata": "metadata columns",
}


def _merge(key: str, members: list[_Case], issues: RowIssues) -> _Case:
    rows = [i for r in members for i in r.rows]
    for name, label in _FIELD_NAMES.items():
        if len({json.dumps(r.fields.get(name), sort_keys=True) for r in members}) > 1:
            issues.add(
                "case_rows_conflict",
                f"case {key!r}: its rows give different {label}",
                "every row of a case must carry the same case-level values; correct the rows, or"
                " give the cases different ids",
                rows,
            )
    tags: list[str] = []
    for r in members:
        tags += [t for t in r.tags if t not in tags]
    adjudicated = {r.adjudicated for r in members if r.adjudicated is not None}
    if len(adjudicated) > 1:
        issues.add(
            "case_rows_conflict",
            f"case {key!r}: its rows give different adjudicated labels"
            f" ({', '.join(sorted(adjudicated))})",
            "give the adjudicated label once per case, or the same on every row",
            rows,
        )
    return _Case(
        rows=rows,
        case_id=key,
        fields=dict(members[0].fields),
        tags=tags,
        reviews=[rv for r in members for rv in r.reviews],
        adjudicated=next(iter(adjudicated)) if len(adjudicated) == 1 else None,
        adjudicator=next((r.adjudicator for r in members if r.adjudicator), None),
        adjudication_reason=next(
            (r.adjudication_reason for r in members if r.adjudication_reason), None
        ),
    )


def _check_labels(cases: dict[str, _Case], m: TableMapping, issues: RowIssues) -> None:
    unmapped: dict[str, list[int]] = {}
    bad_confidence: dict[str, list[int]] = {}
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
    columns = [label for _, _, label, _, _ in _review_columns(m.reviews)]
    columns += [m.adjudication.column] if m.adjudication.column else []
    for value, rows in unmapped.items():
        issues.add(
            "label_unmapped",
            f"label value {value!r} (in {', '.join(columns)}) has no entry in the mapping's labels"
            f" ({', '.join(map(repr, m.labels or {}))})",
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


def _check_reviews(cases: dict[str, _Case], issues: RowIssues, m: TableMapping) -> None:
    for case in cases.values():
        if not case.reviews:
            if m.reviews.form != "nested":  # nested: the row's problem is already recorded
                issues.add(
                    "no_reviews",
                    f"case {case.case_id!r} has no review",
                    "every case needs at least one review: fill in a label column, or drop the"
                    " rows",
                    case.rows,
                )
            continue
        for reviewer, n in Counter(r.reviewer for r in case.reviews).items():
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


def _assign(cases: dict[str, _Case], m: TableMapping, issues: RowIssues, table: TableRead) -> None:
    assign = m.partition.assign
    parts_of: dict[str, dict[str, list[int]]] = {}
    for case in cases.values():
        group = case.fields.get("group")
        if assign is not None:
            part = (
                assign_partition(group, assign.seed, assign.fractions())
                if group is not None
                else None
            )
            case.partition = part.value if part is not None else None
            continue
        case.partition = case.fields.get("partition")
        if group is not None and case.partition is not None:
            parts_of.setdefault(group, {}).setdefault(case.partition, []).extend(case.rows)
    for group, parts in ((g, p) for g, p in parts_of.items() if len(p) > 1):
        detail = "; ".join(f"{p}: {table.describe(sorted(r))}" for p, r in sorted(parts.items()))
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
    labels, found = _labels(cases, m, at)
    problems = Problems(found + _relabel_problems(m, labels, at))
    both = "pass" in labels and "fail" in labels
    pass_label = hints.pass_label or ("pass" if both else None)
    fail_label = hints.fail_label or ("fail" if both else None)
    if m.adjudication.rule == "any_fail" and fail_label is None:
        problems.add(
            at("adjudication", "rule"),
            "mapping_invalid",
            "rule any_fail needs a fail label, and the labels have none named fail",
            "set rubric.fail_label (and rubric.pass_label) in the mapping",
        )
    notes: list[str] = []
    if pass_label is None:
        notes.append(
            "the rubric declares no pass and fail labels, so align and the gate cannot count false"
            " passes; set rubric.pass_label and rubric.fail_label in the mapping if the labels are"
            " pass/fail verdicts"
        )
    others = [x for x in labels if x not in (pass_label, fail_label, *hints.abstain_labels)]
    if pass_label is not None and others:
        notes.append(
            f"label(s) {', '.join(map(repr, others))} are neither pass, fail nor abstain labels;"
            " declare rubric.abstain_labels if they mean the reviewer abstained"
        )
    fewest = min((len(c.reviews) for c in cases.values()), default=1)
    slices = sorted({c.fields["slice"] for c in cases.values()})
    rubric = {
        "schema_version": 1,
        "name": m.name,
        "version": hints.version,
        "criterion": hints.criterion or "",
        "labels": labels,
        "pass_label": pass_label,
        "fail_label": fail_label,
        "abstain_labels": list(hints.abstain_labels),
        "min_reviews": hints.min_reviews or max(1, fewest),
        "slices": {name: {"risk": UNSET_RISK, "description": ""} for name in slices},
    }
    if len(labels) >= 2 or hints.labels is not None:
        problems += _rubric_problems(rubric, at)
    else:
        problems.add(
            at("labels") if m.labels is not None else at("reviews"),
            "mapping_invalid",
            f"the data uses {len(labels)} label(s) ({', '.join(labels)}); a rubric needs at least"
            " two",
            "list the whole vocabulary under rubric.labels (e.g. [pass, fail]) so labels the data"
            " does not show yet are declared",
        )
    return rubric, problems, notes


def _relabel_problems(m: TableMapping, labels: list[str], at: Any) -> list[Problem]:
    """A source value that is a rubric label must map to itself."""
    problems = Problems()
    for value, label in (m.labels or {}).items():
        if value in labels and value != label:
            problems.add(
                at("labels", value),
                "mapping_relabels",
                f"source value {value!r} is a label of the rubric, mapped to {label!r}: the gold"
                " would say what the reviewers did not",
                f"remove {value!r} from labels (a rubric label is read as itself), or correct the"
                " rows if the reviewers' labels are wrong",
            )
    return problems


def _labels(cases: dict[str, _Case], m: TableMapping, at: Any) -> tuple[list[str], list[Problem]]:
    """The rubric's labels: the hints' list (holding every label used), the label mapping's
    targets, or the labels found, sorted."""
    if m.labels is not None and m.rubric.labels is None:
        return list(dict.fromkeys(m.labels.values())), []
    used = [(*(r.label for r in c.reviews), c.adjudicated) for c in cases.values()]
    found = list(dict.fromkeys(_mapped(m, x) for labels in used for x in labels if x is not None))
    if m.rubric.labels is None:
        return sorted(found), []
    missing = [label for label in found if label not in m.rubric.labels]
    problems = Problems()
    if missing:
        problems.add(
            at("rubric", "labels"),
            "mapping_invalid",
            f"rubric.labels leaves out {', '.join(map(repr, missing))}, which the data uses",
            "list every label the data uses under rubric.labels, or map those values to listed"
            " labels",
        )
    return list(m.rubric.labels), problems


def _rubric_problems(rubric: dict[str, Any], at: Any) -> list[Problem]:
    probe = {
        **rubric,
        "slices": {k: {**v, "risk": Risk.low.value} for k, v in rubric["slices"].items()},
    }
    try:
        Rubric.model_validate(probe)
    except ValidationError as exc:
        return validation_problems(
            exc,
            at=at,
            base=("rubric",),
            code="mapping_invalid",
            root="rubric",
            message=lambda err, where: (
                f"drafted rubric {where}: {err['msg'].removeprefix('Value error, ')}"
            ),
            fix=(
                "correct the rubric hints (rubric.labels, pass_label, fail_label, abstain_labels)"
                " or the label mapping"
            ),
        )
    return []


def _mapped(m: TableMapping, value: str) -> str:
    return m.labels[value] if m.labels is not None else value


def _finish(
    cases: dict[str, _Case],
    m: TableMapping,
    rubric: dict[str, Any],
    table: TableRead,
    notes: list[str],
) -> Built:
    out: list[GoldCase] = []
    pending: list[Pending] = []
    settled = {"column": 0, "rule": 0, "pending": 0}
    for case_id, case in cases.items():
        f = case.fields
        reviews = [
            Review(
                reviewer=r.reviewer,
                label=_mapped(m, r.label),
                rationale=r.rationale,
                confidence=r.confidence,
            )
            for r in case.reviews
        ]
        labels = [r.label for r in reviews]
        adjudication, how = _adjudicate(case, m, labels, rubric["fail_label"])
        settled[how] += 1
        if adjudication is None:
            who = [(r.reviewer, r.label) for r in reviews]
            why = (
                f"rule {m.adjudication.rule} cannot settle {_counts(labels)}"
                if m.adjudication.rule is not None
                else f"no adjudicated label in column {m.adjudication.column!r}"
            )
            rows = table.describe(case.rows)
            pending.append(Pending(case_id, case.partition or "", f["slice"], who, rows, why))
        try:
            gold = GoldCase(
                case_id=case_id,
                partition=Partition(cast(str, case.partition)),  # None was refused before
                tags=case.tags,
                rubric_version=rubric["version"],
                response_hash=hashlib.sha256(f["response"].encode("utf-8")).hexdigest(),
                reviews=reviews,
                adjudication=adjudication,
                metadata=json.loads(f["metadata"]),
                **{
                    k: f[k]
                    for k in (
                        "group",
                        "slice",
                        "input",
                        "response",
                        "grading_notes",
                        "reference",
                        "contexts",
                    )
                },
            )
        except ValidationError as exc:  # pragma: no cover - every field was checked above
            refuse(
                f"case {case_id!r} cannot be built; this is an importer defect, please report it",
                table.where(case.rows[0]),
                "importer_defect",
                str(exc),
                "report this with the row",
            )
        out.append(gold)
    return Built(tuple(out), tuple(pending), rubric, settled, tuple(notes))


def _counts(labels: list[str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(Counter(labels).items()))


def _adjudicate(
    case: _Case, m: TableMapping, labels: list[str], fail_label: str | None
) -> tuple[Adjudication | None, str]:
    if case.adjudicated is not None:
        column = f"adjudicated label from source column {m.adjudication.column!r}"
        reason = case.adjudication_reason or column
        label = _mapped(m, case.adjudicated)
        return Adjudication(label=label, reason=reason, adjudicator=case.adjudicator), "column"
    rule = m.adjudication.rule
    decided = decide(rule, labels, fail_label) if rule is not None else None
    if decided is None:
        return None, "pending"
    reason = f"rule {rule}: {_counts(labels)}"
    return Adjudication(label=decided, reason=reason, adjudicator=f"rule:{rule}"), "rule"


def decide(rule: str, labels: list[str], fail_label: str | None) -> str | None:
    """The gold label ``rule`` gives for these review labels (:data:`._mapping.RULE_TEXT`), or
    None when it cannot settle them."""
    counts = Counter(labels)
    if not labels:
        return None
    if rule == "majority":
        label, n = counts.most_common(1)[0]
        return label if n * 2 > len(labels) else None
    if rule == "any_fail" and fail_label is not None and fail_label in counts:
        return fail_label
    return labels[0] if len(counts) == 1 else None  # any_fail, unanimous_else_review


def merge_previous(
    rubric: dict[str, Any], previous: Any, *, criterion_given: bool
) -> dict[str, Any]:
    """The drafted rubric keeping what a person decided in an existing ``rubric.yaml``: slices'
    risks and descriptions (also of slices not in the data yet), the judgment contract's fields
    (:data:`~workbench.gold.CONTRACT_FIELDS`; error costs of the slices kept) and, unless given,
    the criterion."""
    if not isinstance(previous, dict):
        return rubric
    valid = {r.value for r in Risk}
    raw_slices = previous.get("slices")
    old_slices: dict[Any, Any] = raw_slices if isinstance(raw_slices, dict) else {}

    def kept(old: Any, spec: dict[str, str]) -> dict[str, str]:
        old = old if isinstance(old, dict) else {}
        text = old.get("description")
        return {
            "risk": old["risk"] if old.get("risk") in valid else spec["risk"],
            "description": text if isinstance(text, str) else spec["description"],
        }

    slices = {name: kept(old_slices.get(name), spec) for name, spec in rubric["slices"].items()}
    for name in sorted(k for k in old_slices if isinstance(k, str) and k not in slices):
        if isinstance(old_slices[name], dict) and old_slices[name].get("risk") in valid:
            slices[name] = kept(old_slices[name], {"risk": "", "description": ""})
    criterion = rubric["criterion"]
    if not criterion_given and isinstance(previous.get("criterion"), str):
        criterion = previous["criterion"]
    contract = _kept_contract(previous, rubric["labels"], slices)
    return {**rubric, "criterion": criterion, "slices": slices, **contract}


def _kept_contract(previous: dict[str, Any], labels: list[str], slices: dict[str, Any]) -> Any:
    """The previous rubric's contract fields, without what names a label or slice the draft no
    longer has (``validate --strict`` then asks for the missing parts)."""
    kept = {name: previous[name] for name in CONTRACT_FIELDS if name in previous}
    for name, known in (("boundaries", labels), ("error_costs", slices)):
        if isinstance(kept.get(name), dict):
            kept[name] = {k: v for k, v in kept[name].items() if k in known}
    if isinstance(kept.get("precedence"), list):
        kept["precedence"] = [label for label in kept["precedence"] if label in labels]
    rule = kept.get("ambiguity")
    if isinstance(rule, dict) and rule.get("label") is not None and rule["label"] not in labels:
        del kept["ambiguity"]
    return kept
