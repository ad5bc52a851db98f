"""The judge-result contract shared by every judge kind, and its reader."""

from ._contract import (
    ERROR_KINDS,
    REQUIRED_SINCE_V2,
    RESULT_SCHEMA_VERSION,
    EvaluatorError,
    JudgeIdentity,
    JudgeResult,
    ResultMigration,
)
from ._io import ResultLine, migration_note, read_results, scan_results
from ._migrate import (
    MIGRATIONS,
    MigrationRefused,
    MigrationReport,
    migrate_record,
    migrate_results_file,
    migrate_v1_to_v2,
)

__all__ = [
    "ERROR_KINDS",
    "MIGRATIONS",
    "MigrationRefused",
    "MigrationReport",
    "REQUIRED_SINCE_V2",
    "ResultMigration",
    "migrate_record",
    "migrate_results_file",
    "migrate_v1_to_v2",
    "migration_note",
    "RESULT_SCHEMA_VERSION",
    "EvaluatorError",
    "JudgeIdentity",
    "JudgeResult",
    "ResultLine",
    "read_results",
    "scan_results",
]
