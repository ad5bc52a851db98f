"""Prompt leakage: held-out case text inside a judge's prompt template (a few-shot example copied
from the held-out partition tunes the judge on what certifies it).

A held-out question, response or reference of at least :data:`WINDOW` characters leaks when the
prompt holds it whole, both normalized (:func:`normalize_text`: NFKC, format characters removed,
whitespace folded). Shorter texts are common phrases, and a shared fragment is not counted:
templated responses share boilerplate sentences with any example. Every :data:`WINDOW`-character
window of the prompt goes into a set once; a held-out text is searched for in the prompt only
when its first window is in the set, so a held-out text costs the normalization of its head and
one set lookup.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from ._content import _Item, normalize_text

WINDOW = 40
"""Shortest held-out text counted as a leak (shorter ones are common phrases)."""
LEAK_FIELDS = ("input", "response", "reference")
"""The held-out fields looked for: the question, the response and the reference answer."""


class _Case(_Item, Protocol):
    @property
    def case_id(self) -> str: ...


@dataclass(frozen=True)
class PromptLeak:
    """A held-out case whose text the prompt holds."""

    case_id: str
    fields: tuple[str, ...]
    """Which of :data:`LEAK_FIELDS` the prompt holds (a run of at least :data:`WINDOW`
    characters of each)."""


def prompt_leaks(prompt: str, cases: Iterable[_Case]) -> list[PromptLeak]:
    """The ``cases`` (held-out) whose question, response or reference the prompt holds whole."""
    text = normalize_text(prompt) or ""
    if len(text) < WINDOW:
        return []
    windows = {text[i : i + WINDOW] for i in range(len(text) - WINDOW + 1)}
    leaks = []
    for case in cases:
        fields = tuple(f for f in LEAK_FIELDS if _held(getattr(case, f), text, windows))
        if fields:
            leaks.append(PromptLeak(case.case_id, fields))
    return leaks


def _held(value: str | None, prompt: str, windows: set[str]) -> bool:
    """Whether ``prompt`` (normalized) holds ``value`` whole. The first window is read from a
    normalized head of the text: folding whitespace (or NFKC) of a head gives the head of the
    folded text, but for its last few characters."""
    if value is None or len(value) < WINDOW:
        return False
    whole = len(value) <= _HEAD
    head = normalize_text(value if whole else value[:_HEAD]) or ""
    if (whole or len(head) >= WINDOW + _MARGIN) and head[:WINDOW] not in windows:
        return False  # a head shorter than a window is in no window either
    text = head if whole else normalize_text(value) or ""
    return len(text) >= WINDOW and text in prompt


_HEAD = 4 * WINDOW
_MARGIN = 8


def describe_leaks(leaks: list[PromptLeak]) -> str:
    """``3 held-out case(s) (c1: response; c2: input, response; ...)``, at most five named."""
    named = "; ".join(f"{k.case_id}: {', '.join(k.fields)}" for k in leaks[:5])
    more = f"; and {len(leaks) - 5} more" if len(leaks) > 5 else ""
    return f"{len(leaks)} held-out case(s) ({named}{more})"
