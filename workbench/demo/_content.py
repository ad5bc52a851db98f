"""Authored content of the demo dataset: a fictional retailer's support policies and topics.

Everything here was written for this project. "Tallowmere" is an invented online homeware
shop; its policies, the customer questions and the support-bot responses are synthetic.

The content itself is package data under ``workbench/demo/content/``; this module holds the
models it must satisfy and reads it once, on import, through :func:`load_content`:

* ``handbook.yaml``: the shop, the handbook's title and the risk slices (:class:`SliceInfo`);
* ``evidence.jsonl``: one policy passage a line (:class:`Passage`); cases and reviews cite
  their ids;
* ``phrases.yaml``: the approved terminology and the openers and closers responses are
  padded with (:class:`Phrases`);
* ``topics/<slice>.yaml``: the slice's topics, in generation order (:class:`Topic`);
* ``variants.yaml``: each kind of response's label, tags and texts (:class:`Variants`);
* ``card.yaml`` and ``card.md``: the dataset card's front matter and body, with ``{fields}``
  the builder fills in (read by :mod:`workbench.demo.build`).

A :class:`Topic` is one source question (a paraphrase family). It declares the required
concepts and the prohibited claim a correct answer is graded against, each with the
sentences the generator composes responses from: the canonical wording, an alternative
wording (abbreviation, synonym, spelling variant or plain language), and the prohibited
claim stated verbatim, paraphrased, denied, and (for some) abbreviated. ``specials`` are
whole responses written by hand: genuinely ambiguous answers and deliberate traps.

The generator consumes its random numbers in the order of these files, so reordering
topics, sentences or phrases changes ``data/demo`` (``tests/test_demo_data.py`` catches it).
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import Field, TypeAdapter, ValidationError

from .._io import JSONRecordError, loads_json
from .._load import Problems, parse_yaml, validation_problems
from .._record import Record as _Content
from ..errors import Problem, WorkbenchError

AltKind = Literal["abbreviation", "synonym", "spelling-variant", "plain-language"]
Risk = Literal["critical", "high", "medium", "low"]
NonEmpty = Annotated[str, Field(min_length=1)]

CONTENT = "content"
"""The package-data directory (under ``workbench/demo``) that holds the content files."""


class SliceInfo(_Content):
    """A risk slice of the rubric and the case-id prefix of its topics."""

    name: NonEmpty
    """The slice name cases carry (``snake_case``)."""
    prefix: NonEmpty
    """The case-id prefix of the slice's topics."""
    risk: Risk
    """The slice's risk level in the generated rubric."""
    description: NonEmpty
    """The slice's description in the generated rubric."""
    filler: NonEmpty
    """A correct, on-topic sentence used to pad verbose answers."""


class Handbook(_Content):
    """``handbook.yaml``: the shop, its policy handbook and the risk slices, in rubric order."""

    company: NonEmpty
    """The invented shop's name."""
    handbook: NonEmpty
    """The handbook's title, cited as the source of every evidence passage."""
    slices: tuple[SliceInfo, ...] = Field(min_length=1)
    """The risk slices; topics are generated slice by slice in this order."""


class Passage(_Content):
    """One line of ``evidence.jsonl``: a policy passage of the handbook."""

    id: NonEmpty
    """The passage id cases and reviews cite (``pol-<area>-<nn>``)."""
    text: NonEmpty
    """The passage itself."""
    section: NonEmpty
    """The handbook section it comes from (``§2.1 Refund window``)."""


class ApprovedTerm(_Content):
    """A house term and the alternatives reviewers accept for it (listed in the card)."""

    concept: NonEmpty
    """The term as the grading notes use it."""
    accepted: NonEmpty
    """The accepted alternatives, comma-separated as the card shows them."""


class Phrases(_Content):
    """``phrases.yaml``: approved terminology and the phrases responses are padded with."""

    approved_terms: tuple[ApprovedTerm, ...]
    """The terminology reviewers accept for required concepts. Plain equivalent wording also
    counts; this list only settles abbreviations and house terms."""
    openers: tuple[str, ...] = Field(min_length=1)
    """Openers of concise responses (``""`` for none)."""
    closers: tuple[str, ...] = Field(min_length=1)
    """Closers of concise responses (``""`` for none)."""
    verbose_openers: tuple[str, ...] = Field(min_length=1)
    """Openers of verbose responses."""
    verbose_closers: tuple[str, ...] = Field(min_length=1)
    """Closers of verbose responses."""


class Concept(_Content):
    """A required concept: the key phrase in the grading notes and its sentences."""

    key: NonEmpty
    """The key phrase the grading notes require."""
    meaning: NonEmpty
    """What stating the concept means, as the grading notes explain it."""
    canonical: NonEmpty
    """The sentence stating it in the policy's own words."""
    alternative: str | None = None
    """The sentence stating it in other words (absent: the topic has no alternative)."""
    alt_term: str | None = None
    """The other words ``alternative`` uses in place of the key phrase."""
    alt_kind: AltKind = "abbreviation"
    """What kind of other words ``alternative`` uses."""


class Claim(_Content):
    """A prohibited claim: the key phrase in the grading notes and its sentences."""

    key: NonEmpty
    """The key phrase the grading notes prohibit."""
    meaning: NonEmpty
    """What asserting the claim means, as the grading notes explain it."""
    verbatim: NonEmpty
    """Asserts the claim using the key phrase."""
    paraphrase: NonEmpty
    """Asserts the claim in other words."""
    negated: NonEmpty
    """Denies the claim with a negation cue before the key phrase."""
    negated_after: str | None = None
    """Denies the claim with the negation after the key phrase (or only implied)."""
    abbreviated: str | None = None
    """Asserts the claim using an abbreviation of the key phrase."""
    abbreviated_term: str | None = None
    """The abbreviation ``abbreviated`` uses."""


class Special(_Content):
    """A hand-written whole response with its adjudicated label and why."""

    kind: Literal["ambiguous", "false-reassurance", "near-synonym", "wrong-polarity"]
    """The trap or ambiguity the response is an instance of."""
    response: NonEmpty
    """The whole response."""
    label: Literal["pass", "fail", "review_required"]
    """The adjudicated gold label."""
    note: NonEmpty
    """Why: the adjudication's reason."""


class Topic(_Content):
    """One source question: a paraphrase family of inputs and its grading evidence."""

    slice: NonEmpty
    """The risk slice; it must be the name of the file that holds the topic."""
    slug: NonEmpty
    """The topic's name in case ids and groups."""
    questions: tuple[str, ...] = Field(min_length=1)
    """Paraphrases of the customer's question."""
    evidence: tuple[str, ...] = Field(min_length=1)
    """Ids of the passages (``evidence.jsonl``) that grade it."""
    concepts: tuple[Concept, ...] = Field(min_length=1)
    """The required concepts, in the order responses state them."""
    claim: Claim
    """The prohibited claim."""
    wrong: NonEmpty
    """A confident but wrong sentence that replaces ``concepts[wrong_replaces]``."""
    wrong_replaces: int = Field(ge=0)
    """Which concept ``wrong`` replaces (0-based)."""
    extra: NonEmpty
    """One more correct detail for verbose answers."""
    specials: tuple[Special, ...] = ()
    """Hand-written whole responses: ambiguous answers and traps."""


class VariantText(_Content):
    """How one kind of response variant is labelled and explained (``variants.yaml``)."""

    label: Literal["pass", "fail", "review_required"] | None = None
    """The adjudicated label (a hand-written response carries its own)."""
    tags: tuple[str, ...]
    """The response-style tags (none: the kinds of alternative the response uses)."""
    why: str = ""
    """Why the label holds, with ``{fields}`` filled in by the builder (a hand-written response
    carries its own)."""
    dissent: str
    """What a reviewer who disagreed writes, with ``{fields}`` filled in by the builder."""


class Variants(_Content):
    """``variants.yaml``: the generated kinds of response and the hand-written kinds."""

    kinds: dict[str, VariantText]
    """The generated kinds, in the order a topic may add them."""
    specials: dict[str, VariantText]
    """The hand-written kinds (:class:`Special`)."""


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
    """A content file's text; an unreadable one is one ``demo_content_missing`` problem."""
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
    """The passages, or ``None`` when a line could not be read (its problem is listed)."""
    loc = f"workbench/demo/{CONTENT}/evidence.jsonl"
    try:
        text = _read(root, "evidence.jsonl", loc)
    except WorkbenchError as exc:
        problems.extend(exc.problems)
        return None
    out: list[Passage] = []
    complete = True
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            raw = loads_json(line)
        except (JSONRecordError, ValueError) as exc:
            message, fix = f"not valid JSON ({exc})", "write one JSON object a line"
            problems.append(
                Problem(
                    location=f"{loc}:{number}", code="demo_content_json", message=message, fix=fix
                )
            )
            complete = False
            continue
        passage = _validate(Passage, raw, f"{loc}:{number}", problems)
        complete = complete and passage is not None
        out.extend([passage] if passage is not None else [])
    return out if complete else None


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
    """Read and validate the content files under ``root`` (default: the packaged ones).

    Raises :class:`WorkbenchError` listing every problem: YAML or JSON syntax, a field that
    breaks its model, a topic filed under another slice, a duplicate id or slug, a cited
    passage that does not exist.
    """
    root = root if root is not None else files(__package__).joinpath(CONTENT)
    problems: list[Problem] = []
    handbook = _validate(
        Handbook,
        _yaml(root, "handbook.yaml", problems),
        f"workbench/demo/{CONTENT}/handbook.yaml",
        problems,
    )
    phrases = _validate(
        Phrases,
        _yaml(root, "phrases.yaml", problems),
        f"workbench/demo/{CONTENT}/phrases.yaml",
        problems,
    )
    variants = _validate(
        Variants,
        _yaml(root, "variants.yaml", problems),
        f"workbench/demo/{CONTENT}/variants.yaml",
        problems,
    )
    evidence = _evidence(root, problems)
    topics: list[Topic] = []
    for info in handbook.slices if handbook is not None else ():
        name = f"topics/{info.name}.yaml"
        loc = f"workbench/demo/{CONTENT}/{name}"
        found = _validate(_TOPICS, _yaml(root, name, problems), loc, problems, prefix="topics")
        for topic in found or ():
            if topic.slice != info.name:
                message = (
                    f"topic {topic.slug!r} belongs to slice {topic.slice!r}, not {info.name!r}"
                )
                fix = f"move it to topics/{topic.slice}.yaml"
                problems.append(
                    Problem(location=loc, code="demo_content_slice", message=message, fix=fix)
                )
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
