"""Predictions from any table (CSV, JSONL, Parquet, a DataFrame, Ragas output) as judge results,
with an ``imported`` candidate beside them. A :class:`~._results_mapping.ResultsMapping` names
the columns and declares the judge; rows match gold cases by id or by exact input and response,
and every mismatch is refused. An empty prediction is a missing result, never invented."""

from __future__ import annotations

import ast
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .._io import max_document_bytes, read_bounded, sha256_json, sha256_text
from .._load import Problems, peek_yaml
from ..errors import WorkbenchError, problem
from ..gold import PARTITIONS, GoldCase, GoldDataset, load_dataset
from ..heldout import refuse_held_out_content
from ..results import JudgeIdentity, JudgeResult, has_reason
from ._registry import RESULTS_FILE, check_out_dir, jsonl_text, refuse, write_files
from ._results_mapping import (
    FLAG_SYNTAX,
    MAPPING_SYNTAX,
    ResultsMapping,
    Syntax,
    check_mapping,
    load_mapping_file,
    merge_options,
)
from ._table_reader import PREDICTIONS, RowIssues, TableRead, _listed, as_text, is_empty

MAX_PROBLEMS = 200
HELD_OUT_NOTE = (
    "\nnote: {} result(s) judge held-out cases. Held-out cases are judged only by `workbench"
    " certify` (once, on the record): `align` and `gate` refuse these results as they are"
    " (held_out_unaccounted). Analyse the development or calibration cases with `--partition"
    " development` (or `--partition calibration`), and leave the held-out partition to `workbench"
    " certify`."
)


@dataclass(frozen=True)
class ResultsImport:
    """What ``workbench import results`` wrote."""

    source: str
    out: str
    results: int
    dataset_sha256: str
    rubric_version: str
    release_id: str | None
    spec: str | None = None
    """The ``imported`` candidate spec (table imports, as ``judge`` and ``fingerprint``)."""
    judge: str | None = None
    fingerprint: str | None = None
    empty_rows: int = 0
    """Rows whose prediction was empty: no result written, the case is missing."""
    missing_case_ids: tuple[str, ...] = ()
    """Active gold cases with no result, in gold order."""
    cases: int = 0
    partitions: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per gold partition: (results written, active cases)."""
    migration_note: str | None = None
    held_out: int = 0
    """Results for held-out cases, which ``align`` and ``gate`` refuse."""

    def format(self) -> str:
        release = f"release {self.release_id}" if self.release_id else "not frozen"
        against = f"dataset {self.dataset_sha256[:12]} (rubric {self.rubric_version}, {release})"
        if self.spec is None:
            text = f"declared {self.results} result(s) from {self.source} as produced against"
            text += f" {against}: wrote {self.out}"
            if self.migration_note:
                text += (
                    f"\nnote: {self.migration_note} (each migrated line records it in 'migration')"
                )
        else:
            text = (
                f"imported {self.results} result(s) of judge {self.judge} (fingerprint"
                f" {str(self.fingerprint)[:12]}) from {self.source} against {against}: wrote"
                f" {self.out} and {self.spec}."
            )
            if self.partitions:
                done = (f"{n} {d}/{t}" for n, (d, t) in self.partitions.items())
                text += " Results per partition: " + ", ".join(done) + "."
            missing = self.missing_case_ids
            if missing:
                text += (
                    f" {len(missing)} of {self.cases} gold case(s) have no prediction"
                    f" ({self.empty_rows} row(s) with an empty prediction,"
                    f" {len(missing) - self.empty_rows} case(s) with no row):"
                    f" {_listed(list(missing), 10)}. They stay missing; align reports the"
                    " evaluation incomplete."
                )
            else:
                text += f" Every one of the {self.cases} gold case(s) has a prediction."
        return text + (HELD_OUT_NOTE.format(self.held_out) if self.held_out else "")


@dataclass(frozen=True)
class ImportedResults:
    """Predictions turned into judge results against one gold dataset (not yet written)."""

    results: tuple[JudgeResult, ...]
    identity: JudgeIdentity
    fingerprint: str
    spec_data: dict[str, Any]
    source: str
    source_sha256: str
    dataset_sha256: str
    rubric_version: str
    release_id: str | None
    cases: int
    empty_rows: tuple[tuple[str, str], ...] = ()
    """``(case_id, row)`` of rows whose prediction was empty."""
    missing_case_ids: tuple[str, ...] = ()
    partitions: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.identity.name}@{self.identity.version}"

    def frame(self) -> Any:
        """The results as a pandas DataFrame (one row per result)."""
        import pandas as pd

        columns = ("case_id", "partition", "value", "score", "reason")
        return pd.DataFrame([{c: getattr(r, c) for c in columns} for r in self.results])

    def write(self, out: str | Path, *, force: bool = False) -> ResultsImport:
        """Write ``out/results.jsonl`` and ``out/<name>@<version>.yaml``; refuse to overwrite
        different files unless ``force``."""
        out = Path(out)
        check_out_dir(out, "cannot import results")
        spec_path = out / f"{self.label}.yaml"
        texts = {
            RESULTS_FILE: jsonl_text(r.model_dump(mode="json") for r in self.results),
            spec_path.name: (
                f"# Written by `workbench import results` from {self.source} (sha256"
                f" {self.source_sha256[:12]}).\n# It replays {RESULTS_FILE} beside it; results and"
                " spec belong together.\n"
                + yaml.safe_dump(self.spec_data, sort_keys=False, allow_unicode=True)
            ),
        }
        problems = Problems()
        for name, text in texts.items():
            if (out / name).exists() and not force and _read_bytes(out / name) != text.encode():
                problems.add(
                    str(out / name),
                    "out_not_empty",
                    f"{name} already exists with different content",
                    "choose a new directory (a changed judge is a new version), or pass --force to"
                    " replace it",
                )
        for other in sorted(out.glob("*.yaml")) if out.is_dir() else []:
            if other.name != spec_path.name and _replays(other, out / RESULTS_FILE):
                problems.add(
                    str(other),
                    "out_other_candidate",
                    f"candidate {other.name} in --out replays {RESULTS_FILE} too; replacing the"
                    " file would change what it replays",
                    "import into a new directory (one judge per directory)",
                )
        problems.raise_if_any("refusing to overwrite imported results")
        write_files(out, texts, "cannot import results", [])
        _check_candidate(spec_path, self.fingerprint)
        return ResultsImport(
            source=self.source,
            out=str(out / RESULTS_FILE),
            results=len(self.results),
            dataset_sha256=self.dataset_sha256,
            rubric_version=self.rubric_version,
            release_id=self.release_id,
            spec=str(spec_path),
            judge=self.label,
            fingerprint=self.fingerprint,
            empty_rows=len(self.empty_rows),
            missing_case_ids=self.missing_case_ids,
            cases=self.cases,
            partitions=self.partitions,
            held_out=self.partitions.get("held_out", (0, 0))[0],
        )


def _read_bytes(path: Path) -> bytes | None:
    try:
        return read_bounded(path, limit=max_document_bytes())
    except WorkbenchError:
        return None


def _replays(spec: Path, results: Path) -> bool:
    raw = peek_yaml(spec)
    return (
        isinstance(raw, dict)
        and raw.get("kind") == "imported"
        and isinstance(raw.get("results"), str)
        and (spec.parent / raw["results"]).resolve() == results.resolve()
    )


def _check_candidate(spec_path: Path, fingerprint: str) -> None:
    """The written candidate loads, and replays exactly the judge the results name."""
    from ..judges import load_candidate

    source = load_candidate(spec_path).identity.params.get("source_fingerprint")
    if source != fingerprint:  # pragma: no cover - a defect, never user input
        message = f"the candidate replays judge {source} but the results name {fingerprint}"
        refuse(
            "import defect", str(spec_path), "import_defect", message, "please report this defect"
        )


def _dataset(gold: str | Path | GoldDataset) -> GoldDataset:
    return gold if isinstance(gold, GoldDataset) else load_dataset(gold)


def _raw_mapping(
    mapping: str | Path | dict[str, Any] | ResultsMapping | None, base_dir: str | Path | None
) -> tuple[dict[str, Any], Path, str]:
    """The raw mapping, the directory its relative paths start from, and how problems name it."""
    here = Path(base_dir) if base_dir else None
    if isinstance(mapping, ResultsMapping):
        mapping = mapping.model_dump(mode="json", exclude_none=True)
    if mapping is None or isinstance(mapping, dict):
        return dict(mapping or {}), here or Path.cwd(), "mapping"
    raw, directory = load_mapping_file(mapping)
    return raw, here or directory, str(mapping)


def results_from_table(
    source: str | Path,
    mapping: str | Path | dict[str, Any] | ResultsMapping | None,
    *,
    gold: str | Path | GoldDataset,
    options: dict[str, Any] | None = None,
    base_dir: str | Path | None = None,
) -> ImportedResults:
    """A CSV, JSONL or Parquet predictions file as results against ``gold``: ``mapping`` (a YAML
    file, a dict or a :class:`ResultsMapping`) with ``options`` (command-line flags) laid over it;
    a relative ``prompt_file`` resolves against the mapping's directory (or ``base_dir``)."""
    dataset = _dataset(gold)
    raw, directory, where = _raw_mapping(mapping, base_dir)
    syntax = FLAG_SYNTAX if mapping is None else MAPPING_SYNTAX
    raw = merge_options(raw, options or {})
    declared = (
        raw.get("format") if raw.get("format") in ("csv", "tsv", "jsonl", "parquet") else None
    )
    table = PREDICTIONS.read_table(Path(source), PREDICTIONS.table_format(Path(source), declared))
    where = "command line" if syntax.flags else where
    return _build(table, raw, dataset, location=where, base_dir=directory, syntax=syntax)


def results_from_dataframe(
    frame: Any,
    mapping: str | Path | dict[str, Any] | ResultsMapping,
    *,
    gold: str | Path | GoldDataset,
    base_dir: str | Path | None = None,
) -> ImportedResults:
    """A pandas DataFrame of predictions as results against ``gold``; ``mapping`` as for
    :func:`results_from_table`. Write them with ``.write(out)``."""
    dataset = _dataset(gold)
    raw, directory, where = _raw_mapping(mapping, base_dir)
    table = PREDICTIONS.table_from_frame(frame)
    return _build(table, raw, dataset, location=where, base_dir=directory)


def results_from_ragas(
    result: Any,
    mapping: str | Path | dict[str, Any] | ResultsMapping,
    *,
    gold: str | Path | GoldDataset,
    base_dir: str | Path | None = None,
) -> ImportedResults:
    """Results from a Ragas ``EvaluationResult`` (anything with ``to_pandas()``): without a key
    in the mapping, rows match gold cases on ``user_input`` and ``response``; a NaN score leaves
    the case missing."""
    frame = result.to_pandas() if hasattr(result, "to_pandas") else result
    raw, directory, _ = _raw_mapping(mapping, base_dir)
    keyed = any(raw.get(k) for k in ("case_id", "input", "response"))
    if not keyed and {"user_input", "response"} <= {str(c) for c in getattr(frame, "columns", [])}:
        raw = {**raw, "input": "user_input", "response": "response"}
    return results_from_dataframe(frame, raw, gold=gold, base_dir=directory)


def _raise(issues: RowIssues, summary: str) -> None:
    out = sorted(issues.problems(), key=lambda p: (p.code, p.location))
    location = issues.table.location
    if len(out) > MAX_PROBLEMS:
        message = f"{len(out) - MAX_PROBLEMS} more problem(s) not listed"
        rest = problem(location, "more_problems", message, "fix the ones above and import again")
        out = [*out[:MAX_PROBLEMS], rest]
    if out:
        raise WorkbenchError(f"{location}: {summary}: {len(out)} problem(s)", out)


def _float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value) if isinstance(value, int | float) else float(str(value).strip())
    except ValueError:
        return None


_METRIC_RESULT = re.compile(
    r"^MetricResult\(value=(?P<value>.*?)(?:, reason=(?P<reason>(?:'.*'|\".*\")))?\)$", re.DOTALL
)


def metric_result(value: Any) -> tuple[Any, str | None] | None:
    """``(value, reason)`` of a cell holding a Ragas ``MetricResult`` (object or its CSV text),
    else None."""
    if type(value).__name__ == "MetricResult" and hasattr(value, "value"):
        reason = getattr(value, "reason", None)
        return value.value, reason if isinstance(reason, str) else None
    found = _METRIC_RESULT.match(value.strip()) if isinstance(value, str) else None
    if found is None:
        return None
    try:
        reason = ast.literal_eval(found["reason"]) if found["reason"] is not None else None
    except (ValueError, SyntaxError):
        return None
    return found["value"], reason if isinstance(reason, str) else None


_BAD = object()
"""A cell that is not what its column holds (reported; the row gets no result)."""


def _build(
    table: TableRead,
    raw: dict[str, Any],
    dataset: GoldDataset,
    *,
    location: str,
    base_dir: Path,
    syntax: Syntax = MAPPING_SYNTAX,
) -> ImportedResults:
    rubric = dataset.rubric
    mapping, prompt_sha = check_mapping(
        raw,
        location=location,
        base_dir=base_dir,
        columns=table.columns,
        rubric=rubric,
        syntax=syntax,
    )
    threshold = _threshold(mapping, dataset)
    identity = _identity(mapping, prompt_sha, threshold)
    fingerprint = identity.fingerprint()
    run_id = (
        "import-"
        + sha256_json({"source": table.sha256, "judge": fingerprint, "dataset": dataset.sha256})[
            :16
        ]
    )
    values, empty = _read_rows(table, mapping, dataset, threshold, syntax)
    exposed = [c for c, _ in values if c.partition.value != "held_out"]  # one row per case
    refuse_held_out_content(exposed, dataset, table.location)
    results = [
        JudgeResult(
            case_id=case.case_id,
            response_hash=case.response_hash,
            judge=identity,
            judge_fingerprint=fingerprint,
            run_id=run_id,
            partition=case.partition.value,
            attempt=1,
            repeat=0,
            dataset_sha256=dataset.sha256,
            rubric_version=rubric.version,
            **verdict,
        )
        for case, verdict in values
    ]
    if not results:
        refuse(
            f"{table.location}: nothing to import",
            table.location,
            "no_predictions",
            f"none of the {len(table.rows)} row(s) has a prediction in column"
            f" {(mapping.label or mapping.score)!r}",
            syntax.pick(
                "check the prediction column named in the mapping",
                "check the column given to " + ("--label" if mapping.label else "--score"),
            )
            + "; empty cells are missing predictions",
        )
    judged = {r.case_id for r in results}
    counts: dict[str, tuple[int, int]] = {}
    for case in dataset.cases.values():
        done, total = counts.get(case.partition.value, (0, 0))
        counts[case.partition.value] = (done + (case.case_id in judged), total + 1)
    return ImportedResults(
        results=tuple(results),
        identity=identity,
        fingerprint=fingerprint,
        spec_data=_spec_data(mapping, table, threshold, fingerprint, list(rubric.labels)),
        source=table.label,
        source_sha256=table.sha256,
        dataset_sha256=dataset.sha256,
        rubric_version=rubric.version,
        release_id=dataset.release.release_id if dataset.release else None,
        cases=len(dataset.cases),
        empty_rows=tuple((case_id, str(table.refs[i])) for case_id, i in empty),
        missing_case_ids=tuple(case_id for case_id in dataset.cases if case_id not in judged),
        partitions={name: counts[name] for name in PARTITIONS if name in counts},
    )


def _threshold(mapping: ResultsMapping, dataset: GoldDataset) -> Any:
    from ..judges import Threshold

    t, rubric = mapping.threshold, dataset.rubric
    if t is None:
        return None
    return Threshold(
        value=t.value,
        pass_if=t.pass_if,
        pass_label=t.pass_label or rubric.pass_label or "",
        fail_label=t.fail_label or rubric.fail_label or "",
    )


def _identity(mapping: ResultsMapping, prompt_sha: str | None, threshold: Any) -> JudgeIdentity:
    judge = mapping.judge
    return JudgeIdentity(
        name=judge.name,
        version=judge.version,
        kind="imported",
        model=judge.model,
        prompt_sha256=prompt_sha,
        ragas_version=None,
        params={
            "prompt_description": judge.prompt_description,
            "generation": judge.params,
            "prediction": "score" if mapping.label is None else "label",
            "labels": dict(sorted(mapping.labels.items())),
            "threshold": threshold.model_dump(mode="json") if threshold is not None else None,
        },
    )


def _read_rows(
    table: TableRead, mapping: ResultsMapping, dataset: GoldDataset, threshold: Any, syntax: Syntax
) -> tuple[list[tuple[GoldCase, dict[str, Any]]], list[tuple[str, int]]]:
    """Each predicting row's gold case and verdict, in gold order, and the empty rows."""
    issues = RowIssues(table)
    by_text: dict[tuple[str, str], list[GoldCase]] = defaultdict(list)
    for known in dataset.cases.values() if mapping.case_id is None else ():
        by_text[(known.input, known.response_hash)].append(known)
    found: dict[str, list[int]] = defaultdict(list)
    values: dict[int, tuple[GoldCase, dict[str, Any]]] = {}
    empty: list[tuple[str, int]] = []
    labels = set(dataset.rubric.labels)
    for i, row in enumerate(table.rows):
        if mapping.case_id is not None:
            case = _case_by_id(i, row, mapping, dataset, issues)
        else:
            case = _case_by_text(i, row, mapping, by_text, issues, syntax)
        if case is None:
            continue
        found[case.case_id].append(i)
        verdict = _verdict(i, row, mapping, threshold, labels, issues, syntax)
        if verdict == "empty":
            empty.append((case.case_id, i))
        elif isinstance(verdict, dict):
            values[i] = (case, verdict)
    for case_id, rows in ((c, r) for c, r in found.items() if len(r) > 1):
        for i in rows:
            values.pop(i, None)
            issues.add(
                "duplicate_key",
                f"{{n}} rows predict case {case_id!r} ({{rows}})",
                "keep one prediction per case: a judge that ran twice is two imports (or two"
                " versions)",
                i,
                key=case_id,
                case_id=case_id,
            )
    _raise(issues, f"refusing to import these predictions against {dataset.gold_path}")
    order = {case_id: n for n, case_id in enumerate(dataset.cases)}
    return sorted(values.values(), key=lambda v: order[v[0].case_id]), empty


def _spec_data(
    mapping: ResultsMapping, table: TableRead, threshold: Any, fingerprint: str, labels: list[str]
) -> dict[str, Any]:
    from ..judges import CandidateSpec

    t = threshold  # a mapping without a label column has one
    rule = (
        f"labels from column {mapping.label!r}"
        if mapping.label
        else f"score column {mapping.score!r} {t.pass_if} {t.value} -> {t.pass_label}, else"
        f" {t.fail_label}"
    )
    provenance = (
        f"Predictions imported from {table.label} (sha256 {table.sha256[:12]}) with `workbench"
        f" import results`; {rule}; source judge fingerprint {fingerprint[:12]}."
    )
    judge = mapping.judge
    description = judge.description.strip()
    spec = CandidateSpec(
        name=judge.name,
        version=judge.version,
        kind="imported",
        description=(description + " " if description else "") + provenance,
        labels=labels,
        model=judge.model,
        results=RESULTS_FILE,
        params=judge.params,
    )
    return {
        "schema_version": spec.schema_version,
        **spec.model_dump(mode="json", exclude_defaults=True),
    }


_FIX_SOURCE = (
    "import the predictions against the gold they were produced on (same case ids, inputs and"
    " responses)"
)


def _case_by_text(
    i: int,
    row: dict[str, Any],
    m: ResultsMapping,
    by_text: dict[tuple[str, str], list[GoldCase]],
    issues: RowIssues,
    syntax: Syntax,
) -> GoldCase | None:
    by_id = syntax.pick("map a case_id column", "give --case-id COLUMN")
    inp = row.get(m.input) if m.input else None
    response = row.get(m.response) if m.response else None
    if is_empty(inp) or is_empty(response):
        issues.add(
            "empty_key",
            "{n} row(s) have no input or no response to match a gold case on ({rows})",
            f"give every row its input and response (or {by_id})",
            i,
            key="",
        )
        return None
    matches = by_text.get((str(inp), sha256_text(str(response))), [])
    if not matches:
        issues.add(
            "unmatched_row",
            "{n} row(s) match no active gold case on the exact input and response ({rows})",
            _FIX_SOURCE + f"; texts must match exactly, or {by_id}",
            i,
            key="",
        )
    elif len(matches) > 1:
        ids = ", ".join(c.case_id for c in matches)
        message = f"the row's input and response match {len(matches)} gold cases ({ids})"
        issues.at(
            i, "ambiguous_match", message, f"{by_id}: the texts do not tell these cases apart"
        )
    return matches[0] if len(matches) == 1 else None


def _case_by_id(
    i: int, row: dict[str, Any], m: ResultsMapping, dataset: GoldDataset, issues: RowIssues
) -> GoldCase | None:
    assert m.case_id is not None
    value = row.get(m.case_id)
    if is_empty(value):
        message = f"{{n}} row(s) have no case id in column {m.case_id!r} ({{rows}})"
        issues.add(
            "empty_key", message, "give every row its gold case id, or drop the row", i, key=""
        )
        return None
    key = str(int(value)) if isinstance(value, float) and value.is_integer() else str(value).strip()
    case = dataset.cases.get(key)
    inp, response = (row.get(c) if c else None for c in (m.input, m.response))
    if case is None and key in dataset.superseded_by:
        issues.add(
            "superseded_case",
            f"case {key!r} was superseded by {dataset.latest_id(key)!r} ({{rows}})",
            "predictions must be for the latest records; re-run the judge on the current gold",
            i,
            key=key,
            case_id=key,
        )
    elif case is None:
        message = f"the gold has no case {key!r} ({{rows}})"
        issues.add("unknown_case", message, _FIX_SOURCE, i, key=key, case_id=key)
    elif not is_empty(inp) and str(inp) != case.input:
        issues.at(
            i,
            "input_mismatch",
            f"the row's input (column {m.input!r}) differs from the gold case's input",
            "the predictions were not produced on this gold (or the text changed on export);"
            " re-run the judge on it",
            case_id=key,
        )
    elif not is_empty(response) and sha256_text(str(response)) != case.response_hash:
        issues.at(
            i,
            "response_hash_mismatch",
            "the judge saw a different response than the reviewers (sha256 of column"
            f" {m.response!r} differs from the gold response_hash)",
            "the predictions were not produced on this gold; re-run the judge on it",
            case_id=key,
        )
    else:
        return case
    return None


_NUMBERS = (("latency_s", False), ("tokens_in", True), ("tokens_out", True), ("cost_usd", False))


def _verdict(
    i: int,
    row: dict[str, Any],
    m: ResultsMapping,
    threshold: Any,
    labels: set[str],
    issues: RowIssues,
    syntax: Syntax,
) -> dict[str, Any] | str | None:
    """The verdict fields of row ``i``, ``"empty"`` without a prediction, None after a problem."""
    label_cell = row.get(m.label) if m.label else None
    score_cell = row.get(m.score) if m.score else None
    reason: str | None = None
    if (unpacked := metric_result(label_cell)) is not None:
        label_cell, reason = unpacked
    if (unpacked := metric_result(score_cell)) is not None:
        score_cell, reason = unpacked[0], reason or unpacked[1]
    score = _score(i, m, score_cell, issues)
    if m.label is not None:
        value = _label(i, m, label_cell, labels, issues, syntax)
    else:
        value = (
            threshold.label(score) if isinstance(score, float) and threshold is not None else None
        )
    if m.reason is not None and not is_empty(row.get(m.reason)):
        reason = str(row.get(m.reason))
    if m.reason is not None and value not in (None, _BAD) and not has_reason(reason):
        issues.add(
            "verdict_reason_missing",
            f"column {m.reason!r}: {{n}} verdict(s) state no reason ({{rows}})",
            "a judge whose reasons are mapped states one with every verdict (`workbench run`"
            " records a model answer without one as an evaluator error): re-run or re-export"
            " those rows, or leave their prediction empty (a missing result)",
            i,
        )
        return None
    numbers = {
        name: _usage(i, row, getattr(m, name), name, whole, issues) for name, whole in _NUMBERS
    }
    if any(v is _BAD for v in (score, value, *numbers.values())):
        return None
    return (
        "empty" if value is None else {"value": value, "reason": reason, "score": score, **numbers}
    )


def _score(i: int, m: ResultsMapping, cell: Any, issues: RowIssues) -> Any:
    if m.score is None or is_empty(cell):
        return None
    number = _float(cell)
    if number is not None and math.isnan(number):
        return None
    if number is None or not math.isfinite(number):
        issues.add(
            "invalid_score",
            f"column {m.score!r}: {{n}} value(s) are not finite numbers ({{rows}})",
            "give scores as numbers; leave the cell empty when the judge produced none",
            i,
            key=m.score,
        )
        return _BAD
    return number


def _label(
    i: int, m: ResultsMapping, cell: Any, labels: set[str], issues: RowIssues, syntax: Syntax
) -> Any:
    if is_empty(cell):
        return None
    text = as_text(cell)
    target = m.labels.get(text) if m.labels else (text if text in labels else None)
    if target is not None:
        return target
    listed = syntax.pick("listed in labels", "given a --label-map")
    known = listed if m.labels else "a rubric label (" + ", ".join(sorted(labels)) + ")"
    issues.add(
        "unmapped_label",
        f"column {m.label!r}: value {text!r} is not {known} ({{rows}})",
        "map every source value to a rubric label: "
        + syntax.pick("labels: {" + f"{text}: <label>" + "}", f"--label-map {text}=<label>")
        + f" (<label> one of {', '.join(sorted(labels))})",
        i,
        key=text,
    )
    return _BAD


def _usage(
    i: int, row: dict[str, Any], column: str | None, name: str, whole: bool, issues: RowIssues
) -> Any:
    if column is None or is_empty(row.get(column)):
        return None
    number = _float(row.get(column))
    if number is not None and math.isfinite(number) and number >= 0:
        if not whole:
            return number
        if number.is_integer():
            return int(number)
    what = "non-negative whole numbers" if whole else "non-negative numbers"
    issues.add(
        "invalid_number",
        f"column {column!r} ({name}): {{n}} value(s) are not {what} ({{rows}})",
        f"give {name} as {what}, or leave the cell empty",
        i,
        key=column,
    )
    return _BAD
