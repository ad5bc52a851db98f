"""The widget's browser side (an anywidget, inline: nothing is fetched): the per-slice chart, the
case list and one ``keydown`` listener on the review widget, whose keys go to Python as messages.
Case text is set with ``textContent``, never as HTML.
"""

from __future__ import annotations

import anywidget
import traitlets

from ._render import STYLE, asset

ESM = asset("sidebar.js")
CSS = asset("sidebar.css")


class ReviewSidebar(anywidget.AnyWidget):
    """Chart, case list and key capture; Python handles its messages (``on_msg``).

    Messages from the browser: ``{"type": "key", "key": "j", "action": "next"}``,
    ``{"type": "bar", "slice": ..., "error_class": ...}`` and ``{"type": "goto", "index": i}``.
    """

    _esm = ESM
    _css = STYLE + CSS
    chart = traitlets.List(traitlets.Dict()).tag(sync=True)
    selected = traitlets.Dict().tag(sync=True)
    rows = traitlets.List(traitlets.Dict()).tag(sync=True)
    current = traitlets.Int(0).tag(sync=True)
    list_title = traitlets.Unicode("Cases").tag(sync=True)
