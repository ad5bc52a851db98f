"""The run manifest (:class:`~workbench.results.RunManifest`): frozen before the first call,
checked on every resume."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from .._io import atomic_write_json, read_json_file
from .._record import SchemaTooNew
from ..errors import refusal
from ..gold import GoldCase, GoldDataset, GoldLineage
from ..results import JudgeIdentity, ManifestCase, ManifestSampling, ManifestUnit, RunManifest
from ._rundir import RunDir


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
    """Write the manifest, or check it against an existing one (a differing one is refused).
    Returns ``(manifest, resumed)``."""
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
        unset = {"sampling"} if sampling is None else None
        atomic_write_json(path, proposed.model_dump(mode="json", exclude=unset))
        return proposed, False
    existing = _read_manifest(path)
    if existing.content_sha256() != proposed.content_sha256():
        changed = [n for n in _BOUND if getattr(existing, n) != getattr(proposed, n)]
        raise refusal(
            "refusing to resume: the run manifest changed",
            str(path),
            "manifest_changed",
            f"this directory holds a run with a different {', '.join(changed) or 'content'}",
            "use a new --out directory for a changed candidate, dataset, case list or"
            " sampling plan; evidence of the old run is kept",
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


def _read_manifest(path: Path) -> RunManifest:
    try:
        return RunManifest.model_validate(read_json_file(path))
    except SchemaTooNew as exc:
        raise exc.at(str(path)) from None
    except (OSError, ValueError) as exc:
        message = f"the run manifest cannot be read ({exc})"
        fix = "restore the manifest or use a new --out directory"
        raise refusal("unreadable manifest", str(path), "manifest_invalid", message, fix) from None


def run_lineage(judge: object, dataset: GoldDataset, cases: Sequence[GoldCase]) -> GoldLineage:
    """The gold lineage a run of ``judge`` on ``cases`` records (a replay judge checks first that
    its results were produced against this gold)."""
    from ..gold import gold_lineage
    from ..judges import ReplayJudge

    if isinstance(judge, ReplayJudge):
        judge.check_gold(dataset)
    return gold_lineage(dataset, cases)
