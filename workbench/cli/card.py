"""``workbench card``."""

from __future__ import annotations

import click

from ..gold import card_document, card_statistics, format_card, load_dataset
from ._common import echo_json, user_errors
from ._options import option


@click.command()
@click.argument("path", type=click.Path(path_type=str))
@option("min_shared")
@option("json", help="Print the card and its computed part as JSON.")
@user_errors
def card(path: str, min_shared: int, as_json: bool) -> None:
    """Show a dataset card: the documented front matter plus computed counts."""
    dataset = load_dataset(path)
    stats = card_statistics(dataset, min_shared=min_shared)
    if as_json:
        echo_json(card_document(dataset, stats))
    else:
        click.echo(format_card(dataset, stats))
