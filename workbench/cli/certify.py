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
from ._options import option, path
from ._run_options import fixed_concurrency, run_options


@click.command()
@option(
    "candidate",
    required=False,
    help="Candidate spec to certify (required unless --resume-review).",
)
@option(
    "policy",
    required=False,
    help="Policy file, data/policies/<name>@<version>.yaml (required unless --resume-review).",
)
@option(
    "gold",
    required=False,
    help=(
        "Gold dataset directory or gold.jsonl (required: there is no default dataset; with"
        " --resume-review, default the dataset the report names). Its held-out ledger is found"
        " from it."
    ),
)
@path(
    "--baseline",
    help=(
        "Migration certification: the previous version's spec, judged on the same held-out cases"
        " under the same ledger entry (one use)."
    ),
)
@option(
    "label_mapping",
    help=(
        "With --baseline: the reviewed mapping of the baseline's labels into the rubric's (required"
        " when the rubric renamed categories; its hash is locked)."
    ),
)
@path(
    "--resume-review",
    help=(
        "REPORT: re-evaluate a locked migration report with the transition reviews recorded since"
        " (a new report number; nothing is judged again, no held-out use)."
    ),
)
@option("reports")
@option(
    "rerun_reason",
    help=(
        "Required when the held-out content was judged before (by any candidate, from any copy"
        " of the gold); recorded in the ledger and the report."
    ),
)
@option("overrides", help="Override store (default: overrides.jsonl beside the policy).")
@run_options(
    "concurrency",
    "budget",
    "max_cases",
    budget={
        "help": (
            "Spend limit for the held-out run. When the policy declares budget_usd, that is used"
            " unless this is lower; higher is refused."
        )
    },
    max_cases={"help": "Case limit for the held-out run (a limited run is incomplete)."},
)
@option("notebook")
@option("sign")
@option("json", help="Print the result as JSON.")
@user_errors
def certify(resume_review: str | None, options: RunOptions, as_json: bool, **given: Any) -> None:
    """Certify a candidate once on the held-out partition and write a locked report.

    Executes the certification notebook shipped in the installed package (never one in the
    current directory; a --notebook the policy does not pin by sha256 gives an advisory report,
    never certified) headless with papermill and writes
    reports/<candidate>/<version>/<n>/: the executed notebook, report.html (no code, charts
    as inline SVG, nothing loaded from the network), lock.json with every hash, and a
    restricted/ directory with case-level held-out detail. Every held-out use is recorded, by
    the content of the held-out cases, in the project's one held-out ledger (held_out_ledger:
    in the workbench.yaml of the project root: $WORKBENCH_PROJECT_ROOT, else the nearest
    folder upwards from here), whatever gold copy or --reports is used; content judged before
    needs --rerun-reason. Exit code: 0 certified, 1 quality failed, 3 evaluation incomplete,
    4 review required, 2 invalid input.

    With --baseline OLD it is a migration certification: both versions' controls first, then
    both on held-out data under one ledger entry; transitions by case in restricted/, counts
    in migration.json; every changed verdict in a critical slice needs a transition review
    (`workbench review transition`) before the outcome can be certified. After the reviews,
    `--resume-review REPORT` re-evaluates the locked report without judging anything again.
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


_TAKEN_FROM_THE_REPORT = (
    "candidate",
    "policy",
    "baseline",
    "label_mapping",
    "rerun_reason",
    "overrides",
)


def _resume(report: str, given: dict[str, Any], options: RunOptions) -> Any:
    """``--resume-review``: every option the locked report fixes is refused, all at once."""
    from ..reports import resume_review

    values = {f"--{k.replace('_', '-')}": given[k] for k in _TAKEN_FROM_THE_REPORT}
    values |= {"--budget-usd": options.budget_usd, "--max-cases": options.max_cases}
    refuse_each(
        "cannot re-evaluate the report",
        [name for name, value in values.items() if value is not None],
        "option_with_resume_review",
        "{0} is taken from the locked report with --resume-review",
        "drop {0}",
    )
    return resume_review(
        report, gold=given["gold"], notebook=given["notebook"], sign_key=given["sign_key"]
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
        **given,
    )


def show_verifications(results: list[Any], as_json: bool) -> None:
    """Print verifications (``workbench verify``, ``workbench ranking verify``); exit 0 when
    every report verified, 1 when a check failed, else 3 when a report is intact but not
    verified (a certification checked without its gold)."""
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
    help=(
        "The certified gold dataset: the report's stored held-out records are compared with its"
        " held-out cases and its ledger must record the lock as finished. Without it a"
        " certification is at best intact, never verified (exit 3)."
    ),
)
@option("trust")
@option("json", help="Print the verification as JSON.")
@user_errors
def verify(path: str, gold: str | None, trust: str | None, as_json: bool) -> None:
    """Verify a locked report of any kind (or every report under a reports root).

    One verification for every lock: every file hash, the payloads of a ranking run, the
    signature; for a certification the gate re-run on the evidence stored in the report
    (outcome, blockers, figures; a migration's transitions), the held-out ledger (chain,
    started and finished entries, reports the ledger knows but the disk lacks) and the chain
    of reports, and what ran it (workbench version, notebook and package hashes; a custom
    notebook's report is advisory); with --gold, the stored held-out records against the real
    gold and its ledger; for a ranking or noise run, its report against the lock. Exit 0
    verified, 1 a check failed, 3 intact but not verified (a certification without --gold), 2
    invalid input. PATH may be a report directory, its lock.json, a reports root, or a run
    directory locked with --lock.
    """
    from ..reports import load_trust, verify_path

    if gold is not None and not Path(gold).exists():
        raise refusal(
            "cannot verify",
            gold,
            "gold_missing",
            "the gold dataset does not exist",
            "point --gold at the certified dataset directory",
        )
    trusted = load_trust(trust) if trust is not None else None
    show_verifications(verify_path(path, gold=gold, trusted=trusted), as_json)


@click.command()
@option("reports")
@click.option(
    "--ledger", is_flag=True, help="Show the held-out ledger(s) instead, and check their chain."
)
@option(
    "gold",
    required=False,
    help=(
        "A gold dataset whose ledger to include (default: the ledgers the reports under --reports"
        " were recorded in)."
    ),
)
@option("json")
@user_errors
def reports(reports_root: str, ledger: bool, gold: str | None, as_json: bool) -> None:
    """List every report with its outcome, including aborted certifications (or, with --ledger,
    every held-out use, with the ledger's chain checked: exit 1 where it is broken).

    A certification whose process died is marked aborted in its ledger first.
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
    """``items`` as JSON, else one ``line`` each (``none`` when there is none)."""
    if as_json:
        echo_json(items)
    elif not items and none:
        click.echo(none)
    for item in [] if as_json else items:
        click.echo(line(item))
