"""Noise sensitivity: paired clean/noisy cases scored with Ragas ``NoiseSensitivity`` (lower is
better).

- :mod:`._pairs` and :mod:`._evidence`: the pair-suite format (:class:`NoiseSuite`,
  :class:`NoisePair`, structured contexts, generation traces, retrieval assertions, sign-offs,
  the noise policy and evidence manifest) and :func:`load_pairs`, which reports every problem at
  once.
- :mod:`._judge`: the ``ragas-noise`` judge kind (declared in
:data:`workbench.judges.BUILTIN_KINDS`).
- :mod:`._retrieval`: deterministic retrieval assertions, run before any model call.
- :mod:`._analysis`: :func:`run_noise` (retrieval, then controls, then candidates and repeats)
  and :func:`noise_report` with its blockers; :mod:`._present`: text and charts.
- :mod:`._compare`: baseline versus candidate; :mod:`._companions`: companion metrics;
  :mod:`._panel`: the claim-level review panel; :mod:`._release`: frozen suite releases;
  :func:`noise_override_scope`: what an override of noise blockers is checked against
  (:func:`workbench.policy.add_override` records it).
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
    NoisePolicy,
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
    Member,
    Mode,
    NoiseInput,
    NoisePair,
    NoiseSuite,
    NoisyMember,
    PartitionName,
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
    "CLAIMS_PREFIX",
    "ClaimAdjudication",
    "ClaimJudgment",
    "ClaimPanel",
    "ClaimReview",
    "CleanMember",
    "CompanionMetric",
    "CompanionValue",
    "ControlRow",
    "DIRECTION",
    "Distractor",
    "EvidenceManifest",
    "GenerationTrace",
    "KIND",
    "MODES",
    "NOISE_REPORT_FILE",
    "NoiseComparison",
    "NoiseInput",
    "Member",
    "Mode",
    "NoiseJudge",
    "PartitionName",
    "NoisePair",
    "NoisePolicy",
    "NoiseReport",
    "NoiseRun",
    "NoiseSuite",
    "NoisyMember",
    "PARTITIONS",
    "PairDelta",
    "PairRow",
    "PanelMemberRow",
    "PanelReport",
    "ROLES",
    "RepeatRow",
    "RetiredRow",
    "Retirement",
    "RetrievalAssertions",
    "RetrievalRow",
    "RetrievedContext",
    "SignOff",
    "SliceDelta",
    "SliceLimit",
    "SliceRow",
    "Trend",
    "calls_per_score",
    "check_baseline_suite",
    "check_baseline_report",
    "check_noise_lock",
    "lock_noise_run",
    "check_pairs",
    "check_retrieval",
    "check_run_request",
    "comparison_chart",
    "explain",
    "format_noise",
    "format_panel",
    "join_companions",
    "load_baseline_report",
    "load_companions",
    "load_noise_run",
    "load_pairs",
    "load_panel",
    "noise_chart",
    "noise_override_scope",
    "noise_report",
    "panel_agreement",
    "parse_pairs",
    "panel_release_of",
    "panel_snapshot",
    "release_of",
    "suite_snapshot",
    "suite_snapshot_of",
    "retrieval_blockers",
    "run_noise",
    "run_noise_sync",
    "scoring_fingerprint",
    "selected_candidates",
    "validate_pairs",
    "with_baseline",
]
