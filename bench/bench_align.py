"""Benchmark: align N synthetic cases x 1 judge, against a plain-Python join and DuckDB.

Each measurement runs in a fresh subprocess so wall time, CPU time (``process_time``: every
thread of the process, which stays meaningful when the machine is loaded) and peak RSS
(``VmHWM``) belong to that step alone (imports are timed apart); modes are interleaved over the
repeats so all see the same machine load.
Figures are absolute and, because the machine is shared and noisy, ratios measured in the
same run:

- ``align``: ``workbench.align.align`` with a warm gold index (the production path; the
  cache is built once, by ``align_cold``);
- ``align_parse``: ``align`` with the results cache off (``WORKBENCH_RESULTS_CACHE=off``): the
  first read of a results file, every field parsed and checked (the gold index warm);
- ``migrated``: ``align`` over the same results written as schema version 1 (reasons kept on
  verdicts only, as version 1 wrote them) and declared with ``workbench import results`` (the
  CLI, in a subprocess; what a user runs): every line keeps its ``migration`` object, whose
  ``filled`` keys differ from line to line (``ratios_wall`` ``migrated_over_align``: about 1
  when they are read as fast as native results); at 1M the import itself takes too long
  (``--skip migrated``);
- ``align_by``: ``align --by language --by slice``: the same evidence, then
  ``workbench.align.breakdown`` over the gold index's columns (``ratios_wall``
  ``align_over_align_by``: its inverse is what the breakdown costs on top of align);
- ``align_cold``: the same with an empty cache (validates the gold once and writes the index);
- ``per_record``: the per-record path the columnar one replaced (``load_dataset`` +
  ``align_results`` + ``alignment_report``), still the path of refused input;
- ``python_join``: a plain-Python join (``json.loads`` both files, dict join, ``Counter``
  per slice), no validation at all;
- ``duckdb``: the same join and per-slice counts as one DuckDB query over the same files
  (``pip install duckdb``; skipped when absent);
- ``baseline``: the parse floor, ``json.loads`` of every line of both files;
- ``arrow_parse``: the columnar parse floor, Arrow's JSON reader over the results file (every
  column, as align parses it; no check, no join; the gold comes from the index).

    .venv/bin/python bench/bench_align.py [--cases 100000] [--repeats 3] [--skip per_record]
        [--data DIR] [--cache DIR] [--src DIR]

``--data`` and ``--cache`` keep the synthetic files and the warm gold index between runs (at
1M, writing the data and the first validation take minutes); ``--src`` measures another
checkout's ``workbench`` package with this harness (before/after in one session).
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
from typing import Any, cast

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _child import PRELUDE  # noqa: E402

MEASURE = (
    PRELUDE
    + r"""
mode, gold, results, partition = sys.argv[1:5]
t_import = time.perf_counter()
if mode in ("align", "align_cold", "align_parse", "per_record", "migrated", "align_by"):
    import workbench.align, workbench.gold
t_import = time.perf_counter() - t_import
t0 = time.perf_counter()
c0 = time.process_time()
if mode in ("align", "align_cold", "align_parse", "migrated"):
    report = workbench.align.align(gold, results, partition=partition)
    n = report.overall.n
elif mode == "align_by":
    evidence = workbench.align.read_evidence(gold, results, partition=partition)
    index = evidence.index
    workbench.align.breakdown(evidence.cases, index.table, index.rubric, ["language", "slice"])
    n = evidence.report.overall.n
elif mode == "per_record":
    from workbench._io import bulk_load
    with bulk_load():
        dataset = workbench.gold.load_dataset(gold)
        join = workbench.align.align_results(dataset, results, partition=partition)
        report = workbench.align.alignment_report(join, gold_path=gold, results_path=results)
    n = report.overall.n
elif mode == "python_join":
    from collections import Counter
    cases = {}
    with open(gold + "/gold.jsonl", encoding="utf-8") as fh:
        for line in fh:
            c = json.loads(line)
            if c["partition"] == partition and not c.get("supersedes"):
                cases[c["case_id"]] = (c["slice"], c["adjudication"]["label"])
    final = {}
    with open(results, encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            if r["repeat"] != 0 or r["case_id"] not in cases:
                continue
            seen = final.get(r["case_id"])
            if seen is None or r["attempt"] > seen[0]:
                col = r["value"] if r["error"] is None else "(error)"
                final[r["case_id"]] = (r["attempt"], col)
    counts = Counter()
    for cid, (slice_, label) in cases.items():
        got = final.get(cid)
        counts[(slice_, label, got[1] if got else "(missing)")] += 1
    n = sum(counts.values())
elif mode == "duckdb":
    import duckdb
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    rows = con.execute(
        '''
        WITH g AS (SELECT case_id, slice, adjudication.label AS label
                   FROM read_json_auto(?, format='newline_delimited') WHERE partition = ?),
             r AS (SELECT case_id, CASE WHEN error IS NULL THEN value ELSE '(error)' END AS col
                   FROM read_json_auto(?, format='newline_delimited') WHERE repeat = 0
                   QUALIFY row_number() OVER (PARTITION BY case_id ORDER BY attempt DESC) = 1)
        SELECT g.slice, g.label, coalesce(r.col, '(missing)') AS col, count(*) AS n
        FROM g LEFT JOIN r USING (case_id) GROUP BY ALL
        ''',
        [gold + "/gold.jsonl", partition, results],
    ).fetchall()
    n = sum(row[-1] for row in rows)
elif mode == "arrow_parse":
    # The floor of the columnar path: Arrow's JSON reader over the results file, every column,
    # no check, no join (align parses every column too: the contract checks read them all).
    import pyarrow.json as pj
    n = pj.read_json(results).num_rows
elif mode == "baseline":
    n = 0
    for path in (gold + "/gold.jsonl", results):
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                json.loads(line)
                n += 1
else:
    raise SystemExit(mode)
wall = time.perf_counter() - t0
cpu = time.process_time() - c0  # all threads; on a loaded machine a steadier figure than wall
out = {"wall_s": wall, "cpu_s": cpu, "import_s": t_import, "peak_rss_mb": peak_mb(), "n": n}
if "workbench" in sys.modules:
    out["workbench"] = os.path.dirname(sys.modules["workbench"].__file__)
print(json.dumps(out))
"""
)

MODES = ("baseline", "arrow_parse", "python_join", "duckdb", "per_record", "align", "migrated")
MODES += ("align_by", "align_parse")
SKIPPABLE = (*MODES, "align_cold")


def measure(
    mode: str,
    gold: Path,
    results: Path,
    cache: Path,
    partition: str = "development",
    src: Path | None = None,
) -> dict[str, Any]:
    env = {**os.environ, "WORKBENCH_CACHE_DIR": str(cache), "RAGAS_DO_NOT_TRACK": "true"}
    if mode == "align_parse":
        env["WORKBENCH_RESULTS_CACHE"] = "off"
    if src is not None:
        env["BENCH_WORKBENCH_SRC"] = str(src)
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, mode, str(gold), str(results), partition],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        # outside any project: the repo's workbench.yaml (its reviewer list) is not the
        # synthetic gold's project
        cwd=gold.parent,
    )
    return json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])


def write_migrated(gold: Path, results: Path, src: Path | None = None) -> Path:
    """``results`` as a schema-version-1 file declared with ``workbench import results``
    against ``gold`` (the CLI, in a project of its own), beside it (kept)."""
    out = results.with_name("results-imported")
    if (out / "results.jsonl").is_file():
        return out / "results.jsonl"
    from synth import write_v1

    v1 = write_v1(results, results.with_name("results-v1.jsonl"))
    with tempfile.TemporaryDirectory() as project:
        config = "held_out_ledger: evidence/held_out_ledger.jsonl\n"
        (Path(project) / "workbench.yaml").write_text(config, encoding="utf-8")
        env = {**os.environ, "WORKBENCH_PROJECT_ROOT": project, "RAGAS_DO_NOT_TRACK": "true"}
        if src is not None:
            env["PYTHONPATH"] = str(src)
        command = [sys.executable, "-m", "workbench", "import", "results", str(v1)]
        command += ["--gold", str(gold), "--out", str(out)]
        subprocess.run(command, check=True, capture_output=True, env=env, cwd=project)
    v1.unlink()
    return out / "results.jsonl"


def have_duckdb() -> bool:
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return False
    return True


def run(
    cases: int,
    repeats: int,
    skip: set[str],
    data: Path | None = None,
    cache: Path | None = None,
    src: Path | None = None,
) -> dict[str, object]:
    from synth import write_synthetic

    modes = [m for m in MODES if m not in skip and (m != "duckdb" or have_duckdb())]
    with tempfile.TemporaryDirectory() as tmp:
        where = data if data is not None else Path(tmp)
        gold, results = where / "gold", where / "results.jsonl"
        if not (gold / "gold.jsonl").is_file() or not results.is_file():
            gold, results = write_synthetic(where, cases)
        warm = cache if cache is not None else Path(tmp) / "cache"
        cold = None
        if "align_cold" not in skip:  # an empty cache: validates the gold and writes the index
            cold = measure("align_cold", gold, results, Path(tmp) / "cold-cache", src=src)
        files = {m: results for m in modes}
        if "migrated" in modes:
            files["migrated"] = write_migrated(gold, results, src)
        for mode in ("align", "migrated"):  # the gold index and the results cache, unmeasured
            if mode in modes:
                measure(mode, gold, files[mode], warm, src=src)
        sizes = {m: f.stat().st_size for m, f in files.items() if m in ("align", "migrated")}
        runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
        for _ in range(repeats):
            for mode in modes:
                runs[mode].append(measure(mode, gold, files[mode], warm, src=src))
    counts = {
        mode: {r["n"] for r in rs}
        for mode, rs in runs.items()
        if mode not in ("baseline", "arrow_parse")
    }
    measured = sorted({str(r["workbench"]) for rs in runs.values() for r in rs if "workbench" in r})
    med = {
        mode: {
            k: statistics.median(r[k] for r in rs)
            for k in ("wall_s", "cpu_s", "peak_rss_mb", "import_s")
        }
        for mode, rs in runs.items()
    }
    if cold is not None:
        med["align_cold"] = {k: cold[k] for k in ("wall_s", "cpu_s", "peak_rss_mb", "import_s")}
    figures: dict[str, object] = {
        "cases": cases,
        "repeats": repeats,
        "load_average": os.getloadavg()[0],
        "workbench_measured": measured,
        "cases_in_scope_by_mode": {m: sorted(v) for m, v in counts.items()},
    }
    for mode, values in med.items():
        figures[mode] = {k: round(v, 3) for k, v in values.items()}
        for k in ("wall_s", "cpu_s"):  # the range over the repeats beside the median
            seen = [r[k] for r in runs.get(mode, [])]
            if seen:
                cast("dict[str, object]", figures[mode])[k[:-2] + "_range"] = [
                    round(min(seen), 3),
                    round(max(seen), 3),
                ]
    align_wall = med["align"]["wall_s"]
    figures["ratios_wall"] = {
        f"align_over_{m}": round(align_wall / med[m]["wall_s"], 2) for m in med if m != "align"
    }
    figures["ratios_cpu"] = {
        f"align_over_{m}": round(med["align"]["cpu_s"] / med[m]["cpu_s"], 2)
        for m in med
        if m != "align"
    }
    if "migrated" in med:  # migrated results over the same results written natively
        if "align" in sizes:  # each line keeps its migration object: more bytes to read
            figures["results_bytes_migrated_over_native"] = round(
                sizes["migrated"] / sizes["align"], 2
            )
        for key, kind in (("ratios_wall", "wall_s"), ("ratios_cpu", "cpu_s")):
            ratios = cast("dict[str, float]", figures[key])
            ratios["migrated_over_align"] = round(med["migrated"][kind] / med["align"][kind], 2)
    target_s = 2.0 if cases <= 100_000 else 10.0
    figures["target"] = f"align under {target_s:g} s wall and under 1024 MB peak at {cases} cases"
    figures["met"] = align_wall < target_s and med["align"]["peak_rss_mb"] < 1024
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        choices=SKIPPABLE,
        help="Leave a mode out (e.g. per_record at 1M: minutes and GBs).",
    )
    parser.add_argument(
        "--data",
        type=Path,
        help="Keep the synthetic gold and results in DIR (written there once, reused after).",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        help="The gold index cache of the warm modes (kept; built there when absent).",
    )
    parser.add_argument(
        "--src",
        type=Path,
        help="Measure the workbench package in DIR (e.g. `git archive main workbench`).",
    )
    args = parser.parse_args()
    figures = run(args.cases, args.repeats, set(args.skip), args.data, args.cache, args.src)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
