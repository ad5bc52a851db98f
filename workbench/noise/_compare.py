"""Baseline versus candidate on the same frozen pairs: per-pair deltas, per-slice intervals,
warning trends (never blockers).

A baseline is refused (exit 2, every reason) unless both sides passed their controls, hold the
same candidate pairs (:meth:`~workbench.noise.NoisePair.frame_sha256`) in the same modes, and
share one scoring configuration (:func:`scoring_fingerprint`, ``baseline_scorer_changed``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from .._io import read_json_file, sha256_json
from .._load import Problems
from ..errors import Problem, WorkbenchError, problem
from ..results import JudgeIdentity
from ._analysis import NOISE_REPORT_FILE, NoiseReport, PairRow
from ._pairs import NoiseSuite
from ._trends import NoiseComparison, PairDelta, SliceDelta, Trend

_EPS = 1e-12


def check_baseline_suite(
    candidate: NoiseSuite,
    baseline: NoiseSuite,
    *,
    partition: str | None = None,
    sentinels_only: bool = False,
) -> list[Problem]:
    """Why a baseline suite cannot be compared with the candidate suite (empty when it can)."""
    from ._analysis import selected_candidates

    mine = {p.pair_id: p for p in selected_candidates(candidate, partition, sentinels_only)}
    theirs = {p.pair_id: p for p in selected_candidates(baseline, partition, sentinels_only)}
    return _pair_problems(
        baseline.source or baseline.label,
        {k: v.frame_sha256() for k, v in mine.items()},
        {k: v.frame_sha256() for k, v in theirs.items()},
        {k: v.mode for k, v in mine.items()},
        {k: v.mode for k, v in theirs.items()},
    )


NOT_SCORING = (
    "name",
    "version",
    "params.spec_sha256",
    "params.spec.description",
    "params.spec.pricing",
    "params.spec.endpoint.base_url",
    "params.spec.endpoint.base_url_env",
    "params.spec.endpoint.api_key_env",
    "params.spec.endpoint.timeout_s",
    "params.spec.endpoint.max_retries",
)
"""Judge-identity paths a baseline may differ in: what names the evaluator, prices its calls or
says where it is served and how a call is retried. Everything else decides a score."""
_WHAT = {
    "kind": "judge kind",
    "model": "evaluator model",
    "ragas_version": "Ragas version",
    "prompt_sha256": "scoring prompt (metric source hash)",
}


def _label(path: str) -> str:
    for prefix, words in (
        ("params.spec.params.", "parameter "),
        ("params.spec.endpoint.", "endpoint "),
        ("params.spec.", "spec field "),
        ("params.", ""),
    ):
        if path.startswith(prefix):
            return words + path[len(prefix) :]
    return _WHAT.get(path, path)


def scoring_configuration(identity: JudgeIdentity) -> dict[str, Any]:
    """The judge identity flattened to ``{path: value}`` without :data:`NOT_SCORING`: what decides
    a score."""
    flat: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict) and value:
            for key, inner in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), inner)
        else:
            flat[prefix] = value

    walk("", identity.model_dump(mode="json"))
    return {
        k: v
        for k, v in flat.items()
        if k not in NOT_SCORING and not any(k.startswith(f"{d}.") for d in NOT_SCORING)
    }


def scoring_fingerprint(identity: JudgeIdentity) -> str:
    """sha256 of :func:`scoring_configuration`: equal exactly when two judges score alike."""
    return sha256_json(scoring_configuration(identity))


def _scorer_problems(
    loc: str, mine: JudgeIdentity | None, theirs: JudgeIdentity | None
) -> list[Problem]:
    """``baseline_scorer_changed``, one per differing field, when the scoring fingerprints
    differ."""
    problems = Problems()
    if mine is None or theirs is None:
        message = "a side has no results, so no evaluator identity"
        problems.add(loc, "baseline_incompatible", message, "compare two scored runs")
        return problems
    a, b = scoring_configuration(mine), scoring_configuration(theirs)
    for k in (
        sorted(set(a) | set(b)) if scoring_fingerprint(mine) != scoring_fingerprint(theirs) else []
    ):
        if a.get(k) != b.get(k):
            problems.add(
                loc,
                "baseline_scorer_changed",
                f"the scoring configuration differs: the {_label(k)} differs: baseline"
                f" {b.get(k)!r}, candidate {a.get(k)!r}",
                "score both application versions with the same evaluator configuration (pass the"
                " baseline suite as SPEC to re-score it now with this candidate spec), or treat the"
                " result as a calibration study; only the evaluator's name, version, description,"
                " pricing and where it is served may differ",
            )
    return problems


def check_baseline_report(
    suite: NoiseSuite,
    identity: JudgeIdentity | None,
    baseline: NoiseReport,
    *,
    baseline_source: str,
    partition: str | None = None,
    sentinels_only: bool = False,
) -> list[Problem]:
    """Why an earlier run's report cannot be the baseline of ``suite`` scored by ``identity``
    (checked before any call)."""
    from ._analysis import selected_candidates

    problems = _controls_problems(baseline_source, "baseline", baseline)
    problems += _scorer_problems(baseline_source, identity, baseline.judge)
    mine = selected_candidates(suite, partition, sentinels_only)
    problems += _pair_problems(
        baseline_source,
        {p.pair_id: p.frame_sha256() for p in mine},
        baseline.pair_keys,
        {p.pair_id: p.mode for p in mine},
        {r.pair_id: r.mode for r in baseline.pairs},
    )
    return problems


def _controls_problems(loc: str, side: str, report: NoiseReport) -> list[Problem]:
    if report.candidates_interpreted:
        return []
    message = f"the {side}'s controls did not pass: its candidate scores mean nothing"
    fix = f"fix the {side} run first (its controls must separate)"
    return [problem(loc, "baseline_incompatible", message, fix)]


def _pair_problems(
    loc: str,
    mine: dict[str, str],
    theirs: dict[str, str],
    my_modes: dict[str, str],
    their_modes: dict[str, str],
) -> list[Problem]:
    """Not the same frozen pairs: pairs on one side only, another mode, another frame."""
    problems = Problems()
    only = [
        f"only the {side} has {', '.join(ids[:8])}"
        for side, ids in (
            ("candidate", sorted(set(mine) - set(theirs))),
            ("baseline", sorted(set(theirs) - set(mine))),
        )
        if ids
    ]
    if only:
        message = "not the same pairs: " + "; ".join(only)
        fix = "compare on the same frozen pairs (the same suite pairs, partition and selection)"
        problems.add(loc, "baseline_incompatible", message, fix)
    for pid in sorted(set(mine) & set(theirs)):
        if my_modes.get(pid) != their_modes.get(pid):
            message = (
                f"pair {pid}: mode {their_modes.get(pid)} in the baseline, {my_modes.get(pid)} in"
                " the candidate"
            )
            fix = "results of different NoiseSensitivity modes are not comparable"
            problems.add(loc, "baseline_incompatible", message, fix, case_id=pid)
        elif mine[pid] != theirs[pid]:
            problems.add(
                loc,
                "baseline_incompatible",
                f"pair {pid}: the question, reference (or its version), role, slice or partition"
                " differs",
                "a baseline holds the frozen pairs constant; only responses (and contexts) may"
                " differ",
                case_id=pid,
            )
    return problems


def load_baseline_report(path: str | Path) -> NoiseReport:
    """The :class:`NoiseReport` of an earlier run: a run directory or a ``noise_report.json``."""
    path = Path(path)
    file = path / NOISE_REPORT_FILE if path.is_dir() else path
    problems = Problems()
    if not file.is_file():
        fix = (
            "give a pair-suite YAML (scored now) or the directory of an earlier `workbench noise`"
            " run"
        )
        problems.add(str(path), "baseline_missing", f"no {NOISE_REPORT_FILE} here", fix)
        problems.fail("no baseline report")
    try:
        return NoiseReport.model_validate(read_json_file(file))  # bounded and strict
    except (OSError, ValueError) as exc:
        message = f"not a noise report ({str(exc).splitlines()[0]})"
        fix = "point at the noise_report.json a `workbench noise` run wrote"
        problems.add(str(file), "baseline_invalid", message, fix)
        problems.fail("invalid baseline report")


def _counted_noisy(row: PairRow | None) -> float | None:
    return row.noisy_score if row is not None and row.counted else None


def compare_reports(
    candidate: NoiseReport,
    baseline: NoiseReport,
    *,
    warn_delta: float = 0.0,
    baseline_source: str = "baseline",
    companions: dict[str, str] | None = None,
) -> NoiseComparison:
    """Compare two reports of the same frozen pairs; refuse (``WorkbenchError``, every reason) when
    incompatible. ``companions``: companion metric -> direction (the bought-by-refusing trend)."""
    problems = _report_problems(candidate, baseline, baseline_source)
    if problems:
        raise WorkbenchError(
            f"refusing the baseline comparison: {len(problems)} reason(s)", problems
        )
    deltas, warnings = _pair_deltas(candidate, baseline, warn_delta, companions or {})
    slices, slice_warnings = _slice_deltas(candidate, deltas, warn_delta)
    a = candidate.judge
    return NoiseComparison(
        baseline=baseline.suite,
        baseline_source=baseline_source,
        candidate=candidate.suite,
        evaluator_model=a.model if a else None,
        ragas_version=a.ragas_version if a else None,
        prompt_sha256=a.prompt_sha256 if a else None,
        scoring_fingerprint=scoring_fingerprint(a) if a else None,
        pairs=deltas,
        slices=slices,
        warnings=[*warnings, *slice_warnings],
    )


def _report_problems(candidate: NoiseReport, baseline: NoiseReport, loc: str) -> list[Problem]:
    problems = [
        *_controls_problems(loc, "baseline", baseline),
        *_controls_problems(candidate.suite, "candidate", candidate),
    ]
    problems += _scorer_problems(loc, candidate.judge, baseline.judge)
    problems += _pair_problems(
        loc,
        candidate.pair_keys,
        baseline.pair_keys,
        {r.pair_id: r.mode for r in candidate.pairs},
        {r.pair_id: r.mode for r in baseline.pairs},
    )
    return problems


def _first_change(
    candidate: NoiseReport, baseline: NoiseReport, pid: str, same_score: bool
) -> Literal["retrieval", "response", "evaluator", "none"] | None:
    """The first boundary that differs, in debugging order."""
    a_h, b_h = candidate.pair_hashes.get(pid), baseline.pair_hashes.get(pid)
    if not a_h or not b_h:
        return None
    if a_h.get("retrieval") != b_h.get("retrieval"):
        return "retrieval"
    if a_h.get("response") != b_h.get("response"):
        return "response"
    return "none" if same_score else "evaluator"


def _pair_deltas(
    candidate: NoiseReport,
    baseline: NoiseReport,
    warn_delta: float,
    companions: dict[str, str],
) -> tuple[list[PairDelta], list[Trend]]:
    base_rows = {r.pair_id: r for r in baseline.pairs}
    deltas: list[PairDelta] = []
    warnings: list[Trend] = []
    for row in candidate.pairs:
        old = base_rows.get(row.pair_id)
        delta = _pair_delta(candidate, baseline, row, old)
        deltas.append(delta)
        warnings += _worse(row, delta, warn_delta)
        worse = _bought_by_refusing(row, old, companions) if old is not None else None
        if worse:
            where = {"slice": row.slice, "pair_id": row.pair_id}
            warnings.append(
                Trend(kind="bought_by_refusing", **where, message=f"{row.pair_id}: {worse}")
            )
    return deltas, warnings


def _pair_delta(
    candidate: NoiseReport, baseline: NoiseReport, row: PairRow, old: PairRow | None
) -> PairDelta:
    bn, cn = _counted_noisy(old), _counted_noisy(row)
    same_clean = old is not None and old.clean_score == row.clean_score
    fields: dict[str, Any] = {
        "pair_id": row.pair_id,
        "slice": row.slice,
        "mode": row.mode,
        "baseline_clean": old.clean_score if old else None,
        "candidate_clean": row.clean_score,
    }
    if bn is None or cn is None:
        why = "; ".join(
            f"{side}: {r.status if r else 'absent'}"
            for side, r, v in (("baseline", old, bn), ("candidate", row, cn))
            if v is None
        )
        same = same_clean and old is not None and old.noisy_score == row.noisy_score
        return PairDelta(
            **fields,
            baseline_noisy=old.noisy_score if old else None,
            candidate_noisy=row.noisy_score,
            noisy_delta=None,
            pair_delta_change=None,
            status="not_comparable",
            detail=f"not comparable ({why})",
            first_change=_first_change(candidate, baseline, row.pair_id, same),
        )
    change = (
        None if row.delta is None or old is None or old.delta is None else row.delta - old.delta
    )
    return PairDelta(
        **fields,
        baseline_noisy=bn,
        candidate_noisy=cn,
        noisy_delta=cn - bn,
        pair_delta_change=change,
        status="compared",
        detail=f"noisy {bn:.3f} -> {cn:.3f}",
        first_change=_first_change(
            candidate, baseline, row.pair_id, abs(cn - bn) <= _EPS and same_clean
        ),
    )


def _worse(row: PairRow, delta: PairDelta, warn_delta: float) -> list[Trend]:
    d, bn, cn = delta.noisy_delta, delta.baseline_noisy, delta.candidate_noisy
    if d is None or bn is None or cn is None or d <= warn_delta + _EPS:
        return []
    message = (
        f"{row.pair_id}: noisy score rose {bn:.3f} -> {cn:.3f} (+{d:.3f}, above warn_delta"
        f" {warn_delta:g})"
        + (" while still inside policy" if row.within_limit is not False else "")
    )
    return [Trend(kind="pair_worse", slice=row.slice, pair_id=row.pair_id, message=message)]


def _slice_deltas(
    candidate: NoiseReport, deltas: list[PairDelta], warn_delta: float
) -> tuple[list[SliceDelta], list[Trend]]:
    slices: list[SliceDelta] = []
    warnings: list[Trend] = []
    for name in dict.fromkeys(r.slice for r in candidate.pairs):
        mine = [d for d in deltas if d.slice == name and d.noisy_delta is not None]
        row = _slice_delta(name, mine)
        slices.append(row)
        if row.mean_delta is not None and row.mean_delta > warn_delta + _EPS:
            interval = (
                f" (95% {row.ci95_low:.3f} to {row.ci95_high:.3f})"
                if row.ci95_low is not None and row.ci95_high is not None
                else " (one pair: no interval)"
            )
            warnings.append(
                Trend(
                    kind="slice_worse",
                    slice=name,
                    pair_id=None,
                    message=(
                        f"slice {name}: mean noisy score +{row.mean_delta:.3f} over {row.n}"
                        f" pair(s){interval}"
                    ),
                )
            )
    return slices, warnings


def _slice_delta(name: str, mine: list[PairDelta]) -> SliceDelta:
    n = len(mine)
    diffs = [d.noisy_delta for d in mine if d.noisy_delta is not None]
    mean = sum(diffs) / n if n else None
    low = high = None
    if mean is not None and n >= 2:
        sd = math.sqrt(sum((x - mean) ** 2 for x in diffs) / (n - 1))
        from scipy.stats import t

        half = float(t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
        low, high = mean - half, mean + half
    return SliceDelta(
        slice=name,
        n=n,
        baseline_mean=sum(d.baseline_noisy or 0.0 for d in mine) / n if n else None,
        candidate_mean=sum(d.candidate_noisy or 0.0 for d in mine) / n if n else None,
        mean_delta=mean,
        ci95_low=low,
        ci95_high=high,
    )


def _bought_by_refusing(row: PairRow, old: PairRow, companions: dict[str, str]) -> str | None:
    """Why the candidate's noise score looks better only because it says less, or None."""
    improved = (
        row.noisy_score is not None
        and old.noisy_score is not None
        and row.noisy_score < old.noisy_score - _EPS
    ) or ("noisy" in row.abstained and "noisy" not in old.abstained)
    if not improved:
        return None
    if "noisy" in row.abstained and "noisy" not in old.abstained:
        return (
            "the noisy member now abstains where the baseline answered: a lower noise score bought"
            " by refusing"
        )
    for metric, direction in companions.items():
        new, was = (
            row.companions.get(metric, {}).get("noisy"),
            old.companions.get(metric, {}).get("noisy"),
        )
        if new is None or was is None:
            continue
        worse = new < was - _EPS if direction == "higher_is_better" else new > was + _EPS
        if worse:
            return (
                f"noise score improved ({old.noisy_score} -> {row.noisy_score}) while {metric} got"
                f" worse ({was:g} -> {new:g}): a lower noise score bought by saying less"
            )
    return None


def with_baseline(
    report: NoiseReport,
    baseline: NoiseReport,
    *,
    warn_delta: float = 0.0,
    baseline_source: str = "baseline",
    companions: dict[str, str] | None = None,
) -> NoiseReport:
    """``report`` with its baseline comparison and warning trends (the outcome unchanged)."""
    cmp = compare_reports(
        report,
        baseline,
        warn_delta=warn_delta,
        baseline_source=baseline_source,
        companions=companions,
    )
    return report.model_copy(update={"comparison": cmp, "warnings": list(cmp.warnings)})
