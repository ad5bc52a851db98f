"""Staleness: has anything the certification saw changed since?

A certification is evidence about one judge on one gold state, under one Ragas release. It
is **stale** when any of these differs from what the certification saw:

- ``ragas_version``: the installed Ragas version;
- ``rubric_version``: the gold's rubric version;
- ``gold_release``: the gold's state (its dataset hash, and the frozen release naming it);
- ``model``: the judge's model name in the candidate spec it runs from;
- ``candidate``: anything else that makes the spec another judge (its fingerprint: prompt,
  parameters, function source), or the spec is gone.

A stale judge loses ``block`` authority until it is recertified
(:func:`workbench.authority.authority_status`), and cannot be granted or promoted.

The gold's current state is read without validating every record (:func:`gold_state`): a
rubric whose version changed makes every record invalid until it is re-reviewed, and that is
exactly when status must still answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from .._io import sha256_file, sha256_json
from .._load import load_yaml
from .._record import Record as _Model
from ..errors import WorkbenchError
from ..heldout import gold_directory
from ._certified import ReportFacts

StaleKind = Literal["ragas_version", "rubric_version", "gold_release", "model", "candidate"]


class GoldState(_Model):
    """The gold dataset as it is now, read without validating its records."""

    path: str
    """The dataset directory."""
    rubric_version: str | None
    """The rubric's version (None when the rubric cannot be read)."""
    dataset_sha256: str | None
    """The dataset hash, computed as ``workbench validate`` does (gold file, rubric, evidence
    snapshot); None when a file is missing."""
    release: str | None
    """The latest frozen release of exactly this state, or None (not frozen)."""
    problems: list[str] = Field(default_factory=list)
    """What could not be read."""


class StaleReason(_Model):
    """One thing that differs from what the certification saw."""

    kind: StaleKind
    """``ragas_version``, ``rubric_version``, ``gold_release``, ``model`` or ``candidate``."""
    certified: str | None
    """What the certification saw."""
    now: str | None
    """What there is now."""
    message: str
    """One sentence."""


def gold_state(gold: str | Path) -> GoldState:
    """The rubric version, dataset hash and release of ``gold`` now (module doc)."""
    from ..approval import read_release_log

    root = gold_directory(gold)
    problems: list[str] = []
    rubric_path = root / "rubric.yaml"
    gold_path = root / "gold.jsonl"
    version: str | None = None
    evidence: Path | None = None
    try:
        raw = load_yaml(
            rubric_path, prefix="rubric", what="rubric", missing_fix="", shape=("not a mapping", "")
        ).data
        version = str(raw["version"]) if raw.get("version") is not None else None
        if raw.get("evidence_snapshot"):
            evidence = (rubric_path.parent / str(raw["evidence_snapshot"])).resolve()
    except WorkbenchError as exc:  # missing, unreadable, bad or duplicate-key YAML, not a mapping
        problems.append(
            f"{rubric_path}: the rubric cannot be read"
            f" ({exc.problems[0].code if exc.problems else exc.summary})"
        )
    digest: str | None = None
    try:
        digest = sha256_json(
            {
                "gold": sha256_file(gold_path),
                "rubric": sha256_file(rubric_path),
                "evidence": sha256_file(evidence) if evidence else None,
            }
        )
    except OSError as exc:
        problems.append(f"{root}: the dataset hash cannot be computed ({exc.strerror or exc})")
    release: str | None = None
    try:
        log = read_release_log(root)
        problems += [p.format() for p in log.problems]
        latest = log.latest_for(digest) if digest else None
        release = latest.release_id if latest is not None else None
    except (OSError, WorkbenchError) as exc:
        problems.append(f"{root}: the release log cannot be read ({exc})")
    return GoldState(
        path=str(root),
        rubric_version=version,
        dataset_sha256=digest,
        release=release,
        problems=problems,
    )


def spec_identity(spec: str | Path) -> tuple[str | None, str | None, str | None]:
    """``(label, fingerprint, model)`` of the candidate spec at ``spec``; Nones when it cannot be
    loaded."""
    from ..judges import load_candidate

    try:
        judge = load_candidate(spec)
    except (WorkbenchError, OSError, ValueError, ImportError):
        return None, None, None
    return judge.spec.label, judge.identity.fingerprint(), judge.identity.model


def staleness(
    facts: ReportFacts,
    gold: GoldState,
    spec: str | Path | None,
    *,
    installed_ragas: str | None = None,
) -> list[StaleReason]:
    """Every way the certification in ``facts`` no longer describes the judge that runs from
    ``spec`` on ``gold`` (module doc)."""
    from ..judges import ragas_version

    installed = installed_ragas or ragas_version()
    out: list[StaleReason] = []
    f = facts

    def stale(kind: StaleKind, certified: str | None, now: str | None, message: str) -> None:
        out.append(StaleReason(kind=kind, certified=certified, now=now, message=message))

    if f.ragas_version != installed:
        stale(
            "ragas_version",
            f.ragas_version,
            installed,
            f"certified with Ragas {f.ragas_version}, Ragas {installed} is installed: the judge may"
            " behave differently",
        )
    if f.rubric_version != gold.rubric_version:
        stale(
            "rubric_version",
            f.rubric_version,
            gold.rubric_version,
            f"certified against rubric {f.rubric_version}, the gold's rubric is now"
            f" {gold.rubric_version}",
        )
    if f.dataset_sha256 != gold.dataset_sha256 or f.gold_release != gold.release:
        was = f"release {f.gold_release or '(not frozen)'}, dataset {str(f.dataset_sha256)[:12]}"
        now = f"release {gold.release or '(not frozen)'}, dataset {str(gold.dataset_sha256)[:12]}"
        stale(
            "gold_release",
            f.gold_release,
            gold.release,
            f"certified on {was}; the gold is now {now}",
        )
    label, fingerprint, model = spec_identity(spec) if spec is not None else (None, None, None)
    if label is None:
        unknown = (
            "no candidate spec is recorded for the judge"
            if spec is None
            else f"the candidate spec {spec} no longer loads"
        )
        stale("candidate", f.candidate, None, f"{unknown}: what runs now is unknown")
        return out
    if model != f.model:
        message = f"certified with model {f.model}, the spec now names {model}"
        stale("model", f.model, model, message)
    if label != f.candidate or fingerprint != f.candidate_fingerprint:
        stale(
            "candidate",
            f.candidate_fingerprint[:12],
            (fingerprint or "")[:12],
            f"the spec {spec} is now {label} with fingerprint {str(fingerprint)[:12]}, not the"
            f" certified {f.candidate} ({f.candidate_fingerprint[:12]})",
        )
    return out
