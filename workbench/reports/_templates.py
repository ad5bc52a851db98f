"""Jinja2 templates for the report's HTML (``workbench/reports/templates/``), autoescaped: data
never becomes markup; ``|safe`` only wraps HTML this package rendered from escaped values."""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files
from typing import Any

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:"


def environment() -> Any:
    """The package's one jinja2 Environment (:func:`workbench._html.environment`)."""
    from .._html import environment as shared

    return shared()


def render(template: str, **context: Any) -> str:
    """Render ``templates/<template>`` with autoescaping."""
    from .._html import render as shared

    return shared(template, **context)


def _css(name: str) -> str:
    return files("workbench.reports").joinpath("templates", name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def fragment_stylesheet() -> str:
    """Class-scoped CSS of the report's fragments (badges, tables, folded blockers)."""
    return _css("fragments.css")


@lru_cache(maxsize=1)
def stylesheet() -> str:
    """The report page's CSS: page rules (screen and print) and the fragments' rules."""
    return _css("page.css") + "\n" + fragment_stylesheet()


def fragment(body: str) -> str:
    """Wrap rendered HTML so it is styled on its own (in a notebook) as in the report."""
    from .._html import fragment as macro
    from .._html import safe

    return str(macro("fragments.html.j2", "frag", fragment_stylesheet(), safe(body)))
