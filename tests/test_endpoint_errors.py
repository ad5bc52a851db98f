"""Issue 29 point 6: endpoint errors are told apart, and a run against a refusing endpoint stops.

A wrong key on a LiteLLM proxy without a database answers HTTP 400 "No connected db." (the
proxy takes any key but its master key for a virtual key it cannot look up). The old
``ping`` called it ``bad_request`` with a fix about params and the model name, and the old
``run`` sent every call (the circuit breaker only counted connection, 401, 403 and 404
failures) and ended "COMPLETE - 0 verdicts, N evaluator errors", exit 5.

Every endpoint here is ``workbench.testing.FakeLLM`` on a port the OS picks: an OpenAI-style
401 for a wrong key, LiteLLM's 400 "No connected db.", an OpenAI 404 for an unknown model and
LiteLLM's 400 for one. The runs judge the demo's development partition (112 cases) from
``data/demo``, as a user's first run would. tests/test_litellm_proxy.py runs the same wrong key,
unknown model and master key through a real LiteLLM proxy (the optional ``litellm`` extra).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import _forked_cli
import pytest
import yaml
from click.testing import CliRunner

from workbench.cli.main import main
from workbench.judges._http_errors import endpoint_failure
from workbench.testing import FakeLLM, Reply

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"
KEY_ENV = "ENDPOINT_ERRORS_TEST_KEY"
WRONG_KEY = "sk-wrong-4f1d2c3b-NEVER-PRINT"
MASTER_KEY = "sk-master-9a8b7c6d"
DEV_CASES = 109
"""Case x repeat pairs a run plans on the demo's development partition."""


def write_spec(directory: Path, base_url: str, *, model: str = "fake-judge") -> Path:
    spec = {
        "name": "proxy-judge",
        "version": "1",
        "kind": "ragas-llm",
        "labels": ["pass", "fail"],
        "model": model,
        "prompt": (
            "Notes: {grading_notes}\nQuestion: {user_input}\nResponse: {response}\nReturn a"
            " reason and a value: pass or fail."
        ),
        "endpoint": {"base_url": base_url, "api_key_env": KEY_ENV, "timeout_s": 5},
        "pricing": {"input_per_million_usd": 0, "output_per_million_usd": 0},
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "proxy-judge@1.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def wrong_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, WRONG_KEY)
    return WRONG_KEY


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def ping(spec: Path) -> tuple[int, str, dict]:
    code, out = invoke("ping", "--candidate", str(spec))
    _, as_json = invoke("ping", "--candidate", str(spec), "--json")
    return code, out, json.loads(as_json)


def run(spec: Path, out: Path, *extra: str) -> tuple[int, str, dict]:
    code, output = invoke(
        "run",
        "--candidate",
        str(spec),
        "--gold",
        str(DEMO),
        "--partition",
        "development",
        "--out",
        str(out),
        "--no-cache",
        "--no-progress",
        *extra,
    )
    summary = json.loads((out / "run.json").read_text()) if (out / "run.json").exists() else {}
    return code, output, summary


def results(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


# -- the three endpoint servers --------------------------------------------------------------


def litellm_without_db() -> FakeLLM:
    """A LiteLLM proxy with a master key and no database: any other key is HTTP 400."""
    return FakeLLM(emulate="litellm", require_api_key=MASTER_KEY, litellm_database=False)


def openai_wrong_key() -> FakeLLM:
    """An OpenAI-style server: a wrong key is HTTP 401 "Incorrect API key provided."."""
    return FakeLLM(require_api_key=MASTER_KEY)


# -- ping: key, model name and proxy told apart -------------------------------------------------


def test_ping_wrong_key_on_a_litellm_proxy_without_db_is_a_proxy_problem(tmp_path: Path) -> None:
    with litellm_without_db() as server:
        code, out, result = ping(write_spec(tmp_path, server.base_url))
        calls = server.calls
    # Old main: [bad_request] "HTTP 400 ... No connected db." with "check params: and the model
    # name" as its fix.
    assert code == 1, out
    assert [p["code"] for p in result["problems"]] == ["proxy_config"] and result["status"] == 400
    assert "FAILED [proxy_config]" in out and "No connected db" in out
    fix = result["problems"][0]["fix"]
    assert f"${KEY_ENV}" in fix and "master key" in fix and "admin" in fix
    assert "params" not in fix.replace("not the model name or params", "")
    assert WRONG_KEY not in out and WRONG_KEY not in json.dumps(result)
    assert len(calls) == 2 and calls[0].authorized is False  # one call per ping


def test_ping_wrong_key_with_an_openai_401_body_is_a_key_problem(tmp_path: Path) -> None:
    with openai_wrong_key() as server:
        code, out, result = ping(write_spec(tmp_path, server.base_url))
    assert code == 1 and [p["code"] for p in result["problems"]] == ["unauthorized"]
    assert "Incorrect API key provided" in out
    assert f"check that ${KEY_ENV} holds a valid key" in result["problems"][0]["fix"]
    assert WRONG_KEY not in out and WRONG_KEY not in json.dumps(result)


@pytest.mark.parametrize("emulate", ["openai", "litellm"])
def test_ping_unknown_model_is_a_model_name_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, emulate: str
) -> None:
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)  # the key is right: only the model name is wrong
    with FakeLLM(emulate=emulate, models=["gpt-4o-mini"], require_api_key=MASTER_KEY) as server:
        code, out, result = ping(write_spec(tmp_path, server.base_url, model="gpt-4o-mini-typo"))
    assert code == 1 and [p["code"] for p in result["problems"]] == ["model_not_found"]
    assert result["status"] == {"openai": 404, "litellm": 400}[emulate]
    assert "'gpt-4o-mini-typo'" in out and "correct model:" in result["problems"][0]["fix"]
    assert "$" + KEY_ENV not in result["problems"][0]["fix"]  # not sent to check the key


def test_ping_right_master_key_on_the_same_proxy_is_ok(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)
    with litellm_without_db() as server:
        code, out, result = ping(write_spec(tmp_path, server.base_url))
    assert code == 0 and result["ok"], out


# -- the run's circuit breaker on repeated non-retryable 4xx --------------------------------


@pytest.mark.parametrize(
    ("make_server", "model", "kind", "fix_words"),
    [
        (litellm_without_db, "fake-judge", "proxy", ("master key", f"${KEY_ENV}")),
        (openai_wrong_key, "fake-judge", "auth", (f"${KEY_ENV}",)),
        (
            lambda: FakeLLM(emulate="litellm", models=["gpt-4o-mini"]),
            "gpt-4o-mini-typo",
            "not_found",
            ("model:",),
        ),
        (
            lambda: FakeLLM(default=Reply(fault="http_400")),
            "fake-judge",
            "bad_request",
            ("params:",),
        ),
    ],
    ids=["litellm-no-db-400", "openai-401", "litellm-unknown-model-400", "plain-400"],
)
def test_run_stops_after_a_few_refused_calls_and_leaves_the_rest_unrun(
    tmp_path: Path, make_server, model: str, kind: str, fix_words: tuple[str, ...]
) -> None:
    out = tmp_path / "out"
    with make_server() as server:
        spec = write_spec(tmp_path / "spec", server.base_url, model=model)
        code, output, summary = run(spec, out, "--concurrency", "1")
        seen, url = server.call_count, server.base_url
    # Old main (400s): every one of the 112 cases called, "COMPLETE - 0 verdicts, 112 evaluator
    # errors", exit 5.
    assert code == 3, output
    assert seen == 8  # endpoint.circuit_breaker_after (default 8) calls, then nothing
    assert summary["status"] == "incomplete" and summary["stop_reason"] == "circuit_breaker"
    assert summary["planned"] == DEV_CASES and summary["verdicts"] == 0
    assert summary["errors"] == 8 and summary["calls"] == 8
    assert len(summary["unrun"]) == DEV_CASES - 8 and not summary["pending_retry"]
    assert all(r["value"] is None and r["error"]["retryable"] is False for r in results(out))
    detail = summary["stop_detail"]
    assert f"8 consecutive calls failed at the endpoint {url} ({kind} 8)" in detail
    assert "fix:" in detail and all(word in detail for word in fix_words)
    assert "--retry-errors" in detail and "workbench ping" in detail
    assert "CIRCUIT BREAKER" in output.upper() and f"unrun ({DEV_CASES - 8})" in output
    assert WRONG_KEY not in output and WRONG_KEY not in (out / "results.jsonl").read_text()


def test_run_under_default_concurrency_sends_no_more_than_the_breakers_calls(
    tmp_path: Path,
) -> None:
    """The default concurrency (8) starts 8 calls at once; after the first refusal the breaker is
    half-open (one call at a time), so no worker adds calls while the count climbs."""
    with litellm_without_db() as server:
        spec = write_spec(tmp_path / "spec", server.base_url)
        code, output, summary = run(spec, tmp_path / "out")
        seen = server.call_count
    # Without the half-open breaker: 8 + 7 calls in flight (15) with the same key.
    assert code == 3, output
    assert seen == 8 and summary["calls"] == 8
    assert summary["verdicts"] == 0 and len(summary["unrun"]) == DEV_CASES - 8


def test_fixing_the_key_and_retrying_errors_completes_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fix the breaker prints works: the right key and --retry-errors judge every case."""
    out = tmp_path / "out"
    with litellm_without_db() as server:
        spec = write_spec(tmp_path / "spec", server.base_url)
        assert run(spec, out, "--concurrency", "1")[0] == 3
        monkeypatch.setenv(KEY_ENV, MASTER_KEY)
        code, output, summary = run(spec, out, "--retry-errors", "--concurrency", "4")
    assert code == 0, output
    assert summary["status"] == "complete" and summary["verdicts"] == DEV_CASES


# -- the classes themselves: status AND body --------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        # LiteLLM without a database, as 400 (older proxies) and as 401
        (400, {"error": {"message": "No connected db.", "type": "no_db_connection"}}, "proxy"),
        (401, {"error": {"message": "Authentication Error, No connected db."}}, "proxy"),
        (400, {"error": {"message": "Budget has been exceeded! Current cost: 10.2"}}, "proxy"),
        (
            401,
            {"error": {"message": "Incorrect API key provided.", "code": "invalid_api_key"}},
            "auth",
        ),
        (403, {"error": {"message": "You are not allowed to use this model"}}, "auth"),
        (400, {"error": {"message": "Invalid API key passed"}}, "auth"),  # a proxy's 400
        (
            404,
            {"error": {"message": "The model `x` does not exist", "code": "model_not_found"}},
            "not_found",
        ),
        (
            400,
            {
                "error": {
                    "message": "Invalid model name passed in model=x. Call `/v1/models` to"
                    " view available models for your key."
                }
            },
            "not_found",
        ),
        (404, {"error": {"code": "404", "message": "Resource not found"}}, "not_found"),
        (
            400,
            {"error": {"message": "Invalid request", "type": "invalid_request_error"}},
            "bad_request",
        ),
        # about this case only: the next case may well succeed
        (
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 8192 tokens.",
                    "code": "context_length_exceeded",
                }
            },
            None,
        ),
        (400, {"error": {"message": "filtered", "code": "content_filter"}}, None),
        # transient: retried, never an endpoint failure
        (429, {"error": {"message": "Rate limit reached"}}, None),
        (500, {"error": {"message": "Internal error"}}, None),
        (422, {"error": {"message": "Unprocessable"}}, None),
    ],
)
def test_endpoint_failure_reads_status_and_body(status: int, body: dict, kind: str | None) -> None:
    assert endpoint_failure(status, json.dumps(body)) == kind


# -- the emulation on the command line ------------------------------------------------------


def test_fake_llm_litellm_no_db_recipe_from_the_docs() -> None:
    """The recipe in docs/endpoints.md: `workbench fake-llm --litellm-no-db` around a real ping."""
    env = {
        **os.environ,
        "PROXY_MASTER_KEY": MASTER_KEY,
        "LITELLM_API_KEY": WRONG_KEY,
        "RAGAS_DO_NOT_TRACK": "true",
    }
    cli = [sys.executable, "-m", "workbench"]
    fake = ["fake-llm", "--emulate", "litellm", "--require-api-key-env", "PROXY_MASTER_KEY"]
    ping_cmd = [*cli, "ping", "--candidate", "examples/endpoints/litellm-judge@1.yaml"]
    # fake-llm forked from this process (tests/_forked_cli.py); the ping it starts, as printed
    done = _forked_cli.run(
        [*cli, *fake, "--litellm-no-db", "--export", "LITELLM_BASE_URL", "--", *ping_cmd],
        env=env,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAILED [proxy_config]" in done.stdout and "$LITELLM_API_KEY" in done.stdout
    assert WRONG_KEY not in done.stdout + done.stderr and MASTER_KEY not in done.stdout
    assert "--litellm-no-db" in (ROOT / "docs" / "endpoints.md").read_text()
    code, out = invoke("fake-llm", "--litellm-no-db", "--", "true")
    assert code == 2 and "--emulate litellm" in out  # needs a LiteLLM emulation with a key
