"""Benchmark: import and analyse all 45 LLMBar evaluator runs (5 subsets x 9 evaluators).

Per subset, the gold set is imported once (``import_llmbar`` without an evaluator) and
loaded once. Per evaluator run, its ``result.json`` is converted to judge results for that
gold (``llmbar_judge_results``), written as ``results.jsonl`` and analysed from the file
(``pairwise_report``); every run is checked against its upstream ``statistics.json``. The
baseline, measured in the same process and run, is the parse floor: ``json.load`` of all 45
``result.json`` files and nothing else. Import cost of the modules is excluded (measured
apart). Figures are absolute and as a ratio to the baseline, because the machine is shared.

    .venv/bin/python bench/bench_llmbar.py [--datasets ../shared/datasets] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _runs(llmbar: Path) -> list[Path]:
    return sorted(p.parent for p in llmbar.rglob("statistics.json"))


def baseline(runs: list[Path]) -> float:
    """Wall time of ``json.load`` of every ``result.json``."""
    t0 = time.perf_counter()
    for run in runs:
        with open(run / "result.json", encoding="utf-8") as fh:
            json.load(fh)
    return time.perf_counter() - t0


def workbench_pass(runs: list[Path], tmp: Path) -> dict[str, Any]:
    """Import gold once per subset, then import + analyse every run; returns timings."""
    from workbench.gold import load_dataset
    from workbench.importers import import_llmbar
    from workbench.importers.llmbar import (
        llmbar_judge_results,
        parse_statistic,
        write_judge_results,
    )
    from workbench.pairwise import pairwise_report, upstream_figures

    t_start = time.perf_counter()
    gold: dict[Path, Any] = {}
    gold_s: list[float] = []
    run_s: list[float] = []
    mismatches: list[str] = []
    for i, run in enumerate(runs):
        subset = run.parent.parent.parent
        if subset not in gold:
            t0 = time.perf_counter()
            out = tmp / f"gold-{len(gold)}"
            import_llmbar(subset, out)
            gold[subset] = load_dataset(out)
            gold_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        path = tmp / f"results-{i}.jsonl"
        write_judge_results(path, llmbar_judge_results(run, gold[subset]))
        report = pairwise_report(gold[subset], path)
        run_s.append(time.perf_counter() - t0)
        upstream = json.loads((run / "statistics.json").read_text(encoding="utf-8"))
        got = upstream_figures(report)
        if any(got[key] != parse_statistic(upstream[key])[:2] for key in got):
            mismatches.append(str(run))
    return {
        "total_s": time.perf_counter() - t_start,
        "gold_s": gold_s,
        "run_s": run_s,
        "mismatches": mismatches,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--datasets", type=Path, default=ROOT.parent / "shared" / "datasets")
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="Measure the whole pass this many times; medians are reported.",
    )
    args = parser.parse_args()
    llmbar = args.datasets / "llmbar"
    runs = _runs(llmbar)
    if not runs:
        raise SystemExit(f"no LLMBar runs (statistics.json) under {llmbar}")

    t0 = time.perf_counter()
    import statsmodels.stats.proportion  # noqa: F401  (lazily imported by wilson_rate)

    import workbench.gold
    import workbench.importers
    import workbench.pairwise  # noqa: F401

    import_s = time.perf_counter() - t0
    passes: list[dict[str, Any]] = []
    baselines: list[float] = []
    for _ in range(args.repeats):  # interleave so both see the same machine load
        baselines.append(baseline(runs))
        with tempfile.TemporaryDirectory() as tmp:
            passes.append(workbench_pass(runs, Path(tmp)))
    total = statistics.median(p["total_s"] for p in passes)
    base = statistics.median(baselines)
    per_run = [s for p in passes for s in p["run_s"]]
    per_gold = [s for p in passes for s in p["gold_s"]]
    figures = {
        "runs": len(runs),
        "subsets": len(passes[0]["gold_s"]),
        "repeats": args.repeats,
        "total_wall_s": round(total, 3),
        "per_run_median_s": round(statistics.median(per_run), 4),
        "per_run_max_s": round(max(per_run), 4),
        "gold_import_per_subset_median_s": round(statistics.median(per_gold), 4),
        "baseline_json_load_all_results_s": round(base, 3),
        "total_over_baseline": round(total / base, 1) if base else None,
        "module_import_s": round(import_s, 3),
        "reproduces_all_statistics_json": not any(p["mismatches"] for p in passes),
        "mismatches": sorted({m for p in passes for m in p["mismatches"]}),
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
