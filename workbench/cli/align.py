"""``workbench align``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..align import align as align_fn
from ..align import format_report, resolve_partition
from ..errors import WorkbenchError
from ..gold import PARTITIONS
from ..heldout import check_held_out_results
from ..outcomes import ExitCode
from ._common import echo_json, user_errors
from ._options import option, options

F = TypeVar("F", bound=Callable[..., Any])


def evidence_options(verb: str, *, partition_note: str = "") -> Callable[[F], F]:
    """``--gold``, ``--results``, ``--partition`` and ``--repeat``: the evidence a command reads
    (``workbench align``, ``workbench gate``)."""
    return options(
        option("gold"),
        option("results"),
        option(
            "partition",
            required=False,
            type=click.Choice(PARTITIONS),
            help=(
                f"Only cases of this partition ({partition_note}default: the partition in the run"
                " manifest beside the results)."
            ),
        ),
        click.option(
            "--repeat",
            type=click.IntRange(min=0),
            default=0,
            show_default=True,
            help=f"Which repeat index to {verb}.",
        ),
    )


@click.command()
@evidence_options("align")
@option("json", help="Print the documented, versioned JSON report.")
@click.option(
    "--wide",
    is_flag=True,
    help="Print the full per-slice, ordinal and cost tables (every count and the token columns;"
    " wider than 120 columns). The default text fits 120 columns.",
)
@click.option("--fail-incomplete", is_flag=True, help="Exit 3 when any case has no result.")
@click.option(
    "--allow-gold-change",
    is_flag=True,
    help=(
        "Align even if the gold changed since the results were produced; every changed case is"
        " named and the report is marked not comparable."
    ),
)
@option(
    "policy",
    "policy_path",
    help="Accept the cases a run's sampling plan left out only if the plan is this policy's"
    " `sampling:` plan (same sha256); otherwise they are missing.",
    required=False,
)
@click.option(
    "--sampling-plan",
    "plan_path",
    type=click.Path(path_type=str),
    default=None,
    help="The same with a sampling plan file (instead of --policy).",
)
@user_errors
def align(
    gold: str,
    results: str,
    partition: str | None,
    repeat: int,
    as_json: bool,
    wide: bool,
    fail_incomplete: bool,
    allow_gold_change: bool,
    policy_path: str | None,
    plan_path: str | None,
) -> None:
    """Join judge results to adjudicated gold labels and report alignment per slice.

    Refuses duplicate results, unknown cases, response-hash mismatches and mixed judges
    (exit 2); so are an LLM verdict without a reason (verdict_reason_missing), a judge
    identity missing the fingerprint fields its kind requires (fingerprint_incomplete) and a
    run directory's results lacking attempts its run counted (attempts_missing). Cases
    without a result are 'missing': the evaluation is incomplete, which is never a pass and
    never a disagreement. Coverage (decided verdicts / cases in scope) is
    shown beside every rate; abstentions (verdicts in the rubric's abstain labels) are in no
    false-pass or false-fail numerator or denominator.

    Lineage: the results must have been produced against this gold (dataset hash and rubric
    version, from the run manifest beside them or from the results themselves). Otherwise
    align refuses (exit 2) and lists the cases that changed and what changed (label,
    response, notes, grading fields); --allow-gold-change aligns anyway, marked not
    comparable. Without --partition, the partition named by the run manifest is used.

    Sampling: cases a run's declared sampling plan left out are out of scope (listed, in no
    figure) only when the same plan is declared here (--policy P with that `sampling:` plan,
    or --sampling-plan FILE): same sha256, re-drawn and confirmed. Otherwise they are missing
    (the evaluation is incomplete). The report ends with cost and tokens per judged case by
    slice: median, p95 and max, beside the totals.

    The text fits 120 columns: per slice the alignment, false-pass and false-fail rates with
    their 95% intervals, kappa, coverage, cases and risk; long slice names wrap. --wide prints
    the full tables (every count, token columns); --json has everything.
    """
    from ..runs import attempt_problems

    removed = attempt_problems(results)  # a deleted retry reads as a valid results file
    if removed:
        raise WorkbenchError("the results lack attempts their run counted", removed)
    partition, source = resolve_partition(results, partition)
    check_held_out_results(
        gold, results, partition
    )  # held-out results only from a recorded certification
    from .run import sampling_plan_from

    plan, _ = sampling_plan_from(policy_path, plan_path, quiet=True)
    report = align_fn(
        gold,
        results,
        partition=partition,
        repeat=repeat,
        allow_gold_change=allow_gold_change,
        partition_source=source,
        sampling_plan=plan,
    )
    if as_json:
        echo_json(report.model_dump(mode="json"))
    else:
        click.echo(format_report(report, wide=wide))
    if fail_incomplete and report.status != "complete":
        raise SystemExit(ExitCode.INCOMPLETE)
