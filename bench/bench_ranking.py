"""Benchmark: the position-bias battery of the LLM ranking kind through the run engine.

100 synthetic fixtures x 4 candidates x all 24 permutations = 2,400 judge calls (no repeat
baseline), through ``workbench.ranking.run_ranking`` (Ragas ``RankingMetric`` via
``llm_factory``, wire capture, fsynced append per attempt) against the scripted demo ranking
model served by ``workbench fake-llm`` in its own process at 200 ms per call, concurrency 32.
Figures, all measured in the same run:

- ``battery.wall_s`` and ``battery.ratio_to_ideal``: against the ideal 2400 x 0.2 / 32 = 15 s.
- ``http_floor``: the same 2,400 prompts posted with a bare ``httpx.AsyncClient`` and a
  semaphore of 32 (no Ragas, no engine): what the server and the loopback allow on this
  machine now; ``battery_over_floor`` is the engine's cost above it.
- ``ragas_direct``: the same 2,400 requests through Ragas' ``RankingMetric.ascore`` with the
  same client settings and a semaphore of 32, no engine (no manifest, wire capture, retries,
  budget or fsynced records): the peer baseline; ``battery_over_ragas_direct`` is the engine
  and the ranking kind's cost above Ragas itself.
- ``warm``: the battery again into the same run directory (resume: calls must be 0).
- ``analysis_s``: ``ranking_report`` over the 2,400 results, and what it finds (the scripted
  model's primacy bias: first-shown share vs the position-blind 0.25).

    .venv/bin/python bench/bench_ranking.py [--fixtures 100] [--concurrency 32] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]

from fake_server import fake_llm_process  # noqa: E402

import workbench  # noqa: E402,F401  (sets RAGAS_DO_NOT_TRACK before ragas loads)
from workbench.judges import load_candidate  # noqa: E402
from workbench.ranking import (  # noqa: E402
    load_fixtures,
    position_battery,
    ranking_report,
    run_ranking,
)

RESPONDER = "workbench.demo.ranking:respond"
PHRASES = [
    "original payment method",
    "5 business days",
    "identity verification",
    "prepaid return label",
    "48 hours",
    "tier 2",
    "1 business day",
    "membership page",
]


def server(latency: float):  # type: ignore[no-untyped-def]
    return fake_llm_process(latency, responder=RESPONDER)


def write_fixtures(directory: Path, n: int) -> Path:
    """``n`` fixtures of 4 candidates stating 4, 3, 1 and 0 policy phrases (best first)."""
    fixtures = []
    for i in range(n):
        phrases = [PHRASES[(i + k) % len(PHRASES)] for k in range(4)]
        context = [
            {"id": f"pol-{i}-{k}", "text": f"Policy {i}.{k}: the {p} rule applies to order {i}."}
            for k, p in enumerate(phrases)
        ]
        stated = [phrases[:4], phrases[:3], phrases[:1], []]
        candidates = [
            {
                "id": f"c{i}-{j}",
                "text": (
                    f"Answer {j} for order {i}. "
                    + " ".join(f"We follow the {p} rule." for p in said)
                    + (" Nothing else to add." if not said else "")
                ),
            }
            for j, said in enumerate(stated)
        ]
        fixtures.append(
            {
                "case_id": f"bench-{i:03d}",
                "criterion_version": "bench-v1",
                "direction": "best-first",
                "gate": "must-win",
                "user_input": f"What applies to order {i}?",
                "context": context,
                "cited_context": [context[0]["id"]],
                "candidates": candidates,
                "expected_order": [c["id"] for c in candidates],
                "rationale": ["more supported policy phrases rank higher"],
            }
        )
    path = directory / "bench-ranking@1.yaml"
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(
        yaml.safe_dump(
            {"schema_version": 1, "name": "bench-ranking", "version": "1", "fixtures": fixtures},
            sort_keys=False,
        )
    )
    return path


def write_spec(directory: Path, base_url: str) -> Path:
    spec = yaml.safe_load((ROOT / "data" / "candidates" / "support-llm-ranker@1.yaml").read_text())
    spec.update(name="bench-llm-ranker", version="1")
    spec["endpoint"] = {
        **spec["endpoint"],
        "base_url": base_url,
        "api_key_env": "BENCH_KEY",
        "timeout_s": 30,
        "max_retries": 6,
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "bench-llm-ranker@1.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


async def http_floor(base_url: str, prompts: list[str], concurrency: int) -> float:
    import httpx

    gate = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(
        base_url=base_url, limits=httpx.Limits(max_connections=concurrency), timeout=30
    ) as client:

        async def one(prompt: str) -> None:
            async with gate:
                answer = await client.post(
                    "/chat/completions",
                    json={
                        "model": "fake-judge",
                        "messages": [{"role": "user", "content": prompt}],
                        "response_format": {"type": "json_object"},
                    },
                )
                answer.raise_for_status()

        t0 = time.perf_counter()
        await asyncio.gather(*(one(p) for p in prompts))
        return time.perf_counter() - t0


async def ragas_direct(judge: object, items: list, concurrency: int) -> tuple[float, int]:
    from openai import AsyncOpenAI
    from ragas.llms import llm_factory
    from ragas.metrics import RankingMetric

    spec = judge.spec  # type: ignore[attr-defined]
    client = AsyncOpenAI(
        base_url=spec.endpoint.base_url, api_key=os.environ["BENCH_KEY"], max_retries=0
    )
    llm = llm_factory(spec.model, provider="openai", client=client, **spec.params, max_retries=1)
    metric = RankingMetric(name="bench", allowed_values=4, prompt=judge.template)  # type: ignore[attr-defined]
    gate = asyncio.Semaphore(concurrency)

    async def one(item: object) -> bool:
        async with gate:
            result = await metric.ascore(llm=llm, **judge._arguments(item.judge_input))  # type: ignore[attr-defined]
        return isinstance(result.value, list) and len(result.value) == 4

    t0 = time.perf_counter()
    ok = await asyncio.gather(*(one(i) for i in items))
    wall = time.perf_counter() - t0
    await client.close()
    return wall, sum(ok)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--fixtures", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()
    os.environ.setdefault("BENCH_KEY", "bench-key-not-secret")
    calls = args.fixtures * 24
    ideal = calls * args.latency / args.concurrency
    figures: dict[str, object] = {
        "fixtures": args.fixtures,
        "candidates": 4,
        "calls": calls,
        "concurrency": args.concurrency,
        "latency_s": args.latency,
        "ideal_s": round(ideal, 3),
    }
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        fixture_set = load_fixtures(write_fixtures(tmp / "data", args.fixtures))
        battery = {"max_exhaustive": 4, "repeats": 0}
        with server(args.latency) as url:
            judge = load_candidate(write_spec(tmp / "spec", url))
            items = position_battery(fixture_set, **battery)
            prompts = [judge.render(item.judge_input)["prompt"] for item in items]
            floor = asyncio.run(http_floor(url, prompts, args.concurrency))
            figures["http_floor"] = {
                "wall_s": round(floor, 3),
                "ratio_to_ideal": round(floor / ideal, 3),
            }
            direct, ok = asyncio.run(ragas_direct(judge, items, args.concurrency))
            figures["ragas_direct"] = {
                "wall_s": round(direct, 3),
                "ratio_to_ideal": round(direct / ideal, 3),
                "rankings": ok,
            }
            out = tmp / "run"
            t0 = time.perf_counter()
            summary = asyncio.run(
                run_ranking(
                    judge,
                    fixture_set,
                    out,
                    concurrency=args.concurrency,
                    cache_dir=tmp / "cache",
                    progress=False,
                    **battery,
                )
            )
            wall = time.perf_counter() - t0
            figures["battery"] = {
                "wall_s": round(wall, 3),
                "ratio_to_ideal": round(wall / ideal, 3),
                "calls": summary.calls,
                "planned": summary.planned,
                "answers": summary.verdicts,
                "errors": summary.errors,
                "status": summary.status,
            }
            figures["battery_over_floor"] = round(wall / floor, 3)
            figures["battery_over_ragas_direct"] = round(wall / direct, 3)
            t0 = time.perf_counter()
            warm = asyncio.run(
                run_ranking(
                    judge,
                    fixture_set,
                    out,
                    concurrency=args.concurrency,
                    cache_dir=tmp / "cache",
                    progress=False,
                    **battery,
                )
            )
            figures["warm"] = {
                "calls": warm.calls,
                "resumed": warm.resumed,
                "wall_s": round(time.perf_counter() - t0, 3),
            }
        t0 = time.perf_counter()
        report = ranking_report(fixture_set, out / "results.jsonl")
        figures["analysis_s"] = round(time.perf_counter() - t0, 3)
        first = report.position_bias.by_position[0]
        figures["finding"] = {
            "passed": report.passed,
            "integration_defects": len(report.integration_defects),
            "must_win_reversal_cases": len(report.must_win.reversals),
            "must_win_held": f"{report.must_win.must_win.k}/{report.must_win.must_win.n}",
            "first_shown_wins": f"{first.wins.k}/{first.wins.n}",
            "first_shown_share": round(first.wins.rate or 0.0, 4),
            "position_blind_share": first.chance,
            "position_stable_cases": (
                f"{report.position_sensitivity.stable_cases.k}/{report.position_sensitivity.stable_cases.n}"
            ),
        }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
