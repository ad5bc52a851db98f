"""``workbench card``."""

from __future__ import annotations

from typing import Any

import click
import yaml

from ..gold import CARD_FIELDS, card_statistics, load_dataset
from ..stats import DEFAULT_MIN_SHARED
from ._common import echo_json, user_errors

NAMES_SHOWN = 20
"""Reviewers (and reviewer pairs) are listed one by one up to this many; beyond it, the most active
and a count."""


@click.command()
@click.argument("path", type=click.Path(path_type=str))
@click.option(
    "--min-shared",
    type=click.IntRange(min=1),
    default=DEFAULT_MIN_SHARED,
    show_default=True,
    help=(
        "List only reviewer pairs sharing at least this many cases; the others are counted as left"
        " out."
    ),
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the card and its computed part as JSON."
)
@user_errors
def card(path: str, min_shared: int, as_json: bool) -> None:
    """Show a dataset card: the documented front matter plus computed counts.

    The computed part: counts by partition x slice x adjudicated label, a reviewer summary
    (count, reviews per reviewer), reviewer pairs sharing at least --min-shared cases,
    reviews per case and the reviewer disagreement rate.
    """
    dataset = load_dataset(path)
    stats = card_statistics(dataset, min_shared=min_shared)
    documented = dataset.card.model_dump(exclude_none=True) if dataset.card else {}
    if as_json:
        echo_json(
            {
                "documented": documented,
                "computed": stats,
                "dataset_sha256": dataset.sha256,
                "rubric_version": dataset.rubric.version,
            }
        )
        return
    click.echo("# Dataset card")
    if documented:
        click.echo(yaml.safe_dump(documented, sort_keys=False, allow_unicode=True).rstrip())
    missing = [f for f in CARD_FIELDS if not documented.get(f)]
    if missing:
        click.echo(f"(undocumented: {', '.join(missing)})")
    click.echo("")
    click.echo(
        f"# Computed (dataset sha256 {dataset.sha256[:12]}, rubric {dataset.rubric.version})"
    )
    click.echo(
        f"cases: {stats['cases']} active, {stats['superseded_records']} superseded record(s),"
        f" {stats['groups']} groups"
    )
    labels = list(dataset.rubric.labels)
    width = (
        max(
            [
                len("slice"),
                *(len(s) for sl in stats["by_partition_slice_label"].values() for s in sl),
            ]
        )
        + 2
    )
    cols = [max(len(lab), 5) + 2 for lab in labels]
    click.echo(
        f"{'partition':<13}{'slice':<{width}}{'risk':<10}"
        + "".join(f"{lab:>{w}}" for lab, w in zip(labels, cols, strict=True))
        + f"{'total':>8}"
    )
    for part, slices in stats["by_partition_slice_label"].items():
        for slice_name, counts in slices.items():
            total = sum(counts.values())
            risk = dataset.rubric.risk_of(slice_name) or "?"
            click.echo(
                f"{part:<13}{slice_name:<{width}}{risk:<10}"
                + "".join(f"{counts.get(lab, 0):>{w}}" for lab, w in zip(labels, cols, strict=True))
                + f"{total:>8}"
            )
    click.echo("by label: " + ", ".join(f"{k} {v}" for k, v in stats["by_label"].items()))
    for line in _reviewer_lines(stats):
        click.echo(line)
    click.echo(
        "reviews per case: " + ", ".join(f"{k}: {v}" for k, v in stats["reviews_per_case"].items())
    )
    d = stats["disagreement"]
    rate = f"{d['rate']:.1%}" if d["rate"] is not None else "n/a"
    click.echo(
        f"reviewer disagreement: {d['cases']}/{d['n']} cases ({rate}), among"
        f" {stats['disagreement_basis']}"
    )


def _reviewer_lines(stats: dict[str, Any]) -> list[str]:
    summary = stats["reviewer_summary"]
    if not summary["count"]:
        return ["reviewers: 0"]
    lines = [
        f"reviewers: {summary['count']} (reviews per reviewer: min {summary['reviews_min']}, median"
        f" {summary['reviews_median']:g}, max {summary['reviews_max']})"
    ]
    by_reviews = sorted(stats["reviewers"].items(), key=lambda kv: (-kv[1], kv[0]))
    if len(by_reviews) <= NAMES_SHOWN:
        lines.append("  " + ", ".join(f"{k} ({v} reviews)" for k, v in by_reviews))
    else:
        shown = by_reviews[:10]
        lines.append(
            "  most reviews: "
            + ", ".join(f"{k} ({v})" for k, v in shown)
            + f", ... and {len(by_reviews) - len(shown)} more (--json lists all)"
        )
    pairs = stats["reviewer_pairs"]
    lines.append(
        f"reviewer pairs sharing >= {pairs['min_shared']} case(s): {pairs['listed']} of"
        f" {pairs['total']} listed"
        + (
            f"; {pairs['left_out']} sharing fewer left out (--min-shared changes this)"
            if pairs["left_out"]
            else ""
        )
    )
    lines += [
        f"  {p['reviewer_a']} & {p['reviewer_b']}: {p['shared']} shared cases, {p['same_label']}"
        " with the same label"
        for p in pairs["pairs"][:NAMES_SHOWN]
    ]
    if pairs["listed"] > NAMES_SHOWN:
        lines.append(
            f"  ... and {pairs['listed'] - NAMES_SHOWN} more pairs with the most shared cases above"
            " (--json lists all; workbench agreement gives their kappas)"
        )
    return lines
