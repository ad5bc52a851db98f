"""``workbench ci sentinel --since REF``: judge-backed checks of what a change affects, under a cap.

1. **What changed**: ``git diff --name-only`` from the merge base of REF and ``HEAD`` (for a
   pull request, the branch point), plus untracked files (:mod:`._git`).
2. **Which candidates it affects** (:func:`affected_candidates`): a candidate is affected when
   its spec, its prompt file, the module of its ``function``, or its imported results file
   changed; a ``ragas-llm`` or ``ragas-function`` candidate also when the lane's gold
   ``rubric.yaml`` or ``sentinels.yaml``, the control suite, or a file matching
   ``ci: sentinel: judge_code`` in ``workbench.yaml`` changed.
3. **The cap**: the policy's ``ci_budget_usd`` (``--budget-usd`` may lower it, never raise it;
   neither: refused). Every planned call of every run (controls, sentinels, baselines) is
   priced with the engine's reservations first; an estimate above the cap stops the lane
   before any call (incomplete, exit 3). Runs then go one after another, each under what is
   left of the cap.
4. **Controls**: each affected ``ragas-llm``/``ragas-function`` candidate runs the policy's
   control suite (no cache): any failed control fails the lane, unless a reviewed
   expected-failure entry states exactly that failure.
5. **Sentinels**: it runs the gold's ``sentinels.yaml`` cases (no cache) and compares each
   verdict with a baseline, in this order: a baseline recorded in the drift log beside the
   gold for the candidate's current fingerprint (``workbench drift --record-baseline``); one
   recorded for the candidate as it was at REF (for a candidate added since REF: its
   ``parent`` at REF); else the REF version run now on the sentinels, when only data files
   changed (spec, prompt, rubric, sentinels, controls: a changed function module or judge code
   cannot be rebuilt as it was). No baseline: incomplete. Any changed verdict is sentinel
   drift (exit 4, review): to accept an intended change, review it and record the new
   baseline (``workbench drift --candidate SPEC --gold G --record-baseline``, commit the drift
   log).
6. An affected candidate of another kind (ranking, noise, imported) is not checked by this
   lane: incomplete, with the command that checks it.

Exit code: 2 invalid input, else 3 incomplete, else 1 a control failed, else 4 sentinel
drift, else 0. The lane prints its cost and tokens; nothing is written beside the gold.
"""

from __future__ import annotations

import asyncio
import fnmatch
import importlib.util
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from .._io import atomic_write_json, sha256_text
from .._record import LooseRecord as _Model
from ..errors import Problem, WorkbenchError
from ..judges import kind_info, kinds_where
from ._contracts import (
    EXIT_CODES,
    Outcome,
    control_check,
    invocation_dir,
    lane_outcome,
)
from ._expected import apply_expected_failures
from ._git import Changes, changed_since, show_at
from ._junit import CheckResult
from ._project import CONFIG_FILE, Inventory, discover

SENTINEL_LANE_SCHEMA_VERSION = 1
REPORT_FILE = "sentinel.json"
RUNNABLE_KINDS: tuple[str, ...] = kinds_where(output="label", replayed=False)
"""Kinds the sentinel lane runs on sentinels and controls."""


class AffectedCandidate(_Model):
    """A candidate the change affects, and why."""

    candidate: str
    """``name@version``."""
    spec: str
    """The spec file, relative to the project root."""
    kind: str
    """Its judge kind."""
    covered: bool
    """Whether this lane runs it (``ragas-llm``, ``ragas-function``)."""
    reasons: list[str]
    """The changed files that affect it, each with its role (``spec``, ``prompt``,
    ``function module``, ``rubric``, ``sentinels``, ``controls``, ``judge code`` ...)."""


class LaneRun(_Model):
    """One run the lane made."""

    candidate: str
    """``name@version`` of the judge run (``... at <ref>`` for a baseline of the old version)."""
    purpose: Literal["controls", "sentinels", "baseline"]
    """What it was for."""
    run_dir: str
    """Its run directory (manifest, every attempt, ``run.json``)."""
    status: str
    """``complete`` or ``incomplete``."""
    stop_reason: str | None
    """Why it stopped early, if it did."""
    calls: int
    """Judge calls made (retries included)."""
    cost_usd: float
    """Spend recorded."""
    tokens_in: int
    """Prompt tokens reported."""
    tokens_out: int
    """Completion tokens reported."""


class SentinelLaneReport(_Model):
    """What ``workbench ci sentinel`` did (``--json``, and ``sentinel.json`` in its run
    directory)."""

    schema_version: int = SENTINEL_LANE_SCHEMA_VERSION
    """Report format version."""
    kind: Literal["workbench.ci.sentinel"] = "workbench.ci.sentinel"
    """Report kind."""
    project: str
    """The project root."""
    since: str
    """The ref given to ``--since``."""
    since_commit: str
    """The commit compared with: the merge base of the ref and ``HEAD``."""
    changed_files: list[str]
    """Every changed file (relative to the repository top level)."""
    affected: list[AffectedCandidate]
    """The candidates the change affects."""
    removed: list[str]
    """Candidate specs deleted since the ref (nothing to run)."""
    gold: str | None
    """The gold dataset whose sentinels ran."""
    sentinels: str | None
    """The sentinel file."""
    policy: str | None
    """The policy that capped the job."""
    controls_suite: str | None
    """The control suite run."""
    budget_usd: float | None
    """The per-job cap the lane ran under (None when nothing needed one)."""
    budget_source: str | None
    """``policy ci_budget_usd`` or ``--budget-usd`` (lower than the policy's)."""
    estimate_usd: float
    """The reservations of every planned call, priced before any call."""
    cost_usd: float
    """Spend recorded by every run of the lane."""
    tokens_in: int
    """Prompt tokens, every run."""
    tokens_out: int
    """Completion tokens, every run."""
    calls: int
    """Judge calls, every run (retries included)."""
    runs: list[LaneRun]
    """Each run made."""
    checks: list[CheckResult]
    """Every check (JUnit testcases)."""
    outcome: Outcome
    """``passed``, ``failed`` (exit 1), ``contract_problems`` (2), ``incomplete`` (3) or
    ``review_required`` (4: sentinel drift)."""
    exit_code: int
    """The process exit code."""
    run_dir: str
    """Where the lane's runs and this report were written: a new directory under ``--out``
    (default ``runs/ci/sentinel``) per invocation."""
    evaluated_at: datetime
    """When (UTC)."""


class LaneRefused(WorkbenchError):
    """The lane stopped before any call: its checks say why (exit 2 or 3)."""

    def __init__(self, summary: str, problems: list[Problem], report: SentinelLaneReport) -> None:
        super().__init__(summary, problems)
        self.report = report


# ------------------------------------------------------------------------------ affected


def _module_file(function: str | None) -> Path | None:
    if not function or ":" not in function:
        return None
    try:
        spec = importlib.util.find_spec(function.partition(":")[0])
    except (ImportError, ValueError):
        return None
    return (
        Path(spec.origin).resolve()
        if spec is not None and spec.origin and spec.origin.endswith(".py")
        else None
    )


def own_files(spec: Any, spec_path: Path) -> dict[Path, str]:
    """The files that make up one candidate: spec, prompt file, function module, results file."""
    out: dict[Path, str] = {spec_path.resolve(): "spec"}
    if spec.prompt_file:
        out[(spec_path.parent / spec.prompt_file).resolve()] = "prompt"
    module = _module_file(spec.function)
    if module is not None:
        out[module] = "function module"
    if spec.results:
        out[(spec_path.parent / spec.results).resolve()] = "results"
    return out


@dataclass
class _Candidate:
    path: Path
    spec: Any
    reasons: list[str]
    code_changed: bool
    judge: Any = None


@dataclass
class _Plan:
    candidate: _Candidate
    controls: list[Any] = field(default_factory=list)
    sentinels: list[Any] = field(default_factory=list)
    baseline_judge: Any = None
    baseline_label: str | None = None
    baseline: tuple[Any, dict[str, Any]] | None = None
    no_baseline: str | None = None


def affected_candidates(
    inv: Inventory, changes: Changes, shared: dict[Path, str]
) -> tuple[list[_Candidate], list[str], list[CheckResult]]:
    """The affected candidates, the specs deleted since the ref, and a contract check per spec that
    does not load."""
    from ..judges import load_spec

    changed = changes.absolute()
    code_globs = inv.config.sentinel.judge_code
    code_hits = sorted(f for f in changes.files if any(fnmatch.fnmatch(f, g) for g in code_globs))
    out: list[_Candidate] = []
    checks: list[CheckResult] = []
    for path in inv.candidates:
        try:
            spec, _ = load_spec(path)
        except WorkbenchError as exc:
            if path.resolve() in changed:
                checks.append(
                    CheckResult(
                        group="candidates",
                        name=inv.rel(path),
                        status="failed",
                        category="contract",
                        code=exc.problems[0].code if exc.problems else "candidate_invalid",
                        message=exc.summary,
                        details=[p.format() for p in exc.problems],
                    )
                )
            continue
        files = own_files(spec, path)
        reasons = [f"{role}: {inv.rel(f)}" for f, role in files.items() if f in changed]
        code_changed = any(role == "function module" and f in changed for f, role in files.items())
        if spec.kind in RUNNABLE_KINDS:
            reasons += [f"{role}: {inv.rel(f)}" for f, role in shared.items() if f in changed]
            reasons += [f"judge code: {f}" for f in code_hits]
            code_changed = code_changed or bool(code_hits)
        if reasons:
            out.append(_Candidate(path=path, spec=spec, reasons=reasons, code_changed=code_changed))
    present = {p.resolve() for p in inv.candidates}
    candidate_dirs = {p.parent.resolve() for p in inv.candidates} | {
        (inv.root / "data" / "candidates").resolve()
    }
    removed = sorted(
        f
        for f in changes.files
        if f.endswith(".yaml")
        and (changes.top / f).resolve().parent in candidate_dirs
        and (changes.top / f).resolve() not in present
        and not (changes.top / f).exists()
    )
    return out, removed, checks


# ------------------------------------------------------------------------------ gold, policy, cap


def _resolve_gold(inv: Inventory, gold: str | None) -> Path:
    from ..repeatability import SENTINELS_FILE

    if gold:
        return Path(gold)
    if inv.config.sentinel.gold:
        return inv.root / inv.config.sentinel.gold
    with_sentinels = [g for g in inv.gold if (g / SENTINELS_FILE).is_file()]
    if len(with_sentinels) != 1:
        found = ", ".join(inv.rel(g) for g in with_sentinels) or "none"
        raise WorkbenchError(
            "no sentinel set",
            [
                Problem(
                    location="--gold",
                    code="sentinel_gold_ambiguous",
                    message=(
                        f"{len(with_sentinels)} gold datasets have a {SENTINELS_FILE} ({found})"
                    ),
                    fix=f"give --gold, or set ci: sentinel: gold in {CONFIG_FILE}",
                )
            ],
        )
    return with_sentinels[0]


def _resolve_policy(inv: Inventory, policy: str | None, rubric_version: str) -> Path:
    from ..policy import load_policy
    from ..ranking import is_ranking_policy_file

    if policy:
        return Path(policy)
    if inv.config.sentinel.policy:
        return inv.root / inv.config.sentinel.policy
    fits = []
    for path in inv.policies:
        if is_ranking_policy_file(path):
            continue
        try:
            p = load_policy(path)
        except WorkbenchError:
            continue
        if p.ci_budget_usd is not None and p.rubric_version in (None, rubric_version):
            fits.append(path)
    if len(fits) != 1:
        raise WorkbenchError(
            "no policy",
            [
                Problem(
                    location="--policy",
                    code="sentinel_policy_ambiguous",
                    message=(
                        f"{len(fits)} policies for rubric {rubric_version} set ci_budget_usd"
                        f" ({', '.join(inv.rel(p) for p in fits) or 'none'})"
                    ),
                    fix=(
                        f"give --policy, or set ci: sentinel: policy in {CONFIG_FILE}; the policy's"
                        " ci_budget_usd caps the job"
                    ),
                )
            ],
        )
    return fits[0]


def resolve_cap(policy: Any, requested: float | None, policy_path: str | Path) -> tuple[float, str]:
    """The per-job cap: the policy's ``ci_budget_usd`` unless a lower ``--budget-usd`` is given."""
    cap = policy.ci_budget_usd
    if cap is None and requested is None:
        raise WorkbenchError(
            "no cost cap",
            [
                Problem(
                    location=f"{policy_path}: ci_budget_usd",
                    code="ci_budget_missing",
                    message=(
                        f"the policy {policy.label} sets no ci_budget_usd and no --budget-usd was"
                        " given: a judge-backed CI job needs an approved cap"
                    ),
                    fix=(
                        "add ci_budget_usd to a new policy version (reviewed), or give --budget-usd"
                    ),
                )
            ],
        )
    if cap is None:
        return float(requested), "--budget-usd"  # type: ignore[arg-type]
    if requested is None:
        return cap, "policy ci_budget_usd"
    if requested > cap:
        raise WorkbenchError(
            "cap above policy",
            [
                Problem(
                    location=f"{policy_path}: ci_budget_usd",
                    code="budget_above_policy",
                    message=(
                        f"--budget-usd {requested:g} is above the policy's ci_budget_usd {cap:g}"
                    ),
                    fix=(
                        f"drop --budget-usd (the policy's ${cap:g} is used) or give a lower one; a"
                        " larger cap needs a new policy version"
                    ),
                )
            ],
        )
    return requested, "--budget-usd"


# ------------------------------------------------------------------------------ baselines


def _materialize(changes: Changes, spec_path: Path, into: Path) -> Path | None:
    """Write the spec (and its prompt file) as they were at the ref into ``into``; None if absent
    there."""
    import yaml

    data = show_at(changes, spec_path)
    if data is None:
        return None
    target = into / spec_path.name
    target.write_bytes(data)
    try:
        raw = yaml.safe_load(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError):
        return target
    prompt = raw.get("prompt_file") if isinstance(raw, dict) else None
    if isinstance(prompt, str):
        content = show_at(changes, (spec_path.parent / prompt).resolve())
        dest = (into / prompt).resolve()
        if content is not None and into.resolve() in dest.parents:
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(content)
    return target


def _ref_version(
    candidate: _Candidate, changes: Changes, scratch: Path
) -> tuple[Any, Any, str] | None:
    """``(spec, judge or None, fingerprint)`` of the candidate as it was at the ref (or its parent,
    for a candidate added since); the judge only when it can be rebuilt as it was."""
    from ..judges import build_judge, load_spec, make_identity

    path = candidate.path
    if show_at(changes, path) is None and candidate.spec.parent:
        path = path.with_name(f"{candidate.spec.parent}.yaml")
    into = scratch / uuid.uuid4().hex[:8]
    into.mkdir(parents=True)
    target = _materialize(changes, path, into)
    if target is None:
        return None
    try:
        spec, _ = load_spec(target)
    except WorkbenchError:
        return None
    if spec.kind == "ragas-function":
        module = _module_file(spec.function)
        source = show_at(changes, module) if module is not None else None
        if source is None:
            return None
        fingerprint = make_identity(spec, sha256_text(source.decode("utf-8"))).fingerprint()
        unchanged = module is not None and not any(
            (changes.top / f).resolve() == module for f in changes.files
        )
        judge = build_judge(spec, target) if unchanged and not candidate.code_changed else None
        return spec, judge, fingerprint
    try:
        judge = build_judge(spec, target)
    except WorkbenchError:
        return None
    return spec, (None if candidate.code_changed else judge), judge.identity.fingerprint()


def _recorded_baseline(log: Path, fingerprint: str) -> Any | None:
    from ..repeatability import read_drift_log

    entries = [
        e
        for e in read_drift_log(log)
        if e.kind == "baseline"
        and e.status == "recorded"
        and e.candidate_fingerprint == fingerprint
    ]
    return entries[-1] if entries else None


# ------------------------------------------------------------------------------ the lane


def _run_record(label: str, purpose: Any, run_dir: Path, summary: Any) -> LaneRun:
    return LaneRun(
        candidate=label,
        purpose=purpose,
        run_dir=str(run_dir),
        status=summary.status,
        stop_reason=summary.stop_reason,
        calls=summary.calls,
        cost_usd=summary.cost_usd,
        tokens_in=summary.tokens_in,
        tokens_out=summary.tokens_out,
    )


async def run_sentinel_lane(
    project: str | Path = ".",
    *,
    since: str,
    gold: str | None = None,
    policy: str | None = None,
    budget_usd: float | None = None,
    out: str | Path | None = None,
    concurrency: int = 8,
    progress: bool = False,
) -> SentinelLaneReport:
    """Run the lane (module doc). Raises :class:`WorkbenchError` on invalid input and
    :class:`LaneRefused` when it stops before any call (its ``report`` holds the checks)."""
    from ..controls import load_suite, work_items
    from ..gold import gold_lineage, load_dataset
    from ..judges import JudgeInput, build_judge
    from ..migration import estimate_run
    from ..policy import load_policy
    from ..repeatability import drift_log_path_for, load_sentinels, sentinels_path_for
    from ..repeatability._drift import Observation, _changes, _observations
    from ..runs import RunOptions, WorkItem, run_items

    root = Path(project)
    inv = discover(root)
    if inv.problems:
        raise WorkbenchError(f"{root / CONFIG_FILE}: invalid CI configuration", inv.problems)
    changes = changed_since(root, since)
    run_dir = invocation_dir(Path(out) if out is not None else root / "runs" / "ci" / "sentinel")
    started = datetime.now(UTC)
    checks: list[CheckResult] = []
    runs: list[LaneRun] = []

    gold_path = _resolve_gold(inv, gold)
    dataset = load_dataset(gold_path)
    sentinels_file = sentinels_path_for(dataset)
    policy_path = _resolve_policy(inv, policy, dataset.rubric.version)
    policy_model = load_policy(policy_path)
    suite_path = (
        (policy_path.parent / policy_model.controls.suite).resolve()
        if policy_model.controls is not None
        else None
    )
    shared = {
        (dataset.root / "rubric.yaml").resolve(): "rubric",
        sentinels_file.resolve(): "sentinels",
    }
    if suite_path is not None:
        shared[suite_path] = "controls"
    candidates, removed, spec_checks = affected_candidates(inv, changes, shared)
    checks += spec_checks
    affected = [
        AffectedCandidate(
            candidate=c.spec.label,
            spec=inv.rel(c.path),
            kind=c.spec.kind,
            covered=c.spec.kind in RUNNABLE_KINDS,
            reasons=c.reasons,
        )
        for c in candidates
    ]

    def report(
        outcome_checks: list[CheckResult],
        *,
        cap: float | None = None,
        source: str | None = None,
        estimate: float = 0.0,
    ) -> SentinelLaneReport:
        outcome = lane_outcome(outcome_checks)
        return SentinelLaneReport(
            project=str(root),
            since=since,
            since_commit=changes.commit,
            changed_files=list(changes.files),
            affected=affected,
            removed=removed,
            gold=inv.rel(dataset.root),
            sentinels=inv.rel(sentinels_file) if sentinels_file.exists() else None,
            policy=inv.rel(policy_path),
            controls_suite=inv.rel(suite_path) if suite_path is not None else None,
            budget_usd=cap,
            budget_source=source,
            estimate_usd=round(estimate, 6),
            cost_usd=round(sum(r.cost_usd for r in runs), 6),
            tokens_in=sum(r.tokens_in for r in runs),
            tokens_out=sum(r.tokens_out for r in runs),
            calls=sum(r.calls for r in runs),
            runs=runs,
            checks=outcome_checks,
            outcome=outcome,
            exit_code=EXIT_CODES[outcome],
            run_dir=str(run_dir),
            evaluated_at=started,
        )

    for c in candidates:
        if c.spec.kind not in RUNNABLE_KINDS:
            kind = kind_info(c.spec.kind)
            command = kind.command.format(spec=inv.rel(c.path)) if kind else "its own command"
            checks.append(
                CheckResult(
                    group="sentinels",
                    name=c.spec.label,
                    status="error",
                    category="incomplete",
                    code="not_covered",
                    message=(
                        f"a {c.spec.kind} candidate changed and this lane does not check that kind:"
                        f" check it with `{command}`"
                    ),
                    details=c.reasons,
                )
            )
    runnable = [c for c in candidates if c.spec.kind in RUNNABLE_KINDS]
    if not runnable:
        final = report(checks)
        _write(run_dir, final)
        return final

    cap, source = resolve_cap(policy_model, budget_usd, policy_path)
    loaded = load_sentinels(sentinels_file, dataset)
    suite = load_suite(suite_path) if suite_path is not None else None
    if suite is None:
        checks.append(
            CheckResult(
                group="control-runs",
                name=f"policy {policy_model.label}",
                status="error",
                category="incomplete",
                code="controls_missing",
                message=(
                    f"the policy {policy_model.label} names no control suite: the lane cannot run"
                    " the controls"
                ),
                details=[f"{policy_path}: add controls: {{suite: ...}} in a new policy version"],
            )
        )
    log = drift_log_path_for(dataset)
    sentinel_items = [
        WorkItem(k.case_id, k.response_hash, 0, JudgeInput.from_case(k)) for k in loaded.cases
    ]
    plans: list[_Plan] = []
    estimate = 0.0
    scratch = Path(tempfile.mkdtemp(prefix="workbench-ci-ref-"))
    try:
        for c in runnable:
            c.judge = build_judge(c.spec, c.path)
            plan = _Plan(candidate=c)
            label = c.spec.label
            cdir = run_dir / label
            fingerprint = c.judge.identity.fingerprint()
            entry = _recorded_baseline(log, fingerprint)
            if entry is not None:
                plan.baseline = (
                    (
                        f"drift log {entry.entry_id} (this fingerprint, recorded"
                        f" {entry.recorded_at:%Y-%m-%d})"
                    ),
                    dict(entry.observations),
                )
            else:
                ref = _ref_version(c, changes, scratch)
                if ref is None:
                    plan.no_baseline = (
                        f"{label} did not exist at {since} (nor its parent), and the drift log"
                        " records no baseline of it"
                    )
                else:
                    ref_spec, ref_judge, ref_fp = ref
                    entry = _recorded_baseline(log, ref_fp)
                    if entry is not None:
                        plan.baseline = (
                            (
                                f"drift log {entry.entry_id} ({ref_spec.label} at {since}, recorded"
                                f" {entry.recorded_at:%Y-%m-%d})"
                            ),
                            dict(entry.observations),
                        )
                    elif ref_judge is not None:
                        plan.baseline_judge = ref_judge
                        plan.baseline_label = f"{ref_spec.label} at {since}"
                    else:
                        code_reasons = [
                            r for r in c.reasons if r.startswith(("function module", "judge code"))
                        ]
                        plan.no_baseline = (
                            "the change touches code"
                            f" ({'; '.join(code_reasons)})"
                            f" so {ref_spec.label} cannot be rebuilt as it was at {since}, and the"
                            " drift log records no baseline of it"
                        )
            if suite is not None:
                estimate += estimate_run(
                    "controls", c.judge, work_items(suite), cdir / "controls", cache_dir=False
                ).needed_usd
            estimate += estimate_run(
                "sentinels", c.judge, sentinel_items, cdir / "sentinels", cache_dir=False
            ).needed_usd
            if plan.baseline_judge is not None:
                estimate += estimate_run(
                    "baseline",
                    plan.baseline_judge,
                    sentinel_items,
                    cdir / "baseline",
                    cache_dir=False,
                ).needed_usd
            plans.append(plan)
        if estimate > cap + 1e-12:
            checks.append(
                CheckResult(
                    group="budget",
                    name="per-job cap",
                    status="error",
                    category="incomplete",
                    code="budget_insufficient",
                    message=(
                        f"the planned calls need up to ${estimate:.4f}; the cap is ${cap:.4f}"
                        f" ({source}): nothing was started"
                    ),
                    details=[
                        f"{p.candidate.spec.label}: controls, sentinels"
                        + (", baseline" if p.baseline_judge is not None else "")
                        for p in plans
                    ],
                )
            )
            refused = report(checks, cap=cap, source=source, estimate=estimate)
            _write(run_dir, refused)
            raise LaneRefused(
                "the per-job cap does not cover the sentinel lane: nothing was started",
                [
                    Problem(
                        location=f"{inv.rel(policy_path)}: ci_budget_usd",
                        code="budget_insufficient",
                        message=(
                            f"the planned calls need up to ${estimate:.4f}, the cap is ${cap:.4f}"
                        ),
                        fix=(
                            "raise ci_budget_usd in a reviewed new policy version, or change fewer"
                            " judges at once"
                        ),
                    )
                ],
                refused,
            )
        checks.append(
            CheckResult(
                group="budget",
                name="per-job cap",
                status="passed",
                details=[f"estimate ${estimate:.4f} within the cap ${cap:.4f} ({source})"],
            )
        )

        def left() -> float:
            return max(0.0, cap - sum(r.cost_usd for r in runs))

        for plan in plans:
            c = plan.candidate
            label = c.spec.label
            cdir = run_dir / label
            if suite is not None:
                t0 = time.perf_counter()
                from ..controls import run_controls

                controls_report = await run_controls(
                    c.judge,
                    suite,
                    cdir / "controls",
                    concurrency=concurrency,
                    budget_usd=left(),
                    cache_dir=False,
                    progress=progress,
                )
                if controls_report.run is not None:
                    runs.append(
                        _run_record(label, "controls", cdir / "controls", controls_report.run)
                    )
                checks.append(
                    control_check(
                        f"{label} on {suite.label}",
                        controls_report,
                        round(time.perf_counter() - t0, 3),
                    )
                )
            t0 = time.perf_counter()
            lineage = gold_lineage(dataset, loaded.cases)
            summary = await run_items(
                c.judge,
                sentinel_items,
                cdir / "sentinels",
                RunOptions(
                    repeats=1,
                    concurrency=concurrency,
                    budget_usd=left(),
                    cache_dir=False,
                    progress=progress,
                ),
                partition="sentinels",
                dataset_sha256=dataset.sha256,
                grid=True,
                lineage=lineage,
            )
            runs.append(_run_record(label, "sentinels", cdir / "sentinels", summary))
            _, after = _observations(cdir / "sentinels", loaded.case_ids)
            before: dict[str, Observation] | None = None
            baseline_name = None
            if plan.baseline is not None:
                baseline_name, before = plan.baseline
            elif plan.baseline_judge is not None:
                base_summary = await run_items(
                    plan.baseline_judge,
                    sentinel_items,
                    cdir / "baseline",
                    RunOptions(
                        repeats=1,
                        concurrency=concurrency,
                        budget_usd=left(),
                        cache_dir=False,
                        progress=progress,
                    ),
                    partition="sentinels",
                    dataset_sha256=dataset.sha256,
                    grid=True,
                    lineage=lineage,
                )
                runs.append(
                    _run_record(
                        plan.baseline_label or label, "baseline", cdir / "baseline", base_summary
                    )
                )
                _, before = _observations(cdir / "baseline", loaded.case_ids)
                baseline_name = f"{plan.baseline_label}, run now ({cdir / 'baseline'})"
                if base_summary.status != "complete":
                    before = None
                    plan.no_baseline = (
                        f"the baseline run of {plan.baseline_label} stopped early"
                        f" ({base_summary.stop_reason})"
                    )
            seconds = round(time.perf_counter() - t0, 3)
            checks.append(
                _sentinel_check(
                    label,
                    loaded,
                    dataset,
                    summary,
                    before,
                    baseline_name,
                    plan.no_baseline,
                    after,
                    _changes,
                    seconds,
                )
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    checks = apply_expected_failures(
        checks, inv.config.expected_failures, strict_unrun=False, known=lambda check_id: True
    )
    final = report(checks, cap=cap, source=source, estimate=estimate)
    _write(run_dir, final)
    return final


def _sentinel_check(
    label: str,
    loaded: Any,
    dataset: Any,
    summary: Any,
    before: Any,
    baseline_name: str | None,
    no_baseline: str | None,
    after: dict[str, Any],
    changes_fn: Any,
    seconds: float,
) -> CheckResult:
    name = label
    if summary.status != "complete":
        return CheckResult(
            group="sentinels",
            name=name,
            status="error",
            category="incomplete",
            code=summary.stop_reason or "run_incomplete",
            message=(
                f"the sentinel run stopped early ({summary.stop_reason}:"
                f" {summary.stop_detail or ''}); unrun: {', '.join(summary.unrun) or 'none'}"
            ),
            seconds=seconds,
        )
    if before is None:
        return CheckResult(
            group="sentinels",
            name=name,
            status="error",
            category="incomplete",
            code="baseline_missing",
            message=f"no baseline: {no_baseline}",
            details=[
                f"record one: `workbench drift --candidate SPEC --gold {dataset.root}"
                " --record-baseline` (after reviewing its verdicts), and commit the drift log"
            ],
            seconds=seconds,
        )
    flagged = changes_fn(loaded, dataset, before, after)
    if any(f.kind == "not_judged" for f in flagged):
        return CheckResult(
            group="sentinels",
            name=name,
            status="error",
            category="incomplete",
            code="not_judged",
            message="a sentinel was not judged",
            details=[f"{f.case_id}: {f.kind}" for f in flagged],
            seconds=seconds,
        )
    if flagged:
        details = [
            f"{f.case_id} ({f.slice}{', ' + f.risk if f.risk else ''}): {f.kind} {f.before} ->"
            f" {f.after}" + (" BOUNDARY" if f.boundary_crossing else "")
            for f in flagged
        ]
        return CheckResult(
            group="sentinels",
            name=name,
            status="failed",
            category="review",
            code="sentinel_drift",
            message=(
                f"{len(flagged)} of {len(loaded.cases)} sentinel verdicts changed against"
                f" {baseline_name}"
            ),
            details=details,
            failing=sorted({f.case_id for f in flagged}),
            seconds=seconds,
        )
    return CheckResult(
        group="sentinels",
        name=name,
        status="passed",
        details=[f"{len(loaded.cases)} sentinels gave the baseline's verdicts ({baseline_name})"],
        seconds=seconds,
    )


def _write(run_dir: Path, report: SentinelLaneReport) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(run_dir / REPORT_FILE, report.model_dump(mode="json"))


def run_sentinel_lane_sync(*args: Any, **kwargs: Any) -> SentinelLaneReport:
    """:func:`run_sentinel_lane` for scripts and the CLI."""
    return asyncio.run(run_sentinel_lane(*args, **kwargs))


def format_sentinel_lane(report: SentinelLaneReport) -> str:
    """Plain text for the terminal: what changed, what ran, cost and tokens, each check."""
    lines = [
        f"sentinel lane since {report.since} ({report.since_commit[:12]}):"
        f" {len(report.changed_files)} changed file(s), {len(report.affected)} affected"
        " candidate(s)"
    ]
    for a in report.affected:
        lines.append(
            f"  {a.candidate} ({a.kind}{'' if a.covered else ', not covered by this lane'}): "
            + "; ".join(a.reasons)
        )
    for removed in report.removed:
        lines.append(f"  removed: {removed}")
    if report.budget_usd is not None:
        lines.append(
            f"cap ${report.budget_usd:.4f} ({report.budget_source}), estimate"
            f" ${report.estimate_usd:.4f}; gold {report.gold}, policy {report.policy}, controls"
            f" {report.controls_suite}"
        )
    for r in report.runs:
        lines.append(
            f"  run {r.purpose:9} {r.candidate}:"
            f" {r.status}{' (' + r.stop_reason + ')' if r.stop_reason else ''}, {r.calls} call(s),"
            f" ${r.cost_usd:.6f}, {r.tokens_in} + {r.tokens_out} tokens"
        )
    lines.append(
        f"cost ${report.cost_usd:.6f}; tokens {report.tokens_in} in + {report.tokens_out} out;"
        f" {report.calls} call(s)"
    )
    for c in report.checks:
        lines.append(
            f"  {c.status.upper():16} {c.check_id}" + (f": {c.message}" if c.message else "")
        )
        if c.status != "passed":
            lines += [f"      {d}" for d in c.details[:12]]
    lines.append(
        f"outcome: {report.outcome.upper()} (exit {report.exit_code}); run directory"
        f" {report.run_dir}"
    )
    return "\n".join(lines)
