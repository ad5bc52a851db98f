"""The review widget's view model: filter state, conditional counts, progress, navigation.

Pure Python over numpy masks (testable without a browser): every filter is one boolean mask, the
matches are their conjunction, and the count beside an option is the number of matches if that
option were chosen with every other filter unchanged.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

import numpy as np

from ..review import DISAGREEMENT_CLASSES, ERROR_CLASSES, ReviewTable

ALL_SLICES = "(all)"
ALL_DISAGREEMENTS = "(all disagreements)"
"""Error-class filter value: false_pass, false_fail, disagreement and error."""
ALL_CASES = "(all cases)"
ANY_TAG = "(any)"
CHART_CLASSES: tuple[str, ...] = ("false_pass", "false_fail")


def count_label(name: str, count: int) -> str:
    """``"name (3)"``, or ``"name (0, no cases)"`` so an empty option says so."""
    return f"{name} ({count})" if count else f"{name} (0, no cases)"


class ReviewModel:
    """Filters, matches and the current case over a :class:`ReviewTable`: ``positions`` are the
    matching rows, ``index`` the current one among them (a filter change goes to the first),
    ``reviewed`` the rows with a review note."""

    def __init__(self, table: ReviewTable, reviewed: Iterable[str] = ()) -> None:
        self.table = table
        n = len(table)
        self.slice = ALL_SLICES
        self.error_class = ALL_DISAGREEMENTS
        self.tag = ANY_TAG
        self.humans_disagree = False
        self.critical_only = False
        self.unreviewed_only = False
        self.search = ""
        self._ids: np.ndarray = table.frame["case_id"].astype(str).to_numpy(dtype=object)
        self._row_of: dict[str, int] = {cid: i for i, cid in enumerate(self._ids.tolist())}
        self.reviewed: np.ndarray = np.zeros(n, dtype=bool)
        for case_id in reviewed:
            row = self._row_of.get(case_id)
            if row is not None:
                self.reviewed[row] = True
        self._cache: dict[tuple[str, str], np.ndarray] = {}
        self._search_key: tuple[str, ...] = ()
        self._search_mask: np.ndarray | None = None
        self._active: dict[str, np.ndarray] = {}
        self.positions: np.ndarray = np.arange(n, dtype=np.int64)
        self.index = 0
        self._apply()

    # -- masks ---------------------------------------------------------------------------
    def _cached(self, kind: str, value: str) -> np.ndarray:
        key = (kind, value)
        mask = self._cache.get(key)
        if mask is None:
            t = self.table
            if kind == "tag":
                mask = t.tag_mask(value)
            elif kind == "error_class" and value == ALL_DISAGREEMENTS:
                mask = t.value_mask("error_class", DISAGREEMENT_CLASSES)
            elif kind == "critical":
                mask = t.value_mask("risk", "critical")
            else:
                mask = t.value_mask(kind, value)
            self._cache[key] = mask
        return mask

    def _searched(self, terms: list[str]) -> np.ndarray:
        """The search mask, narrowing the previous one when the new terms extend it."""
        key = tuple(t.casefold() for t in terms)
        if key == self._search_key and self._search_mask is not None:
            return self._search_mask
        previous = self._search_key
        narrows = (
            self._search_mask is not None
            and previous
            and len(key) >= len(previous)
            and all(k.startswith(p) for p, k in zip(previous, key, strict=False))
        )
        mask = self.table.search_mask(list(key), within=self._search_mask if narrows else None)
        self._search_key, self._search_mask = key, mask
        return mask

    def _filter_masks(self) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        if self.slice != ALL_SLICES:
            out["slice"] = self._cached("slice", self.slice)
        if self.error_class != ALL_CASES:
            out["error_class"] = self._cached("error_class", self.error_class)
        if self.tag != ANY_TAG:
            out["tag"] = self._cached("tag", self.tag)
        if self.humans_disagree:
            out["humans_disagree"] = self.table.reviewers_disagree
        if self.critical_only:
            out["critical_only"] = self._cached("critical", "critical")
        if self.unreviewed_only:
            out["unreviewed_only"] = ~self.reviewed
        terms = self.search.split()
        if terms:
            out["search"] = self._searched(terms)
        return out

    def _others(self, *excluded: str) -> np.ndarray | None:
        """The conjunction of the active filters except ``excluded`` (None: no filter)."""
        masks = [m for name, m in self._active.items() if name not in excluded]
        if not masks:
            return None
        if len(masks) == 1:
            return masks[0]
        combined: np.ndarray = np.logical_and.reduce(masks)
        return combined

    def _apply(self, *, keep: bool = False) -> None:
        old = self.current_position if keep else None
        self._active = self._filter_masks()
        combined = self._others()
        self.positions = (
            np.arange(len(self.table), dtype=np.int64)
            if combined is None
            else np.flatnonzero(combined)
        )
        self.index = 0
        if old is not None and self.positions.size:
            # stay on the case, or on the one that took its place (the next match)
            self.index = min(
                int(np.searchsorted(self.positions, old)), int(self.positions.size) - 1
            )

    # -- filters -------------------------------------------------------------------------
    def set_filter(
        self,
        *,
        slice: str | None = None,
        error_class: str | None = None,
        tag: str | None = None,
        humans_disagree: bool | None = None,
        critical_only: bool | None = None,
        unreviewed_only: bool | None = None,
        search: str | None = None,
    ) -> None:
        """Change any filters (``None`` leaves one unchanged) and go to the first match."""
        choices: tuple[tuple[str, str, str | None, Collection[str]], ...] = (
            ("slice", "slice", slice, (ALL_SLICES, *self.table.categories["slice"])),
            (
                "error_class",
                "error class",
                error_class,
                (ALL_DISAGREEMENTS, ALL_CASES, *ERROR_CLASSES),
            ),
            ("tag", "tag", tag, (ANY_TAG, *self.table.tag_rows)),
        )
        for name, what, value, known in choices:  # each checked, then set, in this order
            if value is not None:
                if value not in known:
                    raise ValueError(f"unknown {what} {value!r}")
                setattr(self, name, value)
        toggles = (
            ("humans_disagree", humans_disagree),
            ("critical_only", critical_only),
            ("unreviewed_only", unreviewed_only),
        )
        for name, on in toggles:
            if on is not None:
                setattr(self, name, bool(on))
        if search is not None:
            self.search = str(search)
        self._apply()

    def select_bar(self, slice: str, error_class: str) -> None:
        """A click on the chart's bar: filter to that slice and class (a second click clears
        both)."""
        if (self.slice, self.error_class) == (slice, error_class):
            self.set_filter(slice=ALL_SLICES, error_class=ALL_DISAGREEMENTS)
        else:
            self.set_filter(slice=slice, error_class=error_class)

    # -- conditional counts ----------------------------------------------------------------
    def _bincount(self, column: str, base: np.ndarray | None) -> dict[str, int]:
        codes = self.table.codes[column] if base is None else self.table.codes[column][base]
        counts = np.bincount(codes[codes >= 0], minlength=len(self.table.categories[column]))
        return {name: int(k) for name, k in zip(self.table.categories[column], counts, strict=True)}

    def slice_counts(self) -> dict[str, int]:
        """Matches per slice, with every other filter as it is."""
        return self._bincount("slice", self._others("slice"))

    def class_counts(self) -> dict[str, int]:
        """Matches per error class (and the two groups), with every other filter as it is."""
        by = self._bincount("error_class", self._others("error_class"))
        out = {ALL_DISAGREEMENTS: sum(by.get(c, 0) for c in DISAGREEMENT_CLASSES)}
        out.update({c: by.get(c, 0) for c in ERROR_CLASSES})
        out[ALL_CASES] = sum(by.values())
        return out

    def tag_counts(self) -> dict[str, int]:
        """Matches per tag (and for any tag), with every other filter as it is."""
        base = self._others("tag")
        out = {ANY_TAG: len(self.table) if base is None else int(np.count_nonzero(base))}
        for tag, rows in self.table.tag_rows.items():
            out[tag] = int(rows.size) if base is None else int(np.count_nonzero(base[rows]))
        return out

    def toggle_counts(self) -> dict[str, int]:
        """Matches if each toggle were on, with every other filter as it is."""
        masks = {
            "humans_disagree": self.table.reviewers_disagree,
            "critical_only": self._cached("critical", "critical"),
            "unreviewed_only": ~self.reviewed,
        }
        out = {}
        for name, mask in masks.items():
            base = self._others(name)
            out[name] = int(np.count_nonzero(mask if base is None else mask & base))
        return out

    def slice_options(self) -> list[tuple[str, str]]:
        """``(label, value)`` pairs for the slice dropdown (likewise for class and tag)."""
        counts = self.slice_counts()
        return [(count_label(ALL_SLICES, sum(counts.values())), ALL_SLICES)] + [
            (count_label(s, k), s) for s, k in counts.items()
        ]

    def class_options(self) -> list[tuple[str, str]]:
        return [(count_label(c, k), c) for c, k in self.class_counts().items()]

    def tag_options(self) -> list[tuple[str, str]]:
        return [(count_label(t, k), t) for t, k in self.tag_counts().items()]

    def chart_data(self) -> list[dict[str, Any]]:
        """False passes and false fails per slice, under every filter but slice and class."""
        base = self._others("slice", "error_class")
        per_class = {}
        for cls in CHART_CLASSES:
            mask = self._cached("error_class", cls)
            per_class[cls] = self._bincount("slice", mask if base is None else mask & base)
        return [
            {"slice": s, **{cls: per_class[cls][s] for cls in CHART_CLASSES}}
            for s in self.table.categories["slice"]
        ]

    # -- progress and navigation -------------------------------------------------------------
    @property
    def n_matches(self) -> int:
        return int(self.positions.size)

    def progress_text(self) -> str:
        """``"12 of 25 reviewed"`` over the matches."""
        return f"{np.count_nonzero(self.reviewed[self.positions])} of {self.n_matches} reviewed"

    def mark_reviewed(self, case_id: str) -> None:
        """Record that ``case_id`` has a note; with "unreviewed only" on, it leaves the matches
        and the next unreviewed case becomes current."""
        row = self._row_of.get(case_id)
        if row is None or self.reviewed[row]:
            return
        self.reviewed[row] = True
        if self.unreviewed_only:
            self._apply(keep=True)

    @property
    def has_next(self) -> bool:
        return self.index + 1 < self.n_matches

    @property
    def has_previous(self) -> bool:
        return self.n_matches > 0 and self.index > 0

    def next(self) -> bool:
        """Go to the next match; return whether it moved."""
        moved = self.has_next
        self.index += int(moved)
        return moved

    def previous(self) -> bool:
        """Go to the previous match; return whether it moved."""
        moved = self.has_previous
        self.index -= int(moved)
        return moved

    def go_to(self, index: int) -> None:
        """Jump to the ``index``-th match (0-based)."""
        if not 0 <= index < self.n_matches:
            raise IndexError(f"match {index} out of range (0..{self.n_matches - 1})")
        self.index = index

    @property
    def current_position(self) -> int | None:
        """Row position of the current case in the table, or None when nothing matches."""
        return int(self.positions[self.index]) if self.n_matches else None

    def current_case(self) -> dict[str, Any] | None:
        """The current case as a dict of the table's columns, or None when nothing matches."""
        pos = self.current_position
        return None if pos is None else self.table.row(pos)

    def position_text(self) -> str:
        """``"3 of 17"``, or ``"0 of 0"`` when nothing matches."""
        return f"{self.index + 1 if self.n_matches else 0} of {self.n_matches}"

    def window(self, size: int = 40) -> list[dict[str, Any]]:
        """Up to ``size`` matches around the current one, for the case list."""
        n = self.n_matches
        start = max(0, min(self.index - size // 2, n - size))
        stop = min(n, start + size)
        rows = self.positions[start:stop]
        codes = self.table.codes["error_class"][rows]
        names = self.table.categories["error_class"]
        return [
            {
                "index": start + k,
                "case_id": str(self._ids[r]),
                "error_class": names[c] if c >= 0 else "",
                "reviewed": bool(self.reviewed[r]),
            }
            for k, (r, c) in enumerate(zip(rows.tolist(), codes.tolist(), strict=True))
        ]
