"""Group commit of a run's records: durable before reported, one fsync per batch.

Records appended in one turn of the event loop go to the writer thread together; records that
arrive while a batch is written form the next batch (one write and fsync, the verdict cache
after the results). A record handed over is written even if its caller is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from dataclasses import dataclass
from typing import Any

from .._io import AppendOnlyLog, jsonl_line
from ..results import JudgeResult
from ._cache import VerdictCache


@dataclass(frozen=True)
class _Pending:
    line: bytes
    cache_entry: tuple[str, int, dict[str, Any]] | None
    done: asyncio.Future[None]


class RecordWriter:
    """One writer thread for a run's results log and verdict cache, committing in batches."""

    def __init__(
        self, log: AppendOnlyLog, cache: VerdictCache | None, loop: asyncio.AbstractEventLoop
    ) -> None:
        self._log, self._cache, self._loop = log, cache, loop
        self._queue: queue.SimpleQueue[list[_Pending] | None] = queue.SimpleQueue()
        self._turn: list[_Pending] = []  # appended in this turn of the loop, not handed over
        self.batches = 0
        self.records = 0
        self._thread = threading.Thread(target=self._run, name="workbench-writer", daemon=True)
        self._thread.start()
        self._closed = False

    async def append(self, result: JudgeResult, request_key: str | None) -> None:
        """Record one attempt (cached under ``request_key`` when given); returns once durable."""
        dumped = result.model_dump(mode="json")
        entry = (
            (request_key, result.repeat, dumped)
            if self._cache is not None and request_key is not None
            else None
        )
        done: asyncio.Future[None] = self._loop.create_future()
        if not self._turn:
            self._loop.call_soon(self._hand_over)
        self._turn.append(_Pending(jsonl_line(dumped), entry, done))
        await done

    def _hand_over(self) -> None:
        if self._turn:
            turn, self._turn = self._turn, []
            self._queue.put(turn)

    def close(self) -> None:
        """Write everything queued, then stop the writer thread."""
        if self._closed:
            return
        self._closed = True
        self._hand_over()  # records of cancelled callers whose turn has not ended
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        stop = False
        while not stop:
            items = [self._queue.get()]
            with contextlib.suppress(queue.Empty):  # everything queued while the last was written
                while True:
                    items.append(self._queue.get_nowait())
            stop = None in items
            batch = [pending for item in items if item is not None for pending in item]
            if batch:
                self._commit(batch)

    def _commit(self, batch: list[_Pending]) -> None:
        error: BaseException | None = None
        try:
            self._log.append_lines([p.line for p in batch])
            self.batches += 1
            self.records += len(batch)
        except BaseException as exc:  # handed to every caller of the batch
            error = exc
        cache_error: BaseException | None = None
        if error is None and self._cache is not None:
            entries = [p.cache_entry for p in batch if p.cache_entry is not None]
            try:
                if entries:
                    self._cache.put_many(entries)
            except BaseException as exc:
                cache_error = exc
        results = [
            (p.done, error or (cache_error if p.cache_entry is not None else None)) for p in batch
        ]
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody awaits these any more
            self._loop.call_soon_threadsafe(_resolve, results)


def _resolve(results: list[tuple[asyncio.Future[None], BaseException | None]]) -> None:
    for done, error in results:
        if done.done():  # its caller was cancelled; the record is written all the same
            continue
        if error is None:
            done.set_result(None)
        else:
            done.set_exception(error)
