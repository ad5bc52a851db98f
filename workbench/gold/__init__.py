"""Gold datasets: records, rubric, validation, corrections and dataset cards."""

from ..approval import RELEASES_FILE
from ._card import CARD_FIELDS, DatasetCard, card_statistics, counts_frame, read_card
from ._dataset import (
    CARD_FILE,
    GOLD_FILE,
    RUBRIC_FILE,
    GoldDataset,
    ValidationReport,
    load_dataset,
    normalize_text,
    resolve_corrections,
    resolve_paths,
    validate_dataset,
)
from ._records import GOLD_SCHEMA_VERSION, PARTITIONS, Adjudication, GoldCase, Partition, Review
from ._release import (
    FIELD_GROUPS,
    GoldLineage,
    case_hashes,
    freeze,
    gold_lineage,
    gold_snapshot,
)
from ._rubric import (
    RUBRIC_SCHEMA_VERSION,
    Risk,
    Rubric,
    RubricProblems,
    Scale,
    SliceSpec,
    load_rubric,
)

__all__ = [
    "FIELD_GROUPS",
    "RELEASES_FILE",
    "GoldLineage",
    "case_hashes",
    "freeze",
    "gold_lineage",
    "gold_snapshot",
    "normalize_text",
    "CARD_FIELDS",
    "CARD_FILE",
    "GOLD_FILE",
    "GOLD_SCHEMA_VERSION",
    "PARTITIONS",
    "RUBRIC_FILE",
    "RUBRIC_SCHEMA_VERSION",
    "Adjudication",
    "DatasetCard",
    "GoldCase",
    "GoldDataset",
    "Partition",
    "Review",
    "Risk",
    "Rubric",
    "RubricProblems",
    "Scale",
    "SliceSpec",
    "ValidationReport",
    "card_statistics",
    "counts_frame",
    "load_dataset",
    "load_rubric",
    "read_card",
    "resolve_corrections",
    "resolve_paths",
    "validate_dataset",
]
