"""``workbench controls``: run a judge candidate on a control suite."""

from __future__ import annotations

from pathlib import Path

import click

from ..controls import format_controls, load_suite, run_controls_sync
from ..judges import load_candidate
from ..policy import decide
from ..runs._options import RunOptions
from ._common import echo_json, user_errors
from ._run_options import run_options


def default_out(candidate_label: str, suite_label: str) -> Path:
    """``runs/controls/<candidate name@version>/<suite name@version>``."""
    return Path("runs") / "controls" / candidate_label / suite_label


@click.command()
@click.option(
    "--candidate",
    required=True,
    type=click.Path(path_type=str),
    help="Candidate spec, e.g. data/candidates/<name>@<version>.yaml.",
)
@click.option(
    "--suite",
    required=True,
    type=click.Path(path_type=str),
    help="Control suite, e.g. data/controls/support-controls@1.yaml.",
)
@click.option(
    "--out",
    type=click.Path(path_type=str),
    default=None,
    help="Run directory (default runs/controls/<candidate>/<suite>).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the ControlsReport as JSON.")
@run_options("concurrency", "budget", "no_cache", "no_progress")
@user_errors
def controls(
    candidate: str, suite: str, out: str | None, as_json: bool, options: RunOptions
) -> None:
    """Run a candidate, with its pinned configuration, on a control suite.

    Each control passes when the verdict is one of its acceptable labels; an evaluator error or
    a missing result leaves it INCOMPLETE, never passed. A role passes when all its controls
    pass. The judge sees only input, response, grading notes, reference and contexts; expected
    labels and rationales never reach it. Every attempt is recorded in OUT/results.jsonl and
    the report in OUT/controls.json.

    Every role blocks here: the outcome is the gate's rule over the roles' blockers (the one
    decision step). Exit 0 when every role passes, 1 when a role failed and every control was
    evaluated, 3 when some controls could not be evaluated (missing evidence comes first, as in
    the gate; a failed role is still listed), 2 on invalid input.
    """
    control_suite = load_suite(suite)
    judge = load_candidate(candidate)
    run_dir = Path(out) if out else default_out(judge.spec.label, control_suite.label)
    report = run_controls_sync(
        judge,
        control_suite,
        run_dir,
        concurrency=options.concurrency,
        budget_usd=options.budget_usd,
        cache_dir=options.cache_dir,
        progress=options.progress,
    )
    if as_json:
        echo_json(report.model_dump(mode="json"))
    else:
        click.echo(format_controls(report))
        click.echo(f"run directory: {run_dir}")
    # every role of the suite blocks here; the outcome is the one decision step's
    roles = [r.role for r in report.roles]
    decision = decide(report.blockers(roles), policy_label=None, fingerprint=None, clear="passed")
    raise SystemExit(decision.exit_code)
