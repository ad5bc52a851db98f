"""Gold datasets: records, rubric, validation, corrections and dataset cards."""

from ._card import CARD_FIELDS, DatasetCard, card_statistics, counts_frame, read_card
from ._dataset import (
    CARD_FILE,
    GOLD_FILE,
    RUBRIC_FILE,
    GoldDataset,
    ValidationReport,
    load_dataset,
    resolve_corrections,
    resolve_paths,
    validate_dataset,
)
from ._records import GOLD_SCHEMA_VERSION, PARTITIONS, Adjudication, GoldCase, Partition, Review
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
