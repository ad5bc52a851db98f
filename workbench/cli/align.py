"""``workbench align``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..align import breakdown, format_breakdown, format_report, read_evidence, resolve_partition
from ..errors import WorkbenchError
from ..gold import PARTITIONS
from ..heldout import check_held_out_results
from ..outcomes import ExitCode
from ._common import user_errors
from ._options import flag, option, options, path, show

F = TypeVar("F", bound=Callable[..., Any])


def evidence_options(verb: str, *, partition_note: str = "") -> Callable[[F], F]:
    """``--gold``, ``--results``, ``--partition`` and ``--repeat``: the evidence a command reads
    (``workbench align``, ``workbench gate``)."""
    return options(
        option("gold"),
        option("results"),
        option(
            "partition",
            required=False,
            type=click.Choice(PARTITIONS),
            help=(
                f"Only cases of this partition ({partition_note}default: the partition in the run"
                " manifest beside the results)."
            ),
        ),
        click.option(
            "--repeat",
            type=click.IntRange(min=0),
            default=0,
            show_default=True,
            help=f"Which repeat index to {verb}.",
        ),
    )


@click.command()
@evidence_options("align")
@option("json", help="Print the documented, versioned JSON report.")
@flag(
    "--wide",
    help="Print the full tables (every count and the token columns; wider than 120 columns).",
)
@flag("--fail-incomplete", help="Exit 3 when any case has no result.")
@flag(
    "--allow-gold-change",
    help="Align even if the gold changed since the results were produced (not comparable).",
)
@option(
    "policy",
    "policy_path",
    help="Accept the cases a run's sampling plan left out if it is this policy's `sampling:` plan.",
    required=False,
)
@path(
    "--sampling-plan", "plan_path", help="The same with a sampling plan file (instead of --policy)."
)
@click.option(
    "--by",
    "by",
    multiple=True,
    metavar="FIELD",
    help=(
        "Break false passes and false fails down by a case field or tag (slice, partition, group,"
        " tag, length, confidence or any metadata key); repeat it, or join fields with × or *,"
        " to cross them (--by language --by slice). Prints the breakdown instead of the report."
    ),
)
@user_errors
def align(
    gold: str,
    results: str,
    partition: str | None,
    repeat: int,
    as_json: bool,
    wide: bool,
    fail_incomplete: bool,
    allow_gold_change: bool,
    policy_path: str | None,
    plan_path: str | None,
    by: tuple[str, ...],
) -> None:
    """Join judge results to adjudicated gold labels and report alignment per slice.

    Refuses (exit 2) duplicate results, unknown cases, response-hash mismatches, mixed judges,
    verdicts without a reason, incomplete fingerprints, missing attempts and results produced
    against another gold (the changed cases listed; --allow-gold-change aligns anyway). Cases
    without a result are 'missing' (incomplete, never a pass); cases a run's sampling plan left
    out are out of scope only when the same plan is declared here.
    """
    from ..runs import attempt_problems

    removed = attempt_problems(results)  # a deleted retry reads as a valid results file
    if removed:
        raise WorkbenchError("the results lack attempts their run counted", removed)
    partition, source = resolve_partition(results, partition)
    check_held_out_results(gold, results, partition)
    from .run import sampling_plan_from

    plan, _ = sampling_plan_from(policy_path, plan_path, quiet=True)
    evidence = read_evidence(
        gold,
        results,
        partition=partition,
        repeat=repeat,
        allow_gold_change=allow_gold_change,
        partition_source=source,
        sampling_plan=plan,
    )
    report = evidence.report
    if by:
        found = breakdown(evidence.cases, evidence.index.table, evidence.index.rubric, by)
        show(found, as_json, format_breakdown)
    else:
        show(report, as_json, lambda r: format_report(r, wide=wide))
    if fail_incomplete and report.status != "complete":
        raise SystemExit(ExitCode.INCOMPLETE)
