"""``workbench estimate``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ._common import FiniteFloatRange, user_errors
from ._options import option, path, show, shown

if TYPE_CHECKING:
    from ..estimate import RGInterval


@click.command()
@option("report", help="Certification report directory, reports/<candidate>/<version>/<n>.")
@option(
    "results",
    help=(
        "The certified judge's verdicts on production traffic (judge-result contract JSONL, no"
        " gold)."
    ),
)
@path(
    "--slices",
    "slices",
    required=True,
    help=(
        "Slice of every production case: CSV with header case_id,slice, or JSONL {case_id, slice}."
    ),
)
@path(
    "--rubric",
    "rubric",
    required=True,
    help="The rubric (rubric.yaml or its dataset directory) the judge was certified under.",
)
@path(
    "--labelled",
    "labelled",
    help=(
        "Optional random labelled sample of the same traffic: CSV case_id,label or JSONL {case_id,"
        " label}; adds PPI."
    ),
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
def estimate(
    report: str,
    results: str,
    slices: str,
    rubric: str,
    labelled: str | None,
    interval: RGInterval,
    seed: int,
    unstable_below: float,
    as_json: bool,
) -> None:
    """Bias-corrected pass rates of a certified judge on unlabelled production traffic.

    Per slice and overall, side by side: the naive judge pass rate; the Rogan-Gladen corrected
    human-pass rate using the sensitivity (1 - false-fail rate) and specificity (1 - false-pass
    rate) the certification measured on held-out data, with a 95% interval that includes their
    uncertainty (parametric bootstrap, or --interval delta), clipped to [0, 1]; and, with
    --labelled, prediction-powered inference (Angelopoulos et al. 2023). A correction with
    sensitivity + specificity close to 1 is flagged UNSTABLE.

    Refuses (exit 2) a report that does not verify, is not certified, is stale (another Ragas
    version, or traffic judged by another fingerprint) or does not cover the traffic's slices.
    Exit 3 when some traffic cases have no verdict (errors, missing results): the estimates
    then cover decided cases only.
    """
    from ..estimate import estimate_production, format_estimate

    result = estimate_production(
        report,
        results,
        slices,
        rubric,
        labelled=labelled,
        interval=interval,
        seed=seed,
        unstable_below=unstable_below,
    )
    show(result, as_json, format_estimate)
    raise SystemExit(result.exit_code)
