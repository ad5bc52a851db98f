"""``workbench migrate``: explicit, versioned migrations of stored records."""

from __future__ import annotations

from pathlib import Path

import click

from ..results import migrate_results_file
from ._common import user_errors
from ._options import option


@click.group(name="migrate")
def migrate_group() -> None:
    """Migrate records written under an older schema version, explicitly and on the record.

    A migration fills only what the older version defaulted and records what it filled.
    """


@migrate_group.command("results")
@click.argument("file", type=click.Path(path_type=Path))
@option(
    "gold",
    required=False,
    help="The gold dataset the results were produced against (a missing partition's source).",
)
@option(
    "out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the migrated file here (default: in place, keeping the original as FILE.v1).",
)
@user_errors
def results(file: Path, gold: str | None, out: Path | None) -> None:
    """Migrate a results file (judge-result contract) to the current schema version.

    Fills version 1's silent defaults (reason, attempt, repeat) and a missing partition from
    --gold, recording it in each line's `migration`. If any line cannot be migrated nothing is
    written (exit 2, every problem listed).
    """
    click.echo(migrate_results_file(file, gold=gold, out=out).format())
