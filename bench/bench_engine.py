"""Benchmark: the judge run engine's overhead and CPU per call, against the bare HTTP floor.

The local OpenAI-compatible server (``workbench fake-llm``) runs in its own process with a
fixed latency, so it does not compete with the client for the GIL. For every concurrency
(default 32 and 128), measured in the same run against the same server:

1. ``httpx_floor``: the same number of POSTs of a chat-completions body of the same size
   through one pooled ``httpx.AsyncClient`` (as many connections as the concurrency) under a
   semaphore: the bare HTTP client, no OpenAI client, no parsing, no records.
   ``httpx_sharded_floor``: the same through pools of 8 connections used round robin (one pool
   of 128 connections spends most of its CPU in httpcore's pool bookkeeping, so it is no floor
   at 128). ``aiohttp_floor``: the same POSTs through one ``aiohttp.ClientSession`` (the
   engine's transport, :mod:`workbench.judges._transport`, without httpx's client above it).
2. ``engine``: ``workbench.runs.run_candidate`` on the same number of cases, cache off, with
   everything it does (Ragas DiscreteMetric through ``llm_factory``, wire capture, token
   estimate and budget reservation, fsynced appends, group-committed).

A warm-up (64 POSTs and a 32-case engine run) comes first and is not measured: lazy imports
and pydantic's deferred model builds are paid once per process. Each is reported as wall
time, its ratio to the ideal ``n x latency / concurrency`` and CPU milliseconds per call
(``time.process_time`` of this process over the run, divided by calls). Each engine run also
says whether its calls took the prepared request (``prepared_request``: ``prepared, direct
post``, ``prepared`` with the SDK's ``post``, or ``ascore: <why>``), and ``environment`` gives
the interpreter and the client stack's versions.
Targets: engine ratio <= 1.25 at concurrency 32, engine CPU < 3 ms per call (issue 14); at
concurrency 128 engine ratio <= 1.3 and CPU <= 1 ms per call (issue 31). The synthetic gold is
validated from the temporary directory (the checkout's ``workbench.yaml`` lists its own reviewers).

    .venv/bin/python bench/bench_engine.py [--cases 1000] [--latency 0.2] [--concurrency 32 128]
    .venv/bin/python bench/bench_engine.py --profile 40   # cProfile the engine, first concurrency
    .venv/bin/python bench/bench_engine.py --layers 400   # CPU per call of each client layer

``--layers N``: N calls at concurrency 8 (latency 0), twice, through each layer of the client
stack alone, from the bottom: raw aiohttp; httpx's client on the judge's transport (its event
hooks on); the OpenAI client's ``post`` returning the bare response, then a ``ChatCompletion``;
the prepared request (instructor's parse on top); ``judge.evaluate`` (wire capture, verdict,
redaction); a whole engine run (records, limits, writer, plan and summary).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_runs import write_spec  # noqa: E402
from fake_server import fake_llm_process  # noqa: E402

import workbench  # noqa: E402,F401  (sets RAGAS_DO_NOT_TRACK before ragas loads)
from workbench.gold import load_dataset  # noqa: E402
from workbench.judges import JudgeInput, load_candidate  # noqa: E402
from workbench.judges._llm import CONNECTIONS_PER_CLIENT  # noqa: E402
from workbench.runs import RunOptions, run_candidate  # noqa: E402

TARGET_RATIO = 1.25
TARGET_CPU_MS = 3.0
TARGET_RATIO_128 = 1.3
TARGET_CPU_MS_128 = 1.0


def _timed(fn):  # type: ignore[no-untyped-def]
    """``(result, wall s, cpu s)`` of ``fn()``."""
    w0, c0 = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - w0, time.process_time() - c0


def httpx_floor(
    url: str, body: bytes, n: int, concurrency: int, per_client: int | None = None
) -> tuple[float, float, int]:
    """``(wall s, cpu s, ok responses)`` of ``n`` POSTs through pooled httpx clients: one pool of
    ``concurrency`` connections, or (``per_client``) pools of that many, used round robin."""
    import httpx

    size = per_client or concurrency
    clients = -(-concurrency // size)

    async def go() -> int:
        limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
        headers = {
            "content-type": "application/json",
            "authorization": "Bearer " + os.environ["BENCH_KEY"],
        }
        gate = asyncio.Semaphore(concurrency)
        pool = [httpx.AsyncClient(limits=limits, timeout=30) for _ in range(clients)]

        async def one(i: int) -> int:
            async with gate:
                response = await pool[i % clients].post(
                    url + "/chat/completions", content=body, headers=headers
                )
                response.json()
                return response.status_code

        try:
            codes = await asyncio.gather(*(one(i) for i in range(n)))
        finally:
            for client in pool:
                await client.aclose()
        return sum(1 for c in codes if c == 200)

    ok, wall, cpu = _timed(lambda: asyncio.run(go()))
    return wall, cpu, ok


def aiohttp_floor(url: str, body: bytes, n: int, concurrency: int) -> tuple[float, float, int]:
    """``(wall s, cpu s, ok responses)`` of ``n`` POSTs through one aiohttp session of
    ``concurrency`` connections."""
    import aiohttp

    async def go() -> int:
        headers = {
            "content-type": "application/json",
            "authorization": "Bearer " + os.environ["BENCH_KEY"],
        }
        gate = asyncio.Semaphore(concurrency)
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector) as session:

            async def one() -> int:
                async with (
                    gate,
                    session.post(url + "/chat/completions", data=body, headers=headers) as response,
                ):
                    json.loads(await response.read())
                    return response.status

            codes = await asyncio.gather(*(one() for _ in range(n)))
        return sum(1 for c in codes if c == 200)

    ok, wall, cpu = _timed(lambda: asyncio.run(go()))
    return wall, cpu, ok


def _floor(wall: float, cpu: float, ok: int, n: int, ideal: float) -> dict[str, float | int]:
    return {
        "wall_s": round(wall, 3),
        "ratio_to_ideal": round(wall / ideal, 3),
        "cpu_ms_per_call": round(1000 * cpu / n, 3),
        "ok": ok,
    }


def engine(
    spec: Path, gold: Path, out: Path, concurrency: int, profile: cProfile.Profile | None = None
) -> tuple[float, float, dict]:
    """``(wall s, cpu s, run summary)`` of one cold engine run (cache off)."""
    judge = load_candidate(spec)
    dataset = load_dataset(gold)

    def go() -> dict:
        if profile is not None:
            profile.enable()
        try:
            return asyncio.run(
                run_candidate(
                    judge,
                    dataset,
                    "development",
                    out,
                    RunOptions(concurrency=concurrency, cache_dir=False, progress=False),
                )
            ).model_dump()
        finally:
            if profile is not None:
                profile.disable()

    summary, wall, cpu = _timed(go)
    return wall, cpu, {**summary, "prepared_request": _prepared_path(judge)}


def _prepared_path(judge: Any) -> str:
    """Whether the run's calls went through the prepared request (``judges/_prepared.py``) or,
    and why, through Ragas' ``ascore``: a changed sentinel match shows here, not only as CPU."""
    found = [preparation for _, preparation in judge._prepared.values()]
    if not found:
        return "not prepared"
    return "; ".join(
        f"ascore: {p.reason}"
        if p.request is None
        else "prepared, direct post"
        if getattr(p.request, "direct", None) is not None
        else "prepared"
        for p in found
    )


def environment() -> dict[str, str]:
    """The interpreter and the client stack's versions: CPU per call moves with them (the bare
    httpx floor is in every run for that reason)."""
    import platform
    import sysconfig
    from importlib.metadata import version

    names = ("httpx", "httpcore", "anyio", "aiohttp", "openai", "instructor", "pydantic_core")
    config = str(sysconfig.get_config_var("CONFIG_ARGS") or "")
    return {
        "python": platform.python_version(),
        "python_optimized": str("--enable-optimizations" in config or "--with-lto" in config),
        **{name: version(name) for name in names},
    }


def sample_body(spec: Path, gold: Path) -> bytes:
    """A chat-completions body the size of the engine's (its prompt for the first case)."""
    judge = load_candidate(spec)
    case = load_dataset(gold).partition("development")[0]
    prompt = judge.render(JudgeInput.from_case(case))["prompt"]
    schema = (
        "Understand the content and provide the parsed objects in json that match the following"
        " json_schema:\n\n" + "x" * 400
    )
    body = {
        "messages": [{"role": "system", "content": schema}, {"role": "user", "content": prompt}],
        "model": "fake-judge",
        "max_tokens": 128,
        "temperature": 0,
        "response_format": {"type": "json_object"},
    }
    return json.dumps(body).encode()


async def _cpu_per_call(one: Any, n: int, concurrency: int) -> float:
    """CPU ms per call of ``n`` calls of ``one(i)``, ``concurrency`` at a time (16 unmeasured
    first)."""
    await asyncio.gather(*(one(i) for i in range(16)))
    gate = asyncio.Semaphore(concurrency)

    async def gated(i: int) -> None:
        async with gate:
            await one(i)

    c0 = time.process_time()
    await asyncio.gather(*(gated(i) for i in range(n)))
    return 1000 * (time.process_time() - c0) / n


def _layer_calls(judge: Any, url: str, prompts: list[str]) -> dict[str, Any]:
    """For each layer, a coroutine function ``one(i)`` making one call through that layer alone."""
    import aiohttp
    import httpx
    from openai.types.chat import ChatCompletion

    headers = {"content-type": "application/json", "authorization": "Bearer x"}
    state: dict[str, Any] = {}

    async def request() -> Any:
        if "request" not in state:
            state["request"] = (await judge._preparation(judge.metric)).request
        return state["request"]

    async def raw_aiohttp(i: int) -> None:
        if "session" not in state:
            state["session"] = aiohttp.ClientSession()
        body = json.dumps((await request()).body(prompts[i % len(prompts)])).encode()
        async with state["session"].post(
            url + "/chat/completions", data=body, headers=headers
        ) as r:
            json.loads(await r.read())

    async def httpx_client(i: int) -> None:
        body = json.dumps((await request()).body(prompts[i % len(prompts)])).encode()
        http = judge._llm().client.client._client
        (await http.post(url + "/chat/completions", content=body, headers=headers)).json()

    def openai_post(cast_to: Any) -> Any:
        async def one(i: int) -> None:
            prepared = await request()
            client = judge._llm().client.client
            body = prepared.body(prompts[i % len(prompts)])
            await client.post(prepared.url, body=body, cast_to=cast_to, options={})

        return one

    async def prepared(i: int) -> None:
        await (await request()).ascore(judge._llm().client.client, prompts[i % len(prompts)])

    return {
        "raw_aiohttp": raw_aiohttp,
        "httpx_client_on_judge_transport": httpx_client,
        "openai_post_bare_response": openai_post(httpx.Response),
        "openai_post_chat_completion": openai_post(ChatCompletion),
        "prepared_request_with_instructor_parse": prepared,
        "_state": state,
    }


def layers(spec: Path, gold: Path, out: Path, url: str, n: int) -> dict[str, list[float]]:
    """CPU ms per call of each layer of the client stack, measured twice (see ``--layers``)."""
    dataset = load_dataset(gold)
    inputs = [JudgeInput.from_case(c) for c in dataset.partition("development")]
    found: dict[str, list[float]] = {}
    for repeat in range(2):
        judge: Any = load_candidate(spec)
        prompts = [judge._prompt(x) for x in inputs]
        calls = _layer_calls(judge, url, prompts)
        state = calls.pop("_state")

        async def evaluate(i: int, judge: Any = judge) -> None:
            verdict = await judge.evaluate(inputs[i % len(inputs)])
            assert verdict.error is None, verdict.error

        calls["judge_evaluate"] = evaluate

        async def measure_all(
            calls: dict[str, Any] = calls, state: dict[str, Any] = state, judge: Any = judge
        ) -> None:
            judge.prepare(8)
            try:
                for name, one in calls.items():
                    found.setdefault(name, []).append(round(await _cpu_per_call(one, n, 8), 3))
            finally:
                await judge.aclose()
                if "session" in state:
                    await state["session"].close()

        asyncio.run(measure_all())
        options = RunOptions(concurrency=8, cache_dir=False, progress=False)
        c0 = time.process_time()
        summary = asyncio.run(
            run_candidate(judge, dataset, "development", out / str(repeat), options)
        )
        cpu = 1000 * (time.process_time() - c0) / (summary.calls or 1)
        found.setdefault("engine_run", []).append(round(cpu, 3))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[32, 128])
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="cProfile the engine at the first concurrency; print the top N functions",
    )
    parser.add_argument(
        "--layers",
        type=int,
        default=0,
        metavar="N",
        help="instead: CPU per call of each layer of the client stack, N calls each, at latency 0",
    )
    parser.add_argument(
        "--profile-out",
        type=Path,
        default=None,
        help="also write the raw cProfile stats here (for pstats)",
    )
    args = parser.parse_args()
    os.environ.setdefault("BENCH_KEY", "bench-key-not-secret")
    from synth import write_synthetic

    figures: dict[str, object] = {
        "cases": args.cases,
        "latency_s": args.latency,
        "targets": {
            "engine_ratio_to_ideal_at_32": TARGET_RATIO,
            "engine_cpu_ms_per_call": TARGET_CPU_MS,
            "engine_ratio_to_ideal_at_128": TARGET_RATIO_128,
            "engine_cpu_ms_per_call_at_128": TARGET_CPU_MS_128,
        },
        "loadavg_before": Path("/proc/loadavg").read_text().split()[:3],
        "environment": environment(),
    }
    profile_text = ""
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        os.chdir(tmp)
        gold_dir, _ = write_synthetic(
            tmp / "data", args.cases * 3, missing_rate=0.0
        )  # ~1/3 in development
        if args.layers:
            layer_gold, _ = write_synthetic(tmp / "layers", args.layers * 3, missing_rate=0.0)
            with fake_llm_process(0.0) as url:
                spec = write_spec(tmp / "spec", url)
                figures = {
                    "layers_cpu_ms_per_call": layers(
                        spec, layer_gold, tmp / "runs", url, args.layers
                    ),
                    "calls_per_layer": args.layers,
                    "concurrency": 8,
                    "loadavg": Path("/proc/loadavg").read_text().split()[:3],
                }
            print(json.dumps(figures, indent=2))
            return
        with fake_llm_process(args.latency) as url:
            spec = write_spec(tmp / "spec", url)
            n = len(load_dataset(gold_dir).partition("development"))
            figures["cases"] = n
            body = sample_body(spec, gold_dir)
            # Warm-up, not measured: the server's threads, lazy imports and pydantic's deferred
            # model builds (paid once per process, by any run), so each figure is the steady state.
            httpx_floor(url, body, min(n, 64), 32)
            warm_gold, _ = write_synthetic(tmp / "warm", 96, seed=11, missing_rate=0.0)
            engine(spec, warm_gold, tmp / "run-warm", 32)
            for index, concurrency in enumerate(args.concurrency):
                ideal = n * args.latency / concurrency
                f_wall, f_cpu, f_ok = httpx_floor(url, body, n, concurrency)
                s_wall, s_cpu, s_ok = httpx_floor(
                    url, body, n, concurrency, per_client=CONNECTIONS_PER_CLIENT
                )
                profile = (
                    cProfile.Profile(time.thread_time) if args.profile and index == 0 else None
                )  # CPU of the event loop's thread, not wall time (the machine is shared)
                e_wall, e_cpu, summary = engine(
                    spec, gold_dir, tmp / f"run-{concurrency}", concurrency, profile
                )
                calls = summary["calls"] or 1
                a_wall, a_cpu, a_ok = aiohttp_floor(url, body, n, concurrency)
                figures[f"concurrency_{concurrency}"] = {
                    "ideal_s": round(ideal, 3),
                    "httpx_floor": _floor(f_wall, f_cpu, f_ok, n, ideal),
                    "httpx_sharded_floor": {
                        **_floor(s_wall, s_cpu, s_ok, n, ideal),
                        "connections_per_client": CONNECTIONS_PER_CLIENT,
                    },
                    "aiohttp_floor": _floor(a_wall, a_cpu, a_ok, n, ideal),
                    "engine": {
                        "wall_s": round(e_wall, 3),
                        "ratio_to_ideal": round(e_wall / ideal, 3),
                        "cpu_ms_per_call": round(1000 * e_cpu / calls, 3),
                        "calls": summary["calls"],
                        "verdicts": summary["verdicts"],
                        "errors": summary["errors"],
                        "prepared_request": summary["prepared_request"],
                    },
                    "engine_cpu_over_floor": (
                        round((e_cpu / calls) / (f_cpu / n), 2) if f_cpu else None
                    ),
                    "engine_wall_over_floor": round(e_wall / f_wall, 3),
                    "engine_cpu_over_sharded_floor": (
                        round((e_cpu / calls) / (s_cpu / n), 2) if s_cpu else None
                    ),
                    "engine_wall_over_sharded_floor": round(e_wall / s_wall, 3),
                    "engine_cpu_over_aiohttp_floor": (
                        round((e_cpu / calls) / (a_cpu / n), 2) if a_cpu else None
                    ),
                    "engine_wall_over_aiohttp_floor": round(e_wall / a_wall, 3),
                }
                if profile is not None:
                    stream = io.StringIO()
                    stats = pstats.Stats(profile, stream=stream)
                    stats.sort_stats("tottime").print_stats(args.profile)
                    stats.sort_stats("cumulative").print_stats(args.profile)
                    profile_text = stream.getvalue()
                    if args.profile_out:
                        profile.dump_stats(args.profile_out)
    figures["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
    if profile_text:
        print(profile_text, file=sys.stderr)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
