"""``workbench init``: a new project in one command."""

from __future__ import annotations

from pathlib import Path

import click

from ..project import init_project
from ._common import user_errors


@click.command("init")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--name", help="Name of the dataset, policy and judge (default: the directory's).")
@user_errors
def init(directory: Path, name: str | None) -> None:
    """Create a project's templates in DIRECTORY: rubric, card, policy, judge, controls.

    Every template is fail-closed, and NEXT_STEPS.md lists the commands. Never overwrites: when
    any of the files exists, nothing is written (exit 2).
    """
    result = init_project(directory, name=name)
    click.echo(f"Created project {result.name!r} in {result.root}:")
    for path in result.files:
        click.echo(f"  {path}")
    click.echo(f"Next: read {result.root / 'NEXT_STEPS.md'}")
