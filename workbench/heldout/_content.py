"""Held-out identity by content: what makes two cases "the same held-out case".

A held-out use must follow the cases, not the directory, the dataset hash or the case ids: a
copied, renamed or superseded dataset, or one with a development case appended, holds the same
held-out cases and judging them again is a second use. Two keys are derived from a case:

- :func:`item_key` — what the judge sees (input, response and the grading fields: grading notes,
  reference, contexts), normalized. Two cases with the same item key are the same evaluation
  item whatever their ids, labels or slices: a relabelled copy is still a re-use. Overlap
  between a certification's held-out cases and any recorded use is decided on this key.
- :func:`content_key` — the item key plus what reviewers decided (the gold label) and the
  slice. A report binds its held-out cases by this key, so a relabel or reslice of held-out
  cases in memory or on disk no longer matches the report.

Normalization (:func:`normalize_text`): Unicode NFKC, format characters (category ``Cf``:
zero-width spaces and joiners, BOMs, bidi controls) removed, runs of whitespace folded to
one space, ends stripped. Invisible or compatibility-form variants of a held-out item are the
same item.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Protocol

from .._io import sha256_json


class _Case(Protocol):
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
    @property
    def slice(self) -> str: ...
    @property
    def gold_label(self) -> str | None: ...


def normalize_text(text: str | None) -> str | None:
    """``text`` in NFKC with format (``Cf``) characters removed and whitespace folded; None
    stays None."""
    if text is None:
        return None
    text = unicodedata.normalize("NFKC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return " ".join(text.split())


def _item(case: _Case) -> dict[str, object]:
    contexts = case.contexts
    return {
        "input": normalize_text(case.input),
        "response": normalize_text(case.response),
        "grading_notes": normalize_text(case.grading_notes) or None,
        "reference": normalize_text(case.reference) or None,
        "contexts": [normalize_text(c) for c in contexts] if contexts else None,
    }


def item_key(case: _Case) -> str:
    """sha256 of what the judge sees of ``case``, normalized (see the module doc)."""
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


def item_keys(cases: Iterable[_Case]) -> frozenset[str]:
    """The item keys of ``cases``."""
    return frozenset(item_key(c) for c in cases)
