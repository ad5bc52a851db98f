"""The Ray executor's options that need no Ray: the concurrency split, the CPU request and the
local instance's token authentication (no file in HOME)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from workbench.cli import main
from workbench.errors import WorkbenchError
from workbench.runs import RunOptions
from workbench.runs._ray import (
    DEFAULT_CPUS_PER_SHARD,
    _children,
    cpus_per_shard,
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
    """Ray's ``init`` can time out after starting its GCS, dashboard and monitors, and its
    ``shutdown`` does not know them: each try's processes are ended before the next try.
    Here each (fake) ``init`` starts one child process and times out."""
    ray = pytest.importorskip("ray", reason="the Ray executor is an optional extra")
    started: list[subprocess.Popen[bytes]] = []

    def failing_init(**settings: object) -> None:
        assert settings["address"] == "local"  # never a cluster `ray start` left running
        started.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]))
        raise Exception("The current node timed out during startup.")

    monkeypatch.setattr(ray, "init", failing_init)
    with pytest.raises(Exception, match="timed out during startup"):
        start_local(tries=2)
    assert len(started) == 2
    assert all(p.poll() is not None for p in started)  # ended (and reaped), not left running
    assert not {p.pid for p in started} & _children()
