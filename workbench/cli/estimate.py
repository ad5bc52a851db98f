"""``workbench estimate``."""

from __future__ import annotations

from typing import Any

import click

from ._common import FiniteFloatRange, user_errors
from ._options import option, path, show, shown


@click.command()
@option("report", help="Certification report directory, reports/<candidate>/<version>/<n>.")
@option(
    "results",
    help="The certified judge's verdicts on production traffic (judge-result contract JSONL).",
)
@path(
    "--slices",
    required=True,
    help="Slice of every production case: CSV case_id,slice or JSONL {case_id, slice}.",
)
@path(
    "--rubric",
    required=True,
    help="The rubric (rubric.yaml or its dataset directory) the judge was certified under.",
)
@path(
    "--labelled",
    help="Random labelled sample of the same traffic (CSV case_id,label or JSONL); adds PPI.",
)
@shown(
    "--interval",
    type=click.Choice(["bootstrap", "delta"]),
    default="bootstrap",
    help="Corrected interval: parametric bootstrap (Jeffreys draws) or the delta method.",
)
@option("seed", help="Seed of the bootstrap draws (same inputs and seed, same interval).")
@shown(
    "--unstable-below",
    type=FiniteFloatRange(0, 1),
    default=0.2,
    help="Flag the correction unstable when sensitivity + specificity - 1 is below this.",
)
@option("json", help="Print the documented, versioned JSON estimate.")
@user_errors
def estimate(as_json: bool, **given: Any) -> None:
    """Bias-corrected pass rates of a certified judge on unlabelled production traffic.

    Per slice: the naive pass rate, the Rogan-Gladen corrected rate from the certification's
    sensitivity and specificity with a 95% interval, and with --labelled prediction-powered
    inference. Refuses (exit 2) a report that does not verify, is not certified, is stale or
    does not cover the slices; exit 3 when some traffic cases have no verdict.
    """
    from ..estimate import estimate_production, format_estimate

    result = estimate_production(**given)
    show(result, as_json, format_estimate)
    raise SystemExit(result.exit_code)
