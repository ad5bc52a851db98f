"""One result read back by where it is (shard and line), for a case a reviewer opens, through the
strict record; a results file changed since it was read, or a line that no longer holds the case,
is refused (``results_changed``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._io import check_json, open_for_reading
from ..errors import WorkbenchError, refusal
from ._columnar import BLOCK_BYTES, result_files
from ._contract import JudgeResult

if TYPE_CHECKING:
    import numpy as np


def _stat(path: Path) -> tuple[int, ...]:
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class ResultLines:
    """The results of a file (or directory of shards), one line at a time."""

    def __init__(self, results: str | Path) -> None:
        self.path = Path(results)
        self.files = result_files(results)
        self._stats = [_stat(f) for f in self.files]
        self._starts: dict[int, np.ndarray] = {}

    def result(self, shard: int | None, line: int, case_id: str) -> JudgeResult:
        """The result on ``line`` (1-based) of shard number ``shard`` (None: the shard whose
        line holds ``case_id``)."""
        shards = range(len(self.files)) if shard is None else [shard]
        for number in shards:
            found = self._read(number, line)
            if found is not None and found.case_id == case_id:
                return found
        raise self._changed(f"line {line} no longer holds case {case_id!r}")

    def _read(self, shard: int, line: int) -> JudgeResult | None:
        file = self.files[shard]
        if _stat(file) != self._stats[shard]:
            raise self._changed(f"{file.name} changed since the results were read")
        text = (
            self._parquet_row(file, line) if file.suffix == ".parquet" else self._line(shard, line)
        )
        if text is None:
            return None
        try:
            check_json(text)
            return JudgeResult.model_validate_json(text)
        except ValueError:
            return None

    def _line(self, shard: int, line: int) -> str | None:
        starts = self._starts.get(shard)
        if starts is None:
            starts = self._starts[shard] = _line_starts(self.files[shard])
        if not 1 <= line < len(starts):
            return None
        with open_for_reading(self.files[shard]) as fh:
            fh.seek(int(starts[line - 1]))
            return fh.read(int(starts[line] - starts[line - 1])).decode("utf-8", "replace")

    @staticmethod
    def _parquet_row(file: Path, line: int) -> str | None:
        import pyarrow.parquet as pq

        from ._io import row_text

        shard = pq.ParquetFile(file)
        row = line - 1
        for group in range(shard.num_row_groups):
            rows = shard.metadata.row_group(group).num_rows
            if row < rows:  # read as the strict reader reads a Parquet row
                return row_text(shard.read_row_group(group).slice(row, 1).to_pylist()[0])
            row -= rows
        return None

    def _changed(self, why: str) -> WorkbenchError:
        return refusal(
            "the results changed since they were read",
            str(self.path),
            "results_changed",
            f"{why}: the case's request cannot be shown as it was judged",
            "build the review table again from the results as they are now",
        )


def _line_starts(file: Path) -> Any:
    """Byte offset of every line's start, then the file's length (one pass in blocks)."""
    import numpy as np

    found = [np.zeros(1, dtype=np.int64)]
    offset = 0
    with open_for_reading(file) as fh:
        while block := fh.read(BLOCK_BYTES):
            raw = np.frombuffer(block, dtype=np.uint8)
            found.append(np.flatnonzero(raw == 10).astype(np.int64) + offset + 1)
            offset += len(block)
    return np.concatenate(found)
