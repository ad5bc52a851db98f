"""The direct post of the prepared request (``workbench/judges/_prepared.py``, issue 31).

With ``WORKBENCH_PREPARED_REQUESTS`` on, a call's body goes to the judge's HTTP transport with the
stock request's headers, past the OpenAI SDK's request machinery and httpx's client. These tests
check that it is taken (and not with the switch off, nor for a client that would send other
headers), and that a run records exactly what the SDK's ``post`` records, field by field, on the
same scripted servers: answers, HTTP errors with and without Retry-After, timeouts, resets,
garbage and lying bodies, redirects, cookies, gzip; and that the API key reaches no file.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from conftest import make_case
from test_judge_transport import ANSWER, serve_handler  # ANSWER: a fail verdict, 41 + 7 tokens
from test_llm_runs import KEY_ENV, SECRET, rows, run, write_spec

from workbench.judges import _prepared
from workbench.testing import FakeLLM, Reply, Rule

TIMEOUT_S, HANG_S = 3.0, 6.0
"""The candidate's call timeout and the ``hang`` fault's wait: a timeout the answered scenarios
never reach on a loaded CI machine (one timed-out answer in one mode would make the modes'
records differ), and a hang well past it."""
VOLATILE = {"latency_s", "started_at", "finished_at", "run_id", "created_at"}
"""Record fields that differ between two runs of the same calls (timings and run identity)."""

FAKE_SCENARIOS: list[tuple[str, Reply]] = [
    ("ok", Reply(value="pass", reason="all concepts present")),
    ("fail", Reply(value="fail", reason="misses the review step")),
    ("http-400", Reply(fault="http_400")),
    ("http-429", Reply(fault="http_429")),
    ("http-500", Reply(fault="http_500")),
    ("hang", Reply(fault="hang")),
    ("disconnect", Reply(fault="disconnect")),
    ("malformed", Reply(fault="malformed_json")),
    ("refusal", Reply(fault="refusal")),
    ("off-label", Reply(value="maybe", reason="unsure")),
    ("no-reason", Reply(value="pass", reason="")),
    ("prose", Reply(content='Sure! ```json\n{"reason": "fine", "value": "pass"}\n```')),
    ("http-403", Reply(fault="http_403")),
    ("http-401", Reply(fault="http_401")),
    ("http-401-echo", Reply(fault="http_401_echo")),
    ("after-breaker", Reply(value="pass", reason="never asked")),
]
"""Scenario marker (in the case's response) -> the fake model's reply, in case order. The last
three 401/403s open the circuit breaker (``circuit_breaker_after: 3``)."""


def _gold(make_dataset, markers: list[str]) -> Path:
    return make_dataset(
        [
            make_case(f"c{i:02d}", "pass", response=f"Answer for scenario <{marker}>.")
            for i, marker in enumerate(markers)
        ]
    )


def _counts(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Calls of the direct post and of the SDK's ``post`` (in memory while preparing included)."""
    counts = {"direct": 0, "sdk": 0}
    real_direct, real_sdk = _prepared.DirectPost.post, _prepared._sdk_post

    async def direct(self: Any, client: Any, body: dict[str, Any]) -> Any:
        counts["direct"] += 1
        return await real_direct(self, client, body)

    async def sdk(client: Any, url: Any, body: dict[str, Any]) -> Any:
        counts["sdk"] += 1
        return await real_sdk(client, url, body)

    monkeypatch.setattr(_prepared.DirectPost, "post", direct)
    monkeypatch.setattr(_prepared, "_sdk_post", sdk)
    return counts


def _set_mode(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    if mode == "sdk":  # the prepared request posted with the SDK, as before the direct post
        monkeypatch.setattr(_prepared.DirectPost, "serves", lambda self, client: False)
    elif mode == "stock":  # the switch off: Ragas' ascore
        monkeypatch.setenv(_prepared.SWITCH, "0")


def _files_hold(out: Path, secret: str) -> list[str]:
    return [str(p) for p in out.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def _run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    url: str,
    gold: Path,
    **endpoint: Any,
) -> tuple[list[dict], dict, dict[str, int]]:
    """``(records without volatile fields, summary, counts)`` of a run at concurrency 1."""
    with monkeypatch.context() as patch:
        _set_mode(patch, mode)
        counts = _counts(patch)
        spec = write_spec(tmp_path / mode, url, endpoint={"max_retries": 1, **endpoint})
        summary = run(spec, gold, tmp_path / mode / "out", concurrency=1, cache_dir=False)
    out = tmp_path / mode / "out"
    assert _files_hold(out, SECRET) == []  # the key reaches no file of the run
    records = rows(out)
    assert records and all(VOLATILE & set(r) for r in records)  # the fields left out exist
    kept = [{k: v for k, v in r.items() if k not in VOLATILE} for r in records]
    return (
        sorted(kept, key=lambda r: (r["case_id"], r["attempt"])),
        json.loads(  # the run's own directory written <out>
            json.dumps(
                {k: v for k, v in summary.model_dump(mode="json").items() if k not in VOLATILE}
            ).replace(str(out), "<out>")
        ),
        counts,
    )


def _verdicts(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    url: str,
    markers: list[str],
    **endpoint: Any,
) -> dict[str, dict]:
    """Each scenario's verdict from ``judge.evaluate`` (what the engine reads to retry, back off
    and open the breaker), without its latency."""
    import asyncio

    from workbench.judges import JudgeInput, load_candidate

    with monkeypatch.context() as patch:
        _set_mode(patch, mode)
        spec = write_spec(
            tmp_path / f"verdicts-{mode}", url, endpoint={"timeout_s": TIMEOUT_S, **endpoint}
        )
        judge: Any = load_candidate(spec)

        async def go() -> list[Any]:
            judge.prepare(1)
            try:
                return [
                    await judge.evaluate(JudgeInput(user_input="q", response=f"scenario <{m}>"))
                    for m in markers
                ]
            finally:
                await judge.aclose()

        verdicts = asyncio.run(go())
    return {
        m: {k: v for k, v in dataclasses.asdict(verdict).items() if k != "latency_s"}
        for m, verdict in zip(markers, verdicts, strict=True)
    }


def _differences(first: list[dict], second: list[dict]) -> list[tuple[Any, ...]]:
    """``(case, attempt, field, first's value, second's value)`` of every field that differs, and
    the records only one side has."""
    keyed = [{(r["case_id"], r["attempt"]): r for r in side} for side in (first, second)]
    found: list[tuple[Any, ...]] = []
    for key in sorted(keyed[0].keys() | keyed[1].keys()):
        a, b = (side.get(key) for side in keyed)
        if a is None or b is None:
            found.append((*key, "(record)", a is not None, b is not None))
            continue
        found += [
            (*key, f, a.get(f), b.get(f))
            for f in sorted(a.keys() | b.keys())
            if a.get(f) != b.get(f)
        ]
    return found


def _served(calls: list[Any]) -> list[tuple[Any, ...]]:
    """What the server saw of each call: path, headers, body (order kept)."""
    return [(c.path, sorted(c.headers.items()), json.dumps(c.body)) for c in calls]


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries at once: the waits are not under test (Retry-After is still recorded)."""
    from workbench.runs import _engine

    monkeypatch.setattr(_engine, "backoff_s", lambda retry, retry_after_s: 0.0)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)


def test_a_run_posts_directly_and_records_what_the_sdk_and_ragas_paths_record(
    make_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gold = _gold(make_dataset, [m for m, _ in FAKE_SCENARIOS])
    rules = [Rule(contains=f"<{marker}>", reply=reply) for marker, reply in FAKE_SCENARIOS]
    found: dict[str, tuple[list[dict], dict, dict[str, int], list[Any]]] = {}
    with FakeLLM(rules=rules, require_api_key=SECRET, hang_s=HANG_S, retry_after_s=0.05) as server:
        for mode in ("direct", "sdk", "stock"):
            server.reset()
            records, summary, counts = _run(
                tmp_path,
                monkeypatch,
                mode,
                server.base_url,
                gold,
                timeout_s=TIMEOUT_S,
                circuit_breaker_after=3,
            )
            found[mode] = (records, summary, counts, _served(server.calls))
    direct, sdk, stock = found["direct"], found["sdk"], found["stock"]
    served = len(direct[3])
    # the direct post served every call; twice more in memory, checked against the stock request
    assert direct[2] == {"direct": served + 2, "sdk": 2}
    assert sdk[2] == {"direct": 0, "sdk": len(sdk[3]) + 1} and stock[2] == {"direct": 0, "sdk": 0}
    # the same requests, headers included, and the same records and summary, field by field
    assert direct[3] == sdk[3] == stock[3]
    assert _differences(direct[0], sdk[0]) == [] and _differences(sdk[0], stock[0]) == []
    assert direct[0] == sdk[0] == stock[0]
    assert direct[1] == sdk[1] == stock[1]
    kinds = {r["error"]["kind"] for r in direct[0] if r["error"]}
    assert {"rate_limited", "provider_error", "timeout", "unparseable", "refusal"} <= kinds
    assert {"invalid_label", "missing_reason"} <= kinds
    assert "c15" not in {r["case_id"] for r in direct[0]}  # the breaker stopped the run
    assert SECRET not in json.dumps(direct[0]) and "Bearer [REDACTED]" in json.dumps(direct[0])


def test_each_verdict_equals_the_sdk_posts_retry_after_and_endpoint_failure_included(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = [Rule(contains=f"<{marker}>", reply=reply) for marker, reply in FAKE_SCENARIOS]
    markers = [m for m, _ in FAKE_SCENARIOS]
    with FakeLLM(rules=rules, require_api_key=SECRET, hang_s=HANG_S, retry_after_s=0.05) as server:
        url = server.base_url
        direct = _verdicts(tmp_path, monkeypatch, "direct", url, markers)
        sdk = _verdicts(tmp_path, monkeypatch, "sdk", url, markers)
    assert direct == sdk
    assert direct["http-429"]["retry_after_s"] == 0.05 and direct["http-429"]["retryable"]
    failures = {m: v["endpoint_failure"] for m, v in direct.items() if v["endpoint_failure"]}
    assert failures == {
        "http-400": "bad_request",
        "disconnect": "connection",
        "http-403": "auth",
        "http-401": "auth",
        "http-401-echo": "auth",
    }
    assert direct["hang"]["error"].kind == "timeout" and direct["ok"]["value"] == "pass"


def _answer(**changes: Any) -> bytes:
    return json.dumps({**ANSWER, **changes}).encode()


JSON = {"Content-Type": "application/json"}
BARE_SCENARIOS: dict[str, tuple[int, dict[str, str], bytes]] = {
    "ok": (200, {**JSON, "x-request-id": "req-1"}, _answer()),
    "gzip": (200, {**JSON, "Content-Encoding": "gzip"}, gzip.compress(_answer())),
    "set-cookie": (200, {**JSON, "Set-Cookie": "lb=node-7; Path=/"}, _answer()),
    "after-cookie": (200, JSON, _answer()),
    "no-object": (200, JSON, json.dumps({"choices": ANSWER["choices"]}).encode()),
    "odd-finish": (
        200,
        JSON,
        _answer(choices=[{**ANSWER["choices"][0], "finish_reason": "eos"}]),  # type: ignore[dict-item]
    ),
    "lying-shape": (200, JSON, _answer(choices="none", usage={"prompt_tokens": "many"})),
    "lying-content": (
        200,
        JSON,
        _answer(choices=[{"index": 0, "message": {"role": "assistant", "content": 42}}]),
    ),
    "json-array": (200, JSON, b"[1, 2, 3]"),
    "garbage-json": (200, JSON, b"{not json at all"),
    "garbage-text": (200, {"Content-Type": "text/html"}, b"<html>gateway says hi</html>"),
    "text-but-json": (200, {"Content-Type": "text/plain"}, _answer()),
    "empty-200": (200, JSON, b""),
    "created-201": (201, JSON, _answer()),
    "redirect": (302, {"Location": "/v1/elsewhere"}, b""),
    "http-429-date": (
        429,
        {**JSON, "Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"},
        b'{"error": {"message": "slow down"}}',
    ),
    "http-503": (503, {"Retry-After": "0.01"}, b"upstream unavailable"),
    "http-400-context": (
        400,
        JSON,
        b'{"error": {"message": "maximum context length is 10 tokens", "code": "context_length"}}',
    ),
    "http-404-model": (404, JSON, b'{"error": {"message": "model fake-judge does not exist"}}'),
    "http-401-key": (401, JSON, b""),  # the body echoes the presented key (added by the server)
}
"""What the bare server answers for a prompt holding ``<marker>``: status, headers, body."""


@contextmanager
def _bare_server() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A server answering each POST by its scenario marker; yields its base URL and the headers
    of every request (lower-case names, the key's value replaced)."""
    seen: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - stdlib naming
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            headers = {k.lower(): v for k, v in self.headers.items()}
            presented = headers.get("authorization", "")
            seen.append({k: v.replace(SECRET, "<key>") for k, v in headers.items()})
            text = raw.decode("utf-8")
            marker = next((m for m in BARE_SCENARIOS if f"<{m}>" in text), "ok")
            status, extra, body = BARE_SCENARIOS[marker]
            if marker == "http-401-key":
                message = f"Incorrect API key provided: {presented[len('Bearer ') :]}"
                body = json.dumps({"error": {"message": message}}).encode()
            self.send_response(status)
            for name, value in extra.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    with serve_handler(Handler) as url:
        yield url, seen


def test_garbage_lying_and_odd_answers_are_recorded_as_through_the_sdk(
    make_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gold = _gold(make_dataset, list(BARE_SCENARIOS))
    found: dict[str, tuple[list[dict], dict, dict[str, int], list[dict[str, str]]]] = {}
    with _bare_server() as (url, seen):
        for mode in ("direct", "sdk"):
            seen.clear()
            records, summary, counts = _run(tmp_path, monkeypatch, mode, url, gold)
            found[mode] = (records, summary, counts, list(seen))
    direct, sdk = found["direct"], found["sdk"]
    assert _differences(direct[0], sdk[0]) == []
    assert direct[0] == sdk[0] and direct[1] == sdk[1]
    assert direct[3] == sdk[3]  # the same headers on the wire, call by call
    # the cookie set by one answer is sent with the next calls, as httpx's client sends it: those
    # calls go through the SDK (a client holding cookies is not served directly)
    cookie_at = [i for i, h in enumerate(direct[3]) if "cookie" in h]
    assert cookie_at and cookie_at == list(range(cookie_at[0], len(direct[3])))
    assert all(h["cookie"] == "lb=node-7" for h in direct[3] if "cookie" in h)
    assert direct[2]["direct"] == cookie_at[0] + 2 and direct[2]["sdk"] > 2
    by_case = {r["case_id"]: r for r in direct[0] if r["attempt"] == 1}
    markers = list(BARE_SCENARIOS)

    def record(marker: str) -> dict:
        return by_case[f"c{markers.index(marker):02d}"]

    for marker in ("ok", "gzip", "no-object", "odd-finish", "created-201", "text-but-json"):
        assert record(marker)["error"] is None and record(marker)["value"] == "fail", marker
    assert (record("gzip")["tokens_in"], record("gzip")["tokens_out"]) == (41, 7)
    # a usage that lies is no count (the run used to stop on it with a ValueError)
    assert (record("lying-shape")["tokens_in"], record("lying-shape")["tokens_out"]) == (None, None)
    for marker in ("lying-shape", "lying-content", "json-array", "garbage-json", "garbage-text"):
        assert record(marker)["error"] is not None, marker
    assert record("redirect")["error"]["message"].startswith(f"HTTP 302 from {url}")
    assert SECRET not in json.dumps(direct[0])
    assert "[REDACTED]" in json.dumps(record("http-401-key"))
    with _bare_server() as (url, _):
        verdicts = {m: _verdicts(tmp_path, monkeypatch, m, url, markers) for m in ("direct", "sdk")}
    assert verdicts["direct"] == verdicts["sdk"]
    assert verdicts["direct"]["http-503"]["retry_after_s"] == 0.01
    assert verdicts["direct"]["http-429-date"]["retry_after_s"] == 0.0  # a date in the past
    assert verdicts["direct"]["http-400-context"]["endpoint_failure"] is None
    assert verdicts["direct"]["http-404-model"]["endpoint_failure"] == "not_found"
    assert verdicts["direct"]["http-401-key"]["endpoint_failure"] == "auth"


def test_the_switch_off_never_posts_directly(
    make_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gold = _gold(make_dataset, ["ok", "fail"])
    rules = [Rule(contains=f"<{m}>", reply=r) for m, r in FAKE_SCENARIOS[:2]]
    with FakeLLM(rules=rules) as server:
        records, _, counts = _run(tmp_path, monkeypatch, "stock", server.base_url, gold)
    assert counts == {"direct": 0, "sdk": 0} and [r["value"] for r in records] == ["pass", "fail"]


def test_the_direct_post_is_not_used_when_the_key_changed_since_preparing(
    make_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from workbench.judges import JudgeInput, load_candidate

    with FakeLLM(default=Reply(value="pass", reason="fine"), require_api_key="sk-second-key") as s:
        judge: Any = load_candidate(write_spec(tmp_path, s.base_url))
        counts = _counts(monkeypatch)

        async def go() -> tuple[Any, Any]:
            judge.prepare(1)
            first = await judge.evaluate(JudgeInput(user_input="q", response="r"))
            await judge.aclose()  # a new event loop's clients read the key again
            monkeypatch.setenv(KEY_ENV, "sk-second-key")
            second = await judge.evaluate(JudgeInput(user_input="q", response="r"))
            await judge.aclose()
            return first, second

        first, second = asyncio.run(go())
        auth = [c.authorized for c in s.calls]
    assert first.error is not None and first.error.kind == "provider_error"  # the old key: 401
    assert second.error is None and second.value == "pass"  # the new key, sent by the SDK
    assert auth == [False, True] and counts == {"direct": 3, "sdk": 3}


def test_an_azure_endpoint_is_posted_directly_with_its_path_version_and_key_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = _counts(monkeypatch)
    azure = {"provider": "azure", "deployment": "judge-dep", "api_version": "2024-10-21"}
    with FakeLLM(
        emulate="azure",
        azure_deployments=["judge-dep"],
        azure_api_versions=["2024-10-21"],
        require_api_key=SECRET,
        rules=[Rule(contains=f"<{m}>", reply=r) for m, r in FAKE_SCENARIOS[:3]],
    ) as server:
        root = server.base_url.removesuffix("/v1")
        markers = ["ok", "fail", "http-400"]
        direct = _verdicts(tmp_path, monkeypatch, "direct", root, markers, **azure)
        served_direct = counts["direct"]
        sdk = _verdicts(tmp_path, monkeypatch, "sdk", root, markers, **azure)
        calls = server.calls
    assert direct == sdk and direct["ok"]["value"] == "pass" and direct["fail"]["value"] == "fail"
    assert served_direct == len(markers) + 2 and counts["direct"] == served_direct
    assert len(calls) == 2 * len(markers)
    assert {c.path for c in calls} == {"/openai/deployments/judge-dep/chat/completions"}
    assert all(c.query == {"api-version": "2024-10-21"} for c in calls)
    # the SDK's own auth headers (api-key, and its Bearer beside it) in both modes
    assert {c.auth_headers for c in calls} == {("api-key", "authorization")}
    assert all(c.authorized for c in calls)
