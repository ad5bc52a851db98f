"""``workbench agreement``."""

from __future__ import annotations

import click

from .._io import bulk_load
from ..agreement import AgreementBlock, AgreementReport, human_agreement
from ..gold import PARTITIONS, gold_index
from ..stats import Correlation, Kappa
from ._common import echo_json, user_errors
from ._options import option

NAMES_SHOWN = 20  # reviewer names a block header lists; beyond it, only the count


def _k(k: Kappa | None) -> str:
    if k is None:
        return "n/a"
    return f"{k.value:.4f} (n={k.n})" if k.value is not None else f"n/a (n={k.n}; {k.note})"


def _v(k: Kappa | Correlation | None) -> str:
    if k is None:
        return "n/a"
    return f"{k.value:.4f}" if k.value is not None else f"n/a ({k.note})"


def _reviewers(block: AgreementBlock) -> str:
    count = len(block.reviewers)
    if count == 0:
        return "0 reviewers"
    if count <= NAMES_SHOWN:
        return f"{count} reviewer{'s' if count != 1 else ''} ({', '.join(block.reviewers)})"
    return f"{count} reviewers (--json lists them)"


def _block(title: str, block: AgreementBlock, report: AgreementReport) -> list[str]:
    ordered, listed = report.scale_labels is not None, len(block.pairs)
    left_out = f"; {block.pairs_left_out} sharing fewer left out (--min-shared changes this)"
    lines = [
        f"{title}: {block.cases} cases, {_reviewers(block)}",
        f"  reviewer pairs sharing >= {block.min_shared} case(s): {listed} of"
        f" {listed + block.pairs_left_out} listed" + (left_out if block.pairs_left_out else ""),
    ]
    for p in block.pairs:
        line = (
            f"  {p.reviewer_a} vs {p.reviewer_b}: n={p.n}  raw agreement"
            f" {p.raw_agreement.format(3)}  Cohen's kappa (nominal) {_k(p.cohen_kappa)}"
        )
        if ordered and p.weighted_kappa_linear is not None:
            line += (
                f"  weighted kappa linear {_v(p.weighted_kappa_linear)}, quadratic"
                f" {_v(p.weighted_kappa_quadratic)} (n={p.weighted_kappa_linear.n})  Spearman"
                f" {_v(p.spearman)}"
            )
        lines.append(line)
    lines.append(f"  Krippendorff's alpha (nominal): {_k(block.krippendorff_alpha)}")
    if ordered:
        lines.append(f"  Krippendorff's alpha (ordinal): {_k(block.krippendorff_alpha_ordinal)}")
        interval = block.krippendorff_alpha_interval
        numeric = report.scale == "numeric"
        basis = "label values" if numeric else "ranks as values, equal spacing assumed"
        level = f"interval, {basis}" if interval else "interval"
        lines.append(f"  Krippendorff's alpha ({level}): {_k(interval)}")
    lines.append(f"  Fleiss' kappa (nominal): {_k(block.fleiss_kappa)}")
    lines.append(
        f"  cases with reviewer disagreement: {block.disagreement.format(3)} of cases with two or"
        " more reviews (the cases alpha uses)"
    )
    return lines


@click.command()
@click.argument("path", type=click.Path(path_type=str))
@option("partition", type=click.Choice(PARTITIONS), help="Only this partition.", required=False)
@option("min_shared")
@option("json", help="Print the documented JSON structure.")
@user_errors
def agreement(path: str, partition: str | None, min_shared: int, as_json: bool) -> None:
    """Human-human agreement: Cohen's kappa, Krippendorff's alpha, Fleiss' kappa, per slice.

    On an ordinal or numeric rubric it adds weighted kappas, Spearman's rho and ordinal and
    interval alphas.
    """
    with bulk_load():
        index = gold_index(path)
    report = human_agreement(index, partition, min_shared=min_shared)
    if as_json:
        echo_json(report.model_dump(mode="json"))
        return
    scale = f"scale {report.scale}" + (
        f" ({' < '.join(report.scale_labels)})" if report.scale_labels else ""
    )
    click.echo(
        f"Human agreement ({report.partition or 'all partitions'}; rubric {report.rubric_version};"
        f" labels {', '.join(report.labels)}; {scale})"
    )
    blocks = {"overall": report.overall, **{f"slice {n}": b for n, b in report.slices.items()}}
    for title, block in blocks.items():
        click.echo("\n".join(_block(title, block, report)))
