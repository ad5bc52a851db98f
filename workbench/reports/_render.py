"""Executed notebook -> a self-contained HTML report: code hidden, nothing loaded from the network."""

from __future__ import annotations

import re
from pathlib import Path

EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|@import\s+url\(\s*["']?(?:https?:)?//|url\(\s*["']?(?:https?:)?//""", re.IGNORECASE)
"""Anything in an HTML document that would make a browser fetch from a network host."""


def render_html(notebook_path: str | Path, title: str = "Certification report") -> str:
    """Render an executed notebook to HTML without code, prompts, scripts or network loads.

    The report is static: every ``<script>`` nbconvert's template adds (MathJax and mermaid
    loaders, require.js) is removed, and a Content-Security-Policy forbids scripts and
    network requests, so even escaped-but-misrendered text could not run.
    """
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
    body, _ = exporter.from_notebook_node(notebook, resources={"metadata": {"name": title}})
    return add_content_security_policy(strip_scripts(strip_external(body)))


def strip_scripts(html: str) -> str:
    """Remove every script element: a locked report runs no code."""
    return re.sub(r"<script\b[^>]*>.*?</script\s*>", "", html, flags=re.IGNORECASE | re.DOTALL)


CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:"
"""The report needs no script and no network: the browser is told so, as a second line of defence."""


def add_content_security_policy(html: str) -> str:
    """Insert a Content-Security-Policy meta tag as the first element of ``<head>``."""
    meta = f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
    return re.sub(r"<head([^>]*)>", lambda m: f"<head{m.group(1)}>{meta}", html, count=1, flags=re.IGNORECASE)


def strip_external(html: str) -> str:
    """Remove any <script>/<link> that still points at a network host (belt and braces)."""
    html = re.sub(r"<script[^>]*\bsrc\s*=\s*[\"']?(?:https?:)?//[^>]*>\s*</script>", "", html, flags=re.IGNORECASE)
    html = re.sub(r"<script[^>]*\bsrc\s*=\s*([\"'])\1[^>]*>\s*</script>", "", html, flags=re.IGNORECASE)  # blanked CDN URLs
    html = re.sub(r"<link[^>]*\bhref\s*=\s*[\"']?(?:https?:)?//[^>]*>", "", html, flags=re.IGNORECASE)
    return html


def external_references(html: str) -> list[str]:
    """Every place in ``html`` that would load something from a network host."""
    return [m.group(0) for m in EXTERNAL.finditer(html)]
