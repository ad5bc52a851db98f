"""Gold lineage and frozen releases.

Two things live here:

- **Per-case field hashes** (:func:`case_hashes`): one sha256 per group of fields of a gold
  record (the adjudicated label, the response, the grading notes, the other grading fields,
  the reviews, the slice and partition, the rubric version and everything else). Together
  they cover every field of the record, so comparing two sets of hashes says exactly *what*
  changed in a case without keeping its text. Run manifests and releases record them.
- **Releases** (:func:`freeze`): an append-only log, ``releases.jsonl`` beside
  ``gold.jsonl``, one line per frozen state of the dataset: release id, dataset sha256, one
  hash per record and its field hashes, who froze it and when. Each line carries the sha256
  of the previous line, so an edited or deleted release breaks the chain. Validation
  (:func:`check_releases`) refuses an in-place edit or the deletion of any record a release
  froze: corrections are new records that ``supersede`` the old ones.
"""

from __future__ import annotations

import getpass
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._docs import add_field_docs
from .._io import (
    AppendOnlyLog,
    JSONRecordError,
    check_json,
    iter_jsonl_lines,
    json_problem,
    max_document_bytes,
    sha256_file,
    sha256_json,
)
from .._load import error_field
from .._record import Record, SchemaTooNew
from ..errors import Problem, WorkbenchError
from ._records import GoldCase

if TYPE_CHECKING:
    from ._dataset import GoldDataset

RELEASES_FILE = "releases.jsonl"
"""The release log, beside ``gold.jsonl``."""
RELEASE_SCHEMA_VERSION = 1

FIELD_GROUPS: dict[str, tuple[str, ...]] = {
    "label": ("adjudication.label",),
    "response": ("response", "response_hash"),
    "notes": ("grading_notes",),
    "grading": ("input", "reference", "contexts", "evidence"),
    "reviews": ("reviews", "adjudication.reason", "adjudication.adjudicator"),
    "placement": ("partition", "group", "slice", "tags"),
    "rubric": ("rubric_version",),
    "other": ("schema_version", "case_id", "supersedes", "metadata"),
}
"""Which gold-record fields each per-case hash covers. Every field is in exactly one group."""

FIELD_LABELS: dict[str, str] = {
    "label": "label",
    "response": "response",
    "notes": "notes",
    "grading": "grading fields (input, reference, contexts, evidence)",
    "reviews": "reviews",
    "placement": "slice/partition/group/tags",
    "rubric": "rubric version",
    "other": "other fields (metadata, supersedes)",
}
"""How each group is named in messages."""


def case_hashes(case: GoldCase) -> dict[str, str]:
    """One sha256 (over canonical JSON) per field group of :data:`FIELD_GROUPS`."""
    data = case.model_dump(mode="json")
    adjudication = data.get("adjudication") or {}
    values: dict[str, Any] = {
        "label": adjudication.get("label"),
        "response": [data["response"], data["response_hash"]],
        "notes": data.get("grading_notes"),
        "grading": [
            data["input"],
            data.get("reference"),
            data.get("contexts"),
            data.get("evidence"),
        ],
        "reviews": [data["reviews"], adjudication.get("reason"), adjudication.get("adjudicator")],
        "placement": [data["partition"], data["group"], data["slice"], data.get("tags")],
        "rubric": data["rubric_version"],
        "other": [
            data["schema_version"],
            data["case_id"],
            data.get("supersedes"),
            data.get("metadata"),
        ],
    }
    return {name: sha256_json(value) for name, value in values.items()}


def record_sha256(hashes: Mapping[str, str]) -> str:
    """The hash of a whole record: sha256 over its field hashes."""
    return sha256_json(dict(hashes))


def changed_groups(
    before: Mapping[str, str], after: Mapping[str, str], *, ignore: Iterable[str] = ()
) -> list[str]:
    """Field groups whose hash differs, in :data:`FIELD_GROUPS` order."""
    skip = set(ignore)
    return [
        name for name in FIELD_GROUPS if name not in skip and before.get(name) != after.get(name)
    ]


def describe(groups: Iterable[str]) -> str:
    """``label, notes`` style text for a list of field groups."""
    return ", ".join(FIELD_LABELS.get(g, g) for g in groups)


class GoldLineage(BaseModel):
    """What a run was produced against: the dataset, its rubric version, its release, and
    the field hashes of every case judged."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=add_field_docs)

    dataset_sha256: str
    """Hash of the gold dataset (gold file, rubric, evidence snapshot)."""
    rubric_version: str
    """The rubric version of the gold."""
    release_id: str | None = None
    """The frozen release whose dataset hash equals ``dataset_sha256`` (the latest), or None."""
    cases: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Per judged case id: :func:`case_hashes`."""


def gold_lineage(dataset: GoldDataset, cases: Iterable[GoldCase] | None = None) -> GoldLineage:
    """The lineage of ``cases`` (default: every active case) of ``dataset``, for a run manifest."""
    chosen = dataset.cases.values() if cases is None else cases
    release = dataset.release
    return GoldLineage(
        dataset_sha256=dataset.sha256,
        rubric_version=dataset.rubric.version,
        release_id=release.release_id if release else None,
        cases={case.case_id: case_hashes(case) for case in chosen},
    )


class GoldRelease(Record):
    """One line of ``releases.jsonl``: a frozen state of a gold dataset."""

    schema_version: int = RELEASE_SCHEMA_VERSION
    """Release record format version."""
    release_id: str
    """``rel-<sequence>-<dataset sha256 prefix>``; runs and certifications name it."""
    sequence: int = Field(ge=1)
    """1 for the first release, then 2, 3 ...: the line number of the release in the log."""
    dataset_sha256: str
    """The dataset hash frozen (gold file, rubric, evidence snapshot)."""
    rubric_version: str
    """The rubric version frozen."""
    gold_sha256: str
    """sha256 of the bytes of ``gold.jsonl``."""
    cases: dict[str, str]
    """One hash per record (every record in the file, superseded ones included): the sha256
    over the record's field hashes."""
    fields: dict[str, dict[str, str]]
    """Per record: the field hashes (:data:`FIELD_GROUPS`), so an edit can be named."""
    who: str
    """Who froze it (``--who``, else ``$WORKBENCH_USER``, else the login name)."""
    when: datetime
    """UTC time of the freeze."""
    note: str | None = None
    """Why this state was frozen."""
    previous_sha256: str | None
    """``sha256`` of the previous release line (None for the first): the chain."""
    sha256: str
    """sha256 over the canonical JSON of this release without this field."""

    def expected_sha256(self) -> str:
        return sha256_json(self.model_dump(mode="json", exclude={"sha256"}))


@dataclass(frozen=True)
class ReleaseLog:
    """The releases read from a log, with every problem found in it."""

    path: Path
    releases: tuple[GoldRelease, ...]
    problems: tuple[Problem, ...]

    def latest_for(self, dataset_sha256: str) -> GoldRelease | None:
        """The latest release that froze exactly this dataset hash."""
        return next(
            (r for r in reversed(self.releases) if r.dataset_sha256 == dataset_sha256), None
        )


def current_user() -> str:
    """``$WORKBENCH_USER``, else the login name."""
    try:
        return os.environ.get("WORKBENCH_USER") or getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        return "unknown"


def read_releases(root: str | Path) -> ReleaseLog:
    """Read ``<root>/releases.jsonl`` (absent: no releases) and check its chain."""
    path = Path(root) / RELEASES_FILE
    if not path.exists():
        return ReleaseLog(path, (), ())
    loc = str(path)
    releases: list[GoldRelease] = []
    problems: list[Problem] = []
    fix_chain = (
        "the release log is append-only: restore it from version control; never edit or delete a"
        " release"
    )
    if not path.is_file():
        return ReleaseLog(
            path,
            (),
            (
                Problem(
                    location=loc,
                    code="release_malformed",
                    message="the release log is not a regular file",
                    fix=fix_chain,
                ),
            ),
        )
    not_utf8: list[int] = []
    try:
        # A release holds one hash set per record, so its line grows with the dataset: the
        # document limit (256 MiB by default), not the record limit, bounds it.
        lines = list(iter_jsonl_lines(path, not_utf8, limit=max_document_bytes()))
    except OSError as exc:
        return ReleaseLog(
            path,
            (),
            (
                Problem(
                    location=loc,
                    code="release_malformed",
                    message=f"the release log cannot be read ({exc.strerror or exc})",
                    fix=fix_chain,
                ),
            ),
        )
    except WorkbenchError as exc:  # unreadable, or a line longer than the limit
        return ReleaseLog(path, (), tuple(exc.problems))
    for number in not_utf8:
        problems.append(
            Problem(
                location=f"{loc}:{number}",
                code="release_malformed",
                message="the release line is not valid UTF-8",
                fix=fix_chain,
            )
        )
    for number, text in lines:
        where = f"{loc}:{number}"
        try:
            check_json(text)  # duplicate keys, NaN/Infinity, too deep: refused before validation
        except JSONRecordError as exc:
            problem = json_problem(exc, where, fix=fix_chain)
            problems.append(
                problem.model_copy(update={"code": "release_malformed"})
                if exc.code == "malformed_json"
                else problem
            )
            continue
        try:
            release = GoldRelease.model_validate_json(text)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            problems.append(
                Problem(
                    location=where,
                    code="release_malformed",
                    message=f"not a release record ({error_field(first, 'line')}: {first['msg']})",
                    fix=fix_chain,
                )
            )
            continue
        except SchemaTooNew as exc:
            problems.append(exc.problem_at(where))
            continue
        if release.sha256 != release.expected_sha256():
            problems.append(
                Problem(
                    location=where,
                    code="release_chain_broken",
                    message=(
                        f"release {release.release_id} does not hash to its recorded sha256: it was"
                        " edited"
                    ),
                    fix=fix_chain,
                )
            )
        expected_previous = releases[-1].sha256 if releases else None
        if release.previous_sha256 != expected_previous or release.sequence != len(releases) + 1:
            problems.append(
                Problem(
                    location=where,
                    code="release_chain_broken",
                    message=(
                        f"release {release.release_id} does not follow the release before it"
                        f" (sequence {release.sequence}, expected {len(releases) + 1}; previous"
                        f" sha256 {str(release.previous_sha256)[:12]}, expected"
                        f" {str(expected_previous)[:12]}): a release was deleted, reordered or"
                        " edited"
                    ),
                    fix=fix_chain,
                )
            )
        releases.append(release)
    return ReleaseLog(path, tuple(releases), tuple(problems))


def check_releases(
    log: ReleaseLog, records: Iterable[tuple[int, GoldCase]], loc: str
) -> list[Problem]:
    """Refuse in-place edits and deletions of frozen records.

    ``records`` are ``(line number, record)`` of the gold file. A record frozen by any release
    must still be in the file with the same field hashes.
    """
    if not log.releases:
        return []
    current: dict[str, tuple[int, dict[str, str]]] = {}
    for number, case in records:
        current.setdefault(case.case_id, (number, case_hashes(case)))
    out: list[Problem] = []
    reported: set[str] = set()
    for release in log.releases:
        for case_id, frozen in release.cases.items():
            if case_id in reported:
                continue
            found = current.get(case_id)
            if found is None:
                reported.add(case_id)
                out.append(
                    Problem(
                        location=loc,
                        case_id=case_id,
                        code="frozen_case_deleted",
                        message=(
                            f"the record was frozen in release {release.release_id} and is no"
                            " longer in the gold file"
                        ),
                        fix=(
                            "restore the frozen record; to correct it, add a new record with"
                            f" supersedes: {case_id}"
                        ),
                    )
                )
                continue
            number, hashes = found
            if record_sha256(hashes) != frozen:
                reported.add(case_id)
                groups = changed_groups(release.fields.get(case_id, {}), hashes)
                what = describe(groups) if groups and case_id in release.fields else "the record"
                out.append(
                    Problem(
                        location=f"{loc}:{number}",
                        case_id=case_id,
                        code="frozen_case_edited",
                        message=(
                            f"edited in place after release {release.release_id} froze it: {what}"
                            " changed"
                        ),
                        fix=(
                            "restore the frozen record and write a superseding record (a new"
                            f" case_id with supersedes: {case_id})"
                        ),
                    )
                )
    return out


def freeze(
    gold: str | Path, *, who: str | None = None, note: str | None = None
) -> tuple[GoldRelease, bool]:
    """Freeze the current state of a gold dataset; return ``(release, created)``.

    The dataset must validate (so a frozen record edited in place cannot be frozen again).
    When the latest release already froze this exact dataset hash, nothing is written and
    that release is returned with ``created`` False. Appends are serialized with a file lock.
    """
    from filelock import FileLock, Timeout

    from ._dataset import load_dataset

    dataset = load_dataset(gold)
    root = dataset.root
    if who is not None and not who.strip():
        raise WorkbenchError(
            "cannot freeze",
            [
                Problem(
                    location="--who",
                    code="freeze_invalid",
                    message="--who is empty",
                    fix=(
                        "name who freezes the release, or omit --who to use $WORKBENCH_USER or the"
                        " login name"
                    ),
                )
            ],
        )
    # The lock lives in the temporary directory, keyed by the log's resolved path, so that the
    # dataset directory holds nothing but the dataset and its release log.
    key = sha256_json(str((root / RELEASES_FILE).resolve()))[:24]
    lock = FileLock(str(Path(tempfile.gettempdir()) / f"workbench-freeze-{key}.lock"), timeout=30)
    try:
        with lock:
            log = read_releases(root)
            if log.problems:
                raise WorkbenchError(f"{log.path}: the release log is damaged", list(log.problems))
            latest = log.releases[-1] if log.releases else None
            if latest is not None and latest.dataset_sha256 == dataset.sha256:
                return latest, False
            fields: dict[str, dict[str, str]] = {}
            for case in dataset.records:
                fields[case.case_id] = case_hashes(case)
            sequence = len(log.releases) + 1
            body: dict[str, Any] = {
                "schema_version": RELEASE_SCHEMA_VERSION,
                "release_id": f"rel-{sequence}-{dataset.sha256[:12]}",
                "sequence": sequence,
                "dataset_sha256": dataset.sha256,
                "rubric_version": dataset.rubric.version,
                "gold_sha256": sha256_file(dataset.gold_path),
                "cases": {cid: record_sha256(h) for cid, h in fields.items()},
                "fields": fields,
                "who": (who or current_user()).strip(),
                "when": datetime.now(UTC).isoformat(),
                "note": note,
                "previous_sha256": latest.sha256 if latest else None,
            }
            draft = GoldRelease.model_validate({**body, "sha256": ""})
            release = draft.model_copy(update={"sha256": draft.expected_sha256()})
            with AppendOnlyLog(log.path) as out:
                out.append(release.model_dump(mode="json"))
            return release, True
    except Timeout:
        raise WorkbenchError(
            "cannot freeze",
            [
                Problem(
                    location=str(root),
                    code="freeze_locked",
                    message="another freeze of this dataset holds the release lock",
                    fix="wait for it to finish and run freeze again",
                )
            ],
        ) from None
