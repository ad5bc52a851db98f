"""Benchmark: filter changes in the review widget over 100,000 synthetic cases.

Builds a synthetic :class:`~workbench.review.ReviewTable` (no gold files), creates the
:class:`~workbench.ui.ReviewWidget` and times filter changes cycling through slices, error
classes, tags and the three toggles (humans disagreed, critical only, unreviewed only): from
setting ``.value`` on a widget to the updated view (every dropdown's conditional counts, the
toggles' counts, the chart, the case list, the position and progress labels and the detail
pane). Search is timed separately: typing a word letter by letter (each keystroke is a filter
change), a two-word query and clearing it; the first search also builds the lowercased text
index (reported as ``search_first_s``). The baseline, measured in the same run on the same
data, is one plain pandas filter ``frame[frame.slice == s]`` (on the table's categorical
column and on a plain object-dtype copy). Prints JSON. Target: median < 100 ms.

    .venv/bin/python bench/bench_widget.py [--cases 100000] [--changes 50]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from typing import Any

SLICES = {
    "refunds": "critical",
    "security": "critical",
    "shipping": "medium",
    "billing": "high",
    "privacy": "high",
    "general": "low",
}
CLASSES = ("aligned",) * 14 + ("false_pass", "false_fail", "disagreement", "error", "missing")
TAGS = [f"tag-{i:02d}" for i in range(24)]


def synthetic_records(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """``n`` review rows with realistic text sizes (deterministic)."""
    rng = random.Random(seed)
    slices = list(SLICES)
    rows = []
    for i in range(n):
        s = slices[i % len(slices)]
        cls = rng.choice(CLASSES)
        human = rng.choice(("pass", "fail"))
        judge = {
            "aligned": human,
            "false_pass": "pass",
            "false_fail": "fail",
            "disagreement": "review_required",
        }.get(cls)
        rows.append(
            {
                "case_id": f"case-{i:06d}",
                "slice": s,
                "risk": SLICES[s],
                "partition": "development",
                "tags": rng.sample(TAGS, rng.randint(0, 3)),
                "error_class": cls,
                "outcome": {"error": "error", "missing": "missing"}.get(cls, "verdict"),
                "human_label": human,
                "judge_label": judge,
                "judge_reason": "The response states the policy correctly." if judge else None,
                "error_kind": "timeout" if cls == "error" else None,
                "input": f"Customer {i} asks whether a late refund is possible for order {i * 7}.",
                "response": "Refunds after 30 days need a manual review by the billing team. " * 3,
                "grading_notes": "Must mention manual review; must not promise a refund.",
                "reviews": [
                    {
                        "reviewer": "rev-a",
                        "label": human,
                        "confidence": "high",
                        "rationale": "Follows the policy.",
                        "evidence": ["ev-1"],
                    },
                    {
                        "reviewer": "rev-b",
                        "label": human,
                        "confidence": "medium",
                        "rationale": "Mentions review.",
                        "evidence": [],
                    },
                ],
                "adjudication": {
                    "label": human,
                    "reason": "reviewers agree",
                    "adjudicator": "adj-1",
                },
                "rendered_request": {
                    "model": "m",
                    "messages": [{"role": "user", "content": f"judge case {i}"}],
                },
                "attempts": 1,
            }
        )
    return rows


def _changes(count: int, tag_names: list[str]) -> list[tuple[str, Any]]:
    """A cycle of (widget, value) changes; consecutive values of one widget always differ."""
    slices = ["(all)", *SLICES]
    classes = [
        "(all disagreements)",
        "false_pass",
        "false_fail",
        "error",
        "aligned",
        "(all cases)",
        "disagreement",
        "missing",
    ]
    tags = ["(any)", *tag_names[:7]]
    pools: dict[str, list[Any]] = {
        "slice": slices,
        "class": classes,
        "tag": tags,
        "humans": [True, False],
        "critical": [True, False],
        "unreviewed": [True, False],
    }
    order = ("slice", "class", "tag", "humans", "slice", "class", "critical", "tag", "unreviewed")
    out = []
    for k in range(count):
        which = order[k % len(order)]
        pool = pools[which]
        turn = sum(1 for j in range(k) if order[j % len(order)] == which)
        out.append((which, pool[(turn + 1) % len(pool)]))
    return out


SEARCHES = [
    "r",
    "re",
    "ref",
    "refu",
    "refun",
    "refund",
    "refund late",
    "refund",
    "",
    "billing team",
    "",
]


def _ms(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "median_ms": round(statistics.median(ordered) * 1e3, 4),
        "p95_ms": round(p95 * 1e3, 4),
        "max_ms": round(ordered[-1] * 1e3, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--changes", type=int, default=50)
    args = parser.parse_args()

    from workbench.review import ReviewTable
    from workbench.ui import ReviewWidget

    t0 = time.perf_counter()
    records = synthetic_records(args.cases)
    t_synth = time.perf_counter() - t0
    t0 = time.perf_counter()
    table = ReviewTable.from_records(records, judge_fingerprint="bench")
    t_table = time.perf_counter() - t0
    t0 = time.perf_counter()
    widget = ReviewWidget(table, reviewer="bench")
    t_widget = time.perf_counter() - t0

    # a few hundred reviewed cases, so "unreviewed only" and the progress label have work to do
    for case_id in [f"case-{i:06d}" for i in range(0, args.cases, max(1, args.cases // 500))]:
        widget.model.mark_reviewed(case_id)

    dropdowns = {
        "slice": widget.slice_filter,
        "class": widget.class_filter,
        "tag": widget.tag_filter,
        "humans": widget.disagree_toggle,
        "critical": widget.critical_toggle,
        "unreviewed": widget.unreviewed_toggle,
    }
    attribute = {
        "slice": "slice",
        "class": "error_class",
        "tag": "tag",
        "humans": "humans_disagree",
        "critical": "critical_only",
        "unreviewed": "unreviewed_only",
    }
    timings: list[float] = []
    cold: list[float] = []  # first use of a filter value: its mask is computed, not cached
    seen: set[tuple[str, str]] = set()
    for which, value in _changes(args.changes, list(table.tags)):
        t0 = time.perf_counter()
        dropdowns[which].value = value  # observers run synchronously
        timings.append(time.perf_counter() - t0)
        if (which, value) not in seen:
            seen.add((which, value))
            cold.append(timings[-1])
        assert widget.position.value == widget.model.position_text()
        assert widget.progress.value == widget.model.progress_text()
        expected = getattr(widget.model, attribute[which])
        assert expected == value, (which, value, expected)

    search_times: list[float] = []
    t_first_search = None
    for query in SEARCHES:
        t0 = time.perf_counter()
        widget.search.value = query
        elapsed = time.perf_counter() - t0
        if t_first_search is None:
            t_first_search = elapsed  # includes building the text index
        else:
            search_times.append(elapsed)
        assert (
            widget.model.search == query and widget.position.value == widget.model.position_text()
        )

    frame = table.frame
    plain = frame.assign(slice=frame["slice"].astype(object))
    base_cat: list[float] = []
    base_obj: list[float] = []
    for k in range(args.changes):
        s = list(SLICES)[k % len(SLICES)]
        t0 = time.perf_counter()
        frame[frame.slice == s]
        base_cat.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        plain[plain.slice == s]
        base_obj.append(time.perf_counter() - t0)

    widget_ms = _ms(timings)
    cat_ms = _ms(base_cat)
    obj_ms = _ms(base_obj)
    print(
        json.dumps(
            {
                "cases": len(table),
                "changes": len(timings),
                "filter_change": widget_ms,
                "filter_change_first_use": {"n": len(cold), **_ms(cold)},
                "search_keystroke": {"n": len(search_times), **_ms(search_times)},
                "search_first_s": round(t_first_search or 0.0, 3),
                "baseline_pandas_filter_categorical": cat_ms,
                "baseline_pandas_filter_object": obj_ms,
                "ratio_to_baseline_categorical": round(
                    widget_ms["median_ms"] / cat_ms["median_ms"], 3
                ),
                "ratio_to_baseline_object": round(widget_ms["median_ms"] / obj_ms["median_ms"], 3),
                "target_median_ms": 100,
                "meets_target": (
                    widget_ms["median_ms"] < 100 and _ms(search_times)["median_ms"] < 100
                ),
                "synthesize_s": round(t_synth, 3),
                "build_table_s": round(t_table, 3),
                "build_widget_s": round(t_widget, 3),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
