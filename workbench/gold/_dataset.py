"""Reading a gold dataset (``gold.jsonl``, ``rubric.yaml``, optional ``card.md`` and evidence
snapshot): :func:`validate_dataset` returns every problem; :func:`load_dataset` raises
:class:`~workbench.errors.WorkbenchError` with all of them when any is an error."""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .._io import (
    WRONG_TYPE_ERRORS,
    WRONG_TYPE_FIX,
    JSONRecordError,
    bulk_load,
    check_json,
    iter_jsonl_lines,
    json_problem,
    loads_json,
    sha256_file,
    sha256_json,
)
from .._load import Problems
from .._record import SchemaTooNew
from ..approval import REVIEWERS_KEY, Release, check_lineage, load_approvers, read_release_log
from ..errors import Problem, WorkbenchError, errors_only, problem
from ._card import DatasetCard, read_card
from ._records import PARTITIONS, GoldCase, Partition, partition_name
from ._release import snapshot_of_records
from ._rubric import Rubric, load_rubric

GOLD_FILE = "gold.jsonl"
RUBRIC_FILE = "rubric.yaml"
CARD_FILE = "card.md"

_FIELD_HINTS: dict[str, str] = {
    "case_id": "add a unique, stable case_id string",
    "partition": "set partition to one of " + ", ".join(PARTITIONS),
    "group": "set group to the source prompt or paraphrase family the case belongs to",
    "slice": "set slice to one of the rubric's slices",
    "rubric_version": "set rubric_version to the rubric version the reviewers applied",
    "input": "add the user input the response answers",
    "response": "add the exact response the reviewers judged",
    "response_hash": "add response_hash: the lowercase hex sha256 of the UTF-8 response",
    "reviews": (
        "add the independent reviews as a list of {reviewer, label, confidence, rationale,"
        " evidence}"
    ),
    "reviewer": "name the reviewer",
    "label": "give the label from the rubric's vocabulary",
}


class Released:
    """What the releases of a dataset say of its states (``sha256``: the current one)."""

    sha256: str
    releases: tuple[Release, ...]

    @property
    def release(self) -> Release | None:
        """The latest release that froze exactly this dataset state, or None (not frozen)."""
        return self.release_for(self.sha256)

    def release_for(self, dataset_sha256: str) -> Release | None:
        """The latest release that froze the dataset state with this hash, if any."""
        return next(
            (r for r in reversed(self.releases) if r.dataset_sha256 == dataset_sha256), None
        )


@dataclass(frozen=True)
class GoldDataset(Released):
    """A validated gold dataset: ``cases`` maps each case id to its latest record, in file order;
    superseded records are in ``history`` (oldest first)."""

    root: Path
    gold_path: Path
    rubric: Rubric
    records: tuple[GoldCase, ...]
    cases: dict[str, GoldCase]
    history: dict[str, tuple[GoldCase, ...]]
    superseded_by: dict[str, str]
    card: DatasetCard | None
    evidence_ids: frozenset[str] | None
    sha256: str
    """Hash of the dataset's content: gold file, rubric and evidence snapshot."""
    warnings: tuple[Problem, ...] = field(default=())
    releases: tuple[Release, ...] = field(default=())
    """The frozen releases of the dataset (``releases.jsonl``), oldest first."""

    def partition(self, name: str | Partition | None) -> list[GoldCase]:
        """Active cases of one partition (all partitions when ``name`` is None), in file order."""
        if name is None:
            return list(self.cases.values())
        key = Partition(partition_name(name))
        return [case for case in self.cases.values() if case.partition == key]

    def latest_id(self, case_id: str) -> str:
        """The active id for ``case_id``, following corrections."""
        return self.superseded_by.get(case_id, case_id)


@dataclass(frozen=True)
class ValidationReport:
    """Everything :func:`validate_dataset` found."""

    path: Path
    problems: tuple[Problem, ...]
    dataset: GoldDataset | None
    """The dataset, when it has no errors (it may have warnings)."""

    @property
    def errors(self) -> list[Problem]:
        return errors_only(self.problems)

    @property
    def ok(self) -> bool:
        return not self.errors

    def failing(self, strict: bool = False) -> list[Problem]:
        """The problems that fail validation: the errors, or with ``strict`` every problem."""
        return list(self.problems) if strict else self.errors

    def to_json(self, strict: bool = False) -> dict[str, Any]:
        """The report as ``workbench validate --json`` prints it."""
        return {
            "path": str(self.path),
            "ok": not self.failing(strict),
            "errors": len(self.errors),
            "warnings": len(self.problems) - len(self.errors),
            "problems": [p.model_dump() for p in self.problems],
        }

    def summary(self, strict: bool = False) -> str:
        """One line: the dataset's counts, rubric, hash and release, or its errors and warnings."""
        ds = self.dataset
        if ds is None or self.failing(strict):
            return (
                f"{self.path}: {len(self.errors)} error(s),"
                f" {len(self.problems) - len(self.errors)} warning(s)"
            )
        parts = ", ".join(
            f"{p} {len(ds.partition(p))}" for p in ("development", "calibration", "held_out")
        )
        return (
            f"{self.path}: OK - {len(ds.cases)} cases ({parts}),"
            f" {len(ds.records) - len(ds.cases)} superseded record(s), rubric"
            f" {ds.rubric.version}, dataset sha256 {ds.sha256[:12]}, release"
            f" {ds.release.release_id if ds.release else '(not frozen)'}"
        )


@dataclass
class _Line:
    number: int
    raw: dict[str, Any] | None
    case: GoldCase | None


def resolve_paths(path: str | Path) -> tuple[Path, Path]:
    """Return ``(root, gold_path)`` for a dataset directory or a ``gold.jsonl`` path."""
    p = Path(path)
    if p.is_dir():
        return p, p / GOLD_FILE
    return p.parent, p


def load_dataset(path: str | Path) -> GoldDataset:
    """Validate and load a dataset; raise :class:`WorkbenchError` listing every error."""
    report = validate_dataset(path)
    if report.dataset is None:
        raise WorkbenchError(
            f"{report.path}: the gold dataset has {len(report.errors)} problem(s)", report.errors
        )
    return report.dataset


def validate_dataset(
    path: str | Path, *, warn_undeclared: bool = False, strict: bool = False
) -> ValidationReport:
    """Check a dataset and report every problem, errors and warnings, in one pass
    (``warn_undeclared``: warn when the project lists no reviewers; ``strict``: also the
    contract checks of ``validate --strict``, :func:`_contract_problems`)."""
    root, gold_path = resolve_paths(path)
    if not gold_path.exists():
        fix = f"point at a dataset directory containing {GOLD_FILE}, or at the .jsonl file itself"
        missing = problem(str(gold_path), "gold_missing", "the gold file does not exist", fix)
        return ValidationReport(gold_path, (missing,), None)
    problems: list[Problem] = []
    rubric, evidence_path, evidence_ids = _read_rubric(root, problems)
    card, card_problems = read_card(root / CARD_FILE)
    problems.extend(card_problems)
    gold_digest = hashlib.sha256()  # fed while parsing: the gold file is read once
    lines = _read_gold(gold_path, problems, gold_digest)
    loc = str(gold_path)
    problems.extend(_check_records(lines, rubric, evidence_ids, loc))
    problems.extend(_check_cross_records(lines, loc))
    problems.extend(_check_near_duplicates(lines, loc))
    problems.extend(_check_reviewers(lines, root, loc, warn_undeclared))
    if strict:
        problems.extend(_contract_problems(root, rubric, lines, loc))
    release_log = read_release_log(root)
    records = [(line.number, line.case) for line in lines if line.case is not None]
    if release_log.releases or release_log.problems:  # hashing every record costs: only then
        # no dataset hash yet (the rubric and evidence are read only once they validated): the
        # lineage check compares every frozen record
        problems.extend(check_lineage(snapshot_of_records(root, records, "", loc), release_log))
    problems.sort(key=_problem_order)
    if errors_only(problems) or rubric is None:
        return ValidationReport(gold_path, tuple(problems), None)
    digest = sha256_json(
        {
            "gold": gold_digest.hexdigest(),
            "rubric": sha256_file(root / RUBRIC_FILE),
            "evidence": sha256_file(evidence_path) if evidence_path else None,
        }
    )
    cases, history, superseded_by = resolve_corrections(case for _, case in records)
    dataset = GoldDataset(
        root=root,
        gold_path=gold_path,
        rubric=rubric,
        records=tuple(case for _, case in records),
        cases=cases,
        history=history,
        superseded_by=superseded_by,
        card=card,
        evidence_ids=evidence_ids,
        sha256=digest,
        warnings=tuple(problems),
        releases=tuple(r for r in release_log.releases if r.kind == "gold"),
    )
    return ValidationReport(gold_path, tuple(problems), dataset)


def _contract_problems(
    root: Path, rubric: Rubric | None, lines: list[_Line], loc: str
) -> list[Problem]:
    """``validate --strict``: the rubric states its whole judgment contract (criterion, unit,
    allowed evidence, label boundaries, precedence, ambiguity rule, error costs per slice, use
    boundary), and every review gives its confidence, rationale and the passages it rests on as
    spans (offsets into the text)."""
    out = Problems()
    for name, message, fix in rubric.contract_gaps() if rubric is not None else []:
        code = "rubric_no_criterion" if name == "criterion" else "rubric_contract_incomplete"
        where = str(root / RUBRIC_FILE)
        out.add(
            where,
            code,
            f"{name}: {message}",
            f"{fix} in a new rubric version (docs/formats.md#rubric)",
            severity="warning",
        )
    for line in lines:
        case = line.case
        missing = {
            r.reviewer: [
                name
                for name, given in (
                    ("confidence", r.confidence),
                    ("rationale", r.rationale),
                    ("spans", r.spans),
                )
                if not given
            ]
            for r in (case.reviews if case else [])
        }
        gaps = "; ".join(f"{who}: {', '.join(what)}" for who, what in missing.items() if what)
        if case is not None and gaps:
            out.add(
                f"{loc}:{line.number}",
                "review_incomplete",
                f"reviews without their confidence, rationale or cited spans ({gaps})",
                "collect reviews with `workbench annotate` (docs/annotation.md), or add them",
                case_id=case.case_id,
                severity="warning",
            )
    return out


def _read_rubric(
    root: Path, problems: list[Problem]
) -> tuple[Rubric | None, Path | None, frozenset[str] | None]:
    """The rubric, its evidence snapshot path and ids (None when absent or unreadable)."""
    rubric_path = root / RUBRIC_FILE
    try:
        rubric = load_rubric(rubric_path)
    except WorkbenchError as exc:
        problems.extend(exc.problems)
        return None, None, None
    if not rubric.evidence_snapshot:
        return rubric, None, None
    # not resolved: problems name the declared path
    evidence_path = rubric_path.parent / rubric.evidence_snapshot
    evidence_ids, evidence_problems = _read_evidence_ids(evidence_path, rubric.evidence_snapshot)
    problems.extend(evidence_problems)
    return rubric, evidence_path, evidence_ids


def _read_gold(gold_path: Path, problems: list[Problem], digest: Any) -> list[_Line]:
    """Every line of the gold file, parsed (none when it cannot be read to its end)."""
    with bulk_load():
        parsed = _parse_lines(gold_path, problems, digest)
    if parsed is not None and not parsed:
        message = "the gold file holds no records"
        fix = "add one JSON object per line; an empty dataset cannot support any alignment claim"
        problems.append(problem(str(gold_path), "gold_empty", message, fix))
    return parsed or []


def resolve_corrections(
    records: Iterable[GoldCase],
) -> tuple[dict[str, GoldCase], dict[str, tuple[GoldCase, ...]], dict[str, str]]:
    """Resolve validated ``supersedes`` chains: the active cases, each one's history (oldest
    first) and a map from every superseded id to its active id."""
    records = list(records)
    by_id = {r.case_id: r for r in records}
    replaced_by = {r.supersedes: r.case_id for r in records if r.supersedes}
    cases: dict[str, GoldCase] = {}
    history: dict[str, tuple[GoldCase, ...]] = {}
    superseded_by: dict[str, str] = {}
    for record in records:
        if record.case_id in replaced_by:
            continue
        chain: list[GoldCase] = []
        previous = record.supersedes
        while previous is not None:
            older = by_id[previous]
            chain.append(older)
            superseded_by[older.case_id] = record.case_id
            previous = older.supersedes
        cases[record.case_id] = record
        if chain:
            history[record.case_id] = tuple(reversed(chain))
    return cases, history, superseded_by


def _problem_order(problem: Problem) -> tuple[str, int, str]:
    path, _, line = problem.location.rpartition(":")
    if line.isdigit():
        return (path, int(line), problem.code)
    return (problem.location, 0, problem.code)


def _read_evidence_ids(path: Path, declared: str) -> tuple[frozenset[str] | None, list[Problem]]:
    if not path.exists():
        message = f"the rubric declares evidence_snapshot {declared!r} but the file does not exist"
        fix = "add the snapshot file or remove evidence_snapshot from the rubric"
        return None, [problem(str(path), "evidence_snapshot_missing", message, fix)]
    ids: set[str] = set()
    problems: list[Problem] = []
    not_utf8: list[int] = []
    one_object = "write one JSON object {id, text, source} per line"
    try:
        for number, line in iter_jsonl_lines(path, not_utf8):
            where = f"{path}:{number}"
            try:
                row = loads_json(line)
            except JSONRecordError as exc:
                hint = one_object if exc.code == "malformed_json" else None
                problems.append(json_problem(exc, where, fix=hint))
                continue
            if not isinstance(row, dict) or not isinstance(row.get("id"), str):
                message = "an evidence snapshot line has no string 'id'"
                problems.append(problem(where, "evidence_malformed", message, one_object))
                continue
            if row["id"] in ids:
                message = f"evidence id {row['id']!r} appears twice"
                fix = "give each passage a unique id"
                problems.append(problem(where, "evidence_duplicate_id", message, fix))
            ids.add(row["id"])
    except WorkbenchError as exc:  # not a file, unreadable, or a line too long: stop reading
        return None, [*problems, *exc.problems]
    message = "the evidence snapshot line is not valid UTF-8"
    fix = "save the evidence snapshot as UTF-8"
    problems += [problem(f"{path}:{n}", "evidence_malformed", message, fix) for n in not_utf8]
    return frozenset(ids), problems


def _parse_lines(
    gold_path: Path, problems: list[Problem], digest: Any = None
) -> list[_Line] | None:
    """Every non-blank line, parsed; ``None`` when the file could not be read to its end."""
    lines: list[_Line] = []
    loc = str(gold_path)
    not_utf8: list[int] = []

    def flush_not_utf8() -> None:
        while not_utf8:
            bad = not_utf8.pop(0)
            message = "the line is not valid UTF-8"
            problems.append(problem(f"{loc}:{bad}", "not_utf8", message, "save the file as UTF-8"))
            lines.append(_Line(bad, None, None))

    try:
        for number, text in iter_jsonl_lines(gold_path, not_utf8, digest=digest):
            flush_not_utf8()
            line, found = _parse_line(text, f"{loc}:{number}", number)
            problems.extend(found)
            lines.append(line)
    except WorkbenchError as exc:  # not a file, unreadable, or a line too long: stop reading
        problems.extend(exc.problems)
        return None
    flush_not_utf8()
    return lines


def _parse_line(text: str, where: str, number: int) -> tuple[_Line, list[Problem]]:
    try:
        check_json(text)  # duplicate keys, NaN/Infinity, too deep: refused before validation
        return _Line(number, None, GoldCase.model_validate_json(text)), []
    except JSONRecordError as exc:
        fix = "write exactly one complete JSON object on this line"
        return _Line(number, None, None), [
            json_problem(exc, where, fix=fix if exc.code == "malformed_json" else None)
        ]
    except (SchemaTooNew, ValidationError) as exc:
        raw = loads_json(text)
        if not isinstance(raw, dict):
            message = f"the line holds a JSON {_json_type(raw)}, not an object"
            fix = "write exactly one JSON object per line"
            return _Line(number, None, None), [problem(where, "malformed_json", message, fix)]
        case_id = raw.get("case_id") if isinstance(raw.get("case_id"), str) else None
        if isinstance(exc, SchemaTooNew):
            return _Line(number, None, None), [exc.problem_at(where, case_id=case_id)]
        return _Line(number, raw, None), _translate(exc, where, case_id)


def _json_type(value: Any) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number"
    )


def _translate(exc: ValidationError, where: str, case_id: str | None) -> list[Problem]:
    return [problem(where, *_explain(err), case_id) for err in exc.errors(include_url=False)]


def _explain(err: Any) -> tuple[str, str, str]:
    """``(code, message, fix)`` of one pydantic error of a gold record."""
    path = ".".join(str(p) for p in err["loc"])
    leaf = str(err["loc"][-1]) if err["loc"] else ""
    kind = err["type"]
    if kind == "missing":
        return (
            "missing_field",
            f"missing required field '{path}'",
            _FIELD_HINTS.get(leaf, f"add '{leaf}'"),
        )
    if kind == "extra_forbidden":
        fix = "remove it or correct its spelling; free-form data belongs in 'metadata'"
        return "unknown_field", f"unknown field '{path}'", fix
    if kind in WRONG_TYPE_ERRORS:
        message = (
            f"field '{path}' must be {WRONG_TYPE_ERRORS[kind]} (got {_short(err.get('input'))})"
        )
        return "wrong_type", message, WRONG_TYPE_FIX
    if path == "partition" and kind == "enum":
        return (
            "unknown_partition",
            f"unknown partition {err.get('input')!r}",
            "use one of " + ", ".join(PARTITIONS),
        )
    if kind == "span_mismatch":
        fix = "cite the text exactly: a span's text is the case's <field>[start:end]"
        return "span_mismatch", str(err["msg"]), fix
    if kind == "value_error" and not err["loc"]:
        message = "the case has neither grading_notes nor reference"
        fix = "add grading_notes (required concepts, prohibited claims) or a reference answer"
        return "missing_grading_evidence", message, fix
    message = f"field '{path}': {err['msg']} (got {_short(err.get('input'))})"
    return (
        "invalid_field",
        message,
        _FIELD_HINTS.get(leaf, f"correct '{path}'; see docs/formats.md#gold-records"),
    )


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_records(
    lines: list[_Line], rubric: Rubric | None, evidence_ids: frozenset[str] | None, loc: str
) -> list[Problem]:
    """Each valid record on its own: response, rubric fit, adjudication, evidence."""
    out = Problems()
    vocab = set(rubric.labels) if rubric else None
    for line in lines:
        case = line.case
        if case is None:
            continue
        where = f"{loc}:{line.number}"
        _check_response(case, where, out)
        if rubric is not None:
            assert vocab is not None
            _check_rubric_fit(case, rubric, vocab, where, out)
        _check_adjudication(case, where, out)
        if case.evidence or any(review.evidence for review in case.reviews):
            _check_evidence(case, rubric, evidence_ids, where, out)
    return out


def _check_response(case: GoldCase, where: str, out: Problems) -> None:
    """The response is written, and ``response_hash`` is its sha256."""
    cid = case.case_id
    if not case.response.strip():
        fix = (
            "check the export: an empty response is rarely what reviewers judged; keep it only if"
            " judging empty answers is intended"
        )
        message = "the response under judgment is empty"
        out.add(where, "empty_response", message, fix, case_id=cid, severity="warning")
    actual_hash = hashlib.sha256(case.response.encode("utf-8")).hexdigest()
    if case.response_hash != actual_hash:
        fix = (
            "if the response was edited after review, restore the reviewed text; if the hash was"
            f" computed wrongly, set it to sha256 of the UTF-8 response ({actual_hash})"
        )
        message = "response_hash does not match the response"
        out.add(where, "response_hash_mismatch", message, fix, case_id=cid)


def _check_rubric_fit(
    case: GoldCase, rubric: Rubric, vocab: set[str], where: str, out: Problems
) -> None:
    """Reviewed under the rubric's version, in its slices, with its labels, enough reviews."""
    cid = case.case_id
    if case.rubric_version != rubric.version:
        message = (
            f"reviewed under rubric_version {case.rubric_version!r} but the rubric is"
            f" {rubric.version!r}"
        )
        fix = (
            "re-review the case under the current rubric, or validate it against the rubric it"
            " was reviewed under"
        )
        out.add(where, "rubric_version_mismatch", message, fix, case_id=cid)
    if case.slice not in rubric.slices:
        fix = (
            f"use one of the rubric's slices ({', '.join(rubric.slices)}) or declare this slice,"
            " with a risk level, in rubric.yaml"
        )
        out.add(where, "unknown_slice", f"unknown slice {case.slice!r}", fix, case_id=cid)
    for i, review in enumerate(case.reviews):
        if review.label not in vocab:
            message = f"reviews[{i}] ({review.reviewer}) has unknown label {review.label!r}"
            out.add(where, "unknown_label", message, _use_labels(rubric), case_id=cid)
    if case.adjudication and case.adjudication.label not in vocab:
        message = f"adjudication has unknown label {case.adjudication.label!r}"
        out.add(where, "unknown_label", message, _use_labels(rubric), case_id=cid)
    if len(case.reviews) < rubric.min_reviews:
        message = f"{len(case.reviews)} review(s); the rubric requires {rubric.min_reviews}"
        fix = "collect more independent reviews before adding the case"
        out.add(where, "too_few_reviews", message, fix, case_id=cid)


def _use_labels(rubric: Rubric) -> str:
    return "use one of " + ", ".join(rubric.labels)


def _check_adjudication(case: GoldCase, where: str, out: Problems) -> None:
    """Reviews come from different reviewers, and an adjudicator decided the label."""
    cid = case.case_id
    reviewers = [r.reviewer for r in case.reviews]
    if len(set(reviewers)) != len(reviewers):
        fix = (
            "reviews must come from different reviewers; keep the first label and record changes"
            " in adjudication"
        )
        out.add(where, "duplicate_reviewer", "the same reviewer appears twice", fix, case_id=cid)
    if case.adjudication is not None:
        return
    if case.reviewers_disagree:
        labels = ", ".join(f"{r.reviewer}={r.label}" for r in case.reviews)
        message = f"reviewers disagree ({labels}) and there is no adjudication"
        fix = "have an adjudicator decide and record {label, reason, adjudicator}"
        out.add(where, "unresolved_disagreement", message, fix, case_id=cid)
    else:
        fix = "record the adjudicated label {label, reason, adjudicator}, even when reviewers agree"
        out.add(where, "no_adjudication", "the case has no adjudication", fix, case_id=cid)


def _check_evidence(
    case: GoldCase,
    rubric: Rubric | None,
    evidence_ids: frozenset[str] | None,
    where: str,
    out: Problems,
) -> None:
    """Cited evidence resolves in the rubric's evidence snapshot."""
    cited = list(case.evidence) + [e for r in case.reviews for e in r.evidence]
    if rubric is not None and not rubric.evidence_snapshot:
        message = (
            f"cites evidence {', '.join(map(repr, dict.fromkeys(cited)))} but the rubric declares"
            " no evidence_snapshot to resolve it in"
        )
        fix = "declare evidence_snapshot in rubric.yaml, or remove the evidence ids"
        out.add(where, "unresolved_evidence", message, fix, case_id=case.case_id)
    if evidence_ids is None:
        return
    fix = (
        "cite an id from the snapshot, or add the passage to the snapshot as a new dataset version"
    )
    for eid in dict.fromkeys(cited):
        if eid not in evidence_ids:
            message = f"evidence id {eid!r} is not in the evidence snapshot"
            out.add(where, "unresolved_evidence", message, fix, case_id=case.case_id)


def _raw_text(raw: dict[str, Any], key: str) -> str | None:
    """``raw[key]`` when it is a string, else ``None`` (a line that failed validation)."""
    value = raw.get(key)
    return value if isinstance(value, str) else None


_Ident = tuple[int, str | None, str | None, str | None, str | None, str | None]
"""A record's identity fields: ``(line, case_id, partition, group, supersedes, response_hash)``."""


def _check_cross_records(lines: list[_Line], loc: str) -> list[Problem]:
    """Records must not share an id, split a group, or break a correction chain."""
    return check_identities(_identities(lines), loc)


def check_identities(ident: list[_Ident], loc: str) -> list[Problem]:
    """:func:`_check_cross_records` of the records' identity fields."""
    out = Problems()
    _check_duplicate_ids(ident, loc, out)
    _check_group_leakage(ident, loc, out)
    record_of: dict[str, tuple[int, str | None, str | None]] = {}
    for number, cid, partition, _group, _sup, rhash in ident:
        if cid is not None and cid not in record_of:
            record_of[cid] = (number, partition, rhash)
    successor = _check_corrections(ident, record_of, loc, out)
    _check_supersede_cycles(successor, record_of, loc, out)
    return out


def _identities(lines: list[_Line]) -> list[_Ident]:
    """Identity fields of every record, from the raw JSON of a line that failed validation."""
    ident: list[_Ident] = []
    for line in lines:
        if line.case is not None:
            c = line.case
            ident.append(
                (line.number, c.case_id, c.partition.value, c.group, c.supersedes, c.response_hash)
            )
        elif line.raw is not None:
            keys = ("case_id", "partition", "group", "supersedes", "response_hash")
            cid, partition, group, sup, rhash = (_raw_text(line.raw, key) for key in keys)
            ident.append((line.number, cid, partition, group, sup, rhash))
    return ident


def _check_duplicate_ids(ident: list[_Ident], loc: str, out: Problems) -> None:
    first_line: dict[str, int] = {}
    fix = "give the case a new id; to correct the earlier record, add 'supersedes' pointing at it"
    for number, cid, *_ in ident:
        if cid is None:
            continue
        if cid in first_line:
            message = f"case_id already used on line {first_line[cid]}"
            out.add(f"{loc}:{number}", "duplicate_case_id", message, fix, case_id=cid)
        else:
            first_line[cid] = number


def _check_group_leakage(ident: list[_Ident], loc: str, out: Problems) -> None:
    """Every case of a group (paraphrases of one prompt) is in one partition."""
    partitions_of_group: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for number, _cid, partition, group, *_ in ident:
        if group is not None and partition in PARTITIONS:
            partitions_of_group[group][partition].append(number)
    fix = (
        "move every case of the group into one partition; paraphrases must not straddle partitions"
    )
    for group, parts in partitions_of_group.items():
        if len(parts) > 1:
            where = ", ".join(
                f"{p} (lines {', '.join(map(str, ns[:5]))}{', ...' if len(ns) > 5 else ''})"
                for p, ns in sorted(parts.items())
            )
            first = min(n for ns in parts.values() for n in ns)
            message = f"group {group!r} appears in {len(parts)} partitions: {where}"
            out.add(f"{loc}:{first}", "group_leakage", message, fix)


def _check_corrections(
    ident: list[_Ident],
    record_of: dict[str, tuple[int, str | None, str | None]],
    loc: str,
    out: Problems,
) -> dict[str, str]:
    """Each correction fits its target and is its only one; returns each correction's target."""
    targets: dict[str, list[tuple[int, str]]] = defaultdict(list)
    successor: dict[str, str] = {}
    for number, cid, partition, _group, sup, rhash in ident:
        if sup is None or cid is None:
            continue
        at = f"{loc}:{number}"
        if sup not in record_of:
            message = f"supersedes {sup!r}, which is not in the dataset"
            fix = "point supersedes at the case_id of the record being corrected, or remove it"
            out.add(at, "supersedes_unknown", message, fix, case_id=cid)
            continue
        if sup == cid:
            fix = "point supersedes at the earlier record's case_id"
            out.add(at, "supersedes_cycle", "the record supersedes itself", fix, case_id=cid)
            continue
        targets[sup].append((number, cid))
        successor[cid] = sup
        _check_correction_fits(at, cid, sup, partition, rhash, record_of[sup], out)
    fix = "keep one correction chain: make the later correction supersede the earlier correction"
    for sup, claimants in targets.items():
        if len(claimants) > 1:
            lines_text = ", ".join(f"{c} (line {n})" for n, c in claimants)
            message = f"superseded by more than one record: {lines_text}"
            out.add(f"{loc}:{claimants[1][0]}", "supersedes_fork", message, fix, case_id=sup)
    return successor


def _check_correction_fits(
    at: str,
    cid: str,
    sup: str,
    partition: str | None,
    rhash: str | None,
    old: tuple[int, str | None, str | None],
    out: Problems,
) -> None:
    old_number, old_partition, old_hash = old
    if partition is not None and old_partition is not None and partition != old_partition:
        message = (
            f"corrects {sup!r} (line {old_number}) but moves it from {old_partition} to {partition}"
        )
        fix = "keep a correction in the partition of the record it corrects"
        out.add(at, "correction_moves_partition", message, fix, case_id=cid)
    if rhash is not None and old_hash is not None and rhash != old_hash:
        message = f"corrects {sup!r} (line {old_number}) but judges a different response"
        fix = "a new response is a new case: give it its own case_id without supersedes"
        out.add(at, "correction_changes_response", message, fix, case_id=cid)


def _check_supersede_cycles(
    successor: dict[str, str],
    record_of: dict[str, tuple[int, str | None, str | None]],
    loc: str,
    out: Problems,
) -> None:
    """Following ``supersedes`` ends; each cycle is reported once, at its smallest case id."""
    reported: set[str] = set()
    fix = "a correction must point at an older record; break the cycle"
    for start in successor:
        seen: list[str] = []
        node: str | None = start
        while node is not None and node in successor and node not in seen:
            seen.append(node)
            node = successor[node]
        if node is None or node not in seen:
            continue
        cycle = seen[seen.index(node) :]
        key = min(cycle)
        if key not in reported:
            reported.add(key)
            message = "supersedes chain forms a cycle: " + " -> ".join(cycle + [node])
            out.add(f"{loc}:{record_of[key][0]}", "supersedes_cycle", message, fix, case_id=key)


def normalize_text(text: str) -> str:
    """Text as compared for duplicates: NFKC, format characters removed, folded, spaces
    collapsed."""
    if text.isascii():  # NFKC leaves ASCII alone and casefold is lower (the common, fast case)
        return " ".join(text.lower().split())
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return " ".join(
        unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold()).split()
    )


def _check_near_duplicates(lines: list[_Line], loc: str) -> list[Problem]:
    """Refuse the same item (after :func:`normalize_text`) in two partitions and groups."""
    superseded = {
        line.case.supersedes for line in lines if line.case is not None and line.case.supersedes
    }
    by_key: dict[tuple[str, str], list[tuple[int, GoldCase]]] = defaultdict(list)
    for line in lines:
        case = line.case
        if case is None or case.case_id in superseded:
            continue
        by_key[(normalize_text(case.input), normalize_text(case.response))].append(
            (line.number, case)
        )
    out: list[Problem] = []
    fix = (
        "keep one of the two, or put both in one group and partition: the same item must not be"
        " tuned on in one partition and certified on in another"
    )
    for members in by_key.values():
        if len(members) < 2 or len({c.partition for _, c in members}) < 2:
            continue
        for i, (first_number, first) in enumerate(members):
            for number, case in members[i + 1 :]:
                if case.partition == first.partition or case.group == first.group:
                    continue
                exact = case.input == first.input and case.response == first.response
                how = (
                    "the same input and response as"
                    if exact
                    else (
                        "the same input and response, after normalizing Unicode, case and"
                        " whitespace (invisible format characters removed), as"
                    )
                )
                message = (
                    f"{how} case {first.case_id!r} (line {first_number}):"
                    f" {case.partition.value}/{case.group} vs {first.partition.value}/{first.group}"
                )
                at = f"{loc}:{number}"
                out.append(problem(at, "cross_partition_duplicate", message, fix, case.case_id))
    return out


def _check_reviewers(lines: list[_Line], root: Path, loc: str, warn: bool) -> list[Problem]:
    """Reviewers and adjudicators are on the project's ``reviewers:`` list."""
    listed = load_approvers(root, REVIEWERS_KEY)
    named = [line for line in lines if line.case is not None]
    if not listed.names:
        if not warn or not any(
            line.case.reviews or line.case.adjudication for line in named if line.case
        ):
            return []
        where = str(listed.config) if listed.config is not None else loc
        message = (
            "the project declares no reviewer list: reviewer and adjudicator names are not checked"
        )
        fix = (
            f"list the project's reviewers and adjudicators as `{REVIEWERS_KEY}:` in workbench.yaml"
        )
        return [problem(where, "reviewers_undeclared", message, fix, severity="warning")]
    out = Problems()
    fix = (
        f"name a reviewer listed in {listed.config}, or have the project add the person to"
        f" `{REVIEWERS_KEY}:`"
    )
    for line in named:
        case = line.case
        assert case is not None
        names = [("reviewer", r.reviewer) for r in case.reviews]
        if case.adjudication is not None and case.adjudication.adjudicator is not None:
            names.append(("adjudicator", case.adjudication.adjudicator))
        at = f"{loc}:{line.number}"
        for role, name in names:
            if name.strip() not in listed.names:
                message = f"{role} {name!r} is not in the project's reviewer list"
                out.add(at, "reviewer_unknown", message, fix, case_id=case.case_id)
    return out
