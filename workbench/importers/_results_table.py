"""Predictions from any table into the judge-result contract, with an ``imported`` candidate beside
them.

A predictions table (CSV, JSONL, Parquet, a pandas DataFrame, a Ragas experiment's CSV or
``EvaluationResult.to_pandas()``) has a case key and a prediction (label or score) per row,
and optionally a reason, latency, tokens and cost. A :class:`~._results_mapping.ResultsMapping`
says which column is what and declares the judge (name, version, model, prompt).

- Rows find their gold case by id, or by the exact input and response texts (Ragas output
  has no id). A row for a case the gold does not have, a superseded case, a different
  response than the reviewers judged, an ambiguous match or a duplicated key is refused.
- Labels map through ``labels`` (every value listed) or must be rubric labels; an unmapped
  value is refused with every row holding it. Scores become labels through a threshold with
  a direction (as in score-based candidates); the score is kept.
- A row without a prediction (empty cell, NaN: Ragas writes NaN when a metric failed) and a
  gold case without a row get **no result**: ``align`` reports them missing, the evaluation
  incomplete. Nothing is invented.
- The judge identity is the declaration plus the verdict rules (label mapping, threshold);
  its hash is every result's ``judge_fingerprint``. Results carry the gold's lineage.

:meth:`ImportedResults.write` writes ``results.jsonl`` and ``<name>@<version>.yaml``, an
``imported`` candidate spec that replays them (``workbench run``, ``gate``, ``certify``).
Re-importing the same input writes the same bytes.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .._io import (
    atomic_write_text,
    max_document_bytes,
    read_bounded,
    sha256_json,
    sha256_text,
)
from .._load import Problems, peek_yaml
from ..errors import Problem, WorkbenchError
from ..gold import PARTITIONS, GoldCase, GoldDataset, load_dataset
from ..results import JudgeIdentity, JudgeResult
from ._results_mapping import ResultsMapping, check_mapping, load_mapping_file
from ._results_source import (
    Table,
    as_text,
    is_empty,
    metric_result,
    read_table,
    table_format,
    table_from_frame,
)

RESULTS_FILE = "results.jsonl"
MAX_PROBLEMS = 200
"""Problems listed before the rest are summarised in one line."""


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
    """The ``imported`` candidate spec written beside the results (table imports)."""
    judge: str | None = None
    """``name@version`` of the declared judge (table imports)."""
    fingerprint: str | None = None
    """The judge fingerprint every result carries (table imports)."""
    empty_rows: int = 0
    """Rows whose prediction was empty: no result written, the case is missing."""
    missing_case_ids: tuple[str, ...] = ()
    """Active gold cases with no result (empty prediction or no row), in gold order."""
    cases: int = 0
    """Active gold cases."""
    partitions: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per gold partition: (results written, active cases)."""
    migration_note: str | None = None
    """Set when records written under an older result schema were migrated on read."""

    def format(self) -> str:
        release = f"release {self.release_id}" if self.release_id else "not frozen"
        if self.spec is None:
            text = (
                f"declared {self.results} result(s) from {self.source} as produced against dataset"
                f" {self.dataset_sha256[:12]} (rubric {self.rubric_version}, {release}): wrote"
                f" {self.out}"
            )
            return text + (
                f"\nnote: {self.migration_note} (each migrated line records it in 'migration')"
                if self.migration_note
                else ""
            )
        text = (
            f"imported {self.results} result(s) of judge {self.judge} (fingerprint"
            f" {str(self.fingerprint)[:12]}) from {self.source} against dataset"
            f" {self.dataset_sha256[:12]} (rubric {self.rubric_version}, {release}): wrote"
            f" {self.out} and {self.spec}."
        )
        if self.partitions:
            text += (
                " Results per partition: "
                + ", ".join(
                    f"{name} {done}/{total}" for name, (done, total) in self.partitions.items()
                )
                + "."
            )
        if self.missing_case_ids:
            shown = ", ".join(self.missing_case_ids[:10]) + (
                f" and {len(self.missing_case_ids) - 10} more"
                if len(self.missing_case_ids) > 10
                else ""
            )
            text += (
                f" {len(self.missing_case_ids)} of {self.cases} gold case(s) have no prediction"
                f" ({self.empty_rows} row(s) with an empty prediction,"
                f" {len(self.missing_case_ids) - self.empty_rows} case(s) with no row): {shown}."
                " They stay missing; align reports the evaluation incomplete."
            )
        else:
            text += f" Every one of the {self.cases} gold case(s) has a prediction."
        return text


@dataclass(frozen=True)
class ImportedResults:
    """Predictions turned into judge results against one gold dataset (not yet written)."""

    results: tuple[JudgeResult, ...]
    identity: JudgeIdentity
    fingerprint: str
    spec_data: dict[str, Any]
    """The ``imported`` candidate spec, as written to YAML."""
    source: str
    source_sha256: str
    dataset_sha256: str
    rubric_version: str
    release_id: str | None
    cases: int
    empty_rows: tuple[tuple[str, str], ...] = ()
    """``(case_id, row)`` of rows whose prediction was empty."""
    missing_case_ids: tuple[str, ...] = field(default=())
    partitions: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per gold partition: (results, active cases)."""

    @property
    def label(self) -> str:
        return f"{self.identity.name}@{self.identity.version}"

    def frame(self) -> Any:
        """The results as a pandas DataFrame (one row per result)."""
        import pandas as pd

        return pd.DataFrame(
            [
                {
                    "case_id": r.case_id,
                    "partition": r.partition,
                    "value": r.value,
                    "score": r.score,
                    "reason": r.reason,
                }
                for r in self.results
            ]
        )

    def rows(self) -> list[dict[str, Any]]:
        return [r.model_dump(mode="json") for r in self.results]

    def write(self, out: str | Path, *, force: bool = False) -> ResultsImport:
        """Write ``out/results.jsonl`` and ``out/<name>@<version>.yaml``; refuse to overwrite
        different files unless ``force``."""
        out = Path(out)
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
        spec_path = out / f"{self.label}.yaml"
        results_text = "".join(
            json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in self.rows()
        )
        spec_text = (
            f"# Written by `workbench import results` from {self.source} (sha256"
            f" {self.source_sha256[:12]}).\n# It replays {RESULTS_FILE} beside it; results and spec"
            " belong together.\n"
            + yaml.safe_dump(self.spec_data, sort_keys=False, allow_unicode=True)
        )
        problems: list[Problem] = []
        for path, text in ((target, results_text), (spec_path, spec_text)):
            if path.exists() and not force and _read_bytes(path) != text.encode("utf-8"):
                problems.append(
                    Problem(
                        location=str(path),
                        code="out_not_empty",
                        message=f"{path.name} already exists with different content",
                        fix=(
                            "choose a new directory (a changed judge is a new version), or pass"
                            " --force to replace it"
                        ),
                    )
                )
        for other in sorted(out.glob("*.yaml")) if out.is_dir() else []:
            if other.name != spec_path.name and _replays(other, target):
                problems.append(
                    Problem(
                        location=str(other),
                        code="out_other_candidate",
                        message=(
                            f"candidate {other.name} in --out replays {RESULTS_FILE} too; replacing"
                            " the file would change what it replays"
                        ),
                        fix="import into a new directory (one judge per directory)",
                    )
                )
        if problems:
            raise WorkbenchError("refusing to overwrite imported results", problems)
        try:
            out.mkdir(parents=True, exist_ok=True)
            atomic_write_text(target, results_text)
            atomic_write_text(spec_path, spec_text)
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
        _check_candidate(spec_path, self.fingerprint)
        return ResultsImport(
            source=self.source,
            out=str(target),
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

    judge = load_candidate(spec_path)
    source = judge.identity.params.get("source_fingerprint")
    if source != fingerprint:  # pragma: no cover - a defect, never user input
        raise WorkbenchError(
            "import defect",
            [
                Problem(
                    location=str(spec_path),
                    code="import_defect",
                    message=(
                        f"the candidate replays judge {source} but the results name {fingerprint}"
                    ),
                    fix="please report this defect",
                )
            ],
        )


# --- building -------------------------------------------------------------------------------


def _dataset(gold: str | Path | GoldDataset) -> GoldDataset:
    return gold if isinstance(gold, GoldDataset) else load_dataset(gold)


def _raw_mapping(
    mapping: str | Path | dict[str, Any] | ResultsMapping | None, base_dir: Path | None
) -> tuple[dict[str, Any], Path, str]:
    if mapping is None:
        return {}, base_dir or Path.cwd(), "mapping"
    if isinstance(mapping, ResultsMapping):
        return mapping.model_dump(mode="json", exclude_none=True), base_dir or Path.cwd(), "mapping"
    if isinstance(mapping, dict):
        return dict(mapping), base_dir or Path.cwd(), "mapping"
    raw, directory = load_mapping_file(mapping)
    return raw, base_dir or directory, str(mapping)


def results_from_table(
    source: str | Path,
    mapping: str | Path | dict[str, Any] | ResultsMapping | None,
    *,
    gold: str | Path | GoldDataset,
    options: dict[str, Any] | None = None,
    base_dir: str | Path | None = None,
) -> ImportedResults:
    """Read a CSV, JSONL or Parquet predictions file and turn it into results against ``gold``.

    ``mapping`` is a YAML file, a dict or a :class:`ResultsMapping`; ``options`` (command-line
    flags) are laid over it. Relative ``prompt_file`` paths resolve against the mapping file's
    directory (or ``base_dir``). Raises :class:`WorkbenchError` listing every problem.
    """
    from ._results_mapping import merge_options

    dataset = _dataset(gold)
    raw, directory, where = _raw_mapping(mapping, Path(base_dir) if base_dir else None)
    raw = merge_options(raw, options or {})
    source = Path(source)
    declared = (
        raw.get("format")
        if isinstance(raw.get("format"), str) and raw.get("format") in ("csv", "jsonl", "parquet")
        else None
    )
    table = read_table(source, table_format(source, declared))
    return _build(table, raw, dataset, location=where, base_dir=directory)


def results_from_dataframe(
    frame: Any,
    mapping: str | Path | dict[str, Any] | ResultsMapping,
    *,
    gold: str | Path | GoldDataset,
    base_dir: str | Path | None = None,
) -> ImportedResults:
    """Turn a pandas DataFrame of predictions into results against ``gold`` (notebook API).

    ``mapping`` as for :func:`results_from_table` (its ``format`` is ignored). Write the
    results and their ``imported`` candidate with ``.write(out)``.
    """
    dataset = _dataset(gold)
    raw, directory, where = _raw_mapping(mapping, Path(base_dir) if base_dir else None)
    return _build(table_from_frame(frame), raw, dataset, location=where, base_dir=directory)


def results_from_ragas(
    result: Any,
    mapping: str | Path | dict[str, Any] | ResultsMapping,
    *,
    gold: str | Path | GoldDataset,
    base_dir: str | Path | None = None,
) -> ImportedResults:
    """Results from a Ragas ``EvaluationResult`` (or anything with ``to_pandas()``, e.g. an
    ``Experiment``).

    Ragas output has no case id: unless the mapping names a key, rows are matched to gold
    cases on the exact ``user_input`` and ``response`` texts. A metric that failed on a
    sample (NaN) leaves that case missing.
    """
    frame = result.to_pandas() if hasattr(result, "to_pandas") else result
    raw, directory, where = _raw_mapping(mapping, Path(base_dir) if base_dir else None)
    if not raw.get("case_id") and not raw.get("input") and not raw.get("response"):
        columns = {str(c) for c in getattr(frame, "columns", [])}
        if {"user_input", "response"} <= columns:
            raw = {**raw, "input": "user_input", "response": "response"}
    return results_from_dataframe(frame, raw, gold=gold, base_dir=directory)


class _Issues:
    """Problems grouped by what they are, each listing the rows it was found in."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.problems = Problems()
        self.grouped: dict[tuple[str, str, str | None], list[int]] = defaultdict(list)
        self.texts: dict[tuple[str, str, str | None], tuple[str, str]] = {}

    def row(self, i: int, code: str, message: str, fix: str, case_id: str | None = None) -> None:
        self.problems.add(self.table.where(i), code, message, fix, case_id=case_id)

    def group(
        self, i: int, code: str, key: str, message: str, fix: str, case_id: str | None = None
    ) -> None:
        """One problem per (code, key), listing every row; ``{rows}`` and ``{n}`` in ``message``
        name them."""
        self.grouped[(code, key, case_id)].append(i)
        self.texts[(code, key, case_id)] = (message, fix)

    def raise_if_any(self, summary: str) -> None:
        out = list(self.problems)
        for (code, _key, case_id), rows in self.grouped.items():
            message, fix = self.texts[(code, _key, case_id)]
            text = message.replace("{rows}", self.table.describe(rows)).replace(
                "{n}", str(len(rows))
            )
            out.append(
                Problem(
                    location=self.table.where(rows[0]),
                    case_id=case_id,
                    code=code,
                    message=text,
                    fix=fix,
                )
            )
        if not out:
            return
        out.sort(key=lambda p: (p.code, p.location))
        if len(out) > MAX_PROBLEMS:
            rest = len(out) - MAX_PROBLEMS
            out = [
                *out[:MAX_PROBLEMS],
                Problem(
                    location=self.table.location,
                    code="more_problems",
                    message=f"{rest} more problem(s) not listed",
                    fix="fix the ones above and import again",
                ),
            ]
        raise WorkbenchError(f"{self.table.location}: {summary}: {len(out)} problem(s)", out)


def _key_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _number(value: Any, *, integer: bool) -> float | int | None:
    """A non-negative finite number (an int when ``integer``), or None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    else:
        try:
            number = float(str(value).strip())
        except ValueError:
            return None
    if not math.isfinite(number) or number < 0:
        return None
    if integer:
        return int(number) if number.is_integer() else None
    return number


def _score(value: Any) -> float | str:
    """A finite score, ``"empty"`` for NaN, or ``"invalid"``."""
    if isinstance(value, bool):
        return "invalid"
    try:
        number = float(value) if isinstance(value, int | float) else float(str(value).strip())
    except ValueError:
        return "invalid"
    if math.isnan(number):
        return "empty"
    return number if math.isfinite(number) else "invalid"


def _build(
    table: Table, raw: dict[str, Any], dataset: GoldDataset, *, location: str, base_dir: Path
) -> ImportedResults:
    from ..judges._spec import CandidateSpec, Threshold

    rubric = dataset.rubric
    mapping, prompt_sha = check_mapping(
        raw,
        location=location,
        base_dir=base_dir,
        columns=table.columns,
        rubric_labels=list(rubric.labels),
        rubric_pass=rubric.pass_label,
        rubric_fail=rubric.fail_label,
    )
    threshold: Threshold | None = None
    if mapping.threshold is not None:
        t = mapping.threshold
        threshold = Threshold(
            value=t.value,
            pass_if=t.pass_if,
            pass_label=t.pass_label or rubric.pass_label or "",
            fail_label=t.fail_label or rubric.fail_label or "",
        )
    judge = mapping.judge
    identity = JudgeIdentity(
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
    fingerprint = identity.fingerprint()
    run_id = (
        "import-"
        + sha256_json({"source": table.sha256, "judge": fingerprint, "dataset": dataset.sha256})[
            :16
        ]
    )

    issues = _Issues(table)
    active = dataset.cases
    by_text: dict[tuple[str, str], list[GoldCase]] = defaultdict(list)
    if mapping.case_id is None:
        for known in active.values():
            by_text[(known.input, known.response_hash)].append(known)
    labels = set(rubric.labels)
    found: dict[str, list[int]] = defaultdict(list)
    values: dict[int, dict[str, Any]] = {}
    empty: list[tuple[str, int]] = []
    fix_source = (
        "import the predictions against the gold they were produced on (same case ids, inputs and"
        " responses)"
    )
    for i, row in enumerate(table.rows):
        case = _find_case(i, row, mapping, dataset, by_text, issues, fix_source)
        if case is None:
            continue
        found[case.case_id].append(i)
        verdict = _verdict(i, row, mapping, threshold, labels, issues, case.case_id)
        if verdict is None:
            continue
        if isinstance(verdict, str):  # "empty"
            empty.append((case.case_id, i))
            continue
        values[i] = {"case": case, **verdict}
    for case_id, rows in found.items():
        if len(rows) > 1:
            for i in rows:
                values.pop(i, None)
                issues.group(
                    i,
                    "duplicate_key",
                    case_id,
                    f"{{n}} rows predict case {case_id!r} ({{rows}})",
                    "keep one prediction per case: a judge that ran twice is two imports (or two"
                    " versions)",
                    case_id=case_id,
                )
    issues.raise_if_any(f"refusing to import these predictions against {dataset.gold_path}")

    stamp: dict[str, Any] = {"dataset_sha256": dataset.sha256, "rubric_version": rubric.version}
    order = {case_id: n for n, case_id in enumerate(active)}
    results = []
    for i in sorted(values, key=lambda i: order[values[i]["case"].case_id]):
        v = values[i]
        chosen: GoldCase = v["case"]
        results.append(
            JudgeResult(
                case_id=chosen.case_id,
                response_hash=chosen.response_hash,
                value=v["value"],
                reason=v["reason"],
                score=v["score"],
                judge=identity,
                judge_fingerprint=fingerprint,
                run_id=run_id,
                partition=chosen.partition.value,
                latency_s=v["latency_s"],
                tokens_in=v["tokens_in"],
                tokens_out=v["tokens_out"],
                cost_usd=v["cost_usd"],
                attempt=1,
                repeat=0,
                **stamp,
            )
        )
    if not results:
        raise WorkbenchError(
            f"{table.location}: nothing to import",
            [
                Problem(
                    location=table.location,
                    code="no_predictions",
                    message=(
                        f"none of the {len(table.rows)} row(s) has a prediction in column"
                        f" {(mapping.label or mapping.score)!r}"
                    ),
                    fix=(
                        "check the prediction column named in the mapping; empty cells are missing"
                        " predictions"
                    ),
                )
            ],
        )
    judged = {r.case_id for r in results}
    missing = tuple(case_id for case_id in active if case_id not in judged)
    partitions: dict[str, tuple[int, int]] = {}
    for case in active.values():
        done, total = partitions.get(case.partition.value, (0, 0))
        partitions[case.partition.value] = (done + (case.case_id in judged), total + 1)
    partitions = {name: partitions[name] for name in PARTITIONS if name in partitions}
    rule = (
        f"labels from column {mapping.label!r}"
        if mapping.label
        else (
            f"score column {mapping.score!r} {threshold.pass_if if threshold else ''}"
            f" {threshold.value if threshold else ''} ->"
            f" {threshold.pass_label if threshold else ''}, else"
            f" {threshold.fail_label if threshold else ''}"
        )
    )
    provenance = (
        f"Predictions imported from {table.name} (sha256 {table.sha256[:12]}) with `workbench"
        f" import results`; {rule}; source judge fingerprint {fingerprint[:12]}."
    )
    spec = CandidateSpec(
        name=judge.name,
        version=judge.version,
        kind="imported",
        description=(judge.description.strip() + " " if judge.description.strip() else "")
        + provenance,
        labels=list(rubric.labels),
        model=judge.model,
        results=RESULTS_FILE,
        params=judge.params,
    )
    spec_data = spec.model_dump(mode="json", exclude_defaults=True)
    spec_data = {"schema_version": spec.schema_version, **spec_data}
    release = dataset.release
    return ImportedResults(
        results=tuple(results),
        identity=identity,
        fingerprint=fingerprint,
        spec_data=spec_data,
        source=table.name,
        source_sha256=table.sha256,
        dataset_sha256=dataset.sha256,
        rubric_version=rubric.version,
        release_id=release.release_id if release else None,
        cases=len(active),
        empty_rows=tuple((case_id, str(table.refs[i])) for case_id, i in empty),
        missing_case_ids=missing,
        partitions=partitions,
    )


def _find_case(
    i: int,
    row: dict[str, Any],
    m: ResultsMapping,
    dataset: GoldDataset,
    by_text: dict[tuple[str, str], list[GoldCase]],
    issues: _Issues,
    fix: str,
) -> GoldCase | None:
    inp = row.get(m.input) if m.input else None
    response = row.get(m.response) if m.response else None
    if m.case_id is not None:
        raw_key = row.get(m.case_id)
        if is_empty(raw_key):
            issues.group(
                i,
                "empty_key",
                "",
                f"{{n}} row(s) have no case id in column {m.case_id!r} ({{rows}})",
                "give every row its gold case id, or drop the row",
            )
            return None
        key = _key_text(raw_key)
        case = dataset.cases.get(key)
        if case is None:
            if key in dataset.superseded_by:
                issues.group(
                    i,
                    "superseded_case",
                    key,
                    f"case {key!r} was superseded by {dataset.latest_id(key)!r} ({{rows}})",
                    "predictions must be for the latest records; re-run the judge on the current"
                    " gold",
                    case_id=key,
                )
            else:
                issues.group(
                    i,
                    "unknown_case",
                    key,
                    f"the gold has no case {key!r} ({{rows}})",
                    fix,
                    case_id=key,
                )
            return None
        if m.input and not is_empty(inp) and str(inp) != case.input:
            issues.row(
                i,
                "input_mismatch",
                f"the row's input (column {m.input!r}) differs from the gold case's input",
                "the predictions were not produced on this gold (or the text changed on export);"
                " re-run the judge on it",
                case_id=key,
            )
            return None
        if (
            m.response
            and not is_empty(response)
            and sha256_text(str(response)) != case.response_hash
        ):
            issues.row(
                i,
                "response_hash_mismatch",
                "the judge saw a different response than the reviewers (sha256 of column"
                f" {m.response!r} differs from the gold response_hash)",
                "the predictions were not produced on this gold; re-run the judge on it",
                case_id=key,
            )
            return None
        return case
    if is_empty(inp) or is_empty(response):
        issues.group(
            i,
            "empty_key",
            "",
            "{n} row(s) have no input or no response to match a gold case on ({rows})",
            "give every row its input and response (or map a case_id column)",
        )
        return None
    matches = by_text.get((str(inp), sha256_text(str(response))), [])
    if not matches:
        issues.group(
            i,
            "unmatched_row",
            "",
            "{n} row(s) match no active gold case on the exact input and response ({rows})",
            fix + "; texts must match exactly, or map a case_id column",
        )
        return None
    if len(matches) > 1:
        ids = ", ".join(c.case_id for c in matches)
        issues.row(
            i,
            "ambiguous_match",
            f"the row's input and response match {len(matches)} gold cases ({ids})",
            "map a case_id column: the texts do not tell these cases apart",
        )
        return None
    return matches[0]


def _verdict(
    i: int,
    row: dict[str, Any],
    m: ResultsMapping,
    threshold: Any,
    labels: set[str],
    issues: _Issues,
    case_id: str,
) -> dict[str, Any] | str | None:
    """The verdict fields of row ``i``, ``"empty"`` when it has no prediction, None after a
    problem."""
    reason: str | None = None
    label_cell = row.get(m.label) if m.label else None
    score_cell = row.get(m.score) if m.score else None
    unpacked = metric_result(label_cell)
    if unpacked is not None:
        label_cell, reason = unpacked
    unpacked = metric_result(score_cell)
    if unpacked is not None:
        score_cell, reason = unpacked[0], reason or unpacked[1]
    ok = True
    score: float | None = None
    if m.score is not None and not is_empty(score_cell):
        parsed = _score(score_cell)
        if parsed == "invalid":
            issues.group(
                i,
                "invalid_score",
                m.score,
                f"column {m.score!r}: {{n}} value(s) are not finite numbers ({{rows}})",
                "give scores as numbers; leave the cell empty when the judge produced none",
            )
            ok = False
        elif parsed != "empty":
            score = float(parsed)
    value: str | None = None
    if m.label is not None:
        if not is_empty(label_cell):
            text = as_text(label_cell)
            target = m.labels.get(text) if m.labels else (text if text in labels else None)
            if target is None:
                known = (
                    "listed in labels"
                    if m.labels
                    else "a rubric label (" + ", ".join(sorted(labels)) + ")"
                )
                issues.group(
                    i,
                    "unmapped_label",
                    text,
                    f"column {m.label!r}: value {text!r} is not {known} ({{rows}})",
                    "map every source value to a rubric label: labels: {"
                    + f"{text}: <label>"
                    + "}",
                )
                ok = False
            else:
                value = target
    elif score is not None and threshold is not None:
        value = threshold.label(score)
    if m.reason is not None and not is_empty(row.get(m.reason)):
        reason = str(row.get(m.reason))
    numbers: dict[str, Any] = {}
    for name, integer in (
        ("latency_s", False),
        ("tokens_in", True),
        ("tokens_out", True),
        ("cost_usd", False),
    ):
        column = getattr(m, name)
        cell = row.get(column) if column else None
        if column is None or is_empty(cell):
            numbers[name] = None
            continue
        number = _number(cell, integer=integer)
        if number is None:
            what = "non-negative whole numbers" if integer else "non-negative numbers"
            issues.group(
                i,
                "invalid_number",
                column,
                f"column {column!r} ({name}): {{n}} value(s) are not {what} ({{rows}})",
                f"give {name} as {what}, or leave the cell empty",
            )
            ok = False
        numbers[name] = number
    if not ok:
        return None
    if value is None:
        return "empty"
    return {"value": value, "reason": reason, "score": score, **numbers}
