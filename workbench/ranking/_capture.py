"""Privacy mode for ranking runs: what of the evaluator-visible request is kept, for how long, and
proof it held.

Every ranking run through :func:`~workbench.ranking.run_ranking` wraps the judge in a
:class:`CapturingJudge`. The judge still sees the full request; what the run *stores* is set by
a :class:`CaptureConfig` (``capture`` in the ranking policy, or ``--capture`` /
``--excerpt`` / ``--retention-days``), recorded in ``capture.json``:

- ``full``: the payload is the whole evaluator-visible request;
- ``digest_and_excerpts``: the payload holds only the approved excerpts (the allow-list:
  ``user_input``, ``context`` and/or ``candidates``); the rest is kept as digests only.

Either way the result's ``rendered_request`` is a small **capture stub** that never holds text:
``{capture, request_sha256, payload, payload_sha256, captured_at, expires_at, evidence}``.
``evidence`` is computed from the full request before anything is dropped: a sha256 and a
``present`` flag for the user input and every context passage (by index, in fixture order), a
sha256 and an ``occurrences`` count for every presented candidate (by label: 0 is a dropped or
clipped candidate, 2 or more a candidate shown twice), and any stable candidate id visible in
the request. The completeness check reads this evidence, so it keeps working after the payload
is gone. The payload itself is ``payloads/<payload_sha256>.json`` (content-addressed), listed in
the append-only ``payloads/index.jsonl`` with its expiry (``captured_at`` + ``retention_days``;
no expiry when retention is not declared).

``workbench prune`` deletes payload files whose expiry has passed and appends each deletion to
``payloads/pruned.jsonl``; ``results.jsonl``, the index and every digest stay. A run locked with
``workbench ranking run --lock`` (``ranking_lock.json``, :class:`RankingLock`) hashes every file
*except* the payloads, and records each payload's sha256 separately: verification
(:func:`verify_ranking_run`, ``workbench ranking verify``) checks a present payload against its
hash and accepts an absent one only when the prune log records it with the same hash after its
expiry. The hashed evidence (results with their stubs, the report, the gate) never contains a
payload, so pruning cannot break it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, TypeGuard

from pydantic import AwareDatetime, Field

from .._io import (
    AppendOnlyLog,
    atomic_write_json,
    atomic_write_text,
    canonical_json,
    iter_jsonl_lines,
    loads_json,
    read_json_file,
    sha256_file,
    sha256_json,
    sha256_text,
)
from .._record import Record as _Frozen
from ..errors import Problem, WorkbenchError

CAPTURE_FILE = "capture.json"
PAYLOAD_DIR = "payloads"
PAYLOAD_INDEX = f"{PAYLOAD_DIR}/index.jsonl"
PRUNE_LOG = f"{PAYLOAD_DIR}/pruned.jsonl"
LOCK_FILE = "ranking_lock.json"
LOCK_SCHEMA_VERSION = 1
Excerpt = Literal["user_input", "context", "candidates"]


class CaptureConfig(_Frozen):
    """What a ranking run stores of each evaluator-visible request, and for how long."""

    mode: Literal["full", "digest_and_excerpts"] = "full"
    """``full``: the whole request as payload; ``digest_and_excerpts``: digests plus approved
    excerpts only."""
    excerpts: list[Excerpt] = Field(default_factory=list)
    """The allow-list of excerpts kept in ``digest_and_excerpts`` mode: ``user_input``,
    ``context`` (the policy passages) and/or ``candidates`` (the candidate texts)."""
    retention_days: int | None = Field(default=None, ge=0)
    """Days a payload is kept before ``workbench prune`` may delete it; None: no expiry declared."""
    declared_by: str = "default"
    """Who declared it: ``policy <name@version>``, ``cli`` or ``default`` (not part of a policy
    file)."""


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _strings(obj: Any, out: list[str]) -> None:
    if isinstance(obj, str):
        out.append(obj)
    elif isinstance(obj, dict):
        for value in obj.values():
            _strings(value, out)
    elif isinstance(obj, list):
        for value in obj:
            _strings(value, out)


def request_text(request: Any) -> str:
    """Every string of a request, whitespace-normalised and joined (what the completeness check
    searches)."""
    parts: list[str] = []
    _strings(request, parts)
    return _norm("\n".join(parts))


def occurrences(texts: dict[str, str], haystack: str) -> dict[str, int]:
    """How often each text occurs in ``haystack``, not counting occurrences inside another,
    longer text of ``texts`` (a candidate that quotes another is not that candidate twice)."""
    raw = {key: haystack.count(t) if t else 0 for key, t in texts.items()}
    out = dict(raw)
    for key, t in texts.items():
        for other, u in texts.items():
            if other != key and t and len(u) > len(t) and t in u:
                out[key] -= u.count(t) * raw[other]
    return {k: max(0, v) for k, v in out.items()}


def _token(word: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9_\-]){re.escape(word)}(?![A-Za-z0-9_\-])")


def request_evidence(
    request: Any, judge_input: Any, labels: dict[str, str] | None
) -> dict[str, Any]:
    """Digest-only completeness evidence of one rendered request (see the module docstring)."""
    text = request_text(request)
    user = _norm(judge_input.user_input)
    context = [_norm(t) for t in judge_input.context]
    cands = {c.label: _norm(c.text) for c in judge_input.candidates}
    counts = occurrences(cands, text)
    fixture_text = "\n".join(
        [judge_input.user_input, *judge_input.context, *(c.text for c in judge_input.candidates)]
    )
    leaked = sorted(
        cid
        for cid in (labels or {}).values()
        if not _token(cid).search(fixture_text) and _token(cid).search(text)
    )
    return {
        "user_input": {"sha256": sha256_text(user), "present": user in text},
        "context": [
            {"index": i, "sha256": sha256_text(t), "present": t in text}
            for i, t in enumerate(context)
        ],
        "candidates": [
            {"label": label, "sha256": sha256_text(t), "occurrences": counts[label]}
            for label, t in cands.items()
        ],
        "leaked_ids": leaked,
    }


def _excerpts(judge_input: Any, config: CaptureConfig, evidence: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "user_input" in config.excerpts:
        out["user_input"] = judge_input.user_input
    if "context" in config.excerpts:
        out["context"] = [
            {"index": i, "text": t, "present": evidence["context"][i]["present"]}
            for i, t in enumerate(judge_input.context)
        ]
    if "candidates" in config.excerpts:
        out["candidates"] = [{"label": c.label, "text": c.text} for c in judge_input.candidates]
    return out


class CapturingJudge:
    """A judge wrapper: the inner judge runs unchanged; the run stores a capture stub instead of the
    request."""

    def __init__(
        self, inner: Any, out_dir: str | Path, config: CaptureConfig, now: Any = None
    ) -> None:
        self._inner = inner
        self.spec = inner.spec
        self.identity = inner.identity
        self.config = config
        self.out = Path(out_dir)
        self._now = now or (lambda: datetime.now(UTC))
        self._lock = threading.Lock()
        self._index: AppendOnlyLog | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def render(self, judge_input: Any, ref: Any = None) -> Any:
        """The planned request (its hash keys the verdict cache) plus the capture config, so runs
        with another capture mode, allow-list or retention never share a cached stub."""
        return {
            "request": self._inner.render(judge_input, ref),
            "capture": self.config.model_dump(mode="json", exclude={"declared_by"}),
        }

    def estimate_cost(self, judge_input: Any) -> float:
        return float(self._inner.estimate_cost(judge_input))

    async def evaluate(self, judge_input: Any, ref: Any = None) -> Any:
        verdict = await self._inner.evaluate(judge_input, ref)
        full = verdict.rendered_request
        if full is None:
            full = (
                self._inner.visible_request(judge_input)
                if hasattr(self._inner, "visible_request")
                else self._inner.render(judge_input, ref)
            )
        labels = ((ref.presentation if ref is not None else None) or {}).get("labels")
        stub = await asyncio.to_thread(self.capture, full, judge_input, labels)
        return dataclasses.replace(verdict, rendered_request=stub)

    def capture(self, full: Any, judge_input: Any, labels: dict[str, str] | None) -> dict[str, Any]:
        """Write the payload, append it to the index and return the stub (thread-safe)."""
        evidence = request_evidence(full, judge_input, labels)
        payload = (
            full
            if self.config.mode == "full"
            else {
                "capture": "digest_and_excerpts",
                "request_sha256": sha256_json(full),
                "excerpts": _excerpts(judge_input, self.config, evidence),
            }
        )
        payload_sha = sha256_text(canonical_json(payload))
        rel = f"{PAYLOAD_DIR}/{payload_sha}.json"
        captured = self._now().replace(microsecond=0)
        expires = (
            captured + timedelta(days=self.config.retention_days)
            if self.config.retention_days is not None
            else None
        )
        with self._lock:
            target = self.out / rel
            if not target.exists():
                atomic_write_text(target, canonical_json(payload))
            if self._index is None:
                self._index = AppendOnlyLog(self.out / PAYLOAD_INDEX)
            self._index.append(
                {
                    "payload": rel,
                    "payload_sha256": payload_sha,
                    "request_sha256": sha256_json(full),
                    "captured_at": captured.isoformat(),
                    "expires_at": expires.isoformat() if expires else None,
                }
            )
        return {
            "capture": self.config.mode,
            "request_sha256": sha256_json(full),
            "payload": rel,
            "payload_sha256": payload_sha,
            "captured_at": captured.isoformat(),
            "expires_at": expires.isoformat() if expires else None,
            "evidence": evidence,
        }

    async def aclose(self) -> None:
        if hasattr(self._inner, "aclose"):
            await self._inner.aclose()
        with self._lock:
            if self._index is not None:
                self._index.close()
                self._index = None


RUN_REGISTRY = "ranking_runs.jsonl"
"""In the verdict cache directory: ``{run_id, run_dir}`` of every ranking run, so a run served
from the cache can copy the payloads of the run that produced the cached results."""


def register_run(cache_root: str | Path, run_id: str, run_dir: str | Path) -> None:
    """Record where a ranking run's payloads live (append-only)."""
    with AppendOnlyLog(Path(cache_root) / RUN_REGISTRY) as log:
        log.append({"run_id": run_id, "run_dir": str(Path(run_dir).resolve())})


def adopt_cached_payloads(run_dir: str | Path, cache_root: str | Path) -> int:
    """Copy into ``run_dir`` the payloads of its cached results from the runs that produced them.

    A cached result's stub points to a payload of the producing run (same capture config: the
    capture is part of the cache key). The payload is copied when that run is registered and
    still holds it with the recorded sha256; it keeps the producing capture's expiry. Returns
    the number of payloads adopted.
    """
    from ..results import read_results
    from ..runs import RunDir

    root = Path(run_dir)
    registry = Path(cache_root) / RUN_REGISTRY
    results = RunDir(root).results
    if not registry.exists() or not results.exists():
        return 0
    where = {
        row["run_id"]: Path(row["run_dir"])
        for row in (loads_json(line) for _, line in iter_jsonl_lines(registry))
    }
    known = set(_index(root))
    adopted = 0
    log: AppendOnlyLog | None = None
    try:
        for line in read_results(results):
            r = line.result
            stub = r.rendered_request
            if not r.cached_from_run_id or not is_stub(stub) or stub["payload"] in known:
                continue
            source = where.get(r.cached_from_run_id)
            if (
                source is None
                or not (source / stub["payload"]).exists()
                or sha256_file(source / stub["payload"]) != stub["payload_sha256"]
            ):
                continue
            target = root / stub["payload"]
            if not target.exists():
                atomic_write_text(target, (source / stub["payload"]).read_text(encoding="utf-8"))
            if log is None:
                log = AppendOnlyLog(root / PAYLOAD_INDEX)
            log.append(
                {
                    "payload": stub["payload"],
                    "payload_sha256": stub["payload_sha256"],
                    "request_sha256": stub["request_sha256"],
                    "captured_at": stub["captured_at"],
                    "expires_at": stub["expires_at"],
                    "adopted_from": r.cached_from_run_id,
                }
            )
            known.add(stub["payload"])
            adopted += 1
    finally:
        if log is not None:
            log.close()
    return adopted


def is_stub(request: object) -> TypeGuard[dict[str, Any]]:
    """Whether a stored ``rendered_request`` is a capture stub."""
    return (
        isinstance(request, dict)
        and "capture" in request
        and "evidence" in request
        and "request_sha256" in request
    )


def write_capture_config(out_dir: str | Path, config: CaptureConfig) -> None:
    """Record the run's capture config; refuse a resumed run that would change it."""
    path = Path(out_dir) / CAPTURE_FILE
    if path.exists():
        try:
            before = CaptureConfig.model_validate(read_json_file(path))
        except (ValueError, OSError):
            before = None
        if before is None or before.model_dump(exclude={"declared_by"}) != config.model_dump(
            exclude={"declared_by"}
        ):
            before_text = (
                str(before.model_dump(exclude={"declared_by"})) if before else "(unreadable)"
            )
            raise WorkbenchError(
                "capture changed",
                [
                    Problem(
                        location=str(path),
                        code="capture_changed",
                        message=(
                            "the run directory was captured as"
                            f" {before_text},"
                            " this invocation asks for"
                            f" {config.model_dump(exclude={'declared_by'})}"
                        ),
                        fix=(
                            "use a new --out directory; one run keeps one capture mode and"
                            " retention"
                        ),
                    )
                ],
            )
        return
    atomic_write_json(path, config.model_dump(mode="json"))


def read_capture_config(run_dir: str | Path) -> CaptureConfig | None:
    path = Path(run_dir) / CAPTURE_FILE
    if not path.exists():
        return None
    return CaptureConfig.model_validate(read_json_file(path))


# -- pruning ------------------------------------------------------------------------------------


class PruneResult(_Frozen):
    """What ``workbench prune`` did in one run directory."""

    run_dir: str
    """The run directory."""
    pruned: list[str]
    """Payload files deleted now (relative paths)."""
    kept: int
    """Payload files kept (not expired, or no expiry declared)."""
    already_pruned: int
    """Payload files pruned earlier."""
    lock_problems: list[Problem]
    """Verification of the run's lock after pruning (empty: it verifies, or there is no lock)."""
    locked: bool
    """Whether the run is locked."""


def _index(run_dir: Path) -> dict[str, dict[str, Any]]:
    """payload -> {payload_sha256, expires_at (latest; None = never)} from the index."""
    out: dict[str, dict[str, Any]] = {}
    path = run_dir / PAYLOAD_INDEX
    if not path.exists():
        return out
    for _, line in iter_jsonl_lines(path):
        row = loads_json(line)
        entry = out.setdefault(
            row["payload"],
            {
                "payload_sha256": row["payload_sha256"],
                "expires_at": row.get("expires_at"),
                "never": False,
            },
        )
        if row.get("expires_at") is None:
            entry["never"] = True
        elif entry["expires_at"] is None or row["expires_at"] > entry["expires_at"]:
            entry["expires_at"] = row["expires_at"]
    for entry in out.values():
        if entry.pop("never"):
            entry["expires_at"] = None
    return out


def _pruned(run_dir: Path) -> dict[str, dict[str, Any]]:
    path = run_dir / PRUNE_LOG
    if not path.exists():
        return {}
    return {row["payload"]: row for row in (loads_json(line) for _, line in iter_jsonl_lines(path))}


def prune_run(
    run_dir: str | Path, now: datetime | None = None, *, dry_run: bool = False
) -> PruneResult:
    """Delete the expired payloads of one ranking run; keep every digest; verify its lock after."""
    root = Path(run_dir)
    now = now or datetime.now(UTC)
    index, done = _index(root), _pruned(root)
    pruned: list[str] = []
    kept = 0
    log: AppendOnlyLog | None = None
    try:
        for rel, entry in sorted(index.items()):
            target = root / rel
            if rel in done and not target.exists():
                continue
            expires = datetime.fromisoformat(entry["expires_at"]) if entry["expires_at"] else None
            if expires is None or expires > now or not target.exists():
                kept += target.exists()
                continue
            pruned.append(rel)
            if dry_run:
                continue
            if log is None:
                log = AppendOnlyLog(root / PRUNE_LOG)
            log.append(
                {
                    "payload": rel,
                    "payload_sha256": entry["payload_sha256"],
                    "expired_at": entry["expires_at"],
                    "pruned_at": now.replace(microsecond=0).isoformat(),
                }
            )
            target.unlink()
    finally:
        if log is not None:
            log.close()
    locked = (root / LOCK_FILE).exists()
    return PruneResult(
        run_dir=str(root),
        pruned=pruned,
        kept=kept,
        already_pruned=len(done),
        lock_problems=verify_ranking_run(root) if locked else [],
        locked=locked,
    )


def find_runs(paths: list[str | Path]) -> list[Path]:
    """Ranking run directories (holding ``capture.json``) at or under ``paths``."""
    found: set[Path] = set()
    for p in paths:
        base = Path(p)
        if (base / CAPTURE_FILE).exists():
            found.add(base)
        elif base.is_dir():
            found |= {c.parent for c in base.rglob(CAPTURE_FILE)}
    return sorted(found)


# -- the lock -----------------------------------------------------------------------------------


class RankingLock(_Frozen):
    """``ranking_lock.json``: a ranking run's evidence, hashed so that pruning payloads keeps it
    verifiable."""

    schema_version: int = LOCK_SCHEMA_VERSION
    """Lock format version."""
    kind: Literal["workbench.ranking.lock"] = "workbench.ranking.lock"
    """Record type."""
    created_at: AwareDatetime
    """When the run was locked (UTC)."""
    outcome: str
    """The ranking gate's outcome."""
    files: dict[str, str]
    """sha256 of every file in the run directory except this lock and ``payloads/``."""
    payloads: dict[str, str]
    """sha256 of every payload file (``payloads/<sha>.json``), present or pruned."""
    capture: CaptureConfig | None
    """The run's capture config."""
    lock_sha256: str = ""
    """sha256 over the canonical JSON of this lock without this field."""

    def content_sha256(self) -> str:
        return sha256_json(self.model_dump(mode="json", exclude={"lock_sha256"}))


def _hashed_files(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): sha256_file(p)
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != LOCK_FILE and p.relative_to(root).parts[0] != PAYLOAD_DIR
    }


def lock_ranking_run(run_dir: str | Path, outcome: str, now: datetime | None = None) -> RankingLock:
    """Write ``ranking_lock.json`` (refused when the run is already locked)."""
    root = Path(run_dir)
    if (root / LOCK_FILE).exists():
        raise WorkbenchError(
            "already locked",
            [
                Problem(
                    location=str(root / LOCK_FILE),
                    code="run_locked",
                    message="the run is already locked",
                    fix="use a new --out directory for a new run",
                )
            ],
        )
    payloads = {rel: entry["payload_sha256"] for rel, entry in _index(root).items()}
    lock = RankingLock(
        created_at=(now or datetime.now(UTC)).replace(microsecond=0),
        outcome=outcome,
        files=_hashed_files(root),
        payloads=payloads,
        capture=read_capture_config(root),
    )
    sealed = lock.model_copy(update={"lock_sha256": lock.content_sha256()})
    atomic_write_text(
        root / LOCK_FILE,
        json.dumps(sealed.model_dump(mode="json"), indent=2, sort_keys=True) + "\n",
    )
    return sealed


def verify_ranking_run(run_dir: str | Path) -> list[Problem]:
    """Recompute a locked ranking run's hashes; payloads may be absent only when pruned after
    expiry."""
    root = Path(run_dir)
    path = root / LOCK_FILE
    if not path.exists():
        return [
            Problem(
                location=str(path),
                code="lock_missing",
                message="the run has no ranking_lock.json",
                fix="lock a run with workbench ranking run --lock",
            )
        ]
    try:
        lock = RankingLock.model_validate(read_json_file(path))
    except (ValueError, OSError) as exc:
        return [
            Problem(
                location=str(path),
                code="lock_unreadable",
                message=f"the lock cannot be read ({str(exc).splitlines()[0][:120]})",
                fix="restore ranking_lock.json; a lock is never edited",
            )
        ]
    problems: list[Problem] = []
    if lock.content_sha256() != lock.lock_sha256:
        problems.append(
            Problem(
                location=str(path),
                code="lock_changed",
                message="ranking_lock.json was modified: its content no longer matches lock_sha256",
                fix="restore the lock; a lock is never edited",
            )
        )
    actual = _hashed_files(root)
    for rel, digest in sorted(lock.files.items()):
        if rel not in actual:
            problems.append(
                Problem(
                    location=str(root / rel),
                    code="file_missing",
                    message="a locked file is missing",
                    fix="restore the file from the original run",
                )
            )
        elif actual[rel] != digest:
            problems.append(
                Problem(
                    location=str(root / rel),
                    code="file_changed",
                    message="the file changed after the run was locked",
                    fix="restore the original file; a new run goes in a new directory",
                )
            )
    for rel in sorted(set(actual) - set(lock.files)):
        problems.append(
            Problem(
                location=str(root / rel),
                code="file_added",
                message="a file was added after the run was locked",
                fix="remove it; locked runs are immutable",
            )
        )
    pruned = _pruned(root)
    present = (
        {p.relative_to(root).as_posix() for p in (root / PAYLOAD_DIR).glob("*.json")}
        if (root / PAYLOAD_DIR).is_dir()
        else set()
    )
    for rel, digest in sorted(lock.payloads.items()):
        target = root / rel
        if target.exists():
            if sha256_file(target) != digest:
                problems.append(
                    Problem(
                        location=str(target),
                        code="payload_changed",
                        message="the payload no longer matches its recorded sha256",
                        fix="restore the payload or let it be pruned; payloads are never edited",
                    )
                )
            continue
        row = pruned.get(rel)
        if row is None or row.get("payload_sha256") != digest:
            problems.append(
                Problem(
                    location=str(target),
                    code="payload_missing",
                    message="a payload is missing and the prune log does not record its deletion",
                    fix=(
                        "restore the payload; only `workbench prune` removes payloads, after their"
                        " expiry"
                    ),
                )
            )
        elif row.get("expired_at") is None or datetime.fromisoformat(
            row["pruned_at"]
        ) < datetime.fromisoformat(row["expired_at"]):
            problems.append(
                Problem(
                    location=str(target),
                    code="payload_pruned_early",
                    message="the prune log records a deletion before the payload's declared expiry",
                    fix="payloads are kept for their declared retention; restore it",
                )
            )
    for rel in sorted(present - set(lock.payloads)):
        problems.append(
            Problem(
                location=str(root / rel),
                code="file_added",
                message="a payload was added after the run was locked",
                fix="remove it; locked runs are immutable",
            )
        )
    return problems


def read_payload(run_dir: str | Path, rendered_request: Any) -> Any | None:
    """The payload a capture stub points to, while it is retained (None once pruned or for no stub).

    An inline (non-stub) request is returned as it is.
    """
    if not is_stub(rendered_request):
        return rendered_request
    path = Path(run_dir) / rendered_request["payload"]
    if not path.exists():
        return None
    return read_json_file(path)
