"""``workbench compare``: an old and a new judge version on the same frozen cases, every check
made before any call; transitions by slice, McNemar, paired rate differences and the changed
critical verdicts to review."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from .._args import check_run_arguments
from .._io import atomic_write_json, read_json_file, sha256_json
from .._record import Record as _Model
from ..align import Join, JoinedCase, align_results, read_run_manifest
from ..errors import Problem, WorkbenchError, problem, refusal
from ..gold import GoldDataset, load_dataset
from ..heldout import exposure_problems, held_out_content, refuse_held_out
from ..judges import Judge, JudgeInput, load_candidate
from ..outcomes import exit_code
from ..results import MANIFEST_FILE, ResultLine, RunManifest, read_results
from ..runs import (
    RESULTS_FILE,
    SUMMARY_FILE,
    RunEstimate,
    RunOptions,
    RunSummary,
    WorkItem,
    estimate_run,
    run_candidate,
)
from ..sampling import RISK_ORDER
from ..stats import (
    GroupedRate,
    Rate,
    bh_qvalues,
    clustered_rate,
    exact_mcnemar,
    paired_rate_difference,
    wilson_rate,
)
from ._mapping import LoadedMapping, load_label_mapping, mapping_problems
from ._parity import RequestParity, judge_changes, parity_warnings, request_parity

if TYPE_CHECKING:  # imported lazily at run time (start-up cost)
    from ..controls import ControlsReport, ControlSuite

COMPARE_SCHEMA_VERSION = 1
REPORT_FILE = "comparison.json"
MANIFEST = "comparison_manifest.json"
TRANSITIONS: tuple[str, ...] = ("fixed", "broken", "still_wrong", "still_right", "incomplete")
"""Case transitions, in report order (``still_wrong`` includes abstentions and errors;
``incomplete``: no result from one of them)."""
CATEGORIES: tuple[str, ...] = ("pass", "fail", "abstain", "other", "error", "missing")
"""Verdict categories of the pass/fail/abstain matrix."""


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
    old_grouped: GroupedRate | None = None
    """The old rate with the cases of one gold group as one cluster (the slices' interval), when
    a group holds more than one of its decided cases; None otherwise (Wilson's is then exact)."""
    new_grouped: GroupedRate | None = None
    """The new rate likewise."""


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
    q_value: float | None = None
    """Benjamini-Hochberg q-value over the comparison's per-slice tests (many slices, some
    p-values small by chance); None for the overall test."""


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

    @property
    def exit_code(self) -> int:
        """3 incomplete, 5 evaluator errors, 4 changed critical verdicts to review, else 0."""
        if self.status != "complete":
            return exit_code("incomplete")
        if self.old.errors or self.new.errors:
            return exit_code("evaluator_errors")
        return exit_code("review_required" if self.review else "complete")

    def errors_note(self) -> str:
        """How many cases of each version ended in evaluator errors."""
        return (
            f"evaluator errors: {self.old.errors} case(s) of {self.old.label},"
            f" {self.new.errors} of {self.new.label}: their verdicts are unknown"
        )

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
            row = s.model_dump(include={"slice", "risk", "cases"}) | s.transitions
            row |= s.model_dump(include={"verdict_changed", "needs_review"})
            for name, d in (("false_pass", s.false_pass), ("false_fail", s.false_fail)):
                ci = None if d.delta is None else f"[{d.ci95_low:+.3f}, {d.ci95_high:+.3f}]"
                row |= {f"{name}_old": d.old.rate, f"{name}_new": d.new.rate}
                row |= {f"{name}_delta": d.delta, f"{name}_delta_ci95": ci}
            rows.append(row | {"p_mcnemar": s.mcnemar.p_value, "q_bh": s.mcnemar.q_value})
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


Row = tuple[JoinedCase, JoinedCase, CaseTransition]
"""One case under the old and the new version, and its transition."""


def default_out(old: str, new: str, partition: str) -> Path:
    """``runs/compare/<old>__<new>/<partition>``."""
    return Path("runs") / "compare" / f"{old}__{new}" / partition


# -- transitions: what a comparison and a migration certification compute the same way --------


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
    if before == after:
        return "still_right" if before else "still_wrong"
    return "fixed" if after else "broken"


def case_transitions(
    rubric: Any, old: Join, new: Join, raw_old: Mapping[str, str | None]
) -> list[Row]:
    """Every case of ``old`` beside the same case of ``new``, with its transition."""
    new_of = {c.case_id: c for c in new.cases}
    rows = []
    for o in old.cases:
        n, risk, raw = new_of[o.case_id], rubric.risk_of(o.slice), raw_old.get(o.case_id)
        changed = (o.outcome, o.judge_label) != (n.outcome, n.judge_label)
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
            old_category=_category(o, rubric),
            new_category=_category(n, rubric),
            transition=_transition(o, n),
            verdict_changed=changed,
            needs_review=changed and risk == "critical",
        )
        rows.append((o, n, t))
    return rows


def risk_order(rubric: Any) -> Callable[[str], tuple[int, str]]:
    """Sort key of slices: critical first, then by name."""
    return lambda name: (RISK_ORDER.get(rubric.risk_of(name) or "", 9), name)


def summarize(
    rows: list[Row], rubric: Any, groups: Mapping[str, str] | None = None
) -> tuple[list[SliceComparison], SliceComparison, dict[str, dict[str, int]]]:
    """Per slice (critical first), overall, and the pass/fail/abstain matrix (old -> new);
    ``groups`` (case id -> gold group) adds the cluster-aware rates."""
    by_slice: dict[str, list[Row]] = {}
    for row in rows:
        by_slice.setdefault(row[0].slice, []).append(row)
    slices = [
        _slice_comparison(name, rubric.risk_of(name), by_slice[name], rubric, groups)
        for name in sorted(by_slice, key=risk_order(rubric))
    ]
    q = bh_qvalues([s.mcnemar.p_value for s in slices])
    slices = [
        s.model_copy(update={"mcnemar": s.mcnemar.model_copy(update={"q_value": v})})
        for s, v in zip(slices, q, strict=True)
    ]
    matrix: dict[str, Counter[str]] = {}
    for _, _, t in rows:
        matrix.setdefault(t.old_category, Counter())[t.new_category] += 1
    ordered = {
        r: {c: matrix[r][c] for c in CATEGORIES if matrix[r][c]} for r in CATEGORIES if r in matrix
    }
    return slices, _slice_comparison("(all)", None, rows, rubric, groups), ordered


Pair = tuple[str | None, str | None, str | None]
"""(gold group, old pass/fail view, new pass/fail view) of one case."""


def _grouped(pairs: list[Pair], side: int, event: str) -> GroupedRate | None:
    """One version's rate over its decided cases, clustered by gold group, when a group holds
    more than one of them (elsewhere Wilson's interval already counts independent cases)."""
    units = [(p[0], p[side] == event) for p in pairs if p[side] is not None]
    rate = clustered_rate(units)
    return rate if None not in {g for g, _ in units} and rate.n > rate.groups else None


def _rate_delta(triples: list[Pair], event: str) -> RateDelta:
    pairs = [(o, n) for _, o, n in triples]
    old_dec = [o for o, _ in pairs if o is not None]
    new_dec = [n for _, n in pairs if n is not None]
    both = [(o, n) for o, n in pairs if o is not None and n is not None]
    a = sum(1 for o, n in both if o == event and n == event)
    b = sum(1 for o, n in both if o == event and n != event)
    c = sum(1 for o, n in both if o != event and n == event)
    delta, low, high = paired_rate_difference(a, b, c, len(both) - a - b - c)
    return RateDelta(
        old=wilson_rate(sum(1 for o in old_dec if o == event), len(old_dec)),
        new=wilson_rate(sum(1 for n in new_dec if n == event), len(new_dec)),
        paired_n=len(both),
        delta=delta,
        ci95_low=low,
        ci95_high=high,
        old_grouped=_grouped(triples, 1, event),
        new_grouped=_grouped(triples, 2, event),
    )


def _slice_comparison(
    name: str, risk: str | None, rows: list[Row], rubric: Any, groups: Mapping[str, str] | None
) -> SliceComparison:
    views: dict[str, list[Pair]] = {"fail": [], "pass": []}
    for o, n, _ in rows:
        human = rubric.pass_fail(o.human_label) if o.human_label in rubric.labels else None
        if human in views:
            views[human].append(
                (
                    groups.get(o.case_id) if groups is not None else None,
                    rubric.pass_fail(o.judge_label) if o.outcome == "verdict" else None,
                    rubric.pass_fail(n.judge_label) if n.outcome == "verdict" else None,
                )
            )
    verdicts = [(o, n) for o, n, _ in rows if o.outcome == "verdict" and n.outcome == "verdict"]
    right = Counter((o.error_class == "aligned", n.error_class == "aligned") for o, n in verdicts)
    rr, rw, wr = right[True, True], right[True, False], right[False, True]
    ww = len(verdicts) - rr - rw - wr
    counts = Counter(t.transition for _, _, t in rows)
    return SliceComparison(
        slice=name,
        risk=risk,
        cases=len(rows),
        transitions={t: counts.get(t, 0) for t in TRANSITIONS},
        verdict_changed=sum(1 for _, _, t in rows if t.verdict_changed),
        needs_review=sum(1 for _, _, t in rows if t.needs_review),
        false_pass=_rate_delta(views["fail"], "pass"),
        false_fail=_rate_delta(views["pass"], "fail"),
        mcnemar=McNemar(
            paired=len(verdicts),
            both_right=rr,
            old_right_new_wrong=rw,
            old_wrong_new_right=wr,
            both_wrong=ww,
            p_value=exact_mcnemar(rw, wr, rr, ww),
        ),
    )


def mapped_controls(
    suite: Any, run_dir: Path, mapping: LoadedMapping | None, *, run: Any = None
) -> Any:
    """A control report rebuilt from a control run's records, verdicts mapped to the new labels."""
    from ..controls import ControlOutcome, control_outcomes, evaluate_controls
    from ..results import JudgeIdentity

    identity = JudgeIdentity.model_validate(
        read_json_file(run_dir / "controls.json")["judge_identity"]
    )
    outcomes = control_outcomes(suite, run_dir / RESULTS_FILE, identity.fingerprint())
    if mapping is not None:
        outcomes = {
            cid: (
                ControlOutcome(verdict=mapping.apply(o.verdict), reason=o.reason, error=o.error)
                if o.verdict is not None and o.verdict in mapping.mapping.mapping
                else o
            )
            for cid, o in outcomes.items()
        }
    return evaluate_controls(suite, outcomes, judge=identity, run=run)


def _controls(setup: _Setup, runner: _Runner) -> ControlsSideBySide | None:
    suite, out = setup.suite, setup.out
    if suite is None:
        return None
    old, new = runner.controls["controls old"], runner.controls["controls new"]
    if setup.mapping is not None:
        old = mapped_controls(suite, out / "controls" / "old", setup.mapping, run=old.run)
    new_rows = {r.control_id: r for r in new.controls}
    rows = [
        ControlComparison(
            control_id=o.control_id,
            role=o.role,
            expected=o.expected,
            old_verdict=o.verdict,
            old_status=o.status,
            new_verdict=new_rows[o.control_id].verdict,
            new_status=new_rows[o.control_id].status,
            changed=o.status != new_rows[o.control_id].status,
        )
        for o in old.controls
    ]
    new_roles = {r.role: r.status for r in new.roles}
    return ControlsSideBySide(
        suite=f"{suite.name}@{suite.version}",
        suite_sha256=suite.sha256,
        old_status=old.status,
        new_status=new.status,
        roles=[{"role": r.role, "old": r.status, "new": new_roles.get(r.role)} for r in old.roles],
        controls=rows,
        old_run_dir=str(out / "controls" / "old"),
        new_run_dir=str(out / "controls" / "new"),
    )


@dataclass(frozen=True)
class _Planned:
    name: str
    judge: Judge
    items: list[WorkItem]
    out: Path
    kind: Literal["controls", "partition"]


@dataclass
class _Setup:
    dataset: GoldDataset
    partition: str
    out: Path
    old: Judge
    new: Judge
    cases: list[Any]
    mapping: LoadedMapping | None
    suite: ControlSuite | None
    reuse: dict[str, Path | None]

    @property
    def sides(self) -> tuple[tuple[str, Judge], tuple[str, Judge]]:
        return ("old", self.old), ("new", self.new)

    def results(self, side: str) -> Path:
        return (self.reuse[side] or self.out / side) / RESULTS_FILE


def _judge(candidate: Judge | str | Path) -> Judge:
    return load_candidate(candidate) if isinstance(candidate, str | Path) else candidate


def _load(
    old: Judge | str | Path,
    new: Judge | str | Path,
    gold: GoldDataset | str | Path,
    partition: str,
    out: str | Path,
    reuse: dict[str, Path | None],
    label_mapping: LoadedMapping | str | Path | None,
    controls: ControlSuite | str | Path | None,
) -> _Setup:
    refuse_held_out(partition, where="compare --partition")
    if partition not in ("development", "calibration"):
        raise refusal(
            "invalid partition",
            "--partition",
            "partition_invalid",
            f"unknown partition {partition!r}",
            "compare on development or calibration",
        )
    dataset = gold if isinstance(gold, GoldDataset) else load_dataset(gold)
    cases = dataset.partition(partition)
    if not cases:
        raise refusal(
            "nothing to compare",
            str(dataset.gold_path),
            "empty_partition",
            f"partition {partition!r} has no cases",
            "choose a partition that has cases",
        )
    if isinstance(label_mapping, str | Path):
        label_mapping = load_label_mapping(label_mapping)
    if isinstance(controls, str | Path):
        from ..controls import load_suite

        controls = load_suite(controls)
    judges = _judge(old), _judge(new)
    return _Setup(dataset, partition, Path(out), *judges, cases, label_mapping, controls, reuse)


def _input_problems(setup: _Setup) -> list[Problem]:
    rubric, new = setup.dataset.rubric, setup.new
    outside = [label for label in new.spec.labels if label not in rubric.labels]
    problems = []
    if outside:
        message = (
            f"{new.spec.label} may return {outside}, which rubric {rubric.version} does not have"
        )
        fix = (
            "the new version's labels must be the rubric's; a renamed rubric needs a new gold"
            " release"
        )
        problems.append(problem(new.spec.label, "labels_outside_rubric", message, fix))
    problems += _mapping_problems(setup, setup.old.spec.label)
    for side, judge in setup.sides:
        run_dir = setup.reuse[side]
        if run_dir is not None:
            problems += _reused_problems(run_dir, judge, setup, side)
    held = held_out_content([setup.dataset])  # held-out content under another id, or a control
    problems += exposure_problems(setup.cases, held, str(setup.dataset.gold_path))
    if setup.suite is not None:
        problems += exposure_problems(setup.suite.controls, held, "--controls", what="control")
    return problems


def _mapping_problems(
    setup: _Setup, location: str, observed: set[str] | None = None
) -> list[Problem]:
    return mapping_problems(
        setup.mapping,
        old_label=setup.old.spec.label,
        new_label=setup.new.spec.label,
        old_labels=list(setup.old.spec.labels),
        new_labels=list(setup.dataset.rubric.labels),  # verdicts are compared in the gold's
        observed=observed,
        location=location,
    )


def _reused_problems(run_dir: Path, judge: Judge, setup: _Setup, side: str) -> list[Problem]:
    """Why an existing run directory cannot stand for ``judge`` on these cases."""
    manifest_path = run_dir / MANIFEST_FILE
    if not manifest_path.is_file() or not (run_dir / RESULTS_FILE).is_file():
        message = f"--{side}-run is not a run directory (manifest.json and results.jsonl)"
        fix = (
            "point at a directory written by `workbench run`, or drop the option to run the"
            " candidate here"
        )
        return [problem(str(run_dir), "run_missing", message, fix)]
    try:
        manifest = RunManifest.model_validate(read_json_file(manifest_path))
    except (OSError, ValueError) as exc:
        message = f"the run manifest cannot be read ({type(exc).__name__})"
        fix = "restore the manifest.json the run wrote"
        return [problem(str(manifest_path), "manifest_invalid", message, fix)]
    dataset, partition, fingerprint = setup.dataset, setup.partition, judge.identity.fingerprint()
    want = sorted((c.case_id, c.response_hash) for c in setup.cases)
    have = sorted((c.case_id, c.response_hash) for c in manifest.cases)
    missing, extra = sorted(set(want) - set(have)), sorted(set(have) - set(want))
    checks = [
        (
            manifest.judge_fingerprint != fingerprint,
            "run_other_candidate",
            f"the run is of judge {manifest.judge.name}@{manifest.judge.version}"
            f" ({manifest.judge_fingerprint[:12]}), not {judge.spec.label} ({fingerprint[:12]})",
            f"give --{side}-run a run of {judge.spec.label} as it is now, or drop the option",
        ),
        (
            (manifest.dataset_sha256, manifest.rubric_version)
            != (dataset.sha256, dataset.rubric.version),
            "run_other_gold",
            f"the run was made on dataset {manifest.dataset_sha256[:12]} (rubric"
            f" {manifest.rubric_version}), the gold given is {dataset.sha256[:12]} (rubric"
            f" {dataset.rubric.version})",
            "both versions must be compared on the same frozen gold: re-run on this gold (drop"
            " the option)",
        ),
        (
            manifest.partition != partition,
            "run_other_partition",
            f"the run is of partition {manifest.partition!r}, the comparison of {partition!r}",
            f"give a run of {partition}",
        ),
        (
            manifest.partition == partition and want != have,
            "run_other_cases",
            f"the run's manifest holds other cases than the partition ({len(missing)} missing,"
            f" {len(extra)} extra, e.g. {', '.join(c for c, _ in (missing or extra)[:3])})",
            "both versions must judge the same frozen cases: re-run (drop the option)",
        ),
    ]
    problems = [problem(str(manifest_path), *check) for failed, *check in checks if failed]
    status = _run_status(run_dir)
    if status != "complete":
        message = (
            f"the run is {status or 'of unknown status (no run.json)'}: reusing it would compare"
            " on fewer cases"
        )
        fix = (
            f"resume it first (`workbench run ... --out {run_dir}`), or drop --{side}-run to run"
            " here"
        )
        problems.append(problem(str(run_dir), "run_incomplete", message, fix))
    return problems


def _run_status(run_dir: Path) -> str | None:
    try:
        data = read_json_file(run_dir / SUMMARY_FILE)
    except (OSError, ValueError):
        return None
    return data.get("status") if isinstance(data, dict) else None


def _parity(setup: _Setup) -> tuple[list[str], RequestParity, list[str]]:
    actual = judge_changes(setup.old, setup.new)
    parity = request_parity(setup.old, setup.new, setup.cases)
    warnings = parity_warnings(setup.new, setup.old, actual, parity)
    if setup.old.identity.fingerprint() == setup.new.identity.fingerprint():
        warnings.append(
            "both sides are the same judge (same fingerprint): every difference is run-to-run"
            " variation"
        )
    return actual, parity, warnings


def _plan(setup: _Setup) -> list[_Planned]:
    """The runs to make: the controls of both versions first, then each side not reused."""
    planned = []
    if setup.suite is not None:
        from ..controls import work_items

        planned += [
            _Planned(
                f"controls {side}",
                judge,
                work_items(setup.suite),
                setup.out / "controls" / side,
                "controls",
            )
            for side, judge in setup.sides
        ]
    items = [WorkItem(c.case_id, c.response_hash, 0, JudgeInput.from_case(c)) for c in setup.cases]
    planned += [
        _Planned(side, judge, items, setup.out / side, "partition")
        for side, judge in setup.sides
        if setup.reuse[side] is None
    ]
    return planned


def _price(
    setup: _Setup,
    planned: list[_Planned],
    budget_usd: float | None,
    cache_dir: str | Path | None | Literal[False],
) -> list[RunEstimate]:
    """Every call still to make, priced; refused when over the budget."""
    estimates = [
        estimate_run(p.name, p.judge, p.items, p.out, cache_dir=cache_dir) for p in planned
    ]
    needed = sum(e.needed_usd for e in estimates)
    if budget_usd is None or needed <= budget_usd + 1e-12:
        return estimates
    detail = "; ".join(
        f"{e.run} ({e.judge}): {e.calls} call(s) reserving ${e.reservation_usd:.4f}"
        + (f" + ${e.recorded_usd:.4f} recorded" if e.recorded_usd else "")
        for e in estimates
    )
    message = (
        f"comparing {setup.old.spec.label} with {setup.new.spec.label} on {len(setup.cases)}"
        f" {setup.partition} case(s) needs up to ${needed:.4f} (the engine's reservations: input"
        f" estimate + full output cap, one attempt per call), the budget is ${budget_usd:.4f}:"
        f" {detail}"
    )
    fix = (
        f"give --budget-usd {needed:.4f} or more; comparing on fewer cases is a scope change, not a"
        " saving"
    )
    raise BudgetInsufficient(
        "the budget does not cover both candidates: nothing was started",
        [problem("--budget-usd", "budget_insufficient", message, fix)],
    )


def _manifest(setup: _Setup) -> dict[str, Any]:
    return {
        "old_fingerprint": setup.old.identity.fingerprint(),
        "new_fingerprint": setup.new.identity.fingerprint(),
        "old": setup.old.spec.label,
        "new": setup.new.spec.label,
        "dataset_sha256": setup.dataset.sha256,
        "rubric_version": setup.dataset.rubric.version,
        "partition": setup.partition,
        "cases": [[c.case_id, c.response_hash] for c in setup.cases],
        "label_mapping_sha256": setup.mapping.sha256 if setup.mapping else None,
        "controls_sha256": setup.suite.sha256 if setup.suite is not None else None,
    }


def _freeze(out: Path, content: dict[str, Any]) -> str:
    """Write the comparison manifest, or check it against the one there; return its id."""
    path = out / MANIFEST
    if not path.exists():
        comparison_id = f"cmp-{uuid.uuid4().hex[:12]}"
        out.mkdir(parents=True, exist_ok=True)
        created = datetime.now(UTC).isoformat()
        atomic_write_json(path, {"comparison_id": comparison_id, "created_at": created, **content})
        return comparison_id
    try:
        existing = read_json_file(path)
    except (OSError, ValueError):
        raise refusal(
            "unreadable comparison manifest",
            str(path),
            "manifest_invalid",
            "the comparison manifest cannot be read",
            "restore it, or compare into a new --out",
        ) from None
    before = {k: v for k, v in existing.items() if k not in ("comparison_id", "created_at")}
    changed = sorted(k for k in {*before, *content} if before.get(k) != content.get(k))
    if changed:
        raise refusal(
            "refusing to continue: the comparison changed",
            str(path),
            "comparison_manifest_changed",
            f"this directory holds a comparison with a different {', '.join(changed)}",
            "compare into a new --out; the evidence of the old comparison is kept",
        )
    return str(existing.get("comparison_id"))


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
    """Compare two judge versions on one development or calibration partition (refused before
    any call on invalid input or a budget that cannot cover both)."""
    check_run_arguments(concurrency=concurrency, budget_usd=budget_usd)
    reuse = {"old": Path(old_run) if old_run else None, "new": Path(new_run) if new_run else None}
    setup = _load(old, new, gold, partition, out, reuse, label_mapping, controls)
    if problems := _input_problems(setup):
        raise WorkbenchError(
            f"refusing to compare {setup.old.spec.label} with {setup.new.spec.label}:"
            f" {len(problems)} problem(s)",
            problems,
        )
    parity, planned = _parity(setup), _plan(setup)
    estimates = _price(setup, planned, budget_usd, cache_dir)
    comparison_id = _freeze(setup.out, _manifest(setup))
    runner = _Runner(setup, planned, estimates, budget_usd, concurrency, cache_dir, progress)
    await runner.run_all()
    report = _report(setup, comparison_id, runner, parity)
    atomic_write_json(setup.out / REPORT_FILE, report.model_dump(mode="json"))
    return report


@dataclass
class _Runner:
    """Runs the planned runs in order, each under what the budget leaves it."""

    setup: _Setup
    planned: list[_Planned]
    estimates: list[RunEstimate]
    budget_usd: float | None
    concurrency: int
    cache_dir: str | Path | None | Literal[False]
    progress: bool
    summaries: dict[str, RunSummary] = field(default_factory=dict)
    controls: dict[str, ControlsReport] = field(default_factory=dict)
    incomplete: list[str] = field(default_factory=list)

    def limit(self, index: int) -> float | None:
        """The budget minus the others' recorded spend and the reservations still to come."""
        if self.budget_usd is None:
            return None
        others = sum(
            self.summaries[p.name].cost_usd if p.name in self.summaries else e.recorded_usd
            for i, (p, e) in enumerate(zip(self.planned, self.estimates, strict=True))
            if i != index
        )
        later = sum(e.reservation_usd for e in self.estimates[index + 1 :])
        return max(0.0, self.budget_usd - others - later)

    async def run_all(self) -> None:
        setup = self.setup
        for index, plan in enumerate(self.planned):
            options: dict[str, Any] = {"concurrency": self.concurrency, "progress": self.progress}
            options |= {"budget_usd": self.limit(index), "cache_dir": self.cache_dir}
            if plan.kind == "controls":
                from ..controls import run_controls

                assert setup.suite is not None  # controls are planned only with a suite
                report = await run_controls(plan.judge, setup.suite, plan.out, **options)
                assert report.run is not None
                self.summaries[plan.name], self.controls[plan.name] = report.run, report
            else:
                self.summaries[plan.name] = await run_candidate(
                    plan.judge, setup.dataset, setup.partition, plan.out, RunOptions(**options)
                )
            summary = self.summaries[plan.name]
            if summary.status != "complete":
                stop = f" ({summary.stop_reason.replace('_', ' ')})" if summary.stop_reason else ""
                self.incomplete.append(
                    f"the {plan.name} run of {plan.judge.spec.label} is incomplete{stop}:"
                    f" {len(summary.unrun)} unrun, {len(summary.pending_retry)} mid-retry"
                )


def _joined(setup: _Setup) -> tuple[dict[str, Join], dict[str, RunManifest | None]]:
    """Both runs joined with the gold, old verdicts mapped; refused on unmapped labels or
    differing manifests."""
    old_lines = read_results(setup.results("old"))
    observed = {line.result.value for line in old_lines if line.result.value is not None}
    if setup.suite is not None:
        from ..controls import control_outcomes

        fingerprint = setup.old.identity.fingerprint()
        controls = setup.out / "controls" / "old" / RESULTS_FILE
        observed |= {
            o.verdict
            for o in control_outcomes(setup.suite, controls, fingerprint).values()
            if o.verdict is not None
        }
    late = _mapping_problems(setup, str(setup.results("old")), observed)
    if late:
        raise WorkbenchError("refusing to compare: the old verdicts hold unmapped labels", late)
    mapped, _, _ = map_old_lines(old_lines, setup.mapping)
    joins, manifests = {}, {}
    for side, lines in (("old", mapped), ("new", read_results(setup.results("new")))):
        path = setup.results(side)
        manifests[side] = read_run_manifest(path)
        joins[side] = align_results(
            setup.dataset,
            lines,
            partition=setup.partition,
            manifest=manifests[side],
            location=str(path),
        )
    mo, mn = manifests["old"], manifests["new"]
    if mo is None or mn is None or _frame(mo) != _frame(mn):
        raise refusal(
            "refusing to compare: the two runs did not judge the same frozen manifest",
            str(setup.out),
            "manifests_differ",
            "the old and new runs' manifests differ in dataset, partition or cases (ids, response"
            " hashes, gold hashes)",
            "run both versions on the same gold and partition (compare runs them for you)",
        )
    return joins, manifests


def _frame(manifest: RunManifest) -> tuple[Any, ...]:
    return (manifest.dataset_sha256, manifest.partition, [c.model_dump() for c in manifest.cases])


def map_old_lines(
    lines: Sequence[ResultLine], mapping: LoadedMapping | None
) -> tuple[list[ResultLine], dict[str, str], set[str]]:
    """Old result lines with covered verdicts mapped; the raw verdict per case; the labels seen."""
    raw = {
        line.result.case_id: line.result.value for line in lines if line.result.value is not None
    }
    if mapping is None:
        return list(lines), raw, set(raw.values())
    covered = mapping.mapping.mapping
    out = [
        ResultLine(line.line, line.result.model_copy(update={"value": mapping.apply(v)}))
        if (v := line.result.value) is not None and v in covered
        else line
        for line in lines
    ]
    return out, raw, set(raw.values())


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


def _report(
    setup: _Setup,
    comparison_id: str,
    runner: _Runner,
    parity: tuple[list[str], RequestParity, list[str]],
) -> ComparisonReport:
    joins, manifests = _joined(setup)
    rubric, mapping = setup.dataset.rubric, setup.mapping
    old_lines = read_results(setup.results("old")) if mapping else []
    raw_old = {line.result.case_id: line.result.value for line in old_lines}
    rows = case_transitions(rubric, joins["old"], joins["new"], raw_old)
    groups = {cid: case.group for cid, case in setup.dataset.cases.items()}
    slices, overall, matrix = summarize(rows, rubric, groups)
    incomplete = list(runner.incomplete)
    missing = sum(1 for _, _, t in rows if t.transition == "incomplete")
    if missing:
        incomplete.append(f"{missing} case(s) lack a result from one of the versions")
    actual, requests, warnings = parity
    sides = {
        side: _side(
            judge,
            setup.results(side).parent,
            setup.reuse[side] is not None,
            runner.summaries.get(side),
            manifests[side],
            joins[side],
        )
        for side, judge in setup.sides
    }
    mo = manifests["old"]
    assert mo is not None
    return ComparisonReport(
        comparison_id=comparison_id,
        created_at=datetime.now(UTC),
        old=sides["old"],
        new=sides["new"],
        dataset_sha256=setup.dataset.sha256,
        rubric_version=rubric.version,
        gold_release=setup.dataset.release.release_id if setup.dataset.release else None,
        partition=setup.partition,
        cases_sha256=sha256_json([c.model_dump(mode="json") for c in mo.cases]),
        status="incomplete" if incomplete else "complete",
        incomplete_reasons=incomplete,
        label_mapping=MappingRef(
            path=mapping.path,
            sha256=mapping.sha256,
            approver=mapping.mapping.approver,
            approved=mapping.mapping.approved.isoformat(),
            mapping=dict(mapping.mapping.mapping),
        )
        if mapping
        else None,
        declared_parent=setup.new.spec.parent,
        declared_changes=setup.new.spec.changes,
        actual_changes=actual,
        parity=requests,
        warnings=warnings,
        controls=_controls(setup, runner),
        budget=BudgetLine(
            budget_usd=runner.budget_usd,
            needed_usd=sum(e.needed_usd for e in runner.estimates),
            estimates=runner.estimates,
            spent_usd=sum(s.cost_usd for s in runner.summaries.values()),
        ),
        overall=overall,
        slices=slices,
        matrix=matrix,
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
        f" rubric {report.rubric_version}): {report.status.upper()}",
        *(f"  incomplete: {reason}" for reason in report.incomplete_reasons),
    ]
    lines += _format_changes(report) + _format_controls(report.controls)
    lines += _format_slices(report)
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
    limit = f" of ${b.budget_usd:.4f}" if b.budget_usd is not None else ""
    lines.append(
        f"cost: ${b.spent_usd:.4f}{limit} (estimated up to ${b.needed_usd:.4f} before starting)"
    )
    return "\n".join(lines)


def _format_changes(report: ComparisonReport) -> list[str]:
    lines = []
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
    lines.append(
        f"changes: {', '.join(report.actual_changes) or 'none'} ({report.new.label} {declared})"
    )
    p = report.parity
    lines.append(
        f"prompt parity: {p.differing_cases} of {p.cases} rendered requests differ"
        + (" in " + ", ".join(f"{k.key} ({k.cases})" for k in p.keys) if p.keys else "")
    )
    if p.first_diff:
        lines.append(f"first difference (case {p.first_case_id}):")
        lines += ["    " + line for line in p.first_diff.splitlines()[:40]]
    return lines + [f"warning: {w}" for w in report.warnings]


def _format_controls(c: ControlsSideBySide | None) -> list[str]:
    if c is None:
        return []
    lines = [f"controls {c.suite}: old {c.old_status.upper()}, new {c.new_status.upper()}"]
    lines += [f"  {r['role']:22} old {r['old']:10} new {r['new']}" for r in c.roles]
    return lines + [
        f"  changed {row.control_id} ({row.role}, expected {row.expected}):"
        f" {row.old_verdict} {row.old_status} -> {row.new_verdict} {row.new_status}"
        for row in c.controls
        if row.changed
    ]


def _format_rates(d: RateDelta, name: str) -> str:
    counts = f"{name} {d.old.k}/{d.old.n} -> {d.new.k}/{d.new.n}"
    grouped = [g for g in (d.old_grouped, d.new_grouped) if g is not None]
    if grouped:
        counts += (
            " (by gold group, 95%: "
            + " -> ".join(
                f"[{g.ci95_low:.3f}, {g.ci95_high:.3f}] of {g.n} cases in {g.groups} groups"
                for g in grouped
            )
            + ")"
        )
    if d.delta is None:
        return f"{counts} (no paired case)"
    return (
        f"{counts}, delta {d.delta:+.3f} [{d.ci95_low:+.3f}, {d.ci95_high:+.3f}] (n={d.paired_n})"
    )


def _format_slices(report: ComparisonReport) -> list[str]:
    every = [*report.slices, report.overall]
    lines = [
        "transitions by slice (fixed / broken / still wrong / still right / incomplete; changed"
        " verdicts; needing review):"
    ]
    for s in every:
        t = s.transitions
        lines.append(
            f"  {s.slice:26} {(s.risk or ''):8} n={s.cases:<4} {t['fixed']:>3} / {t['broken']:>3} /"
            f" {t['still_wrong']:>3} / {t['still_right']:>3} / {t['incomplete']:>3}; changed"
            f" {s.verdict_changed}; review {s.needs_review}"
        )
    lines.append("false-pass and false-fail rates, old -> new, paired difference [95% Tango]:")
    lines += [
        f"  {s.slice:26} "
        + "; ".join((_format_rates(s.false_pass, "FP"), _format_rates(s.false_fail, "FF")))
        for s in every
    ]
    lines.append(
        "McNemar (exact) per slice: p, and q = Benjamini-Hochberg over the slices (read q when"
        " looking for any slice that changed):"
    )
    return lines + [
        f"  {s.slice:26} p = {s.mcnemar.p_value:.4g}, q = {s.mcnemar.q_value:.4g}"
        for s in report.slices
        if s.mcnemar.q_value is not None
    ]
