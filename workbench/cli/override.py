"""``workbench override add`` and ``workbench override list``."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

import click

from ..errors import Problem, WorkbenchError
from ..policy import (
    DEFAULT_OVERRIDES_PATH,
    OverrideScope,
    Policy,
    add_override,
    build_override,
    describe_override,
    load_overrides,
    load_policy,
)
from ._common import echo_json, user_errors

_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*@[A-Za-z0-9][A-Za-z0-9_.\-]*$")
DEFAULT_POLICIES_DIR = Path("data/policies")
_STORE_HELP = f"Override store (append-only JSON Lines). Default: {DEFAULT_OVERRIDES_PATH}."


def resolve_policy(value: str, store: str | Path) -> Path:
    """The policy file ``--policy`` names: a path, or ``name@version`` looked up as
    ``<name@version>.yaml`` beside the override store, then in ``data/policies/``."""
    path = Path(value)
    if path.suffix in (".yaml", ".yml") or path.exists() or not _LABEL.match(value):
        return path
    for folder in dict.fromkeys([Path(store).parent, DEFAULT_POLICIES_DIR]):
        candidate = folder / f"{value}.yaml"
        if candidate.is_file():
            return candidate
    return Path(store).parent / f"{value}.yaml"


def _load(value: str, store: str) -> tuple[Policy | None, list[Problem]]:
    path = resolve_policy(value, store)
    try:
        return load_policy(path), []
    except WorkbenchError as exc:
        problems = [
            (
                p.model_copy(
                    update={
                        "message": f"--policy {value!r}: {p.message}",
                        "fix": (
                            f"{p.fix} (an override must name a policy file that exists and loads: a"
                            " path, or name@version found as"
                            f" {Path(store).parent}/<name@version>.yaml or"
                            f" {DEFAULT_POLICIES_DIR}/<name@version>.yaml)"
                        ),
                    }
                )
                if p.code == "policy_missing"
                else p
            )
            for p in exc.problems
        ]
        return None, problems or [
            Problem(
                location="--policy",
                code="policy_invalid",
                message=exc.summary,
                fix="correct the policy file",
            )
        ]


@click.group("override")
def override() -> None:
    """Record and list approved, expiring waivers of gate blockers.

    An override never waives missing evidence (incomplete blockers), and a false pass in a
    critical slice only by a case-level review naming every false-pass case of the slice.
    """


class _OverrideFields(TypedDict):
    """The override fields ``add`` passes through to the store."""

    approver: str
    author: str | None
    reason: str
    expires_at: str
    follow_up: str
    codes: tuple[str, ...]
    slices: tuple[str, ...]
    case_ids: tuple[str, ...]
    candidate_fingerprint: str | None


_OPTIONS = (
    click.option(
        "--approver",
        required=True,
        help="Who approves the waiver: a name in the project's approver list, not the author.",
    ),
    click.option(
        "--author",
        default=None,
        help="Who records it (default: $WORKBENCH_USER or the login name); never the approver.",
    ),
    click.option(
        "--reason",
        required=True,
        help="Case-level rationale: why the blocker is acceptable, with the evidence reviewed.",
    ),
    click.option(
        "--expires",
        required=True,
        help="Expiry: YYYY-MM-DD (00:00 UTC that day) or an ISO datetime.",
    ),
    click.option(
        "--follow-up",
        "follow_up",
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
    click.option(
        "--candidate-fingerprint", default=None, help="Only results of this judge fingerprint."
    ),
    click.option(
        "--store",
        type=click.Path(path_type=str),
        default=str(DEFAULT_OVERRIDES_PATH),
        show_default=True,
        help=_STORE_HELP,
    ),
)


def override_options(command: Callable[..., None]) -> Callable[..., None]:
    """The options of every ``override add`` (the release gate's, ranking's, noise's)."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return command


def fields_of(options: dict[str, Any]) -> _OverrideFields:
    """The record's fields from the shared options (``--expires`` is ``expires_at``)."""
    return {
        "approver": options["approver"],
        "author": options["author"],
        "reason": options["reason"],
        "expires_at": options["expires"],
        "follow_up": options["follow_up"],
        "codes": options["codes"],
        "slices": options["slices"],
        "case_ids": options["case_ids"],
        "candidate_fingerprint": options["candidate_fingerprint"],
    }


def append(
    store: str, scope: Policy | OverrideScope, fields: _OverrideFields, policy: Policy | None
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
@click.option(
    "--policy",
    required=True,
    help=(
        "Policy file (data/policies/<name>@<version>.yaml) or name@version the override applies to."
    ),
)
@override_options
@user_errors
def add(policy: str, store: str, **options: Any) -> None:
    """Append one override to the store (never rewritten), print its id and what it will apply to.

    Refused (exit 2, every problem at once, nothing written): a policy that is not a file that
    exists and loads; a blocker code the policy's gate never emits or can never waive; a slice
    the policy does not declare; a slice-level waiver of a false pass in a critical slice (name
    every false-pass case with --case instead); a code never waivable in a critical slice.
    """
    from ..ranking import is_ranking_policy_file, ranking_override_scope

    fields = fields_of(options)
    path = resolve_policy(policy, store)
    if is_ranking_policy_file(path):  # a ranking release policy (kind: ranking): its codes only
        append(store, ranking_override_scope(path), fields, None)
        return
    loaded, problems = _load(policy, store)
    if loaded is None:
        label = policy if _LABEL.match(policy) else "unknown@unknown"
        try:
            build_override(store, policy=label, **fields)
        except WorkbenchError as exc:
            problems += exc.problems
        raise WorkbenchError(f"override refused: {len(problems)} problem(s)", problems)
    append(store, loaded, fields, loaded)


@override.command("list")
@click.option(
    "--store",
    type=click.Path(path_type=str),
    default=str(DEFAULT_OVERRIDES_PATH),
    show_default=True,
    help=_STORE_HELP,
)
@click.option("--json", "as_json", is_flag=True, help="Print the overrides as JSON.")
@user_errors
def list_(store: str, as_json: bool) -> None:
    """List every override in the store, marking the expired ones."""
    overrides = load_overrides(store)
    if as_json:
        echo_json([o.model_dump(mode="json") for o in overrides])
        return
    if not overrides:
        click.echo(f"no overrides in {store}")
        return
    now = datetime.now(UTC)
    for o in overrides:
        state = "EXPIRED" if o.expires_at <= now else "active"
        scope = []
        if o.slices:
            scope.append("slices " + ", ".join(o.slices))
        if o.case_ids:
            scope.append(
                f"{len(o.case_ids)} case(s) "
                + ", ".join(o.case_ids[:5])
                + (" ..." if len(o.case_ids) > 5 else "")
            )
        if o.candidate_fingerprint:
            scope.append(f"candidate {o.candidate_fingerprint[:12]}")
        click.echo(
            f"{o.override_id} [{state}] {o.policy}: codes {', '.join(o.codes)};"
            f" {'; '.join(scope) or 'no slice'}; approved by {o.approver} on"
            f" {o.created_at.date().isoformat()}, expires {o.expires_at.isoformat()}; reason:"
            f" {o.reason}; follow-up: {o.follow_up}"
        )
