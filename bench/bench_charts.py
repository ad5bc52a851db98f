"""Benchmark: building the report charts, against converting them.

Each chart of ``workbench.reports`` (the slice-error chart with a gate, the same without one,
the candidates chart, the confusion heatmap, the threshold sweep) on fixed inputs of the demo's
size: the time to build the Altair chart, and to turn it into its Vega-Lite spec
(``to_dict()``, with Altair's schema validation, as ``to_svg`` does). The baseline measured in
the same run is vl-convert converting that spec to SVG: the part of a report chart no
construction can avoid. Medians over ``--repeats``.

``--against FILE`` also times another version of ``workbench/reports/_charts.py`` in the same
run, loaded in its place, and checks that its specs are the same. For the version before the
channel objects::

    git show 1d1d844:workbench/reports/_charts.py > /tmp/charts_1d1d844.py
    .venv/bin/python bench/bench_charts.py --against /tmp/charts_1d1d844.py
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import statistics
import time
from pathlib import Path
from types import ModuleType
from typing import Any


def _inputs() -> dict[str, Any]:
    import pandas as pd

    from workbench.reports._slices import SliceLimits, SliceRow
    from workbench.stats import wilson_rate

    limits = SliceLimits(None, 0.1, "upper_95", 0.2, "point", 0.0)
    rows = [
        SliceRow(
            f"slice-{i}",
            "critical" if i % 2 else "standard",
            40,
            38,
            wilson_rate(38, 40),
            wilson_rate(i, 20) if i != 6 else wilson_rate(0, 0),
            wilson_rate(1, 20),
            wilson_rate(2, 40),
            limits if i != 5 else None,
            "fail" if i == 3 else "pass",
        )
        for i in range(7)
    ]
    confusion = {
        "rows": ["pass", "fail"],
        "columns": ["pass", "fail", "(error)", "(missing)"],
        "counts": [[30, 2, 0, 1], [3, 25, 1, 0]],
    }
    sweep = pd.DataFrame(
        [
            {
                "threshold": t,
                "false_pass_rate": fp,
                "false_pass_rate_upper_95": up,
                "false_fail_rate": ff,
                "false_passes": int(fp * 20),
                "human_fails": 20,
                "false_fails": int(ff * 30),
                "human_passes": 30,
                "agreement": 0.8,
            }
            for t, fp, up, ff in [
                (-math.inf, 1.0, 1.0, 0.0),
                (0.1, 0.5, 0.7, 0.0),
                (0.3, 0.2, 0.35, 0.1),
                (0.5, 0.05, 0.12, 0.2),
                (0.9, 0.0, 0.08, 0.9),
            ]
        ]
    )
    return {"rows": rows, "confusion": confusion, "sweep": sweep}


def _makers(module: ModuleType, given: dict[str, Any]) -> dict[str, Any]:
    rows = given["rows"]
    return {
        "slice_error_chart, gated": lambda: module.slice_error_chart(rows, gate=object()),
        "slice_error_chart": lambda: module.slice_error_chart(rows),
        "candidates_chart": lambda: module.candidates_chart({"a@1": rows, "b@2": rows[:4]}),
        "confusion_heatmap": lambda: module.confusion_heatmap(given["confusion"]),
        "threshold_sweep_chart": lambda: module.threshold_sweep_chart(
            given["sweep"], limit=0.1, chosen=0.5, max_false_fail_rate=0.3
        ),
    }


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("workbench.reports._charts_against", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--against", type=Path, default=None)
    args = parser.parse_args()

    import vl_convert

    from workbench.reports import _charts

    given = _inputs()
    versions = {"current": _charts}
    if args.against is not None:
        versions["against"] = _load(args.against)
    timings: dict[str, dict[str, dict[str, list[float]]]] = {v: {} for v in versions}
    specs: dict[str, dict[str, Any]] = {v: {} for v in versions}
    vl_convert.vegalite_to_svg(_charts.slice_error_chart(given["rows"]).to_dict())  # V8 started
    for _ in range(args.repeats):
        for version, module in versions.items():  # interleaved: the same load for both
            for name, make in _makers(module, given).items():
                start = time.perf_counter()
                chart = make()
                built = time.perf_counter()
                spec = chart.to_dict()
                done = time.perf_counter()
                vl_convert.vegalite_to_svg(spec)
                converted = time.perf_counter()
                parts = timings[version].setdefault(name, {"build": [], "to_dict": [], "svg": []})
                parts["build"].append(built - start)
                parts["to_dict"].append(done - built)
                parts["svg"].append(converted - done)
                specs[version][name] = spec
    out: dict[str, Any] = {"repeats": args.repeats, "charts": {}}
    for version in versions:
        for name, parts in timings[version].items():
            median = {part: statistics.median(values) for part, values in parts.items()}
            row = out["charts"].setdefault(name, {})
            row[version] = {
                "build_s": round(median["build"], 4),
                "to_dict_s": round(median["to_dict"], 4),
                "svg_baseline_s": round(median["svg"], 4),
                "build_and_spec_over_svg": round(
                    (median["build"] + median["to_dict"]) / median["svg"], 2
                ),
            }
    for version in versions:
        build = sum(
            statistics.median(p["build"]) + statistics.median(p["to_dict"])
            for p in timings[version].values()
        )
        svg = sum(statistics.median(p["svg"]) for p in timings[version].values())
        out[f"{version}_all_charts"] = {
            "build_and_spec_s": round(build, 3),
            "svg_baseline_s": round(svg, 3),
            "over_svg": round(build / svg, 2),
        }
    if args.against is not None:
        out["current_over_against"] = round(
            out["current_all_charts"]["build_and_spec_s"]
            / out["against_all_charts"]["build_and_spec_s"],
            2,
        )
        out["same_specs"] = specs["current"] == specs["against"]
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
