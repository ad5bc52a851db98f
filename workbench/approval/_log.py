"""The release log: one append-only, hash-chained ``releases.jsonl`` per folder of approved inputs.
A line's ``sha256`` covers its JSON as written without that field (not :mod:`workbench._chain`'s
``entry_sha256`` over the model); schema 1 lines are gold releases, read as ``kind: gold``."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout
from pydantic import AwareDatetime, Field, ValidationError, model_validator

from .._io import (
    AppendOnlyLog,
    JSONRecordError,
    iter_jsonl_lines,
    json_problem,
    loads_json,
    max_document_bytes,
    sha256_json,
)
from .._record import Record, SchemaTooNew
from ..errors import Problem, WorkbenchError, problem, refusal
from ._snapshot import Snapshot, item_sha256

RELEASES_FILE = "releases.jsonl"
"""The release log's name, in the folder of the inputs it freezes."""
RELEASE_SCHEMA_VERSION = 2
"""2: every kind of approved input (``kind``, ``name``, ``version``); 1: gold releases only."""
FIX_CHAIN = (
    "the release log is append-only: restore it from version control; never edit or delete a"
    " release"
)


class Release(Record):
    """One line of ``releases.jsonl``: a frozen state of one approved input."""

    schema_version: int = RELEASE_SCHEMA_VERSION
    """Release record format version."""
    kind: str
    """The kind of input (:attr:`~workbench.approval.Snapshot.kind`)."""
    name: str
    """Its name."""
    version: str | None = None
    """Its version (None: an input that grows in place, e.g. a gold dataset)."""
    release_id: str
    """``rel-<sequence>-<content sha256 prefix>``; runs, reports and certifications name it."""
    sequence: int = Field(ge=1)
    """The line number of the release in its log (1, 2, 3 ...)."""
    dataset_sha256: str
    """The content hash frozen (for a gold dataset: its dataset sha256)."""
    file_sha256: str | None = None
    """sha256 of the file's bytes when it was frozen (for a gold dataset: ``gold.jsonl``)."""
    header_sha256: str = ""
    """sha256 of the input's non-item content (name, description, limits ...)."""
    items: dict[str, str]
    """One hash per item (every item, superseded and retired ones included)."""
    fields: dict[str, dict[str, str]]
    """Per item: its field-group hashes, so an edit can be named."""
    supersedes: str | None = None
    """The version this version replaced, as it declared."""
    approver: str = Field(min_length=1)
    """Who approved the release (a name in the project's approver list)."""
    when: AwareDatetime
    """UTC time of the freeze."""
    note: str | None = None
    """Why this state was frozen."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Kind-specific content frozen with the release."""
    previous_sha256: str | None
    """``sha256`` of the previous line (None for the first): the chain."""
    sha256: str
    """sha256 over the canonical JSON of this line as written, without this field."""

    @model_validator(mode="before")
    @classmethod
    def _from_gold_v1(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("schema_version") != 1 or "kind" in data:
            return data
        old = dict(data)
        return {
            "schema_version": 1,
            "kind": "gold",
            "name": "gold",
            "release_id": old.pop("release_id", None),
            "sequence": old.pop("sequence", None),
            "dataset_sha256": old.pop("dataset_sha256", None),
            "file_sha256": old.pop("gold_sha256", None),
            "items": old.pop("cases", None),
            "fields": old.pop("fields", None),
            "approver": old.pop("who", None),
            "when": old.pop("when", None),
            "note": old.pop("note", None),
            "extra": {"rubric_version": old.pop("rubric_version", None)},
            "previous_sha256": old.pop("previous_sha256", None),
            "sha256": old.pop("sha256", None),
            **{k: v for k, v in old.items() if k != "schema_version"},
        }

    @property
    def label(self) -> str:
        """``name@version`` (or the name)."""
        return f"{self.name}@{self.version}" if self.version is not None else self.name

    @property
    def rubric_version(self) -> str | None:
        """A gold release's rubric version."""
        value = self.extra.get("rubric_version")
        return value if isinstance(value, str) else None

    def is_of(self, snapshot: Snapshot) -> bool:
        """Whether this release froze a state of ``snapshot``'s input (same kind and name)."""
        return self.kind == snapshot.kind and self.name == snapshot.name


@dataclass(frozen=True)
class ReleaseLog:
    """The releases read from one log, with every problem found in it."""

    path: Path
    releases: tuple[Release, ...]
    problems: tuple[Problem, ...]
    lines: tuple[int, ...] = ()
    """The line number of each release."""

    def of(self, snapshot: Snapshot) -> list[tuple[int, Release]]:
        """``(line, release)`` of every release of ``snapshot``'s input, oldest first."""
        return [(n, r) for n, r in zip(self.lines, self.releases, strict=True) if r.is_of(snapshot)]

    def release_of(self, snapshot: Snapshot) -> Release | None:
        """The latest release that froze exactly ``snapshot`` (same version and hash), or None."""
        return next(
            (
                r
                for _, r in reversed(self.of(snapshot))
                if r.version == snapshot.version and r.dataset_sha256 == snapshot.sha256
            ),
            None,
        )

    def latest_for(self, dataset_sha256: str, kind: str = "gold") -> Release | None:
        """The latest release of ``kind`` that froze exactly this content hash."""
        return next(
            (
                r
                for r in reversed(self.releases)
                if r.kind == kind and r.dataset_sha256 == dataset_sha256
            ),
            None,
        )


def log_path(folder: str | Path) -> Path:
    """The release log of a folder (a gold directory, ``data/ranking`` ...)."""
    return Path(folder) / RELEASES_FILE


def read_release_log(folder: str | Path) -> ReleaseLog:
    """Read ``<folder>/releases.jsonl`` (absent: no releases) and check its chain."""
    path = log_path(folder)
    if not path.exists():
        return ReleaseLog(path, (), ())
    if not path.is_file():
        return ReleaseLog(path, (), (_malformed(str(path), "the release log is not a file"),))
    not_utf8: list[int] = []
    try:
        # A gold release holds one hash set per record, so its line grows with the dataset: the
        # document limit (256 MiB by default), not the record limit, bounds it.
        rows = list(iter_jsonl_lines(path, not_utf8, limit=max_document_bytes()))
    except OSError as exc:
        message = f"the release log cannot be read ({exc.strerror or exc})"
        return ReleaseLog(path, (), (_malformed(str(path), message),))
    except WorkbenchError as exc:  # unreadable, or a line longer than the limit
        return ReleaseLog(path, (), tuple(exc.problems))
    problems = [_malformed(f"{path}:{n}", "the release line is not valid UTF-8") for n in not_utf8]
    releases: list[Release] = []
    lines: list[int] = []
    for number, release, found in _parse(path, rows):
        problems += found
        if release is not None:
            releases.append(release)
            lines.append(number)
    return ReleaseLog(path, tuple(releases), tuple(problems), tuple(lines))


def _parse(
    path: Path, rows: list[tuple[int, str]]
) -> Iterator[tuple[int, Release | None, list[Problem]]]:
    previous: str | None = None
    count = 0
    for number, text in rows:
        where = f"{path}:{number}"
        try:
            raw = loads_json(text)  # duplicate keys, NaN/Infinity, too deep: refused
        except JSONRecordError as exc:
            problem = json_problem(exc, where, fix=FIX_CHAIN)
            if exc.code == "malformed_json":
                problem = problem.model_copy(update={"code": "release_malformed"})
            yield number, None, [problem]
            previous = "(unreadable)"
            continue
        try:
            if not isinstance(raw, dict):
                raise ValueError("not a JSON object")
            release = Release.model_validate(raw)
        except SchemaTooNew as exc:
            yield number, None, [exc.problem_at(where)]
            previous = raw.get("sha256") if isinstance(raw, dict) else None
            continue
        except (ValueError, ValidationError) as exc:
            yield number, None, [_malformed(where, f"not a release record ({_first(exc)})")]
            previous = "(unreadable)"
            continue
        count += 1
        found = _chain_problems(raw, release, previous, count, where)
        previous = release.sha256
        yield number, release, found


def _chain_problems(
    raw: dict[str, Any], release: Release, previous: str | None, count: int, where: str
) -> list[Problem]:
    if sha256_json({k: v for k, v in raw.items() if k != "sha256"}) != release.sha256:
        what = "does not hash to its recorded sha256: it was edited"
    elif release.previous_sha256 != previous or release.sequence != count:
        what = (
            f"does not follow the release before it (sequence {release.sequence}, expected"
            f" {count}; previous sha256 {str(release.previous_sha256)[:12]}, expected"
            f" {str(previous)[:12]}): a release was deleted, reordered or edited"
        )
    else:
        return []
    return [
        problem(where, "release_chain_broken", f"release {release.release_id} {what}", FIX_CHAIN)
    ]


def _first(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        error = exc.errors(include_url=False)[0]
        return f"{'.'.join(str(p) for p in error['loc']) or 'line'}: {error['msg']}"
    return str(exc).splitlines()[0][:160]


def _malformed(location: str, message: str) -> Problem:
    return problem(location, "release_malformed", message, FIX_CHAIN)


def append_release(
    snapshot: Snapshot, *, approver: str, note: str | None, now: datetime | None = None
) -> tuple[Release, bool]:
    """Append a release of ``snapshot`` (lineage already checked); return it and whether it is
    new. Content the latest release already froze writes nothing."""
    path = log_path(snapshot.folder)
    with _lock(path):
        log = read_release_log(snapshot.folder)
        if log.problems:
            raise WorkbenchError(f"{path}: the release log is damaged", list(log.problems))
        mine = [r for _, r in log.of(snapshot) if r.version == snapshot.version]
        if mine and mine[-1].dataset_sha256 == snapshot.sha256:
            return mine[-1], False
        last = log.releases[-1] if log.releases else None
        sequence = len(log.releases) + 1
        body: dict[str, Any] = {
            "schema_version": RELEASE_SCHEMA_VERSION,
            "kind": snapshot.kind,
            "name": snapshot.name,
            "version": snapshot.version,
            "release_id": f"rel-{sequence}-{snapshot.sha256[:12]}",
            "sequence": sequence,
            "dataset_sha256": snapshot.sha256,
            "file_sha256": snapshot.file_sha256,
            "header_sha256": snapshot.header,
            "items": {k: item_sha256(v) for k, v in snapshot.items.items()},
            "fields": {k: dict(v) for k, v in snapshot.items.items()},
            "supersedes": snapshot.supersedes,
            "approver": approver.strip(),
            "when": (now or datetime.now(UTC)).isoformat(),
            "note": note,
            "extra": dict(snapshot.extra),
            "previous_sha256": last.sha256 if last else None,
        }
        body = Release.model_validate({**body, "sha256": ""}).model_dump(
            mode="json", exclude={"sha256"}
        )
        release = Release.model_validate({**body, "sha256": sha256_json(body)})
        with AppendOnlyLog(path) as out:
            out.append(release.model_dump(mode="json"))
        return release, True


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    """The log's append lock, in the temporary directory, keyed by the log's resolved path."""
    key = sha256_json(str(path.resolve()))[:24]
    lock = FileLock(str(Path(tempfile.gettempdir()) / f"workbench-freeze-{key}.lock"))
    try:
        lock.acquire(timeout=30)
    except Timeout:
        message, fix = (
            "another freeze holds this release log's lock",
            "wait for it to finish and freeze again",
        )
        raise refusal("cannot freeze", str(path), "freeze_locked", message, fix) from None
    try:
        yield
    finally:
        lock.release()
