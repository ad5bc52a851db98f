"""``RunDir``: a run directory's file names and its one typed results reader."""

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
SHARDS_DIR = "shards"


@dataclass(frozen=True)
class RunDir:
    """A run directory (it need not exist yet): where its files live, and how to read them."""

    path: Path

    def __init__(self, path: str | Path) -> None:
        object.__setattr__(self, "path", Path(path))

    def __fspath__(self) -> str:
        return str(self.path)

    @property
    def results(self) -> Path:
        """Every attempt, one judge-result record a line."""
        return self.path / RESULTS_FILE

    @property
    def summary(self) -> Path:
        """The summary of the last invocation."""
        return self.path / SUMMARY_FILE

    @property
    def manifest(self) -> Path:
        """The plan, frozen before the first call."""
        return self.path / MANIFEST_FILE

    @property
    def invocations(self) -> Path:
        return self.path / INVOCATIONS_FILE

    @property
    def lock(self) -> Path:
        """Held while one invocation writes the directory."""
        return self.path / LOCK_FILE

    @property
    def shards_file(self) -> Path:
        """The shard plan of a run sharded by the Ray executor."""
        return self.path / SHARDS_FILE

    def shard(self, index: int) -> RunDir:
        return RunDir(self.path / SHARDS_DIR / f"{index:03d}")

    def read_results(
        self,
        *,
        verify_requests: bool = False,
        migrate: bool = False,
        gold: GoldDataset | None = None,
        required: bool = False,
    ) -> list[ResultLine]:
        """Every result with its line number, as :func:`workbench.results.read_results` (none
        when the file is absent, unless ``required``)."""
        if not required and not self.results.exists():
            return []
        return read_results(
            self.results, verify_requests=verify_requests, migrate=migrate, gold=gold
        )

    def read_summary(self) -> RunSummary | None:
        """``run.json``, or None when there is none yet."""
        from ._engine import RunSummary

        return (
            RunSummary.model_validate(read_json_file(self.summary))
            if self.summary.exists()
            else None
        )
