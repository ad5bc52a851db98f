"""The table mapping (``docs/formats.md#table-mapping``): which column of a table is what; every
problem is reported at once, at its line of the mapping file, with a fix. Nested reviews are read
by paths (:func:`parse_path`): ``annotations[].annotator`` names the list column, ``[]`` each
review, then the keys; the rationale may read a list in each review with a second ``[]``."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from ..._load import Problems, load_yaml, validation_problems
from ..._record import Record as _Model
from ..._record import SchemaTooNew
from ...errors import Problem
from ...gold import Partition
from .._table_reader import canonical, number_as_text

PATH_FIELDS: tuple[str, ...] = ("reviewer", "label", "rationale", "confidence")

EXAMPLE = "annotations[].annotator"


@dataclass(frozen=True)
class ItemPath:
    """A parsed path: ``column[].key.key`` or ``column[].key[].key``."""

    text: str
    column: str
    keys: tuple[str, ...]
    """The keys from a review to the value (or to the list that ``each`` reads)."""
    each: tuple[str, ...] | None = None
    """After a second ``[]``: the keys read in every item of that list."""


class PathError(ValueError):
    """A path that cannot be read; its text says what to write instead."""


def _keys(part: str, text: str, *, after: str) -> tuple[str, ...]:
    if part == "":
        return ()
    if not part.startswith("."):
        raise PathError(f"{text!r}: {after} must be followed by '.' and a key, e.g. {EXAMPLE}")
    keys = tuple(part[1:].split("."))
    if any(k.strip() == "" for k in keys):
        raise PathError(f"{text!r} has an empty key between dots")
    bad = [k for k in keys if "[" in k or "]" in k]
    if bad:
        raise PathError(f"{text!r}: key {bad[0]!r} holds a stray bracket; a list is read with []")
    return keys


def parse_path(text: str, *, many: bool) -> ItemPath:
    """Parse ``text`` (``many``: a second ``[]`` is allowed); raise :class:`PathError` saying
    what to write."""
    parts = text.split("[]")
    column = parts[0]
    if len(parts) == 1:
        raise PathError(
            f"{text!r} is not a path into a list column: write <column>[].<key>, e.g. {EXAMPLE}"
        )
    if column.strip() == "" or "[" in column or "]" in column:
        raise PathError(f"{text!r} names no list column before []: e.g. {EXAMPLE}")
    if len(parts) > 3 or (len(parts) == 3 and not many):
        what = "a list inside each review (rationale only)"
        raise PathError(
            f"{text!r} has {len(parts) - 1} []: one reads the list column's reviews"
            + (f", a second one {what}" if many else "; this field takes one value per review")
        )
    keys = _keys(parts[1], text, after="[]")
    if not keys:
        raise PathError(f"{text!r} names no key of the review: write {column}[].<key>")
    each = _keys(parts[2], text, after="the second []") if len(parts) == 3 else None
    return ItemPath(text, column, keys, each)


def lookup(node: Any, keys: tuple[str, ...]) -> tuple[bool, Any, Any]:
    """Follow ``keys`` from ``node``: ``(found, value, last object reached)``."""
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return False, None, node
        node = node[key]
    return True, node, None


MAPPING_SCHEMA_VERSION = 1
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"
RULES: tuple[str, ...] = ("majority", "any_fail", "unanimous_else_review")

RULE_TEXT: dict[str, str] = {
    "majority": (
        "the label more than half of the case's reviews give; a case without such a label goes to"
        " an adjudicator"
    ),
    "any_fail": (
        "the fail label when any review gives it, otherwise the label every review gives; any other"
        " case goes to an adjudicator"
    ),
    "unanimous_else_review": (
        "the label every review gives; a case whose reviews differ goes to an adjudicator"
    ),
}


COLUMN_FIELDS: tuple[str, ...] = ("case_id", "input", "response", "reference", "grading_notes")
COLUMN_FIELDS += ("slice", "group", "contexts", "partition")


def _as_column(value: Any) -> Any:
    return {"column": value} if isinstance(value, str) else value


class Column(_Model):
    """A column of the source table."""

    column: str = Field(min_length=1)
    """The column's name, exactly as in the source."""


class Text(_Model):
    """A text field: a column, or one constant for every case."""

    column: str | None = Field(default=None, min_length=1)
    """The column holding the text."""
    value: str | None = None
    """The same text for every case, e.g. grading notes that restate the criterion."""

    @model_validator(mode="after")
    def _one(self) -> Text:
        if (self.column is None) == (self.value is None):
            raise ValueError("give exactly one of column or value")
        if self.value is not None and not self.value.strip():
            raise ValueError("value must be written, not blank")
        return self


class Contexts(_Model):
    """Context passages."""

    column: str = Field(min_length=1)
    """The column holding the passages: a list (JSONL, Parquet), or text."""
    separator: str | None = None
    """Split text cells on this separator (e.g. ``"\\n\\n"``); else a text cell is one passage."""
    json_list: bool = False
    """Text cells hold a JSON list of passages (e.g. a CSV export of a list column)."""

    @model_validator(mode="after")
    def _either(self) -> Contexts:
        if self.separator is not None and self.json_list:
            raise ValueError("give separator or json_list, not both")
        if self.separator == "":
            raise ValueError("separator must not be empty")
        return self


class Group(_Model):
    """Which cases form a group (a prompt family); a group lives in one partition."""

    column: str | None = Field(default=None, min_length=1)
    """A column naming the group."""
    hash_of: Literal["input"] | None = None
    """``input``: cases with the same input text (ignoring case and whitespace) form a group."""

    @model_validator(mode="after")
    def _one(self) -> Group:
        if (self.column is None) == (self.hash_of is None):
            raise ValueError("give exactly one of column or hash_of: input")
        return self


class Assign(_Model):
    """Seeded partition assignment by group hash (sha256 of seed and group): adding rows never
    moves an existing case."""

    seed: int
    """Any integer; record it, since another seed gives another split."""
    development: float = Field(ge=0, le=1)
    """Share of groups for prompt development."""
    calibration: float = Field(ge=0, le=1)
    """Share of groups for candidate selection."""
    held_out: float = Field(ge=0, le=1)
    """Share of groups kept for certification."""

    @model_validator(mode="after")
    def _sum_to_one(self) -> Assign:
        total = self.development + self.calibration + self.held_out
        if not math.isclose(total, 1.0, abs_tol=1e-9):
            message = f"development + calibration + held_out must be 1 (they add up to {total:g})"
            raise ValueError(message)
        return self

    def fractions(self) -> dict[str, float]:
        return {p: getattr(self, p) for p in ("development", "calibration", "held_out")}


class PartitionSpec(_Model):
    """Where each case goes: a column, or ``assign``."""

    column: str | None = Field(default=None, min_length=1)
    """A column holding the partition of each row."""
    values: dict[str, Partition] | None = None
    """Source value -> partition, e.g. ``{train: development, test: held_out}``; else the values."""
    assign: Assign | None = None
    """Assign partitions by group hash (see :class:`Assign`)."""

    @model_validator(mode="after")
    def _one(self) -> PartitionSpec:
        if (self.column is None) == (self.assign is None):
            raise ValueError("give exactly one of column or assign")
        if self.values is not None and self.column is None:
            raise ValueError("values maps a partition column's values; it needs column")
        return self


class ReviewerColumns(_Model):
    """One reviewer's columns in wide form."""

    label: str = Field(min_length=1)
    """The column holding the reviewer's label (empty: the reviewer did not review the row)."""
    rationale: str | None = Field(default=None, min_length=1)
    """The column holding the reviewer's rationale."""
    confidence: str | None = Field(default=None, min_length=1)
    """The column holding the reviewer's confidence (low, medium or high)."""


class ReviewPair(ReviewerColumns):
    """A reviewer column and its label column (wide form with reviewer ids in the data)."""

    reviewer: str = Field(min_length=1)
    """The column holding the reviewer's id."""


class Reviews(_Model):
    """Where the reviews are: ``long`` (a row per review), ``wide`` (a label column per reviewer)
    or ``nested`` (a list column of reviews, read by paths: :func:`parse_path`)."""

    form: Literal["long", "wide", "nested"]
    """``long``, ``wide`` or ``nested``."""
    reviewer: str | None = Field(default=None, min_length=1)
    """long: the reviewer id column; nested: its path, e.g. ``annotations[].annotator``."""
    label: str | None = Field(default=None, min_length=1)
    """long: the column holding the label; nested: its path, e.g. ``annotations[].label``."""
    rationale: str | None = Field(default=None, min_length=1)
    """long: the rationale column; nested: its path, or ``annotations[].spans[].text`` (joined)."""
    confidence: str | None = Field(default=None, min_length=1)
    """long: the confidence column (low, medium or high); nested: its path."""
    columns: dict[str, ReviewerColumns] | None = None
    """wide: reviewer id -> their label column (or ``{label, rationale, confidence}``)."""
    pairs: list[ReviewPair] | None = None
    """wide: reviewer/label column pairs, for tables whose reviewer ids vary by row."""

    @field_validator(*PATH_FIELDS)
    @classmethod
    def _path(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and info.data.get("form") == "nested":
            try:
                parse_path(value, many=info.field_name == "rationale")
            except PathError as exc:
                raise PydanticCustomError("review_path", str(exc)) from None
        return value

    @field_validator("columns", mode="before")
    @classmethod
    def _columns(cls, value: Any) -> Any:
        if isinstance(value, list):
            return {str(c): {"label": c} for c in value}
        if isinstance(value, dict):
            return {k: {"label": v} if isinstance(v, str) else v for k, v in value.items()}
        return value

    @model_validator(mode="after")
    def _shape(self) -> Reviews:
        given = [n for n in PATH_FIELDS if getattr(self, n) is not None]
        paths = [n for n in given if "[]" in getattr(self, n)]
        if paths and self.form != "nested":
            verb = "is a path" if len(paths) == 1 else "are paths"
            raise ValueError(
                f"{', '.join(paths)} {verb} into a list column ([]): write form: nested"
            )
        if self.form == "wide":
            if given:
                message = (
                    f"{', '.join(given)} are for form: long; in wide form use columns or pairs"
                )
                raise ValueError(message)
            if (self.columns is None) == (self.pairs is None):
                raise ValueError(
                    "wide form needs exactly one of columns (one label column per reviewer) or"
                    " pairs (reviewer/label column pairs)"
                )
            for name in ("columns", "pairs"):
                if getattr(self, name) is not None and not getattr(self, name):
                    raise ValueError(f"{name} is empty")
            return self
        nested = self.form == "nested"
        missing = [n for n in ("reviewer", "label") if n not in given]
        if missing:
            what = "path(s) to each review's" if nested else "column(s) holding each row's"
            example = f", e.g. reviewer: {EXAMPLE}" if nested else ""
            raise ValueError(
                f"{self.form} form needs {' and '.join(missing)}: the {what} reviewer and"
                f" label{example}"
            )
        if self.columns is not None or self.pairs is not None:
            raise ValueError("columns and pairs are for form: wide")
        columns = {name: path.column for name, path in self.item_paths().items()} if nested else {}
        if len(set(columns.values())) > 1:
            named = ", ".join(f"{n} {c!r}" for n, c in columns.items())
            raise ValueError(f"every path must read the same list column ({named})")
        return self

    def item_paths(self) -> dict[str, ItemPath]:
        """Nested form: each given path field, parsed."""
        return {
            name: parse_path(getattr(self, name), many=name == "rationale")
            for name in PATH_FIELDS
            if getattr(self, name) is not None
        }


class AdjudicationSpec(_Model):
    """Where the gold label comes from: a column, a rule, or both (the rule for empty cells)."""

    column: str | None = Field(default=None, min_length=1)
    """The column holding the adjudicated label."""
    rule: Literal["majority", "any_fail", "unanimous_else_review"] | None = None
    """See :data:`RULE_TEXT`; cases it cannot settle are listed for an adjudicator."""
    adjudicator: Text | None = None
    """Who adjudicated (column) or a name, for labels from ``column``."""
    reason: str | None = Field(default=None, min_length=1)
    """The column holding the adjudicator's reason."""

    @field_validator("adjudicator", mode="before")
    @classmethod
    def _adjudicator(cls, value: Any) -> Any:
        return _as_column(value)

    @model_validator(mode="after")
    def _some(self) -> AdjudicationSpec:
        if self.column is None and self.rule is None:
            raise ValueError(
                "give column, rule, or both (the rule then settles the cases whose cell is empty)"
            )
        return self


class RubricHints(_Model):
    """What the drafted rubric cannot learn from the data. Everything here is optional."""

    version: str = "1"
    """The rubric version the reviewers applied; written into every case's ``rubric_version``."""
    criterion: str | None = None
    """The one-sentence contract; otherwise kept from an existing rubric.yaml, or left to write."""
    labels: list[str] | None = None
    """The label vocabulary, in order, when it holds labels the data does not show."""
    pass_label: str | None = None
    """The label that means pass (default ``pass`` when the labels include it)."""
    fail_label: str | None = None
    """The label that means fail (default ``fail`` when the labels include it)."""
    abstain_labels: list[str] = Field(default_factory=list)
    """Labels that are neither pass nor fail, e.g. ``review_required``."""
    min_reviews: int | None = Field(default=None, ge=1)
    """Reviews every case needs (fewer is an error); default: the fewest any case has."""

    _version = field_validator("version", mode="before")(number_as_text)


class TableMapping(_Model):
    """A table mapping, exactly as stored in its YAML file."""

    schema_version: int = MAPPING_SCHEMA_VERSION
    """Mapping format version."""
    name: str = Field(pattern=NAME_PATTERN)
    """Dataset name: the drafted rubric's and card's name."""
    source_format: Literal["csv", "tsv", "jsonl", "parquet"] | None = None
    """``csv``, ``tsv``, ``jsonl`` or ``parquet``; by default taken from the source's extension."""
    case_id: Column | None = None
    """The column holding a stable case id; else ``case-`` + sha256 of input and response."""
    input: Column
    """The column holding the user input."""
    response: Column
    """The column holding the response the reviewers judged (the tool computes its hash)."""
    reference: Text | None = None
    """A reference answer: a column or ``{value: ...}``."""
    grading_notes: Text | None = None
    """Grading notes: a column or ``{value: ...}``. A case needs grading_notes or reference."""
    contexts: Contexts | None = None
    """Context passages (see :class:`Contexts`)."""
    slice: Text
    """The risk slice: a column, or ``{value: name}`` for one slice."""
    group: Group = Field(default_factory=lambda: Group(hash_of="input"))
    """A column, or ``{hash_of: input}`` (the default)."""
    partition: PartitionSpec
    """A column, or ``{assign: {seed, development, calibration, held_out}}``."""
    tags: list[str] = Field(default_factory=list)
    """Columns whose values become tags (a list, or text split on ``tag_separator``)."""
    tag_separator: str = Field(default=",", min_length=1)
    """Separator of tags in text cells."""
    metadata: list[str] = Field(default_factory=list)
    """Columns copied into each case's ``metadata`` under their own names."""
    reviews: Reviews
    """Where the reviews are (see :class:`Reviews`)."""
    labels: dict[str, Annotated[str, Field(min_length=1)]] | None = None
    """Source value -> rubric label, e.g. ``{0: fail, 1: pass}``; else the values are the labels."""
    adjudication: AdjudicationSpec
    """Where the gold label comes from (see :class:`AdjudicationSpec`)."""
    rubric: RubricHints = Field(default_factory=RubricHints)
    """Hints for the drafted rubric (see :class:`RubricHints`)."""

    _name = field_validator("name", mode="before")(number_as_text)
    _columns = field_validator(*COLUMN_FIELDS, mode="before")(_as_column)

    @field_validator("labels", mode="before")
    @classmethod
    def _label_keys(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        out: dict[str, Any] = {}
        for key, label in value.items():
            canon = canonical(key)
            if canon in out:
                raise ValueError(f"source value {key!r} is listed twice (as {canon!r})")
            out[canon] = label
        return out

    @model_validator(mode="after")
    def _grading_evidence(self) -> TableMapping:
        if self.reference is None and self.grading_notes is None:
            raise ValueError(
                "map reference or grading_notes (or both): a gold case needs grading evidence; for"
                ' one text shared by every case write grading_notes: {value: "..."}'
            )
        return self


_FIX: dict[str, str] = {
    "name": "name the dataset with letters, digits, '.', '_' or '-', e.g. name: support-faq",
    "input": "name the column holding the user input, e.g. input: question",
    "response": "name the column holding the judged response, e.g. response: answer",
    "slice": (
        "name the slice column (slice: topic) or give one slice for every case (slice: {value:"
        " general})"
    ),
    "partition": (
        "write partition: <column>, or partition: {assign: {seed: 1, development: 0.4, calibration:"
        " 0.3, held_out: 0.3}}"
    ),
    "assign": (
        "write assign: {seed: <integer>, development: <share>, calibration: <share>, held_out:"
        " <share>} with shares adding up to 1"
    ),
    "reviews": (
        "write reviews: {form: long, reviewer: <column>, label: <column>}, reviews: {form: wide,"
        " columns: {<reviewer>: <label column>}} or, for a list of reviews per row, reviews:"
        " {form: nested, reviewer: <column>[].<key>, label: <column>[].<key>}"
        " (docs/formats.md#table-mapping)"
    ),
    "adjudication": (
        "write adjudication: {rule: majority} (or any_fail, unanimous_else_review), or"
        " adjudication: {column: <adjudicated label column>}"
    ),
    "labels": "map each source value to a rubric label, e.g. labels: {0: fail, 1: pass}",
    "rule": "use one of " + ", ".join(RULES),
    "group": "write group: <column>, or group: {hash_of: input}",
    "contexts": 'write contexts: <column>, or contexts: {column: <column>, separator: "\\n\\n"}',
    "source_format": "use csv, jsonl or parquet, or leave it out to use the file extension",
    "rubric": "see docs/formats.md#table-mapping for the rubric hints",
    "values": "map each source value to development, calibration or held_out",
    "grading_notes": (
        "add grading_notes: <column> or reference: <column>; for one text shared by every case"
        ' write grading_notes: {value: "..."}'
    ),
}


_ERROR_CODES = {"missing": "mapping_field_missing", "extra_forbidden": "mapping_field_unknown"}


def _error_message(err: Any, where: str) -> str:
    known = {"missing": f"{where} is missing", "extra_forbidden": f"{where}: unknown key"}
    return known.get(err["type"]) or f"{where}: {err['msg'].removeprefix('Value error, ')}"


PATH_FIX = (
    "write <list column>[].<key>, e.g. reviewer: annotations[].annotator, label:"
    " annotations[].label; only rationale may read a list in each review with a second [] (e.g."
    " annotations[].spans[].text); see docs/formats.md#table-mapping"
)


def _error_fix(err: Any) -> str:
    if err["type"] == "review_path":
        return PATH_FIX
    if err["type"] == "extra_forbidden":
        return "remove it or correct its spelling; see docs/formats.md#table-mapping for every key"
    keys = [p for p in err["loc"] if isinstance(p, str)]
    return next(
        (_FIX[k] for k in reversed(keys) if k in _FIX),
        "correct this field; see docs/formats.md#table-mapping",
    )


def read_mapping_text(path: Path) -> tuple[str, dict[str, Any]]:
    """The mapping file's text and its YAML mapping; raise when it cannot be read at all."""
    doc = load_yaml(
        path,
        prefix="mapping",
        what="mapping",
        missing_fix="write a mapping (docs/formats.md#table-mapping) and pass it with --mapping",
        shape=(
            "the mapping must be a YAML mapping of keys to columns",
            "write key: value pairs, e.g. input: question",
        ),
    )
    return doc.text, doc.data


_REVIEW_COLUMNS = PATH_FIELDS
_COLUMN_PATHS: tuple[tuple[tuple[str, ...], bool, tuple[str, ...]], ...] = (
    *(((name,), True, ("column",)) for name in COLUMN_FIELDS),
    (("tags", "#"), True, ()),
    (("metadata", "#"), True, ()),
    *((("reviews", name), True, ()) for name in _REVIEW_COLUMNS),
    (("reviews", "columns", "*"), True, _REVIEW_COLUMNS[1:]),
    (("reviews", "pairs", "#"), False, _REVIEW_COLUMNS),
    (("adjudication", "column"), True, ()),
    (("adjudication", "reason"), True, ()),
    (("adjudication", "adjudicator"), True, ("column",)),
)
"""Where a raw mapping names columns: the path (``#`` a list's items, ``*`` a list's items or a
mapping's values), whether a name may stand there, and the keys naming columns in a mapping
that stands there instead."""


def _walk(node: Any, pattern: tuple[str, ...], path: tuple[Any, ...] = ()) -> Iterable[Any]:
    """``(path, value)`` of every place in ``node`` that ``pattern`` reaches."""
    if not pattern:
        yield path, node
        return
    head, rest = pattern[0], pattern[1:]
    if head in ("#", "*") and isinstance(node, list):
        for i, item in enumerate(node):
            yield from _walk(item, rest, (*path, i))
    elif head == "*" and isinstance(node, dict):
        for key, item in node.items():
            yield from _walk(item, rest, (*path, key))
    elif isinstance(node, dict) and head in node:
        yield from _walk(node[head], rest, (*path, head))


def column_references(raw: dict[str, Any]) -> list[tuple[tuple[Any, ...], str]]:
    """Every column the raw mapping names, with its path (nested form: a review path's list
    column), read without validating the rest."""
    refs: list[tuple[tuple[Any, ...], str]] = []
    for pattern, name_here, keys in _COLUMN_PATHS:
        for path, value in _walk(raw, pattern):
            if isinstance(value, str) and name_here:
                refs.append((path, value))
            elif isinstance(value, dict):
                refs += [((*path, k), value[k]) for k in keys if isinstance(value.get(k), str)]
    reviews = raw.get("reviews")
    nested = isinstance(reviews, dict) and reviews.get("form") == "nested"
    return [
        (path, value.split("[]", 1)[0] if _is_review_field(path) else value)
        for path, value in refs
        if "[]" in value or not (nested and _is_review_field(path))
    ]


def _is_review_field(path: tuple[Any, ...]) -> bool:
    return len(path) == 2 and path[0] == "reviews" and path[1] in _REVIEW_COLUMNS


def column_problems(
    raw: dict[str, Any], columns: Iterable[str], at: Any, source: str
) -> list[Problem]:
    """A problem for every column the mapping names that the source does not have."""
    available = list(columns)
    shown = ", ".join(available[:30]) + (", ..." if len(available) > 30 else "")
    problems = Problems()
    for path, name in (ref for ref in column_references(raw) if ref[1] not in available):
        close = difflib.get_close_matches(name, available, n=1)
        problems.add(
            at(*path),
            "mapping_column_unknown",
            f"{'.'.join(map(str, path))}: {source} has no column {name!r}",
            (f"did you mean {close[0]!r}? " if close else "")
            + f"name one of the source's columns: {shown}",
        )
    return problems


def parse_mapping(raw: dict[str, Any], at: Any) -> tuple[TableMapping | None, list[Problem]]:
    """Validate a raw mapping; returns the mapping (or None) and every problem found."""
    try:
        return TableMapping.model_validate(raw), []
    except SchemaTooNew as exc:
        return None, [exc.problem_at(at("schema_version"))]
    except ValidationError as exc:
        problems = Problems(
            validation_problems(
                exc,
                at=at,
                root="mapping",
                code=lambda err: _ERROR_CODES.get(err["type"], "mapping_invalid"),
                message=_error_message,
                fix=_error_fix,
            )
        )
    if not ({"reference", "grading_notes"} & set(raw)) and not any(
        "grading evidence" in p.message for p in problems
    ):
        # The model-level check runs only once every field is valid; report it now too.
        problems.add(
            at(),
            "mapping_invalid",
            "mapping: map reference or grading_notes (or both): a gold case needs grading evidence",
            _FIX["grading_notes"],
        )
    return None, problems
