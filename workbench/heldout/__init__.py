"""Held-out hygiene: the append-only ledger, held-out access and the held-out manifest hash."""

from ._ledger import (
    LEDGER_FILE,
    HeldOutAccess,
    HeldOutLedger,
    LedgerEntry,
    current_user,
    held_out_manifest_sha256,
    refuse_held_out,
)

__all__ = [
    "LEDGER_FILE",
    "HeldOutAccess",
    "HeldOutLedger",
    "LedgerEntry",
    "current_user",
    "held_out_manifest_sha256",
    "refuse_held_out",
]
