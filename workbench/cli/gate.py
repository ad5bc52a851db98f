"""``workbench gate``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click
from pydantic import ValidationError

from .._io import JSONRecordError, bulk_load, json_problem, read_json_file
from .._load import validation_problems
from ..align import cell_figures, flagged_cases, read_evidence, resolve_partition
from ..errors import Problem, WorkbenchError, refusal
from ..gold import gold_index
from ..heldout import check_held_out_results
from ..policy import (
    EXIT_CODES,
    evaluate_gate,
    format_gate,
    load_overrides,
    load_policy,
    policy_sha256,
)
from ..runs import SUMMARY_FILE, RunSummary, attempt_problems
from ._common import user_errors
from ._options import flag, option, path, show
from .align import evidence_options

T = TypeVar("T")


def load_run_summary(path: str | Path) -> RunSummary:
    """Read ``run.json`` (or a run directory holding one); invalid input is a WorkbenchError."""
    path = Path(path)
    if path.is_dir():
        path = path / SUMMARY_FILE
    loc, fix = str(path), "give the run.json written by `workbench run`"
    if not path.is_file():
        fix_path, missing = "point --run at a run directory or its run.json", "does not exist"
        raise refusal("no run summary", loc, "run_missing", f"the run summary {missing}", fix_path)
    try:
        data = read_json_file(path)  # bounded and strict: duplicate keys, NaN, too deep refused
    except OSError as exc:
        unreadable = f"the run summary cannot be read ({exc.strerror or exc})"
        raise refusal("unreadable run summary", loc, "run_invalid", unreadable, fix) from None
    except JSONRecordError as exc:
        raise WorkbenchError("invalid run summary", [json_problem(exc, loc, fix=fix)]) from None
    try:
        return RunSummary.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(exc, at=loc, code="run_invalid", root="run", fix=fix)
        raise WorkbenchError("invalid run summary", problems) from None


def _collect(problems: list[Problem], load: Callable[[], T]) -> T | None:
    """Run ``load``; on a WorkbenchError keep its problems (every input is checked in one run)."""
    try:
        return load()
    except WorkbenchError as exc:
        problems += exc.problems or [
            Problem(location="-", code="invalid_input", message=exc.summary, fix="see the message")
        ]
        return None


@click.command()
@evidence_options("evaluate", partition_note="normally held_out; ")
@option("policy")
@path(
    "--run",
    "run_path",
    help="The run's run.json (or run directory): completeness, stop reason and spend.",
)
@option(
    "overrides",
    "overrides_path",
    help="Override store to apply (JSON Lines); none are applied unless given.",
)
@option("json", help="Print the gate result as JSON.")
@flag(
    "--allow-gold-change",
    help="Evaluate even if the gold changed (a non-waivable gold_changed blocker).",
)
@user_errors
def gate(
    gold: str,
    results: str,
    policy: str,
    partition: str | None,
    repeat: int,
    run_path: str | None,
    overrides_path: str | None,
    as_json: bool,
    allow_gold_change: bool,
) -> None:
    """Decide whether judge results meet a reviewed release policy.

    Checks every slice against the policy's limits, evaluator errors, run completeness and
    spend, applies active overrides, and prints one line per blocker and a per-slice table.
    Exit code: 0 certified, 1 quality failed, 3 evaluation incomplete, 4 review required,
    2 invalid input (the join's refusals, as in `workbench align`), 6 would certify (limits
    met on results no certification recorded). A missing result is never a pass.
    """
    problems: list[Problem] = []
    loaded_policy = _collect(problems, lambda: load_policy(policy))
    run = _collect(problems, lambda: load_run_summary(run_path)) if run_path else None
    store = _collect(problems, lambda: load_overrides(overrides_path)) if overrides_path else []
    with bulk_load():
        index = _collect(problems, lambda: gold_index(gold))  # every gold problem, as `validate`
    resolved = _collect(problems, lambda: resolve_partition(results, partition))
    problems += attempt_problems(results)  # a deleted retry reads as a valid results file
    if index is None or resolved is None or problems:
        raise WorkbenchError(f"cannot evaluate the gate: {len(problems)} problem(s)", problems)
    partition, source = resolved
    check_held_out_results(gold, results, partition)  # held out: only a certification's results
    evidence = read_evidence(
        gold,
        results,
        partition=partition,
        repeat=repeat,
        allow_gold_change=allow_gold_change,
        partition_source=source,
        sampling_plan=loaded_policy.sampling if loaded_policy is not None else None,
    )
    flagged = flagged_cases(evidence.cases, index.rubric.abstain_labels)
    cells, cell_ids = cell_figures(
        evidence.cases,
        index.table,
        index.rubric,
        list(loaded_policy.cells if loaded_policy else []),
    )
    result = evaluate_gate(
        evidence.report,
        loaded_policy,
        rubric=index.rubric,
        run=run,
        overrides=store or [],
        flagged={**flagged, **cell_ids},
        cells=cells,
        policy_sha256=policy_sha256(policy),
    )
    if source == "run_manifest":
        note = "from the run manifest beside the results; --partition overrides"
        click.echo(f"partition: {partition} ({note})", err=as_json)
    show(result, as_json, format_gate)
    raise SystemExit(EXIT_CODES[result.outcome])
