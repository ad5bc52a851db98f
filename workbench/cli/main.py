"""Entry point: one click group; each command lives in its own module, imported when used
(:data:`COMMANDS` holds each one's help paragraph, so ``--help`` imports none of them).
"""

from __future__ import annotations

import re

import click

from .. import __version__
from ._lazy_group import LazyCommand, LazyGroup

_HELP = """\
init Create a project's templates in DIRECTORY: rubric, card, policy, judge, controls.
validate Check a gold dataset (directory or gold.jsonl) and report every problem at once.
annotate Collect blinded gold reviews: queue cases, label them, see where they stand.
adjudicate Resolve reviewed queue cases into adjudicated gold records.
production Human review of a judge's production verdicts: sampled, blinded, adjudicated.
freeze Freeze an approved input (a dataset, suite, policy, mapping ...) as a release.
card Show a dataset card: the documented front matter plus computed counts.
agreement Human-human agreement: Cohen's kappa, Krippendorff's alpha, Fleiss' kappa, per slice.
align Join judge results to adjudicated gold labels and report alignment per slice.
run Run a judge candidate over one partition of a gold dataset.
import Convert your own table, or a public human-judgment dataset, into a gold dataset.
fake-llm Serve a scripted OpenAI-compatible chat API locally: try a judge with no API key.
ping Send ONE real request to a candidate's endpoint and say whether a run can work.
gate Decide whether judge results meet a reviewed release policy.
override Record and list approved, expiring waivers of gate blockers.
pairwise Accuracy of a pairwise judge in both presentation orders, position consistency and bias.
controls Run a candidate, with its pinned configuration, on a control suite.
noise Score a noise-sensitivity pair suite with Ragas NoiseSensitivity (lower is better).
ranking Ranking judges: battery and gate (run, the default), reviewer agreement, label history,
  replay, verify (freeze a fixture file with `workbench freeze FILE`).
prune Delete expired request payloads of ranking runs, keeping every digest.
certify Certify a candidate once on the held-out partition and write a locked report.
verify Verify a locked report of any kind (or every report under a reports root).
reports List every report with its outcome (or, with --ledger, every held-out use).
plan How many decided cases each slice of a policy needs, and the shortfall per partition.
estimate Bias-corrected pass rates of a certified judge on unlabelled production traffic.
migrate Migrate records written under an older schema version, explicitly and on the record.
compare Compare an old and a new judge version case by case on development or calibration data.
review Reviews recorded outside the notebooks (append-only logs beside the gold).
repeatability Judge every case K times with the same pinned judge: a variance study, not a repair.
drift Run the sentinel cases with a pinned judge and flag every verdict that changed.
authority The authority record: what each certified judge may do (advisory, route, block).
status Every judge with an authority record: authority, scope, report, staleness, drift.
ci CI lanes: contracts on every change, sentinel when judge files change, release by hand.
"""
"""Each command's name and the first paragraph of its help (a line indented continues it)."""
_ELSEWHERE = {  # "module:attribute" of the commands not at workbench.cli.<name>:<name>
    "import": "importers:import_group",
    "annotate": "annotate:annotate_group",
    "adjudicate": "annotate:adjudicate",
    "production": "production:production_group",
    "ping": "ping:ping_command",
    "prune": "ranking:prune",
    "verify": "certify:verify",
    "reports": "certify:reports",
    "migrate": "migrate:migrate_group",
    "review": "review:review_group",
    "drift": "repeatability:drift",
    "status": "authority:status",
}


def _command(name: str, text: str) -> LazyCommand:
    module = name.replace("-", "_")
    target = _ELSEWHERE.get(name, f"{module}:{module}")
    return LazyCommand(f"workbench.cli.{target}", " ".join(text.split()))


COMMANDS: dict[str, LazyCommand] = {
    name: _command(name, text)
    for name, _, text in (entry.partition(" ") for entry in re.split(r"\n(?! )", _HELP.strip()))
}


@click.group(
    cls=LazyGroup, lazy_commands=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.version_option(__version__, prog_name="workbench")
def main() -> None:
    """Judge calibration workbench: prove, or disprove, that an LLM judge agrees with human
    reviewers."""


def run() -> None:
    """The ``workbench`` console script (and ``python -m workbench``)."""
    main()


if __name__ == "__main__":
    run()
