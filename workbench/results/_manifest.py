"""The run manifest (``manifest.json``, :class:`RunManifest`): what a run will judge, fixed
before its first model call; read beside its results wherever they are aligned."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .._docs import add_field_docs
from .._io import sha256_json
from .._record import Record
from ..sampling import SamplingPlan
from ._contract import JudgeIdentity

MANIFEST_FILE = "manifest.json"
"""The run manifest's file name, in the run directory (or a shard directory)."""
MANIFEST_SCHEMA_VERSION = 1


class ManifestCase(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=add_field_docs)

    case_id: str
    """The case judged."""
    response_hash: str
    """sha256 of the judged content (the gold response, or a candidates digest)."""
    gold: dict[str, str] | None = None
    """For gold cases: :func:`workbench.gold.case_hashes` of the record at run time, so a later
    change to the gold is named case by case."""


class ManifestUnit(BaseModel):
    """One planned judge call when the plan is not a plain case x repeat grid."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: str
    repeat: int
    presentation: dict[str, Any] | None = None


class ManifestSampling(BaseModel):
    """The declared sampling plan a run's cases were drawn under, fixed before the first call."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=add_field_docs)

    plan: SamplingPlan
    """The plan as declared (``sampling:`` of the policy, or the plan file)."""
    plan_sha256: str
    """sha256 of the plan's canonical JSON (:meth:`~workbench.sampling.SamplingPlan.sha256`)."""
    sampled_out: list[str]
    """Case ids of the partition the plan leaves out, sorted: never judged, never a pass."""
    slices: dict[str, dict[str, int]]
    """Per slice: ``cases`` (in the partition), ``target`` (what the plan asks for) and
    ``sampled`` (drawn, whole groups)."""


class RunManifest(Record):
    """What a run will judge, fixed before the first model call."""

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
    rubric_version: str | None = None
    """The gold's rubric version (None for runs not drawn from a gold dataset: controls,
    ranking fixtures, noise pairs)."""
    gold_release: str | None = None
    """The frozen gold release (``releases.jsonl``) whose dataset hash equals
    ``dataset_sha256``; None when that state of the gold was never frozen."""
    partition: str
    """The partition judged."""
    repeats: int = Field(ge=1)
    """How many times each case is judged (repeat indices 0..repeats-1)."""
    cases: list[ManifestCase]
    """Case ids and response hashes, in execution order."""
    units: list[ManifestUnit] | None = None
    """The planned (case, repeat) units when they are not every case x every repeat
    (e.g. a position-bias battery's permutations); None means the full grid."""
    sampling: ManifestSampling | None = None
    """The declared sampling plan the cases were drawn under (None: every case); a resume under
    another plan is refused."""

    def planned(self) -> list[tuple[str, int]]:
        """Every planned (case_id, repeat) unit, in order."""
        if self.units is not None:
            return [(u.case_id, u.repeat) for u in self.units]
        return [(c.case_id, r) for c in self.cases for r in range(self.repeats)]

    def content_sha256(self) -> str:
        """Hash of what the manifest binds (everything but run_id, created_at and gold_release:
        freezing the gold does not change it, so a run started before the freeze resumes)."""
        return sha256_json(
            self.model_dump(mode="json", exclude={"run_id", "created_at", "gold_release"})
        )
