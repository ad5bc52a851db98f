"""Alignment analysis: join judge results to gold, then confusion and per-slice error rates."""

from ._breakdown import (
    CROSS,
    Breakdown,
    BreakdownCell,
    available_fields,
    breakdown,
    cell_figures,
    format_breakdown,
    join_breakdown,
    join_cell_figures,
    parse_by,
    split_cell,
)
from ._cases import CASE_COLUMNS, alignment_report, empty_slice, join_cases
from ._evidence import Evidence, align, flagged_cases, read_evidence
from ._join import Join, JoinedCase, classify, join_results
from ._lineage import (
    GoldChange,
    Lineage,
    align_results,
    check_lineage,
    check_results_file,
    lineage_problems,
    read_run_manifest,
    require_comparable,
    resolve_partition,
)
from ._report import (
    ERROR_COLUMN,
    MISSING_COLUMN,
    AlignmentReport,
    OrdinalAlignment,
    SliceAlignment,
    format_report,
    has_pass_fail_view,
)

__all__ = ["CASE_COLUMNS", "Evidence", "flagged_cases", "join_cases", "read_evidence", "GoldChange"]
__all__ += ["Lineage", "align_results", "check_lineage", "check_results_file", "lineage_problems"]
__all__ += ["read_run_manifest", "require_comparable", "resolve_partition", "ERROR_COLUMN"]
__all__ += ["MISSING_COLUMN", "AlignmentReport", "Join", "JoinedCase", "OrdinalAlignment"]
__all__ += ["SliceAlignment", "align", "alignment_report", "classify", "empty_slice"]
__all__ += ["format_report", "has_pass_fail_view", "join_results"]
__all__ += ["CROSS", "Breakdown", "BreakdownCell", "available_fields", "breakdown"]
__all__ += [
    "cell_figures",
    "format_breakdown",
    "join_breakdown",
    "join_cell_figures",
    "parse_by",
    "split_cell",
]
