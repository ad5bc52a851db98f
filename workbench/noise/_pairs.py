"""Noise-sensitivity pair suites: paired clean/noisy cases, their policy limits and validation.

A suite is one YAML file (``schema_version`` 1)::

    schema_version: 1
    name: support-noise
    version: "1"
    description: what the suite protects
    owner: who can explain a failing claim
    rationale: why these limits, written before results are seen
    approved_reference_versions: [handbook-v4.2]
    slices:
      refunds:
        max_score: 0.0              # the gate: the highest noisy-member score allowed
        direction: lower_is_better  # mandatory beside every threshold
        max_delta: 0.0              # optional: the highest noisy - clean increase allowed
        risk: critical              # optional
        rationale: optional, per slice
    pairs:
      - pair_id: ref-late-request
        slice: refunds
        mode: irrelevant            # mandatory: relevant | irrelevant (never defaulted)
        role: candidate             # control | candidate
        reference_version: handbook-v4.2
        user_input: ...
        reference: ...
        generator: {model: ..., prompt_sha256: ..., retriever: ...}
        expected_relation: noisy_not_worse   # default by role (see below)
        clean: {response: ..., retrieved_contexts: [...]}
        noisy:
          response: ...
          retrieved_contexts: [...]
          distractor: {index: 1, label: stale-faq, change: add, false_claim: optional}
        provenance: {origin: constructed, ...}   # optional: where the pair came from

**Pairs.** Both members share the question, the reference and the generator configuration
(they are stored once, on the pair; a member may repeat them from its trace, and they must
then be equal). The noisy member's contexts are the clean member's contexts with exactly one
labelled distractor added (``change: add``, inserted at ``index``) or substituted
(``change: replace``, at ``index``).

**Roles and expected relations.** A *control* pair proves that the evaluator can see noise
adoption: its clean member is the positive control (grounded answer) and its noisy member
the negative control (the response adopts the distractor's false claim), so
``expected_relation`` is ``noisy_worse_than_clean``: the noisy member must score strictly
higher (NoiseSensitivity: lower is better). A *candidate* pair is release evidence about the
system under test; its ``expected_relation`` is ``noisy_not_worse``: the distractor should
not raise the score. Candidate deltas are always reported; they block only through the
slice limits (``max_score`` on the noisy member, and ``max_delta`` when set).

Every mode a candidate pair uses needs at least one control pair in the same mode, because
controls are run first and a mode without controls cannot be interpreted.

:func:`load_pairs` reports every problem at once (``file:line`` location, code and fix).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._io import read_bounded, sha256_file, sha256_json, yaml_loads
from ..errors import Problem, WorkbenchError, errors_only

PAIRS_SCHEMA_VERSION = 1
"""Version of the pair-suite file format."""

MODES: tuple[str, ...] = ("relevant", "irrelevant")
"""NoiseSensitivity modes. A pair must name one; there is no default."""
ROLES: tuple[str, ...] = ("control", "candidate")
"""Pair roles: controls are run (and must separate) before any candidate is scored."""
RELATIONS: dict[str, str] = {"control": "noisy_worse_than_clean", "candidate": "noisy_not_worse"}
"""The expected relation of each role (the default when a pair omits it)."""
DIRECTION = "lower_is_better"
"""NoiseSensitivity's direction: 0 is best. Stored beside every threshold and score."""

Mode = Literal["relevant", "irrelevant"]
Role = Literal["control", "candidate"]
Relation = Literal["noisy_worse_than_clean", "noisy_not_worse"]
Direction = Literal["lower_is_better"]
Member = Literal["clean", "noisy"]
MEMBERS: tuple[Member, ...] = ("clean", "noisy")

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
_FORMAT = "see the pair-suite format in workbench/noise/_pairs.py"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class NoiseInput(_Model):
    """Everything a ``ragas-noise`` judge sees for one pair member (and nothing else)."""

    user_input: str
    """The user's question (shared by both members)."""
    response: str
    """The response generated from exactly ``retrieved_contexts``."""
    reference: str
    """The approved reference answer (shared by both members)."""
    retrieved_contexts: list[str]
    """The contexts the generator saw, in rank order."""
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
    """``add``: inserted at ``index``; ``replace``: substituted for the clean context at ``index``."""
    false_claim: str | None = None
    """The incorrect claim the distractor carries, when it carries one."""


class CleanMember(_Model):
    """The clean member: enough relevant evidence and no deliberate distractor."""

    response: str
    """The response the system generated from exactly these contexts."""
    retrieved_contexts: list[str]
    """The contexts sent to generation, in rank order."""
    user_input: str | None = None
    """Optional copy from the member's trace; must equal the pair's ``user_input``."""
    reference: str | None = None
    """Optional copy from the member's trace; must equal the pair's ``reference``."""
    generator: dict[str, Any] | None = None
    """Optional copy from the member's trace; must equal the pair's ``generator``."""


class NoisyMember(CleanMember):
    """The noisy member: the clean contexts with exactly one labelled distractor added or replaced."""

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
    risk: str | None = None
    """Business risk of the slice (e.g. ``critical``)."""
    rationale: str | None = None
    """Why this limit, written before results are seen."""


class NoisePair(_Model):
    """One paired case: the same question, reference and generator, with and without one distractor."""

    pair_id: str
    """Stable id (letters, digits, ``_ . -``)."""
    slice: str
    """A slice declared in the suite header."""
    mode: Mode
    """NoiseSensitivity mode the pair is built for and scored in. Mandatory."""
    role: Role
    """``control`` (run first; must separate) or ``candidate`` (release evidence)."""
    reference_version: str
    """Version of the reference; must be one of the suite's ``approved_reference_versions``."""
    user_input: str
    """The question, shared by both members."""
    reference: str
    """The approved reference answer, shared by both members."""
    generator: dict[str, Any]
    """Generator configuration shared by both members (model, prompt hash, retriever ...)."""
    expected_relation: Relation
    """``noisy_worse_than_clean`` for controls, ``noisy_not_worse`` for candidates."""
    clean: CleanMember
    """The clean member (for controls: the positive control)."""
    noisy: NoisyMember
    """The noisy member (for controls: the negative control, adopting the distractor's claim)."""
    provenance: dict[str, Any] = Field(default_factory=dict)
    """Where the pair came from: origin (production, regenerated, constructed), source ids, license."""
    notes: str | None = None
    """Free-text notes for reviewers."""

    def member(self, name: Member) -> CleanMember:
        """The ``clean`` or ``noisy`` member."""
        return self.clean if name == "clean" else self.noisy

    def judge_input(self, name: Member) -> NoiseInput:
        """What the judge sees for one member: question, response, reference, contexts and mode."""
        m = self.member(name)
        return NoiseInput(user_input=self.user_input, response=m.response, reference=self.reference, retrieved_contexts=list(m.retrieved_contexts), mode=self.mode)

    def item_id(self, name: Member) -> str:
        """The case id of one member in run records: ``<pair_id>:<member>``."""
        return f"{self.pair_id}:{name}"


class NoiseSuite(_Model):
    """A validated pair suite. Build it with :func:`load_pairs` or :func:`parse_pairs`, which check everything."""

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
    slices: dict[str, SliceLimit]
    """The gate: per slice, the maximum noisy score (lower is better)."""
    pairs: list[NoisePair]
    """Every pair, controls and candidates."""
    source: str | None = None
    """The file the suite was read from."""
    sha256: str
    """sha256 of the file (or of the canonical JSON of the parsed mapping)."""

    @property
    def label(self) -> str:
        """``name@version``."""
        return f"{self.name}@{self.version}"

    @property
    def direction(self) -> str:
        """Always ``lower_is_better``."""
        return DIRECTION

    def controls(self) -> list[NoisePair]:
        """Control pairs, in file order."""
        return [p for p in self.pairs if p.role == "control"]

    def candidates(self) -> list[NoisePair]:
        """Candidate pairs, in file order."""
        return [p for p in self.pairs if p.role == "candidate"]

    def pairs_frame(self) -> Any:
        """One row per pair: id, role, slice, mode, distractor label and change, expected relation."""
        import pandas as pd

        rows = [
            {"pair_id": p.pair_id, "role": p.role, "slice": p.slice, "mode": p.mode, "distractor": p.noisy.distractor.label, "change": p.noisy.distractor.change, "expected_relation": p.expected_relation, "contexts_clean": len(p.clean.retrieved_contexts), "contexts_noisy": len(p.noisy.retrieved_contexts)}
            for p in self.pairs
        ]
        return pd.DataFrame(rows, columns=["pair_id", "role", "slice", "mode", "distractor", "change", "expected_relation", "contexts_clean", "contexts_noisy"])

    def limits_frame(self) -> Any:
        """The gate per slice: max_score, max_delta and their direction (lower is better)."""
        import pandas as pd

        rows = [{"slice": name, "risk": lim.risk, "max_score": lim.max_score, "max_delta": lim.max_delta, "direction": lim.direction, "candidate_pairs": sum(1 for p in self.candidates() if p.slice == name), "rationale": lim.rationale} for name, lim in self.slices.items()]
        return pd.DataFrame(rows, columns=["slice", "risk", "max_score", "max_delta", "direction", "candidate_pairs", "rationale"])

    def pair(self, pair_id: str) -> NoisePair:
        """The pair with this id."""
        for p in self.pairs:
            if p.pair_id == pair_id:
                return p
        raise KeyError(pair_id)


class _Header(_Model):
    schema_version: int = PAIRS_SCHEMA_VERSION
    name: str
    version: str | int
    description: str = ""
    owner: str | None = None
    rationale: str | None = None
    approved_reference_versions: list[str]
    slices: dict[str, Any]
    pairs: Any


# -- YAML line numbers ------------------------------------------------------------------------


def _lines(node: Any, path: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], int]:
    """Map every path in a composed YAML node tree to its 1-based line."""
    out: dict[tuple[Any, ...], int] = {path: node.start_mark.line + 1}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            k = key.value
            out.update(_lines(value, (*path, k)))
            out[(*path, k)] = key.start_mark.line + 1  # a field's line is its key's line
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            out.update(_lines(item, (*path, i)))
    return out


class _Checker:
    def __init__(self, location: str, lines: dict[tuple[Any, ...], int]) -> None:
        self.location = location
        self.lines = lines
        self.problems: list[Problem] = []

    def where(self, path: tuple[Any, ...]) -> str:
        line = None
        for n in range(len(path), -1, -1):
            line = self.lines.get(tuple(path[:n]))
            if line is not None:
                break
        dotted = _dotted(path)
        return f"{self.location}:{line}" + (f" ({dotted})" if dotted else "") if line else (f"{self.location} ({dotted})" if dotted else self.location)

    def add(self, path: tuple[Any, ...], code: str, message: str, fix: str, *, case_id: str | None = None, severity: str = "error") -> None:
        self.problems.append(Problem(location=self.where(path), code=code, message=message, fix=fix, case_id=case_id, severity=severity))  # type: ignore[arg-type]


def _dotted(path: Iterable[Any]) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


# -- validation -------------------------------------------------------------------------------


def _translate(chk: _Checker, exc: ValidationError, base: tuple[Any, ...], case_id: str | None) -> None:
    for e in exc.errors(include_url=False):
        loc = tuple(e["loc"])
        path = (*base, *loc)
        field = str(loc[-1]) if loc else ""
        kind = e["type"]
        if field == "mode" and len(loc) == 1:
            if kind == "missing":
                chk.add(path, "mode_missing", "the pair has no mode; NoiseSensitivity's mode is never defaulted", "add mode: relevant or mode: irrelevant (the mode the pair was built for)", case_id=case_id)
            else:
                chk.add(path, "mode_unknown", f"unknown mode {e.get('input')!r}", "use mode: relevant or mode: irrelevant", case_id=case_id)
        elif field == "role" and len(loc) == 1 and kind != "missing":
            chk.add(path, "role_unknown", f"unknown role {e.get('input')!r}", "use role: control or role: candidate", case_id=case_id)
        elif field == "change" and kind != "missing":
            chk.add(path, "change_unknown", f"unknown distractor change {e.get('input')!r}", "use change: add (distractor inserted) or change: replace (distractor substituted)", case_id=case_id)
        elif field == "direction" and kind == "missing":
            chk.add(path, "direction_missing", "a threshold without its direction", f"add direction: {DIRECTION} beside the threshold (NoiseSensitivity: lower is better)", case_id=case_id)
        elif field == "direction":
            chk.add(path, "direction_invalid", f"direction {e.get('input')!r}: NoiseSensitivity is lower-is-better", f"write direction: {DIRECTION}", case_id=case_id)
        elif field == "expected_relation" and kind != "missing":
            chk.add(path, "relation_unknown", f"unknown expected_relation {e.get('input')!r}", "use noisy_worse_than_clean (controls) or noisy_not_worse (candidates)", case_id=case_id)
        elif kind == "missing":
            chk.add(path, "field_missing", f"required field {_dotted(loc)!r} is missing", f"add {field}: ({_FORMAT})", case_id=case_id)
        elif kind == "extra_forbidden":
            chk.add(path, "field_unknown", f"unknown field {_dotted(loc)!r}", f"remove it or correct its spelling ({_FORMAT})", case_id=case_id)
        else:
            chk.add(path, "field_invalid", f"{_dotted(loc) or 'value'}: {e['msg']}", f"correct this field ({_FORMAT})", case_id=case_id)


def _text_ok(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _check_pair(chk: _Checker, raw: dict[str, Any], i: int, header: _Header | None, slices: dict[str, Any]) -> None:
    base: tuple[Any, ...] = ("pairs", i)
    pid = raw.get("pair_id") if isinstance(raw.get("pair_id"), str) else None
    if pid is not None and not _ID.match(pid):
        chk.add((*base, "pair_id"), "pair_id_invalid", f"pair_id {pid!r} has characters other than letters, digits, '_', '.', '-'", "use a simple stable id, e.g. ref-late-request", case_id=pid)
    for field in ("user_input", "reference"):
        if field in raw and isinstance(raw[field], str) and not raw[field].strip():
            chk.add((*base, field), "field_empty", f"{field} is empty", f"write the {field.replace('_', ' ')} both members share", case_id=pid)
    role = raw.get("role")
    if header is not None and isinstance(raw.get("reference_version"), str) and raw["reference_version"] not in header.approved_reference_versions:
        chk.add((*base, "reference_version"), "reference_unapproved", f"reference_version {raw['reference_version']!r} is not approved", "use an approved reference version (" + ", ".join(header.approved_reference_versions) + ") or have the new version reviewed and add it to approved_reference_versions", case_id=pid)
    if isinstance(raw.get("slice"), str) and raw["slice"] not in slices:
        chk.add((*base, "slice"), "slice_unknown", f"slice {raw['slice']!r} is not declared in the suite's slices", "declare the slice with its max_score and direction, or correct the name", case_id=pid)
    generator = raw.get("generator")
    if isinstance(generator, dict) and not generator.get("model"):
        chk.add((*base, "generator"), "generator_incomplete", "the generator configuration does not name its model", "record the generator model (and prompt hash, retriever) the responses came from", case_id=pid)
    relation = raw.get("expected_relation")
    if role in RELATIONS and isinstance(relation, str) and relation in RELATIONS.values() and relation != RELATIONS[role]:
        chk.add((*base, "expected_relation"), "relation_role_mismatch", f"a {role} pair expects {relation!r}", f"a {role} pair expects {RELATIONS[role]!r}; change the role or the relation", case_id=pid)

    clean, noisy = raw.get("clean"), raw.get("noisy")
    members = {"clean": clean, "noisy": noisy}
    contexts: dict[str, list[Any] | None] = {}
    for name, member in members.items():
        if not isinstance(member, dict):
            contexts[name] = None
            continue
        if isinstance(member.get("response"), str) and not member["response"].strip():
            chk.add((*base, name, "response"), "field_empty", f"the {name} member's response is empty", "record the response the system generated from these contexts", case_id=pid)
        ctx = member.get("retrieved_contexts")
        contexts[name] = ctx if isinstance(ctx, list) else None
        if isinstance(ctx, list):
            if not ctx:
                chk.add((*base, name, "retrieved_contexts"), "contexts_empty", f"the {name} member has no retrieved_contexts", "record the exact contexts sent to generation; a missing context trace is never a low score", case_id=pid)
            for j, text in enumerate(ctx):
                if isinstance(text, str) and not text.strip():
                    chk.add((*base, name, "retrieved_contexts", j), "context_empty", f"context {j} of the {name} member is empty", "remove it or record the passage text", case_id=pid)
        for shared in ("user_input", "reference", "generator"):
            if member.get(shared) is not None and shared in raw and member[shared] != raw[shared]:
                chk.add((*base, name, shared), "member_mismatch", f"the {name} member's {shared} differs from the pair's", f"both members must share the pair's {shared}; a pair holds the question, reference and generator constant", case_id=pid)
    if role == "control" and isinstance(clean, dict) and isinstance(noisy, dict) and isinstance(clean.get("response"), str) and clean.get("response") == noisy.get("response"):
        chk.add((*base, "noisy", "response"), "control_response_unchanged", "the negative control's response equals the positive control's", "a negative control's response must adopt the distractor's false claim", case_id=pid)

    distractor = noisy.get("distractor") if isinstance(noisy, dict) else None
    c_ctx, n_ctx = contexts.get("clean"), contexts.get("noisy")
    if not isinstance(distractor, dict) or c_ctx is None or n_ctx is None:
        return
    index, change = distractor.get("index"), distractor.get("change")
    if "label" in distractor and not _text_ok(distractor.get("label")):
        chk.add((*base, "noisy", "distractor", "label"), "field_empty", "the distractor has no label", "label the distractor (e.g. stale-policy, other-product, injection)", case_id=pid)
    if not isinstance(index, int) or isinstance(index, bool) or change not in ("add", "replace"):
        return
    where = (*base, "noisy", "distractor", "index")
    if not 0 <= index < len(n_ctx):
        chk.add(where, "distractor_index_out_of_range", f"distractor index {index} is outside the noisy member's {len(n_ctx)} contexts", f"give the 0-based position of the distractor in noisy.retrieved_contexts (0 to {max(0, len(n_ctx) - 1)})", case_id=pid)
        return
    fix = f"noisy.retrieved_contexts must be clean.retrieved_contexts with exactly one distractor {'inserted' if change == 'add' else 'substituted'} at index {index}"
    if change == "add":
        if len(n_ctx) != len(c_ctx) + 1 or n_ctx[:index] + n_ctx[index + 1 :] != c_ctx:
            chk.add((*base, "noisy", "retrieved_contexts"), "pair_membership_broken", f"with change: add at {index}, the noisy contexts ({len(n_ctx)}) are not the clean contexts ({len(c_ctx)}) plus one distractor", fix, case_id=pid)
        elif n_ctx[index] in c_ctx:
            chk.add(where, "distractor_duplicate", "the added distractor repeats a clean context", "a distractor must be a new passage", case_id=pid)
    else:
        same_len = len(n_ctx) == len(c_ctx)
        others_equal = same_len and all(a == b for j, (a, b) in enumerate(zip(n_ctx, c_ctx, strict=True)) if j != index)
        if not same_len or not others_equal:
            chk.add((*base, "noisy", "retrieved_contexts"), "pair_membership_broken", f"with change: replace at {index}, the noisy contexts must equal the clean ones everywhere else", fix, case_id=pid)
        elif n_ctx[index] == c_ctx[index]:
            chk.add(where, "pair_membership_broken", f"with change: replace at {index}, the noisy context equals the clean one: nothing was replaced", fix, case_id=pid)


def check_pairs(raw: Any, *, location: str = "pairs", lines: dict[tuple[Any, ...], int] | None = None, sha256: str | None = None) -> tuple[NoiseSuite | None, list[Problem]]:
    """Validate a parsed suite mapping; return the suite (None on errors) and every problem.

    Warnings (e.g. a slice without candidate pairs) do not prevent the suite.
    """
    chk = _Checker(location, lines or {})
    if not isinstance(raw, dict):
        chk.add((), "suite_shape", "the pair suite must be a YAML mapping", f"write the header fields and a pairs: list ({_FORMAT})")
        return None, chk.problems
    header: _Header | None = None
    try:
        header = _Header.model_validate(raw)
    except ValidationError as exc:
        _translate(chk, exc, (), None)
    if isinstance(raw.get("schema_version"), int) and raw["schema_version"] > PAIRS_SCHEMA_VERSION:
        chk.add(("schema_version",), "schema_version_newer", f"schema_version {raw['schema_version']} is newer than this workbench reads", "upgrade the workbench")
    if header is not None and not header.approved_reference_versions:
        chk.add(("approved_reference_versions",), "field_empty", "no approved reference versions", "list the reviewed reference versions pairs may cite")

    raw_slices = raw.get("slices") if isinstance(raw.get("slices"), dict) else {}
    slices: dict[str, SliceLimit] = {}
    if isinstance(raw.get("slices"), dict) and not raw_slices:
        chk.add(("slices",), "field_empty", "no slices", "declare every slice with its max_score and direction: lower_is_better")
    for name, limit in raw_slices.items():
        try:
            parsed = SliceLimit.model_validate(limit)
        except ValidationError as exc:
            _translate(chk, exc, ("slices", name), None)
            continue
        bad = False
        for field in ("max_score", "max_delta"):
            value = getattr(parsed, field)
            if value is not None and not 0.0 <= value <= 1.0:
                chk.add(("slices", name, field), "threshold_out_of_range", f"{field} {value} is outside NoiseSensitivity's range [0, 1]", "give a limit between 0 and 1 (lower is better)")
                bad = True
        if not bad:
            slices[str(name)] = parsed

    raw_pairs = raw.get("pairs")
    pairs: list[NoisePair] = []
    if raw_pairs is not None and not isinstance(raw_pairs, list):
        chk.add(("pairs",), "field_invalid", "pairs must be a list", "write pairs: as a YAML list")
        raw_pairs = []
    elif isinstance(raw_pairs, list) and not raw_pairs:
        chk.add(("pairs",), "field_empty", "the suite has no pairs", "add control and candidate pairs")
    seen: dict[str, int] = {}
    for i, item in enumerate(raw_pairs or []):
        if not isinstance(item, dict):
            chk.add(("pairs", i), "pair_shape", f"pair {i} is not a mapping", f"write each pair as key: value fields ({_FORMAT})")
            continue
        pid = item.get("pair_id") if isinstance(item.get("pair_id"), str) else None
        if pid is not None:
            if pid in seen:
                chk.add(("pairs", i, "pair_id"), "pair_id_duplicate", f"pair_id {pid!r} is already used by pairs[{seen[pid]}]", "give every pair a unique id", case_id=pid)
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
        _check_pair(chk, item, i, header, raw_slices)
        if pair is not None and len(errors_only(chk.problems[before:])) == 0:
            pairs.append(pair)

    modes_with_controls = {p.get("mode") for p in raw_pairs or [] if isinstance(p, dict) and p.get("role") == "control"}
    for mode in sorted({p.get("mode") for p in raw_pairs or [] if isinstance(p, dict) and p.get("role") == "candidate" and p.get("mode") in MODES} - modes_with_controls):
        chk.add(("pairs",), "controls_missing", f"candidate pairs use mode {mode!r} but no control pair does", f"add at least one control pair in mode {mode!r}: controls are run first and must separate before candidates are interpreted")
    used = Counter(p.get("slice") for p in raw_pairs or [] if isinstance(p, dict) and p.get("role") == "candidate")
    for name in raw_slices:
        if not used.get(name):
            chk.add(("slices", name), "slice_without_pairs", f"slice {name!r} has no candidate pair", "add candidate pairs for it or remove it", severity="warning")

    if errors_only(chk.problems) or header is None:
        return None, chk.problems
    suite = NoiseSuite(
        schema_version=header.schema_version,
        name=header.name,
        version=str(header.version),
        description=header.description,
        owner=header.owner,
        rationale=header.rationale,
        approved_reference_versions=header.approved_reference_versions,
        slices=slices,
        pairs=pairs,
        source=location if lines else None,
        sha256=sha256 or sha256_json(raw),
    )
    return suite, chk.problems


def validate_pairs(path: str | Path) -> tuple[NoiseSuite | None, list[Problem]]:
    """Read and check a pair-suite file; return the suite (None on errors) and every problem."""
    path = Path(path)
    loc = str(path)
    if not path.is_file():
        return None, [Problem(location=loc, code="pairs_missing", message="the pair suite does not exist", fix="point at a pairs YAML file, e.g. data/noise/<name>@<version>.yaml")]
    text = read_bounded(path).decode("utf-8")
    try:
        raw = yaml_loads(text)
        node = yaml.compose(text)
    except yaml.YAMLError as exc:
        return None, [Problem(location=loc, code="pairs_yaml", message=f"not valid YAML ({exc})", fix="correct the YAML syntax")]
    lines = _lines(node) if node is not None else {(): 1}
    suite, problems = check_pairs(raw, location=loc, lines=lines, sha256=sha256_file(path))
    if suite is not None and path.stem != suite.label:
        problems.append(Problem(location=loc, code="pairs_filename", message=f"file name {path.name!r} does not match name@version {suite.label!r}", fix=f"rename the file to {suite.label}.yaml so versions cannot be confused", severity="warning"))
    return suite, problems


def load_pairs(path: str | Path) -> NoiseSuite:
    """Read a pair suite; raise :class:`~workbench.errors.WorkbenchError` listing EVERY problem.

    Checked: required fields; empty text and empty contexts; unknown or missing mode (never
    defaulted), role and distractor change; broken pair membership (members disagreeing on
    question, reference or generator; distractor index out of range; noisy contexts that are
    not the clean contexts with exactly one distractor added or replaced); unapproved
    reference versions; duplicate pair ids; unknown slices; thresholds without direction
    ``lower_is_better`` or outside [0, 1]; a candidate mode without a control pair.
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
