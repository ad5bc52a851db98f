"""Reading judge results: every contract violation reported at once, with its line. Older records
are refused (``schema_version_old``) unless ``migrate=True`` migrates them on read."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from .._io import (
    WRONG_TYPE_ERRORS,
    WRONG_TYPE_FIX,
    JSONRecordError,
    check_json,
    iter_jsonl_lines,
    json_problem,
    loads_json,
)
from .._record import SchemaTooNew
from ..errors import Problem, WorkbenchError, problem, refusal
from ._columnar import resolved
from ._contract import (
    ERROR_KINDS,
    RESULT_SCHEMA_VERSION,
    JudgeIdentity,
    JudgeResult,
    has_reason,
    missing_identity_fields,
    states_reasons,
)
from ._migrate import (
    MigrationRefused,
    PartitionOf,
    _case_id,
    gold_partitions,
    migrate_record,
    old_version_problem,
    record_version,
)

if TYPE_CHECKING:
    from ..gold import GoldDataset, GoldIndex


@dataclass(frozen=True)
class ResultLine:
    """A result together with where it came from."""

    line: int
    result: JudgeResult
    source: str | None = None
    """The shard the line came from, when the results are a directory of shards."""


def read_results(
    path: str | Path,
    *,
    verify_requests: bool = False,
    migrate: bool = False,
    gold: GoldDataset | GoldIndex | None = None,
) -> list[ResultLine]:
    """Read a results JSON Lines file; raise :class:`WorkbenchError` listing every bad line. With
    ``verify_requests`` every inline request is re-hashed; ``migrate`` and ``gold`` (a dataset or
    its index): module doc."""
    out: list[ResultLine] = []
    problems: list[Problem] = []
    for item in scan_results(path, verify_requests=verify_requests, migrate=migrate, gold=gold):
        (out if isinstance(item, ResultLine) else problems).append(item)  # type: ignore[arg-type]
    if problems:
        raise WorkbenchError(
            f"{path}: {len(problems)} result line(s) break the judge-result contract", problems
        )
    return out


def scan_results(
    path: str | Path,
    *,
    verify_requests: bool = False,
    migrate: bool = False,
    gold: GoldDataset | GoldIndex | None = None,
) -> Iterator[ResultLine | Problem]:
    """Yield each line of a results file as a :class:`ResultLine` or, if bad, a :class:`Problem`:
    the streaming form of :func:`read_results`."""
    path = resolved(path)
    if path.is_dir():
        yield from _scan_shards(path, verify_requests=verify_requests, migrate=migrate, gold=gold)
        return
    if not path.exists():
        message = "the results file does not exist"
        fix = "point --results at a results.jsonl written by `workbench run` or an importer"
        yield problem(str(path), "results_missing", message, fix)
        return
    reader = _LineReader(path, verify_requests=verify_requests, migrate=migrate, gold=gold)
    not_utf8: list[int] = []
    lines = _parquet_lines(path) if path.suffix == ".parquet" else iter_jsonl_lines(path, not_utf8)
    for number, text in lines:
        while not_utf8:
            yield _not_utf8(reader.loc, not_utf8.pop(0))
        where = f"{reader.loc}:{number}"
        parsed = _parse(text, where, older_expected=migrate)
        if not isinstance(parsed, JudgeResult):  # problems, or an older record
            parsed = reader.older(number, parsed, where) if isinstance(parsed, dict) else parsed
            if not isinstance(parsed, JudgeResult):
                yield from parsed
                continue
        found = reader.contract_problem(parsed, where)
        yield ResultLine(number, parsed) if found is None else found
    for number in not_utf8:
        yield _not_utf8(reader.loc, number)
    for version, numbers in sorted(reader.old.items()):
        yield old_version_problem(path, numbers, version)


def _not_utf8(loc: str, number: int) -> Problem:
    message = "the line is not valid UTF-8"
    fix = "results files are UTF-8 JSON Lines; a binary or re-encoded file cannot be read"
    return problem(f"{loc}:{number}", "not_utf8", message, fix)


class _LineReader:
    """What reading one results file keeps from line to line: older records migrated (or set
    aside for one ``schema_version_old`` problem), judge identities already checked."""

    def __init__(
        self,
        path: Path,
        *,
        verify_requests: bool,
        migrate: bool,
        gold: GoldDataset | GoldIndex | None,
    ) -> None:
        self.loc = str(path)
        self.verify_requests = verify_requests
        self.migrate = migrate
        self.verified: dict[str, JudgeIdentity] = {}
        """Judge identities whose fingerprint was checked, by fingerprint."""
        self.old: dict[int, list[int]] = {}
        """Lines of older records set aside (not ``migrate``), by schema version."""
        self.partition_of: PartitionOf | None = None
        self.source: str | None = None
        if migrate and gold is not None:
            self.partition_of, self.source = gold_partitions(gold)

    def older(self, number: int, raw: dict[str, Any], where: str) -> JudgeResult | list[Problem]:
        """An older record: migrated with ``migrate``, else set aside."""
        read = record_version(raw)
        version = 1 if read is None else read
        if version < 1:  # no result format has this version: nothing to migrate from
            message = f"schema_version {version} is not a version of the result format"
            fix = "correct schema_version (1 or 2; docs/formats.md#judge-results)"
            return [problem(where, "invalid_result", message, fix, _case_id(raw))]
        if not self.migrate:
            self.old.setdefault(version, []).append(number)
            return []
        try:
            migrated = migrate_record(
                raw, partition_of=self.partition_of, partition_source=self.source
            )
            return JudgeResult.model_validate(migrated)
        except MigrationRefused as exc:
            message = (
                f"cannot migrate this schema_version {version} record on read: cannot fill"
                f" {exc.field!r} ({exc})"
            )
            code = "migration_needs_gold"
            return [problem(where, code, message, exc.fix, _case_id(raw))]
        except ValidationError as exc:
            return _translate(exc, where, raw)

    def contract_problem(self, result: JudgeResult, where: str) -> Problem | None:
        """The fingerprint is the judge identity's (checked once per identity), the inline
        request matches its hash (``verify_requests``), the error kind is known."""
        known = self.verified.get(result.judge_fingerprint)
        if known is None or known != result.judge:
            try:
                actual = result.judge.fingerprint()
            except ValueError:  # a value canonical JSON cannot hold
                actual = None
            if actual != result.judge_fingerprint:
                message = "judge_fingerprint is not the sha256 of the judge identity"
                fix = "recompute judge_fingerprint from 'judge'; results must not be edited by hand"
                return problem(where, "fingerprint_mismatch", message, fix, result.case_id)
            self.verified[result.judge_fingerprint] = result.judge
        return self._identity_problem(result, where) or self._other_problem(result, where)

    def _identity_problem(self, result: JudgeResult, where: str) -> Problem | None:
        """The judge kind's fingerprint fields are filled; a model's verdict states its reason."""
        missing = missing_identity_fields(result.judge)
        if missing:
            return problem(
                where,
                "fingerprint_incomplete",
                f"the {result.judge.kind} judge identity leaves {', '.join(missing)} empty: the"
                " fingerprint does not say what judged, so these results cannot be trusted",
                "re-run the judge with `workbench run` (it records the model, prompt hash and"
                " Ragas version); results must not be edited by hand",
                result.case_id,
            )
        if (
            result.error is None
            and result.value is not None
            and states_reasons(result.judge)
            and not has_reason(result.reason)
        ):
            return problem(
                where,
                "verdict_reason_missing",
                f"the verdict {result.value!r} of a model-backed judge states no reason (empty"
                " or null): `workbench run` records such an answer as a missing_reason evaluator"
                " error, never as a verdict",
                "re-run the judge with `workbench run`; for imported predictions, map the column"
                " that holds the judge's reason (--reason)",
                result.case_id,
            )
        return None

    def _other_problem(self, result: JudgeResult, where: str) -> Problem | None:
        if self.verify_requests and result.request_hash_matches() is False:
            message = "rendered_request_sha256 does not match the inline rendered request"
            fix = "results must not be edited by hand; re-run the judge"
            return problem(where, "request_hash_mismatch", message, fix, result.case_id)
        if result.error is not None and result.error.kind not in ERROR_KINDS:
            message = f"unknown error kind {result.error.kind!r}"
            fix = "use one of " + ", ".join(ERROR_KINDS)
            return problem(where, "unknown_error_kind", message, fix, result.case_id)
        return None


def _parse(
    text: str, where: str, *, older_expected: bool = False
) -> JudgeResult | dict[str, Any] | list[Problem]:
    """A current record, an older record's JSON object, or the line's problems. With
    ``older_expected`` (a migrating read) the line is parsed once into its object and an older
    record goes on unvalidated: it is validated once, after its migration."""
    raw: Any = None
    try:  # duplicate keys, NaN/Infinity, too deep: refused before validation
        if older_expected:
            raw = loads_json(text)
        else:
            check_json(text)
    except JSONRecordError as exc:
        return [json_problem(exc, where)]
    if isinstance(raw, dict):
        version = record_version(raw)  # absent: version 1
        if version is not None and version < RESULT_SCHEMA_VERSION:
            return raw  # what validation would hand on below, without validating it twice
    try:
        result = JudgeResult.model_validate_json(text)
    except SchemaTooNew as exc:
        return [exc.problem_at(where, case_id=_case_id(loads_json(text)))]
    except ValidationError as exc:
        raw = loads_json(text)  # cannot fail: check_json accepted the text
        version = record_version(raw) if isinstance(raw, dict) else None
        if version is None or version == RESULT_SCHEMA_VERSION:
            return _translate(exc, where, raw)
        return dict(raw)
    # No schema_version at all is version 1's default: a version-1 record.
    return result if "schema_version" in result.model_fields_set else dict(loads_json(text))


def _scan_shards(directory: Path, **options: Any) -> Iterator[ResultLine | Problem]:
    """Every shard of a results directory (``*.jsonl``, ``*.parquet``, by name), line by line."""
    from ._columnar import result_files

    shards = result_files(directory)
    if not shards:
        message = "the results directory holds no shards (*.jsonl or *.parquet files)"
        fix = "point --results at a results file, or at a directory of result shards"
        yield problem(str(directory), "results_missing", message, fix)
        return
    for shard in shards:
        for item in scan_results(shard, **options):
            yield (
                ResultLine(item.line, item.result, str(shard))
                if isinstance(item, ResultLine)
                else item
            )


def _parquet_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Each row of a Parquet shard as the JSON text of its object (row numbers from 1)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        message = f"the Parquet shard cannot be read ({str(exc)[:120]})"
        fix = "write shards with pyarrow or pandas (to_parquet), or as JSON Lines"
        raise refusal(f"{path}: unreadable", str(path), "unreadable_file", message, fix) from None
    for number, row in enumerate(table.to_pylist(), start=1):
        # a row NaN cannot be written is refused below as non_finite_number, with its row
        yield number, row_text(row) or '{"schema_version": NaN}'


def row_text(row: dict[str, Any]) -> str | None:
    """A Parquet row as the JSON text of its object (times in ISO 8601); None when not finite."""
    try:
        return json.dumps(row, ensure_ascii=False, allow_nan=False, default=_json_default)
    except ValueError:
        return None


def _json_default(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def migration_note(lines: list[ResultLine]) -> str | None:
    """One sentence on the records of ``lines`` migrated on read, or None when none was."""
    tally = MigrationTally()
    for line in lines:
        tally.add(line.result)
    return tally.note()


class MigrationTally:
    """What :func:`migration_note` says of results read one at a time (nothing kept per line)."""

    def __init__(self) -> None:
        self.results = 0
        self.migrated = 0
        self.filled: Counter[str] = Counter()
        self.versions: set[int] = set()

    def add(self, result: JudgeResult) -> None:
        """Count one result read."""
        self.results += 1
        migration = result.migration
        if migration is not None:
            self.migrated += 1
            self.filled.update(migration.filled.keys())  # the names filled, not their values
            self.versions.add(migration.from_version)

    def note(self) -> str | None:
        """The sentence, or None when no result was migrated."""
        if not self.migrated:
            return None
        what = ", ".join(f"{name} in {n}" for name, n in sorted(self.filled.items())) or "nothing"
        return (
            f"{self.migrated} of {self.results} result(s) were written under schema_version"
            f" {', '.join(map(str, sorted(self.versions)))} and migrated on read to"
            f" {RESULT_SCHEMA_VERSION}; filled: {what}"
        )


def _translate(exc: ValidationError, where: str, raw: Any) -> list[Problem]:
    case_id = _case_id(raw)
    out = []
    for err in exc.errors(include_url=False):
        path = ".".join(str(p) for p in err["loc"]) or "record"
        code = "invalid_result"
        if err["type"] == "missing":
            message = f"missing required field '{path}'"
            fix = "see docs/formats.md#judge-results for the required fields"
        elif err["type"] == "extra_forbidden":
            message, fix = f"unknown field '{path}'", "remove it or correct its spelling"
        elif err["type"] in WRONG_TYPE_ERRORS:
            code = "wrong_type"
            message = (
                f"field '{path}' must be {WRONG_TYPE_ERRORS[err['type']]} (got"
                f" {json.dumps(err.get('input'))[:60]})"
            )
            fix = WRONG_TYPE_FIX
        else:
            message, fix = f"{path}: {err['msg']}", "see docs/formats.md#judge-results"
        out.append(problem(where, code, message, fix, case_id))
    return out
