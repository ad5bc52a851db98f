"""The cases in scope as one table (:data:`CASE_COLUMNS`), and the one computation of the
alignment report from it (:func:`cases_report`), whichever join built the table: the columnar one
(:mod:`workbench.align._columnar`) or the per-record one (:func:`join_cases`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..results import results_sha256
from ..stats import (
    GroupedRate,
    cohen_kappa_counts,
    grouped_rate,
    mean_absolute_error,
    ordinal_confusion,
    weighted_cohen_kappa,
    wilson_rate,
)
from ._join import Join, classify
from ._report import (
    ERROR_COLUMN,
    MISSING_COLUMN,
    AlignmentReport,
    CaseError,
    Confusion,
    OrdinalAlignment,
    SliceAlignment,
    has_pass_fail_view,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from ..gold import GoldIndex, Rubric
    from ..results import SliceCost
    from ._lineage import Lineage

CASE_COLUMNS = (
    ("row", "case_id", "slice", "partition", "human_label", "outcome", "judge_label")
    + ("error_class", "error_kind", "reason", "attempts", "calls", "cost_usd", "tokens_in")
    + ("tokens_out", "shard", "line", "group", "evidence_truncated")
)
"""The cases in scope in the gold file's order: ``row`` in the gold index (null when not given),
``reason`` of a verdict or an error, ``attempts`` of the analysed repeat, ``calls`` not reused
from the cache, their cost and tokens, the ``shard`` and ``line`` of the counted attempt, and
the case's gold ``group``, and how many judge-visible fields the counted attempt saw only part
of (``evidence_truncated``; null when the result did not measure it)."""

_NO_USAGE = (0, 0.0, 0, 0, 0)


def join_cases(join: Join, index: GoldIndex | None = None) -> pa.Table:
    """The cases of a per-record join as :data:`CASE_COLUMNS` (``row`` from ``index``, null
    without it; ``shard`` null: a joined case records only its line)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cases = join.cases
    ids = pa.array([c.case_id for c in cases], pa.string())
    rows = (
        pc.index_in(ids, value_set=index.table["case_id"])
        if index is not None
        else pa.nulls(len(ids), pa.int32())
    )
    strings = {
        name: pa.array([getattr(c, name) for c in cases], pa.string())
        for name in CASE_COLUMNS[2:10]
    }
    usage = [join.usage.get(c.case_id, _NO_USAGE) for c in cases]
    i64 = pa.int64()
    kinds = {"calls": i64, "cost_usd": pa.float64(), "tokens_in": i64, "tokens_out": i64}
    numbers = {
        name: pa.array([u[i] for u in usage], kind) for i, (name, kind) in enumerate(kinds.items())
    }
    return pa.table(
        {
            "row": rows.cast(pa.int64()),
            "case_id": ids,
            **strings,
            "attempts": pa.array([c.attempts for c in cases], pa.int64()),
            **numbers,
            "shard": pa.nulls(len(ids), pa.int32()),
            "line": pa.array([c.result_line for c in cases], pa.int64()),
            "group": pa.array([join.dataset.cases[c.case_id].group for c in cases], pa.string()),
            "evidence_truncated": pa.array([c.evidence_truncated for c in cases], pa.int64()),
        }
    )


def alignment_report(
    join: Join,
    *,
    gold_path: str | None = None,
    results_path: str | None = None,
    partition_source: Literal["option", "run_manifest", "all"] | None = None,
) -> AlignmentReport:
    """The alignment report of a per-record :class:`Join`."""
    return join_report(
        join,
        join_cases(join),
        gold_path=gold_path,
        results_path=results_path,
        partition_source=partition_source,
    )


def join_report(
    join: Join,
    cases: pa.Table,
    *,
    gold_path: str | None,
    results_path: str | None,
    partition_source: Literal["option", "run_manifest", "all"] | None,
) -> AlignmentReport:
    """:func:`alignment_report` with the join's cases already as a table."""
    dataset = join.dataset
    return cases_report(
        cases,
        dataset.rubric,
        lineage=join.lineage,
        sampled_out=Counter(dataset.cases[c].slice for c in join.sampled_out),
        dataset_sha256=dataset.sha256,
        gold_path=gold_path,
        results_path=results_path,
        results_sha256=(
            results_sha256(results_path) if results_path and Path(results_path).exists() else None
        ),
        judge=join.judge,
        judge_fingerprint=join.judge_fingerprint,
        partition=join.partition,
        repeat=join.repeat,
        results_read=join.results_read,
        excluded_other_partition=join.excluded_other_partition,
        other_repeats=join.other_repeats,
        superseded_attempts=join.superseded_attempts,
        partition_source=partition_source,
        sampling_plan_sha256=join.sampling_plan_sha256,
        sampled_out_case_ids=list(join.sampled_out),
        sampling_rejected=join.sampling_rejected,
    )


def cases_report(
    cases: pa.Table,
    rubric: Rubric,
    *,
    lineage: Lineage | None,
    sampled_out: Mapping[str, int],
    **where: Any,
) -> AlignmentReport:
    """The alignment report of ``cases``. ``sampled_out``: per slice, the cases a declared
    sampling plan left out; ``where``: what the report says about its inputs."""
    changes = [] if lineage is None or lineage.comparable else list(lineage.gold_changes)
    return AlignmentReport(
        rubric_version=rubric.version,
        labels=list(rubric.labels),
        pass_label=rubric.pass_label,
        fail_label=rubric.fail_label,
        abstain_labels=list(rubric.abstain_labels),
        scale=rubric.scale.value,
        scale_labels=rubric.scale_labels if rubric.ordered else None,
        pass_labels=list(rubric.pass_labels) if rubric.pass_labels is not None else None,
        pass_fail_view=has_pass_fail_view(rubric),
        comparable=None if lineage is None else lineage.comparable,
        gold_changes=changes,
        lineage=lineage,
        **_figures(cases, rubric, sampled_out),
        **where,
    )


def _numpy(column: Any, fill: int | None = None) -> Any:
    """A column as a numpy array (nulls replaced by ``fill`` first)."""
    import pyarrow.compute as pc

    if fill is not None:
        column = pc.fill_null(column, fill)
    return column.to_numpy(zero_copy_only=False) if hasattr(column, "to_numpy") else column


def _codes(cases: pa.Table, labels: list[str]) -> tuple[list[str], Any, Any, Any]:
    """Slice names, and per case its slice index, label index and confusion column."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    vocabulary = pa.array(labels, pa.string())
    slices = pc.dictionary_encode(cases["slice"].combine_chunks())
    human = _numpy(pc.index_in(cases["human_label"], value_set=vocabulary)).astype(np.int64)
    judge = _numpy(pc.index_in(cases["judge_label"], value_set=vocabulary), -1)
    error = _numpy(pc.equal(cases["outcome"], "error"))
    col = np.where(judge >= 0, judge, np.where(error, len(labels), len(labels) + 1))
    codes = _numpy(slices.indices).astype(np.int64)
    return slices.dictionary.to_pylist(), codes, human, col.astype(np.int64)


def _figures(cases: pa.Table, rubric: Rubric, sampled_out: Mapping[str, int]) -> dict[str, Any]:
    """The report's figures: confusion, slices, overall, errors, missing cases, costs."""
    import pyarrow.compute as pc

    labels = list(rubric.labels)
    columns = [*labels, ERROR_COLUMN, MISSING_COLUMN]
    overall, slices, counts = _rows(cases, rubric, sampled_out)
    missing = cases.filter(pc.equal(cases["outcome"], "missing"))["case_id"].to_pylist()
    cut = cases.filter(pc.fill_null(pc.greater(cases["evidence_truncated"], 0), False))
    return {
        "status": "incomplete" if missing else "complete",
        "missing_case_ids": missing,
        "evidence_truncated_case_ids": cut["case_id"].to_pylist(),
        "evaluator_errors": _case_errors(cases),
        "confusion": Confusion(
            rows=list(labels),
            columns=columns,
            counts=[[counts.get((h, j), 0) for j in columns] for h in labels],
        ),
        "overall": overall,
        "slices": slices,
        "costs": _costs(cases, {name: rubric.risk_of(name) for name in rubric.slices}),
    }


def case_rows(cases: pa.Table, rubric: Rubric) -> tuple[SliceAlignment, list[SliceAlignment]]:
    """The ``(all)`` row and one row per value of the ``slice`` column of ``cases`` (every rubric
    slice listed), as the alignment report computes them."""
    overall, slices, _ = _rows(cases, rubric, {})
    return overall, slices


def _case_errors(cases: pa.Table) -> list[CaseError]:
    import pyarrow.compute as pc

    errors = cases.filter(pc.equal(cases["outcome"], "error"))
    return [
        CaseError(case_id=c, slice=s, kind=k, message=m)
        for c, s, k, m in zip(
            *(errors[name].to_pylist() for name in ("case_id", "slice", "error_kind", "reason")),
            strict=True,
        )
    ]


def _rows(
    cases: pa.Table, rubric: Rubric, sampled_out: Mapping[str, int]
) -> tuple[SliceAlignment, list[SliceAlignment], Counter[tuple[str, str]]]:
    """The ``(all)`` row, the per-slice rows and the overall confusion counts."""
    import pyarrow.compute as pc

    labels = list(rubric.labels)
    columns = [*labels, ERROR_COLUMN, MISSING_COLUMN]
    slice_names, slice_code, human, col = _codes(cases, labels)
    confusion = _confusion(slice_code, human, col, slice_names, labels, columns)
    errors = cases.filter(pc.equal(cases["outcome"], "error"))
    kinds: dict[str, Counter[str]] = {}
    for name, kind in zip(
        errors["slice"].to_pylist(), errors["error_kind"].to_pylist(), strict=True
    ):
        kinds.setdefault(name, Counter())[kind or "unknown"] += 1
    overall: Counter[tuple[str, str]] = Counter()
    for conf in confusion.values():
        overall.update(conf)
    pairs = _ordinal_pairs(cases) if rubric.ordered else {}
    order = [*rubric.slices, *(s for s in slice_names if s not in rubric.slices)]
    grouped = _grouped_rates(cases, rubric, slice_names, slice_code, human, col)
    everything = _slice(
        "(all)",
        rubric,
        overall,
        sum(kinds.values(), Counter[str]()),
        pairs.get(None),
        sum(sampled_out.values()),
    ).model_copy(update=grouped.get(None, {}))
    slices = [
        _slice(
            name,
            rubric,
            confusion.get(name, {}),
            kinds.get(name, {}),
            pairs.get(name, ([], [])),
            sampled_out.get(name, 0),
        ).model_copy(update=grouped.get(name, {}))
        for name in order
    ]
    return everything, slices, overall


def _grouped_rates(
    cases: pa.Table, rubric: Rubric, slice_names: list[str], slice_code: Any, human: Any, col: Any
) -> dict[str | None, dict[str, GroupedRate]]:
    """Per slice (None: all cases), the false-pass and false-fail rates over the gold's groups
    (:func:`workbench.stats.grouped_rate`), for the rates whose denominator has a group holding
    more than one case: elsewhere the Wilson interval already counts independent cases."""
    import numpy as np
    import pyarrow.compute as pc

    sides = [
        {"pass": 1, "fail": -1}.get(rubric.pass_fail(label) or "", 0) for label in rubric.labels
    ]
    side = np.array([*sides, 0, 0], dtype=np.int64)  # the error and missing columns: no side
    human_side, judge_side = side[human], side[col]
    decided = (human_side != 0) & (judge_side != 0)
    groups = pc.dictionary_encode(cases["group"].combine_chunks())
    group_code = _numpy(groups.indices).astype(np.int64)
    width = len(groups.dictionary)
    out: dict[str | None, dict[str, GroupedRate]] = {}
    by_slice = slice_code * width + group_code
    shape = (len(slice_names), width)
    for field, wanted in (("false_pass_rate_grouped", -1), ("false_fail_rate_grouped", 1)):
        mask = decided & (human_side == wanted)
        wrong = mask & (judge_side != human_side)
        n_all, k_all = (np.bincount(group_code[m], minlength=width) for m in (mask, wrong))
        n_slice, k_slice = (
            np.bincount(by_slice[m], minlength=shape[0] * width).reshape(shape)
            for m in (mask, wrong)
        )
        for name, n, k in [(None, n_all, k_all), *zip(slice_names, n_slice, k_slice, strict=True)]:
            if n.max(initial=0) > 1:
                used = n > 0
                out.setdefault(name, {})[field] = grouped_rate(k[used].tolist(), n[used].tolist())
    return out


def _confusion(
    slice_code: Any,
    human: Any,
    col: Any,
    slice_names: list[str],
    labels: list[str],
    columns: list[str],
) -> dict[str, dict[tuple[str, str], int]]:
    """``{slice: {(human label, column): cases}}`` (only counts above zero)."""
    import numpy as np

    cells = (slice_code * len(labels) + human) * len(columns) + col
    tally = np.bincount(cells, minlength=len(slice_names) * len(labels) * len(columns))
    confusion: dict[str, dict[tuple[str, str], int]] = {}
    for cell in np.flatnonzero(tally).tolist():
        s, rest = divmod(cell, len(labels) * len(columns))
        h, j = divmod(rest, len(columns))
        confusion.setdefault(slice_names[s], {})[(labels[h], columns[j])] = int(tally[cell])
    return confusion


def _ordinal_pairs(cases: pa.Table) -> dict[str | None, tuple[list[str], list[str]]]:
    """Per slice (None: all), the adjudicated and judge labels of every verdict."""
    import pyarrow.compute as pc

    verdicts = cases.filter(pc.equal(cases["outcome"], "verdict"))
    out: dict[str | None, tuple[list[str], list[str]]] = {None: ([], [])}
    for name, human, judge in zip(
        *(verdicts[c].to_pylist() for c in ("slice", "human_label", "judge_label")), strict=True
    ):
        for key in (name, None):
            humans, judges = out.setdefault(key, ([], []))
            humans.append(human)
            judges.append(judge)
    return out


def _slice(
    name: str,
    rubric: Rubric,
    conf: Mapping[tuple[str, str], int],
    error_kinds: Mapping[str, int],
    pairs: tuple[list[str], list[str]] | None,
    sampled_out: int,
) -> SliceAlignment:
    """One slice's figures from its ``{(human label, column): cases}`` counts and ``pairs``."""
    labels = list(rubric.labels)
    side = {label: rubric.pass_fail(label) for label in labels}
    abstain = set(rubric.abstain_labels)
    verdict = {(h, j): c for (h, j), c in conf.items() if j in side}
    klass: Counter[str] = Counter()
    by_column: Counter[str] = Counter()
    by_human: Counter[str] = Counter()
    for (h, j), c in conf.items():
        by_column[j] += c
        by_human[h] += c
    for (h, j), c in verdict.items():
        klass[classify(h, j, view=rubric.pass_fail)] += c
    two_way = [(h, c) for (h, j), c in verdict.items() if side[j] is not None]
    n, verdicts = sum(conf.values()), sum(verdict.values())
    abstentions = sum(c for (_, j), c in verdict.items() if j in abstain)
    return SliceAlignment(
        slice=name,
        risk=rubric.risk_of(name) if name != "(all)" else None,
        n=n,
        verdicts=verdicts,
        abstentions=abstentions,
        decided=verdicts - abstentions,
        abstention_rate=wilson_rate(abstentions, verdicts),
        coverage=wilson_rate(verdicts - abstentions, n),
        judge_labels={label: by_column[label] for label in labels},
        human_labels_with_verdict={
            label: sum(c for (h, _), c in verdict.items() if h == label) for label in labels
        },
        errors=by_column[ERROR_COLUMN],
        missing=by_column[MISSING_COLUMN],
        complete=by_column[MISSING_COLUMN] == 0,
        aligned=klass["aligned"],
        agreement=wilson_rate(klass["aligned"], verdicts),
        human_passes=sum(c for h, c in by_human.items() if side.get(h) == "pass"),
        human_fails=sum(c for h, c in by_human.items() if side.get(h) == "fail"),
        false_passes=klass["false_pass"],
        false_fails=klass["false_fail"],
        other_disagreements=klass["disagreement"],
        false_pass_rate=wilson_rate(
            klass["false_pass"], sum(c for h, c in two_way if side[h] == "fail")
        ),
        false_fail_rate=wilson_rate(
            klass["false_fail"], sum(c for h, c in two_way if side[h] == "pass")
        ),
        cohen_kappa=cohen_kappa_counts(verdict, labels),
        errors_by_kind=dict(sorted(error_kinds.items())),
        ordinal=ordinal_alignment(*pairs, rubric) if rubric.ordered and pairs else None,
        sampled_out=sampled_out,
    )


def empty_slice(name: str, rubric: Rubric) -> SliceAlignment:
    """The figures of a slice without cases in scope."""
    return _slice(name, rubric, {}, {}, ([], []), 0)


def ordinal_alignment(
    human: Sequence[str], judge: Sequence[str], rubric: Rubric
) -> OrdinalAlignment:
    """Weighted kappa, mean absolute error and the ordinal confusion of the verdicts whose
    adjudicated (``human``) and ``judge`` labels are both on the scale (the rest: ``off_scale``)."""
    scale = rubric.scale_labels
    on_scale = set(scale)
    pairs = [(h, j) for h, j in zip(human, judge, strict=True) if h in on_scale and j in on_scale]
    hs = [h for h, _ in pairs]
    js = [j for _, j in pairs]
    numeric = rubric.scale.value == "numeric"
    values = rubric.scale_values if numeric else None
    return OrdinalAlignment(
        scale="numeric" if numeric else "ordinal",
        labels=list(scale),
        pairs=len(pairs),
        off_scale=len(human) - len(pairs),
        weighted_kappa_linear=weighted_cohen_kappa(hs, js, scale, "linear", values),
        weighted_kappa_quadratic=weighted_cohen_kappa(hs, js, scale, "quadratic", values),
        mean_absolute_error=mean_absolute_error(hs, js, scale, values),
        confusion=ordinal_confusion(hs, js, scale),
    )


def _costs(cases: pa.Table, risks: dict[str, str | None]) -> list[SliceCost]:
    """Per slice, then ``(all)``: cost and tokens per judged case (cached ones apart)."""
    import numpy as np

    from ..results import ALL_SLICES, SliceCost, distribution
    from ..sampling import RISK_ORDER

    calls = _numpy(cases["calls"])
    cost = _numpy(cases["cost_usd"])
    tokens_in = _numpy(cases["tokens_in"]).astype(np.float64)
    tokens_out = _numpy(cases["tokens_out"]).astype(np.float64)
    called = calls > 0
    cached = ~called & (_numpy(cases["attempts"]) > 0)
    case_slice = np.array(cases["slice"].to_pylist(), dtype=object)
    names = sorted(
        set(case_slice[called | cached].tolist()),
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
        of_slice = case_slice == name
        out.append(
            row_for(name, risks.get(name), called & of_slice, int((cached & of_slice).sum()))
        )
    out.append(row_for(ALL_SLICES, None, called, int(cached.sum())))
    return out
