"""``workbench noise`` (score a pair suite) and its subcommands ``check``, ``freeze``, ``panel`` and
``override add``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal

import click

from ..errors import Problem, WorkbenchError, problem, refusal
from ..outcomes import ExitCode, exit_code, outcome_of
from ..runs import RunOptions
from ._common import echo_json, refuse_each, user_errors
from ._options import flag, option, path, refuse_sign_without_lock, show, shown
from ._run_options import engine, run_options
from .override import append, override_options

_PARTITIONS = ("development", "calibration", "held_out")
_DEFAULT_STORE = "data/policies/overrides.jsonl"


@click.group("noise", invoke_without_command=True)
@option(
    "candidate",
    help="A ragas-noise candidate spec, e.g. data/candidates/noise-judge@1.yaml.",
    required=False,
)
@path("--pairs", "pairs_path", help="Pair suite YAML, e.g. data/noise/support-noise@2.yaml.")
@option("out", help="Run directory (default runs/noise/<suite>/<candidate>).")
@option("json", help="Print the report as JSON (kind workbench.noise).")
@option(
    "partition",
    type=click.Choice(_PARTITIONS),
    help="Score the candidate pairs of this partition only (controls always run).",
    required=False,
)
@flag("--sentinels-only", help="Fast lane: score the controls and the frozen sentinel set only.")
@shown(
    "--repeat",
    type=click.IntRange(min=1),
    default=1,
    help="Score the frozen sentinel set this many times and report each pair's spread.",
)
@path(
    "--baseline",
    help="SPEC_OR_RESULTS: a baseline pair suite (scored now) or an earlier run's report.",
)
@path(
    "--companions",
    "companion_files",
    multiple=True,
    help="Companion-metric values (JSON Lines), joined by generation run id. Repeatable.",
)
@path(
    "--baseline-companions",
    "baseline_companion_files",
    multiple=True,
    help="Companion-metric values of the baseline suite's responses. Repeatable.",
)
@option(
    "overrides",
    "overrides_path",
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
        "help": "Concurrent pair members (default and maximum: the policy's, else 8).",
    },
    budget={"help": "Lower the policy's max_cost_usd for this invocation (never raise it)."},
    no_progress={"help": "Hide the progress bars."},
)
@option(
    "rerun_reason",
    help="Required when held-out pairs' content was scored before (recorded in the held-out"
    " ledger).",
)
@flag("--lock", help="Lock the run directory after the report.")
@option(
    "sign", help="With --lock: sign the lock with this Ed25519 private key (OpenSSH or PEM format)."
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
    rerun_reason: str | None,
    lock: bool,
    sign_key: str | None,
) -> None:
    """Score a noise-sensitivity pair suite with Ragas NoiseSensitivity (lower is better).

    Controls are scored first; if one does not separate, no candidate pair is scored.
    Re-running resumes without new calls. Held-out pairs are recorded in the project's held-out
    ledger before the first call; content scored before is refused without --rerun-reason.
    Exit 0 passed, 1 quality failed, 3 evaluation incomplete, 4 review required, 2 invalid input
    (an incompatible --baseline included).
    Subcommands: check, panel, override add.
    """
    if ctx.invoked_subcommand is not None:
        return
    _require_options(candidate=candidate, pairs=pairs_path)
    assert candidate is not None and pairs_path is not None
    from ..noise import lock_noise_run, run_noise_sync

    loaded, problems = _load_inputs(
        candidate, pairs_path, baseline, companion_files, baseline_companion_files, overrides_path
    )
    suite, judge = loaded.get("pairs"), loaded.get("candidate")
    problems += _request_problems(
        loaded, candidate, str(baseline), options, repeat, sentinels_only, partition
    )
    if problems or suite is None or judge is None:
        raise WorkbenchError("invalid input", problems)
    out_dir = Path(out) if out else Path("runs") / "noise" / suite.label / judge.spec.label
    signer = _locking(out_dir, lock, sign_key)
    run = run_noise_sync(
        judge,
        suite,
        out_dir,
        **{**engine(options), "progress": options.progress and not as_json},
        partition=partition,
        sentinels_only=sentinels_only,
        repeat=repeat,
        baseline=loaded.get("baseline_suite"),
        rerun_reason=rerun_reason,
    )
    if run.held_out_entry is not None:
        click.echo(f"held-out use recorded: ledger entry {run.held_out_entry}", err=True)
    report = _reports(loaded, run, out_dir, partition, sentinels_only, str(baseline))
    if lock:
        sealed = lock_noise_run(out_dir, report, signer=signer)
        click.echo(f"locked {out_dir} (lock.json {sealed.lock_sha256[:12]})", err=True)
    from ..noise import format_noise

    show(report, as_json, format_noise, lambda _: f"\nrun directory: {out_dir}")
    sys.exit(report.exit_code)


def _require_options(**values: str | None) -> None:
    refuse_each(
        "invalid input",
        [f"--{name}" for name, value in values.items() if not value],
        "option_missing",
        "{0} is required to score a suite",
        "give {0} (or use a subcommand: check, freeze, panel, override)",
    )


def _load_inputs(
    candidate: str,
    pairs_path: str,
    baseline: str | None,
    companion_files: tuple[str, ...],
    baseline_companion_files: tuple[str, ...],
    overrides_path: str | None,
) -> tuple[dict[str, Any], list[Problem]]:
    from ..judges import load_candidate
    from ..noise import load_baseline_report, load_companions, load_pairs
    from ..policy import load_overrides

    loaders: list[tuple[str, Any]] = [
        ("pairs", lambda: load_pairs(pairs_path)),
        ("candidate", lambda: load_candidate(candidate)),
    ]
    if baseline and Path(baseline).suffix in (".yaml", ".yml"):
        loaders.append(("baseline_suite", lambda: load_pairs(baseline)))
    elif baseline:
        loaders.append(("baseline_report", lambda: load_baseline_report(baseline)))
    if companion_files:
        loaders.append(("companions", lambda: load_companions(companion_files)))
    if baseline_companion_files:
        loaders.append(("baseline_companions", lambda: load_companions(baseline_companion_files)))
    store = overrides_path or (_DEFAULT_STORE if Path(_DEFAULT_STORE).is_file() else None)
    if store:
        loaders.append(("overrides", lambda: load_overrides(store)))
    loaded: dict[str, Any] = {}
    problems: list[Problem] = []
    for name, load in loaders:
        try:
            loaded[name] = load()
        except WorkbenchError as exc:
            problems += exc.problems
    return loaded, problems


def _request_problems(
    loaded: dict[str, Any],
    candidate: str,
    baseline: str,
    options: RunOptions,
    repeat: int,
    sentinels_only: bool,
    partition: str | None,
) -> list[Problem]:
    """The candidate's kind, the policy's bounds and an earlier run's compatibility as baseline."""
    from ..noise import KIND, check_baseline_report, check_run_request

    suite, judge = loaded.get("pairs"), loaded.get("candidate")
    if judge is not None and judge.spec.kind != KIND:
        kind = f"the candidate's kind is {judge.spec.kind!r}"
        return [problem(candidate, "wrong_kind", kind, f"use a candidate with kind: {KIND}")]
    if suite is None or judge is None:
        return []
    problems = check_run_request(
        suite,
        judge,
        concurrency=options.concurrency,
        budget_usd=options.budget_usd,
        repeat=repeat,
        sentinels_only=sentinels_only,
    )
    if "baseline_report" in loaded:
        problems += check_baseline_report(
            suite,
            judge.identity,
            loaded["baseline_report"],
            baseline_source=baseline,
            partition=partition,
            sentinels_only=sentinels_only,
        )
    return problems


def _reports(
    loaded: dict[str, Any],
    run: Any,
    out_dir: Path,
    partition: str | None,
    sentinels_only: bool,
    baseline: str,
) -> Any:
    """The suite's report (and the baseline suite's, when scored now), written beside the run, with
    the comparison when the candidate's controls passed."""
    from .._io import atomic_write_json
    from ..noise import NOISE_REPORT_FILE, noise_report, with_baseline

    suite = loaded["pairs"]
    join = _join(suite, loaded.get("companions"), partition, sentinels_only)
    report = noise_report(suite, run, companions=join, overrides=loaded.get("overrides", []))
    base_report = loaded.get("baseline_report")
    base_suite = loaded.get("baseline_suite")
    if base_suite is not None and run.baseline is not None:
        b_join = _join(base_suite, loaded.get("baseline_companions"), partition, sentinels_only)
        base_report = noise_report(base_suite, run.baseline, companions=b_join)
        atomic_write_json(
            out_dir / "baseline" / NOISE_REPORT_FILE, base_report.model_dump(mode="json")
        )
    atomic_write_json(out_dir / NOISE_REPORT_FILE, report.model_dump(mode="json"))
    if base_report is not None and report.candidates_interpreted:
        report = with_baseline(
            report,
            base_report,
            warn_delta=suite.policy.warn_delta,
            baseline_source=baseline,
            companions={m: c.direction for m, c in suite.policy.companions.items()},
        )
        atomic_write_json(out_dir / NOISE_REPORT_FILE, report.model_dump(mode="json"))
    elif base_report is not None:
        click.echo(
            "baseline comparison skipped: the candidate's controls did not pass, so its scores mean"
            " nothing",
            err=True,
        )
    return report


def _join(suite: Any, rows: Any, partition: str | None, sentinels_only: bool) -> Any:
    from ..noise import join_companions, selected_candidates

    if rows is None:
        return None
    candidates = selected_candidates(suite, partition, sentinels_only)
    return join_companions(candidates, list(suite.policy.companions), rows)


def _locking(out_dir: Path, lock: bool, sign_key: str | None) -> Any:
    """Refuse a locked run directory and ``--sign`` without ``--lock``; the signer of ``--sign``."""
    from .._lock import LOCK_FILE
    from .._signing import load_signer

    refuse_sign_without_lock(sign_key, lock, "invalid input")
    if (out_dir / LOCK_FILE).exists():
        message = "the run directory is locked: nothing may be added to it"
        fix = "use a new --out directory"
        raise refusal("run locked", str(out_dir / LOCK_FILE), "run_locked", message, fix)
    return load_signer(sign_key) if sign_key else None


@noise.command("check")
@path("--pairs", "pairs_path", required=True, help="Pair suite YAML.")
@option("json", help="Print the checks as JSON.")
@user_errors
def check(pairs_path: str, as_json: bool) -> None:
    """The deterministic lane, no model call: validation, traces, release and lineage, retrieval
    assertions, whether responses followed an injected instruction. Exit 0 passed, 1 an assertion
    failed, 3 evidence missing, 2 invalid input."""
    from ..noise import (
        check_injections,
        check_retrieval,
        injection_blockers,
        injection_lines,
        load_pairs,
        release_of,
        retrieval_blockers,
        validate_pairs,
    )

    suite = load_pairs(pairs_path)
    _, problems = validate_pairs(pairs_path)
    release = release_of(suite)
    pairs = [*suite.controls(), *suite.candidates()]
    rows, injected = check_retrieval(pairs), check_injections(pairs)
    blockers = [*retrieval_blockers(suite, rows), *injection_blockers(suite, injected)]
    code = exit_code(outcome_of((b.category for b in blockers), clear="passed"))
    if as_json:
        echo_json(
            {
                "suite": suite.label,
                "sha256": suite.sha256,
                "release_id": release.release_id if release else None,
                "warnings": [p.model_dump() for p in problems],
                "retrieval": [r.model_dump(mode="json") for r in rows],
                "injection": [r.model_dump(mode="json") for r in injected],
                "blockers": [b.model_dump(mode="json") for b in blockers],
                "exit_code": code,
            }
        )
        sys.exit(code)
    hint = "NOT FROZEN (workbench freeze FILE --approver NAME)"
    frozen = f"frozen as {release.release_id}" if release else hint
    click.echo(
        f"{suite.label}: valid; {len(suite.controls())} control pairs,"
        f" {len(suite.candidates())} candidate pairs, {len(suite.retired())} retired; {frozen}"
    )
    lines = [f"  warning: {p.format()}" for p in problems]
    passed = sum(1 for r in rows if r.status == "passed")
    lines.append(f"retrieval assertions (no model call): {passed} of {len(rows)} passed")
    lines += [
        f"  FAIL {r.pair_id}:{r.member} {r.check}: {r.code}: {r.detail}"
        for r in rows
        if r.status != "passed"
    ]
    lines += injection_lines(injected)[1:]
    lines += [f"  [{b.category}] {b.code}: {', '.join(b.case_ids)}" for b in blockers]
    click.echo("\n".join(lines))
    sys.exit(code)


@noise.command("panel")
@path("--pairs", "pairs_path", required=True, help="Pair suite YAML.")
@path(
    "--panel",
    "panel_path",
    required=True,
    help="Claim-level review panel YAML of the calibration partition.",
)
@option(
    "results",
    "results_path",
    help="A `workbench noise` run directory (e.g. run with --partition calibration).",
)
@option("json", help="Print the panel report as JSON.")
@user_errors
def panel(pairs_path: str, panel_path: str, results_path: str, as_json: bool) -> None:
    """Agreement between the metric's claim verdicts and the reviewers' (calibration partition).

    Reports agreement overall and per slice (with counts) and checks the panel's composition
    (listed reviewers, no author reviewing their own pair, two qualified reviewers per member).
    Exit 0 every member compared on a frozen, well-composed panel, 3 some member has no verdicts,
    4 the panel is not frozen or its composition fails, 2 invalid input.
    """
    from ..noise import format_panel, load_noise_run, load_pairs, load_panel, panel_agreement
    from ..results import read_results

    suite = load_pairs(pairs_path)
    claims = load_panel(panel_path, suite)
    run = load_noise_run(results_path)
    paths = run.results_paths() if run is not None else [Path(results_path)]
    results = [line.result for p in paths for line in read_results(p)]
    report = panel_agreement(suite, claims, results)
    show(report, as_json, format_panel)
    usable = report.release_id is not None and report.composition_ok
    sys.exit(
        ExitCode.INCOMPLETE
        if report.missing
        else ExitCode.OK
        if usable
        else ExitCode.REVIEW_REQUIRED
    )


@noise.command("thresholds")
@path("--pairs", "pairs_path", required=True, help="Pair suite YAML whose slices get limits.")
@path("--baseline", required=True, help="RUN: an earlier `workbench noise` run (or its report).")
@shown("--quantile", type=float, default=0.95, help="Quantile of the counted baseline values.")
@shown("--margin", type=float, default=0.0, help="Added to the quantile (loosens the limit).")
@flag("--delta", help="Also propose max_delta from the pair deltas (noisy - clean).")
@option("out", help="Write the slices block here (default: print it).")
@user_errors
def thresholds(
    pairs_path: str, baseline: str, quantile: float, margin: float, delta: bool, out: str | None
) -> None:
    """Propose each slice's max_score (and max_delta) from a baseline run's distribution, with
    the data it came from (derived_from: report, its sha256, judge, quantile, margin, n, value).
    Paste the block into a new suite version for review; loading checks it still fits."""
    import yaml

    from .._io import atomic_write_text
    from ..noise import load_baseline_report, load_pairs, propose_thresholds

    limits: tuple[Literal["max_score", "max_delta"], ...] = (
        ("max_score", "max_delta") if delta else ("max_score",)
    )
    slices, kept = propose_thresholds(
        load_pairs(pairs_path),
        load_baseline_report(baseline),
        baseline,
        quantile=quantile,
        margin=margin,
        limits=limits,
    )
    block = {"slices": {k: v.model_dump(mode="json", exclude_none=True) for k, v in slices.items()}}
    text = yaml.safe_dump(block, sort_keys=False, allow_unicode=True)
    if out:
        atomic_write_text(out, text)
        click.echo(f"wrote {out}", err=True)
    else:
        click.echo(text, nl=False)
    for line in kept:
        click.echo(f"kept: {line}", err=True)


@noise.command("panel-pack")
@path("--pairs", "pairs_path", required=True, help="Pair suite YAML.")
@option("out", required=True, help="Directory for review_pack.json and blind_key.json.")
@option("seed", help="Shuffle seed of the neutral labels.")
@user_errors
def panel_pack(pairs_path: str, out: str, seed: int) -> None:
    """Blinded claim-review material of the calibration pairs: neutral labels (R01 ...), no pair
    id, role, member, generator, trace or score. Give review_pack.json to the reviewers; keep
    blind_key.json (label -> pair:member) for `noise panel-unblind`."""
    from .._io import atomic_write_json
    from ..noise import load_pairs, review_pack

    pack, key = review_pack(load_pairs(pairs_path), seed=seed)
    directory = Path(out)
    atomic_write_json(directory / "review_pack.json", pack.model_dump(mode="json"))
    atomic_write_json(directory / "blind_key.json", key.model_dump(mode="json"))
    click.echo(
        f"{len(pack.items)} item(s) for review: {directory / 'review_pack.json'} (for reviewers);"
        f" key: {directory / 'blind_key.json'} (keep it from them)"
    )


@noise.command("panel-unblind")
@path("--key", "key_path", required=True, help="blind_key.json from `noise panel-pack`.")
@path("--reviews", "reviews_path", required=True, help="YAML: reviews: [{item, reviewer, claims}].")
@option("out", required=True, help="The panel YAML to write (<suite>.panel.yaml).")
@user_errors
def panel_unblind(key_path: str, reviews_path: str, out: str) -> None:
    """Turn reviewers' judgments by neutral label into the claim panel (pair ids and members)."""
    import yaml

    from .._io import atomic_write_text
    from ..noise import unblind_files

    panel = unblind_files(key_path, reviews_path)
    atomic_write_text(out, yaml.safe_dump(panel, sort_keys=False, allow_unicode=True))
    click.echo(f"wrote {out}: {len(panel['reviews'])} review(s) of {panel['suite']}")


@noise.group("override")
def override() -> None:
    """Overrides of noise blockers (the shared append-only override store)."""


@override.command("add")
@path("--pairs", "pairs_path", required=True, help="The suite version the override applies to.")
@override_options
@user_errors
def override_add(pairs_path: str, store: str, **fields: Any) -> None:
    """Append an override of noise blockers for one suite version. Refused (exit 2, nothing
    written): a code never emitted or never waivable, an unknown slice or pair, a blank field, an
    expiry not in the future."""
    from ..noise import load_pairs, noise_override_scope

    append(store, noise_override_scope(load_pairs(pairs_path)), fields, None)
