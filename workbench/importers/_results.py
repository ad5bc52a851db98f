"""``workbench import results``: declare the gold that judge results were produced against,
after checking each against it, and write them stamped with its lineage; predictions tables go
through a mapping (:mod:`._results_table`)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from .._load import Problems
from ..errors import Problem, WorkbenchError
from ..gold import GoldIndex, Partition, gold_index
from ..heldout import exposed_in_index, exposure_problems
from ..results import (
    GoldCheckFixes,
    MigrationTally,
    ResultLine,
    check_against_gold,
    scan_results,
)
from ._registry import RESULTS_FILE, check_out_dir, refuse, write_files
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

_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True)
"""How importers write JSON Lines (:func:`~._registry.jsonl_text`), made once for every line."""

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
    index = gold_index(gold)  # validated once per dataset sha256, as align reads it
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
    declared = _Declaration(index, source, gold)
    write_files(out, {RESULTS_FILE: declared.write}, "cannot import results", [])
    return ResultsImport(
        source=str(source),
        out=str(target),
        results=declared.tally.results,
        dataset_sha256=index.sha256,
        rubric_version=index.rubric.version,
        release_id=index.release.release_id if index.release else None,
        migration_note=declared.tally.note(),
        held_out=declared.held_out,
    )


class _Record(NamedTuple):
    """What the checks read of one gold record."""

    response_hash: str
    partition: Partition


class _Gold:
    """The gold as the line checks read it, from its index: every record (superseded ones
    included) and the corrections."""

    def __init__(self, index: GoldIndex) -> None:
        table = index.table
        partitions = {p.value: p for p in Partition}
        columns = (table[name].to_pylist() for name in ("case_id", "response_hash", "partition"))
        self.records = {
            case_id: _Record(sha, partitions[name])
            for case_id, sha, name in zip(*columns, strict=True)
        }
        self.superseded_by: Mapping[str, str] = index.superseded_by()

    def latest_id(self, case_id: str) -> str:
        """The active id for ``case_id``, following corrections."""
        return self.superseded_by.get(case_id, case_id)


class _Declaration:
    """One pass over a results file declared as produced against a gold: each line read (an
    older one migrated), checked against the gold's index and written, stamped with its lineage,
    as it passes; every problem is found before anything is kept."""

    def __init__(self, index: GoldIndex, source: Path, gold: str | Path) -> None:
        self.index = index
        self.source = source
        self.gold = gold
        self.tally = MigrationTally()
        self.held_out = 0
        self.contract: list[Problem] = []
        """Lines that break the judge-result contract (then nothing else is checked)."""
        self.problems = Problems()
        self.seen: dict[tuple[str, int, int], int] = {}
        self.lineages: Counter[tuple[str | None, str | None]] = Counter()
        self.judged: dict[str, None] = {}
        """Every case id of the results, in the order first read."""

    def write(self, fh: BinaryIO) -> None:
        """Read, check and write every line to ``fh``; raise every problem at the end."""
        gold = _Gold(self.index)
        stamp = {"dataset_sha256": self.index.sha256, "rubric_version": self.index.rubric.version}
        for item in scan_results(self.source, migrate=True, gold=self.index):
            if not isinstance(item, ResultLine):
                self.contract.append(item)
            elif not self.contract:
                self._check(item, gold)
                row = item.result.model_dump(mode="json")
                row.update(stamp)
                fh.write(_ENCODER.encode(row).encode() + b"\n")
        if self.contract:
            raise WorkbenchError(
                f"{self.source}: {len(self.contract)} result line(s) break the judge-result"
                " contract",
                self.contract,
            )
        self._lineage()
        self.problems += exposure_problems(
            *exposed_in_index(self.index, self.judged), str(self.source)
        )
        self.problems.raise_if_any(
            f"{self.source}: refusing to declare these results as produced against {self.gold}:"
            f" {len(self.problems)} problem(s)"
        )

    def _check(self, line: ResultLine, gold: _Gold) -> None:
        r, where = line.result, f"{self.source}:{line.line}"
        self.tally.add(r)
        self.held_out += r.partition == "held_out"
        self.judged[r.case_id] = None
        self.lineages[(r.dataset_sha256, r.rubric_version)] += 1
        mismatch = check_against_gold(r, gold.records.get(r.case_id), gold, where, _IMPORT_FIXES)
        key = (r.case_id, r.repeat, r.attempt)
        if mismatch is not None:
            self.problems.append(mismatch)
        elif key in self.seen:
            self.problems.add(
                where,
                "duplicate_result",
                f"second result for repeat {r.repeat}, attempt {r.attempt} (first on line"
                f" {self.seen[key]})",
                "keep one result per case, repeat and attempt",
                case_id=r.case_id,
            )
        else:
            self.seen[key] = line.line

    def _lineage(self) -> None:
        """Results that name the gold they were produced against: this one."""
        from ..align import check_lineage

        carried = {key: n for key, n in self.lineages.items() if key != (None, None)}
        if not carried:
            return
        index = self.index
        own = {(index.sha256, index.rubric.version)}
        # another gold's lineage: which judged cases changed is read from the full records
        dataset = index if set(carried) == own else index.dataset()
        _, problems = check_lineage(dataset, lineages=carried, case_ids=self.judged)  # type: ignore[arg-type]
        fix = (
            "these results name the gold they were produced against; import or align them against"
            " that gold, or re-run the judge on this one"
        )
        self.problems[:0] = [p.model_copy(update={"fix": fix}) for p in problems]
