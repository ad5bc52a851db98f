"""``workbench plan``."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import refusal
from ..gold import load_dataset
from ..outcomes import ExitCode
from ..policy import load_policy
from ..stats import INTERVALS, Interval
from ._common import user_errors
from ._options import flag, option, show, shown


@click.command()
@option("policy")
@option("gold", help="Gold dataset directory (or gold.jsonl) to compare with, per partition.")
@shown(
    "--at-fraction",
    type=float,
    default=0.5,
    help="Plan for a judge whose true error rate is this fraction of each limit (0 <= f < 1).",
)
@shown(
    "--interval",
    type=click.Choice(INTERVALS),
    default="wilson",
    help="Upper-bound interval: wilson (the gate's) or clopper-pearson (exact).",
)
@option("json", help="Print the documented, versioned JSON plan.")
@flag("--fail-short", help="Exit 4 when the policy's gate partition is short of any requirement.")
@flag(
    "--simulate",
    help="Instead: the gate's chance of certifying, review and failure on the gate partition's"
    " real slices and groups, for judges whose true rate is a fraction of each limit"
    " (docs/statistics.md).",
)
@shown(
    "--icc",
    type=click.FloatRange(0, 1, max_open=True),
    default=0.3,
    help="With --simulate: assumed correlation of a judge's errors within a group.",
)
@user_errors
def plan(
    policy: str,
    gold: str,
    at_fraction: float,
    interval: Interval,
    as_json: bool,
    fail_short: bool,
    simulate: bool,
    icc: float,
) -> None:
    """How many decided cases each slice of a policy needs, and the shortfall per partition.

    For a rate limit L on the upper_95 basis: the smallest n from which floor(f x L x n) errors
    (f = --at-fraction) keep the 95% upper bound within L. 'have' counts the adjudicated cases
    of the slice in each partition.
    """
    from ..planning import format_plan, plan_policy

    if not (0 <= at_fraction < 1):
        message = f"--at-fraction must be at least 0 and below 1, got {at_fraction:g}"
        fix = "give the true rate to plan for as a fraction of the limit, e.g. 0.5"
        raise refusal("invalid arguments", "--at-fraction", "at_fraction_range", message, fix)
    loaded = load_policy(policy)
    dataset = load_dataset(gold)
    if simulate:
        from ..planning import format_simulation, simulate_gate

        show(simulate_gate(loaded, dataset, icc=icc), as_json, format_simulation)
        return
    result = plan_policy(
        loaded, dataset, at_fraction=at_fraction, interval=interval, policy_path=Path(policy)
    )
    show(result, as_json, format_plan)
    if fail_short and result.short():
        raise SystemExit(ExitCode.REVIEW_REQUIRED)
