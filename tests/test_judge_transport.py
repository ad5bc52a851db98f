"""The judges' HTTP transport (``workbench/judges/_transport.py``): httpx's client on aiohttp's
pool, against local servers on 127.0.0.1 (the scripted FakeLLM, and a bare one for what FakeLLM
does not send: a gzip-encoded answer)."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from test_llm_runs import KEY_ENV, write_spec

from workbench.judges import JudgeInput, Verdict, load_candidate
from workbench.judges._transport import AiohttpTransport
from workbench.testing import FakeLLM, Reply

CASE = JudgeInput(user_input="Can I get a refund?", response="Yes, within 30 days.")


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-transport-test")


def _evaluate(spec: Path, calls: int = 1) -> tuple[list[Verdict], list[Any]]:
    """``calls`` concurrent evaluations of CASE, and the judge's HTTP transports."""
    judge: Any = load_candidate(spec)

    async def go() -> tuple[list[Verdict], list[Any]]:
        judge.prepare(calls)
        try:
            verdicts = await asyncio.gather(*(judge.evaluate(CASE) for _ in range(calls)))
            transports = [llm.client.client._client._transport for llm in judge._client_loop[1]]
            return list(verdicts), transports
        finally:
            await judge.aclose()

    return asyncio.run(go())


def test_calls_go_through_aiohttp_with_exactly_the_headers_httpx_built(tmp_path: Path) -> None:
    with FakeLLM(default=Reply("pass", reason="covers the refund window")) as server:
        verdicts, transports = _evaluate(write_spec(tmp_path, server.base_url), calls=12)
        seen = server.calls
    assert transports and all(isinstance(t, AiohttpTransport) for t in transports)
    assert len(seen) == 12 and all(v.error is None and v.value == "pass" for v in verdicts)
    for call in seen:
        # the OpenAI client's own headers, none of aiohttp's defaults in their place
        assert call.headers["user-agent"].startswith("AsyncOpenAI/Python")
        assert "aiohttp" not in json.dumps(call.headers).lower()
        assert call.headers["x-stainless-retry-count"] == "0"
        assert call.headers["content-type"] == "application/json"
        assert call.auth_headers == ("authorization",)
    # the wire capture (event hooks on the httpx client) still sees request and answer
    first = verdicts[0]
    assert first.rendered_request is not None
    assert first.rendered_request["model"] == "fake-judge"
    assert CASE.response in json.dumps(first.rendered_request)
    assert first.tokens_in and first.tokens_out
    assert first.raw_response is not None and "covers the refund window" in first.raw_response


ANSWER = {
    "id": "chatcmpl-gzip",
    "object": "chat.completion",
    "created": 1,
    "model": "fake-judge",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {
                "role": "assistant",
                "content": json.dumps({"reason": "zipped and complete", "value": "fail"}),
            },
        }
    ],
    "usage": {"prompt_tokens": 41, "completion_tokens": 7, "total_tokens": 48},
}


@contextmanager
def _gzip_server(status: int = 200, headers: dict[str, str] | None = None) -> Iterator[str]:
    """A server answering every POST with ANSWER, gzip-encoded; yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - stdlib naming
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            body = gzip.compress(json.dumps(ANSWER).encode())
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    with serve_handler(Handler) as url:
        yield url


@contextmanager
def serve_handler(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` serving on 127.0.0.1 (an OS-picked port) in a thread; yields its base URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_gzip_encoded_answer_is_decoded_once_and_recorded(tmp_path: Path) -> None:
    with _gzip_server() as url:
        (verdict,), _ = _evaluate(write_spec(tmp_path, url))
    assert verdict.error is None, verdict.error
    assert verdict.value == "fail" and verdict.reason == "zipped and complete"
    assert (verdict.tokens_in, verdict.tokens_out) == (41, 7)
    assert verdict.raw_response == ANSWER["choices"][0]["message"]["content"]


def test_a_status_error_keeps_its_status_retry_after_and_classification(tmp_path: Path) -> None:
    with _gzip_server(status=503, headers={"Retry-After": "7"}) as url:
        (verdict,), _ = _evaluate(write_spec(tmp_path, url))
    assert verdict.error is not None and verdict.error.kind == "provider_error"
    assert verdict.error.message.startswith(f"HTTP 503 from {url}")
    assert verdict.retryable and verdict.retry_after_s == 7.0


def test_a_refused_connection_names_the_socket_error(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"  # nothing listens: the port was just released
    (verdict,), _ = _evaluate(write_spec(tmp_path, url))
    assert verdict.error is not None and verdict.error.kind == "provider_error"
    assert verdict.error.message.startswith(f"connection to {url} failed: ConnectionRefusedError")
    assert verdict.retryable and verdict.endpoint_failure == "connection"


def test_a_hanging_endpoint_is_a_timeout_after_the_specs_timeout(tmp_path: Path) -> None:
    with FakeLLM(default=Reply(fault="hang"), hang_s=5.0) as server:
        url = server.base_url
        (verdict,), _ = _evaluate(write_spec(tmp_path, url, endpoint={"timeout_s": 0.5}))
    assert verdict.error is not None and verdict.error.kind == "timeout"
    assert verdict.error.message == f"no response from {url} within 0.5 s"
    assert verdict.retryable
