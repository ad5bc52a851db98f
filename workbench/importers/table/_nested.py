"""Reviews in a list column (``reviews: {form: nested}``), their fields read by path
(:func:`._mapping.parse_path`); every problem is recorded with its rows."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from ..._io import JSONRecordError, loads_json
from .._table_reader import RowIssues, _blank, canonical
from ._mapping import ItemPath, Reviews, lookup

LIST_FIX = (
    'write the cell as a JSON list of reviews, e.g. [{"annotator": "a1", "label": "faithful"}],'
    " or check that the mapping's review paths name the right list column"
)


@dataclass
class RowReview:
    reviewer: str
    label: str  # canonical source value
    rationale: str | None
    confidence: str | None
    row: int


def _keys_hint(key: str, keys: set[str]) -> str:
    if not keys:
        return ""
    close = difflib.get_close_matches(key, sorted(keys), n=1)
    shown = ", ".join(sorted(keys)[:20])
    return (f"; did you mean {close[0]!r}?" if close else "") + f" (the reviews have: {shown})"


class NestedReviews:
    """Reads each row's reviews, remembering which paths some review had (a mistyped optional
    path is named once)."""

    def __init__(self, spec: Reviews, issues: RowIssues) -> None:
        self.paths: dict[str, ItemPath] = spec.item_paths()
        self.column, self.issues = self.paths["label"].column, issues
        self.found: set[str] = set()
        self.seen_keys: dict[str, set[str]] = {}
        self.first_row: int | None = None
        self.flagged: list[int] = []

    def row(self, i: int, cell: Any) -> list[RowReview]:
        out: list[RowReview] = []
        before = len(self.flagged)
        for item in self._items(i, cell):
            self.first_row = i if self.first_row is None else self.first_row
            reviewer = self._required(i, item, "reviewer")
            label = self._required(i, item, "label")
            rationale = self._rationale(i, item)
            confidence = self._optional(i, item, "confidence")
            if reviewer is not None and label is not None:
                confidence = confidence.strip().lower() if confidence else None
                out.append(RowReview(reviewer, label, rationale, confidence, i))
        if not out and len(self.flagged) == before:
            self._add(
                "no_reviews",
                f"column {self.column!r} holds no review (an empty cell or an empty list)",
                "every case needs at least one review: give the row's list its reviews, or drop"
                " the row",
                i,
            )
        return out

    def _add(self, code: str, message: str, fix: str, i: int, *, key: str | None = None) -> None:
        self.flagged.append(i)
        self.issues.add(code, message, fix, i, key=key)

    def finish(self) -> None:
        for name in ("rationale", "confidence"):
            path = self.paths.get(name)
            if path is None or name in self.found or self.first_row is None:
                continue
            self.issues.add(
                "review_field_missing",
                f"no review in column {self.column!r} has a {name} at {path.text!r}",
                f"correct reviews.{name} in the mapping"
                + _keys_hint(path.keys[-1], self.seen_keys.get(name, set())),
                self.first_row,
            )

    def _items(self, i: int, cell: Any) -> list[dict[str, Any]]:
        value = cell
        if isinstance(value, str) and value.strip():
            try:
                value = loads_json(value)  # strict: duplicate keys, NaN/Infinity, too deep
            except JSONRecordError as exc:
                self._add(
                    "reviews_not_list",
                    f"column {self.column!r} is not JSON ({exc.msg}), so it holds no list of"
                    " reviews",
                    LIST_FIX,
                    i,
                    key=f"json\x1f{self.column}",
                )
                return []
        if _blank(value):
            return []  # a case without reviews: ``no_reviews``
        if not isinstance(value, list):
            self._add(
                "reviews_not_list",
                f"column {self.column!r} holds a {type(value).__name__}, not a list of reviews",
                LIST_FIX,
                i,
            )
            return []
        items = [item for item in value if isinstance(item, dict)]
        others = sorted({type(item).__name__ for item in value if not isinstance(item, dict)})
        if others:
            self._add(
                "review_item_invalid",
                f"column {self.column!r} holds a review that is a {' or '.join(others)}, not an"
                " object",
                "make every item of the list an object holding the review's fields (reviews.label"
                f" reads {self.paths['label'].text})",
                i,
                key=f"item\x1f{self.column}",
            )
        return items

    def _lookup(self, item: dict[str, Any], name: str, keys: tuple[str, ...]) -> tuple[bool, Any]:
        found, value, where = lookup(item, keys)
        if found:
            self.found.add(name)
        elif isinstance(where, dict):
            self.seen_keys.setdefault(name, set()).update(map(str, where))
        return found, value

    def _required(self, i: int, item: dict[str, Any], name: str) -> str | None:
        path = self.paths[name]
        found, value = self._lookup(item, name, path.keys)
        if found and not _blank(value):
            return self._text(i, value, name)
        how = "has an empty" if found else "has no"
        hint = "" if found else _keys_hint(path.keys[-1], self.seen_keys.get(name, set()))
        self._add(
            "review_field_missing",
            f"a review in column {self.column!r} {how} {name} at {path.text!r}",
            f"give every review its {name} at {path.text}, or correct reviews.{name} in the"
            " mapping" + hint,
            i,
            key=f"{path.text}\x1f{how}",
        )
        return None

    def _optional(self, i: int, item: dict[str, Any], name: str) -> str | None:
        path = self.paths.get(name)
        if path is None:
            return None
        _, value = self._lookup(item, name, path.keys)
        return None if _blank(value) else self._text(i, value, name)

    def _text(self, i: int, value: Any, name: str) -> str | None:
        if isinstance(value, str):
            return value.strip() if name in ("reviewer", "label") else value
        if isinstance(value, bool | int | float):
            return canonical(value)
        path = self.paths[name]
        fix = f"give one {name} per review as text"
        if name == "rationale" and isinstance(value, list):
            fix += f", or read the list's items with a second [] (e.g. {path.text}[].text)"
        self._add(
            "value_not_text",
            f"{path.text!r} holds a {type(value).__name__}, not text",
            fix,
            i,
        )
        return None

    def _rationale(self, i: int, item: dict[str, Any]) -> str | None:
        path = self.paths.get("rationale")
        if path is None or path.each is None:
            return self._optional(i, item, "rationale")
        _, value = self._lookup(item, "rationale", path.keys)
        if _blank(value):
            return None
        if not isinstance(value, list):
            self._add(
                "value_not_text",
                f"{path.text!r}: {'.'.join(path.keys)!r} holds a {type(value).__name__}, not a"
                " list",
                "remove the second [] from reviews.rationale to read it as text",
                i,
            )
            return None
        texts = [self._each(i, element, path) for element in value]
        return "\n".join(t for t in texts if t) or None

    def _each(self, i: int, element: Any, path: ItemPath) -> str | None:
        each = path.each or ()
        found, value, where = lookup(element, each)
        if not found:
            keys = set(map(str, where)) if isinstance(where, dict) else set()
            self._add(
                "review_field_missing",
                f"an item of {'.'.join(path.keys)!r} in a review of column {self.column!r} has no"
                f" {'.'.join(each)!r} ({path.text!r})",
                "give every item that key, or correct reviews.rationale in the mapping"
                + _keys_hint(each[-1], keys),
                i,
                key=f"{path.text}\x1feach",
            )
            return None
        return None if _blank(value) else self._text(i, value, "rationale")
