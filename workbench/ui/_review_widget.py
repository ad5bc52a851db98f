"""The disagreement review widget: a pure-Python view model and its ipywidgets view.

:class:`ReviewModel` holds the filter state and the filtered row positions (a numpy array
computed from precomputed integer codes), so it can be tested and benchmarked without a
browser. :class:`ReviewWidget` draws it. Every piece of case text is HTML-escaped before it
reaches the HTML pane: responses under review may contain ``<script>`` or ``<img onerror>``.
"""

from __future__ import annotations

import getpass
import html
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import WorkbenchError
from ..review import (
    CAUSES,
    DISAGREEMENT_CLASSES,
    ERROR_CLASSES,
    ReviewNote,
    ReviewNotes,
    ReviewTable,
)

ALL_SLICES = "(all)"
"""Slice filter value: every slice."""
ALL_DISAGREEMENTS = "(all disagreements)"
"""Error-class filter value: false_pass, false_fail, disagreement and error."""
ALL_CASES = "(all cases)"
"""Error-class filter value: every case, aligned and missing included."""
ANY_TAG = "(any)"
"""Tag filter value: no tag filter."""
NO_CAUSE = ""
"""Cause dropdown value before a cause is chosen."""


class ReviewModel:
    """Filter state, filtered positions and the current case of a :class:`ReviewTable`.

    ``positions`` are the matching row positions (numpy int64, table order); ``index`` is
    the current one within them. Changing a filter resets to the first match.
    """

    def __init__(self, table: ReviewTable) -> None:
        self.table = table
        self.slice = ALL_SLICES
        self.error_class = ALL_DISAGREEMENTS
        self.tag = ANY_TAG
        self.positions: np.ndarray = np.arange(len(table), dtype=np.int64)
        self.index = 0
        self._masks: dict[tuple[str, str], np.ndarray] = {}
        self._apply()

    # options --------------------------------------------------------------------------
    def slice_options(self) -> list[tuple[str, str]]:
        """``(label, value)`` pairs for the slice dropdown, with case counts."""
        counts = self.table.counts("slice")
        return [(f"{ALL_SLICES} ({len(self.table)})", ALL_SLICES)] + [(f"{s} ({k})", s) for s, k in counts.items()]

    def class_options(self) -> list[tuple[str, str]]:
        """``(label, value)`` pairs for the error-class dropdown, with case counts."""
        counts = self.table.counts("error_class")
        n_dis = sum(counts.get(c, 0) for c in DISAGREEMENT_CLASSES)
        return (
            [(f"{ALL_DISAGREEMENTS} ({n_dis})", ALL_DISAGREEMENTS)]
            + [(f"{c} ({counts.get(c, 0)})", c) for c in ERROR_CLASSES]
            + [(f"{ALL_CASES} ({len(self.table)})", ALL_CASES)]
        )

    def tag_options(self) -> list[tuple[str, str]]:
        """``(label, value)`` pairs for the tag dropdown, with case counts."""
        return [(ANY_TAG, ANY_TAG)] + [(f"{t} ({len(rows)})", t) for t, rows in self.table.tag_rows.items()]

    # filtering ------------------------------------------------------------------------
    def set_filter(self, *, slice: str | None = None, error_class: str | None = None, tag: str | None = None) -> None:
        """Change any of the filters (``None`` leaves one unchanged) and go to the first match."""
        if slice is not None:
            if slice != ALL_SLICES and slice not in self.table.categories["slice"]:
                raise ValueError(f"unknown slice {slice!r}")
            self.slice = slice
        if error_class is not None:
            if error_class not in (ALL_DISAGREEMENTS, ALL_CASES, *ERROR_CLASSES):
                raise ValueError(f"unknown error class {error_class!r}")
            self.error_class = error_class
        if tag is not None:
            if tag != ANY_TAG and tag not in self.table.tag_rows:
                raise ValueError(f"unknown tag {tag!r}")
            self.tag = tag
        self._apply()

    def _mask(self, kind: str, value: str) -> np.ndarray:
        key = (kind, value)
        mask = self._masks.get(key)
        if mask is None:
            if kind == "tag":
                mask = self.table.tag_mask(value)
            elif value == ALL_DISAGREEMENTS:
                mask = self.table.value_mask("error_class", DISAGREEMENT_CLASSES)
            else:
                mask = self.table.value_mask(kind, value)
            self._masks[key] = mask
        return mask

    def _apply(self) -> None:
        masks = []
        if self.slice != ALL_SLICES:
            masks.append(self._mask("slice", self.slice))
        if self.error_class != ALL_CASES:
            masks.append(self._mask("error_class", self.error_class))
        if self.tag != ANY_TAG:
            masks.append(self._mask("tag", self.tag))
        if not masks:
            self.positions = np.arange(len(self.table), dtype=np.int64)
        else:
            combined = masks[0] if len(masks) == 1 else np.logical_and.reduce(masks)
            self.positions = np.flatnonzero(combined)
        self.index = 0

    # navigation -----------------------------------------------------------------------
    @property
    def n_matches(self) -> int:
        """How many cases match the filters."""
        return int(self.positions.size)

    @property
    def has_next(self) -> bool:
        return self.index + 1 < self.n_matches

    @property
    def has_previous(self) -> bool:
        return self.n_matches > 0 and self.index > 0

    def next(self) -> bool:
        """Go to the next match; return whether it moved."""
        if not self.has_next:
            return False
        self.index += 1
        return True

    def previous(self) -> bool:
        """Go to the previous match; return whether it moved."""
        if not self.has_previous:
            return False
        self.index -= 1
        return True

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

    def counts(self) -> dict[str, Any]:
        """Matches, total and the matches per error class."""
        return {"matches": self.n_matches, "total": len(self.table), "by_class": self.table.counts("error_class", self.positions)}


# rendering ------------------------------------------------------------------------------
def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _block(title: str, text: Any) -> str:
    if text is None or text == "":
        return ""
    return f"<h4>{_e(title)}</h4><div style='white-space:pre-wrap;border-left:3px solid #ccc;padding-left:6px'>{_e(text)}</div>"


def _request_text(request: Any) -> str:
    if isinstance(request, str):
        return request
    return json.dumps(request, indent=2, ensure_ascii=False, default=str)


def case_html(case: Mapping[str, Any] | None, note: ReviewNote | None = None) -> str:
    """The detail pane for one case. Every value is HTML-escaped.

    Human evidence comes before the judge's reason: read the rationale first, then ask
    whether the verdict follows the rubric.
    """
    if case is None:
        return "<p><b>No case matches these filters.</b></p>"
    tags = ", ".join(_e(t) for t in case.get("tags") or []) or "none"
    parts = [
        f"<h3>{_e(case['case_id'])}</h3>",
        f"<p>slice <b>{_e(case.get('slice'))}</b> (risk {_e(case.get('risk'))}) · partition {_e(case.get('partition'))} · tags {tags} · "
        f"class <b>{_e(case.get('error_class'))}</b> · attempts {_e(case.get('attempts'))}</p>",
        _block("Input", case.get("input")),
        _block("Response", case.get("response")),
        _block("Grading notes", case.get("grading_notes")),
        _block("Reference", case.get("reference")),
    ]
    contexts = case.get("contexts") or []
    if contexts:
        parts.append("<h4>Contexts</h4><ol>" + "".join(f"<li style='white-space:pre-wrap'>{_e(c)}</li>" for c in contexts) + "</ol>")
    reviews = case.get("reviews") or []
    parts.append(f"<h4>Human reviews ({len(reviews)})</h4><ul>")
    for r in reviews:
        evidence = ", ".join(_e(x) for x in r.get("evidence") or [])
        parts.append(
            f"<li><b>{_e(r.get('reviewer'))}</b>: {_e(r.get('label'))} (confidence {_e(r.get('confidence') or 'n/a')})"
            + (" · escalated" if r.get("escalate") else "")
            + (f"<br><i>{_e(r['rationale'])}</i>" if r.get("rationale") else "")
            + (f"<br>evidence: {evidence}" if evidence else "")
            + "</li>"
        )
    parts.append("</ul>")
    adj = case.get("adjudication")
    if adj:
        parts.append(f"<p><b>Adjudicated label: {_e(adj.get('label'))}</b> by {_e(adj.get('adjudicator') or 'n/a')}" + (f": {_e(adj['reason'])}" if adj.get("reason") else "") + "</p>")
    else:
        parts.append(f"<p><b>Human label: {_e(case.get('human_label'))}</b></p>")
    outcome = case.get("outcome")
    if outcome == "verdict":
        parts.append(f"<h4>Judge</h4><p>verdict <b>{_e(case.get('judge_label'))}</b>" + (f": {_e(case['judge_reason'])}" if case.get("judge_reason") else "") + "</p>")
    elif outcome == "error":
        parts.append(f"<h4>Judge</h4><p>evaluator error <b>{_e(case.get('error_kind'))}</b>" + (f": {_e(case['error_message'])}" if case.get("error_message") else "") + "</p>")
    else:
        parts.append("<h4>Judge</h4><p>no result (missing): the evaluation is incomplete</p>")
    request = case.get("rendered_request")
    if request is not None:
        parts.append(f"<details><summary>Evaluator-visible request</summary><pre style='white-space:pre-wrap'>{_e(_request_text(request))}</pre></details>")
    elif case.get("rendered_request_ref"):
        parts.append(f"<p>Evaluator-visible request stored at {_e(case['rendered_request_ref'])}</p>")
    if note is not None:
        parts.append(f"<p>Latest note: <b>{_e(note.cause)}</b> by {_e(note.reviewer)} at {_e(note.created_at.isoformat())}" + (f"<br>{_e(note.note)}" if note.note else "") + "</p>")
    return "".join(parts)


def _default_reviewer() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name in some containers
        return "reviewer"


class ReviewWidget:
    """Browse disagreements by slice, error class and tag; record the first cause of each.

    Widgets are attributes (``slice_filter``, ``class_filter``, ``tag_filter``,
    ``prev_button``, ``next_button``, ``position``, ``detail``, ``cause``, ``note``,
    ``save_button``, ``status``); ``box`` is the layout and ``model`` the view model.
    ``judge_fingerprint`` defaults to the table's.
    """

    def __init__(
        self,
        table: ReviewTable,
        notes: ReviewNotes | None = None,
        reviewer: str | None = None,
        judge_fingerprint: str | None = None,
    ) -> None:
        import ipywidgets as w

        self.model = ReviewModel(table)
        self.notes = notes
        self.reviewer = reviewer or _default_reviewer()
        self.judge_fingerprint = judge_fingerprint or table.judge_fingerprint
        self._latest: dict[str, ReviewNote] = {}
        for earlier in notes.all() if notes else []:  # later notes supersede, for this judge only
            if earlier.judge_fingerprint == self.judge_fingerprint:
                self._latest[earlier.case_id] = earlier
        m = self.model
        self.slice_filter = w.Dropdown(options=m.slice_options(), value=m.slice, description="slice")
        self.class_filter = w.Dropdown(options=m.class_options(), value=m.error_class, description="class")
        self.tag_filter = w.Dropdown(options=m.tag_options(), value=m.tag, description="tag")
        self.prev_button = w.Button(description="previous", icon="arrow-left")
        self.next_button = w.Button(description="next", icon="arrow-right")
        self.position = w.Label()
        self.detail = w.HTML()
        self.cause = w.Dropdown(options=[("(choose a cause)", NO_CAUSE)] + [(c, c) for c in CAUSES], value=NO_CAUSE, description="cause")
        self.note = w.Textarea(placeholder="evidence for the cause", layout=w.Layout(width="60%"))
        self.save_button = w.Button(description="save note", icon="save")
        self.status = w.Label()
        for dropdown in (self.slice_filter, self.class_filter, self.tag_filter):
            dropdown.observe(self._on_filter, names="value")
        self.prev_button.on_click(lambda _b: self._move(m.previous))
        self.next_button.on_click(lambda _b: self._move(m.next))
        self.save_button.on_click(lambda _b: self.save())
        self.box = w.VBox(
            [
                w.HBox([self.slice_filter, self.class_filter, self.tag_filter]),
                w.HBox([self.prev_button, self.position, self.next_button]),
                self.detail,
                w.HBox([self.cause, self.note, self.save_button]),
                self.status,
            ]
        )
        self._render()

    def _on_filter(self, _change: Any) -> None:
        self.model.set_filter(slice=self.slice_filter.value, error_class=self.class_filter.value, tag=self.tag_filter.value)
        self.status.value = ""
        self._render()

    def _move(self, step: Any) -> None:
        if step():
            self.status.value = ""
            self._render()

    def _render(self) -> None:
        m = self.model
        case = m.current_case()
        self.position.value = m.position_text()
        self.prev_button.disabled = not m.has_previous
        self.next_button.disabled = not m.has_next
        self.save_button.disabled = case is None or self.notes is None
        self.detail.value = case_html(case, self._latest.get(case["case_id"]) if case else None)

    def save(self) -> ReviewNote | None:
        """Append a note for the current case with the chosen cause (what "save note" does)."""
        case = self.model.current_case()
        if case is None or self.notes is None:
            self.status.value = "nothing to save: no current case" if case is None else "no notes file: pass notes=ReviewNotes(path)"
            return None
        if self.cause.value == NO_CAUSE:
            self.status.value = "choose a cause first"
            return None
        try:
            note = self.notes.add(case["case_id"], self.cause.value, self.note.value, reviewer=self.reviewer, judge_fingerprint=self.judge_fingerprint, error_class=case.get("error_class"))
        except WorkbenchError as exc:
            self.status.value = "; ".join(p.message for p in exc.problems) or exc.summary
            return None
        self._latest[note.case_id] = note
        self.note.value = ""
        self.status.value = f"saved: {note.case_id} -> {note.cause}"
        self._render()
        return note

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.box)
