"""The alignment report as columnar joins and counts (Arrow compute, numpy over row numbers).

Why pyarrow compute and not DuckDB: pyarrow is already a dependency (pandas' Parquet engine),
its JSON reader parses JSON Lines in C++ threads, and a join plus a handful of group-by counts
is all the report needs; DuckDB would add a ~60 MB wheel for the same plan. The benchmark
(bench/bench_align.py) still runs the same query in DuckDB, when installed, as the yardstick.

:func:`align_columnar` computes the same :class:`~workbench.align.AlignmentReport` as the
per-record join (:func:`~workbench.align.join_results` and
:func:`~workbench.align.alignment_report`; tests/test_align_columnar.py asserts equal reports)
for input that passes every check. It returns None (the caller then runs the per-record path,
which reports every problem with its line, in the same words as always) when the results
break the contract or any join rule: unknown or superseded cases, response-hash or partition
mismatches, score-only results, verdicts outside the vocabulary, duplicates, attempts after a
verdict, mixed judges, or a lineage that does not hold.

Results are joined to the gold by integer row numbers: their case ids are looked up among the
gold's once per :data:`FLUSH_ROWS` results, and from then on every key is an integer (gold row,
repeat, attempt, vocabulary code), so no per-result Python object is built.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..gold._index import GoldIndex
from ..results._columnar import read_columnar
from ..stats import cohen_kappa_counts, wilson_rate
from ._join import classify
from ._lineage import check_lineage, manifest_path_for, read_run_manifest

if TYPE_CHECKING:
    import pyarrow as pa

    from ..runs._costs import SliceCost
    from ._report import AlignmentReport, SliceAlignment


FLUSH_ROWS = 1 << 20
"""Results buffered before one lookup of their case ids among the gold's: the lookup builds a
hash table over every gold case id, so it is built once per this many results (at most once
per call below that), not once per block read."""

_KEPT = (
    ("g", "int32"),
    ("code", "int32"),
    ("error_kind", "string"),
    ("error_message", "string"),
    ("attempt", "int64"),
    ("repeat", "int64"),
    ("cost_usd", "float64"),
    ("tokens_in", "int64"),
    ("tokens_out", "int64"),
    ("cached", "bool"),
)
"""What is kept per result once joined: ``g`` is the gold row number (the join key from then
on: integers, never case-id strings), ``code`` the verdict's position in the vocabulary."""


def _kept_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema([(name, pa.type_for_alias(kind)) for name, kind in _KEPT])


class _Joiner:
    """The join rules, checked on result blocks as they are read (any breach raises
    ``ValueError``: the per-record path then names every one); keeps :data:`_KEPT`."""

    def __init__(self, gold: pa.Table, vocabulary: pa.Array) -> None:
        self.ids = gold["case_id"].combine_chunks()
        self.hashes = gold["response_hash"].combine_chunks()
        self.partitions = gold["partition"].combine_chunks()
        self.active = gold["active"].combine_chunks()
        self.vocabulary = vocabulary
        self.schema = _kept_schema()
        self.pending: list[pa.Table] = []
        self.pending_rows = 0
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
        self.pending.append(
            pa.table(
                {
                    "case_id": block["case_id"],
                    "response_hash": block["response_hash"],
                    "partition": block["partition"],
                    "code": code,
                    "error_kind": error_kind,
                    "error_message": block["error_message"],
                    "attempt": block["attempt"],
                    "repeat": block["repeat"],
                    "cost_usd": block["cost_usd"],
                    "tokens_in": block["tokens_in"],
                    "tokens_out": block["tokens_out"],
                    "cached": pc.is_valid(block["cached_from_run_id"]),
                }
            )
        )
        self.pending_rows += block.num_rows
        if self.pending_rows >= FLUSH_ROWS:
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
        t = pa.concat_tables(self.pending).combine_chunks()
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

    return not bool(pc.any(pc.invert(mask)).as_py())


def _numpy(column: Any, fill: int | None = None) -> Any:
    """A column as a numpy array (nulls replaced by ``fill`` first)."""
    import pyarrow.compute as pc

    if fill is not None:
        column = pc.fill_null(column, fill)
    return column.to_numpy(zero_copy_only=False) if hasattr(column, "to_numpy") else column


def _duplicates_or_late_attempts(
    g: Any, repeat: Any, attempt: Any, verdict: Any, rows: int
) -> bool:
    """Whether a (case, repeat, attempt) key repeats, or a unit has an attempt after its verdict.

    Keys are one int64, ``(g * repeats + repeat) * attempts + attempt``, when that cannot
    overflow (the usual case: small repeat and attempt numbers); else the three integer columns.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    repeats = int(repeat.max()) + 1
    attempts = int(attempt.max()) + 1
    cases = int(g.max()) + 1
    big = np.iinfo(np.int64).max
    if cases * repeats <= big // attempts:
        unit = g.astype(np.int64) * repeats + repeat
        key = unit * attempts + attempt
        if pc.count_distinct(pa.array(key)).as_py() != rows:
            return True
        keys = pa.table({"unit": unit})
        unit_names = ["unit"]
    else:
        keys = pa.table({"g": g, "repeat": repeat, "attempt": attempt})
        if (
            keys.group_by(["g", "repeat", "attempt"]).aggregate([([], "count_all")]).num_rows
            != rows
        ):
            return True
        keys = keys.drop_columns(["attempt"])
        unit_names = ["g", "repeat"]
    verdict_attempt = np.where(verdict, attempt, big)
    units = (
        keys.append_column("attempt", pa.array(attempt))
        .append_column("va", pa.array(verdict_attempt))
        .group_by(unit_names)
        .aggregate([("attempt", "max"), ("va", "min")])
    )
    return _any(pc.greater(units["attempt_max"], units["va_min"]))


def align_columnar(
    index: GoldIndex,
    results: str | Path,
    *,
    partition: str | None,
    repeat: int,
    allow_gold_change: bool,
    partition_source: Literal["option", "run_manifest", "all"] | None,
    gold_path: str,
) -> AlignmentReport | None:
    """The alignment report, columnar; None when the per-record path must judge the input."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from ._report import ERROR_COLUMN, MISSING_COLUMN, AlignmentReport, CaseError, Confusion

    manifest = read_run_manifest(results)  # unreadable: WorkbenchError, as on the per-record path
    rubric = index.rubric
    if rubric.ordered or (manifest is not None and getattr(manifest, "sampling", None) is not None):
        return None  # ordinal figures and sampled scopes: the per-record path computes them
    labels = list(rubric.labels)
    gold = index.table
    joiner = _Joiner(gold, pa.array(labels, pa.string()))
    read = read_columnar(results, joiner.block)
    if read is None:
        return None  # refused: the per-record path names every problem
    try:
        res = pa.concat_tables([read.table, joiner.flush()])
    except ValueError:
        return None
    n_read = res.num_rows
    if n_read == 0 or len(read.identities) != 1:
        return None  # empty, or several judges
    g = _numpy(res["g"])
    repeats = _numpy(res["repeat"])
    attempts = _numpy(res["attempt"])
    code = _numpy(res["code"], -1)
    if _duplicates_or_late_attempts(g, repeats, attempts, code >= 0, n_read):
        return None  # a duplicate result, or an attempt after a verdict
    fingerprints = list(read.identities)

    # -- lineage (only the gold's own is handled here)
    gold_lineage = (index.sha256, rubric.version)
    if manifest is not None and manifest.rubric_version is not None:
        if (manifest.dataset_sha256, manifest.rubric_version) != gold_lineage:
            return None  # another gold: the per-record path names what changed
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
    if problems or not lineage.comparable:
        return None

    # -- scope, repeat, final attempts (gold rows and result rows as integer positions)
    active = _numpy(gold["active"])
    if partition is None:
        gold_in_scope = np.ones(len(active), dtype=bool)
    else:
        gold_in_scope = _numpy(pc.equal(gold["partition"], partition))
    row_in_scope = gold_in_scope[g]
    in_scope = int(row_in_scope.sum())
    excluded = n_read - in_scope
    rows = np.flatnonzero(row_in_scope & (repeats == repeat))  # this repeat's results
    other_repeats = in_scope - len(rows)
    rows_g = g[rows]
    by_case = np.lexsort((attempts[rows], rows_g))  # per case, its last attempt last
    sorted_g = rows_g[by_case]
    last = np.ones(len(sorted_g), dtype=bool)
    last[:-1] = sorted_g[1:] != sorted_g[:-1]
    superseded = len(rows) - int(last.sum())
    final_of = np.full(len(active), -1, dtype=np.int64)  # gold row -> its final result row
    final_of[sorted_g[last]] = rows[by_case[last]]

    unit_sums = _unit_sums(res.take(pa.array(rows)))

    pos = np.flatnonzero(active & gold_in_scope)  # the cases in scope, in file order
    final = final_of[pos]
    answered = final >= 0
    error_col, missing_col = len(labels), len(labels) + 1
    has_error = _numpy(pc.is_valid(res["error_kind"]))
    col = np.full(len(pos), missing_col, dtype=np.int64)
    answered_rows = final[answered]
    col[answered] = np.where(has_error[answered_rows], error_col, code[answered_rows])

    slices = pc.dictionary_encode(gold["slice"].combine_chunks(), null_encoding="encode")
    humans = pc.dictionary_encode(gold["label"].combine_chunks(), null_encoding="encode")
    slice_names = slices.dictionary.to_pylist()
    human_names = humans.dictionary.to_pylist()
    slice_code_all = _numpy(slices.indices).astype(np.int64)
    slice_code = slice_code_all[pos]
    human_code = _numpy(humans.indices).astype(np.int64)[pos]
    columns = [*labels, ERROR_COLUMN, MISSING_COLUMN]
    cells = (slice_code * len(human_names) + human_code) * len(columns) + col
    tally = np.bincount(cells, minlength=len(slice_names) * len(human_names) * len(columns))
    confusion: dict[str, dict[tuple[str, str], int]] = {}
    for cell in np.flatnonzero(tally).tolist():
        s, rest = divmod(cell, len(human_names) * len(columns))
        h, j = divmod(rest, len(columns))
        confusion.setdefault(slice_names[s], {})[(human_names[h], columns[j])] = int(tally[cell])

    erred = np.flatnonzero(col == error_col)  # in file order
    error_rows = pa.array(final[erred])
    error_cases = pc.take(index.table["case_id"], pa.array(pos[erred])).to_pylist()
    error_slices = [slice_names[s] for s in slice_code[erred].tolist()]
    error_kind_list = pc.take(res["error_kind"], error_rows).to_pylist()
    error_messages = pc.take(res["error_message"], error_rows).to_pylist()
    error_kinds: dict[str, dict[str, int]] = {}
    for s, k in zip(error_slices, error_kind_list, strict=True):
        by_kind = error_kinds.setdefault(s, {})
        by_kind[k or "unknown"] = by_kind.get(k or "unknown", 0) + 1

    slice_order = list(rubric.slices)
    seen, first = np.unique(slice_code, return_index=True)
    for s in seen[np.argsort(first)].tolist():  # file order of first appearance
        if slice_names[s] not in rubric.slices:
            slice_order.append(slice_names[s])
    abstain = list(rubric.abstain_labels)
    slice_reports = [
        _slice(
            name,
            rubric.risk_of(name),
            confusion.get(name, {}),
            error_kinds.get(name, {}),
            labels,
            rubric.pass_label,
            rubric.fail_label,
            abstain,
        )
        for name in slice_order
    ]
    overall_conf: dict[tuple[str, str], int] = {}
    overall_kinds: dict[str, int] = {}
    for conf in confusion.values():
        for key, c in conf.items():
            overall_conf[key] = overall_conf.get(key, 0) + c
    for by_kind in error_kinds.values():
        for k, c in by_kind.items():
            overall_kinds[k] = overall_kinds.get(k, 0) + c
    overall = _slice(
        "(all)",
        None,
        overall_conf,
        overall_kinds,
        labels,
        rubric.pass_label,
        rubric.fail_label,
        abstain,
    )

    table = [[overall_conf.get((h, j), 0) for j in columns] for h in labels]
    missing = pc.take(index.table["case_id"], pa.array(pos[col == missing_col])).to_pylist()
    evaluator_errors = [
        CaseError(case_id=c, slice=s, kind=k, message=m)
        for c, s, k, m in zip(
            error_cases, error_slices, error_kind_list, error_messages, strict=True
        )
    ]
    fp = fingerprints[0]
    return AlignmentReport(
        dataset_sha256=index.sha256,
        rubric_version=rubric.version,
        gold_path=gold_path,
        results_path=str(results),
        results_sha256=read.sha256,
        judge=read.identities[fp],
        judge_fingerprint=fp,
        partition=partition,
        repeat=repeat,
        labels=labels,
        pass_label=rubric.pass_label,
        fail_label=rubric.fail_label,
        abstain_labels=list(rubric.abstain_labels),
        status="incomplete" if missing else "complete",
        results_read=n_read,
        excluded_other_partition=excluded,
        other_repeats=other_repeats,
        superseded_attempts=superseded,
        missing_case_ids=missing,
        evaluator_errors=evaluator_errors,
        confusion=Confusion(rows=list(labels), columns=columns, counts=table),
        overall=overall,
        slices=slice_reports,
        comparable=lineage.comparable,
        gold_changes=[],
        lineage=lineage,
        partition_source=partition_source,
        costs=_costs(
            unit_sums,
            [slice_names[s] for s in slice_code_all[_numpy(unit_sums["g"])].tolist()],
            {name: rubric.risk_of(name) for name in rubric.slices},
        ),
    )


def _unit_sums(rows: pa.Table) -> pa.Table:
    """Per case (gold row ``g``), over every attempt of the analysed repeat, in order of first
    appearance: calls, cost USD, tokens in, tokens out and cached attempts (``*_sum``), as the
    per-record join's ``usage`` (a cached attempt costs nothing)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cached = rows["cached"]
    called = pc.invert(cached)
    zero_f, zero_i = pa.scalar(0.0, pa.float64()), pa.scalar(0, pa.int64())
    table = pa.table(
        {
            "g": rows["g"],
            "calls": pc.cast(called, pa.int64()),
            "cost": pc.if_else(called, pc.fill_null(rows["cost_usd"], zero_f), zero_f),
            "tin": pc.if_else(called, pc.fill_null(rows["tokens_in"], zero_i), zero_i),
            "tout": pc.if_else(called, pc.fill_null(rows["tokens_out"], zero_i), zero_i),
            "cached": pc.cast(cached, pa.int64()),
        }
    )
    return table.group_by("g", use_threads=False).aggregate(
        [("calls", "sum"), ("cost", "sum"), ("tin", "sum"), ("tout", "sum"), ("cached", "sum")]
    )


def _costs(
    sums: pa.Table, slice_of_unit: list[str | None], risks: dict[str, str | None]
) -> list[SliceCost]:
    """:func:`~workbench.runs._costs.costs_from_usage` over per-unit sums held as columns: the
    same rows, values summed in the same order (so equal to the last bit), without a Python
    dict per unit."""
    import numpy as np

    from ..runs._costs import ALL_SLICES, SliceCost, distribution
    from ..sampling import RISK_ORDER

    calls = _numpy(sums["calls_sum"])
    cost = _numpy(sums["cost_sum"])
    tokens_in = _numpy(sums["tin_sum"]).astype(np.float64)
    tokens_out = _numpy(sums["tout_sum"]).astype(np.float64)
    called = calls > 0
    cached = ~called & (_numpy(sums["cached_sum"]) > 0)
    unit_slice = np.array(slice_of_unit, dtype=object)
    names = sorted(
        {s for s in set(slice_of_unit) if s},
        key=lambda s: (RISK_ORDER.get(risks.get(s) or "", len(RISK_ORDER)), s),
    )

    def row_for(name: str, risk: str | None, units: Any, cached_n: int) -> SliceCost:
        return SliceCost(
            slice=name,
            risk=risk,
            cases=int(units.sum()),
            calls=int(calls[units].sum()),
            cached=cached_n,
            cost_usd=distribution(cost[units].tolist()),
            tokens_in=distribution(tokens_in[units].tolist()),
            tokens_out=distribution(tokens_out[units].tolist()),
        )

    out = []
    for name in names:
        of_slice = unit_slice == name
        out.append(
            row_for(name, risks.get(name), called & of_slice, int((cached & of_slice).sum()))
        )
    out.append(row_for(ALL_SLICES, None, called, int(cached.sum())))
    return out


def _slice(
    name: str,
    risk: Any,
    conf: dict[tuple[str, str], int],
    error_kinds: dict[str, int],
    labels: list[str],
    pass_label: str | None,
    fail_label: str | None,
    abstain_labels: Sequence[str],
) -> SliceAlignment:
    """:func:`~workbench.align.slice_alignment` from a human x outcome count table."""
    from ._report import ERROR_COLUMN, MISSING_COLUMN, SliceAlignment

    vocab = set(labels)
    abstain = set(abstain_labels)
    verdict = {(h, j): c for (h, j), c in conf.items() if j in vocab}
    n = sum(conf.values())
    verdicts = sum(verdict.values())
    abstentions = sum(c for (_, j), c in verdict.items() if j in abstain)
    decided = verdicts - abstentions
    klass: dict[str, int] = {}
    for (h, j), c in verdict.items():
        k = classify(h, j, pass_label, fail_label)
        klass[k] = klass.get(k, 0) + c
    two_way = {
        (h, j): c
        for (h, j), c in verdict.items()
        if pass_label is not None and j in (pass_label, fail_label)
    }
    judged_fails = sum(c for (h, _), c in two_way.items() if h == fail_label)
    judged_passes = sum(c for (h, _), c in two_way.items() if h == pass_label)
    errors = sum(c for (_, j), c in conf.items() if j == ERROR_COLUMN)
    missing = sum(c for (_, j), c in conf.items() if j == MISSING_COLUMN)
    return SliceAlignment(
        slice=name,
        risk=risk,
        n=n,
        verdicts=verdicts,
        abstentions=abstentions,
        decided=decided,
        abstention_rate=wilson_rate(abstentions, verdicts),
        coverage=wilson_rate(decided, n),
        judge_labels={
            label: sum(c for (_, j), c in verdict.items() if j == label) for label in labels
        },
        human_labels_with_verdict={
            label: sum(c for (h, _), c in verdict.items() if h == label) for label in labels
        },
        errors=errors,
        missing=missing,
        complete=missing == 0,
        aligned=klass.get("aligned", 0),
        agreement=wilson_rate(klass.get("aligned", 0), verdicts),
        human_passes=sum(c for (h, _), c in conf.items() if h == pass_label) if pass_label else 0,
        human_fails=sum(c for (h, _), c in conf.items() if h == fail_label) if fail_label else 0,
        false_passes=klass.get("false_pass", 0),
        false_fails=klass.get("false_fail", 0),
        other_disagreements=klass.get("disagreement", 0),
        false_pass_rate=wilson_rate(klass.get("false_pass", 0), judged_fails),
        false_fail_rate=wilson_rate(klass.get("false_fail", 0), judged_passes),
        cohen_kappa=cohen_kappa_counts(verdict, labels),
        errors_by_kind=dict(sorted(error_kinds.items())),
    )
