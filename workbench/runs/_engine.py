"""The run engine: execute a judge candidate over one partition of a gold dataset.

Each attempt is appended to ``results.jsonl`` (flushed and fsynced per record) in the
judge-result contract. A re-run of the same command resumes: cases already judged are not
called again.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from .._io import AppendOnlyLog, atomic_write_json, sha256_json
from ..errors import Problem, WorkbenchError
from ..gold import GoldCase, GoldDataset, Partition
from ..judges import Judge, JudgeInput
from ..results import JudgeResult
from ._manifest import ManifestCase, RunManifest, freeze_manifest

RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "run.json"


class RunSummary(BaseModel):
    """How a run ended. ``incomplete`` is never a pass."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    run_id: str
    status: Literal["complete", "incomplete"]
    judge: str
    judge_fingerprint: str
    partition: str
    planned: int
    """Case x repeat pairs in the manifest."""
    verdicts: int
    errors: int
    errors_by_kind: dict[str, int]
    calls: int
    """Judge calls made by this invocation."""
    resumed: int
    """Pairs already judged by an earlier invocation and not called again."""
    cost_usd: float
    tokens_in: int
    tokens_out: int
    unrun: list[str]
    """``case_id#repeat`` pairs with no result."""
    results_path: str


def _existing(path: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """Last recorded attempt per (case_id, repeat) in an existing results file."""
    done: dict[tuple[str, int], dict[str, Any]] = {}
    if not path.exists():
        return done
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            key = (row["case_id"], row.get("repeat", 0))
            if key not in done or row["attempt"] > done[key]["attempt"]:
                done[key] = row
    return done


async def run_candidate(
    judge: Judge,
    dataset: GoldDataset,
    partition: str | Partition,
    out_dir: str | Path,
    *,
    concurrency: int = 8,
    repeats: int = 1,
    progress: bool = True,
) -> RunSummary:
    """Run ``judge`` on every case of ``partition``; resumable; usable with ``await`` in notebooks."""
    part = Partition(partition).value
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cases: list[GoldCase] = dataset.partition(part)
    if not cases:
        raise WorkbenchError("nothing to run", [Problem(location=str(dataset.gold_path), code="empty_partition", message=f"partition {part!r} has no cases", fix="choose a partition that has cases")])
    fingerprint = judge.identity.fingerprint()
    manifest, _ = freeze_manifest(out, judge.identity, fingerprint, dataset.sha256, part, repeats, [ManifestCase(case_id=c.case_id, response_hash=c.response_hash) for c in cases])
    results_path = out / RESULTS_FILE
    log = AppendOnlyLog(results_path)
    done = _existing(results_path)
    todo = [(c, r) for c in cases for r in range(repeats) if (c.case_id, r) not in done]
    resumed = len(cases) * repeats - len(todo)
    counters: Counter[str] = Counter()
    semaphore = asyncio.Semaphore(max(1, concurrency))
    bar = _progress(len(cases) * repeats, resumed, judge.spec.label, progress)

    async def one(case: GoldCase, repeat: int) -> None:
        judge_input = JudgeInput.from_case(case)
        request = judge.render(judge_input)
        async with semaphore:
            started = datetime.now(UTC)
            t0 = time.perf_counter()
            verdict = await judge.evaluate(judge_input)
            latency = time.perf_counter() - t0
        sent = verdict.rendered_request if verdict.rendered_request is not None else request
        cost = judge.spec.pricing.cost(verdict.tokens_in, verdict.tokens_out)
        result = JudgeResult(
            case_id=case.case_id,
            response_hash=case.response_hash,
            value=verdict.value,
            reason=verdict.reason,
            judge=judge.identity,
            judge_fingerprint=fingerprint,
            run_id=manifest.run_id,
            partition=part,
            started_at=started,
            latency_s=latency,
            tokens_in=verdict.tokens_in,
            tokens_out=verdict.tokens_out,
            cost_usd=cost,
            error=verdict.error,
            attempt=1,
            repeat=repeat,
            rendered_request_sha256=sha256_json(sent),
            rendered_request=sent,
        )
        log.append(result.model_dump(mode="json"))
        counters["calls"] += 1
        counters["error" if verdict.error else "verdict"] += 1
        if bar is not None:
            bar.update(1)
            bar.set_postfix(errors=counters["error"], refresh=False)

    try:
        await asyncio.gather(*(one(c, r) for c, r in todo))
    finally:
        log.close()
        if bar is not None:
            bar.close()
    return _summarize(manifest, judge, results_path, counters["calls"], resumed, out)


def _summarize(manifest: RunManifest, judge: Judge, results_path: Path, calls: int, resumed: int, out: Path) -> RunSummary:
    final = _existing(results_path)
    kinds = Counter(row["error"]["kind"] for row in final.values() if row.get("error"))
    unrun = [f"{c.case_id}#{r}" for c in manifest.cases for r in range(manifest.repeats) if (c.case_id, r) not in final]
    rows = list(final.values())
    summary = RunSummary(
        run_id=manifest.run_id,
        status="incomplete" if unrun else "complete",
        judge=judge.spec.label,
        judge_fingerprint=manifest.judge_fingerprint,
        partition=manifest.partition,
        planned=len(manifest.cases) * manifest.repeats,
        verdicts=sum(1 for row in rows if row.get("error") is None),
        errors=sum(kinds.values()),
        errors_by_kind=dict(kinds),
        calls=calls,
        resumed=resumed,
        cost_usd=sum(row.get("cost_usd") or 0.0 for row in rows),
        tokens_in=sum(row.get("tokens_in") or 0 for row in rows),
        tokens_out=sum(row.get("tokens_out") or 0 for row in rows),
        unrun=unrun,
        results_path=str(results_path),
    )
    atomic_write_json(out / SUMMARY_FILE, summary.model_dump(mode="json"))
    return summary


def _progress(total: int, initial: int, label: str, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=label, unit="case")


def run_candidate_sync(*args: Any, **kwargs: Any) -> RunSummary:
    """:func:`run_candidate` for scripts and the CLI (not for running event loops)."""
    return asyncio.run(run_candidate(*args, **kwargs))
