"""The run manifest: frozen before the first call, checked on every resume."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .._docs import add_field_docs
from .._io import atomic_write_json, read_json_file, sha256_json
from .._record import Record, SchemaTooNew
from ..errors import Problem, WorkbenchError
from ..gold import GoldCase, GoldDataset, GoldLineage
from ..results import JudgeIdentity
from ..sampling import SamplingPlan
from ._rundir import RunDir

MANIFEST_SCHEMA_VERSION = 1


class ManifestCase(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=add_field_docs)

    case_id: str
    """The case judged."""
    response_hash: str
    """sha256 of the judged content (the gold response, or a candidates digest)."""
    gold: dict[str, str] | None = None
    """For cases drawn from a gold dataset: the per-field hashes of the gold record at run
    time (``workbench.gold.case_hashes``: label, response, notes, grading, reviews,
    placement, rubric, other), so that a later change to the gold can be named case by case."""


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
    """The declared sampling plan the cases were drawn under (None: every case of the
    partition is planned). Part of the manifest's content: a resume under another plan is
    refused."""

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


def freeze_manifest(
    out_dir: Path,
    judge: JudgeIdentity,
    fingerprint: str,
    dataset_sha256: str,
    partition: str,
    repeats: int,
    cases: list[ManifestCase],
    units: list[ManifestUnit] | None = None,
    lineage: GoldLineage | None = None,
    sampling: ManifestSampling | None = None,
) -> tuple[RunManifest, bool]:
    """Write the manifest, or check it against an existing one. Returns ``(manifest, resumed)``.

    Refuses to continue a run whose manifest differs: a different candidate, dataset,
    partition, case list or repeat count is a different run and needs its own directory.
    ``lineage`` (gold runs): the rubric version, release and per-case field hashes recorded.
    ``sampling``: the declared plan, its hash and the cases it leaves out.
    """
    path = RunDir(out_dir).manifest
    if lineage is not None:
        cases = [c.model_copy(update={"gold": lineage.cases.get(c.case_id)}) for c in cases]
    proposed = RunManifest(
        run_id=uuid.uuid4().hex,
        created_at=datetime.now(UTC),
        judge=judge,
        judge_fingerprint=fingerprint,
        dataset_sha256=dataset_sha256,
        rubric_version=lineage.rubric_version if lineage else None,
        gold_release=lineage.release_id if lineage else None,
        partition=partition,
        repeats=repeats,
        cases=cases,
        units=units,
        sampling=sampling,
    )
    if not path.exists():
        # A run without a plan writes no ``sampling`` key, so its manifest reads as before.
        unset = {"sampling"} if sampling is None else None
        atomic_write_json(path, proposed.model_dump(mode="json", exclude=unset))
        return proposed, False
    existing = _read_manifest(path)
    if existing.content_sha256() != proposed.content_sha256():
        changed = [n for n in _BOUND if getattr(existing, n) != getattr(proposed, n)]
        raise WorkbenchError(
            "refusing to resume: the run manifest changed",
            [
                Problem(
                    location=str(path),
                    code="manifest_changed",
                    message=(
                        "this directory holds a run with a different"
                        f" {', '.join(changed) or 'content'}"
                    ),
                    fix=(
                        "use a new --out directory for a changed candidate, dataset, case list or"
                        " sampling plan; evidence of the old run is kept"
                    ),
                )
            ],
        )
    return existing, True


_BOUND = (
    "judge_fingerprint",
    "dataset_sha256",
    "rubric_version",
    "partition",
    "repeats",
    "cases",
    "units",
    "sampling",
)
"""The manifest fields a resumed run must match, named when one differs."""


def _read_manifest(path: Path) -> RunManifest:
    try:
        return RunManifest.model_validate(read_json_file(path))
    except SchemaTooNew as exc:
        raise exc.at(str(path)) from None
    except (OSError, ValueError) as exc:
        raise WorkbenchError(
            "unreadable manifest",
            [
                Problem(
                    location=str(path),
                    code="manifest_invalid",
                    message=f"the run manifest cannot be read ({exc})",
                    fix="restore the manifest or use a new --out directory",
                )
            ],
        ) from None


def run_lineage(judge: object, dataset: GoldDataset, cases: Sequence[GoldCase]) -> GoldLineage:
    """The gold lineage a run of ``judge`` on ``cases`` of ``dataset`` records.

    A judge that replays results produced elsewhere (``imported``) checks first that they were
    produced against this gold (``judge.check_gold(dataset)``, which raises when not).
    """
    from ..gold import gold_lineage
    from ..judges import ReplayJudge

    if isinstance(judge, ReplayJudge):
        judge.check_gold(dataset)
    return gold_lineage(dataset, cases)
