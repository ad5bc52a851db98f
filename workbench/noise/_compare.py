"""Baseline versus candidate on the same frozen pairs: per-pair deltas, per-slice intervals and
warning trends (never blockers). A baseline is refused (every reason) unless both sides passed
their controls, hold the same candidate pairs in the same modes and share one scoring
configuration (:func:`scoring_fingerprint`)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from operator import attrgetter
from pathlib import Path
from typing import Any, Literal, cast

from .._io import read_json_file, sha256_json
from .._load import Problems
from ..errors import Problem, WorkbenchError
from ..results import JudgeIdentity
from ._analysis import _EPS, NOISE_REPORT_FILE, NoiseReport, PairRow, _worse, selected_candidates
from ._evidence import COMPONENTS, Component
from ._pairs import NoisePair, NoiseSuite
from ._trends import NoiseComparison, PairDelta, SliceDelta, Trend

_Keys = dict[str, tuple[str | None, str]]
"""Pair id -> (mode, :meth:`NoisePair.frame_sha256`): what both sides of a comparison share."""


def _pair_keys(pairs: Iterable[NoisePair]) -> _Keys:
    return {p.pair_id: (p.mode, p.frame_sha256()) for p in pairs}


def _report_keys(report: NoiseReport) -> _Keys:
    modes = {r.pair_id: r.mode for r in report.pairs}
    return {pid: (modes.get(pid), key) for pid, key in report.pair_keys.items()}


def check_baseline_suite(
    candidate: NoiseSuite,
    baseline: NoiseSuite,
    *,
    partition: str | None = None,
    sentinels_only: bool = False,
    exclude_held_out: bool = False,
) -> list[Problem]:
    """Why a baseline suite cannot be compared with the candidate suite (empty when it can), on
    the same selection as the run."""
    mine, theirs = (
        _pair_keys(selected_candidates(s, partition, sentinels_only, exclude_held_out))
        for s in (candidate, baseline)
    )
    return _pair_problems(baseline.source or baseline.label, mine, theirs)


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
_PREFIXES = (
    ("params.spec.params.", "parameter "),
    ("params.spec.endpoint.", "endpoint "),
    ("params.spec.", "spec field "),
    ("params.", ""),
)


def _label(path: str) -> str:
    found = next(((p, w) for p, w in _PREFIXES if path.startswith(p)), None)
    return found[1] + path[len(found[0]) :] if found else _WHAT.get(path, path)


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
    """``baseline_scorer_changed``, one per differing field of the scoring configurations."""
    problems = Problems()
    if mine is None or theirs is None:
        message = "a side has no results, so no evaluator identity"
        problems.add(loc, "baseline_incompatible", message, "compare two scored runs")
        return problems
    a, b = scoring_configuration(mine), scoring_configuration(theirs)
    for k in (k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)):
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
    mine = _pair_keys(selected_candidates(suite, partition, sentinels_only))
    return [
        *_controls_problems(baseline_source, "baseline", baseline),
        *_scorer_problems(baseline_source, identity, baseline.judge),
        *_pair_problems(baseline_source, mine, _report_keys(baseline)),
    ]


def _controls_problems(loc: str, side: str, report: NoiseReport) -> list[Problem]:
    problems = Problems()
    if not report.candidates_interpreted:
        message = f"the {side}'s controls did not pass: its candidate scores mean nothing"
        fix = f"fix the {side} run first (its controls must separate)"
        problems.add(loc, "baseline_incompatible", message, fix)
    return problems


def _pair_problems(loc: str, mine: _Keys, theirs: _Keys) -> list[Problem]:
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
        (my_mode, my_frame), (their_mode, their_frame) = mine[pid], theirs[pid]
        if my_mode != their_mode:
            message = f"pair {pid}: mode {their_mode} in the baseline, {my_mode} in the candidate"
            fix = "results of different NoiseSensitivity modes are not comparable"
            problems.add(loc, "baseline_incompatible", message, fix, case_id=pid)
        elif my_frame != their_frame:
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


def with_baseline(
    report: NoiseReport,
    baseline: NoiseReport,
    *,
    warn_delta: float = 0.0,
    baseline_source: str = "baseline",
    companions: dict[str, str] | None = None,
) -> NoiseReport:
    """``report`` with its comparison to ``baseline`` (the same frozen pairs) and the warning
    trends, the outcome unchanged; refuses (every reason) an incompatible baseline.
    ``companions``: companion metric -> direction (the bought-by-refusing trend)."""
    problems = [
        *_controls_problems(baseline_source, "baseline", baseline),
        *_controls_problems(report.suite, "candidate", report),
        *_scorer_problems(baseline_source, report.judge, baseline.judge),
        *_pair_problems(baseline_source, _report_keys(report), _report_keys(baseline)),
    ]
    if problems:
        message = f"refusing the baseline comparison: {len(problems)} reason(s)"
        raise WorkbenchError(message, problems)
    deltas, warnings = _pair_deltas(report, baseline, warn_delta, companions or {})
    warnings += _elsewhere(report, deltas)
    slices, slice_warnings = _slice_deltas(report, deltas, warn_delta)
    a = report.judge
    cmp = NoiseComparison(
        baseline=baseline.suite,
        baseline_source=baseline_source,
        candidate=report.suite,
        evaluator_model=a.model if a else None,
        ragas_version=a.ragas_version if a else None,
        prompt_sha256=a.prompt_sha256 if a else None,
        scoring_fingerprint=scoring_fingerprint(a) if a else None,
        pairs=deltas,
        slices=slices,
        warnings=[*warnings, *slice_warnings],
    )
    return report.model_copy(update={"comparison": cmp, "warnings": list(cmp.warnings)})


def _elsewhere(report: NoiseReport, deltas: list[PairDelta]) -> list[Trend]:
    """Pairs whose first change is an input boundary before the declared change under review
    (the comparison does not isolate that change for them)."""
    change = report.change_under_review
    if change is None or change.component not in _INPUTS:
        return []
    upstream = _INPUTS[: _INPUTS.index(change.component)]
    return [
        Trend(
            kind="change_elsewhere",
            slice=d.slice,
            pair_id=d.pair_id,
            message=f"{d.pair_id}: {d.first_change} changed before the change under review"
            f" ({change.component}: {change.description})",
        )
        for d in deltas
        if d.first_change in upstream
    ]


_INPUTS = COMPONENTS[: COMPONENTS.index("evaluator")]
"""The recorded input boundaries, in order."""


def _first_change(
    candidate: NoiseReport, baseline: NoiseReport, row: PairRow, old: PairRow | None
) -> Component | Literal["none"] | None:
    """The first boundary that differs, in debugging order (:data:`COMPONENTS`): the recorded
    inputs (a boundary either side lacks the hash of is skipped), then the evaluator's scores,
    then the pair's aggregation (delta, counted, status), then the gate; ``none`` when nothing
    differs."""
    a_h, b_h = candidate.pair_hashes.get(row.pair_id), baseline.pair_hashes.get(row.pair_id)
    if not a_h or not b_h or old is None:
        return None
    for component in COMPONENTS:
        if component in a_h and component in b_h and a_h[component] != b_h[component]:
            return cast(Component, component)
    scores = attrgetter("clean_score", "noisy_score")
    aggregation = attrgetter("delta", "counted", "status", "relation_held")
    for component, of in (("evaluator", scores), ("aggregation", aggregation)):
        if of(row) != of(old):
            return cast(Component, component)
    return "gate" if row.within_limit != old.within_limit else "none"


def _pair_deltas(
    candidate: NoiseReport, baseline: NoiseReport, warn_delta: float, companions: dict[str, str]
) -> tuple[list[PairDelta], list[Trend]]:
    base_rows = {r.pair_id: r for r in baseline.pairs}
    deltas: list[PairDelta] = []
    warnings: list[Trend] = []
    for row in candidate.pairs:
        old = base_rows.get(row.pair_id)
        delta = _pair_delta(candidate, baseline, row, old)
        deltas.append(delta)
        warnings += _rose(row, delta, warn_delta)
        worse = _bought_by_refusing(row, old, companions) if old is not None else None
        if worse:
            where = {"slice": row.slice, "pair_id": row.pair_id}
            warnings.append(
                Trend(kind="bought_by_refusing", **where, message=f"{row.pair_id}: {worse}")
            )
    return deltas, warnings


def _counted_noisy(row: PairRow | None) -> float | None:
    return row.noisy_score if row is not None and row.counted else None


def _pair_delta(
    candidate: NoiseReport, baseline: NoiseReport, row: PairRow, old: PairRow | None
) -> PairDelta:
    bn, cn = _counted_noisy(old), _counted_noisy(row)
    b_noisy = old.noisy_score if old else None
    if bn is None or cn is None:
        why = "; ".join(
            f"{side}: {r.status if r else 'absent'}"
            for side, r, v in (("baseline", old, bn), ("candidate", row, cn))
            if v is None
        )
        detail, noisy_delta = f"not comparable ({why})", None
    else:
        detail, noisy_delta = f"noisy {bn:.3f} -> {cn:.3f}", cn - bn
    a, b = row.delta, old.delta if old else None
    return PairDelta(
        pair_id=row.pair_id,
        slice=row.slice,
        mode=row.mode,
        baseline_clean=old.clean_score if old else None,
        candidate_clean=row.clean_score,
        baseline_noisy=b_noisy,
        candidate_noisy=row.noisy_score,
        noisy_delta=noisy_delta,
        pair_delta_change=None if noisy_delta is None or a is None or b is None else a - b,
        status="not_comparable" if noisy_delta is None else "compared",
        detail=detail,
        first_change=_first_change(candidate, baseline, row, old),
    )


def _rose(row: PairRow, delta: PairDelta, warn_delta: float) -> list[Trend]:
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
        row = _slice_delta(
            name, [d for d in deltas if d.slice == name and d.noisy_delta is not None]
        )
        slices.append(row)
        if row.mean_delta is not None and row.mean_delta > warn_delta + _EPS:
            interval = (
                f" (95% {row.ci95_low:.3f} to {row.ci95_high:.3f})"
                if row.ci95_low is not None and row.ci95_high is not None
                else " (one pair: no interval)"
            )
            message = (
                f"slice {name}: mean noisy score +{row.mean_delta:.3f} over {row.n}"
                f" pair(s){interval}"
            )
            warnings.append(Trend(kind="slice_worse", slice=name, pair_id=None, message=message))
    return slices, warnings


def _slice_delta(name: str, mine: list[PairDelta]) -> SliceDelta:
    n = len(mine)
    diffs = [d.noisy_delta for d in mine if d.noisy_delta is not None]
    mean = sum(diffs) / n if n else None
    low = high = None
    if mean is not None and n >= 2:
        from scipy.stats import t

        sd = math.sqrt(sum((x - mean) ** 2 for x in diffs) / (n - 1))
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
    if "noisy" in row.abstained and "noisy" not in old.abstained:
        return (
            "the noisy member now abstains where the baseline answered: a lower noise score bought"
            " by refusing"
        )
    if row.noisy_score is None or old.noisy_score is None:
        return None
    if row.noisy_score >= old.noisy_score - _EPS:
        return None
    for metric, direction in companions.items():
        new, was = (r.companions.get(metric, {}).get("noisy") for r in (row, old))
        if new is not None and was is not None and _worse(direction, new, was):
            return (
                f"noise score improved ({old.noisy_score} -> {row.noisy_score}) while {metric} got"
                f" worse ({was:g} -> {new:g}): a lower noise score bought by saying less"
            )
    return None
