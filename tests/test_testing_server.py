"""The local fake OpenAI server: wire format, faults, scripting, auth, concurrency, real clients,
CLI.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import math
import sys
import time
from collections.abc import Iterator

import httpx
import pytest
from click.testing import CliRunner

from workbench.cli.fake_llm import fake_llm
from workbench.testing import FAULTS, ChatRequest, FakeLLM, RecordedCall, Reply, Rule

MESSAGES = [
    {"role": "system", "content": "You are a strict judge."},
    {"role": "user", "content": "Is this refund answer correct?"},
]
PROMPT = "You are a strict judge.\n\nIs this refund answer correct?"


def chat(
    client: httpx.Client, server: FakeLLM, messages: list[dict] | None = None, **extra: object
) -> httpx.Response:
    body = {"model": "judge-model", "messages": messages or MESSAGES, **extra}
    return client.post(f"{server.base_url}/chat/completions", json=body)


@pytest.fixture
def server() -> Iterator[FakeLLM]:
    with FakeLLM(default=Reply("fail", "the refund window is wrong")) as fake:
        yield fake


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5.0) as c:
        yield c


# -- wire format ----------------------------------------------------------------------------


def test_response_shape_and_usage_arithmetic(server: FakeLLM, client: httpx.Client) -> None:
    response = chat(client, server)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert int(response.headers["content-length"]) == len(response.content)
    data = response.json()
    content = json.dumps({"reason": "the refund window is wrong", "value": "fail"})
    assert data["id"] == "chatcmpl-fake-0"
    assert data["object"] == "chat.completion"
    assert isinstance(data["created"], int) and abs(data["created"] - time.time()) < 60
    assert data["model"] == "judge-model"
    assert data["system_fingerprint"] == "fake-llm"
    assert data["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": None},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ]
    prompt_tokens = math.ceil(len(PROMPT) / 4)
    completion_tokens = math.ceil(len(content) / 4)
    assert data["usage"] == {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    assert json.loads(data["choices"][0]["message"]["content"]) == {
        "reason": "the refund window is wrong",
        "value": "fail",
    }

    (call,) = server.calls
    assert isinstance(call, RecordedCall)
    assert (call.index, call.path, call.status, call.authorized) == (
        0,
        "/v1/chat/completions",
        200,
        None,
    )
    assert call.body == {"model": "judge-model", "messages": MESSAGES}
    assert call.reply == Reply("fail", "the refund window is wrong")
    assert server.call_count == 1


def test_tokens_are_at_least_one_and_content_override_is_verbatim(client: httpx.Client) -> None:
    with FakeLLM(default=Reply(content="")) as server:
        data = chat(client, server, messages=[{"role": "user", "content": ""}]).json()
    assert data["choices"][0]["message"]["content"] == ""
    assert data["usage"] == {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}


def test_keep_alive_connection_is_reused(server: FakeLLM) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    body = json.dumps({"model": "m", "messages": MESSAGES})
    sockets = []
    for _ in range(3):
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200 and json.loads(response.read())["object"] == "chat.completion"
        sockets.append(conn.sock)
    conn.close()
    assert sockets[0] is not None and all(s is sockets[0] for s in sockets)
    assert [c.index for c in server.calls] == [0, 1, 2]


def test_models_unknown_paths_and_bad_bodies(server: FakeLLM, client: httpx.Client) -> None:
    models = client.get(f"{server.base_url}/models")
    assert models.status_code == 200
    assert [m["id"] for m in models.json()["data"]] == ["fake-judge"]
    missing = client.get(f"{server.base_url}/nope")
    assert missing.status_code == 404 and "error" in missing.json()
    assert client.post(f"{server.base_url}/embeddings", json={}).status_code == 404
    assert client.get(f"{server.base_url}/chat/completions").status_code == 405

    bad = client.post(
        f"{server.base_url}/chat/completions",
        content=b"{not json",
        headers={"Content-Type": "application/json"},
    )
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"
    no_messages = client.post(f"{server.base_url}/chat/completions", json={"model": "m"})
    assert no_messages.status_code == 400
    # Only chat requests are recorded; the unparseable one has body None.
    assert [(c.status, c.body is None, c.reply.fault) for c in server.calls] == [
        (400, True, "http_400"),
        (400, False, "http_400"),
    ]


# -- faults ---------------------------------------------------------------------------------

HTTP_FAULTS = [
    ("http_500", 500, "server_error"),
    ("http_429", 429, "rate_limit_error"),
    ("http_400", 400, "invalid_request_error"),
    ("http_401", 401, "invalid_request_error"),
    ("http_403", 403, "permission_denied"),
]


@pytest.mark.parametrize(("fault", "status", "error_type"), HTTP_FAULTS)
def test_http_faults(fault: str, status: int, error_type: str, client: httpx.Client) -> None:
    with FakeLLM(default=Reply(fault=fault), retry_after_s=0.05) as server:
        response = chat(client, server)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["type"] == error_type and error["message"]
    assert server.calls[0].status == status and server.calls[0].reply.fault == fault
    if fault == "http_429":
        assert response.headers["retry-after"] == "0.05"
    else:
        assert "retry-after" not in response.headers


def test_retry_after_whole_seconds(client: httpx.Client) -> None:
    with FakeLLM(default=Reply(fault="http_429")) as server:
        assert chat(client, server).headers["retry-after"] == "1"


def test_malformed_json_and_refusal(client: httpx.Client) -> None:
    rules = [Rule(Reply(fault="malformed_json"), times=1), Rule(Reply(fault="refusal"), times=1)]
    with FakeLLM(rules=rules) as server:
        truncated = chat(client, server)
        refused = chat(client, server)
    assert truncated.status_code == 200
    content = truncated.json()["choices"][0]["message"]["content"]
    assert content.startswith("{")
    with pytest.raises(json.JSONDecodeError):
        json.loads(content)
    assert refused.status_code == 200
    message = refused.json()["choices"][0]["message"]
    assert message["content"] is None
    assert message["refusal"] == "I'm sorry, I can't help with that."
    assert [c.status for c in server.calls] == [200, 200]


def test_hang_times_out_the_client_and_stop_is_fast(client: httpx.Client) -> None:
    server = FakeLLM(default=Reply(fault="hang"), hang_s=30.0).start()
    try:
        with pytest.raises(httpx.ReadTimeout):
            client.post(
                f"{server.base_url}/chat/completions",
                json={"model": "m", "messages": MESSAGES},
                timeout=0.2,
            )
        assert server.call_count == 1 and server.calls[0].status == 0
    finally:
        started = time.perf_counter()
        server.stop()
        elapsed = time.perf_counter() - started
    assert elapsed < 1.0
    assert server.calls[0].status == 0  # abandoned
    assert server.calls[0].reply.fault == "hang"


def test_short_hang_answers_normally(client: httpx.Client) -> None:
    with FakeLLM(default=Reply("pass", "late", fault="hang"), hang_s=0.1) as server:
        started = time.perf_counter()
        response = chat(client, server)
        assert time.perf_counter() - started >= 0.1
    assert response.status_code == 200
    assert json.loads(response.json()["choices"][0]["message"]["content"]) == {
        "reason": "late",
        "value": "pass",
    }
    assert server.calls[0].status == 200


def test_fault_rates_are_reproducible_with_the_same_seed(client: httpx.Client) -> None:
    rates = {"http_500": 0.25, "refusal": 0.25}

    def faults(seed: int) -> list[str | None]:
        with FakeLLM(fault_rates=rates, seed=seed) as server:
            for _ in range(40):
                chat(client, server)
            first = [c.reply.fault for c in server.calls]
            server.reset()  # reset replays the same draws
            for _ in range(40):
                chat(client, server)
            assert [c.reply.fault for c in server.calls] == first
            assert [c.index for c in server.calls] == list(range(40))
            return first

    a, b, other = faults(7), faults(7), faults(8)
    assert a == b
    assert a != other
    assert {"http_500", "refusal", None} == set(a)


def test_invalid_configuration_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        Reply(fault="explode")
    with pytest.raises(ValueError, match="unknown fault"):
        FakeLLM(fault_rates={"explode": 0.1})
    with pytest.raises(ValueError, match="exceeds 1"):
        FakeLLM(fault_rates={"http_500": 0.6, "hang": 0.6})
    with pytest.raises(ValueError):
        FakeLLM(fault_rates={"hang": 1.5})
    with pytest.raises(RuntimeError):
        _ = FakeLLM().base_url
    assert FAULTS == (
        "http_500",
        "http_429",
        "http_400",
        "http_401",
        "hang",
        "malformed_json",
        "refusal",
        "http_401_echo",
        "http_403",
        "disconnect",
        "inflated_usage",
    )


def test_401_echo_repeats_the_presented_key_in_the_body_but_never_records_it(
    client: httpx.Client,
) -> None:
    key = "sk-echo-0123456789abcdef"
    with FakeLLM(default=Reply(fault="http_401_echo")) as server:
        response = client.post(
            f"{server.base_url}/chat/completions",
            json={"model": "m", "messages": MESSAGES},
            headers={"Authorization": f"Bearer {key}"},
        )
        bare = chat(client, server)
    assert response.status_code == 401
    assert response.json()["error"]["message"].startswith(
        f"Incorrect API key provided: Bearer {key}."
    )
    assert "(none)" in bare.json()["error"]["message"]
    assert key not in repr(server.calls) and server.calls[0].status == 401


def test_disconnect_closes_without_answering(client: httpx.Client) -> None:
    with FakeLLM(rules=[Rule(Reply(fault="disconnect"), times=1)]) as server:
        with pytest.raises(httpx.RemoteProtocolError):
            chat(client, server)
        assert chat(client, server).status_code == 200  # the server itself keeps serving
    assert [c.status for c in server.calls] == [0, 200]


def test_inflated_usage_reports_the_configured_tokens(client: httpx.Client) -> None:
    with FakeLLM(
        default=Reply("pass", fault="inflated_usage"), inflated_usage_tokens=123456
    ) as server:
        data = chat(client, server).json()
    assert data["usage"] == {
        "prompt_tokens": 123456,
        "completion_tokens": 123456,
        "total_tokens": 246912,
    }
    assert json.loads(data["choices"][0]["message"]["content"])["value"] == "pass"
    with pytest.raises(ValueError):
        FakeLLM(inflated_usage_tokens=-1)


# -- scripting ------------------------------------------------------------------------------


def test_rules_contains_and_times(client: httpx.Client) -> None:
    rules = [
        Rule(Reply(fault="http_500"), contains="flaky", times=2),
        Rule(Reply("fail", "mentions refund"), contains="refund"),
        Rule(Reply("pass", "first of anything else"), times=1),
    ]
    with FakeLLM(rules=rules, default=Reply("review_required", "default")) as server:

        def verdict(text: str) -> tuple[int, str | None]:
            response = chat(client, server, messages=[{"role": "user", "content": text}])
            if response.status_code != 200:
                return response.status_code, None
            return 200, json.loads(response.json()["choices"][0]["message"]["content"])["value"]

        assert verdict("flaky refund") == (500, None)
        assert verdict("flaky refund") == (500, None)
        assert verdict("flaky refund") == (200, "fail")  # flaky rule exhausted
        assert verdict("hello") == (200, "pass")
        assert verdict("hello") == (200, "review_required")  # times=1 exhausted
        assert verdict("refund again") == (200, "fail")
        server.reset()
        assert server.calls == []
        assert verdict("flaky") == (500, None)  # counters reset too
        assert server.calls[0].index == 0


def test_responder_sees_the_request(client: httpx.Client) -> None:
    seen: list[ChatRequest] = []

    def responder(request: ChatRequest) -> Reply:
        seen.append(request)
        return Reply("pass" if "good" in request.prompt else "fail", f"request {request.index}")

    with FakeLLM(rules=[Rule(Reply("rule"), contains="RULE")], responder=responder) as server:
        chat(client, server, messages=[{"role": "user", "content": "RULE"}])
        good = chat(
            client,
            server,
            messages=[{"role": "system", "content": "judge"}, {"role": "user", "content": "good"}],
        )
        bad = chat(
            client,
            server,
            messages=[{"role": "user", "content": [{"type": "text", "text": "bad"}]}],
        )

    assert json.loads(good.json()["choices"][0]["message"]["content"]) == {
        "reason": "request 1",
        "value": "pass",
    }
    assert json.loads(bad.json()["choices"][0]["message"]["content"])["value"] == "fail"
    assert [r.index for r in seen] == [1, 2]  # the rule answered request 0
    assert seen[0].prompt == "judge\n\ngood"
    assert seen[0].model == "judge-model"
    assert seen[0].messages == seen[0].body["messages"]


def test_responder_errors_become_500(client: httpx.Client) -> None:
    def broken(request: ChatRequest) -> Reply:
        raise KeyError("oops")

    with FakeLLM(responder=broken) as server:
        response = chat(client, server)
    assert response.status_code == 500
    assert "KeyError" in response.json()["error"]["message"]


def test_per_reply_latency_overrides_server_latency(client: httpx.Client) -> None:
    with FakeLLM(rules=[Rule(Reply(latency_s=0.0), contains="fast")], latency_s=0.3) as server:
        started = time.perf_counter()
        chat(client, server, messages=[{"role": "user", "content": "fast"}])
        fast = time.perf_counter() - started
        started = time.perf_counter()
        chat(client, server)
        slow = time.perf_counter() - started
    assert fast < 0.25 <= 0.3 <= slow


# -- authentication -------------------------------------------------------------------------


def test_require_api_key(client: httpx.Client) -> None:
    secret = "sk-very-secret-123"
    with FakeLLM(require_api_key=secret) as server:
        url = f"{server.base_url}/chat/completions"
        body = {"model": "m", "messages": MESSAGES}
        missing = client.post(url, json=body)
        wrong = client.post(url, json=body, headers={"Authorization": "Bearer nope"})
        right = client.post(url, json=body, headers={"Authorization": f"Bearer {secret}"})
    assert missing.status_code == wrong.status_code == 401
    assert wrong.json()["error"]["code"] == "invalid_api_key"
    assert right.status_code == 200
    calls = server.calls
    assert [c.authorized for c in calls] == [False, False, True]
    assert [c.status for c in calls] == [401, 401, 200]
    for call in calls:
        assert "authorization" not in call.headers
        assert all(secret not in value and "nope" not in value for value in call.headers.values())
    assert secret not in repr(calls)


# -- concurrency ----------------------------------------------------------------------------


def test_concurrent_requests_overlap() -> None:
    async def run(server: FakeLLM) -> float:
        limits = httpx.Limits(max_connections=40, max_keepalive_connections=40)
        async with httpx.AsyncClient(limits=limits, timeout=10.0) as client:
            body = {"model": "m", "messages": MESSAGES}
            started = time.perf_counter()
            responses = await asyncio.gather(
                *(client.post(f"{server.base_url}/chat/completions", json=body) for _ in range(40))
            )
            elapsed = time.perf_counter() - started
        assert all(r.status_code == 200 for r in responses)
        return elapsed

    with FakeLLM(latency_s=0.2) as server:
        elapsed = asyncio.run(run(server))
    assert server.call_count == 40
    assert sorted(c.index for c in server.calls) == list(range(40))
    assert elapsed < 2.0  # serial would be 8 s


# -- the real client path -------------------------------------------------------------------


def test_openai_client_and_ragas_discrete_metric() -> None:
    import openai
    from ragas.llms import llm_factory
    from ragas.metrics import DiscreteMetric

    async def run(server: FakeLLM) -> tuple[object, object]:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        llm = llm_factory("fake-judge", provider="openai", client=client)
        metric = DiscreteMetric(
            name="j", allowed_values=["pass", "fail"], prompt="Judge: {response}"
        )
        result = await metric.ascore(llm=llm, response="hi")
        completion = await client.chat.completions.create(
            model="fake-judge", messages=[{"role": "user", "content": "x"}]
        )
        await client.close()
        return result, completion

    with FakeLLM(default=Reply("fail", "cites the wrong policy")) as server:
        result, completion = asyncio.run(run(server))
    assert result.value == "fail"  # type: ignore[attr-defined]
    assert result.reason == "cites the wrong policy"  # type: ignore[attr-defined]
    body = server.calls[0].body
    assert body is not None and body["response_format"] == {"type": "json_object"}
    assert body["model"] == "fake-judge"
    assert "hi" in body["messages"][-1]["content"]
    assert (
        completion.usage.total_tokens
        == completion.usage.prompt_tokens + completion.usage.completion_tokens
    )  # type: ignore[attr-defined]
    assert server.calls[0].headers["user-agent"].startswith("AsyncOpenAI")


def test_openai_client_errors_retries_and_timeouts() -> None:
    import openai

    async def run(server: FakeLLM) -> None:
        messages = [{"role": "user", "content": "x"}]
        retrying = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=1)
        started = time.perf_counter()
        ok = await retrying.chat.completions.create(
            model="m", messages=messages
        )  # 429, then success
        assert time.perf_counter() - started < 0.4  # the 0.05 s Retry-After was honoured
        assert ok.choices[0].message.content is not None
        strict = openai.AsyncOpenAI(
            base_url=server.base_url, api_key="k", max_retries=0, timeout=0.2
        )
        with pytest.raises(openai.InternalServerError):
            await strict.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "boom"}]
            )
        with pytest.raises(openai.APITimeoutError):
            await strict.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hang"}]
            )
        refused = await strict.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "refuse"}]
        )
        assert refused.choices[0].message.refusal == "I'm sorry, I can't help with that."
        await retrying.close()
        await strict.close()

    rules = [
        Rule(Reply(fault="http_429"), times=1),
        Rule(Reply(fault="http_500"), contains="boom"),
        Rule(Reply(fault="hang"), contains="hang"),
        Rule(Reply(fault="refusal"), contains="refuse"),
    ]
    with FakeLLM(rules=rules, retry_after_s=0.05) as server:
        asyncio.run(run(server))
    assert [c.status for c in server.calls] == [429, 200, 500, 0, 200]


# -- CLI ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["--fault-rate", "bogus=0.1"],
        ["--fault-rate", "hang=1.5"],
        ["--fault-rate", "hang"],
        ["--fault-rate", "hang=0.6", "--fault-rate", "http_500=0.6"],
        ["--responder", "no_such_module_xyz:reply"],
        ["--responder", "json:no_such_attr"],
        ["--require-api-key-env", "WORKBENCH_TEST_UNSET_KEY_VAR"],
    ],
)
def test_cli_rejects_bad_input(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORKBENCH_TEST_UNSET_KEY_VAR", raising=False)
    result = CliRunner().invoke(
        fake_llm, [*args, "--port", "0", "--", sys.executable, "-c", "pass"]
    )
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "Error" in result.output


CHILD = """
import json, os, sys, urllib.request
base = os.environ["FAKE_LLM_BASE_URL"]
models = json.load(urllib.request.urlopen(base + "/models"))
assert [m["id"] for m in models["data"]] == ["fake-judge"], models
request = urllib.request.Request(
    base + "/chat/completions",
    data=json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode(),
    headers={
        "Content-Type": "application/json",
        "Authorization": "Bearer " + os.environ["FAKE_KEY"],
    },
)
content = json.load(urllib.request.urlopen(request))["choices"][0]["message"]["content"]
sys.exit(int(sys.argv[1]) if json.loads(content)["value"] == "fail" else 99)
"""


@pytest.mark.parametrize("code", [0, 3])
def test_cli_runs_a_command_and_propagates_its_exit_code(
    code: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_KEY", "cli-secret")
    args = [
        "--port",
        "0",
        "--default-value",
        "fail",
        "--require-api-key-env",
        "FAKE_KEY",
        "--latency",
        "0.01",
    ]
    result = CliRunner().invoke(fake_llm, [*args, "--", sys.executable, "-c", CHILD, str(code)])
    assert result.exit_code == code, result.output
