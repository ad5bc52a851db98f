"""Ranking judges: reviewed ranking fixtures, a position-bias battery and its analysis.

- :func:`load_fixtures`: reviewed comparisons (frozen candidates, expected order in a
  declared direction, accepted ties or a critical pair, rationale, gate), every problem at once.
- Judge kinds ``ragas-ranking`` (a Ragas ``RankingMetric`` through ``llm_factory``) and
  ``ragas-ranking-function`` (a deterministic ``@ranking_metric``); the judge sees neutral
  labels (A, B, C ...), never stable candidate ids.
- :func:`position_battery` / :func:`run_ranking`: every fixture under several presented
  orders plus a repeat baseline, through the run engine (resumable, cached, budgeted).
- :func:`ranking_report`: integration defects first, then pairwise agreement, must-win
  reversals vs monitor-only drift, position bias, repeatability vs position sensitivity,
  slices, criterion leakage (metric defects) and a failure artifact per failing case with a
  completeness check of the rendered request, its judge configuration, owners and the command
  that replays it; the ranking gate's decision is embedded (:func:`ranking_gate`).
- :func:`reviewer_agreement`: reviewer-reviewer agreement of the fixtures (human calibration).
- :func:`label_history`: the versions of a fixture file and their recorded changes (frozen
  with ``workbench freeze``, :mod:`workbench.approval`).
- :func:`load_ranking_policy`: release rules (confirmation, agreement drop, report-only,
  leakage, capture, owners); :func:`choose_agreement_threshold` from reviewed examples.
- :func:`prune_run` / :func:`lock_ranking_run` / :func:`verify_ranking_run`: privacy mode.
"""

from ._analysis import (
    DENOMINATORS,
    Completeness,
    FailureArtifact,
    MetricDefect,
    RankingReport,
    SliceFigure,
    completeness,
    first_place_chart,
    format_ranking,
    ranking_report,
    write_ranking_artifacts,
)
from ._battery import (
    PARTITION,
    Plan,
    position_battery,
    presentation_orders,
    read_battery,
    rotation_shift,
    run_ranking,
    run_ranking_sync,
)
from ._calibration import (
    CalibrationFigure,
    FixtureCalibration,
    ReviewerAgreementReport,
    format_reviewer_agreement,
    reviewer_agreement,
)
from ._capture import (
    CaptureConfig,
    CapturingJudge,
    RankingLock,
    check_ranking_lock,
    find_runs,
    lock_ranking_run,
    prune_run,
    ranking_html,
    read_payload,
    verify_ranking_run,
)
from ._fixtures import (
    Candidate,
    FixtureChange,
    FixtureSet,
    OrderAdjudication,
    Passage,
    RankingFixture,
    ReviewerOrder,
    check_permutation,
    fixture_sha256,
    load_fixtures,
    pairwise_agreement,
)
from ._gate import (
    RankingGateResult,
    RankingHistoryEntry,
    ScalarCaseResult,
    SideBySide,
    ranking_gate,
    ranking_override_scope,
    read_history,
    read_scalar,
    record_run,
    side_by_side,
)
from ._judges import FunctionRankingJudge, LLMRankingJudge
from ._leakage import LeakageRules, scan_reason
from ._policy import (
    AgreementDropExample,
    AgreementDropExamples,
    Confirmation,
    Owners,
    RankingPolicy,
    choose_agreement_threshold,
    default_policy,
    is_ranking_policy_file,
    load_agreement_examples,
    load_ranking_policy,
    threshold_chart,
)
from ._releases import VersionHistory, fixtures_snapshot, history_rows, label_history

__all__ = [
    "AgreementDropExample",
    "AgreementDropExamples",
    "CalibrationFigure",
    "Candidate",
    "CaptureConfig",
    "CapturingJudge",
    "Plan",
    "Completeness",
    "Confirmation",
    "DENOMINATORS",
    "FailureArtifact",
    "FixtureCalibration",
    "FixtureChange",
    "FixtureSet",
    "FunctionRankingJudge",
    "LLMRankingJudge",
    "LeakageRules",
    "MetricDefect",
    "OrderAdjudication",
    "Owners",
    "PARTITION",
    "Passage",
    "RankingFixture",
    "RankingGateResult",
    "RankingHistoryEntry",
    "RankingLock",
    "RankingPolicy",
    "RankingReport",
    "ReviewerAgreementReport",
    "ReviewerOrder",
    "ScalarCaseResult",
    "SideBySide",
    "SliceFigure",
    "VersionHistory",
    "check_permutation",
    "check_ranking_lock",
    "ranking_html",
    "choose_agreement_threshold",
    "completeness",
    "default_policy",
    "find_runs",
    "first_place_chart",
    "fixture_sha256",
    "format_ranking",
    "format_reviewer_agreement",
    "is_ranking_policy_file",
    "fixtures_snapshot",
    "history_rows",
    "label_history",
    "load_agreement_examples",
    "load_fixtures",
    "load_ranking_policy",
    "lock_ranking_run",
    "pairwise_agreement",
    "position_battery",
    "presentation_orders",
    "prune_run",
    "ranking_gate",
    "ranking_override_scope",
    "ranking_report",
    "read_battery",
    "read_history",
    "read_payload",
    "read_scalar",
    "record_run",
    "reviewer_agreement",
    "rotation_shift",
    "run_ranking",
    "run_ranking_sync",
    "scan_reason",
    "side_by_side",
    "threshold_chart",
    "verify_ranking_run",
    "write_ranking_artifacts",
]
