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
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import make_case

ray = pytest.importorskip(
    "ray",
    reason="the Ray executor is an optional extra: pip install -e '.[ray]' (.ci/run installs it)",
)

from test_llm_runs import KEY_ENV, SECRET, write_spec  # noqa: E402

from workbench.cli import main  # noqa: E402
from workbench.gold import load_dataset  # noqa: E402
from workbench.judges import load_candidate  # noqa: E402
from workbench.runs import run_candidate_sync  # noqa: E402
from workbench.runs._ray import run_candidate_ray  # noqa: E402
from workbench.runs._shards import shard_dir, shard_of  # noqa: E402
from workbench.testing import FakeLLM, Reply  # noqa: E402

pytestmark = pytest.mark.ray
ROOT = Path(__file__).resolve().parents[1]
N = 8


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One local Ray instance for the module; its workers inherit the judge's API key variable."""
    before = os.environ.get(KEY_ENV)
    os.environ[KEY_ENV] = SECRET
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()
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


def test_shards_run_the_engine_and_merge_into_one_run(gold: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with FakeLLM(default=Reply(value="pass")) as server:
        spec = write_spec(tmp_path, server.base_url)
        result = CliRunner().invoke(
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
                "--no-cache",
                "--no-progress",
                "--executor",
                "ray",
                "--shards",
                "2",
            ],
        )
        assert result.exit_code == 0, result.output
        assert server.call_count == N
        again = CliRunner().invoke(
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
                "--no-cache",
                "--no-progress",
                "--executor",
                "ray",
                "--shards",
                "2",
            ],
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
            progress=False,
            cache_dir=False,
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
            progress=False,
            cache_dir=False,
        )


def test_the_budget_holds_for_all_shards_together(gold: Path, tmp_path: Path) -> None:
    with FakeLLM(default=Reply(value="pass"), latency_s=0.05) as server:
        spec = write_spec(tmp_path, server.base_url)
        full = run_candidate_sync(
            load_candidate(spec),
            load_dataset(gold),
            "development",
            tmp_path / "full",
            progress=False,
            cache_dir=False,
        )
        budget = full.cost_usd * 0.4  # each shard alone could spend this; together they must not
        before = server.call_count
        summary = run_candidate_ray(
            spec,
            gold,
            "development",
            tmp_path / "out",
            shards=2,
            concurrency=8,
            budget_usd=budget,
            cache_dir=False,
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
            shards=2,
            concurrency=4,
            max_cases=3,
            cache_dir=False,
        )
        assert (capped.stop_reason, capped.calls, server.call_count) == ("max_cases", 3, 3)
        rate = 6.0
        paced = run_candidate_ray(
            spec,
            gold,
            "development",
            tmp_path / "paced",
            shards=2,
            concurrency=8,
            calls_per_second=rate,
            cache_dir=False,
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
            progress=False,
            cache_dir=False,
            concurrency=N,
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
        answer: dict[str, object] = {}
        driver = threading.Thread(
            target=lambda: answer.update(
                summary=run_candidate_ray(
                    spec,
                    gold,
                    "development",
                    out,
                    shards=2,
                    concurrency=2,
                    budget_usd=budget,
                    cache_dir=False,
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
            shards=2,
            concurrency=2,
            budget_usd=budget,
            cache_dir=False,
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


def test_a_killed_driver_is_resumed_on_the_same_cluster(
    gold: Path, tmp_path: Path, local_ray: str
) -> None:
    """The CLI as a separate driver on this cluster (RAY_ADDRESS), killed mid-run, then resumed."""
    out = tmp_path / "out"
    with FakeLLM(default=Reply(value="pass"), latency_s=0.4) as server:
        spec = write_spec(tmp_path, server.base_url)
        env = {**os.environ, "RAY_ADDRESS": local_ray, KEY_ENV: SECRET}
        driver = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "workbench",
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
                "--executor",
                "ray",
                "--shards",
                "2",
                "--concurrency",
                "2",
            ],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait_for(
                lambda: any(len(rows(shard_dir(out, i) / "results.jsonl")) >= 1 for i in range(2)),
                timeout=60,
            )
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

        _wait_for(
            lambda: all(gone(pid) for pid in workers), timeout=30
        )  # Ray ends the tasks of a dead driver
        settled_before = set().union(
            *(_settled(shard_dir(out, i) / "results.jsonl") for i in range(2))
        )
        before = dict(calls_per_case(server))
        resumed = run_candidate_ray(
            spec, gold, "development", out, shards=2, concurrency=2, cache_dir=False
        )
        after = calls_per_case(server)
    assert resumed.status == "complete" and resumed.verdicts == N
    merged = rows(out / "results.jsonl")
    assert sorted(r["case_id"] for r in merged if r.get("error") is None) == sorted(
        f"k{i}" for i in range(N)
    )
    assert settled_before and all(after[c] == before[c] for c in settled_before)
