"""``workbench noise`` (score a pair suite) and its subcommands ``check``, ``freeze``, ``panel`` and
``override add``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ..errors import Problem, WorkbenchError, refusal
from ..outcomes import ExitCode
from ..runs._options import RunOptions
from ._common import echo_json, user_errors
from ._run_options import run_options

_PARTITIONS = ("development", "calibration", "held_out")
_DEFAULT_STORE = "data/policies/overrides.jsonl"


@click.group("noise", invoke_without_command=True)
@click.option(
    "--candidate",
    default=None,
    type=click.Path(path_type=str),
    help="A ragas-noise candidate spec, e.g. data/candidates/noise-judge@1.yaml.",
)
@click.option(
    "--pairs",
    "pairs_path",
    default=None,
    type=click.Path(path_type=str),
    help=(
        "Pair suite YAML (policy, manifest, controls, candidates, slice limits), e.g."
        " data/noise/support-noise@2.yaml."
    ),
)
@click.option(
    "--out",
    default=None,
    type=click.Path(path_type=str),
    help=(
        "Run directory (default runs/noise/<suite>/<candidate>): controls/, candidates/, repeats/,"
        " baseline/, noise_run.json, noise_report.json."
    ),
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the report as JSON (kind workbench.noise)."
)
@click.option(
    "--partition",
    type=click.Choice(_PARTITIONS),
    default=None,
    help=(
        "Score the candidate pairs of this partition only (controls always run). Default: every"
        " partition."
    ),
)
@click.option(
    "--sentinels-only",
    is_flag=True,
    help="Fast lane: score the controls and the frozen sentinel set only.",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help=(
        "Score the frozen sentinel set this many times and report each pair's spread (repeats never"
        " replace the main scores)."
    ),
)
@click.option(
    "--baseline",
    default=None,
    type=click.Path(path_type=str),
    help=(
        "SPEC_OR_RESULTS: a baseline pair suite on the same frozen pairs (scored now by the same"
        " evaluator) or an earlier `workbench noise` run directory / noise_report.json."
    ),
)
@click.option(
    "--companions",
    "companion_files",
    multiple=True,
    type=click.Path(path_type=str),
    help=(
        "Companion-metric values (JSON Lines {metric, run_id, case_id, value}), joined by"
        " generation run id. Repeatable."
    ),
)
@click.option(
    "--baseline-companions",
    "baseline_companion_files",
    multiple=True,
    type=click.Path(path_type=str),
    help=(
        "Companion-metric values of the baseline suite's responses (with a SPEC --baseline)."
        " Repeatable."
    ),
)
@click.option(
    "--overrides",
    "overrides_path",
    default=None,
    type=click.Path(path_type=str),
    help=f"Override store applied to this suite version (default {_DEFAULT_STORE} when it exists).",
)
@run_options(
    "concurrency",
    "budget",
    "cache",
    "no_cache",
    "no_progress",
    concurrency={
        "default": None,
        "show_default": False,
        "help": (
            "Concurrent pair members in flight (default and maximum: the policy's max_concurrency,"
            " else 8)."
        ),
    },
    budget={"help": "Lower the policy's max_cost_usd for this invocation (never raise it)."},
    no_progress={"help": "Hide the progress bars."},
)
@click.option(
    "--lock",
    "lock",
    is_flag=True,
    help=(
        "Lock the run directory after the report (lock.json, the one lock format of every"
        " report, and report.html): `workbench verify OUT` checks it; a locked run takes no"
        " further scoring."
    ),
)
@click.option(
    "--sign",
    "sign_key",
    default=None,
    type=click.Path(path_type=str),
    help="With --lock: sign the lock with this Ed25519 private key (OpenSSH or PEM format).",
)
@click.pass_context
@user_errors
def noise(
    ctx: click.Context,
    candidate: str | None,
    pairs_path: str | None,
    out: str | None,
    as_json: bool,
    partition: str | None,
    sentinels_only: bool,
    repeat: int,
    baseline: str | None,
    companion_files: tuple[str, ...],
    baseline_companion_files: tuple[str, ...],
    overrides_path: str | None,
    options: RunOptions,
    lock: bool,
    sign_key: str | None,
) -> None:
    """Score a noise-sensitivity pair suite with Ragas NoiseSensitivity (lower is better).

    Every pair is validated first (every problem at once, exit 2), the policy bounds the run
    (budget, case limit, concurrency, retries) and a frozen suite must be unchanged.
    Retrieval assertions run before any model call; failing pairs are not scored. Control,
    adversarial and reference-defect pairs are scored first; if a control does not separate
    (or was not run), no candidate pair is scored. Re-running resumes without new calls.
    Exit 0 passed, 1 quality failed, 3 evaluation incomplete, 4 review required, 2 invalid
    input (including an incompatible --baseline, with the reason).

    Subcommands: check (deterministic lane, no model call), freeze (a suite release),
    panel (claim-level agreement on the calibration partition), override add.
    """
    if ctx.invoked_subcommand is not None:
        return
    missing = [
        Problem(
            location=f"--{name}",
            code="option_missing",
            message=f"--{name} is required to score a suite",
            fix=f"give --{name} (or use a subcommand: check, freeze, panel, override)",
        )
        for name, value in (("candidate", candidate), ("pairs", pairs_path))
        if not value
    ]
    if missing:
        raise WorkbenchError("invalid input", missing)
    assert candidate is not None and pairs_path is not None
    from .._io import atomic_write_json
    from ..judges import load_candidate
    from ..noise import (
        KIND,
        NOISE_REPORT_FILE,
        check_run_request,
        format_noise,
        join_companions,
        load_baseline_report,
        load_companions,
        load_pairs,
        noise_report,
        run_noise_sync,
        selected_candidates,
        with_baseline,
    )
    from ..noise._compare import check_baseline_report
    from ..policy import load_overrides

    problems: list[Problem] = []
    suite = judge = base_suite = base_report = None
    rows: list[Any] = []
    loaders: list[tuple[str, Any]] = [
        ("pairs", lambda: load_pairs(pairs_path)),
        ("candidate", lambda: load_candidate(candidate)),
    ]
    if baseline:
        is_spec = Path(baseline).suffix in (".yaml", ".yml")
        loaders.append(
            (
                "baseline",
                (lambda: load_pairs(baseline))
                if is_spec
                else (lambda: load_baseline_report(baseline)),
            )
        )
    if companion_files:
        loaders.append(("companions", lambda: load_companions(companion_files)))
    if baseline_companion_files:
        loaders.append(("baseline_companions", lambda: load_companions(baseline_companion_files)))
    store = overrides_path or (_DEFAULT_STORE if Path(_DEFAULT_STORE).is_file() else None)
    if store:
        loaders.append(("overrides", lambda: load_overrides(store)))
    loaded: dict[str, Any] = {}
    for name, load in loaders:
        try:
            loaded[name] = load()
        except WorkbenchError as exc:
            problems += exc.problems
    suite, judge = loaded.get("pairs"), loaded.get("candidate")
    rows = loaded.get("companions", [])
    overrides = loaded.get("overrides", [])
    if baseline and "baseline" in loaded:
        if Path(baseline).suffix in (".yaml", ".yml"):
            base_suite = loaded["baseline"]
        else:
            base_report = loaded["baseline"]
    if judge is not None and judge.spec.kind != KIND:
        problems.append(
            Problem(
                location=candidate,
                code="wrong_kind",
                message=f"the candidate's kind is {judge.spec.kind!r}",
                fix=f"use a candidate with kind: {KIND}",
            )
        )
    if suite is not None and judge is not None and judge.spec.kind == KIND:
        problems += check_run_request(
            suite,
            judge,
            concurrency=options.concurrency,
            budget_usd=options.budget_usd,
            repeat=repeat,
            sentinels_only=sentinels_only,
        )
        if base_report is not None:
            problems += check_baseline_report(
                suite,
                judge.identity,
                base_report,
                baseline_source=str(baseline),
                partition=partition,
                sentinels_only=sentinels_only,
            )
    if problems or suite is None or judge is None:
        raise WorkbenchError("invalid input", problems)
    out_dir = Path(out) if out else Path("runs") / "noise" / suite.label / judge.spec.label
    signer = _locking(out_dir, lock, sign_key)
    run = run_noise_sync(
        judge,
        suite,
        out_dir,
        concurrency=options.concurrency,
        budget_usd=options.budget_usd,
        partition=partition,
        sentinels_only=sentinels_only,
        repeat=repeat,
        baseline=base_suite,
        cache_dir=options.cache_dir,
        progress=options.progress and not as_json,
    )
    metrics = list(suite.policy.companions)
    join = (
        join_companions(selected_candidates(suite, partition, sentinels_only), metrics, rows)
        if companion_files
        else None
    )
    report = noise_report(suite, run, companions=join, overrides=overrides)
    if base_suite is not None and run.baseline is not None:
        b_rows = loaded.get("baseline_companions", [])
        b_join = (
            join_companions(
                selected_candidates(base_suite, partition, sentinels_only), metrics, b_rows
            )
            if baseline_companion_files
            else None
        )
        base_report = noise_report(base_suite, run.baseline, companions=b_join)
        atomic_write_json(
            out_dir / "baseline" / NOISE_REPORT_FILE, base_report.model_dump(mode="json")
        )
    atomic_write_json(out_dir / NOISE_REPORT_FILE, report.model_dump(mode="json"))
    if base_report is not None and report.candidates_interpreted:
        # after the run: only the candidate's own scores can still make the sides incompatible
        report = with_baseline(
            report,
            base_report,
            warn_delta=suite.policy.warn_delta,
            baseline_source=str(baseline),
            companions={m: c.direction for m, c in suite.policy.companions.items()},
        )
        atomic_write_json(out_dir / NOISE_REPORT_FILE, report.model_dump(mode="json"))
    elif base_report is not None:
        click.echo(
            "baseline comparison skipped: the candidate's controls did not pass, so its scores mean"
            " nothing",
            err=True,
        )
    if lock:
        from ..noise._present import lock_noise_run

        sealed = lock_noise_run(out_dir, report, signer=signer)
        click.echo(f"locked {out_dir} (lock.json {sealed.lock_sha256[:12]})", err=True)
    if as_json:
        echo_json(report.model_dump(mode="json"))
    else:
        click.echo(format_noise(report))
        click.echo(f"\nrun directory: {out_dir}")
    sys.exit(report.exit_code)


def _locking(out_dir: Path, lock: bool, sign_key: str | None) -> Any:
    """Refuse a locked run directory (a locked run takes no further scoring) and ``--sign``
    without ``--lock``; the signer of ``--sign``, loaded before any call."""
    from .._lock import LOCK_FILE
    from .._signing import load_signer

    if sign_key and not lock:
        raise refusal(
            "invalid input",
            "--sign",
            "sign_without_lock",
            "--sign signs the run's lock, but --lock was not given",
            "add --lock, or drop --sign",
        )
    if (out_dir / LOCK_FILE).exists():
        raise refusal(
            "run locked",
            str(out_dir / LOCK_FILE),
            "run_locked",
            "the run directory is locked: nothing may be added to it",
            "use a new --out directory",
        )
    return load_signer(sign_key) if sign_key else None


@noise.command("check")
@click.option(
    "--pairs", "pairs_path", required=True, type=click.Path(path_type=str), help="Pair suite YAML."
)
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
@user_errors
def check(pairs_path: str, as_json: bool) -> None:
    """The deterministic lane, no model call: validation, traces, release and lineage, retrieval
    assertions.

    Exit 0 every check passed, 1 a retrieval assertion failed, 3 retrieval evidence is
    missing, 2 invalid input (including a frozen suite changed in place).
    """
    from ..noise import (
        check_lineage,
        check_retrieval,
        load_pairs,
        load_releases,
        release_of,
        releases_path,
        retrieval_blockers,
        validate_pairs,
    )

    suite = load_pairs(pairs_path)
    _, problems = validate_pairs(pairs_path)
    release = release_of(suite)
    lineage = check_lineage(suite, load_releases(releases_path(suite)))
    if lineage:
        raise WorkbenchError(f"{suite.label}: breaks the lineage of its frozen releases", lineage)
    rows = check_retrieval([*suite.controls(), *suite.candidates()])
    blockers = retrieval_blockers(suite, rows)
    code = (
        ExitCode.INCOMPLETE
        if any(b.category == "incomplete" for b in blockers)
        else (ExitCode.FAILED if blockers else ExitCode.OK)
    )
    if as_json:
        echo_json(
            {
                "suite": suite.label,
                "sha256": suite.sha256,
                "release_id": release.release_id if release else None,
                "warnings": [p.model_dump() for p in problems],
                "retrieval": [r.model_dump(mode="json") for r in rows],
                "blockers": [b.model_dump(mode="json") for b in blockers],
                "exit_code": code,
            }
        )
    else:
        click.echo(
            f"{suite.label}: valid; {len(suite.controls())} control pairs,"
            f" {len(suite.candidates())} candidate pairs, {len(suite.retired())} retired; "
            + (
                f"frozen as {release.release_id}"
                if release
                else "NOT FROZEN (workbench noise freeze)"
            )
        )
        for p in problems:
            click.echo(f"  warning: {p.format()}")
        click.echo(
            f"retrieval assertions (no model call): {sum(1 for r in rows if r.status == 'passed')}"
            f" of {len(rows)} passed"
        )
        for r in rows:
            if r.status != "passed":
                click.echo(f"  FAIL {r.pair_id}:{r.member} {r.check}: {r.code}: {r.detail}")
        for b in blockers:
            click.echo(f"  [{b.category}] {b.code}: {', '.join(b.case_ids)}")
    sys.exit(code)


@noise.command("freeze")
@click.option(
    "--pairs",
    "pairs_path",
    required=True,
    type=click.Path(path_type=str),
    help="Pair suite YAML to freeze.",
)
@click.option("--by", "by", required=True, help="Who freezes the release.")
@click.option("--note", default=None, help="Why this release.")
@user_errors
def freeze(pairs_path: str, by: str, note: str | None) -> None:
    """Freeze a suite release (hashes, retirements, sentinels, evidence manifest) into
    releases.jsonl beside it.

    Refused (exit 2): an in-place change to a frozen version, a deleted or changed pair of an
    earlier release, a retired pair made active again, a broken release log.
    """
    from ..noise import freeze_suite, load_pairs, releases_path

    suite = load_pairs(pairs_path)
    release, new = freeze_suite(suite, by=by, note=note)
    state = "frozen" if new else "already frozen"
    click.echo(
        f"{suite.label} {state}: {release.release_id} (sha256 {release.suite_sha256[:12]},"
        f" {len(release.pairs)} pairs,"
        f" {sum(1 for p in release.pairs.values() if p.status == 'retired')} retired, sentinels"
        f" {', '.join(release.sentinels) or '-'}) in {releases_path(suite)}"
    )


@noise.command("panel")
@click.option(
    "--pairs", "pairs_path", required=True, type=click.Path(path_type=str), help="Pair suite YAML."
)
@click.option(
    "--panel",
    "panel_path",
    required=True,
    type=click.Path(path_type=str),
    help="Claim-level review panel YAML of the calibration partition.",
)
@click.option(
    "--results",
    "results_path",
    required=True,
    type=click.Path(path_type=str),
    help="A `workbench noise` run directory (e.g. run with --partition calibration).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the panel report as JSON.")
@user_errors
def panel(pairs_path: str, panel_path: str, results_path: str, as_json: bool) -> None:
    """Agreement between the metric's claim verdicts and the reviewers' (calibration partition).

    Exit 0 when every reviewed member has metric claim verdicts, 3 when some do not (never
    counted as agreement), 2 invalid input.
    """
    from ..noise import format_panel, load_noise_run, load_pairs, load_panel, panel_agreement
    from ..results import read_results

    suite = load_pairs(pairs_path)
    claims = load_panel(panel_path, suite)
    run = load_noise_run(results_path)
    paths = run.results_paths() if run is not None else [Path(results_path)]
    results = [line.result for p in paths for line in read_results(p)]
    report = panel_agreement(suite, claims, results)
    if as_json:
        echo_json(report.model_dump(mode="json"))
    else:
        click.echo(format_panel(report))
    sys.exit(ExitCode.INCOMPLETE if report.missing else ExitCode.OK)


@noise.group("override")
def override() -> None:
    """Overrides of noise blockers (the shared append-only override store)."""


@override.command("add")
@click.option(
    "--pairs",
    "pairs_path",
    required=True,
    type=click.Path(path_type=str),
    help="The suite version (its name@version is the policy the override applies to).",
)
@click.option("--approver", required=True, help="The named owner approving the waiver.")
@click.option(
    "--reason",
    required=True,
    help="Case-level rationale: why the blocker is acceptable, with the evidence reviewed.",
)
@click.option(
    "--expires", required=True, help="Expiry: YYYY-MM-DD (00:00 UTC that day) or an ISO datetime."
)
@click.option(
    "--follow-up",
    "follow_up",
    required=True,
    help="Ticket or action that removes the need for the override.",
)
@click.option(
    "--code",
    "codes",
    multiple=True,
    required=True,
    help="Noise blocker code it may waive (repeatable).",
)
@click.option("--slice", "slices", multiple=True, help="Slice it covers (repeatable).")
@click.option("--case", "case_ids", multiple=True, help="Pair id reviewed one by one (repeatable).")
@click.option(
    "--candidate-fingerprint", default=None, help="Only results of this judge fingerprint."
)
@click.option(
    "--store",
    type=click.Path(path_type=str),
    default=_DEFAULT_STORE,
    show_default=True,
    help="Override store (append-only JSON Lines).",
)
@user_errors
def override_add(
    pairs_path: str,
    approver: str,
    reason: str,
    expires: str,
    follow_up: str,
    codes: tuple[str, ...],
    slices: tuple[str, ...],
    case_ids: tuple[str, ...],
    candidate_fingerprint: str | None,
    store: str,
) -> None:
    """Append an override of noise blockers for one suite version.

    Refused (exit 2, nothing written): a code `workbench noise` never emits, a code never
    waivable (missing evidence, cross-tenant retrieval, absent retrieval evidence), an unknown
    slice or pair, a blank approver, reason or follow-up, an expiry not in the future.
    """
    from ..noise import add_noise_override, load_pairs

    suite = load_pairs(pairs_path)
    record = add_noise_override(
        store,
        suite,
        approver=approver,
        reason=reason,
        expires_at=expires,
        follow_up=follow_up,
        codes=codes,
        slices=slices,
        case_ids=case_ids,
        candidate_fingerprint=candidate_fingerprint,
    )
    click.echo(
        f"{record.override_id}: {record.policy}, codes {', '.join(record.codes)}, expires"
        f" {record.expires_at.isoformat()}, approver {record.approver}, follow-up"
        f" {record.follow_up}; appended to {store}"
    )
