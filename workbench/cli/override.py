"""``workbench override add`` and ``workbench override list`` (``override_options`` and ``append``
serve ``workbench noise override add`` too)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import click

from ..policy import (
    DEFAULT_OVERRIDES_PATH,
    OverrideScope,
    Policy,
    add_override,
    describe_override,
    format_override,
    load_overrides,
    policy_for_override,
    resolve_policy_ref,
)
from ._common import echo_json, user_errors
from ._options import PATH, option, options

_store = click.option(
    "--store",
    type=PATH,
    default=str(DEFAULT_OVERRIDES_PATH),
    show_default=True,
    help=f"Override store (append-only JSON Lines). Default: {DEFAULT_OVERRIDES_PATH}.",
)


@click.group("override")
def override() -> None:
    """Record and list approved, expiring waivers of gate blockers.

    An override never waives missing evidence (incomplete blockers), and a false pass in a
    critical slice only by a case-level review naming every false-pass case of the slice.
    """


override_options = options(
    option(
        "approver",
        help="Who approves the waiver: a name in the project's approver list, not the author.",
    ),
    click.option(
        "--author",
        help="Who records it (default: $WORKBENCH_USER or the login name); never the approver.",
    ),
    option(
        "reason",
        help="Case-level rationale: why the blocker is acceptable, with the evidence reviewed.",
    ),
    click.option(
        "--expires",
        "expires_at",
        required=True,
        help="Expiry: YYYY-MM-DD (00:00 UTC that day) or an ISO datetime.",
    ),
    click.option(
        "--follow-up",
        required=True,
        help="Ticket or action that removes the need for the override.",
    ),
    click.option(
        "--code",
        "codes",
        multiple=True,
        required=True,
        help="Blocker code it may waive (repeatable).",
    ),
    click.option(
        "--slice",
        "slices",
        multiple=True,
        help="Slice it covers (repeatable): a slice-level waiver.",
    ),
    click.option(
        "--case",
        "case_ids",
        multiple=True,
        help="Case (or pair) id reviewed one by one (repeatable): a case-level waiver.",
    ),
    click.option("--candidate-fingerprint", help="Only results of this judge fingerprint."),
    _store,
)


def append(
    store: str, scope: Policy | OverrideScope, fields: dict[str, Any], policy: Policy | None
) -> None:
    """Check and append one override, then print its id and what it will apply to."""
    record = add_override(store, policy=scope, **fields)
    click.echo(
        f"{record.override_id}: {record.policy}, codes {', '.join(record.codes)}, expires"
        f" {record.expires_at.isoformat()}, approver {record.approver}, follow-up"
        f" {record.follow_up}; appended to {store}"
    )
    click.echo("It will apply to:")
    for line in describe_override(record, policy):
        click.echo("  " + line)


@override.command("add")
@option(
    "policy",
    type=str,
    help=(
        "Policy file (data/policies/<name>@<version>.yaml) or name@version the override applies to."
    ),
)
@override_options
@user_errors
def add(policy: str, store: str, **fields: Any) -> None:
    """Append one override to the store (never rewritten), print its id and what it will apply to.

    Refused (exit 2, every problem at once, nothing written): a policy that is not a file that
    exists and loads; a blocker code the policy's gate never emits or can never waive; a slice
    the policy does not declare; a slice-level waiver of a false pass in a critical slice (name
    every false-pass case with --case instead); a code never waivable in a critical slice.
    """
    from ..ranking import is_ranking_policy_file, ranking_override_scope

    path = resolve_policy_ref(policy, store)
    if is_ranking_policy_file(path):  # a ranking release policy (kind: ranking): its codes only
        append(store, ranking_override_scope(path), fields, None)
        return
    loaded = policy_for_override(policy, store, **fields)
    append(store, loaded, fields, loaded)


@override.command("list")
@_store
@option("json", help="Print the overrides as JSON.")
@user_errors
def list_(store: str, as_json: bool) -> None:
    """List every override in the store, marking the expired ones."""
    overrides = load_overrides(store)
    if as_json:
        echo_json([o.model_dump(mode="json") for o in overrides])
    elif not overrides:
        click.echo(f"no overrides in {store}")
    now = datetime.now(UTC)
    for o in [] if as_json else overrides:
        click.echo(format_override(o, now))
