"""``workbench validate``."""

from __future__ import annotations

import click

from ..gold import validate_dataset
from ..outcomes import ExitCode
from ._common import echo_json


@click.command()
@click.argument("path", type=click.Path(path_type=str))
@click.option("--json", "as_json", is_flag=True, help="Print problems as JSON.")
@click.option("--strict", is_flag=True, help="Treat warnings (e.g. card gaps) as errors.")
def validate(path: str, as_json: bool, strict: bool) -> None:
    """Check a gold dataset (directory or gold.jsonl) and report every problem at once.

    One line per problem: file:line, case id, what is wrong and how to fix it.
    Exits 2 when any error (or, with --strict, any warning) is found.
    """
    report = validate_dataset(path)
    failing = report.problems if strict else report.errors
    if as_json:
        echo_json(
            {
                "path": str(report.path),
                "ok": not failing,
                "errors": len(report.errors),
                "warnings": len(report.problems) - len(report.errors),
                "problems": [p.model_dump() for p in report.problems],
            }
        )
    else:
        for problem in report.problems:
            click.echo(problem.format(), err=problem.severity == "error" or strict)
        if report.dataset is not None and not failing:
            ds = report.dataset
            parts = ", ".join(
                f"{p} {len(ds.partition(p))}" for p in ("development", "calibration", "held_out")
            )
            click.echo(
                f"{report.path}: OK - {len(ds.cases)} cases ({parts}),"
                f" {len(ds.records) - len(ds.cases)} superseded record(s), rubric"
                f" {ds.rubric.version}, dataset sha256 {ds.sha256[:12]}, release"
                f" {ds.release.release_id if ds.release else '(not frozen)'}"
            )
        else:
            click.echo(
                f"{report.path}: {len(report.errors)} error(s),"
                f" {len(report.problems) - len(report.errors)} warning(s)",
                err=True,
            )
    if failing:
        raise SystemExit(ExitCode.INVALID_INPUT)
