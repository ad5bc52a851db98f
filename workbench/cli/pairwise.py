"""``workbench pairwise``."""

from __future__ import annotations

import click

from ..align import check_results_file
from ..gold import PARTITIONS, load_dataset
from ..outcomes import ExitCode
from ..pairwise import format_pairwise, pairwise_report
from ._common import user_errors
from ._options import flag, option, show


@click.command()
@option("gold")
@option("results", help="Pairwise judge results: repeat 0 original order, repeat 1 swapped.")
@option("partition", required=False, type=click.Choice(PARTITIONS), help="Only this partition.")
@click.option(
    "--tie-label",
    "tie_labels",
    multiple=True,
    help="A rubric label that names no winner (e.g. 0 for a PandaLM tie); repeatable.",
)
@option("json", help="Print the documented, versioned JSON report (workbench.pairwise).")
@flag("--fail-incomplete", help="Exit 3 when any case lacks a result in either order.")
@user_errors
def pairwise(
    gold: str,
    results: str,
    partition: str | None,
    tie_labels: tuple[str, ...],
    as_json: bool,
    fail_incomplete: bool,
) -> None:
    """Accuracy of a pairwise judge in both presentation orders, position consistency and bias.

    Overall and per slice, with denominators and 95% Wilson intervals (evaluator errors stay in
    the denominators, the LLMBar convention). Refuses what `workbench align` refuses and
    results whose presentation contradicts their repeat (exit 2).
    """
    check_results_file(load_dataset(gold), results)
    report = pairwise_report(gold, results, partition=partition, tie_labels=list(tie_labels))
    show(report, as_json, format_pairwise)
    if fail_incomplete and report.status != "complete":
        raise SystemExit(ExitCode.INCOMPLETE)
