"""Sentinels: a small, declared, stable set of gold cases a judge is re-run on over time
(``sentinels.yaml`` beside the gold; format in ``docs/formats.md#sentinels``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .._docs import add_field_docs
from .._io import sha256_file
from .._load import load_yaml, validation_problems
from .._record import Record, SchemaTooNew
from ..approval import Snapshot, check_lineage, document_snapshot
from ..errors import Problem, WorkbenchError, problem
from ..gold import GoldCase, GoldDataset
from ..heldout import exposure_problems, held_out_content
from ._log import beside_gold

SENTINELS_SCHEMA_VERSION = 1
SENTINELS_FILE = "sentinels.yaml"


class Sentinel(BaseModel):
    """One sentinel case."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=add_field_docs)

    case_id: str = Field(min_length=1)
    """An active development or calibration case of the gold."""
    reason: str = Field(min_length=1)
    """Why it is a sentinel (what it guards)."""

    @field_validator("reason")
    @classmethod
    def _written(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must say why the case is a sentinel")
        return value


class SentinelSet(Record):
    """A sentinel file, exactly as stored."""

    schema_version: int = SENTINELS_SCHEMA_VERSION
    """Sentinel file format version."""
    name: str | None = None
    """A name for the set."""
    description: str = ""
    """What the set guards."""
    rubric_version: str | None = None
    """The rubric version the set was chosen under; when given, the gold's must equal it."""
    sentinels: list[Sentinel] = Field(min_length=1)
    """The sentinel cases."""


class LoadedSentinels(BaseModel):
    """A checked sentinel set with its gold cases."""

    model_config = ConfigDict(
        frozen=True, arbitrary_types_allowed=True, json_schema_extra=add_field_docs
    )

    sentinels: SentinelSet
    """The file's content."""
    path: str
    """Where it was read."""
    sha256: str
    """sha256 of the file's bytes."""
    cases: list[GoldCase]
    """The gold cases, in file order."""

    @property
    def case_ids(self) -> list[str]:
        return [c.case_id for c in self.cases]


def sentinels_path_for(gold: GoldDataset | str | Path) -> Path:
    """The default sentinel file: ``<gold dataset directory>/sentinels.yaml``."""
    return beside_gold(gold, SENTINELS_FILE)


def _sentinel_problem(
    s: Sentinel, dataset: GoldDataset, by_id: dict[str, Any], seen: set[str]
) -> tuple[str, str, str] | None:
    if s.case_id in seen:
        return "duplicate_sentinel", "the case is listed twice", "list each sentinel once"
    seen.add(s.case_id)
    record = by_id.get(s.case_id)
    if record is None:
        return "unknown_case", "the gold has no such case", "use case ids of this gold"
    if s.case_id in dataset.superseded_by:
        message = f"the record was superseded by {dataset.latest_id(s.case_id)!r}"
        fix = "name the latest record (a changed sentinel starts a new baseline)"
        return "superseded_case", message, fix
    if record.partition.value == "held_out":
        return (
            "held_out_sentinel",
            "the case is held out: held-out cases are judged once, by certification, never re-run"
            " on a schedule",
            "choose sentinels from development or calibration",
        )
    return None


def load_sentinels(path: str | Path | None, dataset: GoldDataset) -> LoadedSentinels:
    """Read ``path`` (default: beside the gold) and check it against ``dataset``, every problem at
    once."""
    path = Path(path) if path is not None else sentinels_path_for(dataset)
    loc = str(path)
    raw: Any = load_yaml(
        path,
        prefix="sentinels",
        what="sentinels",
        missing_message="the sentinel file does not exist",
        missing_fix=(
            f"declare the sentinel cases in {SENTINELS_FILE} beside the gold (case ids with a"
            " reason; docs/formats.md#sentinels)"
        ),
        encoding_code="sentinels_yaml",
        shape=(
            "the sentinel file must be a YAML mapping with a list under sentinels:",
            "write schema_version, name and sentinels: [{case_id, reason}]",
        ),
    ).data
    try:
        parsed = SentinelSet.model_validate(raw)
    except SchemaTooNew as exc:
        raise WorkbenchError("unreadable sentinels", [exc.problem_at(loc)]) from None
    except ValidationError as exc:
        fix = "see docs/formats.md#sentinels"
        bad = validation_problems(exc, at=loc, code="sentinels_invalid", root="file", fix=fix)
        raise WorkbenchError(f"{loc}: invalid sentinels", bad) from None
    problems: list[Problem] = []
    if parsed.rubric_version is not None and parsed.rubric_version != dataset.rubric.version:
        message = (
            f"the sentinels were chosen under rubric {parsed.rubric_version}, the gold is rubric"
            f" {dataset.rubric.version}"
        )
        fix = "review the set for the new rubric and update rubric_version (a new file version)"
        problems.append(problem(loc, "sentinels_rubric_mismatch", message, fix))
    by_id = {r.case_id: r for r in dataset.records}
    seen: set[str] = set()
    cases: list[GoldCase] = []
    for s in parsed.sentinels:
        found = _sentinel_problem(s, dataset, by_id, seen)
        if found is None:
            cases.append(dataset.cases[s.case_id])
        else:
            problems.append(problem(loc, *found, s.case_id))
    problems += exposure_problems(cases, held_out_content([dataset]), loc, what="sentinel")
    problems += check_lineage(sentinels_snapshot_of(parsed, path))
    if problems:
        raise WorkbenchError(f"{loc}: invalid sentinels: {len(problems)} problem(s)", problems)
    return LoadedSentinels(sentinels=parsed, path=loc, sha256=sha256_file(path), cases=cases)


def sentinels_snapshot_of(sentinels: SentinelSet, path: Path) -> Snapshot:
    """A sentinel set as an approved input (one item per case, versioned by its rubric)."""
    return document_snapshot(
        "sentinels",
        sentinels.model_dump(mode="json")
        | {"name": sentinels.name or "sentinels", "version": sentinels.rubric_version or "-"},
        items="sentinels",
        source=path,
        change_fix="a changed sentinel set is a new baseline: restore the frozen set",
    )


def sentinels_snapshot(path: Path) -> Snapshot:
    """The checked snapshot of the sentinel file at ``path``, read against the gold beside it."""
    from ..gold import load_dataset

    loaded = load_sentinels(path, load_dataset(path.parent))
    return sentinels_snapshot_of(loaded.sentinels, path)
