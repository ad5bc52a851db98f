"""Issue 8 §5-§7: runs that fail say so early, secrets never written, one writer, budgets that hold.

Every test here reproduces a fail-open behaviour of the old engine against a real local HTTP
server (``workbench.testing.FakeLLM``) or a port nothing listens on.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import _forked_cli
import pytest
import yaml
from click.testing import CliRunner
from conftest import make_case
from test_llm_runs import KEY_ENV, SECRET, write_spec

from workbench.cli import main as cli
from workbench.errors import WorkbenchError
from workbench.gold import load_dataset
from workbench.judges import JudgeInput, load_candidate
from workbench.runs import LOCK_FILE, RunOptions, run_candidate_sync
from workbench.testing import ChatRequest, FakeLLM, Reply, Rule

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


@pytest.fixture
def gold(make_dataset) -> Path:
    return make_dataset(
        [
            make_case(
                f"k{i:02d}", "pass", response=f"Answer number {i}: refund in 5 business days."
            )
            for i in range(20)
        ]
    )


def run(spec: Path, gold: Path, out: Path, **kw: Any):
    """Run the candidate at ``spec`` on the development cases of ``gold``; ``kw`` holds
    :class:`RunOptions` fields and run_candidate's own keywords."""
    options = {k: kw.pop(k) for k in list(kw) if k in RunOptions.__dataclass_fields__}
    return run_candidate_sync(
        load_candidate(spec),
        load_dataset(gold),
        "development",
        out,
        RunOptions(progress=False, **options),
        **kw,
    )


def rows(out: Path) -> list[dict]:
    path = out / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def dead_port() -> int:
    """A port nothing listens on: bound to 0, then closed."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def invoke(*args: str) -> object:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


# -- §5 circuit breaker ------------------------------------------------------------------------


def test_no_server_stops_after_n_connection_failures_exit_3(gold: Path, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{dead_port()}/v1"
    spec = write_spec(tmp_path / "s", url, endpoint={"max_retries": 4})
    out = tmp_path / "out"
    result = invoke(
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
        "--concurrency",
        "4",
    )
    assert result.exit_code == 3, result.output
    summary = json.loads((out / "run.json").read_text())
    attempts = rows(out)
    # Old engine: every case x (max_retries + 1) attempts, "COMPLETE", exit 0.
    assert summary["status"] == "incomplete" and summary["stop_reason"] == "circuit_breaker"
    assert 8 <= len(attempts) <= 8 + 4 - 1 and summary["calls"] == len(attempts)
    assert url in summary["stop_detail"] and "8 consecutive" in summary["stop_detail"]
    assert all(
        url in r["error"]["message"] and r["error"]["kind"] == "provider_error" for r in attempts
    )  # messages name the endpoint
    started = {r["case_id"] for r in attempts}
    assert sorted(summary["unrun"]) == sorted(
        f"k{i:02d}#0" for i in range(20) if f"k{i:02d}" not in started
    )
    assert summary[
        "pending_retry"
    ]  # connection errors are retryable: the breaker cut them mid-retry
    assert (
        "circuit breaker" in result.output
        and url in result.output
        and "stopped mid-retry" in result.output
    )
    assert SECRET not in result.output


@pytest.mark.parametrize("breaker", [3, 5])
def test_server_closing_every_connection_trips_after_the_candidates_n(
    gold: Path, tmp_path: Path, breaker: int
) -> None:
    with FakeLLM(default=Reply(fault="disconnect")) as server:
        url = server.base_url
        spec = write_spec(tmp_path / "s", url, endpoint={"circuit_breaker_after": breaker})
        summary = run(spec, gold, tmp_path / "out", concurrency=1, cache_dir=False)
        assert (
            server.call_count == breaker
        )  # concurrency 1: exactly N consecutive failures, then nothing
    assert summary.stop_reason == "circuit_breaker" and summary.status == "incomplete"
    assert f"{breaker} consecutive" in summary.stop_detail and url in summary.stop_detail
    assert len(rows(tmp_path / "out")) == breaker


@pytest.mark.parametrize("failure", ["http_401", "http_403", "not_found"])
def test_auth_and_not_found_failures_trip_the_breaker(
    gold: Path, tmp_path: Path, failure: str
) -> None:
    default = Reply(fault=failure) if failure.startswith("http_") else Reply("pass")
    with FakeLLM(default=default) as server:
        url = (
            server.base_url
            if failure.startswith("http_")
            else server.base_url.replace("/v1", "/nowhere")
        )
        spec = write_spec(tmp_path / "s", url, endpoint={"circuit_breaker_after": 4})
        summary = run(spec, gold, tmp_path / "out", concurrency=1, cache_dir=False)
        assert server.call_count == (
            0 if failure == "not_found" else 4
        )  # the server records chat requests only
    assert len(rows(tmp_path / "out")) == 4
    assert (
        summary.stop_reason == "circuit_breaker"
        and summary.errors == 4
        and len(summary.unrun) == 16
    )
    status = {"http_401": "401", "http_403": "403", "not_found": "404"}[failure]
    assert all(f"HTTP {status} from {url}" in r["error"]["message"] for r in rows(tmp_path / "out"))


def test_breaker_counts_only_consecutive_failures_and_errors_exit_5(
    gold: Path, tmp_path: Path
) -> None:
    # Every other call is a 401: never 3 in a row, so the run completes, with evaluator errors.
    rules = [Rule(Reply(fault="http_401"), contains=f"Answer number {i}:") for i in range(0, 20, 2)]
    with FakeLLM(rules=rules, default=Reply("pass")) as server:
        spec = write_spec(tmp_path / "s", server.base_url, endpoint={"circuit_breaker_after": 3})
        result = invoke(
            "run",
            "--candidate",
            str(spec),
            "--gold",
            str(gold),
            "--partition",
            "development",
            "--out",
            str(tmp_path / "out"),
            "--no-cache",
            "--no-progress",
            "--concurrency",
            "1",
        )
    assert result.exit_code == 5, (
        result.output
    )  # complete, but some cases ended in evaluator errors
    summary = json.loads((tmp_path / "out" / "run.json").read_text())
    assert summary["status"] == "complete" and summary["stop_reason"] is None
    assert summary["errors_by_kind"] == {"provider_error": 10} and summary["verdicts"] == 10
    assert "evaluator errors by kind: provider_error=10" in result.output


def test_complete_run_without_errors_exits_0(gold: Path, tmp_path: Path) -> None:
    with FakeLLM(default=Reply("pass")) as server:
        spec = write_spec(tmp_path / "s", server.base_url)
        result = invoke(
            "run",
            "--candidate",
            str(spec),
            "--gold",
            str(gold),
            "--partition",
            "development",
            "--out",
            str(tmp_path / "out"),
            "--no-cache",
            "--no-progress",
        )
    assert result.exit_code == 0, result.output


def test_breaker_setting_is_validated(tmp_path: Path) -> None:
    spec = write_spec(
        tmp_path / "s", "http://127.0.0.1:9/v1", endpoint={"circuit_breaker_after": 0}
    )
    with pytest.raises(WorkbenchError) as info:
        load_candidate(spec)
    assert any("circuit_breaker_after" in p.message for p in info.value.problems)
    assert (
        load_candidate(
            write_spec(tmp_path / "t", "http://127.0.0.1:9/v1")
        ).spec.endpoint.circuit_breaker_after
        == 8
    )


def test_unparseable_answers_are_retried_and_every_attempt_recorded(
    make_dataset, tmp_path: Path
) -> None:
    gold = make_dataset([make_case("only", "pass")])
    rules = [Rule(Reply(fault="malformed_json"), times=2)]
    with FakeLLM(rules=rules, default=Reply("pass", "fine")) as server:
        summary = run(
            write_spec(tmp_path / "s", server.base_url), gold, tmp_path / "out", cache_dir=False
        )
        assert server.call_count == 3
    attempts = rows(tmp_path / "out")
    assert [(r["attempt"], (r["error"] or {}).get("kind"), r["value"]) for r in attempts] == [
        (1, "unparseable", None),
        (2, "unparseable", None),
        (3, None, "pass"),
    ]
    assert all(r["tokens_in"] for r in attempts)  # every attempt recorded with its usage
    assert summary.verdicts == 1 and summary.retries == 2


def test_max_cases_lets_started_cases_finish_their_retries(gold: Path, tmp_path: Path) -> None:
    rules = [Rule(Reply(fault="http_500"), contains="Answer number 0:", times=1)]
    with FakeLLM(rules=rules, default=Reply("pass"), latency_s=0.05) as server:
        summary = run(
            write_spec(tmp_path / "s", server.base_url),
            gold,
            tmp_path / "out",
            max_cases=2,
            concurrency=2,
            cache_dir=False,
        )
        assert server.call_count == 3
    # Old engine: the second worker's refused start stopped k00's retry: k00 left pending_retry.
    assert (
        summary.stop_reason == "max_cases" and summary.pending_retry == [] and summary.verdicts == 2
    )
    assert len(summary.unrun) == 18


def test_budget_reached_mid_retry_says_which_cases_stopped(make_dataset, tmp_path: Path) -> None:
    gold = make_dataset(
        [make_case("only", "pass", response="Answer number 0: refund in 5 business days.")]
    )
    with FakeLLM(default=Reply(fault="malformed_json")) as server:
        spec = write_spec(tmp_path / "s", server.base_url)
        judge = load_candidate(spec)
        budget = judge.estimate_cost(
            JudgeInput.from_case(load_dataset(gold).partition("development")[0])
        )
        result = invoke(
            "run",
            "--candidate",
            str(spec),
            "--gold",
            str(gold),
            "--partition",
            "development",
            "--out",
            str(tmp_path / "out"),
            "--no-cache",
            "--no-progress",
            "--budget-usd",
            repr(budget),
        )
        assert server.call_count == 1
    assert result.exit_code == 3, result.output
    summary = json.loads((tmp_path / "out" / "run.json").read_text())
    assert summary["stop_reason"] == "budget_exhausted" and summary["pending_retry"] == ["only#0"]
    assert "stopped mid-retry (1" in result.output and "only#0" in result.output
    assert "1 stopped mid-retry" in result.output


# -- §6 secrets and one writer -------------------------------------------------------------------


def test_401_echoing_the_key_never_reaches_any_artifact(
    gold: Path, tmp_path: Path, _isolated_verdict_cache: Path
) -> None:
    rules = [Rule(Reply(fault="http_401_echo"), contains=f"Answer number {i}:") for i in (3, 7)]
    with FakeLLM(
        rules=rules, default=Reply("pass", f"fine; your header was Bearer {SECRET}")
    ) as server:
        spec = write_spec(tmp_path / "specs", server.base_url)
        ran = invoke(
            "run",
            "--candidate",
            str(spec),
            "--gold",
            str(gold),
            "--partition",
            "development",
            "--out",
            str(tmp_path / "out"),
            "--no-progress",
        )
        assert server.call_count == 20
    assert ran.exit_code == 5, ran.output
    messages = [r["error"]["message"] for r in rows(tmp_path / "out") if r["error"]]
    assert len(messages) == 2 and all(
        "Incorrect API key provided: Bearer [REDACTED]" in m for m in messages
    )
    aligned = invoke(
        "align", "--gold", str(gold), "--results", str(tmp_path / "out" / "results.jsonl"), "--json"
    )
    assert "[REDACTED]" in aligned.output
    scanned = 0
    for root in (tmp_path, _isolated_verdict_cache):
        for path in root.rglob("*"):
            if path.is_file():
                scanned += 1
                data = path.read_bytes()
                assert SECRET.encode() not in data and b"Bearer sk-" not in data, path
    assert scanned >= 5  # results, manifest, run.json, invocations, cache
    for text in (ran.output, aligned.output):
        assert SECRET not in text and "Bearer sk-" not in text


SECRET_SPECS = [
    (
        {"params": {"temperature": 0, "extra_headers": {"Authorization": f"Bearer {SECRET}"}}},
        "params.extra_headers.Authorization",
    ),
    ({"params": {"extra_headers": {"api-key": "abc123"}}}, "params.extra_headers.api-key"),
    (
        {"params": {"default_headers": {"X-Api-Key": "whatever-value"}}},
        "params.default_headers.X-Api-Key",
    ),
    ({"params": {"api_key": SECRET}}, "params.api_key"),
    ({"endpoint": {"base_url": "http://alice:s3cret@127.0.0.1:9/v1"}}, "endpoint.base_url"),
    ({"endpoint": {"base_url": "http://127.0.0.1:9/v1?api-key=abc123"}}, "endpoint.base_url"),
    ({"description": f"rotated the key to {SECRET} today"}, "description"),
    (
        {"params": {"extra_body": {"metadata": ["Bearer abc.def-123456"]}}},
        "params.extra_body.metadata[0]",
    ),
]


@pytest.mark.parametrize(("change", "field"), SECRET_SPECS, ids=[f for _, f in SECRET_SPECS])
def test_spec_holding_a_secret_is_refused_naming_the_field(
    tmp_path: Path, change: dict, field: str
) -> None:
    with FakeLLM(default=Reply("pass")) as server:
        endpoint = {"base_url": server.base_url, **change.get("endpoint", {})}
        spec = write_spec(tmp_path / "s", server.base_url, **{**change, "endpoint": endpoint})
        with pytest.raises(WorkbenchError) as info:
            load_candidate(spec)
        result = invoke(
            "run",
            "--candidate",
            str(spec),
            "--gold",
            str(tmp_path),
            "--partition",
            "development",
            "--out",
            str(tmp_path / "out"),
        )
        assert server.call_count == 0  # refused before anything is sent
    problems = [p for p in info.value.problems if p.code == "secret_in_spec"]
    assert problems and problems[0].message.startswith(field) and "api_key_env" in problems[0].fix
    assert (
        result.exit_code == 2
        and "secret_in_spec" in result.output
        and "Traceback" not in result.output
    )
    for text in (str(info.value), result.output, *(p.format() for p in info.value.problems)):
        assert SECRET not in text and "s3cret" not in text and "abc123" not in text
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("where", ["prompt_file", "model"])
def test_the_keys_own_value_anywhere_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    plain = "plainly-not-shaped-like-a-key-42"  # no sk- prefix: only the value itself gives it away
    monkeypatch.setenv(KEY_ENV, plain)
    directory = tmp_path / "s"
    if where == "prompt_file":
        spec = write_spec(directory, "http://127.0.0.1:9/v1", prompt=None, prompt_file="p.md")
        (directory / "p.md").write_text(
            f"Judge {{response}}. Internal note: key {plain}\n", encoding="utf-8"
        )
    else:
        spec = write_spec(directory, "http://127.0.0.1:9/v1", model=f"fake-judge-{plain}")
    with pytest.raises(WorkbenchError) as info:
        load_candidate(spec)
    problem = next(p for p in info.value.problems if p.code == "secret_in_spec")
    assert problem.message.startswith(where) and KEY_ENV in problem.message
    assert plain not in str(info.value) + "".join(p.format() for p in info.value.problems)


def test_ordinary_specs_are_not_mistaken_for_secrets(tmp_path: Path) -> None:
    spec = write_spec(
        tmp_path / "s",
        "http://127.0.0.1:9/v1",
        description="Basic judge; the bearer of bad news is the grader.",
        params={"max_tokens": 100, "extra_headers": {"X-Request-Source": "workbench"}},
        endpoint={"api_key_env": "A_VERY_LONG_COMPANY_PRODUCTION_OPENAI_API_KEY_NAME"},
    )
    os.environ["A_VERY_LONG_COMPANY_PRODUCTION_OPENAI_API_KEY_NAME"] = "x" * 40
    try:
        assert load_candidate(spec).spec.params["extra_headers"] == {
            "X-Request-Source": "workbench"
        }
    finally:
        del os.environ["A_VERY_LONG_COMPANY_PRODUCTION_OPENAI_API_KEY_NAME"]
    from workbench.judges._spec import load_spec

    for path in sorted((ROOT / "data" / "candidates").glob("*.yaml")):
        load_spec(path)  # every shipped candidate passes the secret checks


def test_second_run_on_the_same_out_is_refused_at_once(make_dataset, tmp_path: Path) -> None:
    cases = [
        make_case(f"c{i:02d}", "pass", response=f"Unique response {i:02d}.") for i in range(12)
    ]
    gold = make_dataset(cases)
    out = tmp_path / "out"
    # Each call waits up to 3 s for `released`, so the first run is held (up to 36 s) while the
    # second starts, however loaded the machine; once the second is refused the first is
    # released and finishes at once, instead of sitting out its 36 s.
    released = threading.Event()

    def hold(_request: ChatRequest) -> Reply:
        released.wait(3.0)
        return Reply("pass")

    with FakeLLM(responder=hold) as server:
        spec = write_spec(tmp_path / "specs", server.base_url, endpoint={"timeout_s": 10})
        command = [
            sys.executable,
            "-m",
            "workbench.cli.main",
            "run",
            "--candidate",
            str(spec),
            "--gold",
            str(gold),
            "--partition",
            "development",
            "--out",
            str(out),
            "--concurrency",
            "1",
            "--no-progress",
            "--no-cache",
        ]
        env = {**os.environ, KEY_ENV: SECRET}
        first = _forked_cli.Popen(command, env=env)  # a process of its own (a fork: no start-up)
        deadline = time.monotonic() + 240  # a loaded CI machine starts the CLI slowly
        while time.monotonic() < deadline and not (out / "results.jsonl").exists():
            time.sleep(0.02)
        assert first.poll() is None, "the first run finished before the second could start"
        # The second run is this process (click's CliRunner), the first a separate one: the lock
        # is still taken across processes, without paying a second interpreter start-up.
        t0 = time.monotonic()
        second = CliRunner().invoke(cli, command[3:], env={KEY_ENV: SECRET})
        refused_in = time.monotonic() - t0
        still_running = first.poll() is None
        released.set()
        first_out, first_err = first.communicate(timeout=120)
        calls = server.call_count
    assert still_running  # the refusal came while the first run was writing
    assert second.exception is None or isinstance(second.exception, SystemExit), second.output
    assert second.exit_code == 2, second.stderr
    assert (
        "run_locked" in second.stderr
        and "another workbench run is writing to this run directory" in second.stderr
    )
    assert "Traceback" not in second.stderr and refused_in < 30
    assert first.returncode == 0, first_err
    assert calls == 12  # each case paid once
    assert sorted(r["case_id"] for r in rows(out)) == [c["case_id"] for c in cases]
    assert (out / LOCK_FILE).exists()
    again = CliRunner().invoke(cli, command[3:], env={KEY_ENV: SECRET})
    assert again.exit_code == 0, again.output  # the lock is released at the end


# -- §7 budgets ----------------------------------------------------------------------------------


def demo_llm_spec(directory: Path, base_url: str) -> Path:
    """The shipped demo LLM candidate, pointed at ``base_url``."""
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copytree(
        ROOT / "data" / "candidates" / "prompts", directory / "prompts", dirs_exist_ok=True
    )
    spec = yaml.safe_load(
        (ROOT / "data" / "candidates" / "support-llm-judge@1.yaml").read_text(encoding="utf-8")
    )
    spec["endpoint"] = {**spec["endpoint"], "base_url": base_url}
    path = directory / "support-llm-judge@1.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def test_a_budget_that_covers_the_run_completes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.demo.fake_llm import respond

    monkeypatch.setenv("DEMO_LLM_API_KEY", "demo-placeholder-key")
    demo = load_dataset(ROOT / "data" / "demo")
    with FakeLLM(responder=respond) as server:
        spec = demo_llm_spec(tmp_path / "s", server.base_url)
        full = run_candidate_sync(
            load_candidate(spec),
            demo,
            "development",
            tmp_path / "full",
            RunOptions(progress=False, cache_dir=False),
        )
        assert full.status == "complete" and full.planned >= 100
        # The ratio: a run costing $0.0029 under --budget-usd 0.003 (3.4% headroom).
        budget = full.cost_usd * 0.003 / 0.0029
        budgeted = run_candidate_sync(
            load_candidate(spec),
            demo,
            "development",
            tmp_path / "budget",
            RunOptions(progress=False, cache_dir=False, budget_usd=budget, concurrency=8),
        )
    # Old engine: stopped at 98 of 109 here (36 of 109 in the figures).
    assert (
        budgeted.status == "complete"
        and budgeted.verdicts == full.verdicts
        and budgeted.unrun == []
    )
    assert budgeted.cost_usd == pytest.approx(full.cost_usd) and budgeted.cost_usd <= budget
    assert budgeted.estimate_method in (
        "rule",
        "tiktoken:o200k_base",
    ) and budgeted.max_output_tokens_observed == max(
        r["tokens_out"] for r in rows(tmp_path / "budget")
    )
    assert budgeted.warnings == []


def test_guarantee_holds_with_concurrency_and_growing_outputs(make_dataset, tmp_path: Path) -> None:
    cases = [
        make_case(f"g{i:02d}", "pass", response=f"Answer number {i}: refund in 5 business days.")
        for i in range(40)
    ]
    gold = make_dataset(cases)

    def respond(request):  # longer and longer answers: later calls exceed the observed maximum
        i = int(request.prompt.split("Answer number ", 1)[1].split(":", 1)[0])
        return Reply("pass", "ok " + "x" * (8 * i))

    with FakeLLM(responder=respond, latency_s=0.02) as server:
        spec = write_spec(
            tmp_path / "s", server.base_url, params={"temperature": 0, "max_tokens": 120}
        )
        judge = load_candidate(spec)
        ceiling = max(
            judge.estimate_cost(JudgeInput.from_case(c))
            for c in load_dataset(gold).partition("development")
        )
        full = run(spec, gold, tmp_path / "full", cache_dir=False)
        budget = full.cost_usd / 2
        summary = run(
            spec, gold, tmp_path / "half", cache_dir=False, budget_usd=budget, concurrency=8
        )
    assert summary.stop_reason == "budget_exhausted" and summary.status == "incomplete"
    assert summary.warnings == []  # an honest provider never reports more than a reservation
    output_cap_cost = 120 * 2000.0 / 1e6
    # README: spend exceeds the budget by at most the reservations of calls in flight; with usage
    # within reservations, by at most one call's (reservation - expected cost) <= its output cap.
    assert summary.cost_usd <= budget + output_cap_cost + 1e-12
    assert summary.cost_usd <= budget + 8 * ceiling
    assert summary.verdicts >= 10  # it did not stop early either


@pytest.mark.parametrize("honest_first", [0, 6])
def test_over_reporting_provider_stops_at_once_and_is_warned(
    gold: Path, tmp_path: Path, honest_first: int
) -> None:
    rules = [Rule(Reply("pass"), times=honest_first)] if honest_first else []
    with FakeLLM(
        rules=rules,
        default=Reply("pass", fault="inflated_usage"),
        inflated_usage_tokens=1_000_000,
        latency_s=0.1,
    ) as server:
        spec = write_spec(
            tmp_path / "s",
            server.base_url,
            pricing={"input_per_million_usd": 1.0, "output_per_million_usd": 2.0},
        )
        summary = run(spec, gold, tmp_path / "out", cache_dir=False, budget_usd=0.01, concurrency=4)
        calls = server.call_count
    # Each inflated call reports $3.00 (old engine: every call admitted before the first one
    # settled was paid, with no warning). The first call of a budgeted run is a probe that runs
    # alone; later, only the calls already in flight when spend passed $0.01 are paid.
    inflated = calls - honest_first
    if honest_first == 0:
        assert calls == 1
    assert 1 <= inflated <= 4 and summary.calls == calls
    assert summary.stop_reason == "budget_exhausted" and summary.cost_usd == pytest.approx(
        3.0 * inflated, rel=1e-3
    )
    assert len(summary.warnings) == inflated and all(
        "exceeds the call's reservation" in w for w in summary.warnings
    )
    assert "passed the budget" in summary.stop_detail or "exceeds the budget" in summary.stop_detail
    run_json = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run_json["warnings"] == summary.warnings


def test_prompt_tokens_never_download_and_fall_back_to_the_stated_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import requests

    from workbench.judges import _tokens

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("token counting tried the network")

    monkeypatch.setattr(requests, "get", no_network)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(_tokens, "_ENCODINGS", {})
    text = "Refund in 5 days. Remboursement sous 5 jours: é, 返金"
    tokens, method = _tokens.prompt_tokens(text, "gpt-4o-mini")
    assert method == "rule"
    non_ascii = [ch for ch in text if ord(ch) >= 128]
    assert (
        tokens
        == -(-(len(text) - len(non_ascii)) // 3)
        + sum(len(ch.encode()) for ch in non_ascii)
        + _tokens.STRUCTURED_OUTPUT_OVERHEAD
    )

    class Encoding:
        name = "fake_bpe"

        def encode(self, value: str, disallowed_special: object = ()) -> list[int]:
            return [0] * len(value.split())

    monkeypatch.setattr(_tokens, "_ENCODINGS", {"gpt-4o-mini": Encoding()})
    assert _tokens.prompt_tokens("a b c", "gpt-4o-mini") == (
        3 + _tokens.STRUCTURED_OUTPUT_OVERHEAD,
        "tiktoken:fake_bpe",
    )


# -- §8 a corrupt line in the middle of results.jsonl ----------------------------------------------


def test_resuming_with_a_corrupt_middle_line_is_a_one_line_error(
    gold: Path, tmp_path: Path
) -> None:
    with FakeLLM(default=Reply("pass")) as server:
        spec = write_spec(tmp_path / "s", server.base_url)
        out = tmp_path / "out"
        run(spec, gold, out, max_cases=5, cache_dir=False)
        lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
        lines[2] = lines[2][: len(lines[2]) // 2] + "\n"
        (out / "results.jsonl").write_text("".join(lines))
        calls = server.call_count
        result = CliRunner().invoke(
            cli,
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
            ],
        )
        assert server.call_count == calls  # nothing was called again
    assert result.exit_code == 2, result.output
    assert (
        "results_corrupt" in result.output
        and "results.jsonl:3" in result.output
        and "Traceback" not in result.output
    )
    assert sum("results_corrupt" in line for line in result.output.splitlines()) == 1


def test_a_corrupt_verdict_cache_line_is_a_one_line_error(gold: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with FakeLLM(default=Reply("pass")) as server:
        spec = write_spec(tmp_path / "s", server.base_url)
        run(spec, gold, tmp_path / "a", cache_dir=cache)
        (path,) = cache.rglob("*.jsonl")
        lines = path.read_text().splitlines(keepends=True)
        lines[1] = "{not json\n"
        path.write_text("".join(lines))
        calls = server.call_count
        result = CliRunner().invoke(
            cli,
            [
                "run",
                "--candidate",
                str(spec),
                "--gold",
                str(gold),
                "--partition",
                "development",
                "--out",
                str(tmp_path / "b"),
                "--cache",
                str(cache),
                "--no-progress",
            ],
        )
        assert server.call_count == calls
    assert result.exit_code == 2, result.output
    assert (
        "cache_corrupt" in result.output
        and f"{path.name}:2" in result.output
        and "Traceback" not in result.output
    )


def test_two_runs_on_one_directory_in_one_process_one_is_refused(
    gold: Path, tmp_path: Path
) -> None:
    import asyncio

    from workbench.runs import run_candidate

    with FakeLLM(default=Reply("pass"), latency_s=0.05) as server:
        spec = write_spec(tmp_path / "s", server.base_url)
        dataset = load_dataset(gold)

        async def both():
            return await asyncio.gather(
                run_candidate(
                    load_candidate(spec),
                    dataset,
                    "development",
                    tmp_path / "out",
                    RunOptions(progress=False, cache_dir=False),
                ),
                run_candidate(
                    load_candidate(spec),
                    dataset,
                    "development",
                    tmp_path / "out",
                    RunOptions(progress=False, cache_dir=False),
                ),
                return_exceptions=True,
            )

        outcomes = asyncio.run(both())
        assert server.call_count == 20  # paid once
    refused = [o for o in outcomes if isinstance(o, WorkbenchError)]
    assert len(refused) == 1 and refused[0].problems[0].code == "run_locked"
    assert (
        sum(1 for o in outcomes if not isinstance(o, BaseException) and o.status == "complete") == 1
    )


def test_the_breaker_setting_is_not_part_of_the_fingerprint(tmp_path: Path) -> None:
    default = load_candidate(write_spec(tmp_path / "a", "http://127.0.0.1:9/v1"))
    other = load_candidate(
        write_spec(tmp_path / "b", "http://127.0.0.1:9/v1", endpoint={"circuit_breaker_after": 3})
    )
    assert other.spec.endpoint.circuit_breaker_after == 3
    # Raising N to resume a run the breaker stopped is the same judge and the same run directory.
    assert default.identity.fingerprint() == other.identity.fingerprint()
    assert "circuit_breaker_after" not in json.dumps(default.identity.model_dump(mode="json"))
    changed = load_candidate(
        write_spec(tmp_path / "c", "http://127.0.0.1:9/v1", endpoint={"max_retries": 1})
    )
    assert changed.identity.fingerprint() != default.identity.fingerprint()
