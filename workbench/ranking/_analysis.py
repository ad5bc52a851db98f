"""Ranking analysis: :func:`ranking_report` reads judge results against the fixtures.

Integration defects never enter the quality figures; every figure's k and n are defined in
:data:`DENOMINATORS`; the ranking gate's decision is embedded (:mod:`workbench.ranking._gate`).
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from .._io import atomic_write_json
from .._record import Record as _Frozen
from ..errors import refusal
from ..results import JudgeResult, ResultLine, read_results
from ..stats import Rate, wilson_rate
from ._capture import is_stub, norm, occurrences, request_text
from ._context import ContextSensitivity, context_sensitivity
from ._diff import CandidateDiff, candidate_diff, judged_fields
from ._fixtures import FixtureSet, RankingFixture, as_fixture_set, check_permutation
from ._gate import History, RankingGateResult
from ._leakage import LeakageHit, LeakageRules, checkable_ids, rules_for, scan_reason

RANKING_SCHEMA_VERSION = 1
"""Version of :class:`RankingReport`'s JSON form."""

DENOMINATORS: dict[str, str] = {
    "invalid_rankings": (
        "k = attempts whose returned list is not a permutation of the presented candidates; n ="
        " attempts that returned an answer or an invalid_ranking error (latest attempt per case and"
        " repeat)."
    ),
    "agreement.pairs": (
        "k = candidate pairs in the same relative order as the expected (best accepted) order; n ="
        " candidate pairs over every valid attempt (1 pair per attempt for a critical pair)."
    ),
    "agreement.exact": "k = valid attempts agreeing on every compared pair; n = valid attempts.",
    "must_win.must_win": (
        "k = valid attempts of must-win fixtures whose winner is an accepted winner (or whose"
        " critical pair holds); n = valid attempts of must-win fixtures."
    ),
    "must_win.monitor_only": "As must_win, over monitor-only fixtures.",
    "position_bias.by_position": (
        "Position battery only. wins = valid attempts whose winner was shown at position p (0 ="
        " first); attempts = valid attempts that showed at least p+1 candidates; chance = the share"
        " a position-blind ranker gets under balanced permutations (mean of 1/n)."
    ),
    "position_bias.by_candidate": (
        "Position battery only. wins = valid attempts of the fixture the candidate won; attempts ="
        " valid attempts of the fixture."
    ),
    "position_bias.expected_winner_by_position": (
        "Position battery only, fixtures with one expected winner (or a critical pair). wins ="
        " attempts whose must-win check held; attempts = attempts that showed the expected winner"
        " (better id) at position p."
    ),
    "stability.stable_cases": (
        "k = fixtures whose winner is the same in every valid attempt of the baseline; n = fixtures"
        " with at least 2 valid attempts in it."
    ),
    "stability.agreeing_attempts": (
        "k = valid attempts whose winner is the fixture's modal winner in the baseline; n = valid"
        " attempts in the baseline of fixtures with at least 2."
    ),
    "assembly.incomplete_requests": (
        "k = attempts whose stored request (or its capture evidence) lacks a candidate text or a"
        " reviewer-cited passage, or shows a candidate twice; n = attempts with a stored request or"
        " capture stub."
    ),
    "assembly.duplicated_candidates": (
        "k = attempts whose request shows some candidate's text two or more times; n = attempts"
        " with a stored request or capture stub."
    ),
    "assembly.leaked_ids": (
        "k = attempts whose stored request shows a stable candidate id that no fixture text"
        " contains; n = attempts with a stored request or capture stub."
    ),
    "metric_defects": (
        "k = valid attempts whose judge reason cites something outside the criterion (criterion"
        " leakage); n = valid attempts with a reason."
    ),
    "slices.agreement": "As agreement.pairs, over the slice's fixtures.",
    "slices.reversed_cases": (
        "k = must-win fixtures of the slice with at least one failed must-win check; n = must-win"
        " fixtures of the slice with a valid attempt."
    ),
    "slices.reversal_attempts": (
        "k = failed must-win checks; n = valid attempts of the slice's must-win fixtures."
    ),
    "slices.drift_cases": (
        "k = monitor-only fixtures of the slice with at least one failed check; n = monitor-only"
        " fixtures of the slice with a valid attempt."
    ),
    "slices.position_stable": (
        "Position battery only. k = fixtures of the slice whose winner is the same in every"
        " position attempt; n = fixtures of the slice with at least 2 position attempts."
    ),
    "slices.first_shown_wins": (
        "Position battery only. k = attempts won by the candidate shown first; n = position"
        " attempts of the slice."
    ),
}

Diagnosis = Literal[
    "candidates_changed",
    "integration_defect",
    "assembly_defect",
    "judge_variation",
    "position_sensitive",
    "stable_disagreement",
]
OwnerRole = Literal["application", "evaluation", "platform", "domain_reviewer"]
DIAGNOSIS_OWNER: dict[str, OwnerRole] = {
    "candidates_changed": "application",
    "integration_defect": "evaluation",
    "assembly_defect": "evaluation",
    "judge_variation": "platform",
    "position_sensitive": "evaluation",
    "stable_disagreement": "domain_reviewer",
}
"""Who a failure is handed to first, by diagnosis."""
DefectCode = Literal[
    "invalid_ranking",
    "unknown_case",
    "candidates_changed",
    "presentation_mismatch",
    "winner_mismatch",
    "allowed_values_mismatch",
]


class IntegrationDefect(_Frozen):
    """A malformed or unmappable result: the metric integration's problem, not a quality figure."""

    case_id: str
    """The case the result claims."""
    repeat: int
    """The result's repeat index (its presentation within the battery)."""
    code: DefectCode
    """What kind of defect (see :data:`DefectCode`)."""
    message: str
    """What is wrong, in words."""
    returned: list[str] | None = None
    """The raw returned order, as recorded."""
    missing: list[str] = []
    """Candidate ids absent from the returned list."""
    unknown: list[str] = []
    """Returned items that map to no candidate."""
    duplicates: list[str] = []
    """Candidate ids returned more than once."""
    presented_order: list[str] | None = None
    """The order the candidates were shown in, when recorded."""


class EvaluatorErrorRow(_Frozen):
    """An attempt that ended in an evaluator error other than ``invalid_ranking``."""

    case_id: str
    """The case."""
    repeat: int
    """The repeat index."""
    kind: str
    """The evaluator-error kind (``timeout``, ``provider_error`` ...)."""
    message: str
    """The recorded message."""


class CaseAgreement(_Frozen):
    """Pairwise agreement of one fixture over its valid attempts."""

    case_id: str
    """The fixture."""
    gate: str
    """``must-win`` or ``monitor-only``."""
    ties: Literal["none", "acceptable_orders", "critical_pair"]
    """How the fixture accepts ties."""
    attempts: int
    """Valid attempts of the fixture."""
    pairs: Rate
    """Agreed pairs over compared pairs, all attempts."""
    exact: Rate
    """Attempts agreeing on every compared pair."""
    min_agreement: float | None
    """The worst single attempt."""


class AgreementFigure(_Frozen):
    """Pairwise agreement with the expected order."""

    pairs: Rate
    """Agreed pairs over compared pairs, every valid attempt."""
    exact: Rate
    """Valid attempts agreeing on every compared pair."""
    cases: list[CaseAgreement]
    """Per fixture, in fixture order."""


class CaseMustWin(_Frozen):
    """Expected vs actual winners of one fixture."""

    case_id: str
    """The fixture."""
    gate: str
    """``must-win`` or ``monitor-only``."""
    expected: str
    """The accepted winner(s), or ``better > worse`` for a critical pair."""
    held: Rate
    """Attempts whose must-win check held."""
    reversed: int
    """Attempts whose must-win check failed."""
    actual_winners: dict[str, int]
    """Winner id -> attempts."""
    reversed_by_battery: dict[str, int]
    """Failed checks per baseline (``position``, ``repeat``, ``unlabelled``)."""
    attempts_by_battery: dict[str, int] = {}
    """Valid attempts per baseline (the confirmation rule reads the ``repeat`` count)."""
    slice: str | None = None
    """The fixture's slice."""


class MustWinFigure(_Frozen):
    """Must-win checks; reversals (blocking) and monitor-only drift (not blocking) apart."""

    must_win: Rate
    """Checks that held over valid attempts of must-win fixtures."""
    monitor_only: Rate
    """Checks that held over valid attempts of monitor-only fixtures."""
    reversals: list[CaseMustWin]
    """Must-win fixtures with at least one failed check: each blocks."""
    drift: list[CaseMustWin]
    """Monitor-only fixtures with at least one failed check: reported, never blocking."""
    cases: list[CaseMustWin]
    """Every fixture, in fixture order."""


class PositionRow(_Frozen):
    """How often the candidate shown at one position won."""

    position: int
    """0-based presented position."""
    wins: Rate
    """Wins (or held checks) over attempts that showed this position."""
    chance: float | None
    """Expected share for a position-blind ranker (balanced permutations)."""


class CandidateWins(_Frozen):
    """First places of one candidate of one fixture."""

    case_id: str
    """The fixture."""
    candidate_id: str
    """The candidate."""
    wins: Rate
    """First places over the fixture's valid position-battery attempts."""


class PositionBias(_Frozen):
    """First-place counts over the position battery only."""

    attempts: int
    """Valid position-battery attempts."""
    by_position: list[PositionRow]
    """First places by presented position (0 = shown first)."""
    by_candidate: list[CandidateWins]
    """First places per candidate, per fixture."""
    expected_winner_by_position: list[PositionRow]
    """The must-win check, by the position the expected winner was shown at."""


class CaseStability(_Frozen):
    """Winners of one fixture in one baseline."""

    case_id: str
    """The fixture."""
    gate: str
    """``must-win`` or ``monitor-only``."""
    attempts: int
    """Valid attempts in the baseline."""
    modal_winner: str
    """The most frequent winner."""
    modal_count: int
    """How often it won."""
    winners: dict[str, int]
    """Winner id -> attempts."""
    stable: bool
    """One winner in every attempt."""


class StabilityFigure(_Frozen):
    """Winner stability within one baseline (repeatability or position sensitivity)."""

    label: str
    """What the figure measures, for humans."""
    battery: Literal["repeat", "position"]
    """The baseline it is computed over."""
    stable_cases: Rate
    """Fixtures with one winner over fixtures with at least 2 valid attempts."""
    agreeing_attempts: Rate
    """Attempts won by the fixture's modal winner."""
    cases: list[CaseStability]
    """Per fixture."""


class Completeness(_Frozen):
    """Whether the judge actually saw the evidence: the stored request against the fixture."""

    checked: bool
    """False when the result stores no inline request or capture stub."""
    complete: bool | None
    """Every candidate text exactly once and every cited passage present (None: not checked)."""
    missing_candidates: list[str] = []
    """Candidate ids whose full text is not in the request (clipped or dropped)."""
    duplicated_candidates: list[str] = []
    """Candidate ids whose full text appears two or more times in the request."""
    source: Literal["request", "capture_evidence", "none"] = "none"
    """What was checked: the stored request, or the digest evidence of a capture stub."""
    missing_context: list[str] = []
    """Reviewer-cited passage ids whose text is not in the request."""
    leaked_ids: list[str] = []
    """Stable candidate ids visible in the request (and in no fixture text)."""


class AssemblyFigure(_Frozen):
    """Completeness of the stored requests over every attempt (reported, not blocking)."""

    incomplete_requests: Rate
    """Attempts whose request is incomplete, over attempts with a stored request."""
    duplicated_candidates: Rate = wilson_rate(0, 0)
    """Attempts whose request shows some candidate twice."""
    leaked_ids: Rate
    """Attempts whose request shows a stable candidate id."""
    cases: list[str]
    """Fixtures with at least one incomplete request."""


class FailureArtifact(_Frozen):
    """The first artifact of a failing case: enough to assign the owner without a rerun."""

    case: str
    """The fixture's case id."""
    gate: str
    """``must-win`` or ``monitor-only``."""
    criterion_version: str
    """The criterion the reviewers applied."""
    direction: str
    """What the first id of an order means."""
    diagnosis: Diagnosis
    """Why the case fails, the first that holds (see :func:`_diagnosis`)."""
    failing_attempts: Rate
    """Failing attempts of this case over its attempts with an answer."""
    battery: str | None
    """Baseline of the shown attempt (``position``, ``repeat``)."""
    permutation_index: int | None
    """Index of its presented order in the battery."""
    repetition: int | None
    """Its repetition in the repeat baseline."""
    repeat: int
    """Its repeat index in the results."""
    presented_order: list[str] | None
    """The order the candidates were shown in (label A first)."""
    expected_order: list[str]
    """The reviewed order, in ``direction``."""
    actual_order: list[str] | None
    """The returned order in ``direction`` (raw returned list for an invalid ranking)."""
    pairwise_agreement: float | None
    """Agreement of this attempt (best accepted order; critical pair 1 or 0)."""
    must_win_expected: str
    """What the must-win check expects."""
    must_win_actual: str | None
    """What this attempt returned (winner, or the critical pair's order)."""
    source_candidates_sha256: str
    """Digest of the frozen fixture candidates (the source boundary)."""
    judged_candidates_sha256: str
    """Digest recorded with the result (what the run judged)."""
    rendered_request_sha256: str | None
    """Digest of the evaluator-visible request (the rendered boundary)."""
    completeness: Completeness
    """Did the request hold every candidate text and cited passage?"""
    reason: str | None
    """The judge's reason (it names neutral labels)."""
    error: str | None
    """The evaluator error, for an invalid ranking."""
    slice: str | None = None
    """The fixture's slice."""
    fixture_sha256: str = ""
    """Per-fixture hash of the fixture as written (the frozen release's)."""
    judge: str | None = None
    """``name@version`` of the judge."""
    judge_fingerprint: str | None = None
    """The judge fingerprint."""
    ragas_version: str | None = None
    """The Ragas version the judge ran with."""
    judge_configuration: dict[str, Any] = {}
    """The judge's kind, model, prompt sha256 and every spec parameter."""
    capture: str | None = None
    """How the request was stored: ``full``, ``digest_and_excerpts`` or ``inline``."""
    request_payload: str | None = None
    """The payload file of the shown attempt (relative to the run directory), while retained."""
    metric_defects: list[LeakageHit] = []
    """Criterion leakage in the shown attempt's reason."""
    reproduce: str | None = None
    """The command that replays the failing attempt from frozen inputs, when known."""
    owner: OwnerRole = "evaluation"
    """Who the failure goes to first (by diagnosis, :data:`DIAGNOSIS_OWNER`)."""
    owners: dict[str, str | None] = {}
    """The four owners from the ranking policy (None: not named)."""
    candidate_diff: list[CandidateDiff] = []
    """For ``candidates_changed``: each field whose judged text differs from the frozen fixture,
    as a unified diff (judged -> frozen), for the application owner."""
    allowed_values: int | None = None
    """The ``allowed_values`` the shown attempt ran with (its candidate count; None: a result
    recorded before the count was kept)."""


class MetricDefect(_Frozen):
    """An attempt whose reason cites something outside the criterion."""

    case_id: str
    """The fixture."""
    repeat: int
    """The attempt's repeat index."""
    slice: str | None
    """The fixture's slice."""
    criterion_version: str
    """The criterion the reason was checked against."""
    held: bool
    """Whether the attempt's must-win check held (a passing order is still a defect)."""
    hits: list[LeakageHit]
    """What the reason cites."""
    reason: str
    """The judge's reason."""


class SliceFigure(_Frozen):
    """Agreement, reversals and position sensitivity of one slice, with denominators."""

    slice: str
    """The slice (``(none)`` for fixtures without one)."""
    cases: int
    """Fixtures in the slice."""
    must_win_cases: int
    """Must-win fixtures in the slice."""
    agreement: Rate
    """Agreed pairs over compared pairs, every valid attempt of the slice."""
    reversed_cases: Rate
    """Must-win fixtures with a failed check over must-win fixtures with a valid attempt."""
    reversal_attempts: Rate
    """Failed must-win checks over valid attempts of must-win fixtures."""
    drift_cases: Rate
    """Monitor-only fixtures with a failed check over monitor-only fixtures with a valid attempt."""
    position_stable: Rate
    """Fixtures with one winner across the position battery (of those with 2+ attempts)."""
    first_shown_wins: Rate
    """Position attempts won by the candidate shown first over position attempts."""


class RankingReport(_Frozen):
    """The ranking analysis of one judge over one fixture set."""

    schema_version: int = RANKING_SCHEMA_VERSION
    """Report format version."""
    kind: Literal["workbench.ranking"] = "workbench.ranking"
    """Report type."""
    status: Literal["complete", "incomplete"]
    """``incomplete``: an unanswered fixture or planned attempt, or an evaluator error."""
    passed: bool
    """The ranking gate's outcome is ``passed`` (see ``gate``)."""
    blockers: list[str]
    """The gate's unwaived blockers, in words."""
    judge: str | None
    """``name@version`` of the judge."""
    judge_fingerprint: str | None
    """The judge fingerprint every result shares."""
    fixtures: str
    """``name@version`` of the fixture set."""
    fixtures_sha256: str
    """sha256 of the fixture file."""
    results_path: str | None
    """The results file analysed."""
    cases: int
    """Fixtures."""
    results_read: int
    """Result records read."""
    superseded_attempts: int
    """Earlier attempts of a case and repeat (retries), not analysed."""
    attempts: int
    """Latest attempt per case and repeat."""
    valid_attempts: int
    """Attempts without defect or error: the quality figures' base."""
    unlabelled_attempts: int
    """Valid attempts without a battery presentation (not in position and stability figures)."""
    integration_defects: list[IntegrationDefect]
    """Malformed or unmappable results, listed first."""
    invalid_rankings: Rate
    """Invalid permutations over attempts that returned an answer."""
    evaluator_errors: list[EvaluatorErrorRow]
    """Other evaluator errors (timeouts, provider errors ...)."""
    missing_cases: list[str]
    """Fixtures without any answer: no result, or evaluator errors only."""
    missing_attempts: list[str]
    """Planned ``case_id#repeat`` with no result (when the plan is known)."""
    agreement: AgreementFigure
    """Pairwise agreement with the expected order."""
    must_win: MustWinFigure
    """Must-win reversals and monitor-only drift."""
    position_bias: PositionBias
    """First places by presented position and per candidate."""
    repeatability: StabilityFigure
    """Winner stability across identical presentations."""
    position_sensitivity: StabilityFigure
    """Winner stability across permutations."""
    assembly: AssemblyFigure
    """Completeness of the stored requests."""
    failures: list[FailureArtifact]
    """One artifact per failing case."""
    metric_defects: list[MetricDefect] = []
    """Attempts whose reason shows criterion leakage."""
    metric_defect_rate: Rate = wilson_rate(0, 0)
    """Attempts with leakage over valid attempts with a reason."""
    slices: list[SliceFigure] = []
    """Per fixture slice."""
    fixture_hashes: dict[str, str] = {}
    """Per-fixture hashes of the fixture set analysed."""
    fixtures_frozen: bool = False
    """Whether the fixture file is a verified frozen release."""
    context_sensitivity: list[ContextSensitivity] = []
    """Candidate pairs whose order flips between related fixtures (A beats B alone, loses to B
    when C is added): see :mod:`workbench.ranking._context`."""
    allowed_values: dict[str, int] = {}
    """Per fixture, the Ragas ``allowed_values``: its candidate count (a result recording another
    count is an ``allowed_values_mismatch`` integration defect)."""
    gate: RankingGateResult | None = None
    """The ranking gate's decision (:class:`~workbench.ranking.RankingGateResult`)."""
    denominators: dict[str, str]
    """How every figure's numerator and denominator are defined."""

    def attempt_counts(self) -> dict[str, int]:
        """How the latest attempts divide, and what is missing (every count shown comes here)."""
        return {
            "attempts": self.attempts,
            "valid": self.valid_attempts,
            "integration_defects": len(self.integration_defects),
            "evaluator_errors": len(self.evaluator_errors),
            "missing_attempts": len(self.missing_attempts),
            "fixtures_without_answer": len(self.missing_cases),
        }

    def counts_line(self) -> str:
        """The attempts in one line: valid, integration defects, evaluator errors, missing."""
        n = self.attempt_counts()
        return (
            f"{n['attempts']} attempt(s): {n['valid']} valid,"
            f" {n['integration_defects']} integration defect(s),"
            f" {n['evaluator_errors']} evaluator error(s);"
            f" {n['missing_attempts']} planned attempt(s) without a result"
        )

    def incompleteness(self) -> str:
        """Why the report is incomplete, in words (the ``ranking_incomplete`` blocker's message)."""
        n = self.attempt_counts()
        return (
            f"{n['fixtures_without_answer']} fixture(s) without any answer,"
            f" {n['missing_attempts']} planned attempt(s) without a result,"
            f" {n['evaluator_errors']} evaluator error(s)"
        )

    def frames(self) -> dict[str, Any]:
        """pandas DataFrames for notebooks, integration defects first."""
        import pandas as pd

        tables = {**_figure_rows(self), **_stability_rows(self), **_gate_rows(self)}
        tables["failures"] = ([_failure_row(a) for a in self.failures], None)
        return {
            name: pd.DataFrame(rows, columns=cols.split() if cols else None)
            for name, (rows, cols) in tables.items()
        }


_Rows = tuple[list[dict[str, Any]], str | None]  # rows, columns space-separated (None: row keys)


def _flat(model: BaseModel, exclude: Collection[str] = (), **rename: str) -> dict[str, Any]:
    """A record as a frame row: a :class:`Rate` field as ``<name>_k``, ``<name>_n``, ``<name>``."""
    row: dict[str, Any] = {}
    for name in (n for n in type(model).model_fields if n not in exclude):
        value, col = getattr(model, name), rename.get(name, name)
        is_rate = isinstance(value, Rate)
        row |= (
            {f"{col}_k": value.k, f"{col}_n": value.n, col: value.rate} if is_rate else {col: value}
        )
    return row


def _figure_rows(report: RankingReport) -> dict[str, _Rows]:
    bias = report.position_bias
    return {
        "integration_defects": (
            [d.model_dump() for d in report.integration_defects],
            " ".join(IntegrationDefect.model_fields),
        ),
        "evaluator_errors": (
            [e.model_dump() for e in report.evaluator_errors],
            " ".join(EvaluatorErrorRow.model_fields),
        ),
        "agreement": ([_flat(c, pairs="agreement") for c in report.agreement.cases], None),
        "must_win": (
            [_flat(c, {"attempts_by_battery", "slice"}) for c in report.must_win.cases],
            None,
        ),
        "position_by_position": (
            [
                {**_flat(p), "ci95_low": p.wins.ci95_low, "ci95_high": p.wins.ci95_high}
                for p in bias.by_position
            ],
            None,
        ),
        "position_by_candidate": ([_flat(c) for c in bias.by_candidate], None),
        "expected_winner_by_position": (
            [_flat(p, {"chance"}, wins="held") for p in bias.expected_winner_by_position],
            None,
        ),
    }


def _stability_rows(report: RankingReport) -> dict[str, _Rows]:
    figures = (report.repeatability, report.position_sensitivity)
    return {
        "stability": ([_flat(f, {"cases"}, label="figure") for f in figures], None),
        "stability_by_case": (
            [{"battery": f.battery, **_flat(c)} for f in figures for c in f.cases],
            None,
        ),
        "slices": ([_flat(s) for s in report.slices], None),
        "metric_defects": (
            [
                {
                    **_flat(m, {"hits"}, held="order_held"),
                    "cites": ", ".join(f"{h.category}: {h.matched!r}" for h in m.hits),
                }
                for m in report.metric_defects
            ],
            "case_id repeat slice criterion_version order_held cites reason",
        ),
    }


def _gate_rows(report: RankingReport) -> dict[str, _Rows]:
    gate = report.gate
    sides = gate.side_by_side if gate else None
    return {
        "blockers": (
            [b.model_dump() for b in (gate.blockers if gate else [])],
            "code category message case_ids slice waivable",
        ),
        "confirmation": (
            [c.model_dump() for c in (gate.confirmation if gate else [])],
            "case_id slice reversed_attempts repeat_attempts repeat_reversals"
            " previous_run_reversed status rule",
        ),
        "fixture_changes": (
            [
                {
                    **c.model_dump(exclude={"recorded"}),
                    "approver": c.recorded.approver if c.recorded else None,
                    "reason": c.recorded.reason if c.recorded else None,
                }
                for c in (gate.fixture_changes if gate else [])
            ],
            "case_id change in_place old_version new_version old_order new_order approver reason",
        ),
        "side_by_side": (
            [
                {"direction": direction, **r.model_dump()}
                for direction, rows in (
                    ("scalar passes, ranking does not", sides.scalar_pass_ranking_fail),
                    ("scalar fails, ranking passes", sides.scalar_fail_ranking_pass),
                )
                for r in rows
            ]
            if sides
            else [],
            "direction case_id slice scalar_passed scalar_score ranking_status ranking_codes",
        ),
    }


def _failure_row(a: FailureArtifact) -> dict[str, Any]:
    c = a.completeness
    return {
        "case": a.case,
        "gate": a.gate,
        "diagnosis": a.diagnosis,
        "failing": f"{a.failing_attempts.k}/{a.failing_attempts.n}",
        "presented_order": a.presented_order,
        "expected_order": a.expected_order,
        "actual_order": a.actual_order,
        "pairwise_agreement": a.pairwise_agreement,
        "must_win_expected": a.must_win_expected,
        "must_win_actual": a.must_win_actual,
        "request_complete": c.complete,
        "missing_context": c.missing_context,
        "missing_candidates": c.missing_candidates,
        "duplicated_candidates": c.duplicated_candidates,
        "source_candidates_sha256": a.source_candidates_sha256[:12],
        "rendered_request_sha256": (a.rendered_request_sha256 or "")[:12],
        "owner": f"{a.owner}: {a.owners.get(a.owner) or 'not named'}",
        "allowed_values": a.allowed_values,
        "ragas_version": a.ragas_version,
        "judge": a.judge,
        "capture": a.capture,
        "reproduce": a.reproduce,
    }


# -- the analysis ---------------------------------------------------------------------------


@dataclass
class _Attempt:
    fixture: RankingFixture
    result: JudgeResult
    order: list[str]
    winner: str
    battery: str
    presented: list[str] | None
    agreed: int
    pairs: int
    held: bool
    completeness: Completeness | None = field(default=None)
    leakage: list[LeakageHit] = field(default_factory=list)

    @property
    def failing(self) -> bool:
        return not self.held or self.agreed < self.pairs


def _results(
    results: str | Path | Iterable[JudgeResult | ResultLine],
) -> tuple[list[JudgeResult], str | None]:
    if isinstance(results, str | Path):
        return [line.result for line in read_results(results)], str(results)
    return [r.result if isinstance(r, ResultLine) else r for r in results], None


def _battery(result: JudgeResult) -> str:
    p = result.presentation or {}
    return str(p.get("battery")) if p.get("battery") in ("position", "repeat") else "unlabelled"


def _presentation_problem(fixture: RankingFixture, result: JudgeResult) -> str | None:
    p = result.presentation
    if not p or "presented_order" not in p:
        return None
    presented = p.get("presented_order")
    if not isinstance(presented, list):
        return f"presented_order is not a list: {presented!r}"
    check = check_permutation(fixture.candidate_ids, presented)
    if not check.ok or len(presented) != len(fixture.candidate_ids):
        return (
            f"presented_order {presented} is not a permutation of the fixture's candidates:"
            f" {check.describe()}"
        )
    labels = p.get("labels")
    if labels is not None and (not isinstance(labels, dict) or list(labels.values()) != presented):
        return f"labels {labels} do not map the presented order {presented}"
    return None


@lru_cache(maxsize=4096)
def _probe(
    case_id: str,
    digest: str,
    cited: tuple[str, ...],
    texts: tuple[tuple[str, str], ...],
    passages: tuple[tuple[str, str], ...],
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """A fixture's candidate texts and cited passages, whitespace normalised (once per fixture)."""
    return (
        tuple((cid, norm(t)) for cid, t in texts),
        tuple((pid, norm(dict(passages)[pid])) for pid in cited),
    )


def completeness(
    fixture: RankingFixture, rendered_request: Any, presentation: dict[str, Any] | None = None
) -> Completeness:
    """Check a stored request (or a capture stub's evidence) against the fixture: every
    candidate text exactly once, every cited passage present, no stable candidate id shown."""
    if rendered_request is None:
        return Completeness(checked=False, complete=None)
    source: Literal["request", "capture_evidence"] = "request"
    if is_stub(rendered_request):
        source, evidence = "capture_evidence", rendered_request["evidence"]
        labels: dict[str, str] = (presentation or {}).get("labels") or {}
        counts = {
            labels.get(row["label"], row["label"]): int(row["occurrences"])
            for row in evidence.get("candidates", [])
        }
        present = {int(row["index"]): bool(row["present"]) for row in evidence.get("context", [])}
        index = {p.id: i for i, p in enumerate(fixture.context)}
        missing_context = [pid for pid in fixture.cited_context if not present.get(index[pid])]
        leaked = list(evidence.get("leaked_ids") or [])
    else:
        candidates, cited = _probe(
            fixture.case_id,
            fixture.source_candidates_sha256,
            tuple(fixture.cited_context),
            tuple((c.id, c.text) for c in fixture.candidates),
            tuple((p.id, p.text) for p in fixture.context),
        )
        text = request_text(rendered_request)
        counts = occurrences(dict(candidates), text)
        missing_context = [pid for pid, t in cited if t not in text]
        leaked = [cid for cid, tok in checkable_ids(fixture) if cid in text and tok.search(text)]
    missing = [cid for cid in fixture.candidate_ids if counts.get(cid, 0) == 0]
    duplicated = [cid for cid in fixture.candidate_ids if counts.get(cid, 0) > 1]
    return Completeness(
        checked=True,
        complete=not (missing or missing_context or duplicated),
        missing_candidates=missing,
        duplicated_candidates=duplicated,
        missing_context=missing_context,
        leaked_ids=leaked,
        source=source,
    )


def ranking_report(
    fixtures: FixtureSet | str | Path | Iterable[RankingFixture],
    results: str | Path | Iterable[JudgeResult | ResultLine],
    *,
    planned: Sequence[Any] | None = None,
    policy: Any = None,
    history: History = (),
    overrides: Iterable[Any] = (),
    scalar: Iterable[Any] | None = None,
    battery: dict[str, Any] | None = None,
    now: Any = None,
) -> RankingReport:
    """Analyse one judge's results (a file or records) against the fixtures and apply the gate.

    ``planned``: the battery's items (unrun attempts are listed); ``policy``, ``history`` (the
    history log's path, or its lines), ``overrides`` and ``scalar`` feed the gate, which refuses
    scalar rows after the set's scalar gate was retired; ``battery``: the run's ``battery.json``.
    """
    from ._gate import ranking_gate
    from ._policy import default_policy

    fixture_set = as_fixture_set(fixtures)
    policy = policy or default_policy()
    report = _analyse(fixture_set, results, planned, battery, policy)
    gate = ranking_gate(
        report,
        fixture_set,
        policy=policy,
        history=history,
        overrides=overrides,
        scalar=scalar,
        now=now,
    )
    return report.model_copy(
        update={
            "gate": gate,
            "passed": gate.outcome == "passed",
            "blockers": [b.message for b in gate.blockers],
        }
    )


def _missing(
    fixture_set: FixtureSet,
    read: _Read,
    latest: dict[tuple[str, int], JudgeResult],
    planned: Sequence[Any] | None,
) -> tuple[list[str], list[str]]:
    # a fixture answered only with malformed results is an integration defect, not missing
    answered = {a.fixture.case_id for a in read.attempts} | {d.case_id for d in read.defects}
    return (
        [f.case_id for f in fixture_set.fixtures if f.case_id not in answered],
        [f"{i.case_id}#{i.repeat}" for i in planned or [] if (i.case_id, i.repeat) not in latest],
    )


def _analyse(
    fixture_set: FixtureSet,
    results: str | Path | Iterable[JudgeResult | ResultLine],
    planned: Sequence[Any] | None,
    battery: dict[str, Any] | None,
    policy: Any,
) -> RankingReport:
    from ._gate import _owners

    battery, planned = _battery_plan(fixture_set, results, battery, planned)
    by_id = fixture_set.by_id()
    rows, results_path = _results(results)
    latest = _latest_attempts(rows, results_path)
    read = _read_attempts([latest[k] for k in sorted(latest, key=lambda k: (k[0], k[1]))], by_id)
    attempts = read.attempts
    missing_cases, missing_attempts = _missing(fixture_set, read, latest, planned)
    assembly, checks = _assembly(attempts, read.invalid_results, by_id)
    metric_defects, defect_rate = _metric_defects(attempts, policy.leakage)
    run_dir = Path(results_path) if results_path else None
    context = {
        "battery": battery,
        "owners": _owners(policy),
        "run_dir": run_dir if run_dir is None or run_dir.is_dir() else run_dir.parent,
    }
    failures = _failures(fixture_set, read, checks, context)
    status: Literal["complete", "incomplete"] = (
        "incomplete" if missing_cases or missing_attempts or read.errors else "complete"
    )
    judge = rows[0].judge if rows else None
    return RankingReport(
        status=status,
        passed=False,
        blockers=[],
        judge=f"{judge.name}@{judge.version}" if judge else None,
        judge_fingerprint=rows[0].judge_fingerprint if rows else None,
        fixtures=fixture_set.label,
        fixtures_sha256=fixture_set.dataset_sha256,
        results_path=results_path,
        cases=len(fixture_set.fixtures),
        results_read=len(rows),
        superseded_attempts=len(rows) - len(latest),
        attempts=len(latest),
        valid_attempts=len(attempts),
        unlabelled_attempts=sum(a.battery == "unlabelled" for a in attempts),
        integration_defects=read.defects,
        invalid_rankings=wilson_rate(
            sum(d.code == "invalid_ranking" for d in read.defects), read.answered
        ),
        evaluator_errors=read.errors,
        missing_cases=missing_cases,
        missing_attempts=missing_attempts,
        agreement=_agreement(fixture_set, read),
        must_win=_must_win(fixture_set, read),
        position_bias=_position_bias(attempts),
        repeatability=_stability(attempts, "repeat", "repeatability (identical presentations)"),
        position_sensitivity=_stability(
            attempts, "position", "position sensitivity (across permutations)"
        ),
        assembly=assembly,
        failures=failures,
        metric_defects=metric_defects,
        metric_defect_rate=defect_rate,
        slices=_slices(fixture_set, read),
        fixture_hashes=fixture_set.fixture_hashes,
        fixtures_frozen=fixture_set.frozen,
        allowed_values={f.case_id: len(f.candidates) for f in fixture_set.fixtures},
        context_sensitivity=context_sensitivity(
            fixture_set,
            {
                c: [a.fixture.best_first(a.order) for a in mine]
                for c, mine in read.by_case().items()
            },
        ),
        denominators=DENOMINATORS,
    )


def _battery_plan(
    fixture_set: FixtureSet,
    results: Any,
    battery: dict[str, Any] | None,
    planned: Sequence[Any] | None,
) -> tuple[dict[str, Any] | None, Sequence[Any] | None]:
    """The run's ``battery.json`` (from beside a results file) and its planned items."""
    if battery is None and isinstance(results, str | Path):
        from ._battery import read_battery

        battery = read_battery(Path(results).parent)
    if planned is None and battery and battery.get("fixtures_sha256") == fixture_set.dataset_sha256:
        from ._battery import _PLAN_KEYS, position_battery

        # the run's own plan: an attempt it planned and never recorded makes the report incomplete
        planned = position_battery(
            fixture_set, **{k: battery[k] for k in _PLAN_KEYS if k in battery}
        )
    return battery, planned


def _latest_attempts(
    rows: list[JudgeResult], results_path: str | None
) -> dict[tuple[str, int], JudgeResult]:
    """The last attempt of each (case, repeat); results of several judges are refused."""
    fingerprints = {r.judge_fingerprint for r in rows}
    if len(fingerprints) > 1:
        raise refusal(
            "mixed judges",
            results_path or "<results>",
            "mixed_judges",
            f"the results come from {len(fingerprints)} judges",
            "analyse one judge at a time; split the file by judge_fingerprint",
        )
    latest: dict[tuple[str, int], JudgeResult] = {}
    for r in rows:
        key = (r.case_id, r.repeat)
        if key not in latest or r.attempt >= latest[key].attempt:
            latest[key] = r
    return latest


@dataclass
class _Read:
    """The attempts sorted: valid, integration defects, evaluator errors, invalid by case."""

    attempts: list[_Attempt] = field(default_factory=list)
    defects: list[IntegrationDefect] = field(default_factory=list)
    errors: list[EvaluatorErrorRow] = field(default_factory=list)
    invalid_results: dict[str, list[JudgeResult]] = field(default_factory=lambda: defaultdict(list))
    changed: dict[str, list[JudgeResult]] = field(default_factory=lambda: defaultdict(list))
    answered: int = 0

    def by_case(self) -> dict[str, list[_Attempt]]:
        """The valid attempts of each fixture (fixtures without one are absent)."""
        out: dict[str, list[_Attempt]] = defaultdict(list)
        for a in self.attempts:
            out[a.fixture.case_id].append(a)
        return out


def _read_attempts(ordered: list[JudgeResult], by_id: dict[str, RankingFixture]) -> _Read:
    read = _Read()
    for r in ordered:
        fixture = by_id.get(r.case_id)
        defect = _integration_defect(fixture, r)
        if defect is not None:
            read.defects.append(defect)
            if defect.code == "candidates_changed":
                read.changed[r.case_id].append(r)
            continue
        assert fixture is not None
        if r.error is not None and r.error.kind != "invalid_ranking":
            read.errors.append(
                EvaluatorErrorRow(
                    case_id=r.case_id, repeat=r.repeat, kind=r.error.kind, message=r.error.message
                )
            )
            continue
        read.answered += 1
        _read_answer(read, fixture, r)
    return read


def _integration_defect(fixture: RankingFixture | None, r: JudgeResult) -> IntegrationDefect | None:
    presented = (r.presentation or {}).get("presented_order")
    if fixture is None:
        return _defect(
            r, "unknown_case", "a result for a case the fixtures do not have", r.order, None
        )
    if r.response_hash != fixture.source_candidates_sha256:
        message = (
            f"the judged candidates digest {r.response_hash[:12]} differs from the frozen"
            f" fixture's {fixture.source_candidates_sha256[:12]}: the candidates changed upstream"
        )
        return _defect(r, "candidates_changed", message, r.order, None)
    recorded = (r.presentation or {}).get("allowed_values")
    if recorded is not None and recorded != len(fixture.candidates):
        message = (
            f"the result records allowed_values={recorded!r} but the fixture has"
            f" {len(fixture.candidates)} candidates: allowed_values is the candidate count"
        )
        shown = presented if isinstance(presented, list) else None
        return _defect(r, "allowed_values_mismatch", message, r.order, shown)
    if (problem := _presentation_problem(fixture, r)) is not None:
        shown = presented if isinstance(presented, list) else None
        return _defect(r, "presentation_mismatch", problem, r.order, shown)
    return None


def _read_answer(read: _Read, fixture: RankingFixture, r: JudgeResult) -> None:
    """An invalid ranking, a winner that does not match its order, or a valid attempt."""
    order, ids = list(r.order or []), fixture.candidate_ids
    if r.error is not None or not check_permutation(ids, order).ok or len(order) != len(ids):
        message = (
            r.error.message
            if r.error is not None
            else f"the recorded order {order} is not a permutation of the fixture's candidates"
        )
        read.defects.append(_invalid_defect(fixture, r, message))
        read.invalid_results[r.case_id].append(r)
        return
    winner = fixture.best_first(order)[0]
    presented = (r.presentation or {}).get("presented_order")
    if r.value != winner:
        message = (
            f"value {r.value!r} is not the best of the recorded order ({winner!r} in"
            f" {fixture.direction} terms)"
        )
        read.defects.append(_defect(r, "winner_mismatch", message, order, presented))
        return
    agreed, pairs = fixture.agreement(order)
    held = fixture.must_win_holds(order)
    read.attempts.append(
        _Attempt(fixture, r, order, winner, _battery(r), presented, agreed, pairs, held)
    )


def _defect(
    r: JudgeResult, code: DefectCode, message: str, returned: Any, presented: Any, **more: Any
) -> IntegrationDefect:
    return IntegrationDefect(
        case_id=r.case_id,
        repeat=r.repeat,
        code=code,
        message=message,
        returned=returned,
        presented_order=presented,
        **more,
    )


def _invalid_defect(fixture: RankingFixture, r: JudgeResult, message: str) -> IntegrationDefect:
    returned = [str(x) for x in r.order] if r.order is not None else None
    labels: dict[str, str] = (r.presentation or {}).get("labels") or {}
    mapped = [labels.get(x.strip(), x) for x in returned or []] if labels else returned
    check = check_permutation(fixture.candidate_ids, mapped or [])
    presented = (r.presentation or {}).get("presented_order")
    return _defect(r, "invalid_ranking", message, returned, presented, **dataclasses.asdict(check))


def _ties(f: RankingFixture) -> Literal["none", "acceptable_orders", "critical_pair"]:
    return (
        "critical_pair"
        if f.critical_pair
        else "acceptable_orders"
        if f.acceptable_orders
        else "none"
    )


def _agreement(fixture_set: FixtureSet, read: _Read) -> AgreementFigure:
    by_case, attempts = read.by_case(), read.attempts
    cases = [
        CaseAgreement(
            case_id=f.case_id,
            gate=f.gate,
            ties=_ties(f),
            attempts=len(mine),
            pairs=wilson_rate(sum(a.agreed for a in mine), sum(a.pairs for a in mine)),
            exact=wilson_rate(sum(a.agreed == a.pairs for a in mine), len(mine)),
            min_agreement=min((a.agreed / a.pairs if a.pairs else 1.0 for a in mine), default=None),
        )
        for f in fixture_set.fixtures
        for mine in [by_case.get(f.case_id, [])]
    ]
    return AgreementFigure(
        pairs=wilson_rate(sum(a.agreed for a in attempts), sum(a.pairs for a in attempts)),
        exact=wilson_rate(sum(a.agreed == a.pairs for a in attempts), len(attempts)),
        cases=cases,
    )


def _must_win(fixture_set: FixtureSet, read: _Read) -> MustWinFigure:
    by_case = read.by_case()
    cases = [
        CaseMustWin(
            case_id=f.case_id,
            gate=f.gate,
            expected=f.must_win_expected(),
            held=wilson_rate(sum(a.held for a in mine), len(mine)),
            reversed=sum(not a.held for a in mine),
            actual_winners=dict(Counter(a.winner for a in mine).most_common()),
            reversed_by_battery=dict(
                sorted(Counter(a.battery for a in mine if not a.held).items())
            ),
            attempts_by_battery=dict(sorted(Counter(a.battery for a in mine).items())),
            slice=f.slice,
        )
        for f in fixture_set.fixtures
        for mine in [by_case.get(f.case_id, [])]
    ]

    def rate(gate: str) -> Rate:
        mine = [a for a in read.attempts if a.fixture.gate == gate]
        return wilson_rate(sum(a.held for a in mine), len(mine))

    return MustWinFigure(
        must_win=rate("must-win"),
        monitor_only=rate("monitor-only"),
        reversals=[c for c in cases if c.gate == "must-win" and c.reversed],
        drift=[c for c in cases if c.gate == "monitor-only" and c.reversed],
        cases=cases,
    )


def _position_bias(attempts: list[_Attempt]) -> PositionBias:
    mine = [a for a in attempts if a.battery == "position" and a.presented]
    width = max((len(a.presented or []) for a in mine), default=0)
    wins, shown, held, exp_shown = ([0] * width for _ in range(4))
    chance = [0.0] * width
    per_candidate: dict[tuple[str, str], int] = Counter()
    per_case: Counter[str] = Counter()
    for a in mine:
        presented = a.presented or []
        n = len(presented)
        wins[presented.index(a.winner)] += 1
        for p in range(n):
            shown[p] += 1
            chance[p] += 1 / n
        per_candidate[(a.fixture.case_id, a.winner)] += 1
        per_case[a.fixture.case_id] += 1
        expected = a.fixture.expected_winners
        if len(expected) == 1:
            p = presented.index(expected[0])
            exp_shown[p] += 1
            held[p] += a.held
    by_candidate = [
        CandidateWins(
            case_id=case_id,
            candidate_id=cid,
            wins=wilson_rate(per_candidate.get((case_id, cid), 0), per_case[case_id]),
        )
        for case_id in sorted(per_case)
        for cid in next(a.fixture.candidate_ids for a in mine if a.fixture.case_id == case_id)
    ]
    return PositionBias(
        attempts=len(mine),
        by_position=[
            PositionRow(
                position=p,
                wins=wilson_rate(wins[p], shown[p]),
                chance=(chance[p] / shown[p]) if shown[p] else None,
            )
            for p in range(width)
        ],
        by_candidate=by_candidate,
        expected_winner_by_position=[
            PositionRow(position=p, wins=wilson_rate(held[p], exp_shown[p]), chance=None)
            for p in range(width)
        ],
    )


def _stability(
    attempts: list[_Attempt], battery: Literal["repeat", "position"], label: str
) -> StabilityFigure:
    by_case: dict[str, list[_Attempt]] = defaultdict(list)
    for a in attempts:
        if a.battery == battery:
            by_case[a.fixture.case_id].append(a)
    cases = []
    for case_id in sorted(by_case):
        mine = by_case[case_id]
        if len(mine) < 2:
            continue
        counts = Counter(a.winner for a in mine)
        modal, count = counts.most_common(1)[0]
        cases.append(
            CaseStability(
                case_id=case_id,
                gate=mine[0].fixture.gate,
                attempts=len(mine),
                modal_winner=modal,
                modal_count=count,
                winners=dict(counts.most_common()),
                stable=len(counts) == 1,
            )
        )
    return StabilityFigure(
        label=label,
        battery=battery,
        stable_cases=wilson_rate(sum(c.stable for c in cases), len(cases)),
        agreeing_attempts=wilson_rate(
            sum(c.modal_count for c in cases), sum(c.attempts for c in cases)
        ),
        cases=cases,
    )


def _assembly(
    attempts: list[_Attempt],
    invalid: dict[str, list[JudgeResult]],
    by_id: dict[str, RankingFixture],
) -> tuple[AssemblyFigure, dict[tuple[str, int], Completeness]]:
    checks: dict[tuple[str, int], Completeness] = {}
    memo: dict[tuple[str, str | None], Completeness] = {}
    pairs = [(a.fixture, a.result) for a in attempts] + [
        (by_id[case_id], r) for case_id, rs in invalid.items() for r in rs
    ]
    for fixture, r in pairs:
        key = (fixture.case_id, r.rendered_request_sha256)
        if key not in memo or r.rendered_request_sha256 is None:
            memo[key] = completeness(fixture, r.rendered_request, r.presentation)
        checks[(r.case_id, r.repeat)] = memo[key]
    checked = [c for c in checks.values() if c.checked]
    incomplete_cases = sorted(
        {case_id for (case_id, _), c in checks.items() if c.checked and not c.complete}
    )
    figure = AssemblyFigure(
        incomplete_requests=wilson_rate(sum(not c.complete for c in checked), len(checked)),
        duplicated_candidates=wilson_rate(
            sum(bool(c.duplicated_candidates) for c in checked), len(checked)
        ),
        leaked_ids=wilson_rate(sum(bool(c.leaked_ids) for c in checked), len(checked)),
        cases=incomplete_cases,
    )
    return figure, checks


def _sort_key(a: _Attempt) -> tuple[int, int]:
    return ({"position": 0, "repeat": 1}.get(a.battery, 2), a.result.repeat)


def _judge_fields(r: JudgeResult) -> dict[str, Any]:
    ident = r.judge
    stub = r.rendered_request if is_stub(r.rendered_request) else None
    return {
        "judge": f"{ident.name}@{ident.version}",
        "judge_fingerprint": r.judge_fingerprint,
        "ragas_version": ident.ragas_version,
        "judge_configuration": {
            "kind": ident.kind,
            "model": ident.model,
            "prompt_sha256": ident.prompt_sha256,
            **ident.params,
        },
        "capture": (
            stub["capture"] if stub else ("inline" if r.rendered_request is not None else None)
        ),
        "request_payload": stub["payload"] if stub else None,
    }


def reproduce_command(battery: dict[str, Any] | None, case_id: str, repeat: int) -> str | None:
    """The command that replays one attempt from frozen inputs, from a run's ``battery.json``."""
    import shlex

    if not battery or not battery.get("candidate_spec") or not battery.get("fixtures_path"):
        return None
    args = [
        "workbench", "ranking", "replay",
        "--candidate", str(battery["candidate_spec"]),
        "--fixtures", str(battery["fixtures_path"]),
        "--case", case_id,
        "--repeat", str(repeat),
        "--plan", str(battery.get("plan", "exhaustive")),
        "--max-exhaustive", str(battery["max_exhaustive"]),
        "--sample", str(battery["sample"]),
        "--seed", str(battery["seed"]),
        "--repeats", str(battery["repeats"]),
        "--expect-fixtures-sha256", str(battery["fixtures_sha256"]),
        "--expect-fingerprint", str(battery["judge_fingerprint"]),
    ]  # fmt: skip
    return shlex.join(args)


def _failures(
    fixture_set: FixtureSet,
    read: _Read,
    checks: dict[tuple[str, int], Completeness],
    context: dict[str, Any],
) -> list[FailureArtifact]:
    """One artifact per failing fixture: an invalid result, else its worst failing attempt."""
    by_case = read.by_case()
    out: list[FailureArtifact] = []
    for f in fixture_set.fixtures:
        mine = sorted(by_case.get(f.case_id, []), key=_sort_key)
        changed = read.changed.get(f.case_id, [])
        bad = read.invalid_results.get(f.case_id, []) + changed
        failing = [a for a in mine if a.failing]
        if not failing and not bad:
            continue
        diagnosis = "candidates_changed" if changed else _diagnosis(f, mine, bad, checks)
        r, shown = (
            _changed_shown(f, changed, context.get("run_dir"))
            if changed
            else _invalid_shown(bad)
            if bad
            else _failing_shown(f, failing)
        )
        p = r.presentation or {}
        out.append(
            FailureArtifact(
                case=f.case_id,
                gate=f.gate,
                criterion_version=f.criterion_version,
                direction=f.direction,
                diagnosis=diagnosis,
                failing_attempts=wilson_rate(len(failing) + len(bad), len(mine) + len(bad)),
                expected_order=list(f.expected_order),
                must_win_expected=f.must_win_expected(),
                source_candidates_sha256=f.source_candidates_sha256,
                slice=f.slice,
                fixture_sha256=f.fixture_sha256,
                owner=DIAGNOSIS_OWNER[diagnosis],
                owners=context.get("owners") or {},
                permutation_index=p.get("permutation_index"),
                repetition=p.get("repetition"),
                repeat=r.repeat,
                judged_candidates_sha256=r.response_hash,
                rendered_request_sha256=r.rendered_request_sha256,
                completeness=checks.get(
                    (r.case_id, r.repeat), Completeness(checked=False, complete=None)
                ),
                reason=r.reason,
                reproduce=reproduce_command(context.get("battery"), r.case_id, r.repeat),
                allowed_values=p.get("allowed_values"),
                **_judge_fields(r),
                **shown,
            )
        )
    return out


def _diagnosis(
    f: RankingFixture,
    mine: list[_Attempt],
    bad: list[JudgeResult],
    checks: dict[tuple[str, int], Completeness],
) -> Diagnosis:
    """Why a fixture fails: the first diagnosis that holds, in :data:`Diagnosis` order."""
    if bad:
        return "integration_defect"
    if any(c.checked and not c.complete for (cid, _), c in checks.items() if cid == f.case_id):
        return "assembly_defect"
    if len({a.winner for a in mine if a.battery == "repeat"}) > 1:
        return "judge_variation"
    if len({tuple(a.order) for a in mine if a.battery == "position"}) > 1:
        return "position_sensitive"
    return "stable_disagreement"


def _changed_shown(
    f: RankingFixture, changed: list[JudgeResult], run_dir: Path | None
) -> tuple[JudgeResult, dict[str, Any]]:
    """A result for other candidate texts: its orders and the text diff (judged -> frozen)."""
    from ._capture import read_payload

    r, shown = _invalid_shown(changed)
    request = read_payload(run_dir, r.rendered_request) if run_dir else r.rendered_request
    if is_stub(request):  # no run directory to read the payload from
        request = None
    shown["error"] = (
        f"the judged candidates digest {r.response_hash[:12]} differs from the frozen fixture's"
        f" {f.source_candidates_sha256[:12]}: the candidates changed upstream"
    )
    return r, {**shown, "candidate_diff": candidate_diff(f, judged_fields(request, r.presentation))}


def _invalid_shown(bad: list[JudgeResult]) -> tuple[JudgeResult, dict[str, Any]]:
    r = min(bad, key=lambda x: x.repeat)
    p = r.presentation or {}
    return r, {
        "battery": p.get("battery"),
        "presented_order": p.get("presented_order"),
        "actual_order": [str(x) for x in r.order] if r.order is not None else None,
        "pairwise_agreement": None,
        "must_win_actual": None,
        "error": r.error.message if r.error else None,
    }


def _failing_shown(
    f: RankingFixture, failing: list[_Attempt]
) -> tuple[JudgeResult, dict[str, Any]]:
    """The worst failing attempt: a broken must-win check first, else the lowest agreement."""
    pick = next((a for a in failing if not a.held), None) or min(
        failing, key=lambda a: (a.agreed / a.pairs if a.pairs else 1.0, _sort_key(a))
    )
    if not f.critical_pair:
        actual = f.best_first(pick.order)[0]
    else:
        better, worse = f.critical_pair[0], f.critical_pair[1]
        actual = f"{better} > {worse}" if pick.held else f"{worse} > {better}"
    return pick.result, {
        "battery": pick.battery,
        "presented_order": pick.presented,
        "actual_order": pick.order,
        "pairwise_agreement": pick.agreed / pick.pairs if pick.pairs else 1.0,
        "must_win_actual": actual,
        "error": None,
        "metric_defects": pick.leakage,
    }


def _metric_defects(
    attempts: list[_Attempt], leakage: dict[str, LeakageRules] | None
) -> tuple[list[MetricDefect], Rate]:
    out: list[MetricDefect] = []
    with_reason = 0
    for a in attempts:
        if not a.result.reason:
            continue
        with_reason += 1
        a.leakage = scan_reason(
            a.result.reason, a.fixture, rules_for(a.fixture.criterion_version, leakage)
        )
        if a.leakage:
            out.append(
                MetricDefect(
                    case_id=a.fixture.case_id,
                    repeat=a.result.repeat,
                    slice=a.fixture.slice,
                    criterion_version=a.fixture.criterion_version,
                    held=a.held,
                    hits=a.leakage,
                    reason=a.result.reason,
                )
            )
    return out, wilson_rate(len(out), with_reason)


def _slices(fixture_set: FixtureSet, read: _Read) -> list[SliceFigure]:
    by_slice: dict[str, list[RankingFixture]] = defaultdict(list)
    for f in fixture_set.fixtures:
        by_slice[f.slice or "(none)"].append(f)
    by_case = read.by_case()
    return [_slice_figure(name, fixtures, by_case) for name, fixtures in sorted(by_slice.items())]


def _slice_figure(
    name: str, fixtures: list[RankingFixture], by_case: dict[str, list[_Attempt]]
) -> SliceFigure:
    tried = [f for f in fixtures if by_case.get(f.case_id)]
    mine = [a for f in tried for a in by_case[f.case_id]]

    def reversed_cases(gate: str) -> Rate:
        cases = [any(not a.held for a in by_case[f.case_id]) for f in tried if f.gate == gate]
        return wilson_rate(sum(cases), len(cases))

    must = [a for a in mine if a.fixture.gate == "must-win"]
    position = [a for a in mine if a.battery == "position" and a.presented]
    winners = [
        {a.winner for a in by_case.get(f.case_id, []) if a.battery == "position"} for f in fixtures
    ]
    shown = [sum(a.battery == "position" for a in by_case.get(f.case_id, [])) for f in fixtures]
    stable = [len(w) == 1 for w, n in zip(winners, shown, strict=True) if n >= 2]
    return SliceFigure(
        slice=name,
        cases=len(fixtures),
        must_win_cases=sum(f.gate == "must-win" for f in fixtures),
        agreement=wilson_rate(sum(a.agreed for a in mine), sum(a.pairs for a in mine)),
        reversed_cases=reversed_cases("must-win"),
        reversal_attempts=wilson_rate(sum(not a.held for a in must), len(must)),
        drift_cases=reversed_cases("monitor-only"),
        position_stable=wilson_rate(sum(stable), len(stable)),
        first_shown_wins=wilson_rate(
            sum(a.presented[0] == a.winner for a in position if a.presented), len(position)
        ),
    )


_ORDINAL_SUFFIX = {0: "st", 1: "nd", 2: "rd"}
"""English ordinal suffix of a 0-based position (``th`` for any other)."""


def _round4(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


# -- output -----------------------------------------------------------------------------------


def first_place_chart(report: RankingReport) -> Any:
    """Altair chart: first places by presented position, with the position-blind share."""
    import altair as alt
    import pandas as pd

    rows = [
        {
            "position": f"{p.position + 1}{_ORDINAL_SUFFIX.get(p.position, 'th')} shown",
            "rate": p.wins.rate,
            "low": p.wins.ci95_low,
            "high": p.wins.ci95_high,
            "chance": p.chance,
            "label": f"{p.wins.k}/{p.wins.n}",
        }
        for p in report.position_bias.by_position
        if p.wins.n
    ]
    data = pd.DataFrame(rows, columns=["position", "rate", "low", "high", "chance", "label"])
    base = alt.Chart().encode(
        x=alt.X("position:N", title="presented position", sort=None, axis=alt.Axis(labelAngle=0))
    )
    bars = base.mark_bar(color="#4c78a8").encode(
        y=alt.Y(
            "rate:Q",
            title="share of first places (95% Wilson interval)",
            scale=alt.Scale(domain=[0, 1]),
        ),
        tooltip=[alt.Tooltip(field) for field in ("position", "label", "rate", "chance")],
    )
    interval = base.mark_rule(color="#333333").encode(y=alt.Y("low:Q"), y2=alt.Y2("high:Q"))
    chance = base.mark_tick(color="#e45756", thickness=3, size=40).encode(y=alt.Y("chance:Q"))
    labels = base.mark_text(dy=-8, fontSize=10).encode(y=alt.Y("high:Q"), text=alt.Text("label:N"))
    title = (
        f"{report.judge or 'judge'}: first places by presented position (red tick: position-blind"
        " share)"
    )
    return alt.layer(bars, interval, chance, labels, data=data).properties(
        width=360, height=220, title=title
    )


def write_ranking_artifacts(report: RankingReport, out_dir: str | Path) -> list[Path]:
    """Write ``ranking_report.json`` and one ``failures/<case>.json`` per failing case."""
    out = Path(out_dir)
    paths = [out / "ranking_report.json"]
    atomic_write_json(paths[0], report.model_dump(mode="json"))
    for artifact in report.failures:
        path = out / "failures" / f"{artifact.case}.json"
        atomic_write_json(path, artifact.model_dump(mode="json"))
        paths.append(path)
    return paths


def format_ranking(report: RankingReport) -> str:
    """The report as plain text: the gate's outcome, defects, then the quality figures."""
    return "\n".join(
        [
            *_head_lines(report),
            *_defect_lines(report),
            *_agreement_lines(report),
            *_must_win_lines(report),
            *_stability_lines(report),
            *_side_by_side_lines(report.gate),
            *_failure_lines(report),
        ]
    )


def _r(rate: Rate) -> str:
    return rate.format(3)


def _head_lines(report: RankingReport) -> list[str]:
    gate = report.gate
    head = f"{gate.outcome.upper()}" if gate else ("PASSED" if report.passed else "NOT PASSED")
    lines = [
        f"ranking: {report.judge or '(no results)'} on {report.fixtures} - {head} ({report.status})"
    ]
    if gate is not None:
        lines.append(f"  gate: policy {gate.policy} ({gate.mode}); {gate.note}")
        if gate.mode == "report_only":
            lines.append("  REPORT ONLY: nothing below blocks this change")
    lines.append(
        f"  {report.cases} cases; {report.counts_line()}; {report.superseded_attempts} superseded"
        f" retries not analysed; fixtures {'frozen' if report.fixtures_frozen else 'NOT frozen'}"
    )
    if gate is None:
        return lines
    lines.append(f"  {gate.summary}")
    lines += [f"  blocker [{b.category}] {b.code}: {b.message}" for b in gate.blockers]
    lines += [
        f"  waived {w.blocker.code} {w.blocker.case_ids or ''} by {w.override_id}"
        for w in gate.waived
    ]
    lines += [
        f"  override {u.override_id} did not apply: {u.reason}: {'; '.join(u.details)}"
        for u in gate.unapplied_overrides
        if u.policy == gate.policy  # the store's overrides of other policies are not news here
    ]
    lines.append(
        "fixture changes since the last run"
        f" ({gate.previous_run or 'no earlier run in the history'}): {len(gate.fixture_changes)}"
    )
    for c in gate.fixture_changes:
        rec = (
            f"; recorded: approved by {c.recorded.approver}: {c.recorded.reason}"
            if c.recorded
            else ""
        )
        lines.append(
            f"  {c.case_id}: {c.change} {c.old_version} ->"
            f" {c.new_version}{' IN PLACE' if c.in_place else ''}; expected {c.old_order} ->"
            f" {c.new_order}{rec}"
        )
    return lines


def _defect_lines(report: RankingReport) -> list[str]:
    lines = [
        f"integration defects: {len(report.integration_defects)} (invalid rankings"
        f" {_r(report.invalid_rankings)})"
    ]
    for d in report.integration_defects:
        detail = (
            f" missing={d.missing} unknown={d.unknown} duplicates={d.duplicates}"
            if d.code == "invalid_ranking"
            else ""
        )
        lines.append(f"  {d.case_id}#{d.repeat}: {d.code}{detail}: {d.message}")
    if report.evaluator_errors:
        lines.append(f"evaluator errors: {len(report.evaluator_errors)}")
        lines += [
            f"  {e.case_id}#{e.repeat}: {e.kind}: {e.message}" for e in report.evaluator_errors
        ]
    if report.missing_cases or report.missing_attempts:
        lines.append(
            f"missing: cases {report.missing_cases}; attempts"
            f" {report.missing_attempts[:20]}{' ...' if len(report.missing_attempts) > 20 else ''}"
        )
    lines.append(
        "context sensitivity (A beats B alone, loses when C is added):"
        f" {len(report.context_sensitivity)}"
    )
    lines += [f"  {c.smaller} / {c.larger}: {c.message}" for c in report.context_sensitivity]
    lines.append(f"metric defects (criterion leakage): {_r(report.metric_defect_rate)}")
    lines += [
        f"  {m.case_id}#{m.repeat}"
        f" [{', '.join(h.category + ': ' + repr(h.matched) for h in m.hits)}] order"
        f" {'held' if m.held else 'reversed'}: {m.reason}"
        for m in report.metric_defects[:20]
    ]
    return lines


def _agreement_lines(report: RankingReport) -> list[str]:
    lines = [
        f"pairwise agreement: pairs {_r(report.agreement.pairs)}; exact orders"
        f" {_r(report.agreement.exact)}"
    ]
    drop = report.gate.agreement_drop if report.gate is not None else None
    if drop is not None:
        lines.append(
            f"  vs the last passing run ({drop.baseline_judge},"
            f" {drop.baseline_recorded_at.date().isoformat()}) on {len(drop.cases)} unchanged"
            f" fixture(s): {_r(drop.baseline)} -> {_r(drop.current)}; drop {drop.drop}, limit"
            f" {drop.threshold}{' BLOCKS' if drop.blocked else ''}"
        )
    return lines


def _must_win_lines(report: RankingReport) -> list[str]:
    figure = report.must_win
    confirm = {c.case_id: c for c in report.gate.confirmation} if report.gate else {}

    def line(c: CaseMustWin) -> str:
        row = confirm.get(c.case_id) if c.gate == "must-win" else None
        state = (
            f" -> {row.status.upper()} ({row.repeat_reversals}/{row.repeat_attempts}"
            " repeat-baseline reversals)"
            if row
            else ""
        )
        return (
            f"  {c.case_id}: expected {c.expected}, held {c.held.k}/{c.held.n}, winners"
            f" {c.actual_winners}, by baseline {c.reversed_by_battery}{state}"
        )

    return [
        f"must-win: {_r(figure.must_win)}; monitor-only: {_r(figure.monitor_only)}",
        f"must-win reversals: {len(figure.reversals)}",
        *map(line, figure.reversals),
        f"monitor-only (editorial) drift: {len(figure.drift)}",
        *map(line, figure.drift),
    ]


def _stability_lines(report: RankingReport) -> list[str]:
    pb = report.position_bias
    lines = [
        f"position bias (position battery, {pb.attempts} attempts): first place by presented"
        " position"
    ]
    lines += [
        f"  position {p.position}: {_r(p.wins)} (position-blind {p.chance:.3f})"
        for p in pb.by_position
        if p.chance is not None
    ]
    for fig in (report.repeatability, report.position_sensitivity):
        lines.append(
            f"{fig.label}: winner stable in cases {_r(fig.stable_cases)}; attempts with the modal"
            f" winner {_r(fig.agreeing_attempts)}"
        )
        lines += [f"  {c.case_id}: winners {c.winners}" for c in fig.cases if not c.stable]
    lines.append("slices:")
    lines += [
        f"  {s.slice}: agreement {_r(s.agreement)}; reversed must-win cases"
        f" {s.reversed_cases.k}/{s.reversed_cases.n}; reversal attempts"
        f" {s.reversal_attempts.k}/{s.reversal_attempts.n}; editorial drift"
        f" {s.drift_cases.k}/{s.drift_cases.n}; position-stable cases"
        f" {s.position_stable.k}/{s.position_stable.n}; first-shown wins"
        f" {s.first_shown_wins.k}/{s.first_shown_wins.n}"
        for s in report.slices
    ]
    lines.append(
        f"assembly: incomplete requests {_r(report.assembly.incomplete_requests)}; duplicated"
        f" candidates {_r(report.assembly.duplicated_candidates)}; leaked ids"
        f" {_r(report.assembly.leaked_ids)}"
        + (f"; cases {report.assembly.cases}" if report.assembly.cases else "")
    )
    return lines


def _side_by_side_lines(gate: RankingGateResult | None) -> list[str]:
    if gate is None or gate.side_by_side is None:
        return []
    sb = gate.side_by_side
    return [
        f"scalar vs ranking on {sb.compared} case(s): both pass {sb.both_pass}, neither"
        f" {sb.both_not_pass}",
        *(
            f"  scalar passes, ranking {row.ranking_status}: {row.case_id} (score"
            f" {row.scalar_score}; {', '.join(row.ranking_codes)})"
            for row in sb.scalar_pass_ranking_fail
        ),
        *(
            f"  scalar fails, ranking passes: {row.case_id} (score {row.scalar_score})"
            for row in sb.scalar_fail_ranking_pass
        ),
    ]


def _failure_lines(report: RankingReport) -> list[str]:
    lines = [f"failure artifacts: {len(report.failures)}"]
    for a in report.failures:
        owner = f"{a.owner} {a.owners.get(a.owner)}" if a.owners.get(a.owner) else a.owner
        c = a.completeness
        gaps = ("missing_context", "missing_candidates", "duplicated_candidates")
        extra = "".join(f" {n}={getattr(c, n)}" for n in gaps if getattr(c, n))
        lines.append(
            f"  {a.case} [{a.gate}, {a.diagnosis}, owner {owner}]"
            f" failing {a.failing_attempts.k}/{a.failing_attempts.n}: presented"
            f" {a.presented_order}, expected {a.expected_order}, actual {a.actual_order}, agreement"
            f" {_round4(a.pairwise_agreement)}, must-win {a.must_win_expected} vs"
            f" {a.must_win_actual}; request complete={c.complete}{extra}; allowed_values"
            f" {a.allowed_values}; ragas {a.ragas_version}"
        )
        if a.reproduce:
            lines.append(f"    reproduce: {a.reproduce}")
        for d in a.candidate_diff:
            lines.append(
                f"    {d.field}: {d.change}" + ("" if d.diff else " (judged text not kept)")
            )
            lines += [f"      {line}" for line in d.diff.splitlines()]
    return lines
