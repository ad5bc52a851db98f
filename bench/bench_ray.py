"""Benchmark: the Ray executor against the default executor, and two local Ray nodes against one.

Two parts, each with its baseline measured in the same run (interleaved repeats):

1. ``networked``: ``workbench run`` (the CLI, a fresh process each time: imports, Ray start-up
   and the run) over ``--cases`` cases against the fake OpenAI server (``workbench fake-llm``,
   ``--latency`` s per call) at ``--concurrency`` in total, once with the default executor and
   once with ``--executor ray --shards N``. Figures: wall of each, the ratio ray / default, the
   seconds from the command's start to its first call (the start-up), and the files the command
   left in ``HOME`` (a fresh temporary directory per command).
2. ``cpu``: a deterministic CPU-bound judge (``burn``: a ``ragas-function`` metric that hashes for
   ``--burn-ms`` per case) on ``ray.cluster_utils.Cluster``: one node of 1 CPU against two nodes
   of 1 CPU each, ``--shards 2 --ray-cpus-per-shard 1``, the driver connected through
   ``RAY_ADDRESS``. Wall of the ``run`` command on each, and the speed-up.

    .venv/bin/python bench/bench_ray.py [--cases 1000] [--concurrency 32] [--shards 4]
        [--repeats 3] [--cpu-cases 120] [--burn-ms 250] [--skip cpu|networked] [--src DIR]
        [--ray-args "--ray-cpus-per-shard 0.25"]

``--src DIR``: the ``workbench`` package of another checkout (``DIR/workbench``), e.g. an export
of main, for a before/after in one session; ``--ray-args`` then lists the options that checkout
takes. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import secrets
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from ragas.metrics import discrete_metric
from ragas.metrics.result import MetricResult

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BURN_MS = float(os.environ.get("BENCH_BURN_MS", "50"))


@discrete_metric(name="burn", allowed_values=["pass", "fail"])
def burn(response: str) -> MetricResult:
    """Hash the response for ``BENCH_BURN_MS`` of CPU, then pass if the digest's first nibble is
    even: deterministic, CPU-bound, no I/O."""
    digest = response.encode("utf-8")
    deadline = time.thread_time() + BURN_MS / 1000  # this call's own CPU, whatever runs beside
    rounds = 0
    while time.thread_time() < deadline or rounds < 1:
        for _ in range(200):
            digest = hashlib.sha256(digest).digest()
        rounds += 1
    verdict = "pass" if digest[0] % 2 == 0 else "fail"
    return MetricResult(value=verdict, reason=f"{rounds} rounds")


def _env(src: Path, home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The command's environment: ``src`` and this directory first on the path, a fresh HOME."""
    path = os.pathsep.join([str(src), str(HERE)])
    env = {**os.environ, "PYTHONPATH": path, "HOME": str(home), "RAGAS_DO_NOT_TRACK": "true"}
    env.setdefault("BENCH_KEY", "bench-key-not-secret")
    return {**env, **(extra or {})}


def _files(home: Path) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())


def run_cli(args: list[str], src: Path, tmp: Path, env: dict[str, str] | None = None) -> dict:
    """Run ``workbench <args>`` in a fresh process with its own HOME; wall, first call, HOME."""
    home = Path(tempfile.mkdtemp(dir=tmp, prefix="home-"))
    out = Path(args[args.index("--out") + 1])
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "workbench", *args],
        env=_env(src, home, env),
        cwd=tmp,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"workbench {shlex.join(args)} exited {done.returncode}: {done.stderr}")
    summary = json.loads((out / "run.json").read_text())
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    first = min(datetime.fromisoformat(r["started_at"]) for r in records)
    last = max(
        datetime.fromisoformat(r["started_at"]).timestamp() + (r["latency_s"] or 0.0)
        for r in records
    )
    workers = [json.loads(w.read_text()) for w in out.glob("shards/*/worker.json")]
    shard_start = min((datetime.fromisoformat(w["started_at"]) for w in workers), default=first)
    return {
        "wall_s": wall,
        "first_shard_s": (shard_start - started).total_seconds(),
        "first_call_s": (first - started).total_seconds(),
        "after_last_call_s": wall - (last - started.timestamp()),
        "worker_processes": len({w["pid"] for w in workers}),
        "calls_s": last - first.timestamp(),
        "verdicts": summary["verdicts"],
        "home_files": _files(home),
    }


def _stats(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
    }


def _spec(directory: Path, spec: dict) -> Path:
    import yaml

    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{spec['name']}@1.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _run_args(spec: Path, gold: Path, out: Path, *extra: str) -> list[str]:
    """``workbench run`` on the development partition, cache and progress off, then ``extra``."""
    fixed = ["run", "--partition", "development", "--no-cache", "--no-progress"]
    return [*fixed, "--candidate", str(spec), "--gold", str(gold), "--out", str(out), *extra]


def networked(args: argparse.Namespace, src: Path, tmp: Path, gold: Path) -> dict:
    from bench_runs import write_spec
    from fake_server import fake_llm_process

    runs: dict[str, list[dict]] = {"default": [], "ray": []}
    common = ["--concurrency", str(args.concurrency)]
    ray_args = ["--executor", "ray", "--shards", str(args.shards), *shlex.split(args.ray_args)]
    with fake_llm_process(args.latency) as url:
        spec = write_spec(tmp / "spec", url)
        for repeat in range(args.repeats):
            for name, extra in (("default", common), ("ray", [*common, *ray_args])):
                out = tmp / f"net-{name}-{repeat}"
                runs[name].append(run_cli(_run_args(spec, gold, out, *extra), src, tmp))
    ratios = [r["wall_s"] / d["wall_s"] for r, d in zip(runs["ray"], runs["default"], strict=True)]
    ideal = runs["default"][0]["verdicts"] * args.latency / args.concurrency
    return {
        "cases": runs["default"][0]["verdicts"],
        "ideal_s": round(ideal, 3),
        "ray_args": ray_args,
        "default_wall_s": _stats([r["wall_s"] for r in runs["default"]]),
        "ray_wall_s": _stats([r["wall_s"] for r in runs["ray"]]),
        "ray_over_default": _stats(ratios),
        "default_first_call_s": _stats([r["first_call_s"] for r in runs["default"]]),
        "ray_first_call_s": _stats([r["first_call_s"] for r in runs["ray"]]),
        "ray_first_shard_s": _stats([r["first_shard_s"] for r in runs["ray"]]),
        "default_after_last_call_s": _stats([r["after_last_call_s"] for r in runs["default"]]),
        "ray_after_last_call_s": _stats([r["after_last_call_s"] for r in runs["ray"]]),
        "ray_worker_processes": sorted({r["worker_processes"] for r in runs["ray"]}),
        "default_calls_s": _stats([r["calls_s"] for r in runs["default"]]),
        "ray_calls_s": _stats([r["calls_s"] for r in runs["ray"]]),
        "home_files_default": sorted({f for r in runs["default"] for f in r["home_files"]}),
        "home_files_ray": sorted({f for r in runs["ray"] for f in r["home_files"]}),
    }


def _on_cluster(nodes: int, command: list[str], src: Path, tmp: Path) -> dict:
    """Run ``command`` as a driver of a local cluster of ``nodes`` nodes of 1 CPU each."""
    from ray.cluster_utils import Cluster

    # the nodes' workers import the judge (this directory) and ``src``'s workbench
    os.environ["PYTHONPATH"] = _env(src, tmp)["PYTHONPATH"]
    # the cluster's token in the environment (the driver inherits it), not in ~/.ray/auth_token
    os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(32))
    os.chdir(tmp)  # the workers' working directory, as the driver's (the gold's project lookup)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        return run_cli(command, src, tmp, {"RAY_ADDRESS": cluster.address})
    finally:
        cluster.shutdown()


def cpu(args: argparse.Namespace, src: Path, tmp: Path, gold: Path) -> dict:
    spec = _spec(
        tmp / "spec-cpu",
        {
            "name": "bench-burn",
            "version": "1",
            "kind": "ragas-function",
            "labels": ["pass", "fail", "review_required"],
            "function": "bench_ray:burn",
        },
    )
    walls: dict[int, list[float]] = {1: [], 2: []}
    calls: dict[int, list[float]] = {1: [], 2: []}  # first call's start to last call's end
    extra = ["--executor", "ray", "--shards", "2", *shlex.split(args.cpu_ray_args)]
    for repeat in range(args.repeats):
        for nodes in (1, 2):
            out = tmp / f"cpu-{nodes}-{repeat}"
            command = _run_args(spec, gold, out, *extra)
            measured = _on_cluster(nodes, command, src, tmp)
            walls[nodes].append(measured["wall_s"])
            calls[nodes].append(measured["calls_s"])
    speedups = [a / b for a, b in zip(walls[1], walls[2], strict=True)]
    call_speedups = [a / b for a, b in zip(calls[1], calls[2], strict=True)]
    return {
        "burn_ms": BURN_MS,
        "serial_cpu_s": round(args.cpu_cases * BURN_MS / 1000, 3),
        "ray_args": extra,
        "one_node_wall_s": _stats(walls[1]),
        "two_nodes_wall_s": _stats(walls[2]),
        "speedup_two_over_one": _stats(speedups),
        "one_node_calls_s": _stats(calls[1]),
        "two_nodes_calls_s": _stats(calls[2]),
        "calls_speedup_two_over_one": _stats(call_speedups),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cpu-cases", type=int, default=120)
    parser.add_argument("--burn-ms", type=float, default=250.0)
    parser.add_argument("--skip", action="append", default=[], choices=["cpu", "networked"])
    parser.add_argument("--src", type=Path, default=ROOT)
    parser.add_argument("--ray-args", default="", help="extra options of the Ray runs")
    parser.add_argument("--cpu-ray-args", default="--ray-cpus-per-shard 1")
    args = parser.parse_args()
    os.environ["BENCH_BURN_MS"] = str(args.burn_ms)  # the cluster's workers read it
    global BURN_MS
    BURN_MS = args.burn_ms
    sys.path.insert(0, str(HERE))
    from synth import write_synthetic

    figures: dict[str, object] = {"loadavg_before": Path("/proc/loadavg").read_text().split()[:3]}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        src = args.src.resolve()
        if "networked" not in args.skip:
            gold, _ = write_synthetic(tmp / "data", args.cases * 3, missing_rate=0.0)
            figures["networked"] = networked(args, src, tmp, gold)
            print(json.dumps(figures["networked"]), file=sys.stderr)  # kept if a later part fails
        if "cpu" not in args.skip:
            gold, _ = write_synthetic(tmp / "cpu-data", args.cpu_cases * 3, missing_rate=0.0)
            figures["cpu"] = cpu(args, src, tmp, gold)
    figures["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
