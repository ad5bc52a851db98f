"""The transition-review form: decide each changed critical verdict of a migration report.

``save`` appends a :class:`~workbench.review.TransitionReview` to the gold's append-only log,
as ``workbench review transition`` does. It shows held-out case ids: restricted review only.
"""

from __future__ import annotations

from pathlib import Path

from .._html import fragment
from ..errors import WorkbenchError
from ..review import DECISIONS, PendingTransition, TransitionReview, TransitionReviews
from ._review_widget import _default_reviewer

__all__ = ["TransitionReviewForm"]

_TEMPLATE = "transition.html.j2"


class TransitionReviewForm:
    """Decide each changed critical verdict of a locked migration report on the evidence
    (``pending`` holds the transitions, ``reviews`` the log)."""

    def __init__(
        self, report: str | Path, *, gold: str | Path | None = None, reviewer: str | None = None
    ) -> None:
        import ipywidgets as w

        from ..reports import pending_for_report

        self.report = Path(report)
        self.pending, log, _ = pending_for_report(report, gold)
        self.reviews = TransitionReviews(log)
        self.reviewer = w.Text(value=reviewer or _default_reviewer(), description="reviewer")
        self.case = w.Dropdown(
            options=[
                (f"{p.case_id} [{p.slice}] {p.old_verdict} -> {p.new_verdict}", i)
                for i, p in enumerate(self.pending)
            ],
            description="transition",
            layout=w.Layout(width="auto"),
        )
        self.detail = w.HTML()
        self.decision = w.ToggleButtons(options=list(DECISIONS), value=None, description="decision")
        self.evidence = w.Text(
            placeholder="evidence ids, e.g. pol-ref-02, pol-ref-03", description="evidence"
        )
        self.note = w.Textarea(placeholder="note: how the evidence settles it", rows=2)
        self.save_button = w.Button(description="save review", icon="save", button_style="primary")
        self.status = w.HTML()
        self.case.observe(lambda _c: self._render(), names="value")
        self.save_button.on_click(lambda _b: self.save())
        self.box = w.VBox(
            [
                self.case,
                self.detail,
                w.HBox([self.decision, self.reviewer]),
                w.HBox([self.evidence, self.note, self.save_button]),
                self.status,
            ]
        )
        self._render()

    @property
    def current(self) -> PendingTransition | None:
        return (
            self.pending[self.case.value] if self.pending and self.case.value is not None else None
        )

    def in_effect(self) -> dict[str, TransitionReview]:
        """The latest review per case of this pair of versions (what the gate will read)."""
        if not self.pending:
            return {}
        return self.reviews.in_effect(
            self.pending[0].old_fingerprint, self.pending[0].new_fingerprint
        )

    def _render(self) -> None:
        p = self.current
        if p is None:
            self.detail.value = str(fragment(_TEMPLATE, "nothing"))
            return
        done = self.in_effect().get(p.case_id)
        shown = done if done is not None and done.matches(p) else None
        self.detail.value = str(fragment(_TEMPLATE, "detail", p, shown))
        if not self.evidence.value and p.cited:
            self.evidence.value = ", ".join(p.cited)

    def save(self) -> TransitionReview | None:
        """Append the review of the current transition; problems go to ``status`` (nothing
        written)."""
        p = self.current
        if p is None:
            return None
        if self.decision.value is None:
            self.status.value = str(fragment(_TEMPLATE, "error", "choose accept or reject"))
            return None
        try:
            review = self.reviews.add(
                p,
                str(self.decision.value),
                self.evidence.value,
                reviewer=self.reviewer.value,
                note=self.note.value,
            )
        except WorkbenchError as exc:
            self.status.value = str(
                fragment(_TEMPLATE, "problems", [(x.code, x.message) for x in exc.problems])
            )
            return None
        self.status.value = str(fragment(_TEMPLATE, "saved", review.review_id, str(self.report)))
        self.note.value = ""
        self._render()
        return review

    def _ipython_display_(self) -> None:
        from .._html import show

        show(self.box)

    def __repr__(self) -> str:
        return f"TransitionReviewForm({self.report}, {len(self.pending)} transition(s))"
