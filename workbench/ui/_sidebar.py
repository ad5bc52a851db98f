"""The widget's browser side: per-slice chart, case list and keyboard (an anywidget).

ipywidgets has no key events. This small anywidget draws the chart of false passes and
false fails per slice and the list of matching cases, and installs one ``keydown`` listener
on the whole review widget (the element with class ``wb-review``), made focusable. Keys are
sent to the kernel as messages; Python decides what they do, so the view model stays the
single source of truth. The module is inline (anywidget loads it from a blob: URL): no CDN,
nothing fetched from the network. Case text is set with ``textContent``, never as HTML.
"""

from __future__ import annotations

import anywidget
import traitlets

from ._render import STYLE, asset

ESM = asset("sidebar.js")
"""The widget's browser module (``templates/sidebar.js``), inlined: nothing is fetched."""
CSS = asset("sidebar.css")
"""The sidebar's CSS (``templates/sidebar.css``)."""


class ReviewSidebar(anywidget.AnyWidget):
    """Chart, case list and key capture; Python handles its messages (``on_msg``).

    Messages from the browser: ``{"type": "key", "key": "j", "action": "next"}``,
    ``{"type": "bar", "slice": ..., "error_class": ...}`` and ``{"type": "goto", "index": i}``.
    """

    _esm = ESM
    _css = STYLE + CSS
    chart = traitlets.List(traitlets.Dict()).tag(sync=True)
    """``[{slice, false_pass, false_fail}]`` under every filter but slice and class."""
    selected = traitlets.Dict().tag(sync=True)
    """``{slice, error_class}`` of the current filters (the selected bar, if any)."""
    rows = traitlets.List(traitlets.Dict()).tag(sync=True)
    """A window of matching cases: ``[{index, case_id, error_class, reviewed}]``."""
    current = traitlets.Int(0).tag(sync=True)
    """Index (within the matches) of the current case."""
    list_title = traitlets.Unicode("Cases").tag(sync=True)
    """Heading of the case list."""
