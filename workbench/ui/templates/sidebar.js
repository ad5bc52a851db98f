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

const LABEL_CHARS = 18;  // what fits the chart's label column at 11 px

function sharedPrefix(a, b) {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

// Chart labels of at most `n` characters that tell the slices apart: a long name keeps the
// part where it first differs from its nearest neighbour (`…2.5-72B-Instruct`, not the shared
// `Qwen/Qwen2.5-7…`); a label that still repeats gets a number.
function shortNames(names, n) {
  const out = new Map(), seen = new Map();
  for (const name of names) {
    let label = name;
    if (name.length > n) {
      const differs = Math.max(0, ...names.filter(o => o !== name).map(o => sharedPrefix(name, o)));
      const start = Math.min(differs - 3, name.length - (n - 1));
      if (start <= 0) label = name.slice(0, n - 1) + "…";
      else if (start + n - 1 >= name.length) label = "…" + name.slice(start);
      else label = "…" + name.slice(start, start + n - 2) + "…";
    }
    const k = (seen.get(label) || 0) + 1;
    seen.set(label, k);
    out.set(name, k > 1 ? label.slice(0, n - 3) + "#" + k : label);
  }
  return out;
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
  const short = shortNames(data.map(d => d.slice), LABEL_CHARS);
  const chart = svg("svg", {width, height: data.length * rowH + 2, class: "wb-chart", role: "img"});
  data.forEach((d, i) => {
    const y = i * rowH;
    const label = svg("text", {x: labelW - 4, y: y + 13, "text-anchor": "end", class: "wb-chart-label",
                               "data-slice": d.slice});
    label.textContent = short.get(d.slice);
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
  const cut = data.filter(d => short.get(d.slice) !== d.slice);
  if (cut.length) {  // every shortened label, with the slice it stands for
    const names = node("div", "wb-side-names");
    for (const d of cut) {
      const row = node("div", "wb-side-name"); row.title = d.slice;
      row.append(node("span", "wb-short", short.get(d.slice)), node("span", "wb-name-full", d.slice));
      names.append(row);
    }
    box.append(names);
  }
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
  if (currentItem) follow(list, currentItem);
}

// Keep the current case visible inside the list only (never scroll the notebook). Positions
// come from the layout (an item's offsetTop is relative to its offset parent, which is not
// the list); before the list is laid out, try again on the next frame.
function follow(list, item, tries = 0) {
  if (!list.isConnected) return;
  if (!list.clientHeight) {
    if (tries < 60) requestAnimationFrame(() => follow(list, item, tries + 1));
    return;
  }
  const box = list.getBoundingClientRect(), at = item.getBoundingClientRect();
  const top = at.top - box.top - list.clientTop + list.scrollTop, bottom = top + at.height;
  if (top < list.scrollTop) list.scrollTop = top;
  else if (bottom > list.scrollTop + list.clientHeight) list.scrollTop = bottom - list.clientHeight;
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
