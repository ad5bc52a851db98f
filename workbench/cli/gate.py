"""``workbench gate``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click
from pydantic import ValidationError

from .._io import bulk_load
from ..align import alignment_report, join_results
from ..errors import Problem, WorkbenchError
from ..gold import PARTITIONS, load_dataset
from ..policy import (
    EXIT_CODES,
    evaluate_gate,
    format_gate,
    load_overrides,
    load_policy,
    policy_sha256,
)
from ..results import scan_results
from ..runs import SUMMARY_FILE, RunSummary
from ._common import echo_json, user_errors

T = TypeVar("T")


def load_run_summary(path: str | Path) -> RunSummary:
    """Read ``run.json`` (or a run directory holding one); invalid input is a WorkbenchError."""
    path = Path(path)
    if path.is_dir():
        path = path / SUMMARY_FILE
    loc = str(path)
    if not path.is_file():
        raise WorkbenchError("no run summary", [Problem(location=loc, code="run_missing", message="the run summary does not exist", fix="point --run at a run directory or its run.json")])
    try:
        return RunSummary.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        problems = [Problem(location=loc, code="run_invalid", message=f"{'.'.join(map(str, e['loc'])) or 'run'}: {e['msg']}", fix="give the run.json written by `workbench run`") for e in exc.errors(include_url=False)]
        raise WorkbenchError("invalid run summary", problems) from None


def _collect(problems: list[Problem], load: Callable[[], T]) -> T | None:
    """Run ``load``; on a WorkbenchError keep its problems so every input is checked in one run."""
    try:
        return load()
    except WorkbenchError as exc:
        problems += exc.problems or [Problem(location="-", code="invalid_input", message=exc.summary, fix="see the message")]
        return None


@click.command()
@click.option("--gold", required=True, type=click.Path(path_type=str), help="Gold dataset directory or gold.jsonl.")
@click.option("--results", required=True, type=click.Path(path_type=str), help="Judge results (JSON Lines, judge-result contract).")
@click.option("--policy", required=True, type=click.Path(path_type=str), help="Release policy, data/policies/<name>@<version>.yaml.")
@click.option("--partition", type=click.Choice(PARTITIONS), default=None, help="Only cases of this partition (normally held_out).")
@click.option("--repeat", type=int, default=0, show_default=True, help="Which repeat index to evaluate.")
@click.option("--run", "run_path", type=click.Path(path_type=str), default=None, help="The run's run.json (or run directory): completeness, stop reason and spend.")
@click.option("--overrides", "overrides_path", type=click.Path(path_type=str), default=None, help="Override store to apply (JSON Lines); none are applied unless given.")
@click.option("--json", "as_json", is_flag=True, help="Print the gate result as JSON.")
@user_errors
def gate(gold: str, results: str, policy: str, partition: str | None, repeat: int, run_path: str | None, overrides_path: str | None, as_json: bool) -> None:
    """Decide whether judge results meet a reviewed release policy.

    Joins the results to the adjudicated gold labels, checks every slice against the policy's
    limits (false passes, false-pass rate on its basis, false-fail rate, abstention rate,
    minimum decided cases), refuses a constant judge, checks evaluator errors, run
    completeness and spend, applies active overrides, and prints the outcome with one line
    per blocker and its numbers, every override that did not apply and why, and a per-slice
    table with coverage (decided verdicts / cases in scope) beside every rate.

    Exit code: 0 certified, 1 quality failed, 3 evaluation incomplete, 4 review required,
    2 invalid input. A missing result is never a pass.
    """
    problems: list[Problem] = []
    loaded_policy = _collect(problems, lambda: load_policy(policy))
    run = _collect(problems, lambda: load_run_summary(run_path)) if run_path else None
    overrides = (_collect(problems, lambda: load_overrides(overrides_path)) or []) if overrides_path else []
    with bulk_load():
        dataset = _collect(problems, lambda: load_dataset(gold))
        if dataset is None or problems:
            raise WorkbenchError(f"cannot evaluate the gate: {len(problems)} problem(s)", problems)
        join = join_results(dataset, scan_results(results), partition=partition, repeat=repeat, location=str(results))
        report = alignment_report(join, gold_path=str(gold), results_path=str(results))
    sha = policy_sha256(policy)
    result = evaluate_gate(report, loaded_policy, rubric=dataset.rubric, run=run, overrides=overrides, join=join, policy_sha256=sha)
    if as_json:
        echo_json(result.model_dump(mode="json"))
    else:
        click.echo(format_gate(result))
    raise SystemExit(EXIT_CODES[result.outcome])
