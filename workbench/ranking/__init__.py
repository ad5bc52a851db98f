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
- :func:`freeze_fixtures` / :func:`label_history`: frozen fixture releases and label history.
- :func:`load_ranking_policy`: release rules (confirmation, agreement drop, report-only,
  leakage, capture, owners); :func:`choose_agreement_threshold` from reviewed examples.
- :func:`prune_run` / :func:`lock_ranking_run` / :func:`verify_ranking_run`: privacy mode.
"""

from .._lazy import lazy_attributes
from ._capture import (
    CaptureConfig,
    CapturingJudge,
    PruneResult,
    RankingLock,
    find_runs,
    lock_ranking_run,
    prune_run,
    read_payload,
    verify_ranking_run,
)
from ._fixtures import (
    FIXTURES_SCHEMA_VERSION,
    NEUTRAL_LABELS,
    Candidate,
    FixtureChange,
    FixtureSet,
    OrderAdjudication,
    Passage,
    PermutationCheck,
    RankingFixture,
    ReviewerOrder,
    check_permutation,
    fixture_sha256,
    load_fixtures,
    pairwise_agreement,
)
from ._judges import (
    RANKING_PLACEHOLDERS,
    FunctionRankingJudge,
    LLMRankingJudge,
    PresentedCandidate,
    RankingInput,
    format_candidates,
    format_context,
)

# The analysis and the battery load on first use: workbench.judges imports this package to
# register the kinds, and every command pays for what is imported here.
_LAZY: dict[str, str] = {
    **dict.fromkeys(["ReviewerAgreementReport", "FixtureCalibration", "CalibrationFigure", "reviewer_agreement", "format_reviewer_agreement"], "._calibration"),
    **dict.fromkeys(["FixtureRelease", "VersionHistory", "freeze_fixtures", "label_history", "read_release", "release_path"], "._releases"),
    **dict.fromkeys(
        ["RankingPolicy", "Confirmation", "Owners", "AgreementDropExample", "AgreementDropExamples", "ThresholdChoice", "choose_agreement_threshold", "threshold_errors", "threshold_chart", "default_policy", "is_ranking_policy_file", "load_agreement_examples", "load_ranking_policy"],
        "._policy",
    ),
    **dict.fromkeys(
        ["RankingGateResult", "RankingBlocker", "RankingHistoryEntry", "ScalarCaseResult", "SideBySide", "check_ranking_override", "history_entry", "ranking_gate", "read_history", "read_scalar", "record_run", "side_by_side"],
        "._gate",
    ),
    **dict.fromkeys(["LeakageRules", "LeakageHit", "scan_reason"], "._leakage"),
    **dict.fromkeys(
        [
            "DENOMINATORS",
            "RANKING_SCHEMA_VERSION",
            "AgreementFigure",
            "AssemblyFigure",
            "CaseAgreement",
            "CaseMustWin",
            "CaseStability",
            "Completeness",
            "EvaluatorErrorRow",
            "FailureArtifact",
            "IntegrationDefect",
            "MetricDefect",
            "MustWinFigure",
            "SliceFigure",
            "PositionBias",
            "PositionRow",
            "RankingReport",
            "StabilityFigure",
            "completeness",
            "first_place_chart",
            "format_ranking",
            "ranking_report",
            "reproduce_command",
            "write_ranking_artifacts",
        ],
        "._analysis",
    ),
    **dict.fromkeys(["PARTITION", "position_battery", "presentation_orders", "read_battery", "rotation_shift", "run_ranking", "run_ranking_sync"], "._battery"),
}


__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY)


__all__ = [
    "AgreementDropExample",
    "AgreementDropExamples",
    "AgreementFigure",
    "AssemblyFigure",
    "CalibrationFigure",
    "Candidate",
    "CaptureConfig",
    "CapturingJudge",
    "CaseAgreement",
    "CaseMustWin",
    "CaseStability",
    "Completeness",
    "Confirmation",
    "DENOMINATORS",
    "EvaluatorErrorRow",
    "FIXTURES_SCHEMA_VERSION",
    "FailureArtifact",
    "FixtureCalibration",
    "FixtureChange",
    "FixtureRelease",
    "FixtureSet",
    "FunctionRankingJudge",
    "IntegrationDefect",
    "LLMRankingJudge",
    "LeakageHit",
    "LeakageRules",
    "MetricDefect",
    "MustWinFigure",
    "NEUTRAL_LABELS",
    "OrderAdjudication",
    "Owners",
    "PARTITION",
    "Passage",
    "PermutationCheck",
    "PositionBias",
    "PositionRow",
    "PresentedCandidate",
    "PruneResult",
    "RANKING_PLACEHOLDERS",
    "RANKING_SCHEMA_VERSION",
    "RankingBlocker",
    "RankingFixture",
    "RankingGateResult",
    "RankingHistoryEntry",
    "RankingInput",
    "RankingLock",
    "RankingPolicy",
    "RankingReport",
    "ReviewerAgreementReport",
    "ReviewerOrder",
    "ScalarCaseResult",
    "SideBySide",
    "SliceFigure",
    "StabilityFigure",
    "ThresholdChoice",
    "VersionHistory",
    "check_permutation",
    "check_ranking_override",
    "choose_agreement_threshold",
    "completeness",
    "default_policy",
    "find_runs",
    "first_place_chart",
    "fixture_sha256",
    "format_candidates",
    "format_context",
    "format_ranking",
    "format_reviewer_agreement",
    "freeze_fixtures",
    "history_entry",
    "is_ranking_policy_file",
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
    "ranking_report",
    "read_battery",
    "read_history",
    "read_payload",
    "read_release",
    "read_scalar",
    "record_run",
    "release_path",
    "reproduce_command",
    "reviewer_agreement",
    "rotation_shift",
    "run_ranking",
    "run_ranking_sync",
    "scan_reason",
    "side_by_side",
    "threshold_chart",
    "threshold_errors",
    "verify_ranking_run",
    "write_ranking_artifacts",
]
