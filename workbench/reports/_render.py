"""Executed notebook -> a self-contained HTML report: code hidden, nothing loaded from the network.

The page is the report's own template (``templates/page.html.j2``, with the screen and print
stylesheet), not a notebook export: it holds each cell's displayed output in order, markdown
cells rendered, and no code, prompts or notebook chrome. Output HTML is what the workbench's
display functions produced (every data value escaped by the template engine or by pandas);
text outputs are escaped by ``templates/outputs.html.j2``. Scripts are removed and a
Content-Security-Policy forbids scripts and network requests, so even escaped-but-misrendered
text could not run.

A cell tagged ``report-skip`` is left out of the HTML (the notebook's own title, for one: the
report has its own first screen).
"""

from __future__ import annotations

import base64
import re
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


def render_html(notebook_path: str | Path, title: str = "Certification report") -> str:
    """Render an executed notebook to one static HTML page (see the module doc)."""
    import nbformat

    read: Any = nbformat.read  # untyped
    notebook = read(str(notebook_path), as_version=4)
    blocks = [
        block
        for cell in notebook.cells
        if SKIP_TAG not in cell.get("metadata", {}).get("tags", [])
        for block in _cell_blocks(cell)
    ]
    page = render("page.html.j2", csp=CSP, css=stylesheet(), title=title, blocks=blocks)
    return add_content_security_policy(strip_scripts(strip_external(page)))


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
