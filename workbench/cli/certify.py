"""``workbench certify``, ``workbench verify`` and ``workbench reports``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ..errors import refusal
from ..outcomes import ExitCode, exit_code
from ..runs import RunOptions
from ._common import echo_json, refuse_each, user_errors
from ._options import flag, option, path
from ._run_options import fixed_concurrency, run_options


@click.command()
@option(
    "candidate", required=False, help="Candidate spec to certify (required unless --resume-review)."
)
@option(
    "policy",
    required=False,
    help="Policy file, data/policies/<name>@<version>.yaml (required unless --resume-review).",
)
@option(
    "gold",
    required=False,
    help="Gold dataset directory or gold.jsonl (with --resume-review: the report's by default).",
)
@path(
    "--baseline",
    help="Migration certification: the previous version's spec, judged on the same cases.",
)
@option(
    "label_mapping",
    help="With --baseline: the reviewed mapping of the baseline's labels into the rubric's.",
)
@path(
    "--resume-review",
    help="REPORT: re-evaluate a locked migration report with the transition reviews since.",
)
@option("reports")
@option(
    "rerun_reason",
    help="Required when the held-out content was judged before (recorded in the ledger).",
)
@option("overrides", help="Override store (default: overrides.jsonl beside the policy).")
@run_options(
    "concurrency",
    "budget",
    "max_cases",
    budget={"help": "Spend limit for the held-out run (the policy's budget_usd unless lower)."},
    max_cases={"help": "Case limit for the held-out run (a limited run is incomplete)."},
)
@option("notebook")
@option("sign")
@option("json", help="Print the result as JSON.")
@user_errors
def certify(resume_review: str | None, options: RunOptions, as_json: bool, **given: Any) -> None:
    """Certify a candidate once on the held-out partition and write a locked report.

    Runs the packaged certification notebook and writes reports/<candidate>/<version>/<n>/
    (notebook, report.html, lock.json, restricted/). Every held-out use is recorded in the
    project's one held-out ledger; content judged before needs --rerun-reason. With --baseline
    OLD, a migration certification: every changed critical verdict needs a transition review
    (`workbench review transition`), then --resume-review REPORT. Exit 0 certified, 1 quality
    failed, 3 evaluation incomplete, 4 review required, 2 invalid input.
    """
    if resume_review is not None:
        result = _resume(resume_review, given, options)
    else:
        result = _certify(given, options)
    if as_json:
        echo_json(result.to_json())
    else:
        click.echo(result.format())
    raise SystemExit(exit_code(result.outcome))


_FROM_THE_REPORT = ("candidate", "policy", "baseline", "label_mapping", "rerun_reason", "overrides")


def _resume(report: str, given: dict[str, Any], options: RunOptions) -> Any:
    """``--resume-review``: every option the locked report fixes is refused."""
    from ..reports import resume_review

    values = {f"--{k.replace('_', '-')}": given[k] for k in _FROM_THE_REPORT}
    values |= {"--budget-usd": options.budget_usd, "--max-cases": options.max_cases}
    refuse_each(
        "cannot re-evaluate the report",
        [name for name, value in values.items() if value is not None],
        "option_with_resume_review",
        "{0} is taken from the locked report with --resume-review",
        "drop {0}",
    )
    return resume_review(
        report,
        gold=given["gold"],
        notebook=given["notebook"],
        sign_key=given["sign_key"],
        warm_kernel=True,  # this process is the command's own: its kernel is forked from it
    )


def _certify(given: dict[str, Any], options: RunOptions) -> Any:
    from ..reports import certify

    refuse_each(
        "cannot certify",
        [f"--{name}" for name in ("candidate", "policy", "gold") if given[name] is None],
        "option_missing",
        "Missing option '{0}' (there is no default)",
        "give {0} (or --resume-review REPORT to re-evaluate a migration report)",
    )
    return certify(
        given.pop("candidate"),
        given.pop("policy"),
        given.pop("gold"),
        concurrency=fixed_concurrency(options),
        budget_usd=options.budget_usd,
        max_cases=options.max_cases,
        warm_kernel=True,  # this process is the command's own: its kernel is forked from it
        **given,
    )


def show_verifications(results: list[Any], as_json: bool) -> None:
    """Print verifications; exit 1 when a check failed, 3 when a report is intact but not
    verified."""
    if as_json:
        echo_json(
            {
                "verified": all(r.verified for r in results),
                "reports": [r.to_json() for r in results],
            }
        )
    for r in [] if as_json else results:
        for problem in r.problems:
            click.echo(problem.format(), err=True)
        what = (
            f"{r.kind or 'report'}, {r.files} files, lock sha256 {r.lock_sha256}, outcome"
            f" {r.outcome}"
        )
        if r.verified:
            click.echo(f"{r.path}: verified - {what}")
        elif r.intact:
            click.echo(f"{r.path}: NOT VERIFIED (intact: {what}) - {r.unverified}", err=True)
        else:
            click.echo(f"{r.path}: NOT VERIFIED - {len(r.problems)} problem(s)", err=True)
        click.echo("  " + "; ".join(f"{k}: {v}" for k, v in r.checks.items()))
        click.echo(f"  signature: {r.signature}")
    if not all(r.intact for r in results):
        raise SystemExit(ExitCode.FAILED)
    if not all(r.verified for r in results):
        raise SystemExit(ExitCode.INCOMPLETE)


@click.command()
@click.argument("path", type=click.Path(path_type=str))
@option(
    "gold",
    required=False,
    help="The certified gold dataset (without it a certification is at best intact, exit 3).",
)
@option("trust")
@option("json", help="Print the verification as JSON.")
@user_errors
def verify(path: str, gold: str | None, trust: str | None, as_json: bool) -> None:
    """Verify a locked report of any kind (or every report under a reports root).

    Every file hash and the signature; for a certification the gate re-run on the stored
    evidence, the held-out ledger and the chain of reports. PATH: a report directory, its
    lock.json, a reports root or a locked run directory. Exit 0 verified, 1 a check failed, 3
    intact but not verified (a certification without --gold), 2 invalid input.
    """
    from ..reports import load_trust, verify_path

    if gold is not None and not Path(gold).exists():
        fix = "point --gold at the certified dataset directory"
        raise refusal("cannot verify", gold, "gold_missing", "the gold dataset does not exist", fix)
    trusted = load_trust(trust) if trust is not None else None
    show_verifications(verify_path(path, gold=gold, trusted=trusted), as_json)


@click.command()
@option("reports")
@flag("--ledger", help="Show the held-out ledger(s) instead, and check their chain.")
@option(
    "gold",
    required=False,
    help="A gold dataset whose ledger to include (default: the reports' ledgers).",
)
@option("json")
@user_errors
def reports(reports_root: str, ledger: bool, gold: str | None, as_json: bool) -> None:
    """List every report with its outcome (or, with --ledger, every held-out use).

    Aborted certifications are included; --ledger checks the ledger's chain (exit 1 where it
    is broken).
    """
    from ..heldout import ledger_path_for
    from ..reports import (
        format_ledger,
        format_report_row,
        ledger_problems,
        list_reports,
        read_ledgers,
    )

    extra = [ledger_path_for(gold)] if gold is not None else []
    if ledger:
        blocks, problems = read_ledgers(reports_root, extra)
        _show(blocks, as_json, format_ledger, "")
    else:
        rows = list_reports(reports_root, ledgers=extra)
        problems = ledger_problems(reports_root, extra)
        _show(rows, as_json, format_report_row, f"no reports under {reports_root}")
    for problem in problems:
        click.echo(problem.format(), err=True)
    if problems:
        raise SystemExit(ExitCode.FAILED)


def _show(items: list[Any], as_json: bool, line: Callable[[Any], str], none: str) -> None:
    if as_json:
        echo_json(items)
    elif not items and none:
        click.echo(none)
    for item in [] if as_json else items:
        click.echo(line(item))
