"""``workbench run``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..gold import PARTITIONS, load_dataset
from ..judges import load_candidate
from ..outcomes import ExitCode
from ..policy import load_policy
from ..results import format_slice_costs
from ..runs import SUMMARY_FILE, RunOptions, RunSummary, run_candidate_sync
from ..sampling import SamplingPlan, load_sampling_plan
from ._common import user_errors
from ._options import budget_refusal, option, path
from ._run_options import engine, run_option, run_options


@click.command()
@option("candidate")
@option("gold")
@option("partition", type=click.Choice(PARTITIONS), help="Partition to judge.")
@option("out", required=True, help="Run directory (manifest.json, results.jsonl, run.json).")
@run_options(
    "concurrency",
    "budget",
    "max_cases",
    "repeats",
    "cache",
    "no_cache",
    "retry_errors",
    "no_progress",
)
@path(
    "--shadow-of",
    help="Run --candidate in shadow of this judge (the spec of the judge holding authority).",
)
@option(
    "label_mapping",
    help="With --shadow-of: reviewed mapping of the current judge's labels into the rubric's.",
)
@option(
    "policy",
    "policy_path",
    help="Apply the policy's declared sampling plan (`sampling:`), if any.",
    required=False,
)
@path(
    "--sampling-plan",
    "plan_path",
    help="Apply this declared sampling plan file (instead of --policy).",
)
@run_option("executor")
@run_option("shards")
@run_option("calls_per_second")
@run_option("ray_cpus_per_shard")
@user_errors
def run(
    candidate: str,
    gold: str,
    partition: str,
    out: str,
    options: RunOptions,
    shadow_of: str | None,
    label_mapping: str | None,
    policy_path: str | None,
    plan_path: str | None,
) -> None:
    """Run a judge candidate over one partition of a gold dataset.

    Every attempt is appended to OUT/results.jsonl; re-running resumes, and cached verdicts are
    reused. With a sampling plan (--policy or --sampling-plan) only its reproducible sample is
    judged, never certified. --shadow-of CURRENT judges the same cases with both judges and
    records their disagreements for review, never in a gate. --executor ray runs --shards N
    shards under one budget. Exit 0 complete; 3 incomplete (budget, case limit or circuit
    breaker: unrun cases listed); 5 complete with evaluator errors; 2 invalid input.
    """
    _check_combinations(options, shadow_of, label_mapping, policy_path, plan_path)
    if shadow_of is not None:
        return _run_shadow(candidate, shadow_of, gold, partition, out, options, label_mapping)
    plan, source = sampling_plan_from(policy_path, plan_path)
    if options.executor == "ray":
        from ..runs._ray import run_candidate_ray

        summary = run_candidate_ray(
            candidate, gold, partition, out, options, sampling=plan, sampling_source=source
        )
    else:
        summary = run_candidate_sync(
            load_candidate(candidate),
            load_dataset(gold),
            partition,
            out,
            options,
            sampling=plan,
            sampling_source=source,
        )
    raise SystemExit(report_summary(summary))


def _check_combinations(
    options: RunOptions,
    shadow_of: str | None,
    label_mapping: str | None,
    policy_path: str | None,
    plan_path: str | None,
) -> None:
    if options.executor == "ray":
        if shadow_of is not None:
            raise click.UsageError("--shadow-of runs on the local executor only")
        if options.shards is None:
            raise click.UsageError("--executor ray needs --shards N (the number of Ray tasks)")
    elif (options.shards, options.calls_per_second, options.ray_cpus_per_shard) != (None,) * 3:
        raise click.UsageError(
            "--shards, --calls-per-second and --ray-cpus-per-shard apply only with --executor ray"
        )
    if shadow_of is not None and (policy_path is not None or plan_path is not None):
        every = "a shadow comparison judges every case"
        raise click.UsageError(
            f"--policy and --sampling-plan cannot be combined with --shadow-of: {every}"
        )
    if shadow_of is None and label_mapping is not None:
        raise click.UsageError("--label-mapping applies only with --shadow-of")


def sampling_plan_from(
    policy_path: str | None, plan_path: str | None, *, quiet: bool = False
) -> tuple[SamplingPlan | None, str | None]:
    """The declared plan ``--policy`` or ``--sampling-plan`` names, and where it came from."""
    if policy_path is not None and plan_path is not None:
        one = "a run is drawn under one declared plan"
        raise click.UsageError(f"give --policy or --sampling-plan, not both: {one}")
    if plan_path is not None:
        return load_sampling_plan(plan_path), plan_path
    if policy_path is not None:
        policy = load_policy(policy_path)
        if policy.sampling is not None:
            return policy.sampling, f"policy {policy.label}"
        if not quiet:
            message = "declares no sampling plan: every case of the partition is planned"
            click.echo(f"policy {policy.label} {message}", err=True)
    return None, None


SHOWN_IDS = 10  # case ids a run summary prints per list (all of them are in run.json)


def _first(ids: list[str], where: Path, key: str) -> str:
    if len(ids) <= SHOWN_IDS:
        return ", ".join(ids)
    return (
        ", ".join(ids[:SHOWN_IDS])
        + f" and {len(ids) - SHOWN_IDS} more (every one in {where}, key {key!r})"
    )


def report_summary(summary: RunSummary) -> int:
    """Print a run summary; return the exit code (0, 3 or 5)."""
    where = Path(summary.results_path).parent / SUMMARY_FILE
    status = summary.status.upper() + (
        f" ({summary.stop_reason.replace('_', ' ')})" if summary.stop_reason else ""
    )
    click.echo(
        f"{summary.judge} on {summary.partition}: {status} - {summary.verdicts} verdicts,"
        f" {summary.errors} evaluator errors"
        + (f" ({len(summary.pending_retry)} stopped mid-retry)" if summary.pending_retry else "")
        + f", {len(summary.unrun)} unrun of {summary.planned}; {summary.calls} calls"
        f" ({summary.retries} retries), {summary.cache_hits} cached, {summary.resumed} already"
        f" done; cost ${summary.cost_usd:.4f}"
        + (f" of ${summary.budget_usd:.4f}" if summary.budget_usd is not None else "")
        + f"; results {summary.results_path}"
    )
    if summary.sampling_plan_sha256:
        click.echo(
            f"sampled out ({len(summary.sampled_out)}, declared plan"
            f" {summary.sampling_plan_sha256[:12]}"
            + (f" from {summary.sampling_plan_source}" if summary.sampling_plan_source else "")
            + "; not judged, never a pass): "
            + (_first(summary.sampled_out, where, "sampled_out") or "none")
        )
    if summary.slice_costs and summary.slice_costs[-1].cases:
        click.echo(
            "cost and tokens per judged case, by slice (median, p95 nearest rank, max; retries"
            " included, cached verdicts left out):"
        )
        click.echo(format_slice_costs(summary.slice_costs))
    if summary.errors_by_kind:
        kinds = ", ".join(f"{k}={v}" for k, v in summary.errors_by_kind.items())
        click.echo(f"evaluator errors by kind: {kinds}")
    if summary.stop_detail:
        click.echo(f"stopped: {summary.stop_detail}")
    for warning in summary.warnings:
        click.echo(f"warning: {warning}", err=True)
    if summary.status != "complete":
        if summary.unrun:
            unrun = _first(summary.unrun, where, "unrun")
            click.echo(f"unrun ({len(summary.unrun)}): {unrun}", err=True)
        if summary.pending_retry:
            click.echo(
                f"stopped mid-retry ({len(summary.pending_retry)}; last attempt a retryable error"
                " with attempts left, rerun to continue): "
                + _first(summary.pending_retry, where, "pending_retry"),
                err=True,
            )
        return ExitCode.INCOMPLETE
    if summary.errors:
        click.echo(
            f"{summary.errors} case(s) ended in an evaluator error: the run is complete but their"
            f" verdicts are unknown (exit {int(ExitCode.EVALUATOR_ERRORS)})",
            err=True,
        )
        return ExitCode.EVALUATOR_ERRORS
    return ExitCode.OK


def _run_shadow(
    candidate: str,
    current: str,
    gold: str,
    partition: str,
    out: str,
    options: RunOptions,
    label_mapping: str | None,
) -> None:
    from ..authority import format_shadow, run_shadow_sync

    used = {
        "--repeat": options.repeats != 1,
        "--max-cases": options.max_cases is not None,
        "--retry-errors": options.retry_errors,
    }
    refused = [flag for flag, given in used.items() if given]
    if refused:
        raise click.UsageError(
            f"{', '.join(refused)} cannot be combined with --shadow-of: a shadow comparison judges"
            " every case of the partition once with both judges"
        )
    if partition not in ("development", "calibration"):
        held_out = "held-out data is for certification only"
        raise click.UsageError(f"--shadow-of runs on development or calibration data ({held_out})")
    with budget_refusal():
        entry = run_shadow_sync(
            candidate,
            current,
            gold,
            partition,
            out,
            **engine(options),
            label_mapping=label_mapping,
        )
    click.echo(format_shadow(entry))
    if entry.status != "complete":
        sys.exit(ExitCode.INCOMPLETE)
    if entry.current_errors or entry.shadow_errors:
        click.echo(
            f"evaluator errors: {entry.current_errors} case(s) of {entry.current},"
            f" {entry.shadow_errors} of {entry.shadow}: their verdicts are unknown",
            err=True,
        )
        sys.exit(ExitCode.EVALUATOR_ERRORS)
    sys.exit(ExitCode.OK)
