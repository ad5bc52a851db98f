"""``workbench freeze``."""

from __future__ import annotations

import click

from ._common import echo_json, user_errors
from ._options import option


@click.command()
@click.argument("path", type=click.Path(path_type=str))
@click.option(
    "--approver",
    "--who",
    "approver",
    default=None,
    help="Who approves the release (on the project's approver list; default: you).",
)
@click.option("--note", "--reason", "note", default=None, help="Why this state is frozen.")
@option("json", help="Print the release record as JSON.")
@user_errors
def freeze(path: str, approver: str | None, note: str | None, as_json: bool) -> None:
    """Freeze an approved input (a dataset, suite, policy, mapping ...) as a release.

    Appends a release (hashes per item and field, approver, time) to the chained releases.jsonl
    beside the input; every later use is checked against it (exit 2 on an unrecorded edit).
    Freezing an unchanged input again writes nothing.
    """
    from ..approval import freeze_path

    release, created = freeze_path(path, approver=approver, note=note)
    if as_json:
        echo_json({"created": created, **release.model_dump(mode="json", exclude={"fields"})})
        return
    verb = "froze" if created else "already frozen as"
    click.echo(
        f"{verb} release {release.release_id} of {release.label} ({release.kind}): sha256"
        f" {release.dataset_sha256[:12]}, {len(release.items)} item(s), approved by"
        f" {release.approver} at {release.when.isoformat(timespec='seconds')}"
    )
