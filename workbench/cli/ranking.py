"""``workbench ranking``: the position-bias battery and the ranking report."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import Problem, WorkbenchError
from ._common import BUDGET_USD, echo_json, user_errors

EXIT_NOT_PASSED = 1
"""Exit code when the report does not pass (integration defect, must-win reversal, incomplete)."""


@click.command()
@click.option("--candidate", type=click.Path(path_type=str), default=None, help="Ranking candidate spec (kind ragas-ranking or ragas-ranking-function).")
@click.option("--fixtures", required=True, type=click.Path(path_type=str), help="Ranking fixture file, e.g. data/ranking/<name>@<version>.yaml.")
@click.option("--results", type=click.Path(path_type=str), default=None, help="Analyse these ranking results (imported or from an earlier run) instead of running a candidate.")
@click.option("--out", type=click.Path(path_type=str), default=None, help="Run directory (default runs/ranking/<candidate>/<fixtures>); the report and failure artifacts are written here.")
@click.option("--json", "as_json", is_flag=True, help="Print the versioned JSON report (workbench.ranking.RankingReport).")
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True, help="Concurrent judge calls.")
@click.option("--budget-usd", type=BUDGET_USD, default=None, help="Stop scheduling calls before recorded spend could exceed this.")
@click.option("--max-exhaustive", type=click.IntRange(min=0), default=4, show_default=True, help="All permutations for fixtures with at most this many candidates.")
@click.option("--sample", type=click.IntRange(min=1), default=8, show_default=True, help="Permutations per larger fixture (identity, rotations, then seeded random).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the permutation sample.")
@click.option("--repeats", type=click.IntRange(min=0), default=3, show_default=True, help="Repeatability baseline: the identity order this many times (0: none).")
@click.option("--cache", "cache_dir", type=click.Path(path_type=str), default=None, help="Verdict cache directory (default $WORKBENCH_CACHE_DIR or ~/.cache/judge-workbench).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the verdict cache.")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
@user_errors
def ranking(
    candidate: str | None,
    fixtures: str,
    results: str | None,
    out: str | None,
    as_json: bool,
    concurrency: int,
    budget_usd: float | None,
    max_exhaustive: int,
    sample: int,
    seed: int,
    repeats: int,
    cache_dir: str | None,
    no_cache: bool,
    no_progress: bool,
) -> None:
    """Run a ranking judge's position-bias battery over reviewed fixtures and report it.

    Every fixture is judged under several presented orders (all permutations up to
    --max-exhaustive candidates, else a fixed-seed sample) and, separately, in its identity
    order --repeats times. The judge sees neutral labels (A, B, C ...), never the stable ids.
    The report lists integration defects (invalid permutations) first, then pairwise
    agreement, must-win reversals (blocking) apart from monitor-only drift, first places by
    presented position, repeatability apart from position sensitivity, and a failure
    artifact per failing case with a completeness check of the request the judge received.

    With --results, analyses those results (each carrying its presentation and order)
    without running anything. Exit 0 when there is no integration defect, no must-win
    reversal and the evidence is complete; 1 otherwise; 2 for invalid input.
    """
    from ..ranking import (
        format_ranking,
        load_fixtures,
        position_battery,
        ranking_report,
        run_ranking_sync,
        write_ranking_artifacts,
    )

    if (candidate is None) == (results is None):
        raise WorkbenchError("invalid arguments", [Problem(location="--candidate/--results", code="arguments", message="give exactly one of --candidate (run the battery) or --results (analyse existing results)", fix="pass --candidate SPEC to run, or --results FILE to analyse")])
    fixture_set = load_fixtures(fixtures)
    if results is not None:
        report = ranking_report(fixture_set, results)
        out_dir = Path(out) if out else None
    else:
        from ..judges import load_candidate

        assert candidate is not None
        judge = load_candidate(candidate)
        if judge.spec.kind not in ("ragas-ranking", "ragas-ranking-function"):
            raise WorkbenchError("not a ranking candidate", [Problem(location=candidate, code="not_ranking_kind", message=f"kind {judge.spec.kind!r} is not a ranking judge", fix="use a ragas-ranking or ragas-ranking-function candidate; analyse imported ranking results with --results")])
        out_dir = Path(out) if out else Path("runs") / "ranking" / judge.spec.label / fixture_set.label
        battery = dict(max_exhaustive=max_exhaustive, sample=sample, seed=seed, repeats=repeats)
        summary = run_ranking_sync(judge, fixture_set, out_dir, concurrency=concurrency, budget_usd=budget_usd, cache_dir=False if no_cache else cache_dir, progress=not no_progress, **battery)
        click.echo(
            f"{summary.judge}: {summary.status.upper()} - {summary.verdicts} answers, {summary.errors} evaluator errors, {len(summary.unrun)} unrun of {summary.planned}; "
            f"{summary.calls} calls, {summary.cache_hits} cached, {summary.resumed} already done; cost ${summary.cost_usd:.4f}; results {summary.results_path}",
            err=True,
        )
        report = ranking_report(fixture_set, summary.results_path, planned=position_battery(fixture_set, **battery))
    if out_dir is not None:
        paths = write_ranking_artifacts(report, out_dir)
        click.echo(f"report and {len(paths) - 1} failure artifact(s) in {out_dir}", err=True)
    if as_json:
        echo_json(report.model_dump(mode="json"))
    else:
        click.echo(format_ranking(report))
    if not report.passed:
        raise SystemExit(EXIT_NOT_PASSED)
