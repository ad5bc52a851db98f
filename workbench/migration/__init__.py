"""Migrating a judge between versions: ``workbench compare``, label mapping, prompt parity.

``await compare_candidates(old, new, gold, partition, out, ...)`` (or ``workbench compare``)
runs both versions on the same frozen development or calibration cases, controls first, under
one budget, and reports case-level transitions by slice, the pass/fail/abstain matrix, the
exact McNemar test and per-slice false-pass and false-fail deltas with paired intervals.
"""

from ._certify import (
    BASELINE_CONTROLS_DIR,
    BASELINE_RUN_DIR,
    MIGRATION_FILE,
    REVIEWS_SNAPSHOT,
    TRANSITIONS_FILE,
    MigrationEvidence,
    TransitionRow,
    evaluate_migration,
    map_old_lines,
    pending_transitions,
)
from ._compare import (
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
    mapped_controls,
)
from ._mapping import (
    LabelMapping,
    LoadedMapping,
    load_label_mapping,
    mapping_problems,
    mapping_snapshot,
)
from ._parity import (
    KeyCount,
    RequestParity,
    declaration_problems,
    identity_changes,
    judge_changes,
    request_parity,
)
from ._stats import paired_rate_difference

__all__ = [
    "BASELINE_CONTROLS_DIR",
    "BASELINE_RUN_DIR",
    "MIGRATION_FILE",
    "REVIEWS_SNAPSHOT",
    "TRANSITIONS_FILE",
    "MigrationEvidence",
    "TransitionRow",
    "evaluate_migration",
    "map_old_lines",
    "mapped_controls",
    "pending_transitions",
    "mapping_snapshot",
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
    "SliceComparison",
    "compare_candidates",
    "compare_candidates_sync",
    "declaration_problems",
    "default_out",
    "format_comparison",
    "identity_changes",
    "judge_changes",
    "load_label_mapping",
    "mapping_problems",
    "paired_rate_difference",
    "request_parity",
]
