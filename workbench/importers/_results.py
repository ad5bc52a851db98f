"""``workbench import results``: declare the gold that judge results were produced against.

Results produced outside the workbench (another harness, an older workbench) carry no
lineage, so ``align``, ``gate`` and the ``imported`` judge kind refuse them. Importing them
states which gold they were produced against: every result is checked against that gold
(the case exists and is active, the judged response hash and the partition equal the gold
record's, no duplicate attempt), results that already carry another gold's lineage are
refused, and the results are written to ``OUT/results.jsonl`` stamped with the gold's
``dataset_sha256`` and ``rubric_version``. Nothing else about a result changes, so its judge
fingerprint stays the same. Records written under an older result schema are migrated on read
(:func:`workbench.results.migrate_v1_to_v2`, a missing partition taken from the gold), each
recording what was filled, and the summary says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .._io import write_jsonl
from ..errors import Problem, WorkbenchError
from ..gold import load_dataset
from ..results import migration_note, read_results

RESULTS_FILE = "results.jsonl"


@dataclass(frozen=True)
class ResultsImport:
    """What :func:`import_results` wrote."""

    source: str
    out: str
    results: int
    dataset_sha256: str
    rubric_version: str
    release_id: str | None
    migration_note: str | None = None
    """Set when records written under an older result schema were migrated on read."""

    def format(self) -> str:
        release = f"release {self.release_id}" if self.release_id else "not frozen"
        text = f"declared {self.results} result(s) from {self.source} as produced against dataset {self.dataset_sha256[:12]} (rubric {self.rubric_version}, {release}): wrote {self.out}"
        return text + (f"\nnote: {self.migration_note} (each migrated line records it in 'migration')" if self.migration_note else "")


def import_results(source: str | Path, gold: str | Path, out: str | Path, *, force: bool = False) -> ResultsImport:
    """Check ``source`` against ``gold`` and write it, stamped with the gold's lineage, to ``out/results.jsonl``."""
    from ..align import check_lineage

    source, out = Path(source), Path(out)
    dataset = load_dataset(gold)
    if out.exists() and not out.is_dir():
        raise WorkbenchError("cannot import results", [Problem(location=str(out), code="out_not_directory", message="--out names a file, not a directory", fix="point --out at a new or empty directory")])
    target = out / RESULTS_FILE
    if target.exists() and not force and target.resolve() != source.resolve():
        raise WorkbenchError("refusing to overwrite results", [Problem(location=str(target), code="out_not_empty", message="the directory already holds results.jsonl", fix="choose a new directory, or pass --force to replace it")])
    # Results produced elsewhere are often older: declaring their gold migrates them on read,
    # explicitly (workbench.results.migrate_v1_to_v2, partition from this gold) and on the record.
    lines = read_results(source, migrate=True, gold=dataset)
    loc = str(source)
    by_id = {r.case_id: r for r in dataset.records}
    problems: list[Problem] = []
    seen: dict[tuple[str, int, int], int] = {}
    lineages: dict[tuple[str | None, str | None], int] = {}
    for line in lines:
        r = line.result
        where = f"{loc}:{line.line}"
        lineages[(r.dataset_sha256, r.rubric_version)] = lineages.get((r.dataset_sha256, r.rubric_version), 0) + 1
        gold_case = by_id.get(r.case_id)
        if gold_case is None:
            problems.append(Problem(location=where, case_id=r.case_id, code="unknown_case", message="result for a case the gold dataset does not have", fix="import results against the gold they were produced on"))
            continue
        if r.case_id in dataset.superseded_by:
            problems.append(Problem(location=where, case_id=r.case_id, code="superseded_case", message=f"result for a superseded record (corrected by {dataset.latest_id(r.case_id)!r})", fix="results must refer to the latest records; re-run the judge on the current gold"))
            continue
        if r.response_hash != gold_case.response_hash:
            problems.append(Problem(location=where, case_id=r.case_id, code="response_hash_mismatch", message="the judge saw a different response than the reviewers (response_hash differs)", fix="these results were not produced on this gold; re-run the judge on it"))
            continue
        if r.partition is not None and r.partition != gold_case.partition.value:
            problems.append(Problem(location=where, case_id=r.case_id, code="partition_mismatch", message=f"result says partition {r.partition!r}, gold says {gold_case.partition.value!r}", fix="these results were not produced on this gold; re-run the judge on it"))
            continue
        key = (r.case_id, r.repeat, r.attempt)
        if key in seen:
            problems.append(Problem(location=where, case_id=r.case_id, code="duplicate_result", message=f"second result for repeat {r.repeat}, attempt {r.attempt} (first on line {seen[key]})", fix="keep one result per case, repeat and attempt"))
            continue
        seen[key] = line.line
    carried = {key: n for key, n in lineages.items() if key != (None, None)}
    if carried:
        # Results that already name a gold may only be declared against that same gold.
        _, lineage_problems = check_lineage(dataset, lineages=carried, case_ids={line.result.case_id for line in lines})
        fix = "these results name the gold they were produced against; import or align them against that gold, or re-run the judge on this one"
        problems = [*(p.model_copy(update={"fix": fix}) for p in lineage_problems), *problems]
    if problems:
        raise WorkbenchError(f"{source}: refusing to declare these results as produced against {gold}: {len(problems)} problem(s)", problems)
    release = dataset.release
    stamp = {"dataset_sha256": dataset.sha256, "rubric_version": dataset.rubric.version}
    rows = []
    for line in lines:
        row = line.result.model_copy(update=stamp).model_dump(mode="json")
        rows.append(row)
    try:
        out.mkdir(parents=True, exist_ok=True)
        write_jsonl(target, rows)
    except OSError as exc:
        raise WorkbenchError("cannot import results", [Problem(location=str(exc.filename or out), code="out_unwritable", message=f"writing failed ({exc.strerror or exc})", fix="point --out at a writable directory with free space")]) from None
    return ResultsImport(source=str(source), out=str(target), results=len(rows), dataset_sha256=dataset.sha256, rubric_version=dataset.rubric.version, release_id=release.release_id if release else None, migration_note=migration_note(lines))
