"""``workbench align``."""

from __future__ import annotations

import click

from ..align import align as align_fn
from ..align import format_report
from ..gold import PARTITIONS
from ..heldout import check_held_out_results
from ._common import echo_json, user_errors


@click.command()
@click.option("--gold", "gold", required=True, type=click.Path(path_type=str), help="Gold dataset directory or gold.jsonl.")
@click.option("--results", "results", required=True, type=click.Path(path_type=str), help="Judge results (JSON Lines, judge-result contract).")
@click.option("--partition", type=click.Choice(PARTITIONS), default=None, help="Only cases of this partition.")
@click.option("--repeat", type=int, default=0, show_default=True, help="Which repeat index to align.")
@click.option("--json", "as_json", is_flag=True, help="Print the documented, versioned JSON report.")
@click.option("--fail-incomplete", is_flag=True, help="Exit 3 when any case has no result.")
@user_errors
def align(gold: str, results: str, partition: str | None, repeat: int, as_json: bool, fail_incomplete: bool) -> None:
    """Join judge results to adjudicated gold labels and report alignment per slice.

    Refuses duplicate results, unknown cases, response-hash mismatches and mixed judges
    (exit 2). Cases without a result are 'missing': the evaluation is incomplete, which is
    never a pass and never a disagreement.
    """
    check_held_out_results(gold, results, partition)  # held-out results only from a recorded certification
    report = align_fn(gold, results, partition=partition, repeat=repeat)
    if as_json:
        echo_json(report.model_dump(mode="json"))
    else:
        click.echo(format_report(report))
    if fail_incomplete and report.status != "complete":
        raise SystemExit(3)
