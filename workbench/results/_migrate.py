"""Explicit, versioned migrations of judge-result records; nothing else fills a missing field.
A migrated record says so in its ``migration`` field; ``partition`` is read from the gold, else
the migration is refused (``migration_needs_gold``)."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from .._io import JSONRecordError, atomic_write_text, iter_jsonl_lines, json_problem, loads_json
from .._load import Problems
from ..errors import Problem, problem, refusal
from ._contract import RESULT_SCHEMA_VERSION, JudgeResult

if TYPE_CHECKING:
    from ..gold import GoldDataset, GoldIndex

PartitionOf = Callable[[str], "str | None"]
"""Maps a case id to its partition (from a gold dataset), or None when unknown."""

MIGRATE_COMMAND = "workbench migrate results"


class MigrationRefused(ValueError):
    """A record cannot be migrated: ``field`` cannot be filled without more information."""

    def __init__(self, field: str, message: str, fix: str) -> None:
        self.field = field
        self.fix = fix
        super().__init__(message)


def record_version(raw: dict[str, Any]) -> int | None:
    """The record's ``schema_version``: 1 when absent, None when not an int."""
    value = raw.get("schema_version", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def migrate_v1_to_v2(
    raw: dict[str, Any],
    *,
    partition_of: PartitionOf | None = None,
    partition_source: str | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """A version-2 record (as a dict) from a version-1 record, recording what it filled: absent
    ``reason``, ``attempt``, ``repeat`` get version 1's defaults; ``partition`` absent or null
    comes from ``partition_of(case_id)``, else :class:`MigrationRefused`."""
    out = dict(raw)
    filled: dict[str, Any] = {}
    for name, default in (("reason", None), ("attempt", 1), ("repeat", 0)):
        if name not in out:
            out[name] = default
            filled[name] = default
    source = None
    if out.get("partition") is None:
        case_id = out.get("case_id")
        found = (
            partition_of(case_id) if partition_of is not None and isinstance(case_id, str) else None
        )
        if found is None:
            why = (
                "the record has no partition and no gold was given to read it from"
                if partition_of is None
                else f"the record has no partition and the gold has no case {case_id!r}"
            )
            raise MigrationRefused(
                "partition",
                why,
                "give the gold the results were produced against (`--gold GOLD`): the partition is"
                " read from its record of the case, never guessed",
            )
        out["partition"] = found
        filled["partition"] = found
        source = partition_source
    out["schema_version"] = 2
    out["migration"] = {
        "from_version": 1,
        "to_version": 2,
        "function": "workbench.results.migrate_v1_to_v2",
        "filled": filled,
        "partition_source": source,
        "migrated_at": (now or datetime.now(UTC)).isoformat(),
    }
    return out


MIGRATIONS: dict[int, Callable[..., dict[str, Any]]] = {1: migrate_v1_to_v2}
"""``from_version -> function`` taking a record one version forward."""


def migrate_record(
    raw: dict[str, Any],
    *,
    partition_of: PartitionOf | None = None,
    partition_source: str | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Take a record from its schema version to the current one, step by step; raises
    :class:`MigrationRefused` or ``ValueError`` (no migration from that version)."""
    version = record_version(raw)
    if version is None:
        raise ValueError("schema_version is not an integer")
    record = raw
    while version < RESULT_SCHEMA_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise ValueError(f"no migration from schema_version {version}")
        record = step(record, partition_of=partition_of, partition_source=partition_source, now=now)
        version = record_version(record) or RESULT_SCHEMA_VERSION
    return record


def gold_partitions(dataset: GoldDataset | GoldIndex) -> tuple[PartitionOf, str]:
    """``(partition_of, source)``: every record's partition in a gold dataset (or its index)."""
    from ..gold import GoldDataset

    if isinstance(dataset, GoldDataset):
        partitions = {r.case_id: r.partition.value for r in dataset.records}
    else:
        columns = (dataset.table[name].to_pylist() for name in ("case_id", "partition"))
        partitions = dict(zip(*columns, strict=True))
    return partitions.get, f"gold {dataset.sha256}"


def old_version_problem(path: str | Path, lines: list[int], version: int) -> Problem:
    """The one problem for the records of ``path`` written under an older version."""
    shown = ", ".join(map(str, lines[:5])) + (
        f" ... ({len(lines)} in all)" if len(lines) > 5 else ""
    )
    return problem(
        f"{path}:{lines[0]}",
        "schema_version_old",
        f"{len(lines)} result line(s) are schema_version {version} (lines {shown}); this"
        f" workbench reads version {RESULT_SCHEMA_VERSION}, which requires reason, partition,"
        " attempt and repeat instead of filling them silently",
        f"migrate the file explicitly: `{MIGRATE_COMMAND} {path} --gold GOLD` (it records in"
        " each line what it filled and keeps the original)",
    )


@dataclass(frozen=True)
class MigrationReport:
    """What :func:`migrate_results_file` did."""

    source: str
    out: str
    backup: str | None
    """Where the original bytes were kept (in-place migration), or None."""
    lines: int
    migrated: int
    """Records taken from an older version."""
    filled: dict[str, int]
    """How many records had each field filled."""

    def format(self) -> str:
        what = ", ".join(f"{name} in {n}" for name, n in sorted(self.filled.items())) or "nothing"
        kept = f"; the original is kept as {self.backup}" if self.backup else ""
        return (
            f"migrated {self.migrated} of {self.lines} result line(s) of {self.source} to"
            f" schema_version {RESULT_SCHEMA_VERSION} (filled {what}): wrote {self.out}{kept}"
        )


def migrate_results_file(
    path: str | Path, *, gold: str | Path | GoldDataset | None = None, out: str | Path | None = None
) -> MigrationReport:
    """Migrate every older record of a results file, all or nothing: in place (the original kept
    as ``<file>.v1``, refused when it exists) or to ``out``; every problem is reported before
    anything is written."""
    from ..gold import GoldDataset, load_dataset

    path = Path(path)
    loc = str(path)
    if not path.is_file():
        message, fix = "the results file does not exist", "point at a results.jsonl"
        raise refusal("cannot migrate results", loc, "results_missing", message, fix)
    partition_of: PartitionOf | None = None
    source: str | None = None
    if gold is not None:
        dataset = gold if isinstance(gold, GoldDataset) else load_dataset(gold)
        partition_of, source = gold_partitions(dataset)
    migration = _Migration(partition_of, source)
    not_utf8: list[int] = []
    for number, text in iter_jsonl_lines(path, not_utf8):
        migration.line(f"{loc}:{number}", text)
    for number in not_utf8:
        fix = "results files are UTF-8 JSON Lines"
        migration.problems.add(f"{loc}:{number}", "not_utf8", "the line is not valid UTF-8", fix)
    migration.problems.raise_if_any(
        f"{loc}: nothing migrated: {len(migration.problems)} problem(s)"
    )
    lines, filled = len(migration.rows), dict(migration.filled)
    if out is None and migration.migrated == 0:
        return MigrationReport(loc, loc, None, lines, 0, {})
    target, backup = _target(path, out)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, "".join(row + "\n" for row in migration.rows))
    kept = str(backup) if backup else None
    return MigrationReport(loc, str(target), kept, lines, migration.migrated, filled)


def _case_id(raw: Any) -> str | None:
    """The ``case_id`` of a raw record, when it is one (for locating its problems)."""
    case_id = raw.get("case_id") if isinstance(raw, dict) else None
    return case_id if isinstance(case_id, str) else None


class _Migration:
    """The lines of a results file taken to the current version, and every problem."""

    def __init__(self, partition_of: PartitionOf | None, source: str | None) -> None:
        self.partition_of = partition_of
        self.source = source
        self.now = datetime.now(UTC)
        self.problems = Problems()
        self.rows: list[str] = []
        """Every line to write: current lines as they were, migrated ones re-serialized."""
        self.migrated = 0
        self.filled: Counter[str] = Counter()

    def line(self, where: str, text: str) -> None:
        """One line: kept when current, migrated when older, else its problems."""
        raw = self._object(where, text)
        record = self._current(where, raw) if raw is not None else None
        if record is None:
            return
        try:
            result = JudgeResult.model_validate(record)
        except ValidationError as exc:
            fix = (
                "a migration fills only what the older version defaulted; correct the record or"
                " re-run the judge"
            )
            for err in exc.errors(include_url=False):
                field = ".".join(str(p) for p in err["loc"]) or "record"
                message = (
                    f"missing required field '{field}'"
                    if err["type"] == "missing"
                    else f"{field}: {err['msg']}"
                )
                self.problems.add(where, "invalid_result", message, fix, case_id=_case_id(raw))
            return
        self.rows.append(result.model_dump_json() if record is not raw else text)

    def _object(self, where: str, text: str) -> dict[str, Any] | None:
        try:
            raw = loads_json(text)  # strict: duplicate keys, NaN/Infinity, too deep refused
        except JSONRecordError as exc:
            self.problems.append(json_problem(exc, where))
            return None
        if not isinstance(raw, dict):
            fix = "each line must be one judge-result object"
            self.problems.add(where, "invalid_result", "the line is not a JSON object", fix)
            return None
        return raw

    def _current(self, where: str, raw: dict[str, Any]) -> dict[str, Any] | None:
        """The record at the current version (migrated when older), or None (a problem)."""
        version = record_version(raw)
        if version is None or version < 1 or version > RESULT_SCHEMA_VERSION:
            message = (
                f"schema_version {raw.get('schema_version')!r} cannot be migrated by this workbench"
            )
            newer = version is not None and version > RESULT_SCHEMA_VERSION
            code = "schema_version_newer" if newer else "invalid_result"
            fix = "upgrade the workbench, or correct schema_version"
            self.problems.add(where, code, message, fix, case_id=_case_id(raw))
            return None
        if version == RESULT_SCHEMA_VERSION:
            return raw
        try:
            record = migrate_record(
                raw, partition_of=self.partition_of, partition_source=self.source, now=self.now
            )
        except MigrationRefused as exc:
            message = f"cannot fill {exc.field!r}: {exc}"
            self.problems.add(
                where, "migration_needs_gold", message, exc.fix, case_id=_case_id(raw)
            )
            return None
        self.migrated += 1
        self.filled.update(record["migration"]["filled"].keys())
        return record


def _target(path: Path, out: str | Path | None) -> tuple[Path, Path | None]:
    """Where the migrated file goes and the original is kept; refuses to overwrite either."""
    fix = "omit --out to migrate in place (the original is kept as <file>.v1), or name a new file"
    if out is not None:
        target = Path(out)
        if target.exists():
            same = target.resolve() == path.resolve()
            code = "out_is_source" if same else "out_exists"
            message = "--out names the source file" if same else "--out already exists"
            raise refusal("cannot migrate results", str(target), code, message, fix)
        return target, None
    backup = path.with_name(path.name + ".v1")
    if backup.exists():
        message = "a kept original from an earlier migration is in the way"
        fix = "move it aside, or give --out to write the migrated file elsewhere"
        raise refusal("cannot migrate results", str(backup), "backup_exists", message, fix)
    shutil.copy2(path, backup)
    return path, backup
