"""Noise sensitivity: paired clean/noisy cases scored with Ragas ``NoiseSensitivity`` (lower is
better): the pair-suite format and :func:`load_pairs`, the ``ragas-noise`` judge kind,
:func:`run_noise` and :func:`noise_report`, baselines, companions, the claim panel and releases.
"""

from __future__ import annotations

from ._analysis import (
    NOISE_REPORT_FILE,
    ControlRow,
    NoiseReport,
    NoiseRun,
    PairRow,
    RepeatRow,
    RetiredRow,
    SliceRow,
    check_run_request,
    load_noise_run,
    member_items,
    noise_override_scope,
    noise_report,
    run_noise,
    run_noise_sync,
    selected_candidates,
)
from ._companions import CompanionValue, join_companions, load_companions
from ._compare import (
    check_baseline_report,
    check_baseline_suite,
    load_baseline_report,
    scoring_fingerprint,
    with_baseline,
)
from ._evidence import (
    PARTITIONS,
    CompanionMetric,
    EvidenceManifest,
    GenerationTrace,
    Member,
    NoisePolicy,
    PartitionName,
    Retirement,
    RetrievalAssertions,
    RetrievedContext,
    SignOff,
)
from ._judge import CLAIMS_PREFIX, KIND, NoiseJudge, calls_per_score, explain
from ._pairs import (
    DIRECTION,
    MODES,
    ROLES,
    CleanMember,
    Distractor,
    Mode,
    NoiseInput,
    NoisePair,
    NoiseSuite,
    NoisyMember,
    SliceLimit,
    check_pairs,
    load_pairs,
    parse_pairs,
    validate_pairs,
)
from ._panel import (
    ClaimAdjudication,
    ClaimJudgment,
    ClaimPanel,
    ClaimReview,
    PanelMemberRow,
    PanelReport,
    format_panel,
    load_panel,
    panel_agreement,
)
from ._present import check_noise_lock, comparison_chart, format_noise, lock_noise_run, noise_chart
from ._release import (
    panel_release_of,
    panel_snapshot,
    release_of,
    suite_snapshot,
    suite_snapshot_of,
)
from ._retrieval import RetrievalRow, check_retrieval, retrieval_blockers
from ._trends import NoiseComparison, PairDelta, SliceDelta, Trend

__all__ = [
    "CLAIMS_PREFIX", "DIRECTION", "KIND", "MODES", "NOISE_REPORT_FILE", "PARTITIONS", "ROLES",
    "ClaimAdjudication", "ClaimJudgment", "ClaimPanel", "ClaimReview", "CleanMember",
    "CompanionMetric", "CompanionValue", "ControlRow", "Distractor", "EvidenceManifest",
    "GenerationTrace", "Member", "Mode", "NoiseComparison", "NoiseInput", "NoiseJudge",
    "NoisePair", "NoisePolicy", "NoiseReport", "NoiseRun", "NoiseSuite", "NoisyMember",
    "PairDelta", "PairRow", "PanelMemberRow", "PanelReport", "PartitionName", "RepeatRow",
    "RetiredRow", "Retirement", "RetrievalAssertions", "RetrievalRow", "RetrievedContext",
    "SignOff", "SliceDelta", "SliceLimit", "SliceRow", "Trend", "calls_per_score",
    "check_baseline_report", "check_baseline_suite", "check_noise_lock", "check_pairs",
    "check_retrieval", "check_run_request", "comparison_chart", "explain", "format_noise",
    "format_panel", "join_companions", "load_baseline_report", "load_companions", "load_noise_run",
    "load_pairs", "load_panel", "lock_noise_run", "member_items", "noise_chart",
    "noise_override_scope",
    "noise_report", "panel_agreement", "panel_release_of", "panel_snapshot", "parse_pairs",
    "release_of", "retrieval_blockers", "run_noise", "run_noise_sync", "scoring_fingerprint",
    "selected_candidates", "suite_snapshot", "suite_snapshot_of", "validate_pairs", "with_baseline"
]  # fmt: skip
