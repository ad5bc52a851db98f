"""``workbench annotate`` (queue, next, submit, status) and ``workbench adjudicate``."""

from __future__ import annotations

import getpass
from dataclasses import asdict
from typing import TYPE_CHECKING, Literal

import click

from ..outcomes import ExitCode
from ._common import echo_json, user_errors
from ._options import PATH, option

if TYPE_CHECKING:
    from ..annotation import BlindedCase

_REVIEWER = "A name on the project's reviewer list (workbench.yaml `reviewers:`)."


@click.group("annotate")
def annotate_group() -> None:
    """Collect blinded gold reviews: queue cases, label them, see where they stand."""


@annotate_group.command("queue")
@option("gold")
@click.argument("cases", type=PATH)
@click.option("--reviewers", required=True, help="Comma-separated reviewers to assign.")
@click.option("--per-case", default=2, show_default=True, help="Reviewers per case.")
@click.option("--training-version", help="The reviewer training the reviewers completed.")
@click.option("--assigned-by", help="Who assigns (default: your login name).")
@user_errors
def queue(
    gold: str,
    cases: str,
    reviewers: str,
    per_case: int,
    training_version: str | None,
    assigned_by: str | None,
) -> None:
    """Queue the unlabelled cases of CASES (JSON Lines, gold records without reviews) and assign
    each to --per-case reviewers, the least loaded first."""
    from .._io import read_jsonl_records
    from ..annotation import Annotations

    names = [n.strip() for n in reviewers.split(",") if n.strip()]
    made = Annotations(gold).queue(
        read_jsonl_records(cases),
        names,
        assigned_by=assigned_by or getpass.getuser(),
        per_case=per_case,
        training_version=training_version,
        source=cases,
    )
    click.echo(f"queued {len({a.case_id for a in made})} case(s), {len(made)} assignment(s)")


@annotate_group.command("next")
@option("gold")
@click.option("--reviewer", required=True, help=_REVIEWER)
@option("json")
@user_errors
def next_case(gold: str, reviewer: str, as_json: bool) -> None:
    """Show the reviewer's next case, blinded: no model, candidate, judge verdict, metadata or
    other reviewer's label. Exit 0 with a case, 1 when none is left."""
    from ..annotation import Annotations

    case = Annotations(gold).next_for(reviewer)
    if as_json:
        echo_json(case.model_dump(mode="json") if case else None)
    elif case is None:
        click.echo(f"{reviewer}: no case left to review")
    else:
        click.echo("\n".join(_blinded_lines(case)))
    if case is None:
        raise SystemExit(ExitCode.FAILED)


def _blinded_lines(case: BlindedCase) -> list[str]:
    """What ``annotate next`` prints: the case, then the rubric's labels with their boundaries,
    the precedence and the ambiguity rule."""
    lines = [f"case:      {case.case_id} (slice {case.slice})"]
    if case.criterion:
        lines.append(f"criterion: {case.criterion}")
    for name in ("input", "response", "grading_notes", "reference"):
        value = getattr(case, name)
        if value:
            lines.append(f"--- {name} ---\n{value}")
    for passage in case.evidence:
        lines.append(f"--- evidence {passage['id']} ---\n{passage['text']}")
    lines.append(f"labels:    {', '.join(case.labels)}")
    lines += [f"  {label}: {boundary}" for label, boundary in case.boundaries.items()]
    if case.precedence:
        lines.append(f"precedence: {' > '.join(case.precedence)} (the first that applies wins)")
    if case.ambiguity:
        lines.append(f"ambiguous: {case.ambiguity}")
    return lines


@annotate_group.command("submit")
@option("gold")
@click.option("--reviewer", required=True, help=_REVIEWER)
@click.option("--case", "case_id", required=True, help="The assigned case.")
@click.option("--label", required=True, help="A label of the rubric.")
@click.option("--confidence", type=click.Choice(["low", "medium", "high"]))
@click.option("--rationale", help="Why, citing the evidence.")
@click.option(
    "--span",
    "spans",
    multiple=True,
    help='A cited passage: FIELD:START:END or FIELD:"exact text" (FIELD: input, response,'
    " grading_notes, reference); repeatable.",
)
@click.option("--evidence", "evidence", multiple=True, help="A cited evidence id; repeatable.")
@click.option("--escalate", is_flag=True, help="Ask for adjudication whatever the others say.")
@user_errors
def submit(
    gold: str,
    reviewer: str,
    case_id: str,
    label: str,
    confidence: Literal["low", "medium", "high"] | None,
    rationale: str | None,
    spans: tuple[str, ...],
    evidence: tuple[str, ...],
    escalate: bool,
) -> None:
    """Record one independent review of an assigned case (final: a reviewer labels a case once)."""
    from ..annotation import Annotations, parse_span

    queue = Annotations(gold)
    case = queue.cases().get(case_id)
    cited = [parse_span(text, case) for text in spans] if case else []
    queue.submit(
        reviewer,
        case_id,
        label,
        confidence=confidence,
        rationale=rationale,
        spans=cited,
        evidence=evidence,
        escalate=escalate,
    )
    click.echo(f"recorded {reviewer}'s review of {case_id}")


@annotate_group.command("status")
@option("gold")
@click.option("--reviewer", help="Only this reviewer's progress (no labels shown).")
@option("json")
@user_errors
def status(gold: str, reviewer: str | None, as_json: bool) -> None:
    """Progress per reviewer and every queued case's status. Labels are shown only to an
    adjudicator's view (without --reviewer)."""
    from ..annotation import Annotations, counts, reviewer_progress

    queue = Annotations(gold)
    progress = reviewer_progress(queue)
    states = [] if reviewer else queue.status()
    if reviewer:
        progress = {reviewer: progress.get(reviewer, (0, 0))}
    if as_json:
        echo_json({"reviewers": progress, "cases": [asdict(s) for s in states]})
        return
    for name, (done, assigned) in progress.items():
        click.echo(f"{name}: {done} of {assigned} reviewed")
    if states:
        click.echo("cases: " + ", ".join(f"{k} {v}" for k, v in sorted(counts(states).items())))
        for s in states:
            if s.status in ("disagreement", "escalated"):
                given = ", ".join(f"{k}={v}" for k, v in s.labels.items())
                click.echo(f"  {s.case_id} ({s.slice}): {s.status}: {given}")


@click.command("adjudicate")
@option("gold")
@click.option("--adjudicator", required=True, help=_REVIEWER + " Not a reviewer of the case.")
@click.option("--case", "case_id", help="The case to decide (see `workbench annotate status`).")
@click.option("--label", help="The adjudicated label.")
@option("reason", required=False, help="Why this label.")
@click.option(
    "--agreements", is_flag=True, help="Adjudicate every case whose reviewers agree (unescalated)."
)
@user_errors
def adjudicate(
    gold: str,
    adjudicator: str,
    case_id: str | None,
    label: str | None,
    reason: str | None,
    agreements: bool,
) -> None:
    """Resolve reviewed queue cases into adjudicated gold records.

    One case (--case, --label) or every agreement (--agreements), appended to gold.jsonl; then
    `workbench validate` and `workbench agreement`."""
    from ..annotation import Annotations
    from ..errors import refusal

    queue = Annotations(gold)
    if agreements:
        done = queue.adjudicate_agreements(adjudicator)
        click.echo(f"adjudicated {len(done)} agreed case(s)")
    if case_id is not None or label is not None:
        if not (case_id and label):
            raise refusal(
                "invalid arguments",
                "--case/--label",
                "missing_option",
                "--case and --label go together",
                "give both, or --agreements",
            )
        queue.adjudicate(case_id, label, adjudicator=adjudicator, reason=reason)
        click.echo(f"adjudicated {case_id}: {label}")
    elif not agreements:
        raise refusal(
            "invalid arguments",
            "adjudicate",
            "missing_option",
            "nothing to adjudicate",
            "give --case and --label, or --agreements",
        )
