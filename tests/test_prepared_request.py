"""The request prepared once per candidate (:mod:`workbench.judges._prepared`).

A ragas-llm run builds instructor's response model and its JSON-schema system message once,
not once per call, and what it sends, records, counts and prices is the same as Ragas' own
``ascore`` path.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_case
from pydantic import BaseModel
from test_llm_runs import GOLD_MARKER, KEY_ENV, SECRET, rows, run, write_spec

from workbench.judges import _prepared
from workbench.testing import FakeLLM, Reply, Rule


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


def _gold(make_dataset, n: int) -> Path:
    cases = [
        make_case(
            f"k{i}",
            "fail" if i % 3 == 0 else "pass",
            response=f"Answer number {i}: refund in 5 business days.",
            adjudication={"label": "pass", "reason": GOLD_MARKER, "adjudicator": GOLD_MARKER},
        )
        for i in range(n)
    ]
    return make_dataset(cases)


class _Counts:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.prepare = self.schema = self.stock_ascore = 0
        real_prepare = _prepared._prepare
        real_schema = BaseModel.model_json_schema.__func__  # type: ignore[attr-defined]

        async def prepare(*args, **kwargs):  # type: ignore[no-untyped-def]
            self.prepare += 1
            return await real_prepare(*args, **kwargs)

        def schema(cls, *args, **kwargs):  # type: ignore[no-untyped-def]
            self.schema += 1
            return real_schema(cls, *args, **kwargs)

        from ragas.metrics.discrete import DiscreteMetric

        real_ascore = DiscreteMetric.ascore

        async def ascore(metric, **kwargs):  # type: ignore[no-untyped-def]
            self.stock_ascore += 1
            return await real_ascore(metric, **kwargs)

        monkeypatch.setattr(_prepared, "_prepare", prepare)
        monkeypatch.setattr(BaseModel, "model_json_schema", classmethod(schema))
        monkeypatch.setattr(DiscreteMetric, "ascore", ascore)


@pytest.mark.parametrize("concurrency", [1, 4])
def test_prompt_schema_and_response_model_are_built_once_per_candidate(
    make_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, concurrency: int
) -> None:
    counts = _Counts(monkeypatch)
    small, large = _gold(make_dataset, 2), _gold(make_dataset, 12)
    with FakeLLM(default=Reply(value="pass", reason="all concepts present")) as server:
        spec = write_spec(tmp_path, server.base_url)
        first = run(spec, small, tmp_path / "small", concurrency=concurrency, cache_dir=False)
        per_candidate = (counts.prepare, counts.schema)
        second = run(spec, large, tmp_path / "large", concurrency=concurrency, cache_dir=False)
        calls = len(server.calls)
    assert first.calls == 2 and second.calls == 12 and calls == 14
    # Each candidate (load_candidate builds a new judge per run) is prepared once, whatever its
    # size.
    assert per_candidate[0] == 1 and counts.prepare == 2
    # The JSON schema is rendered only while preparing (the stock request it is checked
    # against, and instructor's response model): never once per call.
    assert 1 <= per_candidate[1] <= 4 and counts.schema == 2 * per_candidate[1]
    assert counts.stock_ascore == 0  # every call went through the prepared request


def _records(
    make_dataset, tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch, *, stock: bool
) -> tuple[list[dict], list[dict]]:
    if stock:
        monkeypatch.setenv(_prepared.SWITCH, "0")  # the switch: every call through Ragas' ascore
    rules = [
        Rule(contains="Answer number 0", reply=Reply(value="fail", reason="missing review step")),
        Rule(contains="Answer number 2", reply=Reply(fault="malformed_json")),
        Rule(contains="Answer number 4", reply=Reply(value="maybe", reason="unsure")),
    ]
    with FakeLLM(
        rules=rules,
        default=Reply(value="pass", reason="all concepts present"),
        require_api_key=SECRET,
    ) as server:
        run(
            write_spec(tmp_path / name, server.base_url),
            _gold(make_dataset, 6),
            tmp_path / name / "out",
            cache_dir=False,
        )
        bodies = [c.body for c in server.calls]
    monkeypatch.undo()
    monkeypatch.setenv(KEY_ENV, SECRET)
    keep = (
        "case_id",
        "attempt",
        "value",
        "reason",
        "error",
        "rendered_request",
        "request_sha256",
        "tokens_in",
        "tokens_out",
        "cost_usd",
    )
    return sorted(
        ({k: r.get(k) for k in keep} for r in rows(tmp_path / name / "out")),
        key=lambda r: (r["case_id"], r["attempt"]),
    ), sorted(bodies, key=json.dumps)


def test_prepared_path_sends_and_records_what_the_stock_ragas_path_does(
    make_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, fast_bodies = _records(make_dataset, tmp_path, "fast", monkeypatch, stock=False)
    stock, stock_bodies = _records(make_dataset, tmp_path, "stock", monkeypatch, stock=True)
    assert fast_bodies == stock_bodies and len(fast_bodies) >= 6
    assert all(
        GOLD_MARKER not in json.dumps(b) for b in fast_bodies
    )  # labels never reach the judge
    assert fast == stock
    kinds = {r["error"]["kind"] for r in fast if r["error"]}
    assert {"unparseable", "invalid_label"} <= kinds  # the failure paths were exercised


def test_a_prepared_request_that_differs_on_the_wire_falls_back_to_ragas(
    make_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = _Counts(monkeypatch)
    real_body = _prepared.PreparedRequest.body

    def drifted(self, prompt):  # type: ignore[no-untyped-def]
        return {**real_body(self, prompt), "seed": 1}  # what another library version might add

    monkeypatch.setattr(_prepared.PreparedRequest, "body", drifted)
    with FakeLLM(default=Reply(value="pass", reason="all concepts present")) as server:
        summary = run(
            write_spec(tmp_path, server.base_url),
            _gold(make_dataset, 3),
            tmp_path / "out",
            cache_dir=False,
        )
        bodies = [c.body for c in server.calls]
    assert summary.verdicts == 3 and counts.stock_ascore == 3
    assert all("seed" not in b for b in bodies)


def test_the_switch_sends_every_call_through_ragas_ascore(
    make_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = _Counts(monkeypatch)
    monkeypatch.setenv(_prepared.SWITCH, "0")
    with FakeLLM(default=Reply(value="pass", reason="all concepts present")) as server:
        summary = run(
            write_spec(tmp_path, server.base_url),
            _gold(make_dataset, 3),
            tmp_path / "out",
            cache_dir=False,
        )
    assert summary.verdicts == 3 and counts.stock_ascore == 3 and counts.prepare == 0
