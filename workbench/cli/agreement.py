"""``workbench agreement``."""

from __future__ import annotations

import click

from ..agreement import AgreementBlock, human_agreement
from ..gold import PARTITIONS, load_dataset
from ..stats import Kappa
from ._common import echo_json, user_errors


def _k(k: Kappa) -> str:
    return f"{k.value:.4f} (n={k.n})" if k.value is not None else f"n/a (n={k.n}; {k.note})"


def _block(title: str, block: AgreementBlock) -> list[str]:
    lines = [f"{title}: {block.cases} cases, reviewers: {', '.join(block.reviewers)}"]
    for p in block.pairs:
        lines.append(f"  {p.reviewer_a} vs {p.reviewer_b}: n={p.n}  raw agreement {p.raw_agreement.format(3)}  Cohen's kappa {_k(p.cohen_kappa)}")
    lines.append(f"  Krippendorff's alpha (nominal): {_k(block.krippendorff_alpha)}")
    lines.append(f"  Fleiss' kappa: {_k(block.fleiss_kappa)}")
    lines.append(f"  cases with reviewer disagreement: {block.disagreement.format(3)}")
    return lines


@click.command()
@click.argument("path", type=click.Path(path_type=str))
@click.option("--partition", type=click.Choice(PARTITIONS), default=None, help="Only this partition.")
@click.option("--json", "as_json", is_flag=True, help="Print the documented JSON structure.")
@user_errors
def agreement(path: str, partition: str | None, as_json: bool) -> None:
    """Human-human agreement: pairwise raw agreement and Cohen's kappa, Krippendorff's alpha, Fleiss' kappa; overall and per slice."""
    report = human_agreement(load_dataset(path), partition)
    if as_json:
        echo_json(report.model_dump(mode="json"))
        return
    click.echo(f"Human agreement ({report.partition or 'all partitions'}; rubric {report.rubric_version}; labels {', '.join(report.labels)})")
    for line in _block("overall", report.overall):
        click.echo(line)
    for name, block in report.slices.items():
        for line in _block(f"slice {name}", block):
            click.echo(line)
