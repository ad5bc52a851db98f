"""The annotation queue in JupyterLab (issue 29), driven in Debian's chromium at 1280x800: two
reviewers label the same five cases blind, keys first, one citing text by selecting it; an
adjudicator resolves the one disagreement; `validate` and `agreement` accept the gold.

Screenshot: ``$WORKBENCH_TEST_ARTIFACTS/annotation-queue.png``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser_support import JupyterLabServer, launch_chromium, require_chromium, watch_page
from click.testing import CliRunner
from conftest import make_case
from test_annotation import _reviewers
from test_browser_widget import artifacts_dir
from widget_lab import NOTEBOOK, VIEWPORT, cell, lab_env, open_and_run, wait_for

from workbench.annotation import Annotations
from workbench.cli import main
from workbench.gold import load_dataset

pytestmark = pytest.mark.browser
LONG = "The parcel went out on Monday. " * 160  # ~5,000 characters
PRIVATE = "ann-private-rationale"


def _gold(make_dataset) -> Path:
    _reviewers("ann", "bo", "cy")
    gold = make_dataset([])
    cases = []
    for i in range(5):
        case = make_case(f"c{i}", response=(LONG if i == 2 else "") + f"Refund in 5 days ({i}).")
        for key in ("reviews", "adjudication", "rubric_version", "response_hash"):
            case.pop(key)
        case["metadata"] = {"generator": "secret-model-x"}
        cases.append(case)
    Annotations(gold).queue(cases, ["ann", "bo"], assigned_by="lead", training_version="t1")
    return gold


def _notebook(root: Path, gold: Path) -> None:
    source = (
        "from workbench.ui import AnnotationQueue\n"
        f"ann = AnnotationQueue({str(gold)!r}, 'ann')\nbo = AnnotationQueue({str(gold)!r}, 'bo')"
    )
    cells = [cell(source), cell("ann"), cell("bo")]
    nb = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "P"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    root.mkdir(parents=True, exist_ok=True)
    (root / NOTEBOOK).write_text(json.dumps(nb), encoding="utf-8")


SELECT = """(el, needle) => {
  const box = el.querySelector('.wb-ann-text[data-field=response]');
  const text = box.firstChild, at = text.textContent.indexOf(needle);
  const range = document.createRange();
  range.setStart(text, at); range.setEnd(text, at + needle.length);
  const sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range);
  box.dispatchEvent(new MouseEvent('mouseup', {bubbles: true}));
  return at;
}"""


def test_two_reviewers_label_blind_and_an_adjudicator_resolves(make_dataset, tmp_path) -> None:
    require_chromium()
    gold = _gold(make_dataset)
    _notebook(tmp_path / "lab", gold)
    server = JupyterLabServer(tmp_path / "lab", tmp_path / "home", lab_env(tmp_path))
    server.start()
    try:
        with launch_chromium() as browser:
            page = browser.new_context(viewport=VIEWPORT).new_page()
            local = f"http://127.0.0.1:{server.port}/"
            watch = watch_page(page, allow=lambda u: u.startswith((local, "data:", "blob:")))
            open_and_run(page, server)
            ann, bo = page.locator(".wb-annotate").nth(0), page.locator(".wb-annotate").nth(1)
            for root in (ann, bo):
                wait_for(
                    lambda r=root: r.get_attribute("data-wb-keys") == "ready",
                    timeout_s=60,
                    what="the widget's keys",
                )
            for k in range(5):
                if k == 2:  # the 5,000-character case: the form stays on screen
                    wait_for(lambda: "case c2 " in ann.inner_text(), timeout_s=30, what="c2")
                    ann.evaluate("(el) => el.scrollIntoView({block: 'start'})")
                    box = ann.locator(".wb-ann-submit").bounding_box()
                    assert box is not None and box["y"] + box["height"] <= VIEWPORT["height"]
                    assert ann.bounding_box()["height"] < 700
                    page.screenshot(path=str(artifacts_dir() / "annotation-queue.png"))
                _label(page, ann, f"c{k}", "1", cite="Refund in 5 days", rationale=PRIVATE)
            for k in range(5):
                shown = bo.inner_text()
                assert PRIVATE not in shown and "secret-model-x" not in shown  # blind
                _label(page, bo, f"c{k}", "2" if k == 3 else "1")
            for root in (ann, bo):
                wait_for(
                    lambda r=root: "No case left" in r.inner_text(),
                    timeout_s=90,
                    what="the end of the queue",
                )
            assert not watch.blocked and not watch.dialogs
    finally:
        server.stop()
    queue = Annotations(gold)
    spans = [r.review.spans for r in queue.reviews() if r.review.reviewer == "ann"]
    assert all(s and s[0].text == "Refund in 5 days" and s[0].field == "response" for s in spans)
    assert {s.case_id: s.status for s in queue.status()}["c3"] == "disagreement"
    assert len(queue.adjudicate_agreements("cy")) == 4
    run = CliRunner().invoke
    decided = run(
        main,
        [
            "adjudicate",
            "--gold",
            str(gold),
            "--adjudicator",
            "cy",
            "--case",
            "c3",
            "--label",
            "fail",
            "--reason",
            "bo is right",
        ],
    )
    assert decided.exit_code == 0, decided.output
    assert run(main, ["validate", str(gold)]).exit_code == 0
    agreement = run(main, ["agreement", str(gold), "--json"])
    assert agreement.exit_code == 0 and json.loads(agreement.output)["overall"]["cases"] == 5
    assert load_dataset(gold).cases["c3"].gold_label == "fail"


def _label(page, root, case_id: str, key: str, *, cite: str = "", rationale: str = "") -> None:
    wait_for(lambda: f"case {case_id} " in root.inner_text(), timeout_s=30, what=case_id)
    root.click(position={"x": 5, "y": 5})  # focus the widget (its keys)
    if cite:
        assert root.evaluate(SELECT, cite) >= 0
        wait_for(lambda: "“" + cite in root.inner_text(), timeout_s=20, what="the span chip")
    if rationale:
        root.locator("textarea").fill(rationale)
        root.locator("textarea").press("Escape")
    page.keyboard.press(key)
    page.keyboard.press("h")
    wait_for(lambda: root.locator(".wb-on").count() >= 2, timeout_s=20, what="label chosen")
    page.keyboard.press("s")
    # recorded once the widget moves on (a loaded machine's kernel may take a while)
    wait_for(
        lambda: f"case {case_id} " not in root.inner_text(),
        timeout_s=90,
        what=f"{case_id} recorded",
        diagnose=root.inner_text,
    )
