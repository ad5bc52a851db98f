"""Migrating a judge between versions: ``workbench compare``, label mapping, prompt parity.

``await compare_candidates(old, new, gold, partition, out, ...)`` (or ``workbench compare``)
runs both versions on the same frozen development or calibration cases, controls first, under
one budget, and reports case-level transitions by slice, the pass/fail/abstain matrix, the
exact McNemar test and per-slice false-pass and false-fail deltas with paired intervals.
"""

from ._budget import RunEstimate, estimate_run
from ._compare import (
    CATEGORIES,
    COMPARE_SCHEMA_VERSION,
    MANIFEST,
    REPORT_FILE,
    TRANSITIONS,
    BudgetInsufficient,
    CandidateSide,
    CaseTransition,
    ComparisonReport,
    ControlComparison,
    ControlsSideBySide,
    McNemar,
    RateDelta,
    SliceComparison,
    compare_candidates,
    compare_candidates_sync,
    default_out,
    format_comparison,
)
from ._mapping import (
    MAPPING_SCHEMA_VERSION,
    LabelMapping,
    LoadedMapping,
    load_label_mapping,
    mapping_problems,
    mapping_required,
    mapping_snapshot,
    mapping_snapshot_of,
)
from ._parity import (
    KeyCount,
    RequestParity,
    declaration_problems,
    identity_changes,
    judge_changes,
    parity_warnings,
    request_parity,
    text_diff,
)
from ._stats import exact_mcnemar, paired_rate_difference

__all__ = [
    "mapping_snapshot",
    "mapping_snapshot_of",
    "CATEGORIES",
    "COMPARE_SCHEMA_VERSION",
    "MANIFEST",
    "MAPPING_SCHEMA_VERSION",
    "REPORT_FILE",
    "TRANSITIONS",
    "BudgetInsufficient",
    "CandidateSide",
    "CaseTransition",
    "ComparisonReport",
    "ControlComparison",
    "ControlsSideBySide",
    "KeyCount",
    "LabelMapping",
    "LoadedMapping",
    "McNemar",
    "RateDelta",
    "RequestParity",
    "RunEstimate",
    "SliceComparison",
    "compare_candidates",
    "compare_candidates_sync",
    "declaration_problems",
    "default_out",
    "estimate_run",
    "exact_mcnemar",
    "format_comparison",
    "identity_changes",
    "judge_changes",
    "load_label_mapping",
    "mapping_problems",
    "mapping_required",
    "paired_rate_difference",
    "parity_warnings",
    "request_parity",
    "text_diff",
]
