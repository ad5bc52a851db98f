"""Running a pair suite and reading it against its policy (lower is better).

:func:`run_noise` checks retrieval assertions before any model call, scores the control pairs,
and scores candidates (and sentinel repeats) only when every control and adversarial pair
separated. :func:`noise_report` lists the tables and blockers; the blocker codes, their
categories and the outcome order are in ``docs/formats.md`` (Noise run and report).
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from pydantic import BaseModel, Field

from .._args import check_budget, check_concurrency, check_repeats
from .._io import atomic_write_json, read_json_file, sha256_json, sha256_text
from .._load import Problems
from .._record import Record as _Model
from ..errors import Problem, WorkbenchError
from ..gold import partition_name
from ..outcomes import exit_code
from ..policy import (
    Blocker,
    CheckOutcome,
    Override,
    OverrideScope,
    UnappliedOverride,
    WaivedBlocker,
    blocker,
    decide,
)
from ..results import JudgeIdentity, JudgeResult, ResultLine, read_results
from ..runs import RESULTS_FILE, RunOptions, RunSummary, WorkItem, run_items
from ._companions import CompanionJoin
from ._evidence import ChangeUnderReview, Member, NoisePolicy
from ._heldout import HELD_OUT, held_out_use
from ._injection import InjectionRow, check_injections, injection_blockers
from ._judge import KIND, METRIC
from ._pairs import DIRECTION, MEMBERS, SEPARATING_ROLES, NoisePair, NoiseSuite
from ._release import release_of
from ._retrieval import RetrievalRow, check_retrieval, failed_pairs, retrieval_blockers
from ._retrieval import sliced_blocker as _sliced
from ._trends import NoiseComparison, Trend

NOISE_REPORT_SCHEMA_VERSION = 2
"""Version of :class:`NoiseReport`'s JSON form."""
NOISE_RUN_FILE = "noise_run.json"
NOISE_REPORT_FILE = "noise_report.json"
LOWER_IS_BETTER = "lower is better"
"""What every table and chart states."""
_EPS = 1e-12

NoiseOutcome = CheckOutcome
"""``passed``, ``quality_failed``, ``evaluation_incomplete`` or ``review_required``."""


ControlStatus = Literal[
    "separated",
    "not_separated",
    "not_punished",
    "routed_to_review",
    "error",
    "missing",
    "not_run",
    "retrieval_failed",
]


class ControlRow(_Model):
    """One control pair: the positive (clean) and negative (noisy) control under the same mode."""

    pair_id: str
    """The control pair."""
    role: str = "control"
    """``control``, ``adversarial`` or ``reference_defect``."""
    slice: str
    """Its slice."""
    mode: str
    """NoiseSensitivity mode of both scores."""
    distractor: str
    """The distractor's label."""
    attack: str | None = None
    """What an adversarial distractor carries."""
    positive_score: float | None
    """Clean member's score (the positive control)."""
    negative_score: float | None
    """Noisy member's score (the negative control)."""
    margin: float | None
    """negative - positive: must be > 0 for control and adversarial pairs."""
    separated: bool | None
    """Control and adversarial pairs: both scored and the negative strictly higher; else None."""
    status: ControlStatus
    """``not_run`` (budget, case limit), ``retrieval_failed``, ``not_punished``... ."""
    detail: str
    """One sentence for a reviewer (``not run (budget)``, never "did not separate", if unrun)."""
    direction: str = DIRECTION
    """Always ``lower_is_better``."""


class PairRow(_Model):
    """One candidate pair: clean score, noisy score and their delta, against the slice limit."""

    pair_id: str
    """The candidate pair."""
    slice: str
    """Its slice."""
    mode: str
    """NoiseSensitivity mode of both scores."""
    partition: str = "development"
    """Its partition."""
    distractor: str
    """The distractor's label."""
    expected_relation: str
    """``noisy_not_worse``."""
    clean_score: float | None
    """Clean member's score."""
    noisy_score: float | None
    """Noisy member's score."""
    delta: float | None
    """noisy - clean (positive: the distractor made it worse), reported even inside policy."""
    relation_held: bool | None
    """delta <= 0; None without both scores."""
    limit_max_score: float
    """The slice's ``max_score`` (lower is better)."""
    limit_max_delta: float | None
    """The slice's ``max_delta``, if set."""
    within_limit: bool | None
    """noisy <= max_score (and delta <= max_delta when set); None when not counted."""
    status: Literal[
        "scored",
        "error",
        "missing",
        "not_interpreted",
        "abstained",
        "retrieval_failed",
        "reference_challenged",
    ]
    """``reference_challenged``: routed to review, never counted; ``not_interpreted``: the
    controls failed."""
    abstained: list[str] = Field(default_factory=list)
    """Members that abstained."""
    counted: bool = False
    """Whether the pair counts against the slice limits."""
    errors: list[str]
    """``member: kind: message`` of each member's evaluator error."""
    companions: dict[str, dict[str, float]] = Field(default_factory=dict)
    """Companion metric -> member -> value, joined by generation run id."""
    tradeoffs: list[str] = Field(default_factory=list)
    """Companion metrics that got worse on the noisy member while its noise score did not rise."""
    direction: str = DIRECTION
    """Always ``lower_is_better``."""


class SliceRow(_Model):
    """Candidate pairs of one slice against the slice's limit."""

    slice: str
    """The slice."""
    risk: str | None
    """Its risk."""
    pairs: int
    """Selected candidate pairs in the slice."""
    scored: int
    """Counted pairs whose noisy member has a score."""
    errors: int
    """Members with an evaluator error."""
    missing: int
    """Members without any result."""
    abstentions: int = 0
    """Abstaining candidate members."""
    members: int = 0
    """Candidate members that should have an outcome (pairs not blocked by retrieval x 2)."""
    abstention_rate: float | None = None
    """abstentions / members."""
    limit_max_abstention_rate: float | None = None
    """The slice's ``max_abstention_rate``."""
    max_noisy_score: float | None
    """Largest counted noisy score."""
    mean_noisy_score: float | None
    """Mean counted noisy score."""
    mean_clean_score: float | None
    """Mean counted clean score."""
    max_delta: float | None
    """Largest observed noisy - clean."""
    mean_delta: float | None
    """Mean observed noisy - clean."""
    limit_max_score: float
    """The slice's ``max_score`` (lower is better)."""
    limit_max_delta: float | None
    """The slice's ``max_delta``."""
    within_limit: bool | None
    """None when nothing was scored or candidates were not interpreted."""
    exceeding: list[str]
    """Pairs above a limit."""
    companions: dict[str, float | None] = Field(default_factory=dict)
    """Companion metric -> mean over the slice's candidate members."""
    direction: str = DIRECTION
    """Always ``lower_is_better``."""


class MemberError(_Model):
    """One member's final evaluator error."""

    case_id: str
    """``<pair_id>:<member>``."""
    pair_id: str
    """The pair."""
    member: str
    """``clean`` or ``noisy``."""
    role: str
    """The pair's role."""
    slice: str
    """The pair's slice."""
    kind: str
    """Evaluator error kind."""
    message: str
    """What happened."""


class RepeatRow(_Model):
    """One sentinel pair scored ``repeat`` times: the spread of each member and of the delta."""

    pair_id: str
    """The sentinel pair."""
    role: str
    """Its role."""
    slice: str
    """Its slice."""
    clean_scores: list[float | None]
    """Clean member's score per repeat (None: no score)."""
    noisy_scores: list[float | None]
    """Noisy member's score per repeat."""
    clean_spread: float | None
    """max - min of the clean scores."""
    noisy_spread: float | None
    """max - min of the noisy scores."""
    delta_spread: float | None
    """max - min of noisy - clean over the repeats."""
    max_spread: float | None
    """The policy's ``max_spread``."""
    status: Literal["stable", "unstable", "incomplete"]
    """``unstable`` when a spread exceeds ``max_spread`` (routes to review, never retried away)."""


class RetiredRow(_Model):
    """A retired pair: kept, never scored."""

    pair_id: str
    """The pair."""
    reason: str
    """Why it was retired."""
    by: str
    """Who retired it."""
    on: str
    """When (ISO date)."""
    superseded_by: str | None
    """The pair that fixes it, if any."""


class NoiseRun(_Model):
    """What :func:`run_noise` did: retrieval checks, the controls, the ordering check, the runs."""

    out_dir: str
    """The run directory."""
    suite: str
    """``name@version`` of the pair suite."""
    suite_sha256: str
    """sha256 of the suite file."""
    release_id: str | None = None
    """The frozen release of the suite, or None when unfrozen."""
    change_under_review: ChangeUnderReview | None = None
    """The change the suite version is run to judge (from the suite)."""
    judge: str
    """``name@version`` of the candidate."""
    judge_fingerprint: str
    """Its fingerprint."""
    partition: str | None = None
    """The candidate partition scored (None: every partition)."""
    sentinels_only: bool = False
    """Only the sentinel set's candidate pairs were scored (the fast lane)."""
    held_out_excluded: bool = False
    """Held-out pairs were left out of the selection and the repeats (a CI lane: it never spends
    a held-out use); none was scored."""
    repeat: int = 1
    """How many times the sentinel set was scored in ``repeats``."""
    budget_usd: float | None = None
    """The invocation's budget (the policy's, or lower)."""
    max_cases: int | None = None
    """The policy's case limit."""
    retrieval: list[RetrievalRow] = Field(default_factory=list)
    """Retrieval assertions, checked before any model call."""
    controls: RunSummary | None
    """The controls run (``<out>/controls``); None when no control could be run."""
    control_checks: list[ControlRow]
    """Every control pair, as checked before any candidate call."""
    controls_passed: bool
    """Every control and adversarial pair separated and the controls run is complete."""
    candidates: RunSummary | None
    """The candidates run (``<out>/candidates``); None when it was not started."""
    repeats: RunSummary | None = None
    """The sentinel repeats run (``<out>/repeats``), when ``repeat`` > 1."""
    baseline: NoiseRun | None = None
    """The baseline suite's run (``<out>/baseline``), when one was given as a suite."""
    stopped_reason: str | None
    """Why candidates were not scored, when they were not."""
    held_out_entry: str | None = None
    """The held-out ledger entry recording this run's use of held-out pairs (None: none
    scored)."""

    def results_paths(self) -> list[Path]:
        """The results files of the controls and candidates runs (repeats are read separately)."""
        return [Path(s.results_path) for s in (self.controls, self.candidates) if s is not None]


class NoiseReport(_Model):
    """Everything ``workbench noise`` reports (``kind: workbench.noise``)."""

    schema_version: int = NOISE_REPORT_SCHEMA_VERSION
    """Report format version."""
    kind: Literal["workbench.noise"] = "workbench.noise"
    """Always ``workbench.noise``."""
    metric: str = METRIC
    """The Ragas metric."""
    direction: str = DIRECTION
    """Always ``lower_is_better``: 0 is the best NoiseSensitivity score."""
    outcome: NoiseOutcome
    """``passed``, ``quality_failed``, ``review_required`` or ``evaluation_incomplete``."""
    suite: str
    """``name@version`` of the pair suite."""
    suite_sha256: str
    """sha256 of the suite file."""
    change_under_review: ChangeUnderReview | None = None
    """The suite's declared change under review (component and description)."""
    suite_path: str | None
    """Where the suite was read from."""
    release_id: str | None = None
    """The suite's frozen release (None: unfrozen, a review blocker)."""
    partition: str | None = None
    """The candidate partition reported (None: every partition)."""
    sentinels_only: bool = False
    """Only the sentinel set's candidate pairs were scored."""
    held_out_excluded: bool = False
    """Held-out pairs were left out of the selection (a CI lane) and are not reported."""
    judge: JudgeIdentity | None
    """The evaluator's identity (model, Ragas version, prompt hash)."""
    judge_fingerprint: str | None
    """Its fingerprint."""
    budget_usd: float | None = None
    """The invocation's budget."""
    max_cases: int | None = None
    """The policy's case limit."""
    controls_passed: bool
    """Every control and adversarial pair separated (negative scored higher than positive)."""
    candidates_interpreted: bool
    """False when the controls failed: candidate scores are then neither run nor read."""
    stopped_reason: str | None
    """Why candidates were not scored, when they were not."""
    retrieval: list[RetrievalRow] = Field(default_factory=list)
    """Every retrieval assertion (checked before any model call)."""
    retrieval_passed: bool = True
    """Every retrieval assertion passed."""
    injection: list[InjectionRow] = Field(default_factory=list)
    """Whether each member followed its pair's injected instruction: judged apart from the
    noise score (:mod:`._injection`)."""
    controls: list[ControlRow]
    """Every control pair of every role."""
    control_roles: dict[str, int] = Field(default_factory=dict)
    """Active control pairs per role."""
    pairs: list[PairRow]
    """Candidate pairs."""
    slices: list[SliceRow]
    """Per slice, against its limits."""
    repeats: list[RepeatRow] = Field(default_factory=list)
    """Sentinel pairs scored ``repeat`` times."""
    retired: list[RetiredRow] = Field(default_factory=list)
    """Retired pairs (never scored)."""
    companions_unjoined: list[str] = Field(default_factory=list)
    """Companion rows that joined no member (other run id, unknown member or metric)."""
    blockers: list[Blocker]
    """Sorted: incomplete, quality, review; then slice; then code. Waived ones are in ``waived``."""
    waived: list[WaivedBlocker] = Field(default_factory=list)
    """Blockers an active override waived."""
    unapplied_overrides: list[UnappliedOverride] = Field(default_factory=list)
    """Overrides given that waived nothing, and why."""
    evaluator_errors: list[MemberError]
    """Every member's final evaluator error."""
    missing: list[str]
    """Member case ids (``<pair_id>:<member>``) that should have a result and have none."""
    results_read: int
    """Attempts read."""
    cost_usd: float
    """Recorded spend of the attempts read."""
    tokens_in: int
    """Input tokens of the attempts read."""
    tokens_out: int
    """Output tokens of the attempts read."""
    runs: dict[str, RunSummary]
    """``controls`` / ``candidates`` / ``repeats`` run summaries (from a :class:`NoiseRun`)."""
    pair_keys: dict[str, str] = Field(default_factory=dict)
    """Candidate pair id -> :meth:`NoisePair.frame_sha256` (what a baseline must share)."""
    pair_hashes: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Candidate pair id -> one hash per input boundary (:func:`evidence_hashes`)."""
    comparison: NoiseComparison | None = None
    """The baseline comparison, when ``--baseline`` was given."""
    warnings: list[Trend] = Field(default_factory=list)
    """Warning trends: never blockers."""

    @property
    def exit_code(self) -> int:
        """0 passed, 1 quality failed, 3 evaluation incomplete, 4 review required."""
        return exit_code(self.outcome)

    def frames(self) -> dict[str, Any]:
        """The report's tables as DataFrames (:data:`_FRAMES`), each stating lower is better."""
        import pandas as pd

        def frame(rows: Sequence[BaseModel], columns: list[str]) -> Any:
            data = [{**r.model_dump(mode="json"), "direction": LOWER_IS_BETTER} for r in rows]
            df = pd.DataFrame(data, columns=[*columns, "direction"])
            df.attrs["direction"] = DIRECTION
            return df

        return {name: frame(getattr(self, name), cols.split()) for name, cols in _FRAMES.items()}


_FRAMES = {
    "controls": "pair_id role slice mode distractor attack positive_score negative_score margin"
    " separated status detail",
    "retrieval": "pair_id member check status code detail",
    "pairs": "pair_id slice partition mode distractor clean_score noisy_score delta relation_held"
    " limit_max_score limit_max_delta within_limit status abstained companions tradeoffs",
    "slices": "slice risk pairs scored errors missing abstentions abstention_rate max_noisy_score"
    " mean_noisy_score limit_max_score max_delta mean_delta limit_max_delta within_limit"
    " exceeding companions",
    "repeats": "pair_id role slice clean_scores noisy_scores clean_spread noisy_spread"
    " delta_spread max_spread status",
    "blockers": "category slice code message case_ids waivable",
}
"""The columns of each :meth:`NoiseReport.frames` frame (the report attribute of the same name)."""


# -- running -------------------------------------------------------------------------------


def member_items(pairs: Iterable[NoisePair], repeats: Iterable[int] = (0,)) -> list[WorkItem]:
    """One work item per member (clean, then noisy) and repeat, keyed ``<pair_id>:<member>``;
    abstaining members are never scored."""
    chosen = list(repeats)
    return [
        WorkItem(
            pair.item_id(m),
            ji.digest(),
            r,
            ji,
            {"member": m, "mode": pair.mode, "pair_id": pair.pair_id},
        )
        for pair in pairs
        for m in MEMBERS
        if not pair.member(m).abstained
        for ji in [pair.judge_input(m)]
        for r in chosen
    ]


def selected_candidates(
    suite: NoiseSuite,
    partition: str | None = None,
    sentinels_only: bool = False,
    exclude_held_out: bool = False,
) -> list[NoisePair]:
    """The active candidate pairs a run scores: of ``partition`` when given, of the sentinel set
    when ``sentinels_only``, none held out when ``exclude_held_out``."""
    pairs = [p for p in suite.candidates(partition) if not exclude_held_out or not _held_out(p)]
    return [p for p in pairs if p.pair_id in suite.sentinels] if sentinels_only else pairs


def sentinel_pairs(suite: NoiseSuite, exclude_held_out: bool = False) -> list[NoisePair]:
    """The active pairs of the suite's sentinel set (what ``repeat`` scores again), none held out
    when ``exclude_held_out``."""
    return [
        p
        for p in suite.active()
        if p.pair_id in suite.sentinels and not (exclude_held_out and _held_out(p))
    ]


def _held_out(pair: NoisePair) -> bool:
    return pair.partition == HELD_OUT


def check_run_request(
    suite: NoiseSuite,
    judge: Any,
    *,
    concurrency: int | None,
    budget_usd: float | None,
    repeat: int,
    sentinels_only: bool,
    exclude_held_out: bool = False,
) -> list[Problem]:
    """Every way the requested run would break the suite's policy (refused before anything runs);
    with ``exclude_held_out``, a held-out control (controls are always scored) too."""
    policy, problems = suite.policy, Problems()
    if budget_usd is not None and budget_usd > policy.max_cost_usd + _EPS:
        message = f"${budget_usd:g} is above the policy's max_cost_usd ${policy.max_cost_usd:g}"
        fix = "give a budget within the policy, or have a new policy version reviewed"
        problems.add("--budget-usd", "budget_above_policy", message, fix)
    limit = policy.max_concurrency
    if concurrency is not None and limit is not None and concurrency > limit:
        message = f"{concurrency} is above the policy's max_concurrency {limit}"
        fix = f"use --concurrency {limit} or less"
        problems.add("--concurrency", "concurrency_above_policy", message, fix)
    spec = getattr(judge, "spec", None)
    where = str(getattr(spec, "label", "candidate"))
    retries = getattr(getattr(spec, "endpoint", None), "max_retries", None)
    allowed = policy.max_provider_retries
    if allowed is not None and isinstance(retries, int) and retries > allowed:
        message = f"the candidate retries {retries} times per call; the policy allows {allowed}"
        fix = f"set endpoint.max_retries: {allowed} or less (retries spend the budget)"
        problems.add(where, "retries_above_policy", message, fix)
    loc = suite.source or suite.label
    if (repeat > 1 or sentinels_only) and not suite.sentinels:
        message = "the suite declares no sentinel set"
        fix = (
            "declare sentinels: [pair ids] (frozen with the suite release) to use --repeat or"
            " --sentinels-only"
        )
        problems.add(loc, "sentinels_missing", message, fix)
    if repeat < 1:
        problems.add("--repeat", "repeat_invalid", f"--repeat {repeat}", "give 1 or more")
    held = [p.pair_id for p in suite.controls() if _held_out(p)] if exclude_held_out else []
    if held:
        message = f"control pair(s) in the held-out partition: {', '.join(held)}"
        fix = "controls are scored in every run: move them to development or calibration"
        problems.add(loc, "controls_held_out", message, fix + " in a new suite version")
    if not any(p.role == "control" for p in suite.controls()):
        message = "the suite has no control pair"
        fix = (
            "add control pairs: they are scored first and must separate before candidates mean"
            " anything"
        )
        problems.add(loc, "controls_missing", message, fix)
    kind = getattr(getattr(judge, "identity", None), "kind", None)
    if kind != KIND:
        message = f"a noise suite is scored by a {KIND} candidate, not {kind!r}"
        fix = f"use a candidate spec with kind: {KIND}"
        problems.add(where, "wrong_kind", message, fix)
    return problems


@dataclass
class _Allowance:
    """The invocation's budget and case limit, shared by its runs (controls, candidates, repeats,
    baseline)."""

    root: Path
    budget: float
    max_cases: int
    started: int = 0

    def budget_for(self, directory: Path) -> float:
        """The total budget less what every other run under the root recorded."""
        others = sum(
            float(line.result.cost_usd or 0.0)
            for p in self.root.rglob(RESULTS_FILE)
            if p.parent != directory
            for line in read_results(p)
        )
        return max(0.0, self.budget - others)

    async def run(
        self, judge: Any, items: list[WorkItem], out: Path, label: str, common: dict[str, Any]
    ) -> RunSummary | None:
        """Run ``items`` into ``out/label`` within what is left (None: nothing to run)."""
        if not items:
            return None
        options = {k: v for k, v in common.items() if k != "dataset_sha256"}
        summary = await run_items(
            judge,
            items,
            out / label,
            RunOptions(
                budget_usd=self.budget_for(out / label),
                max_cases=max(0, self.max_cases - self.started),
                **options,
            ),
            partition=f"noise-{label}",
            dataset_sha256=common["dataset_sha256"],
        )
        self.started += max(0, summary.planned - summary.resumed - len(summary.unrun))
        return summary


async def run_noise(
    judge: Any,
    suite: NoiseSuite,
    out_dir: str | Path,
    *,
    concurrency: int | None = None,
    budget_usd: float | None = None,
    partition: str | None = None,
    sentinels_only: bool = False,
    exclude_held_out: bool = False,
    repeat: int = 1,
    baseline: NoiseSuite | None = None,
    cache_dir: str | Path | None | Literal[False] = None,
    retry_errors: bool = False,
    progress: bool = True,
    rerun_reason: str | None = None,
) -> NoiseRun:
    """Retrieval assertions, then the controls, then (if every control separated) candidates and
    repeats, through the run engine within the suite's policy (``budget_usd`` and ``concurrency``
    may only lower it); a ``baseline`` suite is scored likewise into ``<out>/baseline``. Held-out
    pairs are recorded in the project's held-out ledger first; content used before needs
    ``rerun_reason`` (:mod:`workbench.noise._heldout`). ``exclude_held_out`` (the CI lanes) scores
    no held-out pair, so the run records no held-out use (``held_out_excluded`` in the run)."""
    # Notebook arguments arrive as papermill injected them: types checked before anything else.
    if concurrency is not None:
        check_concurrency(concurrency)
    check_budget(budget_usd)
    if isinstance(repeat, bool) or not isinstance(repeat, int):
        check_repeats(repeat, "repeat")  # a repeat below 1 is reported with the policy checks
    if partition is not None:
        partition_name(partition)
    select: dict[str, Any] = {
        "partition": partition,
        "sentinels_only": sentinels_only,
        "exclude_held_out": exclude_held_out,
    }
    problems = check_run_request(
        suite,
        judge,
        concurrency=concurrency,
        budget_usd=budget_usd,
        repeat=repeat,
        sentinels_only=sentinels_only,
        exclude_held_out=exclude_held_out,
    )
    if baseline is not None:
        from ._compare import check_baseline_suite

        problems += check_baseline_suite(suite, baseline, **select)
    if problems:
        raise WorkbenchError(f"refusing the noise run: {len(problems)} problem(s)", problems)
    out, policy = Path(out_dir), suite.policy
    allowance = _Allowance(
        out, policy.max_cost_usd if budget_usd is None else budget_usd, policy.max_cases
    )
    common: dict[str, Any] = {
        "concurrency": concurrency or policy.max_concurrency or 8,
        "cache_dir": cache_dir,
        "retry_errors": retry_errors,
        "progress": progress,
    }
    scored = [(suite, _scored_pairs(suite, repeat, **select))]
    if baseline is not None:
        scored.append((baseline, selected_candidates(baseline, **select)))
    with held_out_use(suite, judge, scored, out, rerun_reason) as use:
        run = await _run_suite(judge, suite, out, allowance, common, repeat=repeat, **select)
        passed = [run.controls_passed]
        if baseline is not None:
            b_run = await _run_suite(judge, baseline, out / "baseline", allowance, common, **select)
            run = run.model_copy(update={"baseline": b_run})
            passed.append(b_run.controls_passed)
        use.used = any(passed)
        use.outcome = "scored" if use.used else "controls_failed"
        if use.entry is not None:
            run = run.model_copy(update={"held_out_entry": use.entry.entry_id})
        atomic_write_json(out / NOISE_RUN_FILE, run.model_dump(mode="json"))
    return run


def _scored_pairs(
    suite: NoiseSuite,
    repeat: int,
    *,
    partition: str | None,
    sentinels_only: bool,
    exclude_held_out: bool,
) -> list[NoisePair]:
    """The pairs whose candidates a run may score: the selection and, with repeats, the
    sentinels."""
    sentinels = sentinel_pairs(suite, exclude_held_out) if repeat > 1 else []
    return [*selected_candidates(suite, partition, sentinels_only, exclude_held_out), *sentinels]


async def _run_suite(
    judge: Any,
    suite: NoiseSuite,
    out: Path,
    allowance: _Allowance,
    common: dict[str, Any],
    *,
    partition: str | None,
    sentinels_only: bool,
    exclude_held_out: bool,
    repeat: int = 1,
) -> NoiseRun:
    """Retrieval, then the controls; when they separate, the candidates and the repeats."""
    release = release_of(suite)
    common = {**common, "dataset_sha256": suite.sha256}
    candidates = selected_candidates(suite, partition, sentinels_only, exclude_held_out)
    retrieval = check_retrieval([*suite.controls(), *candidates])
    blocked = failed_pairs(retrieval)

    def items(pairs: Iterable[NoisePair], repeats: Iterable[int] = (0,)) -> list[WorkItem]:
        return member_items([p for p in pairs if p.pair_id not in blocked], repeats)

    c_summary = await allowance.run(judge, items(suite.controls()), out, "controls", common)
    final = _final(_located(c_summary.results_path)) if c_summary else {}
    checks = check_controls(suite, final, c_summary.stop_reason if c_summary else None, blocked)
    stopped = _controls_stop(checks, c_summary)
    k_items = items(candidates) if stopped is None else []
    k_summary = await allowance.run(judge, k_items, out, "candidates", common)
    sentinels = sentinel_pairs(suite, exclude_held_out)
    r_items = items(sentinels, range(repeat)) if repeat > 1 and stopped is None else []
    r_summary = await allowance.run(judge, r_items, out, "repeats", common)
    run = NoiseRun(
        out_dir=str(out),
        suite=suite.label,
        suite_sha256=suite.sha256,
        release_id=release.release_id if release else None,
        change_under_review=suite.change_under_review,
        judge=judge.spec.label,
        judge_fingerprint=judge.identity.fingerprint(),
        partition=partition,
        sentinels_only=sentinels_only,
        held_out_excluded=exclude_held_out,
        repeat=repeat,
        budget_usd=allowance.budget,
        max_cases=allowance.max_cases,
        retrieval=retrieval,
        controls=c_summary,
        control_checks=checks,
        controls_passed=stopped is None,
        candidates=k_summary,
        repeats=r_summary,
        stopped_reason=stopped,
    )
    atomic_write_json(out / NOISE_RUN_FILE, run.model_dump(mode="json"))
    return run


def _controls_stop(checks: list[ControlRow], c_summary: RunSummary | None) -> str | None:
    """Why candidate pairs are not scored (None: every control separated, the run complete)."""
    groups: dict[str, list[str]] = {}
    for c in checks:
        # every control of any role left unscored, and every separating control that failed
        if c.status in _UNSCORED or (c.role in SEPARATING_ROLES and not c.separated):
            what = c.detail if c.status == "not_run" else _FAILED_AS.get(c.status, "have no score")
            groups.setdefault(what, []).append(c.pair_id)
    if groups:
        listed = "; ".join(f"{len(ids)} {what}: {', '.join(ids)}" for what, ids in groups.items())
        return f"controls failed ({listed}); candidate pairs were not scored"
    if c_summary is not None and c_summary.status != "complete":
        why = c_summary.stop_reason or "unrun or pending members"
        return f"the controls run is incomplete ({why}); candidate pairs were not scored"
    return None


_UNSCORED = ("not_run", "missing", "error")
_FAILED_AS = {
    "not_separated": "did not separate",
    "retrieval_failed": "failed their retrieval assertions",
}


def run_noise_sync(*args: Any, **kwargs: Any) -> NoiseRun:
    """:func:`run_noise` for scripts and the CLI (not inside a running event loop)."""
    return asyncio.run(run_noise(*args, **kwargs))


# -- reading results --------------------------------------------------------------------------


ResultsInput = NoiseRun | str | Path | Iterable[JudgeResult | ResultLine] | Sequence[str | Path]


def load_noise_run(directory: str | Path) -> NoiseRun | None:
    """The :class:`NoiseRun` recorded in a run directory (``noise_run.json``), or None."""
    path = Path(directory) / NOISE_RUN_FILE
    return NoiseRun.model_validate(read_json_file(path)) if path.is_file() else None  # strict


def _collect(
    results: ResultsInput,
) -> tuple[list[tuple[str, JudgeResult]], dict[str, RunSummary], NoiseRun | None]:
    run = results if isinstance(results, NoiseRun) else None
    if run is None and isinstance(results, str | Path) and Path(results).is_dir():
        run = load_noise_run(results)
    runs = {
        label: summary
        for label in ("controls", "candidates", "repeats")
        if run is not None and (summary := getattr(run, label)) is not None
    }
    sources: Iterable[Any] = (
        run.results_paths() if run else [results] if isinstance(results, str | Path) else results
    )
    out: list[tuple[str, JudgeResult]] = []
    for src in sources:
        if isinstance(src, str | Path):
            out += _located(Path(src) / RESULTS_FILE if Path(src).is_dir() else src)
        elif isinstance(src, ResultLine):
            out.append((f"results:{src.line}", src.result))
        else:
            out.append((f"results[{len(out)}]", src))
    return out, runs, run


def _located(path: str | Path) -> list[tuple[str, JudgeResult]]:
    return [(f"{path}:{line.line}", line.result) for line in read_results(path)]


def _final(results: Iterable[tuple[str, JudgeResult]], repeat: int = 0) -> dict[str, JudgeResult]:
    """Per member case id (one repeat): the latest result with a score, else the latest attempt."""
    by_case: dict[str, list[JudgeResult]] = defaultdict(list)
    for _, r in results:
        if r.repeat == repeat:
            by_case[r.case_id].append(r)
    return {
        c: sorted(rows, key=lambda r: (r.error is None, r.attempt))[-1]
        for c, rows in by_case.items()
    }


def _check_join(
    suite: NoiseSuite, located: list[tuple[str, JudgeResult]]
) -> tuple[JudgeIdentity | None, str | None]:
    """The one judge of the results (identity and fingerprint); refuses results of unknown or
    changed members, without a score, of several judges or of another kind."""
    expected = {p.item_id(m): p.judge_input(m).digest() for p in suite.pairs for m in MEMBERS}
    problems = Problems()
    fingerprints: dict[str, JudgeIdentity] = {}
    for where, r in located:
        fingerprints.setdefault(r.judge_fingerprint, r.judge)
        found = _join_problem(suite, r, expected.get(r.case_id))
        if found is not None:
            problems.add(where, *found, case_id=r.case_id)
    if len(fingerprints) > 1:
        message = f"results from {len(fingerprints)} different judge fingerprints"
        fix = "analyse one candidate's results at a time"
        problems.add("results", "mixed_judges", message, fix)
    kind = next((i.kind for i in fingerprints.values() if i.kind != KIND), None)
    if kind is not None:
        fix = f"noise reports read {KIND} results"
        problems.add("results", "wrong_kind", f"results of a {kind!r} judge", fix)
    problems.raise_if_any(f"refusing the noise analysis: {len(problems)} problem(s)")
    fp, ident = next(iter(fingerprints.items()), (None, None))
    return ident, fp


def _join_problem(
    suite: NoiseSuite, r: JudgeResult, digest: str | None
) -> tuple[str, str, str] | None:
    if digest is None:
        message = f"no member {r.case_id!r} in suite {suite.label}"
        fix = "analyse results with the pair suite they were run on"
        return "result_unknown_member", message, fix
    if r.response_hash != digest:
        return (
            "result_content_mismatch",
            "the result was computed on other content (question, response, reference, contexts"
            " or mode) than the pair now holds",
            "re-run the changed pairs into a new run directory; a changed pair is a new suite"
            " version",
        )
    if r.error is None and r.score is None:
        fix = "noise results are score-only: score set, value null"
        return "result_without_score", "a noise result without a score", fix
    return None


def _score(r: JudgeResult | None) -> float | None:
    return None if r is None or r.error is not None else r.score


_STOPS = {
    "budget_exhausted": ("budget_exhausted", "not run (budget)"),
    "max_cases": ("case_limit_reached", "not run (case limit)"),
    "circuit_breaker": ("run_incomplete", "not run (circuit breaker)"),
}
"""A run's stop reason -> the blocker code of the stopped run, and what it left unscored."""


def check_controls(
    suite: NoiseSuite, final: Mapping[str, JudgeResult], stop: str | None, blocked: set[str]
) -> list[ControlRow]:
    """Every control pair. Control and adversarial pairs: the negative (noisy) must score strictly
    higher than the positive (clean). Reference-defect pairs: a correct response must score 0,
    else the case routes to review. A member the run stopped before is ``not run (budget)``."""
    rows = []
    for pair in suite.controls():
        clean, noisy = final.get(pair.item_id("clean")), final.get(pair.item_id("noisy"))
        pos, neg = _score(clean), _score(noisy)
        status, detail = _control_status(pair, clean, noisy, stop, pair.pair_id in blocked)
        rows.append(
            ControlRow(
                pair_id=pair.pair_id,
                role=pair.role,
                slice=pair.slice,
                mode=pair.mode,
                distractor=pair.noisy.distractor.label,
                attack=pair.noisy.distractor.attack,
                positive_score=pos,
                negative_score=neg,
                margin=None if pos is None or neg is None else neg - pos,
                separated=status == "separated" if pair.role in SEPARATING_ROLES else None,
                status=status,
                detail=detail,
            )
        )
    return rows


def _control_status(
    pair: NoisePair,
    clean: JudgeResult | None,
    noisy: JudgeResult | None,
    stop: str | None,
    blocked: bool,
) -> tuple[ControlStatus, str]:
    if blocked:
        why = "its retrieval assertions failed before any model call; not scored"
        return "retrieval_failed", why
    pos, neg = _score(clean), _score(noisy)
    if clean is None or noisy is None:
        if stop in _STOPS:
            return "not_run", _STOPS[stop][1]
        sides = (("the positive (clean)", clean), ("the negative (noisy)", noisy))
        return "missing", "no result for " + " and ".join(m for m, r in sides if r is None)
    if pos is None or neg is None:
        kinds = [f"{m}: {r.error.kind}" for m, r in (("clean", clean), ("noisy", noisy)) if r.error]
        return "error", "no score: " + "; ".join(kinds)
    if pair.role == "reference_defect":
        worst = max(pos, neg)
        if worst <= _EPS:
            return "not_punished", "both correct responses scored 0 under the defective reference"
        return "routed_to_review", (
            f"a correct response scored {worst:.3f} under the defective reference"
            f" ({pair.reference_defect}): the case routes to review, never counted against the"
            " system"
        )
    if neg > pos:
        return "separated", f"negative {neg:.3f} > positive {pos:.3f} (lower is better)"
    return "not_separated", (
        f"negative {neg:.3f} is not worse than positive {pos:.3f}: the evaluator cannot see this"
        " noise adoption (lower is better)"
    )


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _spread(values: Sequence[float | None]) -> float | None:
    data = [v for v in values if v is not None]
    return None if len(data) < len(values) or not data else max(data) - min(data)


def _worse(direction: str, noisy: float, clean: float) -> bool:
    return noisy < clean - _EPS if direction == "higher_is_better" else noisy > clean + _EPS


def noise_report(
    suite: NoiseSuite,
    results: ResultsInput,
    *,
    partition: str | None = None,
    sentinels_only: bool = False,
    exclude_held_out: bool = False,
    companions: CompanionJoin | None = None,
    overrides: Sequence[Override] = (),
    now: datetime | None = None,
) -> NoiseReport:
    """Read a suite's results (a :class:`NoiseRun`, a run directory, results files or judge
    results) against its policy and slice limits, with ``companions`` joined
    (:func:`join_companions`) and active ``overrides`` waiving what they cover. Refuses results
    of unknown members, changed content, several judges or another kind."""
    located, runs, run = _collect(results)
    if run is not None:
        partition, sentinels_only = run.partition, run.sentinels_only
        exclude_held_out = run.held_out_excluded
    identity, fingerprint = _check_join(suite, located)
    release = release_of(suite)
    candidates = selected_candidates(suite, partition, sentinels_only, exclude_held_out)
    reading, blockers = _read_suite(suite, _final(located), candidates, runs, run, companions)
    if release is None:
        message = (
            f"{suite.label} has no frozen release: freeze it (workbench freeze FILE --approver"
            " NAME) so its cases, references and manifest cannot change under the evidence"
        )
        evidence = {"suite_sha256": suite.sha256}
        blockers.append(blocker("noise_suite_unfrozen", message, evidence=evidence))
    decision = decide(
        blockers,
        overrides,
        policy_label=suite.label,
        fingerprint=fingerprint,
        now=now,
        clear="passed",
    )
    attempts = [r for _, r in located]
    stopped = run.stopped_reason if run is not None else None
    if run is None and not reading.controls_passed:
        stopped = "controls failed: candidate scores are not interpreted"
    return NoiseReport(
        **vars(reading),
        outcome=cast(NoiseOutcome, decision.outcome),
        suite=suite.label,
        suite_sha256=suite.sha256,
        suite_path=suite.source,
        change_under_review=suite.change_under_review,
        release_id=release.release_id if release else None,
        partition=partition,
        sentinels_only=sentinels_only,
        held_out_excluded=exclude_held_out,
        judge=identity,
        judge_fingerprint=fingerprint,
        budget_usd=run.budget_usd if run is not None else None,
        max_cases=suite.policy.max_cases,
        candidates_interpreted=reading.controls_passed,
        stopped_reason=stopped,
        retrieval_passed=not failed_pairs(reading.retrieval),
        retired=_retired_rows(suite),
        companions_unjoined=companions.unjoined if companions is not None else [],
        blockers=decision.blockers,
        waived=decision.waived,
        unapplied_overrides=decision.unapplied,
        results_read=len(attempts),
        cost_usd=round(sum(float(r.cost_usd or 0.0) for r in attempts), 10),
        tokens_in=sum(int(r.tokens_in or 0) for r in attempts),
        tokens_out=sum(int(r.tokens_out or 0) for r in attempts),
        runs=runs,
        pair_keys={p.pair_id: p.frame_sha256() for p in candidates},
        pair_hashes={p.pair_id: evidence_hashes(p) for p in candidates},
    )


@dataclass
class _Reading:
    """The report's fields read from the results (:class:`NoiseReport`'s names)."""

    retrieval: list[RetrievalRow]
    controls: list[ControlRow]
    controls_passed: bool
    control_roles: dict[str, int]
    injection: list[InjectionRow] = field(default_factory=list)
    pairs: list[PairRow] = field(default_factory=list)
    slices: list[SliceRow] = field(default_factory=list)
    repeats: list[RepeatRow] = field(default_factory=list)
    evaluator_errors: list[MemberError] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def _read_suite(
    suite: NoiseSuite,
    final: dict[str, JudgeResult],
    candidates: list[NoisePair],
    runs: dict[str, RunSummary],
    run: NoiseRun | None,
    companions: CompanionJoin | None,
) -> tuple[_Reading, list[Blocker]]:
    """Retrieval, controls (whether candidate scores mean anything), candidate pairs, slices,
    repeats and companions, in the seed's order."""
    retrieval = check_retrieval([*suite.controls(), *candidates])
    blocked = failed_pairs(retrieval)
    stops = {k: s.stop_reason for k, s in runs.items() if k in ("controls", "candidates")}
    controls = check_controls(suite, final, stops.get("controls"), blocked)
    separating = [c for c in controls if c.role in SEPARATING_ROLES]
    interpreted = (
        any(c.role == "control" for c in separating)
        and all(c.separated for c in separating)
        and (run is None or run.controls_passed)
    )
    control_blockers, roles = _control_blockers(suite, controls)
    injection = check_injections([*suite.controls(), *candidates])
    blockers = [*retrieval_blockers(suite, retrieval), *control_blockers]
    blockers += injection_blockers(suite, injection)
    reading = _Reading(retrieval, controls, interpreted, roles, injection)
    values = companions.values if companions is not None else {}
    reading.evaluator_errors = [
        _member_error(pair, m, r)
        for pair in suite.controls()
        for m in MEMBERS
        if (r := final.get(pair.item_id(m))) is not None and r.error is not None
    ]
    for pair in candidates:
        row, pair_errors, pair_missing = _pair_row(suite, pair, final, blocked, interpreted, values)
        reading.pairs.append(row)
        reading.evaluator_errors += pair_errors
        reading.missing += pair_missing
    reading.slices = [
        _slice_row(suite, name, reading, interpreted, values) for name in suite.slices
    ]
    if interpreted:
        blockers += _slice_blockers(suite, reading.slices, reading.pairs)
    blockers += _error_blockers(suite, reading.evaluator_errors, reading.missing, stops, runs)
    reading.repeats = _repeat_rows(suite, run, suite.policy, blocked)
    blockers += _repeat_blockers(suite, reading.repeats)
    if suite.policy.companions and interpreted:
        scope = [p for p in candidates if p.pair_id not in blocked]
        blockers += _companion_blockers(suite, scope, values, companions, reading)
    return reading, blockers


def _retired_rows(suite: NoiseSuite) -> list[RetiredRow]:
    return [
        RetiredRow(
            pair_id=p.pair_id,
            reason=p.retired.reason,
            by=p.retired.by,
            on=p.retired.on.isoformat(),
            superseded_by=next((q.pair_id for q in suite.pairs if q.supersedes == p.pair_id), None),
        )
        for p in suite.retired()
        if p.retired is not None
    ]


def _control_blockers(
    suite: NoiseSuite, controls: list[ControlRow]
) -> tuple[list[Blocker], dict[str, int]]:
    """Blockers of the control pairs (not run, failed, routed to review, a required role absent) and
    the count per role."""
    blockers = [b for c in controls if (b := _control_blocker(suite, c)) is not None]
    if not any(c.role == "control" for c in controls):
        blockers.append(
            blocker(
                "noise_controls_failed",
                "the suite has no control pair: candidate scores cannot be interpreted",
                evidence={"controls": 0},
            )
        )
    roles = Counter(p.role for p in suite.controls())
    blockers += [
        blocker(
            "noise_control_role_missing",
            f"the suite has no {role} control, which the policy requires: the {role} role is"
            " untested, never passed",
            evidence={"role": role, "n": 0},
        )
        for role in suite.policy.required_control_roles
        if not roles[role]
    ]
    return blockers, {role: roles[role] for role in ("control", "adversarial", "reference_defect")}


def _control_blocker(suite: NoiseSuite, c: ControlRow) -> Blocker | None:
    """Not run, failed (no usable score, or not separated) or routed to review; None when fine."""
    if c.status == "not_run":
        code = "noise_controls_not_run"
        message = (
            f"{c.role} pair {c.pair_id} ({c.mode}): {c.detail}; it did not fail to separate, it"
            " was never scored, so candidate scores cannot be interpreted"
        )
    elif c.status in ("error", "missing", "retrieval_failed") or c.separated is False:
        code = "noise_controls_failed"
        what = "did not separate" if c.status == "not_separated" else "has no usable score"
        message = (
            f"{c.role} pair {c.pair_id} ({c.mode}) {what}: {c.detail}; candidate scores cannot be"
            " interpreted"
        )
    elif c.status == "routed_to_review":
        code = "noise_reference_defect_review"
        message = f"reference-defect control {c.pair_id}: {c.detail}"
    else:
        return None
    scores = {"positive_score": c.positive_score, "negative_score": c.negative_score}
    evidence = {"role": c.role, "mode": c.mode, **scores, "status": c.status}
    return _sliced(suite, code, message, c.slice, [c.pair_id], **evidence, direction=DIRECTION)


def _member_error(pair: NoisePair, member: Member, r: JudgeResult) -> MemberError:
    assert r.error is not None
    return MemberError(
        case_id=r.case_id,
        pair_id=pair.pair_id,
        member=member,
        role=pair.role,
        slice=pair.slice,
        kind=r.error.kind,
        message=r.error.message,
    )


def _pair_row(
    suite: NoiseSuite,
    pair: NoisePair,
    final: Mapping[str, JudgeResult],
    blocked: set[str],
    interpreted: bool,
    values: Mapping[str, Any],
) -> tuple[PairRow, list[MemberError], list[str]]:
    """A candidate pair's row, its members' evaluator errors and its members without a result."""
    limit = suite.slices[pair.slice]
    got = {m: final.get(pair.item_id(m)) for m in MEMBERS}
    abstained = [m for m in MEMBERS if pair.member(m).abstained]
    base = {
        "pair_id": pair.pair_id,
        "slice": pair.slice,
        "mode": pair.mode,
        "partition": pair.partition,
        "distractor": pair.noisy.distractor.label,
        "expected_relation": pair.expected_relation,
        "limit_max_score": limit.max_score,
        "limit_max_delta": limit.max_delta,
        "abstained": abstained,
        "companions": values.get(pair.pair_id, {}),
    }
    if pair.pair_id in blocked or not interpreted:
        status = "retrieval_failed" if pair.pair_id in blocked else "not_interpreted"
        unscored = dict.fromkeys(("clean_score", "noisy_score", "delta", "relation_held"))
        return PairRow(**base, **unscored, within_limit=None, status=status, errors=[]), [], []
    answered = {m: r for m, r in got.items() if m not in abstained}
    errors = [_member_error(pair, m, r) for m, r in answered.items() if r and r.error]
    missing = [pair.item_id(m) for m, r in answered.items() if r is None]
    clean, noisy = (None if m in abstained else _score(got[m]) for m in MEMBERS)
    delta = None if clean is None or noisy is None else noisy - clean
    status, counted = _pair_status(pair, got, abstained, clean, noisy)
    within = None
    if counted and noisy is not None:
        within = noisy <= limit.max_score + _EPS and (
            limit.max_delta is None or delta is None or delta <= limit.max_delta + _EPS
        )
    row = PairRow(
        **base,
        clean_score=clean,
        noisy_score=noisy,
        delta=delta,
        relation_held=None if delta is None else delta <= _EPS,
        within_limit=within,
        status=status,
        counted=counted,
        errors=[f"{e.member}: {e.kind}: {e.message}" for e in errors],
        tradeoffs=_tradeoffs(suite.policy, values.get(pair.pair_id, {}), abstained, clean, noisy),
    )
    return row, errors, missing


def _pair_status(
    pair: NoisePair,
    got: Mapping[Member, JudgeResult | None],
    abstained: Sequence[Member],
    clean: float | None,
    noisy: float | None,
) -> tuple[str, bool]:
    challenged = pair.sign_off is not None and not pair.sign_off.reference_sufficient
    if abstained:
        status = "abstained"
    elif clean is not None and noisy is not None:
        status = "reference_challenged" if challenged else "scored"
    else:
        status = "missing" if any(r is None for r in got.values()) else "error"
    return status, status == "scored" or (
        status == "abstained" and not challenged and noisy is not None
    )


def _tradeoffs(
    policy: NoisePolicy,
    values: Mapping[str, Any],
    abstained: Sequence[Member],
    clean: float | None,
    noisy: float | None,
) -> list[str]:
    """Companion metrics that got worse with the distractor while the noise score did not rise."""
    noise_held = "noisy" in abstained or (
        noisy is not None and clean is not None and noisy <= clean + _EPS
    )
    return [
        f"{metric}: noisy {v['noisy']:g} vs clean {v['clean']:g}"
        f" ({spec.direction.replace('_', ' ')}) while the noise score did not rise"
        for metric, spec in policy.companions.items()
        if noise_held
        and "clean" in (v := values.get(metric, {}))
        and "noisy" in v
        and _worse(spec.direction, v["noisy"], v["clean"])
    ]


def _slice_blockers(
    suite: NoiseSuite, slices: list[SliceRow], rows: list[PairRow]
) -> list[Blocker]:
    """Blockers of interpreted candidate scores against each slice's limits, and challenged
    references."""
    blockers: list[Blocker] = []
    for s in slices:
        mine = [r for r in rows if r.slice == s.slice]
        blockers += _limit_blockers(suite, s, [r for r in mine if r.counted])
        blockers += _abstention_blockers(suite, s, [r.pair_id for r in mine if r.abstained])
    challenged = [r for r in rows if r.status == "reference_challenged"]
    for name, ids in _by_slice(challenged, lambda r: r.slice).items():
        message = (
            f"{len(ids)} candidate pair(s) whose reference a reviewer marked insufficient:"
            " routed to review, not counted against the slice limits"
        )
        pair_ids = [r.pair_id for r in ids]
        blockers.append(
            _sliced(suite, "noise_reference_challenged", message, name, pair_ids, pairs=len(ids))
        )
    return blockers


def _limit_blockers(suite: NoiseSuite, s: SliceRow, counted: list[PairRow]) -> list[Blocker]:
    out: list[Blocker] = []
    limit, top = s.limit_max_delta, s.limit_max_score
    over = [r.pair_id for r in counted if r.noisy_score is not None and r.noisy_score > top + _EPS]
    if over:
        message = (
            f"{len(over)} of {s.scored} candidate pairs have a noisy score above the slice's"
            f" max_score {top:g} (lower is better)"
        )
        means = {"max_noisy_score": s.max_noisy_score, "mean_noisy_score": s.mean_noisy_score}
        evidence = {**means, "max_score": top, "direction": DIRECTION, "n": s.scored}
        out.append(_sliced(suite, "noise_score_exceeded", message, s.slice, over, **evidence))
    worse = [
        r.pair_id
        for r in counted
        if limit is not None and r.delta is not None and r.delta > limit + _EPS
    ]
    if worse:
        message = (
            f"{len(worse)} candidate pairs got worse with the distractor by more than"
            f" max_delta {limit:g} (lower is better)"
        )
        evidence = {
            "max_delta_observed": s.max_delta,
            "max_delta": limit,
            "direction": DIRECTION,
            "n": s.scored,
        }
        out.append(_sliced(suite, "noise_delta_exceeded", message, s.slice, worse, **evidence))
    return out


def _abstention_blockers(suite: NoiseSuite, s: SliceRow, abstaining: list[str]) -> list[Blocker]:
    rate, limit = s.abstention_rate, s.limit_max_abstention_rate
    evidence = {
        "abstentions": s.abstentions,
        "members": s.members,
        "abstention_rate": rate,
        "max_abstention_rate": limit,
    }
    what = f"{s.abstentions} of {s.members} candidate members abstained"
    if not s.abstentions:
        return []
    if limit is None:
        code = "noise_abstention_unreviewed"
        message = (
            f"{what} and the slice sets no max_abstention_rate: an abstention is neither a 0"
            " nor a pass, a person must judge it"
        )
    elif (rate or 0.0) > limit + _EPS:
        code = "noise_abstention_exceeded"
        message = (
            f"{what} ({rate:.0%}), above max_abstention_rate {limit:g}: a low noise score"
            " bought by not answering"
        )
    else:
        return []
    return [_sliced(suite, code, message, s.slice, abstaining, **evidence)]


def _error_blockers(
    suite: NoiseSuite,
    errors: list[MemberError],
    missing: list[str],
    stops: Mapping[str, str | None],
    runs: Mapping[str, RunSummary],
) -> list[Blocker]:
    """Blockers of invalid scores, evaluator errors, members without a result and runs that stopped
    early."""
    invalid = [e for e in errors if e.kind == "invalid_score"]
    other = [e for e in errors if e.kind != "invalid_score" and e.role == "candidate"]
    blockers = [
        _sliced(
            suite,
            code,
            f"{len(mine)} member(s) have {what}: no score, never counted as 0",
            name,
            sorted({e.case_id for e in mine}),
            errors=len(mine),
            by_kind=dict(Counter(e.kind for e in mine)),
        )
        for code, group, what in (
            ("noise_score_invalid", invalid, "invalid scores (NaN, infinite or outside [0, 1])"),
            ("noise_evaluator_errors", other, "evaluator errors"),
        )
        for name, mine in _by_slice(group, lambda e: e.slice).items()
    ]
    stop = stops.get("candidates")
    why = f" ({_STOPS[stop][1]})" if stop in _STOPS else ""
    message = f"candidate member(s) have no result{why}: the evaluation is incomplete, never a pass"
    blockers += [
        _sliced(suite, "missing_results", f"{len(ids)} {message}", name, ids, missing=len(ids))
        for name, ids in _by_slice(missing, lambda m: suite.pair(m.rsplit(":", 1)[0]).slice).items()
    ]
    return blockers + [
        blocker(
            _STOPS[summary.stop_reason][0],
            f"the {label} run stopped ({summary.stop_reason}): ${summary.cost_usd:.4f} of"
            f" ${summary.budget_usd or 0:.4f}, case limit {summary.max_cases};"
            f" {len(summary.unrun)} member scoring(s) never ran",
            evidence={
                "run": label,
                "cost_usd": summary.cost_usd,
                "budget_usd": summary.budget_usd,
                "max_cases": summary.max_cases,
                "unrun": len(summary.unrun),
            },
        )
        for label, summary in runs.items()
        if summary.stop_reason in _STOPS
    ]


_T = TypeVar("_T")


def _by_slice(items: Iterable[_T], slice_of: Callable[[_T], str]) -> dict[str, list[_T]]:
    groups: dict[str, list[_T]] = defaultdict(list)
    for item in items:
        groups[slice_of(item)].append(item)
    return dict(sorted(groups.items()))


def _repeat_blockers(suite: NoiseSuite, repeats: list[RepeatRow]) -> list[Blocker]:
    """Sentinels whose repeats lack a score, or vary beyond max_spread."""
    blockers: list[Blocker] = []
    for row in repeats:
        evidence: dict[str, Any] = {
            "clean_scores": row.clean_scores,
            "noisy_scores": row.noisy_scores,
        }
        if row.status == "incomplete":
            code = "noise_repeat_incomplete"
            message = (
                f"sentinel {row.pair_id} lacks a score in some of its {len(row.clean_scores)}"
                " repeats: its repeatability is unproven"
            )
        elif row.status == "unstable":
            code = "noise_repeat_unstable"
            message = (
                f"sentinel {row.pair_id} varies across repeats (spreads clean"
                f" {row.clean_spread:.3f}, noisy {row.noisy_spread:.3f}, delta"
                f" {row.delta_spread:.3f}) beyond max_spread {row.max_spread:g}: material judge"
                " variation, reviewed by a person, never retried away"
            )
            evidence["max_spread"] = row.max_spread
        else:
            continue
        blockers.append(_sliced(suite, code, message, row.slice, [row.pair_id], **evidence))
    return blockers


def _companion_blockers(
    suite: NoiseSuite,
    scope: list[NoisePair],
    values: Mapping[str, Any],
    companions: CompanionJoin | None,
    reading: _Reading,
) -> list[Blocker]:
    """Declared companion metrics missing for candidate members, or beyond their limits in a
    slice."""
    blockers: list[Blocker] = []
    declared = suite.policy.companions
    absent = [
        f"{p.item_id(m)}:{metric}"
        for p in scope
        for m in MEMBERS
        for metric in declared
        if m not in values.get(p.pair_id, {}).get(metric, {})
    ]
    if absent:
        why = (
            "no companion results were given"
            if companions is None
            else f"{len(absent)} value(s) not joined by generation run id"
        )
        blockers.append(
            blocker(
                "noise_companion_missing",
                f"declared companion metrics ({', '.join(declared)}) are missing for candidate"
                f" members ({why}): a low noise score cannot be told from a refusal",
                evidence={"missing": len(absent), "first": absent[:10]},
                case_ids=sorted({a.split(":", 1)[0] for a in absent}),
            )
        )
    for s in reading.slices:
        for metric, spec in declared.items():
            mean = s.companions.get(metric)
            if spec.limit is None or mean is None or not _worse(spec.direction, mean, spec.limit):
                continue
            message = (
                f"companion {metric} averages {mean:.3f} in the slice, beyond its limit"
                f" {spec.limit:g} ({spec.direction.replace('_', ' ')}): the noise score is not"
                f" bought by {metric}"
            )
            ids = [
                r.pair_id for r in reading.pairs if r.slice == s.slice and r.companions.get(metric)
            ]
            evidence = {"metric": metric, "mean": mean, "limit": spec.limit}
            code = "noise_companion_exceeded"
            blockers.append(
                _sliced(suite, code, message, s.slice, ids, **evidence, direction=spec.direction)
            )
    return blockers


def noise_override_scope(suite: NoiseSuite) -> OverrideScope:
    """What an override of noise blockers is checked against: the suite's ``name@version`` (the
    reviewed noise policy), the noise codes, the suite's slices and their risk, its pair ids."""
    return OverrideScope(
        label=suite.label,
        feature="noise",
        slices={name: s.risk for name, s in suite.slices.items()},
        case_ids=frozenset(p.pair_id for p in suite.pairs),
    )


_EVIDENCE = attrgetter("document_id", "version", "chunk_id", "rank", "corpus_id", "tenant")


def evidence_hashes(pair: NoisePair) -> dict[str, str]:
    """One hash per input boundary of a pair's two members, in debugging order: ``corpus`` (the
    snapshot and each context's corpus, document and version), ``query_rewrite``, ``reranker``
    (the typed generator fields), ``retrieval`` (each context's document id, version, chunk,
    rank, corpus, tenant and text), ``response`` (each response and abstention) and
    ``reference`` (text and version)."""
    members = [pair.member(m) for m in MEMBERS]
    corpus = [
        pair.generator.get("corpus_snapshot"),
        [[(c.corpus_id, c.document_id, c.version) for c in m.contexts()] for m in members],
    ]
    retrieval = [[[*_EVIDENCE(c), sha256_text(c.text)] for c in m.contexts()] for m in members]
    responses = [[m.response, m.abstained] for m in members]
    return {
        "corpus": sha256_json(corpus),
        "query_rewrite": sha256_json(pair.generator.get("query_rewrite")),
        "reranker": sha256_json(pair.generator.get("reranker")),
        "retrieval": sha256_json(retrieval),
        "response": sha256_json(responses),
        "reference": sha256_json([pair.reference, pair.reference_version]),
    }


def _repeat_rows(
    suite: NoiseSuite, run: NoiseRun | None, policy: NoisePolicy, blocked: set[str]
) -> list[RepeatRow]:
    if run is None or run.repeats is None or run.repeat <= 1:
        return []
    located = _located(run.repeats.results_path)
    _check_join(suite, located)
    by_repeat = [_final(located, r) for r in range(run.repeat)]
    pairs = sentinel_pairs(suite, run.held_out_excluded)
    return [_repeat_row(p, by_repeat, policy) for p in pairs if p.pair_id not in blocked]


def _repeat_row(
    pair: NoisePair, by_repeat: list[dict[str, JudgeResult]], policy: NoisePolicy
) -> RepeatRow:
    abstained = {m: pair.member(m).abstained for m in MEMBERS}
    scores = {
        m: [None if abstained[m] else _score(f.get(pair.item_id(m))) for f in by_repeat]
        for m in MEMBERS
    }
    deltas = [
        None if c is None or n is None else n - c
        for c, n in zip(scores["clean"], scores["noisy"], strict=True)
    ]
    spreads = {m: 0.0 if abstained[m] else _spread(scores[m]) for m in MEMBERS}
    delta_spread = 0.0 if any(abstained.values()) else _spread(deltas)
    complete = all(abstained[m] or v is not None for m in MEMBERS for v in scores[m])
    widest = max(v or 0.0 for v in (*spreads.values(), delta_spread))
    limit = policy.max_spread if policy.max_spread is not None else 0.0
    status = "incomplete" if not complete else "unstable" if widest > limit + _EPS else "stable"
    return RepeatRow(
        pair_id=pair.pair_id,
        role=pair.role,
        slice=pair.slice,
        clean_scores=scores["clean"],
        noisy_scores=scores["noisy"],
        clean_spread=spreads["clean"],
        noisy_spread=spreads["noisy"],
        delta_spread=delta_spread,
        max_spread=policy.max_spread,
        status=status,
    )


def _slice_row(
    suite: NoiseSuite,
    name: str,
    reading: _Reading,
    interpreted: bool,
    values: dict[str, dict[str, dict[str, float]]],
) -> SliceRow:
    limit = suite.slices[name]
    rows = [r for r in reading.pairs if r.slice == name]
    counted = [r for r in rows if r.counted]
    noisy = [r.noisy_score for r in counted if r.noisy_score is not None]
    clean = [r.clean_score for r in counted if r.clean_score is not None]
    deltas = [r.delta for r in counted if r.delta is not None]
    exceeding = [r.pair_id for r in rows if r.within_limit is False]
    ids = {r.pair_id for r in rows}
    open_rows = [r for r in rows if r.status not in ("retrieval_failed", "not_interpreted")]
    members = 2 * len(open_rows)
    abstentions = sum(len(r.abstained) for r in open_rows)
    companions = {
        metric: _mean(
            [v for r in open_rows for v in values.get(r.pair_id, {}).get(metric, {}).values()]
        )
        for metric in suite.policy.companions
    }
    return SliceRow(
        slice=name,
        risk=limit.risk,
        pairs=len(rows),
        scored=len(noisy),
        errors=sum(1 for e in reading.evaluator_errors if e.pair_id in ids),
        missing=sum(1 for m in reading.missing if m.rsplit(":", 1)[0] in ids),
        abstentions=abstentions,
        members=members,
        abstention_rate=abstentions / members if members else None,
        limit_max_abstention_rate=limit.max_abstention_rate,
        max_noisy_score=max(noisy) if noisy else None,
        mean_noisy_score=_mean(noisy),
        mean_clean_score=_mean(clean),
        max_delta=max(deltas) if deltas else None,
        mean_delta=_mean(deltas),
        limit_max_score=limit.max_score,
        limit_max_delta=limit.max_delta,
        within_limit=None if not interpreted or not noisy else not exceeding,
        exceeding=exceeding,
        companions=companions,
    )
