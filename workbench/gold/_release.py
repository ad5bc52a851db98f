"""Gold lineage and frozen releases: per-case field hashes (:func:`case_hashes`) and
:func:`freeze`, which appends a :class:`~workbench.approval.Release` to ``releases.jsonl``."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import to_json

from .._docs import add_field_docs
from .._io import sha256_file, sha256_json
from ..approval import Release, Snapshot, current_user
from ..approval import freeze as freeze_input
from ._records import GoldCase

if TYPE_CHECKING:
    from ._dataset import GoldDataset


FIELD_GROUPS: dict[str, tuple[str, ...]] = {
    "label": ("adjudication.label",),
    "response": ("response", "response_hash"),
    "notes": ("grading_notes",),
    "grading": ("input", "reference", "contexts", "evidence"),
    "reviews": ("reviews", "adjudication.reason", "adjudication.adjudicator"),
    "placement": ("partition", "group", "slice", "tags"),
    "rubric": ("rubric_version",),
    "other": ("schema_version", "case_id", "supersedes", "metadata"),
}
"""Which gold-record fields each per-case hash covers. Every field is in exactly one group."""


_LATER_REVIEW_FIELDS = ("spans", "assigned_at", "completed_at", "training_version", "blinded")
"""Review fields added after releases were frozen: hashed only when set, so a frozen release
of reviews without them keeps its hashes."""


_HASHED: dict[bytes, dict[str, str]] = {}
""":func:`case_hashes` by the record's own JSON bytes (every field, NaN and Infinity kept
apart from null): one process hashing the same gold again (every command that validates it,
every test) hashes each record once. Keyed by content only, never by path or mtime; bounded."""
_HASHED_LIMIT_BYTES = 64 << 20
_hashed_bytes = 0


def case_hashes(case: GoldCase) -> dict[str, str]:
    """One sha256 (over canonical JSON) per field group of :data:`FIELD_GROUPS`."""
    global _hashed_bytes
    key = to_json(case, inf_nan_mode="constants")
    hit = _HASHED.get(key)
    if hit is None:
        hit = _case_hashes(case)
        if _hashed_bytes + len(key) > _HASHED_LIMIT_BYTES:
            _HASHED.clear()
            _hashed_bytes = 0
        _HASHED[key] = hit
        _hashed_bytes += len(key)
    return dict(hit)


def _case_hashes(case: GoldCase) -> dict[str, str]:
    data = case.model_dump(mode="json")
    data["reviews"] = [
        {k: v for k, v in review.items() if k not in _LATER_REVIEW_FIELDS or v not in (None, [])}
        for review in data["reviews"]
    ]

    def get(path: str) -> Any:
        head, _, rest = path.partition(".")
        value = data.get(head)
        return (value or {}).get(rest) if rest else value

    return {
        name: sha256_json(get(fields[0]) if len(fields) == 1 else [get(f) for f in fields])
        for name, fields in FIELD_GROUPS.items()
    }


class GoldLineage(BaseModel):
    """What a run was produced against: dataset, rubric version, release, judged cases' hashes."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=add_field_docs)

    dataset_sha256: str
    """Hash of the gold dataset (gold file, rubric, evidence snapshot)."""
    rubric_version: str
    """The rubric version of the gold."""
    release_id: str | None = None
    """The frozen release whose dataset hash equals ``dataset_sha256`` (the latest), or None."""
    cases: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Per judged case id: :func:`case_hashes`."""


def gold_lineage(dataset: GoldDataset, cases: Iterable[GoldCase] | None = None) -> GoldLineage:
    """The lineage of ``cases`` (default: every active case) of ``dataset``, for a run manifest."""
    chosen = dataset.cases.values() if cases is None else cases
    release = dataset.release
    return GoldLineage(
        dataset_sha256=dataset.sha256,
        rubric_version=dataset.rubric.version,
        release_id=release.release_id if release else None,
        cases={case.case_id: case_hashes(case) for case in chosen},
    )


def gold_snapshot(path: str | Path) -> Snapshot:
    """The checked snapshot of the gold dataset at ``path`` (the approval registry's gold
    loader): the dataset must validate, lineage included."""
    from ._dataset import load_dataset

    dataset = load_dataset(path)
    records = ((0, case) for case in dataset.records)
    snapshot = snapshot_of_records(dataset.root, records, dataset.sha256, str(dataset.gold_path))
    return dataclasses.replace(
        snapshot,
        file_sha256=sha256_file(dataset.gold_path),
        extra={"rubric_version": dataset.rubric.version},
    )


def snapshot_of_records(
    root: Path, records: Iterable[tuple[int, GoldCase]], dataset_sha256: str, loc: str
) -> Snapshot:
    """A gold dataset as the approval kernel sees it: every record (superseded ones included)
    with its field hashes; ``records`` are ``(line number, record)`` (0: no line)."""
    items: dict[str, dict[str, str]] = {}
    where: dict[str, str] = {}
    for number, case in records:
        if case.case_id not in items:
            items[case.case_id] = case_hashes(case)
            where[case.case_id] = f"{loc}:{number}" if number else loc
    return Snapshot(
        kind="gold",
        name="gold",
        version=None,
        sha256=dataset_sha256,
        source=root,
        items=items,
        where=where,
        change_fix=(
            "restore the frozen record and write a superseding record (a new case_id with"
            " supersedes: {item})"
        ),
    )


def freeze(
    gold: str | Path, *, approver: str | None = None, note: str | None = None
) -> tuple[Release, bool]:
    """Freeze the current state of a valid gold dataset; return ``(release, created)``. The
    approver (default ``$WORKBENCH_USER``, else the login name) must be on the project's approver
    list; an already frozen dataset hash returns its release with ``created`` False."""
    return freeze_input(gold_snapshot(gold), approver=approver or current_user(), note=note)
