"""The Ray executor's options that need no Ray: the concurrency split, the CPU request and the
local instance's token authentication (no file in HOME)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from workbench.cli import main
from workbench.errors import WorkbenchError
from workbench.runs import RunOptions, _ray
from workbench.runs._limits import CallEstimate
from workbench.runs._ray import (
    DEFAULT_CPUS_PER_SHARD,
    GlobalLimits,
    _children,
    _ShardTask,
    cpus_per_shard,
    host_layout,
    local_auth,
    split_concurrency,
    start_local,
)


@pytest.mark.parametrize(
    ("total", "shards", "shares"),
    [(32, 4, [8, 8, 8, 8]), (32, 3, [11, 11, 10]), (8, 3, [3, 3, 2]), (2, 4, [1, 1, 1, 1])],
)
def test_shards_share_the_concurrency(total: int, shards: int, shares: list[int]) -> None:
    """The shares sum to --concurrency (before: ceil(32 / 3) = 11 each, 33 in all); a shard
    always gets one."""
    assert split_concurrency(total, shards) == shares


def test_a_shards_cpu_request_is_fractional_by_default_and_configurable() -> None:
    assert DEFAULT_CPUS_PER_SHARD == 0.25
    assert cpus_per_shard(RunOptions(executor="ray", shards=4)) == 0.25
    assert cpus_per_shard(RunOptions(executor="ray", shards=4, ray_cpus_per_shard=1)) == 1
    for good in (0.25, 0.5, 0.0001, 1, 2.0):
        RunOptions(executor="ray", shards=2, ray_cpus_per_shard=good).check()
    for bad in (0, -1, 1.5, 0.00001, float("nan"), float("inf")):
        with pytest.raises(WorkbenchError) as caught:
            RunOptions(executor="ray", shards=2, ray_cpus_per_shard=bad).check()
        assert [p.code for p in caught.value.problems] == ["invalid_cpus_per_shard"]
        assert caught.value.problems[0].location == "--ray-cpus-per-shard"


def test_the_cli_option_needs_the_ray_executor(tmp_path) -> None:
    args = ["run", "--candidate", "c.yaml", "--gold", "g", "--partition", "development"]
    args += ["--out", str(tmp_path / "o"), "--ray-cpus-per-shard", "0.5"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert "--ray-cpus-per-shard apply only with --executor ray" in result.output
    refused = CliRunner().invoke(main, [*args[:-2], "--ray-cpus-per-shard", "0"])
    assert refused.exit_code == 2 and "not in the range x>0" in refused.output
    assert not (tmp_path / "o").exists()


def test_a_local_instance_authenticates_with_a_token_held_in_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ray writes ~/.ray/auth_token only when it finds no token: inside ``local_auth`` a token
    is set (Ray then turns token mode on itself), and the environment is restored after."""
    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(name, raising=False)
    with local_auth():
        token = os.environ["RAY_AUTH_TOKEN"]
        os.environ["RAY_AUTH_MODE"] = "token"  # as ray.init sets it
    assert len(token) == 64
    assert "RAY_AUTH_MODE" not in os.environ and "RAY_AUTH_TOKEN" not in os.environ
    with local_auth():
        assert os.environ["RAY_AUTH_TOKEN"] == token  # one token per process (Ray caches it)
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # the user's own setting is kept
    with local_auth():
        assert os.environ["RAY_AUTH_MODE"] == "disabled" and "RAY_AUTH_TOKEN" not in os.environ
    assert os.environ["RAY_AUTH_MODE"] == "disabled"


def test_a_failed_local_start_is_retried_and_its_processes_are_ended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ray's head node can time out starting after it started its GCS, dashboard and agents,
    and Ray's ``shutdown`` does not know them: each try's processes are ended before the next
    try, with their own children (the raylet's agents outlive a killed raylet). Here each
    (fake) start starts a child process that starts a child of its own, and times out."""
    pytest.importorskip("ray", reason="the Ray executor is an optional extra")
    started: list[subprocess.Popen[bytes]] = []
    grandchildren: list[int] = []
    sleeper = "import time; time.sleep(60)"
    parent = (
        f"import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', {sleeper!r}]);"
        f" print(p.pid, flush=True); {sleeper}"
    )

    def failing_start(**settings: object) -> None:
        child = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE)
        started.append(child)
        assert child.stdout is not None
        grandchildren.append(int(child.stdout.readline()))
        raise Exception("The current node timed out during startup.")

    monkeypatch.setattr(_ray, "_start_node", failing_start)
    with pytest.raises(Exception, match="timed out during startup"):
        start_local(tries=2)
    assert len(started) == 2
    assert all(p.poll() is not None for p in started)  # ended (and reaped), not left running
    assert not {p.pid for p in started} & _children()

    def alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"

    deadline = time.monotonic() + 10  # an orphan killed is reaped by init
    while any(alive(pid) for pid in grandchildren) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(grandchildren) == 2 and not any(alive(pid) for pid in grandchildren)


def test_a_local_start_connects_to_the_node_it_started(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never to a cluster ``ray start`` left running (``ray.init()`` alone would join it): the
    driver connects to the address of the head node it started, and ends that node after."""
    ray = pytest.importorskip("ray", reason="the Ray executor is an optional extra")
    calls: list[object] = []

    class Node:
        address = "127.0.0.1:1234"

        def kill_all_processes(self, **kwargs: object) -> None:
            calls.append("killed")

    monkeypatch.setattr(_ray, "_start_node", lambda **settings: Node())
    monkeypatch.setattr(ray, "init", lambda address, **kw: calls.append(address))
    monkeypatch.setattr(ray, "shutdown", lambda: calls.append("shutdown"))
    start_local(num_cpus=2)
    _ray.stop_local()
    assert calls == ["127.0.0.1:1234", "shutdown", "killed"]


def test_a_ray_whose_node_differs_starts_a_new_local_instance_through_ray_init(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The head node is started through Ray's private ``Node``; a release whose ``Node`` or
    ``RayParams`` take other arguments gets the public start, still a new local instance."""
    ray = pytest.importorskip("ray", reason="the Ray executor is an optional extra")
    calls: list[object] = []

    def changed_node(**settings: object) -> object:
        raise TypeError("__init__() got an unexpected keyword argument 'no_monitor'")

    monkeypatch.setattr(_ray, "_start_node", changed_node)
    monkeypatch.setattr(ray, "init", lambda **kw: calls.append(kw))
    monkeypatch.setattr(ray, "shutdown", lambda: calls.append("shutdown"))
    start_local(num_cpus=2)
    _ray.stop_local()
    assert calls[0] == {
        "address": "local",
        "include_dashboard": False,
        "object_store_memory": _ray.OBJECT_STORE_BYTES,
        "log_to_driver": False,
        "num_cpus": 2,
    }
    assert calls[1:] == ["shutdown"]


@pytest.mark.parametrize(
    ("shards", "cpus", "layout"),
    [(4, 0.25, (1, 4)), (5, 0.25, (2, 4)), (3, 0.5, (2, 2)), (2, 1, (2, 1)), (2, 2, (2, 1))],
)
def test_a_host_runs_the_shards_that_share_a_cpu(
    shards: int, cpus: float, layout: tuple[int, int]
) -> None:
    """(hosts, shards per host): 4 shards of 0.25 CPU are one worker process, not 4."""
    assert host_layout(shards, cpus) == layout


def test_hosts_take_shards_from_one_queue_and_a_dead_hosts_shards_are_released() -> None:
    """The limits actor's queue, on an event loop without Ray: shards go out in order, one host
    each; a host that died ends the shards it was running (its calls in flight released, so the
    other shards' budget is whole again) and no others; a finished shard stays finished."""

    async def scenario() -> None:
        tasks = [_ShardTask("c", "g", "development", RunOptions(), index=i) for i in range(3)]
        actor = GlobalLimits(1.0, None, 0.0, 5, None, None, tasks=tasks)
        assert await actor.outstanding() == 3
        first, second = await actor.take(0), await actor.take(1)
        assert (first.index, second.index) == (0, 1)
        ok, _ = await actor.admit(0, CallEstimate(0.4, 0.4), True)  # shard 0's call in flight
        assert ok and actor.limits.reserved == pytest.approx(0.4)
        await actor.finish(1, {"summary": {}})
        third = await actor.take(1)  # host 1 ended its shard first: it takes the next
        assert third.index == 2 and await actor.take(1) is None
        await actor.lost(0, "RayActorError: the actor died")
        assert actor.limits.reserved == 0.0 and actor.limits.in_flight == 0
        assert await actor.outstanding() == 1  # shard 2, still running on host 1
        await actor.lost(1, "RayActorError: the actor died")
        await actor.abandon("no host")  # none queued: nothing to end
        ended = await actor.ended()
        assert ended == {
            0: {"error": "RayActorError: the actor died"},
            1: {"summary": {}},
            2: {"error": "RayActorError: the actor died"},
        }
        assert await actor.outstanding() == 0
        rest = GlobalLimits(None, None, 0.0, 5, None, None, tasks=tasks)
        await rest.abandon("no shard host was left to run it")  # every host died first
        assert await rest.take(0) is None and await rest.outstanding() == 0
        assert set(await rest.ended()) == {0, 1, 2}

    asyncio.run(scenario())


def _invalid_inputs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A candidate spec with one label, a gold that does not exist, and a run directory
    holding a run of the local executor."""
    spec = tmp_path / "bad@1.yaml"
    spec.write_text("name: bad\nversion: '1'\nkind: ragas-llm\nlabels: [pass]\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.jsonl").write_text("")
    return spec, tmp_path / "no-gold", out


def test_inputs_refusable_without_ray_are_refused_before_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every problem at once, exit 2, and Ray never started. Before: Ray's start began first,
    and the refusal came only after it (seconds for a local start)."""

    def never(*_: object, **__: object) -> None:
        raise AssertionError("Ray was started for inputs that are refused without it")

    monkeypatch.setattr(_ray, "ray_available", lambda: True)
    monkeypatch.setattr(_ray, "_Started", never)
    spec, gold, out = _invalid_inputs(tmp_path)
    options = RunOptions(executor="ray", shards=2, cache_dir=False)
    with pytest.raises(WorkbenchError) as caught:
        _ray.run_candidate_ray(spec, gold, "development", out, options)
    codes = {p.code for p in caught.value.problems}
    assert codes == {"candidate_invalid", "gold_missing", "executor_mismatch"}
    assert any(p.location.startswith(str(spec)) for p in caught.value.problems)
    args = ["run", "--candidate", str(spec), "--gold", str(gold), "--partition", "development"]
    result = CliRunner().invoke(
        main, [*args, "--out", str(out), "--executor", "ray", "--shards", "2"]
    )
    assert result.exit_code == 2 and "gold_missing" in result.output
    assert (
        "executor_mismatch" in result.output
        and "candidate_invalid" in result.output
        and "Traceback" not in result.output
    )


def test_a_refusal_while_ray_starts_returns_at_once_and_the_start_is_then_stopped(
    tmp_path: Path, make_dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An invalid gold (found while Ray starts beside the driver) is refused without waiting
    for the start; the start, once up, stops its session; the next start waits for it."""
    from contextlib import contextmanager

    from conftest import make_case

    release, events = threading.Event(), []

    @contextmanager
    def slow_session():
        events.append("starting")
        release.wait()  # Ray's start, held until the refusal has been raised
        events.append("up")
        yield
        events.append("stopped")

    monkeypatch.setattr(_ray, "ray_available", lambda: True)
    monkeypatch.setattr(_ray, "ray_session", slow_session)
    monkeypatch.setattr(_ray._Started, "_start", lambda self, task: None)
    gold = make_dataset([make_case("a", "pass")])
    (gold / "gold.jsonl").write_text('{"case_id": "a"}\n')  # exists, invalid
    spec = tmp_path / "keyword@1.yaml"
    spec.write_text(
        "name: keyword\nversion: '1'\nkind: ragas-function\nlabels: [pass, fail]\n"
        "function: judge_fixtures:keyword_judge\n"
    )
    options = RunOptions(executor="ray", shards=2, cache_dir=False)
    valve = threading.Timer(20, release.set)  # before: the refusal waited for the start
    valve.start()
    with pytest.raises(WorkbenchError):
        _ray.run_candidate_ray(spec, gold, "development", tmp_path / "out", options)
    valve.cancel()
    assert events == ["starting"] and not release.is_set()  # refused before the start ended
    abandoned = _ray._Started.abandoned
    assert abandoned is not None and abandoned.is_alive()
    release.set()
    abandoned.join(timeout=60)
    assert events == ["starting", "up", "stopped"]
