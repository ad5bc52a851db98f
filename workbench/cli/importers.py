"""``workbench import``: convert a public dataset into a gold dataset directory."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ..importers import import_results, import_table, run_importer
from ..outcomes import ExitCode
from ._common import user_errors
from ._options import option, shown

_DIRECTORY = click.Path(path_type=Path, file_okay=False)
_OUT = option(
    "out",
    required=True,
    type=_DIRECTORY,
    help="Directory to write gold.jsonl, rubric.yaml and card.md into (created if missing).",
)


@click.group(name="import")
def import_group() -> None:
    """Convert your own table, or a public human-judgment dataset, into the workbench gold format.

    Importers read the dataset from the path you give; nothing is copied into the project.
    The output directory validates with `workbench validate` (for `table`, once a person has
    set the drafted rubric's slice risks). `import results` declares the gold that judge
    results produced elsewhere were produced against.
    """


@import_group.command("table")
@click.argument("source", type=click.Path(path_type=Path))
@click.option(
    "--mapping",
    required=True,
    type=click.Path(path_type=Path),
    help="YAML mapping: which column is what (docs/formats.md#table-mapping).",
)
@option(
    "out",
    required=True,
    type=_DIRECTORY,
    help=(
        "Dataset directory to write gold.jsonl, rubric.yaml and card.md into (created if missing)."
    ),
)
@option(
    "force", help="Accept moved or dropped existing cases, or replace a dataset another tool wrote."
)
@user_errors
def table(source: Path, mapping: Path, out: Path, force: bool) -> None:
    """Import a CSV, JSONL or Parquet table of human reviews into a gold dataset.

    The mapping names the columns: case id (or a generated one), input, response, reference,
    grading notes, contexts, slice, group, partition (a column or a seeded, group-aware
    assignment), tags, metadata, the reviews (long or wide form, or nested: a list of reviews
    per row read by path, e.g. annotations[].label), the label mapping and the adjudication (a
    column, or the rule majority, any_fail or unanimous_else_review). Response hashes are
    computed here.

    Writes gold.jsonl, a drafted rubric.yaml (slice risks 'unset': set them, validate refuses
    'unset') and card.md (computed part filled in). Re-running on the same input writes the
    same bytes and keeps the risks and the card's human part; it refuses to move an existing
    case to another partition or drop one unless --force. Into the project's gold (`gold:` in
    workbench.yaml) it also drafts the project's `policy:` (one block per slice, the rubric's
    version) while that file is still the template `workbench init` wrote.

    Exit 0: written; 2: invalid mapping or source (every problem listed); 4: written, but some
    cases wait for an adjudicator (listed here and in adjudication_needed.csv).
    """
    from ..importers.table import format_pending
    from ..project import draft_policy

    result, summary = import_table(source, out, mapping=mapping, force=force)
    click.echo(summary.format())
    drafted = draft_policy(out)  # the project's policy, while still the init template
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
    help="Directory to write results.jsonl (and the imported candidate) into (created if missing).",
)
@click.option(
    "--mapping",
    type=click.Path(path_type=Path, dir_okay=False),
    help=(
        "YAML mapping: which column is what, and who the judge was"
        " (docs/formats.md#results-mapping)."
    ),
)
@click.option(
    "--format",
    "format",
    type=click.Choice(["csv", "jsonl", "parquet"]),
    help="Table format (default: from the extension).",
)
@click.option("--case-id", help="Column holding the gold case id.")
@click.option(
    "--input",
    "input",
    help=(
        "Column holding the exact input (matched with --response when there is no case id column)."
    ),
)
@click.option(
    "--response",
    help=(
        "Column holding the exact response judged (its sha256 must equal the gold's response_hash)."
    ),
)
@click.option("--label", help="Prediction column holding labels.")
@click.option(
    "--score", help="Prediction column holding scores (kept; labels come from --threshold)."
)
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
    help=(
        "Map a source value to a rubric label (repeatable); with any given, every value must be"
        " mapped."
    ),
)
@click.option("--reason", help="Column holding the judge's reason.")
@click.option("--latency", "latency_s", help="Column holding latency in seconds.")
@click.option("--tokens-in", help="Column holding prompt tokens.")
@click.option("--tokens-out", help="Column holding completion tokens.")
@click.option("--cost", "cost_usd", help="Column holding cost in USD.")
@click.option("--name", help="Judge name (also the imported candidate's name).")
@click.option("--version", "version", help="Judge version.")
@click.option("--model", help="The model (or detector) that produced the predictions.")
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

    \b
    A predictions table (CSV, JSONL, Parquet; a Ragas experiment CSV or an exported
    EvaluationResult.to_pandas()) with --mapping or column options: each row's case key
    (--case-id, or --input and --response) and prediction (--label, or --score with
    --threshold) become one result in the judge-result contract; the judge you declare
    (--name, --version, --model, --prompt-file or --prompt-description) gives the
    fingerprint. Writes OUT/results.jsonl and OUT/<name>@<version>.yaml, an `imported`
    candidate for `workbench run`, `gate` and `certify`. A row with an empty prediction and
    a gold case with no row get no result: `align` reports them missing (incomplete).
    Unknown cases, duplicated keys, unmapped labels and mapping problems are all listed
    (exit 2).

    \b
    A results file already in the judge-result contract (JSONL, no mapping): checks every
    result against GOLD (known, active case; same response hash and partition; no duplicate
    attempt), refuses results that already name another gold, and writes OUT/results.jsonl
    stamped with the gold's dataset_sha256 and rubric_version.
    """
    from ..importers import command_line_options

    options = command_line_options(**flags)
    click.echo(
        import_results(source, gold, out, force=force, mapping=mapping, options=options).format()
    )


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

    Labels come from construction, not review: each case gets one review and one
    adjudication by 'dataset-construction'. Partitions are split by question. The upstream
    'notes' column gives the label away, so it is kept only in the adjudication reason and
    never reaches a judge. annotation_df.csv (few-shot examples for other questions) is not
    imported.
    """
    summary = run_importer("evalsbench", source_csv, out, slice_by=slice_by, force=force)
    click.echo(summary.format())


@import_group.command("pandalm")
@click.argument("source_json", type=click.Path(path_type=Path))
@_OUT
@option("force")
@user_errors
def pandalm(source_json: Path, out: Path, force: bool) -> None:
    """Import PandaLM testset-v1.json (999 pairwise items, three human annotators each).

    Labels: 1 (response 1 better), 2 (response 2 better), 0 (tie); adjudication is the
    majority vote. The case response renders both candidates under [Response 1] and
    [Response 2] markers. Groups are prompts, so one prompt's comparisons share a partition.
    """
    summary = run_importer("pandalm", source_json, out, force=force)
    click.echo(summary.format())


@import_group.command("llmbar")
@click.argument("subset_dir", type=click.Path(path_type=Path))
@click.option(
    "--evaluator",
    type=click.Path(path_type=Path),
    default=None,
    help=(
        "Evaluator directory (evaluators/<LLM>/<strategy>) with result.json: written as"
        " results.jsonl. Omit for gold only."
    ),
)
@click.option(
    "--subset",
    default=None,
    help="Slice name; default: the path below LLMBar/, e.g. Adversarial/Neighbor.",
)
@_OUT
@option("force")
@user_errors
def llmbar(
    subset_dir: Path, evaluator: Path | None, subset: str | None, out: Path, force: bool
) -> None:
    """Import an LLMBar subset (dataset.json: pairwise items, label 1 or 2 from the dataset
    authors).

    One case per item, labels 1 and 2 (no ties), one review and adjudication by
    'llmbar-authors'; the slice is the subset. With --evaluator, the evaluator's verdicts
    become two results per case: repeat 0 original order, repeat 1 swapped, each with its
    presentation. A null or unparseable winner is an evaluator error, never a verdict.
    Analyse them with `workbench pairwise`.
    """
    summary = run_importer(
        "llmbar", subset_dir, out, evaluator=evaluator, subset=subset, force=force
    )
    click.echo(summary.format())
