"""Benchmark, on demand: align 10M results x 1 judge from a directory of Parquet shards.

Generating the data takes a while, so this is not part of ``make bench``. The gold is the
synthetic dataset of ``synth.py`` (``--cases``, default 101,000); its results are repeated
``--repeats`` times (repeat indexes 0..R-1, one Parquet shard per repeat), about 10M results
in all. ``align`` reads and checks every one of them (contract, duplicates, attempts, lineage)
and aligns repeat 0. Time and peak RSS are measured in a fresh subprocess, with a warm gold
index (built once first, reported apart); DuckDB runs the same join and per-slice counts over
the same shards when installed.

    .venv/bin/python bench/bench_align_10m.py [--cases 101000] [--repeats 100] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
    rows = duckdb.connect().execute(
        '''
        WITH g AS (SELECT case_id, slice, adjudication.label AS label
                   FROM read_json_auto(?, format='newline_delimited')
                   WHERE partition = 'development'),
             r AS (SELECT case_id, CASE WHEN error IS NULL THEN value ELSE '(error)' END AS col
                   FROM read_parquet(?) WHERE repeat = 0
                   QUALIFY row_number() OVER (PARTITION BY case_id ORDER BY attempt DESC) = 1)
        SELECT g.slice, g.label, coalesce(r.col, '(missing)') AS col, count(*) AS n
        FROM g LEFT JOIN r USING (case_id) GROUP BY ALL
        ''',
        [gold + "/gold.jsonl", shards + "/*.parquet"],
    ).fetchall()
    out = {"n": sum(r[-1] for r in rows)}
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


def measure(mode: str, gold: Path, shards: Path, cache: Path) -> dict[str, object]:
    env = {**os.environ, "WORKBENCH_CACHE_DIR": str(cache), "RAGAS_DO_NOT_TRACK": "true"}
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
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=101_000)
    parser.add_argument("--repeats", type=int, default=100)
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
    args = parser.parse_args()
    from synth import write_synthetic

    with tempfile.TemporaryDirectory() as tmp:
        root = args.data or args.keep or Path(tmp)
        started = time.perf_counter()
        if args.data is None:
            gold, results = write_synthetic(root, args.cases)
            total = write_shards(results, root / "shards", args.repeats)
            results.unlink()
        else:
            import pyarrow.parquet as pq

            gold = root / "gold"
            total = sum(
                pq.ParquetFile(f).metadata.num_rows for f in (root / "shards").glob("*.parquet")
            )
        generated = time.perf_counter() - started
        cache = root / "cache"
        cold = measure("align", gold, root / "shards", cache)
        warm = measure("align", gold, root / "shards", cache)
        figures: dict[str, object] = {
            "results": total,
            "gold_cases": args.cases,
            "shards": args.repeats,
            "generate_s": round(generated, 1),
            "load_average": os.getloadavg()[0],
            "align_cold": cold,
            "align": warm,
        }
        try:
            import duckdb  # noqa: F401

            figures["duckdb"] = measure("duckdb", gold, root / "shards", cache)
            figures["align_over_duckdb_wall"] = round(
                warm["wall_s"] / figures["duckdb"]["wall_s"], 2
            )  # type: ignore[index]
        except ImportError:
            figures["duckdb"] = "not installed"
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
