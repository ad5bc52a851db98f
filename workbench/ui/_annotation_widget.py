"""The annotation queue widget: one blinded case at a time, keys first (an anywidget, inline:
nothing is fetched). Keys: 1-9 label, l/m/h confidence, e escalate, s submit; selecting text in a
case field cites it as a span. Python records the review
(:class:`workbench.annotation.Annotations`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import traitlets

from ..annotation import Annotations
from ..errors import WorkbenchError
from ._render import asset


class AnnotationQueue(anywidget.AnyWidget):
    """``AnnotationQueue(gold, reviewer)``: label ``reviewer``'s assigned cases, blinded."""

    _esm = asset("annotate.js")
    _css = asset("annotate.css")
    case = traitlets.Dict().tag(sync=True)
    reviewer = traitlets.Unicode().tag(sync=True)
    progress = traitlets.Unicode().tag(sync=True)
    label = traitlets.Unicode("").tag(sync=True)
    confidence = traitlets.Unicode("").tag(sync=True)
    escalate = traitlets.Bool(False).tag(sync=True)
    rationale = traitlets.Unicode("").tag(sync=True)
    spans = traitlets.List(traitlets.Dict()).tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)

    def __init__(self, gold: str | Path, reviewer: str, **kwargs: Any) -> None:
        super().__init__(reviewer=reviewer, **kwargs)
        self.queue = Annotations(gold)
        self.on_msg(self._on_message)
        self._load()

    def _load(self) -> None:
        assigned = sum(1 for a in self.queue.assignments() if a.reviewer == self.reviewer)
        done = sum(1 for r in self.queue.reviews() if r.review.reviewer == self.reviewer)
        case = self.queue.next_for(self.reviewer)
        self.case = case.model_dump(mode="json") if case else {}
        self.progress = f"{done} of {assigned} reviewed"
        self.label, self.confidence, self.escalate, self.rationale, self.spans = (
            "",
            "",
            False,
            "",
            [],
        )
        if case is None:
            self.status = "No case left to review."

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        if content.get("type") == "span":
            self.cite(str(content.get("field")), int(content["start"]), int(content["end"]))
        elif content.get("type") == "unspan":
            index = int(content.get("index", -1))
            self.spans = [s for i, s in enumerate(self.spans) if i != index]
        elif content.get("type") == "submit":
            form = content.get("form")
            if isinstance(form, dict):  # what the reviewer saw when submitting
                self.label = str(form.get("label") or "")
                self.confidence = str(form.get("confidence") or "")
                self.escalate = bool(form.get("escalate"))
                self.rationale = str(form.get("rationale") or "")
            self.submit()

    def cite(self, field: str, start: int, end: int) -> None:
        """Cite ``case[field][start:end]`` (what selecting the text does)."""
        text = str(self.case.get(field) or "")[start:end]
        if text.strip():
            self.spans = [*self.spans, {"field": field, "start": start, "end": end, "text": text}]

    def submit(self) -> bool:
        """Record the review of the current case and show the next one (False: refused, the
        reason in ``status``)."""
        if not self.case:
            return False
        if not self.label:
            self.status = "choose a label first (keys 1-9)"
            return False
        case_id = self.case["case_id"]
        try:
            self.queue.submit(
                self.reviewer,
                case_id,
                self.label,
                confidence=self.confidence or None,  # type: ignore[arg-type]
                rationale=self.rationale,
                spans=list(self.spans),
                escalate=self.escalate,
            )
        except WorkbenchError as exc:
            self.status = "; ".join(p.message for p in exc.problems) or exc.summary
            return False
        self._load()
        if self.case:
            self.status = f"recorded {case_id}"
        return True
