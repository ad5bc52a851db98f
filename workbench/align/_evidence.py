"""One way to read evidence: judge results joined to their gold, once, for every analysis.

:func:`read_evidence` is what ``align``, ``gate`` and the review table read: the gold through
its validated columnar index (:func:`~workbench.gold.gold_index`, cached by dataset
sha256), the results through the one checked columnar reader
(:func:`~workbench.results._columnar.read_columnar`, a file or a directory of shards). It
returns the alignment report and the cases in scope as one table
(:data:`~workbench.align.CASE_COLUMNS`).

Input the columnar path cannot vouch for (a refused result, another gold, a sampled run) goes
through the per-record join (:func:`~workbench.align.align_results`), which names every problem
with its line; its cases become the same table (:func:`~workbench.align.join_cases`), and one
computation makes the report of either table (:mod:`workbench.align._cases`), so no reader
downstream has two paths.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .._io import bulk_load
from ..gold import GoldIndex, gold_index
from ._cases import join_cases, join_report
from ._lineage import align_results
from ._report import AlignmentReport

if TYPE_CHECKING:
    import pyarrow as pa

    from ..sampling import SamplingPlan

FLAGGED = ("false_pass", "false_fail", "abstained")
"""The case lists :func:`flagged_cases` gives per slice."""


@dataclass(frozen=True)
class Evidence:
    """Judge results joined to their gold: the report and its cases."""

    index: GoldIndex
    """The gold, as its validated columnar index."""
    report: AlignmentReport
    cases: pa.Table
    """Columns :data:`~workbench.align.CASE_COLUMNS`."""


def read_evidence(
    gold: str | Path,
    results: str | Path,
    *,
    partition: str | None = None,
    repeat: int = 0,
    allow_gold_change: bool = False,
    partition_source: Literal["option", "run_manifest", "all"] | None = None,
    sampling_plan: SamplingPlan | None = None,
) -> Evidence:
    """Read ``results`` against ``gold`` once: the alignment report and the cases in scope.

    Refuses (:class:`~workbench.errors.WorkbenchError`, every problem at once) what
    :func:`~workbench.align.align_results` refuses; ``sampling_plan`` is the declared plan
    whose sampled-out cases leave the scope (see there).
    """
    from ._columnar import evidence_columnar

    with bulk_load():
        index = gold_index(gold)  # validated once per dataset sha256, then read from the cache
        if sampling_plan is None:
            found = evidence_columnar(
                index,
                results,
                partition=partition,
                repeat=repeat,
                allow_gold_change=allow_gold_change,
                partition_source=partition_source,
                gold_path=str(gold),
            )
            if found is not None:
                _release_unused()
                return Evidence(index, *found)
        # Refused or unusual input (or a declared sampling plan): the per-record path names
        # every problem with its line.
        join = align_results(
            index.dataset(),
            results,
            partition=partition,
            repeat=repeat,
            allow_gold_change=allow_gold_change,
            sampling_plan=sampling_plan,
        )
        cases = join_cases(join, index)
        report = join_report(
            join,
            cases,
            gold_path=str(gold),
            results_path=str(results),
            partition_source=partition_source,
        )
        return Evidence(index, report, cases)


def _release_unused() -> None:
    """Hand the memory the results' parse freed back to the system: the allocator Arrow uses
    keeps it otherwise (60 MB at 100,000 results), and an analysis that goes on (the review
    table) would grow on top of it."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def align(
    gold: str | Path,
    results: str | Path,
    *,
    partition: str | None = None,
    repeat: int = 0,
    allow_gold_change: bool = False,
    partition_source: Literal["option", "run_manifest", "all"] | None = None,
    sampling_plan: SamplingPlan | None = None,
) -> AlignmentReport:
    """Load, join, check lineage and analyse in one call: the library form of ``workbench align``
    (the report of :func:`read_evidence`).

    ``results`` may be a file or a directory of result shards (JSON Lines or Parquet). Refuses
    results produced against another gold (see :func:`align_results`) unless
    ``allow_gold_change``, which marks the report not comparable. ``sampling_plan``: the
    declared plan whose sampled-out cases leave the scope (see :func:`align_results`).
    """
    return read_evidence(
        gold,
        results,
        partition=partition,
        repeat=repeat,
        allow_gold_change=allow_gold_change,
        partition_source=partition_source,
        sampling_plan=sampling_plan,
    ).report


def flagged_cases(
    cases: pa.Table, abstain_labels: Collection[str]
) -> dict[str, dict[str, list[str]]]:
    """Per slice, the case ids of every false pass, false fail and abstention (:data:`FLAGGED`),
    in case order: what a gate blocker names and an override must cover."""
    import pyarrow as pa
    import pyarrow.compute as pc

    abstained = pc.fill_null(
        pc.and_(
            pc.equal(cases["outcome"], "verdict"),
            pc.is_in(cases["judge_label"], value_set=pa.array(list(abstain_labels), pa.string())),
        ),
        False,
    )
    wrong = pc.is_in(cases["error_class"], value_set=pa.array(["false_pass", "false_fail"]))
    flagged = (
        cases.select(["case_id", "slice", "error_class"])
        .append_column("abstained", abstained)
        .filter(pc.or_(abstained, wrong))
    )
    out: dict[str, dict[str, list[str]]] = {}
    for case_id, name, klass, was_abstained in zip(
        *(flagged[column].to_pylist() for column in flagged.column_names), strict=True
    ):
        lists = out.setdefault(name, {key: [] for key in FLAGGED})
        if klass in ("false_pass", "false_fail"):
            lists[klass].append(case_id)
        if was_abstained:
            lists["abstained"].append(case_id)
    return out
