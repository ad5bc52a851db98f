"""``workbench controls``: run a judge candidate on a control suite."""

from __future__ import annotations

from pathlib import Path

import click

from ..controls import default_run_dir, format_controls, load_suite, run_controls_sync
from ..judges import load_candidate
from ..runs import RunOptions
from ._common import project_golds, user_errors
from ._options import option, path, show
from ._run_options import engine, run_options


@click.command()
@option("candidate")
@path("--suite", required=True, help="Control suite, e.g. data/controls/support-controls@1.yaml.")
@option(
    "gold",
    "golds",
    multiple=True,
    required=False,
    help="Gold dataset whose held-out cases no control may copy (default: the project's).",
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

    A control passes when the verdict is one of its acceptable labels (an evaluator error or a
    missing result never passes); a role when all its controls pass. Exit 0 every role passes,
    1 a role failed, 3 some controls could not be evaluated, 2 invalid input (a control copying
    a held-out case included).
    """
    from ..heldout import refuse_held_out_content

    control_suite = load_suite(suite)
    refuse_held_out_content(
        control_suite.controls, list(golds) or project_golds(suite), suite, what="control"
    )
    judge = load_candidate(candidate)
    run_dir = Path(out) if out else default_run_dir(judge.spec.label, control_suite.label)
    report = run_controls_sync(judge, control_suite, run_dir, **engine(options))
    show(report, as_json, format_controls, lambda _: f"run directory: {run_dir}")
    raise SystemExit(report.decision().exit_code)
