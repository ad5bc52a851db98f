"""The layout of a sharded run directory (the Ray executor, :mod:`._ray`); no Ray needed here.

``OUT/shards.json`` (:class:`ShardPlan`) fixes N and the case -> shard rule; each
``OUT/shards/<k>/`` is a run directory, and ``OUT/results.jsonl`` their merge (docs/formats.md,
"Sharded run directory").
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Final, Literal

from pydantic import Field

from .._io import atomic_write_bytes
from .._record import Record
from ._rundir import SHARDS_DIR as SHARDS_DIR
from ._rundir import RunDir

SHARD_PLAN_SCHEMA_VERSION = 1
WORKER_FILE = "worker.json"
Assignment = Literal["int(sha256(case_id)[:16], 16) % shards"]
ASSIGNMENT: Final[Assignment] = "int(sha256(case_id)[:16], 16) % shards"


def shard_of(case_id: str, shards: int) -> int:
    """The shard a case belongs to (every repeat of it goes there too)."""
    return int(hashlib.sha256(case_id.encode("utf-8")).hexdigest()[:16], 16) % shards


class ShardPlan(Record):
    """``shards.json``: how a run directory is split into shards; fixed at its first invocation."""

    schema_version: int = SHARD_PLAN_SCHEMA_VERSION
    """Shard plan format version."""
    executor: Literal["ray"] = "ray"
    """The executor that runs the shards."""
    run_id: str
    """The run's id; every shard's manifest and result carries it."""
    shards: int = Field(ge=1)
    """N, the number of shards; a resume must give the same ``--shards``."""
    assignment: Assignment = ASSIGNMENT
    """The rule that puts a case (with all its repeats) in a shard."""
    cases_per_shard: list[int]
    """How many cases each shard holds, by shard index."""


def merge_results(out: Path, shards: int, target: Path) -> int:
    """Write the shards' complete lines, in shard order, to ``target`` atomically; returns the
    line count."""
    chunks: list[bytes] = []
    lines = 0
    for index in range(shards):
        path = RunDir(out).shard(index).results
        if not path.exists():
            continue
        data = path.read_bytes()
        complete = data[: data.rfind(b"\n") + 1]
        chunks.append(complete)
        lines += complete.count(b"\n")
    atomic_write_bytes(target, b"".join(chunks))
    return lines
