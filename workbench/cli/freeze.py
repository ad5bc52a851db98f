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
    help=(
        "Who approves the release: a name in the project's approver list (workbench.yaml"
        " `approvers:`); default $WORKBENCH_USER or the login name."
    ),
)
@click.option("--note", "--reason", "note", default=None, help="Why this state is frozen.")
@option("json", help="Print the release record as JSON.")
@user_errors
def freeze(path: str, approver: str | None, note: str | None, as_json: bool) -> None:
    """Freeze an approved input as a release: a gold dataset, a ranking fixture file, a noise
    pair suite or claim panel, a control suite, a policy, a sentinel set or a label mapping.

    Appends one release to the append-only, chained release log in the input's folder
    (releases.jsonl): release id, content sha256, one hash per item with per-field hashes
    (label, reviews, content ...), the approver and when. From then on every use of the input
    runs one lineage check: an in-place edit, a deletion, a new version that does not say
    what it supersedes, a relabel without a recorded change, or an approver outside the
    project's list is refused (exit 2). The input must load cleanly first. Freezing an
    unchanged input again writes nothing and prints the existing release.
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
