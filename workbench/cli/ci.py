"""``workbench ci``: the three CI lanes, ``contracts``, ``sentinel`` and ``release``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from ..runs import RunOptions
from ._common import report_problems, user_errors
from ._options import option, path, show
from ._run_options import engine, fixed_concurrency, run_option, run_options

if TYPE_CHECKING:
    from ..ci import CheckResult

_json = option("json", help="Print the report as JSON.")


def _out(records: str, lane: str) -> Callable[[Any], Any]:
    help = f"Parent of this invocation's directory ({records}; default runs/ci/{lane})."
    return option("out", help=help)


@click.group("ci")
def ci() -> None:
    """CI lanes: contracts on every change, sentinel when judge files change, release by hand.

    \b
    contracts  deterministic and free: every file and the lineage between them, the
               deterministic candidates over the controls; no model call
    sentinel   the candidates a change affects (git diff --name-only REF), under the
               policy's ci_budget_usd: label judges on the sentinel cases and the control
               suite, ranking judges on the fixtures, noise judges on the pair suites
               (--scope pr: must-win fixtures and sentinel pairs; scheduled: everything)
    release    certify (the only lane that touches held-out data), verify, summarize

    Each lane writes a JUnit report (--junit) and a JSON record.
    """


def _junit(path: str | None, lane: str, checks: list[CheckResult]) -> None:
    if path:
        from ..ci import write_junit

        write_junit(path, lane, checks)


@ci.command("contracts")
@path(
    "--project",
    default=".",
    show_default=True,
    help="Project root (holds data/ and, optionally, workbench.yaml).",
)
@option("junit")
@_json
@_out("control runs, contracts.json", "contracts")
@user_errors
def contracts(project: str, junit_path: str | None, as_json: bool, out: str | None) -> None:
    """Check every input file of the project (under data/, or `ci: paths:`) and the lineage
    between them; run the deterministic candidates over the control suites. No model call.

    A failure a reviewed `ci: expected_failures:` entry states exactly is reported, not counted.
    Exit 0 every check passed; 2 a contract problem; 3 a check could not be completed; 1 a
    deterministic control or retrieval assertion failed.
    """
    from ..ci import format_contracts, run_contracts

    report = run_contracts(project, out=out)
    _junit(junit_path, "contracts", report.checks)
    show(report, as_json, lambda r: format_contracts(r, junit_path))
    sys.exit(report.exit_code)


@ci.command("sentinel")
@click.option(
    "--since",
    required=True,
    help="Git ref the change is measured from (e.g. origin/main), untracked files included.",
)
@path("--project", default=".", show_default=True, help="Project root.")
@option(
    "gold",
    required=False,
    help="Gold dataset whose sentinels.yaml runs (default: ci.sentinel.gold, or the only one).",
)
@option(
    "policy",
    required=False,
    help="Policy whose ci_budget_usd (ci_scheduled_budget_usd with --scope scheduled) caps the"
    " job and whose control suite runs.",
)
@run_options(
    "budget",
    budget={
        "type": click.FloatRange(min=0),
        "help": "A lower cap than the policy's ci_budget_usd (a higher one is refused).",
    },
)
@click.option(
    "--scope",
    type=click.Choice(["pr", "scheduled"]),
    default="pr",
    show_default=True,
    help="Ranking and noise judges: pr runs the must-win fixtures and the noise sentinel sets"
    " (cheap, for pull requests); scheduled runs every fixture and pair.",
)
@option("junit")
@_json
@_out("runs, sentinel.json", "sentinel")
@run_option("concurrency")
@user_errors
def sentinel(
    project: str, junit_path: str | None, as_json: bool, options: RunOptions, **lane: Any
) -> None:
    """Run the candidates a change affects: label judges on the sentinels and controls, ranking
    and noise judges under their own gates.

    Priced first and refused (exit 3) above the policy's ci_budget_usd; sentinel verdicts are
    compared with a recorded baseline or the candidate at REF. A changed ranking judge runs its
    fixtures' battery and the ranking gate, a changed noise judge its pair suites and the noise
    gate (--scope). Exit 0 nothing affected or all clear; 1 a control failed or a ranking/noise
    gate failed; 4 sentinel drift (accept with `workbench drift --record-baseline`) or review
    required; 3 incomplete; 2 invalid input.
    """
    from ..ci import LaneRefused, format_sentinel_lane, run_sentinel_lane_sync

    try:
        report = run_sentinel_lane_sync(
            project, **lane, **engine(options, ("budget_usd", "concurrency"))
        )
    except LaneRefused as exc:
        report_problems(exc)
        report = exc.report
    _junit(junit_path, "sentinel", report.checks)
    show(report, as_json, format_sentinel_lane)
    sys.exit(report.exit_code)


@ci.command("release")
@option("candidate", help="Candidate spec to certify.")
@option("policy", help="Policy file.")
@option("gold", help="Gold dataset (its held-out uses go to the project's one ledger).")
@option("reports")
@option(
    "rerun_reason",
    help="Required when the held-out content was judged before (recorded in the ledger).",
)
@option("sign", help="Sign the lock with this Ed25519 private key (the CI release key).")
@run_options(
    "budget",
    "concurrency",
    budget={
        "type": click.FloatRange(min=0),
        "help": "Spend limit for the held-out run (the policy's budget_usd unless lower).",
    },
)
@option("junit")
@path("--json", "json_path", help="Write the machine-readable summary (JSON) here.")
@option("notebook")
@user_errors
def release(
    options: RunOptions, junit_path: str | None, json_path: str | None, **certification: Any
) -> None:
    """Certify a candidate on the held-out partition (as `workbench certify`), verify the locked
    report and write the summaries (--json, --junit), also when the input is invalid.

    Exit 0 certified and verified; 1 quality failed or not verified; 3 incomplete; 4 review
    required; 2 invalid input.
    """
    from ..ci import format_release, run_release, write_release_summary

    summary = run_release(
        budget_usd=options.budget_usd, concurrency=fixed_concurrency(options), **certification
    )
    if json_path:
        write_release_summary(json_path, summary)
    _junit(junit_path, "release", summary.checks)
    click.echo(format_release(summary), err=summary.outcome == "invalid_input")
    sys.exit(summary.exit_code)
