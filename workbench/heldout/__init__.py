"""Held-out hygiene: the hash-chained ledger, where it lives, held-out access and accounting."""

from ._accounting import check_held_out_results
from ._content import content_key, item_key, item_keys, normalize_text
from ._exposure import (
    EXPOSED,
    exposure_problems,
    held_out_content,
    held_out_item_keys,
    recorded_item_keys,
    refuse_held_out_content,
    used_held_out_of,
)
from ._indexed import exposed_in_index
from ._items import ContentUses, held_out_use_line, items_sha256
from ._leakage import PromptLeak, describe_leaks, prompt_leaks
from ._ledger import (
    HeldOutAccess,
    HeldOutLedger,
    LedgerEntry,
    PreviousReport,
    held_out_manifest_sha256,
    refuse_held_out,
)
from ._location import (
    LEDGER_FILE,
    PROJECT_CONFIG,
    declared_path_for,
    gold_directory,
    ledger_path_for,
)
from ._use import Use, check_recorded, open_use, read_marker, write_marker

__all__ = [
    "exposed_in_index",
    "PromptLeak",
    "describe_leaks",
    "prompt_leaks",
    "EXPOSED",
    "ContentUses",
    "LEDGER_FILE",
    "PROJECT_CONFIG",
    "HeldOutAccess",
    "HeldOutLedger",
    "Use",
    "LedgerEntry",
    "PreviousReport",
    "check_held_out_results",
    "check_recorded",
    "content_key",
    "declared_path_for",
    "exposure_problems",
    "gold_directory",
    "held_out_content",
    "held_out_item_keys",
    "held_out_use_line",
    "held_out_manifest_sha256",
    "item_key",
    "item_keys",
    "items_sha256",
    "ledger_path_for",
    "normalize_text",
    "open_use",
    "read_marker",
    "write_marker",
    "recorded_item_keys",
    "refuse_held_out",
    "refuse_held_out_content",
    "used_held_out_of",
]
