"""The alignment report as columnar joins and group-by counts (Arrow compute).

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
    from ._report import AlignmentReport, SliceAlignment


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
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..runs._costs import costs_from_usage
    from ._report import ERROR_COLUMN, MISSING_COLUMN, AlignmentReport, CaseError, Confusion

    manifest = read_run_manifest(results)  # unreadable: WorkbenchError, as on the per-record path
    rubric = index.rubric
    if rubric.ordered or (manifest is not None and getattr(manifest, "sampling", None) is not None):
        return None  # ordinal figures and sampled scopes: the per-record path computes them
    labels = list(rubric.labels)
    gold = index.table
    gold_keys = gold.select(["case_id", "response_hash", "partition", "active"]).rename_columns(
        ["case_id", "g_hash", "g_partition", "active"]
    )
    vocabulary = pa.array(labels, pa.string())
    lineages: Counter[tuple[str | None, str | None]] = Counter()
    run_ids: set[str] = set()

    def per_block(block: pa.Table) -> pa.Table:
        """The join rules on one block (any breach: the per-record path names every one)."""
        joined = block.join(gold_keys, keys="case_id", join_type="left outer")
        if (
            joined.num_rows != block.num_rows
            or joined["active"].null_count
            or not pc.all(joined["active"]).as_py()
        ):
            raise ValueError("unknown or superseded case")
        if (
            not pc.all(pc.equal(joined["response_hash"], joined["g_hash"])).as_py()
            or not pc.all(pc.equal(joined["partition"], joined["g_partition"])).as_py()
        ):
            raise ValueError("response hash or partition differs from the gold's")
        value, error_kind = joined["value"], joined["error_kind"]
        if pc.any(pc.and_(pc.is_null(value), pc.is_null(error_kind))).as_py():
            raise ValueError("score-only result")
        if pc.any(
            pc.and_(pc.is_valid(value), pc.invert(pc.is_in(value, value_set=vocabulary)))
        ).as_py():
            raise ValueError("verdict outside the vocabulary")
        pairs = block.group_by(["dataset_sha256", "rubric_version"], use_threads=False).aggregate(
            [([], "count_all")]
        )
        for sha, version, count in zip(
            pairs["dataset_sha256"].to_pylist(),
            pairs["rubric_version"].to_pylist(),
            pairs["count_all"].to_pylist(),
            strict=True,
        ):
            lineages[(sha, version)] += count
        run_ids.update(pc.unique(block["run_id"]).to_pylist())
        return joined.select(
            [
                "case_id",
                "partition",
                "value",
                "error_kind",
                "error_message",
                "attempt",
                "repeat",
                "cost_usd",
                "tokens_in",
                "tokens_out",
                "cached_from_run_id",
            ]
        )

    read = read_columnar(results, per_block)
    if read is None or read.table.num_rows == 0 or len(read.identities) != 1:
        return None  # refused, empty, or several judges
    res = read.table
    n_read = res.num_rows
    keys = res.group_by(["case_id", "repeat", "attempt"]).aggregate([([], "count_all")])
    if keys.num_rows != n_read:
        return None  # duplicate result
    verdict_attempt = pc.if_else(
        pc.is_valid(res["value"]), res["attempt"], pa.scalar(None, pa.int64())
    )
    units = (
        pa.table(
            {
                "case_id": res["case_id"],
                "repeat": res["repeat"],
                "attempt": res["attempt"],
                "va": verdict_attempt,
            }
        )
        .group_by(["case_id", "repeat"])
        .aggregate([("attempt", "max"), ("va", "min")])
    )
    if pc.any(pc.greater(units["attempt_max"], units["va_min"])).as_py():
        return None  # attempt after verdict
    del keys, units, verdict_attempt
    fingerprints = list(read.identities)

    # -- lineage (only the gold's own is handled here)
    gold_lineage = (index.sha256, rubric.version)
    if manifest is not None and manifest.rubric_version is not None:
        if (manifest.dataset_sha256, manifest.rubric_version) != gold_lineage:
            return None  # another gold: the per-record path names what changed
    elif set(lineages) != {gold_lineage}:
        return None  # another gold, mixed or missing lineage
    lineage, problems = check_lineage(
        index,  # type: ignore[arg-type]  # offers what a comparable check reads
        lineages=lineages,
        run_ids=sorted(run_ids),
        manifest=manifest,
        manifest_path=manifest_path_for(results),
        allow_gold_change=allow_gold_change,
    )
    if problems or not lineage.comparable:
        return None

    # -- scope, repeat, final attempts
    in_scope = res if partition is None else res.filter(pc.equal(res["partition"], partition))
    excluded = n_read - in_scope.num_rows
    this_repeat = in_scope.filter(pc.equal(in_scope["repeat"], repeat))
    other_repeats = in_scope.num_rows - this_repeat.num_rows
    per_case = this_repeat.group_by("case_id").aggregate([("attempt", "max"), ([], "count_all")])
    superseded = this_repeat.num_rows - per_case.num_rows
    final = this_repeat.join(
        per_case.rename_columns(["case_id", "attempt", "attempts"]),
        keys=["case_id", "attempt"],
        join_type="inner",
    )

    usage = _usage(this_repeat)

    active = gold.filter(gold["active"])
    if partition is not None:
        active = active.filter(pc.equal(active["partition"], partition))
    active = active.append_column("pos", pa.array(range(active.num_rows), pa.int64()))
    cases = (
        active.select(["case_id", "slice", "label", "pos"])
        .join(
            final.select(["case_id", "value", "error_kind", "error_message", "attempt"]),
            keys="case_id",
            join_type="left outer",
        )
        .sort_by("pos")
    )
    outcome_col = pc.if_else(
        pc.is_null(cases["attempt"]),
        pa.scalar(MISSING_COLUMN),
        pc.if_else(pc.is_valid(cases["error_kind"]), pa.scalar(ERROR_COLUMN), cases["value"]),
    )
    cases = cases.append_column("col", outcome_col)

    counts = cases.group_by(["slice", "label", "col"], use_threads=False).aggregate(
        [([], "count_all")]
    )
    confusion: dict[str, dict[tuple[str, str], int]] = {}
    for s, h, j, c in zip(
        *(counts[k].to_pylist() for k in ("slice", "label", "col", "count_all")), strict=True
    ):
        confusion.setdefault(s, {})[(h, j)] = c
    errors = cases.filter(pc.equal(cases["col"], ERROR_COLUMN))
    kinds = errors.group_by(["slice", "error_kind"], use_threads=False).aggregate(
        [([], "count_all")]
    )
    error_kinds: dict[str, dict[str, int]] = {}
    for s, k, c in zip(
        *(kinds[x].to_pylist() for x in ("slice", "error_kind", "count_all")), strict=True
    ):
        error_kinds.setdefault(s, {})[k or "unknown"] = c

    slice_order = list(rubric.slices)
    for s in pc.unique(cases["slice"]).to_pylist():  # file order of first appearance
        if s not in rubric.slices:
            slice_order.append(s)
    abstain = list(rubric.abstain_labels)
    slices = [
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

    columns = [*labels, ERROR_COLUMN, MISSING_COLUMN]
    table = [[overall_conf.get((h, j), 0) for j in columns] for h in labels]
    missing = cases.filter(pc.equal(cases["col"], MISSING_COLUMN))["case_id"].to_pylist()
    evaluator_errors = [
        CaseError(case_id=c, slice=s, kind=k, message=m)
        for c, s, k, m in zip(
            *(errors[x].to_pylist() for x in ("case_id", "slice", "error_kind", "error_message")),
            strict=True,
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
        slices=slices,
        comparable=lineage.comparable,
        gold_changes=[],
        lineage=lineage,
        partition_source=partition_source,
        costs=costs_from_usage(
            {(case, repeat): u for case, u in usage.items()},
            dict(zip(cases["case_id"].to_pylist(), cases["slice"].to_pylist(), strict=True)),
            {name: rubric.risk_of(name) for name in rubric.slices},
        ),
    )


def _usage(rows: Any) -> dict[str, tuple[int, float, int, int, int]]:
    """Per case, over every attempt of the analysed repeat: (calls, cost USD, tokens in, tokens
    out, cached attempts), as the per-record join's ``usage`` (a cached attempt costs nothing)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cached = pc.is_valid(rows["cached_from_run_id"])
    called = pc.invert(cached)
    zero_f, zero_i = pa.scalar(0.0, pa.float64()), pa.scalar(0, pa.int64())
    table = pa.table(
        {
            "case_id": rows["case_id"],
            "calls": pc.cast(called, pa.int64()),
            "cost": pc.if_else(called, pc.fill_null(rows["cost_usd"], zero_f), zero_f),
            "tin": pc.if_else(called, pc.fill_null(rows["tokens_in"], zero_i), zero_i),
            "tout": pc.if_else(called, pc.fill_null(rows["tokens_out"], zero_i), zero_i),
            "cached": pc.cast(cached, pa.int64()),
        }
    )
    sums = table.group_by("case_id", use_threads=False).aggregate(
        [("calls", "sum"), ("cost", "sum"), ("tin", "sum"), ("tout", "sum"), ("cached", "sum")]
    )
    columns = [
        sums[name].to_pylist()
        for name in ("case_id", "calls_sum", "cost_sum", "tin_sum", "tout_sum", "cached_sum")
    ]
    return {
        c: (int(a), float(b), int(i), int(o), int(k))
        for c, a, b, i, o, k in zip(*columns, strict=True)
    }


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
