"""Ranking judges: reviewed ranking fixtures, a position-bias battery and its analysis.

- :func:`load_fixtures`: reviewed comparisons (frozen candidates, expected order in a
  declared direction, accepted ties or a critical pair, rationale, gate), every problem at once.
- Judge kinds ``ragas-ranking`` (a Ragas ``RankingMetric`` through ``llm_factory``) and
  ``ragas-ranking-function`` (a deterministic ``@ranking_metric``); the judge sees neutral
  labels (A, B, C ...), never stable candidate ids.
- :func:`position_battery` / :func:`run_ranking`: every fixture under several presented
  orders plus a repeat baseline, through the run engine (resumable, cached, budgeted).
- :func:`ranking_report`: integration defects first, then pairwise agreement, must-win
  reversals vs monitor-only drift, position bias, repeatability vs position sensitivity and a
  failure artifact per failing case with a completeness check of the rendered request.
"""

from .._lazy import lazy_attributes
from ._fixtures import (
    FIXTURES_SCHEMA_VERSION,
    NEUTRAL_LABELS,
    Candidate,
    FixtureSet,
    Passage,
    PermutationCheck,
    RankingFixture,
    check_permutation,
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
            "MustWinFigure",
            "PositionBias",
            "PositionRow",
            "RankingReport",
            "StabilityFigure",
            "completeness",
            "first_place_chart",
            "format_ranking",
            "ranking_report",
            "write_ranking_artifacts",
        ],
        "._analysis",
    ),
    **dict.fromkeys(["PARTITION", "position_battery", "presentation_orders", "run_ranking", "run_ranking_sync"], "._battery"),
}


__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY)


__all__ = [
    "DENOMINATORS",
    "FIXTURES_SCHEMA_VERSION",
    "NEUTRAL_LABELS",
    "PARTITION",
    "RANKING_PLACEHOLDERS",
    "RANKING_SCHEMA_VERSION",
    "AgreementFigure",
    "AssemblyFigure",
    "Candidate",
    "CaseAgreement",
    "CaseMustWin",
    "CaseStability",
    "Completeness",
    "EvaluatorErrorRow",
    "FailureArtifact",
    "FixtureSet",
    "FunctionRankingJudge",
    "IntegrationDefect",
    "LLMRankingJudge",
    "MustWinFigure",
    "Passage",
    "PermutationCheck",
    "PositionBias",
    "PositionRow",
    "PresentedCandidate",
    "RankingFixture",
    "RankingInput",
    "RankingReport",
    "StabilityFigure",
    "check_permutation",
    "completeness",
    "first_place_chart",
    "format_candidates",
    "format_context",
    "format_ranking",
    "load_fixtures",
    "pairwise_agreement",
    "position_battery",
    "presentation_orders",
    "ranking_report",
    "run_ranking",
    "run_ranking_sync",
    "write_ranking_artifacts",
]
