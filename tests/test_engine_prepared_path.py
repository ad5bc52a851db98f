"""The engine's calls take the prepared request over the judges' aiohttp transport (issue 31).

On 2026-12-07 the engine's CPU per call at concurrency 128 measured 2.4 times the figure of the
day before; one suspect was the sentinel no longer matching, which would send every call through
Ragas' ``ascore`` with nothing but CPU to show it. These tests make that visible: on the fake
server, every call of a run goes through ``PreparedRequest.ascore`` and the aiohttp transport,
none through Ragas' ``ascore``; and the recorded request's redaction and hash are those of
``redact_values`` and ``sha256_json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import make_case
from test_llm_runs import KEY_ENV, SECRET, rows, run, write_spec

from workbench._io import canonical_json, sha256_json
from workbench._redact import REDACTED, redact_values
from workbench.judges import _prepared, _transport
from workbench.runs._engine import _redacted_request
from workbench.testing import FakeLLM, Reply


def _count(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, counts: dict[str, int]) -> None:
    real = getattr(owner, name)
    key = f"{owner.__name__}.{name}"
    counts[key] = 0

    async def counted(*args: Any, **kwargs: Any) -> Any:
        counts[key] += 1
        return await real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)


def test_every_call_of_a_run_takes_the_prepared_request_over_aiohttp(
    make_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragas.metrics.discrete import DiscreteMetric

    monkeypatch.setenv(KEY_ENV, SECRET)
    counts: dict[str, int] = {}
    _count(monkeypatch, _prepared.PreparedRequest, "ascore", counts)
    _count(monkeypatch, DiscreteMetric, "ascore", counts)
    _count(monkeypatch, _transport.AiohttpTransport, "handle_async_request", counts)
    gold = make_dataset(
        [make_case(f"c{i}", "pass", response=f"Answer {i}: a refund.") for i in range(9)]
    )
    with FakeLLM(default=Reply(value="pass", reason="all concepts present")) as server:
        summary = run(write_spec(tmp_path, server.base_url), gold, tmp_path / "out", concurrency=4)
        served = len(server.calls)
    assert summary.calls == served == summary.verdicts > 0
    assert counts == {
        "PreparedRequest.ascore": served + 1,  # and once in memory, checked against the stock
        "DiscreteMetric.ascore": 0,  # the fallback when the sentinel does not match
        "AiohttpTransport.handle_async_request": served,
    }
    recorded = rows(tmp_path / "out")
    assert all(r["rendered_request_sha256"] == sha256_json(r["rendered_request"]) for r in recorded)


@pytest.mark.parametrize(
    "secret",
    [
        "sk-plain-0123456789abcdef",  # JSON writes it as it is
        'sk-"quoted"\\slash-0123',  # JSON escapes its quote and backslash
        "sk-tab\tnew\nline-0123",  # and its control characters
    ],
)
def test_the_recorded_request_is_redacted_and_hashed_as_redact_values_and_sha256_json(
    secret: str,
) -> None:
    sent = {
        "messages": [
            {"role": "system", "content": "grade the answer"},
            {"role": "user", "content": f"the case quotes a key: {secret} (end)"},
        ],
        f"key {secret}": [1, 2.5, None, True],
        "model": "fake-judge",
    }
    redacted, digest = _redacted_request(sent, [secret, "", "abc"])
    expected = redact_values(sent, [secret, "", "abc"])
    assert redacted == expected and secret not in canonical_json(redacted)
    assert REDACTED in redacted["messages"][1]["content"] and f"key {REDACTED}" in redacted
    assert digest == sha256_json(expected)
    clean = json.loads(json.dumps(sent).replace(json.dumps(secret)[1:-1], "no key here"))
    same, clean_digest = _redacted_request(clean, [secret])
    assert same == clean and clean_digest == sha256_json(clean)
    if secret.isprintable() and '"' not in secret:  # found absent in the JSON: not walked
        assert same is clean
