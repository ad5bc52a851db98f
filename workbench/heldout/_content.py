"""Held-out identity by content: :func:`item_key` is what the judge sees, normalized (overlap
between uses is decided on it); :func:`content_key` adds the gold label and the slice (a report
binds its held-out cases by it)."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Protocol

from .._io import sha256_json


class _Item(Protocol):
    """What the judge sees of a case (a gold case, a control, a sentinel ...)."""

    @property
    def input(self) -> str: ...
    @property
    def response(self) -> str: ...
    @property
    def grading_notes(self) -> str | None: ...
    @property
    def reference(self) -> str | None: ...
    @property
    def contexts(self) -> list[str] | None: ...


class _Case(_Item, Protocol):
    @property
    def slice(self) -> str: ...
    @property
    def gold_label(self) -> str | None: ...


def normalize_text(text: str | None) -> str | None:
    """``text`` in NFKC, ``Cf`` characters removed, whitespace folded; None stays None."""
    if text is None:
        return None
    if text.isascii():  # NFKC leaves ASCII alone and no ASCII character is Cf (the fast case)
        return " ".join(text.split())
    text = unicodedata.normalize("NFKC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return " ".join(text.split())


def _item(case: _Item) -> dict[str, object]:
    contexts = case.contexts
    return {
        "input": normalize_text(case.input),
        "response": normalize_text(case.response),
        "grading_notes": normalize_text(case.grading_notes) or None,
        "reference": normalize_text(case.reference) or None,
        "contexts": [normalize_text(c) for c in contexts] if contexts else None,
    }


def item_key(case: _Item) -> str:
    """sha256 of what the judge sees of ``case`` (input, response, grading fields), normalized."""
    return sha256_json(_item(case))


def content_key(case: _Case) -> str:
    """sha256 of the item, its gold label and its slice, normalized (see the module doc)."""
    return sha256_json(
        {
            "item": _item(case),
            "label": normalize_text(case.gold_label),
            "slice": normalize_text(case.slice),
        }
    )


def item_keys(cases: Iterable[_Item]) -> frozenset[str]:
    """The item keys of ``cases``."""
    return frozenset(item_key(c) for c in cases)
