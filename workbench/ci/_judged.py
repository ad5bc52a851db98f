"""The sentinel lane's ranking and noise checks (``workbench ci sentinel --scope pr|scheduled``).

A changed ranking judge (a kind whose output is a ranking) runs on every current ranking fixture
file of the project (one no other file of the project supersedes) and is gated by every ranking
policy that names the fixture set (the built-in rules when none does). A changed noise judge (a
kind whose output is a score) scores every current noise pair suite under the suite's own policy,
with the suite's companion values (``<suite>.companions.jsonl`` beside it) when present. The
verdict is the feature's own gate (:func:`~workbench.ranking.ranking_report`,
:func:`~workbench.noise.noise_report`, both deciding through the kernel's ``decide`` with the
project's override store ``data/policies/overrides.jsonl``): its outcome becomes the check's
category (quality failed: ``failure``, exit 1; review required: ``review``, 4; incomplete:
``incomplete``, 3). The lane adds no rule of its own.

Scopes: ``pr`` runs the must-win fixtures only (one seeded rotation each, the battery for
``diagnostic`` fixtures, plus the policy's repeat baseline) and the noise suite's controls and
frozen sentinel set (``--sentinels-only``); ``scheduled`` runs every fixture under the exhaustive
battery and every candidate pair. Neither scope scores a held-out noise pair (``run_noise(...,
exclude_held_out=True)``, recorded as ``held_out_excluded`` in the run and report): a monitoring
lane never spends a held-out use, so the held-out ledger gets no entry and the next night's run is
not refused as a reuse. A suite whose controls, or (``pr``) whose sentinel set, hold held-out pairs
is not run: an incomplete check names them and the fix.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .._io import atomic_write_json
from ..errors import WorkbenchError
from ..judges import kinds_where
from ._junit import Category, CheckResult, passed_check, problem_check
from ._project import Inventory

Scope = Literal["pr", "scheduled"]
SCOPES: tuple[str, ...] = ("pr", "scheduled")
RANKING_KINDS: tuple[str, ...] = kinds_where(output="ranking")
"""Kinds the lane runs on the ranking fixtures."""
NOISE_KINDS: tuple[str, ...] = kinds_where(output="score", replayed=False)
"""Kinds the lane runs on the noise pair suites."""
JUDGED_KINDS: tuple[str, ...] = RANKING_KINDS + NOISE_KINDS
OVERRIDES = Path("data") / "policies" / "overrides.jsonl"
"""The project's override store (relative to its root), as ``ranking run`` and ``noise`` read it."""
_CATEGORY: dict[str, Category] = {
    "quality_failed": "failure",
    "evaluation_incomplete": "incomplete",
    "review_required": "review",
}


@dataclass
class JudgedPlan:
    """One ranking judge on one fixture set, or one noise judge on one pair suite."""

    candidate: str
    spec_path: Path
    judge: Any
    feature: Literal["ranking", "noise"]
    subject: Any
    subject_path: Path
    out_dir: Path
    policies: list[Any] = field(default_factory=list)
    battery: dict[str, Any] = field(default_factory=dict)
    items: list[Any] = field(default_factory=list)
    estimate: float = 0.0

    @property
    def name(self) -> str:
        return f"{self.candidate} on {self.subject.label}"


def judged_inputs(inv: Inventory, kind: str) -> dict[Path, str]:
    """The project's files a ranking or noise judge's check reads: a change to one affects it."""
    from ..ranking import is_ranking_policy_file

    if kind in RANKING_KINDS:
        policies = [p for p in inv.policies if is_ranking_policy_file(p)]
        return {p.resolve(): "ranking fixtures" for p in inv.ranking} | {
            p.resolve(): "ranking policy" for p in policies
        }
    if kind in NOISE_KINDS:
        return {p.resolve(): "noise suite" for p in inv.noise}
    return {}


def _current(loaded: list[tuple[Path, Any]]) -> list[tuple[Path, Any]]:
    """The files no other loaded file supersedes (``name`` and ``supersedes``)."""
    superseded = {(x.name, x.supersedes) for _, x in loaded if x.supersedes}
    return [(p, x) for p, x in loaded if (x.name, x.version) not in superseded]


def _load_all(
    inv: Inventory, paths: list[Path], load: Any, group: str, checks: list[CheckResult]
) -> list[tuple[Path, Any]]:
    """Each file loaded; one contract check per file that does not load."""
    out = []
    for path in paths:
        try:
            out.append((path, load(path)))
        except WorkbenchError as exc:
            code = exc.problems[0].code if exc.problems else "invalid"
            details = [p.format() for p in exc.problems]
            checks.append(
                problem_check(group, inv.rel(path), "contract", code, exc.summary, details)
            )
    return _current(out)


def _ranking_policies(inv: Inventory, fixtures: str) -> list[Any]:
    """The ranking policies naming the fixture set (enforcing ones first), else the built-in."""
    from ..ranking import default_policy, is_ranking_policy_file, load_ranking_policy

    found = [load_ranking_policy(p) for p in inv.policies if is_ranking_policy_file(p)]
    named = sorted(
        (p for p in found if p.fixtures == fixtures), key=lambda p: (p.mode != "enforce", p.label)
    )
    return named or [default_policy()]


def _ranking_plan(
    inv: Inventory, path: Path, judge: Any, fixtures: tuple[Path, Any], scope: Scope, out: Path
) -> JudgedPlan | CheckResult:
    """The battery of one ranking judge on one fixture set, priced (module doc)."""
    from ..ranking import position_battery
    from ..runs import estimate_run

    source, fixture_set = fixtures
    policies = _ranking_policies(inv, fixture_set.name)
    battery: dict[str, Any] = {
        "plan": "rotation" if scope == "pr" else "exhaustive",
        "repeats": max(p.confirmation.repeats for p in policies),
    }
    subject = fixture_set
    if scope == "pr":
        must = [f for f in fixture_set.fixtures if f.gate == "must-win"]
        name = f"{judge.spec.label} on {fixture_set.label}"
        if not must:
            note = "no must-win fixture: its fixtures run in the scheduled scope"
            return passed_check("ranking", name, note)
        # the file's must-win fixtures; the run keeps the file's hash, so a failure artifact's
        # `workbench ranking replay` line replays the case from the file itself
        subject = fixture_set.model_copy(update={"fixtures": must})
    items = position_battery(subject, **battery)
    run_dir = out / judge.spec.label / "ranking" / fixture_set.label
    needed = estimate_run("ranking", judge, items, run_dir, cache_dir=False).needed_usd
    return JudgedPlan(
        judge.spec.label, path, judge, "ranking", subject, source, run_dir, policies, battery,
        items, needed,
    )  # fmt: skip


def _noise_plan(
    path: Path, judge: Any, found: tuple[Path, Any], scope: Scope, out: Path
) -> JudgedPlan:
    """One noise judge on one suite, priced on every control and selected candidate member (an
    upper bound: a pair a retrieval assertion refuses is never scored)."""
    from ..noise import member_items, selected_candidates
    from ..runs import estimate_run

    source, suite = found
    pairs = [
        *suite.controls(),
        *selected_candidates(suite, None, scope == "pr", exclude_held_out=True),
    ]
    run_dir = out / judge.spec.label / "noise" / suite.label
    needed = estimate_run("noise", judge, member_items(pairs), run_dir, cache_dir=False)
    return JudgedPlan(
        judge.spec.label, path, judge, "noise", suite, source, run_dir,
        estimate=needed.needed_usd,
    )  # fmt: skip


def _noise_refusal(where: str, suite: Any, name: str, scope: Scope) -> CheckResult | None:
    """Why the lane cannot run a suite (None: it can): no sentinel set for the ``pr`` scope, or
    held-out pairs among what it would have to score (controls, the ``pr`` sentinel set)."""
    from ..noise import selected_candidates

    if scope == "pr" and not suite.sentinels:
        message = "the suite declares no sentinel set: the pull-request scope has none to run"
        fix = f"{where}: declare sentinels: [pair ids] in a new suite version"
        return problem_check("noise", name, "incomplete", "sentinels_missing", message, [fix])
    sentinels = selected_candidates(suite, None, True) if scope == "pr" else []
    held = [
        (p.pair_id, "sentinel" if p.role == "candidate" else "control")
        for p in [*suite.controls(), *sentinels]
        if p.partition == "held_out"
    ]
    if not held:
        return None
    message = (
        f"not run: the {scope} scope would score {len(held)} held-out pair(s)"
        f" ({', '.join(f'{what} {pid}' for pid, what in held)}) and CI lanes never score held-out"
        " pairs"
    )
    fix = (
        f"{where}: in a new suite version, move them to development or calibration (or drop the"
        " sentinels from sentinels:); held-out pairs are scored only outside CI, each use"
        " recorded in the held-out ledger"
    )
    return problem_check(
        "noise", name, "incomplete", "held_out_not_run", message, [fix],
        failing=sorted({pid for pid, _ in held}),
    )  # fmt: skip


def plan_judged(
    inv: Inventory, candidates: list[tuple[Path, Any]], scope: Scope, out: Path
) -> tuple[list[JudgedPlan], list[CheckResult]]:
    """What each changed ranking or noise judge will run, and a check per input that does not
    load or has nothing for the scope to run."""
    from ..judges import build_judge
    from ..noise import load_pairs
    from ..ranking import load_fixtures

    checks: list[CheckResult] = []
    ranking = any(spec.kind in RANKING_KINDS for _, spec in candidates)
    noise = any(spec.kind in NOISE_KINDS for _, spec in candidates)
    sets = _load_all(inv, inv.ranking, load_fixtures, "ranking", checks) if ranking else []
    suites = _load_all(inv, inv.noise, load_pairs, "noise", checks) if noise else []
    plans: list[JudgedPlan] = []
    for path, spec in candidates:
        judge = build_judge(spec, path)
        if spec.kind in RANKING_KINDS:
            for found in sets:
                made = _ranking_plan(inv, path, judge, found, scope, out)
                if isinstance(made, JudgedPlan):
                    plans.append(made)
                else:
                    checks.append(made)
            continue
        for source, suite in suites:
            refused = _noise_refusal(
                inv.rel(source), suite, f"{spec.label} on {suite.label}", scope
            )
            if refused is not None:
                checks.append(refused)
                continue
            plans.append(_noise_plan(path, judge, (source, suite), scope, out))
    if (ranking and not sets) or (noise and not suites):
        what = "ranking fixture file" if ranking and not sets else "noise pair suite"
        message = f"a changed judge needs a {what} and the project has none that loads"
        fix = "add one under data/ (or ci: paths: in workbench.yaml)"
        checks.append(
            problem_check("sentinels", what, "incomplete", "inputs_missing", message, [fix])
        )
    return plans, checks


def _gate_check(group: str, name: str, decided: Any, summary: str, seconds: float) -> CheckResult:
    """The feature gate's decision as a check: its exit code and outcome, its blockers listed."""
    if decided.exit_code == 0:  # passed, or a report-only policy's outcome (named in summary)
        return CheckResult(
            group=group, name=name, status="passed", message=summary, seconds=seconds
        )
    blockers = decided.blockers
    details = [f"[{b.category}] {b.code}: {b.message}" for b in blockers]
    failing = sorted({case for b in blockers for case in b.case_ids})
    code = blockers[0].code if blockers else decided.outcome
    category = _CATEGORY[decided.outcome]
    return problem_check(
        group, name, category, code, summary, details, failing=failing, seconds=seconds
    )


def _overrides(inv: Inventory) -> list[Any]:
    from ..policy import load_overrides

    store = inv.root / OVERRIDES
    return list(load_overrides(store)) if store.is_file() else []


async def _run_ranking(
    inv: Inventory, plan: JudgedPlan, budget_usd: float, concurrency: int, progress: bool
) -> tuple[list[CheckResult], list[Any]]:
    from ..ranking import ranking_report, run_ranking, write_ranking_artifacts

    t0 = time.perf_counter()
    summary = await run_ranking(
        plan.judge,
        plan.subject,
        plan.out_dir,
        **plan.battery,
        concurrency=concurrency,
        budget_usd=budget_usd,
        cache_dir=False,
        progress=progress,
        capture=plan.policies[0].capture,
        candidate_path=plan.spec_path,
    )
    seconds = round(time.perf_counter() - t0, 3)
    checks, overrides = [], _overrides(inv)
    for policy in plan.policies:
        report = ranking_report(
            plan.subject, summary.results_path, planned=plan.items, policy=policy,
            overrides=overrides,
        )  # fmt: skip
        write_ranking_artifacts(report, plan.out_dir / "gate" / policy.label)
        gate = report.gate
        assert gate is not None  # ranking_report gates every report
        line = f"{gate.summary}; {report.counts_line()}"
        checks.append(
            _gate_check("ranking", f"{plan.name} under {policy.label}", gate, line, seconds)
        )
    return checks, [summary]


async def _run_noise(
    inv: Inventory, plan: JudgedPlan, budget_usd: float, concurrency: int, scope: Scope,
    progress: bool,
) -> tuple[list[CheckResult], list[Any]]:  # fmt: skip
    from ..noise import (
        NOISE_REPORT_FILE,
        join_companions,
        load_companions,
        noise_report,
        run_noise,
        selected_candidates,
    )

    suite, sentinels_only = plan.subject, scope == "pr"
    limit = suite.policy.max_concurrency
    t0 = time.perf_counter()
    run = await run_noise(
        plan.judge,
        suite,
        plan.out_dir,
        concurrency=min(concurrency, limit) if limit else concurrency,
        budget_usd=min(budget_usd, suite.policy.max_cost_usd),
        sentinels_only=sentinels_only,
        exclude_held_out=True,  # a CI lane never spends a held-out use (module doc)
        cache_dir=False,
        progress=progress,
    )
    seconds = round(time.perf_counter() - t0, 3)
    values = plan.subject_path.with_name(f"{plan.subject_path.stem}.companions.jsonl")
    join = None
    if values.is_file():
        pairs = selected_candidates(suite, None, sentinels_only, exclude_held_out=True)
        join = join_companions(pairs, list(suite.policy.companions), load_companions([values]))
    report = noise_report(suite, run, companions=join, overrides=_overrides(inv))
    atomic_write_json(plan.out_dir / NOISE_REPORT_FILE, report.model_dump(mode="json"))
    kept = {b.category for b in report.blockers}
    line = (
        f"{report.outcome}: {len(report.blockers)} blocker(s) ({', '.join(sorted(kept)) or 'none'})"
    )
    summaries = [s for s in (run.controls, run.candidates, run.repeats) if s is not None]
    return [_gate_check("noise", plan.name, report, line, seconds)], summaries


async def run_judged(
    inv: Inventory,
    plan: JudgedPlan,
    *,
    budget_usd: float,
    concurrency: int,
    scope: Scope,
    progress: bool,
) -> tuple[list[CheckResult], list[Any]]:
    """Run one plan under ``budget_usd``: its checks and the run summaries it made."""
    if plan.feature == "ranking":
        return await _run_ranking(inv, plan, budget_usd, concurrency, progress)
    return await _run_noise(inv, plan, budget_usd, concurrency, scope, progress)
