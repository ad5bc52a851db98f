"""HTML of the review widget's case pane, from ``templates/case.html.j2`` (autoescaped: nothing
from a case reaches the page unescaped; "show more" is a ``<details>`` element, no script).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._html import fragment, safe
from .._io import sha256_json
from ..review import ReviewNote

if TYPE_CHECKING:
    from markupsafe import Markup

PREVIEW_CHARS = 220
PREVIEW_LINES = 3

KEY_LEGEND = (
    "keys (click the widget first): j / ↓ next · k / ↑ previous · 1–8 cause · s save · Esc leaves a"
    " text box"
)

PASS_LABELS = frozenset({"pass", "yes", "correct", "acceptable"})
FAIL_LABELS = frozenset({"fail", "no", "incorrect", "unacceptable"})


def asset(name: str) -> str:
    """A file of ``workbench/ui/templates`` (the widget's CSS and browser module), as text."""
    return (Path(__file__).resolve().parent / "templates" / name).read_text(encoding="utf-8")


STYLE = asset("widget.css")


def _macro(name: str, *args: Any, **kwargs: Any) -> Markup:
    return fragment("case.html.j2", name, *args, **kwargs)


def label_class(label: Any) -> str:
    """``wb-pass``, ``wb-fail`` or ``wb-other`` for colouring a label."""
    text = str(label).lower()
    if text in PASS_LABELS:
        return "wb-pass"
    if text in FAIL_LABELS:
        return "wb-fail"
    return "wb-other"


def collapsible(text: Any, *, chars: int = PREVIEW_CHARS, lines: int = PREVIEW_LINES) -> Markup:
    """Escaped text; long text shows a preview and a "show more" toggle (no script)."""
    if text is None or text == "":
        return safe("")
    value = str(text)
    split = value.split("\n")
    if len(value) <= chars and len(split) <= lines:
        return _macro("text", value)
    preview = "\n".join(split[:lines])
    preview = preview[:chars].rstrip() + "…"
    return _macro("more", preview, value)


def _field(name: str, text: Any, **kw: Any) -> Markup:
    body = collapsible(text, **kw)
    return _macro("field", name, body) if body else safe("")


# -- the evaluator-visible request ---------------------------------------------------------
def _content_text(content: Any) -> str:
    """A message's content: a string, or the text of OpenAI-style content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                parts.append(json.dumps(part, indent=2, ensure_ascii=False, default=str))
        return "\n".join(parts)
    return json.dumps(content, indent=2, ensure_ascii=False, default=str)


def pretty_request(request: Any) -> str:
    """The request as a reader sees it: each message's role, then its content with real line
    breaks; for other shapes (e.g. a function judge's arguments) each field, then its text."""
    return str(_pretty(request))


def _pretty(request: Any) -> Markup:
    if isinstance(request, str):
        return _macro("pre", request)
    if isinstance(request, Mapping):
        return _pretty_mapping(request)
    if isinstance(request, list):
        return safe("").join(_pretty(item) for item in request)
    return _macro("pre", json.dumps(request, ensure_ascii=False, default=str))


_NESTED = ("messages", "follow_up_requests")


def _pretty_mapping(request: Mapping[str, Any]) -> Markup:
    """Scalars first, then each message, then each other field, then each follow-up request."""
    parts: list[Markup] = []
    scalars = {
        k: v for k, v in request.items() if k not in _NESTED and not isinstance(v, Mapping | list)
    }
    if scalars:
        parts.append(_macro("meta", list(scalars.items())))
    messages = request.get("messages")
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, Mapping):
            role = str(message.get("role", "message"))
            parts.append(_macro("block", role, _content_text(message.get("content"))))
        else:
            parts.append(_macro("block", "message", _content_text(message)))
    for key, value in request.items():
        if key in scalars or key in _NESTED:
            continue
        if isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values()):
            parts.append(_macro("role", key))
            parts.extend(_macro("block", str(k), v) for k, v in value.items())
        else:
            parts.append(_macro("block", str(key), _content_text(value)))
    for k, follow in enumerate(request.get("follow_up_requests") or [], start=1):
        parts.append(_macro("follow_up", k, _pretty(follow)))
    return safe("").join(parts)


def request_html(case: Mapping[str, Any]) -> Markup:
    """Two one-click panels: the pretty-printed request, and its raw JSON with the sha256."""
    request = case.get("rendered_request")
    if request is None:
        ref = case.get("rendered_request_ref")
        return _macro("request_ref", ref) if ref else safe("")
    sha = str(case.get("rendered_request_sha256") or sha256_json(request))
    raw = json.dumps(request, indent=2, ensure_ascii=False, default=str)
    return _macro("request", _pretty(request), sha, raw)


# -- the case pane -------------------------------------------------------------------------
def _reviews_html(case: Mapping[str, Any]) -> Markup:
    items = []
    seen: dict[str, str] = {}
    for r in case.get("reviews") or []:
        if not isinstance(r, Mapping):
            continue
        rationale = r.get("rationale")
        same_as = None
        shown = None
        if rationale and rationale in seen:  # reviewers often share a rationale: say so, once
            same_as = seen[rationale]
        elif rationale:
            seen[str(rationale)] = str(r.get("reviewer"))
            shown = collapsible(rationale, chars=110, lines=2)
        items.append(
            {
                "reviewer": r.get("reviewer"),
                "label": r.get("label"),
                "label_css": label_class(r.get("label")),
                "confidence": r.get("confidence") or "n/a",
                "escalate": bool(r.get("escalate")),
                "same_as": same_as,
                "rationale": shown,
                "evidence": list(r.get("evidence") or []),
            }
        )
    return _macro("reviews", items)


def _human_column(case: Mapping[str, Any]) -> Markup:
    adj = case.get("adjudication")
    label = adj.get("label") if isinstance(adj, Mapping) else case.get("human_label")
    reviews = case.get("reviews") or []
    adjudication = None
    reason = safe("")
    if isinstance(adj, Mapping):
        reason = collapsible(adj.get("reason"), chars=100, lines=2)
        adjudication = {
            "label": adj.get("label"),
            "css": label_class(adj.get("label")),
            "adjudicator": adj.get("adjudicator") or "n/a",
        }
    return _macro(
        "human",
        label,
        label_class(label),
        len(reviews),
        bool(case.get("reviewers_disagree")),
        _reviews_html(case),
        adjudication,
        reason,
    )


def _judge_column(case: Mapping[str, Any]) -> Markup:
    outcome, label = case.get("outcome"), case.get("judge_label")
    css = label_class(label) if outcome == "verdict" else "wb-other"
    shown = {"verdict": ("Reason", "judge_reason"), "error": ("Error", "error_message")}
    name, key = shown.get(str(outcome), ("", ""))
    body = _field(name, case.get(key), chars=200, lines=3) if name else safe("")
    evidence = _field("Grading notes", case.get("grading_notes"), chars=140, lines=2) + _field(
        "Reference", case.get("reference"), chars=140, lines=2
    )
    contexts = case.get("contexts") or []
    if contexts:
        evidence += _field(
            f"Contexts ({len(contexts)})",
            "\n---\n".join(str(c) for c in contexts),
            chars=120,
            lines=2,
        )
    cut = [r for r in case.get("evidence_seen") or () if _get(r, "status") == "truncated"]
    evidence += _macro(
        "evidence_cut",
        [{k: _get(r, k) for k in ("field", "chars_sent", "chars_in_case")} for r in cut],
    )
    answer = _macro("raw_answer", case.get("raw_response"), case.get("raw_response_source"))
    return _macro(
        "judge",
        outcome,
        label,
        css,
        case.get("error_kind"),
        body,
        evidence,
        request_html(case) + answer,
    )


def _get(row: Any, key: str) -> Any:
    """``key`` of an ``evidence_seen`` row, a record or its JSON."""
    return row.get(key) if isinstance(row, Mapping) else getattr(row, key, None)


_META = ("case_id", "slice", "risk", "error_class", "partition", "attempts")


def case_html(case: Mapping[str, Any] | None, note: ReviewNote | None = None) -> str:
    """The case pane: header, input and response, then humans and judge side by side."""
    if case is None:
        return str(_macro("empty"))
    values = {k: case.get(k) for k in _META}
    values["case_id"] = case["case_id"]
    latest = None
    if note is not None:
        latest = {
            "cause": note.cause,
            "reviewer": note.reviewer,
            "when": note.created_at.strftime("%Y-%m-%d %H:%M"),
        }
    fields = _field("Input", case.get("input"), chars=200, lines=2) + _field(
        "Response", case.get("response"), chars=260, lines=3
    )
    columns = _human_column(case) + _judge_column(case)
    tags = [str(t) for t in case.get("tags") or []]
    return str(_macro("case", values, tags, latest, fields, columns))


def legend_html(text: str = KEY_LEGEND) -> str:
    return str(_macro("legend", text))


def draft_note_html() -> str:
    return str(_macro("draft_note"))
