"""Benchmark: wall time of ``workbench certify`` on the demo, split into kernel start, run and render.

Runs the real command (a subprocess, as a user would) on the demo candidate and policy into a
temporary reports root, ``--repeats`` times, and reports the median of each part from the
timings recorded by certification. Baseline measured in the same run: starting a bare
kernel and executing one empty cell with papermill (the fixed cost of any papermill job).

    .venv/bin/python bench/bench_certify.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def certify_once(reports: Path) -> dict[str, float]:
    # The held-out ledger belongs to the gold dataset: each repeat certifies a fresh copy.
    gold = reports.with_name(reports.name + "-gold")
    shutil.copytree(ROOT / "data" / "demo", gold)
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "workbench", "certify", "--candidate", "data/candidates/rubric-judge@2.yaml", "--policy", "data/policies/support-release@1.yaml", "--gold", str(gold), "--reports", str(reports), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    if out.returncode == 2:
        raise SystemExit(out.stderr)
    result = json.loads(out.stdout)
    timings = result["timings_s"]
    return {"wall_s": wall, "kernel_start_s": timings.get("kernel_start_and_overhead", 0.0), "run_s": timings.get("cells_run", 0.0), "render_s": timings["render"] + timings.get("lock", 0.0), "outcome": result["outcome"]}  # type: ignore[dict-item]


def empty_papermill(tmp: Path) -> float:
    import nbformat
    import papermill

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("pass")]
    src = tmp / "empty.ipynb"
    nbformat.write(nb, src)
    from workbench.reports._kernel import kernel_manager_class

    t0 = time.perf_counter()
    with kernel_manager_class() as manager:  # the same IPC kernel certification uses (and no TCP warning)
        papermill.execute_notebook(str(src), str(tmp / "empty-out.ipynb"), progress_bar=False, kernel_name="python3", kernel_manager_class=manager)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    runs, baselines = [], []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for i in range(args.repeats):
            baselines.append(empty_papermill(tmp))
            runs.append(certify_once(tmp / f"reports{i}"))
    med = {k: round(statistics.median(r[k] for r in runs), 3) for k in ("wall_s", "kernel_start_s", "run_s", "render_s")}
    baseline = statistics.median(baselines)
    print(json.dumps({
        "certify": med,
        "outcome": runs[0]["outcome"],
        "baseline_empty_papermill_s": round(baseline, 3),
        "certify_over_baseline": round(med["wall_s"] / baseline, 2),
        "target": "certify under 30 s wall",
        "met": med["wall_s"] < 30,
    }, indent=2))


if __name__ == "__main__":
    main()
