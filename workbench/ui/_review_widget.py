"""The disagreement review widget: ipywidgets controls around :class:`ReviewModel`.

Filters on two rows, then the sidebar (per-slice chart, case list, keys: :class:`ReviewSidebar`)
beside the case pane (navigation, the case, humans and judge side by side, the note form).
"""

from __future__ import annotations

import contextlib
import getpass
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import WorkbenchError
from ..review import (
    CAUSES,
    GoldCorrectionDraft,
    GoldCorrectionDrafts,
    ReviewNote,
    ReviewNotes,
    ReviewTable,
    drafts_path,
)
from ._model import ReviewModel, count_label
from ._render import case_html, draft_note_html, legend_html

NO_CAUSE = ""  # the cause dropdown's value before a cause is chosen
GOLD_DEFECT = "gold_label_defect"
NEXT_KEYS = frozenset({"j", "ArrowDown", "ArrowRight"})
PREVIOUS_KEYS = frozenset({"k", "ArrowUp", "ArrowLeft"})
_TOGGLES = (
    ("humans_disagree", "humans disagreed"),
    ("critical_only", "critical only"),
    ("unreviewed_only", "unreviewed only"),
)

__all__ = ["NO_CAUSE", "ReviewWidget"]


def _problem_text(exc: WorkbenchError) -> str:
    return "; ".join(p.message for p in exc.problems) or exc.summary


def _default_reviewer() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name in some containers
        return "reviewer"


class ReviewWidget:
    """Browse disagreements with conditional filter counts, search and keys; note first causes.

    Widgets are attributes (``box`` is the layout, ``model`` the view model).
    ``judge_fingerprint`` defaults to the table's; ``drafts`` (gold-correction drafts) to
    ``<notes stem>.gold_drafts.jsonl`` beside the notes file.
    """

    def __init__(
        self,
        table: ReviewTable,
        notes: ReviewNotes | None = None,
        reviewer: str | None = None,
        judge_fingerprint: str | None = None,
        drafts: GoldCorrectionDrafts | str | Path | None = None,
    ) -> None:
        import ipywidgets as w

        self.table = table
        self.notes = notes
        self.reviewer = reviewer or _default_reviewer()
        self.judge_fingerprint = judge_fingerprint or table.judge_fingerprint
        if isinstance(drafts, str | Path):
            drafts = GoldCorrectionDrafts(drafts)
        self.drafts: GoldCorrectionDrafts | None = (
            drafts
            if drafts is not None
            else (GoldCorrectionDrafts(drafts_path(notes.path)) if notes else None)
        )
        self._latest: dict[str, ReviewNote] = {}
        for earlier in notes.all() if notes else []:  # later notes supersede, for this judge only
            if earlier.judge_fingerprint == self.judge_fingerprint:
                self._latest[earlier.case_id] = earlier
        self.model = ReviewModel(table, reviewed=self._latest)
        self._quiet = False
        self._build_filters(w)
        self._build_case_pane(w)
        self._build_note_form(w)
        self._connect()
        self.box = self._layout(w)
        self.box.add_class("wb-review")
        self._refresh_filters()
        self._refresh_causes()
        self._render()

    # -- building ---------------------------------------------------------------------------
    def _build_filters(self, w: Any) -> None:
        narrow = w.Layout(width="auto", flex="1 1 0", min_width="0")
        self.slice_filter, self.class_filter, self.tag_filter = (
            w.Dropdown(description=name, layout=narrow, style={"description_width": width})
            for name, width in (("slice", "32px"), ("class", "34px"), ("tag", "24px"))
        )
        self.search = w.Text(
            description="search",
            placeholder="input, response, reasons",
            continuous_update=True,
            layout=narrow,
            style={"description_width": "44px"},
        )
        toggle = w.Layout(width="auto")
        self.disagree_toggle, self.critical_toggle, self.unreviewed_toggle = (
            w.Checkbox(description=text, indent=False, layout=toggle) for _, text in _TOGGLES
        )

    def _build_case_pane(self, w: Any) -> None:
        from ._sidebar import ReviewSidebar

        self.sidebar = ReviewSidebar(layout=w.Layout(width="100%"))
        small = w.Layout(width="auto")
        self.prev_button = w.Button(
            description="previous", icon="arrow-left", tooltip="previous case (k)", layout=small
        )
        self.next_button = w.Button(
            description="next", icon="arrow-right", tooltip="next case (j)", layout=small
        )
        self.position = w.Label()
        self.progress = w.Label(layout=w.Layout(margin="0 0 0 12px"))
        self.detail = w.HTML(layout=w.Layout(width="100%"))

    def _build_note_form(self, w: Any) -> None:
        small = w.Layout(width="auto")
        self.cause = w.Dropdown(
            description="cause",
            layout=w.Layout(width="270px"),
            style={"description_width": "initial"},
        )
        self.note = w.Textarea(
            placeholder="note: the evidence for the cause",
            rows=2,
            layout=w.Layout(flex="1 1 auto", width="auto", height="44px"),
        )
        self.save_button = w.Button(
            description="save note",
            icon="save",
            tooltip="append a note (s)",
            button_style="primary",
            layout=small,
        )
        self.draft_label = w.Dropdown(
            options=list(self.table.labels) or ["pass", "fail"],
            description="proposed label",
            layout=w.Layout(width="220px"),
            style={"description_width": "88px"},
        )
        self.draft_button = w.Button(
            description="draft a superseding record",
            icon="file-text",
            tooltip="write a proposed gold correction for an adjudicator (never applied)",
            layout=small,
        )
        self.draft_box = w.HBox(
            [self.draft_label, self.draft_button, w.HTML(draft_note_html())],
            layout=w.Layout(display="none", align_items="center"),
        )
        self.legend = w.HTML(
            legend_html(),
            layout=w.Layout(flex="1 1 auto", min_width="0", overflow="hidden"),
        )
        self.status = w.Label(layout=w.Layout(flex="0 1 auto", min_width="0"))
        self.status.add_class("wb-status")
        # the status wraps below the key legend when both do not fit on one line (issue 29)
        self.foot = w.HBox(
            [self.legend, self.status],
            layout=w.Layout(justify_content="space-between", flex_flow="row wrap"),
        )
        self.foot.add_class("wb-foot")

    def _connect(self) -> None:
        m = self.model
        for widget in (
            self.slice_filter,
            self.class_filter,
            self.tag_filter,
            self.search,
            self.disagree_toggle,
            self.critical_toggle,
            self.unreviewed_toggle,
        ):
            widget.observe(self._on_filter, names="value")
        self.cause.observe(self._on_cause, names="value")
        self.prev_button.on_click(lambda _b: self._move(m.previous))
        self.next_button.on_click(lambda _b: self._move(m.next))
        self.save_button.on_click(lambda _b: self.save())
        self.draft_button.on_click(lambda _b: self.draft_correction())
        self.sidebar.on_msg(self._on_message)

    def _layout(self, w: Any) -> Any:
        side = w.VBox(
            [self.sidebar], layout=w.Layout(width="250px", flex="0 0 250px", margin="0 6px 0 0")
        )
        main = w.VBox(
            [
                w.HBox(
                    [self.prev_button, self.position, self.next_button, self.progress],
                    layout=w.Layout(align_items="center"),
                ),
                self.detail,
                w.HBox(
                    [self.cause, self.note, self.save_button], layout=w.Layout(align_items="center")
                ),
                self.draft_box,
                self.foot,
            ],
            layout=w.Layout(flex="1 1 auto", min_width="0"),
        )
        return w.VBox(
            [
                w.HBox(
                    [self.slice_filter, self.class_filter, self.tag_filter, self.search],
                    layout=w.Layout(width="100%"),
                ),
                w.HBox([self.disagree_toggle, self.critical_toggle, self.unreviewed_toggle]),
                w.HBox([side, main], layout=w.Layout(width="100%")),
            ],
            layout=w.Layout(width="100%"),
        )

    # -- filters ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def _quietly(self) -> Iterator[None]:
        """Set widget values without their observers acting on them."""
        previous, self._quiet = self._quiet, True
        try:
            yield
        finally:
            self._quiet = previous

    def _on_filter(self, _change: Any) -> None:
        if not self._quiet:
            self.set_filter(
                slice=self.slice_filter.value,
                error_class=self.class_filter.value,
                tag=self.tag_filter.value,
                humans_disagree=self.disagree_toggle.value,
                critical_only=self.critical_toggle.value,
                unreviewed_only=self.unreviewed_toggle.value,
                search=self.search.value,
            )

    def _refresh_filters(self) -> None:
        m = self.model
        with self._quietly():
            for dropdown, options, value in (
                (self.slice_filter, m.slice_options(), m.slice),
                (self.class_filter, m.class_options(), m.error_class),
                (self.tag_filter, m.tag_options(), m.tag),
            ):
                if list(dropdown.options) != options:
                    dropdown.options = options
                if dropdown.value != value:
                    dropdown.value = value
            counts = m.toggle_counts()
            toggles = (self.disagree_toggle, self.critical_toggle, self.unreviewed_toggle)
            for toggle, (name, text) in zip(toggles, _TOGGLES, strict=True):
                toggle.description = count_label(text, counts[name])
                if toggle.value != getattr(m, name):
                    toggle.value = getattr(m, name)
            if self.search.value != m.search:
                self.search.value = m.search
        self.sidebar.chart = m.chart_data()
        self.sidebar.selected = {"slice": m.slice, "error_class": m.error_class}

    def set_filter(self, **filters: Any) -> None:
        """Change filters as a user would (names as :meth:`ReviewModel.set_filter`)."""
        self.model.set_filter(**filters)
        self._refiltered()

    def click_bar(self, slice: str, error_class: str) -> None:
        """What a click on the chart's bar does: filter to that slice and class (again: clear)."""
        self.model.select_bar(slice, error_class)
        self._refiltered()

    def _refiltered(self) -> None:
        self.status.value = ""
        self._refresh_filters()
        self._render()

    # -- causes -----------------------------------------------------------------------------
    def cause_counts(self) -> dict[str, int]:
        """Cases per cause over the latest note of each case, for this judge."""
        counts = dict.fromkeys(CAUSES, 0)
        for note in self._latest.values():
            counts[note.cause] += 1
        return counts

    def _refresh_causes(self) -> None:
        counts = self.cause_counts()
        options = [("(choose a cause: 1–8)", NO_CAUSE)] + [
            (f"{i} {c} ({counts[c]})", c) for i, c in enumerate(CAUSES, start=1)
        ]
        with self._quietly():
            value = self.cause.value
            if list(self.cause.options) != options:
                self.cause.options = options
                self.cause.value = value if value in CAUSES else NO_CAUSE

    def _sync_draft_box(self) -> None:
        self.draft_box.layout.display = (
            "flex"
            if self.cause.value == GOLD_DEFECT and self.model.current_case() is not None
            else "none"
        )

    def _on_cause(self, _change: Any) -> None:
        self._sync_draft_box()
        if not self._quiet:
            self.status.value = ""

    # -- rendering --------------------------------------------------------------------------
    def _move(self, step: Any) -> bool:
        if step():
            self.status.value = ""
            self._render()
            return True
        return False

    def go_to(self, index: int) -> None:
        """Show the ``index``-th match (what a click in the case list does)."""
        self.model.go_to(index)
        self.status.value = ""
        self._render()

    def _render(self) -> None:
        m = self.model
        case = m.current_case()
        latest = self._latest.get(case["case_id"]) if case else None
        self.position.value = m.position_text()
        self.progress.value = m.progress_text()
        self.prev_button.disabled = not m.has_previous
        self.next_button.disabled = not m.has_next
        self.save_button.disabled = case is None or self.notes is None
        self.draft_button.disabled = case is None or self.notes is None or self.drafts is None
        self.detail.value = case_html(case, latest)
        with self._quietly():  # the form starts from the latest note of the case
            self.cause.value = latest.cause if latest else NO_CAUSE
            self.note.value = latest.note if latest else ""
            if case is not None:
                self.draft_label.value = self._default_proposal(case)
        self._sync_draft_box()
        s = self.sidebar
        s.rows = m.window()
        s.current = m.index
        s.list_title = f"Cases: {m.position_text()}" if m.n_matches else "Cases: none match"

    def _default_proposal(self, case: dict[str, Any]) -> str:
        """The judge's label when it differs from the gold label, else another label."""
        options = list(self.draft_label.options)
        gold = case.get("human_label")
        judge = case.get("judge_label")
        if judge in options and judge != gold:
            return str(judge)
        others = [o for o in options if o != gold]
        return str(others[0] if others else options[0])

    # -- keys -------------------------------------------------------------------------------
    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        kind = content.get("type")
        if kind == "key":
            self.key(str(content.get("key", "")))
        elif kind == "bar":
            self.click_bar(str(content.get("slice")), str(content.get("error_class")))
        elif kind == "goto":
            with contextlib.suppress(IndexError, TypeError, ValueError):
                self.go_to(int(content.get("index")))  # type: ignore[arg-type]

    def key(self, key: str) -> bool:
        """Do what ``key`` means (j/k or arrows, 1-8, s); return whether it meant anything."""
        m = self.model
        if key in NEXT_KEYS:
            if not self._move(m.next):
                self.status.value = "last case of this filter"
            return True
        if key in PREVIOUS_KEYS:
            if not self._move(m.previous):
                self.status.value = "first case of this filter"
            return True
        if len(key) == 1 and key.isdigit() and 1 <= int(key) <= len(CAUSES):
            if m.current_case() is None:
                return True
            self.cause.value = CAUSES[int(key) - 1]
            return True
        if key == "s":
            self.save()
            return True
        return False

    # -- notes and drafts -------------------------------------------------------------------
    def save(self) -> ReviewNote | None:
        """Append a note for the current case with the chosen cause (what "save note" does)."""
        case = self._current("save")
        if case is None or self.notes is None:
            return None
        if self.cause.value == NO_CAUSE:
            self.status.value = "choose a cause first (keys 1–8)"
            return None
        try:
            note = self.notes.add(
                case["case_id"],
                self.cause.value,
                self.note.value,
                reviewer=self.reviewer,
                judge_fingerprint=self.judge_fingerprint,
                error_class=case.get("error_class"),
            )
        except WorkbenchError as exc:
            self.status.value = _problem_text(exc)
            return None
        self._latest[note.case_id] = note
        self.model.mark_reviewed(note.case_id)
        self._refresh_causes()
        self._refresh_filters()
        self._render()
        self.status.value = f"saved: {note.case_id} -> {note.cause}"
        return note

    def draft_correction(self) -> GoldCorrectionDraft | None:
        """Save the note if it changed, then append a proposed superseding gold record.

        Only for cause ``gold_label_defect``; the note's text is the reason. The draft goes
        to :attr:`drafts` for an adjudicator and is never applied to the gold set.
        """
        case = self._current("draft")
        if case is None or self.drafts is None:
            return None
        if self.cause.value != GOLD_DEFECT:
            self.status.value = f"a superseding record needs cause {GOLD_DEFECT}"
            return None
        if not self.note.value.strip():
            self.status.value = "write the reason in the note first: the adjudicator needs it"
            return None
        latest = self._latest.get(case["case_id"])
        note = (
            latest
            if latest and latest.cause == GOLD_DEFECT and latest.note == self.note.value
            else self.save()
        )
        if note is None:
            return None
        try:
            draft = self.drafts.add(
                note,
                proposed_label=str(self.draft_label.value),
                current_label=case.get("human_label"),
                gold_record=case.get("gold_record"),
                labels=self.table.labels or None,
                dataset_sha256=self.table.dataset_sha256,
            )
        except WorkbenchError as exc:
            self.status.value = _problem_text(exc)
            return None
        self.status.value = (
            f"drafted {draft.supersedes} -> {draft.proposed_label} for an adjudicator in"
            f" {self.drafts.path.name}"
        )
        return draft

    def _current(self, what: str) -> dict[str, Any] | None:
        """The current case, or None with the reason in ``status`` (no case, no notes file)."""
        case = self.model.current_case()
        if case is None or self.notes is None:
            missing = "no notes file: pass notes=ReviewNotes(path)"
            self.status.value = f"nothing to {what}: no current case" if case is None else missing
            return None
        return case

    def export_notes(self, path: str | Path, *, latest_only: bool = False) -> Path:
        """Export this judge's notes to ``.csv`` or ``.parquet`` (see
        :meth:`ReviewNotes.export`)."""
        if self.notes is None:
            raise ValueError("no notes file: pass notes=ReviewNotes(path)")
        return self.notes.export(path, self.judge_fingerprint, latest_only=latest_only)

    def _ipython_display_(self) -> None:
        from .._html import show

        show(self.box)
