"""Frozen fixture releases and the label history between versions.

A fixture file is a *draft* until it is frozen: ``workbench ranking freeze FILE --approver NAME``
writes ``<name>@<version>.release.json`` beside it (:class:`FixtureRelease`): the file's
sha256, a hash of its header and one sha256 per fixture
(:func:`~workbench.ranking._fixtures.fixture_sha256`), who froze it and when, and the release it
supersedes. ``release_sha256`` is the sha256 over the record's canonical JSON without that field, so
an edited record no longer verifies.

Every load of a frozen file (:func:`check_release`, called by
:func:`~workbench.ranking.load_fixtures`) compares the file with its release and refuses, one
problem per fixture, any change: ``frozen_fixture_changed`` (the fixture's content changed in
place, e.g. an edited ``expected_order``), ``frozen_fixture_added``, ``frozen_fixture_removed``,
``frozen_header_changed``; a record that does not verify is ``release_tampered``.

A change goes into a new file version: ``<name>@<new>.yaml`` with ``supersedes: <old>`` and a
``changes`` entry per fixture added, relabelled, edited or retired, recording the old order, the
new order, the approver and the reason. Loading it checks the superseded version is present and
frozen (``supersedes_missing``, ``supersedes_unfrozen``), and that the change log is exactly
the difference between the two: ``change_unrecorded`` (a fixture differs and no entry says
why), ``change_not_a_change`` (an entry for an unchanged fixture), ``change_duplicate``,
``change_old_order_mismatch`` / ``change_new_order_mismatch`` (the entry's orders are not the
two versions' expected orders).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import AwareDatetime, Field, ValidationError

from .._io import atomic_write_text, read_json_file, sha256_json
from .._record import Record as _Frozen
from ..errors import Problem, WorkbenchError
from ._fixtures import FixtureChange, FixtureSet

RELEASE_SCHEMA_VERSION = 1
"""Version of :class:`FixtureRelease`."""
RELEASE_SUFFIX = ".release.json"


class SupersededRelease(_Frozen):
    """The release a new version replaces."""

    version: str
    """Its fixture-file version."""
    release_sha256: str
    """Its ``release_sha256``."""


class FixtureRelease(_Frozen):
    """``<name>@<version>.release.json``: a frozen fixture file, with a hash per fixture."""

    schema_version: int = RELEASE_SCHEMA_VERSION
    """Release record format version."""
    kind: Literal["workbench.ranking.release"] = "workbench.ranking.release"
    """Record type."""
    name: str
    """Fixture set name."""
    version: str
    """Fixture set version."""
    file: str
    """The fixture file's name."""
    file_sha256: str
    """sha256 of the fixture file's bytes when it was frozen."""
    header_sha256: str
    """sha256 over the header as written (name, version, description, supersedes, changes)."""
    fixtures: dict[str, str]
    """``case_id`` -> sha256 of the fixture as written, in file order."""
    frozen_at: AwareDatetime
    """When the file was frozen (UTC)."""
    frozen_by: str = Field(min_length=1)
    """Who approved the release (a named person)."""
    reason: str = ""
    """Why the release was frozen (e.g. the review it closes)."""
    supersedes: SupersededRelease | None = None
    """The release this version replaces."""
    release_sha256: str = ""
    """sha256 over the canonical JSON of this record without this field."""

    def content_sha256(self) -> str:
        return sha256_json(self.model_dump(mode="json", exclude={"release_sha256"}))


def release_path(fixtures_path: str | Path) -> Path:
    """Where the release record of a fixture file lives: ``<name>@<version>.release.json`` beside
    it."""
    path = Path(fixtures_path)
    return path.with_name(path.stem + RELEASE_SUFFIX)


def read_release(path: str | Path) -> tuple[FixtureRelease | None, list[Problem]]:
    """The release record at ``path`` (``None`` when absent), with a problem when it does not
    verify."""
    path = Path(path)
    if not path.exists():
        return None, []
    loc = str(path)
    try:
        record = FixtureRelease.model_validate(read_json_file(path))
    except (ValueError, ValidationError, OSError) as exc:
        return None, [
            Problem(
                location=loc,
                code="release_unreadable",
                message=f"the release record cannot be read ({str(exc).splitlines()[0][:160]})",
                fix="restore the release record from version control; it is never edited",
            )
        ]
    if record.content_sha256() != record.release_sha256:
        return None, [
            Problem(
                location=loc,
                code="release_tampered",
                message=(
                    "the release record was edited: its content no longer matches release_sha256"
                ),
                fix=(
                    "restore the release record from version control; a release is never edited, a"
                    " change is a new file version"
                ),
            )
        ]
    return record, []


def check_release(
    path: Path, fixture_set: FixtureSet, case_lines: dict[str, int], header_lines: dict[str, int]
) -> FixtureSet:
    """Verify a loaded fixture set against its release record and its change log; see the module
    docstring.

    Returns the set with ``release`` attached when it is frozen; raises :class:`WorkbenchError`
    listing every problem otherwise.
    """
    loc = str(path)

    def at(case_id: str | None = None, key: str | None = None) -> str:
        line = case_lines.get(case_id) if case_id else header_lines.get(key or "")
        return f"{loc}:{line}" if line else loc

    problems: list[Problem] = []
    record, found = read_release(release_path(path))
    problems += found
    if record is not None:
        problems += _frozen_problems(fixture_set, record, at)
    if fixture_set.supersedes is not None:
        problems += _change_problems(path, fixture_set, at)
    if problems:
        raise WorkbenchError(
            f"{loc}: {len(problems)} problem(s) with the fixture release", problems
        )
    return fixture_set.model_copy(update={"release": record}) if record is not None else fixture_set


def _frozen_problems(fixture_set: FixtureSet, record: FixtureRelease, at: Any) -> list[Problem]:
    if record.file_sha256 == fixture_set.sha256:
        return []
    fix = (
        f"restore the frozen content (git checkout {fixture_set.label}.yaml) and put the change in"
        f" a new version: {fixture_set.name}@<next>.yaml with supersedes: {fixture_set.version!r}"
        " and a changes: entry (old order, new order, approver, reason)"
    )
    problems: list[Problem] = []
    if (record.name, record.version) != (fixture_set.name, fixture_set.version):
        problems.append(
            Problem(
                location=at(key="name"),
                code="frozen_header_changed",
                message=(
                    f"the release froze {record.name}@{record.version}, the file now says"
                    f" {fixture_set.label}"
                ),
                fix=fix,
            )
        )
    elif record.header_sha256 != fixture_set.header_sha256:
        problems.append(
            Problem(
                location=at(key="name"),
                code="frozen_header_changed",
                message=f"the header of frozen release {fixture_set.label} changed in place",
                fix=fix,
            )
        )
    current = fixture_set.fixture_hashes
    for case_id, digest in current.items():
        if case_id not in record.fixtures:
            problems.append(
                Problem(
                    location=at(case_id),
                    case_id=case_id,
                    code="frozen_fixture_added",
                    message=f"fixture added in place to frozen release {fixture_set.label}",
                    fix=fix,
                )
            )
        elif record.fixtures[case_id] != digest:
            problems.append(
                Problem(
                    location=at(case_id),
                    case_id=case_id,
                    code="frozen_fixture_changed",
                    message=(
                        f"fixture changed in place after release {fixture_set.label} was frozen by"
                        f" {record.frozen_by} on {record.frozen_at.date().isoformat()} (sha256"
                        f" {digest[:12]}, frozen {record.fixtures[case_id][:12]})"
                    ),
                    fix=fix,
                )
            )
    for case_id in record.fixtures:
        if case_id not in current:
            problems.append(
                Problem(
                    location=at(key="fixtures"),
                    case_id=case_id,
                    code="frozen_fixture_removed",
                    message=f"fixture removed in place from frozen release {fixture_set.label}",
                    fix=fix,
                )
            )
    if not problems:  # only formatting or comments changed: the content is the frozen content
        return []
    return problems


def previous_path(path: Path, fixture_set: FixtureSet) -> Path:
    """The file of the version ``fixture_set`` supersedes."""
    return path.with_name(f"{fixture_set.name}@{fixture_set.supersedes}.yaml")


def _change_problems(path: Path, fixture_set: FixtureSet, at: Any) -> list[Problem]:
    from ._fixtures import load_fixtures

    prev_path = previous_path(path, fixture_set)
    if not prev_path.is_file():
        return [
            Problem(
                location=at(key="supersedes"),
                code="supersedes_missing",
                message=(
                    f"supersedes {fixture_set.supersedes!r} but {prev_path.name} is not beside this"
                    " file"
                ),
                fix=(
                    "keep every released version of the fixture file: restore it from version"
                    " control"
                ),
            )
        ]
    if not release_path(prev_path).exists():
        return [
            Problem(
                location=at(key="supersedes"),
                code="supersedes_unfrozen",
                message=(
                    f"{prev_path.name} was never frozen: a change log is relative to a frozen"
                    " release"
                ),
                fix=f"freeze it first: workbench ranking freeze {prev_path} --approver NAME",
            )
        ]
    try:
        previous = load_fixtures(prev_path)
    except WorkbenchError as exc:
        return [
            Problem(
                location=at(key="supersedes"),
                code="supersedes_invalid",
                message=f"{prev_path.name} does not load: {p.code}: {p.message}",
                fix=p.fix,
            )
            for p in exc.problems
        ]
    problems: list[Problem] = []
    if previous.name != fixture_set.name:
        problems.append(
            Problem(
                location=at(key="supersedes"),
                code="supersedes_invalid",
                message=(
                    f"{prev_path.name} is fixture set {previous.name!r}, not {fixture_set.name!r}"
                ),
                fix="a version supersedes an earlier version of the same set",
            )
        )
    before, after = previous.fixture_hashes, fixture_set.fixture_hashes
    old, new = previous.by_id(), fixture_set.by_id()
    changed = {c for c in set(before) | set(after) if before.get(c) != after.get(c)}
    seen: set[str] = set()
    for change in fixture_set.changes:
        cid = change.case_id
        if cid in seen:
            problems.append(
                Problem(
                    location=at(key="changes"),
                    case_id=cid,
                    code="change_duplicate",
                    message="two change entries for one fixture",
                    fix="record one entry per fixture and version",
                )
            )
            continue
        seen.add(cid)
        if cid not in changed:
            problems.append(
                Problem(
                    location=at(key="changes"),
                    case_id=cid,
                    code="change_not_a_change",
                    message=(
                        f"a change entry, but the fixture is identical in {previous.label} and"
                        f" {fixture_set.label}"
                        if cid in after
                        else "a change entry for a fixture in neither version"
                    ),
                    fix="remove the entry",
                )
            )
            continue
        was = list(old[cid].expected_order) if cid in old else None
        now = list(new[cid].expected_order) if cid in new else None
        if (list(change.old_order) if change.old_order is not None else None) != was:
            problems.append(
                Problem(
                    location=at(key="changes"),
                    case_id=cid,
                    code="change_old_order_mismatch",
                    message=(
                        f"old_order {change.old_order} is not the expected_order of"
                        f" {previous.label}: {was}"
                    ),
                    fix=(
                        "copy the superseded version's expected_order (null when the fixture is"
                        " new)"
                    ),
                )
            )
        if (list(change.new_order) if change.new_order is not None else None) != now:
            problems.append(
                Problem(
                    location=at(key="changes"),
                    case_id=cid,
                    code="change_new_order_mismatch",
                    message=(
                        f"new_order {change.new_order} is not this version's expected_order: {now}"
                    ),
                    fix="copy this version's expected_order (null when the fixture is retired)",
                )
            )
    for cid in sorted(changed - seen):
        kind = "added" if cid not in before else "retired" if cid not in after else "changed"
        problems.append(
            Problem(
                location=at(cid) if cid in after else at(key="changes"),
                case_id=cid,
                code="change_unrecorded",
                message=f"fixture {kind} since {previous.label} with no changes: entry",
                fix=(
                    "add a changes: entry with old_order, new_order, approver, reason and"
                    " approved_on"
                ),
            )
        )
    return problems


def freeze_fixtures(
    path: str | Path, *, approver: str, reason: str = "", now: datetime | None = None
) -> FixtureRelease:
    """Freeze a fixture file: validate it and write its release record (refused when one exists)."""
    from ._fixtures import load_fixtures

    path = Path(path)
    target = release_path(path)
    if target.exists():
        raise WorkbenchError(
            "already frozen",
            [
                Problem(
                    location=str(target),
                    code="release_exists",
                    message=f"{path.name} is already frozen; a release is never re-frozen",
                    fix=(
                        "put the change in a new version with supersedes: and a changes: entry,"
                        " then freeze that file"
                    ),
                )
            ],
        )
    if not approver.strip():
        raise WorkbenchError(
            "no approver",
            [
                Problem(
                    location="--approver",
                    code="release_invalid",
                    message="a release needs a named approver",
                    fix="pass --approver NAME",
                )
            ],
        )
    fixture_set = load_fixtures(path)
    supersedes = None
    if fixture_set.supersedes is not None:
        prev, _ = read_release(release_path(previous_path(path, fixture_set)))
        assert prev is not None  # load_fixtures checked it
        supersedes = SupersededRelease(version=prev.version, release_sha256=prev.release_sha256)
    record = FixtureRelease(
        name=fixture_set.name,
        version=fixture_set.version,
        file=path.name,
        file_sha256=fixture_set.sha256 or "",
        header_sha256=fixture_set.header_sha256,
        fixtures=fixture_set.fixture_hashes,
        frozen_at=(now or datetime.now(UTC)).replace(microsecond=0),
        frozen_by=approver.strip(),
        reason=reason,
        supersedes=supersedes,
    )
    sealed = record.model_copy(update={"release_sha256": record.content_sha256()})
    atomic_write_text(
        target, json.dumps(sealed.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
    )
    return sealed


class VersionHistory(_Frozen):
    """One version of a fixture file in its label history."""

    label: str
    """``name@version``."""
    file: str
    """The fixture file."""
    frozen: bool
    """Whether a release record froze it."""
    frozen_by: str | None
    """Who froze it."""
    frozen_at: datetime | None
    """When."""
    release_sha256: str | None
    """Its release record's hash."""
    supersedes: str | None
    """The version it replaces."""
    changes: list[FixtureChange]
    """Its recorded changes relative to ``supersedes``."""


def label_history(path: str | Path) -> list[VersionHistory]:
    """The chain of versions ending at ``path``, oldest first, each verified as it is loaded."""
    from ._fixtures import load_fixtures

    chain: list[VersionHistory] = []
    current: Path | None = Path(path)
    seen: set[str] = set()
    while current is not None:
        fixture_set = load_fixtures(current)
        if (
            fixture_set.label in seen
        ):  # pragma: no cover - a cycle needs two files superseding each other
            raise WorkbenchError(
                "cyclic history",
                [
                    Problem(
                        location=str(current),
                        code="supersedes_invalid",
                        message="the supersedes chain loops",
                        fix="a version supersedes an older one",
                    )
                ],
            )
        seen.add(fixture_set.label)
        release = fixture_set.release
        chain.append(
            VersionHistory(
                label=fixture_set.label,
                file=str(current),
                frozen=release is not None,
                frozen_by=release.frozen_by if release else None,
                frozen_at=release.frozen_at if release else None,
                release_sha256=release.release_sha256 if release else None,
                supersedes=fixture_set.supersedes,
                changes=list(fixture_set.changes),
            )
        )
        current = (
            previous_path(current, fixture_set) if fixture_set.supersedes is not None else None
        )
    return chain[::-1]
