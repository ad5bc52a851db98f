"""Frozen noise-suite releases: an append-only, hash-chained log beside the suite files.

``workbench noise freeze --pairs data/noise/<name>@<version>.yaml --by NAME`` appends one
:class:`NoiseRelease` to ``releases.jsonl`` in the suite's directory: the suite's sha256, one
content hash and one reference hash per pair, which pairs are retired (with the reason), the
frozen sentinel set and the evidence manifest. Each line carries the sha256 of the line
before it, so an edited or deleted release breaks the chain.

Refused, every problem at once:

- ``suite_changed_after_freeze``: the file of a frozen ``name@version`` no longer has the
  frozen sha256 (an in-place change). Changes are a new suite version.
- ``pair_deleted``: a pair frozen in an earlier release of the suite is missing from a later
  version. Retire it with a reason instead; it stays in the file.
- ``pair_changed_in_place``: a pair id frozen earlier now has other content. A fixed case is
  a new pair id that ``supersedes`` the retired one.
- ``retired_reactivated``: a pair retired in an earlier release is active again.
- ``release_chain_broken``, ``release_malformed``: the log itself was edited.

At run time :func:`release_of` finds the release of a suite (refusing a changed file); an
unfrozen suite runs but its report carries the review blocker ``noise_suite_unfrozen``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pydantic import AwareDatetime, Field, ValidationError

from .._io import AppendOnlyLog, iter_jsonl_lines, loads_json, sha256_json, sha256_text
from .._record import Record as _Model
from ..errors import Problem, WorkbenchError
from ._evidence import EvidenceManifest
from ._pairs import NoiseSuite

RELEASES_FILE = "releases.jsonl"
"""The release log, in the directory of the suite files."""
NOISE_RELEASE_SCHEMA_VERSION = 1


class FrozenPair(_Model):
    """One pair as a release froze it."""

    content_sha256: str
    """Hash of the pair without its retirement
    (:meth:`~workbench.noise.NoisePair.content_sha256`)."""
    reference_sha256: str
    """sha256 of the reference text and its version."""
    status: str
    """``active`` or ``retired``."""
    retired_reason: str | None = None
    """Why it was retired, when it was."""
    supersedes: str | None = None
    """The retired pair it fixes, if any."""


class NoiseRelease(_Model):
    """One line of ``releases.jsonl``: a frozen suite version."""

    schema_version: int = NOISE_RELEASE_SCHEMA_VERSION
    """Release record format version."""
    release_id: str
    """``nrel-`` + 16 hex digits of the sha256 over the record without this field."""
    suite: str
    """``name@version``."""
    name: str
    """Suite name."""
    version: str
    """Suite version."""
    suite_sha256: str
    """sha256 of the suite file as frozen."""
    pairs: dict[str, FrozenPair]
    """Per pair id: its hashes and status."""
    sentinels: list[str]
    """The frozen sentinel set."""
    manifest: EvidenceManifest
    """The evidence manifest of the release."""
    policy_sha256: str
    """sha256 of the suite's noise policy and slice limits."""
    frozen_by: str = Field(min_length=1)
    """Who froze it."""
    frozen_at: AwareDatetime
    """When (UTC)."""
    note: str | None = None
    """Why this release."""
    previous_sha256: str | None
    """sha256 of the previous line's record (None for the first line): the chain."""


def releases_path(suite: NoiseSuite | str | Path) -> Path:
    """``releases.jsonl`` beside the suite file."""
    source = suite.source if isinstance(suite, NoiseSuite) else str(suite)
    if not source:
        raise WorkbenchError(
            "suite without a file",
            [
                Problem(
                    location="pairs",
                    code="suite_without_file",
                    message="an in-memory suite has no directory to keep releases in",
                    fix=(
                        "write the suite to data/noise/<name>@<version>.yaml and load it from there"
                    ),
                )
            ],
        )
    return Path(source).parent / RELEASES_FILE


def _release_id(record: dict[str, object]) -> str:
    return "nrel-" + sha256_json({k: v for k, v in record.items() if k != "release_id"})[:16]


def load_releases(path: str | Path) -> list[NoiseRelease]:
    """Every release in the log, in order; a missing log has none. Refuses an edited log."""
    path = Path(path)
    if not path.exists():
        return []
    out: list[NoiseRelease] = []
    problems: list[Problem] = []
    previous: str | None = None
    not_utf8: list[int] = []
    for number, text in iter_jsonl_lines(path, not_utf8):
        where = f"{path}:{number}"
        try:
            raw = loads_json(text)  # strict: duplicate keys, NaN/Infinity, too deep refused
            release = NoiseRelease.model_validate(raw)
        except (ValueError, ValidationError) as exc:
            problems.append(
                Problem(
                    location=where,
                    code="release_malformed",
                    message=f"not a release record ({str(exc).splitlines()[0]})",
                    fix="restore the line from version control; the release log is append-only",
                )
            )
            previous = sha256_text(text)
            continue
        if release.release_id != _release_id(release.model_dump(mode="json")):
            problems.append(
                Problem(
                    location=where,
                    code="release_malformed",
                    message="release_id does not match the record (the line was edited)",
                    fix=(
                        "restore the line from version control; freeze a new release instead of"
                        " editing one"
                    ),
                )
            )
        if release.previous_sha256 != previous:
            problems.append(
                Problem(
                    location=where,
                    code="release_chain_broken",
                    message=(
                        "previous_sha256 does not match the line before: a release was edited,"
                        " deleted or reordered"
                    ),
                    fix="restore the log from version control",
                )
            )
        previous = sha256_json(release.model_dump(mode="json"))
        out.append(release)
    problems += [
        Problem(
            location=f"{path}:{n}",
            code="release_malformed",
            message="not a release record (the line is not valid UTF-8)",
            fix="restore the line from version control; the release log is append-only",
        )
        for n in not_utf8
    ]
    if problems:
        raise WorkbenchError(f"{path}: the release log has {len(problems)} problem(s)", problems)
    return out


def _frozen_pairs(suite: NoiseSuite) -> dict[str, FrozenPair]:
    return {
        p.pair_id: FrozenPair(
            content_sha256=p.content_sha256(),
            reference_sha256=sha256_json(
                {"reference": p.reference, "reference_version": p.reference_version}
            ),
            status="retired" if p.retired else "active",
            retired_reason=p.retired.reason if p.retired else None,
            supersedes=p.supersedes,
        )
        for p in suite.pairs
    }


def policy_sha256(suite: NoiseSuite) -> str:
    """sha256 of the suite's noise policy and slice limits."""
    return sha256_json(
        {
            "policy": suite.policy.model_dump(mode="json"),
            "slices": {k: v.model_dump(mode="json") for k, v in suite.slices.items()},
        }
    )


def check_lineage(suite: NoiseSuite, releases: list[NoiseRelease]) -> list[Problem]:
    """Problems of ``suite`` against the earlier releases of its name (see the module doc)."""
    loc = suite.source or suite.label
    problems: list[Problem] = []
    mine = _frozen_pairs(suite)
    for rel in releases:
        if rel.name != suite.name:
            continue
        if rel.suite == suite.label:
            if rel.suite_sha256 != suite.sha256:
                problems.append(
                    Problem(
                        location=loc,
                        code="suite_changed_after_freeze",
                        message=(
                            f"{suite.label} was frozen in {rel.release_id} with sha256"
                            f" {rel.suite_sha256[:12]}; the file now has {suite.sha256[:12]}"
                        ),
                        fix=(
                            "restore the frozen file; put changes in a new version"
                            f" ({suite.name}@<next>.yaml) and freeze that"
                        ),
                    )
                )
            continue
        for pid, frozen in rel.pairs.items():
            now = mine.get(pid)
            if now is None:
                problems.append(
                    Problem(
                        location=loc,
                        case_id=pid,
                        code="pair_deleted",
                        message=f"pair {pid!r} of {rel.suite} is missing",
                        fix=(
                            "keep it in the file and retire it with a reason (retired: {reason, by,"
                            " on}); cases are never deleted"
                        ),
                    )
                )
            elif now.content_sha256 != frozen.content_sha256:
                problems.append(
                    Problem(
                        location=loc,
                        case_id=pid,
                        code="pair_changed_in_place",
                        message=f"pair {pid!r} differs from {rel.suite}",
                        fix=(
                            f"restore {pid!r} (retire it if it is wrong) and add the fixed case as"
                            f" a new pair with supersedes: {pid}"
                        ),
                    )
                )
            elif frozen.status == "retired" and now.status == "active":
                problems.append(
                    Problem(
                        location=loc,
                        case_id=pid,
                        code="retired_reactivated",
                        message=(
                            f"pair {pid!r} was retired in {rel.suite} ({frozen.retired_reason}) and"
                            " is active again"
                        ),
                        fix=f"keep it retired; a fixed case is a new pair with supersedes: {pid}",
                    )
                )
    return problems


def release_of(suite: NoiseSuite) -> NoiseRelease | None:
    """The release that froze this exact suite, or None when it is not frozen.

    Raises :class:`WorkbenchError` when the suite's ``name@version`` was frozen with other
    content (an in-place change) or when the log is broken.
    """
    if not suite.source:
        return None
    releases = load_releases(releases_path(suite))
    problems = [p for p in check_lineage(suite, releases) if p.code == "suite_changed_after_freeze"]
    if problems:
        raise WorkbenchError(f"{suite.label}: changed after it was frozen", problems)
    return next((r for r in releases if r.suite == suite.label), None)


def freeze_suite(
    suite: NoiseSuite, *, by: str, note: str | None = None, now: datetime | None = None
) -> tuple[NoiseRelease, bool]:
    """Append a release of ``suite`` to its directory's log; return it and whether it is new.

    Freezing an already frozen, unchanged suite returns the existing release (nothing is
    written). Refuses (every problem at once) the lineage problems of the module doc.
    """
    if not by.strip():
        raise WorkbenchError(
            "freeze refused",
            [
                Problem(
                    location="--by",
                    code="freeze_by_missing",
                    message="a release names who froze it",
                    fix="give --by NAME",
                )
            ],
        )
    path = releases_path(suite)
    with AppendOnlyLog(path) as log:
        releases = load_releases(path)
        problems = check_lineage(suite, releases)
        if problems:
            raise WorkbenchError(f"freeze refused: {len(problems)} problem(s)", problems)
        existing = next((r for r in releases if r.suite == suite.label), None)
        if existing is not None:
            return existing, False
        at = (now or datetime.now(UTC)).replace(microsecond=0)
        record: dict[str, object] = {
            "schema_version": NOISE_RELEASE_SCHEMA_VERSION,
            "suite": suite.label,
            "name": suite.name,
            "version": suite.version,
            "suite_sha256": suite.sha256,
            "pairs": {k: v.model_dump(mode="json") for k, v in _frozen_pairs(suite).items()},
            "sentinels": list(suite.sentinels),
            "manifest": suite.manifest.model_dump(mode="json"),
            "policy_sha256": policy_sha256(suite),
            "frozen_by": by,
            "frozen_at": at.isoformat(),
            "note": note,
            "previous_sha256": (
                sha256_json(releases[-1].model_dump(mode="json")) if releases else None
            ),
        }
        draft = NoiseRelease.model_validate({**record, "release_id": "nrel-pending"})
        release = draft.model_copy(
            update={"release_id": _release_id(draft.model_dump(mode="json"))}
        )
        log.append(release.model_dump(mode="json"))
    return release, True
