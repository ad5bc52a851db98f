"""Benchmark: the first ``align`` on a gold (``align_cold``: an empty cache directory, so the
gold is validated and its index written, and the results file parsed, as after an upgrade of the
workbench; ``align_cold_gold``: only the gold index empty, the results cache kept, as after an
edit of the gold) against ``align`` with both cached (``align``), in the same run (issue 31: cold
at 1M <= 2x warm, peak memory <= 1 GB).

Each measurement runs in a fresh subprocess (``bench/_child.py``): wall time, CPU time of every
thread (``process_time``, steadier than wall on a loaded machine) and peak RSS (``VmHWM``).
The two modes alternate over the repeats so both see the same load; every ``align_cold`` starts
from its own empty cache directory. ``--src DIR`` measures another checkout's ``workbench``
(e.g. ``git archive main workbench | tar -x -C DIR``) with this harness, for before/after.

    .venv/bin/python bench/bench_align_cold.py [--cases 100000] [--repeats 3] [--data DIR]
        [--src DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _child import PRELUDE  # noqa: E402

MEASURE = (
    PRELUDE
    + r"""
gold, results = sys.argv[1:3]
import workbench.align
t0 = time.perf_counter()
c0 = time.process_time()
report = workbench.align.align(gold, results, partition="development")
wall = time.perf_counter() - t0
cpu = time.process_time() - c0
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "peak_rss_mb": peak_mb(), "n": report.overall.n,
                  "workbench": os.path.dirname(sys.modules["workbench"].__file__)}))
"""
)
MODES = ("align_cold", "align_cold_gold", "align")
KEYS = ("wall_s", "cpu_s", "peak_rss_mb")


def measure(gold: Path, results: Path, cache: Path, src: Path | None) -> dict[str, Any]:
    env = {**os.environ, "WORKBENCH_CACHE_DIR": str(cache), "RAGAS_DO_NOT_TRACK": "true"}
    env.pop("WORKBENCH_GOLD_INDEX", None)
    if src is not None:
        env["BENCH_WORKBENCH_SRC"] = str(src)
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, str(gold), str(results)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=gold.parent,  # outside any project: the repo's workbench.yaml is not the gold's
    )
    return json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        k: {
            "median": round(statistics.median(r[k] for r in runs), 3),
            "range": [round(min(r[k] for r in runs), 3), round(max(r[k] for r in runs), 3)],
        }
        for k in KEYS
    }


def run(cases: int, repeats: int, data: Path | None, src: Path | None) -> dict[str, Any]:
    from synth import synthetic_files

    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        gold, results = synthetic_files(data if data is not None else Path(tmp), cases)
        warm = Path(tmp) / "warm-cache"
        measure(gold, results, warm, src)  # builds the warm index, unmeasured
        runs: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
        for i in range(repeats):
            runs["align_cold"].append(measure(gold, results, Path(tmp) / f"cold-{i}", src))
            cold_gold = Path(tmp) / f"cold-gold-{i}"
            cold_gold.mkdir()
            (cold_gold / "results").symlink_to(warm / "results")  # the results cache kept
            runs["align_cold_gold"].append(measure(gold, results, cold_gold, src))
            runs["align"].append(measure(gold, results, warm, src))
            loads.append(os.getloadavg()[0])
    med = {m: summary(rs) for m, rs in runs.items()}
    ratio, gold_ratio = (
        {k: round(med[m][k]["median"] / med["align"][k]["median"], 2) for k in ("wall_s", "cpu_s")}
        for m in ("align_cold", "align_cold_gold")
    )
    cold_peak = med["align_cold"]["peak_rss_mb"]["median"]
    return {
        "cases": cases,
        "repeats": repeats,
        "load_average_1min": [round(x, 2) for x in loads],
        "workbench_measured": sorted({r["workbench"] for rs in runs.values() for r in rs}),
        "cases_in_scope": sorted({r["n"] for rs in runs.values() for r in rs}),
        **med,
        "cold_over_warm": ratio,
        "cold_gold_over_warm": gold_ratio,
        "target": "align_cold <= 2x align (wall and cpu medians), align_cold peak <= 1024 MB",
        "met": max(ratio.values()) <= 2.0 and cold_peak <= 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data", type=Path, help="Keep the synthetic gold and results in DIR.")
    parser.add_argument("--src", type=Path, help="Measure the workbench package in DIR.")
    args = parser.parse_args()
    print(json.dumps(run(args.cases, args.repeats, args.data, args.src), indent=2))


if __name__ == "__main__":
    main()
