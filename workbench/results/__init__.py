"""The judge-result contract shared by every judge kind, and its reader."""

from ._contract import (
    ERROR_KINDS,
    RESULT_SCHEMA_VERSION,
    EvaluatorError,
    JudgeIdentity,
    JudgeResult,
)
from ._io import ResultLine, read_results, scan_results

__all__ = [
    "ERROR_KINDS",
    "RESULT_SCHEMA_VERSION",
    "EvaluatorError",
    "JudgeIdentity",
    "JudgeResult",
    "ResultLine",
    "read_results",
    "scan_results",
]
