"""The certification report in a real browser (Debian chromium via Playwright, offline).

1. The first screen at 1280x800 answers the four questions: what was certified (candidate,
   fingerprint, policy, gold release, date), the outcome, why (one line per slice) and what to
   do next; the per-slice table with each slice's result is inside the first screen.
2. Both endings of the demo: rubric-judge@2 fails its controls (held-out data not used) and
   rubric-judge@3 needs review, with the number of human-fail cases each slice lacks; @3's
   report names @2's as the last certification of the same judge.
3. Print: the report printed to PDF (A4 and Letter), read back page by page (tests/pdf_text.py):
   every table row whole on one page (no column cut off: the per-slice result, the controls'
   reasons), every slice's result and the dataset's name, version and release on the first page,
   no heading apart from what it introduces. On screen both endings fit a 1280 px window.
4. Nothing loads from the network (every request but the file itself is blocked, and none is
   made); hostile text in the restricted page's new columns (rationales, adjudication reason,
   grading notes) stays text.

Screenshots go to ``$WORKBENCH_TEST_ARTIFACTS`` (default ``test-artifacts/``).
Without ``/usr/bin/chromium`` these tests are skipped with the reason; CI installs it.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from _certified import demo_endings
from browser_support import launch_chromium, require_chromium, watch_page
from conftest import RUBRIC, make_case, write_dataset
from pdf_text import read_pdf

from workbench.approval import freeze_path
from workbench.gold import load_dataset
from workbench.reports import certify, read_lock
from workbench.stats import cases_to_bound

pytestmark = [pytest.mark.browser, pytest.mark.notebook]

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
VIEWPORT = {"width": 1280, "height": 800}
SCRIPT = "<script>window.__pwned = 1</script>"
IMG = '<img src=x onerror="window.__pwned=2">'
BREAKER = "</td></tr></table><div id=broken>"


def artifacts_dir() -> Path:
    """Where screenshots go: ``$WORKBENCH_TEST_ARTIFACTS`` or ``test-artifacts/`` in the repo."""
    path = Path(os.environ.get("WORKBENCH_TEST_ARTIFACTS") or ROOT / "test-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def chromium() -> None:
    require_chromium()


@pytest.fixture(scope="module")
def browser(chromium: None) -> Iterator[Browser]:
    with launch_chromium() as browser:
        yield browser


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(15_000)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture(scope="module")
def demo_reports(chromium: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The demo's two certifications, in make demo's order, on a copy of the demo gold (shared by
    the run, tests/_certified.py: read them, never write there)."""
    two, three = demo_endings(tmp_path_factory).results
    return {"2": two.report_dir, "3": three.report_dir}


def _open(page: Page, path: Path) -> Any:
    watch = watch_page(page)  # every request but file:// and data: is aborted
    page.goto(path.as_uri(), wait_until="load")
    page.wait_for_load_state("networkidle")
    return watch


def _in_first_screen(page: Page, selector: str) -> list[dict[str, Any]]:
    """Bounding boxes of every element matching ``selector`` (document coordinates, no scroll)."""
    return page.evaluate(
        """(sel) => Array.from(document.querySelectorAll(sel)).map(e => {
            const r = e.getBoundingClientRect();
            return {text: e.textContent.trim(), top: r.top + window.scrollY,
                    bottom: r.bottom + window.scrollY, left: r.left, right: r.right,
                    visible: r.width > 0 && r.height > 0};
        })""",
        selector,
    )


def _within(box: dict[str, Any]) -> bool:
    return (
        box["visible"]
        and box["bottom"] <= VIEWPORT["height"]
        and box["right"] <= VIEWPORT["width"]
        and box["top"] >= 0
    )


# -- 1 and 2: the first screen, both endings --------------------------------------------------
def test_first_screen_answers_what_outcome_why_and_next(
    demo_reports: dict[str, Path], page: Page
) -> None:
    report = demo_reports["3"]
    lock = read_lock(report)
    gate = json.loads((report / "gate.json").read_text())
    watch = _open(page, report / "report.html")
    page.screenshot(path=str(artifacts_dir() / "report-first-screen.png"))

    banner = page.locator("div.wb-outcome")
    assert (
        banner.count() == 1
        and banner.get_attribute("data-outcome") == lock.outcome == "review_required"
    )
    assert _within(_in_first_screen(page, "div.wb-outcome")[0]), (
        "the outcome is not inside the first 1280x800 screen"
    )
    assert banner.inner_text().strip().splitlines()[0] == "REVIEW REQUIRED"

    what = page.locator("table.wb-what")
    text = what.inner_text()
    assert _within(_in_first_screen(page, "table.wb-what")[0])
    assert lock.candidate in text and lock.candidate_fingerprint[:12] in text
    assert "support-release@3" in text
    release = load_dataset(ROOT / "data" / "demo").release
    assert release is not None and release.release_id in text
    assert lock.evaluated_at is not None and lock.evaluated_at.strftime("%Y-%m-%d") in text
    # beside the candidate: the last complete certification of the same judge (rubric-judge@2's)
    previous = read_lock(demo_reports["2"])
    assert re.search(
        rf"previous\s+{re.escape(previous.candidate)}\s+QUALITY FAILED\s+report"
        rf" {re.escape(previous.report_id)}",
        text,
    ), text

    # why: at most one line per slice, one for each slice the gate blocked
    why = _in_first_screen(page, "ul.wb-why li")
    blocked = sorted({b["slice"] for b in gate["blockers"] if b["slice"]})
    assert len(why) == len(blocked) == 2 and all(_within(b) for b in why)
    for name in blocked:
        needed = cases_to_bound(0.2)  # the figure `workbench plan` prints, not the zero-error floor
        have = next(
            b["evidence"]["human_fails_decided"] for b in gate["blockers"] if b["slice"] == name
        )
        line = next(b["text"] for b in why if name in b["text"])
        assert f"{needed - have} more human-fail cases needed" in line, line

    # what to do next, with exactly how many more human-fail cases each slice needs
    next_step = page.locator(".wb-next").inner_text()
    assert "freeze a new gold release and certify again" in next_step
    for name in blocked:
        have = next(
            b["evidence"]["human_fails_decided"] for b in gate["blockers"] if b["slice"] == name
        )
        assert f"{name} +{cases_to_bound(0.2) - have} human-fail" in next_step

    # the per-slice table, every slice's result inside the first screen
    figures = [f for f in lock.figures["slices"]] if lock.figures else []
    rows = _in_first_screen(page, "table.wb-slices tbody tr")
    badges = _in_first_screen(page, "table.wb-slices tbody tr td:nth-child(2) .badge")
    assert len(rows) == len(figures) == len(load_dataset(ROOT / "data" / "demo").rubric.slices)
    assert all(_within(b) for b in badges), (
        f"a slice result is below the first screen: {[b for b in badges if not _within(b)]}"
    )
    results = dict(
        zip(
            page.locator("table.wb-slices tbody tr").evaluate_all(
                "rows => rows.map(r => r.dataset.slice)"
            ),
            [b["text"] for b in badges],
            strict=True,
        )
    )
    assert {s for s, r in results.items() if r == "review"} == set(blocked)
    assert {r for s, r in results.items() if s not in blocked} == {"pass"}
    headers = page.locator("table.wb-slices thead th").all_inner_texts()
    for column in (
        "risk",
        "n",
        "coverage",
        "false-pass rate [95% CI]",
        "FP limit",
        "basis",
        "result",
    ):
        assert column in headers, headers
    body = page.inner_text("body")
    assert not re.search(r"\b(NaN|None|nan)\b", body), re.findall(
        r".{30}\b(?:NaN|None|nan)\b.{30}", body
    )[:3]
    assert watch.requests == [(report / "report.html").as_uri()] and not watch.blocked


def test_controls_ending_says_held_out_was_not_used(
    demo_reports: dict[str, Path], page: Page
) -> None:
    report = demo_reports["2"]
    _open(page, report / "report.html")
    page.screenshot(path=str(artifacts_dir() / "report-controls-failed-first-screen.png"))
    assert page.locator("div.wb-outcome").get_attribute("data-outcome") == "quality_failed"
    assert (
        page.locator(".wb-next").inner_text().strip()
        == "Next: Controls failed; held-out data was not used; fix the judge and certify again."
    )
    assert (
        "none" in page.locator("table.wb-what tr", has_text="previous").inner_text()
    )  # the first certification of the judge
    why = page.locator("ul.wb-why li").all_inner_texts()
    assert (
        len(why) == 1
        and "negative: 2 of 4 failed" in why[0]
        and "adversarial: 1 of 6 failed" in why[0]
    )
    results = page.locator("table.wb-slices tbody tr td:nth-child(2)").all_inner_texts()
    assert results and set(results) == {"not run"}
    body = page.inner_text("body")
    assert (
        body.count("the held-out partition was not used") == 2
    )  # the table's footnote and the held-out section, not once per section
    assert not re.search(r"\b(NaN|None|nan)\b", body)
    # controls: one table, grouped by role, failed roles first, short reasons
    tables = page.locator("table.wb-controls")
    assert tables.count() == 1
    roles = tables.locator("tr.wb-role").evaluate_all(
        "rows => rows.map(r => [r.dataset.role, r.dataset.status])"
    )
    statuses = [s for _, s in roles]
    assert statuses == sorted(statuses, key={"failed": 0, "incomplete": 1, "passed": 2}.__getitem__)
    assert ["negative", "failed"] in roles and ["adversarial", "failed"] in roles
    reasons = tables.locator("tr[data-status='failed'] td:last-child").all_inner_texts()
    assert reasons and all(len(r) <= 140 for r in reasons)


def test_blockers_fold_their_evidence_one_per_slice_and_family(
    demo_reports: dict[str, Path], page: Page
) -> None:
    report = demo_reports["3"]
    gate = json.loads((report / "gate.json").read_text())
    _open(page, report / "report.html")
    groups = page.locator("details.wb-group")
    keys = groups.evaluate_all("ds => ds.map(d => d.dataset.slice + '/' + d.dataset.family)")
    assert len(keys) == len(set(keys)) == len({b["slice"] for b in gate["blockers"]})
    first = groups.first
    raw = first.locator(".wb-raw")
    assert not raw.is_visible()  # the raw evidence is folded
    first.locator("summary").click()
    assert raw.is_visible()
    evidence = raw.inner_text()
    exact = next(b["evidence"]["ci95_high"] for b in gate["blockers"])
    assert (
        repr(exact) not in evidence and "ci95_high = 0.434" in evidence
    )  # rounded for display; exact in gate.json


# -- 3: print and width ---------------------------------------------------------------------------
# The document's text in reading order: each heading's own text, its intro (the paragraphs right
# after it in the same block) and the first row, item or paragraph of what it introduces; and
# each table row's text. Charts (SVG) and elements not shown in print are left
# out. Whitespace is dropped on both sides of every comparison (a PDF has none where a line
# wraps), and case folded (headings may print upper-case).
DOCUMENT_TEXT = """() => {
  const skip = (el) => el.closest('svg, style, script') || !el.checkVisibility();
  const walker = document.createTreeWalker(document.querySelector('main'), NodeFilter.SHOW_TEXT);
  const headings = [];
  let current = null;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (skip(el)) continue;
    const heading = el.closest('h1, h2, h3');
    if (heading) {
      if (!current || current.el !== heading) {
        current = {el: heading, heading: '', intro: '', first: ''};
        headings.push(current);
      }
      current.heading += node.textContent;
    } else if (current) {
      const p = el.closest('p');
      if (!current.first && p && p.parentElement === current.el.parentElement) {
        current.intro += node.textContent;
      } else if (!current.first && node.textContent.trim()) {
        current.first = (el.closest('tr, li, p, summary, pre') || el).textContent;
      }
    }
  }
  const rows = Array.from(document.querySelectorAll('main tr'))
    .filter((tr) => !skip(tr))
    .map((tr) => ({table: tr.closest('table').className, text: tr.textContent}));
  return {headings: headings.map(({heading, intro, first}) => ({heading, intro, first})), rows};
}"""


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text)).casefold()


def _printed(page: Page, paper: str) -> list[str]:
    """The report printed on ``paper`` (as Chromium's print dialog does), each page's text; the
    A4 PDF's first two pages as Chromium's PDF viewer shows them go to the artifacts too
    (docs/img/report-print-page*.png)."""
    page.emulate_media(media="print")
    pdf = page.pdf(format=paper, print_background=True)
    path = artifacts_dir() / ("report.pdf" if paper == "A4" else f"report-{paper}.pdf")
    path.write_bytes(pdf)
    for n in (1, 2) if paper == "A4" else ():
        viewer = page.context.new_page()  # a new page each: a changed #page= does not reload
        viewer.set_viewport_size({"width": 900, "height": 1290})
        viewer.goto(f"{path.as_uri()}#page={n}&toolbar=0&navpanes=0&view=FitH")
        viewer.wait_for_timeout(2000)  # the viewer draws the page after load
        viewer.screenshot(path=str(artifacts_dir() / f"report-print-page{n}.png"))
        viewer.close()
    return [_squash("".join(run.text for run in p.runs)) for p in read_pdf(pdf)]


@pytest.mark.parametrize("paper", ["A4", "Letter"])
def test_printed_report_keeps_every_column_row_and_heading_with_its_content(
    demo_reports: dict[str, Path], page: Page, paper: str
) -> None:
    report = demo_reports["3"]
    watch = _open(page, report / "report.html")
    page.emulate_media(media="print")
    printed = page.evaluate("""() => ({
            padding: getComputedStyle(document.querySelector('main.wb-page')).paddingLeft,
            background: getComputedStyle(document.body).backgroundColor,
            folded: Array.from(document.querySelectorAll('details.wb-group .wb-raw'))
              .map(e => e.getBoundingClientRect().height),
        })""")
    assert printed["padding"] == "0px" and printed["background"] in (
        "rgb(255, 255, 255)",
        "rgba(0, 0, 0, 0)",
    )
    assert printed["folded"] and all(h > 0 for h in printed["folded"]), (
        "the blockers' evidence is not printed"
    )
    document = page.evaluate(DOCUMENT_TEXT)
    pages = _printed(page, paper)
    assert len(pages) >= 3

    # every table row printed whole on one page: no column cut at the page's edge (the per-slice
    # table's result, the controls' reasons), no row split between pages
    rows = [(r["table"], _squash(r["text"])) for r in document["rows"]]
    assert {t for t, _ in rows} >= {"wb-table wb-slices", "wb-table wb-controls", "wb-what"}
    cut = [(table, text) for table, text in rows if not any(text in p for p in pages)]
    assert not cut, f"{len(cut)} of {len(rows)} table rows not printed whole on a page: {cut[:3]}"
    slices = page.locator("table.wb-slices tbody tr").evaluate_all(
        "rows => rows.map(r => [r.dataset.slice, r.dataset.result])"
    )
    assert len(slices) == 7 and {r for _, r in slices} == {"pass", "review"}
    first = pages[0]
    for name, result in slices:  # the verdict of every slice on the first page, beside its name
        assert _squash(name + result) in first, (name, result)
    # the dataset named by name, version and release on the first page
    release = load_dataset(ROOT / "data" / "demo").release
    assert release is not None
    assert _squash(f"tallowmere-support-demo 1.0.0, release {release.release_id}") in first

    # no heading stranded at the foot of a page: each is printed on the page that holds its
    # intro and the first row, item or paragraph of what it introduces
    headings = document["headings"]
    assert {"controls", "blockers"} <= {_squash(h["heading"]).split("(")[0] for h in headings}
    kept = {h["heading"]: _squash(h["heading"] + h["intro"] + h["first"]) for h in headings}
    stranded = [heading for heading, text in kept.items() if not any(text in p for p in pages)]
    assert not stranded, f"headings printed apart from what follows them: {stranded}"
    assert not watch.blocked and watch.requests == [(report / "report.html").as_uri()]


@pytest.mark.parametrize("ending", ["2", "3"])
def test_report_fits_a_1280_px_window(
    demo_reports: dict[str, Path], page: Page, ending: str
) -> None:
    _open(page, demo_reports[ending] / "report.html")
    width = page.evaluate("document.documentElement.scrollWidth")
    wide = page.evaluate(
        """() => Array.from(document.querySelectorAll('main *'))
          .filter(e => e.getBoundingClientRect().right > window.innerWidth)
          .slice(0, 3).map(e => e.tagName + '.' + e.className)"""
    )
    assert width <= VIEWPORT["width"], f"the page is {width} px wide: {wide}"


# -- 4: offline, escaped -------------------------------------------------------------------------
def _hostile_gold(root: Path) -> Path:
    def hostile(case_id: str, label: str, **kw: Any) -> dict[str, Any]:
        case = make_case(case_id, label, partition="held_out", **kw)
        case["grading_notes"] = f"Notes {SCRIPT} {BREAKER}"
        case["reviews"] = [
            {"reviewer": "rev-a", "label": label, "rationale": f"rationale {IMG}"},
            {"reviewer": "rev-b", "label": label, "rationale": f"second {BREAKER}"},
        ]
        case["adjudication"] = {
            "label": label,
            "reason": f"adjudicated {SCRIPT}",
            "adjudicator": "adj-1",
        }
        return case

    held_out = [
        hostile(
            "h-1", "pass", slice="billing", response=f"no money {BREAKER}"
        ),  # keyword judge fails it: a false fail
        hostile(
            "h-2", "fail", slice="general", response=f"refund {IMG}"
        ),  # the judge passes it: a false pass
        make_case(
            "h-ok", "pass", partition="held_out", slice="billing", response="refund on its way"
        ),
    ]
    others = [
        make_case(
            "d-1", "pass", partition="development", slice="billing", response="refund issued"
        ),
        make_case("c-1", "fail", partition="calibration", slice="general", response="no"),
    ]
    gold = write_dataset(root / "gold", [*others, *held_out])
    freeze_path(gold, approver="Support Quality lead (demo)")  # certification needs a release
    return gold


@pytest.fixture(scope="module")
def hostile_restricted(chromium: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile-restricted")
    gold = _hostile_gold(root)
    policy = {
        "schema_version": 1, "name": "browser-report", "version": "1", "owner": "test",
        "rationale": "test policy", "rubric_version": RUBRIC["version"], "partition": "held_out",
        "min_n_per_slice": 1,
        "slices": {
            "billing": {
                "risk": "critical", "max_abstention_rate": 0.1, "max_false_passes": 0,
                "max_false_pass_rate": 0.5, "false_pass_rate_basis": "upper_95",
            },
            "general": {
                "risk": "low", "max_false_pass_rate": 0.5, "false_pass_rate_basis": "point",
            },
            "empty": {
                "risk": "medium", "max_false_pass_rate": 0.5, "false_pass_rate_basis": "point",
                "min_n": 0,
            },
        },
    }  # fmt: skip
    (root / "browser-report@1.yaml").write_text(yaml.safe_dump(policy), encoding="utf-8")
    spec = {
        "schema_version": 1,
        "name": "hostile-judge",
        "version": "1",
        "kind": "ragas-function",
        "description": "keyword judge",
        "labels": ["pass", "fail"],
        "function": "judge_fixtures:keyword_judge",
    }
    (root / "hostile-judge@1.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)
        mp.setenv("WORKBENCH_CACHE_DIR", str(root / "cache"))
        mp.setenv("PYTHONPATH", str(TESTS), prepend=":")
        result = certify(
            root / "hostile-judge@1.yaml",
            root / "browser-report@1.yaml",
            gold,
            reports_root=root / "reports",
        )
    return result.report_dir


def test_restricted_page_shows_rationales_beside_the_judge_and_keeps_them_text(
    hostile_restricted: Path, page: Page
) -> None:
    path = hostile_restricted / "restricted" / "held_out_cases.html"
    watch = _open(page, path)
    page.screenshot(path=str(artifacts_dir() / "restricted-page.png"))
    assert not watch.dialogs and page.evaluate("typeof window.__pwned") == "undefined"
    assert (
        page.locator("#broken").count() == 0
        and page.locator("[onerror]").count() == 0
        and page.locator("table").count() == 1
    )
    headers = page.locator("table thead th").all_inner_texts()
    assert (
        headers[:1] == ["case_id"]
        and "grading_notes" in headers
        and "human: reviews and adjudication" in headers
        and "judge: verdict and reason" in headers
    )
    rows = {r.locator("td").first.inner_text(): r for r in page.locator("table tbody tr").all()}
    assert set(rows) == {"h-1", "h-2"}
    assert list(rows)[0] == "h-2"  # the false pass first
    human = rows["h-2"].locator("td.human").inner_text()
    assert (
        f"adjudicated {SCRIPT}" in human
        and f"rationale {IMG}" in human
        and f"second {BREAKER}" in human
    )
    judge = rows["h-2"].locator("td.judge").inner_text()
    assert judge.startswith("pass")
    notes = rows["h-2"].locator("td").nth(headers.index("grading_notes")).inner_text()
    assert notes == f"Notes {SCRIPT} {BREAKER}"
    # same styling as the report: the page's own stylesheet, a CSP, nothing fetched
    assert page.locator("main.wb-page").count() == 1
    assert page.locator("meta[http-equiv='Content-Security-Policy']").count() == 1
    assert watch.requests == [path.as_uri()] and not watch.blocked and not watch.console_errors
