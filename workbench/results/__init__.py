"""The judge-result contract shared by every judge kind, its reader, the run manifest that binds
results to what was planned, and the cost and token figures read from them."""

from ._columnar import ColumnarResults, read_columnar, result_files, results_sha256
from ._contract import (
    ERROR_KINDS,
    EVIDENCE_STATUSES,
    IDENTITY_FIELDS,
    RAW_RESPONSE_SOURCES,
    REQUIRED_SINCE_V2,
    RESULT_SCHEMA_VERSION,
    EvaluatorError,
    EvidenceSeen,
    JudgeIdentity,
    JudgeResult,
    ResultMigration,
    has_reason,
    missing_identity_fields,
    states_reasons,
)
from ._costs import (
    ALL_SLICES,
    Distribution,
    SliceCost,
    costs_from_usage,
    distribution,
    format_slice_costs,
    slice_cost_rows,
    slice_costs,
)
from ._gold_checks import GoldCheckFixes, check_against_gold
from ._io import MigrationTally, ResultLine, migration_note, read_results, scan_results
from ._lines import ResultLines
from ._manifest import MANIFEST_FILE, ManifestCase, ManifestSampling, ManifestUnit, RunManifest
from ._migrate import migrate_record, migrate_results_file, migrate_v1_to_v2

__all__ = ["ColumnarResults", "GoldCheckFixes", "ResultLines", "check_against_gold"]
__all__ += ["read_columnar", "result_files", "results_sha256", "ALL_SLICES", "MANIFEST_FILE"]
__all__ += ["Distribution", "ManifestCase", "ManifestSampling", "ManifestUnit", "RunManifest"]
__all__ += ["SliceCost", "costs_from_usage", "distribution", "format_slice_costs"]
__all__ += ["slice_cost_rows", "slice_costs", "ERROR_KINDS", "IDENTITY_FIELDS", "has_reason"]
__all__ += ["missing_identity_fields", "states_reasons", "REQUIRED_SINCE_V2", "ResultMigration"]
__all__ += ["migrate_record", "migrate_results_file", "migrate_v1_to_v2", "migration_note"]
__all__ += ["RESULT_SCHEMA_VERSION", "EvaluatorError", "JudgeIdentity", "JudgeResult", "ResultLine"]
__all__ += ["read_results", "scan_results", "EVIDENCE_STATUSES", "RAW_RESPONSE_SOURCES"]
__all__ += ["EvidenceSeen", "MigrationTally"]
