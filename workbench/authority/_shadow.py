"""Shadow mode: run a candidate beside the judge holding authority, record where they disagree.

The runs are ``workbench compare``'s (current = old, shadow = new). The summary goes to
``shadow.json`` and the shadow log; shadow verdicts never affect any gate.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from .._io import atomic_write_json
from .._record import Record as _Model
from ..approval import current_user
from ..errors import refusal
from ..gold import GoldDataset, load_dataset
from ..judges import Judge, load_candidate
from ._grant import Level
from ._location import authority_path_for, shadow_log_path_for
from ._record import AuthorityRecord

SHADOW_SCHEMA_VERSION = 1
SHADOW_FILE = "shadow.json"


class ShadowSlice(_Model):
    """Disagreements in one slice."""

    slice: str
    """The slice."""
    risk: str | None
    """Its risk."""
    cases: int
    """Cases both judges judged (with a verdict or an error)."""
    disagreements: int
    """Cases whose verdicts differ."""
    boundary_crossings: int
    """Disagreements between pass and fail."""
    shadow_right: int
    """Disagreements where only the shadow agreed with the adjudicated label."""
    current_right: int
    """Disagreements where the current judge agreed and the shadow did not."""


class ShadowDisagreement(_Model):
    """One case the two judges judged differently."""

    case_id: str
    """The case."""
    slice: str
    """Its slice."""
    risk: str | None
    """The slice's risk."""
    current: str | None
    """The current judge's verdict (``error``/``missing`` category when None)."""
    shadow: str | None
    """The shadow's verdict."""
    current_category: str
    """pass, fail, abstain, other, error or missing."""
    shadow_category: str
    """Likewise."""
    boundary_crossing: bool
    """One passed and the other failed."""
    right: Literal["shadow", "current", "neither"]
    """Who agreed with the adjudicated label."""


class ShadowEntry(_Model):
    """One shadow comparison: a line of the shadow log, and ``OUT/shadow.json``."""

    schema_version: int = SHADOW_SCHEMA_VERSION
    """Shadow log format version."""
    entry_id: str
    """Id of the entry (``shadow-`` + 12 hex digits)."""
    recorded_at: datetime
    """When (UTC)."""
    who: str
    """Who ran it."""
    current: str
    """The judge holding authority (``name@version``)."""
    current_fingerprint: str
    """Its fingerprint."""
    current_authority: Level
    """Its recorded authority at the time (``none`` when it has no record)."""
    shadow: str
    """The candidate run in shadow."""
    shadow_fingerprint: str
    """Its fingerprint."""
    attached: bool
    """Whether the authority record attaches the candidate in shadow to the current judge."""
    dataset_sha256: str
    """The gold both ran on."""
    rubric_version: str
    """Its rubric version."""
    partition: str
    """development or calibration."""
    out_dir: str
    """The comparison directory (both runs, ``comparison.json``, ``shadow.json``)."""
    comparison_id: str
    """The comparison's id (its manifest's)."""
    status: Literal["complete", "incomplete"]
    """``incomplete`` when a run stopped early or a case lacks a result from either judge."""
    incomplete_reasons: list[str] = Field(default_factory=list)
    """Why."""
    warnings: list[str] = Field(default_factory=list)
    """The comparison's warnings (e.g. the candidate changes more than it declares)."""
    cases: int
    """Cases in the partition."""
    disagreements: int
    """Cases whose verdicts differ."""
    boundary_crossings: int
    """Disagreements between pass and fail."""
    current_errors: int
    """Cases whose last attempt by the current judge is an evaluator error."""
    shadow_errors: int
    """Likewise for the shadow."""
    review: list[str] = Field(default_factory=list)
    """Disagreements in critical slices, by case id: for review."""
    slices: list[ShadowSlice]
    """Per slice, critical first."""
    matrix: dict[str, dict[str, int]]
    """Current verdict category -> shadow verdict category -> cases."""
    disagreement_cases: list[ShadowDisagreement]
    """Every disagreement."""
    cost_usd: float
    """Spend of both runs."""


def read_shadow_log(log: str | Path) -> list[ShadowEntry]:
    """Every entry of a shadow log, oldest first (none when it does not exist)."""
    from .._record import read_log

    fix = "the shadow log is append-only and written by `workbench run --shadow-of`; restore it"
    what = "a shadow-log entry"
    return read_log(
        log, ShadowEntry, code="shadow_log_invalid", what=what, name="shadow log", fix=fix
    )


def _as_judge(candidate: Judge | str | Path) -> Judge:
    return candidate if not isinstance(candidate, str | Path) else load_candidate(candidate)


def shadow_entry(
    report: Any, *, current_authority: str, attached: bool, out_dir: str | Path
) -> ShadowEntry:
    """The shadow summary of a comparison (old = current, new = shadow)."""
    right = {"fixed": "shadow", "broken": "current"}
    rows = [
        ShadowDisagreement(
            case_id=c.case_id,
            slice=c.slice,
            risk=c.risk,
            current=c.old_label,
            shadow=c.new_label,
            current_category=c.old_category,
            shadow_category=c.new_category,
            boundary_crossing={c.old_category, c.new_category} == {"pass", "fail"},
            right=right.get(c.transition, "neither"),
        )
        for c in report.cases
        if c.verdict_changed and c.transition != "incomplete"
    ]
    slices = [
        ShadowSlice(
            slice=s.slice,
            risk=s.risk,
            cases=s.cases - s.transitions.get("incomplete", 0),
            disagreements=len(mine),
            boundary_crossings=sum(r.boundary_crossing for r in mine),
            shadow_right=sum(r.right == "shadow" for r in mine),
            current_right=sum(r.right == "current" for r in mine),
        )
        for s in report.slices
        for mine in [[r for r in rows if r.slice == s.slice]]
    ]
    return ShadowEntry(
        entry_id=f"shadow-{uuid.uuid4().hex[:12]}",
        recorded_at=datetime.now(UTC),
        who=current_user(),
        current=report.old.label,
        current_fingerprint=report.old.fingerprint,
        current_authority=current_authority,
        shadow=report.new.label,
        shadow_fingerprint=report.new.fingerprint,
        attached=attached,
        dataset_sha256=report.dataset_sha256,
        rubric_version=report.rubric_version,
        partition=report.partition,
        out_dir=str(Path(out_dir)),
        comparison_id=report.comparison_id,
        status=report.status,
        incomplete_reasons=list(report.incomplete_reasons),
        warnings=list(report.warnings),
        cases=report.overall.cases,
        disagreements=len(rows),
        boundary_crossings=sum(r.boundary_crossing for r in rows),
        current_errors=report.old.errors,
        shadow_errors=report.new.errors,
        review=[r.case_id for r in rows if r.risk == "critical"],
        slices=slices,
        matrix={k: dict(v) for k, v in report.matrix.items()},
        disagreement_cases=rows,
        cost_usd=report.budget.spent_usd,
    )


async def run_shadow(
    candidate: Judge | str | Path,
    current: Judge | str | Path,
    gold: GoldDataset | str | Path,
    partition: str,
    out: str | Path,
    *,
    budget_usd: float | None = None,
    concurrency: int = 8,
    cache_dir: str | Path | None | Literal[False] = None,
    progress: bool = True,
    label_mapping: str | Path | None = None,
    log: str | Path | None = None,
) -> ShadowEntry:
    """Run ``candidate`` in shadow of ``current`` on one partition and record the disagreements
    (resumable; ``log`` defaults beside the authority record). Raises like ``compare``."""
    from .._record import append_to_log
    from ..migration import compare_candidates

    dataset = gold if isinstance(gold, GoldDataset) else load_dataset(gold)
    shadow_judge, current_judge = _as_judge(candidate), _as_judge(current)
    if shadow_judge.identity.fingerprint() == current_judge.identity.fingerprint():
        raise refusal(
            "nothing to shadow",
            "--shadow-of",
            "shadow_of_itself",
            f"{shadow_judge.spec.label} and {current_judge.spec.label} are the same judge (same"
            " fingerprint)",
            "run another version in shadow; to measure one judge's own variance use `workbench"
            " repeatability`",
        )
    report = await compare_candidates(
        current_judge,
        shadow_judge,
        dataset,
        partition,
        out,
        label_mapping=label_mapping,
        controls=None,
        budget_usd=budget_usd,
        concurrency=concurrency,
        cache_dir=cache_dir,
        progress=progress,
    )
    read = AuthorityRecord(authority_path_for(dataset.root)).read()
    states = read.judges()
    held = states.get(current_judge.spec.label)
    mine = states.get(shadow_judge.spec.label)
    current_authority = held.authority if held is not None and read.ok else "none"
    attached = read.ok and mine is not None and mine.shadow_of == current_judge.spec.label
    entry = shadow_entry(
        report, current_authority=current_authority, attached=attached, out_dir=out
    )
    atomic_write_json(Path(out) / SHADOW_FILE, entry.model_dump(mode="json"))
    append_to_log(Path(log) if log is not None else shadow_log_path_for(dataset.root), entry)
    return entry


def run_shadow_sync(*args: Any, **kwargs: Any) -> ShadowEntry:
    """:func:`run_shadow` for scripts, CI and the CLI (not inside a running event loop)."""
    return asyncio.run(run_shadow(*args, **kwargs))


def format_shadow(entry: ShadowEntry) -> str:
    """A plain-text account for the terminal."""
    attached = "attached in shadow" if entry.attached else "not attached in the authority record"
    lines = [
        (
            f"shadow {entry.entry_id}: {entry.shadow} ({entry.shadow_fingerprint[:12]}) beside"
            f" {entry.current} ({entry.current_fingerprint[:12]}, authority"
            f" {entry.current_authority}; {attached}) on {entry.partition}: {entry.status.upper()}"
        ),
        (
            f"  {entry.disagreements} disagreement(s) of {entry.cases} case(s),"
            f" {entry.boundary_crossings} across pass/fail; no effect on any gate"
        ),
    ]
    for reason in entry.incomplete_reasons:
        lines.append(f"  incomplete: {reason}")
    for warning in entry.warnings:
        lines.append(f"  warning: {warning}")
    for s in entry.slices:
        if s.disagreements:
            lines.append(
                f"  {s.slice:26} {(s.risk or ''):8} {s.disagreements} of {s.cases}:"
                f" {s.boundary_crossings} across pass/fail; shadow right {s.shadow_right}, current"
                f" right {s.current_right}"
            )
    if entry.review:
        lines.append(
            f"REVIEW: {len(entry.review)} disagreement(s) in critical slices: "
            + ", ".join(entry.review)
        )
    lines.append(f"cost ${entry.cost_usd:.4f}; summary {Path(entry.out_dir) / SHADOW_FILE}")
    return "\n".join(lines)
