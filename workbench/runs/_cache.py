"""The verdict cache: reuse a verdict only for the same judge, request and repeat.

Keyed by candidate fingerprint, the sha256 of the planned evaluator-visible request and the
repeat index. Only verdicts are cached, never evaluator errors. One append-only JSON Lines
file per fingerprint under the cache directory (``$WORKBENCH_CACHE_DIR``, default
``~/.cache/judge-workbench``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._io import AppendOnlyLog, iter_jsonl_lines, loads_json
from ..errors import Problem, WorkbenchError
from ..results import REQUIRED_SINCE_V2, RESULT_SCHEMA_VERSION, JudgeResult


def default_cache_dir() -> Path:
    env = os.environ.get("WORKBENCH_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "judge-workbench"


class VerdictCache:
    """Verdicts of one judge fingerprint."""

    def __init__(self, root: Path, fingerprint: str) -> None:
        self.path = root / fingerprint[:2] / f"{fingerprint}.jsonl"
        self._entries: dict[tuple[str, int], dict[str, Any]] = {}
        self._log: AppendOnlyLog | None = None
        if not self.path.exists():
            return
        AppendOnlyLog(self.path).close()  # repairs a torn last line, if any
        not_utf8: list[int] = []
        for number, line in iter_jsonl_lines(self.path, not_utf8):  # a line too long is refused
            if not_utf8:
                break
            try:
                entry = loads_json(line)
                key, result = (entry["request_key"], entry["repeat"]), entry["result"]
            except (ValueError, KeyError, TypeError):
                raise self._corrupt(number) from None
            if not (
                isinstance(key[0], str) and isinstance(key[1], int) and isinstance(result, dict)
            ):
                raise self._corrupt(number)
            self._entries[key] = result
        if not_utf8:
            raise self._corrupt(not_utf8[0])

    def _corrupt(self, number: int) -> WorkbenchError:
        return WorkbenchError(
            "unreadable verdict cache",
            [
                Problem(
                    location=f"{self.path}:{number}",
                    code="cache_corrupt",
                    message=f"line {number} of the verdict cache is not a cache entry",
                    fix=(
                        "delete this cache file (it only holds verdicts that can be recomputed), or"
                        " run with --no-cache"
                    ),
                )
            ],
        )

    def get(self, request_key: str, repeat: int) -> JudgeResult | None:
        stored = self._entries.get((request_key, repeat))
        if stored is None:
            return None
        if stored.get("schema_version") == 1 and all(name in stored for name in REQUIRED_SINCE_V2):
            # A version-1 entry was dumped with every field, so reading it as version 2 fills
            # nothing; the engine replaces run, partition and attempt on reuse anyway.
            stored = {**stored, "schema_version": RESULT_SCHEMA_VERSION}
        try:
            return JudgeResult.model_validate(stored)
        except ValueError:  # an entry that is not a valid result is a miss: the judge is called
            return None

    def put_many(self, entries: list[tuple[str, int, dict[str, Any]]]) -> None:
        """Remember several verdicts, given as ``(request_key, repeat, result dumped in JSON
        mode)``, with one write and fsync. Errors are never cached. Called from the writer
        thread."""
        fresh: list[dict[str, Any]] = []
        for request_key, repeat, dumped in entries:
            if dumped.get("error") is not None or (request_key, repeat) in self._entries:
                continue
            self._entries[(request_key, repeat)] = dumped
            fresh.append({"request_key": request_key, "repeat": repeat, "result": dumped})
        if not fresh:
            return
        if self._log is None:
            self._log = AppendOnlyLog(self.path)
        self._log.append_many(fresh)

    def __len__(self) -> int:
        return len(self._entries)

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
