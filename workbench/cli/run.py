"""``workbench run``."""

from __future__ import annotations

import click

from ..gold import PARTITIONS, load_dataset
from ..judges import load_candidate
from ..runs import run_candidate_sync
from ._common import user_errors


@click.command()
@click.option("--candidate", required=True, type=click.Path(path_type=str), help="Candidate spec, e.g. data/candidates/<name>@<version>.yaml.")
@click.option("--gold", required=True, type=click.Path(path_type=str), help="Gold dataset directory or gold.jsonl.")
@click.option("--partition", required=True, type=click.Choice(PARTITIONS), help="Partition to judge.")
@click.option("--out", required=True, type=click.Path(path_type=str), help="Run directory (manifest.json, results.jsonl, run.json).")
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True, help="Concurrent judge calls.")
@click.option("--repeat", "repeats", type=click.IntRange(min=1), default=1, show_default=True, help="Judge each case K times (repeatability).")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
@user_errors
def run(candidate: str, gold: str, partition: str, out: str, concurrency: int, repeats: int, no_progress: bool) -> None:
    """Run a judge candidate over one partition of a gold dataset.

    The judge only sees allow-listed fields (input, response, grading notes, reference,
    contexts). Results are appended per attempt; re-running the same command resumes.
    """
    judge = load_candidate(candidate)
    dataset = load_dataset(gold)
    summary = run_candidate_sync(judge, dataset, partition, out, concurrency=concurrency, repeats=repeats, progress=not no_progress)
    click.echo(
        f"{summary.judge} on {summary.partition}: {summary.status.upper()} - {summary.verdicts} verdicts, {summary.errors} evaluator errors, "
        f"{len(summary.unrun)} unrun of {summary.planned}; {summary.calls} calls, {summary.resumed} already done; "
        f"cost ${summary.cost_usd:.4f}; results {summary.results_path}"
    )
    if summary.status != "complete":
        click.echo("unrun: " + ", ".join(summary.unrun), err=True)
