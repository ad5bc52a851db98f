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

from ._render import STYLE

ESM = r"""
const SVG = "http://www.w3.org/2000/svg";
const CLASSES = [["false_pass", "false passes", "#cf222e"], ["false_fail", "false fails", "#e8a33d"]];
const ACTIONS = {j: "next", ArrowDown: "next", ArrowRight: "next", k: "previous", ArrowUp: "previous", ArrowLeft: "previous", s: "save"};
const TEXT_ENTRY = "input:not([type=checkbox]):not([type=radio]):not([type=button]), textarea, select, [contenteditable=''], [contenteditable=true]";

function node(tag, cls, text) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  if (text !== undefined) n.textContent = text;
  return n;
}

function svg(tag, attrs) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, String(v));
  return n;
}

function drawChart(model, box) {
  const data = model.get("chart") || [];
  const selected = model.get("selected") || {};
  box.replaceChildren();
  const head = node("div", "wb-side-head");
  head.append(node("b", "", "False passes / false fails per slice"));
  box.append(head);
  const legend = node("div", "wb-side-legend");
  for (const [, name, colour] of CLASSES) {
    const sw = node("span", "wb-swatch"); sw.style.background = colour;
    legend.append(sw, node("span", "", name + " "));
  }
  legend.append(node("span", "wb-dim", "· click a bar"));
  box.append(legend);
  const labelW = 138, barW = 78, rowH = 19, width = labelW + barW + 24;
  const anySelected = data.some(d => CLASSES.some(([cls]) => selected.slice === d.slice && selected.error_class === cls && d[cls]));
  const max = Math.max(1, ...data.map(d => Math.max(d.false_pass || 0, d.false_fail || 0)));
  const chart = svg("svg", {width, height: data.length * rowH + 2, class: "wb-chart", role: "img"});
  data.forEach((d, i) => {
    const y = i * rowH;
    const label = svg("text", {x: labelW - 4, y: y + 13, "text-anchor": "end", class: "wb-chart-label"});
    label.textContent = d.slice.length > 22 ? d.slice.slice(0, 21) + "…" : d.slice;
    const title = svg("title"); title.textContent = d.slice; label.append(title);
    chart.append(label);
    CLASSES.forEach(([cls, name, colour], k) => {
      const count = d[cls] || 0;
      const by = y + 2 + k * 8;
      const w = count ? Math.max(3, Math.round(barW * count / max)) : 0;
      const hit = svg("rect", {x: labelW, y: by, width: barW + 22, height: 8, fill: "transparent"});
      const bar = svg("rect", {x: labelW, y: by, width: Math.max(w, 1), height: 7, fill: count ? colour : "#d0d7de",
                               class: "wb-bar", "data-slice": d.slice, "data-class": cls, "data-count": count});
      const isSel = selected.slice === d.slice && selected.error_class === cls;
      if (isSel) { bar.setAttribute("stroke", "#24292f"); bar.setAttribute("stroke-width", "1.5"); bar.classList.add("wb-bar-selected"); }
      else if (anySelected) bar.setAttribute("opacity", "0.4");
      const t = svg("title"); t.textContent = `${d.slice}: ${count} ${name}` + (count ? " (click to filter)" : ""); bar.append(t);
      const num = svg("text", {x: labelW + w + 3, y: by + 7, class: "wb-chart-num"}); num.textContent = String(count);
      const group = svg("g", {class: count ? "wb-bar-group wb-clickable" : "wb-bar-group"});
      group.append(hit, bar, num);
      if (count) group.addEventListener("click", (ev) => { ev.stopPropagation(); model.send({type: "bar", slice: d.slice, error_class: cls}); });
      chart.append(group);
    });
  });
  box.append(chart);
}

function drawList(model, box) {
  const rows = model.get("rows") || [];
  const current = model.get("current");
  box.replaceChildren();
  box.append(node("div", "wb-side-head", model.get("list_title") || "Cases"));
  const list = node("div", "wb-list");
  let currentItem = null;
  for (const r of rows) {
    const item = node("div", "wb-item" + (r.index === current ? " wb-current" : ""));
    item.dataset.index = String(r.index);
    item.dataset.caseId = r.case_id;
    item.append(node("span", "wb-tick", r.reviewed ? "✓" : "·"), node("span", "wb-item-id", r.case_id),
                node("span", "wb-item-cls wb-cls-" + r.error_class, r.error_class));
    item.title = r.case_id;
    item.addEventListener("click", (ev) => { ev.stopPropagation(); model.send({type: "goto", index: r.index}); });
    if (r.index === current) currentItem = item;
    list.append(item);
  }
  box.append(list);
  if (currentItem) {  // keep the current case visible inside the list only (never scroll the notebook)
    const top = currentItem.offsetTop - list.offsetTop, bottom = top + currentItem.offsetHeight;
    if (top < list.scrollTop) list.scrollTop = top;
    else if (bottom > list.scrollTop + list.clientHeight) list.scrollTop = bottom - list.clientHeight;
  }
}

function render({ model, el }) {
  el.classList.add("wb-side");
  const chartBox = node("div", "wb-chart-box");
  const listBox = node("div", "wb-list-box");
  el.append(chartBox, listBox);
  const chart = () => drawChart(model, chartBox);
  const list = () => drawList(model, listBox);
  model.on("change:chart", chart);
  model.on("change:selected", chart);
  model.on("change:rows", list);
  model.on("change:current", list);
  model.on("change:list_title", list);
  chart();
  list();

  let root = null, tries = 0, timer = null;
  const onKey = (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const target = ev.target;
    if (target && target.matches && target.matches(TEXT_ENTRY)) {
      if (ev.key === "Escape") { ev.preventDefault(); ev.stopPropagation(); target.blur(); root.focus(); }
      return;  // typing in a text box or a dropdown: no shortcuts
    }
    const action = /^[1-8]$/.test(ev.key) ? "cause" : ACTIONS[ev.key];
    if (!action) return;
    ev.preventDefault();
    ev.stopPropagation();
    model.send({type: "key", key: ev.key, action});
  };
  const attach = () => {
    root = el.closest(".wb-review");
    if (!root) {
      if (tries++ < 400) timer = setTimeout(attach, 50);
      return;
    }
    root.setAttribute("tabindex", "0");
    // JupyterLab's command-mode shortcuts (j, k, 1-6, d d ...) must not act on the notebook
    // while the reviewer works in the widget.
    root.setAttribute("data-lm-suppress-shortcuts", "true");
    // Capture phase: ipywidgets' text boxes stop keydown from bubbling, and Esc must reach us.
    root.addEventListener("keydown", onKey, true);
    root.dataset.wbKeys = "ready";
  };
  attach();
  return () => {
    if (timer) clearTimeout(timer);
    if (root) root.removeEventListener("keydown", onKey, true);
  };
}

export default { render };
"""

CSS = r"""
.wb-side { font-size: 12px; display: flex; flex-direction: column; gap: 4px; width: 100%; }
.wb-side .wb-side-head { font-size: 12px; margin: 0 0 2px 0; }
.wb-side .wb-side-legend { font-size: 11px; color: var(--jp-ui-font-color2, #555); margin-bottom: 2px; }
.wb-side .wb-swatch { display: inline-block; width: 9px; height: 9px; margin: 0 3px 0 4px; vertical-align: -1px; }
.wb-side .wb-dim { color: var(--jp-ui-font-color2, #777); }
.wb-side svg.wb-chart text { font-size: 11px; fill: var(--jp-ui-font-color1, #333); }
.wb-side svg.wb-chart .wb-clickable { cursor: pointer; }
.wb-side svg.wb-chart .wb-clickable:hover rect.wb-bar { opacity: 0.75; }
.wb-side .wb-list { max-height: 212px; overflow-y: auto; border: 1px solid var(--jp-border-color2, #ddd); border-radius: 3px; position: relative; }
.wb-side .wb-item { display: flex; gap: 5px; padding: 1px 4px; cursor: pointer; white-space: nowrap; font-size: 11.5px; }
.wb-side .wb-item:hover { background: var(--jp-layout-color2, #eee); }
.wb-side .wb-item.wb-current { background: var(--jp-brand-color3, #bbdefb); font-weight: 600; }
.wb-side .wb-item-id { overflow: hidden; text-overflow: ellipsis; flex: 1 1 auto; }
.wb-side .wb-item-cls { color: var(--jp-ui-font-color2, #666); }
.wb-side .wb-cls-false_pass { color: #cf222e; }
.wb-side .wb-cls-false_fail { color: #bc4c00; }
.wb-side .wb-tick { width: 10px; color: #1a7f37; }
"""


class ReviewSidebar(anywidget.AnyWidget):  # type: ignore[misc]
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
