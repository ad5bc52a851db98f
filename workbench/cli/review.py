"""``workbench review transition``: record an evidence-based review of a changed critical
verdict."""

from __future__ import annotations

import click

from ._common import echo_json, user_errors


@click.group("review")
def review_group() -> None:
    """Reviews recorded outside the notebooks (append-only logs beside the gold)."""


@review_group.command("transition")
@click.option(
    "--report",
    required=True,
    type=click.Path(path_type=str),
    help="A locked migration certification report (reports/<candidate>/<version>/<n>).",
)
@click.option(
    "--case",
    "case_id",
    default=None,
    help="The held-out case whose verdict changed (a case --list names).",
)
@click.option(
    "--decision",
    type=click.Choice(["accept", "reject"]),
    default=None,
    help=(
        "accept: the changed verdict stands on the evidence; reject: it does not (the migration"
        " fails)."
    ),
)
@click.option(
    "--evidence",
    default=None,
    help=(
        "Evidence ids the decision rests on, comma-separated (ids of the gold's evidence snapshot)."
    ),
)
@click.option(
    "--reviewer", default=None, help="Who decides (a named reviewer, never the prompt author)."
)
@click.option("--note", default="", help="How the evidence settles it.")
@click.option(
    "--gold",
    default=None,
    type=click.Path(path_type=str),
    help="The certified gold dataset (default: the one the report names).",
)
@click.option(
    "--list",
    "list_only",
    is_flag=True,
    help="List the changed critical verdicts and their review status instead.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
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
    from ..errors import Problem, WorkbenchError
    from ..reports._migration import pending_for_report, record_transition_review
    from ..review._transition_reviews import TransitionReviews

    if list_only:
        pending, log, _ = pending_for_report(report, gold)
        reviews = (
            TransitionReviews(log).in_effect(pending[0].old_fingerprint, pending[0].new_fingerprint)
            if pending
            else {}
        )
        rows = []
        for p in pending:
            r = reviews.get(p.case_id)
            status = (r.decision + "ed") if r is not None and r.matches(p) else "unreviewed"
            rows.append(
                {
                    "case_id": p.case_id,
                    "slice": p.slice,
                    "human_label": p.human_label,
                    "old_verdict": p.old_verdict,
                    "new_verdict": p.new_verdict,
                    "status": status,
                    "cited": list(p.cited),
                }
            )
        if as_json:
            echo_json(rows)
        else:
            for row in rows:
                click.echo(
                    f"{row['case_id']}  [{row['slice']}]  human {row['human_label']}:"
                    f" {row['old_verdict']} -> {row['new_verdict']}  {row['status']}"
                    + (f"  (case cites {', '.join(row['cited'])})" if row["cited"] else "")
                )
            click.echo(f"{len(rows)} changed critical verdict(s); log {log}")
        return
    missing = [
        name
        for name, value in (
            ("--case", case_id),
            ("--decision", decision),
            ("--evidence", evidence),
            ("--reviewer", reviewer),
        )
        if not value
    ]
    if missing:
        raise WorkbenchError(
            "cannot record the transition review",
            [
                Problem(
                    location=name,
                    code="option_missing",
                    message=f"{name} is required to record a review",
                    fix=f"give {name}, or --list to see what needs review",
                )
                for name in missing
            ],
        )
    assert case_id and decision and evidence and reviewer
    review = record_transition_review(
        report, case_id, decision, evidence, reviewer=reviewer, note=note, gold=gold
    )
    if as_json:
        echo_json(review.model_dump(mode="json"))
    else:
        click.echo(
            f"recorded {review.review_id}: {review.case_id} {review.old_verdict} ->"
            f" {review.new_verdict}: {review.decision} by {review.reviewer} on"
            f" {', '.join(review.evidence_ids)}"
        )
        click.echo(f"next: workbench certify --resume-review {report}")
