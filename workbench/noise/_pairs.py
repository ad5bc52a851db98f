"""Noise-sensitivity pair suites: paired clean/noisy cases, their evidence, policy and validation.

A suite is one YAML file (``schema_version`` 2)::

    schema_version: 2
    name: support-noise
    version: "2"
    description: what the suite protects
    owner: who can explain a failing claim
    rationale: why these limits, written before results are seen
    approved_reference_versions: [handbook-v4.2]
    policy:                         # the reviewed noise policy (see NoisePolicy)
      max_cases: 80                 # mandatory: most member scorings one invocation may start
      max_cost_usd: 0.50            # mandatory: the invocation's evaluator budget
      required_control_roles: [control, adversarial, reference_defect]
      max_spread: 0.1               # mandatory when sentinels are declared
      companions: {refusal: {direction: lower_is_better, limit: 0.25}}
    manifest: {window, source_owners, licences, redaction, known_gaps, reviewers, sampling,
               review_schedule}
    sentinels: [ref-late-request]   # the frozen sentinel set scored again by --repeat
    slices:
      refunds:
        max_score: 0.0              # the gate: the highest noisy-member score allowed
        direction: lower_is_better  # mandatory beside every threshold
        max_delta: 0.0              # optional: the highest noisy - clean increase allowed
        max_abstention_rate: 0.0    # optional: abstaining candidate members / members
        risk: critical              # optional
    pairs:
      - pair_id: ref-late-request
        slice: refunds
        mode: irrelevant            # mandatory: relevant | irrelevant (never defaulted)
        role: candidate             # control | adversarial | reference_defect | candidate
        partition: held_out         # development | calibration | held_out
        source_family: pol-ref-02   # partitions are split by source family
        reference_version: handbook-v4.2
        user_input: ...
        reference: ...
        generator: {model: ..., prompt_sha256: ..., retriever: ...}
        retrieval_assertions: {expected_documents: [...], forbidden_sources: [...], tenant: ...,
                               max_rank: {doc: 1}}
        sign_off: {reviewer, reference_sufficient, context_classes: {clean: [...], noisy: [...]},
                   negative_adopts_false_claim}
        clean:
          response: ...
          retrieved_contexts:       # plain strings, or structured evidence
            - {text: ..., document_id: ..., version: ..., chunk_id: ..., rank: 1,
               retrieval_score: 0.8, tenant: ..., corpus_id: ..., retriever_config_sha256: ...}
          generation_trace: {run_id: ..., context_ids: [...], response_sha256: ...}
          abstained: false          # the system abstained: its own outcome, never scored
        noisy:
          response: ...
          retrieved_contexts: [...]
          distractor: {index: 1, label: stale-faq, change: add, false_claim: ...,
                       attack: instruction}
        provenance: {origin: production | regenerated | constructed, ...}
        retired: {reason, by, on}   # retired pairs stay in the file and are never scored
        supersedes: old-pair-id     # a fixed case: a new pair replacing a retired one

**Pairs.** Both members share the question, the reference and the generator configuration.
The noisy member's contexts are the clean member's contexts with exactly one labelled
distractor added (``change: add``, inserted at ``index``) or substituted (``change:
replace``). Structured contexts are compared by text and document identity (rank and score
excluded, since an added distractor shifts the ranks after it).

**Roles and expected relations.**

- ``control`` (positive and negative control): the clean member is grounded, the noisy
  member adopts the distractor's false claim; ``noisy_worse_than_clean``: the noisy member
  must score strictly higher (lower is better). Every candidate mode needs one.
- ``adversarial``: a control whose distractor carries an instruction, a fake policy or a
  stale effective date (``distractor.attack``) that the noisy response follows; it must
  separate like a control.
- ``reference_defect``: the reference itself is wrong or incomplete (``reference_defect``
  says how) and both responses are correct; ``not_punished``: a correct response must score
  0, or the case routes to review. The sign-off must say ``reference_sufficient: false``.
- ``candidate``: release evidence, ``noisy_not_worse``; blocks only through slice limits.

Control pairs of every role must carry a reviewer ``sign_off`` (reference sufficiency,
context classes, and whether the negative adopts the false claim). Responses captured from
production or regenerated need a ``generation_trace`` per member whose context ids and
response hash match the member. Partitions are split by ``source_family`` and checked for
leakage as gold is (a family in two partitions; the same question or the same passage,
after normalizing case, Unicode and whitespace, in two partitions).

:func:`load_pairs` reports every problem at once (``file:line`` location, code and fix).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml
from pydantic import Field, ValidationError

from .._io import read_bounded, sha256_file, sha256_json, sha256_text, yaml_loads
from .._load import Problems, yaml_lines, yaml_problem
from .._record import Record as _Model
from .._record import SchemaTooNew
from ..errors import Problem, Severity, WorkbenchError, errors_only
from ._evidence import (
    ATTACKS,
    CONTROL_ROLES,
    ORIGINS,
    PARTITIONS,
    Attack,
    EvidenceManifest,
    GenerationTrace,
    NoisePolicy,
    Retirement,
    RetrievalAssertions,
    RetrievedContext,
    SignOff,
    as_context,
)

PAIRS_SCHEMA_VERSION = 2
"""Version of the pair-suite file format. 2 added the policy, manifest, sentinels, partitions,
structured contexts, traces, retrieval assertions, sign-offs, new roles and retirement."""

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
Member = Literal["clean", "noisy"]
PartitionName = Literal["development", "calibration", "held_out"]
MEMBERS: tuple[Member, ...] = ("clean", "noisy")

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
_FORMAT = "see the pair-suite format in workbench/noise/_pairs.py"


class NoiseInput(_Model):
    """Everything a ``ragas-noise`` judge sees for one pair member (and nothing else)."""

    user_input: str
    """The user's question (shared by both members)."""
    response: str
    """The response generated from exactly ``retrieved_contexts``."""
    reference: str
    """The approved reference answer (shared by both members)."""
    retrieved_contexts: list[str]
    """The context texts the generator saw, in rank order (retrieval evidence never reaches the
    evaluator)."""
    mode: Mode
    """NoiseSensitivity mode: ``relevant`` or ``irrelevant``. Mandatory, never defaulted."""

    def digest(self) -> str:
        """sha256 over the canonical JSON of this input: what a result's ``response_hash`` holds."""
        return sha256_json(self.model_dump(mode="json"))


class Distractor(_Model):
    """The one labelled distractor context that makes a member noisy."""

    index: int
    """Position of the distractor in the noisy member's ``retrieved_contexts`` (0-based)."""
    label: str
    """What kind of distractor it is (e.g. ``stale-policy``, ``other-product``, ``injection``)."""
    change: Literal["add", "replace"]
    """``add``: inserted at ``index``; ``replace``: substituted for the clean context at
    ``index``."""
    false_claim: str | None = None
    """The incorrect claim the distractor carries, when it carries one."""
    attack: Attack | None = None
    """Adversarial distractors: ``instruction`` (aimed at the generator), ``fake_policy`` or
    ``stale_date``."""


class CleanMember(_Model):
    """The clean member: enough relevant evidence and no deliberate distractor."""

    response: str
    """The response the system generated from exactly these contexts."""
    retrieved_contexts: list[str | RetrievedContext]
    """The contexts sent to generation, in rank order: plain text, or text with retrieval
    evidence."""
    user_input: str | None = None
    """Optional copy from the member's trace; must equal the pair's ``user_input``."""
    reference: str | None = None
    """Optional copy from the member's trace; must equal the pair's ``reference``."""
    generator: dict[str, Any] | None = None
    """Optional copy from the member's trace; must equal the pair's ``generator``."""
    generation_trace: GenerationTrace | None = None
    """What generation recorded: run id, context ids and response hash (checked against this
    member)."""
    abstained: bool = False
    """The system abstained (refused or said it cannot answer): an outcome of its own, never
    scored."""

    def contexts(self) -> list[RetrievedContext]:
        """The contexts as :class:`RetrievedContext` (plain strings become ``{text}``)."""
        return [as_context(c) for c in self.retrieved_contexts]

    def texts(self) -> list[str]:
        """The context texts, in order: what the evaluator sees."""
        return [c.text for c in self.contexts()]


class NoisyMember(CleanMember):
    """The noisy member: the clean contexts with exactly one labelled distractor added or
    replaced."""

    distractor: Distractor
    """The one change that makes this member noisy."""


class SliceLimit(_Model):
    """The gate of one slice. Every threshold carries its direction."""

    max_score: float
    """Highest NoiseSensitivity score a candidate pair's noisy member may have."""
    direction: Direction
    """Always ``lower_is_better``: stored beside the threshold so no report can invert it."""
    max_delta: float | None = None
    """Optional: highest (noisy - clean) score increase allowed per candidate pair."""
    max_abstention_rate: float | None = None
    """Optional: highest share of abstaining candidate members. Unset: any abstention routes to
    review."""
    risk: str | None = None
    """Business risk of the slice (e.g. ``critical``)."""
    rationale: str | None = None
    """Why this limit, written before results are seen."""


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
    """``control``, ``adversarial``, ``reference_defect`` (run first) or ``candidate`` (release
    evidence)."""
    partition: PartitionName
    """``development``, ``calibration`` or ``held_out``."""
    source_family: str
    """The source family (document family, paraphrase group); a family never straddles
    partitions."""
    reference_version: str
    """Version of the reference; must be one of the suite's ``approved_reference_versions``."""
    user_input: str
    """The question, shared by both members."""
    reference: str
    """The approved reference answer, shared by both members."""
    generator: dict[str, Any]
    """Generator configuration shared by both members (model, prompt hash, retriever ...)."""
    expected_relation: Relation
    """``noisy_worse_than_clean`` (control, adversarial), ``not_punished`` (reference_defect),
    ``noisy_not_worse`` (candidate)."""
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
    """Where the pair came from: ``origin`` (production, regenerated, constructed), source ids,
    licence."""
    notes: str | None = None
    """Free-text notes for reviewers."""

    def member(self, name: Member) -> CleanMember:
        """The ``clean`` or ``noisy`` member."""
        return self.clean if name == "clean" else self.noisy

    def judge_input(self, name: Member) -> NoiseInput:
        """What the judge sees for one member: question, response, reference, context texts and
        mode."""
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

    @property
    def is_control(self) -> bool:
        """True for the control roles (control, adversarial, reference_defect)."""
        return self.role in CONTROL_ROLES

    def frame_sha256(self) -> str:
        """Hash of what a baseline comparison holds constant: question, reference and its
        version, mode, role, slice and partition (responses and contexts may differ)."""
        return sha256_json(
            {
                "user_input": self.user_input,
                "reference": self.reference,
                "reference_version": self.reference_version,
                "mode": self.mode,
                "role": self.role,
                "slice": self.slice,
                "partition": self.partition,
            }
        )

    def content_sha256(self) -> str:
        """Hash of the whole pair except its retirement: what a frozen release pins."""
        return sha256_json(self.model_dump(mode="json", exclude={"retired"}))


class NoiseSuite(_Model):
    """A validated pair suite. Build it with :func:`load_pairs` or :func:`parse_pairs`, which check
    everything."""

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

    @property
    def label(self) -> str:
        """``name@version``."""
        return f"{self.name}@{self.version}"

    @property
    def direction(self) -> str:
        """Always ``lower_is_better``."""
        return DIRECTION

    def active(self) -> list[NoisePair]:
        """Pairs that are not retired, in file order."""
        return [p for p in self.pairs if p.retired is None]

    def retired(self) -> list[NoisePair]:
        """Retired pairs, in file order."""
        return [p for p in self.pairs if p.retired is not None]

    def controls(self) -> list[NoisePair]:
        """Active control pairs of every control role, in file order."""
        return [p for p in self.active() if p.is_control]

    def candidates(self, partition: str | None = None) -> list[NoisePair]:
        """Active candidate pairs (of one partition when given), in file order."""
        return [
            p
            for p in self.active()
            if p.role == "candidate" and (partition is None or p.partition == partition)
        ]

    def pairs_frame(self) -> Any:
        """One row per pair: id, role, partition, slice, mode, distractor label and change, expected
        relation, status."""
        import pandas as pd

        columns = [
            "pair_id",
            "role",
            "partition",
            "source_family",
            "slice",
            "mode",
            "distractor",
            "change",
            "attack",
            "expected_relation",
            "contexts_clean",
            "contexts_noisy",
            "structured",
            "assertions",
            "status",
        ]
        rows = [
            {
                "pair_id": p.pair_id,
                "role": p.role,
                "partition": p.partition,
                "source_family": p.source_family,
                "slice": p.slice,
                "mode": p.mode,
                "distractor": p.noisy.distractor.label,
                "change": p.noisy.distractor.change,
                "attack": p.noisy.distractor.attack,
                "expected_relation": p.expected_relation,
                "contexts_clean": len(p.clean.retrieved_contexts),
                "contexts_noisy": len(p.noisy.retrieved_contexts),
                "structured": any(c.structured for m in MEMBERS for c in p.member(m).contexts()),
                "assertions": p.retrieval_assertions is not None,
                "status": "retired: " + p.retired.reason if p.retired else "active",
            }
            for p in self.pairs
        ]
        return pd.DataFrame(rows, columns=columns)

    def limits_frame(self) -> Any:
        """The gate per slice: max_score, max_delta and their direction (lower is better)."""
        import pandas as pd

        rows = [
            {
                "slice": name,
                "risk": lim.risk,
                "max_score": lim.max_score,
                "max_delta": lim.max_delta,
                "max_abstention_rate": lim.max_abstention_rate,
                "direction": lim.direction,
                "candidate_pairs": sum(1 for p in self.candidates() if p.slice == name),
                "rationale": lim.rationale,
            }
            for name, lim in self.slices.items()
        ]
        return pd.DataFrame(
            rows,
            columns=[
                "slice",
                "risk",
                "max_score",
                "max_delta",
                "max_abstention_rate",
                "direction",
                "candidate_pairs",
                "rationale",
            ],
        )

    def pair(self, pair_id: str) -> NoisePair:
        """The pair with this id."""
        for p in self.pairs:
            if p.pair_id == pair_id:
                return p
        raise KeyError(pair_id)


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


# -- locating problems ------------------------------------------------------------------------


class _Checker:
    def __init__(self, location: str, lines: dict[tuple[Any, ...], int]) -> None:
        self.location = location
        self.lines = lines
        self.problems = Problems()

    def where(self, path: tuple[Any, ...]) -> str:
        line = None
        for n in range(len(path), -1, -1):
            line = self.lines.get(tuple(path[:n]))
            if line is not None:
                break
        dotted = _dotted(path)
        return (
            f"{self.location}:{line}" + (f" ({dotted})" if dotted else "")
            if line
            else (f"{self.location} ({dotted})" if dotted else self.location)
        )

    def add(
        self,
        path: tuple[Any, ...],
        code: str,
        message: str,
        fix: str,
        *,
        case_id: str | None = None,
        severity: Severity = "error",
    ) -> None:
        self.problems.add(self.where(path), code, message, fix, case_id=case_id, severity=severity)


def _dotted(path: Iterable[Any]) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


# -- validation -------------------------------------------------------------------------------


def _translate(  # noqa: C901
    chk: _Checker,
    exc: ValidationError,
    base: tuple[Any, ...],
    case_id: str | None,
    skip: frozenset[tuple[Any, ...]] = frozenset(),
) -> None:
    for e in exc.errors(include_url=False):
        loc = tuple(e["loc"])
        if e["type"] == "missing" and loc in skip:
            continue  # reported with its own code
        if "retrieved_contexts" in loc and len(loc) > loc.index("retrieved_contexts") + 2:
            # the str | RetrievedContext union's branch errors: _check_contexts reports each
            # context once
            continue
        path = (*base, *loc)
        field = str(loc[-1]) if loc else ""
        kind = e["type"]
        if field == "mode" and len(loc) == 1:
            if kind == "missing":
                chk.add(
                    path,
                    "mode_missing",
                    "the pair has no mode; NoiseSensitivity's mode is never defaulted",
                    "add mode: relevant or mode: irrelevant (the mode the pair was built for)",
                    case_id=case_id,
                )
            else:
                chk.add(
                    path,
                    "mode_unknown",
                    f"unknown mode {e.get('input')!r}",
                    "use mode: relevant or mode: irrelevant",
                    case_id=case_id,
                )
        elif field == "role" and len(loc) == 1 and kind != "missing":
            chk.add(
                path,
                "role_unknown",
                f"unknown role {e.get('input')!r}",
                "use role: " + ", ".join(ROLES),
                case_id=case_id,
            )
        elif field == "partition" and len(loc) == 1 and kind != "missing":
            chk.add(
                path,
                "partition_unknown",
                f"unknown partition {e.get('input')!r}",
                "use partition: " + ", ".join(PARTITIONS),
                case_id=case_id,
            )
        elif field == "change" and kind != "missing":
            chk.add(
                path,
                "change_unknown",
                f"unknown distractor change {e.get('input')!r}",
                "use change: add (distractor inserted) or change: replace (distractor substituted)",
                case_id=case_id,
            )
        elif field == "attack" and kind != "missing":
            chk.add(
                path,
                "attack_unknown",
                f"unknown distractor attack {e.get('input')!r}",
                "use attack: " + ", ".join(ATTACKS),
                case_id=case_id,
            )
        elif field == "direction" and kind == "missing":
            chk.add(
                path,
                "direction_missing",
                "a threshold without its direction",
                f"add direction: {DIRECTION} beside the threshold (NoiseSensitivity: lower is"
                " better)",
                case_id=case_id,
            )
        elif field == "direction" and "companions" not in loc:
            chk.add(
                path,
                "direction_invalid",
                f"direction {e.get('input')!r}: NoiseSensitivity is lower-is-better",
                f"write direction: {DIRECTION}",
                case_id=case_id,
            )
        elif field == "expected_relation" and kind != "missing":
            chk.add(
                path,
                "relation_unknown",
                f"unknown expected_relation {e.get('input')!r}",
                "use " + ", ".join(sorted(set(RELATIONS.values()))),
                case_id=case_id,
            )
        elif kind == "missing":
            chk.add(
                path,
                "field_missing",
                f"required field {_dotted(loc)!r} is missing",
                f"add {field}: ({_FORMAT})",
                case_id=case_id,
            )
        elif kind == "extra_forbidden":
            chk.add(
                path,
                "field_unknown",
                f"unknown field {_dotted(loc)!r}",
                f"remove it or correct its spelling ({_FORMAT})",
                case_id=case_id,
            )
        else:
            chk.add(
                path,
                "field_invalid",
                f"{_dotted(loc) or 'value'}: {e['msg']}",
                f"correct this field ({_FORMAT})",
                case_id=case_id,
            )


def _text_ok(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _check_contexts(
    chk: _Checker, ctx: list[Any], where: tuple[Any, ...], name: str, pid: str | None
) -> list[RetrievedContext] | None:
    """Each context: a non-empty string or a valid structured context; ranks in list order."""
    out: list[RetrievedContext] = []
    ok = True
    for j, item in enumerate(ctx):
        if isinstance(item, str):
            if not item.strip():
                chk.add(
                    (*where, j),
                    "context_empty",
                    f"context {j} of the {name} member is empty",
                    "remove it or record the passage text",
                    case_id=pid,
                )
                ok = False
            else:
                out.append(RetrievedContext(text=item))
        elif isinstance(item, dict):
            try:
                parsed = RetrievedContext.model_validate(item)
            except ValidationError as exc:
                for e in exc.errors(include_url=False):
                    loc = tuple(e["loc"])
                    code = (
                        "field_missing"
                        if e["type"] == "missing"
                        else (
                            "field_unknown" if e["type"] == "extra_forbidden" else "context_invalid"
                        )
                    )
                    chk.add(
                        (*where, j, *loc),
                        code,
                        f"context {j} of the {name} member: {_dotted(loc) or 'value'}: {e['msg']}",
                        "a structured context is {text, document_id, version, chunk_id, rank,"
                        " retrieval_score, tenant, corpus_id, retriever_config_sha256}; only text"
                        " is required",
                        case_id=pid,
                    )
                ok = False
                continue
            if not parsed.text.strip():
                chk.add(
                    (*where, j, "text"),
                    "context_empty",
                    f"context {j} of the {name} member has empty text",
                    "record the passage text sent to generation",
                    case_id=pid,
                )
                ok = False
            out.append(parsed)
        else:
            chk.add(
                (*where, j),
                "context_invalid",
                f"context {j} of the {name} member is neither text nor a mapping",
                "write the passage text, or {text: ..., document_id: ..., ...}",
                case_id=pid,
            )
            ok = False
    ranks = [c.rank for c in out]
    known = [r for r in ranks if r is not None]
    if (
        ok
        and out
        and len(known) == len(ranks)
        and any(b <= a for a, b in zip(known, known[1:], strict=False))
    ):
        chk.add(
            where,
            "context_rank_order",
            f"the {name} member's ranks {ranks} are not strictly increasing in list order",
            "list the contexts in the order generation saw them, with their retriever ranks",
            case_id=pid,
        )
    return out if ok else None


def _check_trace(
    chk: _Checker,
    raw_trace: Any,
    contexts: list[RetrievedContext] | None,
    response: Any,
    generator: Any,
    where: tuple[Any, ...],
    name: str,
    pid: str | None,
) -> None:
    try:
        trace = GenerationTrace.model_validate(raw_trace)
    except ValidationError as exc:
        _translate(chk, exc, where, pid)
        return
    if contexts is not None and trace.context_ids != [c.context_id() for c in contexts]:
        chk.add(
            (*where, "context_ids"),
            "trace_contexts_mismatch",
            f"the {name} member's generation trace lists contexts {trace.context_ids} but the"
            f" member holds {[c.context_id() for c in contexts]}",
            "record the exact contexts generation used (a later retrieval replay is a new run id"
            " and new contexts)",
            case_id=pid,
        )
    if isinstance(response, str) and trace.response_sha256 != sha256_text(response):
        chk.add(
            (*where, "response_sha256"),
            "trace_response_mismatch",
            f"the {name} member's response is not the one generation produced (sha256"
            f" {sha256_text(response)[:12]} vs trace {trace.response_sha256[:12]})",
            "record the response exactly as generated from these contexts, or regenerate under a"
            " new run id",
            case_id=pid,
        )
    if isinstance(generator, dict):
        for field, key in (("generator_model", "model"), ("prompt_sha256", "prompt_sha256")):
            value = getattr(trace, field)
            if value is not None and generator.get(key) is not None and value != generator.get(key):
                chk.add(
                    (*where, field),
                    "trace_generator_mismatch",
                    f"the {name} member's trace has {field} {value!r}, the pair's generator {key}"
                    f" is {generator.get(key)!r}",
                    "the trace and the pair must name the same generator configuration",
                    case_id=pid,
                )


def _check_sign_off(  # noqa: C901
    chk: _Checker,
    raw: dict[str, Any],
    base: tuple[Any, ...],
    pid: str | None,
    contexts: dict[str, list[RetrievedContext] | None],
) -> None:
    role, mode = raw.get("role"), raw.get("mode")
    where = (*base, "sign_off")
    raw_sign = raw.get("sign_off")
    if raw_sign is None:
        if role in CONTROL_ROLES:
            chk.add(
                base,
                "sign_off_missing",
                f"the {role} pair has no reviewer sign-off",
                "record sign_off: {reviewer, reference_sufficient, context_classes: {clean: [...],"
                " noisy: [...]}, negative_adopts_false_claim}",
                case_id=pid,
            )
        return
    try:
        sign = SignOff.model_validate(raw_sign)
    except ValidationError as exc:
        _translate(chk, exc, where, pid)
        return
    for member in MEMBERS:
        ctx = contexts.get(member)
        classes = sign.context_classes.get(member)
        if classes is None:
            chk.add(
                (*where, "context_classes"),
                "sign_off_context_classes",
                f"the sign-off classifies no context of the {member} member",
                f"give context_classes.{member}: one relevant/irrelevant per retrieved context",
                case_id=pid,
            )
        elif ctx is not None and len(classes) != len(ctx):
            chk.add(
                (*where, "context_classes", member),
                "sign_off_context_classes",
                f"the sign-off classifies {len(classes)} contexts of the {member} member, which has"
                f" {len(ctx)}",
                "give one class per retrieved context, in order",
                case_id=pid,
            )
    if role not in CONTROL_ROLES:
        return
    if sign.negative_adopts_false_claim is None:
        chk.add(
            (*where, "negative_adopts_false_claim"),
            "sign_off_field_missing",
            f"the {role} pair's sign-off does not say whether the negative control adopts the false"
            " claim",
            "record negative_adopts_false_claim: true or false, as the reviewer judged it",
            case_id=pid,
        )
    if role == "reference_defect":
        if sign.reference_sufficient:
            chk.add(
                (*where, "reference_sufficient"),
                "sign_off_defect_not_flagged",
                "a reference-defect control whose sign-off calls the reference sufficient: the"
                " reviewer did not catch the defect",
                "have the reviewer check the reference against the sources; a competent review"
                " flags it (reference_sufficient: false)",
                case_id=pid,
            )
        return
    if not sign.reference_sufficient:
        chk.add(
            (*where, "reference_sufficient"),
            "sign_off_reference_insufficient",
            f"the reviewer flagged the {role} pair's reference as insufficient",
            "fix the reference (a new pair version), or make the pair a reference_defect control",
            case_id=pid,
        )
    if sign.negative_adopts_false_claim is False:
        chk.add(
            (*where, "negative_adopts_false_claim"),
            "sign_off_negative_not_adopting",
            "the reviewer says the negative control does not adopt the false claim",
            "rewrite the noisy response so it adopts the distractor's false claim, or make the pair"
            " a candidate",
            case_id=pid,
        )
    clean_classes = sign.context_classes.get("clean") or []
    if clean_classes and "relevant" not in clean_classes:
        chk.add(
            (*where, "context_classes", "clean"),
            "sign_off_no_relevant_context",
            "the positive control has no context the reviewer classed as relevant",
            "a positive control needs sufficient relevant evidence",
            case_id=pid,
        )
    distractor = (
        (raw.get("noisy") or {}).get("distractor") if isinstance(raw.get("noisy"), dict) else None
    )
    noisy_classes = sign.context_classes.get("noisy") or []
    if (
        isinstance(distractor, dict)
        and isinstance(distractor.get("index"), int)
        and 0 <= distractor["index"] < len(noisy_classes)
        and mode in MODES
    ):
        got = noisy_classes[distractor["index"]]
        if got != mode:
            wanted = (
                "a plausible context that does not support the reference"
                if mode == "irrelevant"
                else "a context that supports part of the reference and carries the false statement"
            )
            chk.add(
                (*where, "context_classes", "noisy"),
                "sign_off_context_class_mode",
                f"the reviewer classed the distractor {got}, but a {mode}-mode negative control"
                f" needs a {mode} distractor context",
                f"rebuild the distractor for {mode} mode ({wanted}), or change the mode",
                case_id=pid,
            )


def _mapping_at(raw: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``raw[key]`` when it is a mapping, else an empty one."""
    value = raw.get(key)
    return value if isinstance(value, dict) else {}


def _check_pair(  # noqa: C901, PLR0915
    chk: _Checker, raw: dict[str, Any], i: int, header: _Header | None, slices: dict[str, Any]
) -> dict[str, list[RetrievedContext] | None]:
    base: tuple[Any, ...] = ("pairs", i)
    pid = raw.get("pair_id") if isinstance(raw.get("pair_id"), str) else None
    if pid is not None and not _ID.match(pid):
        chk.add(
            (*base, "pair_id"),
            "pair_id_invalid",
            f"pair_id {pid!r} has characters other than letters, digits, '_', '.', '-'",
            "use a simple stable id, e.g. ref-late-request",
            case_id=pid,
        )
    for field in ("user_input", "reference", "source_family"):
        if field in raw and isinstance(raw[field], str) and not raw[field].strip():
            chk.add(
                (*base, field),
                "field_empty",
                f"{field} is empty",
                f"write the {field.replace('_', ' ')}",
                case_id=pid,
            )
    role = raw.get("role")
    if (
        header is not None
        and isinstance(raw.get("reference_version"), str)
        and raw["reference_version"] not in header.approved_reference_versions
    ):
        chk.add(
            (*base, "reference_version"),
            "reference_unapproved",
            f"reference_version {raw['reference_version']!r} is not approved",
            "use an approved reference version ("
            + ", ".join(header.approved_reference_versions)
            + ") or have the new version reviewed and add it to approved_reference_versions",
            case_id=pid,
        )
    if isinstance(raw.get("slice"), str) and raw["slice"] not in slices:
        chk.add(
            (*base, "slice"),
            "slice_unknown",
            f"slice {raw['slice']!r} is not declared in the suite's slices",
            "declare the slice with its max_score and direction, or correct the name",
            case_id=pid,
        )
    generator = raw.get("generator")
    if isinstance(generator, dict) and not generator.get("model"):
        chk.add(
            (*base, "generator"),
            "generator_incomplete",
            "the generator configuration does not name its model",
            "record the generator model (and prompt hash, retriever) the responses came from",
            case_id=pid,
        )
    relation = raw.get("expected_relation")
    if (
        role in RELATIONS
        and isinstance(relation, str)
        and relation in RELATIONS.values()
        and relation != RELATIONS[role]
    ):
        chk.add(
            (*base, "expected_relation"),
            "relation_role_mismatch",
            f"a {role} pair expects {relation!r}",
            f"a {role} pair expects {RELATIONS[role]!r}; change the role or the relation",
            case_id=pid,
        )
    if role == "reference_defect" and not _text_ok(raw.get("reference_defect")):
        chk.add(
            base,
            "reference_defect_missing",
            "a reference-defect control does not say what is wrong with its reference",
            "write reference_defect: what the reference omits or gets wrong (and that the responses"
            " are correct)",
            case_id=pid,
        )
    elif role != "reference_defect" and raw.get("reference_defect") is not None:
        chk.add(
            (*base, "reference_defect"),
            "reference_defect_unexpected",
            f"a {role} pair describes a reference defect",
            "make the pair a reference_defect control, or fix the reference in a new pair version",
            case_id=pid,
        )
    provenance = raw.get("provenance")
    origin = provenance.get("origin") if isinstance(provenance, dict) else None
    if origin is None:
        chk.add(
            (*base, "provenance"),
            "origin_missing",
            "the pair does not say where its responses came from",
            "add provenance: {origin: production | regenerated | constructed}; the origins are not"
            " interchangeable",
            case_id=pid,
        )
    elif origin not in ORIGINS:
        chk.add(
            (*base, "provenance", "origin"),
            "origin_unknown",
            f"unknown origin {origin!r}",
            "use origin: " + ", ".join(ORIGINS),
            case_id=pid,
        )
    assertions = raw.get("retrieval_assertions")
    if isinstance(assertions, dict):
        try:
            parsed = RetrievalAssertions.model_validate(assertions)
        except ValidationError:
            parsed = None  # reported by the pair's model validation
        if parsed is not None and parsed.empty():
            chk.add(
                (*base, "retrieval_assertions"),
                "retrieval_assertions_empty",
                "retrieval_assertions declares no check",
                "assert expected_documents, forbidden_sources, tenant or max_rank, or remove the"
                " block",
                case_id=pid,
            )
        if parsed is not None:
            for doc, rank in parsed.max_rank.items():
                if rank < 1:
                    chk.add(
                        (*base, "retrieval_assertions", "max_rank", doc),
                        "field_invalid",
                        f"max_rank for {doc!r} is {rank}",
                        "ranks start at 1",
                        case_id=pid,
                    )

    clean, noisy = raw.get("clean"), raw.get("noisy")
    members = {"clean": clean, "noisy": noisy}
    raw_contexts: dict[str, list[Any] | None] = {}
    contexts: dict[str, list[RetrievedContext] | None] = {}
    for name, member in members.items():
        if not isinstance(member, dict):
            raw_contexts[name] = contexts[name] = None
            continue
        if isinstance(member.get("response"), str) and not member["response"].strip():
            chk.add(
                (*base, name, "response"),
                "field_empty",
                f"the {name} member's response is empty",
                "record the response the system generated from these contexts",
                case_id=pid,
            )
        ctx = member.get("retrieved_contexts")
        raw_contexts[name] = ctx if isinstance(ctx, list) else None
        contexts[name] = None
        if isinstance(ctx, list):
            if not ctx:
                chk.add(
                    (*base, name, "retrieved_contexts"),
                    "contexts_empty",
                    f"the {name} member has no retrieved_contexts",
                    "record the exact contexts sent to generation; a missing context trace is never"
                    " a low score",
                    case_id=pid,
                )
            contexts[name] = _check_contexts(
                chk, ctx, (*base, name, "retrieved_contexts"), name, pid
            )
        for shared in ("user_input", "reference", "generator"):
            if member.get(shared) is not None and shared in raw and member[shared] != raw[shared]:
                chk.add(
                    (*base, name, shared),
                    "member_mismatch",
                    f"the {name} member's {shared} differs from the pair's",
                    f"both members must share the pair's {shared}; a pair holds the question,"
                    " reference and generator constant",
                    case_id=pid,
                )
        if member.get("generation_trace") is not None:
            _check_trace(
                chk,
                member["generation_trace"],
                contexts[name],
                member.get("response"),
                generator,
                (*base, name, "generation_trace"),
                name,
                pid,
            )
        elif origin in ("production", "regenerated"):
            chk.add(
                (*base, name),
                "trace_missing",
                f"the {name} member's response is {origin} but has no generation trace",
                "record generation_trace: {run_id, context_ids, response_sha256} from the"
                " generation run; without it the response cannot be shown to come from these"
                " contexts",
                case_id=pid,
            )
        if member.get("abstained") is True and role in CONTROL_ROLES:
            chk.add(
                (*base, name, "abstained"),
                "control_abstained",
                f"the {name} member of a {role} pair abstains",
                "a control's responses must make claims; an abstention is an outcome of candidate"
                " pairs only",
                case_id=pid,
            )
    if (
        role in SEPARATING_ROLES
        and isinstance(clean, dict)
        and isinstance(noisy, dict)
        and isinstance(clean.get("response"), str)
        and clean.get("response") == noisy.get("response")
    ):
        chk.add(
            (*base, "noisy", "response"),
            "control_response_unchanged",
            "the negative control's response equals the positive control's",
            "a negative control's response must adopt the distractor's false claim",
            case_id=pid,
        )
    _check_sign_off(chk, raw, base, pid, contexts)

    distractor = noisy.get("distractor") if isinstance(noisy, dict) else None
    if role == "adversarial" and isinstance(distractor, dict) and distractor.get("attack") is None:
        chk.add(
            (*base, "noisy", "distractor"),
            "attack_missing",
            "an adversarial control's distractor does not say what it carries",
            "add attack: instruction | fake_policy | stale_date to the distractor",
            case_id=pid,
        )
    c_ctx, n_ctx = contexts.get("clean"), contexts.get("noisy")
    if not isinstance(distractor, dict) or c_ctx is None or n_ctx is None:
        return contexts
    index, change = distractor.get("index"), distractor.get("change")
    if "label" in distractor and not _text_ok(distractor.get("label")):
        chk.add(
            (*base, "noisy", "distractor", "label"),
            "field_empty",
            "the distractor has no label",
            "label the distractor (e.g. stale-policy, other-product, injection)",
            case_id=pid,
        )
    if not isinstance(index, int) or isinstance(index, bool) or change not in ("add", "replace"):
        return contexts
    where = (*base, "noisy", "distractor", "index")
    if not 0 <= index < len(n_ctx):
        chk.add(
            where,
            "distractor_index_out_of_range",
            f"distractor index {index} is outside the noisy member's {len(n_ctx)} contexts",
            "give the 0-based position of the distractor in noisy.retrieved_contexts (0 to"
            f" {max(0, len(n_ctx) - 1)})",
            case_id=pid,
        )
        return contexts
    c_ids, n_ids = [c.identity() for c in c_ctx], [c.identity() for c in n_ctx]
    fix = (
        "noisy.retrieved_contexts must be clean.retrieved_contexts with exactly one distractor"
        f" {'inserted' if change == 'add' else 'substituted'} at index {index} (same text and"
        " document evidence; only ranks may shift)"
    )
    if change == "add":
        if len(n_ids) != len(c_ids) + 1 or n_ids[:index] + n_ids[index + 1 :] != c_ids:
            chk.add(
                (*base, "noisy", "retrieved_contexts"),
                "pair_membership_broken",
                f"with change: add at {index}, the noisy contexts ({len(n_ids)}) are not the clean"
                f" contexts ({len(c_ids)}) plus one distractor",
                fix,
                case_id=pid,
            )
        elif n_ctx[index].text in [c.text for c in c_ctx]:
            chk.add(
                where,
                "distractor_duplicate",
                "the added distractor repeats a clean context",
                "a distractor must be a new passage",
                case_id=pid,
            )
    else:
        same_len = len(n_ids) == len(c_ids)
        others_equal = same_len and all(
            a == b for j, (a, b) in enumerate(zip(n_ids, c_ids, strict=True)) if j != index
        )
        if not same_len or not others_equal:
            chk.add(
                (*base, "noisy", "retrieved_contexts"),
                "pair_membership_broken",
                f"with change: replace at {index}, the noisy contexts must equal the clean ones"
                " everywhere else",
                fix,
                case_id=pid,
            )
        elif n_ctx[index].text == c_ctx[index].text:
            chk.add(
                where,
                "pair_membership_broken",
                f"with change: replace at {index}, the noisy context equals the clean one: nothing"
                " was replaced",
                fix,
                case_id=pid,
            )
    return contexts


def _normalize(text: str) -> str:
    from ..gold._dataset import normalize_text

    return normalize_text(text)


def _check_leakage(  # noqa: C901
    chk: _Checker,
    raw_pairs: list[Any],
    contexts_of: dict[int, dict[str, list[RetrievedContext] | None]],
) -> None:
    """As for gold: a source family never straddles partitions, nor does a question or an evidence
    passage."""
    families: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    questions: dict[str, list[tuple[int, str, str | None, str | None]]] = defaultdict(list)
    passages: dict[str, list[tuple[int, str, str | None, str | None]]] = defaultdict(list)
    for i, raw in enumerate(raw_pairs):
        if not isinstance(raw, dict) or raw.get("partition") not in PARTITIONS:
            continue
        part, fam, pid = (
            raw["partition"],
            raw.get("source_family"),
            raw.get("pair_id") if isinstance(raw.get("pair_id"), str) else None,
        )
        if isinstance(fam, str):
            families[fam][part].append(i)
        if isinstance(raw.get("user_input"), str):
            questions[_normalize(raw["user_input"])].append(
                (i, part, fam if isinstance(fam, str) else None, pid)
            )
        distractor = _mapping_at(_mapping_at(raw, "noisy"), "distractor")
        for member in MEMBERS:
            for j, ctx in enumerate(contexts_of.get(i, {}).get(member) or []):
                if member == "noisy" and j == distractor.get("index"):
                    continue  # the distractor is the controlled noise, not evidence
                passages[_normalize(ctx.text)].append(
                    (i, part, fam if isinstance(fam, str) else None, pid)
                )
    for fam, parts in families.items():
        if len(parts) > 1:
            where = ", ".join(
                f"{p} (pairs {', '.join(map(str, ns[:5]))})" for p, ns in sorted(parts.items())
            )
            first = min(n for ns in parts.values() for n in ns)
            chk.add(
                ("pairs", first, "source_family"),
                "family_leakage",
                f"source family {fam!r} appears in {len(parts)} partitions: {where}",
                "move every pair of the family into one partition; a family must not be tuned on in"
                " one partition and certified on in another",
            )
    for code, what, groups in (
        ("cross_partition_duplicate", "question", questions),
        ("cross_partition_passage", "evidence passage", passages),
    ):
        for members in groups.values():
            seen: dict[str, tuple[int, str | None, str | None]] = {}
            for i, part, fam, pid in members:
                if part in seen:
                    continue
                other = next(
                    ((n, f, p) for pt, (n, f, p) in seen.items() if pt != part and f != fam), None
                )
                seen[part] = (i, fam, pid)
                if other is not None:
                    chk.add(
                        ("pairs", i),
                        code,
                        f"the same {what} (after normalizing Unicode, case and whitespace) as pair"
                        f" {other[2]!r} in another partition and source family",
                        "put both pairs in one source family and partition, or drop one:"
                        " near-duplicates across partitions make a tuned prompt look general",
                        case_id=pid,
                    )


def check_pairs(  # noqa: C901, PLR0915
    raw: Any,
    *,
    location: str = "pairs",
    lines: dict[tuple[Any, ...], int] | None = None,
    sha256: str | None = None,
) -> tuple[NoiseSuite | None, list[Problem]]:
    """Validate a parsed suite mapping; return the suite (None on errors) and every problem.

    Warnings (e.g. a slice without candidate pairs, a missing control role) do not prevent the
    suite.
    """
    chk = _Checker(location, lines or {})
    if not isinstance(raw, dict):
        chk.add(
            (),
            "suite_shape",
            "the pair suite must be a YAML mapping",
            f"write the header fields and a pairs: list ({_FORMAT})",
        )
        return None, chk.problems
    version = raw.get("schema_version")
    if isinstance(version, int) and version < PAIRS_SCHEMA_VERSION:
        chk.add(
            ("schema_version",),
            "schema_version_old",
            f"schema_version {version} suites have no noise policy, evidence manifest or"
            " partitions",
            f"set schema_version: {PAIRS_SCHEMA_VERSION} and add policy: {{max_cases,"
            " max_cost_usd}, manifest:, and partition/source_family/provenance.origin per pair"
            f" (and sign_off on controls) ({_FORMAT})",
        )
        return None, chk.problems
    header: _Header | None = None
    try:
        header = _Header.model_validate(raw)
    except SchemaTooNew as exc:
        chk.add(
            ("schema_version",), exc.problems[0].code, exc.problems[0].message, exc.problems[0].fix
        )
    except ValidationError as exc:
        _translate(chk, exc, (), None)
    if header is not None and not header.approved_reference_versions:
        chk.add(
            ("approved_reference_versions",),
            "field_empty",
            "no approved reference versions",
            "list the reviewed reference versions pairs may cite",
        )

    policy: NoisePolicy | None = None
    raw_policy = raw.get("policy")
    if raw_policy is None:
        chk.add(
            (),
            "policy_missing",
            "the suite has no noise policy",
            "add policy: {max_cases, max_cost_usd, ...}: budget and case limits live in reviewed"
            " policy; without them nothing runs",
        )
    elif not isinstance(raw_policy, dict):
        chk.add(
            ("policy",),
            "field_invalid",
            "policy must be a mapping",
            "write policy: {max_cases: N, max_cost_usd: X}",
        )
    else:
        for field in ("max_cases", "max_cost_usd"):
            if raw_policy.get(field) is None:
                chk.add(
                    ("policy",),
                    "policy_limit_missing",
                    f"the noise policy has no {field}",
                    f"add policy.{field}: a missing limit fails closed, it never falls back to a"
                    " default",
                )
        try:
            policy = NoisePolicy.model_validate(raw_policy)
        except ValidationError as exc:
            _translate_policy(chk, exc)
    raw_manifest = raw.get("manifest")
    if raw_manifest is None:
        chk.add(
            (),
            "manifest_missing",
            "the suite has no evidence manifest",
            "add manifest: {window, source_owners, licences, redaction, known_gaps, reviewers,"
            " sampling, review_schedule}",
        )
    elif isinstance(raw_manifest, dict):
        try:
            EvidenceManifest.model_validate(raw_manifest)
        except ValidationError as exc:
            _translate(chk, exc, ("manifest",), None)
    else:
        chk.add(
            ("manifest",),
            "field_invalid",
            "manifest must be a mapping",
            "write manifest: {window: ..., ...}",
        )

    raw_slices = _mapping_at(raw, "slices")
    slices: dict[str, SliceLimit] = {}
    if isinstance(raw.get("slices"), dict) and not raw_slices:
        chk.add(
            ("slices",),
            "field_empty",
            "no slices",
            "declare every slice with its max_score and direction: lower_is_better",
        )
    for name, limit in raw_slices.items():
        try:
            parsed = SliceLimit.model_validate(limit)
        except ValidationError as exc:
            _translate(chk, exc, ("slices", name), None)
            continue
        bad = False
        for field in ("max_score", "max_delta", "max_abstention_rate"):
            value = getattr(parsed, field)
            if value is not None and not 0.0 <= value <= 1.0:
                chk.add(
                    ("slices", name, field),
                    "threshold_out_of_range",
                    f"{field} {value} is outside [0, 1]",
                    "give a limit between 0 and 1 (lower is better)",
                )
                bad = True
        if not bad:
            slices[str(name)] = parsed

    raw_pairs = raw.get("pairs")
    pairs: list[NoisePair] = []
    if raw_pairs is not None and not isinstance(raw_pairs, list):
        chk.add(("pairs",), "field_invalid", "pairs must be a list", "write pairs: as a YAML list")
        raw_pairs = []
    elif isinstance(raw_pairs, list) and not raw_pairs:
        chk.add(
            ("pairs",), "field_empty", "the suite has no pairs", "add control and candidate pairs"
        )
    seen: dict[str, int] = {}
    contexts_of: dict[int, dict[str, list[RetrievedContext] | None]] = {}
    for i, item in enumerate(raw_pairs or []):
        if not isinstance(item, dict):
            chk.add(
                ("pairs", i),
                "pair_shape",
                f"pair {i} is not a mapping",
                f"write each pair as key: value fields ({_FORMAT})",
            )
            continue
        pid = item.get("pair_id") if isinstance(item.get("pair_id"), str) else None
        if pid is not None:
            if pid in seen:
                chk.add(
                    ("pairs", i, "pair_id"),
                    "pair_id_duplicate",
                    f"pair_id {pid!r} is already used by pairs[{seen[pid]}]",
                    "give every pair a unique id",
                    case_id=pid,
                )
            else:
                seen[pid] = i
        data = dict(item)
        if data.get("role") in RELATIONS and "expected_relation" not in data:
            data["expected_relation"] = RELATIONS[data["role"]]
        before = len(chk.problems)
        try:
            pair = NoisePair.model_validate(data)
        except ValidationError as exc:
            _translate(chk, exc, ("pairs", i), pid)
            pair = None
        contexts_of[i] = _check_pair(chk, item, i, header, raw_slices)
        if pair is not None and len(errors_only(chk.problems[before:])) == 0:
            pairs.append(pair)

    dicts = [p for p in raw_pairs or [] if isinstance(p, dict)]
    _check_lineage(chk, raw_pairs or [])
    _check_leakage(chk, raw_pairs or [], contexts_of)
    active = [p for p in dicts if p.get("retired") is None]
    modes_with_controls = {p.get("mode") for p in active if p.get("role") == "control"}
    candidate_modes = {
        mode
        for p in active
        if p.get("role") == "candidate" and isinstance(mode := p.get("mode"), str) and mode in MODES
    }
    for mode in sorted(candidate_modes - modes_with_controls):
        chk.add(
            ("pairs",),
            "controls_missing",
            f"candidate pairs use mode {mode!r} but no control pair does",
            f"add at least one control pair in mode {mode!r}: controls are run first and must"
            " separate before candidates are interpreted",
        )
    if policy is not None:
        for role in policy.required_control_roles:
            if not any(p.get("role") == role for p in active):
                chk.add(
                    ("pairs",),
                    "control_role_missing",
                    f"the suite has no active {role} control, which the policy requires",
                    f"add a {role} control pair; until then every report is incomplete",
                    severity="warning",
                )
    sentinels = header.sentinels if header is not None else []
    by_id = {p.get("pair_id"): p for p in dicts}
    for j, sid in enumerate(sentinels):
        if sid not in by_id:
            chk.add(
                ("sentinels", j),
                "sentinel_unknown",
                f"sentinel {sid!r} is not a pair of the suite",
                "list pair ids of the suite",
            )
        elif by_id[sid].get("retired") is not None:
            chk.add(
                ("sentinels", j),
                "sentinel_retired",
                f"sentinel {sid!r} is retired",
                "replace it with the pair that supersedes it (a new suite version)",
            )
    if sentinels and policy is not None and policy.max_spread is None:
        chk.add(
            ("policy",),
            "policy_spread_missing",
            "the suite declares sentinels but the policy has no max_spread",
            "add policy.max_spread: the largest repeat spread before a pair routes to review",
        )
    used = Counter(p.get("slice") for p in active if p.get("role") == "candidate")
    for name in raw_slices:
        if not used.get(name):
            chk.add(
                ("slices", name),
                "slice_without_pairs",
                f"slice {name!r} has no candidate pair",
                "add candidate pairs for it or remove it",
                severity="warning",
            )

    if errors_only(chk.problems) or header is None or policy is None:
        return None, chk.problems
    suite = NoiseSuite(
        schema_version=header.schema_version,
        name=header.name,
        version=str(header.version),
        description=header.description,
        owner=header.owner,
        rationale=header.rationale,
        approved_reference_versions=header.approved_reference_versions,
        policy=policy,
        manifest=EvidenceManifest.model_validate(raw_manifest),
        sentinels=list(sentinels),
        slices=slices,
        pairs=pairs,
        source=location if lines else None,
        sha256=sha256 or sha256_json(raw),
        supersedes=None if header.supersedes is None else str(header.supersedes),
    )
    return suite, chk.problems


def _translate_policy(chk: _Checker, exc: ValidationError) -> None:
    _translate(chk, exc, ("policy",), None, skip=frozenset({("max_cases",), ("max_cost_usd",)}))


def _check_lineage(chk: _Checker, raw_pairs: list[Any]) -> None:
    """Retired pairs give a reason; a fixed case supersedes a retired pair and differs from it."""
    index = {
        p.get("pair_id"): (i, p)
        for i, p in enumerate(raw_pairs)
        if isinstance(p, dict) and isinstance(p.get("pair_id"), str)
    }
    claimed: dict[str, str] = {}
    for i, raw in enumerate(raw_pairs):
        if not isinstance(raw, dict):
            continue
        pid = raw.get("pair_id") if isinstance(raw.get("pair_id"), str) else None
        sup = raw.get("supersedes")
        if sup is None:
            continue
        if sup == pid:
            chk.add(
                ("pairs", i, "supersedes"),
                "supersedes_cycle",
                "the pair supersedes itself",
                "point supersedes at the retired pair this one fixes",
                case_id=pid,
            )
        elif sup not in index:
            chk.add(
                ("pairs", i, "supersedes"),
                "supersedes_unknown",
                f"supersedes {sup!r}, which is not in the suite",
                "keep the retired pair in the file (retired with a reason, never deleted) and point"
                " supersedes at it",
                case_id=pid,
            )
        elif index[sup][1].get("retired") is None:
            chk.add(
                ("pairs", i, "supersedes"),
                "supersedes_not_retired",
                f"supersedes {sup!r}, which is still active",
                f"retire {sup!r} with a reason (retired: {{reason, by, on}}); the fixed case"
                " replaces it",
                case_id=pid,
            )
        elif sup in claimed:
            chk.add(
                ("pairs", i, "supersedes"),
                "supersedes_fork",
                f"{sup!r} is already superseded by {claimed[sup]!r}",
                "keep one chain: supersede the newest version",
                case_id=pid,
            )
        else:
            old = {
                k: v
                for k, v in index[sup][1].items()
                if k not in ("pair_id", "retired", "supersedes")
            }
            new = {k: v for k, v in raw.items() if k not in ("pair_id", "retired", "supersedes")}
            if old == new:
                chk.add(
                    ("pairs", i),
                    "supersedes_unchanged",
                    f"the pair repeats {sup!r} unchanged",
                    "a new case version fixes something: change the reference, responses or"
                    " contexts",
                    case_id=pid,
                )
        if isinstance(sup, str) and pid is not None:
            claimed.setdefault(sup, pid)


def validate_pairs(path: str | Path) -> tuple[NoiseSuite | None, list[Problem]]:
    """Read and check a pair-suite file; return the suite (None on errors) and every problem."""
    path = Path(path)
    loc = str(path)
    if not path.is_file():
        return None, [
            Problem(
                location=loc,
                code="pairs_missing",
                message="the pair suite does not exist",
                fix="point at a pairs YAML file, e.g. data/noise/<name>@<version>.yaml",
            )
        ]
    try:
        text = read_bounded(path).decode("utf-8")
    except WorkbenchError as exc:  # not a file, unreadable or too large
        return None, list(exc.problems)
    except UnicodeDecodeError as exc:
        return None, [
            Problem(
                location=loc,
                code="pairs_yaml",
                message=f"not valid UTF-8 (byte {exc.start})",
                fix="save the pair suite as UTF-8",
            )
        ]
    try:
        raw = yaml_loads(text)
    except yaml.YAMLError as exc:
        return None, [yaml_problem(exc, loc, code="pairs_yaml")]
    lines = yaml_lines(text, root=True) or {(): 1}  # a field's line is its key's line
    suite, problems = check_pairs(raw, location=loc, lines=lines, sha256=sha256_file(path))
    if suite is not None and not errors_only(problems):
        from ._release import suite_lineage_problems

        where = {
            p.pair_id: f"{loc}:{lines.get(('pairs', i), 0)}" for i, p in enumerate(suite.pairs)
        }
        problems += suite_lineage_problems(suite, where)
    if suite is not None and path.stem != suite.label:
        problems.append(
            Problem(
                location=loc,
                code="pairs_filename",
                message=f"file name {path.name!r} does not match name@version {suite.label!r}",
                fix=f"rename the file to {suite.label}.yaml so versions cannot be confused",
                severity="warning",
            )
        )
    return suite, problems


def load_pairs(path: str | Path) -> NoiseSuite:
    """Read a pair suite; raise :class:`~workbench.errors.WorkbenchError` listing EVERY problem.

    Checked: required fields; empty text and empty contexts; structured contexts and their
    rank order; unknown or missing mode (never defaulted), role, partition and distractor
    change; broken pair membership; unapproved reference versions; duplicate pair ids;
    unknown slices; thresholds without direction ``lower_is_better`` or outside [0, 1]; a
    candidate mode without a control pair; the noise policy's budget and case limits; the
    evidence manifest; generation traces against their members; reviewer sign-offs on every
    control; adversarial and reference-defect construction; partition leakage; retirement
    and supersession; sentinels.
    """
    suite, problems = validate_pairs(path)
    errors = errors_only(problems)
    if suite is None or errors:
        raise WorkbenchError(f"{path}: invalid pair suite: {len(errors)} problem(s)", errors)
    return suite


def parse_pairs(raw: dict[str, Any], *, location: str = "pairs") -> NoiseSuite:
    """Check an in-memory suite mapping (same rules as :func:`load_pairs`) and return the suite."""
    suite, problems = check_pairs(raw, location=location)
    errors = errors_only(problems)
    if suite is None or errors:
        raise WorkbenchError(f"{location}: invalid pair suite: {len(errors)} problem(s)", errors)
    return suite
