"""The review widget in a real JupyterLab: a small notebook, run in its kernel, read from the DOM.

Shared by ``tests/test_browser_widget.py`` and ``bench/bench_review_keyboard.py``. The notebook
reviews the demo's development partition with the offline ``rubric-judge@2`` (no model
server, no fixed port) and, in a second cell, a widget over hostile case text. Nothing here
downloads anything: JupyterLab is served from the project's virtualenv on 127.0.0.1 and
Debian's chromium is driven by Playwright (see ``browser_support``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _kernels import inherited_environment
from browser_support import JupyterLabServer

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = "review.ipynb"
DEMO_GOLD = ROOT / "data" / "demo"
CANDIDATE = ROOT / "data" / "candidates" / "rubric-judge@2.yaml"
VIEWPORT = {"width": 1280, "height": 800}

SCRIPT = "<script>window.__pwned = 1</script>"
IMG = '<img src=x onerror="window.__pwned=2">'
HOSTILE_ROWS: list[dict[str, Any]] = [
    {
        "case_id": f"hostile-1 {IMG}",
        "slice": f"billing {SCRIPT}",
        "risk": "critical",
        "partition": "development",
        "tags": [f"tag {IMG}"],
        "error_class": "false_pass",
        "outcome": "verdict",
        "human_label": "fail",
        "judge_label": "pass",
        "judge_reason": f"reason {SCRIPT}",
        "input": f"input {IMG}",
        "response": f"response {SCRIPT} {IMG}",
        "grading_notes": f"notes {SCRIPT}",
        "reviews": [
            {
                "reviewer": f"rev {IMG}",
                "label": "fail",
                "confidence": "high",
                "rationale": f"rationale {SCRIPT}",
                "evidence": [IMG],
            }
        ],
        "adjudication": {"label": "fail", "reason": f"adjudicated {IMG}", "adjudicator": SCRIPT},
        "rendered_request": {"messages": [{"role": f"user {IMG}", "content": f"content {SCRIPT}"}]},
        "attempts": 1,
    }
]


# A long, messy review (issue 29): 30 disagreements over slices with long names that share a
# prefix; the first case holds a 5,000-character passage and three reviewers with long
# rationales, the 25th five reviewers.
LONG_SLICES = ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-72B-Instruct", "mistralai/Mistral-7B-v0.3")
LONG_N = 30
PASSAGE = " ".join(
    f"Sentence {k} of the source passage says the refund window is {k % 30 + 1} days."
    for k in range(1, 200)
)[:5000]


def long_rows() -> list[dict[str, Any]]:
    """Rows for ``ReviewTable.from_records``: case ``long-01`` is the long one."""
    rows = []
    for k in range(1, LONG_N + 1):
        heavy = k in (1, 25)
        n_reviews = 3 if k == 1 else 5 if k == 25 else 1
        rows.append(
            {
                "case_id": f"long-{k:02d}",
                "slice": LONG_SLICES[k % len(LONG_SLICES)],
                "risk": "standard",
                "partition": "development",
                "tags": ["long"] if heavy else [],
                "error_class": "false_pass" if k % 2 else "false_fail",
                "outcome": "verdict",
                "human_label": "fail" if k % 2 else "pass",
                "judge_label": "pass" if k % 2 else "fail",
                "judge_reason": (
                    "The summary is supported by the passage. " * (12 if heavy else 1)
                ),
                "input": PASSAGE if heavy else f"Short passage {k}.",
                "response": ("The refund window is 14 days and covers opened items. " * 20)
                if heavy
                else f"Response {k}.",
                "grading_notes": "Fail any claim the passage does not state. "
                * (8 if heavy else 1),
                "adjudication": {
                    "label": "fail" if k % 2 else "pass",
                    "reason": "The passage states a different window. " * 10,
                    "adjudicator": "lead",
                }
                if heavy
                else None,
                "reviews": [
                    {
                        "reviewer": f"annotator-{r}",
                        "label": "fail" if k % 2 else "pass",
                        "confidence": "high",
                        "rationale": f"Reviewer {r}: " + "the passage never says so. " * 15,
                        "evidence": [f"sentence {r + j}: the refund window" for j in range(4)],
                    }
                    for r in range(1, n_reviews + 1)
                ],
                "attempts": 1,
            }
        )
    return rows


def cell(source: str) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": source.splitlines(keepends=True),
    }


def write_workspace(
    tmp: Path, *, hostile: bool = True, long_case: bool | None = None
) -> tuple[Path, dict[str, Path]]:
    """``tmp/lab/review.ipynb`` (runs, cache and notes under ``tmp``); returns (lab root, paths).

    ``hostile`` and ``long_case`` (default: as ``hostile``) add the hostile-text widget and
    the long-case widget (:func:`long_rows`, notes in ``paths["long_notes"]``) as cells 2 and 3.
    """
    lab_root = tmp / "lab"
    lab_root.mkdir(parents=True, exist_ok=True)
    paths = {
        "runs": tmp / "runs",
        "cache": tmp / "cache",
        "notes": tmp / "runs" / "review_notes.jsonl",
        "long_notes": tmp / "runs" / "long_notes.jsonl",
    }
    cells = [
        cell(
            "from workbench.phases import DevelopSession\nsession ="
            f" DevelopSession({json.dumps(str(DEMO_GOLD))},"
            f" run_root={json.dumps(str(paths['runs']))},"
            f" cache_dir={json.dumps(str(paths['cache']))})\niteration = await"
            f" session.run(session.load({json.dumps(str(CANDIDATE))}), progress=False)\nwidget ="
            f" session.review_widget(iteration, notes_path={json.dumps(str(paths['notes']))},"
            " reviewer='browser-test')\nwidget"
        )
    ]
    if hostile:
        cells.append(
            cell(
                "import json\nfrom workbench.review import ReviewTable\nfrom workbench.ui import"
                " ReviewWidget\nhostile = ReviewWidget(ReviewTable.from_records(json.loads("
                f"{json.dumps(json.dumps(HOSTILE_ROWS))})),"
                " reviewer='browser-test')\nhostile"
            )
        )
    if hostile if long_case is None else long_case:
        cells.append(
            cell(
                "import json\nfrom workbench.review import ReviewNotes, ReviewTable\nfrom"
                " workbench.ui import ReviewWidget\nlong_widget = ReviewWidget(ReviewTable."
                f"from_records(json.loads({json.dumps(json.dumps(long_rows()))})),"
                f" notes=ReviewNotes({json.dumps(str(paths['long_notes']))}),"
                " reviewer='browser-test')\nlong_widget"
            )
        )
    nb = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (lab_root / NOTEBOOK).write_text(json.dumps(nb, indent=1), encoding="utf-8")
    return lab_root, paths


def lab_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "PYTEST_"))}
    env["WORKBENCH_CACHE_DIR"] = str(tmp / "cache")
    env["RAGAS_DO_NOT_TRACK"] = "true"
    env.update(inherited_environment())  # the notebook's kernel forked (tests/_kernels.py)
    return env


def start_lab(tmp: Path, *, hostile: bool = True) -> tuple[JupyterLabServer, dict[str, Path]]:
    lab_root, paths = write_workspace(tmp, hostile=hostile)
    server = JupyterLabServer(lab_root, tmp / "jupyter-home", lab_env(tmp))
    server.start()
    return server, paths


# -- JupyterLab from the page (window.jupyterapp, exposed by --LabApp.expose_app_in_browser) ---
FIND_PANEL = """
const findPanel = (path) => {
  const app = window.jupyterapp;
  if (!app) return null;
  for (const widget of app.shell.widgets('main')) {
    if (widget.context && widget.context.path === path) return widget;
  }
  return null;
};
"""

KERNEL_STATE = (
    FIND_PANEL
    + """
(path) => {
  if (!window.jupyterapp) return 'JupyterLab app not exposed yet';
  const panel = findPanel(path);
  if (!panel) return 'notebook panel not open';
  const session = panel.sessionContext && panel.sessionContext.session;
  const kernel = session && session.kernel;
  return kernel ? `${kernel.connectionStatus}/${kernel.status}` : 'no kernel yet';
}
"""
)

RUN_ALL = (
    FIND_PANEL
    + """
async (path) => {
  const app = window.jupyterapp;
  const panel = findPanel(path);
  app.shell.activateById(panel.id);
  await panel.context.ready;
  await panel.sessionContext.ready;
  window.__wbRunAll = {done: false, error: null};
  app.commands.execute('notebook:run-all-cells').then(
    () => { window.__wbRunAll.done = true; },
    (error) => { window.__wbRunAll.done = true; window.__wbRunAll.error = String(error); });
  return app.shell.currentWidget === panel;
}
"""
)

RUN_STATE = (
    FIND_PANEL
    + """
(path) => {
  const panel = findPanel(path);
  const errors = [];
  let executed = 0, code = 0;
  for (const cell of panel.content.widgets) {
    if (cell.model.type !== 'code') continue;
    code += 1;
    if (cell.model.executionCount) executed += 1;
    for (const output of cell.model.outputs.toJSON()) {
      if (output.output_type === 'error') errors.push(`${output.ename}: ${output.evalue}`);
    }
  }
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  const run = window.__wbRunAll;
  return {done: Boolean(run && run.done), error: run && run.error,
          errors, executed, code, kernel: kernel ? kernel.status : 'none'};
}
"""
)

ACTIVE_CELL = (
    FIND_PANEL
    + """
(path) => {
  const p = findPanel(path);
  return {index: p.content.activeCellIndex, mode: p.content.mode};
}
"""
)

OPEN_LEFT_PANEL = """
async () => {
  const app = window.jupyterapp;
  await app.commands.execute('filebrowser:activate');
  const stack = document.querySelector('#jp-left-stack');
  return {leftCollapsed: app.shell.leftCollapsed,
          width: stack ? stack.getBoundingClientRect().width : 0};
}
"""

EXECUTE = (
    FIND_PANEL
    + """
async ([path, code]) => {
  const kernel = findPanel(path).sessionContext.session.kernel;
  const future = kernel.requestExecute({code, silent: false, store_history: false});
  const reply = await future.done;
  return reply.content.status;
}
"""
)


def wait_for(
    predicate: Callable[[], Any],
    *,
    timeout_s: float,
    what: str,
    interval_s: float = 0.05,
    diagnose: Callable[[], str] | None = None,
) -> Any:
    """Poll until truthy; raise AssertionError naming ``what`` (and ``diagnose()``) on timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout_s:.0f} s waiting for {what}"
                + (f"\n{diagnose()}" if diagnose else "")
            )
        time.sleep(interval_s)


def open_and_run(page: Page, lab: JupyterLabServer, *, timeout_s: float = 180) -> None:
    """Open the notebook, wait for its kernel, run every cell, fail on any error output."""
    page.goto(lab.url(f"lab/tree/{NOTEBOOK}"), wait_until="domcontentloaded", timeout=60_000)
    state = {"kernel": ""}

    def connected() -> bool:
        state["kernel"] = page.evaluate(KERNEL_STATE, NOTEBOOK)
        return state["kernel"] in ("connected/idle", "connected/busy")

    wait_for(
        connected,
        timeout_s=90,
        interval_s=0.25,
        what="the notebook's kernel to connect",
        diagnose=lambda: f"last state: {state['kernel']}\n{lab.log_tail()}",
    )
    assert page.evaluate(RUN_ALL, NOTEBOOK), f"could not make {NOTEBOOK} the current notebook"
    progress: dict[str, Any] = {}

    def finished() -> bool:
        progress.update(page.evaluate(RUN_STATE, NOTEBOOK))
        if progress["errors"] or progress["error"]:
            raise AssertionError(
                f"{NOTEBOOK} failed in JupyterLab: {progress['errors'] or progress['error']}"
            )
        return bool(progress["done"]) and progress["kernel"] == "idle"

    wait_for(
        finished,
        timeout_s=timeout_s,
        interval_s=0.5,
        what=f"{NOTEBOOK} to run all cells",
        diagnose=lambda: f"progress: {progress}\n{lab.log_tail()}",
    )
    assert progress["executed"] == progress["code"], f"not every code cell ran: {progress}"


def widget_root(page: Page, nth: int = 0) -> Locator:
    """The ``nth`` review widget on the page, once its keyboard handler is installed."""
    root = page.locator(".wb-review").nth(nth)
    root.locator("[data-wb-keys], .wb-side").first.wait_for(state="attached", timeout=60_000)
    wait_for(
        lambda: root.get_attribute("data-wb-keys") == "ready",
        timeout_s=30,
        what="the widget's key handler",
    )
    return root


READ = r"""
(root) => {
  const norm = (t) => t.replace(/\u00a0/g, ' ').replace(/\u200b/g, '').trim();
  const text = (el) => el ? norm(el.textContent) : null;
  const labels = Array.from(root.querySelectorAll('div.widget-label'))
    .map(e => e.textContent.trim());
  const selectOf = (name) => {
    const box = Array.from(root.querySelectorAll('.widget-dropdown')).find(d => {
      const l = d.querySelector('label');
      return l && l.textContent.trim() === name;
    });
    if (!box) return null;
    const s = box.querySelector('select');
    return {value: norm(s.value), options: Array.from(s.options).map(o => norm(o.textContent))};
  };
  const toggles = Array.from(root.querySelectorAll('.widget-checkbox'))
    .map(c => ({text: norm(c.textContent), checked: c.querySelector('input').checked}));
  return {
    case_id: text(root.querySelector('.wb-case h3')),
    meta: text(root.querySelector('.wb-case p.wb-meta')),
    position: labels.find(t => /^\d+ of \d+$/.test(t)) || null,
    progress: labels.find(t => /^\d+ of \d+ reviewed$/.test(t)) || null,
    status: text(root.querySelector('.wb-status')),
    slice: selectOf('slice'), error_class: selectOf('class'),
    tag: selectOf('tag'), cause: selectOf('cause'),
    toggles,
    list: Array.from(root.querySelectorAll('.wb-item')).map(i => i.dataset.caseId),
    bars: Array.from(root.querySelectorAll('rect.wb-bar')).map(b => ({
      slice: b.dataset.slice, cls: b.dataset.class, count: Number(b.dataset.count),
      selected: b.classList.contains('wb-bar-selected'),
    })),
  };
}
"""


def read(root: Locator) -> dict[str, Any]:
    """What the widget shows now (labels, dropdowns, case, list, chart)."""
    return root.evaluate(READ)


def settled(
    root: Locator, predicate: Callable[[dict[str, Any]], bool], *, timeout_s: float = 20, what: str
) -> dict[str, Any]:
    """Poll until the widget shows the same state twice in a row and ``predicate`` holds."""
    last: dict[str, Any] = {"shown": None}

    def check() -> dict[str, Any] | None:
        previous, last["shown"] = last["shown"], read(root)
        shown = last["shown"]
        return shown if shown == previous and predicate(shown) else None

    return wait_for(
        check,
        timeout_s=timeout_s,
        what=what,
        interval_s=0.05,
        diagnose=lambda: f"widget shows {json.dumps(last['shown'], indent=1)[:3000]}",
    )
