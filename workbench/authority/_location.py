"""Where the authority record and the shadow log live: the pinned project's ``workbench.yaml``
``authority_record`` key, else ``authority.jsonl`` beside the gold (as the held-out ledger)."""

from __future__ import annotations

from pathlib import Path

from ..errors import WorkbenchError, refusal
from ..heldout import PROJECT_CONFIG, declared_path_for

AUTHORITY_FILE = "authority.jsonl"
"""The authority record's default file name, beside the gold dataset."""
AUTHORITY_KEY = "authority_record"
"""The ``workbench.yaml`` key that declares one record for the whole project."""
SHADOW_LOG_FILE = "shadow_log.jsonl"
"""The shadow log's file name, beside the authority record."""


def authority_path_for(gold: str | Path) -> Path:
    """The one authority record of ``gold`` (see the module doc)."""

    def conflict(default: Path, declared: Path) -> WorkbenchError:
        return refusal(
            "two authority records",
            str(default),
            "authority_record_conflict",
            f"the project declares the authority record {declared} but this dataset already has a"
            " record with entries beside it",
            f"keep one record: move {default} (and its .head file) to {declared} while that one"
            f" does not exist yet, or remove {AUTHORITY_KEY} from {PROJECT_CONFIG}",
        )

    return declared_path_for(gold, AUTHORITY_KEY, AUTHORITY_FILE, conflict)


def shadow_log_path_for(gold: str | Path) -> Path:
    """The shadow log of ``gold``: ``shadow_log.jsonl`` beside its authority record."""
    return authority_path_for(gold).with_name(SHADOW_LOG_FILE)
