"""Evidence as columnar joins and counts (Arrow compute, numpy over gold row numbers): the cases
the per-record join builds, or None (the caller runs the per-record path) for input it cannot
vouch for."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..gold import GoldIndex
from ..results import ColumnarResults, read_columnar
from ._cases import _numpy, cases_report
from ._join import classify
from ._lineage import Lineage, check_lineage, manifest_path_for, read_run_manifest
from ._stream import Kept

if TYPE_CHECKING:
    import pyarrow as pa

    from ..gold import Rubric
    from ..results import RunManifest
    from ._report import AlignmentReport


FLUSH_ROWS = 1 << 20
"""Results buffered at most before one lookup of their case ids among the gold's."""
FLUSH_FLOOR = 1 << 18
"""Results buffered at least (:data:`FLUSH_ROWS` permitting), however small the gold: a lookup
builds a hash table of the gold's case ids, so buffering as many results as the gold has cases
keeps that cost under one probe per result, and the buffer bounded by the gold, not the results."""

_KEPT = (
    ("g", "int32"),
    ("code", "int32"),
    ("error_kind", "string"),
    ("error_message", "string"),
    ("reason", "string"),
    ("attempt", "int64"),
    ("repeat", "int64"),
    ("cost_usd", "float64"),
    ("tokens_in", "int64"),
    ("tokens_out", "int64"),
    ("cached", "bool"),
    ("shard", "int32"),
    ("line", "int64"),
    ("evidence_truncated", "int64"),
)
"""What is kept per result once joined: ``g`` is the gold row number (the join key from then
on: integers, never case-id strings), ``code`` the verdict's position in the vocabulary."""

OUTCOMES = ("verdict", "error", "missing")
ERROR_CLASSES = ("aligned", "false_pass", "false_fail", "disagreement", "error", "missing")


def _kept_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema([(name, pa.type_for_alias(kind)) for name, kind in _KEPT])


class _Joiner:
    """The join rules, checked on result blocks as they are read (any breach raises
    ``ValueError``: the per-record path then names every one); keeps :data:`_KEPT`."""

    def __init__(self, gold: pa.Table, vocabulary: pa.Array) -> None:
        self.ids = gold["case_id"].combine_chunks()  # the lookup's value set: one array
        self.hashes = gold["response_hash"]  # taken from by gold row: chunks as they are
        self.partitions = gold["partition"]
        self.active = gold["active"]
        self.vocabulary = vocabulary
        self.schema = _kept_schema()
        self.pending: list[pa.Table] = []
        self.pending_rows = 0
        self.flush_rows = min(FLUSH_ROWS, max(gold.num_rows, FLUSH_FLOOR))
        self.lineages: Counter[tuple[str | None, str | None]] = Counter()
        self.run_ids: set[str] = set()

    def block(self, block: pa.Table) -> pa.Table:
        """Checks that need no gold lookup; the block is buffered for :meth:`flush`."""
        import pyarrow as pa
        import pyarrow.compute as pc

        value, error_kind = block["value"], block["error_kind"]
        code = pc.index_in(value, value_set=self.vocabulary)
        if _any(pc.and_(pc.is_null(value), pc.is_null(error_kind))):
            raise ValueError("score-only result")
        if code.null_count != value.null_count:
            raise ValueError("verdict outside the vocabulary")
        self._lineage(block)
        self.run_ids.update(pc.unique(block["run_id"]).to_pylist())
        kept = {name: block[name] for name, _ in _KEPT if name in block.column_names}
        extra = {"code": code, "cached": pc.is_valid(block["cached_from_run_id"])}
        keys = {name: block[name] for name in ("case_id", "response_hash", "partition")}
        self.pending.append(pa.table({**keys, **kept, **extra}))
        self.pending_rows += block.num_rows
        if self.pending_rows >= self.flush_rows:
            return self.flush()
        return self.schema.empty_table()

    def _lineage(self, block: pa.Table) -> None:
        """Count results per (dataset sha256, rubric version): one pair per block, usually."""
        import pyarrow.compute as pc

        if not block.num_rows:
            return
        shas = pc.unique(block["dataset_sha256"])
        versions = pc.unique(block["rubric_version"])
        if len(shas) == 1 and len(versions) == 1:
            self.lineages[(shas[0].as_py(), versions[0].as_py())] += block.num_rows
            return
        pairs = block.group_by(["dataset_sha256", "rubric_version"], use_threads=False).aggregate(
            [([], "count_all")]
        )
        for sha, version, count in zip(
            pairs["dataset_sha256"].to_pylist(),
            pairs["rubric_version"].to_pylist(),
            pairs["count_all"].to_pylist(),
            strict=True,
        ):
            self.lineages[(sha, version)] += count

    def flush(self) -> pa.Table:
        """Look the buffered results up among the gold cases (one hash table for all of them):
        unknown or superseded cases, response hashes and partitions that differ are refused."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if not self.pending:
            return self.schema.empty_table()
        t = pa.concat_tables(self.pending)  # chunked: no copy of the buffered results
        self.pending, self.pending_rows = [], 0
        if not t.num_rows:
            return self.schema.empty_table()
        g = pc.index_in(t["case_id"], value_set=self.ids)
        if g.null_count:
            raise ValueError("unknown case")
        if not _all(pc.take(self.active, g)):
            raise ValueError("superseded case")
        if not _all(pc.equal(t["response_hash"], pc.take(self.hashes, g))) or not _all(
            pc.equal(t["partition"], pc.take(self.partitions, g))
        ):
            raise ValueError("response hash or partition differs from the gold's")
        columns = {name: t[name] for name, _ in _KEPT if name != "g"}
        return pa.table({"g": g, **columns}, schema=self.schema)


def _any(mask: Any) -> bool:
    import pyarrow.compute as pc

    return bool(pc.any(mask).as_py())


def _all(mask: Any) -> bool:
    """True when every value is true (and for no values at all)."""
    import pyarrow.compute as pc

    return not _any(pc.invert(mask))


@dataclass(frozen=True)
class _Read:
    """The results, read, checked and joined to gold rows: the analysed repeat's rows in scope
    (columns :data:`_KEPT`) and the counts of the others."""

    rows: pa.Table
    read: ColumnarResults
    joiner: _Joiner
    kept: Kept


def _in_partition(index: GoldIndex, partition: str | None) -> Any:
    """Per gold row: whether it is in ``partition`` (every row for None)."""
    import numpy as np
    import pyarrow.compute as pc

    if partition is None:
        return np.ones(index.table.num_rows, dtype=bool)
    return _numpy(pc.equal(index.table["partition"], partition))


def _read(
    index: GoldIndex, results: str | Path, labels: list[str], partition: str | None, repeat: int
) -> _Read | None:
    """Read and join the results, shard after shard, keeping only the analysed repeat's rows in
    scope; None when any check fails or the input is unusual."""
    import pyarrow as pa

    joiner = _Joiner(index.table, pa.array(labels, pa.string()))
    kept = Kept(_in_partition(index, partition), repeat)
    read = read_columnar(results, lambda block: kept.take(joiner.block(block)))
    if read is None:
        return None  # refused: the per-record path names every problem
    try:
        rows = pa.concat_tables([read.table, kept.take(joiner.flush())])
    except ValueError:
        return None
    if kept.results_read == 0 or len(read.identities) != 1:
        return None  # empty, or several judges
    if kept.duplicates_or_late_attempts():
        return None  # a duplicate result, or an attempt after a verdict
    return _Read(rows, read, joiner, kept)


def _lineage(
    index: GoldIndex,
    joiner: _Joiner,
    manifest: RunManifest | None,
    results: str | Path,
    allow_gold_change: bool,
) -> Lineage | None:
    """The lineage check when the results are the gold's own; None otherwise."""
    gold_lineage = (index.sha256, index.rubric.version)
    if manifest is not None and manifest.rubric_version is not None:
        if (manifest.dataset_sha256, manifest.rubric_version) != gold_lineage:
            return None  # another gold
    elif set(joiner.lineages) != {gold_lineage}:
        return None  # another gold, mixed or missing lineage
    lineage, problems = check_lineage(
        index,  # type: ignore[arg-type]  # offers what a comparable check reads
        lineages=joiner.lineages,
        run_ids=sorted(joiner.run_ids),
        manifest=manifest,
        manifest_path=manifest_path_for(results),
        allow_gold_change=allow_gold_change,
    )
    return None if problems or not lineage.comparable else lineage


@dataclass(frozen=True)
class _Scope:
    """The cases in scope as integer positions, and what became of each."""

    pos: Any
    """Gold rows of the cases in scope (active, of the partition), in file order."""
    final: Any
    """Result row of each case's counted (last) attempt of the repeat, -1 when none."""
    col: Any
    """Each case's confusion column: its verdict's vocabulary position, then error, missing."""
    attempts: Any
    """Attempts of the analysed repeat per case."""
    human: Any
    """Each case's adjudicated label as a vocabulary position."""
    superseded: int


def _scope(index: GoldIndex, joined: _Read, labels: list[str]) -> _Scope | None:
    """Final attempts per case in scope (``joined.rows``: the analysed repeat's results in
    scope, every attempt); None when a gold label is outside the vocabulary."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    gold, res = index.table, joined.rows
    active = _numpy(gold["active"])
    g, attempts = _numpy(res["g"]), _numpy(res["attempt"])
    by_case = np.lexsort((attempts, g))  # per case, its last attempt last
    sorted_g = g[by_case]
    last = np.ones(len(sorted_g), dtype=bool)
    last[:-1] = sorted_g[1:] != sorted_g[:-1]
    final_of = np.full(len(active), -1, dtype=np.int64)  # gold row -> its final result row
    final_of[sorted_g[last]] = by_case[last]
    pos = np.flatnonzero(active & joined.kept.in_partition)
    human = pc.index_in(pc.take(gold["label"], pa.array(pos)), value_set=pa.array(labels))
    if human.null_count:
        return None
    final = final_of[pos]
    answered = final >= 0
    col = np.full(len(pos), len(labels) + 1, dtype=np.int64)  # missing
    has_error = _numpy(pc.is_valid(res["error_kind"]))
    code = _numpy(res["code"], -1)
    col[answered] = np.where(has_error[final[answered]], len(labels), code[final[answered]])
    return _Scope(
        pos=pos,
        final=final,
        col=col,
        attempts=np.bincount(g, minlength=len(active))[pos],
        human=_numpy(human).astype(np.int64),
        superseded=len(g) - int(last.sum()),
    )


def _class_codes(rubric: Rubric, labels: list[str]) -> Any:
    """``[human, column] -> ERROR_CLASSES position``: every verdict classified once."""
    import numpy as np

    table = np.empty((len(labels), len(labels) + 2), dtype=np.int64)
    for h, human in enumerate(labels):
        for j, judge in enumerate(labels):
            table[h, j] = ERROR_CLASSES.index(classify(human, judge, view=rubric.pass_fail))
    table[:, len(labels)] = ERROR_CLASSES.index("error")
    table[:, len(labels) + 1] = ERROR_CLASSES.index("missing")
    return table


def _coded(codes: Any, names: Sequence[str], valid: Any = None) -> pa.Array:
    """Strings from positions into ``names`` (null where ``valid`` is False)."""
    import pyarrow as pa

    mask = None if valid is None else ~valid
    return pa.DictionaryArray.from_arrays(
        pa.array(codes, pa.int32(), mask=mask), pa.array(list(names), pa.string())
    ).cast(pa.string())


def _cases(index: GoldIndex, res: pa.Table, scope: _Scope, labels: list[str]) -> pa.Table:
    """The cases in scope as :data:`~workbench.align.CASE_COLUMNS`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(labels)
    verdict, error = scope.col < n, scope.col == n
    final = pa.array(scope.final, pa.int64(), mask=scope.final < 0)  # null: no result

    def counted(name: str) -> Any:
        return pc.take(res[name], final)

    outcome = (~verdict).astype("int64") + (~(verdict | error)).astype("int64")
    positions = pa.array(scope.pos, pa.int64())
    return pa.table(
        {
            "row": positions,
            "case_id": pc.take(index.table["case_id"], positions),
            "slice": pc.take(index.table["slice"], positions),
            "partition": pc.take(index.table["partition"], positions),
            "human_label": _coded(scope.human, labels),
            "outcome": _coded(outcome, OUTCOMES),
            "judge_label": _coded(scope.col, labels, verdict),
            "error_class": _coded(
                _class_codes(index.rubric, labels)[scope.human, scope.col], ERROR_CLASSES
            ),
            "error_kind": counted("error_kind"),  # null but for errors
            "reason": pc.if_else(pa.array(verdict), counted("reason"), counted("error_message")),
            "attempts": pa.array(scope.attempts, pa.int64()),
            **_usage(res, scope, index.table.num_rows),
            "shard": counted("shard"),
            "line": counted("line"),
            "group": pc.take(index.table["group"], positions),
            "evidence_truncated": counted("evidence_truncated"),
        }
    )


def _usage(res: pa.Table, scope: _Scope, gold_rows: int) -> dict[str, pa.Array]:
    """Per case in scope: calls not reused from the cache, their cost and tokens."""
    import numpy as np
    import pyarrow as pa

    g = _numpy(res["g"])
    called = ~_numpy(res["cached"])

    def total(name: str) -> Any:
        values = _numpy(res[name], 0)
        weights = np.where(called, values, 0).astype(np.float64)
        return np.bincount(g, weights=weights, minlength=gold_rows)[scope.pos]

    return {
        "calls": pa.array(np.bincount(g[called], minlength=gold_rows)[scope.pos], pa.int64()),
        "cost_usd": pa.array(total("cost_usd"), pa.float64()),
        "tokens_in": pa.array(total("tokens_in").astype(np.int64), pa.int64()),
        "tokens_out": pa.array(total("tokens_out").astype(np.int64), pa.int64()),
    }


def evidence_columnar(
    index: GoldIndex,
    results: str | Path,
    *,
    partition: str | None,
    repeat: int,
    allow_gold_change: bool,
    partition_source: Literal["option", "run_manifest", "all"] | None,
    gold_path: str,
) -> tuple[AlignmentReport, pa.Table] | None:
    """The alignment report and the cases in scope, columnar; None: use the per-record path."""
    manifest = read_run_manifest(results)  # unreadable: WorkbenchError, as on the per-record path
    if manifest is not None and getattr(manifest, "sampling", None) is not None:
        return None  # a sampled scope: the per-record path verifies the plan
    labels = list(index.rubric.labels)
    joined = _read(index, results, labels, partition, repeat)
    if joined is None:
        return None
    lineage = _lineage(index, joined.joiner, manifest, results, allow_gold_change)
    if lineage is None:
        return None
    scope = _scope(index, joined, labels)
    if scope is None:
        return None
    cases = _cases(index, joined.rows, scope, labels)
    read = joined.read
    fingerprint = next(iter(read.identities))
    report = cases_report(
        cases,
        index.rubric,
        lineage=lineage,
        sampled_out={},
        dataset_sha256=index.sha256,
        gold_path=gold_path,
        results_path=str(results),
        results_sha256=read.sha256,
        judge=read.identities[fingerprint],
        judge_fingerprint=fingerprint,
        partition=partition,
        repeat=repeat,
        results_read=joined.kept.results_read,
        excluded_other_partition=joined.kept.excluded,
        other_repeats=joined.kept.other_repeats,
        superseded_attempts=scope.superseded,
        partition_source=partition_source,
    )
    return report, cases
