"""Entry point: one click group; each command lives in its own module, imported when used
(:data:`COMMANDS` holds each one's help paragraph, so ``--help`` imports none of them).
"""

from __future__ import annotations

import click

from .. import __version__
from ._lazy_group import LazyCommand, LazyGroup

COMMANDS: dict[str, LazyCommand] = {
    "init": LazyCommand(
        "workbench.cli.init:init",
        "Create a project's templates in DIRECTORY: rubric, card, policy, judge, controls.",
    ),
    "validate": LazyCommand(
        "workbench.cli.validate:validate",
        "Check a gold dataset (directory or gold.jsonl) and report every problem at once.",
    ),
    "annotate": LazyCommand(
        "workbench.cli.annotate:annotate_group",
        "Collect blinded gold reviews: queue cases, label them, see where they stand.",
    ),
    "adjudicate": LazyCommand(
        "workbench.cli.annotate:adjudicate",
        "Resolve reviewed queue cases into adjudicated gold records.",
    ),
    "production": LazyCommand(
        "workbench.cli.production:production_group",
        "Human review of a judge's production verdicts: sampled, blinded, adjudicated.",
    ),
    "freeze": LazyCommand(
        "workbench.cli.freeze:freeze",
        "Freeze an approved input (a dataset, suite, policy, mapping ...) as a release.",
    ),
    "card": LazyCommand(
        "workbench.cli.card:card",
        "Show a dataset card: the documented front matter plus computed counts.",
    ),
    "agreement": LazyCommand(
        "workbench.cli.agreement:agreement",
        "Human-human agreement: Cohen's kappa, Krippendorff's alpha, Fleiss' kappa, per slice.",
    ),
    "align": LazyCommand(
        "workbench.cli.align:align",
        "Join judge results to adjudicated gold labels and report alignment per slice.",
    ),
    "run": LazyCommand(
        "workbench.cli.run:run", "Run a judge candidate over one partition of a gold dataset."
    ),
    "import": LazyCommand(
        "workbench.cli.importers:import_group",
        "Convert your own table, or a public human-judgment dataset, into a gold dataset.",
    ),
    "fake-llm": LazyCommand(
        "workbench.cli.fake_llm:fake_llm",
        "Serve a scripted OpenAI-compatible chat API locally: try a judge with no API key.",
    ),
    "ping": LazyCommand(
        "workbench.cli.ping:ping_command",
        "Send ONE real request to a candidate's endpoint and say whether a run can work.",
    ),
    "gate": LazyCommand(
        "workbench.cli.gate:gate", "Decide whether judge results meet a reviewed release policy."
    ),
    "override": LazyCommand(
        "workbench.cli.override:override",
        "Record and list approved, expiring waivers of gate blockers.",
    ),
    "pairwise": LazyCommand(
        "workbench.cli.pairwise:pairwise",
        "Accuracy of a pairwise judge in both presentation orders, position consistency and bias.",
    ),
    "controls": LazyCommand(
        "workbench.cli.controls:controls",
        "Run a candidate, with its pinned configuration, on a control suite.",
    ),
    "noise": LazyCommand(
        "workbench.cli.noise:noise",
        "Score a noise-sensitivity pair suite with Ragas NoiseSensitivity (lower is better).",
    ),
    "ranking": LazyCommand(
        "workbench.cli.ranking:ranking",
        "Ranking judges: battery and gate (run, the default), reviewer agreement, label history,"
        " replay, verify (freeze a fixture file with `workbench freeze FILE`).",
    ),
    "prune": LazyCommand(
        "workbench.cli.ranking:prune",
        "Delete expired request payloads of ranking runs, keeping every digest.",
    ),
    "certify": LazyCommand(
        "workbench.cli.certify:certify",
        "Certify a candidate once on the held-out partition and write a locked report.",
    ),
    "verify": LazyCommand(
        "workbench.cli.certify:verify",
        "Verify a locked report of any kind (or every report under a reports root).",
    ),
    "reports": LazyCommand(
        "workbench.cli.certify:reports",
        "List every report with its outcome (or, with --ledger, every held-out use).",
    ),
    "plan": LazyCommand(
        "workbench.cli.plan:plan",
        "How many decided cases each slice of a policy needs, and the shortfall per partition.",
    ),
    "estimate": LazyCommand(
        "workbench.cli.estimate:estimate",
        "Bias-corrected pass rates of a certified judge on unlabelled production traffic.",
    ),
    "migrate": LazyCommand(
        "workbench.cli.migrate:migrate_group",
        "Migrate records written under an older schema version, explicitly and on the record.",
    ),
    "compare": LazyCommand(
        "workbench.cli.compare:compare",
        "Compare an old and a new judge version case by case on development or calibration data.",
    ),
    "review": LazyCommand(
        "workbench.cli.review:review_group",
        "Reviews recorded outside the notebooks (append-only logs beside the gold).",
    ),
    "repeatability": LazyCommand(
        "workbench.cli.repeatability:repeatability",
        "Judge every case K times with the same pinned judge: a variance study, not a repair.",
    ),
    "drift": LazyCommand(
        "workbench.cli.repeatability:drift",
        "Run the sentinel cases with a pinned judge and flag every verdict that changed.",
    ),
    "authority": LazyCommand(
        "workbench.cli.authority:authority",
        "The authority record: what each certified judge may do (advisory, route, block).",
    ),
    "status": LazyCommand(
        "workbench.cli.authority:status",
        "Every judge with an authority record: authority, scope, report, staleness, drift.",
    ),
    "ci": LazyCommand(
        "workbench.cli.ci:ci",
        "CI lanes: contracts on every change, sentinel when judge files change, release by hand.",
    ),
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
