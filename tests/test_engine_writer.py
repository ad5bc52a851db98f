"""Issue 14 §1: the run engine's records are group-committed and the prepared request is sent
straight through httpx, without giving up durability or what is recorded.

- Records of calls that finish together share one write and one fsync (the old engine fsynced
  every record on its own, which capped a run at a few hundred calls per second).
- A record is still durable (fsynced) before the run counts its case done, and a record whose
  caller was cancelled is written all the same.
- The prepared ragas-llm request is sent with the client's httpx client, not rebuilt by the
  OpenAI SDK on every call, and provider failures are recorded exactly as the stock path
  records them.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import make_case, make_result
from test_llm_runs import KEY_ENV, SECRET, rows, run, write_spec

from workbench import _io
from workbench.judges import _prepared
from workbench.results import JudgeResult
from workbench.runs import _engine
from workbench.runs._writer import RecordWriter
from workbench.testing import FakeLLM, Reply, Rule


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


def _gold(make_dataset, n: int) -> Path:  # type: ignore[no-untyped-def]
    return make_dataset(
        [make_case(f"w{i}", "pass", response=f"Answer number {i}: refunds.") for i in range(n)]
    )


class _SlowFsync:
    """``os.fsync`` as seen by the log writer, slowed down (as on a busy disk) and counted per
    file; remembers how many complete lines each results file held when its fsync returned."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, delay_s: float = 0.02) -> None:
        self.calls: dict[str, int] = {}
        self.durable_lines: dict[str, int] = {}
        self.lock = threading.Lock()
        real = os.fsync

        def fsync(fd: int) -> None:
            time.sleep(delay_s)
            real(fd)
            path = os.readlink(f"/proc/self/fd/{fd}")
            with self.lock:
                self.calls[path] = self.calls.get(path, 0) + 1
                if path.endswith("results.jsonl"):
                    with open(path, "rb") as fh:
                        self.durable_lines[path] = fh.read().count(b"\n")

        monkeypatch.setattr(_io.os, "fsync", fsync)

    def results_fsyncs(self) -> int:
        return sum(n for path, n in self.calls.items() if path.endswith("results.jsonl"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to name fsynced files")
def test_records_of_calls_that_finish_together_share_one_fsync(
    make_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fsyncs = _SlowFsync(monkeypatch)
    with FakeLLM(default=Reply(value="pass", reason="all concepts present")) as server:
        summary = run(
            write_spec(tmp_path, server.base_url),
            _gold(make_dataset, 24),
            tmp_path / "out",
            concurrency=8,
            cache_dir=tmp_path / "cache",
        )
    recorded = rows(tmp_path / "out")
    assert summary.verdicts == 24 and len(recorded) == 24
    assert len({r["case_id"] for r in recorded}) == 24
    # One fsync per record before; now calls that finish while a batch is written share one.
    assert 1 <= fsyncs.results_fsyncs() < 24
    cache_fsyncs = sum(n for path, n in fsyncs.calls.items() if "/cache/" in path)
    assert 1 <= cache_fsyncs < 24  # the verdict cache is committed in the same batches
    cache_file = next((tmp_path / "cache").rglob("*.jsonl"))
    assert len(cache_file.read_text().splitlines()) == 24


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to name fsynced files")
def test_a_case_is_counted_done_only_after_its_record_is_fsynced(
    make_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fsyncs = _SlowFsync(monkeypatch)
    results = str((tmp_path / "out" / "results.jsonl").resolve())
    seen: list[tuple[int, int]] = []

    class Bar:
        n = 0

        def update(self, n: int = 1) -> None:
            self.n += n
            seen.append((self.n, fsyncs.durable_lines.get(results, 0)))

        def set_postfix(self, **_: Any) -> None:
            pass

        def close(self) -> None:
            pass

    monkeypatch.setattr(_engine, "_progress", lambda *a, **k: Bar())
    with FakeLLM(default=Reply(value="pass", reason="all concepts present")) as server:
        summary = run(
            write_spec(tmp_path, server.base_url),
            _gold(make_dataset, 16),
            tmp_path / "out",
            concurrency=8,
            cache_dir=False,
        )
    assert summary.verdicts == 16 and len(seen) == 16
    # Every case reported done had its record fsynced already.
    assert all(done <= durable for done, durable in seen), seen


def _result(case_id: str) -> JudgeResult:
    case = make_case(case_id, "pass")
    return JudgeResult.model_validate(make_result(case, partition="development"))


def test_the_writer_keeps_order_and_writes_the_records_of_cancelled_callers(
    tmp_path: Path,
) -> None:
    async def go() -> RecordWriter:
        log = _io.AppendOnlyLog(tmp_path / "results.jsonl")
        writer = RecordWriter(log, None, asyncio.get_running_loop())
        first = asyncio.create_task(writer.append(_result("a"), None))
        await asyncio.sleep(0)  # queued
        second = asyncio.create_task(writer.append(_result("b"), None))
        await asyncio.sleep(0)
        second.cancel()  # its caller goes away; the record was handed over and is kept
        await first
        with pytest.raises(asyncio.CancelledError):
            await second
        await writer.append(_result("c"), None)
        writer.close()
        log.close()
        return writer

    writer = asyncio.run(go())
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert [json.loads(line)["case_id"] for line in lines] == ["a", "b", "c"]
    assert writer.records == 3 and 1 <= writer.batches <= 3


def test_a_failed_write_fails_every_caller_of_its_batch(tmp_path: Path) -> None:
    class Broken(_io.AppendOnlyLog):
        def append_lines(self, lines: Any) -> None:
            raise OSError(28, "No space left on device")

    async def go() -> list[BaseException | None]:
        log = Broken(tmp_path / "results.jsonl")
        writer = RecordWriter(log, None, asyncio.get_running_loop())
        outcomes = await asyncio.gather(
            *(writer.append(_result(c), None) for c in "xyz"), return_exceptions=True
        )
        writer.close()
        log.close()
        return list(outcomes)

    outcomes = asyncio.run(go())
    assert all(isinstance(o, OSError) and o.errno == 28 for o in outcomes), outcomes


def _faulty_records(
    make_dataset, tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch, *, stock: bool
) -> list[dict[str, Any]]:
    if stock:
        monkeypatch.setenv(_prepared.SWITCH, "0")  # every call through Ragas' own ascore
    rules = [
        Rule(contains="Answer number 0", reply=Reply(fault="http_429")),
        Rule(contains="Answer number 1", reply=Reply(fault="http_500")),
        Rule(contains="Answer number 2", reply=Reply(fault="http_400")),
        Rule(contains="Answer number 3", reply=Reply(fault="malformed_json")),
        Rule(contains="Answer number 4", reply=Reply(value="maybe", reason="unsure")),
    ]
    with FakeLLM(
        rules=rules, default=Reply(value="pass", reason="ok"), require_api_key=SECRET
    ) as s:
        spec = write_spec(tmp_path / name, s.base_url)
        text = spec.read_text()
        assert "max_retries: 2" in text
        spec.write_text(text.replace("max_retries: 2", "max_retries: 0"))  # one attempt each
        run(spec, _gold(make_dataset, 6), tmp_path / name / "out", cache_dir=False)
        url = s.base_url
    monkeypatch.undo()
    monkeypatch.setenv(KEY_ENV, SECRET)
    keep = ("case_id", "attempt", "value", "reason", "error", "rendered_request", "tokens_in")
    recorded = json.loads(json.dumps(rows(tmp_path / name / "out")).replace(url, "<endpoint>"))
    return sorted(
        ({k: r.get(k) for k in keep} for r in recorded),
        key=lambda r: (r["case_id"], r["attempt"]),
    )


def test_provider_failures_are_recorded_as_the_stock_path_records_them(
    make_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepared = _faulty_records(make_dataset, tmp_path, "prepared", monkeypatch, stock=False)
    stock = _faulty_records(make_dataset, tmp_path, "stock", monkeypatch, stock=True)
    assert prepared == stock
    kinds = {r["case_id"]: r["error"]["kind"] for r in prepared if r["error"]}
    assert kinds["w0"] == "rate_limited" and kinds["w1"] == "provider_error"
    assert kinds["w2"] == "provider_error" and kinds["w3"] == "unparseable"
    assert kinds["w4"] == "invalid_label"
    assert SECRET not in json.dumps(prepared)
