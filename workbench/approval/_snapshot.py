"""What an approved input shows the kernel: its identity, its items' field-group hashes (the
group ``label`` holds what reviewers decided), its recorded changes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._io import sha256_json

ItemFields = Mapping[str, str]
"""Field group -> sha256 of one item."""


def item_sha256(fields: ItemFields) -> str:
    """The hash of a whole item: sha256 over its field hashes."""
    return sha256_json(dict(fields))


def changed_fields(before: ItemFields, after: ItemFields) -> list[str]:
    """Field groups whose hash differs, in the order ``before`` then ``after`` name them."""
    names = list(dict.fromkeys([*before, *after]))
    return [name for name in names if before.get(name) != after.get(name)]


@dataclass(frozen=True)
class Change:
    """A change of one item that a version records, relative to the version it supersedes."""

    approver: str
    """Who approved it (must be in the project's approver list)."""
    reason: str
    """Why."""
    location: str
    """Where it is recorded (``file:line``)."""


@dataclass(frozen=True)
class Snapshot:
    """One approved input, as hashes."""

    kind: str
    """What it is (``gold``, ``control_suite``, ``policy`` ...)."""
    name: str
    """Its name; releases of one name form its lineage."""
    version: str | None
    """Its version; None for an input that grows in place."""
    sha256: str
    """The content hash its uses record (a gold dataset's dataset sha256)."""
    source: Path
    """The file (or gold directory) it was read from; its release log is in that folder."""
    items: Mapping[str, ItemFields]
    """Item id -> field-group hashes."""
    header: str = ""
    """sha256 of everything that is not an item (name, description, limits ...)."""
    supersedes: str | None = None
    """The version this one replaces, as the input declares it."""
    changes: Mapping[str, Change] = field(default_factory=dict)
    """Item id -> the change this version records for it (relative to ``supersedes``)."""
    additions_need_change: bool = True
    """Whether an item added since the superseded version needs a recorded change too."""
    where: Mapping[str, str] = field(default_factory=dict)
    """Item id -> ``file:line`` for messages."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Kind-specific content frozen with the release (e.g. a noise suite's evidence manifest)."""
    file_sha256: str | None = None
    """sha256 of the file's bytes, when it is one file."""
    chained: bool = True
    """Whether a new version must name the one it supersedes (False: versions stand alone)."""
    change_fix: str = (
        "put the change in a new version that says `supersedes:` and records a `changes:` entry"
        " (approver, reason) for every item it adds, relabels, edits or retires"
    )
    """How this kind records a change; ``{item}`` stands for the item's id."""

    @property
    def label(self) -> str:
        """``name@version``, or the name of an unversioned input."""
        return f"{self.name}@{self.version}" if self.version is not None else self.name

    @property
    def folder(self) -> Path:
        """The folder of the release log."""
        return self.source if self.source.is_dir() else self.source.parent

    def at(self, item_id: str | None = None) -> str:
        """Where ``item_id`` (or the input) is, for a problem's location."""
        return self.where.get(item_id, str(self.source)) if item_id else str(self.source)


def document_snapshot(
    kind: str,
    document: Mapping[str, Any],
    *,
    items: str,
    source: Path,
    chained: bool = False,
    change_fix: str = "a changed document is a new version (a new file) that is frozen in turn",
) -> Snapshot:
    """A YAML document as an approved input: each entry of ``document[items]`` is an item with
    one field group ``label``; everything else is the header."""
    raw = document.get(items) or {}
    entries = (
        dict(raw.items())
        if isinstance(raw, Mapping)
        else {str(e.get("case_id", e.get("id", i))): e for i, e in enumerate(raw)}
    )
    fields = {str(k): {"label": sha256_json(v)} for k, v in entries.items()}
    header = sha256_json({k: v for k, v in document.items() if k != items})
    version = document.get("version")
    return Snapshot(
        kind=kind,
        name=str(document.get("name", source.stem)),
        version=None if version is None else str(version),
        sha256=sha256_json({"header": header, "items": fields}),
        source=source,
        items=fields,
        header=header,
        chained=chained,
        change_fix=change_fix,
    )
