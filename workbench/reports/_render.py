"""The one report renderer: sections -> a self-contained HTML page, nothing loaded from the network.

Every report page (a certification, a locked ranking or noise run) is :func:`render_document`:
the report's own template (``templates/page.html.j2``, with the screen and print stylesheet)
filled with *sections*. A feature contributes a :class:`Section` (data and the block of
``templates/sections.html.j2`` that draws it: an outcome banner, facts, a table, a list) or
HTML one of the workbench's display functions rendered. A certification's sections are the
displayed outputs of its executed notebook (:func:`render_html`), in order, markdown cells
rendered, with no code, prompts or notebook chrome; its migration and authority parts are
:class:`Section` objects the notebook displays (:func:`section_html`). Output HTML is what the
workbench's display functions produced (every data value escaped by the template engine or by
pandas); text outputs are escaped by ``templates/outputs.html.j2``. Scripts are removed and a
Content-Security-Policy forbids scripts and network requests, so even escaped-but-misrendered
text could not run.

A cell tagged ``report-skip`` is left out of the HTML (the notebook's own title, for one: the
report has its own first screen).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._html import fragment, safe
from ._templates import CSP, render, stylesheet

EXTERNAL = re.compile(
    r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|@import\s+url\(\s*["']?(?:https?:)?//|url\(\s*["']?(?:https?:)?//""",
    re.IGNORECASE,
)
"""Anything in an HTML document that would make a browser fetch from a network host."""
SKIP_TAG = "report-skip"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_ANCHOR = re.compile(r'<a class="anchor-link"[^>]*>.*?</a>', re.DOTALL)


def _macro(name: str, *args: Any) -> str:
    return str(fragment("outputs.html.j2", name, *args))


def _markdown(text: str) -> str:
    from nbconvert.filters import markdown2html_mistune

    return _macro("md", safe(_ANCHOR.sub("", markdown2html_mistune(text))))


@dataclass(frozen=True)
class Section:
    """One part of a report: the data a feature contributes and the block that draws it (a
    macro of ``templates/sections.html.j2``: ``outcome``, ``facts``, ``table``, ``items``)."""

    block: str
    data: dict[str, Any]


def table_section(
    title: str,
    head: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    intro: str = "",
    note: str = "",
    empty: str = "None.",
) -> Section:
    """A titled table (``empty`` is shown instead of a table without rows)."""
    data = {"title": title, "head": list(head), "rows": [list(r) for r in rows]}
    return Section("table", {**data, "intro": intro, "note": note, "empty": empty})


def section_html(section: Section) -> str:
    """One section as escaped HTML (a notebook displays it; the report page holds it)."""
    return str(fragment("sections.html.j2", section.block, section.data))


def render_document(title: str, parts: Sequence[Section | str]) -> str:
    """The one report page: ``parts`` (sections, or HTML a display function or a template
    rendered) in order; no script, a Content-Security-Policy, nothing from the network."""
    blocks = [section_html(p) if isinstance(p, Section) else p for p in parts]
    page = render("page.html.j2", csp=CSP, css=stylesheet(), title=title, blocks=blocks)
    return add_content_security_policy(strip_scripts(strip_external(page)))


def render_html(
    notebook_path: str | Path,
    title: str = "Certification report",
    first: Sequence[Section] = (),
) -> str:
    """A certification's page: ``first`` (sections certify puts above everything, e.g. the
    advisory notice of a custom notebook), then the executed notebook's outputs as its
    sections (module doc)."""
    import nbformat

    read: Any = nbformat.read  # untyped
    notebook = read(str(notebook_path), as_version=4)
    blocks = [
        block
        for cell in notebook.cells
        if SKIP_TAG not in cell.get("metadata", {}).get("tags", [])
        for block in _cell_blocks(cell)
    ]
    return render_document(title, [*first, *blocks])


def _cell_blocks(cell: Any) -> list[str]:
    if cell.cell_type == "markdown":
        return [_markdown(cell.source)] if cell.source.strip() else []
    if cell.cell_type != "code":
        return []
    return [block for output in cell.get("outputs", []) if (block := _output(output))]


def _output(output: Any) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        text = _ANSI.sub("", "".join(output.get("text", "")))
        if not text.strip():
            return ""
        css = "wb-stderr" if output.get("name") == "stderr" else "wb-stdout"
        return _macro("pre", text, css)
    if kind == "error":
        text = f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
        return _macro("pre", _ANSI.sub("", text), "wb-error")
    data = output.get("data", {})
    if "text/html" in data:
        return (
            "".join(data["text/html"])
            if isinstance(data["text/html"], list)
            else str(data["text/html"])
        )
    if "image/svg+xml" in data:
        svg = (
            "".join(data["image/svg+xml"])
            if isinstance(data["image/svg+xml"], list)
            else str(data["image/svg+xml"])
        )
        encoded = base64.b64encode(svg.encode("utf-8")).decode("ascii")
        return _macro("image", "image/svg+xml", encoded)
    if "image/png" in data:
        return _macro("image", "image/png", str(data["image/png"]).strip())
    if "text/markdown" in data:
        text = (
            "".join(data["text/markdown"])
            if isinstance(data["text/markdown"], list)
            else str(data["text/markdown"])
        )
        return _markdown(text)
    if "text/plain" in data:
        text = (
            "".join(data["text/plain"])
            if isinstance(data["text/plain"], list)
            else str(data["text/plain"])
        )
        return _macro("pre", _ANSI.sub("", text))
    return ""


def not_run_html() -> str:
    """report.html when the certification notebook did not run (gate.json says why)."""
    return _macro("not_run")


def strip_scripts(html: str) -> str:
    """Remove every script element: a locked report runs no code."""
    return re.sub(r"<script\b[^>]*>.*?</script\s*>", "", html, flags=re.IGNORECASE | re.DOTALL)


def add_content_security_policy(html: str) -> str:
    """Make sure a Content-Security-Policy meta tag is the first element of ``<head>``."""
    meta = _macro("csp_meta", CSP)
    if meta in html:
        return html
    return re.sub(r"<head[^>]*>", lambda m: m.group(0) + meta, html, count=1, flags=re.IGNORECASE)


def strip_external(html: str) -> str:
    """Remove any <script>/<link> that still points at a network host (belt and braces)."""
    html = re.sub(
        r"<script[^>]*\bsrc\s*=\s*[\"']?(?:https?:)?//[^>]*>\s*</script>",
        "",
        html,
        flags=re.IGNORECASE,
    )
    html = re.sub(
        r"<script[^>]*\bsrc\s*=\s*([\"'])\1[^>]*>\s*</script>", "", html, flags=re.IGNORECASE
    )  # blanked CDN URLs
    html = re.sub(
        r"<link[^>]*\bhref\s*=\s*[\"']?(?:https?:)?//[^>]*>", "", html, flags=re.IGNORECASE
    )
    return html


def external_references(html: str) -> list[str]:
    """Every place in ``html`` that would load something from a network host."""
    return [m.group(0) for m in EXTERNAL.finditer(html)]
