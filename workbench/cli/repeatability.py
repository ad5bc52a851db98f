"""``workbench repeatability`` and ``workbench drift``: a pinned judge's variance and its drift."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ..runs import RunOptions
from ._common import user_errors
from ._options import budget_refusal, option, path, show
from ._run_options import engine, run_options

_BUDGET = {"help": "Spend limit; refused before any call when the estimate exceeds it."}


@click.command()
@option("candidate", help="Candidate spec.")
@option("gold")
@option(
    "partition", help="Partition to study (certification wants calibration; held-out is refused)."
)
@click.option(
    "--repeats",
    required=True,
    type=click.IntRange(min=2),
    help="K: judge every case K times (certification wants K >= 3).",
)
@option("out", help="Run directory (default runs/repeatability/<candidate>/<partition>-k<K>).")
@path("--log", help="Study log to append to (default repeatability_studies.jsonl beside the gold).")
@run_options(
    "budget",
    "concurrency",
    "no_cache",
    "no_progress",
    budget=_BUDGET,
    no_cache={"help": "Neither read nor write the verdict cache (each repeat has its own key)."},
)
@option("json", help="Print the study as JSON.")
@user_errors
def repeatability(
    candidate: str, gold: str, partition: str, repeats: int, options: RunOptions, **given: Any
) -> None:
    """Judge every case K times with the same pinned judge: a variance study, not a repair.

    Reports flip rates, majority shares and boundary-crossing cases per case and slice, and
    appends the study to the log certification reads. Exit 0 no boundary crossing in a
    critical slice; 4 critical cases crossed (listed for review); 3 incomplete; 2 invalid input.
    """
    from ..judges import load_candidate
    from ..repeatability import format_study, run_repeatability_sync, studies_path_for

    judge = load_candidate(candidate)
    run_dir = Path(
        given["out"]
        or Path("runs") / "repeatability" / judge.spec.label / f"{partition}-k{repeats}"
    )
    with budget_refusal():
        study = run_repeatability_sync(
            judge, gold, partition, repeats, run_dir, log=given["log"], **engine(options)
        )
    where = f"run directory: {run_dir}; study log: {given['log'] or studies_path_for(gold)}"
    show(study, given["as_json"], format_study, lambda _: where)
    sys.exit(study.exit_code)


@click.command()
@option("candidate", help="Candidate spec (the pinned judge).")
@option("gold", help="Gold dataset the sentinels belong to.")
@path(
    "--against",
    help="Baseline: a certification report or run directory (default: the drift log's latest).",
)
@path("--sentinels", help="Sentinel file (default sentinels.yaml beside the gold).")
@click.option(
    "--record-baseline", is_flag=True, help="Record this run as the baseline instead of comparing."
)
@option(
    "report",
    required=False,
    help="With --record-baseline: the certification report the baseline belongs to.",
)
@option(
    "out",
    help="Parent of the run directories (default runs/drift/<candidate>); each run gets its own.",
)
@path("--log", help="Drift log to append to (default drift_log.jsonl beside the gold).")
@run_options("budget", "concurrency", "no_progress", budget=_BUDGET)
@option("json", help="Print the drift-log entry as JSON.")
@user_errors
def drift(candidate: str, gold: str, options: RunOptions, as_json: bool, **given: Any) -> None:
    """Run the sentinel cases with a pinned judge and flag every verdict that changed.

    The sentinels run afresh (no cache) and are compared with the baseline; the entry is
    appended to the drift log `workbench status` reads. Exit 0 stable (or baseline recorded);
    4 drifted (changes listed for review); 3 incomplete; 2 invalid input.
    """
    from ..repeatability import drift_log_path_for, format_drift, run_drift_sync

    if given["report"] is not None and not given["record_baseline"]:
        against = "to compare against a report use --against REPORT"
        raise click.UsageError(f"--report goes with --record-baseline; {against}")
    with budget_refusal():
        entry = run_drift_sync(
            candidate, gold, **given, **engine(options, ("budget_usd", "concurrency", "progress"))
        )
    show(entry, as_json, lambda e: format_drift(e, given["log"] or drift_log_path_for(gold)))
    sys.exit(entry.exit_code)
