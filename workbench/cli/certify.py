"""``workbench certify``, ``workbench verify`` and ``workbench reports``."""

from __future__ import annotations

import click

from ._common import BUDGET_USD, echo_json, user_errors

OUTCOME_EXIT = {"certified": 0, "quality_failed": 1, "evaluation_incomplete": 3, "review_required": 4}


@click.command()
@click.option("--candidate", required=True, type=click.Path(path_type=str), help="Candidate spec to certify.")
@click.option("--policy", required=True, type=click.Path(path_type=str), help="Policy file, data/policies/<name>@<version>.yaml.")
@click.option("--gold", default="data/demo", show_default=True, type=click.Path(path_type=str), help="Gold dataset directory or gold.jsonl.")
@click.option("--reports", "reports_root", default="reports", show_default=True, type=click.Path(path_type=str), help="Reports root directory.")
@click.option("--rerun-reason", default=None, help="Required to certify the same candidate again on the same held-out manifest; recorded in the ledger and the report.")
@click.option("--overrides", default=None, type=click.Path(path_type=str), help="Override store (default: overrides.jsonl beside the policy).")
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True, help="Concurrent judge calls.")
@click.option("--budget-usd", type=BUDGET_USD, default=None, help="Spend limit for the held-out run.")
@click.option("--max-cases", type=click.IntRange(min=0), default=None, help="Case limit for the held-out run (a limited run is incomplete).")
@click.option("--notebook", default=None, type=click.Path(path_type=str), help="Certification notebook (default notebooks/03_certify.ipynb).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@user_errors
def certify(candidate: str, policy: str, gold: str, reports_root: str, rerun_reason: str | None, overrides: str | None, concurrency: int, budget_usd: float | None, max_cases: int | None, notebook: str | None, as_json: bool) -> None:
    """Certify a candidate once on the held-out partition and write a locked report.

    Executes notebooks/03_certify.ipynb headless with papermill and writes
    reports/<candidate>/<version>/<n>/: the executed notebook, report.html (no code, charts
    as inline SVG, nothing loaded from the network), lock.json with every hash, and a
    restricted/ directory with case-level held-out detail. Every held-out use is recorded in
    reports/held_out_ledger.jsonl. Exit code: 0 certified, 1 quality failed, 3 evaluation
    incomplete, 4 review required, 2 invalid input.
    """
    from ..reports import certify as run_certify

    result = run_certify(candidate, policy, gold, reports_root=reports_root, rerun_reason=rerun_reason, concurrency=concurrency, budget_usd=budget_usd, max_cases=max_cases, overrides=overrides, notebook=notebook)
    if as_json:
        echo_json({"report_dir": str(result.report_dir), "report_id": result.report_id, "outcome": result.outcome, "blockers": result.blockers, "lock_sha256": result.lock_sha256, "timings_s": result.timings_s})
    else:
        click.echo(f"report: {result.report_dir}")
        click.echo(f"outcome: {result.outcome.upper()} ({len(result.blockers)} blocker(s)); lock sha256 {result.lock_sha256}")
        for b in result.blockers:
            click.echo(f"  - {b['code']} [{b['category']}{', ' + b['slice'] if b.get('slice') else ''}]: {b['message']}")
        click.echo("timings: " + ", ".join(f"{k} {v:.2f}s" for k, v in result.timings_s.items()))
    raise SystemExit(OUTCOME_EXIT.get(result.outcome, 1))


@click.command()
@click.argument("path", type=click.Path(path_type=str))
@user_errors
def verify(path: str) -> None:
    """Recompute every hash of a locked report; exit 1 naming each changed, missing or added file."""
    from ..reports import read_lock, verify_report

    problems = verify_report(path)
    if problems:
        for problem in problems:
            click.echo(problem.format(), err=True)
        click.echo(f"{path}: NOT VERIFIED - {len(problems)} problem(s)", err=True)
        raise SystemExit(1)
    lock = read_lock(__import__("pathlib").Path(path))
    click.echo(f"{path}: verified - {len(lock.files)} files, lock sha256 {lock.lock_sha256}, outcome {lock.outcome}")


@click.command()
@click.option("--reports", "reports_root", default="reports", show_default=True, type=click.Path(path_type=str), help="Reports root directory.")
@click.option("--ledger", is_flag=True, help="Show the held-out ledger instead.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@user_errors
def reports(reports_root: str, ledger: bool, as_json: bool) -> None:
    """List every locked report with its outcome (or, with --ledger, every held-out use)."""
    from pathlib import Path

    from ..heldout import LEDGER_FILE, HeldOutLedger
    from ..reports import list_reports

    if ledger:
        entries = [e.model_dump(mode="json") for e in HeldOutLedger(Path(reports_root) / LEDGER_FILE).entries()]
        if as_json:
            echo_json(entries)
            return
        for e in entries:
            click.echo(f"{e['when'][:19]}  {e['event']:<8} {e['who']:<12} {e['candidate']:<28} {e['candidate_fingerprint'][:12]}  {e['report_id']:<32} {e.get('outcome') or '':<22} {e.get('rerun_reason') or ''}")
        return
    rows = list_reports(reports_root)
    if as_json:
        echo_json(rows)
        return
    if not rows:
        click.echo(f"no reports under {reports_root}")
        return
    for r in rows:
        click.echo(f"{r.get('created_at', '')[:19]:<20} {r['report_id']:<36} {r['outcome']:<22} blockers {r.get('blockers', '?'):<3} {r.get('who') or '':<10} {('rerun: ' + r['rerun_reason']) if r.get('rerun_reason') else ''}")
