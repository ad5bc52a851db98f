"""Paths into a list column of reviews (``reviews: {form: nested}``): ``annotations[].annotator``
names the list column, ``[]`` for each review, then the keys to a value. The rationale may
collect a list inside each review with a second ``[]`` (``annotations[].spans[].text``). The
column holds a JSON list in a text cell, a list value, or a list of structs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PATH_FIELDS: tuple[str, ...] = ("reviewer", "label", "rationale", "confidence")

EXAMPLE = "annotations[].annotator"


@dataclass(frozen=True)
class ItemPath:
    """A parsed path: ``column[].key.key`` or ``column[].key[].key``."""

    text: str
    column: str
    keys: tuple[str, ...]
    """The keys from a review to the value (or to the list that ``each`` reads)."""
    each: tuple[str, ...] | None = None
    """After a second ``[]``: the keys read in every item of that list."""


class PathError(ValueError):
    """A path that cannot be read; its text says what to write instead."""


def _keys(part: str, text: str, *, after: str) -> tuple[str, ...]:
    if part == "":
        return ()
    if not part.startswith("."):
        raise PathError(f"{text!r}: {after} must be followed by '.' and a key, e.g. {EXAMPLE}")
    keys = tuple(part[1:].split("."))
    if any(k.strip() == "" for k in keys):
        raise PathError(f"{text!r} has an empty key between dots")
    bad = [k for k in keys if "[" in k or "]" in k]
    if bad:
        raise PathError(f"{text!r}: key {bad[0]!r} holds a stray bracket; a list is read with []")
    return keys


def parse_path(text: str, *, many: bool) -> ItemPath:
    """Parse ``text`` (``many``: a second ``[]`` is allowed); raise :class:`PathError` saying
    what to write."""
    parts = text.split("[]")
    column = parts[0]
    if len(parts) == 1:
        raise PathError(
            f"{text!r} is not a path into a list column: write <column>[].<key>, e.g. {EXAMPLE}"
        )
    if column.strip() == "" or "[" in column or "]" in column:
        raise PathError(f"{text!r} names no list column before []: e.g. {EXAMPLE}")
    if len(parts) > 3 or (len(parts) == 3 and not many):
        what = "a list inside each review (rationale only)"
        raise PathError(
            f"{text!r} has {len(parts) - 1} []: one reads the list column's reviews"
            + (f", a second one {what}" if many else "; this field takes one value per review")
        )
    keys = _keys(parts[1], text, after="[]")
    if not keys:
        raise PathError(f"{text!r} names no key of the review: write {column}[].<key>")
    each = _keys(parts[2], text, after="the second []") if len(parts) == 3 else None
    return ItemPath(text, column, keys, each)


def lookup(node: Any, keys: tuple[str, ...]) -> tuple[bool, Any, Any]:
    """Follow ``keys`` from ``node``: ``(found, value, last object reached)``."""
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return False, None, node
        node = node[key]
    return True, node, None
