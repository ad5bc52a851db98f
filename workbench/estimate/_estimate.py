"""Per-slice and overall estimates of the human-pass rate among traffic cases the judge decided,
side by side: naive, Rogan-Gladen corrected, and PPI."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import Field

from .._record import Record as _Model
from ..outcomes import exit_code
from ..stats import Rate, wilson_rate
from ._methods import Z95, RGResult, clip01, ppi_mean, rogan_gladen, rogan_gladen_draws

ESTIMATE_SCHEMA_VERSION = 1
OVERALL = "(all)"
UNSTABLE_BELOW = 0.2  # the correction is unstable when Youden's J is below this
DRAWS = 4000  # parametric-bootstrap draws per slice
RG_METHODS = {
    "bootstrap": (
        "Rogan-Gladen (p + Sp - 1)/(Se + Sp - 1); 95% parametric-bootstrap percentile interval:"
        " {draws} draws of the traffic pass rate, sensitivity and specificity from their Jeffreys"
        " Beta(x + 1/2, n - x + 1/2) distributions (seed {seed}); clipped to [0, 1]"
    ),
    "delta": (
        "Rogan-Gladen (p + Sp - 1)/(Se + Sp - 1); 95% delta-method interval with"
        " Agresti-Coull-adjusted variances of the traffic pass rate, sensitivity and specificity;"
        " clipped to [0, 1]"
    ),
}
OVERALL_METHODS = {
    "bootstrap": (
        "stratified: each draw of the slices' unclipped estimates weighted by decided traffic"
        " verdicts, then percentiles; clipped to [0, 1]"
    ),
    "delta": (
        "stratified: slice estimates (unclipped) weighted by decided traffic verdicts, variance sum"
        " of w^2 Var; clipped to [0, 1]"
    ),
}
RGInterval = Literal["bootstrap", "delta"]
PPI_METHOD = (
    "prediction-powered inference (Angelopoulos et al. 2023, Science 382:669): mean of judge"
    " verdicts on unlabelled cases + mean of (human - judge) on labelled cases, 95% CLT interval;"
    " clipped to [0, 1]"
)


class CorrectedEstimate(_Model):
    """The Rogan-Gladen estimate of the human-pass rate with its interval."""

    estimate: float | None
    """Point estimate clipped to [0, 1]; None when undefined (no decided verdict, or J <= 0)."""
    raw: float | None
    """The unclipped estimate ``(p + Sp - 1) / (Se + Sp - 1)``."""
    se: float | None
    """Standard error: delta method, or the standard deviation of the bootstrap draws."""
    ci95_low: float | None
    """Lower end of the 95% interval (``interval`` of the estimate), clipped to [0, 1]."""
    ci95_high: float | None
    """Upper end, clipped to [0, 1]."""
    clipped: bool
    """Whether the point estimate or an interval end was clipped to [0, 1]."""


class PPIEstimate(_Model):
    """The prediction-powered estimate of the human-pass rate (needs a labelled sample)."""

    estimate: float
    """Point estimate clipped to [0, 1]."""
    raw: float
    """``mean(judge, unlabelled) + mean(human - judge, labelled)``, unclipped."""
    se: float
    """``sqrt(var(judge, unlabelled)/N + var(judge - human, labelled)/n)``."""
    ci95_low: float
    """Lower end of ``raw ± 1.96·se``, clipped to [0, 1]."""
    ci95_high: float
    """Upper end, clipped to [0, 1]."""
    rectifier: float
    """``mean(human - judge)`` on the labelled cases: what the labels correct."""
    labelled: int
    """n: labelled cases used (decided judge verdict, human pass or fail)."""
    unlabelled: int
    """N: decided traffic cases not in the labelled sample."""
    clipped: bool
    """Whether the point estimate or an interval end was clipped to [0, 1]."""


class SliceEstimate(_Model):
    """One slice (or ``(all)``): counts, the naive rate, the corrected rate and PPI, side by
    side."""

    slice: str
    """Slice name, or ``(all)``."""
    risk: str | None
    """The slice's risk level in the certification (None for ``(all)``)."""
    cases: int
    """Traffic cases mapped to the slice."""
    decided: int
    """Cases whose final verdict is pass or fail: the population estimated."""
    abstentions: int
    """Cases whose verdict is one of the rubric's abstain labels (left out)."""
    errors: int
    """Cases whose final attempt is an evaluator error (left out)."""
    missing: int
    """Mapped cases without any result (left out)."""
    naive: Rate
    """Judge passes / decided verdicts, 95% Wilson interval: the rate taken at face value."""
    sensitivity: Rate | None
    """Held-out human passes judged pass / human passes judged pass or fail (1 - false-fail
    rate), from the certification report. None for ``(all)``."""
    specificity: Rate | None
    """Held-out human fails judged fail / human fails judged pass or fail (1 - false-pass
    rate), from the certification report. None for ``(all)``."""
    youden: float | None
    """J = sensitivity + specificity - 1. None for ``(all)``."""
    youden_ci95_low: float | None
    """Lower 95% bound of J (Agresti-Coull-adjusted variances). None for ``(all)``."""
    corrected: CorrectedEstimate
    """The Rogan-Gladen estimate (stratified for ``(all)``)."""
    unstable: bool
    """J below ``unstable_below`` or its lower bound at or below 0 (for ``(all)``: any slice)."""
    ppi: PPIEstimate | None
    """Prediction-powered estimate, when a labelled sample with at least two cases here exists."""
    labelled_excluded: int
    """Labelled cases left out of PPI: the judge did not decide them, or the human label is not pass
    or fail."""
    warnings: list[str] = Field(default_factory=list)
    """Why a figure is missing or fragile, one sentence each."""


class CertificationRef(_Model):
    """The certification report the sensitivities and specificities came from."""

    report_id: str
    """``<candidate>/<version>/<n>``."""
    report_dir: str
    """Where the report was read."""
    candidate: str
    """``name@version`` certified."""
    candidate_fingerprint: str
    """The certified judge's fingerprint; the traffic results must carry the same."""
    lock_sha256: str
    """The report's lock hash (verified before use)."""
    outcome: str
    """Always ``certified`` (anything else is refused)."""
    policy: str | None
    """``name@version`` of the policy certified against."""
    rubric_version: str | None
    """Rubric version of the certification."""
    ragas_version: str | None
    """Ragas version the report was made with (equal to the installed one)."""


class ProductionEstimate(_Model):
    """``workbench estimate --json``: bias-corrected pass rates on unlabelled traffic."""

    schema_version: int = ESTIMATE_SCHEMA_VERSION
    """Estimate format version."""
    kind: Literal["workbench.estimate"] = "workbench.estimate"
    """Document kind."""
    status: Literal["complete", "incomplete"]
    """``incomplete`` when a mapped case has no result or ended in an evaluator error: the
    estimates cover decided cases only (CLI exit 3)."""
    confidence: float
    """Nominal coverage of every interval (0.95)."""
    interval: RGInterval
    """How the corrected interval was computed: ``bootstrap`` (parametric, Jeffreys) or
    ``delta``."""
    seed: int | None
    """Seed of the bootstrap draws (None for ``delta``)."""
    unstable_below: float
    """The J threshold of the ``unstable`` flag."""
    methods: dict[str, str]
    """How each column was computed: ``naive``, ``corrected``, ``overall``, ``ppi``."""
    certification: CertificationRef | None
    """The report read (None for simulated traffic)."""
    inputs: dict[str, str | None]
    """sha256 of the input files (``results``, ``slices``, ``labelled``) and the results' judge
    fingerprint."""
    slices: list[SliceEstimate]
    """One row per slice present in the traffic, in the certification's slice order."""
    overall: SliceEstimate
    """All slices together."""
    warnings: list[str]
    """Estimate-wide warnings (incomplete traffic, unstable slices)."""

    @property
    def exit_code(self) -> int:
        """``workbench estimate``'s exit: 3 when some traffic cases have no verdict, else 0."""
        return exit_code(self.status)


@dataclass(frozen=True)
class SliceInput:
    """What :func:`estimate_slices` needs for one slice."""

    slice: str
    risk: str | None
    judge_pass: np.ndarray
    human_pass: np.ndarray
    """Aligned with ``judge_pass``; NaN where the case is not labelled."""
    se_x: int
    se_n: int
    sp_x: int
    sp_n: int
    abstentions: int = 0
    errors: int = 0
    missing: int = 0
    labelled_excluded: int = 0
    ppi_excluded: np.ndarray | None = None
    """True where a decided case is labelled, but not pass or fail."""
    cases: int | None = None
    notes: tuple[str, ...] = field(default=())


def _corrected(
    raw: float | None, se: float | None, low: float | None, high: float | None
) -> CorrectedEstimate:
    if raw is None or se is None or low is None or high is None:
        return CorrectedEstimate(
            estimate=None, raw=raw, se=se, ci95_low=None, ci95_high=None, clipped=False
        )
    return CorrectedEstimate(se=se, **_clip(raw, low, high))


def _clip(raw: float, low: float, high: float) -> dict[str, Any]:
    ends = {"estimate": clip01(raw), "ci95_low": clip01(low), "ci95_high": clip01(high)}
    return ends | {"raw": raw, "clipped": raw < 0 or raw > 1 or low < 0 or high > 1}


def _kept(s: SliceInput) -> np.ndarray:
    """Decided cases PPI uses: all but labelled ones whose human label is not pass or fail."""
    return np.ones(s.judge_pass.size, dtype=bool) if s.ppi_excluded is None else ~s.ppi_excluded


def _percentiles(draws: np.ndarray) -> tuple[float, float]:
    low, high = np.quantile(draws, [0.025, 0.975])
    return float(low), float(high)


def _ppi(judge: np.ndarray, human: np.ndarray, z: float) -> PPIEstimate | None:
    labelled = ~np.isnan(human)
    if labelled.sum() < 2 or (~labelled).sum() < 2:
        return None
    r = ppi_mean(human[labelled], judge[labelled], judge[~labelled])
    return PPIEstimate(
        se=r.se,
        rectifier=r.rectifier,
        labelled=r.labelled,
        unlabelled=r.unlabelled,
        **_clip(r.estimate, r.estimate - z * r.se, r.estimate + z * r.se),
    )


Part = tuple[int, float | None, float | None, np.ndarray | None]  # n, raw, se, draws


def _stability(rg: RGResult, unstable_below: float) -> tuple[bool, list[str]]:
    if rg.youden <= 0:
        return True, [
            f"sensitivity + specificity = {rg.youden + 1:.3f} <= 1: the judge is no better than"
            " chance here and the correction is undefined"
        ]
    if rg.youden < unstable_below or rg.youden_low <= 0:
        why = (
            f"J = {rg.youden:.3f} < {unstable_below:g}"
            if rg.youden < unstable_below
            else f"the lower 95% bound of J is {rg.youden_low:.3f}"
        )
        return True, [
            f"unstable correction: sensitivity + specificity = {rg.youden + 1:.3f} is close to 1"
            f" ({why}); small errors in the rates move the estimate a lot"
        ]
    return False, []


def _one_slice(
    index: int, s: SliceInput, interval: RGInterval, seed: int, draws: int, below: float, z: float
) -> tuple[SliceEstimate, Part]:
    n, passes = int(s.judge_pass.size), int(s.judge_pass.sum())
    warnings = list(s.notes)
    youden = youden_low = raw = se = low = high = None
    sample: np.ndarray | None = None
    unstable = False
    if s.se_n > 0 and s.sp_n > 0:
        counts = (s.se_x, s.se_n, s.sp_x, s.sp_n)
        # without decided traffic J is still known: it does not depend on the traffic
        rg = rogan_gladen(passes, n, *counts, z) if n > 0 else rogan_gladen(0, 1, *counts, z)
        if n == 0:
            warnings.append("no decided verdict in the traffic: nothing to estimate")
        elif rg.raw is not None and rg.se is not None:
            raw, se = rg.raw, rg.se
            if interval == "bootstrap":
                rng = np.random.default_rng([seed, index])
                sample = rogan_gladen_draws(passes, n, *counts, rng, draws)
                low, high = _percentiles(sample)
                se = float(sample.std(ddof=1))
            else:
                low, high = raw - z * se, raw + z * se
        youden, youden_low = rg.youden, rg.youden_low
        unstable, why = _stability(rg, below)
        warnings += why
    else:
        warnings.append(
            "the certification has no decided human-pass or human-fail case for this slice: no"
            " correction"
        )
    corrected = _corrected(raw, se, low, high)
    if corrected.clipped:
        warnings.append("the corrected estimate or its interval was clipped to [0, 1]")
    keep = _kept(s)
    ppi = _ppi(s.judge_pass[keep].astype(float), s.human_pass[keep].astype(float), z)
    labelled = int((~np.isnan(s.human_pass)).sum())
    if labelled and ppi is None:
        warnings.append(
            f"{labelled} labelled case(s) here: PPI needs at least two labelled and two unlabelled"
            " decided cases"
        )
    left_out = {"abstentions": s.abstentions, "errors": s.errors, "missing": s.missing}
    row = SliceEstimate(
        slice=s.slice,
        risk=s.risk,
        cases=s.cases if s.cases is not None else n + sum(left_out.values()),
        decided=n,
        **left_out,
        naive=wilson_rate(passes, n),
        sensitivity=wilson_rate(s.se_x, s.se_n),
        specificity=wilson_rate(s.sp_x, s.sp_n),
        youden=youden,
        youden_ci95_low=youden_low,
        corrected=corrected,
        unstable=unstable,
        ppi=ppi,
        labelled_excluded=s.labelled_excluded,
        warnings=warnings,
    )
    return row, (n, raw, se, sample)


def estimate_slices(
    inputs: Sequence[SliceInput],
    *,
    interval: RGInterval = "bootstrap",
    seed: int = 0,
    draws: int = DRAWS,
    unstable_below: float = UNSTABLE_BELOW,
    z: float = Z95,
) -> tuple[list[SliceEstimate], SliceEstimate]:
    """Naive, corrected and PPI estimates per slice, then overall."""
    if interval not in RG_METHODS:
        raise ValueError(f"unknown interval {interval!r}; use bootstrap or delta")
    done = [
        _one_slice(i, s, interval, seed, draws, unstable_below, z) for i, s in enumerate(inputs)
    ]
    rows, parts = [row for row, _ in done], [part for _, part in done]
    return rows, _overall(inputs, rows, parts, z)


def _overall(
    inputs: Sequence[SliceInput],
    rows: list[SliceEstimate],
    parts: list[Part],
    z: float,
) -> SliceEstimate:
    total = sum(n for n, _, _, _ in parts)
    warnings: list[str] = []
    raw = se = low = high = None
    undefined = [
        r.slice for r, (n, x, _, _) in zip(rows, parts, strict=True) if n > 0 and x is None
    ]
    if total == 0:
        warnings.append("no decided verdict in the traffic: nothing to estimate")
    elif undefined:
        warnings.append(
            "no overall corrected estimate: the correction is undefined in " + ", ".join(undefined)
        )
    else:
        # no slice is undefined, so each has an estimate and (rogan_gladen) its se
        used = [(n / total, x or 0.0, v or 0.0, d) for n, x, v, d in parts if n > 0]
        raw = float(sum(w * x for w, x, _, _ in used))
        weighted_draws = [(w, d) for w, _, _, d in used if d is not None]
        if len(weighted_draws) == len(used):
            combined = np.asarray(sum(w * d for w, d in weighted_draws))
            low, high = _percentiles(combined)
            se = float(combined.std(ddof=1))
        else:
            se = float(np.sqrt(sum(w * w * v * v for w, _, v, _ in used)))
            low, high = raw - z * se, raw + z * se
    unstable = [r.slice for r in rows if r.unstable]
    if unstable:
        warnings.append(
            "unstable correction in " + ", ".join(unstable) + ": the overall estimate inherits it"
        )
    corrected = _corrected(raw, se, low, high)
    judge = np.concatenate([s.judge_pass[_kept(s)] for s in inputs]) if inputs else np.zeros(0)
    human = np.concatenate([s.human_pass[_kept(s)] for s in inputs]) if inputs else np.zeros(0)
    passes = int(sum(s.judge_pass.sum() for s in inputs))
    return SliceEstimate(
        slice=OVERALL,
        risk=None,
        cases=sum(r.cases for r in rows),
        decided=total,
        abstentions=sum(r.abstentions for r in rows),
        errors=sum(r.errors for r in rows),
        missing=sum(r.missing for r in rows),
        naive=wilson_rate(passes, total),
        sensitivity=None,
        specificity=None,
        youden=None,
        youden_ci95_low=None,
        corrected=corrected,
        unstable=bool(unstable),
        ppi=_ppi(judge.astype(float), human.astype(float), z),
        labelled_excluded=sum(r.labelled_excluded for r in rows),
        warnings=warnings,
    )


def estimate_frame(estimate: ProductionEstimate) -> Any:  # a pandas.DataFrame
    """Per slice and overall, side by side: naive, corrected and PPI with their intervals."""
    import pandas as pd

    return pd.DataFrame([_flat(r) for r in [*estimate.slices, estimate.overall]])


def _flat(r: SliceEstimate) -> dict[str, object]:
    c, p = r.corrected, r.ppi
    return {
        "slice": r.slice,
        "risk": r.risk,
        "decided": r.decided,
        "left_out": r.abstentions + r.errors + r.missing,
        "naive": r.naive.rate,
        "naive_low": r.naive.ci95_low,
        "naive_high": r.naive.ci95_high,
        "sensitivity": None if r.sensitivity is None else r.sensitivity.rate,
        "specificity": None if r.specificity is None else r.specificity.rate,
        "youden": r.youden,
        "corrected": c.estimate,
        "corrected_low": c.ci95_low,
        "corrected_high": c.ci95_high,
        "ppi": None if p is None else p.estimate,
        "ppi_low": None if p is None else p.ci95_low,
        "ppi_high": None if p is None else p.ci95_high,
        "labelled": None if p is None else p.labelled,
        "unstable": r.unstable,
        "warnings": "; ".join(r.warnings),
    }


def format_estimate(estimate: ProductionEstimate) -> str:
    """Fixed-width text: the three estimates side by side, then the methods and warnings."""
    lines = []
    if (cert := estimate.certification) is not None:
        lines += [
            f"certified judge: {cert.candidate} (report {cert.report_id}, lock"
            f" {cert.lock_sha256[:12]}, fingerprint {cert.candidate_fingerprint[:12]})",
            f"policy {cert.policy or '-'}, rubric {cert.rubric_version or '-'}, ragas"
            f" {cert.ragas_version or '-'}",
        ]
    lines.append(
        f"status: {estimate.status}; estimand: human-pass rate among traffic cases the judge"
        " decided (pass or fail)"
    )
    columns = "slice|risk|decided|left out|naive pass rate [95%]|Se|Sp|J|corrected [95%]"
    header = (*columns.split("|"), "PPI [95%] (n labelled)", "")
    rows = [header] + [
        (
            r.slice,
            r.risk or "",
            str(r.decided),
            str(r.abstentions + r.errors + r.missing),
            _interval(r.naive.rate, r.naive.ci95_low, r.naive.ci95_high),
            "-" if r.sensitivity is None else f"{r.sensitivity.k}/{r.sensitivity.n}",
            "-" if r.specificity is None else f"{r.specificity.k}/{r.specificity.n}",
            "-" if r.youden is None else f"{r.youden:.2f}",
            _interval(r.corrected.estimate, r.corrected.ci95_low, r.corrected.ci95_high),
            "-"
            if r.ppi is None
            else _interval(r.ppi.estimate, r.ppi.ci95_low, r.ppi.ci95_high)
            + f" ({r.ppi.labelled})",
            ("UNSTABLE" if r.unstable else "") + (" clipped" if r.corrected.clipped else ""),
        )
        for r in [*estimate.slices, estimate.overall]
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines += [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    lines.append("methods:")
    lines += [f"  {k}: {v}" for k, v in estimate.methods.items()]
    warnings = list(estimate.warnings) + [
        f"{r.slice}: {w}" for r in [*estimate.slices, estimate.overall] for w in r.warnings
    ]
    if warnings:
        lines.append("warnings:")
        lines += [f"  {w}" for w in warnings]
    return "\n".join(lines)


def _interval(value: float | None, low: float | None, high: float | None) -> str:
    if value is None or low is None or high is None:
        return "n/a"
    return f"{value:.3f} [{low:.3f}, {high:.3f}]"


def methods(
    labelled: bool, interval: RGInterval = "bootstrap", seed: int = 0, draws: int = DRAWS
) -> dict[str, str]:
    """The ``methods`` entry of an estimate."""
    return {
        "naive": "judge passes / decided verdicts, 95% Wilson interval",
        "corrected": RG_METHODS[interval].format(draws=draws, seed=seed),
        "overall": OVERALL_METHODS[interval],
    } | ({"ppi": PPI_METHOD} if labelled else {})
