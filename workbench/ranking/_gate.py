"""The ranking gate: release rules over a ranking report, the run history and a ranking policy.

:func:`ranking_gate` turns a report into :class:`~workbench.policy.Blocker` records and hands
them to the one decision step every gate uses (:func:`workbench.policy.decide`); in
``report_only`` mode the outcome is shown and the exit code is 0.

Blocker codes (in the one table :data:`workbench.policy.BLOCKER_CODES`, feature ``ranking``):

================================  ==========  ============================================
code                              category    when
================================  ==========  ============================================
ranking_incomplete                incomplete  an unanswered fixture or planned attempt, or an
                                              evaluator error
ranking_repeats_short             incomplete  a reversed must-win fixture lacks repeats
ranking_integration_defect        quality     a malformed or unmappable result
ranking_reversal_confirmed        quality     a must-win reversal confirmed (``confirmation``)
ranking_agreement_drop            quality     agreement fell over ``max_agreement_drop``
ranking_reversal_unconfirmed      review      a must-win reversal not confirmed
ranking_editorial_drift           review      a monitor-only fixture's winner moved
ranking_metric_defect             review      criterion leakage in a judge reason
ranking_assembly_defect           review      an incomplete rendered request
ranking_context_sensitive         review      a pair's order flips between related fixtures
ranking_fixture_changed_in_place  review      a fixture changed under the same version
ranking_fixtures_unfrozen         review      the policy requires a frozen release
ranking_must_win_unreviewed       review      must-win fixtures without two reviewers
ranking_no_baseline               review      no passing baseline run in the history
ranking_policy_mismatch           review      the policy is for another fixture set
================================  ==========  ============================================

Waivable (by an override naming the ranking policy, with ``--case``/``--slice`` for a fixture's
blocker): ``ranking_reversal_confirmed``, ``ranking_agreement_drop``,
``ranking_reversal_unconfirmed``, ``ranking_editorial_drift``, ``ranking_metric_defect``,
``ranking_assembly_defect``, ``ranking_context_sensitive``; the rest never.

``ranking_context_sensitive`` ("A beats B alone, loses to B when C is added", between two
fixtures sharing the user input and context, one's candidates a subset of the other's) is a review
item, not a quality failure: it is evidence about the evaluator's sensitivity to the other
candidates shown, while each fixture's own must-win check already blocks a confirmed reversal.

The history log (:class:`RankingHistoryEntry`, JSON Lines) gives the last run (fixture
changes, earlier reversals) and the last passing run (the agreement-drop baseline).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast

from pydantic import AwareDatetime, Field, ValidationError

from .._io import iter_jsonl_lines, loads_json
from .._load import Problems
from .._record import Record as _Frozen
from .._record import read_log
from ..errors import refusal
from ..outcomes import ExitCode
from ..policy import (
    Blocker,
    CheckOutcome,
    Decision,
    OverrideScope,
    UnappliedOverride,
    WaivedBlocker,
    blocker,
    decide,
)
from ..stats import Rate, wilson_rate
from ._fixtures import FixtureChange, FixtureSet, RankingFixture
from ._policy import Owners, RankingPolicy, default_policy, ranking_policy_sha256

if TYPE_CHECKING:
    from ._analysis import CaseMustWin, RankingReport
    from ._drift import ReleaseChange, ScalarRetirement

RANKING_GATE_SCHEMA_VERSION = 2
"""2: the shared blocker and override records."""
HISTORY_SCHEMA_VERSION = 1
Outcome = CheckOutcome
"""``passed``, ``quality_failed``, ``evaluation_incomplete`` or ``review_required``."""


class ConfirmationRow(_Frozen):
    """How the confirmation rule read one reversed must-win fixture."""

    case_id: str
    """The fixture."""
    slice: str | None
    """Its slice."""
    reversed_attempts: int
    """Failed must-win checks, every baseline."""
    repeat_attempts: int
    """Valid attempts in the repeat baseline (identical presentations)."""
    repeat_reversals: int
    """Failed checks among them."""
    previous_run_reversed: bool | None
    """Whether the previous run reversed the same unchanged fixture (None: not comparable)."""
    status: Literal["confirmed", "unconfirmed", "repeats_short"]
    """``confirmed`` (blocks), ``unconfirmed`` (review) or ``repeats_short`` (incomplete)."""
    rule: str
    """The rule applied, in words."""


class AgreementDrop(_Frozen):
    """Pooled pairwise agreement against the last passing run, on the fixtures unchanged since."""

    baseline_recorded_at: datetime
    """When the baseline run was recorded."""
    baseline_judge: str | None
    """The baseline run's judge."""
    cases: list[str]
    """The stable set: fixtures in both runs with the same per-fixture hash."""
    excluded: list[str]
    """Fixtures left out: changed or added since the baseline."""
    baseline: Rate
    """The baseline's agreed pairs over compared pairs on the stable set."""
    current: Rate
    """This run's, on the same set."""
    drop: float | None
    """baseline rate - current rate (positive: agreement fell)."""
    threshold: float | None
    """The policy's ``max_agreement_drop`` (None: not checked)."""
    blocked: bool
    """The drop exceeds the threshold."""


class FixtureChangeRow(_Frozen):
    """A fixture that changed since the last run."""

    case_id: str
    """The fixture."""
    change: Literal["added", "removed", "changed"]
    """What happened to it."""
    in_place: bool
    """Changed under the same file version (blocks: ``ranking_fixture_changed_in_place``)."""
    old_version: str
    """The fixture-file version of the last run."""
    new_version: str
    """This run's fixture-file version."""
    old_order: list[str] | None
    """The expected order in the last run."""
    new_order: list[str] | None
    """The expected order now."""
    recorded: FixtureChange | None
    """The change entry of this version, when it records one (approver, reason)."""


class CaseStatus(_Frozen):
    """The ranking gate's view of one fixture."""

    case_id: str
    """The fixture."""
    slice: str | None
    """Its slice."""
    gate: str
    """``must-win`` or ``monitor-only``."""
    status: Literal["pass", "fail", "review", "incomplete"]
    """The worst category of the unwaived blockers naming it (``pass``: none)."""
    codes: list[str]
    """Codes of the unwaived blockers naming it."""


class ScalarCaseResult(_Frozen):
    """One case's scalar gate outcome (a line of a ``--scalar`` JSON Lines file)."""

    case_id: str = Field(min_length=1)
    """The ranking fixture the scalar gate judged."""
    passed: bool
    """Whether the scalar gate passed the case."""
    score: float | None = None
    """The scalar score, when there is one."""
    threshold: float | None = None
    """The scalar gate's threshold."""
    detail: str | None = None
    """How the scalar outcome was reached."""


class SideBySideRow(_Frozen):
    """One case where the scalar and the ranking gate disagree."""

    case_id: str
    """The fixture."""
    slice: str | None
    """Its slice."""
    scalar_passed: bool
    """The scalar gate's outcome."""
    scalar_score: float | None
    """The scalar score."""
    ranking_status: str
    """The ranking gate's case status."""
    ranking_codes: list[str]
    """Why the ranking gate did not pass it."""


class SideBySide(_Frozen):
    """Scalar and ranking gates on the same cases."""

    compared: int
    """Cases with both a scalar and a ranking outcome."""
    scalar_pass_ranking_fail: list[SideBySideRow]
    """The scalar gate passes, the ranking gate does not (fail, review or incomplete)."""
    scalar_fail_ranking_pass: list[SideBySideRow]
    """The scalar gate fails, the ranking gate passes."""
    both_pass: int
    """Cases both pass."""
    both_not_pass: int
    """Cases neither passes."""
    scalar_only: list[str]
    """Scalar cases that are not fixtures."""
    ranking_only: list[str]
    """Fixtures without a scalar outcome."""


class RankingGateResult(_Frozen):
    """The ranking gate's decision."""

    schema_version: int = RANKING_GATE_SCHEMA_VERSION
    """Format version (2: the shared blocker and override records)."""
    kind: Literal["workbench.ranking.gate"] = "workbench.ranking.gate"
    """Record type."""
    policy: str
    """``name@version`` of the ranking policy, or ``default-ranking-rules@builtin``."""
    policy_sha256: str | None
    """sha256 of the policy file."""
    mode: Literal["enforce", "report_only"]
    """The policy's mode."""
    outcome: Outcome
    """``passed``, ``quality_failed``, ``evaluation_incomplete`` or ``review_required``."""
    exit_code: int
    """The process exit code: the outcome's, or 0 in report-only mode."""
    enforced_exit_code: int
    """The exit code the outcome has when enforced."""
    note: str
    """"report only: ..." in report-only mode, else the outcome in words."""
    summary: str
    """One line: outcome, kept blockers per category, waived ones, the policy."""
    blockers: list[Blocker]
    """Unwaived blockers, sorted: category (incomplete, quality, review), slice, code, message."""
    waived: list[WaivedBlocker]
    """Blockers an active override waived."""
    unapplied_overrides: list[UnappliedOverride] = Field(default_factory=list)
    """Every override given that waived nothing, and why."""
    expired_overrides: list[str] = Field(default_factory=list)
    """Ids of the overrides for this policy and candidate that had expired (ignored)."""
    confirmation: list[ConfirmationRow]
    """How each reversed must-win fixture was read."""
    agreement_drop: AgreementDrop | None
    """The drop against the last passing run (None: no passing baseline)."""
    previous_run: str | None
    """``recorded_at judge`` of the last run in the history (None: no history)."""
    fixture_changes: list[FixtureChangeRow]
    """Fixtures changed since the last run."""
    cases: list[CaseStatus]
    """Per fixture, in file order."""
    side_by_side: SideBySide | None
    """Scalar vs ranking, when scalar outcomes were given."""
    owners: dict[str, str | None]
    """The four owners from the policy."""


class HistoryCase(_Frozen):
    """One fixture in a history entry."""

    agreed: int
    """Agreed pairs."""
    pairs: int
    """Compared pairs."""
    reversed: bool
    """A failed must-win check in any attempt."""
    sha256: str
    """The fixture's hash."""
    expected_order: list[str]
    """Its expected order."""
    candidates_sha256: str | None = None
    """Its ``source_candidates_sha256`` (user input, context, candidates): what the generator
    produced; a change is generation drift (None: an entry written before it was kept)."""


class RankingHistoryEntry(_Frozen):
    """One line of the ranking history log: a gated run, for later comparisons."""

    schema_version: int = HISTORY_SCHEMA_VERSION
    """Entry format version."""
    kind: Literal["workbench.ranking.history"] = "workbench.ranking.history"
    """Record type."""
    recorded_at: AwareDatetime
    """When the run was recorded (UTC)."""
    fixtures: str
    """``name@version`` of the fixture set."""
    fixtures_name: str
    """The fixture set name (history is compared within one name)."""
    fixtures_version: str
    """Its version."""
    fixtures_sha256: str
    """sha256 of the fixture file."""
    judge: str | None
    """``name@version`` of the judge."""
    judge_fingerprint: str | None
    """Its fingerprint."""
    policy: str
    """The ranking policy applied."""
    outcome: Outcome
    """The gate's outcome (computed also in report-only mode)."""
    enforced: bool
    """Whether the outcome was enforced."""
    results_path: str | None
    """The results analysed."""
    cases: dict[str, HistoryCase]
    """Per fixture."""
    job: Literal["generation", "evaluator"] | None = None
    """The drift job the run was (``--job``): generation drift holds the judge, evaluator drift
    holds the candidates (None: not declared)."""
    change: Literal["first", "none", "generation", "evaluator"] | None = None
    """What changed since the last passing run: ``generation`` (candidate texts), ``evaluator``
    (the judge), ``none``, or ``first`` (no passing run before it)."""
    scalar_compared: int | None = None
    """Cases the scalar gate was compared on beside the ranking gate (None: no ``--scalar``)."""
    scalar_pass_ranking_fail: list[str] = []
    """Cases the scalar gate passed and the ranking gate did not, in that comparison."""


def read_history(path: str | Path | None) -> list[RankingHistoryEntry]:
    """Every run entry of a history log, in order (none when the file does not exist)."""
    return [e for e in read_history_lines(path) if isinstance(e, RankingHistoryEntry)]


def read_history_lines(path: str | Path | None) -> list[RankingHistoryEntry | ScalarRetirement]:
    """Every line of a history log: gated runs and the scalar gate's retirement, in order."""
    from ._drift import HistoryLine

    if path is None:
        return []
    lines = read_log(
        path,
        HistoryLine,
        code="history_invalid",
        what="a ranking history entry",
        name="ranking history",
        fix="restore the line; the history is append-only",
    )
    return [line.root for line in lines]


History: TypeAlias = "str | Path | None | Sequence[RankingHistoryEntry | ScalarRetirement]"
"""A ranking history: the log's path (None: none) or its lines."""


def history_lines(history: History) -> list[RankingHistoryEntry | ScalarRetirement]:
    """The lines of a history given as a path (read) or as lines (kept)."""
    if history is None or isinstance(history, str | Path):
        return read_history_lines(history)
    return list(history)


def history_entry(
    report: RankingReport,
    fixture_set: FixtureSet,
    now: datetime | None = None,
    change: ReleaseChange | None = None,
) -> RankingHistoryEntry:
    """The history entry of a gated report (``ValueError`` for a report without a gate)."""
    gate = report.gate
    if gate is None:
        raise ValueError("a history entry needs a gated report (ranking_report gates every report)")
    must = {c.case_id: c for c in report.must_win.cases}
    sides = gate.side_by_side
    return RankingHistoryEntry(
        recorded_at=(now or datetime.now(UTC)).replace(microsecond=0),
        fixtures=fixture_set.label,
        fixtures_name=fixture_set.name,
        fixtures_version=fixture_set.version,
        fixtures_sha256=fixture_set.dataset_sha256,
        judge=report.judge,
        judge_fingerprint=report.judge_fingerprint,
        policy=gate.policy,
        outcome=gate.outcome,
        enforced=gate.mode == "enforce",
        results_path=report.results_path,
        cases={
            c.case_id: HistoryCase(
                agreed=c.pairs.k,
                pairs=c.pairs.n,
                reversed=bool(must[c.case_id].reversed),
                sha256=f.fixture_sha256,
                expected_order=list(f.expected_order),
                candidates_sha256=f.source_candidates_sha256,
            )
            for c, f in zip(report.agreement.cases, fixture_set.fixtures, strict=True)
        },
        job=change.job if change else None,
        change=change.change if change else None,
        scalar_compared=sides.compared if sides else None,
        scalar_pass_ranking_fail=[r.case_id for r in sides.scalar_pass_ranking_fail]
        if sides
        else [],
    )


def read_scalar(path: str | Path) -> list[ScalarCaseResult]:
    """Per-case scalar gate outcomes from a JSON Lines file; every bad line reported at once."""
    path = Path(path)
    if not path.is_file():
        raise refusal(
            "no scalar results",
            str(path),
            "scalar_missing",
            "the scalar results file does not exist",
            "give a JSON Lines file of {case_id, passed, score, threshold, detail}",
        )
    problems = Problems()
    fix = "each line is {case_id, passed: true|false, score, threshold, detail}, in UTF-8"
    not_utf8: list[int] = []
    out: dict[str, ScalarCaseResult] = {}
    for number, line in iter_jsonl_lines(path, not_utf8):
        where = f"{path}:{number}"
        try:
            row = ScalarCaseResult.model_validate(loads_json(line))
        except (ValueError, ValidationError) as exc:
            message = f"not a scalar case result ({str(exc).splitlines()[0][:160]})"
            problems.add(where, "scalar_invalid", message, fix)
            continue
        if row.case_id in out:
            message, again = "a second scalar outcome for the case", "one line per case"
            problems.add(where, "scalar_duplicate", message, again, case_id=row.case_id)
        out.setdefault(row.case_id, row)
    for n in not_utf8:
        message = "not a scalar case result (the line is not valid UTF-8)"
        problems.add(f"{path}:{n}", "scalar_invalid", message, fix)
    problems.raise_if_any(f"{path}: {len(problems)} problem(s) in the scalar results")
    return list(out.values())


def side_by_side(cases: Sequence[CaseStatus], scalar: Iterable[ScalarCaseResult]) -> SideBySide:
    """Where the scalar gate and the ranking gate disagree on the same cases."""
    rows = {s.case_id: s for s in scalar}
    both = [(c, rows[c.case_id]) for c in cases if c.case_id in rows]

    def disagree(scalar_passed: bool) -> list[SideBySideRow]:
        return [
            SideBySideRow(
                case_id=c.case_id,
                slice=c.slice,
                scalar_passed=s.passed,
                scalar_score=s.score,
                ranking_status=c.status,
                ranking_codes=c.codes,
            )
            for c, s in both
            if s.passed == scalar_passed and (c.status == "pass") != scalar_passed
        ]

    return SideBySide(
        compared=len(both),
        scalar_pass_ranking_fail=disagree(True),
        scalar_fail_ranking_pass=disagree(False),
        both_pass=sum(s.passed and c.status == "pass" for c, s in both),
        both_not_pass=sum(not s.passed and c.status != "pass" for c, s in both),
        scalar_only=sorted(set(rows) - {c.case_id for c in cases}),
        ranking_only=[c.case_id for c in cases if c.case_id not in rows],
    )


def _fixture_changes(
    fixture_set: FixtureSet, previous: RankingHistoryEntry | None
) -> list[FixtureChangeRow]:
    if previous is None:
        return []
    now, before = fixture_set.by_id(), previous.cases
    changed = [
        (case_id, "added" if case_id not in before else "changed")
        for case_id, f in now.items()
        if case_id not in before or before[case_id].sha256 != f.fixture_sha256
    ] + [(case_id, "removed") for case_id in before if case_id not in now]
    return [
        FixtureChangeRow(
            case_id=case_id,
            change=change,
            in_place=previous.fixtures_version == fixture_set.version,
            old_version=previous.fixtures_version,
            new_version=fixture_set.version,
            old_order=before[case_id].expected_order if case_id in before else None,
            new_order=list(now[case_id].expected_order) if case_id in now else None,
            recorded=fixture_set.change_for(case_id),
        )
        for case_id, change in changed
    ]


def _agreement_drop(
    report: RankingReport,
    fixture_set: FixtureSet,
    baseline: RankingHistoryEntry | None,
    policy: RankingPolicy,
) -> AgreementDrop | None:
    if baseline is None:
        return None
    hashes = fixture_set.fixture_hashes
    current = {c.case_id: c.pairs for c in report.agreement.cases}
    stable = [
        cid for cid in hashes if cid in baseline.cases and baseline.cases[cid].sha256 == hashes[cid]
    ]
    base = wilson_rate(
        sum(baseline.cases[c].agreed for c in stable), sum(baseline.cases[c].pairs for c in stable)
    )
    cur = wilson_rate(sum(current[c].k for c in stable), sum(current[c].n for c in stable))
    drop = (
        round(base.rate - cur.rate, 6) if base.rate is not None and cur.rate is not None else None
    )
    threshold = policy.max_agreement_drop
    return AgreementDrop(
        baseline_recorded_at=baseline.recorded_at,
        baseline_judge=baseline.judge,
        cases=stable,
        excluded=[c for c in hashes if c not in stable],
        baseline=base,
        current=cur,
        drop=drop,
        threshold=threshold,
        blocked=threshold is not None and drop is not None and drop > threshold,
    )


def ranking_gate(
    report: RankingReport,
    fixture_set: FixtureSet,
    *,
    policy: RankingPolicy | None = None,
    history: History = (),
    overrides: Iterable[Any] = (),
    scalar: Iterable[ScalarCaseResult] | None = None,
    now: datetime | None = None,
) -> RankingGateResult:
    """Apply the release rules (module docstring) through :func:`workbench.policy.decide`.

    ``history``: the history log (a path, read here) or its lines; scalar rows for a fixture set
    whose scalar gate is retired in it are refused (exit 2)."""
    from ._drift import refuse_retired_scalar

    policy = policy or default_policy()
    lines = history_lines(history)
    if scalar is not None:
        refuse_retired_scalar(lines, fixture_set.name)
    mine = [
        h
        for h in lines
        if isinstance(h, RankingHistoryEntry) and h.fixtures_name == fixture_set.name
    ]
    previous = mine[-1] if mine else None
    baseline = next((h for h in reversed(mine) if h.outcome == "passed"), None)
    changes = _fixture_changes(fixture_set, previous)
    confirmation, reversal_blockers = _confirmations(report, fixture_set, policy, previous)
    drop = _agreement_drop(report, fixture_set, baseline, policy)
    decision = decide(
        [
            *_integrity_blockers(fixture_set, policy, baseline),
            *_change_blockers(fixture_set, changes),
            *_evidence_blockers(report, fixture_set),
            *reversal_blockers,
            *_drop_blockers(drop, policy),
            *_defect_blockers(report, fixture_set, policy),
            *_context_blockers(report, fixture_set),
        ],
        list(overrides),
        policy_label=policy.label,
        fingerprint=report.judge_fingerprint,
        now=now,
        clear="passed",
    )
    cases = _case_statuses(fixture_set, report, decision.blockers)
    return RankingGateResult(
        policy=policy.label,
        policy_sha256=ranking_policy_sha256(policy),
        mode=policy.mode,
        outcome=cast(Outcome, decision.outcome),
        exit_code=int(ExitCode.OK) if policy.mode == "report_only" else decision.exit_code,
        enforced_exit_code=decision.exit_code,
        note=_note(policy, decision),
        summary=decision.summary(policy.label),
        blockers=decision.blockers,
        waived=decision.waived,
        unapplied_overrides=decision.unapplied,
        expired_overrides=decision.expired,
        confirmation=confirmation,
        agreement_drop=drop,
        previous_run=f"{previous.recorded_at.isoformat()} {previous.judge}" if previous else None,
        fixture_changes=changes,
        cases=cases,
        side_by_side=side_by_side(cases, scalar) if scalar is not None else None,
        owners=_owners(policy),
    )


def _note(policy: RankingPolicy, decision: Decision) -> str:
    if policy.mode != "report_only":
        return f"enforced: {decision.outcome}"
    return (
        f"report only: outcome {decision.outcome} (exit {decision.exit_code} when enforced); this"
        " run exits 0 and blocks nothing"
    )


def _owners(policy: RankingPolicy) -> dict[str, str | None]:
    return policy.owners.model_dump() if policy.owners else dict.fromkeys(Owners.model_fields)


def _integrity_blockers(
    fixture_set: FixtureSet, policy: RankingPolicy, baseline: RankingHistoryEntry | None
) -> list[Blocker]:
    fixtures = fixture_set.fixtures
    unreviewed = [f.case_id for f in fixtures if f.gate == "must-win" and len(f.reviews) < 2]
    checks: list[tuple[bool, str, str, list[str]]] = [
        (
            policy.fixtures is not None and policy.fixtures != fixture_set.name,
            "ranking_policy_mismatch",
            f"policy {policy.label} is for fixture set {policy.fixtures!r}, not"
            f" {fixture_set.name!r}",
            [],
        ),
        (
            policy.require_frozen_fixtures and not fixture_set.frozen,
            "ranking_fixtures_unfrozen",
            f"{fixture_set.label} is not a frozen release",
            [f.case_id for f in fixtures],
        ),
        (
            policy.must_win_requires_reviews and bool(unreviewed),
            "ranking_must_win_unreviewed",
            f"{len(unreviewed)} must-win fixture(s) without two independent reviewer orders:"
            f" {', '.join(unreviewed)}",
            unreviewed,
        ),
        (
            policy.require_baseline and baseline is None,
            "ranking_no_baseline",
            f"no passing run of {fixture_set.name} in the history to compare agreement against",
            [],
        ),
    ]
    return [blocker(code, message, case_ids=ids) for when, code, message, ids in checks if when]


def _case_blocker(fixture_set: FixtureSet, code: str, case_id: str, message: str) -> Blocker:
    """A blocker naming one fixture (and its slice)."""
    slice_of = {f.case_id: f.slice for f in fixture_set.fixtures}
    return blocker(code, message, case_ids=[case_id], slice=slice_of.get(case_id))


def _change_blockers(fixture_set: FixtureSet, changes: Sequence[FixtureChangeRow]) -> list[Blocker]:
    return [
        _case_blocker(
            fixture_set,
            "ranking_fixture_changed_in_place",
            row.case_id,
            f"{row.case_id} {row.change} in place under version {row.new_version} since the last"
            " run (expected_order "
            + (
                f"{row.old_order} -> {row.new_order}"
                if row.old_order != row.new_order
                else "unchanged, other fields changed"
            )
            + "); changes go in a new, recorded file version",
        )
        for row in changes
        if row.in_place
    ]


def _evidence_blockers(report: RankingReport, fixture_set: FixtureSet) -> list[Blocker]:
    out = (
        [
            blocker(
                "ranking_incomplete",
                report.incompleteness(),
                case_ids=report.missing_cases,
                evidence=report.attempt_counts(),
            )
        ]
        if report.status == "incomplete"
        else []
    )
    codes: dict[str, list[str]] = {}
    for d in report.integration_defects:
        codes.setdefault(d.case_id, []).append(d.code)
    return out + [
        _case_blocker(
            fixture_set,
            "ranking_integration_defect",
            case_id,
            f"{case_id}: {len(found)} integration defect(s) ({', '.join(sorted(set(found)))})",
        )
        for case_id, found in codes.items()
    ]


def _confirmations(
    report: RankingReport,
    fixture_set: FixtureSet,
    policy: RankingPolicy,
    previous: RankingHistoryEntry | None,
) -> tuple[list[ConfirmationRow], list[Blocker]]:
    rows: list[ConfirmationRow] = []
    out: list[Blocker] = []
    fixtures = fixture_set.by_id()
    for c in report.must_win.cases:
        if not c.reversed:
            continue
        if c.gate == "must-win":
            row, found = _confirm(c, fixtures[c.case_id], policy, previous)
            rows.append(row)
            out.append(found)
        elif policy.editorial_drift == "review":
            message = (
                f"{c.case_id} (editorial, monitor-only): winner moved in {c.reversed}/{c.held.n}"
                f" attempt(s) ({c.actual_winners}); a person decides"
            )
            out.append(_case_blocker(fixture_set, "ranking_editorial_drift", c.case_id, message))
    return rows, out


def _confirm(
    c: CaseMustWin,
    f: RankingFixture,
    policy: RankingPolicy,
    previous: RankingHistoryEntry | None,
) -> tuple[ConfirmationRow, Blocker]:
    rule = policy.confirmation
    repeat_n = c.attempts_by_battery.get("repeat", 0)
    repeat_k = c.reversed_by_battery.get("repeat", 0)
    prev = previous.cases.get(c.case_id) if previous is not None else None
    prev_reversed = prev.reversed if prev is not None and prev.sha256 == f.fixture_sha256 else None
    status: Literal["confirmed", "unconfirmed", "repeats_short"]
    if repeat_k >= rule.min_reversals or (rule.previous_run and prev_reversed):
        status, code = "confirmed", "ranking_reversal_confirmed"
        why = (
            f"{repeat_k} of {repeat_n} identical presentations reversed"
            if repeat_k >= rule.min_reversals
            else "the previous run reversed the same fixture"
        )
        message = (
            f"{c.case_id}: must-win reversal confirmed ({why}; expected {c.expected}, winners"
            f" {c.actual_winners})"
        )
    elif repeat_n < rule.repeats:
        status, code = "repeats_short", "ranking_repeats_short"
        message = (
            f"{c.case_id}: reversed in {c.reversed} attempt(s) but the repeat baseline has"
            f" {repeat_n} valid attempt(s); the rule needs {rule.repeats} to confirm or clear it"
        )
    else:
        status, code = "unconfirmed", "ranking_reversal_unconfirmed"
        message = (
            f"{c.case_id}: must-win reversal not confirmed ({repeat_k} of {repeat_n} identical"
            f" presentations reversed; {c.reversed} reversal(s) overall, by baseline"
            f" {c.reversed_by_battery}): review"
        )
    row = ConfirmationRow(
        case_id=c.case_id,
        slice=f.slice,
        reversed_attempts=c.reversed,
        repeat_attempts=repeat_n,
        repeat_reversals=repeat_k,
        previous_run_reversed=prev_reversed,
        status=status,
        rule=f"confirmed by {rule.min_reversals} or more reversals among {rule.repeats} identical"
        " presentations (repeat baseline)"
        + (
            "; or by a reversal of the same unchanged fixture in the previous run"
            if rule.previous_run
            else ""
        ),
    )
    return row, blocker(code, message, case_ids=[c.case_id], slice=f.slice)


def _drop_blockers(drop: AgreementDrop | None, policy: RankingPolicy) -> list[Blocker]:
    if drop is None or not drop.blocked:
        return []
    message = (
        f"pairwise agreement on {len(drop.cases)} unchanged fixture(s) fell from"
        f" {drop.baseline.format(3)} to {drop.current.format(3)}: a drop of {drop.drop:.3f}"
        f" > {drop.threshold} (policy {policy.label})"
    )
    return [blocker("ranking_agreement_drop", message)]


def _defect_blockers(
    report: RankingReport, fixture_set: FixtureSet, policy: RankingPolicy
) -> list[Blocker]:
    cited: dict[str, set[str]] = {}
    for m in report.metric_defects:
        cited.setdefault(m.case_id, set()).update(h.category for h in m.hits)
    attempts = Counter(m.case_id for m in report.metric_defects)
    leakage = " (criterion leakage: a metric defect, even where the order passes)"
    assembly = (
        ": the rendered request lacked a candidate or a cited passage, or showed a candidate twice"
    )
    return [
        _case_blocker(
            fixture_set,
            "ranking_metric_defect",
            case_id,
            f"{case_id}: {n} attempt(s) whose reason cites {', '.join(sorted(cited[case_id]))}"
            + leakage,
        )
        for case_id, n in attempts.items()
    ] + [
        _case_blocker(fixture_set, "ranking_assembly_defect", case_id, case_id + assembly)
        for case_id in (report.assembly.cases if policy.assembly_defects == "review" else [])
    ]


def _context_blockers(report: RankingReport, fixture_set: FixtureSet) -> list[Blocker]:
    """One review item per flipped pair, naming both fixtures (and their slice when shared)."""
    slice_of = {f.case_id: f.slice for f in fixture_set.fixtures}
    return [
        blocker(
            "ranking_context_sensitive",
            f"{c.smaller} / {c.larger}: {c.message}",
            case_ids=[c.smaller, c.larger],
            slice=slice_of[c.smaller] if slice_of[c.smaller] == slice_of[c.larger] else None,
        )
        for c in report.context_sensitivity
    ]


_CASE_STATUS: dict[str, Literal["incomplete", "fail", "review"]] = {
    "incomplete": "incomplete",
    "quality": "fail",
    "review": "review",
}


def _case_statuses(
    fixture_set: FixtureSet, report: RankingReport, kept: Sequence[Blocker]
) -> list[CaseStatus]:
    out: list[CaseStatus] = []
    for f in fixture_set.fixtures:
        mine = [b for b in kept if f.case_id in b.case_ids]
        categories = {b.category for b in mine} | (
            {"incomplete"} if f.case_id in report.missing_cases else set()
        )
        status = next((s for c, s in _CASE_STATUS.items() if c in categories), "pass")
        codes = sorted({b.code for b in mine})
        out.append(
            CaseStatus(case_id=f.case_id, slice=f.slice, gate=f.gate, status=status, codes=codes)
        )
    return out


def ranking_override_scope(policy_path: str | Path) -> OverrideScope:
    """What ``workbench override add --policy <ranking policy>`` checks an override against."""
    from ._policy import load_ranking_policy

    return OverrideScope(label=load_ranking_policy(policy_path).label, feature="ranking")
