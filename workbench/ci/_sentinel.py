"""``workbench ci sentinel --since REF``: the candidates a change affects (own files, function
code, shared rubric/sentinels/controls/policies, judge code, pinned requirements), priced under
the policy's ``ci_budget_usd``, run on the control suite and the gold's sentinels and compared
with a baseline: the drift log's for its fingerprint or its REF version, else the REF version run
now. A changed ranking or noise judge runs on the project's ranking fixtures or noise suites and
is decided by that feature's gate (``_judged``; ``--scope pr`` the must-win fixtures and the
noise sentinel sets, ``scheduled`` everything). Exit code: 2 invalid input, else 3 incomplete,
else 1 a control or a ranking/noise gate failed, else 4 drift or review required, else 0."""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import hashlib
import importlib
import importlib.util
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Literal

import yaml

from .._io import atomic_write_json, sha256_text, yaml_loads
from .._record import LooseRecord as _Model
from ..errors import Problem, WorkbenchError, problem, refusal
from ..judges import kind_info, kinds_where
from ._contracts import EXIT_CODES, Outcome, control_check, invocation_dir, lane_outcome
from ._expected import apply_expected_failures
from ._git import Changes, changed_since, show_at
from ._judged import (
    JUDGED_KINDS,
    SCOPES,
    JudgedPlan,
    Scope,
    judged_inputs,
    plan_judged,
    run_judged,
)
from ._junit import CheckResult, passed_check, problem_check
from ._project import CONFIG_FILE, Inventory, discover

SENTINEL_LANE_SCHEMA_VERSION = 1
REPORT_FILE = "sentinel.json"
RUNNABLE_KINDS: tuple[str, ...] = kinds_where(output="label", replayed=False)
"""Kinds the sentinel lane runs on sentinels and controls."""
RAGAS_KINDS: tuple[str, ...] = kinds_where(replayed=False)
"""Kinds that run Ragas (every kind but replayed verdicts): a Ragas upgrade affects them."""


class AffectedCandidate(_Model):
    """A candidate the change affects, and why."""

    candidate: str
    """``name@version``."""
    spec: str
    """The spec file, relative to the project root."""
    kind: str
    """Its judge kind."""
    covered: bool
    """Whether this lane runs it (label kinds on sentinels and controls, ranking kinds on the
    ranking fixtures, noise kinds on the noise suites)."""
    reasons: list[str]
    """The changed files that affect it, each with its role (``spec``, ``rubric`` ...)."""


class LaneRun(_Model):
    """One run the lane made."""

    candidate: str
    """``name@version`` of the judge run (``... at <ref>`` for a baseline of the old version,
    ``... on <fixtures or suite>`` for a ranking or noise run)."""
    purpose: Literal["controls", "sentinels", "baseline", "ranking", "noise"]
    """What it was for (``ranking``: a fixture battery; ``noise``: a pair suite's controls,
    candidate pairs or repeats)."""
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
    """What ``workbench ci sentinel`` did (``--json``; ``sentinel.json`` in its run directory)."""

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
    scope: Scope = "pr"
    """``pr``: must-win ranking fixtures and the noise sentinel sets; ``scheduled``: every
    ranking fixture and noise pair (label judges run the same in both)."""
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
    """The lane's outcome (``review_required``: sentinel drift)."""
    exit_code: int
    """The process exit code."""
    run_dir: str
    """This invocation's new directory under ``--out`` (default ``runs/ci/sentinel``)."""
    evaluated_at: datetime
    """When (UTC)."""


class LaneRefused(WorkbenchError):
    """The lane stopped before any call: its checks say why (exit 2 or 3)."""

    def __init__(self, summary: str, problems: list[Problem], report: SentinelLaneReport) -> None:
        super().__init__(summary, problems)
        self.report = report


def _module_file(function: str | None) -> Path | None:
    if not function or ":" not in function:
        return None
    try:
        spec = importlib.util.find_spec(function.partition(":")[0])
    except (ImportError, ValueError):
        return None
    found = spec.origin if spec is not None else None
    return Path(found).resolve() if found and found.endswith(".py") else None


def function_code(function: str | None) -> Any:
    """The code the function ``module:attribute`` runs (:func:`~workbench.judges.code_coverage`),
    or None when its module cannot be imported (its own file is still checked)."""
    from ..judges import code_coverage

    if not function or ":" not in function:
        return None
    try:
        module = importlib.import_module(function.partition(":")[0])
    except Exception:  # noqa: BLE001 - a user module may raise anything on import: not ours to judge
        return None
    return code_coverage(module) if getattr(module, "__file__", None) else None


def own_files(spec: Any, spec_path: Path, code: Any) -> dict[Path, str]:
    """The files that make up one candidate: spec, prompt file, function module, the other
    modules of its own package the function imports (``code``: its :func:`function_code`),
    results file."""
    out: dict[Path, str] = {spec_path.resolve(): "spec"}
    if spec.prompt_file:
        out[(spec_path.parent / spec.prompt_file).resolve()] = "prompt"
    if code is not None:
        for rel in code.manifest:
            out[(code.root / rel).resolve()] = "function code"
    module = _module_file(spec.function)
    if module is not None:
        out[module] = "function module"
    if spec.results:
        out[(spec_path.parent / spec.results).resolve()] = "results"
    return out


PYPROJECT = "pyproject.toml"


def _requirements(data: bytes | None) -> dict[str, str]:
    """``name -> requirement`` of a ``pyproject.toml``'s dependencies (empty if unreadable)."""
    from ..judges import project_requirements

    try:
        text = data.decode("utf-8") if data else ""
    except UnicodeDecodeError:
        return {}
    return {name: f"{name}{spec}" for name, spec in project_requirements(text).items()}


def pinned_changes(inv: Inventory, changes: Changes) -> dict[str, str]:
    """``name -> "was -> now"`` for every dependency whose requirement in the project's
    ``pyproject.toml`` changed since the ref (a Ragas upgrade is one)."""
    path = (inv.root / PYPROJECT).resolve()
    if path not in changes.absolute():
        return {}
    before = _requirements(show_at(changes, path))
    now = _requirements(path.read_bytes() if path.is_file() else None)
    return {
        name: f"{before.get(name, '(none)')} -> {now.get(name, '(none)')}"
        for name in sorted(before.keys() | now.keys())
        if before.get(name) != now.get(name)
    }


def _spec_changes(changes: Changes, path: Path, spec: Any) -> list[str]:
    """The model and inline prompt changes of a spec changed since the ref, named."""
    raw = show_at(changes, path)
    try:
        was = yaml_loads(raw.decode("utf-8")) if raw is not None else None
    except (UnicodeDecodeError, yaml.YAMLError):
        return []
    if not isinstance(was, dict):
        return []
    out = []
    if was.get("model") != spec.model:
        out.append(f"model: {was.get('model')} -> {spec.model}")
    if was.get("prompt") != spec.prompt:
        out.append("prompt: the inline prompt template changed")
    return out


def _dependency_reasons(spec: Any, pins: dict[str, str], code: Any) -> list[str]:
    """Why a pinned requirement change affects this candidate (``code``: its function's)."""
    from ..judges import distribution_key

    out = []
    if "ragas" in pins and spec.kind in RAGAS_KINDS:
        out.append(f"ragas: {PYPROJECT} {pins['ragas']}")
    for dist in code.dependencies if code is not None else {}:
        name = distribution_key(dist)
        if name in pins and name != "ragas":
            out.append(f"dependency: {PYPROJECT} {pins[name]}")
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
    baseline_judge: Any = None
    baseline_label: str | None = None
    baseline: tuple[Any, dict[str, Any]] | None = None
    no_baseline: str | None = None


def _candidate(
    inv: Inventory,
    changes: Changes,
    path: Path,
    spec: Any,
    context: tuple[dict[Path, str], list[str], dict[str, str], dict[str, dict[Path, str]]],
) -> _Candidate | None:
    """The candidate at ``path`` when the change affects it, with every reason."""
    shared, code_hits, pins, judged = context
    changed = changes.absolute()
    code = function_code(spec.function) if spec.function else None  # once: it reads every file
    files = own_files(spec, path, code)
    reasons = [f"{role}: {inv.rel(f)}" for f, role in files.items() if f in changed]
    if path.resolve() in changed:
        reasons += _spec_changes(changes, path, spec)
    code_roles = ("function module", "function code")
    code_changed = any(role in code_roles and f in changed for f, role in files.items())
    if spec.kind in RUNNABLE_KINDS:
        reasons += [f"{role}: {inv.rel(f)}" for f, role in shared.items() if f in changed]
        reasons += [f"judge code: {f}" for f in code_hits]
        code_changed = code_changed or bool(code_hits)
    inputs = judged.get(spec.kind, {})
    reasons += [f"{role}: {inv.rel(f)}" for f, role in inputs.items() if f in changed]
    deps = _dependency_reasons(spec, pins, code)
    reasons += deps
    code_changed = code_changed or bool(deps)
    if not reasons:
        return None
    return _Candidate(path=path, spec=spec, reasons=reasons, code_changed=code_changed)


def affected_candidates(
    inv: Inventory, changes: Changes, shared: dict[Path, str]
) -> tuple[list[_Candidate], list[str], list[CheckResult]]:
    """The affected candidates, the specs deleted since the ref, and a check per unloadable spec."""
    from ..judges import load_spec

    changed = changes.absolute()
    code_globs = inv.config.sentinel.judge_code
    code_hits = sorted(f for f in changes.files if any(fnmatch.fnmatch(f, g) for g in code_globs))
    judged = {kind: judged_inputs(inv, kind) for kind in JUDGED_KINDS}
    context = (shared, code_hits, pinned_changes(inv, changes), judged)
    out: list[_Candidate] = []
    checks: list[CheckResult] = []
    for path in inv.candidates:
        try:
            spec, _ = load_spec(path)
        except WorkbenchError as exc:
            if path.resolve() in changed:
                code = exc.problems[0].code if exc.problems else "candidate_invalid"
                details = [p.format() for p in exc.problems]
                checks.append(
                    problem_check(
                        "candidates", inv.rel(path), "contract", code, exc.summary, details
                    )
                )
            continue
        found = _candidate(inv, changes, path, spec, context)
        if found is not None:
            out.append(found)
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


def _resolve_gold(inv: Inventory, gold: str | None) -> Path:
    from ..repeatability import SENTINELS_FILE

    if gold:
        return Path(gold)
    if inv.config.sentinel.gold:
        return inv.root / inv.config.sentinel.gold
    with_sentinels = [g for g in inv.gold if (g / SENTINELS_FILE).is_file()]
    if len(with_sentinels) != 1:
        found = ", ".join(inv.rel(g) for g in with_sentinels) or "none"
        message = f"{len(with_sentinels)} gold datasets have a {SENTINELS_FILE} ({found})"
        fix = f"give --gold, or set ci: sentinel: gold in {CONFIG_FILE}"
        raise refusal("no sentinel set", "--gold", "sentinel_gold_ambiguous", message, fix)
    return with_sentinels[0]


def _resolve_policy(inv: Inventory, policy: str | None, rubric_version: str) -> Path:
    from ..policy import load_policy
    from ..ranking import is_ranking_policy_file

    if policy:
        return Path(policy)
    if inv.config.sentinel.policy:
        return inv.root / inv.config.sentinel.policy
    fits = []
    for path in (p for p in inv.policies if not is_ranking_policy_file(p)):
        with contextlib.suppress(WorkbenchError):
            loaded = load_policy(path)
            if loaded.ci_budget_usd is not None and loaded.rubric_version in (None, rubric_version):
                fits.append(path)
    if len(fits) != 1:
        found = ", ".join(inv.rel(p) for p in fits) or "none"
        message = f"{len(fits)} policies for rubric {rubric_version} set ci_budget_usd ({found})"
        fix = f"give --policy, or set ci: sentinel: policy in {CONFIG_FILE}; the policy's"
        fix += " ci_budget_usd caps the job"
        raise refusal("no policy", "--policy", "sentinel_policy_ambiguous", message, fix)
    return fits[0]


def resolve_cap(
    policy: Any, requested: float | None, policy_path: str | Path, scope: Scope = "pr"
) -> tuple[float, str]:
    """The per-job cap: the policy's ``ci_budget_usd`` (``ci_scheduled_budget_usd`` for the
    scheduled scope, when set) unless a lower ``--budget-usd`` is given."""
    key = "ci_budget_usd"
    if scope == "scheduled" and policy.ci_scheduled_budget_usd is not None:
        key = "ci_scheduled_budget_usd"
    cap = getattr(policy, key)
    where = f"{policy_path}: {key}"
    if cap is None and requested is None:
        raise refusal(
            "no cost cap",
            where,
            "ci_budget_missing",
            f"the policy {policy.label} sets no ci_budget_usd and no --budget-usd was given: a"
            " judge-backed CI job needs an approved cap",
            "add ci_budget_usd to a new policy version (reviewed), or give --budget-usd",
        )
    if cap is None:
        return float(requested), "--budget-usd"  # type: ignore[arg-type]
    if requested is None:
        return cap, f"policy {key}"
    if requested > cap:
        message = f"--budget-usd {requested:g} is above the policy's {key} {cap:g}"
        fix = f"drop --budget-usd (the policy's ${cap:g} is used) or give a lower one; a larger"
        fix += " cap needs a new policy version"
        raise refusal("cap above policy", where, "budget_above_policy", message, fix)
    return requested, "--budget-usd"


def _materialize(changes: Changes, spec_path: Path, into: Path) -> Path | None:
    """Write the spec (and prompt file) as they were at the ref into ``into``; None if absent."""
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
    """``(spec, judge or None, fingerprint)`` of the candidate (or its parent) at the ref."""
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
        params = _code_at_ref(changes, function_code(spec.function))
        digest = sha256_text(source.decode("utf-8"))
        fingerprint = make_identity(spec, digest, **params).fingerprint()
        unchanged = module not in changes.absolute() and not candidate.code_changed
        return spec, build_judge(spec, target) if unchanged else None, fingerprint
    try:
        judge = build_judge(spec, target)
    except WorkbenchError:
        return None
    return spec, (None if candidate.code_changed else judge), judge.identity.fingerprint()


def _code_at_ref(changes: Changes, code: Any) -> dict[str, Any]:
    """The fingerprint's ``code_sha256`` and ``dependencies`` of a function's code at the ref."""
    if code is None:
        return {}
    changed = changes.absolute()
    files: dict[str, str] = {}
    for rel, digest in code.manifest.items():
        path = (code.root / rel).resolve()
        data = show_at(changes, path) if path in changed else None
        if path in changed and data is None:
            continue
        files[rel] = hashlib.sha256(data).hexdigest() if data is not None else digest
    return {"code_sha256": files, "dependencies": dict(code.dependencies)}


def _plan(lane: _Lane, c: _Candidate, log: Path, scratch: Path) -> _Plan:
    """How the candidate's sentinel verdicts will be compared (module doc)."""
    from ..judges import build_judge
    from ..repeatability import recorded_baseline

    c.judge = build_judge(c.spec, c.path)
    plan = _Plan(candidate=c)
    entry = recorded_baseline(log, c.judge.identity.fingerprint())
    if entry is not None:
        when = f"recorded {entry.recorded_at:%Y-%m-%d}"
        plan.baseline = f"drift log {entry.entry_id} (this fingerprint, {when})", entry.observations
        return plan
    since, label = lane.since, c.spec.label
    ref = _ref_version(c, lane.changes, scratch)
    if ref is None:
        plan.no_baseline = (
            f"{label} did not exist at {since} (nor its parent), and the drift log records no"
            " baseline of it"
        )
        return plan
    ref_spec, ref_judge, ref_fp = ref
    entry = recorded_baseline(log, ref_fp)
    if entry is not None:
        at = f"{ref_spec.label} at {since}, recorded {entry.recorded_at:%Y-%m-%d}"
        plan.baseline = f"drift log {entry.entry_id} ({at})", entry.observations
    elif ref_judge is not None:
        plan.baseline_judge, plan.baseline_label = ref_judge, f"{ref_spec.label} at {since}"
    else:
        code_roles = ("function module", "function code", "judge code", "ragas", "dependency")
        code_reasons = [r for r in c.reasons if r.startswith(code_roles)]
        plan.no_baseline = (
            f"the change touches code ({'; '.join(code_reasons)}) so {ref_spec.label} cannot be"
            f" rebuilt as it was at {since}, and the drift log records no baseline of it"
        )
    return plan


def _run_record(label: str, purpose: Any, run_dir: Path, summary: Any) -> LaneRun:
    keys = ("status", "stop_reason", "calls", "cost_usd", "tokens_in", "tokens_out")
    figures = {k: getattr(summary, k) for k in keys}
    return LaneRun(candidate=label, purpose=purpose, run_dir=str(run_dir), **figures)


@dataclass
class _Lane:
    """One invocation: what it found, what it ran, and the report it makes of that."""

    inv: Inventory
    since: str
    changes: Changes
    run_dir: Path
    dataset: Any
    sentinels_file: Path
    policy_path: Path
    policy: Any
    suite_path: Path | None
    candidates: list[_Candidate]
    removed: list[str]
    checks: list[CheckResult]
    runs: list[LaneRun] = field(default_factory=list)
    cap: float | None = None
    source: str | None = None
    estimate: float = 0.0
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    scope: Scope = "pr"

    def left(self) -> float:
        """What is left of the cap."""
        assert self.cap is not None
        return max(0.0, self.cap - sum(r.cost_usd for r in self.runs))

    def finish(self) -> SentinelLaneReport:
        """The report of the checks so far, written to ``sentinel.json`` in the run directory."""
        outcome, rel = lane_outcome(self.checks), self.inv.rel
        affected = [
            AffectedCandidate(
                candidate=c.spec.label,
                spec=rel(c.path),
                kind=c.spec.kind,
                covered=c.spec.kind in RUNNABLE_KINDS + JUDGED_KINDS,
                reasons=c.reasons,
            )
            for c in self.candidates
        ]
        totals = {k: sum(getattr(r, k) for r in self.runs) for k in ("tokens_in", "tokens_out")}
        report = SentinelLaneReport(
            project=str(self.inv.root),
            since=self.since,
            since_commit=self.changes.commit,
            scope=self.scope,
            changed_files=list(self.changes.files),
            affected=affected,
            removed=self.removed,
            gold=rel(self.dataset.root),
            sentinels=rel(self.sentinels_file) if self.sentinels_file.exists() else None,
            policy=rel(self.policy_path),
            controls_suite=rel(self.suite_path) if self.suite_path is not None else None,
            budget_usd=self.cap,
            budget_source=self.source,
            estimate_usd=round(self.estimate, 6),
            cost_usd=round(sum(r.cost_usd for r in self.runs), 6),
            calls=sum(r.calls for r in self.runs),
            **totals,
            runs=self.runs,
            checks=self.checks,
            outcome=outcome,
            exit_code=EXIT_CODES[outcome],
            run_dir=str(self.run_dir),
            evaluated_at=self.started,
        )
        self.run_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.run_dir / REPORT_FILE, report.model_dump(mode="json"))
        return report


def _open_lane(
    project: str | Path, since: str, gold: str | None, policy: str | None, out: str | Path | None
) -> _Lane:
    """Find what changed, the gold, the policy, the controls and the affected candidates."""
    from ..gold import load_dataset
    from ..policy import load_policy
    from ..ranking import is_ranking_policy_file
    from ..repeatability import sentinels_path_for

    root = Path(project)
    inv = discover(root)
    if inv.problems:
        raise WorkbenchError(f"{root / CONFIG_FILE}: invalid CI configuration", inv.problems)
    changes = changed_since(root, since)
    run_dir = invocation_dir(Path(out) if out is not None else root / "runs" / "ci" / "sentinel")
    started = datetime.now(UTC)
    dataset = load_dataset(_resolve_gold(inv, gold))
    sentinels_file = sentinels_path_for(dataset)
    policy_path = _resolve_policy(inv, policy, dataset.rubric.version)
    policy_model = load_policy(policy_path)
    controls = policy_model.controls
    suite_path = (policy_path.parent / controls.suite).resolve() if controls is not None else None
    shared = {
        (dataset.root / "rubric.yaml").resolve(): "rubric",
        sentinels_file.resolve(): "sentinels",
        **({suite_path: "controls"} if suite_path is not None else {}),
    }
    # the lane's policy and every release policy of the project
    policies = [policy_path, *(p for p in inv.policies if not is_ranking_policy_file(p))]
    shared |= {p.resolve(): "policy" for p in policies}
    return _Lane(
        inv,
        since,
        changes,
        run_dir,
        dataset,
        sentinels_file,
        policy_path,
        policy_model,
        suite_path,
        *affected_candidates(inv, changes, shared),
        started=started,
    )


def _price(
    lane: _Lane, plans: list[_Plan], suite: Any, loaded: Any, judged: list[JudgedPlan]
) -> None:
    """Price every planned call; above the cap the lane stops here (:class:`LaneRefused`)."""
    from ..controls import work_items
    from ..repeatability import sentinel_items
    from ..runs import estimate_run

    items = sentinel_items(loaded) if plans else []
    for plan in plans:
        judge, cdir = plan.candidate.judge, lane.run_dir / plan.candidate.spec.label
        work = [("controls", judge, work_items(suite))] if suite is not None else []
        work.append(("sentinels", judge, items))
        if plan.baseline_judge is not None:
            work.append(("baseline", plan.baseline_judge, items))
        for purpose, who, what in work:  # one sum, in order: the figure the cap is checked on
            needed = estimate_run(purpose, who, what, cdir / purpose, cache_dir=False).needed_usd
            lane.estimate += needed
    lane.estimate += sum(j.estimate for j in judged)
    cap, estimate = lane.cap, lane.estimate
    assert cap is not None
    if estimate <= cap + 1e-12:
        within = f"estimate ${estimate:.4f} within the cap ${cap:.4f} ({lane.source})"
        lane.checks.append(passed_check("budget", "per-job cap", within))
        return
    message = (
        f"the planned calls need up to ${estimate:.4f}; the cap is ${cap:.4f} ({lane.source}):"
        " nothing was started"
    )
    details = [
        f"{p.candidate.spec.label}: controls, sentinels"
        + (", baseline" if p.baseline_judge is not None else "")
        for p in plans
    ] + [f"{j.name}: {j.feature}" for j in judged]
    code = "budget_insufficient"
    lane.checks.append(problem_check("budget", "per-job cap", "incomplete", code, message, details))
    scheduled = lane.scope == "scheduled" and lane.policy.ci_scheduled_budget_usd is not None
    key = "ci_scheduled_budget_usd" if scheduled else "ci_budget_usd"
    raise LaneRefused(
        "the per-job cap does not cover the sentinel lane: nothing was started",
        [
            problem(
                f"{lane.inv.rel(lane.policy_path)}: {key}",
                code,
                f"the planned calls need up to ${estimate:.4f}, the cap is ${cap:.4f}",
                f"raise {key} in a reviewed new policy version, or change fewer judges at once",
            )
        ],
        lane.finish(),
    )


async def _run_plan(
    lane: _Lane, plan: _Plan, suite: Any, loaded: Any, concurrency: int, progress: bool
) -> None:
    """The candidate's controls, its sentinels and (when planned) its ref version's sentinels."""
    from ..controls import run_controls
    from ..repeatability import run_sentinels

    c, dataset = plan.candidate, lane.dataset
    label, cdir = c.spec.label, lane.run_dir / c.spec.label
    opts: dict[str, Any] = {"concurrency": concurrency, "progress": progress}
    if suite is not None:
        t0 = time.perf_counter()
        controls = await run_controls(
            c.judge, suite, cdir / "controls", budget_usd=lane.left(), cache_dir=False, **opts
        )
        if controls.run is not None:
            lane.runs.append(_run_record(label, "controls", cdir / "controls", controls.run))
        seconds = round(time.perf_counter() - t0, 3)
        lane.checks.append(control_check(f"{label} on {suite.label}", controls, seconds))
    t0 = time.perf_counter()
    summary, after = await run_sentinels(
        c.judge, loaded, dataset, cdir / "sentinels", budget_usd=lane.left(), **opts
    )
    lane.runs.append(_run_record(label, "sentinels", cdir / "sentinels", summary))
    name, before = plan.baseline if plan.baseline is not None else (None, None)
    if plan.baseline_judge is not None:
        base, before = await run_sentinels(
            plan.baseline_judge, loaded, dataset, cdir / "baseline", budget_usd=lane.left(), **opts
        )
        base_label = plan.baseline_label or label
        lane.runs.append(_run_record(base_label, "baseline", cdir / "baseline", base))
        name = f"{plan.baseline_label}, run now ({cdir / 'baseline'})"
        if base.status != "complete":
            before = None
            plan.no_baseline = (
                f"the baseline run of {plan.baseline_label} stopped early ({base.stop_reason})"
            )
    seconds = round(time.perf_counter() - t0, 3)
    lane.checks.append(
        _sentinel_check(
            label, seconds, loaded, dataset, summary, (before, name), plan.no_baseline, after
        )
    )


def _label_inputs(lane: _Lane) -> tuple[Any, Any]:
    """The gold's sentinels and the policy's control suite (a missing suite is a check)."""
    from ..controls import load_suite
    from ..heldout import refuse_held_out_content
    from ..repeatability import load_sentinels

    loaded = load_sentinels(lane.sentinels_file, lane.dataset)
    suite = load_suite(lane.suite_path) if lane.suite_path is not None else None
    if suite is None:
        label = lane.policy.label
        message = f"the policy {label} names no control suite: the lane cannot run the controls"
        details = [f"{lane.policy_path}: add controls: {{suite: ...}} in a new policy version"]
        code = "controls_missing"
        lane.checks.append(
            problem_check("control-runs", f"policy {label}", "incomplete", code, message, details)
        )
    else:  # held-out content never runs as a control (the sentinels are checked on load)
        refuse_held_out_content(suite.controls, lane.dataset, str(lane.suite_path), what="control")
    return loaded, suite


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
    scope: Scope = "pr",
) -> SentinelLaneReport:
    """Run the lane (module doc). Raises :class:`WorkbenchError` on invalid input and
    :class:`LaneRefused` when it stops before any call (its ``report`` holds the checks)."""
    from ..approval import load_approvers
    from ..repeatability import drift_log_path_for

    if scope not in SCOPES:
        where, fix = "--scope", f"give one of {', '.join(SCOPES)}"
        raise refusal("invalid scope", where, "scope_unknown", f"unknown scope {scope!r}", fix)
    lane = _open_lane(project, since, gold, policy, out)
    lane.scope = scope
    runnable = [c for c in lane.candidates if c.spec.kind in RUNNABLE_KINDS]
    judged = [c for c in lane.candidates if c.spec.kind in JUDGED_KINDS]
    covered = RUNNABLE_KINDS + JUDGED_KINDS
    lane.checks += [_not_covered(lane, c) for c in lane.candidates if c.spec.kind not in covered]
    if not runnable and not judged:
        return lane.finish()
    lane.cap, lane.source = resolve_cap(lane.policy, budget_usd, lane.policy_path, scope)
    loaded, suite = _label_inputs(lane) if runnable else (None, None)
    scratch = Path(tempfile.mkdtemp(prefix="workbench-ci-ref-"))
    try:
        plans = [_plan(lane, c, drift_log_path_for(lane.dataset), scratch) for c in runnable]
        others, checks = plan_judged(
            lane.inv, [(c.path, c.spec) for c in judged], scope, lane.run_dir
        )
        lane.checks += checks
        _price(lane, plans, suite, loaded, others)
        for plan in plans:
            await _run_plan(lane, plan, suite, loaded, concurrency, progress)
        for other in others:
            found, summaries = await run_judged(
                lane.inv, other, budget_usd=lane.left(), concurrency=concurrency, scope=scope,
                progress=progress,
            )  # fmt: skip
            lane.checks += found
            lane.runs += [
                _run_record(other.name, other.feature, Path(s.results_path).parent, s)
                for s in summaries
            ]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    lane.checks = apply_expected_failures(
        lane.checks,
        lane.inv.config.expected_failures,
        approvers=load_approvers(lane.inv.root),
        strict_unrun=False,
        known=lambda _: True,
    )
    return lane.finish()


def _not_covered(lane: _Lane, c: _Candidate) -> CheckResult:
    kind = kind_info(c.spec.kind)
    command = kind.command.format(spec=lane.inv.rel(c.path)) if kind else "its own command"
    message = (
        f"a {c.spec.kind} candidate changed and this lane does not check that kind: check it with"
        f" `{command}`"
    )
    return problem_check("sentinels", c.spec.label, "incomplete", "not_covered", message, c.reasons)


def _sentinel_check(
    label: str,
    seconds: float,
    loaded: Any,
    dataset: Any,
    summary: Any,
    baseline: tuple[Any, str | None],
    no_baseline: str | None,
    after: dict[str, Any],
) -> CheckResult:
    """The sentinels' verdicts against the baseline's (its observations and name)."""
    from ..repeatability import sentinel_change_rate, sentinel_changes

    check, (before, baseline_name) = (
        partial(problem_check, "sentinels", label, seconds=seconds),
        baseline,
    )

    if summary.status != "complete":
        message = (
            f"the sentinel run stopped early ({summary.stop_reason}: {summary.stop_detail or ''});"
            f" unrun: {', '.join(summary.unrun) or 'none'}"
        )
        return check("incomplete", summary.stop_reason or "run_incomplete", message)
    if before is None:
        record = (
            f"record one: `workbench drift --candidate SPEC --gold {dataset.root}"
            " --record-baseline` (after reviewing its verdicts), and commit the drift log"
        )
        return check("incomplete", "baseline_missing", f"no baseline: {no_baseline}", [record])
    flagged = sentinel_changes(loaded, dataset, before, after)
    if any(f.kind == "not_judged" for f in flagged):
        details = [f"{f.case_id}: {f.kind}" for f in flagged]
        return check("incomplete", "not_judged", "a sentinel was not judged", details)
    if flagged:
        details = [
            f"{f.case_id} ({f.slice}{', ' + f.risk if f.risk else ''}): {f.kind} {f.before} ->"
            f" {f.after}" + (" BOUNDARY" if f.boundary_crossing else "")
            for f in flagged
        ]
        rate = sentinel_change_rate(loaded, flagged)  # one cluster per gold group
        message = (
            f"{len(flagged)} of {len(loaded.cases)} sentinel verdicts changed against"
            f" {baseline_name}; changed sentinels {rate.k} of {rate.n} in {rate.groups} gold"
            f" groups, 95% interval [{rate.ci95_low:.3f}, {rate.ci95_high:.3f}]"
        )
        failing = sorted({f.case_id for f in flagged})
        return check("review", "sentinel_drift", message, details, failing=failing)
    same = f"{len(loaded.cases)} sentinels gave the baseline's verdicts ({baseline_name})"
    return passed_check("sentinels", label, same, seconds=seconds)


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
