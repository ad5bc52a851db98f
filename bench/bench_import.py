"""Benchmark: ``workbench import results`` of a schema-version-1 results file (what a user
migrating older results runs) against ``align`` of the same data, cold and warm, in one run.

Modes, each in a fresh process (``bench/_child.py``: wall, CPU of every thread, peak RSS), the
call alone timed (imports apart), interleaved over the repeats so all see the same load:

- ``import_cold``: ``workbench.importers.import_results`` of the v1 file against the gold with
  an empty cache directory (the gold validated and its index written, as ``align_cold``);
- ``import``: the same with the gold index cached (the usual case: the gold was aligned or
  imported against before);
- ``align_cold``: ``workbench.align.align`` of the native (version 2) results with an empty
  cache directory (gold index and results cache both cold);
- ``align``: the same with both caches warm.

The data: ``bench/synth.py`` (``write_synthetic``, then ``write_v1``: the same results as
version 1 wrote them). Target (issue 31, migrated results): ``import_cold`` at 100k within 2x
``align_cold`` (wall and CPU medians), peak at most 1 GB; at 1M measured.

    .venv/bin/python bench/bench_import.py [--cases 100000] [--repeats 3] [--data DIR]
        [--src DIR] [--skip MODE]

``--src DIR`` measures another checkout's ``workbench`` (``git archive main workbench | tar -x
-C DIR``) with this harness, for before/after in one session.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _child import PRELUDE  # noqa: E402
from bench_align_cold import summary  # noqa: E402  # median and range of each figure

MEASURE = (
    PRELUDE
    + r"""
mode, gold, results, out = sys.argv[1:5]
t_import = time.perf_counter()
import workbench.align, workbench.importers
t_import = time.perf_counter() - t_import
t0 = time.perf_counter()
c0 = time.process_time()
if mode.startswith("import"):
    n = workbench.importers.import_results(results, gold, out).results
else:
    n = workbench.align.align(gold, results, partition="development").overall.n
wall = time.perf_counter() - t0
cpu = time.process_time() - c0
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "import_s": t_import, "peak_rss_mb": peak_mb(),
                  "n": n, "workbench": os.path.dirname(sys.modules["workbench"].__file__)}))
"""
)
MODES = ("import_cold", "import", "align_cold", "align")


def measure(
    mode: str, gold: Path, results: Path, cache: Path, out: Path, src: Path | None
) -> dict[str, Any]:
    project = out.with_name("project")  # the import checks the project's held-out ledger
    project.mkdir(exist_ok=True)
    config = "held_out_ledger: evidence/held_out_ledger.jsonl\n"
    (project / "workbench.yaml").write_text(config, encoding="utf-8")
    env = {**os.environ, "WORKBENCH_CACHE_DIR": str(cache), "RAGAS_DO_NOT_TRACK": "true"}
    env["WORKBENCH_PROJECT_ROOT"] = str(project)
    env.pop("WORKBENCH_GOLD_INDEX", None)
    env.pop("WORKBENCH_RESULTS_CACHE", None)
    if src is not None:
        env["BENCH_WORKBENCH_SRC"] = str(src)
    try:
        done = subprocess.run(
            [sys.executable, "-c", MEASURE, mode, str(gold), str(results), str(out)],
            check=True,
            capture_output=True,
            text=True,
            env=env,
            cwd=project,  # a project of its own (the gold is outside it, as a user's may be)
        )
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return json.loads([line for line in done.stdout.splitlines() if line.startswith("{")][-1])


def _data(where: Path, cases: int) -> tuple[Path, Path, Path]:
    from synth import synthetic_files, write_v1

    gold, results = synthetic_files(where, cases)
    v1 = results.with_name("results-v1.jsonl")
    if not v1.is_file():
        write_v1(results, v1)
    return gold, results, v1


def run(
    cases: int, repeats: int, data: Path | None, src: Path | None, skip: set[str]
) -> dict[str, Any]:
    modes = [m for m in MODES if m not in skip]
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        gold, results, v1 = _data(data if data is not None else Path(tmp), cases)
        warm, out = Path(tmp) / "warm-cache", Path(tmp) / "out"
        for mode in ("align", "import"):  # the gold index and the results cache, unmeasured
            if mode not in modes:
                continue
            measure(mode, gold, v1 if mode == "import" else results, warm, out, src)
        runs: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
        for i in range(repeats):
            for mode in modes:
                cache = Path(tmp) / f"cold-{mode}-{i}" if mode.endswith("_cold") else warm
                given = v1 if mode.startswith("import") else results
                runs[mode].append(measure(mode, gold, given, cache, out, src))
                if cache != warm:
                    shutil.rmtree(cache, ignore_errors=True)
            loads.append(os.getloadavg()[0])
        sizes = {"results_v1_mb": round(v1.stat().st_size / 2**20, 1)}
    med = {m: summary(rs) for m, rs in runs.items()}
    return {
        "cases": cases,
        "repeats": repeats,
        **sizes,
        "load_average_1min": [round(x, 2) for x in loads],
        "workbench_measured": sorted({r["workbench"] for rs in runs.values() for r in rs}),
        "counted": {m: sorted({r["n"] for r in rs}) for m, rs in runs.items()},
        **med,
        "ratios": _ratios(med),
        "target": "import_cold <= 2x align_cold (wall and CPU medians), peak <= 1024 MB (100k)",
        "met": _met(med),
    }


def _ratios(med: dict[str, Any]) -> dict[str, float]:
    pairs = [("import_cold", "align_cold"), ("import", "align"), ("import", "align_cold")]
    return {
        f"{a}_over_{b}_{k}": round(med[a][k]["median"] / med[b][k]["median"], 2)
        for a, b in pairs
        if a in med and b in med
        for k in ("wall_s", "cpu_s")
    }


def _met(med: dict[str, Any]) -> bool | None:
    if "import_cold" not in med or "align_cold" not in med:
        return None
    ratio = max(
        med["import_cold"][k]["median"] / med["align_cold"][k]["median"]
        for k in ("wall_s", "cpu_s")
    )
    return ratio <= 2.0 and med["import_cold"]["peak_rss_mb"]["median"] <= 1024


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data", type=Path, help="Keep the synthetic files in DIR.")
    parser.add_argument("--src", type=Path, help="Measure the workbench package in DIR.")
    parser.add_argument("--skip", action="append", default=[], choices=MODES)
    args = parser.parse_args()
    result = run(args.cases, args.repeats, args.data, args.src, set(args.skip))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
