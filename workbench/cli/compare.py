"""``workbench compare``: an old and a new judge version on the same frozen cases."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..migration import compare_candidates_sync, default_out, format_comparison
from ..outcomes import ExitCode
from ..runs import RunOptions
from ._common import user_errors
from ._options import budget_refusal, flag, option, path, show
from ._run_options import engine, run_options


@click.command()
@path("--old", required=True, help="The current version's candidate spec.")
@path("--new", required=True, help="The new version's candidate spec.")
@option("gold")
@option("partition", help="Partition to compare on (held-out data is for certification only).")
@option("out", help="Comparison directory (default runs/compare/<old>__<new>/<partition>).")
@path("--old-run", help="Reuse this complete run of --old (its manifest is checked).")
@path("--new-run", help="Reuse this complete run of --new (checked likewise).")
@option(
    "label_mapping",
    help="Reviewed mapping of the old version's labels to the new ones (renamed categories).",
)
@path("--controls", help="Control suite to run on both versions before the partition.")
@flag("--no-controls", help="Run no controls (say so explicitly).")
@run_options(
    "budget",
    "concurrency",
    "no_cache",
    "no_progress",
    budget={"help": "Spend limit over both candidates; refused before any call above it."},
    no_progress={"help": "Hide the progress bars."},
)
@option("json", help="Print the ComparisonReport as JSON.")
@user_errors
def compare(
    old: str,
    new: str,
    gold: str,
    partition: str,
    out: str | None,
    controls: str | None,
    no_controls: bool,
    options: RunOptions,
    as_json: bool,
    **reuse: str | None,
) -> None:
    """Compare an old and a new judge version case by case on development or calibration data.

    Both run over the same frozen cases, the controls first; transitions by slice, McNemar and
    paired rate differences go to OUT/comparison.json. Exit 0 nothing to review; 4 changed
    critical verdicts need review; 5 evaluator errors; 3 incomplete; 2 invalid input.
    """
    if controls is None and not no_controls:
        before = "run on both versions before the partition"
        raise click.UsageError(f"give --controls SUITE ({before}) or --no-controls")
    if controls is not None and no_controls:
        raise click.UsageError("--controls and --no-controls exclude each other")
    from ..judges import load_candidate

    old_judge, new_judge = load_candidate(old), load_candidate(new)
    labels = (old_judge.spec.label, new_judge.spec.label)
    out_dir = Path(out) if out else default_out(*labels, partition)
    with budget_refusal():
        report = compare_candidates_sync(
            old_judge,
            new_judge,
            gold,
            partition,
            out_dir,
            controls=controls,
            **engine(options),
            **reuse,
        )
    show(report, as_json, format_comparison, lambda _: f"comparison: {out_dir / 'comparison.json'}")
    if report.exit_code == ExitCode.EVALUATOR_ERRORS:
        click.echo(report.errors_note(), err=True)
    sys.exit(report.exit_code)
