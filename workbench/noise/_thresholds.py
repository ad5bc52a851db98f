"""Slice limits derived from evidence: ``workbench noise thresholds`` proposes each slice's
``max_score`` (and ``max_delta``) from a baseline run's distribution and records where each
came from (:class:`ThresholdEvidence` in the limit's ``derived_from``).

The proposal is ``min(1, q + margin)`` where ``q`` is the ``quantile`` (an observed value:
numpy's ``higher`` method) of the slice's counted baseline pairs: noisy scores for
``max_score``, pair deltas (noisy - clean) for ``max_delta``. A baseline whose controls did not
pass, or a slice with no counted pair, proposes nothing: such a limit is set by hand, with its
rationale. Loading a suite checks that every derived limit still equals what its data gives
(``threshold_evidence_mismatch``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from .._io import sha256_file
from .._load import Problems
from ._analysis import NoiseReport, PairRow
from ._evidence import ThresholdEvidence
from ._pairs import NoiseSuite, SliceLimit

Limit = Literal["max_score", "max_delta"]
_VALUE = {"max_score": "noisy_score", "max_delta": "delta"}


def _evidence(
    rows: list[PairRow], limit: Limit, source: tuple[str, str, NoiseReport], q: float, margin: float
) -> ThresholdEvidence | None:
    import numpy as np

    values = [v for r in rows if r.counted and (v := getattr(r, _VALUE[limit])) is not None]
    if not values:
        return None
    path, digest, report = source
    return ThresholdEvidence(
        report=path,
        report_sha256=digest,
        suite=report.suite,
        judge_fingerprint=report.judge_fingerprint or "",
        limit=limit,
        quantile=q,
        margin=margin,
        n=len(values),
        value=round(float(np.quantile(values, q, method="higher")), 6),
    )


def propose_thresholds(
    suite: NoiseSuite,
    report: NoiseReport,
    report_path: str | Path,
    *,
    quantile: float = 0.95,
    margin: float = 0.0,
    limits: tuple[Limit, ...] = ("max_score",),
) -> tuple[dict[str, SliceLimit], list[str]]:
    """Each slice of ``suite`` with the proposed limits and their evidence, and the slices left
    as they are (with why)."""
    problems = Problems()
    if not report.candidates_interpreted:
        message = "the baseline's controls did not pass: its candidate scores mean nothing"
        fix = "derive limits from a baseline run whose controls passed"
        problems.add(str(report_path), "baseline_uninterpreted", message, fix)
    if not 0.0 <= quantile <= 1.0 or margin < 0:
        message = f"quantile {quantile} and margin {margin}"
        fix = "give a quantile between 0 and 1 and a margin of 0 or more"
        problems.add("--quantile", "threshold_args_invalid", message, fix)
    problems.raise_if_any("cannot derive thresholds")
    file = Path(report_path)
    file = file / "noise_report.json" if file.is_dir() else file
    source = (str(report_path), sha256_file(file), report)
    proposed, kept = {}, []
    for name, current in suite.slices.items():
        rows = [r for r in report.pairs if r.slice == name]
        found = [e for lim in limits if (e := _evidence(rows, lim, source, quantile, margin))]
        if not found:
            kept.append(f"{name}: no counted baseline pair; its limit stays as written")
            proposed[name] = current
            continue
        update: dict[str, object] = {e.limit: e.proposed for e in found}
        proposed[name] = current.model_copy(update={**update, "derived_from": found})
    return proposed, kept
