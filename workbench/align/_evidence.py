"""One way to read evidence: judge results joined to their gold, once, for every analysis
(columnar when it can vouch for the input, else the per-record join, which names every problem)."""

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
    Refuses what :func:`~workbench.align.align_results` refuses."""
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
    """Hand the memory the results' parse freed back to the system (Arrow's allocator keeps it)."""
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
    """The library form of ``workbench align``: the report of :func:`read_evidence` (``results``:
    a file or a directory of shards; see :func:`align_results` for the other arguments)."""
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
