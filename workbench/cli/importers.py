"""``workbench import``: convert a public dataset into a gold dataset directory."""

from __future__ import annotations

from pathlib import Path

import click

from ..importers import import_results, run_importer
from ._common import user_errors

_OUT = click.option(
    "--out",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="Directory to write gold.jsonl, rubric.yaml and card.md into (created if missing).",
)
_FORCE = click.option("--force", is_flag=True, help="Replace a dataset already in --out.")


@click.group(name="import")
def import_group() -> None:
    """Convert a public human-judgment dataset into the workbench gold format.

    Importers read the dataset from the path you give; nothing is copied into the project.
    The output directory validates with `workbench validate`. `import results` declares the
    gold that judge results produced elsewhere were produced against.
    """


@import_group.command("results")
@click.argument("source", type=click.Path(path_type=Path))
@click.option("--gold", required=True, type=click.Path(path_type=str), help="The gold dataset the results were produced against.")
@click.option("--out", required=True, type=click.Path(path_type=Path, file_okay=False), help="Directory to write results.jsonl into (created if missing).")
@_FORCE
@user_errors
def results(source: Path, gold: str, out: Path, force: bool) -> None:
    """Declare the gold that judge results (judge-result contract) were produced against.

    Checks every result against GOLD (known, active case; same response hash and partition;
    no duplicate attempt), refuses results that already name another gold, and writes
    OUT/results.jsonl with each result stamped with the gold's dataset_sha256 and
    rubric_version, so `workbench align`, `workbench gate` and `imported` candidates accept
    them for this gold, and refuse them once the gold changes.
    """
    click.echo(import_results(source, gold, out, force=force).format())


@import_group.command("evalsbench")
@click.argument("source_csv", type=click.Path(path_type=Path))
@_OUT
@click.option(
    "--slice-by",
    type=click.Choice(["theme", "topic"]),
    default="theme",
    show_default=True,
    help="Slice by six hand-assigned themes, or by the 80 upstream topics (two cases each).",
)
@_FORCE
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
@_FORCE
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
    help="Evaluator directory (evaluators/<LLM>/<strategy>) with result.json: written as results.jsonl. Omit for gold only.",
)
@click.option("--subset", default=None, help="Slice name; default: the path below LLMBar/, e.g. Adversarial/Neighbor.")
@_OUT
@_FORCE
@user_errors
def llmbar(subset_dir: Path, evaluator: Path | None, subset: str | None, out: Path, force: bool) -> None:
    """Import an LLMBar subset (dataset.json: pairwise items, label 1 or 2 from the dataset authors).

    One case per item, labels 1 and 2 (no ties), one review and adjudication by
    'llmbar-authors'; the slice is the subset. With --evaluator, the evaluator's verdicts
    become two results per case: repeat 0 original order, repeat 1 swapped, each with its
    presentation. A null or unparseable winner is an evaluator error, never a verdict.
    Analyse them with `workbench pairwise`.
    """
    summary = run_importer("llmbar", subset_dir, out, evaluator=evaluator, subset=subset, force=force)
    click.echo(summary.format())
