"""Noise-sensitivity pair suites: paired clean/noisy cases, their evidence, policy and validation.

A suite is one YAML file (``schema_version`` 2; the format, roles and rules are in
``docs/formats.md``, Noise-sensitivity pair suites). :func:`load_pairs` reports every problem
at once (``file:line`` location, code and fix).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import Field, ValidationError

from .._io import sha256_file, sha256_json, sha256_text
from .._load import Problems, load_yaml, yaml_lines
from .._record import Record as _Model
from .._record import SchemaTooNew
from ..errors import Problem, WorkbenchError, errors_only
from ._evidence import (
    ATTACKS,
    CONTROL_ROLES,
    ORIGINS,
    PARTITIONS,
    Attack,
    ChangeUnderReview,
    EvidenceManifest,
    GenerationTrace,
    Injection,
    Member,
    NoisePolicy,
    OmitUnset,
    PartitionName,
    QueryRewrite,
    Reranker,
    Retirement,
    RetrievalAssertions,
    RetrievedContext,
    SignOff,
    ThresholdEvidence,
    as_context,
)

PAIRS_SCHEMA_VERSION = 2
"""Version of the pair-suite file format."""

MODES: tuple[str, ...] = ("relevant", "irrelevant")
"""NoiseSensitivity modes. A pair must name one; there is no default."""
ROLES: tuple[str, ...] = ("control", "adversarial", "reference_defect", "candidate")
"""Pair roles: control roles are run (and checked) before any candidate is scored."""
RELATIONS: dict[str, str] = {
    "control": "noisy_worse_than_clean",
    "adversarial": "noisy_worse_than_clean",
    "reference_defect": "not_punished",
    "candidate": "noisy_not_worse",
}
"""The expected relation of each role (the default when a pair omits it)."""
SEPARATING_ROLES: tuple[str, ...] = ("control", "adversarial")
"""Control roles whose noisy member must score strictly worse than the clean member."""
DIRECTION = "lower_is_better"
"""NoiseSensitivity's direction: 0 is best. Stored beside every threshold and score."""

Mode = Literal["relevant", "irrelevant"]
Role = Literal["control", "adversarial", "reference_defect", "candidate"]
Relation = Literal["noisy_worse_than_clean", "noisy_not_worse", "not_punished"]
Direction = Literal["lower_is_better"]
MEMBERS: tuple[Member, ...] = ("clean", "noisy")

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
_FORMAT = "see the pair-suite format in docs/formats.md"


class NoiseInput(_Model):
    """Everything a ``ragas-noise`` judge sees for one pair member (and nothing else)."""

    user_input: str
    """The user's question (shared by both members)."""
    response: str
    """The response generated from exactly ``retrieved_contexts``."""
    reference: str
    """The approved reference answer (shared by both members)."""
    retrieved_contexts: list[str]
    """The context texts the generator saw, in rank order (no retrieval evidence)."""
    mode: Mode
    """NoiseSensitivity mode: ``relevant`` or ``irrelevant``. Mandatory, never defaulted."""

    def digest(self) -> str:
        """sha256 over the canonical JSON of this input: what a result's ``response_hash`` holds."""
        return sha256_json(self.model_dump(mode="json"))


class Distractor(OmitUnset):
    """The one labelled distractor context that makes a member noisy."""

    OMITTED: ClassVar[tuple[str, ...]] = ("injection",)

    index: int
    """Position of the distractor in the noisy member's ``retrieved_contexts`` (0-based)."""
    label: str
    """What kind of distractor it is (e.g. ``stale-policy``, ``other-product``, ``injection``)."""
    change: Literal["add", "replace"]
    """``add``: inserted at ``index``; ``replace``: substituted for the clean context there."""
    false_claim: str | None = None
    """The incorrect claim the distractor carries, when it carries one."""
    attack: Attack | None = None
    """Adversarial distractors: ``instruction``, ``fake_policy`` or ``stale_date``."""
    injection: Injection | None = None
    """With ``attack: instruction``: the instruction and the phrases that show it was followed
    (omitted from the JSON form when unset, so frozen pairs hash as before)."""


class CleanMember(_Model):
    """The clean member: enough relevant evidence and no deliberate distractor."""

    response: str
    """The response the system generated from exactly these contexts."""
    retrieved_contexts: list[str | RetrievedContext]
    """The contexts sent to generation, in rank order: text, or text with retrieval evidence."""
    user_input: str | None = None
    """Optional copy from the member's trace; must equal the pair's ``user_input``."""
    reference: str | None = None
    """Optional copy from the member's trace; must equal the pair's ``reference``."""
    generator: dict[str, Any] | None = None
    """Optional copy from the member's trace; must equal the pair's ``generator``."""
    generation_trace: GenerationTrace | None = None
    """What generation recorded: run id, context ids and response hash."""
    abstained: bool = False
    """The system abstained: an outcome of its own, never scored."""

    def contexts(self) -> list[RetrievedContext]:
        """The contexts as :class:`RetrievedContext` (plain strings become ``{text}``)."""
        return [as_context(c) for c in self.retrieved_contexts]

    def texts(self) -> list[str]:
        """The context texts, in order: what the evaluator sees."""
        return [c.text for c in self.contexts()]


class NoisyMember(CleanMember):
    """The noisy member: the clean contexts with one labelled distractor added or replaced."""

    distractor: Distractor
    """The one change that makes this member noisy."""


class SliceLimit(OmitUnset):
    """The gate of one slice. Every threshold carries its direction."""

    OMITTED: ClassVar[tuple[str, ...]] = ("derived_from",)

    max_score: float
    """Highest NoiseSensitivity score a candidate pair's noisy member may have."""
    direction: Direction
    """Always ``lower_is_better``: stored beside the threshold so no report can invert it."""
    max_delta: float | None = None
    """Optional: highest (noisy - clean) score increase allowed per candidate pair."""
    max_abstention_rate: float | None = None
    """Optional: highest share of abstaining candidate members (unset: abstentions go to review)."""
    risk: str | None = None
    """Business risk of the slice (e.g. ``critical``)."""
    rationale: str | None = None
    """Why this limit, written before results are seen."""
    derived_from: list[ThresholdEvidence] | None = None
    """The baseline data each limit was derived from (``workbench noise thresholds``); a limit
    that no longer equals what its data gives is refused (``threshold_evidence_mismatch``)."""


class NoisePair(_Model):
    """One paired case: the same question, reference and generator, with and without one
    distractor."""

    pair_id: str
    """Stable id (letters, digits, ``_ . -``)."""
    slice: str
    """A slice declared in the suite header."""
    mode: Mode
    """NoiseSensitivity mode the pair is built for and scored in. Mandatory."""
    role: Role
    """``control``, ``adversarial``, ``reference_defect`` (run first) or ``candidate``."""
    partition: PartitionName
    """``development``, ``calibration`` or ``held_out``."""
    source_family: str
    """The source family (document family, paraphrase group); never straddles partitions."""
    reference_version: str
    """Version of the reference; must be one of the suite's ``approved_reference_versions``."""
    user_input: str
    """The question, shared by both members."""
    reference: str
    """The approved reference answer, shared by both members."""
    generator: dict[str, Any]
    """Generator configuration shared by both members (model, prompt hash, retriever ...)."""
    expected_relation: Relation
    """The role's relation (:data:`RELATIONS`)."""
    clean: CleanMember
    """The clean member (for controls: the positive control)."""
    noisy: NoisyMember
    """The noisy member (for controls: the negative control, adopting the distractor's claim)."""
    retrieval_assertions: RetrievalAssertions | None = None
    """Deterministic retrieval checks, run before any model call."""
    sign_off: SignOff | None = None
    """The reviewer's sign-off; mandatory for control roles."""
    reference_defect: str | None = None
    """Reference-defect controls: what is wrong with the reference."""
    retired: Retirement | None = None
    """Set when the pair is retired: kept, never scored."""
    supersedes: str | None = None
    """The retired pair this one fixes (a new case version)."""
    provenance: dict[str, Any] = Field(default_factory=dict)
    """Where the pair came from: ``origin`` (production, regenerated, constructed), sources."""
    notes: str | None = None
    """Free-text notes for reviewers."""

    @property
    def query_rewrite(self) -> QueryRewrite | None:
        """``generator.query_rewrite``, typed (validated at load)."""
        raw = self.generator.get("query_rewrite")
        return QueryRewrite.model_validate(raw) if raw is not None else None

    @property
    def reranker(self) -> Reranker | None:
        """``generator.reranker``, typed (validated at load)."""
        raw = self.generator.get("reranker")
        return Reranker.model_validate(raw) if raw is not None else None

    def member(self, name: Member) -> CleanMember:
        """The ``clean`` or ``noisy`` member."""
        return self.clean if name == "clean" else self.noisy

    def judge_input(self, name: Member) -> NoiseInput:
        """What the judge sees for one member: question, response, reference, texts and mode."""
        m = self.member(name)
        return NoiseInput(
            user_input=self.user_input,
            response=m.response,
            reference=self.reference,
            retrieved_contexts=m.texts(),
            mode=self.mode,
        )

    def item_id(self, name: Member) -> str:
        """The case id of one member in run records: ``<pair_id>:<member>``."""
        return f"{self.pair_id}:{name}"

    def frame_sha256(self) -> str:
        """Hash of what a baseline comparison holds constant: question, reference and its
        version, mode, role, slice and partition (responses and contexts may differ)."""
        keys = ("user_input", "reference", "reference_version", "mode", "role", "slice")
        return sha256_json({**{k: getattr(self, k) for k in keys}, "partition": self.partition})

    def content_sha256(self) -> str:
        """Hash of the whole pair except its retirement: what a frozen release pins."""
        return sha256_json(self.model_dump(mode="json", exclude={"retired"}))


class NoiseSuite(OmitUnset):
    """A validated pair suite, built by :func:`load_pairs` or :func:`parse_pairs`."""

    OMITTED: ClassVar[tuple[str, ...]] = ("change_under_review",)

    schema_version: int = PAIRS_SCHEMA_VERSION
    """Pair-suite format version."""
    name: str
    """Suite name."""
    version: str
    """Suite version; changed pairs or limits are a new version."""
    description: str = ""
    """What the suite protects."""
    owner: str | None = None
    """Who can explain a failing claim."""
    rationale: str | None = None
    """Why these limits, written before results are seen."""
    approved_reference_versions: list[str]
    """Reference versions a pair may cite."""
    policy: NoisePolicy
    """The reviewed noise policy (budget and case limits are mandatory)."""
    manifest: EvidenceManifest
    """The evidence manifest of this release."""
    sentinels: list[str] = Field(default_factory=list)
    """The frozen sentinel set: pair ids scored again by ``--repeat``."""
    slices: dict[str, SliceLimit]
    """The gate: per slice, the maximum noisy score (lower is better)."""
    pairs: list[NoisePair]
    """Every pair, active and retired, controls and candidates."""
    source: str | None = None
    """The file the suite was read from."""
    sha256: str
    """sha256 of the file (or of the canonical JSON of the parsed mapping)."""
    supersedes: str | None = None
    """The frozen version this version replaces (required once an earlier version is frozen)."""
    change_under_review: ChangeUnderReview | None = None
    """The one change this suite version is run to judge (component and description)."""

    @property
    def label(self) -> str:
        """``name@version``."""
        return f"{self.name}@{self.version}"

    def active(self) -> list[NoisePair]:
        """Pairs that are not retired, in file order."""
        return [p for p in self.pairs if p.retired is None]

    def retired(self) -> list[NoisePair]:
        """Retired pairs, in file order."""
        return [p for p in self.pairs if p.retired is not None]

    def controls(self) -> list[NoisePair]:
        """Active control pairs of every control role, in file order."""
        return [p for p in self.active() if p.role in CONTROL_ROLES]

    def candidates(self, partition: str | None = None) -> list[NoisePair]:
        """Active candidate pairs (of one partition when given), in file order."""
        return [
            p
            for p in self.active()
            if p.role == "candidate" and (partition is None or p.partition == partition)
        ]

    def pairs_frame(self) -> Any:
        """One row per pair: id, role, partition, slice, mode, distractor, relation, status."""
        import pandas as pd

        rows = [
            (
                *(p.pair_id, p.role, p.partition, p.source_family, p.slice, p.mode),
                *(d.label, d.change, d.attack, p.expected_relation),
                len(p.clean.retrieved_contexts),
                len(p.noisy.retrieved_contexts),
                any(c.structured for m in MEMBERS for c in p.member(m).contexts()),
                p.retrieval_assertions is not None,
                "retired: " + p.retired.reason if p.retired else "active",
            )
            for p in self.pairs
            for d in [p.noisy.distractor]
        ]
        return pd.DataFrame(rows, columns=_PAIR_COLUMNS.split())

    def limits_frame(self) -> Any:
        """The gate per slice: max_score, max_delta and their direction (lower is better)."""
        import pandas as pd

        rows = [
            (name, lim.risk, lim.max_score, lim.max_delta, lim.max_abstention_rate, lim.direction)
            + (sum(1 for p in self.candidates() if p.slice == name), lim.rationale)
            for name, lim in self.slices.items()
        ]
        return pd.DataFrame(rows, columns=_LIMIT_COLUMNS.split())

    def pair(self, pair_id: str) -> NoisePair:
        """The pair with this id."""
        return {p.pair_id: p for p in self.pairs}[pair_id]


_PAIR_COLUMNS = (
    "pair_id role partition source_family slice mode distractor change attack expected_relation"
    " contexts_clean contexts_noisy structured assertions status"
)
_LIMIT_COLUMNS = (
    "slice risk max_score max_delta max_abstention_rate direction candidate_pairs rationale"
)


class _Header(_Model):
    KIND: ClassVar[str] = "noise pair suite"
    schema_version: int = PAIRS_SCHEMA_VERSION
    name: str
    version: str | int
    description: str = ""
    owner: str | None = None
    rationale: str | None = None
    approved_reference_versions: list[str]
    policy: Any = None
    manifest: Any = None
    sentinels: list[str] = Field(default_factory=list)
    slices: dict[str, Any]
    pairs: Any
    supersedes: str | int | None = None
    change_under_review: Any = None


# -- locating problems ------------------------------------------------------------------------


class _Checker(Problems):
    """Every problem of one suite, each located as ``file:line (dotted.path)``."""

    def __init__(self, location: str, lines: dict[tuple[Any, ...], int]) -> None:
        super().__init__()
        self.location = location
        self.lines = lines

    def where(self, path: tuple[Any, ...]) -> str:
        """``file:line (path)``: the line of the deepest part of ``path`` the file has."""
        found = (self.lines.get(path[:n]) for n in range(len(path), -1, -1))
        line = next((n for n in found if n is not None), None)
        at, dotted = (f"{self.location}:{line}" if line else self.location), _dotted(path)
        return f"{at} ({dotted})" if dotted else at

    def at(self, path: tuple[Any, ...], code: str, message: str, fix: str, **kw: Any) -> None:
        """Record one problem at ``path`` (``kw``: its ``case_id``, ``severity``)."""
        self.add(self.where(path), code, message, fix, **kw)

    def translate(
        self,
        exc: ValidationError,
        base: tuple[Any, ...],
        case_id: str | None = None,
        skip: frozenset[tuple[Any, ...]] = frozenset(),
    ) -> None:
        """pydantic's errors below ``base`` with the pair suite's codes (:func:`_explain`)."""
        for e in exc.errors(include_url=False):
            loc = tuple(e["loc"])
            if e["type"] == "missing" and loc in skip:
                continue  # reported with its own code
            if "retrieved_contexts" in loc and len(loc) > loc.index("retrieved_contexts") + 2:
                continue  # the str | RetrievedContext union's branches: _context reports each once
            self.at((*base, *loc), *_explain(e, loc), case_id=case_id)


@dataclass(frozen=True)
class _Add:
    chk: _Checker
    i: int
    pid: str | None

    def __call__(self, sub: tuple[Any, ...], code: str, message: str, fix: str) -> None:
        self.chk.at(("pairs", self.i, *sub), code, message, fix, case_id=self.pid)

    def translate(self, exc: ValidationError, sub: tuple[Any, ...] = ()) -> None:
        self.chk.translate(exc, ("pairs", self.i, *sub), self.pid)


def _dotted(path: Iterable[Any]) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


_UNKNOWN: dict[str, tuple[str, str, str]] = {
    "mode": ("mode_unknown", "mode", "use mode: relevant or mode: irrelevant"),
    "role": ("role_unknown", "role", "use role: " + ", ".join(ROLES)),
    "partition": ("partition_unknown", "partition", "use partition: " + ", ".join(PARTITIONS)),
    "change": (
        "change_unknown",
        "distractor change",
        "use change: add (distractor inserted) or change: replace (distractor substituted)",
    ),
    "attack": ("attack_unknown", "distractor attack", "use attack: " + ", ".join(ATTACKS)),
    "expected_relation": (
        "relation_unknown",
        "expected_relation",
        "use " + ", ".join(sorted(set(RELATIONS.values()))),
    ),
}
"""Field -> (code, what it is, fix) of a value outside the field's choices."""
_PAIR_LEVEL = frozenset({"mode", "role", "partition"})
"""Fields whose code applies to the pair's own field only."""


def _explain(e: Any, loc: tuple[Any, ...]) -> tuple[str, str, str]:
    """``(code, message, fix)`` of one pydantic error at ``loc``."""
    field, kind = (str(loc[-1]) if loc else ""), e["type"]
    if loc == ("mode",) and kind == "missing":
        message = "the pair has no mode; NoiseSensitivity's mode is never defaulted"
        fix = "add mode: relevant or mode: irrelevant (the mode the pair was built for)"
        return "mode_missing", message, fix
    if field in _UNKNOWN and kind != "missing" and (len(loc) == 1 or field not in _PAIR_LEVEL):
        code, what, fix = _UNKNOWN[field]
        return code, f"unknown {what} {e.get('input')!r}", fix
    if field == "direction" and kind == "missing":
        message = "a threshold without its direction"
        fix = f"add direction: {DIRECTION} beside the threshold (NoiseSensitivity: lower is better)"
        return "direction_missing", message, fix
    if field == "direction" and "companions" not in loc:
        message = f"direction {e.get('input')!r}: NoiseSensitivity is lower-is-better"
        fix = f"write direction: {DIRECTION}"
        return "direction_invalid", message, fix
    dotted = _dotted(loc)
    if kind == "missing":
        return "field_missing", f"required field {dotted!r} is missing", f"add {field}: ({_FORMAT})"
    if kind == "extra_forbidden":
        fix = f"remove it or correct its spelling ({_FORMAT})"
        return "field_unknown", f"unknown field {dotted!r}", fix
    return "field_invalid", f"{dotted or 'value'}: {e['msg']}", f"correct this field ({_FORMAT})"


# -- one pair ---------------------------------------------------------------------------------

Contexts = dict[Member, list[RetrievedContext] | None]
"""Each member's checked contexts (None: absent or with a problem)."""


def _text_ok(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _mapping_at(raw: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = raw.get(key)
    return value if isinstance(value, dict) else {}


def _check_pair(
    chk: _Checker, raw: dict[str, Any], i: int, header: _Header | None, slices: dict[str, Any]
) -> Contexts:
    """Every rule of one raw pair, in the order a reader meets its fields; its members' contexts."""
    add = _Add(chk, i, _str(raw.get("pair_id")))
    _check_fields(add, raw, header, slices)
    _check_relation(add, raw)
    origin = _check_provenance(add, raw)
    _check_assertions(add, raw.get("retrieval_assertions"))
    contexts = {name: _check_member(add, raw, name, origin) for name in MEMBERS}
    clean, noisy = _mapping_at(raw, "clean"), _mapping_at(raw, "noisy")
    if (
        raw.get("role") in SEPARATING_ROLES
        and isinstance(clean.get("response"), str)
        and clean.get("response") == noisy.get("response")
    ):
        message = "the negative control's response equals the positive control's"
        fix = "a negative control's response must adopt the distractor's false claim"
        add(("noisy", "response"), "control_response_unchanged", message, fix)
    _check_sign_off(add, raw, contexts)
    _check_distractor(add, raw, contexts)
    return contexts


def _check_fields(
    add: _Add, raw: dict[str, Any], header: _Header | None, slices: dict[str, Any]
) -> None:
    if add.pid is not None and not _ID.match(add.pid):
        message = f"pair_id {add.pid!r} has characters other than letters, digits, '_', '.', '-'"
        fix = "use a simple stable id, e.g. ref-late-request"
        add(("pair_id",), "pair_id_invalid", message, fix)
    for field in ("user_input", "reference", "source_family"):
        if isinstance(raw.get(field), str) and not raw[field].strip():
            fix = f"write the {field.replace('_', ' ')}"
            add((field,), "field_empty", f"{field} is empty", fix)
    version = raw.get("reference_version")
    if header is not None and isinstance(version, str):
        approved = header.approved_reference_versions
        if version not in approved:
            message = f"reference_version {version!r} is not approved"
            fix = (
                f"use an approved reference version ({', '.join(approved)}) or have the new"
                " version reviewed and add it to approved_reference_versions"
            )
            add(("reference_version",), "reference_unapproved", message, fix)
    if isinstance(raw.get("slice"), str) and raw["slice"] not in slices:
        message = f"slice {raw['slice']!r} is not declared in the suite's slices"
        fix = "declare the slice with its max_score and direction, or correct the name"
        add(("slice",), "slice_unknown", message, fix)
    generator = raw.get("generator")
    if isinstance(generator, dict) and not generator.get("model"):
        message = "the generator configuration does not name its model"
        fix = "record the generator model (and prompt hash, retriever) the responses came from"
        add(("generator",), "generator_incomplete", message, fix)
    if isinstance(generator, dict):
        _check_pipeline(add, generator)


def _check_pipeline(add: _Add, generator: dict[str, Any]) -> None:
    """The typed pipeline fields of the generator configuration, when present."""
    for key, model in (("query_rewrite", QueryRewrite), ("reranker", Reranker)):
        if generator.get(key) is not None:
            try:
                model.model_validate(generator[key])
            except ValidationError as exc:
                add.translate(exc, ("generator", key))


def _check_relation(add: _Add, raw: dict[str, Any]) -> None:
    role, relation = raw.get("role"), raw.get("expected_relation")
    expected = RELATIONS.get(role) if isinstance(role, str) else None
    if expected and relation in RELATIONS.values() and relation != expected:
        message = f"a {role} pair expects {relation!r}"
        fix = f"a {role} pair expects {expected!r}; change the role or the relation"
        add(("expected_relation",), "relation_role_mismatch", message, fix)
    if role == "reference_defect" and not _text_ok(raw.get("reference_defect")):
        message = "a reference-defect control does not say what is wrong with its reference"
        fix = (
            "write reference_defect: what the reference omits or gets wrong (and that the"
            " responses are correct)"
        )
        add((), "reference_defect_missing", message, fix)
    elif role != "reference_defect" and raw.get("reference_defect") is not None:
        message = f"a {role} pair describes a reference defect"
        fix = "make the pair a reference_defect control, or fix the reference in a new pair version"
        add(("reference_defect",), "reference_defect_unexpected", message, fix)


def _check_provenance(add: _Add, raw: dict[str, Any]) -> Any:
    """The responses' origin (mandatory, one of :data:`ORIGINS`); returns it."""
    origin = _mapping_at(raw, "provenance").get("origin")
    if origin is None:
        message = "the pair does not say where its responses came from"
        fix = (
            "add provenance: {origin: production | regenerated | constructed}; the origins are"
            " not interchangeable"
        )
        add(("provenance",), "origin_missing", message, fix)
    elif origin not in ORIGINS:
        fix = "use origin: " + ", ".join(ORIGINS)
        add(("provenance", "origin"), "origin_unknown", f"unknown origin {origin!r}", fix)
    return origin


def _check_assertions(add: _Add, assertions: Any) -> None:
    if not isinstance(assertions, dict):
        return
    try:
        parsed = RetrievalAssertions.model_validate(assertions)
    except ValidationError:
        return  # reported by the pair's model validation
    if parsed.empty():
        add(
            ("retrieval_assertions",),
            "retrieval_assertions_empty",
            "retrieval_assertions declares no check",
            "assert expected_documents, forbidden_sources, tenant or max_rank, or remove the block",
        )
    for doc, rank in parsed.max_rank.items():
        if rank < 1:
            where = ("retrieval_assertions", "max_rank", doc)
            add(where, "field_invalid", f"max_rank for {doc!r} is {rank}", "ranks start at 1")


def _check_member(add: _Add, raw: dict[str, Any], name: str, origin: Any) -> Any:
    member = raw.get(name)
    if not isinstance(member, dict):
        return None
    if isinstance(member.get("response"), str) and not member["response"].strip():
        message = f"the {name} member's response is empty"
        fix = "record the response the system generated from these contexts"
        add((name, "response"), "field_empty", message, fix)
    contexts = _check_contexts(add, member.get("retrieved_contexts"), name)
    for shared in ("user_input", "reference", "generator"):
        if member.get(shared) is not None and shared in raw and member[shared] != raw[shared]:
            message = f"the {name} member's {shared} differs from the pair's"
            fix = (
                f"both members must share the pair's {shared}; a pair holds the question,"
                " reference and generator constant"
            )
            add((name, shared), "member_mismatch", message, fix)
    if member.get("generation_trace") is not None:
        _check_trace(add, member, contexts, raw.get("generator"), name)
    elif origin in ("production", "regenerated"):
        message = f"the {name} member's response is {origin} but has no generation trace"
        fix = (
            "record generation_trace: {run_id, context_ids, response_sha256} from the generation"
            " run; without it the response cannot be shown to come from these contexts"
        )
        add((name,), "trace_missing", message, fix)
    if member.get("abstained") is True and raw.get("role") in CONTROL_ROLES:
        message = f"the {name} member of a {raw['role']} pair abstains"
        fix = (
            "a control's responses must make claims; an abstention is an outcome of candidate"
            " pairs only"
        )
        add((name, "abstained"), "control_abstained", message, fix)
    return contexts


def _check_contexts(add: _Add, ctx: Any, name: str) -> list[RetrievedContext] | None:
    """Each context a non-empty string or a valid structured context; ranks in list order."""
    where = (name, "retrieved_contexts")
    if not isinstance(ctx, list):
        return None
    if not ctx:
        message = f"the {name} member has no retrieved_contexts"
        fix = (
            "record the exact contexts sent to generation; a missing context trace is never a"
            " low score"
        )
        add(where, "contexts_empty", message, fix)
    found = [_context(add, item, (*where, j), name) for j, item in enumerate(ctx)]
    out = [c for c in found if c is not None]
    if len(out) < len(found):
        return None
    ranks = [c.rank for c in out]
    known = [r for r in ranks if r is not None]
    if len(known) == len(ranks) and any(b <= a for a, b in zip(known, known[1:], strict=False)):
        message = f"the {name} member's ranks {ranks} are not strictly increasing in list order"
        fix = "list the contexts in the order generation saw them, with their retriever ranks"
        add(where, "context_rank_order", message, fix)
    return out


_CONTEXT_FIX = (
    "a structured context is {text, document_id, version, chunk_id, rank, retrieval_score, tenant,"
    " corpus_id, retriever_config_sha256}; only text is required"
)
_CONTEXT_CODES = {"missing": "field_missing", "extra_forbidden": "field_unknown"}


def _context(add: _Add, item: Any, where: tuple[Any, ...], name: str) -> RetrievedContext | None:
    j = where[-1]
    if isinstance(item, str) and not item.strip():
        what, fix = "is empty", "remove it or record the passage text"
        add(where, "context_empty", f"context {j} of the {name} member {what}", fix)
        return None
    if not isinstance(item, str | dict):
        message = f"context {j} of the {name} member is neither text nor a mapping"
        fix = "write the passage text, or {text: ..., document_id: ..., ...}"
        add(where, "context_invalid", message, fix)
        return None
    try:
        parsed = RetrievedContext.model_validate({"text": item} if isinstance(item, str) else item)
    except ValidationError as exc:
        for e in exc.errors(include_url=False):
            loc = tuple(e["loc"])
            message = f"context {j} of the {name} member: {_dotted(loc) or 'value'}: {e['msg']}"
            add(
                (*where, *loc),
                _CONTEXT_CODES.get(e["type"], "context_invalid"),
                message,
                _CONTEXT_FIX,
            )
        return None
    if not parsed.text.strip():
        what, fix = "has empty text", "record the passage text sent to generation"
        add((*where, "text"), "context_empty", f"context {j} of the {name} member {what}", fix)
        return None
    return parsed


def _check_trace(
    add: _Add,
    member: dict[str, Any],
    contexts: list[RetrievedContext] | None,
    generator: Any,
    name: str,
) -> None:
    """A generation trace names the member's contexts, response and the pair's generator."""
    where = (name, "generation_trace")
    try:
        trace = GenerationTrace.model_validate(member["generation_trace"])
    except ValidationError as exc:
        add.translate(exc, where)
        return
    ids = None if contexts is None else [c.context_id() for c in contexts]
    if ids is not None and trace.context_ids != ids:
        add(
            (*where, "context_ids"),
            "trace_contexts_mismatch",
            f"the {name} member's generation trace lists contexts {trace.context_ids} but the"
            f" member holds {ids}",
            "record the exact contexts generation used (a later retrieval replay is a new run id"
            " and new contexts)",
        )
    response = member.get("response")
    if isinstance(response, str) and trace.response_sha256 != sha256_text(response):
        add(
            (*where, "response_sha256"),
            "trace_response_mismatch",
            f"the {name} member's response is not the one generation produced (sha256"
            f" {sha256_text(response)[:12]} vs trace {trace.response_sha256[:12]})",
            "record the response exactly as generated from these contexts, or regenerate under a"
            " new run id",
        )
    pair_generator = generator if isinstance(generator, dict) else {}
    for field, key in (("generator_model", "model"), ("prompt_sha256", "prompt_sha256")):
        value, pair_value = getattr(trace, field), pair_generator.get(key)
        if value is not None and pair_value is not None and value != pair_value:
            message = (
                f"the {name} member's trace has {field} {value!r}, the pair's generator {key}"
                f" is {pair_value!r}"
            )
            fix = "the trace and the pair must name the same generator configuration"
            add((*where, field), "trace_generator_mismatch", message, fix)


def _check_sign_off(add: _Add, raw: dict[str, Any], contexts: Contexts) -> None:
    """The reviewer's sign-off: mandatory on controls, one class per context, fits the role."""
    role, raw_sign = raw.get("role"), raw.get("sign_off")
    if raw_sign is None:
        if role in CONTROL_ROLES:
            message = f"the {role} pair has no reviewer sign-off"
            fix = (
                "record sign_off: {reviewer, reference_sufficient, context_classes: {clean:"
                " [...], noisy: [...]}, negative_adopts_false_claim}"
            )
            add((), "sign_off_missing", message, fix)
        return
    try:
        sign = SignOff.model_validate(raw_sign)
    except ValidationError as exc:
        add.translate(exc, ("sign_off",))
        return
    for member in MEMBERS:
        ctx, classes = contexts.get(member), sign.context_classes.get(member)
        if classes is None:
            message = f"the sign-off classifies no context of the {member} member"
            fix = f"give context_classes.{member}: one relevant/irrelevant per retrieved context"
            add(("sign_off", "context_classes"), "sign_off_context_classes", message, fix)
        elif ctx is not None and len(classes) != len(ctx):
            message = (
                f"the sign-off classifies {len(classes)} contexts of the {member} member, which"
                f" has {len(ctx)}"
            )
            fix = "give one class per retrieved context, in order"
            add(("sign_off", "context_classes", member), "sign_off_context_classes", message, fix)
    if role in CONTROL_ROLES:
        _check_control_sign_off(add, raw, sign)


def _check_control_sign_off(add: _Add, raw: dict[str, Any], sign: SignOff) -> None:
    """What a control's reviewer must have seen: the false claim adopted, a sufficient (or, for a
    reference-defect control, a flagged) reference, a relevant context, a distractor of the mode."""
    role = raw["role"]
    where = ("sign_off",)
    if sign.negative_adopts_false_claim is None:
        message = (
            f"the {role} pair's sign-off does not say whether the negative control adopts the"
            " false claim"
        )
        fix = "record negative_adopts_false_claim: true or false, as the reviewer judged it"
        add((*where, "negative_adopts_false_claim"), "sign_off_field_missing", message, fix)
    if role == "reference_defect":
        if sign.reference_sufficient:
            add(
                (*where, "reference_sufficient"),
                "sign_off_defect_not_flagged",
                "a reference-defect control whose sign-off calls the reference sufficient: the"
                " reviewer did not catch the defect",
                "have the reviewer check the reference against the sources; a competent review"
                " flags it (reference_sufficient: false)",
            )
        return
    if not sign.reference_sufficient:
        message = f"the reviewer flagged the {role} pair's reference as insufficient"
        fix = "fix the reference (a new pair version), or make the pair a reference_defect control"
        add((*where, "reference_sufficient"), "sign_off_reference_insufficient", message, fix)
    if sign.negative_adopts_false_claim is False:
        message = "the reviewer says the negative control does not adopt the false claim"
        fix = (
            "rewrite the noisy response so it adopts the distractor's false claim, or make the"
            " pair a candidate"
        )
        add((*where, "negative_adopts_false_claim"), "sign_off_negative_not_adopting", message, fix)
    clean_classes = sign.context_classes.get("clean") or []
    if clean_classes and "relevant" not in clean_classes:
        message = "the positive control has no context the reviewer classed as relevant"
        fix = "a positive control needs sufficient relevant evidence"
        add((*where, "context_classes", "clean"), "sign_off_no_relevant_context", message, fix)
    _check_distractor_class(add, raw, sign.context_classes.get("noisy") or [])


def _check_distractor_class(add: _Add, raw: dict[str, Any], noisy_classes: Sequence[str]) -> None:
    """The reviewer's class of a control's distractor is the pair's mode."""
    mode = raw.get("mode")
    index = _mapping_at(_mapping_at(raw, "noisy"), "distractor").get("index")
    if not isinstance(index, int) or not 0 <= index < len(noisy_classes) or mode not in MODES:
        return
    got = noisy_classes[index]
    if got != mode:
        wanted = (
            "a plausible context that does not support the reference"
            if mode == "irrelevant"
            else "a context that supports part of the reference and carries the false statement"
        )
        message = (
            f"the reviewer classed the distractor {got}, but a {mode}-mode negative control"
            f" needs a {mode} distractor context"
        )
        fix = f"rebuild the distractor for {mode} mode ({wanted}), or change the mode"
        add(("sign_off", "context_classes", "noisy"), "sign_off_context_class_mode", message, fix)


def _check_distractor(add: _Add, raw: dict[str, Any], contexts: Contexts) -> None:
    """An adversarial distractor names its attack; the noisy contexts are the clean ones with the
    one distractor added or substituted."""
    noisy = raw.get("noisy")
    distractor = noisy.get("distractor") if isinstance(noisy, dict) else None
    if not isinstance(distractor, dict):
        return
    if raw.get("role") == "adversarial" and distractor.get("attack") is None:
        message = "an adversarial control's distractor does not say what it carries"
        fix = "add attack: instruction | fake_policy | stale_date to the distractor"
        add(("noisy", "distractor"), "attack_missing", message, fix)
    clean, noisy_ctx = contexts.get("clean"), contexts.get("noisy")
    _check_injection(add, distractor, noisy_ctx)
    if clean is None or noisy_ctx is None:
        return
    if "label" in distractor and not _text_ok(distractor.get("label")):
        fix = "label the distractor (e.g. stale-policy, other-product, injection)"
        add(("noisy", "distractor", "label"), "field_empty", "the distractor has no label", fix)
    index, change = distractor.get("index"), distractor.get("change")
    if isinstance(index, int) and not isinstance(index, bool) and change in ("add", "replace"):
        _check_membership(add, index, change, clean, noisy_ctx)


def _check_injection(
    add: _Add, distractor: dict[str, Any], noisy: list[RetrievedContext] | None
) -> None:
    """A declared injection belongs to an ``instruction`` attack and is quoted from the
    distractor's text."""
    injection = distractor.get("injection")
    if not isinstance(injection, dict):
        return
    where = ("noisy", "distractor", "injection")
    if distractor.get("attack") != "instruction":
        message = "an injection is declared on a distractor whose attack is not instruction"
        add(where, "injection_attack_mismatch", message, "set attack: instruction, or drop it")
    index, instruction = distractor.get("index"), injection.get("instruction")
    if noisy is None or not isinstance(index, int) or not 0 <= index < len(noisy):
        return
    from ..gold import normalize_text

    folded = normalize_text(noisy[index].text)
    if isinstance(instruction, str) and normalize_text(instruction) not in folded:
        message = "the injected instruction is not in the distractor's text"
        fix = "quote the instruction exactly as the distractor context carries it"
        add((*where, "instruction"), "injection_not_in_distractor", message, fix)


def _check_membership(
    add: _Add,
    index: int,
    change: str,
    clean: list[RetrievedContext],
    noisy: list[RetrievedContext],
) -> None:
    """Noisy = clean with exactly one distractor inserted (``add``) or substituted at ``index``."""
    where = ("noisy", "distractor", "index")
    if not 0 <= index < len(noisy):
        message = f"distractor index {index} is outside the noisy member's {len(noisy)} contexts"
        fix = (
            "give the 0-based position of the distractor in noisy.retrieved_contexts (0 to"
            f" {max(0, len(noisy) - 1)})"
        )
        add(where, "distractor_index_out_of_range", message, fix)
        return
    c_ids, n_ids = [c.identity() for c in clean], [c.identity() for c in noisy]
    fix = (
        "noisy.retrieved_contexts must be clean.retrieved_contexts with exactly one distractor"
        f" {'inserted' if change == 'add' else 'substituted'} at index {index} (same text and"
        " document evidence; only ranks may shift)"
    )
    broken = ("noisy", "retrieved_contexts")
    if change == "add":
        if len(n_ids) != len(c_ids) + 1 or n_ids[:index] + n_ids[index + 1 :] != c_ids:
            message = (
                f"with change: add at {index}, the noisy contexts ({len(n_ids)}) are not the"
                f" clean contexts ({len(c_ids)}) plus one distractor"
            )
            add(broken, "pair_membership_broken", message, fix)
        elif noisy[index].text in [c.text for c in clean]:
            message = "the added distractor repeats a clean context"
            add(where, "distractor_duplicate", message, "a distractor must be a new passage")
    elif (
        len(n_ids) != len(c_ids)
        or n_ids[:index] + n_ids[index + 1 :] != c_ids[:index] + c_ids[index + 1 :]
    ):
        message = (
            f"with change: replace at {index}, the noisy contexts must equal the clean ones"
            " everywhere else"
        )
        add(broken, "pair_membership_broken", message, fix)
    elif noisy[index].text == clean[index].text:
        message = (
            f"with change: replace at {index}, the noisy context equals the clean one: nothing"
            " was replaced"
        )
        add(where, "pair_membership_broken", message, fix)


# -- the suite --------------------------------------------------------------------------------


def check_pairs(
    raw: Any,
    *,
    location: str = "pairs",
    lines: dict[tuple[Any, ...], int] | None = None,
    sha256: str | None = None,
) -> tuple[NoiseSuite | None, list[Problem]]:
    """Validate a parsed suite mapping; return the suite (None on errors; warnings do not
    prevent it) and every problem."""
    chk = _Checker(location, lines or {})
    if not isinstance(raw, dict):
        message = "the pair suite must be a YAML mapping"
        fix = f"write the header fields and a pairs: list ({_FORMAT})"
        chk.at((), "suite_shape", message, fix)
        return None, list(chk)
    version = raw.get("schema_version")
    if isinstance(version, int) and version < PAIRS_SCHEMA_VERSION:
        chk.at(
            ("schema_version",),
            "schema_version_old",
            f"schema_version {version} suites have no noise policy, evidence manifest or"
            " partitions",
            f"set schema_version: {PAIRS_SCHEMA_VERSION} and add policy: {{max_cases,"
            " max_cost_usd}, manifest:, and partition/source_family/provenance.origin per pair"
            f" (and sign_off on controls) ({_FORMAT})",
        )
        return None, list(chk)
    header = _check_header(chk, raw)
    policy = _check_block(chk, raw, "policy", NoisePolicy)
    manifest = _check_block(chk, raw, "manifest", EvidenceManifest)
    slices = _check_slices(chk, raw)
    pairs, items = _check_pair_list(chk, raw.get("pairs"), header, _mapping_at(raw, "slices"))
    _check_suite_rules(chk, items, header, policy, _mapping_at(raw, "slices"))
    change = _check_change(chk, raw)
    if errors_only(chk) or header is None or policy is None or manifest is None:
        return None, list(chk)
    suite = NoiseSuite(
        **header.model_dump(
            exclude={
                *("version", "supersedes", "policy", "manifest", "slices", "pairs"),
                "change_under_review",
            }
        ),
        change_under_review=change,
        version=str(header.version),
        policy=policy,
        manifest=manifest,
        slices=slices,
        pairs=pairs,
        source=location if lines else None,
        sha256=sha256 or sha256_json(raw),
        supersedes=None if header.supersedes is None else str(header.supersedes),
    )
    return suite, list(chk)


def _check_change(chk: _Checker, raw: dict[str, Any]) -> ChangeUnderReview | None:
    """The optional ``change_under_review`` block (an unknown component is named)."""
    value = raw.get("change_under_review")
    if value is None:
        return None
    try:
        return ChangeUnderReview.model_validate(value)
    except ValidationError as exc:
        chk.translate(exc, ("change_under_review",))
    return None


def _check_header(chk: _Checker, raw: dict[str, Any]) -> _Header | None:
    header: _Header | None = None
    try:
        header = _Header.model_validate(raw)
    except SchemaTooNew as exc:
        newer = exc.problems[0]
        chk.at(("schema_version",), newer.code, newer.message, newer.fix)
    except ValidationError as exc:
        chk.translate(exc, ())
    if header is not None and not header.approved_reference_versions:
        message = "no approved reference versions"
        fix = "list the reviewed reference versions pairs may cite"
        chk.at(("approved_reference_versions",), "field_empty", message, fix)
    return header


_BLOCKS = {
    "policy": (
        "the suite has no noise policy",
        "add policy: {max_cases, max_cost_usd, ...}: budget and case limits live in reviewed"
        " policy; without them nothing runs",
        "write policy: {max_cases: N, max_cost_usd: X}",
    ),
    "manifest": (
        "the suite has no evidence manifest",
        "add manifest: {window, source_owners, licences, redaction, known_gaps, reviewers,"
        " sampling, review_schedule}",
        "write manifest: {window: ..., ...}",
    ),
}
"""Mandatory block -> (message when missing, its fix, the fix when not a mapping)."""
_M = TypeVar("_M", NoisePolicy, EvidenceManifest)


def _check_block(chk: _Checker, raw: dict[str, Any], key: str, model: type[_M]) -> _M | None:
    """The mandatory ``policy`` or ``manifest``; a policy's limits never fall back to a default."""
    value = raw.get(key)
    missing, fix, shape_fix = _BLOCKS[key]
    if value is None:
        chk.at((), f"{key}_missing", missing, fix)
        return None
    if not isinstance(value, dict):
        chk.at((key,), "field_invalid", f"{key} must be a mapping", shape_fix)
        return None
    limits = ("max_cases", "max_cost_usd") if key == "policy" else ()
    for field in (f for f in limits if value.get(f) is None):
        message = f"the noise policy has no {field}"
        fix = f"add policy.{field}: a missing limit fails closed, it never falls back to a default"
        chk.at(("policy",), "policy_limit_missing", message, fix)
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        chk.translate(exc, (key,), skip=frozenset((f,) for f in limits))
        return None


def _check_slices(chk: _Checker, raw: dict[str, Any]) -> dict[str, SliceLimit]:
    raw_slices = _mapping_at(raw, "slices")
    if isinstance(raw.get("slices"), dict) and not raw_slices:
        fix = "declare every slice with its max_score and direction: lower_is_better"
        chk.at(("slices",), "field_empty", "no slices", fix)
    slices: dict[str, SliceLimit] = {}
    for name, limit in raw_slices.items():
        try:
            parsed = SliceLimit.model_validate(limit)
        except ValidationError as exc:
            chk.translate(exc, ("slices", name))
            continue
        limits = {f: getattr(parsed, f) for f in ("max_score", "max_delta", "max_abstention_rate")}
        outside = {f: v for f, v in limits.items() if v is not None and not 0.0 <= v <= 1.0}
        for field, value in outside.items():
            chk.at(
                ("slices", name, field),
                "threshold_out_of_range",
                f"{field} {value} is outside [0, 1]",
                "give a limit between 0 and 1 (lower is better)",
            )
        for i, evidence in enumerate(parsed.derived_from or []):
            limit = getattr(parsed, evidence.limit)
            if limit is None or abs(limit - evidence.proposed) > 1e-9:
                chk.at(
                    ("slices", name, "derived_from", i),
                    "threshold_evidence_mismatch",
                    f"{evidence.limit} is {limit}, but the data it names gives {evidence.proposed}"
                    f" (quantile {evidence.quantile} of {evidence.n} pairs = {evidence.value:g},"
                    f" + margin {evidence.margin:g})",
                    "derive the limit again (workbench noise thresholds) or drop derived_from"
                    " and write the rationale of the hand-set limit",
                )
        if not outside:
            slices[str(name)] = parsed
    return slices


def _check_pair_list(
    chk: _Checker, raw_pairs: Any, header: _Header | None, raw_slices: dict[str, Any]
) -> tuple[list[NoisePair], list[Any]]:
    """Every pair (a valid one is kept when it adds no error), then lineage and leakage."""
    if raw_pairs is not None and not isinstance(raw_pairs, list):
        chk.at(("pairs",), "field_invalid", "pairs must be a list", "write pairs: as a YAML list")
    elif isinstance(raw_pairs, list) and not raw_pairs:
        fix = "add control and candidate pairs"
        chk.at(("pairs",), "field_empty", "the suite has no pairs", fix)
    items = raw_pairs if isinstance(raw_pairs, list) else []
    pairs: list[NoisePair] = []
    seen: dict[str, int] = {}
    contexts_of: dict[int, Contexts] = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            fix = f"write each pair as key: value fields ({_FORMAT})"
            chk.at(("pairs", i), "pair_shape", f"pair {i} is not a mapping", fix)
            continue
        pid = _str(item.get("pair_id"))
        if pid in seen:
            chk.at(
                ("pairs", i, "pair_id"),
                "pair_id_duplicate",
                f"pair_id {pid!r} is already used by pairs[{seen[pid]}]",
                "give every pair a unique id",
                case_id=pid,
            )
        elif pid is not None:
            seen[pid] = i
        errors = len(errors_only(chk))
        pair = _parse_pair(chk, item, i, pid)
        contexts_of[i] = _check_pair(chk, item, i, header, raw_slices)
        if pair is not None and len(errors_only(chk)) == errors:
            pairs.append(pair)
    _check_lineage(chk, items)
    _check_leakage(chk, items, contexts_of)
    return pairs, items


def _parse_pair(chk: _Checker, item: dict[str, Any], i: int, pid: str | None) -> NoisePair | None:
    data = dict(item)
    role = data.get("role")
    if isinstance(role, str) and role in RELATIONS and "expected_relation" not in data:
        data["expected_relation"] = RELATIONS[role]
    try:
        return NoisePair.model_validate(data)
    except ValidationError as exc:
        chk.translate(exc, ("pairs", i), pid)
        return None


def _check_suite_rules(
    chk: _Checker,
    items: list[Any],
    header: _Header | None,
    policy: NoisePolicy | None,
    raw_slices: dict[str, Any],
) -> None:
    """Controls for every candidate mode and every required role, sentinels, used slices."""
    dicts = [p for p in items if isinstance(p, dict)]
    active = [p for p in dicts if p.get("retired") is None]
    modes = {
        role: {_str(p.get("mode")) for p in active if p.get("role") == role}
        for role in ("control", "candidate")
    }
    for mode in sorted(m for m in modes["candidate"] - modes["control"] if m in MODES):
        message = f"candidate pairs use mode {mode!r} but no control pair does"
        fix = (
            f"add at least one control pair in mode {mode!r}: controls are run first and must"
            " separate before candidates are interpreted"
        )
        chk.at(("pairs",), "controls_missing", message, fix)
    for role in policy.required_control_roles if policy is not None else ():
        if not any(p.get("role") == role for p in active):
            message = f"the suite has no active {role} control, which the policy requires"
            fix = f"add a {role} control pair; until then every report is incomplete"
            chk.at(("pairs",), "control_role_missing", message, fix, severity="warning")
    _check_sentinels(chk, dicts, header.sentinels if header is not None else [], policy)
    used = Counter(_str(p.get("slice")) for p in active if p.get("role") == "candidate")
    for name in (n for n in raw_slices if not used.get(n)):
        message = f"slice {name!r} has no candidate pair"
        fix = "add candidate pairs for it or remove it"
        chk.at(("slices", name), "slice_without_pairs", message, fix, severity="warning")


def _check_sentinels(
    chk: _Checker, dicts: list[dict[str, Any]], sentinels: list[str], policy: NoisePolicy | None
) -> None:
    by_id = {pid: p for p in dicts if (pid := _str(p.get("pair_id"))) is not None}
    for j, sid in enumerate(sentinels):
        if sid not in by_id:
            what, fix = "is not a pair of the suite", "list pair ids of the suite"
            chk.at(("sentinels", j), "sentinel_unknown", f"sentinel {sid!r} {what}", fix)
        elif by_id[sid].get("retired") is not None:
            fix = "replace it with the pair that supersedes it (a new suite version)"
            chk.at(("sentinels", j), "sentinel_retired", f"sentinel {sid!r} is retired", fix)
    if sentinels and policy is not None and policy.max_spread is None:
        message = "the suite declares sentinels but the policy has no max_spread"
        fix = "add policy.max_spread: the largest repeat spread before a pair routes to review"
        chk.at(("policy",), "policy_spread_missing", message, fix)


def _check_leakage(chk: _Checker, raw_pairs: list[Any], contexts_of: dict[int, Contexts]) -> None:
    """As for gold: a source family never straddles partitions, nor does a question or an evidence
    passage (after normalizing Unicode, case and whitespace)."""
    from ..gold import normalize_text

    families: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    texts: dict[str, dict[str, list[_Seen]]] = {
        k: defaultdict(list) for k in ("question", "passage")
    }
    for i, raw in enumerate(raw_pairs):
        if not isinstance(raw, dict) or raw.get("partition") not in PARTITIONS:
            continue
        seen = _Seen(i, raw["partition"], _str(raw.get("source_family")), _str(raw.get("pair_id")))
        if seen.family is not None:
            families[seen.family][seen.partition].append(i)
        if isinstance(raw.get("user_input"), str):
            texts["question"][normalize_text(raw["user_input"])].append(seen)
        for text in _evidence_texts(raw, contexts_of.get(i, {})):
            texts["passage"][normalize_text(text)].append(seen)
    for fam, parts in families.items():
        if len(parts) > 1:
            where = ", ".join(
                f"{p} (pairs {', '.join(map(str, ns[:5]))})" for p, ns in sorted(parts.items())
            )
            first = min(n for ns in parts.values() for n in ns)
            message = f"source family {fam!r} appears in {len(parts)} partitions: {where}"
            fix = (
                "move every pair of the family into one partition; a family must not be tuned on"
                " in one partition and certified on in another"
            )
            chk.at(("pairs", first, "source_family"), "family_leakage", message, fix)
    for code, what, key in (
        ("cross_partition_duplicate", "question", "question"),
        ("cross_partition_passage", "evidence passage", "passage"),
    ):
        for members in texts[key].values():
            _check_cross_partition(chk, code, what, members)


@dataclass(frozen=True)
class _Seen:
    i: int
    partition: str
    family: str | None
    pid: str | None


def _evidence_texts(raw: dict[str, Any], contexts: Contexts) -> list[str]:
    """Both members' context texts, the noisy member's distractor excluded (it is the controlled
    noise, not evidence)."""
    distractor = _mapping_at(_mapping_at(raw, "noisy"), "distractor").get("index")
    return [
        ctx.text
        for member in MEMBERS
        for j, ctx in enumerate(contexts.get(member) or [])
        if not (member == "noisy" and j == distractor)
    ]


def _check_cross_partition(chk: _Checker, code: str, what: str, members: list[_Seen]) -> None:
    """The first pair of each partition that shares the text with a pair of another partition
    and another source family."""
    first: dict[str, _Seen] = {}
    for seen in members:
        if seen.partition in first:
            continue
        others = [s for s in first.values() if s.family != seen.family]  # of other partitions
        first[seen.partition] = seen
        if others:
            message = (
                f"the same {what} (after normalizing Unicode, case and whitespace) as pair"
                f" {others[0].pid!r} in another partition and source family"
            )
            fix = (
                "put both pairs in one source family and partition, or drop one: near-duplicates"
                " across partitions make a tuned prompt look general"
            )
            chk.at(("pairs", seen.i), code, message, fix, case_id=seen.pid)


def _check_lineage(chk: _Checker, raw_pairs: list[Any]) -> None:
    index = {
        pid: p
        for p in raw_pairs
        if isinstance(p, dict) and (pid := _str(p.get("pair_id"))) is not None
    }
    claimed: dict[str, str] = {}
    for i, raw in enumerate(raw_pairs):
        if not isinstance(raw, dict) or raw.get("supersedes") is None:
            continue
        pid, sup = _str(raw.get("pair_id")), raw["supersedes"]
        found = _supersession(raw, pid, sup, index, claimed)
        if found is not None:
            sub, code, message, fix = found
            chk.at(("pairs", i, *sub), code, message, fix, case_id=pid)
        if isinstance(sup, str) and pid is not None:
            claimed.setdefault(sup, pid)


def _supersession(
    raw: dict[str, Any], pid: str | None, sup: Any, index: dict[str, Any], claimed: dict[str, str]
) -> tuple[tuple[str, ...], str, str, str] | None:
    """What is wrong with one pair's ``supersedes`` (path below the pair, code, message, fix)."""
    old = index.get(sup) if isinstance(sup, str) else None
    if sup == pid:
        fix = "point supersedes at the retired pair this one fixes"
        return ("supersedes",), "supersedes_cycle", "the pair supersedes itself", fix
    if old is None:
        message = f"supersedes {sup!r}, which is not in the suite"
        fix = (
            "keep the retired pair in the file (retired with a reason, never deleted) and point"
            " supersedes at it"
        )
        return ("supersedes",), "supersedes_unknown", message, fix
    if old.get("retired") is None:
        message = f"supersedes {sup!r}, which is still active"
        fix = (
            f"retire {sup!r} with a reason (retired: {{reason, by, on}}); the fixed case"
            " replaces it"
        )
        return ("supersedes",), "supersedes_not_retired", message, fix
    if sup in claimed:
        fix = "keep one chain: supersede the newest version"
        message = f"{sup!r} is already superseded by {claimed[sup]!r}"
        return ("supersedes",), "supersedes_fork", message, fix
    lineage = ("pair_id", "retired", "supersedes")
    if {k: v for k, v in old.items() if k not in lineage} == {
        k: v for k, v in raw.items() if k not in lineage
    }:
        message = f"the pair repeats {sup!r} unchanged"
        fix = "a new case version fixes something: change the reference, responses or contexts"
        return (), "supersedes_unchanged", message, fix
    return None


def validate_pairs(path: str | Path) -> tuple[NoiseSuite | None, list[Problem]]:
    """Read and check a pair-suite file; return the suite (None on errors) and every problem."""
    path = Path(path)
    loc = str(path)
    try:
        doc = load_yaml(
            path,
            prefix="pairs",
            what="pair suite",
            missing_message="the pair suite does not exist",
            missing_fix="point at a pairs YAML file, e.g. data/noise/<name>@<version>.yaml",
            encoding_code="pairs_yaml",
            shape=None,
        )
    except WorkbenchError as exc:  # missing, not a file, unreadable, too large, not UTF-8, YAML
        return None, list(exc.problems)
    lines = yaml_lines(doc.text, root=True) or {(): 1}  # a field's line is its key's line
    suite, found = check_pairs(doc.data, location=loc, lines=lines, sha256=sha256_file(path))
    problems = Problems(found)
    if suite is not None and not errors_only(problems):
        from ..approval import check_lineage
        from ._release import suite_snapshot_of

        where = {
            p.pair_id: f"{loc}:{lines.get(('pairs', i), 0)}" for i, p in enumerate(suite.pairs)
        }
        problems += check_lineage(suite_snapshot_of(suite, where))
    if suite is not None and path.stem != suite.label:
        message = f"file name {path.name!r} does not match name@version {suite.label!r}"
        fix = f"rename the file to {suite.label}.yaml so versions cannot be confused"
        problems.add(loc, "pairs_filename", message, fix, severity="warning")
    return suite, problems


def load_pairs(path: str | Path) -> NoiseSuite:
    """Read a pair suite; raise :class:`~workbench.errors.WorkbenchError` listing every problem."""
    suite, problems = validate_pairs(path)
    return _or_refuse(suite, problems, str(path))


def parse_pairs(raw: dict[str, Any], *, location: str = "pairs") -> NoiseSuite:
    """Check an in-memory suite mapping (same rules as :func:`load_pairs`) and return the suite."""
    suite, problems = check_pairs(raw, location=location)
    return _or_refuse(suite, problems, location)


def _or_refuse(suite: NoiseSuite | None, problems: list[Problem], location: str) -> NoiseSuite:
    errors = errors_only(problems)
    if suite is None or errors:
        raise WorkbenchError(f"{location}: invalid pair suite: {len(errors)} problem(s)", errors)
    return suite
