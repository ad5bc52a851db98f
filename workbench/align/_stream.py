"""What align keeps of results as they stream past, shard after shard: the joined rows of the
analysed repeat in scope, counts of the others, and one small integer key per result for the
duplicate and attempt checks (a few bytes each, never the rows themselves)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._cases import _numpy

if TYPE_CHECKING:
    import pyarrow as pa


class Kept:
    """Receives joined blocks (columns ``g``, ``code``, ``repeat``, ``attempt`` and the rest) and
    keeps only what the report needs; the rows it returns are the analysed repeat's, in scope."""

    def __init__(self, in_partition: Any, repeat: int) -> None:
        self.in_partition = in_partition
        """Per gold row: whether it is in the partition analysed."""
        self.repeat = repeat
        self.results_read = 0
        self.excluded = 0
        """Results of cases outside the partition (any repeat)."""
        self.other_repeats = 0
        """Results in the partition, of another repeat."""
        self.keys: list[tuple[Any, Any, Any, Any]] = []
        """Per joined block: gold row, repeat, attempt and whether a verdict, narrowed."""

    def take(self, rows: pa.Table) -> pa.Table:
        """Count and key ``rows``; return those of the analysed repeat in scope."""
        n = rows.num_rows
        if not n:
            return rows
        g = _numpy(rows["g"])
        repeat, attempt = _numpy(rows["repeat"]), _numpy(rows["attempt"])
        verdict = _numpy(rows["code"], -1) >= 0
        self.keys.append((g, _narrowed(repeat), _narrowed(attempt), verdict))
        self.results_read += n
        in_scope = self.in_partition[g]
        this = in_scope & (repeat == self.repeat)
        scoped = int(in_scope.sum())
        self.excluded += n - scoped
        self.other_repeats += scoped - int(this.sum())
        return rows.filter(this) if not this.all() else rows

    def duplicates_or_late_attempts(self) -> bool:
        """Whether a (case, repeat, attempt) key repeats, or a unit (case, repeat) has an attempt
        after its verdict, among every result taken."""
        import numpy as np

        if not self.keys:
            return False
        g, repeat, attempt, verdict = (np.concatenate([k[i] for k in self.keys]) for i in range(4))
        self.keys = []
        return _duplicates_or_late_attempts(g, repeat, attempt, verdict)


def _narrowed(values: Any) -> Any:
    """``values`` (non-negative integers) in the narrowest signed type that holds them (signed:
    numpy would widen a mix of signed and unsigned int64 to float)."""
    import numpy as np

    high = int(values.max())
    kind = next(t for t in (np.int8, np.int16, np.int32, np.int64) if high <= np.iinfo(t).max)
    return values.astype(kind, copy=False)


def _duplicates_or_late_attempts(g: Any, repeat: Any, attempt: Any, verdict: Any) -> bool:
    """The checks on rows sorted by (case, repeat, attempt, verdict): a duplicate is a row whose
    next row has its key; a late attempt, a verdict whose next row is of its unit. One int64 key
    per row sorted in place when ``(case, repeat, attempt, verdict)`` packs into it, else a
    ``lexsort`` of the four columns (attempt or repeat numbers near 2**62)."""
    import numpy as np

    repeats, attempts = int(repeat.max()) + 1, int(attempt.max()) + 1
    if (int(g.max()) + 1) * repeats * attempts * 2 <= np.iinfo(np.int64).max:
        key = g.astype(np.int64)
        for scale, part in ((repeats, repeat), (attempts, attempt), (2, verdict)):
            key *= scale
            key += part
        del g, repeat, attempt, verdict
        key.sort()
        attempt_key = key >> 1
        duplicate = attempt_key[1:] == attempt_key[:-1]
        del attempt_key
        unit = key // (2 * attempts)
        same_unit = unit[1:] == unit[:-1]
        last_verdict = (key[:-1] & 1).astype(bool)
    else:
        order = np.lexsort((verdict, attempt, repeat, g))
        g, repeat, attempt = g[order], repeat[order], attempt[order]
        same_unit = (g[1:] == g[:-1]) & (repeat[1:] == repeat[:-1])
        duplicate = same_unit & (attempt[1:] == attempt[:-1])
        last_verdict = verdict[order][:-1]
    return bool(duplicate.any() or (same_unit & last_verdict).any())
