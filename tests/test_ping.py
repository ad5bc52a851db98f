"""``workbench ping``: one real request, every failure mode against the local test server.

Each failure is produced for real: a host under the reserved ``.invalid`` TLD (never
resolves, so no internet is touched), a bound port nobody listens on, and
``workbench.testing.FakeLLM`` answering 401, 403, 404, 429, 500, 400, hangs, dropped
connections, refusals, malformed or off-vocabulary answers, prose instead of JSON mode and
answers without usage. Each must give its own problem code, exit 1, and never print the key.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from workbench.cli.main import main
from workbench.judges._ping import PING_CODES, PING_INPUT, PingResult, aping, ping
from workbench.testing import FakeLLM, Reply

KEY = "sk-ping-test-0123456789abcdef"
URL_ENV = "PING_TEST_LLM_URL"
KEY_ENV = "PING_TEST_API_KEY"
DOCS = Path(__file__).resolve().parents[1] / "docs"


def write_spec(
    directory: Path,
    *,
    endpoint: dict | None = None,
    pricing: dict | None = None,
    labels: list[str] | None = None,
) -> Path:
    spec = {
        "schema_version": 1,
        "name": "ping-judge",
        "version": "1",
        "kind": "ragas-llm",
        "labels": labels or ["pass", "fail"],
        "model": "fake-judge",
        "prompt": (
            "Question: {user_input}\nAnswer: {response}\nReference: {reference}\nReturn a reason"
            " and a value: pass or fail."
        ),
        "endpoint": {
            "base_url": "http://127.0.0.1:9/v1",
            "base_url_env": URL_ENV,
            "api_key_env": KEY_ENV,
            "timeout_s": 5,
            **(endpoint or {}),
        },
        "pricing": (
            pricing
            if pricing is not None
            else {"input_per_million_usd": 0.15, "output_per_million_usd": 0.6}
        ),
    }
    path = directory / "ping-judge@1.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setenv(KEY_ENV, KEY)
    return monkeypatch


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    return write_spec(tmp_path)


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port bound to a socket that never listens: connecting is refused, and nobody else can take
    it.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    yield sock.getsockname()[1]
    sock.close()


def run_cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["ping", *args])
    return result.exit_code, result.output


def ping_against(
    fake: FakeLLM, spec: Path, env: pytest.MonkeyPatch, url: str | None = None
) -> PingResult:
    env.setenv(URL_ENV, url or fake.base_url)
    return ping(spec)


def codes(result: PingResult) -> list[str]:
    return [p.code for p in result.problems]


# -- success ------------------------------------------------------------------------------------


def test_ok_ping_reports_everything_and_sends_one_harmless_request(
    spec: Path, env: pytest.MonkeyPatch
) -> None:
    with FakeLLM(default=Reply("pass", "names Paris"), require_api_key=KEY) as fake:
        env.setenv(URL_ENV, fake.base_url)
        code, out = run_cli("--candidate", str(spec))
        calls = fake.calls
        base = fake.base_url
    assert code == 0, out
    assert len(calls) == 1
    body = calls[0].body
    prompt = json.dumps(body["messages"])
    assert PING_INPUT.user_input in prompt and PING_INPUT.response in prompt
    assert body["response_format"] == {"type": "json_object"}
    assert f"url        {base}/chat/completions" in out
    assert "status     HTTP 200" in out
    assert "JSON mode  honoured" in out
    assert "value 'pass' is one of ['pass', 'fail']" in out
    tokens_in, tokens_out = calls[0].body and _usage_of(out)
    assert f"cost       ${(tokens_in * 0.15 + tokens_out * 0.6) / 1e6:.6f}" in out
    assert out.strip().endswith("ok: the endpoint is ready for `workbench run`")
    assert KEY not in out


def _usage_of(out: str) -> tuple[int, int]:
    line = next(line for line in out.splitlines() if line.startswith("  usage"))
    words = line.split()
    return int(words[1]), int(words[4])


def test_json_output_is_the_documented_record(spec: Path, env: pytest.MonkeyPatch) -> None:
    with FakeLLM(default=Reply("fail", "wrong city")) as fake:
        env.setenv(URL_ENV, fake.base_url)
        code, out = run_cli("--candidate", str(spec), "--json")
    assert code == 0
    data = json.loads(out)
    result = PingResult.model_validate(data)
    assert (result.ok, result.status, result.value, result.label_ok, result.json_mode_honoured) == (
        True,
        200,
        "fail",
        True,
        True,
    )
    assert result.cost_usd == pytest.approx(
        (result.tokens_in * 0.15 + result.tokens_out * 0.6) / 1e6
    )
    assert result.latency_s is not None and result.latency_s > 0
    formats = (DOCS / "formats.md").read_text()
    assert "## Ping result" in formats
    assert [name for name in PingResult.model_fields if f"`{name}`" not in formats] == []


def test_aping_in_a_running_loop_and_ping_from_a_notebook_loop(
    spec: Path, env: pytest.MonkeyPatch
) -> None:
    import asyncio

    async def notebook_cell() -> tuple[PingResult, PingResult]:
        awaited = await aping(spec)
        threaded = ping(
            spec
        )  # a running loop (a notebook): ping() runs on a helper thread instead of failing
        return awaited, threaded

    with FakeLLM() as fake:
        env.setenv(URL_ENV, fake.base_url)
        awaited, threaded = asyncio.run(notebook_cell())
        calls = fake.call_count
    assert awaited.ok and threaded.ok and calls == 2


# -- every failure mode -------------------------------------------------------------------------


def test_dns_failure(spec: Path, env: pytest.MonkeyPatch) -> None:
    env.setenv(URL_ENV, "http://judge-endpoint.invalid/v1")
    code, out = run_cli("--candidate", str(spec))
    assert code == 1
    assert "FAILED [dns_failure] the host 'judge-endpoint.invalid' does not resolve" in out
    assert "url        http://judge-endpoint.invalid/v1/chat/completions" in out
    assert "status     no HTTP answer" in out
    assert "$PING_TEST_LLM_URL" in out  # the fix names where the URL came from


def test_connection_refused(spec: Path, env: pytest.MonkeyPatch, closed_port: int) -> None:
    env.setenv(URL_ENV, f"http://127.0.0.1:{closed_port}/v1")
    result = ping(spec)
    assert codes(result) == ["connection_refused"]
    assert f"127.0.0.1:{closed_port}" in result.problems[0].message
    assert result.status is None and not result.parsed


def test_connection_dropped(spec: Path, env: pytest.MonkeyPatch) -> None:
    with FakeLLM(default=Reply(fault="disconnect")) as fake:
        result = ping_against(fake, spec, env)
    assert codes(result) == ["connection_failed"]


def test_timeout(tmp_path: Path, env: pytest.MonkeyPatch) -> None:
    spec = write_spec(tmp_path, endpoint={"timeout_s": 0.5})
    with FakeLLM(default=Reply(fault="hang"), hang_s=10) as fake:
        result = ping_against(fake, spec, env)
    assert codes(result) == ["timeout"]
    assert result.latency_s < 5


def test_unauthorized_401_never_prints_the_key_even_when_the_server_echoes_it(
    spec: Path, env: pytest.MonkeyPatch
) -> None:
    with FakeLLM(require_api_key="another-key-0123456789") as fake:
        env.setenv(URL_ENV, fake.base_url)
        code, out = run_cli("--candidate", str(spec))
        code_json, out_json = run_cli("--candidate", str(spec), "--json")
    assert code == 1 and code_json == 1
    assert "FAILED [unauthorized] HTTP 401" in out
    assert "$PING_TEST_API_KEY" in out
    assert json.loads(out_json)["problems"][0]["code"] == "unauthorized"
    with FakeLLM(default=Reply(fault="http_401_echo")) as fake:
        env.setenv(URL_ENV, fake.base_url)
        code, out = run_cli("--candidate", str(spec), "--json")
    assert code == 1 and json.loads(out)["problems"][0]["code"] == "unauthorized"
    assert KEY not in out and "[REDACTED]" in out


def test_forbidden_403(spec: Path, env: pytest.MonkeyPatch) -> None:
    with FakeLLM(default=Reply(fault="http_403")) as fake:
        result = ping_against(fake, spec, env)
    assert codes(result) == ["forbidden"] and result.status == 403


def test_model_not_found_404(spec: Path, env: pytest.MonkeyPatch) -> None:
    with FakeLLM(models=["gpt-4o-mini"]) as fake:
        env.setenv(URL_ENV, fake.base_url)
        code, out = run_cli("--candidate", str(spec))
    assert code == 1
    assert "FAILED [model_not_found] HTTP 404" in out and "'fake-judge'" in out


def test_wrong_path_is_endpoint_not_found_not_model_not_found(
    spec: Path, env: pytest.MonkeyPatch
) -> None:
    with FakeLLM() as fake:
        result = ping_against(fake, spec, env, url=fake.root_url)  # forgot the /v1
    assert codes(result) == ["endpoint_not_found"]
    assert "/v1" in result.problems[0].fix


@pytest.mark.parametrize("server_json_mode", ["reject", "ignore"])
def test_no_json_mode(spec: Path, env: pytest.MonkeyPatch, server_json_mode: str) -> None:
    with FakeLLM(json_mode=server_json_mode) as fake:
        env.setenv(URL_ENV, fake.base_url)
        code, out = run_cli("--candidate", str(spec))
        result = ping(spec)
    assert code == 1
    assert "FAILED [no_json_mode]" in out and "json_mode: md_json" in out
    assert "JSON mode  NOT honoured" in out
    assert codes(result) == ["no_json_mode"] and result.json_mode_honoured is False
    # ignored: the answer still parsed (instructor reads the fenced block), but JSON mode did not
    # hold
    assert result.parsed is (server_json_mode == "ignore")


def test_md_json_needs_no_json_mode(tmp_path: Path, env: pytest.MonkeyPatch) -> None:
    spec = write_spec(tmp_path, endpoint={"json_mode": "md_json"})
    with FakeLLM(json_mode="reject") as fake:
        env.setenv(URL_ENV, fake.base_url)
        code, out = run_cli("--candidate", str(spec))
    assert code == 0, out
    assert "JSON mode  not asked for (json_mode md_json" in out


def test_unparseable(spec: Path, env: pytest.MonkeyPatch) -> None:
    with FakeLLM(default=Reply(fault="malformed_json")) as fake:
        env.setenv(URL_ENV, fake.base_url)
        code, out = run_cli("--candidate", str(spec))
        calls = fake.call_count
    assert code == 1 and "FAILED [unparseable]" in out
    assert "answer     did not parse into {reason, value}" in out
    assert calls == 1  # no silent instructor re-ask: one ping, one request


def test_prose_without_json_is_unparseable(spec: Path, env: pytest.MonkeyPatch) -> None:
    with FakeLLM(default=Reply(content="The answer is correct, I would pass it.")) as fake:
        result = ping_against(fake, spec, env)
    assert codes(result) == ["no_json_mode", "unparseable"]


def test_label_not_allowed(spec: Path, env: pytest.MonkeyPatch) -> None:
    with FakeLLM(default=Reply("maybe", "unsure")) as fake:
        result = ping_against(fake, spec, env)
    assert codes(result) == ["label_not_allowed"]
    assert result.parsed and result.value == "maybe" and not result.label_ok


@pytest.mark.parametrize(
    "reply", [Reply("pass", ""), Reply(content='{"value": "pass"}')], ids=["empty", "absent"]
)
def test_missing_reason(spec: Path, env: pytest.MonkeyPatch, reply: Reply) -> None:
    """A run would record this answer as a missing_reason error, so ping says so before the run."""
    with FakeLLM(default=reply) as fake:
        result = ping_against(fake, spec, env)
    assert codes(result) == ["missing_reason"] and not result.ok
    assert result.parsed and result.value == "pass"


def test_refusal(spec: Path, env: pytest.MonkeyPatch) -> None:
    with FakeLLM(default=Reply(fault="refusal")) as fake:
        result = ping_against(fake, spec, env)
    assert codes(result) == ["refusal"]


@pytest.mark.parametrize(
    ("fault", "code", "status"),
    [
        ("http_429", "rate_limited", 429),
        ("http_500", "server_error", 500),
        ("http_400", "bad_request", 400),
    ],
)
def test_other_http_failures(
    spec: Path, env: pytest.MonkeyPatch, fault: str, code: str, status: int
) -> None:
    with FakeLLM(default=Reply(fault=fault), retry_after_s=0) as fake:
        result = ping_against(fake, spec, env)
        calls = fake.call_count
    assert codes(result) == [code] and result.status == status
    assert calls == 1


def test_usage_missing_fails_under_a_price_table_and_is_zero_cost_without_one(
    tmp_path: Path, env: pytest.MonkeyPatch
) -> None:
    priced = write_spec(tmp_path)
    free_dir = tmp_path / "free"
    free_dir.mkdir()
    free = write_spec(free_dir, pricing={})
    with FakeLLM(report_usage=False) as fake:
        paid = ping_against(fake, priced, env)
        local = ping_against(fake, free, env)
    assert codes(paid) == ["usage_missing"] and paid.cost_usd is None
    assert local.ok and local.cost_usd == 0.0 and local.tokens_in is None


def test_every_documented_code_is_produced_by_some_test_here() -> None:
    # Here, or in test_endpoint_errors.py (a key, a model name or a proxy to blame).
    source = (
        Path(__file__).read_text() + (Path(__file__).parent / "test_endpoint_errors.py").read_text()
    )
    assert (
        sorted(
            code for code in PING_CODES if f'"{code}"' not in source and f"[{code}]" not in source
        )
        == []
    )
    endpoints = (DOCS / "endpoints.md").read_text()
    assert sorted(code for code in PING_CODES if f"`{code}`" not in endpoints) == []


# -- invalid input: exit 2, nothing sent --------------------------------------------------------


def test_unset_key_variable_is_invalid_input(spec: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with FakeLLM() as fake:
        monkeypatch.setenv(URL_ENV, fake.base_url)
        code, out = run_cli("--candidate", str(spec))
        calls = fake.call_count
    assert code == 2 and "api_key_missing" in out and calls == 0


def test_non_llm_candidate_is_refused() -> None:
    root = Path(__file__).resolve().parents[1]
    code, out = run_cli("--candidate", str(root / "data" / "candidates" / "rubric-judge@2.yaml"))
    assert code == 2 and "ping_kind" in out


def test_missing_spec_is_invalid_input(tmp_path: Path) -> None:
    code, out = run_cli("--candidate", str(tmp_path / "nope@1.yaml"))
    assert code == 2 and "candidate_missing" in out
