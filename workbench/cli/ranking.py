"""``workbench ranking``: the battery and its gate, reviewer calibration, fixture releases, replay,
verify; ``workbench prune``."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import click

from ..errors import Problem, WorkbenchError
from ..outcomes import ExitCode
from ..runs._options import RunOptions
from ._common import echo_json, user_errors
from ._run_options import run_option, run_options

if TYPE_CHECKING:
    from ..ranking import RankingHistoryEntry, RankingPolicy, ScalarCaseResult
    from ..ranking._battery import Plan

"""Exit code of a failed quality check (the gate's ``quality_failed``; a replay that reproduces a
failure)."""
DEFAULT_HISTORY_DIR = Path("runs/ranking/history")
DEFAULT_OVERRIDES = Path("data/policies/overrides.jsonl")


class _Battery(TypedDict):
    """The position-battery arguments shared by the run and its report."""

    plan: Plan
    max_exhaustive: int
    sample: int
    seed: int
    repeats: int


class _GateInputs(TypedDict):
    """What the ranking gate reads besides the results."""

    policy: RankingPolicy | None
    history: list[RankingHistoryEntry]
    overrides: list[Any]
    scalar: list[ScalarCaseResult] | None


class _DefaultGroup(click.Group):
    """A group whose default subcommand is ``run``: ``workbench ranking --candidate ...`` still
    works."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


_RANKING_HELP = (
    "Ranking judges: battery and gate (run, the default), reviewer agreement, fixture releases,"
    " replay, verify.\n"
    "\n"
    "\b\n"
    "workbench ranking run --candidate SPEC --fixtures FILE [--policy P]   battery, report, gate\n"
    "workbench ranking agreement --fixtures FILE                           "
    "reviewer-reviewer agreement\n"
    "workbench ranking freeze FILE --approver NAME                         "
    "freeze a fixture release\n"
    "workbench ranking history FILE                                        "
    "label history of a fixture file\n"
    "workbench ranking replay ... --case ID --repeat N                     "
    "replay one attempt from frozen inputs\n"
    "workbench ranking verify RUN_DIR                                      "
    "verify a locked ranking run\n"
)
"""``workbench ranking --help``: a table of the subcommands (kept as one string so its rows
stay aligned beyond 100 columns)."""


@click.group(cls=_DefaultGroup, help=_RANKING_HELP)
def ranking() -> None:
    """Ranking judges (help text: :data:`_RANKING_HELP`)."""


def _capture(
    policy: Any, capture: str | None, excerpts: tuple[str, ...], retention_days: int | None
) -> Any:
    from ..ranking import CaptureConfig

    given = capture is not None or excerpts or retention_days is not None
    if policy is not None:
        if given:
            raise WorkbenchError(
                "capture set twice",
                [
                    Problem(
                        location="--capture",
                        code="arguments",
                        message=(
                            f"the ranking policy {policy.label} declares the capture mode and"
                            " retention"
                        ),
                        fix=(
                            "drop --capture/--excerpt/--retention-days, or change the policy (a new"
                            " version)"
                        ),
                    )
                ],
            )
        return policy.capture
    mode = capture or "full"
    if mode == "full" and excerpts:
        raise WorkbenchError(
            "invalid capture",
            [
                Problem(
                    location="--excerpt",
                    code="arguments",
                    message="--excerpt is an allow-list for --capture digest_and_excerpts",
                    fix="add --capture digest_and_excerpts, or drop --excerpt",
                )
            ],
        )
    return CaptureConfig(
        mode=mode,
        excerpts=list(excerpts),
        retention_days=retention_days,
        declared_by="cli" if given else "default",
    )


@ranking.command("run")
@click.option(
    "--candidate",
    type=click.Path(path_type=str),
    default=None,
    help="Ranking candidate spec (kind ragas-ranking or ragas-ranking-function).",
)
@click.option(
    "--fixtures",
    required=True,
    type=click.Path(path_type=str),
    help="Ranking fixture file, e.g. data/ranking/<name>@<version>.yaml.",
)
@click.option(
    "--results",
    type=click.Path(path_type=str),
    default=None,
    help=(
        "Analyse these ranking results (imported or from an earlier run) instead of running a"
        " candidate."
    ),
)
@click.option(
    "--out",
    type=click.Path(path_type=str),
    default=None,
    help=(
        "Run directory (default runs/ranking/<candidate>/<fixtures>); the report and failure"
        " artifacts are written here."
    ),
)
@click.option(
    "--policy",
    type=click.Path(path_type=str),
    default=None,
    help=(
        "Ranking release policy (kind: ranking). Default: the built-in rules (see"
        " workbench.ranking.default_policy)."
    ),
)
@click.option(
    "--history",
    type=click.Path(path_type=str),
    default=None,
    help=(
        "Ranking history log (default runs/ranking/history/<fixture set>.jsonl): the last run and"
        " the last passing run are read from it, this run is appended."
    ),
)
@click.option(
    "--no-history",
    is_flag=True,
    help="Neither read nor append the history (no fixture-change or agreement-drop comparison).",
)
@click.option(
    "--overrides",
    type=click.Path(path_type=str),
    default=None,
    help=f"Override store (default {DEFAULT_OVERRIDES} when it exists).",
)
@click.option(
    "--scalar",
    type=click.Path(path_type=str),
    default=None,
    help=(
        "Per-case scalar gate outcomes (JSON Lines {case_id, passed, score}) to list beside the"
        " ranking outcome."
    ),
)
@click.option(
    "--plan",
    type=click.Choice(["exhaustive", "rotation"]),
    default="exhaustive",
    show_default=True,
    help=(
        "exhaustive: the position battery for every fixture; rotation: one seeded non-identity"
        " rotation per fixture, the battery for fixtures marked diagnostic."
    ),
)
@click.option(
    "--capture",
    type=click.Choice(["full", "digest_and_excerpts"]),
    default=None,
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
    default=None,
    help=(
        "Days request payloads are kept before `workbench prune` may delete them (without a"
        " policy)."
    ),
)
@click.option(
    "--lock",
    "lock",
    is_flag=True,
    help=(
        "Lock the run directory (ranking_lock.json) after the report: `workbench ranking verify`"
        " checks it, also after pruning."
    ),
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the versioned JSON report (workbench.ranking.RankingReport).",
)
@run_options("concurrency", "budget")
@click.option(
    "--max-exhaustive",
    type=click.IntRange(min=0),
    default=4,
    show_default=True,
    help="All permutations for fixtures with at most this many candidates.",
)
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Permutations per larger fixture (identity, rotations, then seeded random).",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the permutation sample and of the rotation plan.",
)
@click.option(
    "--repeats",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="Repeatability baseline: the identity order this many times (0: none).",
)
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
    plan: Plan,
    capture: str | None,
    excerpts: tuple[str, ...],
    retention_days: int | None,
    lock: bool,
    as_json: bool,
    options: RunOptions,
    max_exhaustive: int,
    sample: int,
    seed: int,
    repeats: int,
) -> None:
    """Run a ranking judge's position-bias battery over reviewed fixtures, report it and apply the
    ranking gate.

    Every fixture is judged under several presented orders (all permutations up to
    --max-exhaustive candidates, else a fixed-seed sample; with --plan rotation one seeded
    non-identity rotation, the full battery only for fixtures marked diagnostic) and,
    separately, in its identity order --repeats times. The judge sees neutral labels.

    The gate (--policy, or the built-in rules) blocks a must-win reversal only when it is
    confirmed on repeated runs; a single unconfirmed reversal, editorial drift and criterion
    leakage route to review; an agreement drop beyond the policy's threshold against the last
    passing run blocks. Exit 0 passed (or report-only), 1 quality failed, 3 incomplete, 4
    review required, 2 invalid input.
    """
    from ..ranking import (
        format_ranking,
        load_fixtures,
        load_ranking_policy,
        lock_ranking_run,
        position_battery,
        ranking_report,
        read_history,
        read_scalar,
        record_run,
        run_ranking_sync,
        write_ranking_artifacts,
    )

    if (candidate is None) == (results is None):
        raise WorkbenchError(
            "invalid arguments",
            [
                Problem(
                    location="--candidate/--results",
                    code="arguments",
                    message=(
                        "give exactly one of --candidate (run the battery) or --results (analyse"
                        " existing results)"
                    ),
                    fix="pass --candidate SPEC to run, or --results FILE to analyse",
                )
            ],
        )
    fixture_set = load_fixtures(fixtures)
    loaded_policy = load_ranking_policy(policy) if policy else None
    config = _capture(loaded_policy, capture, excerpts, retention_days)
    history_path = (
        None
        if no_history
        else Path(history)
        if history
        else DEFAULT_HISTORY_DIR / f"{fixture_set.name}.jsonl"
    )
    past = read_history(history_path)
    overrides_path = Path(overrides) if overrides else DEFAULT_OVERRIDES
    loaded_overrides: list[Any] = []
    if overrides or overrides_path.exists():
        from ..policy import load_overrides

        if overrides and not overrides_path.exists():
            raise WorkbenchError(
                "no overrides",
                [
                    Problem(
                        location=str(overrides_path),
                        code="overrides_missing",
                        message="the override store does not exist",
                        fix="point --overrides at an existing store, or drop it",
                    )
                ],
            )
        loaded_overrides = load_overrides(overrides_path)
    scalar_rows = read_scalar(scalar) if scalar else None
    battery: _Battery = {
        "plan": plan,
        "max_exhaustive": max_exhaustive,
        "sample": sample,
        "seed": seed,
        "repeats": repeats,
    }
    gate_inputs: _GateInputs = {
        "policy": loaded_policy,
        "history": past,
        "overrides": loaded_overrides,
        "scalar": scalar_rows,
    }
    if results is not None:
        report = ranking_report(fixture_set, results, **gate_inputs)
        out_dir = Path(out) if out else None
    else:
        from ..judges import kinds_where, load_candidate

        assert candidate is not None
        judge = load_candidate(candidate)
        if judge.spec.kind not in kinds_where(output="ranking"):
            raise WorkbenchError(
                "not a ranking candidate",
                [
                    Problem(
                        location=candidate,
                        code="not_ranking_kind",
                        message=f"kind {judge.spec.kind!r} is not a ranking judge",
                        fix=(
                            "use a ragas-ranking or ragas-ranking-function candidate; analyse"
                            " imported ranking results with --results"
                        ),
                    )
                ],
            )
        out_dir = (
            Path(out) if out else Path("runs") / "ranking" / judge.spec.label / fixture_set.label
        )
        if (out_dir / "ranking_lock.json").exists():
            raise WorkbenchError(
                "run locked",
                [
                    Problem(
                        location=str(out_dir),
                        code="run_locked",
                        message="the run directory is locked",
                        fix="use a new --out directory",
                    )
                ],
            )
        summary = run_ranking_sync(
            judge,
            fixture_set,
            out_dir,
            concurrency=options.concurrency,
            budget_usd=options.budget_usd,
            cache_dir=options.cache_dir,
            progress=options.progress,
            capture=config,
            candidate_path=candidate,
            **battery,
        )
        click.echo(
            f"{summary.judge}: {summary.status.upper()} - {summary.verdicts} answers,"
            f" {summary.errors} evaluator errors, {len(summary.unrun)} unrun of {summary.planned};"
            f" {summary.calls} calls, {summary.cache_hits} cached, {summary.resumed} already done;"
            f" cost ${summary.cost_usd:.4f}; results {summary.results_path}",
            err=True,
        )
        report = ranking_report(
            fixture_set,
            summary.results_path,
            planned=position_battery(fixture_set, **battery),
            **gate_inputs,
        )
    if out_dir is not None:
        paths = write_ranking_artifacts(report, out_dir)
        click.echo(f"report and {len(paths) - 1} failure artifact(s) in {out_dir}", err=True)
    if history_path is not None:
        record_run(history_path, report, fixture_set)
        click.echo(f"recorded in the ranking history {history_path}", err=True)
    if lock:
        if out_dir is None:
            raise WorkbenchError(
                "nothing to lock",
                [
                    Problem(
                        location="--lock",
                        code="arguments",
                        message="--lock needs a run directory",
                        fix="pass --out",
                    )
                ],
            )
        sealed = lock_ranking_run(out_dir, report.gate.outcome if report.gate else "unknown")
        click.echo(f"locked {out_dir} (ranking_lock.json {sealed.lock_sha256[:12]})", err=True)
    if as_json:
        echo_json(report.model_dump(mode="json"))
    else:
        click.echo(format_ranking(report))
    code = (
        report.gate.exit_code
        if report.gate
        else (ExitCode.OK if report.passed else ExitCode.FAILED)
    )
    if code:
        raise SystemExit(code)


@ranking.command("agreement")
@click.option(
    "--fixtures",
    required=True,
    type=click.Path(path_type=str),
    help="Ranking fixture file with reviewer orders (reviews:).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the versioned JSON report (workbench.ranking.ReviewerAgreementReport).",
)
@user_errors
def agreement(fixtures: str, as_json: bool) -> None:
    """Reviewer-reviewer agreement on the fixtures: pairwise agreement, Kendall's tau and top-1
    agreement.

    Per fixture, per slice and overall, with numerators and denominators, the disputed
    candidate pairs and whether each disagreement was adjudicated. A must-win fixture whose
    reviewers disagree on a must-win pair without an adjudication does not load (exit 2).
    """
    from ..ranking import format_reviewer_agreement, load_fixtures, reviewer_agreement

    report = reviewer_agreement(load_fixtures(fixtures))
    if as_json:
        echo_json(report.model_dump(mode="json"))
    else:
        click.echo(format_reviewer_agreement(report))


@ranking.command("freeze")
@click.argument("fixtures", type=click.Path(path_type=str))
@click.option("--approver", required=True, help="Who approves the release (a named person).")
@click.option("--reason", default="", help="Why the release is frozen (e.g. the review it closes).")
@user_errors
def freeze(fixtures: str, approver: str, reason: str) -> None:
    """Freeze a fixture file: write <name>@<version>.release.json with a hash per fixture.

    From then on an in-place change to the file is refused wherever it is loaded; a change goes
    in a new version (supersedes: + a changes: entry recording old order, new order, approver
    and reason). Refused when the file is already frozen or does not validate.
    """
    from ..ranking import freeze_fixtures, release_path

    record = freeze_fixtures(fixtures, approver=approver, reason=reason)
    click.echo(
        f"froze {record.name}@{record.version}: {len(record.fixtures)} fixture(s), file sha256"
        f" {record.file_sha256[:12]}, release {record.release_sha256[:12]} ->"
        f" {release_path(fixtures)}"
    )


@ranking.command("history")
@click.argument("fixtures", type=click.Path(path_type=str))
@click.option("--json", "as_json", is_flag=True, help="Print the chain as JSON.")
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
        frozen = (
            f"frozen by {v.frozen_by} on {v.frozen_at.date().isoformat()} (release"
            f" {v.release_sha256[:12]})"
            if v.frozen and v.frozen_at and v.release_sha256
            else "NOT frozen (draft)"
        )
        click.echo(
            f"{v.label}: {frozen}" + (f"; supersedes {v.supersedes}" if v.supersedes else "")
        )
        for c in v.changes:
            click.echo(
                f"  {c.case_id}: {c.kind}; {c.old_order} -> {c.new_order}; approved by {c.approver}"
                f" on {c.approved_on.isoformat()}: {c.reason}"
            )


@ranking.command("replay")
@click.option(
    "--candidate",
    required=True,
    type=click.Path(path_type=str),
    help="The ranking candidate spec of the failing run.",
)
@click.option(
    "--fixtures",
    required=True,
    type=click.Path(path_type=str),
    help="The fixture file of the failing run.",
)
@click.option("--case", "case_id", required=True, help="The fixture.")
@click.option(
    "--repeat",
    required=True,
    type=click.IntRange(min=0),
    help="The attempt's repeat index in the battery.",
)
@click.option(
    "--plan", type=click.Choice(["exhaustive", "rotation"]), default="exhaustive", show_default=True
)
@click.option("--max-exhaustive", type=click.IntRange(min=0), default=4, show_default=True)
@click.option("--sample", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--repeats", type=click.IntRange(min=0), default=3, show_default=True)
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
@click.option(
    "--out",
    type=click.Path(path_type=str),
    default=None,
    help=(
        "Where the replay is written (default"
        " runs/ranking/replay/<candidate>/<case>-r<repeat>-<n>)."
    ),
)
@user_errors
def replay(
    candidate: str,
    fixtures: str,
    case_id: str,
    repeat: int,
    plan: Plan,
    max_exhaustive: int,
    sample: int,
    seed: int,
    repeats: int,
    expect_fixtures_sha256: str | None,
    expect_fingerprint: str | None,
    out: str | None,
) -> None:
    """Replay one attempt of a ranking battery from frozen inputs: the same presentation, a fresh
    call (no cache).

    Failure artifacts print this command. Exit 0 when the replayed attempt passes its checks,
    1 when it fails them again (the failure reproduces), 5 on an evaluator error, 3 when no
    result was recorded, 2 when the inputs are not the frozen ones.
    """
    from ..judges import load_candidate
    from ..ranking import completeness, load_fixtures, position_battery, run_ranking_sync
    from ..runs import RunDir

    fixture_set = load_fixtures(fixtures)
    problems: list[Problem] = []
    if expect_fixtures_sha256 and fixture_set.dataset_sha256 != expect_fixtures_sha256:
        problems.append(
            Problem(
                location=fixtures,
                code="fixtures_changed",
                message=(
                    f"the fixture file's sha256 is {fixture_set.dataset_sha256[:12]}, the failing"
                    f" run used {expect_fixtures_sha256[:12]}"
                ),
                fix="replay against the fixture file version the run used (git checkout it)",
            )
        )
    judge = load_candidate(candidate)
    if expect_fingerprint and judge.identity.fingerprint() != expect_fingerprint:
        problems.append(
            Problem(
                location=candidate,
                code="candidate_changed",
                message=(
                    f"the candidate's fingerprint is {judge.identity.fingerprint()[:12]}, the"
                    f" failing run used {expect_fingerprint[:12]}"
                ),
                fix="replay with the candidate spec (and prompt, Ragas version) the run used",
            )
        )
    items = [
        i
        for i in position_battery(
            fixture_set,
            plan=plan,
            max_exhaustive=max_exhaustive,
            sample=sample,
            seed=seed,
            repeats=repeats,
        )
        if i.case_id == case_id and i.repeat == repeat
    ]
    if not items:
        problems.append(
            Problem(
                location="--case/--repeat",
                code="no_such_attempt",
                message=f"the battery has no attempt {case_id}#{repeat}",
                fix="copy --case and --repeat from the failure artifact",
            )
        )
    if problems:
        raise WorkbenchError("replay refused", problems)
    if out is None:
        base = Path("runs") / "ranking" / "replay" / judge.spec.label
        n = 1
        while (base / f"{case_id}-r{repeat}-{n}").exists():
            n += 1
        out = str(base / f"{case_id}-r{repeat}-{n}")
    run_ranking_sync(judge, fixture_set, out, items=items, cache_dir=False, progress=False)
    rows = [
        line.result
        for line in RunDir(out).read_results(required=True)
        if line.result.case_id == case_id and line.result.repeat == repeat
    ]
    fixture = fixture_set.by_id()[case_id]
    presented = items[0].presentation["presented_order"] if items[0].presentation else None
    click.echo(
        f"replayed {case_id}#{repeat} with {judge.spec.label} (no cache) into {out}: presented"
        f" {presented}"
    )
    if not rows:
        click.echo("no result was recorded (budget or the judge declined)")
        raise SystemExit(ExitCode.INCOMPLETE)
    r = rows[-1]
    if r.error is not None:
        click.echo(f"evaluator error {r.error.kind}: {r.error.message}; returned {r.order}")
        raise SystemExit(
            ExitCode.FAILED if r.error.kind == "invalid_ranking" else ExitCode.EVALUATOR_ERRORS
        )
    order = list(r.order or [])
    agreed, pairs = fixture.agreement(order)
    held = fixture.must_win_holds(order)
    check = completeness(fixture, r.rendered_request, r.presentation)
    click.echo(
        f"returned {order} (expected {list(fixture.expected_order)}); agreement {agreed}/{pairs};"
        f" must-win {fixture.must_win_expected()}: {'held' if held else 'REVERSED'}; request"
        f" complete={check.complete}; reason: {r.reason}"
    )
    if not held or agreed < pairs:
        raise SystemExit(ExitCode.FAILED)


@ranking.command("verify")
@click.argument("run_dir", type=click.Path(path_type=str))
@user_errors
def verify(run_dir: str) -> None:
    """Verify a locked ranking run: every hashed file, and every payload present-and-matching or
    pruned after expiry. Exit 0 or 1."""
    from ..ranking import verify_ranking_run

    problems = verify_ranking_run(run_dir)
    for p in problems:
        click.echo(p.format())
    if problems:
        click.echo(f"{run_dir}: {len(problems)} problem(s): NOT verified")
        raise SystemExit(ExitCode.FAILED)
    click.echo(
        f"{run_dir}: verified (every locked file matches; payloads present or pruned after expiry)"
    )


@click.command("prune")
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option(
    "--now",
    "now_text",
    default=None,
    help="Treat this ISO date/datetime as now (default: the current time, UTC).",
)
@click.option("--dry-run", is_flag=True, help="List what would be pruned, delete nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@user_errors
def prune(paths: tuple[str, ...], now_text: str | None, dry_run: bool, as_json: bool) -> None:
    """Delete expired request payloads of ranking runs (default: under runs/), keeping every digest.

    A payload expires at its capture time plus the run's declared retention (capture.json);
    none expires without a declared retention. Each deletion is appended to
    payloads/pruned.jsonl; results, the payload index and every hash stay, so a locked run still
    verifies. Exit 1 when a locked run no longer verifies after pruning.
    """
    from ..ranking import find_runs, prune_run

    now = datetime.now(UTC)
    if now_text:
        try:
            parsed = datetime.fromisoformat(now_text)
        except ValueError:
            raise WorkbenchError(
                "invalid --now",
                [
                    Problem(
                        location="--now",
                        code="arguments",
                        message=f"{now_text!r} is not an ISO date or datetime",
                        fix="e.g. --now 2027-01-31",
                    )
                ],
            ) from None
        now = parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    runs = find_runs(list(paths) or ["runs"])
    done = [prune_run(r, now, dry_run=dry_run) for r in runs]
    if as_json:
        echo_json([d.model_dump(mode="json") for d in done])
    else:
        if not runs:
            click.echo("no ranking runs with captured payloads found")
        for d in done:
            state = (
                ""
                if not d.locked
                else (
                    "; lock verifies"
                    if not d.lock_problems
                    else f"; LOCK DOES NOT VERIFY ({len(d.lock_problems)} problem(s))"
                )
            )
            click.echo(
                f"{d.run_dir}: {'would prune' if dry_run else 'pruned'} {len(d.pruned)} payload(s),"
                f" kept {d.kept}, pruned earlier {d.already_pruned}{state}"
            )
            for p in d.lock_problems:
                click.echo("  " + p.format())
    if any(d.lock_problems for d in done):
        raise SystemExit(ExitCode.FAILED)
