"""Lineage: results meet only the gold they were produced against (the run manifest beside
them, else the lineage each result carries); a changed gold is refused with the cases that
changed, unless ``allow_gold_change`` marks the join not comparable."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, ValidationError

from .._io import JSONRecordError, read_json_file
from .._record import Record as _Model
from ..approval import changed_fields, describe
from ..errors import Problem, WorkbenchError, problem, refusal
from ..gold import PARTITIONS, GoldDataset, Partition, case_hashes
from ..results import ResultLine, scan_results
from ._join import Join, join_results

if TYPE_CHECKING:
    from ..results import RunManifest
    from ..sampling import SamplingPlan

LineageSource = Literal["run_manifest", "results", "none", "no_results"]

FIX_CHANGED = (
    "re-run the judge on this gold (`workbench run`), or give the gold the results were produced"
    " against; --allow-gold-change aligns anyway and marks the report not comparable"
)
FIX_MISSING = (
    "re-run the judge with `workbench run` (results then carry their gold), or declare the gold"
    " they were produced against with `workbench import results FILE --gold GOLD --out DIR`;"
    " --allow-gold-change aligns anyway and marks the report not comparable"
)


class GoldChange(_Model):
    """One judged case whose gold record changed since the results were produced."""

    case_id: str
    """The case id the results refer to."""
    changes: list[str]
    """What changed: field groups (``label``, ``response``, ``notes``, ``grading``,
    ``reviews``, ``placement``, ``other``), or ``removed`` / ``superseded``."""
    detail: str
    """The same in words, e.g. ``label, notes`` or ``superseded by case-7b``."""


class Lineage(_Model):
    """The lineage check of one results file against one gold dataset."""

    source: LineageSource
    """``run_manifest``, ``results`` (their own fields), ``none`` or ``no_results``."""
    manifest_path: str | None = None
    """The run manifest read, if any."""
    results_dataset_sha256: str | None = None
    """The dataset hash the results were produced against."""
    results_rubric_version: str | None = None
    """The rubric version the results were produced against."""
    results_release: str | None = None
    """The frozen release the run used (from the manifest, or the release with that hash)."""
    gold_dataset_sha256: str
    """The hash of the gold given."""
    gold_rubric_version: str
    """The rubric version of the gold given."""
    gold_release: str | None = None
    """The frozen release of the gold given, or None when that state was never frozen."""
    comparable: bool
    """True when the results were produced against exactly the gold given."""
    allowed: bool = False
    """True when a mismatch was accepted with ``--allow-gold-change`` (``comparable`` is then
    False)."""
    cases_known: bool = True
    """False when the changed cases cannot be listed (no per-case hashes for the results' gold)."""
    gold_changes: list[GoldChange] = Field(default_factory=list)
    """Every judged case that changed, with what changed."""
    problems: list[str] = Field(default_factory=list)
    """Why the lineage does not hold, one sentence each (empty when comparable)."""


class _Observer:
    """Watches results stream past (into the join) and remembers their lineage."""

    def __init__(self) -> None:
        self.lineages: Counter[tuple[str | None, str | None]] = Counter()
        self.run_ids: set[str] = set()
        self.case_ids: set[str] = set()
        self.read = 0

    def watch(self, items: Iterable[ResultLine | Problem]) -> Iterator[ResultLine | Problem]:
        lineages, run_ids, case_ids = self.lineages, self.run_ids, self.case_ids
        for item in items:
            if type(item) is ResultLine:
                r = item.result
                lineages[(r.dataset_sha256, r.rubric_version)] += 1
                run_ids.add(r.run_id)
                case_ids.add(r.case_id)
            yield item
        self.read = sum(lineages.values())

    def check(
        self,
        dataset: GoldDataset,
        manifest: RunManifest | None,
        manifest_path: Path | None,
        allow_gold_change: bool,
        location: str,
        extra: Iterable[Problem] = (),
    ) -> Lineage:
        """The lineage of what was watched; refused (with ``extra`` after) when it does not hold."""
        lineage, problems = check_lineage(
            dataset,
            lineages=self.lineages,
            run_ids=self.run_ids,
            case_ids=self.case_ids,
            manifest=manifest,
            manifest_path=manifest_path,
            allow_gold_change=allow_gold_change,
        )
        if problems:
            raise WorkbenchError(
                f"{location}: refusing to compare: the results were not produced against this"
                f" gold ({len(problems)} problem(s))",
                [*problems, *extra],
            )
        return lineage


def manifest_path_for(results: str | Path) -> Path:
    """The run manifest's path: ``manifest.json`` beside the results file, or in the shard
    directory."""
    from ..results import MANIFEST_FILE

    path = Path(results)
    return (path if path.is_dir() else path.parent) / MANIFEST_FILE


def read_run_manifest(results: str | Path) -> RunManifest | None:
    """The run manifest beside ``results``, or None; unreadable: :class:`WorkbenchError`."""
    from ..results import RunManifest

    path = manifest_path_for(results)
    if not path.exists():
        return None
    try:
        return RunManifest.model_validate(read_json_file(path))
    except (OSError, ValueError, ValidationError, RecursionError) as exc:
        reason = (
            exc.strerror
            if isinstance(exc, OSError)
            else exc.msg
            if isinstance(exc, JSONRecordError)
            else type(exc).__name__
        )
        raise refusal(
            "unreadable run manifest",
            str(path),
            "manifest_invalid",
            f"the run manifest beside the results cannot be read ({reason})",
            "restore the manifest.json the run wrote, or move the results away from a"
            " foreign manifest",
        ) from None


def partition_from_manifest(manifest: RunManifest | None) -> str | None:
    """The gold partition a run judged, or None (no manifest, or not a gold partition)."""
    if manifest is None or manifest.partition not in PARTITIONS:
        return None
    return manifest.partition


PartitionSource = Literal["option", "run_manifest", "all"]
"""Where the analysed partition came from (:func:`resolve_partition`)."""


def resolve_partition(
    results: str | Path, partition: str | None
) -> tuple[str | None, PartitionSource]:
    """The partition to analyse (None: the one the run manifest beside ``results`` names) and
    where it came from: ``option``, ``run_manifest`` or ``all``."""
    if partition is not None:
        return Partition(partition).value, "option"
    found = partition_from_manifest(read_run_manifest(results))
    return (found, "run_manifest") if found is not None else (None, "all")


def check_lineage(
    dataset: GoldDataset,
    *,
    lineages: Counter[tuple[str | None, str | None]] | dict[tuple[str | None, str | None], int],
    run_ids: Iterable[str] = (),
    case_ids: Iterable[str] = (),
    manifest: RunManifest | None = None,
    manifest_path: str | Path | None = None,
    allow_gold_change: bool = False,
) -> tuple[Lineage, list[Problem]]:
    """Compare what results were produced against (``lineages``: their ``(dataset_sha256,
    rubric_version)`` counts) with ``dataset``; return the :class:`Lineage` and the problems that
    refuse the comparison (none when ``allow_gold_change`` accepted the mismatch)."""
    loc = str(dataset.gold_path)
    release = dataset.release
    base: dict[str, Any] = {
        "gold_dataset_sha256": dataset.sha256,
        "gold_rubric_version": dataset.rubric.version,
        "gold_release": release.release_id if release else None,
        "manifest_path": str(manifest_path) if manifest_path and manifest is not None else None,
        "allowed": allow_gold_change,
    }
    problems: list[Problem] = []
    manifest_loc = str(manifest_path or loc)
    mismatch = (
        None if manifest is None else _manifest_mismatch(manifest, set(run_ids), manifest_loc)
    )
    problems += [mismatch] if mismatch else []
    # the run manifest is the results' lineage when it has one and is theirs
    has_lineage = manifest is not None and manifest.rubric_version is not None
    used = manifest if has_lineage and mismatch is None else None
    carried = [key for key in lineages if lineages[key]]
    problems += _mixed_lineages(lineages, carried, loc)
    if used is None and sum(lineages.values()) == 0:
        return Lineage(source="no_results", comparable=True, cases_known=True, **base), []
    field = carried[0] if len(carried) == 1 else (None, None)
    source, res_sha, res_rubric = _results_lineage(used, field, problems, loc, manifest_loc)
    results_release = used.gold_release if used is not None else None
    if results_release is None and res_sha is not None:
        frozen = dataset.release_for(res_sha)
        results_release = frozen.release_id if frozen else None
    fields = {
        "results_dataset_sha256": res_sha,
        "results_rubric_version": res_rubric,
        "results_release": results_release,
    }
    if not problems and res_sha == dataset.sha256 and res_rubric == dataset.rubric.version:
        return Lineage(source=source, comparable=True, **fields, **base), []
    changes: list[GoldChange] | None = None
    if res_sha is not None and res_rubric is not None:
        changes = _gold_changed(dataset, used, set(case_ids), fields, problems)
    lineage = Lineage(
        source=source,
        comparable=False,
        cases_known=changes is not None,
        gold_changes=changes or [],
        problems=[p.message for p in problems if p.case_id is None],
        **fields,
        **base,
    )
    return lineage, ([] if allow_gold_change else problems)


def _manifest_mismatch(manifest: RunManifest, run_ids: set[str], at: str) -> Problem | None:
    if not run_ids or run_ids <= {manifest.run_id}:
        return None
    others = sorted(run_ids - {manifest.run_id})
    message = (
        f"the run manifest beside the results is of run {manifest.run_id[:12]}, but results come"
        f" from run(s) {', '.join(o[:12] for o in others[:3])}{' ...' if len(others) > 3 else ''}"
    )
    fix = (
        "keep each run's results.jsonl with its own manifest.json; results of several runs are"
        " never mixed in one file"
    )
    return problem(at, "lineage_manifest_mismatch", message, fix)


def _mixed_lineages(
    lineages: dict[tuple[str | None, str | None], int],
    carried: list[tuple[str | None, str | None]],
    loc: str,
) -> list[Problem]:
    if len(carried) <= 1:
        return []
    listing = "; ".join(
        f"{(sha or '(none)')[:12]}/{rubric or '(none)'}: {lineages[(sha, rubric)]} result(s)"
        for sha, rubric in carried
    )
    message = f"the results carry {len(carried)} different gold lineages ({listing})"
    fix = (
        "align results of one run against the one gold they were produced against; split the"
        " file or re-run"
    )
    return [problem(loc, "lineage_mixed", message, fix)]


def _results_lineage(
    manifest: RunManifest | None,
    field: tuple[str | None, str | None],
    problems: list[Problem],
    loc: str,
    manifest_loc: str,
) -> tuple[LineageSource, str | None, str | None]:
    """The results' lineage: their run manifest, else their own fields, else none."""
    if manifest is not None:
        assert manifest.rubric_version is not None
        sha, rubric = manifest.dataset_sha256, manifest.rubric_version
        if field != (None, None) and field != (sha, rubric):
            message = (
                f"the results say dataset {str(field[0])[:12]} (rubric {field[1]}) but their run"
                f" manifest says dataset {sha[:12]} (rubric {rubric})"
            )
            fix = (
                "results must not be edited by hand or moved between run directories; re-run the"
                " judge"
            )
            problems.append(problem(manifest_loc, "lineage_conflict", message, fix))
        return "run_manifest", sha, rubric
    if field[0] is not None and field[1] is not None and not problems:
        return "results", field[0], field[1]
    if not problems:
        message = (
            "the results carry no gold lineage: no dataset_sha256 and rubric_version on them and"
            " no run manifest beside them"
        )
        problems.append(problem(loc, "lineage_missing", message, FIX_MISSING))
    return "none", field[0], field[1]


def _gold_changed(
    dataset: GoldDataset,
    manifest: RunManifest | None,
    case_ids: set[str],
    fields: dict[str, str | None],
    problems: list[Problem],
) -> list[GoldChange] | None:
    """The judged cases that changed (None: cannot be listed), with their problems."""
    res_sha, res_rubric = fields["results_dataset_sha256"], fields["results_rubric_version"]
    assert res_sha is not None
    if res_sha == dataset.sha256 and res_rubric == dataset.rubric.version:
        return None
    reference = _reference_hashes(dataset, manifest, res_sha, case_ids)
    changes = _changes(dataset, reference) if reference is not None else None
    loc = str(dataset.gold_path)
    results_release, release = fields["results_release"], dataset.release
    headline = (
        f"the results were produced against dataset {res_sha[:12]} (rubric"
        f" {res_rubric}{', release ' + results_release if results_release else ''}), the gold"
        f" given is dataset {dataset.sha256[:12]} (rubric"
        f" {dataset.rubric.version}{', release ' + release.release_id if release else ''})"
    )
    detail = []
    if res_rubric != dataset.rubric.version:
        detail.append(f"rubric version {res_rubric} -> {dataset.rubric.version}")
    if changes is None:
        detail.append(
            "which cases changed cannot be listed: no run manifest with per-case hashes beside the"
            " results and no frozen release of that dataset (`workbench freeze`)"
        )
    elif changes:
        detail.append(f"{len(changes)} judged case(s) changed")
    else:
        detail.append(
            "no judged case changed, so the gold changed elsewhere (other cases, rubric.yaml or"
            " the evidence snapshot)"
        )
    problems.insert(
        0, problem(loc, "gold_changed", headline + ": " + "; ".join(detail), FIX_CHANGED)
    )
    for change in changes or []:
        message = (
            f"{change.detail} changed since the results were produced"
            if change.changes[0] not in ("removed", "superseded")
            else change.detail
        )
        problems.append(problem(loc, "gold_changed", message, FIX_CHANGED, change.case_id))
    return changes


def _reference_hashes(
    dataset: GoldDataset, manifest: RunManifest | None, res_sha: str, case_ids: set[str]
) -> dict[str, dict[str, str]] | None:
    """The per-case field hashes of the results' gold (manifest, else a release), or None."""
    if manifest is not None and all(c.gold is not None for c in manifest.cases):
        return {c.case_id: c.gold for c in manifest.cases if c.gold is not None}
    frozen = dataset.release_for(res_sha)
    if frozen is None:
        return None
    return {cid: h for cid, h in frozen.fields.items() if cid in case_ids}


def _changes(dataset: GoldDataset, reference: dict[str, dict[str, str]]) -> list[GoldChange]:
    by_id = {r.case_id: r for r in dataset.records}
    out: list[GoldChange] = []
    since = "since the results were produced"
    for case_id in sorted(reference):
        record = by_id.get(case_id)
        if record is None:
            groups, detail = ["removed"], f"removed from the gold {since}"
        elif case_id in dataset.superseded_by:
            groups = ["superseded"]
            detail = f"superseded by {dataset.latest_id(case_id)!r} {since}"
        else:
            changed = changed_fields(reference[case_id], case_hashes(record))
            groups = [g for g in changed if g != "rubric"]
            detail = describe(groups)
        if groups:
            out.append(GoldChange(case_id=case_id, changes=groups, detail=detail))
    return out


def align_results(
    dataset: GoldDataset,
    results: str | Path | Iterable[ResultLine | Problem],
    *,
    partition: str | Partition | None = None,
    repeat: int = 0,
    allow_gold_change: bool = False,
    manifest: RunManifest | None = None,
    location: str | None = None,
    sampling_plan: SamplingPlan | None = None,
) -> Join:
    """Join results (a file, or lines with their ``manifest``) to ``dataset`` and check their
    lineage; raises :class:`WorkbenchError` with the lineage problems and the join's refusals.
    ``sampling_plan``: the declared plan under which the manifest's sampled-out cases leave the
    scope (:mod:`workbench.align._sampled`); otherwise they are missing."""
    manifest_file: Path | None = None
    if isinstance(results, str | Path):
        location = location or str(results)
        manifest_file = manifest_path_for(results)
        if manifest is None:
            manifest = read_run_manifest(results)
        items: Iterable[ResultLine | Problem] = scan_results(results)
    else:
        location = location or "results"
        items = results
    from ._sampled import verified_sampled_out

    # Cases a declared plan left out (re-drawn from the plan in the manifest) are out of scope.
    sampled_out, plan_sha, rejected = verified_sampled_out(manifest, dataset, sampling_plan)
    observer = _Observer()
    join: Join | None = None
    join_error: WorkbenchError | None = None
    try:
        join = join_results(
            dataset,
            observer.watch(items),
            partition=partition,
            repeat=repeat,
            location=location,
            sampled_out=sampled_out,
        )
    except WorkbenchError as exc:
        join_error = exc
    lineage = observer.check(
        dataset,
        manifest,
        manifest_file,
        allow_gold_change,
        location,
        join_error.problems if join_error is not None else [],
    )
    if join_error is not None:
        raise join_error
    assert join is not None
    return replace(
        join,
        lineage=lineage,
        sampling_plan_sha256=plan_sha if join.sampled_out else None,
        sampling_rejected=rejected,
    )


def lineage_problems(join: Join, *, where: str, allow_forced: bool = False) -> list[Problem]:
    """Why ``join`` may not be compared: its lineage was not checked, or does not hold
    (``allow_forced`` accepts a mismatch accepted with ``allow_gold_change``)."""
    lineage = join.lineage
    if lineage is None:
        return [
            problem(
                where,
                "lineage_unchecked",
                "the join was built without a lineage check, so it is unknown whether the"
                " results were produced against this gold",
                "build joins with workbench.align.align_results (or a phase session), which"
                " checks lineage",
            )
        ]
    if lineage.comparable or (allow_forced and lineage.allowed):
        return []
    changed = (
        ", ".join(f"{c.case_id} ({c.detail})" for c in lineage.gold_changes) or "cases unknown"
    )
    message = (
        f"the results were not produced against this gold: {'; '.join(lineage.problems)};"
        f" changed: {changed}"
    )
    return [problem(where, "gold_changed", message, FIX_CHANGED)]


def require_comparable(join: Join, *, where: str, allow_forced: bool = False) -> None:
    """Raise :class:`WorkbenchError` with :func:`lineage_problems`, if there are any."""
    problems = lineage_problems(join, where=where, allow_forced=allow_forced)
    if problems:
        raise WorkbenchError(
            f"{where}: refusing to compare results with gold they were not produced against",
            problems,
        )


def check_results_file(
    dataset: GoldDataset, results: str | Path, *, allow_gold_change: bool = False
) -> Lineage:
    """The lineage check of a results file on its own; raises :class:`WorkbenchError` when it
    does not hold, unless ``allow_gold_change``."""
    observer = _Observer()
    for _ in observer.watch(scan_results(results)):
        pass
    manifest = read_run_manifest(results)
    return observer.check(
        dataset, manifest, manifest_path_for(results), allow_gold_change, str(results)
    )
