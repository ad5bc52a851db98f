"""Ranking fixtures: reviewed comparisons a ranking judge is tested against.

:func:`load_fixtures` reads ``<name>@<version>.yaml`` (docs/formats.md, "Ranking fixtures") and
reports every problem at once, each with ``file:line``, the case, a stable code and a fix.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any, Literal, TypeGuard

from pydantic import Field, ValidationError, computed_field, model_validator

from .._io import sha256_file, sha256_json
from .._load import Lines, Problems, load_yaml, validation_problems
from .._record import Record as _Frozen
from .._record import version_problem
from ..errors import refusal

FIXTURES_SCHEMA_VERSION = 2
"""Version of the ranking fixture file format (2: slices, reviews, adjudication, change log)."""

NEUTRAL_LABELS: tuple[str, ...] = tuple(string.ascii_uppercase)
"""Neutral presentation labels, in presented order: the judge sees these, never stable ids."""

MAX_CANDIDATES = len(NEUTRAL_LABELS)
"""Most candidates one fixture may rank (one neutral label each)."""

Direction = Literal["best-first", "worst-first"]
Gate = Literal["must-win", "monitor-only"]

_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]*$"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


class Passage(_Frozen):
    """A context passage the reviewers (and the judge) read."""

    id: str = Field(pattern=_ID_PATTERN)
    """Stable passage id (e.g. an evidence snapshot id)."""
    text: str
    """The passage text, in full."""


class Candidate(_Frozen):
    """One frozen candidate response."""

    id: str = Field(pattern=_ID_PATTERN)
    """Stable candidate id; never shown to the judge."""
    text: str
    """The full candidate text, exactly as ranked."""


class ReviewerOrder(_Frozen):
    """One reviewer's independent order of a fixture's candidates."""

    reviewer: str = Field(min_length=1)
    """Who ordered the candidates (a named person)."""
    order: list[str]
    """Every candidate id once, in the fixture's ``direction``."""
    rationale: list[str] = Field(min_length=1)
    """The reviewer's reasons for this order."""
    reviewed_on: dt.date | None = None
    """When the reviewer ordered the candidates."""


class OrderAdjudication(_Frozen):
    """How a disagreement between reviewers was resolved into ``expected_order``."""

    adjudicator: str = Field(min_length=1)
    """Who decided the expected order (a named person)."""
    reason: str = Field(min_length=1)
    """Why this order: how the reviewers' interpretations of the criterion were reconciled."""
    decided_on: dt.date | None = None
    """When the adjudication was made."""


class FixtureChange(_Frozen):
    """One recorded change of a fixture since the frozen version this one supersedes."""

    case_id: str = Field(pattern=_ID_PATTERN)
    """The fixture changed (added, relabelled, edited or retired)."""
    old_order: list[str] | None
    """``expected_order`` in the superseded version; null for a fixture added in this version."""
    new_order: list[str] | None
    """``expected_order`` in this version; null for a fixture retired in this version."""
    approver: str = Field(min_length=1)
    """Who approved the change (a named person)."""
    reason: str = Field(min_length=1)
    """Why the fixture changed, with the evidence reviewed."""
    approved_on: dt.date
    """When the change was approved."""

    @property
    def kind(self) -> str:
        """``added``, ``retired``, ``relabelled`` (the expected order moved) or ``edited``."""
        if self.old_order is None:
            return "added"
        if self.new_order is None:
            return "retired"
        return "relabelled" if list(self.old_order) != list(self.new_order) else "edited"


@dataclass(frozen=True)
class PermutationCheck:
    """How a returned list differs from a permutation of the expected ids."""

    missing: list[str]
    """Expected ids absent from the list."""
    unknown: list[str]
    """Returned items that are not expected ids."""
    duplicates: list[str]
    """Expected ids returned more than once."""

    @property
    def ok(self) -> bool:
        return not (self.missing or self.unknown or self.duplicates)

    def describe(self) -> str:
        return f"missing={self.missing}, unknown={self.unknown}, duplicates={self.duplicates}"


def check_permutation(expected: Sequence[str], returned: Sequence[Any]) -> PermutationCheck:
    """Compare ``returned`` with the set ``expected``: missing, unknown and duplicate items."""
    items = [str(x) for x in returned]
    known = set(expected)
    counts = Counter(items)
    return PermutationCheck(
        missing=[x for x in expected if x not in counts],
        unknown=sorted({x for x in items if x not in known}),
        duplicates=sorted(x for x, n in counts.items() if n > 1 and x in known),
    )


class RankingFixture(_Frozen):
    """One reviewed comparison: the frozen candidates, the expected order and its rationale."""

    case_id: str = Field(pattern=_ID_PATTERN)
    """Unique, stable case id."""
    slice: str | None = Field(default=None, pattern=_ID_PATTERN)
    """The scenario the fixture belongs to (required from ``schema_version`` 2)."""
    criterion_version: str = Field(min_length=1)
    """The criterion version the reviewers applied (e.g. ``policy-faithfulness-v2``)."""
    direction: Direction
    """``best-first``: the first id of an order is the best; ``worst-first``: the worst."""
    gate: Gate
    """``must-win``: a reversal blocks; ``monitor-only``: close or disputed, reported as drift."""
    user_input: str = Field(min_length=1)
    """The user's question."""
    context: list[Passage] = Field(default_factory=list)
    """Context passages, in the order the judge receives them."""
    cited_context: list[str] = Field(default_factory=list)
    """Ids of the context passages the reviewers cited; the completeness check looks for them."""
    candidates: list[Candidate]
    """The frozen candidates, with stable unique ids and the full text."""
    expected_order: list[str]
    """Every candidate id once, in ``direction``."""
    acceptable_orders: list[list[str]] | None = None
    """Further orders reviewers accept (ties), each a permutation, in ``direction``."""
    critical_pair: list[str] | None = None
    """``[better_id, worse_id]``: only this pair is compared."""
    rationale: list[str] = Field(min_length=1)
    """The reviewers' reasons, beside the expected order."""
    diagnostic: bool = False
    """In the small diagnostic set: the ``rotation`` plan runs the exhaustive battery on it."""
    reviews: list[ReviewerOrder] = Field(default_factory=list)
    """Two or more reviewers' independent orders (optional)."""
    adjudication: OrderAdjudication | None = None
    """How reviewer disagreement was resolved into ``expected_order``."""

    @model_validator(mode="after")
    def _consistent(self) -> RankingFixture:
        problems = fixture_problems(
            self.model_dump(mode="json", exclude={"source_candidates_sha256"})
        )
        if problems:
            raise ValueError("; ".join(f"{field}: {message}" for field, _, message, _ in problems))
        return self

    @computed_field  # type: ignore[prop-decorator]
    @property
    def source_candidates_sha256(self) -> str:
        """sha256 over the canonical JSON of user input, context and candidates (computed)."""
        return sha256_json(
            {
                "user_input": self.user_input,
                "context": [p.model_dump() for p in self.context],
                "candidates": [c.model_dump() for c in self.candidates],
            }
        )

    @property
    def candidate_ids(self) -> list[str]:
        """Candidate ids in fixture (identity) order."""
        return [c.id for c in self.candidates]

    @property
    def fixture_sha256(self) -> str:
        """The per-fixture hash a frozen release records (:func:`fixture_sha256`)."""
        return fixture_sha256(self)

    def must_win_pairs(self) -> list[tuple[str, str]]:
        """The ``(better, worse)`` pairs the must-win check depends on."""
        if self.critical_pair:
            return [(self.critical_pair[0], self.critical_pair[1])]
        winners = self.expected_winners
        return [(w, c) for w in winners for c in self.candidate_ids if c not in winners]

    def disputed_pairs(self) -> list[tuple[str, str]]:
        """Candidate pairs (in fixture order) that two reviewers order differently."""
        orders = [self.best_first(r.order) for r in self.reviews]
        pairs = combinations(self.candidate_ids, 2) if len(orders) >= 2 else []
        return [(a, b) for a, b in pairs if len({o.index(a) < o.index(b) for o in orders}) > 1]

    def disputed_must_win_pairs(self) -> list[tuple[str, str]]:
        """Must-win pairs the reviewers disagree on."""
        disputed = {frozenset(p) for p in self.disputed_pairs()}
        return [p for p in self.must_win_pairs() if frozenset(p) in disputed]

    def best_first(self, order: Sequence[str]) -> list[str]:
        """``order`` (in this fixture's direction) as best-first."""
        return list(order) if self.direction == "best-first" else list(reversed(order))

    @property
    def accepted_orders(self) -> list[list[str]]:
        """``expected_order`` and every acceptable order (in ``direction``)."""
        expected = list(self.expected_order)
        return [expected, *(list(o) for o in self.acceptable_orders or [] if list(o) != expected)]

    @property
    def expected_winners(self) -> list[str]:
        """The best of each accepted order, or the better id of the critical pair."""
        if self.critical_pair:
            return [self.critical_pair[0]]
        return list(dict.fromkeys(self.best_first(o)[0] for o in self.accepted_orders))

    def must_win_expected(self) -> str:
        """What the must-win check expects, for humans: a winner, winners, or ``better > worse``."""
        if self.critical_pair:
            return f"{self.critical_pair[0]} > {self.critical_pair[1]}"
        return " | ".join(self.expected_winners)

    def must_win_holds(self, order: Sequence[str]) -> bool:
        """Whether a valid returned ``order`` (in ``direction``) satisfies the must-win check."""
        best = self.best_first(order)
        if self.critical_pair:
            better, worse = self.critical_pair
            return best.index(better) < best.index(worse)
        return best[0] in self.expected_winners

    def agreement(self, order: Sequence[str]) -> tuple[int, int]:
        """``(agreed pairs, pairs)`` of a valid ``order`` against the best-matching accepted order
        (the critical pair alone when there is one)."""
        if self.critical_pair:
            return (1 if self.must_win_holds(order) else 0), 1
        return max(
            (pair_counts(expected, order) for expected in self.accepted_orders), key=lambda t: t[0]
        )


class FixtureSet(_Frozen):
    """A fixture file: header and fixtures, plus where it came from."""

    schema_version: int = FIXTURES_SCHEMA_VERSION
    """Fixture file format version."""
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    """Fixture set name."""
    version: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    """Fixture set version; an edited expected order is a new version."""
    description: str = ""
    """What the set covers and who reviewed it."""
    supersedes: str | None = None
    """The frozen version this version replaces (``<name>@<supersedes>.yaml`` beside it)."""
    changes: list[FixtureChange] = Field(default_factory=list)
    """One entry per fixture added, relabelled, edited or retired since ``supersedes``."""
    fixtures: list[RankingFixture] = Field(min_length=1)
    """The reviewed comparisons."""
    source: str | None = None
    """The file the set was read from (not part of the file)."""
    sha256: str | None = None
    """sha256 of the file's bytes (not part of the file); the battery's dataset hash."""
    release: Any | None = None
    """The release that froze this file, if any (not part of the file)."""

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def dataset_sha256(self) -> str:
        """The file's sha256, or for an in-memory set the hash of its canonical JSON."""
        return self.sha256 or sha256_json(
            self.model_dump(mode="json", exclude={"source", "sha256"})
        )

    def by_id(self) -> dict[str, RankingFixture]:
        return {f.case_id: f for f in self.fixtures}

    @property
    def fixture_hashes(self) -> dict[str, str]:
        """``case_id`` -> :attr:`RankingFixture.fixture_sha256`, in fixture order."""
        return {f.case_id: f.fixture_sha256 for f in self.fixtures}

    @property
    def header_sha256(self) -> str:
        """sha256 over the header as written (name, version, description, supersedes, changes)."""
        return sha256_json(
            self.model_dump(mode="json", exclude_defaults=True, include=set(_HEADER_KEYS))
            | {"schema_version": self.schema_version}
        )

    @property
    def frozen(self) -> bool:
        """Whether a verified release record froze this file."""
        return self.release is not None

    def change_for(self, case_id: str) -> FixtureChange | None:
        """The recorded change of ``case_id`` in this version, if any."""
        return next((c for c in self.changes if c.case_id == case_id), None)


def fixture_sha256(fixture: RankingFixture) -> str:
    """sha256 over the canonical JSON of a fixture as written (defaults and computed fields left
    out, so a new optional field keeps frozen hashes stable)."""
    return sha256_json(
        fixture.model_dump(mode="json", exclude_defaults=True, exclude={"source_candidates_sha256"})
    )


def pair_counts(expected: Sequence[str], actual: Sequence[str]) -> tuple[int, int]:
    """``(agreed, pairs)``: candidate pairs in the same relative order in both lists."""
    exp, act = ({c: i for i, c in enumerate(order)} for order in (expected, actual))
    pairs = list(combinations(expected, 2))
    return sum((exp[a] < exp[b]) == (act[a] < act[b]) for a, b in pairs), len(pairs)


def pairwise_agreement(expected: Sequence[str], actual: Sequence[str]) -> float:
    """Fraction of candidate pairs in the same relative order (1.0 for fewer than two items);
    :class:`ValueError` unless both are permutations of the same ids."""
    check = check_permutation(list(expected), list(actual))
    if not check.ok or len(set(expected)) != len(expected):
        raise ValueError(f"invalid ranking: {check.describe()}")
    agreed, pairs = pair_counts(expected, actual)
    return agreed / pairs if pairs else 1.0


# -- validation --------------------------------------------------------------------------


class _Found(list[tuple[str, str, str, str]]):
    """The semantic problems of one fixture: ``(field, code, message, fix)``."""

    def add(self, field: str, code: str, message: str, fix: str) -> None:
        self.append((field, code, message, fix))


def _ids(items: Any) -> list[str] | None:
    if not isinstance(items, list):
        return None
    out = [i.get("id") for i in items if isinstance(i, dict)]
    return [i for i in out if isinstance(i, str)]


def _is_id_list(value: object) -> TypeGuard[list[str]]:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def _twice(ids: list[str]) -> list[str]:
    return sorted(i for i, n in Counter(ids).items() if n > 1)


def _best(raw: dict[str, Any], order: list[str]) -> list[str]:
    return order[::-1] if raw.get("direction") == "worst-first" else list(order)


def fixture_problems(raw: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """Semantic problems of one fixture as ``(field, code, message, fix)``."""
    found = _Found()
    cand_ids, ctx_ids = _ids(raw.get("candidates")), _ids(raw.get("context", []))
    if cand_ids is not None:
        _candidate_problems(found, raw["candidates"], cand_ids)
    if ctx_ids is not None:
        _passage_problems(found, raw, ctx_ids)
    _order_problems(found, raw, cand_ids)
    cited = raw.get("cited_context")
    if _is_id_list(cited) and ctx_ids is not None and [x for x in cited if x not in ctx_ids]:
        found.add(
            "cited_context",
            "unknown_cited_context",
            f"cited passages not in context: {[x for x in cited if x not in ctx_ids]}",
            "cite the ids of passages in this fixture's context, or add the passages",
        )
    return found + _review_problems(raw, cand_ids)


def _candidate_problems(found: _Found, candidates: list[Any], ids: list[str]) -> None:
    if len(candidates) < 2:
        found.add(
            "candidates",
            "too_few_candidates",
            f"{len(candidates)} candidate(s); a ranking needs at least 2",
            "add the candidates being compared",
        )
    if len(candidates) > MAX_CANDIDATES:
        found.add(
            "candidates",
            "too_many_candidates",
            f"{len(candidates)} candidates; at most {MAX_CANDIDATES} can be labelled A-Z",
            "split the comparison",
        )
    if _twice(ids):
        fix = "give every candidate a unique, stable id"
        found.add(
            "candidates", "duplicate_candidate_id", f"candidate ids used twice: {_twice(ids)}", fix
        )
    for c in candidates:
        if isinstance(c, dict) and isinstance(c.get("text"), str) and not c["text"].strip():
            fix = "keep the full candidate text in the fixture"
            found.add("candidates", "empty_text", f"candidate {c.get('id')!r} has no text", fix)


def _passage_problems(found: _Found, raw: dict[str, Any], ids: list[str]) -> None:
    if _twice(ids):
        fix = "give every passage a unique id"
        found.add("context", "duplicate_context_id", f"context ids used twice: {_twice(ids)}", fix)
    for p in raw.get("context") or []:
        if isinstance(p, dict) and isinstance(p.get("text"), str) and not p["text"].strip():
            fix = "keep the full passage text"
            found.add("context", "empty_text", f"passage {p.get('id')!r} has no text", fix)


def _order_problems(found: _Found, raw: dict[str, Any], ids: list[str] | None) -> None:
    """The expected and acceptable orders are permutations; ties and a critical pair agree."""
    expected, acceptable, critical = (
        raw.get(k) for k in ("expected_order", "acceptable_orders", "critical_pair")
    )
    valid = ids is not None and _is_id_list(expected) and check_permutation(ids, expected).ok
    if ids is not None and _is_id_list(expected) and not valid:
        found.add(
            "expected_order",
            "expected_order_not_permutation",
            "expected_order is not a permutation of the candidate ids:"
            f" {check_permutation(ids, expected).describe()}",
            "list every candidate id exactly once, in the stated direction",
        )
    if acceptable is not None and critical is not None:
        found.add(
            "acceptable_orders",
            "ties_conflict",
            "both acceptable_orders and critical_pair are given",
            "use acceptable_orders for accepted ties, or critical_pair to compare one pair only",
        )
    if ids is None:
        return  # the candidates' shape problem, reported by the model
    for n, order in enumerate(acceptable if isinstance(acceptable, list) else [], start=1):
        check = check_permutation(ids, order) if _is_id_list(order) else None
        if check is not None and not check.ok:  # not a list of ids: the model's shape problem
            found.add(
                "acceptable_orders",
                "acceptable_order_not_permutation",
                f"acceptable order {n} is not a permutation of the candidate ids:"
                f" {check.describe()}",
                "list every candidate id exactly once",
            )
    if _is_id_list(critical):
        _critical_problems(found, critical, ids, _best(raw, expected or []) if valid else None)


def _critical_problems(
    found: _Found, critical: list[str], ids: list[str], best: list[str] | None
) -> None:
    unknown = [x for x in critical if x not in ids]
    if len(critical) != 2 or len(set(critical)) != 2 or unknown:
        found.add(
            "critical_pair",
            "critical_pair_invalid",
            "critical_pair must be two different candidate ids [better, worse]; got"
            f" {critical}" + (f" (unknown {unknown})" if unknown else ""),
            "name the better candidate, then the worse one",
        )
    elif best is not None and best.index(critical[0]) > best.index(critical[1]):
        found.add(
            "critical_pair",
            "critical_pair_contradicts_expected",
            f"expected_order ranks {critical[1]!r} above {critical[0]!r}, the critical pair says"
            " the opposite",
            "make critical_pair [better, worse] agree with expected_order and its direction",
        )


def _review_problems(raw: dict[str, Any], cand_ids: list[str] | None) -> _Found:
    """Reviews and adjudication: enough reviewers, valid orders, adjudicated must-win disputes."""
    found = _Found()
    reviews, adjudication = raw.get("reviews"), raw.get("adjudication")
    if not reviews and adjudication:
        found.add(
            "adjudication",
            "adjudication_without_reviews",
            "an adjudication without reviewer orders",
            "add the reviewers' independent orders under reviews:, or remove the adjudication",
        )
    if not reviews or not isinstance(reviews, list) or cand_ids is None:
        return found  # nothing to check, or a shape problem the model reports
    items = [r for r in reviews if isinstance(r, dict)]
    if len(items) < 2:
        found.add(
            "reviews",
            "too_few_reviewers",
            f"{len(items)} reviewer order(s); calibration needs at least 2 independent reviewers",
            "add a second reviewer's independent order, or remove reviews:",
        )
    names = [name for r in items if isinstance(name := r.get("reviewer"), str)]
    if _twice(names):
        fix = "give each reviewer one independent order"
        found.add("reviews", "duplicate_reviewer", f"reviewers listed twice: {_twice(names)}", fix)
    orders = [r["order"] for r in items if _is_id_list(r.get("order"))]
    for r in items:
        check = check_permutation(cand_ids, r["order"]) if _is_id_list(r.get("order")) else None
        if check is not None and not check.ok:  # not a list of ids: the model's shape problem
            found.add(
                "reviews",
                "review_order_not_permutation",
                f"reviewer {r.get('reviewer')!r}: the order is not a permutation of the candidate"
                f" ids: {check.describe()}",
                "list every candidate id exactly once, in the fixture's direction",
            )
    if not found and len(orders) == len(items) >= 2 and adjudication is None:
        _dispute_problems(found, raw, cand_ids, [list(o) for o in orders])
    return found


def _dispute_problems(
    found: _Found, raw: dict[str, Any], cand_ids: list[str], orders: list[list[str]]
) -> None:
    """Unadjudicated: expected order is a reviewer's; reviewers agree on must-win pairs."""
    expected = raw.get("expected_order")
    if not _is_id_list(expected):
        return
    if list(expected) not in orders:
        found.add(
            "expected_order",
            "expected_order_unreviewed",
            "expected_order is none of the reviewers' orders and there is no adjudication",
            "add adjudication: {adjudicator, reason} recording who decided this order and why,"
            " or use a reviewer's order",
        )
    if raw.get("gate") != "must-win" or not check_permutation(cand_ids, expected).ok:
        return
    ranked = [_best(raw, o) for o in orders]
    disputed = [
        (a, b)
        for a, b in _must_win_pairs(raw, cand_ids, expected)
        if len({o.index(a) < o.index(b) for o in ranked}) > 1
    ]
    if disputed:
        pairs = ", ".join(f"{a} vs {b}" for a, b in disputed)
        found.add(
            "gate",
            "must_win_unadjudicated",
            f"reviewers disagree on must-win pair(s) {pairs}: the fixture cannot be must-win"
            " until adjudicated",
            "record adjudication: {adjudicator, reason, decided_on}, or make the fixture"
            " monitor-only",
        )


def _must_win_pairs(
    raw: dict[str, Any], cand_ids: list[str], expected: list[str]
) -> list[tuple[str, str]]:
    """:meth:`RankingFixture.must_win_pairs` of a raw fixture (a valid expected order)."""
    critical = raw.get("critical_pair")
    if (
        _is_id_list(critical)
        and len(set(critical)) == 2 == len(critical)
        and set(critical) <= set(cand_ids)
    ):
        return [(critical[0], critical[1])]
    accepted = [list(expected)] + [
        list(o)
        for o in raw.get("acceptable_orders") or []
        if _is_id_list(o) and check_permutation(cand_ids, o).ok
    ]
    winners = list(dict.fromkeys(_best(raw, o)[0] for o in accepted))
    return [(w, c) for w in winners for c in cand_ids if c not in winners]


_HEADER_KEYS = frozenset(
    {"schema_version", "name", "version", "description", "supersedes", "changes"}
)
_CHANGE_FIX = (
    "each change needs case_id, old_order (null when added), new_order (null when retired),"
    " approver, reason and approved_on (YYYY-MM-DD)"
)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _is_name(value: Any) -> bool:
    """A name or version as written: letters, digits, ``.``, ``_`` or ``-`` (a number counts)."""
    ok = isinstance(value, str | int) and not isinstance(value, bool)
    return ok and bool(_NAME.match(str(value)))


def load_fixtures(path: str | Path) -> FixtureSet:
    """Read and validate a fixture file; raise :class:`WorkbenchError` listing every problem."""
    path = Path(path)
    doc = load_yaml(
        path,
        prefix="fixtures",
        what="fixtures",
        missing_message="the fixture file does not exist",
        missing_fix="point --fixtures at data/ranking/<name>@<version>.yaml",
        shape=(
            "the file must be a YAML mapping with schema_version, name, version and fixtures",
            "see the format in workbench.ranking (module docstring)",
        ),
    )
    header = {k: v for k, v in doc.data.items() if k != "fixtures"}
    problems = Problems()
    version, supersedes = _header_problems(problems, path, header, doc.lines)
    changes = _changes(problems, header, supersedes, doc.lines)
    fixtures = _fixture_items(problems, doc.data.get("fixtures"), version, doc.lines)
    problems.raise_if_any(f"{path}: {len(problems)} problem(s) in the ranking fixtures")
    fixture_set = FixtureSet(
        schema_version=version,
        name=str(header["name"]),
        version=str(header["version"]),
        description=str(header.get("description") or ""),
        supersedes=None if supersedes is None else str(supersedes),
        changes=changes,
        fixtures=fixtures,
        source=str(path),
        sha256=sha256_file(path),
    )
    from ._releases import check_release

    case_lines = {f.case_id: doc.lines.line("fixtures", i) or 0 for i, f in enumerate(fixtures)}
    header_lines = {k: n for k in ("changes", "supersedes") if (n := doc.lines.line(k))}
    return check_release(path, fixture_set, case_lines, header_lines)


def _header_problems(
    problems: Problems, path: Path, header: dict[str, Any], lines: Lines
) -> tuple[Any, Any]:
    """The header's fields and names; returns the schema version and the valid ``supersedes``."""
    for key in ("name", "version"):
        if key not in header:
            fix = f"add {key}: at the top of the file"
            problems.add(str(path), "header_invalid", f"the header lacks {key!r}", fix)
    for key in sorted(set(header) - _HEADER_KEYS):
        problems.add(
            lines.at(key),
            "header_invalid",
            f"unknown header field {key!r}",
            "the header has schema_version, name, version, description, supersedes and changes"
            " only",
        )
    version = header.get("schema_version", FIXTURES_SCHEMA_VERSION)
    if not isinstance(version, int) or isinstance(version, bool):
        problems.add(
            lines.at("schema_version"),
            "header_invalid",
            f"schema_version must be an integer, got {version!r}",
            f"set schema_version: {FIXTURES_SCHEMA_VERSION}",
        )
    elif (newer := version_problem(FixtureSet, header, lines.at("schema_version"))) is not None:
        problems.append(newer)
    expected = f"{header.get('name')}@{header.get('version')}"
    if "name" in header and "version" in header and path.stem != expected:
        problems.add(
            str(path),
            "fixtures_filename",
            f"file name {path.name!r} does not match name@version {expected!r}",
            f"rename the file to {expected}.yaml so versions cannot be confused",
        )
    for key in ("name", "version"):
        if header.get(key) is not None and not _is_name(header[key]):
            message = f"{key} must be letters, digits, '.', '_' or '-', got {header[key]!r}"
            problems.add(lines.at(key), "header_invalid", message, f'e.g. {key}: "1"')
    supersedes = header.get("supersedes")
    if supersedes is not None and not _is_name(supersedes):
        problems.add(
            lines.at("supersedes"),
            "header_invalid",
            f"supersedes must be a version (letters, digits, '.', '_' or '-'), got {supersedes!r}",
            'e.g. supersedes: "1"',
        )
        supersedes = None
    return version, supersedes


def _changes(
    problems: Problems, header: dict[str, Any], supersedes: Any, lines: Lines
) -> list[FixtureChange]:
    raw_changes = header.get("changes") or []
    if not isinstance(raw_changes, list):
        problems.add(
            lines.at("changes"),
            "header_invalid",
            "changes must be a list of {case_id, old_order, new_order, approver, reason,"
            " approved_on}",
            "write one entry per changed fixture",
        )
        raw_changes = []
    changes: list[FixtureChange] = []
    for n, entry in enumerate(raw_changes):
        try:
            changes.append(FixtureChange.model_validate(entry))
        except ValidationError as exc:
            problems += validation_problems(
                exc,
                at=lines.at("changes", n),
                case_id=_str(entry.get("case_id")) if isinstance(entry, dict) else None,
                code="change_invalid",
                root="change",
                message=functools.partial(_change_message, n),
                fix=_CHANGE_FIX,
            )
    if raw_changes and supersedes is None:
        problems.add(
            lines.at("changes"),
            "changes_without_supersedes",
            "a change log without supersedes: it is not clear which version the changes are"
            " relative to",
            "set supersedes: to the frozen version this file replaces",
        )
    return changes


def _change_message(n: int, err: Mapping[str, Any], field: str) -> str:
    return f"change {n + 1}: {field}: {err['msg']}"


def _fixture_items(
    problems: Problems, items: Any, version: Any, lines: Lines
) -> list[RankingFixture]:
    if not isinstance(items, list) or not items:
        fix = "add the reviewed comparisons under fixtures:"
        problems.add(
            lines.at("fixtures"), "fixtures_empty", "'fixtures' must be a non-empty list", fix
        )
        return []
    fixtures: list[RankingFixture] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        where = functools.partial(lines.at, "fixtures", index)
        if not isinstance(item, dict):
            message, fix = (
                f"fixture {index + 1} is not a mapping",
                "write each fixture as key: value pairs",
            )
            problems.add(where(), "fixtures_shape", message, fix)
            continue
        case_id = _str(item.get("case_id"))
        found = _item_problems(item, where, case_id)
        if isinstance(version, int) and version >= 2 and "slice" not in item:
            message = "missing required field 'slice' (schema_version 2)"
            found.add(where(), "missing_field", message, _FIELD_FIX["slice"], case_id=case_id)
        if case_id in seen:
            found.add(
                where("case_id"),
                "duplicate_case_id",
                f"case_id also used by the fixture at line {seen[case_id]}",
                "give every fixture a unique case_id",
                case_id=case_id,
            )
        elif case_id is not None:
            seen[case_id] = lines.line("fixtures", index, "case_id") or 0
        problems += found
        if not found:
            fixtures.append(RankingFixture.model_validate(item))
    return fixtures


def _item_problems(
    item: dict[str, Any], where: Callable[..., str], case_id: str | None
) -> Problems:
    out = Problems()
    if "source_candidates_sha256" in item:
        out.add(
            where("source_candidates_sha256"),
            "computed_field",
            "source_candidates_sha256 is computed from the fixture, never written by hand",
            "remove the line",
            case_id=case_id,
        )
        item = {k: v for k, v in item.items() if k != "source_candidates_sha256"}
    for field, code, message, fix in fixture_problems(item):
        out.add(where(field), code, message, fix, case_id=case_id)
    try:
        RankingFixture.model_validate(item)
    except ValidationError as exc:
        out += validation_problems(
            exc,
            at=lambda *path: where(path[0]),
            case_id=case_id,
            keep=lambda err: bool(err["loc"]),  # the model-level check: reported above
            code=lambda err: _ITEM_CODES.get(err["type"], "invalid_field"),
            message=_item_message,
            fix=_item_fix,
        )
    return out


_ITEM_CODES = {"missing": "missing_field", "extra_forbidden": "unknown_field"}


def _item_message(err: Any, where: str) -> str:
    return {
        "missing": f"missing required field {where!r}",
        "extra_forbidden": f"unknown field {where!r}",
    }.get(err["type"]) or f"{where}: {err['msg']}"


def _item_fix(err: Any) -> str:
    field = str(err["loc"][0])
    if err["type"] == "extra_forbidden":
        return "remove it or correct its spelling; see the format in workbench.ranking"
    return _FIELD_FIX.get(
        field, "add the field" if err["type"] == "missing" else "correct the value"
    )


_FIELD_FIX: dict[str, str] = {
    "case_id": "a unique, stable id of letters, digits, '-', '_', '.' or ':'",
    "slice": "name the scenario the fixture belongs to, e.g. slice: account_security",
    "diagnostic": (
        "true puts the fixture in the small diagnostic set (exhaustive battery under the rotation"
        " plan)"
    ),
    "reviews": "a list of {reviewer, order, rationale} from two or more independent reviewers",
    "adjudication": (
        "{adjudicator, reason, decided_on} recording who decided the expected order and why"
    ),
    "criterion_version": (
        "name the criterion version the reviewers applied, e.g. policy-faithfulness-v2"
    ),
    "direction": "state what the first id means: best-first or worst-first",
    "gate": "must-win (a reversal blocks) or monitor-only (reported as drift)",
    "user_input": "give the user's question",
    "context": "a list of {id, text} passages",
    "cited_context": "a list of context passage ids",
    "candidates": "a list of {id, text} with stable unique ids and the full text",
    "expected_order": "every candidate id once, in the stated direction",
    "acceptable_orders": "a list of orders, each every candidate id once",
    "critical_pair": "[better_id, worse_id]",
    "rationale": "a non-empty list of the reviewers' reasons",
}


def as_fixture_set(fixtures: FixtureSet | str | Path | Iterable[RankingFixture]) -> FixtureSet:
    """A :class:`FixtureSet` from a set, a path to a fixture file, or fixtures in memory."""
    if isinstance(fixtures, FixtureSet):
        return fixtures
    if isinstance(fixtures, str | Path):
        return load_fixtures(fixtures)
    items = list(fixtures)
    dup = sorted(i for i, n in Counter(f.case_id for f in items).items() if n > 1)
    if dup:
        message, fix = f"case ids used twice: {dup}", "give every fixture a unique case_id"
        raise refusal("invalid fixtures", "<fixtures>", "duplicate_case_id", message, fix)
    return FixtureSet(name="in-memory", version="0", fixtures=items)
