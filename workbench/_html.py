"""The one way to produce HTML: jinja2 templates (found by unique file name beside the code that
uses them) rendered by one autoescaping, ``StrictUndefined`` Environment; a rendered fragment is
:class:`markupsafe.Markup`. No module builds HTML by hand (``tests/test_html_templates.py``)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2
    from markupsafe import Markup

TEMPLATE_DIRS = ("reports/templates", "ui/templates", "phases/templates")
"""Folders (relative to the ``workbench`` package) searched for templates, in this order."""


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The single jinja2 Environment: autoescape everywhere, undefined names raise."""
    import jinja2

    root = Path(__file__).resolve().parent
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(root / d) for d in TEMPLATE_DIRS]),
        autoescape=True,  # every template, whatever its file name
        undefined=jinja2.StrictUndefined,
        trim_blocks=False,
        lstrip_blocks=False,
        keep_trailing_newline=True,
    )


def render(template: str, **context: Any) -> str:
    """Render ``template`` (a file in one of :data:`TEMPLATE_DIRS`) with autoescaping."""
    return str(environment().get_template(template).render(**context))


def fragment(template: str, macro: str, *args: Any, **kwargs: Any) -> Markup:
    """Call ``macro`` of ``template``: an escaped fragment, safe to pass to another template."""
    from markupsafe import Markup

    module = environment().get_template(template).module
    return Markup(getattr(module, macro)(*args, **kwargs))


def safe(html: str) -> Markup:
    """Mark HTML produced by a trusted renderer (a template, pandas, nbconvert, vl-convert) as
    markup, so a template inserts it as is. Never for data."""
    from markupsafe import Markup

    return Markup(html)


def display_html(html: str) -> Any:
    """``html`` as an IPython display object (a notebook shows it as HTML)."""
    from IPython.display import HTML

    factory: Any = HTML  # IPython is untyped
    return factory(html)


def show(obj: Any) -> None:
    """Display ``obj`` in the notebook (:func:`IPython.display.display`)."""
    from IPython.display import display

    call: Any = display  # IPython is untyped
    call(obj)
