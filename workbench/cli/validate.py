"""``workbench validate``."""

from __future__ import annotations

import click

from ..gold import validate_dataset
from ..outcomes import ExitCode
from ._common import echo_json
from ._options import flag, option


@click.command()
@click.argument("path", type=click.Path(path_type=str))
@option("json", help="Print problems as JSON.")
@flag(
    "--strict",
    help="Treat warnings (e.g. card gaps) as errors, and require a rubric criterion and reviews"
    " with confidence, rationale and cited spans.",
)
def validate(path: str, as_json: bool, strict: bool) -> None:
    """Check a gold dataset (directory or gold.jsonl) and report every problem at once.

    Exits 2 when any error (or, with --strict, any warning) is found.
    """
    report = validate_dataset(path, warn_undeclared=True, strict=strict)
    failing = report.failing(strict)
    if as_json:
        echo_json(report.to_json(strict))
    else:
        for problem in report.problems:
            click.echo(problem.format(), err=problem.severity == "error" or strict)
        click.echo(report.summary(strict), err=bool(failing))
    if failing:
        raise SystemExit(ExitCode.INVALID_INPUT)
