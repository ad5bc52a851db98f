"""Privacy mode for ranking runs: what of the evaluator-visible request is kept, and for how long.

:class:`CapturingJudge` stores a text-free capture stub per result and the payload under
``payloads/``; :func:`prune_run` deletes expired payloads (format: docs/formats.md).
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, TypeGuard

from pydantic import Field

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
from .._lock import (
    LOCK_FILE,
    PRUNE_LOG,
    Lock,
    Verification,
    check_report_file,
    lock_run,
    maybe_sha256,
    pruned_payloads,
    verify_lock,
)
from .._record import Record as _Frozen
from .._signing import Signer
from ..errors import Problem, refusal
from ._leakage import id_token

CAPTURE_FILE = "capture.json"
PAYLOAD_DIR = "payloads"
PAYLOAD_INDEX = f"{PAYLOAD_DIR}/index.jsonl"
REPORT_FILE = "ranking_report.json"
HTML_FILE = "report.html"
Excerpt = Literal["user_input", "context", "candidates"]


class CaptureConfig(_Frozen):
    """What a ranking run stores of each evaluator-visible request, and for how long."""

    mode: Literal["full", "digest_and_excerpts"] = "full"
    """``full`` (the whole request) or ``digest_and_excerpts`` (digests plus excerpts)."""
    excerpts: list[Excerpt] = Field(default_factory=list)
    """The excerpts ``digest_and_excerpts`` keeps: ``user_input``, ``context``, ``candidates``."""
    retention_days: int | None = Field(default=None, ge=0)
    """Days a payload is kept before ``workbench prune`` may delete it; None: no expiry declared."""
    declared_by: str = "default"
    """``policy <name@version>``, ``cli`` or ``default`` (not part of a policy file)."""


def norm(text: str) -> str:
    """``text`` with every run of whitespace one space, stripped."""
    return re.sub(r"\s+", " ", text).strip()


def _strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict | list):
        for value in obj.values() if isinstance(obj, dict) else obj:
            yield from _strings(value)


def request_text(request: Any) -> str:
    """Every string of a request, whitespace-normalised and joined."""
    return norm("\n".join(_strings(request)))


def occurrences(texts: dict[str, str], haystack: str) -> dict[str, int]:
    """How often each text occurs in ``haystack``, not counting hits inside a longer text."""
    raw = {key: haystack.count(t) if t else 0 for key, t in texts.items()}
    out = dict(raw)
    for key, t in texts.items():
        for other, u in texts.items():
            if other != key and t and len(u) > len(t) and t in u:
                out[key] -= u.count(t) * raw[other]
    return {k: max(0, v) for k, v in out.items()}


def request_evidence(
    request: Any, judge_input: Any, labels: dict[str, str] | None
) -> dict[str, Any]:
    """Digest-only completeness evidence of one rendered request (see the module docstring)."""
    text = request_text(request)
    user = norm(judge_input.user_input)
    context = [norm(t) for t in judge_input.context]
    cands = {c.label: norm(c.text) for c in judge_input.candidates}
    counts = occurrences(cands, text)
    fixture_text = "\n".join(
        [judge_input.user_input, *judge_input.context, *(c.text for c in judge_input.candidates)]
    )
    leaked = sorted(
        cid
        for cid in (labels or {}).values()
        if not id_token(cid).search(fixture_text) and id_token(cid).search(text)
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
    """A judge wrapper: the inner judge runs unchanged; the result keeps a capture stub."""

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
        """The planned request plus the capture config (part of the cache key)."""
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
        if self.config.mode == "full":
            return dataclasses.replace(verdict, rendered_request=stub)
        # the answer may quote candidate text the capture policy keeps out of the records
        return dataclasses.replace(
            verdict, rendered_request=stub, raw_response=None, raw_response_source="not_kept"
        )

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
        stub = {
            "capture": self.config.mode,
            "request_sha256": sha256_json(full),
            "payload": rel,
            "payload_sha256": payload_sha,
            "captured_at": captured.isoformat(),
            "expires_at": expires.isoformat() if expires else None,
            "evidence": evidence,
        }
        with self._lock:
            target = self.out / rel
            if not target.exists():
                atomic_write_text(target, canonical_json(payload))
            if self._index is None:
                self._index = AppendOnlyLog(self.out / PAYLOAD_INDEX)
            self._index.append(_index_row(stub))
        return stub

    async def aclose(self) -> None:
        if hasattr(self._inner, "aclose"):
            await self._inner.aclose()
        with self._lock:
            if self._index is not None:
                self._index.close()
                self._index = None


RUN_REGISTRY = "ranking_runs.jsonl"
"""In the verdict cache directory: where each ranking run's payloads live."""


def register_run(cache_root: str | Path, run_id: str, run_dir: str | Path) -> None:
    """Record where a ranking run's payloads live (append-only)."""
    with AppendOnlyLog(Path(cache_root) / RUN_REGISTRY) as log:
        log.append({"run_id": run_id, "run_dir": str(Path(run_dir).resolve())})


def adopt_cached_payloads(run_dir: str | Path, cache_root: str | Path) -> int:
    """Copy into ``run_dir`` the payloads of its cached results from the registered runs that
    produced them (when still there with the recorded sha256); return how many."""
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
            log.append({**_index_row(stub), "adopted_from": r.cached_from_run_id})
            known.add(stub["payload"])
            adopted += 1
    finally:
        if log is not None:
            log.close()
    return adopted


def _index_row(stub: dict[str, Any]) -> dict[str, Any]:
    keys = ("payload", "payload_sha256", "request_sha256", "captured_at", "expires_at")
    return {k: stub[k] for k in keys}


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
    if not path.exists():
        atomic_write_json(path, config.model_dump(mode="json"))
        return
    wanted = config.model_dump(exclude={"declared_by"})
    try:
        before: Any = CaptureConfig.model_validate(read_json_file(path))
        before = before.model_dump(exclude={"declared_by"})
    except (ValueError, OSError):
        before = "(unreadable)"
    if before != wanted:
        raise refusal(
            "capture changed",
            str(path),
            "capture_changed",
            f"the run directory was captured as {before}, this invocation asks for {wanted}",
            "use a new --out directory; one run keeps one capture mode and retention",
        )


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
    path = run_dir / PAYLOAD_INDEX
    rows = [loads_json(line) for _, line in iter_jsonl_lines(path)] if path.exists() else []
    sha: dict[str, str] = {}
    expiries: dict[str, list[str | None]] = {}
    for row in rows:
        sha.setdefault(row["payload"], row["payload_sha256"])
        expiries.setdefault(row["payload"], []).append(row.get("expires_at"))
    return {
        p: {"payload_sha256": sha[p], "expires_at": None if None in e else max(map(str, e))}
        for p, e in expiries.items()
    }


def prune_run(
    run_dir: str | Path, now: datetime | None = None, *, dry_run: bool = False
) -> PruneResult:
    """Delete the expired payloads of one ranking run; keep every digest; verify its lock after."""
    root = Path(run_dir)
    now = now or datetime.now(UTC)
    index, done = _index(root), pruned_payloads(root)
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


# -- the lock: the one lock format (workbench._lock), kind ``ranking`` -------------------------


def lock_ranking_run(
    run_dir: str | Path,
    outcome: str,
    now: datetime | None = None,
    *,
    signer: Signer | None = None,
    html: str | None = None,
) -> Lock:
    """Lock a ranking run (kind ``ranking``), payloads listed apart; ``html`` is written first."""
    root = Path(run_dir)
    report = _report_of(root)
    gate = report.get("gate") or {}
    if html is not None and not (root / LOCK_FILE).exists():
        atomic_write_text(root / HTML_FILE, html)
    return lock_run(
        root,
        kind="ranking",
        subject=str(report.get("fixtures") or root.name),
        candidate=str(report.get("judge") or "(no results)"),
        fingerprint=str(report.get("judge_fingerprint") or ""),
        outcome=outcome,
        blockers=list(gate.get("blockers") or []),
        evidence={
            name: maybe_sha256(root / file)
            for name, file in (
                ("report", REPORT_FILE),
                ("results", "results.jsonl"),
                ("capture", CAPTURE_FILE),
                ("payload_index", PAYLOAD_INDEX),
            )
        },
        payloads={rel: entry["payload_sha256"] for rel, entry in _index(root).items()},
        signer=signer,
        now=now,
    )


def _report_of(root: Path) -> dict[str, Any]:
    path = root / REPORT_FILE
    report = read_json_file(path) if path.is_file() else {}
    return report if isinstance(report, dict) else {}


def check_ranking_lock(root: Path, lock: Lock, result: Verification, gold: Any = None) -> None:
    """A locked run's ``ranking_report.json`` says the lock's outcome, judge and blockers."""
    if lock.evidence.get("report") is None:
        result.ok("outcome", "not checked: the run was locked without a ranking report")
        return
    try:
        report = _report_of(root)
    except (OSError, ValueError, RecursionError):
        report = {}
    gate = report.get("gate") if isinstance(report.get("gate"), dict) else None
    said = {
        "outcome": str(gate.get("outcome")) if gate is not None else "unknown",
        "judge_fingerprint": report.get("judge_fingerprint") or "",
        "blocker codes": [b.get("code") for b in (gate or {}).get("blockers") or []],
    }
    check_report_file(root, lock, result, REPORT_FILE, said)


RankingLock = Lock
"""A ranking run's lock is the one lock format (:class:`workbench._lock.Lock`, kind ``ranking``)."""


def verify_ranking_run(
    run_dir: str | Path, trusted: dict[bytes, str] | None = None
) -> list[Problem]:
    """Every problem :func:`workbench._lock.verify_lock` finds in a locked ranking run."""
    return verify_lock(run_dir, trusted=trusted).problems


def read_payload(run_dir: str | Path, rendered_request: Any) -> Any | None:
    """The payload a capture stub points to (None once pruned); an inline request as it is."""
    if not is_stub(rendered_request):
        return rendered_request
    path = Path(run_dir) / rendered_request["payload"]
    if not path.exists():
        return None
    return read_json_file(path)


def ranking_html(report: Any) -> str:
    """A locked ranking run's ``report.html`` (:func:`workbench.reports.render_document`)."""
    from ..reports import Section, outcome_section, rate_text, render_document, table_section

    gate = report.gate
    outcome = gate.outcome if gate else "unknown"
    facts = [
        ("judge", report.judge or "(no results)"),
        ("judge fingerprint", report.judge_fingerprint or "-"),
        ("fixtures", f"{report.fixtures} (sha256 {report.fixtures_sha256[:12]})"),
        ("fixtures frozen", "yes" if report.fixtures_frozen else "no"),
        ("cases", report.cases),
        ("allowed_values (candidate count)", _counts(report.allowed_values)),
        ("attempts", f"{report.valid_attempts} valid of {report.attempts}"),
        ("gate", f"policy {gate.policy} ({gate.mode}): {gate.note}" if gate else "-"),
    ]
    slices = [
        [s.slice, s.cases, s.must_win_cases, rate_text(s.agreement)]
        + [rate_text(s.reversed_cases), rate_text(s.drift_cases), rate_text(s.position_stable)]
        for s in report.slices
    ]
    failures = [
        [f.case, f.gate, f.diagnosis, f.owner, f.allowed_values, f.reproduce]
        for f in report.failures
    ]
    title = f"Ranking report: {report.judge or '(no results)'} on {report.fixtures}"
    return render_document(
        title,
        [
            outcome_section(outcome, gate.blockers if gate else [], candidate=str(report.judge)),
            Section("facts", {"title": "Ranking run", "rows": facts}),
            table_section(
                "Per slice",
                ["slice", "cases", "must-win", "agreement", "reversed", "drift", "stable"],
                slices,
            ),
            table_section(
                "Candidate diffs (changed candidates, for the application owner)",
                ["case", "field", "change", "diff (judged -> frozen fixture)"],
                [
                    [f.case, d.field, d.change, line]
                    for f in report.failures
                    for d in f.candidate_diff
                    for line in (d.diff.splitlines() or ["(the judged text was not kept)"])
                ],
                empty="No changed candidate.",
            ),
            table_section(
                "Context sensitivity (related fixtures: A beats B alone, loses when C is added)",
                ["fixtures", "pair", "added", "alone", "together"],
                [
                    [
                        f"{c.smaller} / {c.larger}",
                        f"{c.winner_alone} > {c.loser_alone}",
                        ", ".join(c.added),
                        rate_text(c.alone),
                        rate_text(c.together),
                    ]
                    for c in report.context_sensitivity
                ],
                empty="No pair flips between related fixtures.",
            ),
            table_section(
                "Failure artifacts (failures/<case>.json)",
                ["case", "gate", "diagnosis", "owner", "allowed_values", "reproduce"],
                failures,
                empty="No failing case.",
            ),
        ],
    )


def _counts(allowed: dict[str, int]) -> str:
    """``allowed_values`` per fixture in one line: how many fixtures rank how many candidates."""
    by_count = Counter(allowed.values())
    return ", ".join(f"{n} fixture(s) with {k}" for k, n in sorted(by_count.items())) or "-"
