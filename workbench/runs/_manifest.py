"""The run manifest: frozen before the first call, checked on every resume."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .._io import atomic_write_json, loads_json, sha256_json
from ..errors import Problem, WorkbenchError
from ..results import JudgeIdentity

MANIFEST_SCHEMA_VERSION = 1
MANIFEST_FILE = "manifest.json"


class ManifestCase(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: str
    response_hash: str


class ManifestUnit(BaseModel):
    """One planned judge call when the plan is not a plain case x repeat grid."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: str
    repeat: int
    presentation: dict[str, Any] | None = None


class RunManifest(BaseModel):
    """What a run will judge, fixed before the first model call."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    schema_version: int = MANIFEST_SCHEMA_VERSION
    run_id: str
    """Stable id of the run; every result records it."""
    created_at: datetime
    judge: JudgeIdentity
    """The candidate's identity."""
    judge_fingerprint: str
    """The candidate fingerprint the run is bound to."""
    dataset_sha256: str
    """Hash of the gold dataset the cases were drawn from."""
    partition: str
    """The partition judged."""
    repeats: int = Field(ge=1)
    """How many times each case is judged (repeat indices 0..repeats-1)."""
    cases: list[ManifestCase]
    """Case ids and response hashes, in execution order."""
    units: list[ManifestUnit] | None = None
    """The planned (case, repeat) units when they are not every case x every repeat
    (e.g. a position-bias battery's permutations); None means the full grid."""

    def planned(self) -> list[tuple[str, int]]:
        """Every planned (case_id, repeat) unit, in order."""
        if self.units is not None:
            return [(u.case_id, u.repeat) for u in self.units]
        return [(c.case_id, r) for c in self.cases for r in range(self.repeats)]

    def content_sha256(self) -> str:
        """Hash of what the manifest binds (everything but run_id and created_at)."""
        return sha256_json(self.model_dump(mode="json", exclude={"run_id", "created_at"}))


def freeze_manifest(out_dir: Path, judge: JudgeIdentity, fingerprint: str, dataset_sha256: str, partition: str, repeats: int, cases: list[ManifestCase], units: list[ManifestUnit] | None = None) -> tuple[RunManifest, bool]:
    """Write the manifest, or check it against an existing one. Returns ``(manifest, resumed)``.

    Refuses to continue a run whose manifest differs: a different candidate, dataset,
    partition, case list or repeat count is a different run and needs its own directory.
    """
    path = out_dir / MANIFEST_FILE
    proposed = RunManifest(
        run_id=uuid.uuid4().hex,
        created_at=datetime.now(UTC),
        judge=judge,
        judge_fingerprint=fingerprint,
        dataset_sha256=dataset_sha256,
        partition=partition,
        repeats=repeats,
        cases=cases,
        units=units,
    )
    if not path.exists():
        atomic_write_json(path, proposed.model_dump(mode="json"))
        return proposed, False
    try:
        existing = RunManifest.model_validate(loads_json(path.read_text(encoding="utf-8")))
    except (ValueError, json.JSONDecodeError) as exc:
        raise WorkbenchError("unreadable manifest", [Problem(location=str(path), code="manifest_invalid", message=f"the run manifest cannot be read ({exc})", fix="restore the manifest or use a new --out directory")]) from None
    if existing.content_sha256() != proposed.content_sha256():
        changed = [
            name
            for name in ("judge_fingerprint", "dataset_sha256", "partition", "repeats", "cases", "units")
            if getattr(existing, name) != getattr(proposed, name)
        ]
        raise WorkbenchError(
            "refusing to resume: the run manifest changed",
            [Problem(location=str(path), code="manifest_changed", message=f"this directory holds a run with a different {', '.join(changed) or 'content'}", fix="use a new --out directory for a changed candidate, dataset or case list; evidence of the old run is kept")],
        )
    return existing, True
