"""Benchmark (not a test): review 25 disagreements in JupyterLab with the keyboard only.

Starts JupyterLab from this virtualenv on 127.0.0.1 (port 0), opens a notebook with the
review widget over the demo's development partition judged by the offline
``rubric-judge@2`` (25 disagreements), and drives Debian's chromium at 1280x800 with
Playwright. After one click to focus the widget, each case is reviewed with three keys, as a
person would, waiting to *see* each result before the next key:

    a cause digit (1-8)  -> the cause dropdown shows it
    s                    -> the progress label counts the note ("k of 25 reviewed")
    j                    -> the next case's id is shown

Reports the total and per-case wall time and each key's latency (key press to visible
result, polled on animation frames), plus the setup time. This is the widget's share of a
review; the reading a person does on top is not included. Notes go to a temporary file and
are checked at the end (25 notes, one per case, the causes pressed).

    .venv/bin/python bench/bench_review_keyboard.py [--cases 25] [--json out.json]

Needs /usr/bin/chromium (Debian) and the test extras (playwright); never downloads a browser.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from browser_support import CHROMIUM, launch_chromium  # noqa: E402
from widget_lab import (  # noqa: E402
    NOTEBOOK,
    OPEN_LEFT_PANEL,
    VIEWPORT,
    open_and_run,
    read,
    start_lab,
    widget_root,
)

from workbench.review import CAUSES  # noqa: E402

SHOWS = r"""
([root, kind, expected]) => {
  const labels = Array.from(root.querySelectorAll('div.widget-label'))
    .map(e => e.textContent.replace(/\u00a0/g, ' ').trim());
  if (kind === 'progress') return labels.includes(expected);
  if (kind === 'case') {
    const h = root.querySelector('.wb-case h3');
    return Boolean(h) && h.textContent.trim() === expected;
  }
  if (kind === 'cause') {
    const box = Array.from(root.querySelectorAll('.widget-dropdown')).find(d => {
      const l = d.querySelector('label');
      return l && l.textContent.trim() === 'cause';
    });
    return Boolean(box) && box.querySelector('select').value.split(' ')[1] === expected;
  }
  return false;
}
"""


def _ms(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "median_ms": round(statistics.median(ordered) * 1e3, 1),
        "mean_ms": round(statistics.fmean(ordered) * 1e3, 1),
        "p95_ms": round(p95 * 1e3, 1),
        "max_ms": round(ordered[-1] * 1e3, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--cases", type=int, default=25, help="disagreements to review (the demo has 25)"
    )
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args()
    if not CHROMIUM.is_file():
        print(f"error: {CHROMIUM} is missing (apt-get install chromium)", file=sys.stderr)
        return 2

    tmp = Path(tempfile.mkdtemp(prefix="bench-review-keyboard-"))
    t0 = time.perf_counter()
    lab, paths = start_lab(tmp, hostile=False)
    t_lab = time.perf_counter() - t0
    try:
        with launch_chromium() as browser:
            page = browser.new_context(viewport=VIEWPORT).new_page()
            t0 = time.perf_counter()
            open_and_run(page, lab)
            page.evaluate(OPEN_LEFT_PANEL)
            root = widget_root(page)
            t_notebook = time.perf_counter() - t0
            first = read(root)
            total = int(first["position"].split(" of ")[1])
            n = min(args.cases, total)
            handle = root.element_handle()

            def press_and_see(key: str, kind: str, expected: str) -> float:
                start = time.perf_counter()
                page.keyboard.press(key)
                page.wait_for_function(
                    SHOWS, arg=[handle, kind, expected], polling="raf", timeout=30_000
                )
                return time.perf_counter() - start

            root.evaluate("(el) => el.scrollIntoView({block: 'start'})")
            root.locator(".wb-case h3").click()  # the one click: focus the widget
            ids = [first["case_id"]]
            per_case, digit_s, save_s, next_s = [], [], [], []
            pressed: dict[str, str] = {}
            start_all = time.perf_counter()
            for k in range(n):
                start_case = time.perf_counter()
                cause = CAUSES[k % len(CAUSES)]
                digit_s.append(press_and_see(str(k % len(CAUSES) + 1), "cause", cause))
                save_s.append(press_and_see("s", "progress", f"{k + 1} of {total} reviewed"))
                pressed[ids[-1]] = cause
                if k + 1 < n:
                    start_next = time.perf_counter()
                    page.keyboard.press("j")
                    page.wait_for_function(
                        "([root, prev]) => { const h = root.querySelector('.wb-case h3'); return h"
                        " && h.textContent.trim() !== prev; }",
                        arg=[handle, ids[-1]],
                        polling="raf",
                        timeout=30_000,
                    )
                    next_s.append(time.perf_counter() - start_next)
                    ids.append(read(root)["case_id"])
                per_case.append(time.perf_counter() - start_case)
            total_s = time.perf_counter() - start_all
            page.screenshot(path=str(tmp / "after-review.png"))
    finally:
        lab.stop()

    notes = [json.loads(line) for line in paths["notes"].read_text(encoding="utf-8").splitlines()]
    written = {x["case_id"]: x["cause"] for x in notes}
    ok = len(notes) == n and written == pressed and len(set(ids)) == n
    result = {
        "notebook": NOTEBOOK,
        "viewport": VIEWPORT,
        "cases_reviewed": n,
        "keys_pressed": 3 * n - 1,
        "total_s": round(total_s, 2),
        "per_case": _ms(per_case),
        "key_to_visible": {
            "cause_digit": _ms(digit_s),
            "save_s": _ms(save_s),
            "next_j": _ms(next_s) if next_s else None,
        },
        "notes_written_ok": ok,
        "setup_s": {
            "jupyterlab_start": round(t_lab, 1),
            "open_and_run_notebook": round(t_notebook, 1),
        },
        "screenshot": str(tmp / "after-review.png"),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
