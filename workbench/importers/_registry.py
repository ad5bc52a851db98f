"""The importer registry and the plumbing every importer shares.

An importer reads a public dataset from a path the user gives (nothing is copied into the
project) and writes a gold dataset directory: ``gold.jsonl``, ``rubric.yaml``, ``card.md``
and, when the source carries judge outputs, ``results.jsonl``. Importers register by name
with :func:`register_importer`; :func:`run_importer` looks one up and runs it.

Bad input never raises a traceback: an importer collects every defect it finds into
:class:`~workbench.errors.Problem` records and raises one
:class:`~workbench.errors.WorkbenchError` with all of them.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field

from .._docs import add_field_docs
from .._io import atomic_write_text, write_jsonl
from ..errors import Problem, WorkbenchError
from ..gold import CARD_FILE, GOLD_FILE, RUBRIC_FILE, GoldCase, Partition, Rubric, validate_dataset
from ..results import JudgeResult

RESULTS_FILE = "results.jsonl"
"""Imported judge outputs, written beside the gold file when the source carries them."""

OUTPUT_FILES: tuple[str, ...] = (GOLD_FILE, RUBRIC_FILE, CARD_FILE, RESULTS_FILE)

PARTITION_WEIGHTS: tuple[tuple[Partition, int], ...] = (
    (Partition.development, 40),
    (Partition.calibration, 30),
    (Partition.held_out, 30),
)
"""Target share (percent) of groups per partition; the split is by hash, so shares are
approximate."""


class ImportSummary(BaseModel):
    """What one importer run did."""

    model_config = ConfigDict(frozen=True, json_schema_extra=add_field_docs)

    kind: str
    """Registered importer name, e.g. ``evalsbench``."""
    source: str
    """The source file read."""
    out: str
    """The dataset directory written."""
    cases: int
    """Gold cases written."""
    groups: int
    """Distinct groups (prompt families) among the cases."""
    partitions: dict[str, int]
    """Cases per partition."""
    results: int | None
    """Judge results written to ``results.jsonl``, or None when the source has no judge outputs."""
    files: list[str]
    """Names of the files written inside ``out``."""
    source_sha256: str
    """sha256 of the source file's bytes, also recorded in the card."""
    notes: list[str] = Field(default_factory=list)
    """Decisions and observations a user should know about (never errors)."""

    def format(self) -> str:
        """One paragraph for the command line."""
        parts = ", ".join(f"{name} {count}" for name, count in self.partitions.items())
        results = (
            "no judge results in the source"
            if self.results is None
            else f"{self.results} imported judge result(s)"
        )
        text = (
            f"Imported {self.cases} {self.kind} case(s) in {self.groups} group(s) ({parts}) from"
            f" {self.source} (sha256 {self.source_sha256[:12]}) into {self.out}: wrote"
            f" {', '.join(self.files)}; {results}."
        )
        if self.notes:
            text += " Notes: " + " ".join(
                note if note.endswith(".") else note + "." for note in self.notes
            )
        return text


Importer = Callable[..., ImportSummary]
"""``importer(source: Path, out: Path, **options) -> ImportSummary``."""

_F = TypeVar("_F", bound=Importer)
_IMPORTERS: dict[str, Importer] = {}


def register_importer(name: str) -> Callable[[_F], _F]:
    """Register the decorated function as the importer called ``name``."""

    def decorate(func: _F) -> _F:
        if name in _IMPORTERS and _IMPORTERS[name] is not func:
            raise ValueError(f"an importer named {name!r} is already registered")
        _IMPORTERS[name] = func
        return func

    return decorate


def available_importers() -> list[str]:
    """Names of every registered importer, sorted."""
    return sorted(_IMPORTERS)


def get_importer(name: str) -> Importer:
    """The importer registered as ``name``; raise :class:`WorkbenchError` when there is none."""
    try:
        return _IMPORTERS[name]
    except KeyError:
        raise WorkbenchError(
            f"no importer named {name!r}",
            [
                Problem(
                    location="importer",
                    code="unknown_importer",
                    message=f"there is no importer named {name!r}",
                    fix="use one of: " + ", ".join(available_importers()),
                )
            ],
        ) from None


def run_importer(kind: str, source: str | Path, out: str | Path, **options: Any) -> ImportSummary:
    """Run the importer ``kind`` on ``source``, writing the dataset into ``out``."""
    importer = get_importer(kind)
    try:
        inspect.signature(importer).bind(Path(source), Path(out), **options)
    except TypeError as exc:
        accepted = [
            p.name
            for p in list(inspect.signature(importer).parameters.values())[2:]
            if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        ]
        raise WorkbenchError(
            f"bad options for importer {kind!r}",
            [
                Problem(
                    location=f"importer {kind}",
                    code="bad_importer_options",
                    message=str(exc),
                    fix="pass only these options: " + (", ".join(accepted) or "(none)"),
                )
            ],
        ) from None
    return importer(Path(source), Path(out), **options)


# --- helpers shared by importers -------------------------------------------------------


def stable_id(prefix: str, *parts: str, length: int = 16) -> str:
    """A short id derived from text, stable across runs and machines."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return f"{prefix}-{digest[:length]}"


def partition_for(kind: str, group: str) -> Partition:
    """Deterministic partition of a group.

    Each group is placed by its own hash, not by its rank among the others, so adding or
    removing groups in a later copy of the source never moves an existing group (a move
    from held_out into development would leak certification cases into prompt tuning).
    """
    bucket = int(hashlib.sha256(f"{kind}\x1f{group}".encode()).hexdigest()[:8], 16) % 100
    upper = 0
    for partition, weight in PARTITION_WEIGHTS:
        upper += weight
        if bucket < upper:
            return partition
    return PARTITION_WEIGHTS[-1][0]


@dataclass
class Findings:
    """Problems found in a source, grouped so a defect repeated on 999 rows is one line.

    Problems with the same code, message and fix collapse into one problem located at
    the first occurrence, listing how many places have it and the first few of them.
    """

    source: Path
    _items: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)

    def add(self, code: str, where: str, message: str, fix: str) -> None:
        """Record one defect; ``where`` is a row or item reference inside the source."""
        self._items.setdefault((code, message, fix), []).append(where)

    def __bool__(self) -> bool:
        return bool(self._items)

    def problems(self) -> list[Problem]:
        """The grouped problems, in the order first seen."""
        out: list[Problem] = []
        for (code, message, fix), places in self._items.items():
            first = places[0]
            text = message
            if len(places) > 1:
                shown = ", ".join(places[:5]) + (", ..." if len(places) > 5 else "")
                text = f"{message} ({len(places)} places: {shown})"
            location = f"{self.source}:{first}" if first else str(self.source)
            out.append(Problem(location=location, code=code, message=text, fix=fix))
        return out

    def raise_if_any(self, summary: str) -> None:
        """Raise one :class:`WorkbenchError` with every problem, if there are any."""
        if self._items:
            self.fail(summary)

    def fail(self, summary: str) -> NoReturn:
        """Raise one :class:`WorkbenchError` with every problem recorded so far."""
        problems = self.problems()
        raise WorkbenchError(f"{self.source}: {summary} ({len(problems)} problem(s))", problems)


def read_source(source: Path, what: str, fix: str) -> bytes:
    """The bytes of the source file; raise :class:`WorkbenchError` when it cannot be read."""
    if source.is_dir():
        problem = Problem(
            location=str(source),
            code="source_missing",
            message=f"{source} is a directory, not the {what}",
            fix=fix,
        )
    elif not source.exists():
        problem = Problem(
            location=str(source),
            code="source_missing",
            message=f"the {what} does not exist",
            fix=fix,
        )
    else:
        try:
            return source.read_bytes()
        except OSError as exc:
            problem = Problem(
                location=str(source),
                code="source_unreadable",
                message=f"the {what} cannot be read ({exc.strerror or exc})",
                fix="check the path and its permissions",
            )
    raise WorkbenchError(f"cannot read the {what}", [problem])


def prepare_out(out: Path, *, force: bool) -> list[str]:
    """Check that ``out`` can receive a dataset; returns notes about what will be replaced."""
    if out.exists() and not out.is_dir():
        raise WorkbenchError(
            "cannot write the dataset",
            [
                Problem(
                    location=str(out),
                    code="out_not_directory",
                    message="--out names a file, not a directory",
                    fix="point --out at a new or empty directory",
                )
            ],
        )
    present = [name for name in OUTPUT_FILES if (out / name).exists()]
    if present and not force:
        raise WorkbenchError(
            "refusing to overwrite a dataset",
            [
                Problem(
                    location=str(out),
                    code="out_not_empty",
                    message="the directory already holds " + ", ".join(present),
                    fix=(
                        "choose a new directory, or pass --force (force=True) to replace the"
                        " imported files"
                    ),
                )
            ],
        )
    return [f"replaced existing {', '.join(present)}"] if present else []


def render_card(front: dict[str, Any], body: str) -> str:
    """``card.md``: YAML front matter, then a markdown body."""
    yaml_text = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=100)
    return f"---\n{yaml_text}---\n\n{body.strip()}\n"


def write_dataset(
    *,
    kind: str,
    source: Path,
    source_sha256: str,
    out: Path,
    cases: Sequence[GoldCase],
    rubric: Rubric,
    card_front: dict[str, Any],
    card_body: str,
    results: Sequence[JudgeResult] | None = None,
    notes: Sequence[str] = (),
) -> ImportSummary:
    """Write the dataset files atomically, validate them, and summarise the import.

    The written dataset is validated with :func:`workbench.gold.validate_dataset`; an error
    there is an importer defect, reported as a :class:`WorkbenchError` rather than left for
    the user to find later.
    """
    files: list[str] = []
    rubric_text = yaml.safe_dump(
        rubric.model_dump(mode="json"), sort_keys=False, allow_unicode=True, width=100
    )
    try:
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / RUBRIC_FILE, rubric_text)
        files.append(RUBRIC_FILE)
        atomic_write_text(out / CARD_FILE, render_card(card_front, card_body))
        files.append(CARD_FILE)
        write_jsonl(
            out / GOLD_FILE, (case.model_dump(mode="json", exclude_none=True) for case in cases)
        )
        files.append(GOLD_FILE)
        if results is not None:
            write_jsonl(out / RESULTS_FILE, (r.model_dump(mode="json") for r in results))
            files.append(RESULTS_FILE)
    except OSError as exc:
        written = f"; already written: {', '.join(files)}" if files else ""
        raise WorkbenchError(
            "cannot write the dataset",
            [
                Problem(
                    location=str(exc.filename or out),
                    code="out_unwritable",
                    message=f"writing failed ({exc.strerror or exc}){written}",
                    fix="point --out at a writable directory with free space",
                )
            ],
        ) from None
    notes = list(notes)
    if results is None and (out / RESULTS_FILE).exists():
        notes.append(
            f"{out / RESULTS_FILE} was left from an earlier run and does not belong to this import;"
            " delete it"
        )

    report = validate_dataset(out)
    if report.errors:
        raise WorkbenchError(
            f"{out}: the imported dataset does not validate; this is an importer defect, please"
            " report it",
            report.errors,
        )
    partitions = {p.value: 0 for p, _ in PARTITION_WEIGHTS}
    for case in cases:
        partitions[case.partition.value] += 1
    return ImportSummary(
        kind=kind,
        source=str(source),
        out=str(out),
        cases=len(cases),
        groups=len({case.group for case in cases}),
        partitions=partitions,
        results=len(results) if results is not None else None,
        files=files,
        source_sha256=source_sha256,
        notes=notes,
    )
