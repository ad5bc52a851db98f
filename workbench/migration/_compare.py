"""``workbench compare``: an old and a new judge version on the same frozen cases.

What it does, in order (nothing is called before every check has passed):

1. Refuses held-out data (certification only), loads both candidates and the gold.
2. Checks the label vocabularies: verdicts are compared in the rubric's labels, which the new
   version's must be part of; when the old version has labels outside them (renamed
   categories), a reviewed mapping (:mod:`._mapping`) is required, and every old label and
   every old verdict must be mapped; its sha256 goes into the report.
3. Prompt parity (:mod:`._parity`): the change kinds between the two identities and the
   rendered requests of every case; warns when more changed than the new version declares.
4. Reused runs (``old_run``/``new_run``) are checked: their manifests must be of these
   candidates, this gold, this partition and exactly its cases, and the runs complete.
5. The budget covers both candidates: the engine's estimator prices every call still to make
   (controls and partition, old and new); when recorded spend plus those reservations exceed
   ``budget_usd``, :class:`BudgetInsufficient` says how much is needed and nothing starts.
6. Freezes the comparison manifest (``comparison_manifest.json``: both fingerprints, the
   dataset, the partition, the cases, the mapping and suite hashes) and refuses to continue a
   directory frozen for another comparison.
7. Runs the controls on both versions first, then the partition with both (resumable,
   cached, budgeted: each run's limit is the budget minus the others' recorded spend and the
   reservations of the runs still to come).
8. Joins both runs with their lineage checked (old verdicts mapped first), refuses runs whose
   manifests differ, and reports: case-level transitions by slice (fixed, broken, still
   wrong, still right), the pass/fail/abstain matrix, the exact McNemar test, per-slice
   false-pass and false-fail rates of each version and their paired difference with a 95%
   Tango score interval, the controls side by side, and every changed verdict in a critical
   slice for evidence-based review. Written to ``comparison.json``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from .._args import check_run_arguments
from .._io import atomic_write_json, read_json_file, sha256_json
from .._record import Record as _Model
from ..align import Join, JoinedCase, align_results, read_run_manifest
from ..errors import Problem, WorkbenchError
from ..gold import GoldDataset, load_dataset
from ..heldout import refuse_held_out
from ..judges import Judge, JudgeInput, load_candidate
from ..results import ResultLine, read_results
from ..runs import (
    MANIFEST_FILE,
    RESULTS_FILE,
    SUMMARY_FILE,
    RunManifest,
    RunOptions,
    RunSummary,
    WorkItem,
    run_candidate,
)
from ..stats import Rate, wilson_rate
from ._budget import RunEstimate, estimate_run
from ._mapping import LoadedMapping, load_label_mapping, mapping_problems
from ._parity import RequestParity, judge_changes, parity_warnings, request_parity
from ._stats import exact_mcnemar, paired_rate_difference

if TYPE_CHECKING:  # imported lazily at run time (start-up cost)
    from ..controls import ControlsReport, ControlSuite

COMPARE_SCHEMA_VERSION = 1
REPORT_FILE = "comparison.json"
MANIFEST = "comparison_manifest.json"
TRANSITIONS: tuple[str, ...] = ("fixed", "broken", "still_wrong", "still_right", "incomplete")
"""Case transitions, in report order: ``fixed`` (wrong -> aligned), ``broken`` (aligned ->
wrong), ``still_wrong`` (not aligned either time: wrong, abstaining or an evaluator error),
``still_right`` and ``incomplete`` (no result from one of them)."""
CATEGORIES: tuple[str, ...] = ("pass", "fail", "abstain", "other", "error", "missing")
"""Verdict categories of the pass/fail/abstain matrix."""
_RISK_ORDER = {"critical": 0, "high": 1, "medium": 2, "low": 3}


class BudgetInsufficient(WorkbenchError):
    """The budget cannot cover both candidates: nothing was started."""


class CandidateSide(_Model):
    """One side of the comparison."""

    label: str
    """``name@version``."""
    fingerprint: str
    """The judge fingerprint."""
    labels: list[str]
    """The candidate's label vocabulary."""
    run_dir: str
    """The run directory of its partition run."""
    run_id: str | None
    """Its run id."""
    reused: bool
    """True when an existing run was reused (``--old-run``/``--new-run``), not run here."""
    status: str | None
    """The run's status: ``complete`` or ``incomplete``."""
    cost_usd: float | None
    """Spend recorded in the run directory."""
    verdicts: int
    """Cases with a verdict."""
    errors: int
    """Cases whose last attempt is an evaluator error."""
    missing: int
    """Cases without any result."""


class RateDelta(_Model):
    """One error rate under both versions and their paired difference."""

    old: Rate
    """The old version's rate (its own decided cases) with a 95% Wilson interval."""
    new: Rate
    """The new version's rate, likewise."""
    paired_n: int
    """Cases decided (pass or fail) by both, the denominator of the difference."""
    delta: float | None
    """New rate minus old rate over the paired cases (negative: fewer errors)."""
    ci95_low: float | None
    """Lower bound of the 95% Tango score interval of the paired difference."""
    ci95_high: float | None
    """Upper bound of it."""


class McNemar(_Model):
    """Correct vs not, paired by case, over cases where both versions gave a verdict."""

    paired: int
    """Cases with a verdict from both."""
    both_right: int
    """Aligned under both."""
    old_right_new_wrong: int
    """Aligned under the old version only (broken)."""
    old_wrong_new_right: int
    """Aligned under the new version only (fixed)."""
    both_wrong: int
    """Aligned under neither."""
    p_value: float
    """Exact (binomial) two-sided McNemar p-value; 1.0 without discordant pairs."""


class SliceComparison(_Model):
    """Transitions and paired figures for one slice (or ``(all)``)."""

    slice: str
    """The slice, or ``(all)``."""
    risk: str | None
    """Its risk level."""
    cases: int
    """Cases in the slice."""
    transitions: dict[str, int]
    """Counts per transition (:data:`TRANSITIONS`). Fixes are never netted against breakages."""
    verdict_changed: int
    """Cases whose verdict (label, or error vs verdict) differs between the versions."""
    needs_review: int
    """Changed verdicts in a critical slice: each needs evidence-based review."""
    false_pass: RateDelta
    """False passes / human-fail cases decided; paired over cases both decided."""
    false_fail: RateDelta
    """False fails / human-pass cases decided; paired likewise."""
    mcnemar: McNemar
    """The paired test."""


class CaseTransition(_Model):
    """One case under both versions."""

    case_id: str
    """The case."""
    slice: str
    """Its slice."""
    risk: str | None
    """The slice's risk."""
    human_label: str
    """The adjudicated label."""
    old_label: str | None
    """The old verdict, mapped into the new vocabulary (None: error or missing)."""
    old_label_raw: str | None
    """The old verdict as recorded, when a mapping changed it."""
    new_label: str | None
    """The new verdict."""
    old_class: str
    """aligned, false_pass, false_fail, disagreement, error or missing."""
    new_class: str
    """The same for the new version."""
    old_category: str
    """pass, fail, abstain, other, error or missing."""
    new_category: str
    """Likewise."""
    transition: str
    """One of :data:`TRANSITIONS`."""
    verdict_changed: bool
    """The verdict differs."""
    needs_review: bool
    """A changed verdict in a critical slice."""


class ControlComparison(_Model):
    """One control under both versions."""

    control_id: str
    """The control."""
    role: str
    """Its role."""
    expected: str
    """The label humans expect."""
    old_verdict: str | None
    """The old version's verdict (mapped), or None."""
    old_status: str
    """passed, failed or incomplete."""
    new_verdict: str | None
    """The new version's verdict."""
    new_status: str
    """passed, failed or incomplete."""
    changed: bool
    """The status differs."""


class ControlsSideBySide(_Model):
    """The control suite run on both versions before the partition."""

    suite: str
    """``name@version`` of the suite."""
    suite_sha256: str
    """Its file's sha256."""
    old_status: str
    """The old version's overall control status."""
    new_status: str
    """The new version's."""
    roles: list[dict[str, Any]]
    """Per role: ``{role, old, new}`` statuses."""
    controls: list[ControlComparison]
    """Every control."""
    old_run_dir: str
    """The old version's controls run directory."""
    new_run_dir: str
    """The new version's."""


class MappingRef(_Model):
    """The reviewed label mapping used."""

    path: str
    """The file."""
    sha256: str
    """sha256 of its bytes."""
    approver: str
    """Who approved it."""
    approved: str
    """When."""
    mapping: dict[str, str]
    """old -> new."""


class BudgetLine(_Model):
    """The paired-run budget."""

    budget_usd: float | None
    """The limit over every run of the comparison (None: none)."""
    needed_usd: float
    """Recorded spend plus the reservations of the calls still to make, at the start."""
    estimates: list[RunEstimate]
    """Per planned run."""
    spent_usd: float
    """Spend recorded in the comparison's run directories at the end."""


class ComparisonReport(_Model):
    """The outcome of ``workbench compare`` (``comparison.json``)."""

    schema_version: int = COMPARE_SCHEMA_VERSION
    """Report format version."""
    kind: Literal["workbench.compare"] = "workbench.compare"
    """Report kind."""
    comparison_id: str
    """Id of this comparison (its manifest's)."""
    created_at: datetime
    """When the report was computed (UTC)."""
    old: CandidateSide
    """The old version."""
    new: CandidateSide
    """The new version."""
    dataset_sha256: str
    """The gold both were run on."""
    rubric_version: str
    """Its rubric version."""
    gold_release: str | None
    """Its frozen release, if any."""
    partition: str
    """development or calibration."""
    cases_sha256: str
    """sha256 of the shared case manifest (case ids, response hashes, per-case gold hashes)."""
    status: Literal["complete", "incomplete"]
    """``incomplete`` when a run stopped early or a case lacks a result from either version."""
    incomplete_reasons: list[str] = Field(default_factory=list)
    """Why it is incomplete."""
    label_mapping: MappingRef | None = None
    """The reviewed mapping applied to the old verdicts, with its hash."""
    declared_parent: str | None = None
    """The new version's declared parent."""
    declared_changes: list[str] | None = None
    """The new version's declared changes."""
    actual_changes: list[str]
    """What actually differs between the two identities."""
    parity: RequestParity
    """The rendered requests compared case by case."""
    warnings: list[str] = Field(default_factory=list)
    """More changed than declared, parent mismatch, and other things to read."""
    controls: ControlsSideBySide | None = None
    """The controls on both versions, or None when none were run."""
    budget: BudgetLine
    """The paired-run budget."""
    overall: SliceComparison
    """Every case."""
    slices: list[SliceComparison]
    """Per slice, critical first."""
    matrix: dict[str, dict[str, int]]
    """Old verdict category -> new verdict category -> cases (:data:`CATEGORIES`)."""
    cases: list[CaseTransition]
    """Every case."""
    review: list[str]
    """Case ids of changed verdicts in critical slices: each needs evidence-based review."""

    def frame(self) -> Any:
        """The case transitions as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame(
            [c.model_dump() for c in self.cases], columns=list(CaseTransition.model_fields)
        )

    def slices_frame(self) -> Any:
        """Per slice: transitions, changed verdicts, review, rates and their paired difference."""
        import pandas as pd

        rows = []
        for s in [*self.slices, self.overall]:
            row: dict[str, Any] = {
                "slice": s.slice,
                "risk": s.risk,
                "cases": s.cases,
                **s.transitions,
                "verdict_changed": s.verdict_changed,
                "needs_review": s.needs_review,
            }
            for name, d in (("false_pass", s.false_pass), ("false_fail", s.false_fail)):
                row[f"{name}_old"] = d.old.rate
                row[f"{name}_new"] = d.new.rate
                row[f"{name}_delta"] = d.delta
                row[f"{name}_delta_ci95"] = (
                    None if d.delta is None else f"[{d.ci95_low:+.3f}, {d.ci95_high:+.3f}]"
                )
            row["p_mcnemar"] = s.mcnemar.p_value
            rows.append(row)
        return pd.DataFrame(rows)

    def matrix_frame(self) -> Any:
        """The pass/fail/abstain matrix (rows: old, columns: new), categories with cases only."""
        import pandas as pd

        used = [
            c
            for c in CATEGORIES
            if any(self.matrix.get(c, {}).values())
            or any(self.matrix.get(r, {}).get(c, 0) for r in CATEGORIES)
        ]
        return pd.DataFrame(
            [[self.matrix.get(r, {}).get(c, 0) for c in used] for r in used],
            index=[f"old {r}" for r in used],
            columns=[f"new {c}" for c in used],
        )

    def controls_frame(self) -> Any:
        """The controls side by side."""
        import pandas as pd

        rows = [c.model_dump() for c in self.controls.controls] if self.controls else []
        return pd.DataFrame(rows, columns=list(ControlComparison.model_fields))


@dataclass(frozen=True)
class _Planned:
    name: str
    judge: Judge
    items: list[WorkItem]
    out: Path
    kind: Literal["controls", "partition"]


def default_out(old: str, new: str, partition: str) -> Path:
    """``runs/compare/<old>__<new>/<partition>``."""
    return Path("runs") / "compare" / f"{old}__{new}" / partition


def _as_judge(candidate: Judge | str | Path) -> Judge:
    return candidate if not isinstance(candidate, str | Path) else load_candidate(candidate)


def _category(case: JoinedCase, rubric: Any) -> str:
    if case.outcome != "verdict":
        return case.outcome
    assert case.judge_label is not None
    if case.judge_label in rubric.abstain_labels:
        return "abstain"
    view = rubric.pass_fail(case.judge_label)
    return view if view is not None else "other"


def _transition(old: JoinedCase, new: JoinedCase) -> str:
    if old.outcome == "missing" or new.outcome == "missing":
        return "incomplete"
    before, after = old.error_class == "aligned", new.error_class == "aligned"
    if before and after:
        return "still_right"
    if after:
        return "fixed"
    if before:
        return "broken"
    return "still_wrong"


def _reused_problems(
    run_dir: Path, judge: Judge, dataset: GoldDataset, partition: str, cases: list[Any], side: str
) -> list[Problem]:
    """Why an existing run directory cannot stand for ``judge`` on these cases."""
    loc = str(run_dir)
    manifest_path = run_dir / MANIFEST_FILE
    if not manifest_path.is_file() or not (run_dir / RESULTS_FILE).is_file():
        return [
            Problem(
                location=loc,
                code="run_missing",
                message=f"--{side}-run is not a run directory (manifest.json and results.jsonl)",
                fix=(
                    "point at a directory written by `workbench run`, or drop the option to run the"
                    " candidate here"
                ),
            )
        ]
    try:
        manifest = RunManifest.model_validate(read_json_file(manifest_path))
    except (OSError, ValueError) as exc:
        return [
            Problem(
                location=str(manifest_path),
                code="manifest_invalid",
                message=f"the run manifest cannot be read ({type(exc).__name__})",
                fix="restore the manifest.json the run wrote",
            )
        ]
    problems: list[Problem] = []
    if manifest.judge_fingerprint != judge.identity.fingerprint():
        problems.append(
            Problem(
                location=str(manifest_path),
                code="run_other_candidate",
                message=(
                    f"the run is of judge {manifest.judge.name}@{manifest.judge.version}"
                    f" ({manifest.judge_fingerprint[:12]}), not {judge.spec.label}"
                    f" ({judge.identity.fingerprint()[:12]})"
                ),
                fix=(
                    f"give --{side}-run a run of {judge.spec.label} as it is now, or drop the"
                    " option"
                ),
            )
        )
    if (
        manifest.dataset_sha256 != dataset.sha256
        or manifest.rubric_version != dataset.rubric.version
    ):
        problems.append(
            Problem(
                location=str(manifest_path),
                code="run_other_gold",
                message=(
                    f"the run was made on dataset {manifest.dataset_sha256[:12]} (rubric"
                    f" {manifest.rubric_version}), the gold given is {dataset.sha256[:12]} (rubric"
                    f" {dataset.rubric.version})"
                ),
                fix=(
                    "both versions must be compared on the same frozen gold: re-run on this gold"
                    " (drop the option)"
                ),
            )
        )
    if manifest.partition != partition:
        problems.append(
            Problem(
                location=str(manifest_path),
                code="run_other_partition",
                message=(
                    f"the run is of partition {manifest.partition!r}, the comparison of"
                    f" {partition!r}"
                ),
                fix=f"give a run of {partition}",
            )
        )
    want = [(c.case_id, c.response_hash) for c in cases]
    have = [(c.case_id, c.response_hash) for c in manifest.cases]
    if manifest.partition == partition and sorted(want) != sorted(have):
        missing = sorted(set(want) - set(have))
        extra = sorted(set(have) - set(want))
        problems.append(
            Problem(
                location=str(manifest_path),
                code="run_other_cases",
                message=(
                    f"the run's manifest holds other cases than the partition ({len(missing)}"
                    f" missing, {len(extra)} extra, e.g."
                    f" {', '.join(c for c, _ in (missing or extra)[:3])})"
                ),
                fix="both versions must judge the same frozen cases: re-run (drop the option)",
            )
        )
    summary_path = run_dir / SUMMARY_FILE
    status = None
    if summary_path.is_file():
        try:
            data = read_json_file(summary_path)
            status = data.get("status") if isinstance(data, dict) else None
        except (OSError, ValueError):
            status = None
    if status != "complete":
        problems.append(
            Problem(
                location=loc,
                code="run_incomplete",
                message=(
                    f"the run is {status or 'of unknown status (no run.json)'}: reusing it would"
                    " compare on fewer cases"
                ),
                fix=(
                    f"resume it first (`workbench run ... --out {run_dir}`), or drop --{side}-run"
                    " to run here"
                ),
            )
        )
    return problems


def _read_side(path: Path, mapping: LoadedMapping | None) -> tuple[list[ResultLine], Counter[str]]:
    lines = read_results(path)
    observed = Counter(line.result.value for line in lines if line.result.value is not None)
    if mapping is None:
        return lines, observed
    mapped = [
        (
            ResultLine(
                line.line,
                line.result.model_copy(update={"value": mapping.apply(line.result.value)}),
            )
            if line.result.value is not None and line.result.value in mapping.mapping.mapping
            else line
        )
        for line in lines
    ]
    return mapped, observed


def _rate_delta(pairs: list[tuple[str | None, str | None]], event: str) -> RateDelta:
    """``pairs``: (old pass/fail view, new pass/fail view) of the cases with the human label in
    question."""
    old_dec = [o for o, _ in pairs if o is not None]
    new_dec = [n for _, n in pairs if n is not None]
    both = [(o, n) for o, n in pairs if o is not None and n is not None]
    a = sum(1 for o, n in both if o == event and n == event)
    b = sum(1 for o, n in both if o == event and n != event)
    c = sum(1 for o, n in both if o != event and n == event)
    d = len(both) - a - b - c
    delta, low, high = paired_rate_difference(a, b, c, d)
    return RateDelta(
        old=wilson_rate(sum(1 for o in old_dec if o == event), len(old_dec)),
        new=wilson_rate(sum(1 for n in new_dec if n == event), len(new_dec)),
        paired_n=len(both),
        delta=delta,
        ci95_low=low,
        ci95_high=high,
    )


def _slice_comparison(
    name: str,
    risk: str | None,
    rows: list[tuple[JoinedCase, JoinedCase, CaseTransition]],
    rubric: Any,
) -> SliceComparison:
    counts = Counter(t.transition for _, _, t in rows)
    fails: list[tuple[str | None, str | None]] = []
    passes: list[tuple[str | None, str | None]] = []
    for o, n, _ in rows:
        human = rubric.pass_fail(o.human_label) if o.human_label in rubric.labels else None
        views = (
            rubric.pass_fail(o.judge_label) if o.outcome == "verdict" else None,
            rubric.pass_fail(n.judge_label) if n.outcome == "verdict" else None,
        )
        if human == "fail":
            fails.append(views)
        elif human == "pass":
            passes.append(views)
    verdicts = [(o, n) for o, n, _ in rows if o.outcome == "verdict" and n.outcome == "verdict"]
    rr = sum(1 for o, n in verdicts if o.error_class == "aligned" and n.error_class == "aligned")
    rw = sum(1 for o, n in verdicts if o.error_class == "aligned" and n.error_class != "aligned")
    wr = sum(1 for o, n in verdicts if o.error_class != "aligned" and n.error_class == "aligned")
    ww = len(verdicts) - rr - rw - wr
    return SliceComparison(
        slice=name,
        risk=risk,
        cases=len(rows),
        transitions={t: counts.get(t, 0) for t in TRANSITIONS},
        verdict_changed=sum(1 for _, _, t in rows if t.verdict_changed),
        needs_review=sum(1 for _, _, t in rows if t.needs_review),
        false_pass=_rate_delta(fails, "pass"),
        false_fail=_rate_delta(passes, "fail"),
        mcnemar=McNemar(
            paired=len(verdicts),
            both_right=rr,
            old_right_new_wrong=rw,
            old_wrong_new_right=wr,
            both_wrong=ww,
            p_value=exact_mcnemar(rw, wr, rr, ww),
        ),
    )


def _controls_side_by_side(
    suite: ControlSuite,
    old_report: ControlsReport,
    new_report: ControlsReport,
    old_dir: Path,
    new_dir: Path,
) -> ControlsSideBySide:
    new_rows = {r.control_id: r for r in new_report.controls}
    rows = []
    for o in old_report.controls:
        n = new_rows[o.control_id]
        rows.append(
            ControlComparison(
                control_id=o.control_id,
                role=o.role,
                expected=o.expected,
                old_verdict=o.verdict,
                old_status=o.status,
                new_verdict=n.verdict,
                new_status=n.status,
                changed=o.status != n.status,
            )
        )
    new_roles = {r.role: r.status for r in new_report.roles}
    roles = [
        {"role": r.role, "old": r.status, "new": new_roles.get(r.role)} for r in old_report.roles
    ]
    return ControlsSideBySide(
        suite=f"{suite.name}@{suite.version}",
        suite_sha256=suite.sha256,
        old_status=old_report.status,
        new_status=new_report.status,
        roles=roles,
        controls=rows,
        old_run_dir=str(old_dir),
        new_run_dir=str(new_dir),
    )


def _freeze(out: Path, content: dict[str, Any]) -> str:
    """Write the comparison manifest, or check it against the one there; returns the comparison
    id."""
    path = out / MANIFEST
    if path.exists():
        try:
            existing = read_json_file(path)
        except (OSError, ValueError):
            raise WorkbenchError(
                "unreadable comparison manifest",
                [
                    Problem(
                        location=str(path),
                        code="manifest_invalid",
                        message="the comparison manifest cannot be read",
                        fix="restore it, or compare into a new --out",
                    )
                ],
            ) from None
        old_content = {
            k: v for k, v in existing.items() if k not in ("comparison_id", "created_at")
        }
        if old_content != content:
            changed = sorted(
                k for k in set(old_content) | set(content) if old_content.get(k) != content.get(k)
            )
            raise WorkbenchError(
                "refusing to continue: the comparison changed",
                [
                    Problem(
                        location=str(path),
                        code="comparison_manifest_changed",
                        message=(
                            "this directory holds a comparison with a different"
                            f" {', '.join(changed)}"
                        ),
                        fix="compare into a new --out; the evidence of the old comparison is kept",
                    )
                ],
            )
        return str(existing.get("comparison_id"))
    comparison_id = f"cmp-{uuid.uuid4().hex[:12]}"
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(
        path,
        {"comparison_id": comparison_id, "created_at": datetime.now(UTC).isoformat(), **content},
    )
    return comparison_id


async def compare_candidates(
    old: Judge | str | Path,
    new: Judge | str | Path,
    gold: GoldDataset | str | Path,
    partition: str,
    out: str | Path,
    *,
    old_run: str | Path | None = None,
    new_run: str | Path | None = None,
    label_mapping: LoadedMapping | str | Path | None = None,
    controls: ControlSuite | str | Path | None = None,
    budget_usd: float | None = None,
    concurrency: int = 8,
    cache_dir: str | Path | None | Literal[False] = None,
    progress: bool = True,
) -> ComparisonReport:
    """Compare two judge versions on one development or calibration partition (module doc).

    Raises :class:`WorkbenchError` for invalid input (held-out, unmapped labels, mismatched
    reused runs, a changed comparison directory) and :class:`BudgetInsufficient` when the
    budget cannot cover both candidates; in both cases before any call.
    """
    check_run_arguments(concurrency=concurrency, budget_usd=budget_usd)
    refuse_held_out(partition, where="compare --partition")
    if partition not in ("development", "calibration"):
        raise WorkbenchError(
            "invalid partition",
            [
                Problem(
                    location="--partition",
                    code="partition_invalid",
                    message=f"unknown partition {partition!r}",
                    fix="compare on development or calibration",
                )
            ],
        )
    dataset = gold if isinstance(gold, GoldDataset) else load_dataset(gold)
    old_judge, new_judge = _as_judge(old), _as_judge(new)
    rubric = dataset.rubric
    out_dir = Path(out)
    cases = dataset.partition(partition)
    if not cases:
        raise WorkbenchError(
            "nothing to compare",
            [
                Problem(
                    location=str(dataset.gold_path),
                    code="empty_partition",
                    message=f"partition {partition!r} has no cases",
                    fix="choose a partition that has cases",
                )
            ],
        )
    mapping = (
        load_label_mapping(label_mapping)
        if isinstance(label_mapping, str | Path)
        else label_mapping
    )
    suite: ControlSuite | None = None
    if controls is not None:
        from ..controls import load_suite

        suite = controls if not isinstance(controls, str | Path) else load_suite(controls)

    problems: list[Problem] = []
    outside = [label for label in new_judge.spec.labels if label not in rubric.labels]
    if outside:
        problems.append(
            Problem(
                location=new_judge.spec.label,
                code="labels_outside_rubric",
                message=(
                    f"{new_judge.spec.label} may return {outside}, which rubric {rubric.version}"
                    " does not have"
                ),
                fix=(
                    "the new version's labels must be the rubric's; a renamed rubric needs a new"
                    " gold release"
                ),
            )
        )
    new_vocabulary = list(rubric.labels)  # verdicts are compared in the gold's vocabulary
    problems += mapping_problems(
        mapping,
        old_label=old_judge.spec.label,
        new_label=new_judge.spec.label,
        old_labels=list(old_judge.spec.labels),
        new_labels=new_vocabulary,
        location=old_judge.spec.label,
    )
    reuse = {"old": Path(old_run) if old_run else None, "new": Path(new_run) if new_run else None}
    for side, judge in (("old", old_judge), ("new", new_judge)):
        run_dir = reuse[side]
        if run_dir is not None:
            problems += _reused_problems(run_dir, judge, dataset, partition, cases, side)
    if problems:
        raise WorkbenchError(
            f"refusing to compare {old_judge.spec.label} with {new_judge.spec.label}:"
            f" {len(problems)} problem(s)",
            problems,
        )

    actual = judge_changes(old_judge, new_judge)
    parity = request_parity(old_judge, new_judge, cases)
    warnings = parity_warnings(new_judge, old_judge, actual, parity)
    if old_judge.identity.fingerprint() == new_judge.identity.fingerprint():
        warnings.append(
            "both sides are the same judge (same fingerprint): every difference is run-to-run"
            " variation"
        )

    items = [WorkItem(c.case_id, c.response_hash, 0, JudgeInput.from_case(c)) for c in cases]
    planned: list[_Planned] = []
    if suite is not None:
        from ..controls import work_items

        for side, judge in (("old", old_judge), ("new", new_judge)):
            planned.append(
                _Planned(
                    f"controls {side}",
                    judge,
                    work_items(suite),
                    out_dir / "controls" / side,
                    "controls",
                )
            )
    for side, judge in (("old", old_judge), ("new", new_judge)):
        if reuse[side] is None:
            planned.append(_Planned(side, judge, items, out_dir / side, "partition"))
    estimates = [
        estimate_run(p.name, p.judge, p.items, p.out, cache_dir=cache_dir) for p in planned
    ]
    needed = sum(e.needed_usd for e in estimates)
    if budget_usd is not None and needed > budget_usd + 1e-12:
        detail = "; ".join(
            f"{e.run} ({e.judge}): {e.calls} call(s) reserving ${e.reservation_usd:.4f}"
            + (f" + ${e.recorded_usd:.4f} recorded" if e.recorded_usd else "")
            for e in estimates
        )
        raise BudgetInsufficient(
            "the budget does not cover both candidates: nothing was started",
            [
                Problem(
                    location="--budget-usd",
                    code="budget_insufficient",
                    message=(
                        f"comparing {old_judge.spec.label} with {new_judge.spec.label} on"
                        f" {len(cases)} {partition} case(s) needs up to ${needed:.4f} (the engine's"
                        " reservations: input estimate + full output cap, one attempt per call),"
                        f" the budget is ${budget_usd:.4f}: {detail}"
                    ),
                    fix=(
                        f"give --budget-usd {needed:.4f} or more; comparing on fewer cases is a"
                        " scope change, not a saving"
                    ),
                )
            ],
        )

    content = {
        "old_fingerprint": old_judge.identity.fingerprint(),
        "new_fingerprint": new_judge.identity.fingerprint(),
        "old": old_judge.spec.label,
        "new": new_judge.spec.label,
        "dataset_sha256": dataset.sha256,
        "rubric_version": rubric.version,
        "partition": partition,
        "cases": [[c.case_id, c.response_hash] for c in cases],
        "label_mapping_sha256": mapping.sha256 if mapping else None,
        "controls_sha256": suite.sha256 if suite is not None else None,
    }
    comparison_id = _freeze(out_dir, content)

    summaries: dict[str, RunSummary] = {}
    control_reports: dict[str, ControlsReport] = {}
    incomplete: list[str] = []
    for index, plan in enumerate(planned):
        limit = None
        if budget_usd is not None:
            others = sum(
                (summaries[p.name].cost_usd if p.name in summaries else estimates[i].recorded_usd)
                for i, p in enumerate(planned)
                if i != index
            )
            later = sum(estimates[i].reservation_usd for i in range(index + 1, len(planned)))
            limit = max(0.0, budget_usd - others - later)
        if plan.kind == "controls":
            from ..controls import run_controls

            assert suite is not None  # controls runs are planned only with a suite
            controls_report = await run_controls(
                plan.judge,
                suite,
                plan.out,
                concurrency=concurrency,
                budget_usd=limit,
                cache_dir=cache_dir,
                progress=progress,
            )
            assert controls_report.run is not None
            summaries[plan.name] = controls_report.run
            control_reports[plan.name] = controls_report
        else:
            summaries[plan.name] = await run_candidate(
                plan.judge,
                dataset,
                partition,
                plan.out,
                RunOptions(
                    concurrency=concurrency,
                    budget_usd=limit,
                    cache_dir=cache_dir,
                    progress=progress,
                ),
            )
        summary = summaries[plan.name]
        if summary.status != "complete":
            incomplete.append(
                f"the {plan.name} run of {plan.judge.spec.label} is incomplete"
                + (f" ({summary.stop_reason.replace('_', ' ')})" if summary.stop_reason else "")
                + f": {len(summary.unrun)} unrun, {len(summary.pending_retry)} mid-retry"
            )

    paths = {side: (reuse[side] or out_dir / side) / RESULTS_FILE for side in ("old", "new")}
    old_lines, observed = _read_side(paths["old"], mapping)
    control_observed: set[str] = set()
    if suite is not None:
        from ..controls._run import _outcomes

        control_observed = {
            o.verdict
            for o in _outcomes(
                suite, out_dir / "controls" / "old" / RESULTS_FILE, old_judge.identity.fingerprint()
            ).values()
            if o.verdict is not None
        }
    late = mapping_problems(
        mapping,
        old_label=old_judge.spec.label,
        new_label=new_judge.spec.label,
        old_labels=list(old_judge.spec.labels),
        new_labels=new_vocabulary,
        observed=set(observed) | control_observed,
        location=str(paths["old"]),
    )
    if late:
        raise WorkbenchError("refusing to compare: the old verdicts hold unmapped labels", late)
    joins: dict[str, Join] = {}
    manifests: dict[str, RunManifest | None] = {}
    for side, lines in (("old", old_lines), ("new", read_results(paths["new"]))):
        manifests[side] = read_run_manifest(paths[side])
        joins[side] = align_results(
            dataset, lines, partition=partition, manifest=manifests[side], location=str(paths[side])
        )
    mo, mn = manifests["old"], manifests["new"]
    if (
        mo is None
        or mn is None
        or mo.dataset_sha256 != mn.dataset_sha256
        or mo.partition != mn.partition
        or [c.model_dump() for c in mo.cases] != [c.model_dump() for c in mn.cases]
    ):
        raise WorkbenchError(
            "refusing to compare: the two runs did not judge the same frozen manifest",
            [
                Problem(
                    location=str(out_dir),
                    code="manifests_differ",
                    message=(
                        "the old and new runs' manifests differ in dataset, partition or cases"
                        " (ids, response hashes, gold hashes)"
                    ),
                    fix=(
                        "run both versions on the same gold and partition (compare runs them for"
                        " you)"
                    ),
                )
            ],
        )

    if suite is not None:
        old_report = _remap_controls(
            suite, control_reports["controls old"], out_dir / "controls" / "old", old_judge, mapping
        )
        side_by_side = _controls_side_by_side(
            suite,
            old_report,
            control_reports["controls new"],
            out_dir / "controls" / "old",
            out_dir / "controls" / "new",
        )
    else:
        side_by_side = None

    report = _build_report(
        comparison_id=comparison_id,
        dataset=dataset,
        partition=partition,
        joins=joins,
        judges=(old_judge, new_judge),
        paths=paths,
        reuse=reuse,
        summaries=summaries,
        manifests=(mo, mn),
        mapping=mapping,
        raw_old=(
            {line.result.case_id: line.result.value for line in read_results(paths["old"])}
            if mapping
            else {}
        ),
        actual=actual,
        parity=parity,
        warnings=warnings,
        controls=side_by_side,
        budget=BudgetLine(
            budget_usd=budget_usd,
            needed_usd=needed,
            estimates=estimates,
            spent_usd=sum(s.cost_usd for s in summaries.values()),
        ),
        incomplete=incomplete,
    )
    atomic_write_json(out_dir / REPORT_FILE, report.model_dump(mode="json"))
    return report


def _remap_controls(
    suite: ControlSuite,
    report: ControlsReport,
    run_dir: Path,
    judge: Judge,
    mapping: LoadedMapping | None,
) -> ControlsReport:
    """The old version's control report with its verdicts mapped into the new vocabulary."""
    if mapping is None:
        return report
    from ..controls import ControlOutcome, evaluate_controls
    from ..controls._run import _outcomes

    outcomes = _outcomes(suite, run_dir / RESULTS_FILE, judge.identity.fingerprint())
    mapped = {
        cid: (
            ControlOutcome(verdict=mapping.apply(o.verdict), reason=o.reason, error=o.error)
            if o.verdict is not None
            else o
        )
        for cid, o in outcomes.items()
    }
    return evaluate_controls(suite, mapped, judge=judge.identity, run=report.run)


def _side(
    judge: Judge,
    run_dir: Path,
    reused: bool,
    summary: RunSummary | None,
    manifest: RunManifest | None,
    join: Join,
) -> CandidateSide:
    if summary is None and (run_dir / SUMMARY_FILE).is_file():
        summary = RunSummary.model_validate(read_json_file(run_dir / SUMMARY_FILE))
    outcomes = Counter(c.outcome for c in join.cases)
    return CandidateSide(
        label=judge.spec.label,
        fingerprint=judge.identity.fingerprint(),
        labels=list(judge.spec.labels),
        run_dir=str(run_dir),
        run_id=manifest.run_id if manifest else None,
        reused=reused,
        status=summary.status if summary else None,
        cost_usd=summary.cost_usd if summary else None,
        verdicts=outcomes.get("verdict", 0),
        errors=outcomes.get("error", 0),
        missing=outcomes.get("missing", 0),
    )


def _build_report(
    *,
    comparison_id: str,
    dataset: GoldDataset,
    partition: str,
    joins: dict[str, Join],
    judges: tuple[Judge, Judge],
    paths: dict[str, Path],
    reuse: dict[str, Path | None],
    summaries: dict[str, RunSummary],
    manifests: tuple[RunManifest | None, RunManifest | None],
    mapping: LoadedMapping | None,
    raw_old: dict[str, str | None],
    actual: list[str],
    parity: RequestParity,
    warnings: list[str],
    controls: ControlsSideBySide | None,
    budget: BudgetLine,
    incomplete: list[str],
) -> ComparisonReport:
    rubric = dataset.rubric
    old_judge, new_judge = judges
    new_of = {c.case_id: c for c in joins["new"].cases}
    rows: list[tuple[JoinedCase, JoinedCase, CaseTransition]] = []
    matrix: dict[str, dict[str, int]] = {r: dict.fromkeys(CATEGORIES, 0) for r in CATEGORIES}
    for o in joins["old"].cases:
        n = new_of[o.case_id]
        risk = rubric.risk_of(o.slice)
        changed = (o.outcome, o.judge_label) != (n.outcome, n.judge_label)
        oc, nc = _category(o, rubric), _category(n, rubric)
        matrix[oc][nc] += 1
        raw = raw_old.get(o.case_id)
        t = CaseTransition(
            case_id=o.case_id,
            slice=o.slice,
            risk=risk,
            human_label=o.human_label,
            old_label=o.judge_label,
            old_label_raw=raw if raw is not None and raw != o.judge_label else None,
            new_label=n.judge_label,
            old_class=o.error_class,
            new_class=n.error_class,
            old_category=oc,
            new_category=nc,
            transition=_transition(o, n),
            verdict_changed=changed,
            needs_review=changed and risk == "critical",
        )
        rows.append((o, n, t))
    missing = sum(1 for _, _, t in rows if t.transition == "incomplete")
    if missing:
        incomplete = [*incomplete, f"{missing} case(s) lack a result from one of the versions"]
    by_slice: dict[str, list[tuple[JoinedCase, JoinedCase, CaseTransition]]] = {}
    for row in rows:
        by_slice.setdefault(row[0].slice, []).append(row)
    slices = [
        _slice_comparison(name, rubric.risk_of(name), by_slice[name], rubric)
        for name in sorted(by_slice, key=lambda s: (_RISK_ORDER.get(rubric.risk_of(s) or "", 9), s))
    ]
    mo, mn = manifests
    assert mo is not None
    cases_sha = sha256_json([c.model_dump(mode="json") for c in mo.cases])
    m = mapping.mapping if mapping else None
    return ComparisonReport(
        comparison_id=comparison_id,
        created_at=datetime.now(UTC),
        old=_side(
            old_judge,
            paths["old"].parent,
            reuse["old"] is not None,
            summaries.get("old"),
            mo,
            joins["old"],
        ),
        new=_side(
            new_judge,
            paths["new"].parent,
            reuse["new"] is not None,
            summaries.get("new"),
            mn,
            joins["new"],
        ),
        dataset_sha256=dataset.sha256,
        rubric_version=rubric.version,
        gold_release=dataset.release.release_id if dataset.release else None,
        partition=partition,
        cases_sha256=cases_sha,
        status="incomplete" if incomplete else "complete",
        incomplete_reasons=incomplete,
        label_mapping=(
            MappingRef(
                path=mapping.path,
                sha256=mapping.sha256,
                approver=m.approver,
                approved=m.approved.isoformat(),
                mapping=dict(m.mapping),
            )
            if mapping and m
            else None
        ),
        declared_parent=new_judge.spec.parent,
        declared_changes=new_judge.spec.changes,
        actual_changes=actual,
        parity=parity,
        warnings=warnings,
        controls=controls,
        budget=budget,
        overall=_slice_comparison("(all)", None, rows, rubric),
        slices=slices,
        matrix={
            r: {c: v for c, v in cols.items() if v}
            for r, cols in matrix.items()
            if any(cols.values())
        },
        cases=[t for _, _, t in rows],
        review=[t.case_id for _, _, t in rows if t.needs_review],
    )


def compare_candidates_sync(*args: Any, **kwargs: Any) -> ComparisonReport:
    """:func:`compare_candidates` for scripts and the CLI (not inside a running event loop)."""
    return asyncio.run(compare_candidates(*args, **kwargs))


def format_comparison(report: ComparisonReport) -> str:
    """A plain-text account for the terminal."""
    o, n = report.old, report.new
    lines = [
        f"compare {o.label} ({o.fingerprint[:12]}) -> {n.label} ({n.fingerprint[:12]}) on"
        f" {report.partition} ({report.overall.cases} cases, dataset {report.dataset_sha256[:12]},"
        f" rubric {report.rubric_version}): {report.status.upper()}"
    ]
    for reason in report.incomplete_reasons:
        lines.append(f"  incomplete: {reason}")
    if report.label_mapping:
        lm = report.label_mapping
        lines.append(
            f"label mapping {lm.path} (sha256 {lm.sha256[:12]}, approved by {lm.approver} on"
            f" {lm.approved}): " + ", ".join(f"{a}->{b}" for a, b in sorted(lm.mapping.items()))
        )
    declared = (
        f"declares parent {report.declared_parent}, changes {report.declared_changes}"
        if report.declared_parent
        else "declares no parent/changes"
    )
    lines.append(f"changes: {', '.join(report.actual_changes) or 'none'} ({n.label} {declared})")
    p = report.parity
    lines.append(
        f"prompt parity: {p.differing_cases} of {p.cases} rendered requests differ"
        + (" in " + ", ".join(f"{k.key} ({k.cases})" for k in p.keys) if p.keys else "")
    )
    if p.first_diff:
        lines.append(f"first difference (case {p.first_case_id}):")
        lines += ["    " + line for line in p.first_diff.splitlines()[:40]]
    for w in report.warnings:
        lines.append(f"warning: {w}")
    if report.controls:
        c = report.controls
        lines.append(f"controls {c.suite}: old {c.old_status.upper()}, new {c.new_status.upper()}")
        for r in c.roles:
            lines.append(f"  {r['role']:22} old {r['old']:10} new {r['new']}")
        for row in c.controls:
            if row.changed:
                lines.append(
                    f"  changed {row.control_id} ({row.role}, expected {row.expected}):"
                    f" {row.old_verdict} {row.old_status} -> {row.new_verdict} {row.new_status}"
                )
    lines.append(
        "transitions by slice (fixed / broken / still wrong / still right / incomplete; changed"
        " verdicts; needing review):"
    )
    for s in [*report.slices, report.overall]:
        t = s.transitions
        lines.append(
            f"  {s.slice:26} {(s.risk or ''):8} n={s.cases:<4} {t['fixed']:>3} / {t['broken']:>3} /"
            f" {t['still_wrong']:>3} / {t['still_right']:>3} / {t['incomplete']:>3}; changed"
            f" {s.verdict_changed}; review {s.needs_review}"
        )
    lines.append("false-pass and false-fail rates, old -> new, paired difference [95% Tango]:")
    for s in [*report.slices, report.overall]:
        parts = []
        for name, d in (("FP", s.false_pass), ("FF", s.false_fail)):
            if d.delta is None:
                parts.append(f"{name} {d.old.k}/{d.old.n} -> {d.new.k}/{d.new.n} (no paired case)")
            else:
                parts.append(
                    f"{name} {d.old.k}/{d.old.n} -> {d.new.k}/{d.new.n}, delta {d.delta:+.3f}"
                    f" [{d.ci95_low:+.3f}, {d.ci95_high:+.3f}] (n={d.paired_n})"
                )
        lines.append(f"  {s.slice:26} " + "; ".join(parts))
    mc = report.overall.mcnemar
    lines.append(
        f"McNemar (exact): old right/new wrong {mc.old_right_new_wrong}, old wrong/new right"
        f" {mc.old_wrong_new_right} of {mc.paired} paired cases: p = {mc.p_value:.4g}"
    )
    lines.append(
        "pass/fail/abstain matrix (rows old, columns new): "
        + "; ".join(
            f"{r}: " + ", ".join(f"{c} {v}" for c, v in cols.items())
            for r, cols in report.matrix.items()
        )
    )
    if report.review:
        lines.append(
            f"REVIEW: {len(report.review)} changed verdict(s) in critical slices need"
            " evidence-based review: " + ", ".join(report.review)
        )
    b = report.budget
    lines.append(
        f"cost: ${b.spent_usd:.4f}"
        + (f" of ${b.budget_usd:.4f}" if b.budget_usd is not None else "")
        + f" (estimated up to ${b.needed_usd:.4f} before starting)"
    )
    return "\n".join(lines)
