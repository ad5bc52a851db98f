"""The Ray executor's use of the machine: shards share ``--concurrency`` and all run at once on
a small local instance (fractional CPU requests), and a local run leaves nothing in ``HOME``.

Needs the optional extra (``pip install -e '.[ray]'``); every server binds port 0.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import make_case

ray = pytest.importorskip(
    "ray",
    reason="the Ray executor is an optional extra: pip install -e '.[ray]' (.ci/run installs it)",
)

from test_llm_runs import patient_spec as write_spec  # noqa: E402
from test_ray_executor import local_ray  # noqa: E402, F401  (2 CPUs, autouse)

from workbench.runs import RunOptions  # noqa: E402
from workbench.runs._ray import run_candidate_ray  # noqa: E402
from workbench.runs._shards import shard_of  # noqa: E402
from workbench.testing import ChatRequest, FakeLLM, Reply  # noqa: E402

pytestmark = pytest.mark.ray
ROOT = Path(__file__).resolve().parents[1]


def _ids(shards: int, per_shard: int) -> list[str]:
    """Case ids giving every shard ``per_shard`` cases."""
    found: dict[int, list[str]] = {k: [] for k in range(shards)}
    i = 0
    while any(len(v) < per_shard for v in found.values()):
        k = shard_of(f"c{i}", shards)
        if len(found[k]) < per_shard:
            found[k].append(f"c{i}")
        i += 1
    return [c for ids in found.values() for c in ids]


class Rendezvous:
    """A responder that holds each request until ``target`` requests were in flight at once
    (or ``wait_s`` passed), and records the most ever in flight."""

    def __init__(self, target: int, wait_s: float) -> None:
        self.target, self.wait_s = target, wait_s
        self.cond = threading.Condition()
        self.in_flight = self.peak = 0
        self.reached = False

    def __call__(self, request: ChatRequest) -> Reply:
        with self.cond:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            if self.in_flight >= self.target:
                self.reached = True
                self.cond.notify_all()
            self.cond.wait_for(lambda: self.reached, timeout=self.wait_s)
            self.in_flight -= 1
        return Reply(value="pass")


def test_shards_share_the_concurrency_and_run_at_once(tmp_path: Path, make_dataset) -> None:
    """3 shards, --concurrency 8, on 2 CPUs: exactly 8 calls in flight at the peak.

    Before: each shard task asked for 1 CPU, so 2 of the 3 shards ran and the third waited (at
    most 6 in flight, each request then held the full wait); and each shard took
    ceil(8 / 3) = 3, so 9 could have been in flight had they all run."""
    gold = make_dataset([make_case(c, "pass") for c in _ids(3, 6)])
    rendezvous = Rendezvous(target=8, wait_s=60.0)
    with FakeLLM(responder=rendezvous) as server:
        spec = write_spec(tmp_path, server.base_url)
        summary = run_candidate_ray(
            spec,
            gold,
            "development",
            tmp_path / "out",
            RunOptions(executor="ray", shards=3, concurrency=8, cache_dir=False, progress=False),
        )
    assert summary.status == "complete" and summary.verdicts == 18
    assert rendezvous.reached and rendezvous.peak == 8


def test_a_cpu_bound_judge_asks_for_whole_cpus(tmp_path: Path, make_dataset) -> None:
    """--ray-cpus-per-shard 2 on a 2-CPU instance: one shard at a time, so two shards' calls
    never overlap (the request is what Ray schedules by)."""
    gold = make_dataset([make_case(c, "pass") for c in _ids(2, 3)])
    rendezvous = Rendezvous(target=2, wait_s=1.0)
    with FakeLLM(responder=rendezvous) as server:
        spec = write_spec(tmp_path, server.base_url)
        options = RunOptions(
            executor="ray", shards=2, concurrency=2, cache_dir=False, ray_cpus_per_shard=2
        )
        summary = run_candidate_ray(spec, gold, "development", tmp_path / "out", options)
    assert summary.status == "complete" and summary.verdicts == 6
    assert rendezvous.peak == 1  # each shard's share is 1; the other shard waits for the CPUs


def test_a_local_ray_run_writes_nothing_in_home(tmp_path: Path, make_dataset) -> None:
    """The CLI as its own driver, starting its own local Ray, HOME an empty directory: the run
    directory is written, HOME stays empty, as after the default executor. Before: Ray wrote
    HOME/.ray/auth_token. (A deterministic judge: Ragas' ``llm_factory`` writes
    ``~/.local/share/ragas/uuid.json`` in any executor, tracking off or not.)"""
    gold = make_dataset([make_case(f"h{i}", "pass", response="refund") for i in range(4)])
    spec = tmp_path / "keyword@1.yaml"
    spec.write_text(
        json.dumps(
            {
                "name": "keyword",
                "version": "1",
                "kind": "ragas-function",
                "labels": ["pass", "fail"],
                "function": "judge_fixtures:keyword_judge",
            }
        )
    )
    env = {
        k: v for k, v in os.environ.items() if k != "RAY_ADDRESS" and not k.startswith("RAY_AUTH")
    }
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests")])
    for executor in (["--executor", "local"], ["--executor", "ray", "--shards", "2"]):
        home, out = tmp_path / f"home-{executor[1]}", tmp_path / f"out-{executor[1]}"
        home.mkdir()
        command = [sys.executable, "-m", "workbench", "run", "--candidate", str(spec)]
        command += ["--gold", str(gold), "--partition", "development", "--out", str(out)]
        command += ["--no-cache", "--no-progress", *executor]
        done = subprocess.run(
            command, env={**env, "HOME": str(home)}, cwd=ROOT, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads((out / "run.json").read_text())["verdicts"] == 4
        assert [str(p.relative_to(home)) for p in home.rglob("*")] == [], executor
