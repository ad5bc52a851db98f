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

Predictions in any other shape (CSV, JSONL, Parquet or a DataFrame with a case key and a
label or score column, a Ragas experiment's CSV, ``EvaluationResult.to_pandas()``) are
imported with a mapping that declares the judge: see :mod:`._results_table`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._io import write_jsonl
from ..errors import Problem, WorkbenchError
from ..gold import load_dataset
from ..results import migration_note, read_results
from ..results._gold_checks import GoldCheckFixes, check_against_gold
from ._results_mapping import ResultsMapping
from ._results_table import RESULTS_FILE, ResultsImport, results_from_table

_NOT_THIS_GOLD = "these results were not produced on this gold; re-run the judge on it"
_IMPORT_FIXES = GoldCheckFixes(
    unknown_case="import results against the gold they were produced on",
    superseded_case=(
        "results must refer to the latest records; re-run the judge on the current gold"
    ),
    response_hash_mismatch=_NOT_THIS_GOLD,
    partition_mismatch=_NOT_THIS_GOLD,
)

__all__ = ["RESULTS_FILE", "ResultsImport", "import_results"]


def import_results(
    source: str | Path,
    gold: str | Path,
    out: str | Path,
    *,
    force: bool = False,
    mapping: str | Path | dict[str, Any] | ResultsMapping | None = None,
    options: dict[str, Any] | None = None,
) -> ResultsImport:
    """Import judge results produced elsewhere as produced against ``gold``.

    Without ``mapping`` and ``options``, ``source`` is a results file in the judge-result
    contract: it is checked against ``gold`` and written, stamped with the gold's lineage, to
    ``out/results.jsonl``. With them, ``source`` is a predictions table (CSV, JSONL, Parquet)
    read through the mapping; ``out`` receives ``results.jsonl`` and the ``imported``
    candidate ``<name>@<version>.yaml`` (see :func:`results_from_table`).
    """
    if mapping is not None or any(_given(v) for v in (options or {}).values()):
        return results_from_table(source, mapping, gold=gold, options=options).write(
            out, force=force
        )
    source = Path(source)
    if source.suffix.lower() in (".csv", ".parquet", ".pq"):
        raise WorkbenchError(
            "cannot import results",
            [
                Problem(
                    location=str(source),
                    code="mapping_needed",
                    message=(
                        f"a {source.suffix} table needs a mapping: which column is the case key and"
                        " the prediction, and who the judge was"
                    ),
                    fix=(
                        "pass --mapping FILE (docs/formats.md#results-mapping), or"
                        " --case-id/--label (or --score with --threshold) with --name, --version,"
                        " --model and --prompt-file or --prompt-description"
                    ),
                )
            ],
        )
    return _import_contract(source, gold, out, force=force)


def _given(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_given(v) for v in value.values())
    return value is not None and value != ()


def _import_contract(
    source: Path, gold: str | Path, out: str | Path, *, force: bool = False
) -> ResultsImport:
    """Check ``source`` against ``gold`` and write it, stamped with the gold's lineage, to
    ``out/results.jsonl``."""
    from ..align import check_lineage

    out = Path(out)
    dataset = load_dataset(gold)
    if out.exists() and not out.is_dir():
        raise WorkbenchError(
            "cannot import results",
            [
                Problem(
                    location=str(out),
                    code="out_not_directory",
                    message="--out names a file, not a directory",
                    fix="point --out at a new or empty directory",
                )
            ],
        )
    target = out / RESULTS_FILE
    if target.exists() and not force and target.resolve() != source.resolve():
        raise WorkbenchError(
            "refusing to overwrite results",
            [
                Problem(
                    location=str(target),
                    code="out_not_empty",
                    message="the directory already holds results.jsonl",
                    fix="choose a new directory, or pass --force to replace it",
                )
            ],
        )
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
        lineages[(r.dataset_sha256, r.rubric_version)] = (
            lineages.get((r.dataset_sha256, r.rubric_version), 0) + 1
        )
        gold_case = by_id.get(r.case_id)
        mismatch = check_against_gold(r, gold_case, dataset, where, _IMPORT_FIXES)
        if mismatch is not None:
            problems.append(mismatch)
            continue
        key = (r.case_id, r.repeat, r.attempt)
        if key in seen:
            problems.append(
                Problem(
                    location=where,
                    case_id=r.case_id,
                    code="duplicate_result",
                    message=(
                        f"second result for repeat {r.repeat}, attempt {r.attempt} (first on line"
                        f" {seen[key]})"
                    ),
                    fix="keep one result per case, repeat and attempt",
                )
            )
            continue
        seen[key] = line.line
    carried = {key: n for key, n in lineages.items() if key != (None, None)}
    if carried:
        # Results that already name a gold may only be declared against that same gold.
        _, lineage_problems = check_lineage(
            dataset, lineages=carried, case_ids={line.result.case_id for line in lines}
        )
        fix = (
            "these results name the gold they were produced against; import or align them against"
            " that gold, or re-run the judge on this one"
        )
        problems = [*(p.model_copy(update={"fix": fix}) for p in lineage_problems), *problems]
    if problems:
        raise WorkbenchError(
            f"{source}: refusing to declare these results as produced against {gold}:"
            f" {len(problems)} problem(s)",
            problems,
        )
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
        raise WorkbenchError(
            "cannot import results",
            [
                Problem(
                    location=str(exc.filename or out),
                    code="out_unwritable",
                    message=f"writing failed ({exc.strerror or exc})",
                    fix="point --out at a writable directory with free space",
                )
            ],
        ) from None
    return ResultsImport(
        source=str(source),
        out=str(target),
        results=len(rows),
        dataset_sha256=dataset.sha256,
        rubric_version=dataset.rubric.version,
        release_id=release.release_id if release else None,
        migration_note=migration_note(lines),
    )
