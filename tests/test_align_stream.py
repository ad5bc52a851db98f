"""Align streams shards: it keeps the analysed repeat's rows in scope and a small key per result,
and checks every result as before."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import test_align_columnar
from test_align_columnar import _problems, assert_same, columnar_or_none, reference

import workbench.align._columnar as columnar_module
from workbench.align import align
from workbench.align._columnar import _read
from workbench.align._stream import _duplicates_or_late_attempts
from workbench.gold._index import gold_index

rich = test_align_columnar.rich
"""Missing results, errors, abstentions, retries, repeats, other partitions, corrections."""


def _repeated_shards(results: Path, into: Path, repeats: int) -> tuple[Path, list[dict]]:
    """The results as shards: the file's rows, then its repeat-1 rows again as repeats 2, 3...
    (one JSONL shard per repeat, the last one Parquet)."""
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    into.mkdir()
    every = list(rows)
    (into / "part-000.jsonl").write_text(results.read_text())
    for k in range(2, repeats):
        shard = [{**r, "repeat": k} for r in rows if r["repeat"] == 1]
        every += shard
        if k == repeats - 1:
            pq.write_table(pa.Table.from_pylist(shard), into / f"part-{k:03d}.parquet")
        else:
            text = "".join(json.dumps(r) + "\n" for r in shard)
            (into / f"part-{k:03d}.jsonl").write_text(text)
    return into, every


@pytest.mark.parametrize("partition", [None, "development"])
@pytest.mark.parametrize("repeat", [0, 3])
def test_only_the_analysed_repeats_rows_in_scope_are_kept(rich, tmp_path, partition, repeat):
    """What align holds after reading is the analysed repeat's results in scope, not every
    result (before: every joined result, so memory grew with each shard); the counts of the
    others and the report are the per-record path's."""
    gold, results = rich
    shards, rows = _repeated_shards(results, tmp_path / "shards", repeats=6)
    index = gold_index(gold)
    read = _read(index, shards, list(index.rubric.labels), partition, repeat)
    assert read is not None
    in_scope = [r for r in rows if partition in (None, r["partition"])]
    assert read.rows.num_rows == sum(r["repeat"] == repeat for r in in_scope) > 0
    assert read.kept.results_read == len(rows)
    assert read.kept.excluded == len(rows) - len(in_scope)
    assert read.kept.other_repeats == sum(r["repeat"] != repeat for r in in_scope)
    assert_same(gold, shards, partition, repeat)


@pytest.mark.parametrize("where", ["duplicate", "after_verdict"])
def test_a_breach_in_another_shard_is_refused_like_the_per_record_path(rich, tmp_path, where):
    """The duplicate and attempt checks span shards: a row of the first shard repeated in the
    last one, or an error attempt after its verdict there, is refused with the per-record
    problems."""
    gold, results = rich
    shards, rows = _repeated_shards(results, tmp_path / "shards", repeats=4)
    verdict = next(r for r in rows if r["value"] is not None and r["repeat"] == 0)
    if where == "duplicate":
        extra = dict(verdict)
    else:
        timeout = {"kind": "timeout", "message": "no answer", "retryable": False}
        extra = {**verdict, "attempt": verdict["attempt"] + 1, "value": None, "error": timeout}
    (shards / "part-999.jsonl").write_text(json.dumps(extra) + "\n")
    assert columnar_or_none(gold, shards) is None
    old = _problems(lambda: reference(gold, shards, None))
    assert old, "the breach must be refused"
    assert _problems(lambda: align(gold, shards)) == old


def _plain(keys: list[tuple[int, int, int, bool]]) -> bool:
    """The checks written out: a (case, repeat, attempt) twice, or an attempt after a verdict."""
    if max(Counter((g, r, a) for g, r, a, _ in keys).values(), default=0) > 1:
        return True
    last: dict[tuple[int, int], int] = {}
    first_verdict: dict[tuple[int, int], int] = {}
    for g, r, a, v in keys:
        last[(g, r)] = max(last.get((g, r), a), a)
        if v:
            first_verdict[(g, r)] = min(first_verdict.get((g, r), a), a)
    return any(last[u] > a for u, a in first_verdict.items())


def _check(keys: list[tuple[int, int, int, bool]], offset: int = 0) -> bool:
    g, r, a, v = (np.array(column) for column in zip(*keys, strict=True))
    return _duplicates_or_late_attempts(
        g.astype(np.int32), r.astype(np.int64) + offset, a.astype(np.int64), v.astype(bool)
    )


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ([(0, 0, 1, False), (0, 0, 2, True)], False),  # a retry, then the verdict
        ([(0, 0, 1, True), (0, 0, 2, False)], True),  # an attempt after the verdict
        ([(0, 0, 1, True), (0, 1, 2, False)], False),  # another repeat: another unit
        ([(3, 0, 1, True), (1, 0, 1, True), (3, 0, 1, True)], True),  # one key twice, apart
        ([(0, 0, 1, True), (0, 0, 1, False)], True),  # the same attempt, verdict and error
        ([(2, 5, 1, True)], False),
    ],
)
@pytest.mark.parametrize("offset", [0, 2**61])  # 2**61: the key overflows, columns are sorted
def test_the_key_checks_by_hand(keys, expected, offset):
    assert _plain(keys) is expected
    assert _check(keys, offset) is expected


def test_the_key_checks_agree_with_the_plain_checks_on_random_keys():
    rng = np.random.default_rng(31)
    seen = Counter()
    for _ in range(300):
        n = int(rng.integers(1, 40))
        keys = [
            (int(rng.integers(0, 6)), int(rng.integers(0, 3)), int(rng.integers(1, 4)), bool(v))
            for v in rng.integers(0, 2, n)
        ]
        expected = _plain(keys)
        seen[expected] += 1
        assert _check(keys) is expected, keys
        assert _check(keys, 2**61) is expected, keys
    assert seen[True] and seen[False]


def test_the_gold_lookup_buffers_as_many_results_as_the_gold_has_cases(rich, monkeypatch):
    """The buffer before a lookup is bounded by the gold (at least FLUSH_FLOOR), not by
    FLUSH_ROWS alone: with a floor of 1, a 61-case gold is looked up every 61 results."""
    gold, results = rich
    monkeypatch.setattr(columnar_module, "FLUSH_FLOOR", 1)
    sizes: list[int] = []
    real = columnar_module._Joiner.flush

    def spy(self):
        sizes.append(self.pending_rows)
        return real(self)

    monkeypatch.setattr(columnar_module._Joiner, "flush", spy)
    assert_same(gold, results, "development")
    cases = gold_index(gold).table.num_rows
    total = len(results.read_text().splitlines())
    assert total > cases and max(sizes) >= cases
    assert len([s for s in sizes if s]) >= total // (cases + 40)  # blocks are whole: <= +40
    assert all(s < cases + 40 for s in sizes)
