"""Entry point: one click group; each command lives in its own module."""

from __future__ import annotations

import click

from .. import __version__
from .agreement import agreement
from .align import align
from .authority import authority, status
from .card import card
from .certify import certify, reports, verify
from .ci import ci
from .compare import compare
from .controls import controls
from .estimate import estimate
from .fake_llm import fake_llm
from .freeze import freeze
from .gate import gate
from .importers import import_group
from .init import init
from .migrate import migrate_group
from .noise import noise
from .override import override
from .pairwise import pairwise
from .ping import ping_command
from .plan import plan
from .ranking import prune, ranking
from .repeatability import drift, repeatability
from .review import review_group
from .run import run
from .validate import validate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="workbench")
def main() -> None:
    """Judge calibration workbench: prove, or disprove, that an LLM judge agrees with human reviewers."""


main.add_command(init)
main.add_command(validate)
main.add_command(freeze)
main.add_command(card)
main.add_command(agreement)
main.add_command(align)
main.add_command(run)
main.add_command(import_group)
main.add_command(fake_llm)
main.add_command(ping_command)
main.add_command(gate)
main.add_command(override)
main.add_command(pairwise)
main.add_command(controls)
main.add_command(noise)
main.add_command(ranking)
main.add_command(prune)
main.add_command(certify)
main.add_command(verify)
main.add_command(reports)
main.add_command(plan)
main.add_command(estimate)
main.add_command(migrate_group)
main.add_command(compare)
main.add_command(repeatability)
main.add_command(drift)
main.add_command(authority)
main.add_command(status)
main.add_command(ci)
main.add_command(review_group)

if __name__ == "__main__":
    main()
