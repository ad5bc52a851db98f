"""Benchmark: align 100,000 synthetic cases x 1 judge.

Each measurement runs in a fresh subprocess so wall time and peak RSS (ru_maxrss) belong to
that step alone. The baseline, measured in the same run, is the parse floor: reading both
files with ``json.loads`` and nothing else. Figures are reported as absolute values and as a
ratio to the baseline, because the machine is shared and noisy.

    .venv/bin/python bench/bench_align.py [--cases 100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MEASURE = r"""
import json, resource, sys, time
mode, gold, results = sys.argv[1:4]
t_import = time.perf_counter()
import workbench.align, workbench.gold, workbench.results  # import cost is reported apart
import sklearn.metrics, statsmodels.stats.proportion  # lazily imported by the statistics
import json as _json
t_import = time.perf_counter() - t_import
t0 = time.perf_counter()
if mode == "align":
    report = workbench.align.align(gold, results)
    n = report.overall.n
elif mode == "baseline":
    n = 0
    for path in (gold + "/gold.jsonl", results):
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                _json.loads(line)
                n += 1
else:
    raise SystemExit(mode)
wall = time.perf_counter() - t0
print(_json.dumps({"wall_s": wall, "import_s": t_import, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "n": n}))
"""


def measure(mode: str, gold: Path, results: Path) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", MEASURE, mode, str(gold), str(results)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from synth import write_synthetic

    with tempfile.TemporaryDirectory() as tmp:
        gold, results = write_synthetic(Path(tmp), args.cases)
        runs: dict[str, list[dict[str, float]]] = {"baseline": [], "align": []}
        for _ in range(args.repeats):  # interleave so both see the same machine load
            for mode in runs:
                runs[mode].append(measure(mode, gold, results))
    med = {mode: {k: statistics.median(r[k] for r in rs) for k in ("wall_s", "peak_rss_mb", "import_s")} for mode, rs in runs.items()}
    figures = {
        "cases": args.cases,
        "align_wall_s": round(med["align"]["wall_s"], 3),
        "align_peak_rss_mb": round(med["align"]["peak_rss_mb"], 1),
        "align_import_s": round(med["align"]["import_s"], 3),
        "baseline_parse_wall_s": round(med["baseline"]["wall_s"], 3),
        "baseline_peak_rss_mb": round(med["baseline"]["peak_rss_mb"], 1),
        "align_over_baseline_wall": round(med["align"]["wall_s"] / med["baseline"]["wall_s"], 2),
        "target": "align under 2 s wall and under 1 GB peak",
        "met": med["align"]["wall_s"] < 2.0 and med["align"]["peak_rss_mb"] < 1024,
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
