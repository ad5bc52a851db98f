"""The rubric (``rubric.yaml`` beside ``gold.jsonl``): the label vocabulary, its scale (nominal,
ordinal or numeric), which labels mean pass, the risk slices, and the judgment contract (unit of
judgment, allowed evidence, label boundaries, precedence, ambiguity rule, error costs per slice,
use boundary), which ``validate --strict`` requires in full."""

from __future__ import annotations

import math
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .._docs import add_field_docs
from .._io import read_bounded
from .._load import Lines, read_yaml, rule_error, validation_problems, yaml_lines
from .._record import Record, SchemaTooNew
from ..errors import Problem, WorkbenchError, problem, refusal

RUBRIC_SCHEMA_VERSION = 1

UNSET_RISK = "unset"
"""The risk a drafted rubric gives every slice (``workbench import table``): a person must replace
it with a real level. :func:`load_rubric` refuses a rubric holding it (``rubric_risk_unset``)."""


class Risk(StrEnum):
    """How much harm a wrong verdict in a slice does. ``critical`` means release-critical."""

    critical = "critical"
    high = "high"
    medium = "medium"
    low = "low"


class Scale(StrEnum):
    """What a rubric's labels are: unordered categories, ordered categories, or numbers."""

    nominal = "nominal"
    """Unordered categories (pass/fail, preference labels): only exact agreement counts."""
    ordinal = "ordinal"
    """Ordered categories, e.g. a 1-5 score: ``labels`` lists them from one end of the scale to the
    other."""
    numeric = "numeric"
    """Numbers whose differences are meaningful: every label is a number, listed in increasing
    order."""


class RubricProblems(ValueError):
    """Every inconsistency of a rubric at once, as ``(code, field, message, fix)`` tuples, each a
    :class:`~workbench.errors.Problem` in :func:`load_rubric`."""

    def __init__(self, items: list[tuple[str, str, str, str]]) -> None:
        self.items = items
        super().__init__("; ".join(f"{field}: {message}" for _, field, message, _ in items))


class SliceSpec(BaseModel):
    """One risk slice."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=add_field_docs)

    risk: Risk
    """Risk level; ``critical`` slices are release-critical."""
    description: str = ""
    """What belongs in the slice and why its errors matter."""


EVIDENCE_FIELDS: dict[str, str] = {
    "input": "the user's input",
    "response": "the response under judgment",
    "grading_notes": "the case's grading notes",
    "reference": "the reference answer",
    "contexts": "the retrieved context passages",
    "evidence": "the cited snapshot passages (reviewers only: never sent to a judge)",
}
"""The gold-case fields a judgment may rest on, the names ``allowed_evidence`` may use. The
judge is shown every one of them except those in :data:`REVIEWER_ONLY_EVIDENCE` (a test keeps
this equal to ``workbench.judges.JUDGE_VISIBLE_FIELDS``)."""

CONTRACT_FIELDS = (
    "unit",
    "allowed_evidence",
    "boundaries",
    "precedence",
    "ambiguity",
    "error_costs",
    "use_boundary",
)
"""The rubric fields of the judgment contract beyond the criterion (all required by
``validate --strict``); ``workbench import table`` keeps them when it drafts the rubric again."""

REVIEWER_ONLY_EVIDENCE = frozenset({"evidence"})
"""Evidence fields reviewers see and the judge's request never carries."""


class ErrorCost(BaseModel):
    """What a wrong verdict costs in one slice, relative to the other error classes."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=add_field_docs)

    false_pass: float = Field(gt=0, allow_inf_nan=False)
    """Relative cost of a false pass (the judge passes what reviewers failed)."""
    false_fail: float = Field(gt=0, allow_inf_nan=False)
    """Relative cost of a false fail (the judge fails what reviewers passed)."""
    abstention: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Relative cost of an abstention (a review the judge routes to people); None: not stated."""
    why: str = ""
    """Why these errors cost what they do in this slice (who is harmed, and how)."""


class Ambiguity(BaseModel):
    """What a reviewer does with a case the rubric cannot settle."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=add_field_docs)

    when: str = Field(min_length=1)
    """The observable condition that makes a case ambiguous, e.g. "the grading notes neither
    require nor forbid what the response claims"."""
    action: Literal["label", "escalate"]
    """``label``: give it ``label`` (e.g. an abstain label); ``escalate``: ask for adjudication
    (``annotate submit --escalate``) with the reviewer's best label."""
    label: str | None = None
    """The label an ambiguous case gets (``action: label`` only)."""

    def rule(self) -> str:
        """The rule as one line a reviewer reads."""
        what = (
            f"label it {self.label}"
            if self.action == "label"
            else "give your best label and escalate it (annotate submit --escalate)"
        )
        return f"when {self.when}: {what}"


class Rubric(Record):
    """The judgment contract a gold dataset was reviewed under."""

    schema_version: int = Field(default=RUBRIC_SCHEMA_VERSION, strict=True)
    """Rubric file format version."""
    name: str
    """Short name of the criterion, e.g. ``support-policy-correctness``."""
    version: str
    """The rubric version every case's ``rubric_version`` must equal."""
    criterion: str = ""
    """The one-sentence contract: what the judge decides, from which evidence."""
    labels: list[str] = Field(min_length=2)
    """The label vocabulary; on an ordered scale, in scale order (YAML numbers are read as text)."""
    scale: Scale = Scale.nominal
    """``nominal`` (default, unordered), ``ordinal`` (ordered as ``labels``) or ``numeric``
    (every label a number, increasing)."""
    pass_label: str | None = None
    """The label that means pass (nominal rubrics). ``None`` for rubrics without pass/fail, e.g.
    preferences."""
    fail_label: str | None = None
    """The label that means fail (nominal rubrics)."""
    pass_labels: list[str] | None = None
    """Ordered rubrics: the labels that count as pass, an unbroken run at one end of the scale;
    the other scale labels fail. None: no pass/fail view."""
    abstain_labels: list[str] = Field(default_factory=list)
    """Labels that are neither pass nor fail (abstain, review_required); kept as their own row
    and column. On an ordered scale they are off the scale: ordinal statistics leave them out."""
    min_reviews: int = Field(default=2, ge=1, strict=True)
    """How many independent reviews every case needs."""
    slices: dict[str, SliceSpec] = Field(min_length=1)
    """Every slice a case may belong to, with its risk level."""
    evidence_snapshot: str | None = None
    """Path (relative to the rubric) of the evidence snapshot, JSON Lines of ``{id, text,
    source}``."""
    unit: str = ""
    """The unit of judgment: what one verdict is about, e.g. "one response to one question"."""
    allowed_evidence: list[str] | None = None
    """The case fields the judge and reviewers may use (names of :data:`EVIDENCE_FIELDS`); None:
    not declared. Other packages read it to check what the judge is shown."""
    boundaries: dict[str, str] = Field(default_factory=dict)
    """Per label, the observable condition that puts a case in that label."""
    precedence: list[str] = Field(default_factory=list)
    """Labels, the deciding one first: a case meeting the boundaries of several labels takes the
    first listed (unlisted labels rank after listed ones, in ``labels`` order)."""
    ambiguity: Ambiguity | None = None
    """What a reviewer does with an ambiguous case."""
    error_costs: dict[str, ErrorCost] = Field(default_factory=dict)
    """Per slice, the relative cost of a false pass, a false fail and an abstention. Shown beside
    the policy's limits; the limits stay the gate's rule."""
    use_boundary: str = ""
    """What the judge must not be used for, e.g. "never the only check before a refund is
    promised"."""

    @field_validator("labels", "pass_labels", "abstain_labels", mode="before")
    @classmethod
    def _numbers_as_label_lists(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [_number_as_label(v) for v in value]
        return value

    @field_validator("pass_label", "fail_label", mode="before")
    @classmethod
    def _numbers_as_labels(cls, value: Any) -> Any:
        return _number_as_label(value)

    @model_validator(mode="after")
    def _labels_consistent(self) -> Rubric:
        problems = _label_problems(self)
        if problems:
            raise RubricProblems(problems)
        return self

    @property
    def ordered(self) -> bool:
        """True for ``ordinal`` and ``numeric`` rubrics."""
        return self.scale != Scale.nominal

    @property
    def scale_labels(self) -> list[str]:
        """The labels on the scale, in scale order: ``labels`` without the abstain labels."""
        return [label for label in self.labels if label not in self.abstain_labels]

    @property
    def scale_values(self) -> dict[str, float] | None:
        """Each scale label's value for distance-based statistics: the number (``numeric``) or
        its 1-based rank (``ordinal``); None for nominal rubrics."""
        if self.scale == Scale.numeric:
            return {label: float(label) for label in self.scale_labels}
        if self.scale == Scale.ordinal:
            return {label: float(i) for i, label in enumerate(self.scale_labels, start=1)}
        return None

    @property
    def fail_labels(self) -> list[str] | None:
        """Ordered rubrics with ``pass_labels``: the other scale labels, which count as fail."""
        if self.pass_labels is None:
            return None
        return [label for label in self.scale_labels if label not in self.pass_labels]

    def pass_fail(self, label: str) -> Literal["pass", "fail"] | None:
        """The pass/fail view of one label: ``"pass"``, ``"fail"`` or None (abstain, or no view);
        ``ValueError`` for a label outside the vocabulary."""
        if label not in self.labels:
            raise ValueError(f"label {label!r} is not one of {self.labels}")
        if self.pass_labels is not None:
            if label in self.pass_labels:
                return "pass"
            return "fail" if label in self.scale_labels else None
        if label == self.pass_label:
            return "pass"
        return "fail" if self.fail_label is not None and label == self.fail_label else None

    def contract_gaps(self) -> list[tuple[str, str, str]]:
        """The parts of the judgment contract this rubric leaves out, as ``(field, message,
        fix)``: what ``validate --strict`` refuses."""
        return list(_contract_gaps(self))

    @property
    def critical_slices(self) -> list[str]:
        return [name for name, spec in self.slices.items() if spec.risk == Risk.critical]

    def risk_of(self, slice_name: str) -> str | None:
        spec = self.slices.get(slice_name)
        return spec.risk.value if spec else None


def _number_as_label(value: Any) -> Any:
    """YAML reads ``[1, 2, 3]`` as numbers; labels are text."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return str(value)
    return value


def _as_number(label: str) -> float | None:
    try:
        value = float(label)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


Issue = tuple[str, str, str, str]
"""One inconsistency of a rubric: ``(code, field, message, fix)``."""


def _label_problems(r: Rubric) -> list[Issue]:
    """Every inconsistency of labels, scale, pass/fail and abstain labels."""
    steps = [_vocabulary_issues, _abstain_issues, _contract_issues]
    if r.scale == Scale.nominal:
        steps.append(_nominal_issues)
    else:
        steps += [_ordered_issues, _pass_labels_issues]
    return [issue for step in steps for issue in step(r)]


def _invalid(field: str, message: str, fix: str) -> Issue:
    return ("rubric_invalid", field, message, fix)


def _scale(field: str, message: str, fix: str) -> Issue:
    return ("rubric_scale", field, message, fix)


def _vocabulary_issues(r: Rubric) -> Iterator[Issue]:
    """Each label listed once; ``pass_label`` and ``fail_label`` labels, both or neither, apart."""
    duplicates = sorted({label for label in r.labels if r.labels.count(label) > 1})
    if duplicates:
        yield _invalid(
            "labels", f"labels contains duplicates: {duplicates}", "list every label once"
        )
    for name in ("pass_label", "fail_label"):
        value = getattr(r, name)
        if value is not None and value not in r.labels:
            message = f"{name} {value!r} is not one of labels {r.labels}"
            yield _invalid(name, message, f"set {name} to one of {r.labels}, or add it to labels")
    if (r.pass_label is None) != (r.fail_label is None):
        message = "declare both pass_label and fail_label, or neither"
        fix = "add the missing one, or remove both for a rubric without pass/fail"
        yield _invalid("pass_label", message, fix)
    if r.pass_label is not None and r.pass_label == r.fail_label:
        message, fix = "pass_label and fail_label must differ", "name two different labels"
        yield _invalid("fail_label", message, fix)


def _abstain_issues(r: Rubric) -> Iterator[Issue]:
    for label in r.abstain_labels:
        if label not in r.labels:
            message = f"abstain label {label!r} is not one of labels {r.labels}"
            yield _invalid(
                "abstain_labels", message, "add it to labels or remove it from abstain_labels"
            )
        if label in (r.pass_label, r.fail_label) or (r.pass_labels and label in r.pass_labels):
            message = f"abstain label {label!r} cannot also be pass or fail"
            fix = "remove it from abstain_labels or from the pass/fail labels"
            yield _invalid("abstain_labels", message, fix)


def _nominal_issues(r: Rubric) -> Iterator[Issue]:
    if r.pass_labels is not None:
        message = "pass_labels is for ordered rubrics, and this rubric's scale is nominal"
        fix = (
            "declare scale: ordinal (or numeric) for an ordered scale, or use pass_label and"
            " fail_label"
        )
        yield _scale("pass_labels", message, fix)


def _ordered_issues(r: Rubric) -> Iterator[Issue]:
    """An ordered rubric: ``pass_labels``, two scale labels or more, numbers increasing."""
    scale, scale_labels = r.scale.value, r.scale_labels
    if r.pass_label is not None or r.fail_label is not None:
        example = scale_labels[-2:] if len(scale_labels) >= 3 else scale_labels[-1:]
        message = (
            f"a {scale} rubric declares its pass labels with pass_labels, not pass_label/fail_label"
        )
        fix = (
            f"replace pass_label and fail_label with pass_labels, e.g. pass_labels: {example};"
            " every other scale label then counts as fail"
        )
        yield _scale("pass_label", message, fix)
    if len(scale_labels) < 2:
        message = (
            f"a {scale} scale needs at least two labels that are not abstain labels; it has"
            f" {scale_labels}"
        )
        fix = (
            "list the scale's labels, lowest first, and keep abstain labels for answers off the"
            " scale"
        )
        yield _scale("labels", message, fix)
    if r.scale == Scale.numeric:
        yield from _numeric_issues(scale_labels)


def _numeric_issues(scale_labels: list[str]) -> Iterator[Issue]:
    not_numbers = [label for label in scale_labels if _as_number(label) is None]
    if not_numbers:
        message = f"a numeric scale needs number labels; {not_numbers} are not finite numbers"
        fix = (
            "use numbers (e.g. 0, 0.5, 1), declare the others as abstain_labels, or use scale:"
            " ordinal for ordered categories"
        )
        yield _scale("labels", message, fix)
    numbers = [label for label in scale_labels if label not in not_numbers]
    values = [float(label) for label in numbers]
    if len(set(values)) != len(values):
        message = f"numeric labels {numbers} name the same number twice"
        yield _scale("labels", message, "list each number once")
    elif values != sorted(values):
        message = f"numeric labels must be listed in increasing order; got {numbers}"
        yield _scale("labels", message, f"list them as {sorted(numbers, key=float)}")


def _pass_labels_issues(r: Rubric) -> Iterator[Issue]:
    """``pass_labels``: known, unique, not all, an unbroken run at one end of the scale."""
    if r.pass_labels is None:
        return
    scale_labels = r.scale_labels
    unknown = [label for label in r.pass_labels if label not in r.labels]
    if unknown:
        message = f"pass_labels {unknown} are not among labels {r.labels}"
        yield _scale("pass_labels", message, f"choose pass labels among {scale_labels}")
    if len(set(r.pass_labels)) != len(r.pass_labels):
        message = f"pass_labels contains duplicates: {r.pass_labels}"
        yield _scale("pass_labels", message, "list every pass label once")
    on_scale = [label for label in r.pass_labels if label in scale_labels]
    if not r.pass_labels:
        message = "pass_labels is empty: no label would count as pass"
        fix = (
            f"list the passing labels, e.g. pass_labels: {scale_labels[-1:]}, or remove pass_labels"
        )
        yield _scale("pass_labels", message, fix)
    elif len(set(on_scale)) == len(scale_labels):
        message = "every scale label is a pass label: nothing could fail"
        yield _scale("pass_labels", message, "leave at least one scale label out of pass_labels")
    elif on_scale:
        positions = sorted({scale_labels.index(label) for label in on_scale})
        run = positions == list(range(positions[0], positions[-1] + 1))
        if not (run and (positions[0] == 0 or positions[-1] == len(scale_labels) - 1)):
            message = (
                f"pass_labels {r.pass_labels} are not an unbroken run at one end of the scale"
                f" {scale_labels}"
            )
            fix = (
                f"a pass region is a threshold: use the top labels, e.g."
                f" {scale_labels[-len(positions) :]}, or the bottom ones for a scale where lower is"
                " better"
            )
            yield _scale("pass_labels", message, fix)


def _contract_issues(r: Rubric) -> Iterator[Issue]:
    """Declared contract fields that name what the rubric does not have."""
    known = ", ".join(EVIDENCE_FIELDS)
    if r.allowed_evidence is not None:
        unknown = [name for name in r.allowed_evidence if name not in EVIDENCE_FIELDS]
        if unknown:
            message = f"allowed_evidence names unknown case field(s) {unknown}"
            yield _invalid("allowed_evidence", message, f"use names among: {known}")
        if not r.allowed_evidence:
            message = "allowed_evidence is empty: no verdict could rest on anything"
            yield _invalid("allowed_evidence", message, f"list the fields used, among: {known}")
        if len(set(r.allowed_evidence)) != len(r.allowed_evidence):
            message = f"allowed_evidence lists a field twice: {r.allowed_evidence}"
            yield _invalid("allowed_evidence", message, "list every field once")
    for field, names in (("boundaries", list(r.boundaries)), ("precedence", r.precedence)):
        unknown = [name for name in names if name not in r.labels]
        if unknown:
            message = f"{field} names {unknown}, which are not labels {r.labels}"
            yield _invalid(field, message, f"name labels among {r.labels}")
    if len(set(r.precedence)) != len(r.precedence):
        message = f"precedence lists a label twice: {r.precedence}"
        yield _invalid("precedence", message, "list every label once, the deciding one first")
    yield from _ambiguity_issues(r)
    yield from _cost_issues(r)


def _ambiguity_issues(r: Rubric) -> Iterator[Issue]:
    rule = r.ambiguity
    if rule is None:
        return
    if rule.action == "label" and rule.label not in r.labels:
        message = f"ambiguity.label {rule.label!r} is not one of labels {r.labels}"
        fix = f"set ambiguity.label to one of {r.labels} (e.g. an abstain label)"
        yield _invalid("ambiguity", message, fix)
    if rule.action == "escalate" and rule.label is not None:
        message = "ambiguity.action escalate takes no label: the reviewer gives their best label"
        yield _invalid("ambiguity", message, "remove ambiguity.label, or use action: label")


def _cost_issues(r: Rubric) -> Iterator[Issue]:
    unknown = [name for name in r.error_costs if name not in r.slices]
    if unknown:
        message = f"error_costs names {unknown}, which are not slices {list(r.slices)}"
        yield _invalid("error_costs", message, "give costs only for the rubric's slices")
    for name in r.critical_slices:
        cost = r.error_costs.get(name)
        if cost is not None and cost.false_pass < cost.false_fail:
            message = (
                f"slice {name!r} is critical (a false pass is release-critical) but its false_pass"
                f" cost {cost.false_pass:g} is below its false_fail cost {cost.false_fail:g}"
            )
            fix = "raise false_pass to at least false_fail, or lower the slice's risk"
            yield _invalid("error_costs", message, fix)


def _contract_gaps(r: Rubric) -> Iterator[tuple[str, str, str]]:
    """Every part of the judgment contract left out (``validate --strict``)."""
    if not r.criterion.strip():
        message = "the rubric states no criterion: reviewers and judges answer no written question"
        yield "criterion", message, "write criterion: <the question a reviewer answers>"
    texts = {
        "unit": ("no unit of judgment", 'unit: "one response to one question"'),
        "use_boundary": (
            "no use boundary: nothing says what the judge must not be used for",
            'use_boundary: "<what the judge may never decide alone>"',
        ),
    }
    for field, (message, example) in texts.items():
        if not getattr(r, field).strip():
            yield field, f"the rubric states {message}", f"write {example}"
    if r.allowed_evidence is None:
        message = "the rubric does not say which case fields the judge and reviewers may use"
        shown = ", ".join(f for f in EVIDENCE_FIELDS if f not in REVIEWER_ONLY_EVIDENCE)
        yield "allowed_evidence", message, f"list them, e.g. allowed_evidence: [{shown}]"
    unseen = sorted(REVIEWER_ONLY_EVIDENCE.intersection(r.allowed_evidence or []))
    if unseen:
        message = (
            f"names {unseen}, which the judge is never shown: the judge and the"
            " reviewers would decide from different evidence"
        )
        yield "allowed_evidence", message, "remove it, or copy the passages into grading_notes"
    unbounded = [label for label in r.labels if not r.boundaries.get(label, "").strip()]
    if unbounded:
        message = f"labels {unbounded} have no observable boundary"
        yield "boundaries", message, "write boundaries: {<label>: <what puts a case in it>}"
    if not r.precedence:
        message = "nothing says which label wins when the boundaries of several apply"
        order = [r.fail_label, *r.abstain_labels, r.pass_label] if r.fail_label else r.labels
        fix = f"write precedence: the labels, the deciding one first, e.g. {order}"
        yield "precedence", message, fix
    if r.ambiguity is None:
        message = "nothing says what a reviewer does with a case the rubric cannot settle"
        fix = "write ambiguity: {when: <condition>, action: label | escalate, label: <label>}"
        yield "ambiguity", message, fix
    costless = [name for name in r.slices if name not in r.error_costs]
    if costless:
        message = f"slices {costless} have no error costs"
        fix = "write error_costs: {<slice>: {false_pass: <n>, false_fail: <n>, why: <text>}}"
        yield "error_costs", message, fix


def load_rubric(path: str | Path) -> Rubric:
    """Read and check a rubric file; raise :class:`WorkbenchError` listing every problem."""
    path = Path(path)
    location = str(path)
    if not path.exists():
        message = "the rubric file does not exist"
        fix = (
            "create rubric.yaml beside gold.jsonl declaring name, version, labels,"
            " pass_label, fail_label and slices"
        )
        raise refusal("no rubric", location, "rubric_missing", message, fix)
    raw = read_yaml(path, prefix="rubric")
    if not isinstance(raw, dict):
        message = "the rubric must be a YAML mapping"
        fix = "write the rubric as key: value pairs"
        raise refusal("unreadable rubric", location, "rubric_shape", message, fix)
    unset = _unset_risks(raw, path, location)
    if unset:  # check everything else too, so the person sees every problem at once
        names = {name for name, _ in unset}
        slices = raw["slices"].items()
        raw["slices"] = {k: {**v, "risk": Risk.low.value} if k in names else v for k, v in slices}
    try:
        rubric = Rubric.model_validate(raw)
    except SchemaTooNew as exc:
        raise WorkbenchError("rubric from a newer workbench", [exc.problem_at(location)]) from None
    except ValidationError as exc:
        problems = validation_problems(
            exc,
            at=location,
            code="rubric_invalid",
            root="rubric",
            fix="correct this rubric field; see docs/formats.md#rubric",
            expand=_rubric_problems,
        )
        raise WorkbenchError("invalid rubric", [p for _, p in unset] + problems) from None
    if unset:
        raise WorkbenchError(
            f"{location}: {len(unset)} slice(s) without a risk level", [p for _, p in unset]
        )
    return rubric


def _rubric_problems(err: Any, _dotted: str, location: str) -> list[Problem] | None:
    found = rule_error(err)
    if not isinstance(found, RubricProblems):
        return None
    return [
        problem(location, code, f"{field}: {message}", fix)
        for code, field, message, fix in found.items
    ]


def _unset_risks(raw: dict[str, Any], path: Path, location: str) -> list[tuple[str, Problem]]:
    """Slices whose ``risk`` is still :data:`UNSET_RISK`, each with a problem at its line."""
    slices = raw.get("slices")
    if not isinstance(slices, dict):
        return []
    names = [
        name
        for name, spec in slices.items()
        if isinstance(spec, dict) and spec.get("risk") == UNSET_RISK
    ]
    if not names:
        return []
    try:
        at = Lines(location, yaml_lines(read_bounded(path).decode("utf-8"))).at
    except (UnicodeDecodeError, WorkbenchError):  # pragma: no cover - the file was parsed above
        at = Lines(location, {}).at
    message = (
        "slice {!r} has risk 'unset': nobody has said how much harm a wrong verdict in it does"
    )
    fix = (
        "set its risk to critical, high, medium or low (critical: a false pass is"
        " release-critical); the policy's risk for the slice must then equal it"
    )
    where = {name: at("slices", str(name), "risk") for name in names}
    return [
        (name, problem(where[name], "rubric_risk_unset", message.format(name), fix))
        for name in names
    ]
