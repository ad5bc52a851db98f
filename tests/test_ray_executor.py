"""The Ray executor on a local Ray instance (``ray.init(num_cpus=2)``), against the fake OpenAI
server.

Skipped, with the reason, only when the optional extra is not installed (``pip install -e
'.[ray]'``; ``.ci/run`` installs it). Every server binds port 0.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import make_case

ray = pytest.importorskip(
    "ray",
    reason="the Ray executor is an optional extra: pip install -e '.[ray]' (.ci/run installs it)",
)

from test_llm_runs import KEY_ENV, SECRET  # noqa: E402
from test_llm_runs import patient_spec as write_spec  # noqa: E402

from workbench.cli import main  # noqa: E402
from workbench.gold import load_dataset  # noqa: E402
from workbench.judges import load_candidate  # noqa: E402
from workbench.runs import RunOptions, run_candidate_sync  # noqa: E402
from workbench.runs._ray import (  # noqa: E402
    local_auth,
    run_candidate_ray,
    start_local,
    stop_local,
)
from workbench.runs._shards import shard_of  # noqa: E402
from workbench.testing import FakeLLM, Reply  # noqa: E402

pytestmark = pytest.mark.ray
ROOT = Path(__file__).resolve().parents[1]
N = 8


def shard_dir(out: Path, index: int) -> Path:
    from workbench.runs import RunDir

    return RunDir(out).shard(index).path


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One local Ray instance of 2 CPUs for the module, started as the executor starts one
    (its token in the environment, not in ~/.ray; retried when it times out starting); its
    workers inherit the judge's API key variable.

    Ray waits a fixed 30 s for its raylet to register (ray/_private/node.py); that window is
    Ray's ``raylet_start_wait_time_s`` config, raised here through its environment variable (CI's
    machine is shared; 8 processes on 2 cores missed 30 s three times in a row).
    """
    os.environ.setdefault("RAY_raylet_start_wait_time_s", "180")
    before = os.environ.get(KEY_ENV)
    os.environ[KEY_ENV] = SECRET
    with local_auth():
        start_local(num_cpus=2)
        yield ray.get_runtime_context().gcs_address
        stop_local()
    if before is None:
        os.environ.pop(KEY_ENV, None)
    else:
        os.environ[KEY_ENV] = before


@pytest.fixture
def gold(make_dataset) -> Path:
    return make_dataset(
        [
            make_case(f"k{i}", "pass", response=f"Answer number {i}: refund in 5 business days.")
            for i in range(N)
        ]
    )


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def calls_per_case(server: FakeLLM) -> Counter[str]:
    found: Counter[str] = Counter()
    for call in server.calls:
        text = json.dumps(call.body)
        found.update(f"k{i}" for i in range(N) if f"Answer number {i}:" in text)
    return found


def _run_args(spec: Path, gold: Path, out: Path, *extra: str) -> list[str]:
    """`workbench run` on the development partition, cache and progress off, then ``extra``."""
    return [
        "run",
        "--candidate",
        str(spec),
        "--gold",
        str(gold),
        "--partition",
        "development",
        "--out",
        str(out),
        "--no-cache",
        "--no-progress",
        *extra,
    ]


def test_shards_run_the_engine_and_merge_into_one_run(gold: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with FakeLLM(default=Reply(value="pass")) as server:
        spec = write_spec(tmp_path, server.base_url)
        result = CliRunner().invoke(
            main,
            _run_args(spec, gold, out, "--executor", "ray", "--shards", "2"),
        )
        assert result.exit_code == 0, result.output
        assert server.call_count == N
        again = CliRunner().invoke(
            main,
            _run_args(spec, gold, out, "--executor", "ray", "--shards", "2"),
        )
        assert again.exit_code == 0, again.output
        assert server.call_count == N  # the resume calls no settled case again
        changed = CliRunner().invoke(
            main,
            [
                "run",
                "--candidate",
                str(spec),
                "--gold",
                str(gold),
                "--partition",
                "development",
                "--out",
                str(out),
                "--executor",
                "ray",
                "--shards",
                "3",
            ],
        )
        assert changed.exit_code == 2 and "shards_changed" in changed.output
        local = run_candidate_sync(
            load_candidate(spec),
            load_dataset(gold),
            "development",
            tmp_path / "local",
            RunOptions(progress=False, cache_dir=False),
        )
    run_id = json.loads((out / "manifest.json").read_text())["run_id"]
    plan = json.loads((out / "shards.json").read_text())
    assert plan["shards"] == 2 and plan["run_id"] == run_id and sum(plan["cases_per_shard"]) == N
    for index in range(2):
        shard = rows(shard_dir(out, index) / "results.jsonl")
        assert {r["case_id"] for r in shard} == {
            f"k{i}" for i in range(N) if shard_of(f"k{i}", 2) == index
        }
        assert json.loads((shard_dir(out, index) / "manifest.json").read_text())["run_id"] == run_id
    merged = rows(out / "results.jsonl")
    assert sorted(r["case_id"] for r in merged) == sorted(f"k{i}" for i in range(N))
    assert {r["run_id"] for r in merged} == {run_id}
    summary = json.loads((out / "run.json").read_text())
    assert (summary["status"], summary["verdicts"], summary["planned"]) == ("complete", N, N)
    assert summary["results_path"] == str(out / "results.jsonl")
    # cost and tokens per slice, as a local run reports them (the last row is every slice)
    by_slice = {row["slice"]: row for row in summary["slice_costs"]}
    assert (
        by_slice
        and sum(row["cases"] for name, row in by_slice.items() if name != "(all)")
        == by_slice["(all)"]["cases"]
    )
    aligned = CliRunner().invoke(
        main, ["align", "--gold", str(gold), "--results", str(out / "results.jsonl")]
    )
    assert aligned.exit_code == 0, aligned.output  # align reads the sharded run as one
    assert {r["case_id"]: r["value"] for r in merged} == {
        r["case_id"]: r["value"] for r in rows(tmp_path / "local" / "results.jsonl")
    }
    assert local.verdicts == N
    with pytest.raises(
        Exception, match="sharded run"
    ):  # the local engine refuses a sharded directory
        run_candidate_sync(
            load_candidate(spec),
            load_dataset(gold),
            "development",
            out,
            RunOptions(progress=False, cache_dir=False),
        )


def test_the_budget_holds_for_all_shards_together(gold: Path, tmp_path: Path) -> None:
    with FakeLLM(default=Reply(value="pass"), latency_s=0.05) as server:
        spec = write_spec(tmp_path, server.base_url)
        full = run_candidate_sync(
            load_candidate(spec),
            load_dataset(gold),
            "development",
            tmp_path / "full",
            RunOptions(progress=False, cache_dir=False),
        )
        budget = full.cost_usd * 0.4  # each shard alone could spend this; together they must not
        before = server.call_count
        summary = run_candidate_ray(
            spec,
            gold,
            "development",
            tmp_path / "out",
            RunOptions(executor="ray", shards=2, concurrency=8, budget_usd=budget, cache_dir=False),
        )
        ray_calls = server.call_count - before
    spent = sum(
        r["cost_usd"]
        for index in range(2)
        for r in rows(shard_dir(tmp_path / "out", index) / "results.jsonl")
    )
    assert summary.status == "incomplete" and summary.stop_reason == "budget_exhausted"
    assert spent <= budget + 1e-12 and summary.cost_usd == pytest.approx(spent)
    assert summary.calls == ray_calls and 1 <= summary.verdicts < N
    assert len(summary.unrun) == N - summary.verdicts


def test_max_cases_and_the_token_bucket_are_global(gold: Path, tmp_path: Path) -> None:
    with FakeLLM(default=Reply(value="pass")) as server:
        spec = write_spec(tmp_path, server.base_url)
        capped = run_candidate_ray(
            spec,
            gold,
            "development",
            tmp_path / "capped",
            RunOptions(executor="ray", shards=2, concurrency=4, max_cases=3, cache_dir=False),
        )
        assert (capped.stop_reason, capped.calls, server.call_count) == ("max_cases", 3, 3)
        started = {
            (r["case_id"], r["repeat"])
            for index in range(2)
            for r in rows(shard_dir(tmp_path / "capped", index) / "results.jsonl")
        }
        assert len(started) == 3 and capped.retries == 0
        rate = 6.0
        paced = run_candidate_ray(
            spec,
            gold,
            "development",
            tmp_path / "paced",
            RunOptions(
                executor="ray", shards=2, concurrency=8, calls_per_second=rate, cache_dir=False
            ),
        )
    assert paced.status == "complete" and paced.calls == N
    from datetime import datetime

    starts = sorted(
        datetime.fromisoformat(r["started_at"]) for r in rows(tmp_path / "paced" / "results.jsonl")
    )
    for k, start in enumerate(starts):
        # a bucket of one token refilled at `rate`: the k-th call starts no earlier than k / rate
        # after the first
        assert (start - starts[0]).total_seconds() >= k / rate - 0.05, (k, starts)


def _wait_for(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.02)


def _settled(path: Path) -> set[str]:
    return {r["case_id"] for r in rows(path) if r.get("error") is None}


def test_a_killed_worker_loses_and_duplicates_nothing_on_resume(gold: Path, tmp_path: Path) -> None:
    """Under a budget: the dead shard's reservation is released, so the other shard finishes.

    ``--ray-cpus-per-shard 1``: each shard in a worker process of its own (a host runs the
    shards that share one CPU), so killing shard 0's process kills only shard 0.
    The output cap (max_tokens 1000) makes one call's reservation larger than all the room the
    budget leaves once a call is in flight: if the call in flight on the killed shard kept its
    reservation, the other shard could never start another call.
    """
    from workbench.judges import JudgeInput
    from workbench.runs._limits import Estimator

    out = tmp_path / "out"
    victim = shard_dir(out, 0)
    victim_cases = [f"Answer number {i}:" for i in range(N) if shard_of(f"k{i}", 2) == 0]
    seen: list[str] = []

    def respond(request) -> Reply:
        # the second request of the victim shard: kill its worker while that call is in flight
        if (victim / "worker.json").exists() and any(m in request.prompt for m in victim_cases):
            seen.append(request.prompt)
            if len(seen) == 2:
                os.kill(json.loads((victim / "worker.json").read_text())["pid"], signal.SIGKILL)
        return Reply(value="pass")

    with FakeLLM(responder=respond, latency_s=0.3) as server:
        spec = write_spec(tmp_path, server.base_url, params={"max_tokens": 1000})
        dataset = load_dataset(gold)
        full = run_candidate_sync(
            load_candidate(spec),
            dataset,
            "development",
            tmp_path / "full",
            RunOptions(progress=False, cache_dir=False, concurrency=N),
        )
        observed = max(r["tokens_out"] for r in rows(tmp_path / "full" / "results.jsonl"))
        estimates = [
            Estimator(load_candidate(spec), observed).estimate(JudgeInput.from_case(c))
            for c in dataset.partition("development")
        ]
        expected, reservation = (
            max(e.expected for e in estimates),
            max(e.reservation for e in estimates),
        )
        budget = (
            max(full.cost_usd + expected, reservation) * 1.01
        )  # covers the run, one call at a time
        assert (
            reservation + expected > budget
        )  # a reservation never released would block every later call
        seen.clear()
        options = RunOptions(
            executor="ray",
            shards=2,
            concurrency=2,
            budget_usd=budget,
            cache_dir=False,
            ray_cpus_per_shard=1,
        )
        answer: dict[str, object] = {}
        driver = threading.Thread(
            target=lambda: answer.update(
                summary=run_candidate_ray(
                    spec,
                    gold,
                    "development",
                    out,
                    options,
                )
            ),
            daemon=True,
        )
        driver.start()
        driver.join(timeout=120)
        assert not driver.is_alive(), (
            "the surviving shard waited forever for the dead shard's reservation"
        )
        first = answer["summary"]
        pids = {json.loads((shard_dir(out, i) / "worker.json").read_text())["pid"] for i in (0, 1)}
        assert len(pids) == 2  # a process per shard: the survivor ran in another process
        assert first.status == "incomplete" and any(
            "shard 000 did not finish" in w for w in first.warnings
        ), (first.stop_reason, first.stop_detail, first.warnings, first.unrun, len(seen))
        survivor = {f"k{i}" for i in range(N) if shard_of(f"k{i}", 2) == 1}
        assert survivor <= _settled(out / "results.jsonl"), (
            first.stop_reason,
            first.stop_detail,
            first.warnings,
            first.unrun,
            len(seen),
        )  # the other shard went on to the end
        assert (
            first.unrun
            and {u.split("#")[0] for u in first.unrun} <= {f"k{i}" for i in range(N)} - survivor
        )
        before = dict(calls_per_case(server))
        settled_before = _settled(out / "results.jsonl")
        resumed = run_candidate_ray(
            spec,
            gold,
            "development",
            out,
            options,
        )
        after = calls_per_case(server)
    assert resumed.status == "complete" and resumed.verdicts == N
    merged = rows(out / "results.jsonl")
    assert sorted(r["case_id"] for r in merged if r.get("error") is None) == sorted(
        f"k{i}" for i in range(N)
    )  # each case exactly once
    assert len({(r["case_id"], r["repeat"], r["attempt"]) for r in merged}) == len(merged)
    assert all(after[c] == before[c] for c in settled_before)  # no settled case was called again
    assert resumed.resumed == len(settled_before)


def test_shards_share_a_host_process_and_a_killed_host_loses_and_repeats_nothing(
    tmp_path: Path, make_dataset
) -> None:
    """4 shards at the default 0.25 CPU each: one host process runs all 4 (the judge's libraries
    imported once), each shard's engine in a thread of its own. Killing that process mid-run
    kills every shard: the run is incomplete, each shard named; the resume runs only what was
    not settled, and every case is in the merge exactly once."""
    cases = [make_case(f"m{i}", "pass", response=f"Answer number {i}: ok") for i in range(24)]
    gold = make_dataset(cases)
    out = tmp_path / "out"
    options = RunOptions(executor="ray", shards=4, concurrency=4, cache_dir=False)
    killed: list[int] = []

    def respond(request) -> Reply:
        settled = sum(len(_settled(shard_dir(out, i) / "results.jsonl")) for i in range(4))
        if settled >= 6 and not killed:
            killed.append(json.loads((shard_dir(out, 0) / "worker.json").read_text())["pid"])
            os.kill(killed[0], signal.SIGKILL)  # the host of every shard, mid-run
        return Reply(value="pass")

    with FakeLLM(responder=respond, latency_s=0.2) as server:
        spec = write_spec(tmp_path, server.base_url)
        first = run_candidate_ray(spec, gold, "development", out, options)
        pids = {
            json.loads((shard_dir(out, i) / "worker.json").read_text())["pid"] for i in range(4)
        }
        before = [r for i in range(4) for r in rows(shard_dir(out, i) / "results.jsonl")]
        calls_before = server.call_count
        resumed = run_candidate_ray(spec, gold, "development", out, options)
        calls_after = server.call_count
    assert pids == set(killed)  # one process ran the 4 shards
    assert first.status == "incomplete"
    dead = {w[len("shard ") : len("shard 000")] for w in first.warnings if "did not finish" in w}
    assert dead == {"000", "001", "002", "003"}, first.warnings
    settled_before = {r["case_id"] for r in before if r.get("error") is None}
    assert 6 <= len(settled_before) < 24
    assert resumed.status == "complete" and resumed.verdicts == 24
    merged = rows(out / "results.jsonl")
    assert sorted(r["case_id"] for r in merged if r.get("error") is None) == sorted(
        c["case_id"] for c in cases
    )  # each case exactly once
    assert len({(r["case_id"], r["repeat"], r["attempt"]) for r in merged}) == len(merged)
    assert all(r in merged for r in before)  # nothing recorded before the kill is lost
    new_rows = [r for r in merged if r not in before]
    assert not {r["case_id"] for r in new_rows} & settled_before  # no settled case called again
    assert calls_after - calls_before == len(new_rows)


def _kill_the_driver_mid_run(command: list[str], env: dict[str, str], out: Path) -> None:
    """Start the CLI as its own Ray driver, kill it once a shard has recorded a result, and wait
    until Ray has ended the dead driver's tasks (their worker processes are gone)."""
    log = out.parent / "driver.log"
    with log.open("wb") as stderr:
        driver = subprocess.Popen(
            command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr
        )

    def recorded() -> bool:
        # a driver that ended before any shard recorded a result fails the test now, with its
        # stderr, instead of after the timeout
        if any(len(rows(shard_dir(out, i) / "results.jsonl")) >= 1 for i in range(2)):
            return True
        if driver.poll() is not None:
            raise AssertionError(f"the driver exited {driver.returncode}: {log.read_text()}")
        return False

    try:
        # generous: on a loaded CI machine a new driver's Ray workers take minutes to start
        _wait_for(recorded, timeout=300)
    finally:
        driver.kill()
        driver.wait()
    workers = [
        json.loads((shard_dir(out, i) / "worker.json").read_text())["pid"]
        for i in range(2)
        if (shard_dir(out, i) / "worker.json").exists()
    ]

    def gone(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    _wait_for(lambda: all(gone(pid) for pid in workers), timeout=120)


def test_a_killed_driver_is_resumed_on_the_same_cluster(
    gold: Path, tmp_path: Path, local_ray: str
) -> None:
    """The CLI as a separate driver on this cluster (RAY_ADDRESS), killed mid-run, then resumed."""
    out = tmp_path / "out"
    with FakeLLM(default=Reply(value="pass"), latency_s=0.4) as server:
        spec = write_spec(tmp_path, server.base_url)
        env = {**os.environ, "RAY_ADDRESS": local_ray, KEY_ENV: SECRET}
        _kill_the_driver_mid_run(
            [
                sys.executable,
                "-m",
                "workbench",
                *_run_args(spec, gold, out, "--executor", "ray", "--shards", "2"),
                "--concurrency",
                "2",
            ],
            env,
            out,
        )
        settled_before = set().union(
            *(_settled(shard_dir(out, i) / "results.jsonl") for i in range(2))
        )
        before = dict(calls_per_case(server))
        resumed = run_candidate_ray(
            spec,
            gold,
            "development",
            out,
            RunOptions(executor="ray", shards=2, concurrency=2, cache_dir=False),
        )
        after = calls_per_case(server)
    assert resumed.status == "complete" and resumed.verdicts == N
    merged = rows(out / "results.jsonl")
    assert sorted(r["case_id"] for r in merged if r.get("error") is None) == sorted(
        f"k{i}" for i in range(N)
    )
    assert settled_before and all(after[c] == before[c] for c in settled_before)


# ------------------------------------------------------------------ sampling plans on Ray


def _without_run(summary: dict) -> dict:
    """A summary without what names the run itself (its id and results file)."""
    return {k: v for k, v in summary.items() if k not in ("run_id", "results_path")}


def test_a_sampled_run_on_ray_is_the_local_run_of_the_same_manifest(
    tmp_path: Path, make_dataset
) -> None:
    """Before: `--executor ray` refused `--policy` (exit 2, "local executor only")."""
    from test_sampling import PLAN, gold_cases, write_policy

    gold = make_dataset(gold_cases(general=10, billing=4))
    policy = write_policy(tmp_path / "policies", PLAN)
    ray_out, local_out = tmp_path / "ray", tmp_path / "local"
    with FakeLLM(default=Reply(value="pass")) as server:
        spec = write_spec(tmp_path, server.base_url)
        sharded = CliRunner().invoke(
            main,
            _run_args(
                spec, gold, ray_out, "--policy", str(policy), "--executor", "ray", "--shards", "2"
            ),
        )
        assert sharded.exit_code == 0, sharded.output
        ray_calls = server.call_count
        ray_summary = json.loads((ray_out / "run.json").read_text())
        local = CliRunner().invoke(main, _run_args(spec, gold, local_out, "--policy", str(policy)))
        assert local.exit_code == 0, local.output
        assert server.call_count == 2 * ray_calls
        again = CliRunner().invoke(
            main,
            _run_args(
                spec, gold, ray_out, "--policy", str(policy), "--executor", "ray", "--shards", "2"
            ),
        )
        assert again.exit_code == 0 and server.call_count == 2 * ray_calls  # nothing repeated
    ray_manifest = json.loads((ray_out / "manifest.json").read_text())
    local_manifest = json.loads((local_out / "manifest.json").read_text())
    assert ray_manifest["sampling"] == local_manifest["sampling"]
    assert ray_manifest["sampling"]["sampled_out"]  # the plan did leave cases out
    assert ray_manifest["cases"] == local_manifest["cases"]  # same cases, same (lane) order
    sampled = {c["case_id"] for c in ray_manifest["cases"]}
    assert ray_calls == len(sampled) < 14
    for index in range(2):  # sharded by case-id hash, each shard under the run's plan
        shard_manifest = json.loads((shard_dir(ray_out, index) / "manifest.json").read_text())
        assert shard_manifest["sampling"] == ray_manifest["sampling"]
        assert {c["case_id"] for c in shard_manifest["cases"]} == {
            c for c in sampled if shard_of(c, 2) == index
        }

    def verdicts(out: Path) -> set[tuple]:
        return {
            (r["case_id"], r["repeat"], r["attempt"], r["value"], r["cost_usd"], r["tokens_out"])
            for r in rows(out / "results.jsonl")
        }

    assert verdicts(ray_out) == verdicts(local_out) and {v[0] for v in verdicts(ray_out)} == sampled
    local_summary = json.loads((local_out / "run.json").read_text())
    assert _without_run(ray_summary) == _without_run(local_summary)
    assert ray_summary["sampled_out"] and ray_summary["sampling_plan_sha256"]
    assert {row["slice"] for row in ray_summary["slice_costs"]} == {"billing", "general", "(all)"}
    assert "sampled out (" in sharded.output and "by slice" in sharded.output
    resumed = json.loads((ray_out / "run.json").read_text())
    assert resumed["resumed"] == len(sampled) and resumed["calls"] == 0


def _ids_in_shard(prefix: str, shard: int, count: int) -> list[str]:
    found: list[str] = []
    i = 0
    while len(found) < count:
        if shard_of(f"{prefix}{i}", 2) == shard:
            found.append(f"{prefix}{i}")
        i += 1
    return found


def test_reserved_slices_run_first_and_the_budget_is_global_over_shards(
    tmp_path: Path, make_dataset
) -> None:
    """Every billing (critical) case is in shard 0, every general case in shard 1: the general
    shard may start nothing before every billing unit has started, and may never spend billing's
    hold, although its own shard has no reserved slice."""
    from test_sampling import PLAN

    from workbench.sampling import SamplingPlan

    billing, general = _ids_in_shard("b", 0, 4), _ids_in_shard("g", 1, 10)
    cases = [
        make_case(c, "pass", slice="general", response="refund in five days " * (3 + i))
        for i, c in enumerate(general)
    ] + [
        make_case(c, "pass", slice="billing", response=f"BILLING-CASE {c} " + "charge " * (1 + i))
        for i, c in enumerate(billing)
    ]
    gold = make_dataset(cases)
    plan = SamplingPlan.model_validate(
        {**PLAN, "slices": {"general": {"fraction": 1.0}, "billing": {"reserve_share": 0.5}}}
    )
    with FakeLLM(default=Reply(value="pass"), latency_s=0.1) as server:
        spec = write_spec(tmp_path, server.base_url)
        total = run_candidate_sync(
            load_candidate(spec),
            load_dataset(gold),
            "development",
            tmp_path / "measure",
            RunOptions(progress=False, cache_dir=False),
        ).cost_usd
        budget = total * 0.5
        summary = run_candidate_ray(
            spec,
            gold,
            "development",
            tmp_path / "out",
            RunOptions(executor="ray", shards=2, concurrency=4, budget_usd=budget, cache_dir=False),
            sampling=plan,
            sampling_source="test plan",
        )
    results = rows(tmp_path / "out" / "results.jsonl")
    shard_rows = [
        r for i in range(2) for r in rows(shard_dir(tmp_path / "out", i) / "results.jsonl")
    ]
    spent = sum(r["cost_usd"] for r in shard_rows)
    assert summary.stop_reason == "budget_exhausted" and spent <= budget + 1e-12
    assert summary.cost_usd == pytest.approx(spent)
    assert not [u for u in summary.unrun if u.startswith("b")], summary.unrun
    assert {r["case_id"] for r in results if r["value"] is not None} >= set(billing)
    assert [u for u in summary.unrun if u.startswith("g")]  # the budget ran out on general
    first_general = min(r["started_at"] for r in results if r["case_id"].startswith("g"))
    last_billing_start = max(r["started_at"] for r in results if r["case_id"].startswith("b"))
    # every billing call was admitted before any general one; recorded start times are taken
    # in the workers after the actor's answer, within a few milliseconds of each other
    assert (
        last_billing_start < first_general
        or (
            datetime.fromisoformat(last_billing_start) - datetime.fromisoformat(first_general)
        ).total_seconds()
        < 0.05
    )
    assert summary.sampling_plan_sha256 == plan.sha256()
    assert summary.sampling_plan_source == "test plan"


def test_a_killed_driver_of_a_sampled_run_is_resumed_without_loss_or_repeat(
    tmp_path: Path, local_ray: str, make_dataset
) -> None:
    from test_sampling import PLAN, gold_cases, write_policy

    gold = make_dataset(gold_cases(general=10, billing=4))
    policy = write_policy(tmp_path / "policies", PLAN)
    out = tmp_path / "out"
    with FakeLLM(default=Reply(value="pass"), latency_s=0.4) as server:
        spec = write_spec(tmp_path, server.base_url)
        env = {**os.environ, "RAY_ADDRESS": local_ray, KEY_ENV: SECRET}
        args = _run_args(
            spec, gold, out, "--policy", str(policy), "--executor", "ray", "--shards", "2"
        )
        _kill_the_driver_mid_run(
            [sys.executable, "-m", "workbench", *args, "--concurrency", "2"], env, out
        )
        before_rows = [r for i in range(2) for r in rows(shard_dir(out, i) / "results.jsonl")]
        settled_before = {r["case_id"] for r in before_rows if r.get("error") is None}
        calls_before = server.call_count
        resumed = CliRunner().invoke(main, [*args, "--concurrency", "2"])
        assert resumed.exit_code == 0, resumed.output
        calls_after = server.call_count
    manifest = json.loads((out / "manifest.json").read_text())
    sampled = {c["case_id"] for c in manifest["cases"]}
    merged = rows(out / "results.jsonl")
    assert sorted(r["case_id"] for r in merged if r.get("error") is None) == sorted(sampled)
    assert len({(r["case_id"], r["repeat"], r["attempt"]) for r in merged}) == len(merged)
    assert settled_before and len(settled_before) < len(sampled)
    assert all(r in merged for r in before_rows)  # nothing recorded before the kill is lost
    # the resume recorded every call it made (no cache), and only for cases without a verdict
    assert calls_after - calls_before == len(merged) - len(before_rows)
    new_rows = [r for r in merged if r not in before_rows]
    assert not {r["case_id"] for r in new_rows} & settled_before  # no settled case called again
    summary = json.loads((out / "run.json").read_text())
    assert summary["status"] == "complete" and summary["resumed"] >= len(settled_before)
    assert summary["sampled_out"] == manifest["sampling"]["sampled_out"]


def test_a_dead_shards_unstarted_reserved_units_do_not_block_other_shards_lower_lanes() -> None:
    """The lanes of the limits actor, on an event loop without Ray: shard 0 holds the reserved
    (critical) units, shard 1 lower-lane ones. Shard 1 waits while shard 0 has reserved units
    that have not started; when shard 0's task ends without starting them (its worker died),
    releasing it lets shard 1 go on instead of waiting forever."""
    import asyncio

    from workbench.runs._limits import CallEstimate
    from workbench.runs._ray import GlobalLimits, ShardLanes

    async def scenario() -> list[str]:
        lanes = ShardLanes(
            priority={"crit": 0, "low": 1},
            holds={"crit": 0.5},
            units={0: {"crit": 2}, 1: {"low": 2}},
            spent={},
        )
        actor = GlobalLimits(1.0, None, 0.0, 5, None, None, None, None, lanes)
        order: list[str] = []

        async def call(shard: int, lane: str, name: str) -> None:
            ok, _ = await actor.admit(shard, CallEstimate(0.1, 0.1), True, lane)
            assert ok
            order.append(name)
            await actor.settle(shard, 0.1, 0.1, True, None, None, None, lane)
            await actor.unit_done(shard, lane, True)

        waiting = asyncio.ensure_future(call(1, "low", "low-1"))
        await asyncio.sleep(0.05)
        assert not waiting.done()  # a reserved unit of shard 0 has not started
        await call(0, "crit", "crit-1")
        await asyncio.sleep(0.05)
        assert not waiting.done()  # one reserved unit of shard 0 is still unstarted
        await actor.release(0)  # shard 0's worker died before starting its second unit
        await asyncio.wait_for(waiting, timeout=2)
        # the hold of "crit" is released with its units: the lower lane may spend it now
        assert actor.limits.held_for_others("low") == 0.0
        await call(1, "low", "low-2")
        return order

    assert asyncio.run(scenario()) == ["crit-1", "low-1", "low-2"]
