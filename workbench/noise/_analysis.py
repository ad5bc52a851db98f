"""Running a pair suite (controls first) and reading its NoiseSensitivity scores against the policy.

**Controls first.** :func:`run_noise` scores every control pair member through the run
engine (``<out>/controls``), then checks the ordering: each negative control (noisy member)
must score strictly worse than its paired positive control (clean member), i.e. *higher*,
because NoiseSensitivity is lower-is-better. If any control pair does not separate (or has
no score), the run stops: candidate members are never sent to the model, and the report
says why. Otherwise the candidate pairs are scored (``<out>/candidates``) under what is left
of the budget.

**Report.** :func:`noise_report` returns a :class:`NoiseReport`: the control ordering table,
every candidate pair with its clean score, noisy score and delta (reported even when inside
policy), per-slice maximum and mean noisy scores against the slice's ``max_score``, and
:class:`~workbench.policy.Blocker` s:

======================  ==========  ===========================================================
code                    category    when
======================  ==========  ===========================================================
noise_controls_failed   incomplete  a control pair did not separate or has no score: candidate
                                    scores cannot be interpreted
noise_score_invalid     incomplete  a member's score was NaN, infinite or outside [0, 1]
noise_evaluator_errors  incomplete  other evaluator errors (provider, timeout, unparseable ...)
missing_results         incomplete  a candidate member has no result at all
budget_exhausted        incomplete  a run stopped at its budget
noise_score_exceeded    quality     a candidate noisy score above the slice's ``max_score``
noise_delta_exceeded    quality     a noisy - clean increase above the slice's ``max_delta``
======================  ==========  ===========================================================

Outcome: ``evaluation_incomplete`` (any incomplete blocker, exit 3) > ``quality_failed``
(exit 1) > ``passed`` (exit 0). Every score, threshold, table and chart says lower is better.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from .._args import check_run_arguments
from .._io import atomic_write_json
from ..errors import Problem, WorkbenchError
from ..policy import Blocker
from ..results import JudgeIdentity, JudgeResult, ResultLine, read_results
from ..runs import RunSummary
from ..runs._engine import RESULTS_FILE, WorkItem, run_items
from ._judge import KIND, METRIC
from ._pairs import DIRECTION, MEMBERS, Member, NoisePair, NoiseSuite

NOISE_REPORT_SCHEMA_VERSION = 1
"""Version of :class:`NoiseReport`'s JSON form."""
CONTROLS_PARTITION = "noise-controls"
"""Partition label of the controls run (recorded in its manifest and results)."""
CANDIDATES_PARTITION = "noise-candidates"
"""Partition label of the candidates run."""
LOWER_IS_BETTER = "lower is better"
"""What every table and chart states."""
EXIT_CODES: dict[str, int] = {"passed": 0, "quality_failed": 1, "evaluation_incomplete": 3}
"""Process exit code per outcome (2 is invalid input)."""

NoiseOutcome = Literal["passed", "quality_failed", "evaluation_incomplete"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class ControlRow(_Model):
    """One control pair: the positive (clean) and negative (noisy) control under the same mode."""

    pair_id: str
    slice: str
    mode: str
    """NoiseSensitivity mode of both scores."""
    distractor: str
    """The distractor's label."""
    positive_score: float | None
    """Clean member's score (the positive control)."""
    negative_score: float | None
    """Noisy member's score (the negative control, which adopts the distractor's claim)."""
    margin: float | None
    """negative - positive: must be > 0 (the negative must score worse, i.e. higher)."""
    separated: bool
    """True when both scores exist and the negative scored strictly higher."""
    status: Literal["separated", "not_separated", "error", "missing"]
    """``error``/``missing`` when a member has no score."""
    detail: str
    """One sentence for a reviewer."""
    direction: str = DIRECTION
    """Always ``lower_is_better``."""


class PairRow(_Model):
    """One candidate pair: clean score, noisy score and their delta, against the slice limit."""

    pair_id: str
    slice: str
    mode: str
    """NoiseSensitivity mode of both scores."""
    distractor: str
    """The distractor's label."""
    expected_relation: str
    """``noisy_not_worse``."""
    clean_score: float | None
    noisy_score: float | None
    delta: float | None
    """noisy - clean (positive: the distractor made the answer worse). Reported even inside policy."""
    relation_held: bool | None
    """delta <= 0; None without both scores."""
    limit_max_score: float
    """The slice's ``max_score`` (lower is better)."""
    limit_max_delta: float | None
    """The slice's ``max_delta``, if set."""
    within_limit: bool | None
    """noisy <= max_score (and delta <= max_delta when set); None when not scored or not interpreted."""
    status: Literal["scored", "error", "missing", "not_interpreted"]
    """``not_interpreted`` when the controls failed (candidates are then not run)."""
    errors: list[str]
    """``member: kind: message`` of each member's evaluator error."""
    direction: str = DIRECTION
    """Always ``lower_is_better``."""


class SliceRow(_Model):
    """Candidate pairs of one slice against the slice's limit."""

    slice: str
    risk: str | None
    pairs: int
    """Candidate pairs in the slice."""
    scored: int
    """Pairs whose noisy member has a score."""
    errors: int
    """Members with an evaluator error."""
    missing: int
    """Members without any result."""
    max_noisy_score: float | None
    mean_noisy_score: float | None
    mean_clean_score: float | None
    max_delta: float | None
    """Largest observed noisy - clean."""
    mean_delta: float | None
    limit_max_score: float
    """The slice's ``max_score`` (lower is better)."""
    limit_max_delta: float | None
    within_limit: bool | None
    """None when nothing was scored or candidates were not interpreted."""
    exceeding: list[str]
    """Pairs above a limit."""
    direction: str = DIRECTION
    """Always ``lower_is_better``."""


class MemberError(_Model):
    """One member's final evaluator error."""

    case_id: str
    pair_id: str
    member: str
    role: str
    slice: str
    kind: str
    message: str


class NoiseRun(_Model):
    """What :func:`run_noise` did: the controls run, the ordering check and (if allowed) the candidates run."""

    out_dir: str
    suite: str
    """``name@version`` of the pair suite."""
    suite_sha256: str
    judge: str
    judge_fingerprint: str
    controls: RunSummary
    """The controls run (``<out>/controls``)."""
    control_checks: list[ControlRow]
    """The ordering of every control pair, as checked before any candidate call."""
    controls_passed: bool
    """Every control pair separated and the controls run is complete."""
    candidates: RunSummary | None
    """The candidates run (``<out>/candidates``); None when it was not started."""
    stopped_reason: str | None
    """Why candidates were not scored, when they were not."""

    def results_paths(self) -> list[Path]:
        """The results files of both runs (the candidates' only when it ran)."""
        paths = [Path(self.controls.results_path)]
        if self.candidates is not None:
            paths.append(Path(self.candidates.results_path))
        return paths


class NoiseReport(_Model):
    """Everything ``workbench noise`` reports. Stable, versioned JSON (``kind: workbench.noise``)."""

    schema_version: int = NOISE_REPORT_SCHEMA_VERSION
    kind: Literal["workbench.noise"] = "workbench.noise"
    metric: str = METRIC
    direction: str = DIRECTION
    """Always ``lower_is_better``: 0 is the best NoiseSensitivity score."""
    outcome: NoiseOutcome
    """``passed``, ``quality_failed`` or ``evaluation_incomplete``."""
    suite: str
    """``name@version`` of the pair suite."""
    suite_sha256: str
    suite_path: str | None
    judge: JudgeIdentity | None
    judge_fingerprint: str | None
    controls_passed: bool
    """Every control pair separated (negative scored higher than positive)."""
    candidates_interpreted: bool
    """False when the controls failed: candidate scores are then neither run nor read."""
    stopped_reason: str | None
    controls: list[ControlRow]
    pairs: list[PairRow]
    """Candidate pairs."""
    slices: list[SliceRow]
    blockers: list[Blocker]
    """Sorted: incomplete, quality; then slice; then code."""
    evaluator_errors: list[MemberError]
    missing: list[str]
    """Member case ids (``<pair_id>:<member>``) without any result, among those that should have one."""
    results_read: int
    cost_usd: float
    """Recorded spend of the attempts read."""
    tokens_in: int
    tokens_out: int
    runs: dict[str, RunSummary]
    """``controls`` / ``candidates`` run summaries, when the report was made from a :class:`NoiseRun`."""

    @property
    def exit_code(self) -> int:
        """0 passed, 1 quality failed, 3 evaluation incomplete (controls failed included)."""
        return EXIT_CODES[self.outcome]

    def frames(self) -> dict[str, Any]:
        """``controls``, ``pairs``, ``slices`` and ``blockers`` as pandas DataFrames, each stating lower is better."""
        import pandas as pd

        def frame(rows: Sequence[BaseModel], columns: list[str]) -> Any:
            data = [{**r.model_dump(mode="json"), "direction": LOWER_IS_BETTER} for r in rows]
            df = pd.DataFrame(data, columns=[*columns, "direction"])
            df.attrs["direction"] = DIRECTION
            return df

        return {
            "controls": frame(self.controls, ["pair_id", "slice", "mode", "distractor", "positive_score", "negative_score", "margin", "separated", "status", "detail"]),
            "pairs": frame(self.pairs, ["pair_id", "slice", "mode", "distractor", "clean_score", "noisy_score", "delta", "relation_held", "limit_max_score", "limit_max_delta", "within_limit", "status"]),
            "slices": frame(self.slices, ["slice", "risk", "pairs", "scored", "errors", "missing", "max_noisy_score", "mean_noisy_score", "limit_max_score", "max_delta", "mean_delta", "limit_max_delta", "within_limit", "exceeding"]),
            "blockers": frame(self.blockers, ["category", "slice", "code", "message", "case_ids"]),
        }


# -- running -------------------------------------------------------------------------------


def member_items(pairs: Iterable[NoisePair]) -> list[WorkItem]:
    """One work item per pair member (clean, then noisy), keyed ``<pair_id>:<member>``."""
    items = []
    for pair in pairs:
        for member in MEMBERS:
            judge_input = pair.judge_input(member)
            items.append(WorkItem(pair.item_id(member), judge_input.digest(), 0, judge_input, {"member": member, "mode": pair.mode, "pair_id": pair.pair_id}))
    return items


async def run_noise(
    judge: Any,
    suite: NoiseSuite,
    out_dir: str | Path,
    *,
    concurrency: int = 8,
    budget_usd: float | None = None,
    cache_dir: str | Path | None | Literal[False] = None,
    retry_errors: bool = False,
    progress: bool = True,
) -> NoiseRun:
    """Score the control pairs, check their ordering, then (only if every control separated) the candidates.

    Both runs go through the run engine (resumable, cached, budgeted, every attempt recorded
    with its captured requests, tokens and cost): ``<out>/controls`` and ``<out>/candidates``.
    ``budget_usd`` bounds both together. ``await`` it in notebooks; :func:`run_noise_sync`
    elsewhere.
    """
    check_run_arguments(concurrency=concurrency, budget_usd=budget_usd)
    kind = getattr(getattr(judge, "identity", None), "kind", None)
    if kind != KIND:
        raise WorkbenchError("wrong judge kind", [Problem(location=str(getattr(getattr(judge, "spec", None), "label", "candidate")), code="wrong_kind", message=f"a noise suite is scored by a {KIND} candidate, not {kind!r}", fix=f"use a candidate spec with kind: {KIND}")])
    controls = suite.controls()
    if not controls:
        raise WorkbenchError("no controls", [Problem(location=suite.source or suite.label, code="controls_missing", message="the suite has no control pair", fix="add control pairs: they are scored first and must separate before candidates mean anything")])
    out = Path(out_dir)
    common: dict[str, Any] = {"dataset_sha256": suite.sha256, "concurrency": concurrency, "cache_dir": cache_dir, "retry_errors": retry_errors, "progress": progress}
    c_summary = await run_items(judge, member_items(controls), out / "controls", partition=CONTROLS_PARTITION, budget_usd=budget_usd, **common)
    checks = check_controls(suite, [r.result for r in read_results(Path(c_summary.results_path))])
    failing = [c for c in checks if not c.separated]
    stopped: str | None = None
    if failing:
        stopped = f"controls failed ({len(failing)} of {len(checks)} control pairs did not separate: {', '.join(c.pair_id for c in failing)}); candidate pairs were not scored"
    elif c_summary.status != "complete":
        stopped = f"the controls run is incomplete ({c_summary.stop_reason or 'unrun or pending members'}); candidate pairs were not scored"
    k_summary: RunSummary | None = None
    candidates = suite.candidates()
    if stopped is None and candidates:
        remaining = None if budget_usd is None else max(0.0, budget_usd - c_summary.cost_usd)
        k_summary = await run_items(judge, member_items(candidates), out / "candidates", partition=CANDIDATES_PARTITION, budget_usd=remaining, **common)
    run = NoiseRun(
        out_dir=str(out),
        suite=suite.label,
        suite_sha256=suite.sha256,
        judge=judge.spec.label,
        judge_fingerprint=judge.identity.fingerprint(),
        controls=c_summary,
        control_checks=checks,
        controls_passed=stopped is None,
        candidates=k_summary,
        stopped_reason=stopped,
    )
    atomic_write_json(out / "noise_run.json", run.model_dump(mode="json"))
    return run


def run_noise_sync(*args: Any, **kwargs: Any) -> NoiseRun:
    """:func:`run_noise` for scripts and the CLI (not inside a running event loop)."""
    return asyncio.run(run_noise(*args, **kwargs))


# -- reading results --------------------------------------------------------------------------


ResultsInput = NoiseRun | str | Path | Iterable[JudgeResult | ResultLine] | Sequence[str | Path]


def _collect(results: ResultsInput) -> tuple[list[tuple[str, JudgeResult]], dict[str, RunSummary], NoiseRun | None]:
    run = results if isinstance(results, NoiseRun) else None
    runs: dict[str, RunSummary] = {}
    if run is not None:
        runs["controls"] = run.controls
        if run.candidates is not None:
            runs["candidates"] = run.candidates
        sources: Iterable[Any] = run.results_paths()
    elif isinstance(results, str | Path):
        sources = [results]
    else:
        sources = list(results)
    out: list[tuple[str, JudgeResult]] = []
    for src in sources:
        if isinstance(src, str | Path):
            if Path(src).is_dir():
                src = Path(src) / RESULTS_FILE
            out += [(f"{src}:{line.line}", line.result) for line in read_results(src)]
        elif isinstance(src, ResultLine):
            out.append((f"results:{src.line}", src.result))
        else:
            out.append((f"results[{len(out)}]", src))
    return out, runs, run


def _final(results: Iterable[tuple[str, JudgeResult]]) -> dict[str, JudgeResult]:
    """Per member case id (repeat 0): the latest result with a score, else the latest attempt."""
    by_case: dict[str, list[JudgeResult]] = {}
    for _, r in results:
        if r.repeat == 0:
            by_case.setdefault(r.case_id, []).append(r)
    final: dict[str, JudgeResult] = {}
    for case_id, rows in by_case.items():
        rows.sort(key=lambda r: r.attempt)
        scored = [r for r in rows if r.error is None]
        final[case_id] = scored[-1] if scored else rows[-1]
    return final


def _check_join(suite: NoiseSuite, located: list[tuple[str, JudgeResult]]) -> tuple[JudgeIdentity | None, str | None]:
    expected = {p.item_id(m): p.judge_input(m).digest() for p in suite.pairs for m in MEMBERS}
    problems: list[Problem] = []
    fingerprints: dict[str, JudgeIdentity] = {}
    for where, r in located:
        fingerprints.setdefault(r.judge_fingerprint, r.judge)
        if r.case_id not in expected:
            problems.append(Problem(location=where, case_id=r.case_id, code="result_unknown_member", message=f"no member {r.case_id!r} in suite {suite.label}", fix="analyse results with the pair suite they were run on"))
        elif r.response_hash != expected[r.case_id]:
            problems.append(Problem(location=where, case_id=r.case_id, code="result_content_mismatch", message="the result was computed on other content (question, response, reference, contexts or mode) than the pair now holds", fix="re-run the changed pairs into a new run directory; a changed pair is a new suite version"))
        elif r.error is None and r.score is None:
            problems.append(Problem(location=where, case_id=r.case_id, code="result_without_score", message="a noise result without a score", fix="noise results are score-only: score set, value null"))
    if len(fingerprints) > 1:
        problems.append(Problem(location="results", code="mixed_judges", message=f"results from {len(fingerprints)} different judge fingerprints", fix="analyse one candidate's results at a time"))
    for ident in fingerprints.values():
        if ident.kind != KIND:
            problems.append(Problem(location="results", code="wrong_kind", message=f"results of a {ident.kind!r} judge", fix=f"noise reports read {KIND} results"))
            break
    if problems:
        raise WorkbenchError(f"refusing the noise analysis: {len(problems)} problem(s)", problems)
    if not fingerprints:
        return None, None
    fp, ident = next(iter(fingerprints.items()))
    return ident, fp


def _score(r: JudgeResult | None) -> float | None:
    return None if r is None or r.error is not None else r.score


def check_controls(suite: NoiseSuite, results: Iterable[JudgeResult]) -> list[ControlRow]:
    """The ordering of every control pair: the negative (noisy) must score strictly higher than the positive (clean)."""
    final = _final(("", r) for r in results)
    rows = []
    for pair in suite.controls():
        clean, noisy = final.get(pair.item_id("clean")), final.get(pair.item_id("noisy"))
        pos, neg = _score(clean), _score(noisy)
        if clean is None or noisy is None:
            status, detail = "missing", "no result for " + " and ".join(m for m, r in (("the positive (clean)", clean), ("the negative (noisy)", noisy)) if r is None)
        elif pos is None or neg is None:
            kinds = [f"{m}: {r.error.kind}" for m, r in (("clean", clean), ("noisy", noisy)) if r.error is not None]
            status, detail = "error", "no score: " + "; ".join(kinds)
        elif neg > pos:
            status, detail = "separated", f"negative {neg:.3f} > positive {pos:.3f} (lower is better)"
        else:
            status, detail = "not_separated", f"negative {neg:.3f} is not worse than positive {pos:.3f}: the evaluator cannot see this noise adoption (lower is better)"
        rows.append(
            ControlRow(
                pair_id=pair.pair_id,
                slice=pair.slice,
                mode=pair.mode,
                distractor=pair.noisy.distractor.label,
                positive_score=pos,
                negative_score=neg,
                margin=None if pos is None or neg is None else neg - pos,
                separated=status == "separated",
                status=status,  # type: ignore[arg-type]
                detail=detail,
            )
        )
    return rows


def noise_report(suite: NoiseSuite, results: ResultsInput) -> NoiseReport:
    """Read a suite's results against its slice limits (lower is better) and list the blockers.

    ``results`` is a :class:`NoiseRun` (its run summaries are then included), a results file
    or run directory, a list of them, or judge results. Refuses (``WorkbenchError``) results
    of unknown members, of changed content, of several judges or of another kind.
    """
    located, runs, run = _collect(results)
    identity, fingerprint = _check_join(suite, located)
    final = _final(located)
    controls = check_controls(suite, [r for r in final.values()])
    controls_passed = bool(controls) and all(c.separated for c in controls)
    if run is not None:
        controls_passed = controls_passed and run.controls_passed
    interpreted = controls_passed
    blockers: list[Blocker] = []
    errors: list[MemberError] = []
    missing: list[str] = []

    for c in controls:
        if not c.separated:
            blockers.append(
                Blocker(code="noise_controls_failed", category="incomplete", slice=c.slice, risk=suite.slices[c.slice].risk if c.slice in suite.slices else None, message=f"control pair {c.pair_id} ({c.mode}) did not separate: {c.detail}; candidate scores cannot be interpreted", evidence={"mode": c.mode, "positive_score": c.positive_score, "negative_score": c.negative_score, "status": c.status, "direction": DIRECTION}, case_ids=[c.pair_id], waivable=False)
            )
    if not controls:
        blockers.append(Blocker(code="noise_controls_failed", category="incomplete", message="the suite has no control pair: candidate scores cannot be interpreted", evidence={"controls": 0}, waivable=False))

    def member_error(pair: NoisePair, member: Member, r: JudgeResult) -> None:
        assert r.error is not None
        errors.append(MemberError(case_id=r.case_id, pair_id=pair.pair_id, member=member, role=pair.role, slice=pair.slice, kind=r.error.kind, message=r.error.message))

    for pair in suite.controls():
        for m in MEMBERS:
            r = final.get(pair.item_id(m))
            if r is not None and r.error is not None:
                member_error(pair, m, r)

    rows: list[PairRow] = []
    for pair in suite.candidates():
        limit = suite.slices[pair.slice]
        got = {m: final.get(pair.item_id(m)) for m in MEMBERS}
        if not interpreted:
            rows.append(PairRow(pair_id=pair.pair_id, slice=pair.slice, mode=pair.mode, distractor=pair.noisy.distractor.label, expected_relation=pair.expected_relation, clean_score=None, noisy_score=None, delta=None, relation_held=None, limit_max_score=limit.max_score, limit_max_delta=limit.max_delta, within_limit=None, status="not_interpreted", errors=[]))
            continue
        member_errors = []
        for m, r in got.items():
            if r is None:
                missing.append(pair.item_id(m))
            elif r.error is not None:
                member_error(pair, m, r)
                member_errors.append(f"{m}: {r.error.kind}: {r.error.message}")
        clean, noisy = _score(got["clean"]), _score(got["noisy"])
        delta = None if clean is None or noisy is None else noisy - clean
        within = None
        if noisy is not None:
            within = noisy <= limit.max_score + 1e-12 and (limit.max_delta is None or delta is None or delta <= limit.max_delta + 1e-12)
        status = "scored" if clean is not None and noisy is not None else ("missing" if any(r is None for r in got.values()) else "error")
        rows.append(PairRow(pair_id=pair.pair_id, slice=pair.slice, mode=pair.mode, distractor=pair.noisy.distractor.label, expected_relation=pair.expected_relation, clean_score=clean, noisy_score=noisy, delta=delta, relation_held=None if delta is None else delta <= 1e-12, limit_max_score=limit.max_score, limit_max_delta=limit.max_delta, within_limit=within, status=status, errors=member_errors))  # type: ignore[arg-type]

    slices = [_slice_row(name, limit, [r for r in rows if r.slice == name], errors, missing, interpreted) for name, limit in suite.slices.items()]

    if interpreted:
        for s in slices:
            over = [r for r in rows if r.slice == s.slice and r.noisy_score is not None and r.noisy_score > s.limit_max_score + 1e-12]
            if over:
                blockers.append(Blocker(code="noise_score_exceeded", category="quality", slice=s.slice, risk=s.risk, message=f"{len(over)} of {s.scored} candidate pairs have a noisy score above the slice's max_score {s.limit_max_score:g} (lower is better)", evidence={"max_noisy_score": s.max_noisy_score, "mean_noisy_score": s.mean_noisy_score, "max_score": s.limit_max_score, "direction": DIRECTION, "n": s.scored}, case_ids=[r.pair_id for r in over]))
            if s.limit_max_delta is not None:
                worse = [r for r in rows if r.slice == s.slice and r.delta is not None and r.delta > s.limit_max_delta + 1e-12]
                if worse:
                    blockers.append(Blocker(code="noise_delta_exceeded", category="quality", slice=s.slice, risk=s.risk, message=f"{len(worse)} candidate pairs got worse with the distractor by more than max_delta {s.limit_max_delta:g} (lower is better)", evidence={"max_delta_observed": s.max_delta, "max_delta": s.limit_max_delta, "direction": DIRECTION, "n": s.scored}, case_ids=[r.pair_id for r in worse]))
    invalid = [e for e in errors if e.kind == "invalid_score"]
    other = [e for e in errors if e.kind != "invalid_score" and (e.role == "candidate")]
    for code, group, what in (("noise_score_invalid", invalid, "invalid scores (NaN, infinite or outside [0, 1])"), ("noise_evaluator_errors", other, "evaluator errors")):
        for name in sorted({e.slice for e in group}):
            mine = [e for e in group if e.slice == name]
            kinds: dict[str, int] = {}
            for e in mine:
                kinds[e.kind] = kinds.get(e.kind, 0) + 1
            blockers.append(Blocker(code=code, category="incomplete", slice=name, risk=suite.slices[name].risk if name in suite.slices else None, message=f"{len(mine)} member(s) have {what}: no score, never counted as 0", evidence={"errors": len(mine), "by_kind": kinds}, case_ids=sorted({e.case_id for e in mine}), waivable=False))
    if missing:
        for name in sorted({suite.pair(m.rsplit(":", 1)[0]).slice for m in missing}):
            mine = [m for m in missing if suite.pair(m.rsplit(":", 1)[0]).slice == name]
            blockers.append(Blocker(code="missing_results", category="incomplete", slice=name, risk=suite.slices[name].risk, message=f"{len(mine)} candidate member(s) have no result: the evaluation is incomplete, never a pass", evidence={"missing": len(mine)}, case_ids=mine, waivable=False))
    for label, summary in runs.items():
        if summary.stop_reason == "budget_exhausted":
            blockers.append(Blocker(code="budget_exhausted", category="incomplete", message=f"the {label} run stopped at its budget (${summary.cost_usd:.4f} of ${summary.budget_usd or 0:.4f})", evidence={"cost_usd": summary.cost_usd, "budget_usd": summary.budget_usd, "unrun": len(summary.unrun)}, waivable=False))

    blockers.sort(key=lambda b: b.sort_key())
    outcome: NoiseOutcome = "evaluation_incomplete" if any(b.category == "incomplete" for b in blockers) else ("quality_failed" if any(b.category == "quality" for b in blockers) else "passed")
    attempts = [r for _, r in located]
    stopped = run.stopped_reason if run is not None else (None if controls_passed else "controls failed: candidate scores are not interpreted")
    return NoiseReport(
        outcome=outcome,
        suite=suite.label,
        suite_sha256=suite.sha256,
        suite_path=suite.source,
        judge=identity,
        judge_fingerprint=fingerprint,
        controls_passed=controls_passed,
        candidates_interpreted=interpreted,
        stopped_reason=stopped,
        controls=controls,
        pairs=rows,
        slices=slices,
        blockers=blockers,
        evaluator_errors=errors,
        missing=missing,
        results_read=len(attempts),
        cost_usd=round(sum(float(r.cost_usd or 0.0) for r in attempts), 10),
        tokens_in=sum(int(r.tokens_in or 0) for r in attempts),
        tokens_out=sum(int(r.tokens_out or 0) for r in attempts),
        runs=runs,
    )


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _slice_row(name: str, limit: Any, rows: list[PairRow], errors: list[MemberError], missing: list[str], interpreted: bool) -> SliceRow:
    noisy = [r.noisy_score for r in rows if r.noisy_score is not None]
    clean = [r.clean_score for r in rows if r.clean_score is not None]
    deltas = [r.delta for r in rows if r.delta is not None]
    exceeding = [r.pair_id for r in rows if r.within_limit is False]
    ids = {r.pair_id for r in rows}
    return SliceRow(
        slice=name,
        risk=limit.risk,
        pairs=len(rows),
        scored=len(noisy),
        errors=sum(1 for e in errors if e.pair_id in ids),
        missing=sum(1 for m in missing if m.rsplit(":", 1)[0] in ids),
        max_noisy_score=max(noisy) if noisy else None,
        mean_noisy_score=_mean(noisy),  # type: ignore[arg-type]
        mean_clean_score=_mean(clean),  # type: ignore[arg-type]
        max_delta=max(deltas) if deltas else None,
        mean_delta=_mean(deltas),  # type: ignore[arg-type]
        limit_max_score=limit.max_score,
        limit_max_delta=limit.max_delta,
        within_limit=None if not interpreted or not noisy else not exceeding,
        exceeding=exceeding,
    )


# -- presentation --------------------------------------------------------------------------


def format_noise(report: NoiseReport) -> str:
    """Human-readable text: outcome, control ordering, pairs, slices, blockers. Lower is better throughout."""

    def num(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    lines = [
        f"noise:      {report.outcome.upper()} (NoiseSensitivity: {LOWER_IS_BETTER})",
        f"suite:      {report.suite} (sha256 {report.suite_sha256[:12]})",
        f"judge:      {report.judge.name + '@' + report.judge.version if report.judge else '(no results)'}" + (f" (fingerprint {report.judge_fingerprint[:12]})" if report.judge_fingerprint else ""),
        f"cost:       ${report.cost_usd:.4f}, tokens {report.tokens_in} in / {report.tokens_out} out, {report.results_read} attempts read",
        "",
        f"controls ({'all separated' if report.controls_passed else 'FAILED'}; the negative must score higher: {LOWER_IS_BETTER}):",
    ]
    for c in report.controls:
        lines.append(f"  {'ok  ' if c.separated else 'FAIL'} {c.pair_id} [{c.mode}] positive {num(c.positive_score)} negative {num(c.negative_score)}: {c.detail}")
    if report.stopped_reason:
        lines += ["", f"stopped: {report.stopped_reason}"]
    if report.candidates_interpreted:
        lines += ["", f"candidate pairs (clean -> noisy, delta; {LOWER_IS_BETTER}):"]
        for r in report.pairs:
            mark = {True: "ok  ", False: "OVER", None: "--  "}[r.within_limit]
            lines.append(f"  {mark} {r.slice}/{r.pair_id} [{r.mode}] {num(r.clean_score)} -> {num(r.noisy_score)} delta {num(r.delta)} (max {r.limit_max_score:g})" + (f" errors: {'; '.join(r.errors)}" if r.errors else ""))
        lines += ["", f"slices (noisy score vs max_score; {LOWER_IS_BETTER}):"]
        for s in report.slices:
            mark = {True: "ok  ", False: "OVER", None: "--  "}[s.within_limit]
            lines.append(f"  {mark} {s.slice}: max {num(s.max_noisy_score)} mean {num(s.mean_noisy_score)} vs max_score {s.limit_max_score:g} (n={s.scored} of {s.pairs} pairs, {s.errors} errors, {s.missing} missing)")
    if report.blockers:
        lines += ["", "blockers:"]
        for b in report.blockers:
            lines.append(f"  [{b.category}] {b.slice or '-'}: {b.code}: {b.message}" + (f" cases: {', '.join(b.case_ids[:10])}" if b.case_ids else ""))
    return "\n".join(lines)


def noise_chart(report: NoiseReport) -> Any:
    """Clean and noisy score per pair (controls and candidates) with each candidate slice's limit. Lower is better."""
    import altair as alt
    import pandas as pd

    members = ["clean (positive control)", "noisy (negative control)", "clean", "noisy"]
    colors = ["#2e7d32", "#8e24aa", "#1f77b4", "#ff7f0e"]
    points, limits, order = [], [], []
    for c in report.controls:
        label = f"control · {c.slice} · {c.pair_id} [{c.mode}]"
        order.append(label)
        for member, score in ((members[0], c.positive_score), (members[1], c.negative_score)):
            if score is not None:
                points.append({"pair": label, "member": member, "score": score, "mode": c.mode})
    for r in report.pairs:
        label = f"candidate · {r.slice} · {r.pair_id} [{r.mode}]"
        order.append(label)
        for member, score in ((members[2], r.clean_score), (members[3], r.noisy_score)):
            if score is not None:
                points.append({"pair": label, "member": member, "score": score, "mode": r.mode})
        if report.candidates_interpreted:
            limits.append({"pair": label, "max_score": r.limit_max_score})
    data = pd.DataFrame(points, columns=["pair", "member", "score", "mode"])
    y = alt.Y("pair:N", sort=order, title=None, axis=alt.Axis(labelLimit=420))
    x_title = f"NoiseSensitivity score ({LOWER_IS_BETTER})"
    color = alt.Color("member:N", title=None, scale=alt.Scale(domain=members, range=colors), legend=alt.Legend(orient="bottom"))
    x = alt.X("score:Q", title=x_title, scale=alt.Scale(domain=[0, 1]))
    base = alt.Chart(data).encode(x=x, y=y, color=color, tooltip=["pair", "member", "mode", "score"])
    clean_dots = base.transform_filter(alt.FieldOneOfPredicate(field="member", oneOf=members[0::2])).mark_point(filled=False, size=140, strokeWidth=2)
    noisy_dots = base.transform_filter(alt.FieldOneOfPredicate(field="member", oneOf=members[1::2])).mark_point(filled=True, size=55)
    layers: list[Any] = [clean_dots, noisy_dots]
    if limits:
        layers.insert(0, alt.Chart(pd.DataFrame(limits)).mark_tick(color="#444444", thickness=2, size=16).encode(x="max_score:Q", y=y, tooltip=["pair", "max_score"]))
    title = f"Clean vs noisy NoiseSensitivity per pair; ring = clean, dot = noisy, dark tick = slice max_score ({LOWER_IS_BETTER})"
    return alt.layer(*layers).properties(width=420, title=title)
