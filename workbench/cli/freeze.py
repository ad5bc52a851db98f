"""``workbench freeze``."""

from __future__ import annotations

import click

from ..gold import freeze as freeze_fn
from ._common import echo_json, user_errors


@click.command()
@click.argument("gold", type=click.Path(path_type=str))
@click.option(
    "--who",
    default=None,
    help="Who freezes the release (default: $WORKBENCH_USER or the login name).",
)
@click.option("--note", default=None, help="Why this state of the gold is frozen.")
@click.option("--json", "as_json", is_flag=True, help="Print the release record as JSON.")
@user_errors
def freeze(gold: str, who: str | None, note: str | None, as_json: bool) -> None:
    """Freeze the current state of a gold dataset as a release.

    Appends one release to the append-only release log beside the gold
    (releases.jsonl): release id, dataset sha256, one hash per record (with per-field
    hashes: label, response, notes, grading fields, reviews ...), who and when, chained to the
    previous release by its sha256. From then on `workbench validate` refuses an in-place edit
    or the deletion of any frozen record: a correction is a new record that supersedes it.
    Runs record the release they used. The gold must validate first. Freezing an unchanged
    dataset again writes nothing and prints the existing release.
    """
    release, created = freeze_fn(gold, who=who, note=note)
    if as_json:
        echo_json({"created": created, **release.model_dump(mode="json", exclude={"fields"})})
        return
    verb = "froze" if created else "already frozen as"
    click.echo(
        f"{verb} release {release.release_id}: dataset sha256 {release.dataset_sha256[:12]}, rubric"
        f" {release.rubric_version}, {len(release.cases)} record(s), by {release.who} at"
        f" {release.when.isoformat(timespec='seconds')}"
    )
