"""``workbench authority`` (grant, promote, demote, revoke, shadow, log) and ``workbench
status``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from ..outcomes import ExitCode
from ._common import echo_json, user_errors
from ._options import option, options, show

if TYPE_CHECKING:
    from ..authority import AuthorityEntry
    from ..errors import Problem

LEVEL_CHOICES = click.Choice(["none", "advisory", "route", "block"])

_gold = option(
    "gold",
    help=(
        "Gold dataset the judge was certified on; its authority record lives beside it (or where"
        " workbench.yaml's authority_record says)."
    ),
)
_entry_json = option("json", help="Print the entry as JSON.")
_judge = option("judge", required=True, help="The judge, name@version.")
_decider = option(
    "approver",
    required=False,
    help="Who decided (default: you); a name given must be on the project's approver list.",
)
_trust = option(
    "trust",
    help="File of trusted Ed25519 public keys: narrows the project's trusted_keys, never widens.",
)


def _print_entry(e: AuthorityEntry, as_json: bool) -> None:
    show(e, as_json, lambda entry: entry.describe())


def _print_rollback(result: tuple[AuthorityEntry, list[Problem]], as_json: bool) -> None:
    entry, problems = result
    show(entry, as_json, lambda e: e.describe())
    if problems:
        click.echo(
            f"warning: the authority record is damaged ({len(problems)} problem(s)); the entry was"
            " appended anyway, because rollback must always be possible:",
            err=True,
        )
        for problem in problems:
            click.echo(problem.format(), err=True)


def _step_options(candidate: str, report: str, approver: str, reason: str) -> Callable[[Any], Any]:
    return options(
        _gold,
        option("candidate", help=candidate),
        option("report", help=report),
        option("approver", help=approver),
        option("reason", help=reason),
        _trust,
        _entry_json,
    )


def _rollback_options(reason: str, *more: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return options(_gold, _judge, option("reason", help=reason), *more, _decider, _entry_json)


@click.group()
def authority() -> None:
    """The authority record: what each certified judge may do (advisory, route, block).

    One approved step at a time (grant, promote, promote), each on a verified, certified, fresh
    report of this version; rollback (demote, revoke) needs only a reason. Entries are appended
    to a hash-chained record beside the gold.
    """


@authority.command("grant")
@_step_options(
    candidate="The candidate spec the judge runs from (its fingerprint must be the certified one).",
    report="A certified report of this version: reports/<name>/<version>/<n>.",
    approver=(
        "The person accountable for this authority: on the project's approver list, not who"
        " certified the report."
    ),
    reason="Why.",
)
@user_errors
def grant_command(as_json: bool, **step: str) -> None:
    """Record a certified report as a judge's evidence: a judge without authority becomes advisory.

    A judge holding authority keeps its level (capped by the new report) and is rebound to it.
    Refused (exit 2) unless the report verifies against --gold, is certified, of this version,
    grants a use and is not stale, and the approver is listed and did not certify it.
    """
    from ..authority import grant

    _print_entry(grant(**step), as_json)


@authority.command("promote")
@_step_options(
    candidate="The candidate spec the judge runs from.",
    report="A certified report of this version granting at least the next level.",
    approver="The person accountable for the promotion.",
    reason="Why, e.g. what the monitored window showed.",
)
@user_errors
def promote_command(as_json: bool, **step: str) -> None:
    """One step up the path: advisory -> route, route -> block. No skipping.

    Needs what grant needs, a report granting the next level signed by a trusted key and, for
    block, a stable sentinel drift check made after the report (`workbench drift`).
    """
    from ..authority import promote

    _print_entry(promote(**step), as_json)


@authority.command("demote")
@_rollback_options(
    "Why (e.g. the disagreement sample that found a critical false pass).",
    click.option(
        "--to", type=LEVEL_CHOICES, help="The level to demote to (default: one step down)."
    ),
)
@user_errors
def demote_command(as_json: bool, **rollback: Any) -> None:
    """Lower a judge's authority at once: a reason is all it needs. Nothing is deleted."""
    from ..authority import demote

    _print_rollback(demote(**rollback), as_json)


@authority.command("revoke")
@_rollback_options("Why.")
@user_errors
def revoke_command(as_json: bool, **rollback: Any) -> None:
    """Take all authority from a judge (or detach a shadow) at once: a reason is all it needs."""
    from ..authority import revoke

    _print_rollback(revoke(**rollback), as_json)


@authority.command("shadow")
@_gold
@option("candidate", help="The judge to run in shadow (it must hold no authority).")
@click.option("--of", "of", required=True, help="The judge holding authority, name@version.")
@option("approver", help="Who approved the attachment.")
@option("reason", help="Why (e.g. diagnosing a rolled-back version, or watching a migration).")
@option(
    "report", required=False, help="The candidate's latest report, if any (recorded, not required)."
)
@_entry_json
@user_errors
def shadow_command(as_json: bool, **attachment: Any) -> None:
    """Attach a judge in shadow to the judge holding authority; run it with `workbench run
    --shadow-of` (its verdicts never affect a gate)."""
    from ..authority import attach_shadow

    _print_entry(attach_shadow(**attachment), as_json)


@authority.command("log")
@_gold
@option("judge")
@option("json", help="Print the entries as JSON.")
@user_errors
def log_command(gold: str, judge: str | None, as_json: bool) -> None:
    """Print the authority record and check its chain (exit 1 when it is damaged)."""
    from ..authority import AuthorityRecord, authority_path_for

    record = AuthorityRecord(authority_path_for(gold))
    read = record.read()
    entries = [e for e in read.entries if judge is None or e.judge == judge]
    if as_json:
        found = [e.model_dump(mode="json") for e in entries]
        problems = [p.model_dump(mode="json") for p in read.problems]
        echo_json({"record": str(record.path), "entries": found, "problems": problems})
    else:
        chain = "intact" if read.ok else "DAMAGED"
        click.echo(f"authority record {record.path}: {len(read.entries)} entries, chain {chain}")
        for e in entries:
            click.echo(e.describe())
        for problem in read.problems:
            click.echo(problem.format(), err=True)
    if not read.ok:
        sys.exit(ExitCode.FAILED)


@click.command()
@_gold
@option("judge")
@_trust
@option("json", help="Print the AuthorityStatus as JSON.")
@user_errors
def status(gold: str, judge: str | None, trust: str | None, as_json: bool) -> None:
    """Every judge with an authority record: authority, scope, report, staleness, drift.

    Exit 0 every judge may do what it is recorded to; 4 review required (less than recorded,
    stale or drifted); 1 the record is damaged or a report does not verify; 2 invalid input.
    """
    from ..authority import authority_status, format_status

    result = authority_status(gold, judge=judge, trust=trust)
    show(result, as_json, format_status)
    sys.exit(result.exit_code)
