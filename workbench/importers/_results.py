"""``workbench import results``: declare the gold that judge results were produced against,
after checking each against it, and write them stamped with its lineage; predictions tables go
through a mapping (:mod:`._results_table`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from .._load import Problems
from ..gold import load_dataset
from ..heldout import exposure_problems, held_out_content
from ..results import GoldCheckFixes, check_against_gold, migration_note, read_results
from ._public import with_lineage
from ._registry import RESULTS_FILE, check_out_dir, jsonl_text, refuse, write_files
from ._results_mapping import ResultsMapping
from ._results_table import ResultsImport, results_from_table

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
    """Import judge results produced elsewhere as produced against ``gold`` into ``out``: a
    results file, or with ``mapping``/``options`` a predictions table
    (:func:`results_from_table`)."""
    if mapping is not None or any(_given(v) for v in (options or {}).values()):
        return results_from_table(source, mapping, gold=gold, options=options).write(
            out, force=force
        )
    source = Path(source)
    if source.suffix.lower() in (".csv", ".parquet", ".pq"):
        refuse(
            "cannot import results",
            str(source),
            "mapping_needed",
            f"a {source.suffix} table needs a mapping: which column is the case key and the"
            " prediction, and who the judge was",
            "pass --mapping FILE (docs/formats.md#results-mapping), or --case-id/--label (or"
            " --score with --threshold) with --name, --version, --model and --prompt-file or"
            " --prompt-description",
        )
    return _import_contract(source, gold, Path(out), force=force)


def _given(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_given(v) for v in value.values())
    return value is not None and value != ()


def _import_contract(source: Path, gold: str | Path, out: Path, *, force: bool) -> ResultsImport:
    dataset = load_dataset(gold)
    check_out_dir(out, "cannot import results")
    target = out / RESULTS_FILE
    if target.exists() and not force and target.resolve() != source.resolve():
        refuse(
            "refusing to overwrite results",
            str(target),
            "out_not_empty",
            "the directory already holds results.jsonl",
            "choose a new directory, or pass --force to replace it",
        )
    lines = read_results(source, migrate=True, gold=dataset)
    problems = _check_lines(lines, dataset, str(source))
    problems.raise_if_any(
        f"{source}: refusing to declare these results as produced against {gold}:"
        f" {len(problems)} problem(s)"
    )
    rows = [r.model_dump(mode="json") for r in with_lineage([x.result for x in lines], dataset)]
    write_files(out, {RESULTS_FILE: jsonl_text(rows)}, "cannot import results", [])
    return ResultsImport(
        source=str(source),
        out=str(target),
        results=len(rows),
        dataset_sha256=dataset.sha256,
        rubric_version=dataset.rubric.version,
        release_id=dataset.release.release_id if dataset.release else None,
        migration_note=migration_note(lines),
        held_out=sum(row.get("partition") == "held_out" for row in rows),
    )


def _check_lines(lines: list[Any], dataset: Any, loc: str) -> Problems:
    from ..align import check_lineage

    by_id = {r.case_id: r for r in dataset.records}
    problems = Problems()
    seen: dict[tuple[str, int, int], int] = {}
    lineages: Counter[tuple[str | None, str | None]] = Counter()
    for line in lines:
        r, where = line.result, f"{loc}:{line.line}"
        lineages[(r.dataset_sha256, r.rubric_version)] += 1
        mismatch = check_against_gold(r, by_id.get(r.case_id), dataset, where, _IMPORT_FIXES)
        key = (r.case_id, r.repeat, r.attempt)
        if mismatch is not None:
            problems.append(mismatch)
        elif key in seen:
            problems.add(
                where,
                "duplicate_result",
                f"second result for repeat {r.repeat}, attempt {r.attempt} (first on line"
                f" {seen[key]})",
                "keep one result per case, repeat and attempt",
                case_id=r.case_id,
            )
        else:
            seen[key] = line.line
    carried = {key: n for key, n in lineages.items() if key != (None, None)}
    if carried:
        _, lineage_problems = check_lineage(
            dataset, lineages=carried, case_ids={line.result.case_id for line in lines}
        )
        fix = (
            "these results name the gold they were produced against; import or align them against"
            " that gold, or re-run the judge on this one"
        )
        problems[:0] = [p.model_copy(update={"fix": fix}) for p in lineage_problems]
    # results for development or calibration cases whose content is held out
    judged = [by_id[c] for c in dict.fromkeys(line.result.case_id for line in lines) if c in by_id]
    exposed = [case for case in judged if case.partition.value != "held_out"]
    problems += exposure_problems(exposed, held_out_content([dataset]), loc)
    return problems
