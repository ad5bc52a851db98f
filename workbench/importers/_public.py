"""What the public-dataset importers (EvalsBench, PandaLM, LLMBar) share: reading a source,
grouping its defects (:class:`Findings`), and writing the dataset."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import yaml

from .._io import atomic_write_text
from ..errors import Problem, WorkbenchError, problem
from ..gold import (
    CARD_FILE,
    CONTRACT_FIELDS,
    GOLD_FILE,
    RUBRIC_FILE,
    GoldCase,
    GoldDataset,
    Partition,
    Rubric,
    load_dataset,
    validate_dataset,
)
from ..results import REQUIRED_SINCE_V2, JudgeResult
from ._registry import (
    RESULTS_FILE,
    ImportSummary,
    check_out_dir,
    jsonl_text,
    refuse,
    render_text,
    write_files,
)

OUTPUT_FILES: tuple[str, ...] = (GOLD_FILE, RUBRIC_FILE, CARD_FILE, RESULTS_FILE)

RESPONSE_1_MARKER = "[Response 1]"
RESPONSE_2_MARKER = "[Response 2]"


def stable_id(prefix: str, *parts: str, length: int = 16) -> str:
    """A short id derived from text, stable across runs and machines."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return f"{prefix}-{digest[:length]}"


def partition_for(kind: str, group: str) -> Partition:
    """A group's partition by its own hash (40/30/30 percent): adding groups moves no other."""
    bucket = int(hashlib.sha256(f"{kind}\x1f{group}".encode()).hexdigest()[:8], 16) % 100
    if bucket < 40:
        return Partition.development
    return Partition.calibration if bucket < 70 else Partition.held_out


def render_pair(response1: str, response2: str) -> str:
    """Both candidates in one string, in the order the labels refer to."""
    return f"{RESPONSE_1_MARKER}\n{response1}\n\n{RESPONSE_2_MARKER}\n{response2}"


def marker_clash_note(ids: list[str], what: str, ref: str) -> list[str]:
    """A note on items whose candidate text holds a marker (``what``: "a response")."""
    if not ids:
        return []
    return [
        f"{len(ids)} item(s) have {what} containing a [Response N] marker, which makes the"
        f" rendering ambiguous to a reader ({ref} {', '.join(ids[:5])})"
    ]


def has_marker(*texts: str) -> bool:
    return any(m in text for text in texts for m in (RESPONSE_1_MARKER, RESPONSE_2_MARKER))


def card_version(upstream: str, source_sha256: str, matches: bool) -> str:
    """The card's version: the upstream commit, or the source's hash when it is another copy."""
    return upstream.split("@")[1] if matches else f"sha256-{source_sha256[:12]}"


def write_pinned(
    kind: str,
    upstream: str,
    reference_sha256: str,
    source: Path,
    source_sha256: str,
    out: Path,
    cases: Sequence[GoldCase],
    rubric: Rubric,
    notes: list[str],
    provenance: dict[str, Any],
    card: dict[str, Any],
) -> ImportSummary:
    """:func:`write_dataset` for a source pinned to one upstream file: the card records whether
    the source is that copy (``provenance``, ``card``: more of the card), a note when not."""
    matches = source_sha256 == reference_sha256
    if not matches:
        notes.append(
            f"the source differs from the reference copy at {upstream}; the card records its sha256"
        )
    provenance = {
        "upstream": upstream,
        "file": source.name,
        "source_sha256": source_sha256,
        "matches_upstream_copy": matches,
        "importer": f"workbench.importers.{kind}",
        **provenance,
    }
    version = card_version(upstream, source_sha256, matches)
    text = render_card(kind, version=version, upstream=upstream, provenance=provenance, **card)
    return write_dataset(
        kind=kind,
        source=source,
        source_sha256=source_sha256,
        out=out,
        cases=cases,
        rubric=rubric,
        card=text,
        notes=notes,
    )


@dataclass
class Findings:
    """Problems found in a source: the same code, message and fix at many places is one problem,
    located at the first, counting and listing the first few places."""

    source: Path
    _items: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)

    def add(self, code: str, where: str, message: str, fix: str) -> None:
        self._items.setdefault((code, message, fix), []).append(where)

    def __bool__(self) -> bool:
        return bool(self._items)

    def problems(self) -> list[Problem]:
        out: list[Problem] = []
        for (code, message, fix), places in self._items.items():
            text = message
            if len(places) > 1:
                shown = ", ".join(places[:5]) + (", ..." if len(places) > 5 else "")
                text = f"{message} ({len(places)} places: {shown})"
            location = f"{self.source}:{places[0]}" if places[0] else str(self.source)
            out.append(problem(location, code, text, fix))
        return out

    def raise_if_any(self, summary: str) -> None:
        if self._items:
            self.fail(summary)

    def fail(self, summary: str) -> NoReturn:
        problems = self.problems()
        raise WorkbenchError(f"{self.source}: {summary} ({len(problems)} problem(s))", problems)


def read_source(source: Path, what: str, fix: str) -> bytes:
    """The bytes of the source file; raise :class:`WorkbenchError` when it cannot be read."""
    title = f"cannot read the {what}"
    if source.is_dir() or not source.exists():
        missing = (
            f"{source} is a directory, not the {what}"
            if source.is_dir()
            else f"the {what} does not exist"
        )
        refuse(title, str(source), "source_missing", missing, fix)
    try:
        return source.read_bytes()
    except OSError as exc:
        refuse(
            title,
            str(source),
            "source_unreadable",
            f"the {what} cannot be read ({exc.strerror or exc})",
            "check the path and its permissions",
        )


def read_json_list(
    findings: Findings, data: bytes, what: str, fix: str, *, not_what: str, noun: str = "items"
) -> list[Any]:
    """A JSON list of items; anything else fails at once."""
    try:
        loaded = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        message = f"the file is not UTF-8 (byte {exc.start})"
        findings.add("source_encoding", "", message, "save the file as UTF-8")
        findings.fail(f"unreadable {what}")
    except json.JSONDecodeError as exc:
        message = f"malformed JSON ({exc.msg} at column {exc.colno})"
        findings.add(
            "malformed_json", str(exc.lineno), message, f"repair the JSON at this position; {fix}"
        )
        findings.fail(f"unreadable {what}")
    if not isinstance(loaded, list):
        message = f"the file holds a JSON {type(loaded).__name__}, not a list of {noun}"
        findings.add("source_shape", "", message, fix)
        findings.fail(not_what)
    return loaded


Rule = tuple[tuple[str, ...], Callable[[Any, dict[str, Any]], bool], str, str, str]
"""``(keys, valid(value, item), code, message, fix)``: a check of each key an item has; the
message may name ``{key}``, ``{value!r}`` and ``{type}``, the fix ``{key}``."""


def check_items(
    findings: Findings, items: list[Any], keys: tuple[str, ...], rules: list[Rule], fix: str
) -> None:
    """Record every item that is not an object, lacks a key or breaks a rule."""
    if not items:
        findings.add("source_empty", "", "the list of items is empty", fix)
    for position, item in enumerate(items):
        where = f"item {position}"
        if not isinstance(item, dict):
            message = f"an item is a JSON {type(item).__name__}, not an object"
            findings.add("item_shape", where, message, fix)
            continue
        for key in keys:
            if key not in item:
                message = f"an item has no '{key}' key"
                findings.add("missing_key", where, message, f"add '{key}' to every item; {fix}")
        for names, valid, code, message, rule_fix in rules:
            for key in (k for k in names if k in item and not valid(item[k], item)):
                value = item[key]
                text = message.format(key=key, value=value, type=type(value).__name__)
                findings.add(code, where, text, rule_fix.format(key=key))


def prepare_out(out: Path, *, force: bool) -> list[str]:
    """Check that ``out`` can receive a dataset; returns notes about what will be replaced."""
    check_out_dir(out, "cannot write the dataset")
    present = [name for name in OUTPUT_FILES if (out / name).exists()]
    if present and not force:
        refuse(
            "refusing to overwrite a dataset",
            str(out),
            "out_not_empty",
            "the directory already holds " + ", ".join(present),
            "choose a new directory, or pass --force (force=True) to replace the imported files",
        )
    return [f"replaced existing {', '.join(present)}"] if present else []


def judge_results_text(results: Iterable[JudgeResult]) -> str:
    """Judge results as JSON Lines: ``value`` and every required field always present, other
    nulls left out."""
    kept = ("value", *REQUIRED_SINCE_V2)
    return jsonl_text(
        {**r.model_dump(mode="json", exclude_none=True), **{k: getattr(r, k) for k in kept}}
        for r in results
    )


def write_judge_results(path: Path, results: list[JudgeResult]) -> None:
    atomic_write_text(path, judge_results_text(results))


def with_lineage(results: list[JudgeResult], dataset: GoldDataset) -> list[JudgeResult]:
    stamp = {"dataset_sha256": dataset.sha256, "rubric_version": dataset.rubric.version}
    return [r.model_copy(update=stamp) for r in results]


def render_card(kind: str, **context: Any) -> str:
    """``card.md``: ``templates/<kind>.md.j2`` rendered, its front matter normalised as YAML."""
    text = render_text(f"{kind}.md.j2", **context)
    _, front, body = text.split("---\n", 2)
    yaml_text = yaml.safe_dump(
        yaml.safe_load(front), sort_keys=False, allow_unicode=True, width=100
    )
    return f"---\n{yaml_text}---\n\n{body.strip()}\n"


def write_dataset(
    *,
    kind: str,
    source: Path,
    source_sha256: str,
    out: Path,
    cases: Sequence[GoldCase],
    rubric: Rubric,
    card: str,
    results: list[JudgeResult] | None = None,
    notes: Sequence[str] = (),
) -> ImportSummary:
    """Write the dataset files, validate them (an error is an importer defect, raised), write
    ``results`` stamped with the gold's lineage, and summarise the import."""
    # contract fields the importer did not state stay out: the file is what was decided
    unstated = {name for name in CONTRACT_FIELDS if name not in rubric.model_fields_set}
    rubric_data = rubric.model_dump(mode="json", exclude=unstated)
    texts = {
        RUBRIC_FILE: yaml.safe_dump(rubric_data, sort_keys=False, allow_unicode=True, width=100),
        CARD_FILE: card,
        GOLD_FILE: jsonl_text(case.model_dump(mode="json", exclude_none=True) for case in cases),
    }
    files: list[str] = []
    write_files(out, texts, "cannot write the dataset", files)
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
    if results is not None:
        text = judge_results_text(with_lineage(results, load_dataset(out)))
        write_files(out, {RESULTS_FILE: text}, "cannot write the judge results", files)
    count = len(results) if results is not None else None
    return ImportSummary.of(kind, str(source), source_sha256, out, cases, files, notes, count)
