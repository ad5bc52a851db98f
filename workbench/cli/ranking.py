"""``workbench ranking``: the battery and its gate, reviewer calibration, fixture releases, replay,
verify; ``workbench prune``."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import click

from .._load import Problems
from ..errors import refusal
from ..outcomes import ExitCode
from ..runs import RunOptions
from ._common import echo_json, user_errors
from ._options import flag, option, options, path, refuse_sign_without_lock, show, shown
from ._run_options import engine, run_option, run_options

DEFAULT_HISTORY_DIR = Path("runs/ranking/history")
DEFAULT_OVERRIDES = Path("data/policies/overrides.jsonl")


_PLAN = shown(
    "--plan",
    type=click.Choice(["exhaustive", "rotation"]),
    default="exhaustive",
    help="exhaustive: the position battery for every fixture; rotation: one seeded non-identity"
    " rotation per fixture, the battery for fixtures marked diagnostic.",
)
_battery_options = options(  # --max-exhaustive, --sample, --seed and --repeats
    shown(
        "--max-exhaustive",
        type=click.IntRange(min=0),
        default=4,
        help="All permutations for fixtures with at most this many candidates.",
    ),
    shown(
        "--sample",
        type=click.IntRange(min=1),
        default=8,
        help="Permutations per larger fixture (identity, rotations, then seeded random).",
    ),
    option("seed", help="Seed of the permutation sample and of the rotation plan."),
    shown(
        "--repeats",
        type=click.IntRange(min=0),
        default=3,
        help="Repeatability baseline: the identity order this many times (0: none).",
    ),
)
_SIGN = "With --lock: sign the lock with this Ed25519 private key (OpenSSH or PEM format)."


class _DefaultGroup(click.Group):
    """A group whose default subcommand is ``run``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


_RANKING_HELP = (
    "Ranking judges: battery and gate (run, the default), reviewer agreement, label history,"
    " replay, verify (freeze a fixture file with `workbench freeze FILE`).\n"
    "\n"
    "\b\n"
    "workbench ranking run --candidate SPEC --fixtures FILE [--policy P]   battery, report, gate\n"
    "workbench ranking agreement --fixtures FILE                           "
    "reviewer-reviewer agreement\n"
    "workbench ranking history FILE                                        "
    "label history of a fixture file\n"
    "workbench ranking replay ... --case ID --repeat N                     "
    "replay one attempt from frozen inputs\n"
    "workbench ranking verify RUN_DIR                                      "
    "verify a locked ranking run\n"
    "workbench ranking retire-scalar --fixtures F --policy P ...           "
    "retire the scalar gate, on record\n"
)


@click.group(cls=_DefaultGroup, help=_RANKING_HELP)
def ranking() -> None:
    """Ranking judges (help text: :data:`_RANKING_HELP`)."""


def _capture(
    policy: Any, capture: str | None, excerpts: tuple[str, ...], retention_days: int | None
) -> Any:
    """The capture configuration: the policy's, else the CLI's, else the default (full)."""
    from ..ranking import CaptureConfig

    given = capture is not None or excerpts or retention_days is not None
    if policy is not None and given:
        message = f"the ranking policy {policy.label} declares the capture mode and retention"
        fix = "drop --capture/--excerpt/--retention-days, or change the policy (a new version)"
        raise refusal("capture set twice", "--capture", "arguments", message, fix)
    if policy is not None:
        return policy.capture
    if (capture or "full") == "full" and excerpts:
        message = "--excerpt is an allow-list for --capture digest_and_excerpts"
        fix = "add --capture digest_and_excerpts, or drop --excerpt"
        raise refusal("invalid capture", "--excerpt", "arguments", message, fix)
    return CaptureConfig(
        mode=capture or "full",
        excerpts=list(excerpts),
        retention_days=retention_days,
        declared_by="cli" if given else "default",
    )


@ranking.command("run")
@option(
    "candidate",
    help="Ranking candidate spec (kind ragas-ranking or ragas-ranking-function).",
    required=False,
)
@path("--fixtures", required=True, help="Ranking fixture file (data/ranking/<name>@<v>.yaml).")
@option("results", required=False, help="Analyse these ranking results instead of running one.")
@option("out", help="Run directory (default runs/ranking/<candidate>/<fixtures>).")
@option("policy", required=False, help="Ranking release policy (default: the built-in rules).")
@path(
    "--history",
    help="Ranking history log (default runs/ranking/history/<fixture set>.jsonl): read, appended.",
)
@flag(
    "--no-history",
    help="Neither read nor append the history (no fixture-change or agreement-drop comparison).",
)
@option("overrides", help=f"Override store (default {DEFAULT_OVERRIDES} when it exists).")
@path("--scalar", help="Per-case scalar gate outcomes (JSON Lines) to list beside the outcome.")
@click.option(
    "--job",
    type=click.Choice(["generation", "evaluator"]),
    help="Drift job: generation holds the judge of the last passing run fixed, evaluator holds its"
    " candidates fixed. A run never changes both (one change per release).",
)
@_PLAN
@click.option(
    "--capture",
    type=click.Choice(["full", "digest_and_excerpts"]),
    help="What the run stores of each request (without a policy; default full).",
)
@click.option(
    "--excerpt",
    "excerpts",
    multiple=True,
    type=click.Choice(["user_input", "context", "candidates"]),
    help="Allow-listed excerpt kept with --capture digest_and_excerpts (repeatable).",
)
@click.option(
    "--retention-days",
    type=click.IntRange(min=0),
    help="Days request payloads are kept before `workbench prune` may delete them.",
)
@flag("--lock", help="Lock the run directory after the report.")
@option("sign", help=_SIGN)
@option("json", help="Print the versioned JSON report (workbench.ranking.RankingReport).")
@run_options("concurrency", "budget")
@_battery_options
@run_option("cache")
@run_option("no_cache")
@run_option("no_progress")
@user_errors
def run(
    candidate: str | None,
    fixtures: str,
    results: str | None,
    out: str | None,
    policy: str | None,
    history: str | None,
    no_history: bool,
    overrides: str | None,
    scalar: str | None,
    job: str | None,
    capture: str | None,
    excerpts: tuple[str, ...],
    retention_days: int | None,
    lock: bool,
    sign_key: str | None,
    as_json: bool,
    options: RunOptions,
    **battery: Any,
) -> None:
    """Run a ranking judge's position-bias battery over reviewed fixtures, report it and apply the
    ranking gate.

    Every fixture is judged under several presented orders (neutral labels) and in its identity
    order --repeats times. The gate (--policy, or the built-in rules) blocks a must-win reversal
    confirmed on repeated runs and an agreement drop against the last passing run; unconfirmed
    reversals, editorial drift and criterion leakage route to review. Exit 0 passed (or
    report-only), 1 quality failed, 3 incomplete, 4 review required, 2 invalid input.
    """
    from ..ranking import (
        format_ranking,
        load_fixtures,
        ranking_report,
        refuse_retired_scalar,
        release_change,
    )

    refuse_sign_without_lock(sign_key, lock, "invalid arguments")
    if (candidate is None) == (results is None):
        raise refusal(
            "invalid arguments",
            "--candidate/--results",
            "arguments",
            "give exactly one of --candidate (run the battery) or --results (analyse existing"
            " results)",
            "pass --candidate SPEC to run, or --results FILE to analyse",
        )
    fixture_set = load_fixtures(fixtures)
    default_history = DEFAULT_HISTORY_DIR / f"{fixture_set.name}.jsonl"
    history_path = None if no_history else Path(history or default_history)
    if scalar:  # the library refuses it again where it gates and records
        refuse_retired_scalar(history_path, fixture_set.name)
    gate_inputs = _gate_inputs(policy, history_path, overrides, scalar)
    config = _capture(gate_inputs["policy"], capture, excerpts, retention_days)
    check = functools.partial(
        release_change,
        fixture_set,
        history=gate_inputs["history"],
        job=cast(Any, job),
        where=str(history_path),
    )
    if results is not None:
        report = ranking_report(fixture_set, results, **gate_inputs)
        check(report.judge, report.judge_fingerprint)  # before any artifact is written
        out_dir = Path(out) if out else None
    else:
        assert candidate is not None
        report, out_dir = _run_battery(
            candidate, fixture_set, out, battery, config, options, gate_inputs, check
        )
    _keep(report, fixture_set, out_dir, history_path, lock, sign_key, job)
    show(report, as_json, format_ranking)
    assert report.gate is not None  # ranking_report gates every report
    if report.gate.exit_code:
        raise SystemExit(report.gate.exit_code)


def _gate_inputs(
    policy: str | None, history: Path | None, overrides: str | None, scalar: str | None
) -> dict[str, Any]:
    from ..policy import load_overrides
    from ..ranking import load_ranking_policy, read_scalar

    rules = load_ranking_policy(policy) if policy else None
    store = Path(overrides) if overrides else DEFAULT_OVERRIDES
    if overrides and not store.exists():  # the default store is optional, a named one is not
        message = "the override store does not exist"
        fix = "point --overrides at an existing store, or drop it"
        raise refusal("no overrides", str(store), "overrides_missing", message, fix)
    return {
        "policy": rules,
        "history": history,  # the log: the gate reads it (runs and the scalar's retirement)
        "overrides": list(load_overrides(store)) if store.exists() else [],
        "scalar": read_scalar(scalar) if scalar else None,
    }


def _run_battery(
    candidate: str,
    fixture_set: Any,
    out: str | None,
    battery: dict[str, Any],
    config: Any,
    options: RunOptions,
    gate_inputs: dict[str, Any],
    check: Callable[[str | None, str | None], Any],
) -> tuple[Any, Path]:
    from ..judges import load_candidate
    from ..ranking import position_battery, ranking_report, run_ranking_sync

    judge = load_candidate(candidate)
    if judge.spec.kind not in ("ragas-ranking", "ragas-ranking-function"):
        message = f"kind {judge.spec.kind!r} is not a ranking judge"
        fix = "use a ragas-ranking or ragas-ranking-function candidate; analyse imported ranking"
        fix += " results with --results"
        raise refusal("not a ranking candidate", candidate, "not_ranking_kind", message, fix)
    check(judge.spec.label, judge.identity.fingerprint())  # refused before any call
    out_dir = Path(out) if out else Path("runs") / "ranking" / judge.spec.label / fixture_set.label
    summary = run_ranking_sync(
        judge,
        fixture_set,
        out_dir,
        **engine(options),
        capture=config,
        candidate_path=candidate,
        **battery,
    )
    planned = position_battery(fixture_set, **battery)
    report = ranking_report(fixture_set, summary.results_path, planned=planned, **gate_inputs)
    click.echo(  # the report's counts: an invalid ranking is a defect there, not an error
        f"{summary.judge}: run {summary.status} - {report.counts_line()}; {summary.calls} calls,"
        f" {summary.cache_hits} cached, {summary.resumed} already done; cost"
        f" ${summary.cost_usd:.4f}; results {summary.results_path}",
        err=True,
    )
    return report, out_dir


def _keep(
    report: Any,
    fixture_set: Any,
    out_dir: Path | None,
    history_path: Path | None,
    lock: bool,
    sign_key: str | None,
    job: str | None = None,
) -> None:
    from ..ranking import lock_ranking_run, record_run, write_ranking_artifacts

    if lock and out_dir is None:
        message = "--lock needs a run directory"
        raise refusal("nothing to lock", "--lock", "arguments", message, "pass --out")
    if out_dir is not None:
        paths = write_ranking_artifacts(report, out_dir)
        click.echo(f"report and {len(paths) - 1} failure artifact(s) in {out_dir}", err=True)
    if history_path is not None:
        record_run(history_path, report, fixture_set, job=cast(Any, job))  # decides the change
        click.echo(f"recorded in the ranking history {history_path}", err=True)
    if lock and out_dir is not None:
        from .._signing import load_signer
        from ..ranking import ranking_html

        sealed = lock_ranking_run(
            out_dir,
            report.gate.outcome,
            signer=load_signer(sign_key) if sign_key else None,
            html=ranking_html(report),
        )
        click.echo(f"locked {out_dir} (lock.json {sealed.lock_sha256[:12]})", err=True)


@ranking.command("agreement")
@path("--fixtures", required=True, help="Ranking fixture file with reviewer orders (reviews:).")
@option("json", help="Print the versioned JSON report (workbench.ranking.ReviewerAgreementReport).")
@user_errors
def agreement(fixtures: str, as_json: bool) -> None:
    """Reviewer-reviewer agreement on the fixtures: pairwise agreement, Kendall's tau and top-1
    agreement, per fixture, slice and overall, with the disputed pairs. A must-win disagreement
    without an adjudication does not load (exit 2).
    """
    from ..ranking import format_reviewer_agreement, load_fixtures, reviewer_agreement

    show(reviewer_agreement(load_fixtures(fixtures)), as_json, format_reviewer_agreement)


@ranking.command("history")
@click.argument("fixtures", type=click.Path(path_type=str))
@option("json", help="Print the chain as JSON.")
@user_errors
def history_(fixtures: str, as_json: bool) -> None:
    """The label history of a fixture file: every version it supersedes, oldest first, with its
    recorded changes."""
    from ..ranking import label_history

    chain = label_history(fixtures)
    if as_json:
        echo_json([v.model_dump(mode="json") for v in chain])
        return
    for v in chain:
        r = v.release
        on = f"on {r.when.date().isoformat()} (release {r.release_id})" if r else ""
        frozen = f"frozen by {r.approver} {on}" if r else "NOT frozen (draft)"
        click.echo(
            f"{v.label}: {frozen}" + (f"; supersedes {v.supersedes}" if v.supersedes else "")
        )
        for c in v.changes:
            click.echo(
                f"  {c.case_id}: {c.kind}; {c.old_order} -> {c.new_order}; approved by {c.approver}"
                f" on {c.approved_on.isoformat()}: {c.reason}"
            )


@ranking.command("replay")
@option("candidate", help="The ranking candidate spec of the failing run.")
@path("--fixtures", required=True, help="The fixture file of the failing run.")
@click.option("--case", "case_id", required=True, help="The fixture.")
@click.option(
    "--repeat",
    required=True,
    type=click.IntRange(min=0),
    help="The attempt's repeat index in the battery.",
)
@_PLAN
@_battery_options
@click.option(
    "--expect-fixtures-sha256",
    default=None,
    help="Refuse unless the fixture file still has this sha256 (frozen inputs).",
)
@click.option(
    "--expect-fingerprint",
    default=None,
    help="Refuse unless the candidate still has this judge fingerprint.",
)
@option(
    "out",
    help="Where the replay is written (default"
    " runs/ranking/replay/<candidate>/<case>-r<repeat>-<n>).",
)
@user_errors
def replay(
    candidate: str,
    fixtures: str,
    case_id: str,
    repeat: int,
    expect_fixtures_sha256: str | None,
    expect_fingerprint: str | None,
    out: str | None,
    **battery: Any,
) -> None:
    """Replay one attempt of a ranking battery from frozen inputs: the same presentation, a fresh
    call (no cache).

    Exit 0 the attempt passes its checks, 1 the failure reproduces, 5 evaluator error, 3 no
    result recorded, 2 the inputs are not the frozen ones.
    """
    from ..judges import load_candidate
    from ..ranking import load_fixtures, position_battery, run_ranking_sync
    from ..runs import RunDir

    fixture_set = load_fixtures(fixtures)
    judge = load_candidate(candidate)
    items = [
        i
        for i in position_battery(fixture_set, **battery)
        if i.case_id == case_id and i.repeat == repeat
    ]
    problems = _replay_problems(
        fixtures, fixture_set, candidate, judge, expect_fixtures_sha256, expect_fingerprint
    )
    if not items:
        message = f"the battery has no attempt {case_id}#{repeat}"
        fix = "copy --case and --repeat from the failure artifact"
        problems.add("--case/--repeat", "no_such_attempt", message, fix)
    problems.raise_if_any("replay refused")
    out = out or _replay_dir(judge.spec.label, case_id, repeat)
    run_ranking_sync(judge, fixture_set, out, items=items, cache_dir=False, progress=False)
    rows = [
        line.result
        for line in RunDir(out).read_results(required=True)
        if line.result.case_id == case_id and line.result.repeat == repeat
    ]
    presented = items[0].presentation["presented_order"] if items[0].presentation else None
    click.echo(
        f"replayed {case_id}#{repeat} with {judge.spec.label} (no cache) into {out}: presented"
        f" {presented}"
    )
    code = _replayed(fixture_set.by_id()[case_id], rows[-1] if rows else None)
    if code:
        raise SystemExit(code)


def _replay_problems(
    fixtures: str,
    fixture_set: Any,
    candidate: str,
    judge: Any,
    expect_fixtures_sha256: str | None,
    expect_fingerprint: str | None,
) -> Problems:
    """The fixtures or the candidate are not the frozen ones the failing run used."""
    problems = Problems()
    sha256, fingerprint = fixture_set.dataset_sha256, judge.identity.fingerprint()
    if expect_fixtures_sha256 and sha256 != expect_fixtures_sha256:
        problems.add(
            fixtures,
            "fixtures_changed",
            f"the fixture file's sha256 is {sha256[:12]}, the failing run used"
            f" {expect_fixtures_sha256[:12]}",
            "replay against the fixture file version the run used (git checkout it)",
        )
    if expect_fingerprint and fingerprint != expect_fingerprint:
        problems.add(
            candidate,
            "candidate_changed",
            f"the candidate's fingerprint is {fingerprint[:12]}, the failing run used"
            f" {expect_fingerprint[:12]}",
            "replay with the candidate spec (and prompt, Ragas version) the run used",
        )
    return problems


def _replay_dir(label: str, case_id: str, repeat: int) -> str:
    base = Path("runs") / "ranking" / "replay" / label
    n = next(n for n in itertools.count(1) if not (base / f"{case_id}-r{repeat}-{n}").exists())
    return str(base / f"{case_id}-r{repeat}-{n}")


def _replayed(fixture: Any, r: Any) -> int:
    from ..ranking import completeness

    if r is None:
        click.echo("no result was recorded (budget or the judge declined)")
        return ExitCode.INCOMPLETE
    if r.error is not None:
        click.echo(f"evaluator error {r.error.kind}: {r.error.message}; returned {r.order}")
        return ExitCode.FAILED if r.error.kind == "invalid_ranking" else ExitCode.EVALUATOR_ERRORS
    order = list(r.order or [])
    agreed, pairs = fixture.agreement(order)
    held = fixture.must_win_holds(order)
    check = completeness(fixture, r.rendered_request, r.presentation)
    click.echo(
        f"returned {order} (expected {list(fixture.expected_order)}); agreement {agreed}/{pairs};"
        f" must-win {fixture.must_win_expected()}: {'held' if held else 'REVERSED'}; request"
        f" complete={check.complete}; allowed_values"
        f" {(r.presentation or {}).get('allowed_values')} for {len(fixture.candidates)}"
        f" candidates; reason: {r.reason}"
    )
    return ExitCode.FAILED if not held or agreed < pairs else ExitCode.OK


@ranking.command("retire-scalar")
@path("--fixtures", required=True, help="The ranking fixture file whose scalar gate retires.")
@option("policy", required=True, help="The ranking policy (owners, calibration data).")
@path(
    "--history",
    help="Ranking history log (default runs/ranking/history/<fixture set>.jsonl): read, appended.",
)
@option("approver", help="Who approves (a name in `approvers:`).")
@option("reason", help="What the side-by-side runs showed.")
@click.option(
    "--escape-path",
    required=True,
    help="The documented escape path for a genuine evaluator incident.",
)
@option("json", help="Print the retirement record as JSON.")
@user_errors
def retire_scalar_(
    fixtures: str,
    policy: str,
    history: str | None,
    approver: str,
    reason: str,
    escape_path: str,
    as_json: bool,
) -> None:
    """Retire the scalar gate of a fixture set, with a record in its ranking history.

    Refused (exit 2, every problem at once) unless the policy names the four owners and an
    agreement-drop threshold chosen from reviewed examples, an escape path is given, the history
    holds a run that compared the scalar gate side by side (--scalar), and the approver is in the
    project's approvers. Later runs of the set refuse --scalar.
    """
    from ..ranking import load_fixtures, load_ranking_policy, retire_scalar

    fixture_set = load_fixtures(fixtures)
    path = Path(history) if history else DEFAULT_HISTORY_DIR / f"{fixture_set.name}.jsonl"
    record = retire_scalar(
        path,
        fixture_set.name,
        load_ranking_policy(policy),
        approver=approver,
        reason=reason,
        escape_path=escape_path,
    )
    if as_json:
        echo_json(record.model_dump(mode="json"))
        return
    click.echo(
        f"retired the scalar gate of {fixture_set.name} ({record.side_by_side_runs} side-by-side"
        f" run(s); scalar passed, ranking did not: {record.scalar_pass_ranking_fail}); approved by"
        f" {record.approver}; recorded in {path}"
    )


@ranking.command("verify")
@click.argument("run_dir", type=click.Path(path_type=str))
@option(
    "trust", help="File of trusted Ed25519 public keys; the lock must be signed by one of them."
)
@option("json", help="Print the verification as JSON.")
@user_errors
def verify(run_dir: str, trust: str | None, as_json: bool) -> None:
    """Verify a locked ranking run: `workbench verify RUN_DIR`, the one verification of every
    report. Exit 0 verified, 1 not verified."""
    from .._lock import verify_lock
    from .._signing import load_trust
    from .certify import show_verifications

    trusted = load_trust(trust) if trust is not None else None
    show_verifications([verify_lock(run_dir, trusted=trusted)], as_json)


@click.command("prune")
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option(
    "--now",
    "now_text",
    default=None,
    help="Treat this ISO date/datetime as now (default: the current time, UTC).",
)
@flag("--dry-run", help="List what would be pruned, delete nothing.")
@option("json", help="Print the results as JSON.")
@user_errors
def prune(paths: tuple[str, ...], now_text: str | None, dry_run: bool, as_json: bool) -> None:
    """Delete expired request payloads of ranking runs, keeping every digest.

    A payload expires at its capture time plus the run's declared retention (none without one);
    deletions are logged in payloads/pruned.jsonl and every hash stays, so a locked run still
    verifies. Exit 1 when a locked run no longer verifies after pruning.
    """
    from ..ranking import find_runs, prune_run

    runs = find_runs(list(paths) or ["runs"])
    done = [prune_run(r, _now(now_text), dry_run=dry_run) for r in runs]
    if as_json:
        echo_json([d.model_dump(mode="json") for d in done])
    else:
        click.echo(
            "\n".join(_pruned(done, dry_run)) or "no ranking runs with captured payloads found"
        )
    if any(d.lock_problems for d in done):
        raise SystemExit(ExitCode.FAILED)


def _pruned(done: list[Any], dry_run: bool) -> list[str]:
    lines = []
    for d in done:
        broken = f"; LOCK DOES NOT VERIFY ({len(d.lock_problems)} problem(s))"
        state = "" if not d.locked else broken if d.lock_problems else "; lock verifies"
        lines.append(
            f"{d.run_dir}: {'would prune' if dry_run else 'pruned'} {len(d.pruned)} payload(s),"
            f" kept {d.kept}, pruned earlier {d.already_pruned}{state}"
        )
        lines += ["  " + p.format() for p in d.lock_problems]
    return lines


def _now(text: str | None) -> datetime:
    """``--now`` as an aware datetime (UTC when it names no zone), or the current time."""
    if not text:
        return datetime.now(UTC)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        message, fix = f"{text!r} is not an ISO date or datetime", "e.g. --now 2027-01-31"
        raise refusal("invalid --now", "--now", "arguments", message, fix) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
