"""``workbench certify``, ``workbench verify`` and ``workbench reports``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

import click

from ..errors import Problem, WorkbenchError, refusal
from ..outcomes import ExitCode, exit_code
from ..runs._options import RunOptions
from ._common import echo_json, user_errors
from ._run_options import fixed_concurrency, run_options


class _LedgerBlock(TypedDict):
    """One held-out ledger in ``workbench reports --ledger`` (its JSON output)."""

    ledger: str
    exists: bool
    chain_ok: bool
    problems: list[dict[str, Any]]
    entries: list[dict[str, Any]]


@click.command()
@click.option(
    "--candidate",
    default=None,
    type=click.Path(path_type=str),
    help="Candidate spec to certify (required unless --resume-review).",
)
@click.option(
    "--policy",
    default=None,
    type=click.Path(path_type=str),
    help="Policy file, data/policies/<name>@<version>.yaml (required unless --resume-review).",
)
@click.option(
    "--gold",
    default=None,
    type=click.Path(path_type=str),
    help=(
        "Gold dataset directory or gold.jsonl (required: there is no default dataset; with"
        " --resume-review, default the dataset the report names). Its held-out ledger is found"
        " from it."
    ),
)
@click.option(
    "--baseline",
    default=None,
    type=click.Path(path_type=str),
    help=(
        "Migration certification: the previous version's spec, judged on the same held-out cases"
        " under the same ledger entry (one use)."
    ),
)
@click.option(
    "--label-mapping",
    default=None,
    type=click.Path(path_type=str),
    help=(
        "With --baseline: the reviewed mapping of the baseline's labels into the rubric's (required"
        " when the rubric renamed categories; its hash is locked)."
    ),
)
@click.option(
    "--resume-review",
    default=None,
    type=click.Path(path_type=str),
    help=(
        "REPORT: re-evaluate a locked migration report with the transition reviews recorded since"
        " (a new report number; nothing is judged again, no held-out use)."
    ),
)
@click.option(
    "--reports",
    "reports_root",
    default="reports",
    show_default=True,
    type=click.Path(path_type=str),
    help="Reports root directory.",
)
@click.option(
    "--rerun-reason",
    default=None,
    help=(
        "Required to certify the same candidate again on the same held-out manifest; recorded in"
        " the ledger and the report."
    ),
)
@click.option(
    "--overrides",
    default=None,
    type=click.Path(path_type=str),
    help="Override store (default: overrides.jsonl beside the policy).",
)
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
@click.option(
    "--notebook",
    default=None,
    type=click.Path(path_type=str),
    help="Certification notebook (default notebooks/03_certify.ipynb).",
)
@click.option(
    "--sign",
    "sign_key",
    default=None,
    type=click.Path(path_type=str),
    help="Sign the lock with this Ed25519 private key (OpenSSH or PEM format).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@user_errors
def certify(
    candidate: str | None,
    policy: str | None,
    gold: str | None,
    baseline: str | None,
    label_mapping: str | None,
    resume_review: str | None,
    reports_root: str,
    rerun_reason: str | None,
    overrides: str | None,
    options: RunOptions,
    notebook: str | None,
    sign_key: str | None,
    as_json: bool,
) -> None:
    """Certify a candidate once on the held-out partition and write a locked report.

    Executes notebooks/03_certify.ipynb headless with papermill and writes
    reports/<candidate>/<version>/<n>/: the executed notebook, report.html (no code, charts
    as inline SVG, nothing loaded from the network), lock.json with every hash, and a
    restricted/ directory with case-level held-out detail. Every held-out use is recorded in
    the gold dataset's held-out ledger (held_out_ledger.jsonl beside the dataset, or the path
    workbench.yaml declares), whatever --reports is. Exit code: 0 certified, 1 quality
    failed, 3 evaluation incomplete, 4 review required, 2 invalid input.

    With --baseline OLD it is a migration certification: both versions' controls first, then
    both on held-out data under one ledger entry; transitions by case in restricted/, counts
    in migration.json; every changed verdict in a critical slice needs a transition review
    (`workbench review transition`) before the outcome can be certified. After the reviews,
    `--resume-review REPORT` re-evaluates the locked report without judging anything again.
    """
    given: dict[str, Any] = {
        "candidate": candidate,
        "policy": policy,
        "gold": gold,
        "baseline": baseline,
        "label_mapping": label_mapping,
        "reports_root": reports_root,
        "rerun_reason": rerun_reason,
        "overrides": overrides,
        "notebook": notebook,
        "sign_key": sign_key,
    }
    if resume_review is not None:
        result = _resume(resume_review, given, options)
    else:
        result = _certify(given, options)
    if as_json:
        echo_json(
            {
                "report_dir": str(result.report_dir),
                "report_id": result.report_id,
                "outcome": result.outcome,
                "blockers": result.blockers,
                "lock_sha256": result.lock_sha256,
                "timings_s": result.timings_s,
            }
        )
    else:
        click.echo(f"report: {result.report_dir}")
        click.echo(
            f"outcome: {result.outcome.upper()} ({len(result.blockers)} blocker(s)); lock sha256"
            f" {result.lock_sha256}"
        )
        for b in result.blockers:
            where = f", {b['slice']}" if b.get("slice") else ""
            click.echo(f"  - {b['code']} [{b['category']}{where}]: {b['message']}")
        click.echo("timings: " + ", ".join(f"{k} {v:.2f}s" for k, v in result.timings_s.items()))
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
    from ..reports._certify import resume_review

    values = {f"--{k.replace('_', '-')}": given[k] for k in _TAKEN_FROM_THE_REPORT}
    values |= {"--budget-usd": options.budget_usd, "--max-cases": options.max_cases}
    extra = [name for name, value in values.items() if value is not None]
    if extra:
        raise WorkbenchError(
            "cannot re-evaluate the report",
            [
                Problem(
                    location=name,
                    code="option_with_resume_review",
                    message=f"{name} is taken from the locked report with --resume-review",
                    fix=f"drop {name}",
                )
                for name in extra
            ],
        )
    return resume_review(
        report, gold=given["gold"], notebook=given["notebook"], sign_key=given["sign_key"]
    )


def _certify(given: dict[str, Any], options: RunOptions) -> Any:
    from ..reports import certify

    missing = [f"--{name}" for name in ("candidate", "policy", "gold") if given[name] is None]
    if missing:
        raise WorkbenchError(
            "cannot certify",
            [
                Problem(
                    location=name,
                    code="option_missing",
                    message=f"Missing option '{name}' (there is no default)",
                    fix=f"give {name} (or --resume-review REPORT to re-evaluate a migration"
                    " report)",
                )
                for name in missing
            ],
        )
    return certify(
        given["candidate"],
        given["policy"],
        given["gold"],
        reports_root=given["reports_root"],
        rerun_reason=given["rerun_reason"],
        concurrency=fixed_concurrency(options),
        budget_usd=options.budget_usd,
        max_cases=options.max_cases,
        overrides=given["overrides"],
        notebook=given["notebook"],
        sign_key=given["sign_key"],
        baseline=given["baseline"],
        label_mapping=given["label_mapping"],
    )


def show_verifications(results: list[Any], as_json: bool) -> None:
    """Print verifications (``workbench verify``, ``workbench ranking verify``); exit 1 unless
    every report verified."""
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
        if r.verified:
            click.echo(
                f"{r.path}: verified - {r.kind or 'report'}, {r.files} files, lock sha256"
                f" {r.lock_sha256}, outcome {r.outcome}"
            )
        else:
            click.echo(f"{r.path}: NOT VERIFIED - {len(r.problems)} problem(s)", err=True)
        click.echo("  " + "; ".join(f"{k}: {v}" for k, v in r.checks.items()))
        click.echo(f"  signature: {r.signature}")
    if not all(r.verified for r in results):
        raise SystemExit(ExitCode.FAILED)


@click.command()
@click.argument("path", type=click.Path(path_type=str))
@click.option(
    "--gold",
    default=None,
    type=click.Path(path_type=str),
    help=(
        "The certified gold dataset, to check against its ledger (default: the dataset the lock"
        " names, when it is on this machine)."
    ),
)
@click.option(
    "--trust",
    default=None,
    type=click.Path(path_type=str),
    help=(
        "File of trusted Ed25519 public keys, one OpenSSH key per line; the lock must be signed by"
        " one of them."
    ),
)
@click.option("--json", "as_json", is_flag=True, help="Print the verification as JSON.")
@user_errors
def verify(path: str, gold: str | None, trust: str | None, as_json: bool) -> None:
    """Verify a locked report of any kind (or every report under a reports root).

    One verification for every lock: every file hash, the payloads of a ranking run, the
    signature; for a certification the gate re-run on the evidence stored in the report
    (outcome, blockers, figures; a migration's transitions), the held-out ledger (chain,
    started and finished entries, reports the ledger knows but the disk lacks) and the chain
    of reports; for a ranking or noise run, its report against the lock. Exit 0 verified, 1
    not verified, 2 invalid input. PATH may be a report directory, its lock.json, a reports
    root, or a run directory locked with --lock.
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


def _show_ledgers(paths: list[Path], reports_root: str, as_json: bool) -> None:
    """``workbench reports --ledger``: every held-out use, each ledger's chain checked (exit 1
    where it is broken)."""
    from ..heldout import HeldOutLedger
    from ..reports._listing import reconcile_ledgers

    if not paths:
        raise refusal(
            "no held-out ledger",
            reports_root,
            "ledger_not_found",
            "no report here names a held-out ledger",
            "pass --gold DATASET to show that dataset's ledger",
        )
    problems = reconcile_ledgers(paths)
    out: list[_LedgerBlock] = []
    for path in paths:
        read = HeldOutLedger(path).read()
        problems += [p for p in read.problems if p not in problems]
        out.append(
            {
                "ledger": str(path),
                "exists": path.exists(),
                "chain_ok": not read.problems,
                "problems": [p.model_dump(mode="json") for p in read.problems],
                "entries": [e.model_dump(mode="json") for e in read.entries],
            }
        )
    if as_json:
        echo_json(out)
    for block in [] if as_json else out:
        state = "chain intact" if block["chain_ok"] else "CHAIN BROKEN"
        click.echo(
            f"ledger {block['ledger']}: {len(block['entries'])} entries, {state}"
            + ("" if block["exists"] else " (no ledger yet)")
        )
        for e in block["entries"]:
            click.echo(
                f"{e['when'][:19]}  {e['event']:<8} {e['who']:<12} {e['candidate']:<28}"
                f" {e['candidate_fingerprint'][:12]}  {e['report_id']:<32}"
                f" {e.get('outcome') or '':<22} {e.get('rerun_reason') or ''}"
            )
    for problem in problems:
        click.echo(problem.format(), err=True)
    if problems:
        raise SystemExit(ExitCode.FAILED)


@click.command()
@click.option(
    "--reports",
    "reports_root",
    default="reports",
    show_default=True,
    type=click.Path(path_type=str),
    help="Reports root directory.",
)
@click.option(
    "--ledger", is_flag=True, help="Show the held-out ledger(s) instead, and check their chain."
)
@click.option(
    "--gold",
    default=None,
    type=click.Path(path_type=str),
    help=(
        "A gold dataset whose ledger to include (default: the ledgers the reports under --reports"
        " were recorded in)."
    ),
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@user_errors
def reports(reports_root: str, ledger: bool, gold: str | None, as_json: bool) -> None:
    """List every report with its outcome, including aborted certifications (or, with --ledger,
    every held-out use, with the ledger's chain checked: exit 1 where it is broken).

    A certification whose process died is marked aborted in its ledger first.
    """
    from ..heldout import HeldOutLedger, ledger_path_for
    from ..reports import list_reports
    from ..reports._listing import ledgers_of

    extra = [ledger_path_for(gold)] if gold is not None else []
    if ledger:
        _show_ledgers(
            list(dict.fromkeys([*extra, *ledgers_of(Path(reports_root))])), reports_root, as_json
        )
        return
    rows = list_reports(reports_root, ledgers=extra)
    damaged = [
        p
        for path in dict.fromkeys([*extra, *ledgers_of(Path(reports_root))])
        for p in HeldOutLedger(path).read().problems
    ]
    if as_json:
        echo_json(rows)
    elif not rows:
        click.echo(f"no reports under {reports_root}")
    for r in [] if as_json else rows:
        click.echo(
            f"{(r.get('created_at') or '')[:19]:<20} {r['report_id']:<36} {r['status']:<10}"
            f" {r['outcome']:<22} blockers {r.get('blockers', '-')!s:<3} {r.get('who') or '':<10}"
            f" {('rerun: ' + r['rerun_reason']) if r.get('rerun_reason') else ''}"
        )
    for problem in damaged:
        click.echo(problem.format(), err=True)
    if damaged:
        raise SystemExit(ExitCode.FAILED)
