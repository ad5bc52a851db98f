"""``workbench review transition``."""

from __future__ import annotations

import click

from ._common import echo_json, refuse_each, user_errors
from ._options import flag, option


@click.group("review")
def review_group() -> None:
    """Reviews recorded outside the notebooks (append-only logs beside the gold)."""


@review_group.command("transition")
@option("report", help="A locked migration certification report.")
@click.option("--case", "case_id", help="The held-out case whose verdict changed (see --list).")
@click.option(
    "--decision",
    type=click.Choice(["accept", "reject"]),
    help="accept: the changed verdict stands on the evidence; reject: it does not.",
)
@click.option("--evidence", help="Evidence ids the decision rests on, comma-separated.")
@click.option("--reviewer", help="Who decides (a named reviewer, never the prompt author).")
@click.option("--note", default="", help="How the evidence settles it.")
@option(
    "gold", required=False, help="The certified gold dataset (default: the one the report names)."
)
@flag(
    "--list",
    "list_only",
    help="List the changed critical verdicts and their review status instead.",
)
@option("json")
@user_errors
def transition(
    report: str,
    case_id: str | None,
    decision: str | None,
    evidence: str | None,
    reviewer: str | None,
    note: str,
    gold: str | None,
    list_only: bool,
    as_json: bool,
) -> None:
    """Record a transition review (reviewer, decision, evidence ids) in the gold's append-only
    transition_reviews.jsonl, or --list what needs one. Then `workbench certify --resume-review
    REPORT` re-evaluates the report. Exit 0 recorded/listed, 2 invalid input (restricted:
    prints held-out case ids)."""
    if list_only:
        _list(report, gold, as_json)
        return
    given = {
        "--case": case_id,
        "--decision": decision,
        "--evidence": evidence,
        "--reviewer": reviewer,
    }
    refuse_each(
        "cannot record the transition review",
        [name for name, value in given.items() if not value],
        "option_missing",
        "{0} is required to record a review",
        "give {0}, or --list to see what needs review",
    )
    assert case_id and decision and evidence and reviewer
    from ..reports import record_transition_review

    review = record_transition_review(
        report, case_id, decision, evidence, reviewer=reviewer, note=note, gold=gold
    )
    if as_json:
        echo_json(review.model_dump(mode="json"))
        return
    click.echo(
        f"recorded {review.review_id}: {review.case_id} {review.old_verdict} ->"
        f" {review.new_verdict}: {review.decision} by {review.reviewer} on"
        f" {', '.join(review.evidence_ids)}"
    )
    click.echo(f"next: workbench certify --resume-review {report}")


def _list(report: str, gold: str | None, as_json: bool) -> None:
    from ..reports import format_transition_status, transition_review_status

    rows, log = transition_review_status(report, gold)
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        click.echo(format_transition_status(row))
    click.echo(f"{len(rows)} changed critical verdict(s); log {log}")
