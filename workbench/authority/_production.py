"""Production sampling under authority: humans inspect every abstention, error and missing
verdict and a declared share of the judge's clear verdicts (sampled agreements), blinded, through
the gold's annotation queue; once adjudicated, a case where the humans disagree with the judge is
a finding, and a critical false pass withdraws automatic authority (seed 001: "auto-route clear
passes and failures while humans inspect abstentions and sampled agreements"; "if production
disagreement sampling finds a new critical false pass, disable automatic authority")."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .._io import read_jsonl_records
from ..annotation import Annotations
from ..errors import WorkbenchError, refusal
from ..gold import load_dataset
from ..policy import Policy
from ..results import read_results
from ._commands import demote
from ._record import AuthorityEntry

SAMPLE_KEY = "production_sample"
"""The metadata key of a sampled case (never shown to reviewers: metadata is blinded)."""


def _draw(seed: int, case_id: str) -> float:
    digest = hashlib.sha256(f"{seed}:{case_id}".encode()).hexdigest()
    return int(digest[:12], 16) / float(16**12)


def sample_production(
    gold: str | Path,
    policy: Policy,
    judge: str,
    results: str | Path,
    cases: str | Path,
    *,
    reviewers: Sequence[str],
    assigned_by: str,
    seed: int = 0,
    per_case: int = 2,
    now: datetime | None = None,
) -> Counter[str]:
    """Queue for review every production case of ``judge`` without a clear verdict and the
    policy's ``sample_agreements`` share of the rest (drawn by ``seed``); cases go to the
    calibration partition of a future release, never the held-out scorecard. Returns the count
    queued per reason."""
    share = policy.sample_agreements
    if share is None:
        raise refusal(
            "nothing sampled",
            policy.label,
            "sample_share_undeclared",
            "the policy declares no share of agreements for human review",
            "add sample_agreements: <share, e.g. 0.05> to the policy (a new version)",
        )
    queue = Annotations(gold)
    verdicts: dict[str, tuple[str | None, bool]] = {}
    for line in read_results(results):
        r = line.result
        label = f"{r.judge.name}@{r.judge.version}"
        if label != judge:
            raise refusal(
                "nothing sampled",
                f"{results}:{line.line}",
                "judge_mismatch",
                f"the results are of {label}, not {judge}",
                "give the judge's production results",
            )
        verdicts[r.case_id] = (r.value, r.error is not None)
    chosen, reasons = [], Counter[str]()
    for record in read_jsonl_records(cases):
        case_id = str(record.get("case_id"))
        value, failed = verdicts.get(case_id, (None, False))
        if case_id not in verdicts:
            reason = "missing"
        elif failed or value is None:
            reason = "evaluator_error"
        elif value in queue.rubric.abstain_labels:
            reason = "abstention"
        elif _draw(seed, case_id) < share:
            reason = "sampled_agreement"
        else:
            continue
        sample = {"judge": judge, "verdict": value, "reason": reason, "share": share, "seed": seed}
        metadata: dict[str, Any] = {**(record.get("metadata") or {}), SAMPLE_KEY: sample}
        chosen.append({**record, "partition": "calibration", "metadata": metadata})
        reasons[reason] += 1
    if chosen:
        queue.queue(
            chosen,
            reviewers,
            assigned_by=assigned_by,
            per_case=per_case,
            source=str(cases),
            now=now,
        )
    return reasons


@dataclass(frozen=True)
class Finding:
    """An adjudicated production case where the humans and the judge disagree."""

    case_id: str
    slice: str
    risk: str | None
    judge_verdict: str
    human_label: str
    kind: str
    """``false_pass`` or ``false_fail`` (the rubric's pass/fail view)."""


def production_findings(gold: str | Path, judge: str) -> list[Finding]:
    """The adjudicated sampled cases of ``judge`` whose gold label the judge got wrong."""
    dataset = load_dataset(gold)
    rubric, out = dataset.rubric, []
    for case in dataset.cases.values():
        sample = case.metadata.get(SAMPLE_KEY)
        if not isinstance(sample, dict) or sample.get("judge") != judge:
            continue
        said, human = sample.get("verdict"), case.gold_label
        if said not in rubric.labels or human not in rubric.labels:
            continue
        judged, truth = rubric.pass_fail(said), rubric.pass_fail(human)
        kind = {"passfail": "false_pass", "failpass": "false_fail"}.get(f"{judged}{truth}")
        if kind is not None:
            risk = rubric.risk_of(case.slice)
            out.append(Finding(case.case_id, case.slice, risk, said, human, kind))
    return out


def withdraw_on_critical(
    gold: str | Path, judge: str, findings: Sequence[Finding]
) -> AuthorityEntry | None:
    """Demote ``judge`` to advisory when ``findings`` hold a critical false pass (the evidence
    stays: findings are gold cases); None when there is none or it holds advisory or less."""
    critical = sorted(
        f.case_id for f in findings if f.kind == "false_pass" and f.risk == "critical"
    )
    if not critical:
        return None
    reason = f"production sampling found critical false pass(es): {', '.join(critical)}"
    try:
        entry, _problems = demote(gold, judge, reason=reason, to="advisory")
    except WorkbenchError as exc:
        if {p.code for p in exc.problems} <= {"not_lower", "judge_unknown"}:
            return None
        raise
    return entry
