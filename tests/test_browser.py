"""What a reviewer sees in a real browser: Debian's chromium driven by Playwright.

1. A certification report opened from disk with the network blocked: the outcome banner and
   the chart are drawn and nothing is fetched from anywhere.
2. Case text written to attack the report (script tags, event handlers, markdown, table
   breakers) stays text in both the shared report and the restricted held-out page.
3. The review widget of ``01_develop.ipynb`` in JupyterLab: a user filters by slice and steps
   to the next case.

Without ``/usr/bin/chromium`` these tests are skipped with the reason; CI installs it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from _certified import demo_release_certification
from browser_support import (
    JupyterLabServer,
    PageWatch,
    launch_chromium,
    port_is_closed,
    require_chromium,
    wait_until,
    watch_page,
)
from conftest import RUBRIC, make_case, write_dataset
from widget_lab import lab_env

from workbench.align import join_results
from workbench.approval import freeze_path
from workbench.gold import GoldDataset, load_dataset
from workbench.reports import certify
from workbench.results import read_results
from workbench.review import DISAGREEMENT_CLASSES

pytestmark = [pytest.mark.browser, pytest.mark.notebook]

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Locator, Page

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
DEMO_GOLD = "data/demo"

SCRIPT = "<script>window.__pwned = 1</script>"
IMG = '<img src=x onerror="window.__pwned=2">'
MARKDOWN = "**bold** <h1>BIG</h1> [link](javascript:alert(1))"
TABLE_BREAKER = "</td></tr></table><div id=broken>"
PAYLOADS = (SCRIPT, IMG, MARKDOWN, TABLE_BREAKER)


# -- fixtures ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chromium() -> None:
    """Skip the module (the only allowed skip) when Debian's chromium or playwright is missing."""
    require_chromium()


@pytest.fixture(scope="module")
def browser(chromium: None) -> Iterator[Browser]:
    """One headless chromium for the module; each test opens its page in a fresh context."""
    with launch_chromium() as browser:
        yield browser


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(15_000)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture(scope="module")
def demo_report(chromium: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo candidate certified once into a temporary reports root (shared by the run,
    tests/_certified.py: read it, never write there)."""
    result = demo_release_certification(tmp_path_factory).results[0]
    assert (result.report_dir / "report.html").is_file(), (
        f"certify wrote no report.html in {result.report_dir}"
    )
    return result.report_dir


def _hostile_dataset(root: Path) -> Path:
    """A tiny gold set whose held-out text attacks the HTML; every hostile case is a
    disagreement.
    """
    held_out = [
        # keyword_judge passes only responses mentioning 'refund': these humans-pass cases are false
        # fails
        make_case("h-script", "pass", partition="held_out", slice="billing", response=SCRIPT),
        make_case("h-img", "pass", partition="held_out", slice="general", response=IMG, input=IMG),
        make_case("h-markdown", "pass", partition="held_out", slice="billing", response=MARKDOWN),
        make_case(
            "h-table",
            "pass",
            partition="held_out",
            slice="general",
            response=TABLE_BREAKER,
            input=TABLE_BREAKER,
        ),
        # a human fail the judge passes: a false pass, also shown in the restricted table
        make_case(
            "h-false-pass",
            "fail",
            partition="held_out",
            slice="billing",
            response=f"refund approved {SCRIPT} {IMG}",
        ),
        # aligned cases are omitted from the restricted table
        make_case(
            "h-ok-1",
            "pass",
            partition="held_out",
            slice="general",
            response="Your refund is on its way.",
        ),
        make_case(
            "h-ok-2",
            "fail",
            partition="held_out",
            slice="billing",
            response="No money back, sorry.",
        ),
    ]
    others = [
        make_case(
            "d-1", "pass", partition="development", slice="billing", response="refund issued"
        ),
        make_case("d-2", "fail", partition="development", slice="general", response="no"),
        make_case(
            "c-1", "pass", partition="calibration", slice="billing", response="refund issued"
        ),
        make_case("c-2", "fail", partition="calibration", slice="general", response="no"),
    ]
    gold = write_dataset(root / "gold", [*others, *held_out])
    freeze_path(gold, approver="Support Quality lead (demo)")  # certification needs a release
    return gold


HOSTILE_DESCRIPTION = " | ".join(PAYLOADS)
HOSTILE_RATIONALE = f"Limits for the browser test. {SCRIPT} {IMG} {MARKDOWN} {TABLE_BREAKER}"


def _hostile_policy(directory: Path) -> Path:
    policy = {
        "schema_version": 1,
        "name": "browser-test",
        "version": "1",
        "owner": f"test owner {IMG}",
        "rationale": HOSTILE_RATIONALE,
        "rubric_version": RUBRIC["version"],
        "partition": "held_out",
        "max_evaluator_errors": 0,
        "min_n_per_slice": 1,
        "slices": {
            "billing": {
                "risk": "critical",
                "max_abstention_rate": 0.1,
                "max_false_passes": 0,
                "max_false_pass_rate": 0.1,
                "false_pass_rate_basis": "upper_95",
            },
            "general": {
                "risk": "low",
                "max_false_pass_rate": 0.5,
                "false_pass_rate_basis": "point",
            },
            "empty": {
                "risk": "medium",
                "max_false_pass_rate": 0.5,
                "false_pass_rate_basis": "point",
                "min_n": 0,
            },
        },
    }
    assert set(policy["slices"]) == set(RUBRIC["slices"]), (
        "the policy must cover every rubric slice"
    )
    path = directory / "browser-test@1.yaml"
    path.write_text(yaml.safe_dump(policy, sort_keys=False), encoding="utf-8")
    return path


def _hostile_candidate(directory: Path) -> Path:
    spec = {
        "schema_version": 1,
        "name": "hostile-judge",
        "version": "1",
        "kind": "ragas-function",
        "description": HOSTILE_DESCRIPTION,
        "labels": ["pass", "fail"],
        "function": "judge_fixtures:keyword_judge",
    }
    path = directory / "hostile-judge@1.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def hostile_report(chromium: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hostile dataset certified with a ragas-function judge from tests/judge_fixtures.py."""
    root = tmp_path_factory.mktemp("hostile")
    gold = _hostile_dataset(root)
    policy = _hostile_policy(root)
    candidate = _hostile_candidate(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)  # the project root (certify runs the packaged notebook from anywhere)
        mp.setenv("WORKBENCH_CACHE_DIR", str(root / "cache"))
        # The certification notebook runs in its own kernel, which inherits the environment.
        mp.setenv("PYTHONPATH", str(TESTS), prepend=":")
        result = certify(
            candidate=candidate, policy=policy, gold=gold, reports_root=root / "reports"
        )
    assert (result.report_dir / "report.html").is_file()
    assert (result.report_dir / "restricted" / "held_out_cases.html").is_file()
    return result.report_dir


# -- helpers -------------------------------------------------------------------------------
def _open_offline(page: Page, path: Path) -> PageWatch:
    watch = watch_page(page)
    response = page.goto(path.as_uri(), wait_until="load")
    assert response is None or response.ok, f"could not open {path}"
    page.wait_for_load_state("networkidle")
    return watch


def _assert_offline(watch: PageWatch, path: Path) -> None:
    external = watch.external_requests(lambda url: url.startswith(("file://", "data:")))
    assert not watch.blocked and not external, (
        f"{path.name} tried to load from the network: blocked={watch.blocked} requests={external}"
    )
    assert not watch.failed, f"{path.name}: failed requests {watch.failed}"
    assert not watch.console_errors, f"{path.name}: console errors {watch.console_errors}"


def _assert_inert(page: Page, watch: PageWatch, name: str) -> None:
    """Nothing in the page executed or became markup: every payload is plain text."""
    assert not watch.dialogs, f"{name}: a dialog fired: {watch.dialogs}"
    assert page.evaluate("typeof window.__pwned") == "undefined", (
        f"{name}: injected script ran (window.__pwned = {page.evaluate('window.__pwned')})"
    )
    text = page.inner_text("body")
    for payload in PAYLOADS:
        assert payload in text, f"{name}: {payload!r} is not shown literally as text"
    assert page.locator("#broken").count() == 0, (
        f"{name}: case text closed the table and created div#broken"
    )
    assert page.locator("h1", has_text="BIG").count() == 0, f"{name}: case text created an <h1>"
    assert page.locator("b, strong", has_text=re.compile(r"^bold$")).count() == 0, (
        f"{name}: markdown in case text was rendered"
    )
    assert page.locator("a[href^='javascript:' i]").count() == 0, (
        f"{name}: a javascript: link was created"
    )
    assert page.locator("[onerror]").count() == 0, (
        f"{name}: an element with an onerror handler exists"
    )
    assert page.locator("img[src='x']").count() == 0, (
        f"{name}: the injected <img> became an element"
    )
    scripts = page.evaluate(
        "Array.from(document.scripts).filter(s => s.text.includes('__pwned')).length"
    )
    assert scripts == 0, f"{name}: {scripts} <script> element(s) carry the injected code"
    fetched = [url for url in watch.requests if url.rstrip("/").endswith("/x")]
    assert not fetched, f"{name}: the injected <img src=x> was fetched: {fetched}"


def _cell_after(page: Page, header: str) -> str:
    """Text of the <td> beside the key/value row whose <th> is ``header`` (escaping kept it in one
    cell).
    """
    cells = page.locator(
        "table.wb-kv tr", has=page.locator("th", has_text=re.compile(f"^{re.escape(header)}$"))
    ).locator("td")
    assert cells.count() == 1, f"expected one {header!r} value cell, found {cells.count()}"
    return str(cells.first.text_content())


# -- 1. the certification report, offline ---------------------------------------------------
def test_report_renders_offline_with_outcome_and_chart(demo_report: Path, page: Page) -> None:
    lock = json.loads((demo_report / "lock.json").read_text(encoding="utf-8"))
    outcome = lock["outcome"]
    html = demo_report / "report.html"
    watch = _open_offline(page, html)

    banner = page.locator("div.wb-outcome")
    assert banner.count() == 1, f"expected one outcome banner, found {banner.count()}"
    assert banner.is_visible(), "the outcome banner is not visible"
    assert banner.get_attribute("data-outcome") == outcome
    title = banner.inner_text().strip().splitlines()[0]
    assert title == outcome.replace("_", " ").upper(), (
        f"banner says {title!r}, lock.json says {outcome!r}"
    )
    box = banner.bounding_box()
    assert box and box["width"] > 0 and box["height"] > 0

    charts: list[dict[str, Any]] = page.evaluate(
        """() => Array.from(document.querySelectorAll('svg')).map(svg => {
            const r = svg.getBoundingClientRect();
            return {width: r.width, height: r.height,
                    marks: svg.querySelectorAll(
                      'g.role-mark > *, g[class*="mark-"] > path, g[class*="mark-"] > line'
                    ).length,
                    title: /error rates/i.test(svg.textContent),
                    text: svg.textContent.slice(0, 120)};
        })"""
    )
    drawn = [c for c in charts if c["width"] > 0 and c["height"] > 0 and c["marks"] > 0]
    images = page.evaluate(
        "Array.from(document.images).filter(i => i.src.startsWith('data:image/svg+xml')).map(i =>"
        " [i.naturalWidth, i.naturalHeight])"
    )
    assert drawn, (
        f"no inline <svg> chart with marks is drawn in report.html (svg elements: {charts}; SVG"
        f" charts embedded as <img src=data:image/svg+xml> instead: {images})"
    )
    assert any(c["title"] for c in drawn), f"the slice error-rate chart is missing: {charts}"
    _assert_offline(watch, html)


# -- 2. injection attempts stay text -------------------------------------------------------
def test_hostile_case_text_stays_text_in_report_and_restricted_page(
    hostile_report: Path, page: Page
) -> None:
    report = hostile_report / "report.html"
    watch = _open_offline(page, report)
    _assert_inert(page, watch, "report.html")
    assert _cell_after(page, "description") == HOSTILE_DESCRIPTION, (
        "the candidate description left its table cell"
    )
    assert _cell_after(page, "rationale") == HOSTILE_RATIONALE, (
        "the policy rationale left its table cell"
    )
    _assert_offline(watch, report)

    restricted = hostile_report / "restricted" / "held_out_cases.html"
    rows = [
        json.loads(line)
        for line in (
            (restricted.parent / "held_out_cases.jsonl").read_text(encoding="utf-8").splitlines()
        )
        if line.strip()
    ]
    shown = [r for r in rows if r["error_class"] != "aligned"]
    assert {r["case_id"] for r in shown} == {
        "h-script",
        "h-img",
        "h-markdown",
        "h-table",
        "h-false-pass",
    }, shown

    restricted_page = page.context.new_page()
    restricted_watch = _open_offline(restricted_page, restricted)
    _assert_inert(restricted_page, restricted_watch, "held_out_cases.html")
    header = restricted_page.locator("table thead th")
    body_rows = restricted_page.locator("table tbody tr")
    assert restricted_page.locator("table").count() == 1, (
        "the case table was split by injected markup"
    )
    assert body_rows.count() == len(shown), (
        f"expected {len(shown)} case rows, found {body_rows.count()}"
    )
    n_columns = header.count()
    for i in range(body_rows.count()):
        assert body_rows.nth(i).locator("td").count() == n_columns, f"row {i} lost or gained cells"
    cells = {
        str(body_rows.nth(i).locator("td").first.text_content()): body_rows.nth(i)
        for i in range(body_rows.count())
    }
    assert set(cells) == {r["case_id"] for r in shown}
    response_col = [str(t) for t in header.all_text_contents()].index("response")
    assert cells["h-table"].locator("td").nth(response_col).text_content() == TABLE_BREAKER
    assert cells["h-script"].locator("td").nth(response_col).text_content() == SCRIPT
    _assert_offline(restricted_watch, restricted)


# -- 3. JupyterLab and the review widget ------------------------------------------------------
NOTEBOOK = "notebooks/01_develop.ipynb"
SLICE = "account_security"


def _workspace(tmp_path: Path) -> Path:
    """tmp/notebooks/01_develop.ipynb (runs and notes redirected to tmp) beside tmp/data -> data."""
    lab_root = tmp_path / "lab"
    (lab_root / "notebooks").mkdir(parents=True)
    (lab_root / "data").symlink_to(ROOT / "data", target_is_directory=True)
    nb = json.loads((ROOT / NOTEBOOK).read_text(encoding="utf-8"))
    params = next(
        (c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])), None
    )
    assert params is not None, f"{NOTEBOOK} has no parameters cell"
    source = "".join(params["source"])
    for name, value in (
        ("run_root", tmp_path / "runs" / "develop"),
        ("notes_path", tmp_path / "runs" / "review_notes.jsonl"),
    ):
        source, n = re.subn(
            rf"^{name}\s*=.*$", f"{name} = {json.dumps(str(value))}", source, count=1, flags=re.M
        )
        assert n == 1, f"{NOTEBOOK}: parameter {name} not found in the parameters cell"
    params["source"] = source.splitlines(keepends=True)
    (lab_root / NOTEBOOK).write_text(json.dumps(nb, indent=1), encoding="utf-8")
    return lab_root


@pytest.fixture
def jupyterlab(chromium: None, tmp_path: Path) -> Iterator[JupyterLabServer]:
    server = JupyterLabServer(_workspace(tmp_path), tmp_path / "jupyter-home", lab_env(tmp_path))
    try:
        server.start()
        yield server
    finally:
        server.stop()
    # The notebook's kernel served the demo model on a free port (recorded in run.json): it
    # must be gone with the server, or a kernel outlived JupyterLab.
    for port in _demo_model_ports(tmp_path / "runs" / "develop"):
        wait_until(
            lambda port=port: port_is_closed(port),
            timeout_s=15,
            what=(
                f"the notebook's demo model on port {port} to stop after JupyterLab shut down (a"
                " kernel outlived the server)"
            ),
        )


def _demo_model_ports(run_root: Path) -> set[int]:
    """Ports of the demo model the notebook's runs called, from each run.json's ``endpoint_url``."""
    urls = {
        json.loads(p.read_text(encoding="utf-8")).get("endpoint_url")
        for p in run_root.glob("*/*/development/run.json")
    }
    return {int(url.rsplit(":", 1)[1].split("/", 1)[0]) for url in urls if url}


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
  window.__wbRunAll = {done: false, result: null, error: null};
  app.commands.execute('notebook:run-all-cells').then(
    (result) => { window.__wbRunAll.done = true; window.__wbRunAll.result = result; },
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


@dataclass(frozen=True)
class Shown:
    """What the review widget displays, read in one step (the kernel updates it piecewise)."""

    case_id: str
    slice: str
    position: str
    next_enabled: bool


READ_WIDGET = r"""
(root) => {
  const h3 = root.querySelector('.widget-html-content h3');
  const p = root.querySelector('.widget-html-content p');
  const labels = Array.from(root.querySelectorAll('div.widget-label'))
    .map(e => e.textContent.trim());
  const next = Array.from(root.querySelectorAll('button.widget-button'))
    .find(b => b.textContent.trim() === 'next');
  const slice = p ? (p.textContent.match(/slice\s+(\S+)/) || [])[1] : null;
  return {case_id: h3 ? h3.textContent.trim() : null, slice: slice || null,
          position: labels.find(t => /^\d+ of \d+$/.test(t)) || null,
          next_enabled: Boolean(next && !next.disabled)};
}
"""


def _read_widget(widget: Locator) -> Shown | None:
    data = widget.evaluate(READ_WIDGET)
    if not (data["case_id"] and data["slice"] and data["position"]):
        return None
    return Shown(**data)


def _slice_disagreements(dataset: GoldDataset, run_root: Path) -> set[str]:
    """Independently of the widget: the SLICE cases the notebook's tuned candidate got wrong."""
    paths = sorted(run_root.glob("*@2-draft/*/development/results.jsonl"))
    assert len(paths) == 1, (
        f"expected one run of the tuned candidate under {run_root}, found {paths}"
    )
    join = join_results(dataset, read_results(paths[0]), partition="development")
    return {
        c.case_id for c in join.cases if c.slice == SLICE and c.error_class in DISAGREEMENT_CLASSES
    }


TABLE_FIT = """(output) => {
  const table = output.querySelector('table');
  const heads = Array.from(table.querySelectorAll('thead th')).map((th) => th.textContent.trim());
  const column = heads.indexOf('result');
  const box = output.getBoundingClientRect();
  const cells = Array.from(table.querySelectorAll('tbody tr'))
    .map((tr) => tr.children[column].getBoundingClientRect());
  return {heads, column, scroll: output.scrollWidth - output.clientWidth,
          outside: cells.filter((c) => c.left < box.left || c.right > box.right).length,
          cells: cells.length, right: Math.max(...cells.map((c) => c.right)), box: box.right};
}"""


def _assert_alignment_table_fits_1280(page: Page) -> None:
    """The develop notebook's first alignment table (``slice_table``) in JupyterLab at 1280x800:
    every slice's result inside the output area, which does not scroll sideways (before: the
    result was the last of 13 columns of unwrapped headings, past the right edge)."""
    page.set_viewport_size({"width": 1280, "height": 800})
    has_result = page.locator("th", has_text=re.compile(r"^\s*result\s*$"))
    output = page.locator(".jp-OutputArea-output", has=has_result).first
    output.scroll_into_view_if_needed()
    fit: dict[str, Any] = {}

    def fits() -> bool:
        fit.update(output.evaluate(TABLE_FIT))
        return fit["column"] >= 0 and fit["cells"] > 0 and not fit["outside"] and fit["scroll"] <= 1

    wait_until(
        fits, timeout_s=10, what="the alignment table to fit 1280 px", diagnose=lambda: str(fit)
    )
    assert fit["column"] == 1, fit["heads"]  # the result right after the slice


def test_review_widget_in_jupyterlab_filters_by_slice_and_steps(
    jupyterlab: JupyterLabServer, page: Page, tmp_path: Path
) -> None:
    lab = jupyterlab
    local = f"http://127.0.0.1:{lab.port}/"
    watch = watch_page(page, allow=lambda url: url.startswith((local, "data:", "blob:", "about:")))
    page.goto(lab.url(f"lab/tree/{NOTEBOOK}"), wait_until="domcontentloaded", timeout=60_000)

    state: dict[str, str] = {"kernel": ""}

    def kernel_connected() -> bool:
        state["kernel"] = page.evaluate(KERNEL_STATE, NOTEBOOK)
        return state["kernel"] in ("connected/idle", "connected/busy")

    wait_until(
        kernel_connected,
        timeout_s=60,
        what="the notebook's kernel to connect",
        diagnose=lambda: f"last state: {state['kernel']}\n{lab.log_tail()}",
    )
    assert page.evaluate(RUN_ALL, NOTEBOOK), "could not make 01_develop.ipynb the current notebook"

    progress: dict[str, Any] = {}

    def run_finished() -> bool:
        progress.update(page.evaluate(RUN_STATE, NOTEBOOK))
        if progress["errors"] or progress["error"]:
            pytest.fail(
                f"01_develop.ipynb failed in JupyterLab: {progress['errors'] or progress['error']}",
                pytrace=False,
            )
        return bool(progress["done"]) and progress["kernel"] == "idle"

    wait_until(
        run_finished,
        timeout_s=150,
        interval_s=0.5,
        what="01_develop.ipynb to finish running all cells",
        diagnose=lambda: f"progress: {progress}\n{lab.log_tail()}",
    )
    assert progress["executed"] == progress["code"], f"not every code cell ran: {progress}"
    assert (
        "base_url"
        not in yaml.safe_load(
            (ROOT / "data" / "candidates" / "support-llm-judge@1.yaml").read_text()
        )["endpoint"]
    )  # only the variable
    ports = _demo_model_ports(tmp_path / "runs" / "develop")
    assert len(ports) == 1 and 0 not in ports, (
        f"the notebook's demo model should serve one free port: {ports}"
    )
    _assert_alignment_table_fits_1280(page)

    slice_dropdown = page.locator(
        ".widget-dropdown", has=page.locator("label", has_text=re.compile(r"^slice$"))
    )
    widget = page.locator(".jp-OutputArea-output", has=slice_dropdown).last
    select = widget.locator(
        ".widget-dropdown", has=page.locator("label", has_text=re.compile(r"^slice$"))
    ).locator("select")
    position = widget.locator("div.widget-label", has_text=re.compile(r"^\s*\d+ of \d+\s*$")).first
    detail = widget.locator(".widget-html-content").first
    next_button = widget.locator("button.widget-button", has_text=re.compile(r"^\s*next\s*$"))
    try:
        select.wait_for(state="visible", timeout=30_000)
        position.wait_for(state="visible", timeout=30_000)
        detail.locator("h3").first.wait_for(state="visible", timeout=30_000)
    except Exception as exc:  # Playwright's TimeoutError: say what was missing
        pytest.fail(f"the review widget did not render: {exc}\n{lab.log_tail()}", pytrace=False)

    options: list[str] = select.locator("option").evaluate_all(
        "options => options.map(o => o.value)"
    )
    wanted = [o for o in options if re.fullmatch(rf"{SLICE} \(\d+\)", o)]
    assert len(wanted) == 1, f"no slice option for {SLICE!r} among {options}"
    dataset = load_dataset(ROOT / DEMO_GOLD)
    select.select_option(value=wanted[0])

    expected = _slice_disagreements(dataset, tmp_path / "runs" / "develop")
    seen: dict[str, Shown | None] = {"last": None}

    def showing(predicate: Callable[[Shown], bool]) -> Callable[[], Shown | None]:
        """Poll until the widget shows the same thing twice in a row and ``predicate`` holds."""

        def check() -> Shown | None:
            previous, seen["last"] = seen["last"], _read_widget(widget)
            shown = seen["last"]
            return shown if shown is not None and shown == previous and predicate(shown) else None

        return check

    first = wait_until(
        showing(lambda s: s.slice == SLICE and s.position == f"1 of {len(expected)}"),
        timeout_s=20,
        what=f"the widget to show the first of {len(expected)} {SLICE} disagreements",
        diagnose=lambda: f"widget shows {seen['last']}",
    )
    assert first.case_id in expected, (
        f"{first.case_id} is not a {SLICE} disagreement of the tuned candidate ({sorted(expected)})"
    )
    assert len(expected) >= 2, (
        f"only {len(expected)} {SLICE} disagreement(s) in the demo development run; the test"
        " needs two"
    )
    assert first.next_enabled, f"'next' is disabled at {first.position}"

    next_button.click()
    second = wait_until(
        showing(lambda s: s.case_id != first.case_id),
        timeout_s=20,
        what="'next' to show another case",
        diagnose=lambda: f"widget shows {seen['last']}",
    )
    assert second.slice == SLICE, f"after 'next' the widget left the slice filter: {second}"
    assert second.case_id in expected, (
        f"{second.case_id} is not a {SLICE} disagreement of the tuned candidate"
    )
    assert second.position == f"2 of {len(expected)}", (
        f"position after 'next' is {second.position!r}"
    )

    external = watch.blocked
    assert not external, f"JupyterLab tried to reach the network from the browser: {external}"
