"""The held-out items of every recorded use, by content, beside the ledger.

A ``started`` entry records the sha256 and count of its held-out item keys, stored once per
distinct set in ``<ledger>.items/<sha256>.keys``; a missing or edited sidecar is a damaged
ledger (fail closed). :class:`ContentUses` is every earlier use whose items overlap.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .._io import atomic_write_bytes
from ..errors import WorkbenchError, refusal

if TYPE_CHECKING:
    from ._ledger import LedgerEntry

ITEMS_SUFFIX = ".items"
_KEY = re.compile(rb"[0-9a-f]{64}")
_FIX = (
    "the held-out items beside the ledger are append-only evidence: restore the directory from"
    " version control or a backup together with the ledger; never edit or delete its files"
)


def items_dir(ledger: Path) -> Path:
    """The sidecar directory of ``ledger``: ``<ledger file name>.items`` beside it."""
    return ledger.with_name(ledger.name + ITEMS_SUFFIX)


def encode_keys(keys: Iterable[str]) -> bytes:
    """The sidecar content of ``keys``: sorted, one per line, each line ending in a newline."""
    return "".join(f"{k}\n" for k in sorted(set(keys))).encode("ascii")


def items_sha256(keys: Iterable[str]) -> str:
    """The sha256 a ledger entry records for these item keys (of their sidecar content)."""
    import hashlib

    return hashlib.sha256(encode_keys(keys)).hexdigest()


def store_keys(ledger: Path, keys: Iterable[str]) -> tuple[str, int]:
    """Write the sidecar of ``keys`` (once: content-addressed) and return ``(sha256, count)``."""
    import hashlib

    data = encode_keys(keys)
    digest = hashlib.sha256(data).hexdigest()
    path = items_dir(ledger) / f"{digest}.keys"
    if not path.is_file() or read_keys(ledger, digest) is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, data)
        os.chmod(path, 0o444)
    return digest, data.count(b"\n")


def read_keys(ledger: Path, digest: str) -> frozenset[str] | None:
    """The item keys the sidecar ``digest`` holds, verified; None when it is missing."""
    import hashlib

    path = items_dir(ledger) / f"{digest}.keys"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _damaged(path, "ledger_items_invalid", f"cannot be read ({exc.strerror})") from None
    if hashlib.sha256(data).hexdigest() != digest:
        raise _damaged(path, "ledger_items_invalid", "its sha256 is not the one the ledger records")
    lines = data.split(b"\n")
    if lines.pop() != b"" or not all(_KEY.fullmatch(line) for line in lines):
        raise _damaged(path, "ledger_items_invalid", "it is not one item key (sha256) a line")
    return frozenset(line.decode("ascii") for line in lines)


def _damaged(path: Path, code: str, what: str) -> WorkbenchError:
    message = f"the held-out items a ledger entry records are damaged: {what}"
    return refusal(
        "the held-out ledger cannot show which held-out content was used",
        str(path),
        code,
        message,
        _FIX,
    )


@dataclass(frozen=True)
class ContentUses:
    """The earlier held-out uses whose content overlaps a certification's held-out items."""

    entries: list[LedgerEntry] = field(default_factory=list)
    """The earlier ``started`` entries that judged any of these items (or the same manifest)."""
    seen: int = 0
    """How many of these held-out items an earlier use judged."""
    total: int = 0
    """How many held-out items this certification judges."""

    @property
    def count(self) -> int:
        """How many times the held-out content was used before."""
        return len(self.entries)

    @property
    def overlap(self) -> float:
        """The share of this certification's held-out items judged before (0 to 1)."""
        return self.seen / self.total if self.total else 0.0

    def describe(self) -> str:
        """One line for the report and ``certify``'s output."""
        return _use_line(self.count, self.overlap)

    def listing(self) -> str:
        """The earlier uses: report, candidate, time and user."""
        return ", ".join(
            f"{e.report_id} ({e.candidate}, {e.when:%Y-%m-%d %H:%M} by {e.who})"
            for e in self.entries
        )


def content_uses(
    ledger: Path,
    keys: frozenset[str],
    manifest_sha256: str,
    entries: list[LedgerEntry],
    *,
    exclude: str | None = None,
) -> ContentUses:
    """Every earlier use of ``entries`` that judged any of ``keys``; open, aborted and crashed
    certifications count; entries without item keys count on the same manifest."""
    skip = {e.opens for e in entries if e.event == "finished" and e.held_out_used is False}
    skip.add(exclude)
    cache: dict[str, frozenset[str]] = {}
    earlier: list[LedgerEntry] = []
    seen: set[str] = set()
    for entry in entries:
        if entry.event != "started" or entry.entry_id in skip or not entry.uses_held_out:
            continue
        digest = entry.held_out_items_sha256
        if digest is None:
            shared = keys if entry.held_out_manifest_sha256 == manifest_sha256 else frozenset()
        else:
            if digest not in cache:
                found = read_keys(ledger, digest)
                if found is None:
                    where = items_dir(ledger) / f"{digest}.keys"
                    message = f"missing (ledger entry {entry.entry_id}, report {entry.report_id})"
                    raise _damaged(where, "ledger_items_missing", message)
                cache[digest] = found
            shared = keys & cache[digest]
        if shared:
            earlier.append(entry)
            seen |= shared
    return ContentUses(earlier, len(seen), len(keys))


def held_out_use_line(entry: LedgerEntry) -> str:
    """The earlier uses a ``started`` entry records, as one line (empty when none)."""
    count = getattr(entry, "held_out_prior_uses", None)  # an entry read back may predate them
    if count is None:
        return ""
    return _use_line(count, getattr(entry, "held_out_overlap", None) or 0.0)


def _use_line(count: int, overlap: float) -> str:
    if not count:
        return "held-out content not used before (first use)"
    times = "once" if count == 1 else f"{count} times"
    return f"held-out content used {times} before (overlap {overlap:.0%})"
