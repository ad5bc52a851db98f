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

    Readers never fill a field an older version left out: they refuse the file and name the
    migration. A migration fills only what the older version defaulted and writes into every
    migrated record what it filled (its `migration` field).
    """


@migrate_group.command("results")
@click.argument("file", type=click.Path(path_type=Path))
@option(
    "gold",
    required=False,
    help=(
        "The gold dataset the results were produced against: a record without a partition gets its"
        " case's partition from it (never guessed)."
    ),
)
@option(
    "out",
    type=click.Path(path_type=Path, dir_okay=False),
    help=(
        "Write the migrated file here and leave FILE untouched (default: in place, keeping the"
        " original as FILE.v1)."
    ),
)
@user_errors
def results(file: Path, gold: str | None, out: Path | None) -> None:
    """Migrate a results file (judge-result contract) to the current schema version.

    Version 1 filled reason (null), attempt (1) and repeat (0) silently when a record lacked
    them and left partition unknown; version 2 requires them. This fills exactly those
    defaults, takes a missing partition from --gold's record of the case, and records in each
    migrated line `migration: {from_version, to_version, function, filled, partition_source,
    migrated_at}`. All lines are checked first: if any cannot be migrated nothing is written
    (exit 2, every problem listed). Current-version lines are copied unchanged.
    """
    click.echo(migrate_results_file(file, gold=gold, out=out).format())
