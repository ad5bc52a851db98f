"""``workbench noise``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import Problem, WorkbenchError
from ._common import BUDGET_USD, echo_json, user_errors


@click.command("noise")
@click.option("--candidate", required=True, type=click.Path(path_type=str), help="A ragas-noise candidate spec, e.g. data/candidates/noise-judge@1.yaml.")
@click.option("--pairs", "pairs_path", required=True, type=click.Path(path_type=str), help="Pair suite YAML (controls, candidates, slice limits), e.g. data/noise/support-noise@1.yaml.")
@click.option("--out", default=None, type=click.Path(path_type=str), help="Run directory (default runs/noise/<suite>/<candidate>): controls/, candidates/, noise_run.json, noise_report.json.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (kind workbench.noise).")
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True, help="Concurrent pair members in flight.")
@click.option("--budget-usd", type=BUDGET_USD, default=None, help="Stop scheduling calls before recorded spend (controls + candidates) could exceed this.")
@click.option("--cache", "cache_dir", type=click.Path(path_type=str), default=None, help="Verdict cache directory (default $WORKBENCH_CACHE_DIR or ~/.cache/judge-workbench).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the verdict cache.")
@click.option("--no-progress", is_flag=True, help="Hide the progress bars.")
@user_errors
def noise(candidate: str, pairs_path: str, out: str | None, as_json: bool, concurrency: int, budget_usd: float | None, cache_dir: str | None, no_cache: bool, no_progress: bool) -> None:
    """Score a noise-sensitivity pair suite with Ragas NoiseSensitivity (lower is better).

    Every pair is validated first (every problem at once, exit 2). The control pairs are
    scored first; if any negative control does not score worse (higher) than its positive
    control, the run stops before any candidate pair is scored. Then the candidate pairs
    are scored and compared with each slice's max_score. Re-running resumes without new
    calls for settled members. Exit 0 passed, 1 quality failed, 3 evaluation incomplete
    (controls failed, missing or invalid scores, budget reached), 2 invalid input.
    """
    from .._io import atomic_write_json
    from ..judges import load_candidate
    from ..noise import KIND, format_noise, load_pairs, noise_report, run_noise_sync

    problems: list[Problem] = []
    suite = judge = None
    for load in ("pairs", "candidate"):
        try:
            if load == "pairs":
                suite = load_pairs(pairs_path)
            else:
                judge = load_candidate(candidate)
        except WorkbenchError as exc:
            problems += exc.problems
    if judge is not None and judge.spec.kind != KIND:
        problems.append(Problem(location=candidate, code="wrong_kind", message=f"the candidate's kind is {judge.spec.kind!r}", fix=f"use a candidate with kind: {KIND}"))
    if problems or suite is None or judge is None:
        raise WorkbenchError("invalid input", problems)
    out_dir = Path(out) if out else Path("runs") / "noise" / suite.label / judge.spec.label
    run = run_noise_sync(judge, suite, out_dir, concurrency=concurrency, budget_usd=budget_usd, cache_dir=False if no_cache else cache_dir, progress=not (no_progress or as_json))
    report = noise_report(suite, run)
    atomic_write_json(out_dir / "noise_report.json", report.model_dump(mode="json"))
    if as_json:
        echo_json(report.model_dump(mode="json"))
    else:
        click.echo(format_noise(report))
        click.echo(f"\nrun directory: {out_dir}")
    sys.exit(report.exit_code)
