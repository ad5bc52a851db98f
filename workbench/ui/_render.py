"""HTML of the review widget's case pane. Every value from a case is HTML-escaped.

Responses under review may contain ``<script>`` or ``<img onerror>``: nothing from a case
reaches the page unescaped. "show more" is a ``<details>`` element (no script): its summary
holds an escaped preview, the body the escaped full text.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any

from .._io import sha256_json
from ..review import ReviewNote

PREVIEW_CHARS = 220
"""Texts longer than this (or with more than :data:`PREVIEW_LINES` lines) collapse."""
PREVIEW_LINES = 3

KEY_LEGEND = (
    "keys (click the widget first): j / ↓ next · k / ↑ previous · 1–8 cause · s save · Esc leaves a"
    " text box"
)
"""The one-line keyboard legend shown under the note form."""

PASS_LABELS = frozenset({"pass", "yes", "correct", "acceptable"})
FAIL_LABELS = frozenset({"fail", "no", "incorrect", "unacceptable"})

STYLE = """
.wb-review { outline: none; border: 1px solid var(--jp-border-color2, #ddd); border-radius: 4px; padding: 4px; }
.wb-review:focus-within { border-color: var(--jp-brand-color1, #1976d2); box-shadow: 0 0 0 1px var(--jp-brand-color1, #1976d2); }
.wb-review .widget-dropdown > select, .wb-review .widget-text input { font-size: 12px; }
.wb-case { font-size: 12.5px; line-height: 1.35; }
.wb-case h3 { margin: 0 0 2px 0; font-size: 14px; }
.wb-case p.wb-meta { margin: 0 0 4px 0; color: var(--jp-ui-font-color1, #333); }
.wb-case .wb-k { font-weight: 600; margin-right: 4px; }
.wb-case .wb-field { margin: 2px 0; }
.wb-case .wb-text { white-space: pre-wrap; overflow-wrap: anywhere; }
.wb-case details.wb-more { display: inline; }
.wb-case details.wb-more > summary { list-style: none; cursor: pointer; display: inline; }
.wb-case details.wb-more > summary::-webkit-details-marker { display: none; }
.wb-case details.wb-more[open] .wb-preview { display: none; }
.wb-case .wb-toggle { color: var(--jp-brand-color1, #1976d2); font-size: 11.5px; white-space: nowrap; }
.wb-case details.wb-more[open] .wb-toggle-more { display: none; }
.wb-case details.wb-more:not([open]) .wb-toggle-less { display: none; }
.wb-cols { display: flex; gap: 6px; margin: 4px 0; align-items: stretch; }
.wb-col { flex: 1 1 0; min-width: 0; border: 1px solid var(--jp-border-color2, #ddd); border-left-width: 4px; border-radius: 3px; padding: 3px 6px; }
.wb-col h4 { margin: 0 0 3px 0; font-size: 12.5px; }
.wb-col.wb-pass { border-left-color: #1a7f37; }
.wb-col.wb-fail { border-left-color: #cf222e; }
.wb-col.wb-other { border-left-color: #9a6700; }
.wb-col ul { margin: 0; padding-left: 16px; }
.wb-col li { margin: 0 0 3px 0; }
.wb-badge { display: inline-block; padding: 0 5px; border-radius: 8px; font-size: 11.5px; font-weight: 600; color: #24292f; background: #eaeef2; }
.wb-badge.wb-pass { color: #0f5323; background: #dafbe1; }
.wb-badge.wb-fail { color: #82071e; background: #ffebe9; }
.wb-badge.wb-other { color: #4d2d00; background: #fff8c5; }
.wb-cls { font-weight: 600; }
.wb-dim { color: var(--jp-ui-font-color2, #666); }
.wb-cls-false_pass { color: #cf222e; } .wb-cls-false_fail { color: #bc4c00; }
.wb-case details.wb-req { margin-top: 2px; }
.wb-case details.wb-req > summary { cursor: pointer; color: var(--jp-brand-color1, #1976d2); }
.wb-req-body { max-height: 260px; overflow: auto; border: 1px solid var(--jp-border-color2, #ddd); padding: 3px 6px; margin-top: 2px; }
.wb-req-role { font-weight: 700; text-transform: uppercase; font-size: 11px; margin-top: 4px; color: var(--jp-ui-font-color2, #555); }
.wb-req-meta { color: var(--jp-ui-font-color2, #555); font-size: 11.5px; }
.wb-req-body pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; font-size: 11.5px; }
.wb-sha { font-family: var(--jp-code-font-family, monospace); font-size: 11px; overflow-wrap: anywhere; }
.wb-legend { font-size: 11.5px; color: var(--jp-ui-font-color2, #555); white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.wb-review .wb-status { font-size: 12px; }
.wb-review .widget-checkbox { width: auto; }
"""
"""CSS of the widget (injected into the page by :class:`ReviewSidebar`, with its own)."""


def e(value: Any) -> str:
    """HTML-escape ``str(value)`` (quotes included)."""
    return html.escape(str(value), quote=True)


def label_class(label: Any) -> str:
    """``wb-pass``, ``wb-fail`` or ``wb-other`` for colouring a label."""
    text = str(label).lower()
    if text in PASS_LABELS:
        return "wb-pass"
    if text in FAIL_LABELS:
        return "wb-fail"
    return "wb-other"


def badge(label: Any) -> str:
    return f"<span class='wb-badge {label_class(label)}'>{e(label)}</span>"


def collapsible(text: Any, *, chars: int = PREVIEW_CHARS, lines: int = PREVIEW_LINES) -> str:
    """Escaped text; long text shows a preview and a "show more" toggle (no script)."""
    if text is None or text == "":
        return ""
    value = str(text)
    split = value.split("\n")
    if len(value) <= chars and len(split) <= lines:
        return f"<span class='wb-text'>{e(value)}</span>"
    preview = "\n".join(split[:lines])
    preview = preview[:chars].rstrip() + "…"
    return (
        f"<details class='wb-more'><summary><span class='wb-text wb-preview'>{e(preview)}</span>"
        " <span class='wb-toggle wb-toggle-more'>show more</span><span class='wb-toggle"
        " wb-toggle-less'>show less</span></summary><span class='wb-text"
        f" wb-full'>{e(value)}</span></details>"
    )


def _field(name: str, text: Any, **kw: Any) -> str:
    body = collapsible(text, **kw)
    return f"<div class='wb-field'><span class='wb-k'>{e(name)}</span>{body}</div>" if body else ""


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


def _block(title: str, text: str) -> str:
    return f"<div class='wb-req-role'>{e(title)}</div><pre>{e(text)}</pre>"


def pretty_request(request: Any) -> str:
    """The request as a reader sees it: each message's role, then its content with real line
    breaks; for other shapes (e.g. a function judge's arguments) each field, then its text."""
    if isinstance(request, str):
        return f"<pre>{e(request)}</pre>"
    if isinstance(request, Mapping):
        parts: list[str] = []
        messages = request.get("messages")
        scalars = {
            k: v
            for k, v in request.items()
            if k not in ("messages", "follow_up_requests") and not isinstance(v, Mapping | list)
        }
        if scalars:
            parts.append(
                "<div class='wb-req-meta'>"
                + " · ".join(f"{e(k)} {e(v)}" for k, v in scalars.items())
                + "</div>"
            )
        if isinstance(messages, list):
            for message in messages:
                if isinstance(message, Mapping):
                    parts.append(
                        _block(
                            str(message.get("role", "message")),
                            _content_text(message.get("content")),
                        )
                    )
                else:
                    parts.append(_block("message", _content_text(message)))
        for key, value in request.items():
            if key in scalars or key in ("messages", "follow_up_requests"):
                continue
            if isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values()):
                parts.append(f"<div class='wb-req-role'>{e(key)}</div>")
                parts.extend(_block(str(k), v) for k, v in value.items())
            else:
                parts.append(_block(str(key), _content_text(value)))
        for k, follow in enumerate(request.get("follow_up_requests") or [], start=1):
            parts.append(
                f"<div class='wb-req-role'>follow-up request {k}</div>" + pretty_request(follow)
            )
        return "".join(parts)
    if isinstance(request, list):
        return "".join(pretty_request(item) for item in request)
    return f"<pre>{e(json.dumps(request, ensure_ascii=False, default=str))}</pre>"


def request_html(case: Mapping[str, Any]) -> str:
    """Two one-click panels: the pretty-printed request, and its raw JSON with the sha256."""
    request = case.get("rendered_request")
    if request is None:
        ref = case.get("rendered_request_ref")
        return (
            "<div class='wb-field'>evaluator-visible request stored at <span"
            f" class='wb-sha'>{e(ref)}</span></div>"
            if ref
            else ""
        )
    sha = case.get("rendered_request_sha256") or sha256_json(request)
    raw = json.dumps(request, indent=2, ensure_ascii=False, default=str)
    return (
        "<details class='wb-req wb-req-pretty'><summary>evaluator-visible request</summary><div"
        f" class='wb-req-body'>{pretty_request(request)}</div></details><details class='wb-req"
        f" wb-req-raw'><summary>raw JSON · sha256 {e(sha[:12])}…</summary><div"
        " class='wb-req-body'><div class='wb-sha'>sha256"
        f" {e(sha)}</div><pre>{e(raw)}</pre></div></details>"
    )


# -- the case pane -------------------------------------------------------------------------
def _reviews_html(case: Mapping[str, Any]) -> str:
    items = []
    seen: dict[str, str] = {}
    for r in case.get("reviews") or []:
        if not isinstance(r, Mapping):
            continue
        evidence = ", ".join(e(x) for x in r.get("evidence") or [])
        bits = [
            f"<b>{e(r.get('reviewer'))}</b> {badge(r.get('label'))}",
            f"<span class='wb-dim'>{e(r.get('confidence') or 'n/a')}</span>",
        ]
        if r.get("escalate"):
            bits.append("escalated")
        line = " ".join(bits)
        rationale = r.get("rationale")
        if rationale and rationale in seen:  # reviewers often share a rationale: say so, once
            line += f" <span class='wb-dim'>same rationale as {e(seen[rationale])}</span>"
        elif rationale:
            seen[str(rationale)] = str(r.get("reviewer"))
            line += " " + collapsible(rationale, chars=110, lines=2)
        if evidence:
            line += f" <span class='wb-dim'>[{evidence}]</span>"
        items.append(f"<li>{line}</li>")
    return "<ul>" + "".join(items) + "</ul>" if items else "<div>no reviews</div>"


def _human_column(case: Mapping[str, Any]) -> str:
    adj = case.get("adjudication")
    label = adj.get("label") if isinstance(adj, Mapping) else case.get("human_label")
    reviews = case.get("reviews") or []
    disagree = " · reviewers disagree" if case.get("reviewers_disagree") else ""
    parts = [
        f"<section class='wb-col wb-human {label_class(label)}'><h4>Humans {badge(label)} <span"
        f" class='wb-dim'>({len(reviews)}"
        f" review{'s' if len(reviews) != 1 else ''}{disagree})</span></h4>"
    ]
    parts.append(_reviews_html(case))
    if isinstance(adj, Mapping):
        reason = collapsible(adj.get("reason"), chars=100, lines=2)
        parts.append(
            f"<div class='wb-field'><span class='wb-k'>Adjudicated</span>{badge(adj.get('label'))}"
            f" by {e(adj.get('adjudicator') or 'n/a')}{': ' + reason if reason else ''}</div>"
        )
    else:
        parts.append(
            "<div class='wb-field'><span class='wb-k'>Human"
            f" label</span>{badge(case.get('human_label'))} (no adjudication)</div>"
        )
    parts.append("</section>")
    return "".join(parts)


def _judge_column(case: Mapping[str, Any]) -> str:
    outcome = case.get("outcome")
    if outcome == "verdict":
        label = case.get("judge_label")
        head = f"<h4>Judge {badge(label)}</h4>"
        body = (
            _field("Reason", case.get("judge_reason"), chars=200, lines=3)
            or "<div>no reason given</div>"
        )
        css = label_class(label)
    elif outcome == "error":
        head = (
            "<h4>Judge <span class='wb-badge wb-other'>error</span>"
            f" {e(case.get('error_kind'))}</h4>"
        )
        body = _field("Error", case.get("error_message"), chars=200, lines=3)
        css = "wb-other"
    else:
        head = "<h4>Judge <span class='wb-badge wb-other'>no result</span></h4>"
        body = "<div>no result (missing): the evaluation is incomplete</div>"
        css = "wb-other"
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
    return (
        "<section class='wb-col wb-judge"
        f" {css}'>{head}{body}{evidence}{request_html(case)}</section>"
    )


def case_html(case: Mapping[str, Any] | None, note: ReviewNote | None = None) -> str:
    """The case pane: header, input and response, then humans and judge side by side.

    Every value is HTML-escaped. The human evidence is on the left: read the rationale first,
    then ask whether the judge's verdict follows the rubric.
    """
    if case is None:
        return (
            "<div class='wb-case'><p class='wb-meta'><b>No case matches these filters.</b> Widen a"
            " filter: every count in the dropdowns says how many cases it would show.</p></div>"
        )
    tags = ", ".join(e(t) for t in case.get("tags") or []) or "none"
    cls = case.get("error_class")
    meta = (
        f"slice <b>{e(case.get('slice'))}</b> (risk {e(case.get('risk'))}) · "
        f"class <span class='wb-cls wb-cls-{e(cls)}'>{e(cls)}</span> · tags {tags} · "
        f"{e(case.get('partition'))} · attempts {e(case.get('attempts'))}"
    )
    if note is not None:
        meta += (
            f" · latest note: <b>{e(note.cause)}</b> by {e(note.reviewer)}"
            f" {e(note.created_at.strftime('%Y-%m-%d %H:%M'))}"
        )
    return (
        f"<div class='wb-case'><h3>{e(case['case_id'])}</h3><p class='wb-meta'>{meta}</p>"
        + _field("Input", case.get("input"), chars=200, lines=2)
        + _field("Response", case.get("response"), chars=260, lines=3)
        + "<div class='wb-cols'>"
        + _human_column(case)
        + _judge_column(case)
        + "</div></div>"
    )


def cause_label(index: int, cause: str, count: int) -> str:
    """``"1 gold_label_defect (2)"``: the digit key (1-8, one per cause), the cause and its cases."""
    return f"{index} {cause} ({count})"
