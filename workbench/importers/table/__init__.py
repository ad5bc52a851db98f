"""``workbench import table``: any CSV, JSONL, Parquet file or DataFrame into a gold dataset,
through a mapping (:class:`TableMapping`). The same input writes the same bytes; a re-import keeps
what a person decided and refuses to move or drop an existing case (``--force`` accepts it)."""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..._io import (
    atomic_write_text,
    canonical_json,
    iter_jsonl_lines,
    loads_json,
    read_bounded,
    sha256_text,
)
from ..._load import Lines, Problems, peek_yaml, yaml_lines
from ...errors import WorkbenchError
from ...gold import CARD_FILE, GOLD_FILE, RUBRIC_FILE, GoldCase, validate_dataset
from ...heldout import exposure_problems, used_held_out_of
from .._registry import (
    ImportSummary,
    check_out_dir,
    jsonl_text,
    refuse,
    register_importer,
    write_files,
)
from .._table_reader import SOURCE, TableRead, _listed
from ._build import Pending, assign_partition, build_cases, merge_previous
from ._mapping import TableMapping, column_problems, parse_mapping, read_mapping_text
from ._render import (
    CARD_MARKER,
    PENDING_FILE,
    card_text,
    computed_section,
    format_pending,
    pending_csv,
    rubric_yaml,
)

__all__ = [
    "CARD_MARKER",
    "PENDING_FILE",
    "TableImport",
    "TableMapping",
    "assign_partition",
    "format_pending",
    "gold_from_dataframe",
    "import_table",
    "load_mapping",
]

KIND = "table"
EXPECTED_UNTIL_ADJUDICATED = ("unresolved_disagreement", "no_adjudication")
Mapping = str | Path | dict[str, Any] | TableMapping
_OVERWRITE = "refusing to overwrite a dataset"


@dataclass(frozen=True)
class _LoadedMapping:
    mapping: TableMapping
    label: str
    sha256: str


@dataclass(frozen=True)
class TableImport:
    """An import built in memory; :meth:`write` puts it on disk."""

    mapping: TableMapping
    source: TableRead
    cases: tuple[GoldCase, ...]
    """The gold cases, in source order."""
    pending: tuple[Pending, ...]
    """Cases the adjudication could not settle (written without adjudication)."""
    rubric: dict[str, Any]
    """The drafted rubric (slice risks ``unset``)."""
    settled: dict[str, int]
    """Gold labels from the adjudication ``column``, by ``rule``, and ``pending``."""
    notes: tuple[str, ...]
    mapping_label: str
    mapping_sha256: str

    def frame(self) -> Any:
        """The cases as a DataFrame: id, partition, group, slice, gold label, reviews."""
        import pandas as pd

        columns = ["case_id", "partition", "group", "slice", "gold_label", "reviews"]
        rows = [
            (c.case_id, c.partition.value, c.group, c.slice, c.gold_label)
            + ("; ".join(f"{r.reviewer}={r.label}" for r in c.reviews),)
            for c in self.cases
        ]
        return pd.DataFrame(rows, columns=columns)

    def gold_text(self) -> str:
        """``gold.jsonl`` exactly as :meth:`write` writes it."""
        return jsonl_text(c.model_dump(mode="json", exclude_none=True) for c in self.cases)

    def rubric_text(self, previous: Any = None) -> str:
        """``rubric.yaml``: the draft, keeping what a person decided in ``previous`` (parsed)."""
        given = self.mapping.rubric.criterion is not None
        rubric = merge_previous(self.rubric, previous, criterion_given=given)
        counts = Counter(c.slice for c in self.cases)
        return rubric_yaml(
            rubric,
            source_label=self.source.label,
            mapping_label=self.mapping_label,
            slice_counts=counts,
        )

    def card_text(self, previous: str | None = None) -> str:
        """``card.md``: the human part of ``previous`` (or a template), then the computed part."""
        return card_text(previous, self.mapping, computed_section(self))

    def write(self, out: str | Path, *, force: bool = False) -> ImportSummary:
        """Write the dataset into ``out``; see the module docstring for what is kept and refused."""
        return _write(self, Path(out), force=force)


def load_mapping(
    mapping: Mapping, columns: list[str] | tuple[str, ...] | None = None
) -> TableMapping:
    """Read and check a mapping (and, given the source's ``columns``, the columns it names);
    raise :class:`WorkbenchError` listing every problem with its line."""
    return _load_mapping(mapping, columns, source_label="the source")[0].mapping


def _load_mapping(
    mapping: Mapping, columns: Any, *, source_label: str
) -> tuple[_LoadedMapping, Any]:
    if isinstance(mapping, TableMapping | dict):
        at = Lines("mapping", {}).at
        raw = (
            mapping
            if isinstance(mapping, dict)
            else mapping.model_dump(mode="json", exclude_none=True)
        )
        model, problems = (
            (mapping, []) if isinstance(mapping, TableMapping) else parse_mapping(raw, at)
        )
        label = "(TableMapping object)" if isinstance(mapping, TableMapping) else "(mapping dict)"
        dumped = model.model_dump(mode="json", exclude_none=True) if model is not None else {}
        digest = sha256_text(canonical_json(dumped))
    else:
        path = Path(mapping)
        text, raw = read_mapping_text(path)
        at = Lines(str(path), yaml_lines(text)).at
        model, problems = parse_mapping(raw, at)
        label, digest = path.name, hashlib.sha256(path.read_bytes()).hexdigest()
    if columns is not None:
        problems += column_problems(raw, columns, at, source_label)
    if problems or model is None:
        name = label if label.startswith("(") else mapping
        raise WorkbenchError(f"{name}: {len(problems)} problem(s) in the mapping", problems)
    return _LoadedMapping(model, label, digest), at


def gold_from_dataframe(df: Any, mapping: Mapping) -> TableImport:
    """Gold cases from a pandas DataFrame with a mapping (a path, a dict or a
    :class:`TableMapping`), not yet written (:meth:`TableImport.write`)."""
    table = SOURCE.table_from_frame(df)
    return _build(table, *_load_mapping(mapping, table.columns, source_label="the DataFrame"))


def _build(table: TableRead, loaded: _LoadedMapping, at: Any) -> TableImport:
    built = vars(build_cases(table, loaded.mapping, at=at))
    return TableImport(
        loaded.mapping, table, **built, mapping_label=loaded.label, mapping_sha256=loaded.sha256
    )


def import_table(
    source: str | Path, out: str | Path, *, mapping: Mapping, force: bool = False
) -> tuple[TableImport, ImportSummary]:
    """Import a CSV, JSONL or Parquet file into the dataset directory ``out``; problems in the
    source and the mapping are raised together."""
    source = Path(source)
    if isinstance(mapping, TableMapping):
        declared = mapping.source_format
    else:
        raw = mapping if isinstance(mapping, dict) else read_mapping_text(Path(mapping))[1]
        value = raw.get("source_format")
        declared = value if value in ("csv", "tsv", "jsonl", "parquet") else None
    try:
        table = SOURCE.read_table(source, SOURCE.table_format(source, declared))
    except WorkbenchError as exc:
        try:  # report the mapping's own problems too, so one run shows everything
            _load_mapping(mapping, None, source_label=str(source))
        except WorkbenchError as other:
            summary = f"{exc.summary}; and {other.summary}"
            raise WorkbenchError(summary, exc.problems + other.problems) from None
        raise
    result = _build(table, *_load_mapping(mapping, table.columns, source_label=source.name))
    return result, result.write(out, force=force)


@register_importer(KIND)
def _registered(source: Path, out: Path, *, mapping: Mapping, force: bool = False) -> ImportSummary:
    """``run_importer("table", source, out, mapping=...)``."""
    return import_table(source, out, mapping=mapping, force=force)[1]


def _existing(out: Path, force: bool) -> tuple[Any, str | None, dict[str, str]]:
    """What a previous import left in ``out``: parsed rubric, card text, case id -> partition."""
    fix = "point --out at a new directory or at a dataset directory this importer wrote"
    check_out_dir(out, "cannot write the dataset", fix)
    rubric_path, card_path, gold_path = out / RUBRIC_FILE, out / CARD_FILE, out / GOLD_FILE
    card: str | None = None
    if card_path.is_file():
        try:
            card = read_bounded(card_path).decode("utf-8")
        except (WorkbenchError, UnicodeDecodeError):
            card = None
    if gold_path.exists() and (card is None or CARD_MARKER not in card):
        if not force:
            refuse(
                _OVERWRITE,
                str(gold_path),
                "out_not_empty",
                f"{out} holds a gold.jsonl that `workbench import table` did not write (its card.md"
                " has no import marker)",
                "choose a new directory, or pass --force to replace it",
            )
        # Replacing another tool's dataset: its rubric and card are not this import's drafts.
        return None, None, {}
    rubric = peek_yaml(rubric_path) if rubric_path.is_file() else None
    partitions: dict[str, str] = {}
    try:  # bounded and strict
        for _, line in iter_jsonl_lines(gold_path) if gold_path.is_file() else ():
            row = loads_json(line)
            if isinstance(row, dict) and isinstance(row.get("case_id"), str):
                partitions[row["case_id"]] = str(row.get("partition"))
    except (WorkbenchError, ValueError):  # not a file, a line too long, not UTF-8, bad JSON
        if not force:
            message = (
                "the existing gold.jsonl cannot be read, so the import cannot check that no case"
                " moves"
            )
            refuse(
                _OVERWRITE,
                str(gold_path),
                "out_not_empty",
                message,
                "repair or remove it, or pass --force",
            )
    return rubric, card, partitions


def _check_stability(result: TableImport, before: dict[str, str], gold_path: Path) -> Problems:
    now = {c.case_id: c.partition.value for c in result.cases}
    moved = [f"{c} ({p} -> {now[c]})" for c, p in before.items() if now.get(c, p) != p]
    removed = [cid for cid in before if cid not in now]
    problems = Problems()
    if moved:
        problems.add(
            str(gold_path),
            "partition_moved",
            f"{len(moved)} existing case(s) would move to another partition: {_listed(moved, 20)}",
            "keep the mapping's partition settings (seed, shares, column values) as they were;"
            " moving a held-out case into development leaks it into tuning. Pass --force only"
            " for a new dataset version",
        )
    if removed:
        problems.add(
            str(gold_path),
            "case_removed",
            f"{len(removed)} existing case(s) are no longer in the source: {_listed(removed, 20)}",
            "keep their rows in the source (a correction is a new record that supersedes the"
            " old one), or pass --force for a new dataset version",
        )
    return problems


def _refuse_used_held_out(result: TableImport, out: Path) -> None:
    """Refuse, even with ``--force``, to move a held-out case a certification used (by content)
    into another partition."""
    if not (out / GOLD_FILE).is_file():
        return
    used = used_held_out_of(out)
    if used is None:
        refuse(
            _OVERWRITE,
            str(out / GOLD_FILE),
            "held_out_unchecked",
            "the held-out ledger records a use of this dataset, but its gold.jsonl cannot be read:"
            " the import cannot check that no used held-out case leaves the held-out partition",
            "repair gold.jsonl from version control, then import again",
        )
    moved = [c for c in result.cases if c.partition.value != "held_out"]
    problems = exposure_problems(moved, used, str(out / GOLD_FILE))
    if problems:
        raise WorkbenchError(
            f"{out}: the import would move {len(problems)} held-out case(s) a certification used"
            " into another partition (--force does not accept this; the held-out ledger records"
            " the use)",
            problems,
        )


def _write(result: TableImport, out: Path, *, force: bool) -> ImportSummary:
    _refuse_used_held_out(result, out)
    previous_rubric, previous_card, before = _existing(out, force)
    if before and not force:
        problems = _check_stability(result, before, out / GOLD_FILE)
        problems.raise_if_any(
            f"{out}: the import would change existing cases ({len(problems)} problem(s))"
        )
    rubric, card, gold = (
        result.rubric_text(previous_rubric),
        result.card_text(previous_card),
        result.gold_text(),
    )
    pending = pending_csv(list(result.pending)) if result.pending else None
    _self_check(result, gold, card)
    written: list[str] = []
    texts = {RUBRIC_FILE: rubric, CARD_FILE: card, GOLD_FILE: gold, PENDING_FILE: pending}
    write_files(out, texts, "cannot write the dataset", written)
    notes = list(result.notes)
    slices = (yaml.safe_load(rubric) or {}).get("slices", {})
    unset = [name for name, spec in slices.items() if spec.get("risk") == "unset"]
    if unset:
        notes.append(
            f"set the risk of {len(unset)} slice(s) in {out / RUBRIC_FILE} ({', '.join(unset)});"
            " validate refuses 'unset'"
        )
    if result.pending:
        notes.append(
            f"{len(result.pending)} case(s) wait for an adjudicator, listed in {out / PENDING_FILE}"
        )
    source = result.source
    return ImportSummary.of(KIND, source.location, source.sha256, out, result.cases, written, notes)


def _self_check(result: TableImport, gold: str, card: str) -> None:
    """Validate the dataset about to be written; anything unexpected is a defect."""
    probe = json.loads(json.dumps(result.rubric))
    for spec in probe["slices"].values():
        spec["risk"] = "low"
    with tempfile.TemporaryDirectory(prefix="workbench-import-") as tmp:
        root = Path(tmp)
        atomic_write_text(root / GOLD_FILE, gold)
        atomic_write_text(
            root / RUBRIC_FILE, yaml.safe_dump(probe, sort_keys=False, allow_unicode=True)
        )
        atomic_write_text(root / CARD_FILE, card)
        report = validate_dataset(root)
    unexpected = [p for p in report.errors if p.code not in EXPECTED_UNTIL_ADJUDICATED]
    if unexpected:
        raise WorkbenchError(
            "the imported dataset does not validate; this is an importer defect, please report it",
            unexpected,
        )
