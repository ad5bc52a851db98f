"""Benchmark: the run engine against the local OpenAI-compatible server at 200 ms per call.

The server runs in its own process (``workbench fake-llm``) so that it does not compete with
the client for the GIL. Scenarios, all measured in the same run:

1. ``engine``: 1,000 cases at concurrency 32 through ``workbench.runs.run_candidate`` (Ragas
   DiscreteMetric via llm_factory, wire capture, fsynced append per attempt). Reported as a
   ratio to the ideal 1000 x 0.2 / 32 s.
2. ``ragas_arun``: the same workload through Ragas' own ``@experiment`` / ``arun`` loop, the
   same metric and client settings, with a semaphore of 32 (arun itself starts every row at
   once). The peer baseline.
3. ``warm_cache``: the engine again into a new run directory with the cache from (1): calls
   made and wall time.
4. ``faults``: a fresh server injecting 10% HTTP 500 and 5% HTTP 429 (Retry-After 1 s): counts
   of verdicts, recorded errors, retries, duplicates.

    .venv/bin/python bench/bench_runs.py [--cases 1000] [--concurrency 32] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fake_server import fake_llm_process  # noqa: E402

import workbench  # noqa: E402,F401  (sets RAGAS_DO_NOT_TRACK before ragas loads)
from workbench.gold import load_dataset  # noqa: E402
from workbench.judges import JudgeInput, load_candidate  # noqa: E402
from workbench.runs import RunOptions, run_candidate  # noqa: E402

PROMPT = (
    "Grading notes:\n{grading_notes}\n\nQuestion: {user_input}\n\nResponse:\n{response}\n\nReturn"
    " pass or fail with a reason."
)


def server(latency: float, faults: list[str] = ()):  # type: ignore[no-untyped-def]
    return fake_llm_process(latency, faults=faults)


def write_spec(directory: Path, base_url: str) -> Path:
    spec = {
        "name": "bench-llm",
        "version": "1",
        "kind": "ragas-llm",
        "labels": ["pass", "fail", "review_required"],
        "model": "fake-judge",
        "prompt": PROMPT,
        "endpoint": {
            "base_url": base_url,
            "api_key_env": "BENCH_KEY",
            "timeout_s": 30,
            "max_retries": 6,
        },
        "params": {"temperature": 0, "max_tokens": 128},
        "pricing": {"input_per_million_usd": 0.15, "output_per_million_usd": 0.6},
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "bench-llm@1.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


async def engine(
    spec: Path, gold: Path, out: Path, concurrency: int, cache: Path | bool
) -> tuple[float, dict]:
    judge = load_candidate(spec)
    dataset = load_dataset(gold)
    t0 = time.perf_counter()
    summary = await run_candidate(
        judge,
        dataset,
        "development",
        out,
        RunOptions(concurrency=concurrency, cache_dir=cache, progress=False),
    )
    return time.perf_counter() - t0, summary.model_dump()


async def ragas_arun(spec: Path, gold: Path, concurrency: int) -> tuple[float, int, int]:
    from openai import AsyncOpenAI
    from ragas import Dataset, experiment
    from ragas.llms import llm_factory
    from ragas.metrics import DiscreteMetric

    judge = load_candidate(spec)  # same spec: same prompt, model and parameters
    dataset = load_dataset(gold)
    client = AsyncOpenAI(
        base_url=judge.spec.endpoint.base_url, api_key=os.environ["BENCH_KEY"], max_retries=0
    )
    llm = llm_factory(
        "fake-judge", provider="openai", client=client, **judge.spec.params, max_retries=1
    )
    metric = DiscreteMetric(name="bench", allowed_values=list(judge.spec.labels), prompt=PROMPT)
    rows = [
        {"case_id": c.case_id, **JudgeInput.from_case(c).model_dump()}
        for c in dataset.partition("development")
    ]
    data = Dataset(name="bench", backend="inmemory", data=rows)
    gate = asyncio.Semaphore(concurrency)

    @experiment()
    async def judge_row(row: dict) -> dict:
        async with gate:
            result = await metric.ascore(
                llm=llm,
                user_input=row["user_input"],
                response=row["response"],
                grading_notes=row["grading_notes"],
            )
        return {"case_id": row["case_id"], "value": result.value, "reason": result.reason}

    import functools

    import ragas.experiment
    from tqdm import tqdm

    # arun draws its own tqdm bar with carriage returns; off a terminal that is one garbled line
    # per refresh. Drawing it costs nothing measurable, so the baseline runs without it.
    ragas.experiment.tqdm = functools.partial(tqdm, disable=not sys.stderr.isatty())  # type: ignore[attr-defined]
    t0 = time.perf_counter()
    outcome = await judge_row.arun(data, name="bench", backend="inmemory")
    wall = time.perf_counter() - t0
    await client.close()
    return wall, len(outcome), len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()
    os.environ.setdefault("BENCH_KEY", "bench-key-not-secret")
    from synth import write_synthetic

    figures: dict[str, object] = {
        "cases": args.cases,
        "concurrency": args.concurrency,
        "latency_s": args.latency,
    }
    ideal = args.cases * args.latency / args.concurrency
    figures["ideal_s"] = round(ideal, 3)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        os.chdir(tmp)  # the synthetic gold's reviewers are not the checkout's workbench.yaml's
        # every synthetic case in one partition, so a run covers all of them
        gold_dir, _ = write_synthetic(tmp / "data", args.cases * 3, missing_rate=0.0)
        cache = tmp / "cache"
        with server(args.latency) as url:
            spec = write_spec(tmp / "spec", url)
            wall, summary = asyncio.run(
                engine(spec, gold_dir, tmp / "cold", args.concurrency, cache)
            )
            figures["engine"] = {
                "wall_s": round(wall, 3),
                "ratio_to_ideal": round(wall / ideal, 3),
                "calls": summary["calls"],
                "verdicts": summary["verdicts"],
                "errors": summary["errors"],
                "planned": summary["planned"],
            }
            wall, done, total = asyncio.run(ragas_arun(spec, gold_dir, args.concurrency))
            figures["ragas_arun"] = {
                "wall_s": round(wall, 3),
                "ratio_to_ideal": round(wall / ideal, 3),
                "rows_returned": done,
                "rows": total,
            }
            figures["engine_over_ragas_arun"] = round(
                figures["engine"]["wall_s"] / figures["ragas_arun"]["wall_s"], 3
            )  # type: ignore[index]
            wall, summary = asyncio.run(
                engine(spec, gold_dir, tmp / "warm", args.concurrency, cache)
            )
            figures["warm_cache"] = {
                "wall_s": round(wall, 3),
                "calls": summary["calls"],
                "cache_hits": summary["cache_hits"],
                "ratio_to_cold": round(wall / figures["engine"]["wall_s"], 3),
            }  # type: ignore[index]
        with server(args.latency, ["http_500=0.10", "http_429=0.05"]) as url:
            spec = write_spec(tmp / "spec-faults", url)
            wall, summary = asyncio.run(
                engine(spec, gold_dir, tmp / "faults", args.concurrency, False)
            )
            records = [
                json.loads(line)
                for line in (tmp / "faults" / "results.jsonl").read_text().splitlines()
            ]
            keys = Counter((r["case_id"], r["repeat"], r["attempt"]) for r in records)
            final: dict[str, dict] = {}
            for r in sorted(records, key=lambda r: r["attempt"]):
                final[r["case_id"]] = r
            attempt_errors = Counter(r["error"]["kind"] for r in records if r["error"])
            figures["faults"] = {
                "wall_s": round(wall, 3),
                "ratio_to_ideal": round(wall / ideal, 3),
                "cases": summary["planned"],
                "ended_with_verdict": sum(1 for r in final.values() if r["error"] is None),
                "ended_with_recorded_error": sum(
                    1 for r in final.values() if r["error"] is not None
                ),
                "without_result": summary["planned"] - len(final),
                "attempt_records": len(records),
                "failed_attempts_by_kind": dict(attempt_errors),
                "retries": summary["retries"],
                "duplicate_records": sum(n - 1 for n in keys.values() if n > 1),
                "status": summary["status"],
            }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
