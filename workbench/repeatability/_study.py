"""Repeatability of a label judge: the same pinned judge on the same cases K times; flips, flip
rates per slice and boundary crossings (for human review, never retried away), logged beside the
gold for certification (:func:`repeatability_blockers`)."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from .._args import check_run_arguments
from .._io import sha256_file
from .._record import Record as _Model
from .._record import append_to_log, read_log
from ..align import align_results, read_run_manifest
from ..approval import current_user
from ..errors import problem, refusal
from ..gold import GoldDataset, load_dataset, partition_name
from ..heldout import refuse_held_out, refuse_held_out_content
from ..judges import Judge, JudgeInput, load_candidate
from ..outcomes import exit_code
from ..policy import Blocker, Policy, blocker
from ..results import ResultLine, RunManifest, read_results
from ..runs import RESULTS_FILE, RunDir, RunOptions, RunSummary, WorkItem, run_candidate
from ..sampling import RISK_ORDER
from ..stats import GroupedRate, Rate, clustered_rate, wilson_rate
from ._log import beside_gold

STUDY_SCHEMA_VERSION = 1
STUDIES_FILE = "repeatability_studies.jsonl"
"""The study log's file name, beside the gold dataset by default."""
DEFAULT_MIN_REPEATS = 3
"""Repeats a study needs before certification accepts it (``repeatability_blockers``)."""
DEFAULT_PARTITION = "calibration"
"""The partition certification wants the study on."""


class CaseRepeatability(_Model):
    """One case over the K repeats."""

    case_id: str
    """The case."""
    slice: str
    """Its slice."""
    risk: str | None
    """The slice's risk."""
    human_label: str
    """The adjudicated label."""
    verdicts: list[str | None]
    """The verdict of each repeat, by repeat index (None: an evaluator error or no result)."""
    errors: int
    """Repeats that ended in an evaluator error."""
    missing: int
    """Repeats without any result."""
    flipped: bool
    """Two or more distinct verdicts among the repeats."""
    status: Literal["stable", "flipped", "incomplete"]
    """``incomplete``: no flip seen, but some repeat has no verdict."""
    majority: str | None
    """The verdict given more often than any other, or None on a tie or without verdicts."""
    majority_share: float | None
    """Repeats giving the most frequent verdict / K (None without verdicts)."""
    boundary_crossing: bool
    """A pass and a fail among the verdicts (a move into an abstain label only is not)."""
    needs_review: bool
    """A boundary crossing in a critical slice: listed for human review, never retried away."""
    group: str | None = None
    """The case's gold group (None in studies recorded before groups were kept)."""


class SliceRepeatability(_Model):
    """One slice (or ``(all)``) over the K repeats."""

    slice: str
    """The slice, or ``(all)``."""
    risk: str | None
    """Its risk."""
    cases: int
    """Cases in it."""
    assessed: int
    """Cases stable or flipped (the flip rate's denominator)."""
    flipped: int
    """Cases that flipped."""
    incomplete: int
    """Cases with a repeat missing a verdict and no flip seen."""
    flip_rate: Rate
    """flipped / assessed with a 95% Wilson interval."""
    mean_majority_share: float | None
    """Mean of the cases' majority shares."""
    boundary_crossing: int
    """Cases that crossed the pass/fail boundary."""
    boundary_case_ids: list[str] = Field(default_factory=list)
    """Those cases."""
    groups: int | None = None
    """Gold groups the assessed cases come from."""
    flip_rate_grouped: GroupedRate | None = None
    """The flip rate with the cases of one gold group as one cluster
    (:func:`workbench.stats.grouped_rate`, the interval the slices use)."""
    false_pass_items: int | None = None
    """Human-fail cases with a pass or fail verdict in some repeat."""
    false_pass_repeats: GroupedRate | None = None
    """Pass verdicts over the pass/fail verdicts of every repeat on human-fail cases: ``n``
    judgments, each case's K judgments one cluster (with the other cases of its gold group), so
    the interval is worth the items judged, not K times as many."""


class RepeatCost(_Model):
    """What one repeat index cost."""

    repeat: int
    """The repeat index."""
    attempts: int
    """Attempts recorded (retries included)."""
    cached: int
    """Of those, verdicts reused from the cache."""
    cost_usd: float
    """Recorded cost."""
    tokens_in: int
    """Prompt tokens reported."""
    tokens_out: int
    """Completion tokens reported."""


class RepeatabilityStudy(_Model):
    """A repeatability study (one line of ``repeatability_studies.jsonl``)."""

    schema_version: int = STUDY_SCHEMA_VERSION
    """Study format version."""
    kind: Literal["workbench.repeatability"] = "workbench.repeatability"
    """Record kind."""
    study_id: str
    """Id of the study."""
    created_at: datetime
    """When it was computed (UTC)."""
    who: str
    """Who ran it (``$WORKBENCH_USER`` or the login name)."""
    candidate: str
    """``name@version``."""
    candidate_fingerprint: str
    """The judge fingerprint studied."""
    dataset_sha256: str
    """The gold it ran on."""
    rubric_version: str
    """Its rubric version."""
    gold_release: str | None
    """Its frozen release, if any."""
    partition: str
    """development or calibration."""
    repeats: int
    """K: repeats per case."""
    run_dir: str
    """The run directory (``results.jsonl`` holds every verdict and attempt)."""
    run_id: str
    """The run id."""
    results_sha256: str
    """sha256 of the run's ``results.jsonl`` when the study was computed."""
    status: Literal["complete", "incomplete"]
    """``incomplete`` when the run stopped early or a case lacks a verdict in some repeat."""
    incomplete_reasons: list[str] = Field(default_factory=list)
    """Why it is incomplete."""
    overall: SliceRepeatability
    """Every case."""
    slices: list[SliceRepeatability]
    """Per slice, critical first."""
    per_repeat: list[RepeatCost]
    """Cost and tokens per repeat index."""
    cases: list[CaseRepeatability]
    """Every case."""
    review: list[str]
    """Boundary-crossing cases in critical slices: for human review, not to be retried away."""

    @property
    def exit_code(self) -> int:
        """``workbench repeatability``'s exit: 3 incomplete, 4 critical cases to review, else 0."""
        if self.status != "complete":
            return exit_code("incomplete")
        return exit_code("review_required" if self.review else "complete")


def studies_path_for(gold: GoldDataset | str | Path) -> Path:
    """The default study log: ``<gold dataset directory>/repeatability_studies.jsonl``."""
    return beside_gold(gold, STUDIES_FILE)


def _case_row(
    case_id: str,
    slice_name: str,
    human: str,
    outcomes: list[tuple[str, str | None]],
    rubric: Any,
    repeats: int,
    group: str | None = None,
) -> CaseRepeatability:
    risk = rubric.risk_of(slice_name)
    verdicts = [label if outcome == "verdict" else None for outcome, label in outcomes]
    given = [v for v in verdicts if v is not None]
    counts, kinds = Counter(given), Counter(outcome for outcome, _ in outcomes)
    flipped = len(counts) > 1
    status: Literal["stable", "flipped", "incomplete"] = (
        "flipped" if flipped else ("stable" if len(given) == repeats else "incomplete")
    )
    top = counts.most_common()
    majority = top[0][0] if top and (len(top) == 1 or top[0][1] > top[1][1]) else None
    views = {rubric.pass_fail(v) for v in counts if v in rubric.labels}
    crossing = "pass" in views and "fail" in views
    return CaseRepeatability(
        case_id=case_id,
        slice=slice_name,
        risk=risk,
        human_label=human,
        verdicts=verdicts,
        errors=kinds["error"],
        missing=kinds["missing"],
        flipped=flipped,
        status=status,
        majority=majority,
        majority_share=(top[0][1] / repeats) if top else None,
        boundary_crossing=crossing,
        needs_review=crossing and risk == "critical",
        group=group,
    )


def _repeat_figures(rows: list[CaseRepeatability], rubric: Any) -> dict[str, Any]:
    """The slice's cluster-aware figures: flips by gold group, false passes over every repeat
    (a case judged K times is K judgments of one cluster)."""
    assessed = [r for r in rows if r.status != "incomplete" and r.group is not None]
    if not assessed:
        return {}
    judged = [
        (r.group, r.case_id, side == "pass")
        for r in assessed
        if rubric.pass_fail(r.human_label) == "fail"
        for v in r.verdicts
        if v is not None and (side := rubric.pass_fail(v)) in ("pass", "fail")
    ]
    return {
        "groups": len({r.group for r in assessed}),
        "flip_rate_grouped": clustered_rate((r.group, r.flipped) for r in assessed),
        "false_pass_items": len({case for _, case, _ in judged}),
        "false_pass_repeats": clustered_rate((g, event) for g, _, event in judged),
    }


def _slice_row(
    name: str, risk: str | None, rows: list[CaseRepeatability], rubric: Any
) -> SliceRepeatability:
    assessed = [r for r in rows if r.status != "incomplete"]
    flipped = sum(1 for r in assessed if r.flipped)
    shares = [r.majority_share for r in rows if r.majority_share is not None]
    crossing = [r.case_id for r in rows if r.boundary_crossing]
    return SliceRepeatability(
        slice=name,
        risk=risk,
        cases=len(rows),
        assessed=len(assessed),
        flipped=flipped,
        incomplete=len(rows) - len(assessed),
        flip_rate=wilson_rate(flipped, len(assessed)),
        mean_majority_share=sum(shares) / len(shares) if shares else None,
        boundary_crossing=len(crossing),
        boundary_case_ids=crossing,
        **_repeat_figures(rows, rubric),
    )


def _repeat_manifest(run: Path, results: Path) -> RunManifest:
    manifest = read_run_manifest(results)
    if manifest is None:
        message = "no run manifest (manifest.json) in the directory"
        fix = (
            "point at a run directory written by `workbench run --repeat K` or `workbench"
            " repeatability`"
        )
        raise refusal("not a run", str(run), "run_missing", message, fix)
    refuse_held_out(manifest.partition, where=str(run))
    if manifest.repeats < 2:
        message = (
            f"the run judged each case {manifest.repeats} time(s): a flip needs at least 2 repeats"
        )
        fix = "run with --repeats 3 or more (certification wants K >= 3 on calibration data)"
        raise refusal("not a repeatability run", str(run), "too_few_repeats", message, fix)
    return manifest


def _per_repeat(lines: list[ResultLine], repeats: int) -> list[RepeatCost]:
    return [
        RepeatCost(
            repeat=r,
            attempts=len(mine),
            cached=sum(1 for x in mine if x.cached_from_run_id),
            cost_usd=round(sum(x.cost_usd or 0.0 for x in mine), 10),
            tokens_in=sum(x.tokens_in or 0 for x in mine),
            tokens_out=sum(x.tokens_out or 0 for x in mine),
        )
        for r in range(repeats)
        for mine in [[line.result for line in lines if line.result.repeat == r]]
    ]


def _incomplete_reasons(
    run: Path, summary: RunSummary | None, cases: list[CaseRepeatability]
) -> list[str]:
    reasons: list[str] = []
    if summary is None and RunDir(run).summary.is_file():
        summary = RunDir(run).read_summary()
    if summary is not None and summary.status != "complete":
        reasons.append(
            "the run is incomplete"
            + (f" ({summary.stop_reason.replace('_', ' ')})" if summary.stop_reason else "")
            + f": {len(summary.unrun)} unrun, {len(summary.pending_retry)} mid-retry"
        )
    incomplete = [c.case_id for c in cases if c.status == "incomplete"]
    if incomplete:
        reasons.append(
            f"{len(incomplete)} case(s) lack a verdict in some repeat and showed no flip: "
            + ", ".join(incomplete[:10])
            + (" ..." if len(incomplete) > 10 else "")
        )
    return reasons


def study_from_run(
    run_dir: str | Path,
    dataset: GoldDataset | str | Path,
    *,
    summary: RunSummary | None = None,
    who: str | None = None,
) -> RepeatabilityStudy:
    """The repeatability study of a run made with ``repeats`` >= 2 (nothing is re-run)."""
    run = Path(run_dir)
    dataset = dataset if isinstance(dataset, GoldDataset) else load_dataset(dataset)
    results = run / RESULTS_FILE
    manifest = _repeat_manifest(run, results)
    lines = read_results(results)
    rubric = dataset.rubric
    per_case: dict[str, list[tuple[str, str | None]]] = {}
    info: dict[str, tuple[str, str]] = {}
    group_of = {cid: case.group for cid, case in dataset.cases.items()}
    for r in range(manifest.repeats):
        join = align_results(
            dataset,
            lines,
            partition=manifest.partition,
            repeat=r,
            manifest=manifest,
            location=str(results),
        )
        for c in join.cases:
            per_case.setdefault(c.case_id, []).append((c.outcome, c.judge_label))
            info[c.case_id] = (c.slice, c.human_label)
    cases = [
        _case_row(cid, *info[cid], outcomes, rubric, manifest.repeats, group_of.get(cid))
        for cid, outcomes in per_case.items()
    ]
    by_slice: dict[str, list[CaseRepeatability]] = {}
    for row in cases:
        by_slice.setdefault(row.slice, []).append(row)
    order = sorted(by_slice, key=lambda s: (RISK_ORDER.get(rubric.risk_of(s) or "", 9), s))
    reasons = _incomplete_reasons(run, summary, cases)
    return RepeatabilityStudy(
        study_id=f"rep-{uuid.uuid4().hex[:12]}",
        created_at=datetime.now(UTC),
        who=who or current_user(),
        candidate=f"{manifest.judge.name}@{manifest.judge.version}",
        candidate_fingerprint=manifest.judge_fingerprint,
        dataset_sha256=dataset.sha256,
        rubric_version=rubric.version,
        gold_release=dataset.release.release_id if dataset.release else None,
        partition=manifest.partition,
        repeats=manifest.repeats,
        run_dir=str(run),
        run_id=manifest.run_id,
        results_sha256=sha256_file(results),
        status="incomplete" if reasons else "complete",
        incomplete_reasons=reasons,
        overall=_slice_row("(all)", None, cases, rubric),
        slices=[_slice_row(name, rubric.risk_of(name), by_slice[name], rubric) for name in order],
        per_repeat=_per_repeat(lines, manifest.repeats),
        cases=cases,
        review=[c.case_id for c in cases if c.needs_review],
    )


def read_studies(log: str | Path) -> list[RepeatabilityStudy]:
    """Every study in a log, oldest first (a missing log has none; a bad line is refused)."""
    fix = "the study log is append-only and written by `workbench repeatability`; restore it"
    what = "a repeatability study"
    return read_log(
        log, RepeatabilityStudy, code="study_invalid", what=what, name="study log", fix=fix
    )


def latest_study(
    log: str | Path,
    fingerprint: str,
    *,
    partition: str | None = None,
    dataset_sha256: str | None = None,
) -> RepeatabilityStudy | None:
    """The latest study of ``fingerprint`` in the log (optionally of one partition and gold)."""
    found = studies_of(log, fingerprint, dataset_sha256=dataset_sha256)
    found = [s for s in found if partition is None or s.partition == partition]
    return found[-1] if found else None


def studies_of(
    log: str | Path, fingerprint: str, *, dataset_sha256: str | None = None
) -> list[RepeatabilityStudy]:
    """Every study of ``fingerprint`` in the log, oldest first."""
    return [
        s
        for s in read_studies(log)
        if s.candidate_fingerprint == fingerprint
        and (dataset_sha256 is None or s.dataset_sha256 == dataset_sha256)
    ]


def repeatability_blockers(
    policy: Policy,
    study: RepeatabilityStudy | None,
    *,
    earlier: list[RepeatabilityStudy] | tuple[RepeatabilityStudy, ...] = (),
    fingerprint: str | None = None,
    dataset_sha256: str | None = None,
    min_repeats: int = DEFAULT_MIN_REPEATS,
    partition: str = DEFAULT_PARTITION,
) -> list[Blocker]:
    """What a policy's ``max_flip_rate`` limits need (a complete study of this candidate and gold
    with ``min_repeats``) and block, and the critical boundary crossings of this and ``earlier``
    studies of the fingerprint; none is waivable."""
    limited = {
        name: spec.max_flip_rate
        for name, spec in policy.slices.items()
        if spec.max_flip_rate is not None
    }
    fix_cmd = (
        f"run `workbench repeatability --candidate SPEC --gold GOLD --partition {partition}"
        f" --repeats {min_repeats}`"
    )
    if study is None:
        message = (
            f"the policy limits the flip rate of {', '.join(sorted(limited))} but there is no"
            f" repeatability study of this candidate: {fix_cmd}"
        )
        evidence = {"slices": sorted(limited)}
        return (
            [blocker("repeatability_study_missing", message, evidence=evidence)] if limited else []
        )
    out: list[Blocker] = []
    if limited:
        wanted = (fingerprint, dataset_sha256, partition, min_repeats)
        out += _study_fit_blockers(study, *wanted, fix_cmd)
        out += _flip_rate_blockers(policy, study, limited)
    return out + _crossing_blockers(study, earlier)


def _study_fit_blockers(
    study: RepeatabilityStudy,
    fingerprint: str | None,
    dataset_sha256: str | None,
    partition: str,
    min_repeats: int,
    fix_cmd: str,
) -> list[Blocker]:
    """Each way the study is not of this candidate, gold, partition and K, or incomplete."""
    out: list[Blocker] = []
    sid = study.study_id
    if fingerprint is not None and study.candidate_fingerprint != fingerprint:
        message = (
            f"the repeatability study is of {study.candidate} ({study.candidate_fingerprint[:12]}),"
            f" not the candidate certified ({fingerprint[:12]}): {fix_cmd}"
        )
        out.append(blocker("repeatability_study_other_candidate", message, evidence={"study": sid}))
    if dataset_sha256 is not None and study.dataset_sha256 != dataset_sha256:
        message = (
            f"the repeatability study ran on dataset {study.dataset_sha256[:12]}, not"
            f" {dataset_sha256[:12]}: {fix_cmd}"
        )
        out.append(blocker("repeatability_study_other_gold", message, evidence={"study": sid}))
    if study.partition != partition:
        message = (
            f"the repeatability study is on {study.partition}; certification wants it on"
            f" {partition}: {fix_cmd}"
        )
        evidence = {"study": sid, "partition": study.partition}
        out.append(blocker("repeatability_wrong_partition", message, evidence=evidence))
    if study.repeats < min_repeats:
        message = (
            f"the repeatability study has K={study.repeats} repeats; certification wants K >="
            f" {min_repeats}: {fix_cmd}"
        )
        more = {"repeats": study.repeats, "min_repeats": min_repeats}
        out.append(
            blocker("repeatability_too_few_repeats", message, evidence={"study": sid, **more})
        )
    if study.status != "complete":
        message = "the repeatability study is incomplete: " + "; ".join(study.incomplete_reasons)
        out.append(blocker("repeatability_incomplete", message, evidence={"study": sid}))
    return out


def _flip_rate_blockers(
    policy: Policy, study: RepeatabilityStudy, limited: dict[str, float]
) -> list[Blocker]:
    out: list[Blocker] = []
    rows = {s.slice: s for s in study.slices}
    for name, limit in sorted(limited.items()):
        row = rows.get(name)
        where = {"slice": name, "risk": policy.slices[name].risk.value}
        if row is None or row.assessed == 0:
            message = (
                f"slice {name} limits the flip rate to {limit:g}, but the study assessed none of"
                " its cases"
            )
            evidence = {"study": study.study_id, "limit": limit}
            out.append(blocker("flip_rate_unmeasured", message, **where, evidence=evidence))
            continue
        rate = row.flip_rate
        assert rate.rate is not None
        if rate.rate <= limit:
            continue
        message = (
            f"slice {name}: {row.flipped} of {row.assessed} cases changed verdict across"
            f" {study.repeats} repeats of the same judge (flip rate {rate.rate:.3f} > {limit:g})"
        )
        evidence = {"study": study.study_id, "flipped": row.flipped, "assessed": row.assessed}
        evidence |= rate.model_dump(include={"rate", "ci95_low", "ci95_high"})
        evidence |= {"limit": limit, "repeats": study.repeats}
        flipped = [c.case_id for c in study.cases if c.slice == name and c.flipped]
        out.append(
            blocker("flip_rate_exceeded", message, **where, evidence=evidence, case_ids=flipped)
        )
    return out


def _crossing_blockers(
    study: RepeatabilityStudy,
    earlier: list[RepeatabilityStudy] | tuple[RepeatabilityStudy, ...],
) -> list[Blocker]:
    """Per slice, the critical crossings of this and earlier studies (a calmer one erases none)."""
    crossings: dict[str, dict[str, list[str]]] = {}
    risks: dict[str, str | None] = {}
    same = [
        e
        for e in earlier
        if e.candidate_fingerprint == study.candidate_fingerprint and e.study_id != study.study_id
    ]
    for each in [*same, study]:
        for c in each.cases:
            if c.needs_review:
                crossings.setdefault(c.slice, {}).setdefault(c.case_id, []).append(each.study_id)
                risks[c.slice] = c.risk
    out: list[Blocker] = []
    for name, cases in crossings.items():
        ids = sorted(cases)
        studies = sorted({sid for sids in cases.values() for sid in sids})
        message = (
            f"slice {name}: {len(ids)} case(s) crossed the pass/fail boundary across repeats of"
            f" the same pinned judge ({len(studies)} stud{'y' if len(studies) == 1 else 'ies'});"
            " each needs human review (tighten the evidence, widen review or remove authority),"
            " not more retries"
        )
        evidence = {"studies": studies, "cases": len(ids), "repeats": study.repeats}
        where: dict[str, Any] = {"slice": name, "risk": risks[name], "evidence": evidence}
        where["case_ids"] = ids
        out.append(blocker("boundary_crossing_critical", message, **where))
    return out


def _check_budget(
    judge: Judge,
    cases: list[Any],
    partition: str,
    repeats: int,
    out: Any,
    budget: float,
    cache: Any,
) -> None:
    from ..migration import BudgetInsufficient
    from ..runs import estimate_run

    items = [
        WorkItem(c.case_id, c.response_hash, r, JudgeInput.from_case(c))
        for c in cases
        for r in range(repeats)
    ]
    estimate = estimate_run("repeatability", judge, items, out, cache_dir=cache)
    if estimate.needed_usd > budget + 1e-12:
        message = (
            f"{repeats} repeats of {judge.spec.label} on {len(cases)} {partition} case(s) need up"
            f" to ${estimate.needed_usd:.4f} ({estimate.calls} call(s); the engine's reservations,"
            f" one attempt each), the budget is ${budget:.4f}"
        )
        fix = f"give --budget-usd {estimate.needed_usd:.4f} or more, or fewer repeats"
        raise BudgetInsufficient(
            "the budget does not cover the study: nothing was started",
            [problem("--budget-usd", "budget_insufficient", message, fix)],
        )


async def run_repeatability(
    candidate: Judge | str | Path,
    gold: GoldDataset | str | Path,
    partition: str,
    repeats: int,
    out: str | Path,
    *,
    log: str | Path | None | Literal[False] = None,
    budget_usd: float | None = None,
    concurrency: int = 8,
    cache_dir: str | Path | None | Literal[False] = None,
    progress: bool = True,
) -> RepeatabilityStudy:
    """Run ``candidate`` ``repeats`` times on ``partition`` and record the study in ``log``
    (default beside the gold; False: not recorded); refused before any call when over budget."""
    check_run_arguments(concurrency=concurrency, budget_usd=budget_usd, repeats=repeats)
    refuse_held_out(partition, where="repeatability --partition")
    partition = partition_name(partition)
    if repeats < 2:
        message = f"{repeats} repeat(s) cannot show a flip"
        fix = "give --repeats 3 or more (certification wants K >= 3)"
        raise refusal("too few repeats", "--repeats", "too_few_repeats", message, fix)
    dataset = gold if isinstance(gold, GoldDataset) else load_dataset(gold)
    judge = candidate if not isinstance(candidate, str | Path) else load_candidate(candidate)
    cases = dataset.partition(partition)
    if not cases:
        message = f"partition {partition!r} has no cases"
        fix = "choose a partition that has cases"
        raise refusal("nothing to study", str(dataset.gold_path), "empty_partition", message, fix)
    refuse_held_out_content(cases, dataset, str(dataset.gold_path))
    if budget_usd is not None:
        _check_budget(judge, cases, partition, repeats, out, budget_usd, cache_dir)
    summary = await run_candidate(
        judge,
        dataset,
        partition,
        out,
        RunOptions(
            repeats=repeats,
            concurrency=concurrency,
            budget_usd=budget_usd,
            cache_dir=cache_dir,
            progress=progress,
        ),
    )
    study = study_from_run(out, dataset, summary=summary)
    if log is not False:
        append_to_log(log if log is not None else studies_path_for(dataset), study)
    return study


def run_repeatability_sync(*args: Any, **kwargs: Any) -> RepeatabilityStudy:
    """:func:`run_repeatability` for scripts and the CLI."""
    return asyncio.run(run_repeatability(*args, **kwargs))


def _interval(rate: GroupedRate) -> str:
    return (
        f"{rate.rate:.3f} [{rate.ci95_low:.3f}, {rate.ci95_high:.3f}]"
        if rate.rate is not None
        else "undefined"
    )


def _repeat_lines(s: SliceRepeatability, repeats: int) -> list[str]:
    """The slice's cluster-aware figures: items and groups beside judgments."""
    out = []
    flips = s.flip_rate_grouped
    if flips is not None and flips.n > flips.groups:
        out.append(
            f"    flip rate by gold group: {flips.k} / {flips.n} cases in {flips.groups} groups ="
            f" {_interval(flips)}"
        )
    fp = s.false_pass_repeats
    if fp is not None and fp.n:
        out.append(
            f"    false passes over the {repeats} repeats: {fp.k} / {fp.n} judgments of"
            f" {s.false_pass_items} human-fail cases in {fp.groups} groups = {_interval(fp)}"
            f" (worth {fp.n_effective:.1f} independent judgments)"
        )
    return out


def format_study(study: RepeatabilityStudy) -> str:
    """A plain-text account for the terminal."""
    lines = [
        f"repeatability of {study.candidate} ({study.candidate_fingerprint[:12]}) on"
        f" {study.partition}: K={study.repeats}, {study.overall.cases} cases,"
        f" {study.status.upper()} (study {study.study_id})"
    ]
    lines += [f"  incomplete: {reason}" for reason in study.incomplete_reasons]
    lines.append(
        "per slice: flipped / assessed = flip rate [95% Wilson]; mean majority share; boundary"
        " crossings"
    )
    for s in [*study.slices, study.overall]:
        rate = s.flip_rate
        shown = (
            f"{rate.rate:.3f} [{rate.ci95_low:.3f}, {rate.ci95_high:.3f}]"
            if rate.rate is not None
            else "undefined"
        )
        share = f"{s.mean_majority_share:.3f}" if s.mean_majority_share is not None else "-"
        lines.append(
            f"  {s.slice:26} {(s.risk or ''):8} {s.flipped:>3} / {s.assessed:<3} = {shown};"
            f" majority share {share}; crossings {s.boundary_crossing}"
            + (f"; incomplete {s.incomplete}" if s.incomplete else "")
        )
        lines += _repeat_lines(s, study.repeats)
    lines.append("per repeat: attempts, cached, cost, tokens in/out")
    lines += [
        f"  repeat {r.repeat}: {r.attempts} attempts, {r.cached} cached, ${r.cost_usd:.4f},"
        f" {r.tokens_in}/{r.tokens_out} tokens"
        for r in study.per_repeat
    ]
    flipped = [c for c in study.cases if c.flipped]
    lines += [
        f"  flipped {c.case_id} ({c.slice}, human {c.human_label}): "
        + " | ".join(v or "-" for v in c.verdicts)
        + (" BOUNDARY" if c.boundary_crossing else "")
        for c in flipped[:20]
    ]
    if len(flipped) > 20:
        lines.append(f"  ... and {len(flipped) - 20} more flipped case(s)")
    if study.review:
        lines.append(
            f"REVIEW: {len(study.review)} case(s) in critical slices crossed the pass/fail boundary"
            " under the same judge (review them; do not retry them away): "
            + ", ".join(study.review)
        )
    return "\n".join(lines)
