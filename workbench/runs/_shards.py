"""The layout of a sharded run directory (the Ray executor, :mod:`._ray`); no Ray needed here.

``OUT/shards.json`` (:class:`ShardPlan`) fixes N and the rule that puts a case, with all its
repeats, in a shard (:func:`shard_of`); shard ``k`` is a run directory of its own,
``OUT/shards/<k>/`` (three digits), whose ``results.jsonl`` is the evidence, and
``OUT/results.jsonl`` is their merge (:func:`merge_results`), current once a driver invocation
has finished. The whole layout: docs/formats.md, "Sharded run directory".
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
"""The one rule that puts a case in a shard (recorded in ``shards.json``)."""
ASSIGNMENT: Final[Assignment] = "int(sha256(case_id)[:16], 16) % shards"


def shard_of(case_id: str, shards: int) -> int:
    """The shard a case belongs to (every repeat of it goes there too)."""
    return int(hashlib.sha256(case_id.encode("utf-8")).hexdigest()[:16], 16) % shards


def shard_dir(out: Path, index: int) -> Path:
    """``OUT/shards/<k>``: shard ``index``'s own run directory."""
    return RunDir(out).shard(index).path


class ShardPlan(Record):
    """``shards.json``: how a run directory is split into shards; fixed at its first invocation."""

    schema_version: int = SHARD_PLAN_SCHEMA_VERSION
    """Shard plan format version."""
    executor: Literal["ray"] = "ray"
    """The executor that runs the shards."""
    run_id: str
    """The run's id (``manifest.json``); every shard's manifest and result carries it."""
    shards: int = Field(ge=1)
    """N, the number of shards; a resume must give the same ``--shards``."""
    assignment: Assignment = ASSIGNMENT
    """The rule that puts a case (with all its repeats) in a shard."""
    cases_per_shard: list[int]
    """How many cases each shard holds, by shard index (a shard with none is not started)."""


def merge_results(out: Path, shards: int, target: Path) -> int:
    """Write the shards' results, in shard order, to ``target`` atomically; returns the line count.

    Each shard file is copied whole: a shard's engine repairs its own torn last line on its
    next start, so a line without its newline (a crash mid-write) is left out here.
    """
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
