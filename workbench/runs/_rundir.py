"""``RunDir``: a run directory's file names and its one typed results reader.

A run directory holds ``manifest.json`` (frozen before the first call), ``results.jsonl``
(every attempt, append-only), ``run.json`` (the last invocation's summary),
``invocations.jsonl`` (one line per invocation), ``.run.lock`` (held while one invocation
writes) and, when the Ray executor sharded it, ``shards.json`` and ``shards/<k>/`` (each
shard a run directory of its own). Code that reads or writes a run directory names its files
through this type instead of spelling them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .._io import read_json_file
from ..results import MANIFEST_FILE, ResultLine, read_results

if TYPE_CHECKING:
    from ..gold import GoldDataset
    from ._engine import RunSummary

RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "run.json"
INVOCATIONS_FILE = "invocations.jsonl"
LOCK_FILE = ".run.lock"
SHARDS_FILE = "shards.json"
"""Present in a run directory sharded by the Ray executor (:mod:`._ray`)."""
SHARDS_DIR = "shards"


@dataclass(frozen=True)
class RunDir:
    """A run directory (it need not exist yet): where each of its files lives, and how to read
    them."""

    path: Path

    def __init__(self, path: str | Path) -> None:
        object.__setattr__(self, "path", Path(path))

    def __fspath__(self) -> str:
        return str(self.path)

    @property
    def results(self) -> Path:
        """``results.jsonl``: every attempt, one judge-result record a line."""
        return self.path / RESULTS_FILE

    @property
    def summary(self) -> Path:
        """``run.json``: the summary of the last invocation."""
        return self.path / SUMMARY_FILE

    @property
    def manifest(self) -> Path:
        """``manifest.json``: the frozen plan."""
        return self.path / MANIFEST_FILE

    @property
    def invocations(self) -> Path:
        """``invocations.jsonl``: one line per invocation."""
        return self.path / INVOCATIONS_FILE

    @property
    def lock(self) -> Path:
        """``.run.lock``: held while one invocation writes the directory."""
        return self.path / LOCK_FILE

    @property
    def shards_file(self) -> Path:
        """``shards.json``: the shard plan of a run sharded by the Ray executor."""
        return self.path / SHARDS_FILE

    def shard(self, index: int) -> RunDir:
        """``shards/<k>``: shard ``index``'s own run directory."""
        return RunDir(self.path / SHARDS_DIR / f"{index:03d}")

    def read_results(
        self,
        *,
        verify_requests: bool = False,
        migrate: bool = False,
        gold: GoldDataset | None = None,
        required: bool = False,
    ) -> list[ResultLine]:
        """Every result of ``results.jsonl`` with its line number (none when the file is absent,
        unless ``required``: then a missing file is a ``results_missing`` problem).

        Raises :class:`~workbench.errors.WorkbenchError` listing every bad line
        (:func:`workbench.results.read_results`, with the same options).
        """
        if not required and not self.results.exists():
            return []
        return read_results(
            self.results, verify_requests=verify_requests, migrate=migrate, gold=gold
        )

    def read_summary(self) -> RunSummary | None:
        """``run.json`` as a :class:`~workbench.runs.RunSummary`, or None when there is none yet."""
        from ._engine import RunSummary

        return (
            RunSummary.model_validate(read_json_file(self.summary))
            if self.summary.exists()
            else None
        )
