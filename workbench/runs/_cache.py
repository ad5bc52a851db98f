"""The verdict cache: reuse a verdict only for the same judge fingerprint, request and repeat.

Only verdicts are cached, never errors: one append-only JSON Lines file per fingerprint under
``$WORKBENCH_CACHE_DIR`` (default ``~/.cache/judge-workbench``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from .._io import AppendOnlyLog, iter_jsonl_lines, loads_json
from ..errors import WorkbenchError, refusal
from ..results import REQUIRED_SINCE_V2, RESULT_SCHEMA_VERSION, JudgeResult


def default_cache_dir() -> Path:
    env = os.environ.get("WORKBENCH_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "judge-workbench"


def open_cache(
    cache_dir: str | Path | None | Literal[False], fingerprint: str
) -> VerdictCache | None:
    """The cache of ``fingerprint`` under ``cache_dir`` (None: the default; False: no cache)."""
    if cache_dir is False:
        return None
    return VerdictCache(Path(cache_dir) if cache_dir else default_cache_dir(), fingerprint)


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
        return refusal(
            "unreadable verdict cache",
            f"{self.path}:{number}",
            "cache_corrupt",
            f"line {number} of the verdict cache is not a cache entry",
            "delete this cache file (it only holds verdicts that can be recomputed), or"
            " run with --no-cache",
        )

    def get(self, request_key: str, repeat: int) -> JudgeResult | None:
        stored = self._entries.get((request_key, repeat))
        if stored is None:
            return None
        if stored.get("schema_version") == 1 and all(name in stored for name in REQUIRED_SINCE_V2):
            # a version-1 entry dumped with every field reads as version 2 unchanged
            stored = {**stored, "schema_version": RESULT_SCHEMA_VERSION}
        try:
            return JudgeResult.model_validate(stored)
        except ValueError:  # not a valid result: a miss
            return None

    def put_many(self, entries: list[tuple[str, int, dict[str, Any]]]) -> None:
        """Remember ``(request_key, repeat, dumped result)`` verdicts with one write and fsync."""
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
