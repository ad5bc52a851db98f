"""Benchmark, on demand: align 1M, 3M and 10M results x 1 judge from a directory of Parquet shards.

Generating the data takes a while, so this is not part of ``make bench``. The gold is the
synthetic dataset of ``synth.py`` (``--cases``, default 101,000); its results are repeated
``--repeats`` times (repeat indexes 0..R-1, one Parquet shard per repeat), about 10M results
in all; the smaller sizes read the first 10 and 30 shards (``--sizes``). ``align`` reads and
checks every result (contract, gold lookup, duplicates, attempts, lineage) and aligns repeat 0.
Each run is a fresh subprocess (wall, CPU, peak RSS), with a warm gold index (built once first,
reported apart); the modes are interleaved over ``--rounds``: align of this checkout, align of
``--before DIR`` (another checkout's ``workbench``, e.g. ``git archive main workbench``), DuckDB
reading the same shards and checking the same (the target's baseline), DuckDB's join and
counts alone. Needs DuckDB (the ``bench`` extra).

    .venv/bin/python bench/bench_align_10m.py [--keep DIR | --data DIR] [--rounds 3]
        [--sizes 10,30,100] [--before DIR]
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
from typing import Any, cast

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MEASURE = r"""
import json, resource, sys, time
def peak_mb():
    # VmHWM: this process's own peak (ru_maxrss survives exec and would report the parent's)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
mode, gold, shards = sys.argv[1:4]
t0 = time.perf_counter()
c0 = time.process_time()
if mode == "align":
    import workbench.align
    report = workbench.align.align(gold, shards, partition="development")
    out = {"n": report.overall.n, "results_read": report.results_read, "status": report.status}
else:
    import duckdb
    db = duckdb.connect()
    db.execute("SET enable_progress_bar = false")  # stdout is the figures
    def quoted(path):
        return "'" + path.replace("'", "''") + "'"
    json_gold = f"read_json_auto({quoted(gold + '/gold.jsonl')}, format='newline_delimited')"
    db.execute(f"CREATE VIEW g AS SELECT * FROM {json_gold}")
    db.execute(f"CREATE VIEW r AS SELECT * FROM read_parquet({quoted(shards + '/*.parquet')})")
    rows = db.execute(
        '''
        WITH d AS (SELECT case_id, slice, adjudication.label AS label
                   FROM g WHERE partition = 'development'),
             f AS (SELECT case_id, CASE WHEN error IS NULL THEN value ELSE '(error)' END AS col
                   FROM r WHERE repeat = 0
                   QUALIFY row_number() OVER (PARTITION BY case_id ORDER BY attempt DESC) = 1)
        SELECT d.slice, d.label, coalesce(f.col, '(missing)') AS col, count(*) AS n
        FROM d LEFT JOIN f USING (case_id) GROUP BY ALL
        '''
    ).fetchall()
    out = {"n": sum(r[-1] for r in rows)}
    if mode == "duckdb_checked":  # every result: the checks align makes, as counts
        checks = db.execute(
            '''
            WITH j AS (SELECT r.*, g.case_id AS known, g.response_hash AS gold_hash,
                              g.partition AS gold_partition
                       FROM r LEFT JOIN g ON r.case_id = g.case_id),
                 u AS (SELECT max(attempt) AS last,
                              min(attempt) FILTER (WHERE error IS NULL) AS verdict
                       FROM r GROUP BY case_id, repeat)
            SELECT count(*) FILTER (WHERE known IS NULL),
                   count(*) FILTER (WHERE response_hash <> gold_hash
                                    OR partition <> gold_partition),
                   count(*) - count(DISTINCT (case_id, repeat, attempt)),
                   (SELECT count(*) FROM u WHERE last > verdict),
                   count(DISTINCT (dataset_sha256, rubric_version)),
                   count(DISTINCT judge_fingerprint), count(DISTINCT run_id),
                   count(*) FILTER (WHERE value IS NULL AND error IS NULL)
            FROM j
            '''
        ).fetchone()
        out["checks"] = list(checks)
        out["results_read"] = db.execute("SELECT count(*) FROM r").fetchone()[0]
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({**out, "wall_s": wall, "cpu_s": cpu, "peak_rss_mb": peak_mb()}))
"""


def write_shards(results: Path, out: Path, repeats: int) -> int:
    """One Parquet shard per repeat index; the judge gets a non-empty ``params`` (Parquet
    cannot store an empty object) and the matching fingerprint."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    from workbench.results import JudgeIdentity

    identity = JudgeIdentity(
        name="synthetic-judge", version="1", kind="imported", params={"temperature": 0.0}
    )
    table = pj.read_json(results)
    n = table.num_rows
    judge = pa.array([identity.model_dump(mode="json")] * n)
    table = table.set_column(table.schema.get_field_index("judge"), "judge", judge)
    table = table.set_column(
        table.schema.get_field_index("judge_fingerprint"),
        "judge_fingerprint",
        pa.array([identity.fingerprint()] * n),
    )
    out.mkdir(parents=True, exist_ok=True)
    index = table.schema.get_field_index("repeat")
    for r in range(repeats):
        shard = table.set_column(index, "repeat", pc.cast(pa.array([r] * n), pa.int64()))
        pq.write_table(shard, out / f"part-{r:04d}.parquet")
    return n * repeats


DUCKDB = ("duckdb_checked", "duckdb")
"""DuckDB reading the shards: the join and per-slice counts plus, over every result, the checks
align makes (unknown cases, hashes and partitions, duplicates, attempts after a verdict,
lineages, judges: the baseline of the target); and the join and counts alone."""


def measure(mode: str, gold: Path, shards: Path, cache: Path, src: Path) -> dict[str, Any]:
    """One run of ``mode`` in a fresh subprocess importing ``workbench`` from ``src``."""
    env = {
        **os.environ,
        "WORKBENCH_CACHE_DIR": str(cache),
        "RAGAS_DO_NOT_TRACK": "true",
        "PYTHONPATH": str(src),
    }
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, mode, str(gold), str(shards)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        # outside any project: the repo's workbench.yaml (its reviewer list) is not the
        # synthetic gold's project
        cwd=gold.parent,
    )
    return cast("dict[str, Any]", json.loads(out.stdout.strip().splitlines()[-1]))


def subsets(shards: Path, counts: list[int]) -> dict[int, Path]:
    """For each count, a directory of links to the first ``count`` shards (1M, 3M, ... of the
    same data: the sizes differ only in how many shards are read)."""
    files = sorted(shards.glob("*.parquet"))
    out: dict[int, Path] = {}
    for count in counts:
        if count >= len(files):
            out[len(files)] = shards
            continue
        target = shards.parent / "subsets" / str(count)
        target.mkdir(parents=True, exist_ok=True)
        for f in files[:count]:
            link = target / f.name
            if not link.exists():
                link.symlink_to(f)
        out[count] = target
    return out


def _spread(values: list[float]) -> dict[str, Any]:
    values = sorted(values)
    return {
        "median": round(statistics.median(values), 2),
        "range": [round(values[0], 2), round(values[-1], 2)],
    }


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median and range of wall, CPU and peak RSS over the rounds."""
    out = {key: _spread([r[key] for r in runs]) for key in ("wall_s", "cpu_s", "peak_rss_mb")}
    return {**out, **{k: runs[0][k] for k in ("n", "results_read") if k in runs[0]}}


def ratios(runs: dict[str, list[dict[str, Any]]], mode: str) -> dict[str, Any]:
    """``mode`` over DuckDB reading and checking the same, round by round: median and range."""
    pairs = list(zip(runs[mode], runs["duckdb_checked"], strict=True))
    return {key: _spread([a[key] / d[key] for a, d in pairs]) for key in ("wall_s", "peak_rss_mb")}


def run(
    root: Path, gold: Path, counts: list[int], rounds: int, before: Path | None
) -> dict[str, Any]:
    """Every size, ``rounds`` times, the modes interleaved (align, DuckDB, align of ``before``)."""
    codes = {"align": HERE.parent, **({"align_before": before} if before else {})}
    dirs = subsets(root / "shards", counts)
    # the gold index built once per checkout (the first call on a gold), reported apart
    cold = {
        mode: measure("align", gold, dirs[min(dirs)], root / f"cache-{mode}", src)
        for mode, src in codes.items()
    }
    loads: list[float] = []
    runs: dict[int, dict[str, list[dict[str, Any]]]] = {c: {} for c in dirs}
    for _ in range(rounds):
        for count, shards in dirs.items():
            loads.append(os.getloadavg()[0])
            for mode, src in [*codes.items(), *dict.fromkeys(DUCKDB, HERE.parent).items()]:
                kind = mode if mode in DUCKDB else "align"
                figures = measure(kind, gold, shards, root / f"cache-{mode}", src)
                runs[count].setdefault(mode, []).append(figures)
    sizes: dict[str, Any] = {}
    for count, by_mode in runs.items():
        size = {mode: summary(r) for mode, r in by_mode.items()}
        for mode in codes:
            size[f"{mode}_over_duckdb"] = ratios(by_mode, mode)
        sizes[f"{by_mode['align'][0]['results_read']:,} results ({count} shards)"] = size
    return {
        "load_average": {"min": min(loads), "max": max(loads)},
        "align_cold_smallest": cold,
        "sizes": sizes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=101_000)
    parser.add_argument("--repeats", type=int, default=100, help="Shards (repeat indexes) written.")
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="Write the data here and keep it (default: a temporary directory).",
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="Reuse data an earlier --keep wrote (gold/, shards/) instead of generating it.",
    )
    parser.add_argument(
        "--sizes",
        default="10,30,100",
        help="Shards read per measured size, comma-separated (default 10,30,100: 1M, 3M, 10M).",
    )
    parser.add_argument("--rounds", type=int, default=3, help="Interleaved rounds (default 3).")
    parser.add_argument(
        "--before",
        type=Path,
        default=None,
        help="Also measure the workbench package in DIR (another checkout) in the same rounds.",
    )
    args = parser.parse_args()
    from synth import write_synthetic

    with tempfile.TemporaryDirectory() as tmp:
        root = args.data or args.keep or Path(tmp)
        started = time.perf_counter()
        if args.data is None:
            gold, results = write_synthetic(root, args.cases)
            write_shards(results, root / "shards", args.repeats)
            results.unlink()
        gold = root / "gold"
        generated = time.perf_counter() - started
        counts = [int(c) for c in args.sizes.split(",")]
        figures = {
            "generate_s": round(generated, 1) if args.data is None else "reused",
            "rounds": args.rounds,
            **run(root, gold, counts, args.rounds, args.before),
        }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
