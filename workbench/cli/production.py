"""``workbench production`` (sample, findings): human review of a judge's production verdicts."""

from __future__ import annotations

import getpass
from dataclasses import asdict

import click

from ..outcomes import ExitCode
from ._common import echo_json, user_errors
from ._options import PATH, option

_JUDGE = "The judge holding authority, name@version."


@click.group("production")
def production_group() -> None:
    """Human review of a judge's production verdicts: sampled, blinded, adjudicated."""


@production_group.command("sample")
@option("gold", help="Gold dataset whose annotation queue receives the cases.")
@option("policy", help="The judge's policy: its sample_agreements share.")
@option("judge", required=True, help=_JUDGE)
@option("results", help="The judge's production results.")
@click.option("--cases", required=True, type=PATH, help="The production cases (JSON Lines).")
@click.option("--reviewers", required=True, help="Comma-separated reviewers to assign.")
@option("seed", help="Seed of the agreement draw.")
@click.option("--per-case", default=2, show_default=True, help="Reviewers per case.")
@user_errors
def sample(
    gold: str,
    policy: str,
    judge: str,
    results: str,
    cases: str,
    reviewers: str,
    seed: int,
    per_case: int,
) -> None:
    """Queue every abstention, evaluator error and missing verdict and the policy's share of the
    judge's clear verdicts for blinded review (calibration partition of a future release)."""
    from ..authority import sample_production
    from ..policy import load_policy

    counts = sample_production(
        gold,
        load_policy(policy),
        judge,
        results,
        cases,
        reviewers=[n.strip() for n in reviewers.split(",") if n.strip()],
        assigned_by=getpass.getuser(),
        seed=seed,
        per_case=per_case,
    )
    total = sum(counts.values())
    detail = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "nothing to review"
    click.echo(f"queued {total} production case(s) for review: {detail}")


@production_group.command("findings")
@option("gold")
@option("judge", required=True, help=_JUDGE)
@option("json")
@user_errors
def findings(gold: str, judge: str, as_json: bool) -> None:
    """Adjudicated production cases the judge got wrong. A critical false pass demotes the judge
    to advisory in its authority record (the cases stay in the gold) and exits 1."""
    from ..authority import production_findings, withdraw_on_critical

    found = production_findings(gold, judge)
    entry = withdraw_on_critical(gold, judge, found)
    if as_json:
        echo_json({"findings": [asdict(f) for f in found], "demoted": entry is not None})
    else:
        click.echo(f"{judge}: {len(found)} production finding(s)")
        for f in found:
            click.echo(
                f"  {f.case_id} ({f.slice}, {f.risk}): {f.kind}: judge {f.judge_verdict},"
                f" adjudicated {f.human_label}"
            )
        if entry is not None:
            click.echo(f"demoted {judge} to {entry.authority}: {entry.reason}")
    if any(f.kind == "false_pass" and f.risk == "critical" for f in found):
        raise SystemExit(ExitCode.FAILED)
