"""Authored content of the demo dataset (Tallowmere, an invented homeware shop): package data
under ``workbench/demo/content/``, read once on import and validated by :func:`load_content`. The
generator consumes random numbers in file order, so reordering the files changes ``data/demo``."""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import Field, TypeAdapter, ValidationError

from .._io import JSONRecordError, loads_json
from .._load import Problems, parse_yaml, validation_problems
from .._record import Record as _Content
from ..errors import Problem, WorkbenchError, problem

AltKind = Literal["abbreviation", "synonym", "spelling-variant", "plain-language"]
Risk = Literal["critical", "high", "medium", "low"]
NonEmpty = Annotated[str, Field(min_length=1)]
Label = Literal["pass", "fail", "review_required"]

CONTENT = "content"


class SliceInfo(_Content):
    """A risk slice of the rubric and the case-id prefix of its topics."""

    name: NonEmpty
    prefix: NonEmpty
    risk: Risk
    description: NonEmpty
    filler: NonEmpty


class Handbook(_Content):
    """``handbook.yaml``: the shop, its policy handbook and the risk slices, in rubric order."""

    company: NonEmpty
    handbook: NonEmpty
    slices: tuple[SliceInfo, ...] = Field(min_length=1)


class Passage(_Content):
    """One line of ``evidence.jsonl``: a policy passage of the handbook."""

    id: NonEmpty
    text: NonEmpty
    section: NonEmpty


class ApprovedTerm(_Content):
    """A house term and the alternatives reviewers accept for it (listed in the card)."""

    concept: NonEmpty
    accepted: NonEmpty


class Phrases(_Content):
    """``phrases.yaml``: approved terminology and the phrases responses are padded with."""

    approved_terms: tuple[ApprovedTerm, ...]
    openers: tuple[str, ...] = Field(min_length=1)
    closers: tuple[str, ...] = Field(min_length=1)
    verbose_openers: tuple[str, ...] = Field(min_length=1)
    verbose_closers: tuple[str, ...] = Field(min_length=1)


class Concept(_Content):
    """A required concept: the key phrase in the grading notes and its sentences."""

    key: NonEmpty
    meaning: NonEmpty
    canonical: NonEmpty
    alternative: str | None = None
    alt_term: str | None = None
    alt_kind: AltKind = "abbreviation"


class Claim(_Content):
    """A prohibited claim: the key phrase in the grading notes and its sentences."""

    key: NonEmpty
    meaning: NonEmpty
    verbatim: NonEmpty
    paraphrase: NonEmpty
    negated: NonEmpty
    negated_after: str | None = None
    abbreviated: str | None = None
    abbreviated_term: str | None = None


class Special(_Content):
    """A hand-written whole response with its adjudicated label and why."""

    kind: Literal["ambiguous", "false-reassurance", "near-synonym", "wrong-polarity"]
    response: NonEmpty
    label: Label
    note: NonEmpty


class Topic(_Content):
    """One source question (a paraphrase family), filed under ``topics/<slice>.yaml``: its
    required concepts and prohibited claim with the sentences responses are composed from;
    ``wrong`` replaces ``concepts[wrong_replaces]``; ``specials`` are hand-written responses."""

    slice: NonEmpty
    slug: NonEmpty
    questions: tuple[str, ...] = Field(min_length=1)
    evidence: tuple[str, ...] = Field(min_length=1)
    concepts: tuple[Concept, ...] = Field(min_length=1)
    claim: Claim
    wrong: NonEmpty
    wrong_replaces: int = Field(ge=0)
    extra: NonEmpty
    specials: tuple[Special, ...] = ()


class VariantText(_Content):
    """How one kind of response variant is drawn, labelled and explained (``variants.yaml``)."""

    label: Label | None = None
    tags: tuple[str, ...]
    why: str = ""
    dissent: str
    chance: float | None = Field(default=None, ge=0, le=1)
    rule: str | None = None


class Correction(_Content):
    """A wrongly adjudicated record of ``kind`` that a later correction supersedes."""

    kind: NonEmpty
    disagreed: bool
    wrong_label: Label
    wrong_reason: NonEmpty
    fix_reason: NonEmpty


class Variants(_Content):
    """``variants.yaml``: the generated and hand-written kinds, disagreement shares, corrections."""

    kinds: dict[str, VariantText]
    specials: dict[str, VariantText]
    disagreement: dict[str, float]
    corrections: tuple[Correction, ...]


class Content(NamedTuple):
    """Everything :func:`load_content` read."""

    handbook: Handbook
    evidence: tuple[Passage, ...]
    phrases: Phrases
    topics: tuple[Topic, ...]
    variants: Variants


_TOPICS = TypeAdapter(tuple[Topic, ...])
_UNREAD = object()
"""What :func:`_yaml` returns for a file it could not read or parse (its problem is listed)."""


def _problems(exc: ValidationError, loc: str, prefix: str = "") -> list[Problem]:
    def message(e: Any, _: str) -> str:
        path = ".".join(map(str, (*([prefix] if prefix else []), *e["loc"])))
        return f"{path or 'file'}: {e['msg']}"

    fix = f"correct the field; the models are in {__name__}"
    return validation_problems(exc, at=loc, code="demo_content_invalid", fix=fix, message=message)


def _yaml(root: Traversable, name: str, problems: list[Problem]) -> Any:
    loc = f"workbench/demo/{CONTENT}/{name}"
    try:
        return parse_yaml(_read(root, name, loc), loc, prefix="demo_content")
    except WorkbenchError as exc:
        problems.extend(exc.problems)
    return _UNREAD


def _read(root: Traversable, name: str, loc: str) -> str:
    try:
        return root.joinpath(*name.split("/")).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        missing = Problems()
        fix = "reinstall the workbench; the demo content ships with it"
        missing.add(loc, "demo_content_missing", f"cannot read the file ({exc})", fix)
        missing.fail("unreadable demo content")


def _validate(model: Any, raw: Any, loc: str, problems: list[Problem], prefix: str = "") -> Any:
    if raw is _UNREAD:
        return None
    try:
        return (
            model.validate_python(raw)
            if isinstance(model, TypeAdapter)
            else model.model_validate(raw)
        )
    except ValidationError as exc:
        problems.extend(_problems(exc, loc, prefix))
        return None


def _evidence(root: Traversable, problems: list[Problem]) -> list[Passage] | None:
    loc = f"workbench/demo/{CONTENT}/evidence.jsonl"
    try:
        text = _read(root, "evidence.jsonl", loc)
    except WorkbenchError as exc:
        problems.extend(exc.problems)
        return None
    before, out = len(problems), list[Passage]()
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            raw = loads_json(line)
        except (JSONRecordError, ValueError) as exc:
            message, fix = f"not valid JSON ({exc})", "write one JSON object a line"
            problems.append(problem(f"{loc}:{number}", "demo_content_json", message, fix))
            continue
        out.append(_validate(Passage, raw, f"{loc}:{number}", problems))
    return out if len(problems) == before else None


def _cross_checks(
    evidence: list[Passage] | None, topics: list[Topic], problems: list[Problem]
) -> None:
    """Duplicate ids and slugs, cited passages, concept positions (cited passages only when
    every passage was read, so a broken line is not reported again as missing passages)."""
    where = f"workbench/demo/{CONTENT}"
    found = Problems()
    ids = [p.id for p in evidence or ()]
    slugs = [t.slug for t in topics]
    for loc, what, values, fix in (
        (f"{where}/evidence.jsonl", "passage id", ids, "give every passage its own id"),
        (f"{where}/topics", "topic slug", slugs, "give every topic its own slug"),
    ):
        for dup in sorted({v for v in values if values.count(v) > 1}):
            message = f"{what} {dup!r} appears more than once"
            found.add(loc, "demo_content_duplicate", message, fix)
    for topic in topics:
        loc = f"{where}/topics/{topic.slice}.yaml"
        for eid in topic.evidence if evidence is not None else ():
            if eid not in ids:
                found.add(
                    loc,
                    "demo_content_unknown_evidence",
                    f"topic {topic.slug!r} cites passage {eid!r}, which evidence.jsonl lacks",
                    "cite a passage id of evidence.jsonl",
                )
        if topic.wrong_replaces >= len(topic.concepts):
            found.add(
                loc,
                "demo_content_invalid",
                f"topic {topic.slug!r}: wrong_replaces {topic.wrong_replaces} names no concept"
                f" ({len(topic.concepts)} concepts)",
                "name a concept by its 0-based position",
            )
    problems.extend(found)


def load_content(root: Traversable | None = None) -> Content:
    """Read and validate the content files under ``root`` (default: the packaged ones)."""
    root = root if root is not None else files(__package__).joinpath(CONTENT)
    problems: list[Problem] = []
    handbook, phrases, variants = (
        _validate(model, _yaml(root, name, problems), f"workbench/demo/{CONTENT}/{name}", problems)
        for model, name in (
            (Handbook, "handbook.yaml"),
            (Phrases, "phrases.yaml"),
            (Variants, "variants.yaml"),
        )
    )
    evidence = _evidence(root, problems)
    topics: list[Topic] = []
    for info in handbook.slices if handbook is not None else ():
        name = f"topics/{info.name}.yaml"
        loc = f"workbench/demo/{CONTENT}/{name}"
        found = _validate(_TOPICS, _yaml(root, name, problems), loc, problems, prefix="topics")
        for topic in (t for t in found or () if t.slice != info.name):
            message = f"topic {topic.slug!r} belongs to slice {topic.slice!r}, not {info.name!r}"
            fix = f"move it to topics/{topic.slice}.yaml"
            problems.append(problem(loc, "demo_content_slice", message, fix))
        topics.extend(found or ())
    _cross_checks(evidence, topics, problems)
    if problems or handbook is None or phrases is None or evidence is None or variants is None:
        raise WorkbenchError(f"the demo content is invalid: {len(problems)} problem(s)", problems)
    return Content(handbook, tuple(evidence), phrases, tuple(topics), variants)


_CONTENT = load_content()

HANDBOOK = _CONTENT.handbook.handbook
SLICES: tuple[SliceInfo, ...] = _CONTENT.handbook.slices
EVIDENCE: tuple[tuple[str, str, str], ...] = tuple(
    (p.id, p.text, p.section) for p in _CONTENT.evidence
)
"""(id, text, section) of every policy passage."""
APPROVED_TERMS: tuple[tuple[str, str], ...] = tuple(
    (t.concept, t.accepted) for t in _CONTENT.phrases.approved_terms
)
OPENERS: tuple[str, ...] = _CONTENT.phrases.openers
CLOSERS: tuple[str, ...] = _CONTENT.phrases.closers
VERBOSE_OPENERS: tuple[str, ...] = _CONTENT.phrases.verbose_openers
VERBOSE_CLOSERS: tuple[str, ...] = _CONTENT.phrases.verbose_closers
TOPICS: tuple[Topic, ...] = _CONTENT.topics
VARIANTS: Variants = _CONTENT.variants
