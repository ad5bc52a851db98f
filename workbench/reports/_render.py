"""The one report renderer (:func:`render_document`): :class:`Section` objects and rendered HTML
in a self-contained page, scripts removed, a Content-Security-Policy, nothing from the network.
A certification's page is its executed notebook's outputs (:func:`render_html`). Templates are
``workbench/reports/templates/``, autoescaped; ``|safe`` only wraps HTML rendered here."""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from .._html import fragment, render, safe

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:"

EXTERNAL = re.compile(
    r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|@import\s+url\(\s*["']?(?:https?:)?//|url\(\s*["']?(?:https?:)?//""",
    re.IGNORECASE,
)
SKIP_TAG = "report-skip"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_ANCHOR = re.compile(r'<a class="anchor-link"[^>]*>.*?</a>', re.DOTALL)


@cache
def _css(name: str) -> str:
    return files("workbench.reports").joinpath("templates", name).read_text(encoding="utf-8")


def stylesheet() -> str:
    """The report page's CSS: page rules (screen and print) and the fragments' rules."""
    return _css("page.css") + "\n" + _css("fragments.css")


def wrap(body: str) -> str:
    """Wrap rendered HTML so it is styled on its own (in a notebook) as in the report."""
    return str(fragment("fragments.html.j2", "frag", _css("fragments.css"), safe(body)))


def _macro(name: str, *args: Any) -> str:
    return str(fragment("outputs.html.j2", name, *args))


def _markdown(text: str) -> str:
    from nbconvert.filters import markdown2html_mistune

    return _macro("md", safe(_ANCHOR.sub("", markdown2html_mistune(text))))


@dataclass(frozen=True)
class Section:
    """One part of a report: data and the macro of ``templates/sections.html.j2`` that draws it."""

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
    """The one report page: ``parts`` (sections or rendered HTML) in order, no script, a CSP."""
    blocks = [section_html(p) if isinstance(p, Section) else p for p in parts]
    page = render("page.html.j2", csp=CSP, css=stylesheet(), title=title, blocks=blocks)
    return add_content_security_policy(strip_scripts(strip_external(page)))


def warm_render() -> None:
    """Import and compile what :func:`render_html` uses (certify calls it while the kernel's seed
    imports what the notebook needs, rather than after the notebook)."""
    _markdown("")
    render_document("", [])


def render_html(
    notebook_path: str | Path, title: str = "Certification report", first: Sequence[Section] = ()
) -> str:
    """A certification's page: ``first`` (an advisory notice), then the notebook's outputs."""
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
    data = {
        mime: "".join(value) if isinstance(value, list) else str(value)
        for mime, value in output.get("data", {}).items()
    }
    if "text/html" in data:
        return data["text/html"]
    if "image/svg+xml" in data:
        encoded = base64.b64encode(data["image/svg+xml"].encode("utf-8")).decode("ascii")
        return _macro("image", "image/svg+xml", encoded)
    if "image/png" in data:
        return _macro("image", "image/png", data["image/png"].strip())
    if "text/markdown" in data:
        return _markdown(data["text/markdown"])
    if "text/plain" in data:
        return _macro("pre", _ANSI.sub("", data["text/plain"]))
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


_EXTERNAL_TAGS = (
    re.compile(r"<script[^>]*\bsrc\s*=\s*[\"']?(?:https?:)?//[^>]*>\s*</script>", re.IGNORECASE),
    re.compile(r"<script[^>]*\bsrc\s*=\s*([\"'])\1[^>]*>\s*</script>", re.IGNORECASE),  # blanked
    re.compile(r"<link[^>]*\bhref\s*=\s*[\"']?(?:https?:)?//[^>]*>", re.IGNORECASE),
)


def strip_external(html: str) -> str:
    """Remove any <script>/<link> that still points at a network host (or a blanked CDN URL)."""
    for pattern in _EXTERNAL_TAGS:
        html = pattern.sub("", html)
    return html


def external_references(html: str) -> list[str]:
    """Every place in ``html`` that would load something from a network host."""
    return [m.group(0) for m in EXTERNAL.finditer(html)]
