"""The one lineage check every use of an approved input runs, every problem at once (its codes:
docs/formats.md#releases-of-approved-inputs)."""

from __future__ import annotations

from ..errors import Problem, WorkbenchError, problem
from ._approvers import Approvers, load_approvers
from ._log import Release, ReleaseLog, read_release_log
from ._snapshot import Snapshot, changed_fields, item_sha256

FIELD_NAMES: dict[str, str] = {
    "label": "label",
    "response": "response",
    "notes": "notes",
    "grading": "grading fields (input, reference, contexts, evidence)",
    "reviews": "reviews",
    "placement": "slice/partition/group/tags",
    "rubric": "rubric version",
    "other": "other fields (metadata, supersedes)",
    "content": "content",
    "reference": "reference",
    "status": "status (retired or active)",
}
"""How field groups are named in messages (a group not listed is named as itself)."""


def describe(groups: list[str]) -> str:
    """``label, notes`` style text for field groups."""
    return ", ".join(FIELD_NAMES.get(g, g) for g in groups)


def check_lineage(
    snapshot: Snapshot, log: ReleaseLog | None = None, approvers: Approvers | None = None
) -> list[Problem]:
    """Every lineage problem of ``snapshot``; ``log`` and ``approvers`` default to its folder's log
    and the project's list."""
    log = log if log is not None else read_release_log(snapshot.folder)
    mine = log.of(snapshot)
    problems = list(log.problems)
    chained = snapshot.chained and snapshot.version is not None
    if not mine and not (chained and snapshot.supersedes is not None):
        return problems
    if approvers is None:
        try:
            approvers = load_approvers(snapshot.folder)
        except WorkbenchError as exc:
            return [*problems, *exc.problems]
    for line, release in mine:
        where = f"{log.path}:{line}"
        problems += approvers.problems(release.approver, where, f"{release.release_id}'s approver")
    if snapshot.version is None:
        for _, release in mine:
            problems += _in_place(snapshot, release, allow_added=True)
        return _once(problems)
    same = [r for _, r in mine if r.version == snapshot.version]
    if same:
        problems += _in_place(snapshot, same[-1], allow_added=False)
    if chained:
        problems += _across_versions(snapshot, [r for _, r in mine], approvers)
    return _once(problems)


def _in_place(snapshot: Snapshot, release: Release, *, allow_added: bool) -> list[Problem]:
    """An item frozen by ``release`` that changed or went, and (versioned) one that came."""
    if release.dataset_sha256 == snapshot.sha256:
        return []

    def fix(item_id: str | None) -> str:
        how = snapshot.change_fix.replace("{item}", item_id or "ID")
        return how if allow_added else f"restore the frozen content and {how}"

    out: list[Problem] = []
    frozen_at = f"{release.release_id} ({release.label}, approved by {release.approver})"
    if not allow_added and release.header_sha256 and release.header_sha256 != snapshot.header:
        out.append(
            _problem(
                snapshot, None, "frozen_header_edited", f"the header of {frozen_at}", fix(None)
            )
        )
    for item_id, digest in release.items.items():
        now = snapshot.items.get(item_id)
        if now is None:
            message = f"frozen in {frozen_at} and no longer in {snapshot.label}"
            out.append(_problem(snapshot, item_id, "frozen_case_deleted", message, fix(item_id)))
        elif item_sha256(now) != digest:
            groups = changed_fields(release.fields.get(item_id, {}), now)
            what = describe(groups) if item_id in release.fields and groups else "the item"
            message = f"edited in place after {frozen_at} froze it: {what} changed"
            out.append(_problem(snapshot, item_id, "frozen_case_edited", message, fix(item_id)))
    if not allow_added:
        for item_id in snapshot.items:
            if item_id not in release.items:
                message = f"added in place to {frozen_at}"
                out.append(_problem(snapshot, item_id, "frozen_case_added", message, fix(item_id)))
    return out


def _across_versions(
    snapshot: Snapshot, releases: list[Release], approvers: Approvers
) -> list[Problem]:
    own = next((i for i, r in enumerate(releases) if r.version == snapshot.version), None)
    earlier = [r for r in releases[:own] if r.version != snapshot.version]
    problems: list[Problem] = []
    if snapshot.supersedes is None:
        if earlier:
            versions = ", ".join(dict.fromkeys(repr(r.version) for r in earlier))
            message = (
                f"{snapshot.name} has frozen version(s) {versions}, and {snapshot.label} does not"
                " say which one it supersedes: a new version of a frozen input cannot start a new"
                " history"
            )
            fix = f"write `supersedes: {earlier[-1].version!r}` and {snapshot.change_fix}"
            problems.append(_problem(snapshot, None, "supersedes_missing", message, fix))
        return problems
    base = [r for r in releases if r.version == snapshot.supersedes]
    if not base:
        message = f"supersedes {snapshot.supersedes!r}, which was never frozen"
        fix = f"freeze {snapshot.name}@{snapshot.supersedes} first (workbench freeze FILE)"
        return [*problems, _problem(snapshot, None, "supersedes_unfrozen", message, fix)]
    return problems + _unrecorded(snapshot, base[-1], approvers)


def _unrecorded(snapshot: Snapshot, base: Release, approvers: Approvers) -> list[Problem]:
    """Items that differ from the superseded release with no recorded change, and relied-on
    changes by unlisted approvers."""
    out: list[Problem] = []
    for item_id in dict.fromkeys([*base.items, *snapshot.items]):
        now = snapshot.items.get(item_id)
        change = snapshot.changes.get(item_id)
        if change is not None:
            same = now is not None and item_sha256(now) == base.items.get(item_id)
            role = f"the approver of the change to {item_id}"
            out += [] if same else approvers.problems(change.approver, change.location, role)
            continue
        if item_id not in base.items:
            if not snapshot.additions_need_change:
                continue
            what = "added"
        elif now is None:
            what = "removed"
        elif item_sha256(now) == base.items[item_id]:
            continue
        else:
            groups = changed_fields(base.fields.get(item_id, {}), now)
            what = ("relabelled" if "label" in groups else "edited") + f" ({describe(groups)})"
        message = f"{what} since {base.label} ({base.release_id}) with no recorded change"
        fix = snapshot.change_fix.replace("{item}", item_id)
        out.append(_problem(snapshot, item_id, "change_unrecorded", message, fix))
    return out


def _problem(snapshot: Snapshot, item_id: str | None, code: str, message: str, fix: str) -> Problem:
    return problem(snapshot.at(item_id), code, message, fix, case_id=item_id)


def _once(problems: list[Problem]) -> list[Problem]:
    seen: set[tuple[str, str | None]] = set()
    out: list[Problem] = []
    for p in problems:
        key = (p.code, p.case_id) if p.case_id else (p.code, p.location + p.message)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out
