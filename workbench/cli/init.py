"""``workbench init``: a new project in one command."""

from __future__ import annotations

from pathlib import Path

import click

from ..project import init_project
from ._common import user_errors


@click.command("init")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option(
    "--name",
    default=None,
    help="Name of the dataset, policy and judge (default: the directory's name).",
)
@user_errors
def init(directory: Path, name: str | None) -> None:
    """Create a project's templates in DIRECTORY: rubric, card, mapping, policy, judge, controls.

    Writes data/<name>/{rubric.yaml, card.md, mapping.yaml}, data/policies/<name>@1.yaml (every
    limit present and at its strictest), data/candidates/<name>-judge@1.yaml (ragas-llm, key read
    from the environment variable it names) with its prompt, data/controls/<name>-controls@1.yaml
    and NEXT_STEPS.md (import -> validate -> agreement -> develop -> calibrate -> certify, with the
    exact commands). Never overwrites: when any of these files exists, nothing is written, every
    such file is listed and the exit code is 2.
    """
    result = init_project(directory, name=name)
    click.echo(f"Created project {result.name!r} in {result.root}:")
    for path in result.files:
        click.echo(f"  {path}")
    click.echo(f"Next: read {result.root / 'NEXT_STEPS.md'}")
