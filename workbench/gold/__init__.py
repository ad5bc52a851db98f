"""Gold datasets: records, rubric, validation, corrections and dataset cards."""

from ..approval import RELEASES_FILE
from ._card import (
    CARD_FIELDS,
    DISAGREEMENT_BASIS,
    card_document,
    card_statistics,
    counts_frame,
    format_card,
)
from ._dataset import (
    CARD_FILE,
    GOLD_FILE,
    RUBRIC_FILE,
    GoldDataset,
    load_dataset,
    normalize_text,
    resolve_paths,
    validate_dataset,
)
from ._index import GoldIndex, gold_index, index_table, record_json
from ._records import PARTITIONS, Adjudication, GoldCase, Partition, Review, Span, partition_name
from ._release import FIELD_GROUPS, GoldLineage, case_hashes, freeze, gold_lineage, gold_snapshot
from ._rubric import (
    CONTRACT_FIELDS,
    EVIDENCE_FIELDS,
    REVIEWER_ONLY_EVIDENCE,
    UNSET_RISK,
    Ambiguity,
    ErrorCost,
    Risk,
    Rubric,
    Scale,
    SliceSpec,
    load_rubric,
)

__all__ = ["FIELD_GROUPS", "RELEASES_FILE", "GoldLineage", "case_hashes", "freeze", "gold_lineage"]
__all__ += ["gold_snapshot", "normalize_text", "partition_name", "CARD_FIELDS", "resolve_paths"]
__all__ += ["DISAGREEMENT_BASIS", "GoldIndex", "UNSET_RISK", "gold_index", "CARD_FILE", "GOLD_FILE"]
__all__ += ["PARTITIONS", "RUBRIC_FILE", "Adjudication", "GoldCase", "GoldDataset", "Partition"]
__all__ += [
    "Review",
    "Span",
    "Risk",
    "Rubric",
    "Scale",
    "SliceSpec",
    "card_document",
    "card_statistics",
]
__all__ += ["counts_frame", "format_card", "load_dataset", "load_rubric", "validate_dataset"]
__all__ += [
    "CONTRACT_FIELDS",
    "EVIDENCE_FIELDS",
    "REVIEWER_ONLY_EVIDENCE",
    "Ambiguity",
    "ErrorCost",
]
__all__ += ["index_table", "record_json"]
