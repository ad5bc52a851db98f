"""Ranking fixture files as approved inputs: their snapshot for the approval kernel
(:mod:`workbench.approval`), the change-log check of a superseding version and the label history.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._io import sha256_json
from .._record import Record as _Frozen
from ..approval import Change, Release, Snapshot, check_lineage, read_release_log
from ..errors import Problem, WorkbenchError, problem, refusal
from ._fixtures import FixtureChange, FixtureSet, RankingFixture

LABEL_FIELDS = ("expected_order", "acceptable_orders", "critical_pair")
REVIEW_FIELDS = ("reviews", "adjudication")
KIND = "ranking_fixtures"


def fixture_fields(fixture: RankingFixture) -> dict[str, str]:
    """The field-group hashes of one fixture: ``label``, ``reviews`` and ``content``."""
    data = fixture.model_dump(
        mode="json", exclude_defaults=True, exclude={"source_candidates_sha256"}
    )
    label = {k: data.pop(k, None) for k in LABEL_FIELDS}
    reviews = {k: data.pop(k, None) for k in REVIEW_FIELDS}
    return {
        "label": sha256_json(label),
        "reviews": sha256_json(reviews),
        "content": sha256_json(data),
    }


def snapshot_of(
    fixture_set: FixtureSet,
    case_lines: dict[str, int] | None = None,
    header_lines: dict[str, int] | None = None,
) -> Snapshot:
    """A fixture set as the approval kernel sees it."""
    loc = fixture_set.source or fixture_set.label
    lines = case_lines or {}
    changes_at = f"{loc}:{(header_lines or {}).get('changes', 0)}"
    items = {f.case_id: fixture_fields(f) for f in fixture_set.fixtures}
    return Snapshot(
        kind=KIND,
        name=fixture_set.name,
        version=fixture_set.version,
        sha256=sha256_json({"header": fixture_set.header_sha256, "items": items}),
        source=Path(loc),
        items=items,
        header=fixture_set.header_sha256,
        supersedes=fixture_set.supersedes,
        changes={
            c.case_id: Change(approver=c.approver, reason=c.reason, location=changes_at)
            for c in fixture_set.changes
        },
        where={cid: f"{loc}:{n}" for cid, n in lines.items()},
        file_sha256=fixture_set.sha256,
        change_fix=(
            "put the change in a new version: <name>@<next>.yaml with `supersedes:` and a"
            " `changes:` entry per fixture added, relabelled, edited or retired (old order, new"
            " order, approver, reason, approved_on)"
        ),
    )


def fixtures_snapshot(path: Path) -> Snapshot:
    """The checked snapshot of the fixture file at ``path`` (the approval registry's loader)."""
    from ._fixtures import load_fixtures

    return snapshot_of(load_fixtures(path))


def check_release(
    path: Path, fixture_set: FixtureSet, case_lines: dict[str, int], header_lines: dict[str, int]
) -> FixtureSet:
    """The set with its verified ``release`` (if frozen) after the lineage check, or a refusal."""
    snapshot = snapshot_of(fixture_set, case_lines, header_lines)
    log = read_release_log(snapshot.folder)
    problems = check_lineage(snapshot, log)
    if fixture_set.supersedes is not None:
        problems += _change_log_problems(path, fixture_set, header_lines)
    if problems:
        raise WorkbenchError(
            f"{path}: {len(problems)} problem(s) with the fixture release", problems
        )
    release = log.release_of(snapshot)
    return fixture_set.model_copy(update={"release": release}) if release else fixture_set


def previous_path(path: Path, fixture_set: FixtureSet) -> Path:
    """The file of the version ``fixture_set`` supersedes."""
    return path.with_name(f"{fixture_set.name}@{fixture_set.supersedes}.yaml")


def _change_log_problems(
    path: Path, fixture_set: FixtureSet, header_lines: dict[str, int]
) -> list[Problem]:
    from ._fixtures import load_fixtures

    at = f"{path}:{header_lines.get('changes') or header_lines.get('supersedes') or 0}"
    prev_path = previous_path(path, fixture_set)
    if not prev_path.is_file():
        message = f"supersedes {fixture_set.supersedes!r} but {prev_path.name} is not beside it"
        fix = "keep every released version of the fixture file: restore it from version control"
        return [Problem(location=at, code="supersedes_file_missing", message=message, fix=fix)]
    try:
        previous = load_fixtures(prev_path)
    except WorkbenchError as exc:
        why = f"{prev_path.name} does not load"
        code = "supersedes_invalid"
        return [problem(at, code, f"{why}: {p.code}: {p.message}", p.fix) for p in exc.problems]
    if previous.name != fixture_set.name:
        message = f"{prev_path.name} is fixture set {previous.name!r}, not {fixture_set.name!r}"
        fix = "a version supersedes an earlier version of the same set"
        return [Problem(location=at, code="supersedes_invalid", message=message, fix=fix)]
    return _entry_problems(fixture_set, previous, at)


def _entry_problems(fixture_set: FixtureSet, previous: FixtureSet, at: str) -> list[Problem]:
    before, after = previous.fixture_hashes, fixture_set.fixture_hashes
    old, new = previous.by_id(), fixture_set.by_id()
    changed = {c for c in set(before) | set(after) if before.get(c) != after.get(c)}
    problems: list[Problem] = []
    seen: set[str] = set()
    for change in fixture_set.changes:
        cid = change.case_id

        def add(code: str, message: str, fix: str, cid: str = cid) -> None:
            problems.append(problem(at, code, message, fix, cid))

        if cid in seen:
            add("change_duplicate", "two change entries for one fixture", "one entry each")
            continue
        seen.add(cid)
        if cid not in changed:
            where = "in neither version" if cid not in after else "identical in both versions"
            add("change_not_a_change", f"a change entry for a fixture {where}", "remove it")
            continue
        was = list(old[cid].expected_order) if cid in old else None
        now = list(new[cid].expected_order) if cid in new else None
        if _order(change.old_order) != was:
            message = f"old_order {change.old_order} is not {previous.label}'s expected_order {was}"
            fix = "copy the superseded version's expected_order (null for a new fixture)"
            add("change_old_order_mismatch", message, fix)
        if _order(change.new_order) != now:
            message = f"new_order {change.new_order} is not this version's expected_order {now}"
            fix = "copy this version's expected_order (null for a retired fixture)"
            add("change_new_order_mismatch", message, fix)
    return problems


def _order(order: list[str] | None) -> list[str] | None:
    return list(order) if order is not None else None


class VersionHistory(_Frozen):
    """One version of a fixture file in its label history."""

    label: str
    """``name@version``."""
    file: str
    """The fixture file."""
    release: Release | None
    """The release that froze it (None: a draft)."""
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
        if fixture_set.label in seen:  # two files superseding each other
            raise refusal(
                "cyclic history",
                str(current),
                "supersedes_invalid",
                "the supersedes chain loops",
                "a version supersedes an older one",
            )
        seen.add(fixture_set.label)
        chain.append(
            VersionHistory(
                label=fixture_set.label,
                file=str(current),
                release=fixture_set.release,
                supersedes=fixture_set.supersedes,
                changes=list(fixture_set.changes),
            )
        )
        current = (
            previous_path(current, fixture_set) if fixture_set.supersedes is not None else None
        )
    return chain[::-1]


def history_rows(chain: list[VersionHistory]) -> list[dict[str, Any]]:
    """One row per version (for tables): label, approver, when, supersedes, changes."""
    return [
        {
            "version": v.label,
            "frozen_by": v.release.approver if v.release else None,
            "frozen_at": v.release.when if v.release else None,
            "release": v.release.release_id if v.release else None,
            "supersedes": v.supersedes,
            "changes": len(v.changes),
        }
        for v in chain
    ]
