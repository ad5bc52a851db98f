// The annotation queue's browser side: one blinded case, keys first. Case text is set with
// textContent, never as HTML. Selecting text in a case field cites it as a span.
const FIELDS = ["input", "response", "grading_notes", "reference"];
const CONFIDENCE = {l: "low", m: "medium", h: "high"};
const TEXT_ENTRY = "input:not([type=checkbox]), textarea, select";

function node(tag, cls, text) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  if (text !== undefined) n.textContent = text;
  return n;
}

function submitted(model) {
  // the form as the reviewer sees it travels with the submission: no race with trait syncing
  const form = {};
  for (const name of ["label", "confidence", "escalate", "rationale"]) form[name] = model.get(name);
  return {type: "submit", form};
}

function offsetIn(box, container, offset) {
  // characters of box's text before (container, offset): the selection's place in the field
  const range = document.createRange();
  range.selectNodeContents(box);
  range.setEnd(container, offset);
  return range.toString().length;
}

function render({ model, el }) {
  el.classList.add("wb-annotate");
  el.setAttribute("tabindex", "0");
  el.setAttribute("data-lm-suppress-shortcuts", "true");
  const draw = () => {
    const c = model.get("case");
    el.replaceChildren();
    const head = node("div", "wb-ann-head");
    head.append(node("b", "", model.get("reviewer")), node("span", "wb-ann-progress", " · " + model.get("progress")));
    el.append(head);
    if (!c || !c.case_id) { el.append(node("div", "wb-ann-done", model.get("status") || "No case left to review.")); return; }
    el.append(node("div", "wb-ann-id", `case ${c.case_id} · slice ${c.slice}`));
    if (c.criterion) el.append(node("div", "wb-ann-criterion", c.criterion));
    for (const [label, boundary] of Object.entries(c.boundaries || {})) el.append(node("div", "wb-ann-boundary", `${label}: ${boundary}`));
    if (c.ambiguity) el.append(node("div", "wb-ann-boundary", `ambiguous: ${c.ambiguity}`));
    const pane = node("div", "wb-ann-case");
    for (const f of FIELDS) {
      if (!c[f]) continue;
      pane.append(node("div", "wb-ann-label", f.replace("_", " ")));
      const box = node("div", "wb-ann-text", c[f]);
      box.dataset.field = f;
      box.addEventListener("mouseup", () => {
        const sel = window.getSelection();
        if (!sel || sel.isCollapsed || !box.contains(sel.anchorNode) || !box.contains(sel.focusNode)) return;
        const r = sel.getRangeAt(0);
        const start = offsetIn(box, r.startContainer, r.startOffset), end = offsetIn(box, r.endContainer, r.endOffset);
        if (end > start) model.send({type: "span", field: f, start, end});
        sel.removeAllRanges();
      });
      pane.append(box);
    }
    for (const e of c.evidence || []) {
      pane.append(node("div", "wb-ann-label", "evidence " + e.id), node("div", "wb-ann-text wb-ann-evidence", e.text));
    }
    el.append(pane);
    const form = node("div", "wb-ann-form");
    const labels = node("div", "wb-ann-row");
    (c.labels || []).forEach((label, i) => {
      const b = node("button", "wb-ann-choice" + (model.get("label") === label ? " wb-on" : ""), `${i + 1} ${label}`);
      b.dataset.label = label;
      b.addEventListener("click", () => { model.set("label", label); model.save_changes(); });
      labels.append(b);
    });
    form.append(labels);
    const conf = node("div", "wb-ann-row");
    for (const [key, name] of Object.entries(CONFIDENCE)) {
      const b = node("button", "wb-ann-choice" + (model.get("confidence") === name ? " wb-on" : ""), `${key} ${name}`);
      b.addEventListener("click", () => { model.set("confidence", name); model.save_changes(); });
      conf.append(b);
    }
    const esc = node("button", "wb-ann-choice" + (model.get("escalate") ? " wb-on" : ""), "e escalate");
    esc.addEventListener("click", () => { model.set("escalate", !model.get("escalate")); model.save_changes(); });
    conf.append(esc);
    form.append(conf);
    const why = node("textarea", "wb-ann-rationale");
    why.placeholder = "rationale: why, citing the evidence (Esc leaves the box)";
    why.value = model.get("rationale");
    why.addEventListener("input", () => { model.set("rationale", why.value); model.save_changes(); });
    form.append(why);
    const spans = node("div", "wb-ann-spans");
    (model.get("spans") || []).forEach((s, i) => {
      const chip = node("span", "wb-ann-span", `${s.field}[${s.start}:${s.end}] “${s.text}” ×`);
      chip.title = "remove";
      chip.addEventListener("click", () => model.send({type: "unspan", index: i}));
      spans.append(chip);
    });
    if (!(model.get("spans") || []).length) spans.append(node("span", "wb-ann-dim", "select text above to cite it"));
    form.append(spans);
    const submit = node("button", "wb-ann-submit", "s submit");
    submit.addEventListener("click", () => model.send(submitted(model)));
    form.append(submit, node("span", "wb-ann-status", model.get("status")));
    el.append(form);
  };
  for (const name of ["case", "label", "confidence", "escalate", "spans", "status", "progress"]) model.on("change:" + name, draw);
  draw();
  const onKey = (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.target && ev.target.matches && ev.target.matches(TEXT_ENTRY)) {
      if (ev.key === "Escape") { ev.preventDefault(); ev.target.blur(); el.focus(); }
      return;
    }
    const labels = (model.get("case") || {}).labels || [];
    let done = true;
    if (/^[1-9]$/.test(ev.key) && Number(ev.key) <= labels.length) model.set("label", labels[Number(ev.key) - 1]);
    else if (CONFIDENCE[ev.key]) model.set("confidence", CONFIDENCE[ev.key]);
    else if (ev.key === "e") model.set("escalate", !model.get("escalate"));
    else if (ev.key === "s") model.send(submitted(model));
    else done = false;
    if (!done) return;
    ev.preventDefault(); ev.stopPropagation();
    model.save_changes();
  };
  el.addEventListener("keydown", onKey, true);
  el.dataset.wbKeys = "ready";
  return () => el.removeEventListener("keydown", onKey, true);
}

export default { render };
