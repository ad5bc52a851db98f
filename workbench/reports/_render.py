"""Executed notebook -> a self-contained HTML report: code hidden, nothing loaded from the network."""

from __future__ import annotations

import re
from pathlib import Path

EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|@import\s+url\(\s*["']?(?:https?:)?//|url\(\s*["']?(?:https?:)?//""", re.IGNORECASE)
"""Anything in an HTML document that would make a browser fetch from a network host."""


def render_html(notebook_path: str | Path) -> str:
    """Render an executed notebook to HTML without code, prompts, CDN scripts or MathJax."""
    import nbformat
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        template_name="lab",
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        exclude_anchor_links=True,
    )
    # nbconvert's template links require.js, MathJax and widget renderers from CDNs,
    # which are unreachable offline and are a privacy leak for a shared report.
    for trait in ("require_js_url", "mathjax_url", "jquery_url", "widget_renderer_url", "jupyter_widgets_base_url", "mermaid_js_url", "mermaid_layout_elk_js_url"):
        if exporter.has_trait(trait):
            setattr(exporter, trait, "")
    notebook = nbformat.read(str(notebook_path), as_version=4)
    body, _ = exporter.from_notebook_node(notebook)
    return strip_external(body)


def strip_external(html: str) -> str:
    """Remove any <script>/<link> that still points at a network host (belt and braces)."""
    html = re.sub(r"<script[^>]*\bsrc\s*=\s*[\"']?(?:https?:)?//[^>]*>\s*</script>", "", html, flags=re.IGNORECASE)
    html = re.sub(r"<link[^>]*\bhref\s*=\s*[\"']?(?:https?:)?//[^>]*>", "", html, flags=re.IGNORECASE)
    return html


def external_references(html: str) -> list[str]:
    """Every place in ``html`` that would load something from a network host."""
    return [m.group(0) for m in EXTERNAL.finditer(html)]
