"""``workbench controls``: run a judge candidate on a control suite."""

from __future__ import annotations

from pathlib import Path

import click

from ..controls import default_run_dir, format_controls, load_suite, run_controls_sync
from ..judges import load_candidate
from ..runs import RunOptions
from ._common import project_golds, user_errors
from ._options import option, path, show
from ._run_options import run_options


@click.command()
@option("candidate")
@path(
    "--suite",
    required=True,
    help="Control suite, e.g. data/controls/support-controls@1.yaml.",
)
@option(
    "gold",
    "golds",
    multiple=True,
    required=False,
    help=(
        "Gold dataset whose held-out cases no control may copy (repeatable; default: every gold"
        " dataset of the project, data/*/gold.jsonl or ci.paths.gold)."
    ),
)
@option("out", help="Run directory (default runs/controls/<candidate>/<suite>).")
@option("json", help="Print the ControlsReport as JSON.")
@run_options("concurrency", "budget", "no_cache", "no_progress")
@user_errors
def controls(
    candidate: str,
    suite: str,
    golds: tuple[str, ...],
    out: str | None,
    as_json: bool,
    options: RunOptions,
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
    the gate; a failed role is still listed), 2 on invalid input, including a control with the
    content of a held-out case (held_out_content_exposed: held-out cases are judged only by a
    certification).
    """
    from ..heldout import refuse_held_out_content

    control_suite = load_suite(suite)
    refuse_held_out_content(
        control_suite.controls, list(golds) or project_golds(suite), suite, what="control"
    )
    judge = load_candidate(candidate)
    run_dir = Path(out) if out else default_run_dir(judge.spec.label, control_suite.label)
    report = run_controls_sync(
        judge,
        control_suite,
        run_dir,
        concurrency=options.concurrency,
        budget_usd=options.budget_usd,
        cache_dir=options.cache_dir,
        progress=options.progress,
    )
    show(report, as_json, format_controls, lambda _: f"run directory: {run_dir}")
    raise SystemExit(report.decision().exit_code)
