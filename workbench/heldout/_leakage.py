"""Prompt leakage: held-out case text inside a judge's prompt template (a few-shot example copied
from the held-out partition tunes the judge on what certifies it).

Texts are compared normalized (:func:`normalize_text`: NFKC, format characters removed, whitespace
folded). Every :data:`WINDOW`-character window of the prompt goes into a set once; each held-out
text of at least :data:`WINDOW` characters is looked up by its windows at every :data:`STRIDE`
characters (and its last window). So a held-out text the prompt holds whole is always found, and
so is any shared run of ``WINDOW + STRIDE - 1`` characters; the cost is one pass over the prompt
and ``len(text) / STRIDE`` set lookups per held-out text (no search of the prompt per case).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from ._content import normalize_text

WINDOW = 40
"""Shortest shared text counted as a leak (shorter runs are common phrases)."""
STRIDE = 20
"""Step between the looked-up windows of a held-out text."""
LEAK_FIELDS = ("input", "response", "reference")
"""The held-out fields looked for: the question, the response and the reference answer."""


class _Case(Protocol):
    @property
    def case_id(self) -> str: ...
    @property
    def input(self) -> str: ...
    @property
    def response(self) -> str: ...
    @property
    def reference(self) -> str | None: ...


@dataclass(frozen=True)
class PromptLeak:
    """A held-out case whose text the prompt holds."""

    case_id: str
    fields: tuple[str, ...]
    """Which of :data:`LEAK_FIELDS` the prompt holds (a run of at least :data:`WINDOW`
    characters of each)."""


def prompt_leaks(prompt: str, cases: Iterable[_Case]) -> list[PromptLeak]:
    """The ``cases`` (held-out) whose question, response or reference the prompt holds."""
    text = normalize_text(prompt) or ""
    if len(text) < WINDOW:
        return []
    windows = {text[i : i + WINDOW] for i in range(len(text) - WINDOW + 1)}
    leaks = []
    for case in cases:
        fields = tuple(f for f in LEAK_FIELDS if _held(getattr(case, f), windows))
        if fields:
            leaks.append(PromptLeak(case.case_id, fields))
    return leaks


def _held(value: str | None, windows: set[str]) -> bool:
    text = normalize_text(value)
    if text is None or len(text) < WINDOW:
        return False
    last = len(text) - WINDOW
    return any(text[i : i + WINDOW] in windows for i in (*range(0, last, STRIDE), last))


def describe_leaks(leaks: list[PromptLeak]) -> str:
    """``3 held-out case(s) (c1: response; c2: input, response; ...)``, at most five named."""
    named = "; ".join(f"{k.case_id}: {', '.join(k.fields)}" for k in leaks[:5])
    more = f"; and {len(leaks) - 5} more" if len(leaks) > 5 else ""
    return f"{len(leaks)} held-out case(s) ({named}{more})"
