"""``workbench import``: convert a public dataset into a gold dataset directory."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ..importers import import_results, import_table, run_importer
from ..outcomes import ExitCode
from ._common import user_errors
from ._options import option, options, shown

_DIRECTORY = click.Path(path_type=Path, file_okay=False)
_OUT = option(
    "out",
    required=True,
    type=_DIRECTORY,
    help="Directory to write gold.jsonl, rubric.yaml and card.md into (created if missing).",
)


_COLUMNS = (  # the text options of `import results`, in help order
    ("--case-id", "Column holding the gold case id."),
    ("--input", "Column holding the exact input (matched with --response without a case id)."),
    ("--response", "Column holding the exact response judged."),
    ("--label", "Prediction column holding labels."),
    ("--score", "Prediction column holding scores (kept; labels come from --threshold)."),
    ("--reason", "Column holding the judge's reason."),
    ("--latency", "latency_s", "Column holding latency in seconds."),
    ("--tokens-in", "Column holding prompt tokens."),
    ("--tokens-out", "Column holding completion tokens."),
    ("--cost", "cost_usd", "Column holding cost in USD."),
    ("--name", "Judge name (also the imported candidate's name)."),
    ("--version", "Judge version."),
    ("--model", "The model (or detector) that produced the predictions."),
)


@click.group(name="import")
def import_group() -> None:
    """Convert your own table, or a public human-judgment dataset, into a gold dataset.

    `import results` declares the gold that judge results produced elsewhere were produced
    against.
    """


@import_group.command("table")
@click.argument("source", type=click.Path(path_type=Path))
@click.option(
    "--mapping",
    required=True,
    type=click.Path(path_type=Path),
    help="YAML mapping: which column is what (docs/formats.md#table-mapping).",
)
@_OUT
@option(
    "force", help="Accept moved or dropped existing cases, or replace a dataset another tool wrote."
)
@user_errors
def table(source: Path, mapping: Path, out: Path, force: bool) -> None:
    """Import a CSV, JSONL or Parquet table of human reviews into a gold dataset.

    Writes gold.jsonl, a drafted rubric.yaml (slice risks 'unset': set them) and card.md;
    re-running writes the same bytes and refuses to move or drop an existing case unless
    --force. Into the project's gold it also drafts the project's `policy:` while that file is
    still the `workbench init` template. Exit 0 written; 2 invalid mapping or source; 4
    written, but some cases wait for an adjudicator (adjudication_needed.csv).
    """
    from ..importers.table import format_pending
    from ..project import draft_policy

    result, summary = import_table(source, out, mapping=mapping, force=force)
    click.echo(summary.format())
    drafted = draft_policy(out)
    if drafted is not None:
        click.echo(drafted.message)
    if result.pending:
        click.echo(format_pending(list(result.pending), out), err=True)
        sys.exit(ExitCode.REVIEW_REQUIRED)


@import_group.command("results")
@click.argument("source", type=click.Path(path_type=Path))
@option("gold", help="The gold dataset the results were produced against.")
@option(
    "out",
    required=True,
    type=_DIRECTORY,
    help="Directory to write results.jsonl and the imported candidate into.",
)
@click.option(
    "--mapping",
    type=click.Path(path_type=Path, dir_okay=False),
    help="YAML mapping: which column is what, and who the judge was.",
)
@click.option(
    "--format",
    "format",
    type=click.Choice(["csv", "tsv", "jsonl", "parquet"]),
    help="Table format (default: from the extension).",
)
@options(*(click.option(*decls, help=help) for *decls, help in _COLUMNS[:5]))
@click.option("--threshold", type=float, help="Score cut-off that makes labels.")
@click.option(
    "--pass-if",
    type=click.Choice(["at_least", "at_most"]),
    help="at_least: score >= threshold passes (default); at_most: score <= threshold passes.",
)
@click.option(
    "--label-map",
    "label_map",
    multiple=True,
    metavar="VALUE=LABEL",
    help="Map a source value to a rubric label (repeatable; then every value must be mapped).",
)
@options(*(click.option(*decls, help=help) for *decls, help in _COLUMNS[5:]))
@click.option(
    "--prompt-file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The judge's prompt template (hashed into the fingerprint).",
)
@click.option(
    "--prompt-description", help="What the prompt asks, when the template is not available."
)
@click.option("--description", help="What this judge version is (the candidate's description).")
@option("force")
@user_errors
def results(
    source: Path, gold: str, out: Path, mapping: Path | None, force: bool, **flags: Any
) -> None:
    """Import judge results produced elsewhere, as produced against GOLD.

    A predictions table (CSV, JSONL, Parquet) with --mapping or column options becomes
    OUT/results.jsonl and OUT/<name>@<version>.yaml, an `imported` candidate whose fingerprint
    is the judge you declare; a file already in the judge-result contract is checked against
    GOLD and stamped with it. Every problem is listed (exit 2).
    """
    from ..importers import command_line_options

    options = command_line_options(**flags)
    given: dict[str, Any] = {"force": force, "mapping": mapping, "options": options}
    click.echo(import_results(source, gold, out, **given).format())


@import_group.command("evalsbench")
@click.argument("source_csv", type=click.Path(path_type=Path))
@_OUT
@shown(
    "--slice-by",
    type=click.Choice(["theme", "topic"]),
    default="theme",
    help="Slice by six hand-assigned themes, or by the 80 upstream topics (two cases each).",
)
@option("force")
@user_errors
def evalsbench(source_csv: Path, out: Path, slice_by: str, force: bool) -> None:
    """Import EvalsBench benchmark_df.csv (160 constructed pass/fail answers to 80 questions).

    Labels come from construction ('dataset-construction'); partitions are split by question;
    the label-revealing 'notes' column never reaches a judge.
    """
    click.echo(run_importer("evalsbench", source_csv, out, slice_by=slice_by, force=force).format())


@import_group.command("pandalm")
@click.argument("source_json", type=click.Path(path_type=Path))
@_OUT
@option("force")
@user_errors
def pandalm(source_json: Path, out: Path, force: bool) -> None:
    """Import PandaLM testset-v1.json (999 pairwise items, three human annotators each).

    Labels 1, 2 or 0 (tie), adjudicated by majority; groups are prompts.
    """
    click.echo(run_importer("pandalm", source_json, out, force=force).format())


@import_group.command("llmbar")
@click.argument("subset_dir", type=click.Path(path_type=Path))
@click.option(
    "--evaluator",
    type=click.Path(path_type=Path),
    help="Evaluator directory with result.json, written as results.jsonl (omit: gold only).",
)
@click.option(
    "--subset", help="Slice name; default: the path below LLMBar/, e.g. Adversarial/Neighbor."
)
@_OUT
@option("force")
@user_errors
def llmbar(
    subset_dir: Path, evaluator: Path | None, subset: str | None, out: Path, force: bool
) -> None:
    """Import an LLMBar subset (dataset.json: pairwise items, label 1 or 2 from the dataset
    authors).

    The slice is the subset. With --evaluator, its verdicts become two results per case
    (repeat 0 original order, 1 swapped) for `workbench pairwise`.
    """
    given: dict[str, Any] = {"evaluator": evaluator, "subset": subset, "force": force}
    click.echo(run_importer("llmbar", subset_dir, out, **given).format())
