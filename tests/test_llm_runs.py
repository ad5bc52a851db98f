"""The ragas-llm kind through Ragas and the run engine, against a real local HTTP server.

No test here reaches the internet: every call goes to ``workbench.testing.FakeLLM`` on
127.0.0.1, which speaks the chat-completions protocol the way Ragas uses it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import _forked_cli
import pytest
import yaml
from conftest import make_case

from workbench.errors import WorkbenchError
from workbench.gold import load_dataset
from workbench.judges import load_candidate
from workbench.results import read_results
from workbench.runs import RunOptions, run_candidate_sync
from workbench.testing import FakeLLM, Reply, Rule

ROOT = Path(__file__).resolve().parents[1]
KEY_ENV = "WB_TEST_JUDGE_KEY"
SECRET = "sk-test-0b5e11ac5a7d4e0c9d3f-NEVER-WRITE-ME"
PROMPT = (
    "Notes:\n{grading_notes}\n\nQuestion: {user_input}\n\nResponse:\n{response}\n\nAnswer pass or"
    " fail."
)
GOLD_MARKER = "ADJUDICATION-ONLY-6d1f"


def write_spec(directory: Path, base_url: str, **changes: object) -> Path:
    spec: dict[str, object] = {
        "name": "llm",
        "version": "1",
        "kind": "ragas-llm",
        "labels": ["pass", "fail"],
        "model": "fake-judge",
        "prompt": PROMPT,
        "endpoint": {
            "base_url": base_url,
            "api_key_env": KEY_ENV,
            "timeout_s": 2,
            "max_retries": 2,
        },
        "params": {"temperature": 0, "max_tokens": 100},
        "pricing": {"input_per_million_usd": 1000.0, "output_per_million_usd": 2000.0},
    }
    for key, value in changes.items():
        spec[key] = (
            {**spec[key], **value}
            if isinstance(value, dict) and isinstance(spec.get(key), dict)
            else value
        )  # type: ignore[dict-item]
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{spec['name']}@{spec['version']}.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def patient_spec(directory: Path, base_url: str, **changes: object) -> Path:
    """:func:`write_spec` with a 60 s call timeout, for runs whose calls share 2 CPUs with other
    processes (Ray's, CI's 4 test workers): at 2 s, a call starved past the timeout is retried,
    and a run capped at 3 case x repeat pairs made 4 calls (CI, 2026-12-07)."""
    endpoint = changes.pop("endpoint", {})
    assert isinstance(endpoint, dict)
    return write_spec(directory, base_url, endpoint={"timeout_s": 60, **endpoint}, **changes)


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


@pytest.fixture
def gold(make_dataset) -> Path:
    cases = [
        make_case(
            f"k{i}",
            "fail" if i % 3 == 0 else "pass",
            response=f"Answer number {i}: refund in 5 business days.",
            adjudication={
                "label": "fail" if i % 3 == 0 else "pass",
                "reason": GOLD_MARKER,
                "adjudicator": GOLD_MARKER,
            },
        )
        for i in range(6)
    ]
    return make_dataset(cases)


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
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_full_ragas_llm_path_records_wire_request_tokens_and_cost(
    gold: Path, tmp_path: Path
) -> None:
    rules = [
        Rule(contains="Answer number 0", reply=Reply(value="fail", reason="missing review step"))
    ]
    with FakeLLM(
        rules=rules,
        default=Reply(value="pass", reason="all concepts present"),
        require_api_key=SECRET,
    ) as server:
        summary = run(write_spec(tmp_path, server.base_url), gold, tmp_path / "out")
        calls = server.calls
    assert summary.status == "complete" and summary.verdicts == 6 and summary.calls == 6
    assert all(c.authorized for c in calls)
    by_case = {r["case_id"]: r for r in rows(tmp_path / "out")}
    assert by_case["k0"]["value"] == "fail" and by_case["k0"]["reason"] == "missing review step"
    assert {by_case[f"k{i}"]["value"] for i in range(1, 6)} == {"pass"}
    for call in calls:
        body = call.body
        assert body["response_format"] == {"type": "json_object"}  # Ragas' JSON mode
        assert GOLD_MARKER not in json.dumps(body)  # labels never reach the judge
        record = next(
            r for r in by_case.values() if r["rendered_request"]["messages"] == body["messages"]
        )
        prompt = "\n\n".join(m["content"] for m in body["messages"])
        content = json.dumps({"reason": call.reply.reason, "value": call.reply.value})
        tokens_in, tokens_out = (
            max(1, math.ceil(len(prompt) / 4)),
            max(1, math.ceil(len(content) / 4)),
        )
        assert (record["tokens_in"], record["tokens_out"]) == (tokens_in, tokens_out)
        assert record["cost_usd"] == pytest.approx((tokens_in * 1000.0 + tokens_out * 2000.0) / 1e6)
    lines = read_results(tmp_path / "out" / "results.jsonl", verify_requests=True)
    assert len(lines) == 6


@pytest.mark.parametrize(
    ("reply", "kind", "retryable", "attempts"),
    [
        (Reply(fault="http_500"), "provider_error", True, 3),
        (Reply(fault="http_429"), "rate_limited", True, 3),
        (Reply(fault="http_400"), "provider_error", False, 1),
        (
            Reply(fault="malformed_json"),
            "unparseable",
            True,
            3,
        ),  # unparseable answers are retried, every attempt recorded
        (Reply(fault="refusal"), "refusal", False, 1),
        (Reply(value="maybe", reason="unsure"), "invalid_label", False, 1),
        (Reply(fault="hang"), "timeout", True, 3),
    ],
    ids=lambda v: (
        getattr(v, "fault", None) or getattr(v, "value", v) if isinstance(v, Reply) else str(v)
    ),
)
def test_faults_become_evaluator_errors_never_verdicts(
    make_dataset, tmp_path: Path, reply: Reply, kind: str, retryable: bool, attempts: int
) -> None:
    gold = make_dataset([make_case("only", "pass")])
    with FakeLLM(default=reply, retry_after_s=0.01, hang_s=5.0) as server:
        spec = write_spec(tmp_path, server.base_url, endpoint={"timeout_s": 0.5})
        summary = run(spec, gold, tmp_path / "out")
        assert server.call_count == attempts  # no hidden retries below the engine
    records = rows(tmp_path / "out")
    assert [r["attempt"] for r in records] == list(range(1, attempts + 1))  # every attempt recorded
    assert all(
        r["value"] is None and r["error"]["kind"] == kind and r["error"]["retryable"] is retryable
        for r in records
    )
    assert summary.verdicts == 0 and summary.errors == 1 and summary.errors_by_kind == {kind: 1}
    assert (
        summary.status == "complete"
    )  # a final error is a result; alignment counts it as an error


def test_retry_after_is_honoured_then_the_verdict_counts(make_dataset, tmp_path: Path) -> None:
    gold = make_dataset([make_case("only", "pass")])
    rules = [Rule(reply=Reply(fault="http_429"), times=1)]
    with FakeLLM(rules=rules, default=Reply(value="pass"), retry_after_s=0.6) as server:
        run(write_spec(tmp_path, server.base_url), gold, tmp_path / "out")
        calls = server.calls
    records = rows(tmp_path / "out")
    assert [(r["attempt"], r["value"], (r["error"] or {}).get("kind")) for r in records] == [
        (1, None, "rate_limited"),
        (2, "pass", None),
    ]
    first = records[0]["started_at"]
    second = records[1]["started_at"]
    from datetime import datetime

    gap = (datetime.fromisoformat(second) - datetime.fromisoformat(first)).total_seconds()
    assert gap >= 0.6  # waited at least Retry-After
    assert len(calls) == 2


def test_budget_stops_new_calls_and_lists_unrun_cases(gold: Path, tmp_path: Path) -> None:
    with FakeLLM(default=Reply(value="pass")) as server:
        spec = write_spec(tmp_path, server.base_url)
        judge = load_candidate(spec)
        from workbench.judges import JudgeInput

        estimate = judge.estimate_cost(
            JudgeInput.from_case(load_dataset(gold).partition("development")[0])
        )
        budget = estimate * 2.5  # room for two calls at the conservative estimate
        summary = run(spec, gold, tmp_path / "out", budget_usd=budget, concurrency=1)
        assert summary.status == "incomplete" and summary.stop_reason == "budget_exhausted"
        assert summary.cost_usd <= budget and summary.calls == server.call_count
        assert len(summary.unrun) == 6 - summary.verdicts and summary.verdicts >= 2
        assert sorted(summary.unrun) == sorted(
            f"k{i}#0"
            for i in range(6)
            if f"k{i}" not in {r["case_id"] for r in rows(tmp_path / "out")}
        )
        calls_before = server.call_count
        resumed = run(spec, gold, tmp_path / "out", budget_usd=budget * 10, concurrency=1)
        assert resumed.status == "complete" and resumed.verdicts == 6
        assert server.call_count - calls_before == len(
            summary.unrun
        )  # settled cases are not called again
    assert len({(r["case_id"], r["repeat"], r["attempt"]) for r in rows(tmp_path / "out")}) == len(
        rows(tmp_path / "out")
    )


def test_max_cases_stops_scheduling(gold: Path, tmp_path: Path) -> None:
    with FakeLLM(default=Reply(value="pass")) as server:
        summary = run(
            write_spec(tmp_path, server.base_url),
            gold,
            tmp_path / "out",
            max_cases=2,
            concurrency=1,
        )
        assert server.call_count == 2
    assert (
        summary.status == "incomplete"
        and summary.stop_reason == "max_cases"
        and len(summary.unrun) == 4
    )


def test_warm_cache_makes_zero_calls_and_a_new_prompt_misses(gold: Path, tmp_path: Path) -> None:
    with FakeLLM(default=Reply(value="pass")) as server:
        spec = write_spec(tmp_path / "specs", server.base_url)
        first = run(spec, gold, tmp_path / "a")
        assert server.call_count == 6
        second = run(spec, gold, tmp_path / "b")
        assert server.call_count == 6 and second.cache_hits == 6 and second.calls == 0
        assert {r["cached_from_run_id"] for r in rows(tmp_path / "b")} == {first.run_id}
        assert all(r["cost_usd"] == 0 for r in rows(tmp_path / "b"))
        again = run(spec, gold, tmp_path / "c", repeats=2)
        assert (
            server.call_count == 12 and again.cache_hits == 6
        )  # repeat 1 is a different cache key
        changed = write_spec(tmp_path / "specs2", server.base_url, prompt=PROMPT + "\nBe strict.")
        run(changed, gold, tmp_path / "d")
        assert server.call_count == 18  # a changed prompt is a new fingerprint: no reuse


def test_errors_are_never_cached(make_dataset, tmp_path: Path) -> None:
    gold = make_dataset([make_case("only", "pass")])
    with FakeLLM(default=Reply(fault="http_400")) as server:
        spec = write_spec(tmp_path / "s", server.base_url)
        run(spec, gold, tmp_path / "a")
        run(spec, gold, tmp_path / "b")
        assert server.call_count == 2


def test_api_key_never_written_anywhere(
    gold: Path, tmp_path: Path, _isolated_verdict_cache: Path
) -> None:
    rules = [
        Rule(reply=Reply(fault="http_500"), times=2),
        Rule(reply=Reply(fault="http_401"), times=1, contains="Answer number 5"),
    ]
    with FakeLLM(
        rules=rules, default=Reply(value="pass"), require_api_key=SECRET, retry_after_s=0.01
    ) as server:
        run(write_spec(tmp_path / "specs", server.base_url), gold, tmp_path / "out")
        assert any(c.authorized for c in server.calls)
    scanned = 0
    for root in (tmp_path, _isolated_verdict_cache):
        for path in root.rglob("*"):
            if path.is_file():
                scanned += 1
                assert SECRET.encode() not in path.read_bytes(), path
    assert scanned >= 5  # spec, manifest, results, run.json, invocations, cache


def test_spec_problems_are_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = write_spec(
        tmp_path / "a",
        "http://127.0.0.1:9/v1",
        prompt="Label was {adjudication}; reply about {response}",
    )
    with pytest.raises(WorkbenchError) as info:
        load_candidate(bad)
    assert "prompt_placeholder" in {p.code for p in info.value.problems}
    no_response = write_spec(tmp_path / "b", "http://127.0.0.1:9/v1", prompt="Judge {user_input}")
    with pytest.raises(WorkbenchError) as info:
        load_candidate(no_response)
    assert "prompt_no_response" in {p.code for p in info.value.problems}
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(WorkbenchError) as info:
        load_candidate(write_spec(tmp_path / "c", "http://127.0.0.1:9/v1"))
    problem = next(p for p in info.value.problems if p.code == "api_key_missing")
    assert KEY_ENV in problem.message and SECRET not in str(info.value)


def test_kill_minus_9_then_rerun_resumes_without_loss_or_repeats(
    make_dataset, tmp_path: Path
) -> None:
    cases = [
        make_case(f"c{i:02d}", "pass", response=f"Unique response {i:02d}.") for i in range(30)
    ]
    gold = make_dataset(cases)
    out = tmp_path / "out"
    with FakeLLM(default=Reply(value="pass"), latency_s=0.15) as server:
        spec = write_spec(tmp_path / "specs", server.base_url)
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
            "3",
            "--no-progress",
            "--no-cache",
        ]
        env = {**os.environ, KEY_ENV: SECRET}
        # processes of their own, forked from this one (tests/_forked_cli.py: no start-up)
        proc = _forked_cli.Popen(command, env=env, stdout=subprocess.DEVNULL)
        results = out / "results.jsonl"
        deadline = time.monotonic() + 240  # a loaded CI machine starts the CLI slowly
        while time.monotonic() < deadline and (
            not results.exists() or results.read_text().count("\n") < 8
        ):
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        before_kill = server.call_count
        done_at_kill = {
            json.loads(line)["case_id"]
            for line in results.read_text().splitlines()
            if line.strip().endswith("}")
        }
        assert 8 <= len(done_at_kill) < 30
        with open(results, "ab") as fh:  # as if the kill had torn the last record
            fh.write(b'{"case_id": "c99", "value": "pa')
        rerun = _forked_cli.run(command, env=env, timeout=120)
        assert rerun.returncode == 0, rerun.stderr
        later_calls = server.calls[before_kill:]
    called_again = {
        c
        for c in done_at_kill
        for call in later_calls
        if f"Unique response {c[1:]}." in json.dumps(call.body)
    }
    assert called_again == set()  # no completed case was called again
    records = [json.loads(line) for line in results.read_text().splitlines()]
    assert sorted(r["case_id"] for r in records) == sorted(
        c["case_id"] for c in cases
    )  # none lost, none duplicated
    assert (out / "results.jsonl.torn").read_bytes().startswith(b'{"case_id": "c99"')
    assert read_results(results, verify_requests=True)


def test_client_shards_share_one_verifying_tls_context_loaded_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every client shard of every judge verifies TLS with the same context, whose CA bundle
    is loaded once per process; SSL_CERT_FILE, read by httpx, gets a context of its own."""
    import ssl

    import certifi

    from workbench.judges import _llm

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    loads: list[object] = []
    real_load = ssl.SSLContext.load_verify_locations

    def counting_load(self: ssl.SSLContext, *args: object, **kwargs: object) -> None:
        loads.append(args or kwargs)
        real_load(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counting_load)

    def shard_contexts(judge: object) -> list[ssl.SSLContext]:
        async def build() -> list[ssl.SSLContext]:
            judge.prepare(64)  # type: ignore[attr-defined]
            judge._llm()  # type: ignore[attr-defined]
            shards = judge._client_loop[1]  # type: ignore[attr-defined]
            return [llm.client.client._client._transport._pool._ssl_context for llm in shards]

        return asyncio.run(build())

    first = load_candidate(write_spec(tmp_path / "a", "https://judge.example/v1"))
    second = load_candidate(write_spec(tmp_path / "b", "https://judge.example/v1"))
    _llm._tls_context.cache_clear()  # as in a new process
    loads.clear()  # building a judge imports langchain-openai, which loads the bundle once
    contexts = shard_contexts(first) + shard_contexts(second)
    assert len(contexts) > 2 and len({id(c) for c in contexts}) == 1
    context = contexts[0]
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.get_ca_certs()  # the bundle is loaded: verification has roots to check against
    assert len(loads) == 1 and certifi.where() in repr(loads[0])

    bundle = tmp_path / "ca.pem"
    bundle.write_bytes(Path(certifi.where()).read_bytes())
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    own = shard_contexts(load_candidate(write_spec(tmp_path / "c", "https://judge.example/v1")))
    assert len({id(c) for c in own}) == 1 and own[0] is not context
    assert len(loads) == 2 and str(bundle) in repr(loads[1])


def _self_signed(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, as PEM files."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


class _TlsFront:
    """TLS in front of a plain local server: a real handshake on 127.0.0.1 (a port the OS picks),
    then the bytes passed both ways. Counts the handshakes that failed."""

    def __init__(self, backend_port: int, cert: Path, key: Path) -> None:
        import socket
        import ssl
        import threading

        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.load_cert_chain(cert, key)
        self._backend_port = backend_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.failed_handshakes = 0
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        import threading

        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: object) -> None:
        import socket
        import ssl
        import threading

        try:
            tls = self._context.wrap_socket(conn, server_side=True)  # type: ignore[arg-type]
        except (ssl.SSLError, OSError):
            self.failed_handshakes += 1
            conn.close()  # type: ignore[attr-defined]
            return
        backend = socket.create_connection(("127.0.0.1", self._backend_port))

        def pipe(src: socket.socket, dst: socket.socket) -> None:
            try:
                while data := src.recv(65536):
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                for s in (src, dst):
                    with contextlib.suppress(OSError):
                        s.shutdown(socket.SHUT_RDWR)

        threading.Thread(target=pipe, args=(backend, tls), daemon=True).start()
        pipe(tls, backend)

    def close(self) -> None:
        self._listener.close()


def test_an_https_endpoint_is_trusted_only_through_the_ca_bundle(
    make_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack on the shared TLS context: an endpoint presenting a certificate no trusted CA
    signed gets no request and gives no verdict, only evaluator errors; trusting that
    certificate through SSL_CERT_FILE (read by httpx) makes the same endpoint answer."""
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    cert, key = _self_signed(tmp_path)
    gold = make_dataset([make_case("only", "pass")])
    with FakeLLM(default=Reply(value="pass")) as server:
        front = _TlsFront(server.port, cert, key)
        try:
            url = f"https://127.0.0.1:{front.port}/v1"
            untrusted = run(write_spec(tmp_path / "a", url), gold, tmp_path / "untrusted")
            assert server.call_count == 0 and front.failed_handshakes >= 1
            records = rows(tmp_path / "untrusted")
            assert records and all(r["value"] is None and r["error"] for r in records)
            assert untrusted.verdicts == 0 and untrusted.errors == 1

            monkeypatch.setenv("SSL_CERT_FILE", str(cert))
            trusted = run(write_spec(tmp_path / "b", url), gold, tmp_path / "trusted")
            assert trusted.verdicts == 1 and server.call_count == 1
            assert [r["value"] for r in rows(tmp_path / "trusted")] == ["pass"]
        finally:
            front.close()
