"""Benchmark: one way to read evidence. ``gate`` against ``align`` on the same inputs,
``agreement`` and the review widget's build, over bench/synth.py's synthetic data.

Every measurement is a fresh subprocess (imports timed apart; byte code cached under a
temporary ``PYTHONPYCACHEPREFIX``, as an installed package has it), the modes interleaved over
the repeats so they see the same machine load; the gold index is warm (built once, unmeasured).
Per mode, as ``[median, min, max]``: wall time and CPU time of the step (``process_time``:
every thread; pyarrow, numpy, pandas and the workbench imported before it, ``import_s``), the
whole process's wall time (``process_s``: interpreter start, imports, the step) and peak RSS
(``VmHWM``); and the ratios measured in the same run:

- ``align``: ``workbench align --gold G --results R --partition development`` (in process);
- ``gate``: ``workbench gate`` on the same gold, results and partition with a policy over the
  synthetic slices (target: at most 1.2x ``align``);
- ``agreement``: ``workbench agreement G`` (target at 100k: at most 1.5 s);
- ``widget``: the review table of the development partition
  (``workbench.review.review_table``) and ``workbench.ui.ReviewWidget`` over it (target at
  100k: at most 1.5 s and 400 MB peak RSS).

``--src DIR`` measures another checkout's ``workbench`` with the same harness (``git archive
main workbench | tar -x -C DIR``): before/after in one session; a checkout without
``review_table`` builds the widget as it did (``load_dataset`` + ``read_results`` +
``align_results`` + ``review_cases``).

    .venv/bin/python bench/bench_evidence.py [--cases 100000] [--repeats 5] [--skip MODE]
        [--data DIR] [--cache DIR] [--src DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _child import PRELUDE  # noqa: E402

MEASURE = (
    PRELUDE
    + r"""
import contextlib, io
mode, gold, results, policy = sys.argv[1:5]
t_import = time.perf_counter()
import pyarrow, pyarrow.compute, pyarrow.json, numpy  # what every mode's first call loads
import workbench.cli.main, workbench.align, workbench.gold, workbench.policy, workbench.agreement
import workbench.cli.align, workbench.cli.gate, workbench.cli.agreement  # commands load lazily
if mode == "widget":
    import pandas, workbench.review, workbench.ui
t_import = time.perf_counter() - t_import
def cli(*args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            workbench.cli.main.main(list(args), standalone_mode=False)
        except SystemExit as exc:
            return exc.code or 0, out.getvalue()
    return 0, out.getvalue()
def widget():
    from workbench.ui import ReviewWidget
    try:
        from workbench.review import review_table
    except ImportError:  # the per-record build (main before this change)
        from workbench._io import bulk_load
        from workbench.align import align_results
        from workbench.results import read_results
        from workbench.review import review_cases
        with bulk_load():
            dataset = workbench.gold.load_dataset(gold)
            lines = read_results(results)
            join = align_results(dataset, lines, partition="development")
            table = review_cases(dataset, join, lines)
    else:
        table = review_table(gold, results, partition="development")
    return ReviewWidget(table, reviewer="bench"), len(table)
t0 = time.perf_counter()
c0 = time.process_time()
if mode == "align":
    code, text = cli("align", "--gold", gold, "--results", results, "--partition", "development")
elif mode == "gate":
    code, text = cli("gate", "--gold", gold, "--results", results, "--partition", "development",
                     "--policy", policy)
elif mode == "agreement":
    code, text = cli("agreement", gold)
elif mode == "widget":
    w, n = widget()
    code, text = 0, str(n)
else:
    raise SystemExit(mode)
wall = time.perf_counter() - t0
cpu = time.process_time() - c0
digest = __import__("hashlib").sha256(text.encode()).hexdigest()
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "import_s": t_import, "peak_rss_mb": peak_mb(),
                  "exit": code, "output_sha": digest}))
"""
)

MODES = ("align", "gate", "agreement", "widget")
POLICY = """schema_version: 2
name: synthetic-release
version: "1"
owner: bench
rationale: the synthetic slices, so that the gate evaluates every one
rubric_version: synthetic-v1
max_evaluator_errors: 1000000
slices:
  refunds: &critical
    risk: critical
    max_false_passes: 0
    max_false_pass_rate: 0.2
    max_abstention_rate: 0.5
  security: *critical
  shipping: {risk: medium, max_false_pass_rate: 0.3}
  billing: {risk: high, max_false_pass_rate: 0.2}
  privacy: {risk: high, max_false_pass_rate: 0.2}
  general: {risk: low, max_false_pass_rate: 0.3}
"""


def measure(mode: str, paths: dict[str, Path], env: dict[str, str]) -> dict[str, Any]:
    args = [str(paths[k]) for k in ("gold", "results", "policy")]
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, mode, *args],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        # outside any project: the repo's workbench.yaml (its reviewer list) is not the
        # synthetic gold's project
        cwd=paths["gold"].parent,
    )
    process = time.perf_counter() - started  # interpreter start, imports and the step
    line = [line for line in out.stdout.splitlines() if line.startswith("{")][-1]
    figures = json.loads(line)
    if figures["exit"] == 2:  # invalid input: nothing was measured
        raise SystemExit(f"{mode} refused its input (exit 2)")
    return {**figures, "process_s": process}


def _environment(cache: Path, pycache: Path, src: Path | None) -> dict[str, str]:
    env = {**os.environ, "WORKBENCH_CACHE_DIR": str(cache), "RAGAS_DO_NOT_TRACK": "true"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    if src is not None:
        env["BENCH_WORKBENCH_SRC"] = str(src)
    return env


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure as ``[median, min, max]`` over the repeats."""
    out: dict[str, Any] = {
        key: _spread([r[key] for r in runs])
        for key in ("wall_s", "cpu_s", "peak_rss_mb", "process_s", "import_s")
    }
    out["exit"] = sorted({r["exit"] for r in runs})
    out["outputs"] = len({r["output_sha"] for r in runs})  # 1: every run printed the same
    out["output_sha256"] = runs[0]["output_sha"][:16]  # compare with another checkout's run
    return out


def _spread(values: list[float]) -> list[float]:
    return [round(statistics.median(values), 3), round(min(values), 3), round(max(values), 3)]


def run(
    cases: int,
    repeats: int,
    skip: set[str],
    data: Path | None,
    cache: Path | None,
    src: Path | None,
) -> dict[str, Any]:
    from synth import write_synthetic

    modes = [m for m in MODES if m not in skip]
    with tempfile.TemporaryDirectory() as tmp:
        where = data if data is not None else Path(tmp)
        gold, results = where / "gold", where / "results.jsonl"
        if not (gold / "gold.jsonl").is_file() or not results.is_file():
            gold, results = write_synthetic(where, cases)
        policy = Path(tmp) / "synthetic-release@1.yaml"
        policy.write_text(POLICY, encoding="utf-8")
        paths = {"gold": gold, "results": results, "policy": policy}
        env = _environment(cache or Path(tmp) / "cache", Path(tmp) / "pycache", src)
        for mode in modes:  # the gold index and the byte code, unmeasured
            measure(mode, paths, env)
        runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
        for _ in range(repeats):
            for mode in modes:
                runs[mode].append(measure(mode, paths, env))
    figures: dict[str, Any] = {
        "cases": cases,
        "repeats": repeats,
        "load_average": os.getloadavg()[0],
        "workbench": str(src) if src else "this checkout",
    }
    figures.update({mode: _summary(rs) for mode, rs in runs.items()})
    if "gate" in runs and "align" in runs:
        pairs = list(zip(runs["gate"], runs["align"], strict=True))
        figures["gate_over_align"] = {
            "wall": _spread([g["wall_s"] / a["wall_s"] for g, a in pairs]),
            "cpu": _spread([g["cpu_s"] / a["cpu_s"] for g, a in pairs]),
            "median_wall": round(figures["gate"]["wall_s"][0] / figures["align"]["wall_s"][0], 3),
        }
    figures["targets"] = _targets(figures, cases)
    return figures


def _targets(figures: dict[str, Any], cases: int) -> dict[str, bool]:
    out: dict[str, bool] = {}
    if "gate_over_align" in figures:
        out["gate <= 1.2x align (median wall)"] = figures["gate_over_align"]["median_wall"] <= 1.2
    if cases <= 100_000 and "agreement" in figures:
        out["agreement <= 1.5 s (median wall)"] = figures["agreement"]["wall_s"][0] <= 1.5
    if cases <= 100_000 and "widget" in figures:
        widget = figures["widget"]
        out["widget <= 1.5 s and <= 400 MB (medians)"] = (
            widget["wall_s"][0] <= 1.5 and widget["peak_rss_mb"][0] <= 400
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip", action="append", default=[], choices=MODES)
    parser.add_argument("--data", type=Path, help="Keep the synthetic gold and results in DIR.")
    parser.add_argument("--cache", type=Path, help="Keep the gold index cache in DIR.")
    parser.add_argument("--src", type=Path, help="Measure the workbench package in DIR.")
    args = parser.parse_args()
    figures = run(args.cases, args.repeats, set(args.skip), args.data, args.cache, args.src)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
