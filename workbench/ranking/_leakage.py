"""Criterion leakage: judge reasons that cite a stable candidate id, a presented position, length
or a named pattern outside the criterion (rules per criterion version in the ranking policy).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .._docs import add_field_docs
from ._fixtures import RankingFixture

POSITION_PATTERNS: tuple[str, ...] = (
    r"\b(?:the\s+)?(?:first|second|third|fourth|fifth|last|final|earlier|later)\s+(?:one|candidate|answer|response|option|reply|item)s?\b",
    (
        r"\b(?:shown|listed|presented|placed|positioned|appears?|appearing)\s+(?:first|second|third|fourth|last|earlier|later|on"
        r" top|at the (?:top|start|beginning|end|bottom))\b"
    ),
    r"\b(?:in|at)\s+(?:the\s+)?(?:first|second|third|last|top|bottom)\s+(?:position|slot|spot)\b",
    r"\b(?:presentation|presented|listing)\s+order\b",
)
"""Built-in position patterns (case-insensitive)."""

LENGTH_PATTERNS: tuple[str, ...] = (
    r"\b(?:longer|shorter|lengthier|longest|shortest|wordier|wordy|verbose|verbosity|brevity|concise(?:ness)?|succinct)\b",
    r"\b(?:more|less)\s+(?:detailed|thorough|words|text)\b",
    r"\b(?:too\s+(?:long|short)|word\s+count|length)\b",
)
"""Built-in length patterns (case-insensitive)."""


class LeakageRules(BaseModel):
    """Which leakage checks apply to one criterion version."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=add_field_docs)

    candidate_ids: bool = True
    """Flag a reason that names a stable candidate id."""
    position: bool = True
    """Flag a reason that cites where a candidate was shown."""
    length: bool = True
    """Flag a reason that cites length; set false when length is part of the criterion."""
    patterns: dict[str, str] = Field(default_factory=dict)
    """Extra checks: name -> case-insensitive regular expression."""

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, value: dict[str, str]) -> dict[str, str]:
        for name, pattern in value.items():
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"pattern {name!r} is not a regular expression ({exc})") from None
        return value


class LeakageHit(BaseModel):
    """One thing a reason cites that the criterion does not."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=add_field_docs)

    category: str
    """``candidate_id``, ``position``, ``length``, or the name of a criterion pattern."""
    matched: str
    """The matched text."""


@lru_cache(maxsize=256)
def _compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


def rules_for(criterion_version: str, configured: dict[str, LeakageRules] | None) -> LeakageRules:
    """The rules of a criterion: its own entry, else ``"*"``, else the defaults."""
    configured = configured or {}
    return configured.get(criterion_version) or configured.get("*") or LeakageRules()


def id_token(word: str) -> re.Pattern[str]:
    """``word`` as a whole token (not inside a longer id or word)."""
    return re.compile(rf"(?<![A-Za-z0-9_\-]){re.escape(word)}(?![A-Za-z0-9_\-])")


@lru_cache(maxsize=4096)
def _checkable_ids(
    case_id: str, digest: str, ids: tuple[str, ...], text: str
) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((cid, tok) for cid in ids for tok in [id_token(cid)] if not tok.search(text))


def checkable_ids(fixture: RankingFixture) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The candidate ids no fixture text contains (those a reason or request must not show)."""
    texts = [fixture.user_input, *(p.text for p in fixture.context)]
    text = "\n".join(texts + [c.text for c in fixture.candidates])
    ids = tuple(fixture.candidate_ids)
    return _checkable_ids(fixture.case_id, fixture.source_candidates_sha256, ids, text)


def scan_reason(
    reason: str | None, fixture: RankingFixture, rules: LeakageRules
) -> list[LeakageHit]:
    """Everything ``reason`` cites that ``rules`` forbid (empty for no reason)."""
    if not reason:
        return []
    hits: list[LeakageHit] = []
    if rules.candidate_ids:
        hits += [
            LeakageHit(category="candidate_id", matched=cid)
            for cid, tok in checkable_ids(fixture)
            if tok.search(reason)
        ]
    groups: list[tuple[str, Iterable[str]]] = []
    if rules.position:
        groups.append(("position", POSITION_PATTERNS))
    if rules.length:
        groups.append(("length", LENGTH_PATTERNS))
    groups += [(name, (pattern,)) for name, pattern in rules.patterns.items()]
    for category, patterns in groups:
        for rx in _compiled(tuple(patterns)):
            found = rx.search(reason)
            if found:
                hits.append(LeakageHit(category=category, matched=found.group(0)))
                break
    return hits
