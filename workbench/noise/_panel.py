"""The claim-level human review panel of the calibration partition (``<suite>.panel.yaml``,
format in ``docs/formats.md``), and its agreement with the metric's claim verdicts
(:func:`panel_agreement`: statements aligned with the reviewers' claims exactly after
normalizing, else by word overlap; unaligned claims are claim-boundary differences, never
agreement)."""

from __future__ import annotations

import operator
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from .._load import Problems, load_yaml, validation_problems
from .._record import Record as _Model
from ..errors import Problem, WorkbenchError, errors_only
from ..results import JudgeResult
from ..stats import Kappa, Rate, cohen_kappa, wilson_rate
from ._analysis import _final
from ._evidence import Member
from ._judge import parse_claims
from ._pairs import MEMBERS, NoiseSuite
from ._panel_checks import PanelSliceRow, panel_composition, panel_slices

PANEL_SCHEMA_VERSION = 1
MIN_REVIEWERS = 2
"""Independent reviewers each panel member needs."""
MATCH_OVERLAP = 0.5
"""Least word overlap (Jaccard) for a metric statement to align with a reviewer claim."""


class ClaimJudgment(_Model):
    """One reviewer's judgment of one claim of a response."""

    claim: str = Field(min_length=1)
    """The claim, as the reviewer bounded it."""
    incorrect: bool
    """The claim is incorrect against the approved reference."""
    supported_by: list[int] = Field(default_factory=list)
    """0-based indices of the member's contexts that support the claim."""
    contradicted_by: list[int] = Field(default_factory=list)
    """0-based indices of the member's contexts that contradict it."""
    rationale: str | None = None
    """Why (mandatory in adjudications)."""


class ClaimReview(_Model):
    """One reviewer's independent claim judgments of one pair member."""

    pair_id: str
    """A calibration pair."""
    member: Literal["clean", "noisy"]
    """The member reviewed."""
    reviewer: str = Field(min_length=1)
    """Reviewer name or controlled pseudonym."""
    claims: list[ClaimJudgment] = Field(min_length=1)
    """Every claim of the response, as this reviewer bounded them."""


class ClaimAdjudication(_Model):
    """The adjudicated claims of a member whose reviewers disagreed."""

    pair_id: str
    """The pair."""
    member: Literal["clean", "noisy"]
    """The member."""
    adjudicator: str = Field(min_length=1)
    """Who adjudicated."""
    claims: list[ClaimJudgment] = Field(min_length=1)
    """The adjudicated claims, each with its rationale."""


class ClaimPanel(_Model):
    """A validated claim-level review panel."""

    schema_version: int = PANEL_SCHEMA_VERSION
    """Panel format version."""
    suite: str
    """``name@version`` of the suite the panel reviews."""
    reviews: list[ClaimReview]
    """Independent reviews."""
    adjudications: list[ClaimAdjudication] = Field(default_factory=list)
    """Adjudications of members whose reviewers disagreed."""
    source: str | None = None
    """The file it was read from."""

    def members(self) -> list[tuple[str, Member]]:
        """``(pair_id, member)`` reviewed, in first-seen order."""
        return list(dict.fromkeys((r.pair_id, r.member) for r in self.reviews))

    def reviews_of(self, pair_id: str, member: str) -> list[ClaimReview]:
        """The independent reviews of one member."""
        return [r for r in self.reviews if r.pair_id == pair_id and r.member == member]

    def adjudication_of(self, pair_id: str, member: str) -> ClaimAdjudication | None:
        """The adjudication of one member, if any."""
        return next(
            (a for a in self.adjudications if a.pair_id == pair_id and a.member == member), None
        )


_WORD = re.compile(r"[a-z0-9$]+")


def _norm(text: str) -> str:
    from ..gold import normalize_text

    return normalize_text(text).rstrip(".!? ")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _verdicts(claims: Iterable[ClaimJudgment]) -> dict[str, bool]:
    return {_norm(c.claim): c.incorrect for c in claims}


def reviewers_agree(reviews: list[ClaimReview]) -> bool:
    """True when every reviewer bounded the same claims and judged each the same way."""
    first = _verdicts(reviews[0].claims) if reviews else {}
    return all(_verdicts(r.claims) == first for r in reviews[1:])


def consensus(panel: ClaimPanel, pair_id: str, member: str) -> list[ClaimJudgment] | None:
    """The reviewers' claims when they agree, else the adjudicated claims, else None."""
    adjudicated = panel.adjudication_of(pair_id, member)
    if adjudicated is not None:
        return list(adjudicated.claims)
    reviews = panel.reviews_of(pair_id, member)
    return list(reviews[0].claims) if reviews and reviewers_agree(reviews) else None


def load_panel(path: str | Path, suite: NoiseSuite) -> ClaimPanel:
    """Read and check a panel against its suite (:func:`_member_problems`, then its release
    lineage); raise :class:`WorkbenchError` with every problem."""
    path = Path(path)
    loc = str(path)
    fix = "correct the panel (see the panel format in docs/formats.md)"
    raw = read_panel_yaml(path, "panel", fix)
    try:
        panel = ClaimPanel.model_validate({**raw, "source": loc})
    except ValidationError as exc:
        raise WorkbenchError(
            "invalid panel", validation_problems(exc, at=loc, code="panel_invalid", fix=fix)
        ) from None
    problems = Problems()
    if panel.suite != suite.label:
        message = f"the panel reviews {panel.suite}, not {suite.label}"
        problems.add(loc, "panel_suite_mismatch", message, "review the suite being analysed")
    for pair_id, member in panel.members():
        _member_problems(problems, f"{loc} ({pair_id}:{member})", panel, suite, pair_id, member)
    if not problems:
        from ..approval import check_lineage
        from ._release import panel_snapshot_of

        problems += check_lineage(panel_snapshot_of(panel))
    problems.raise_if_any(f"{loc}: invalid panel: {len(problems)} problem(s)")
    return panel


def read_panel_yaml(path: Path, what: str, fix: str) -> dict[str, Any]:
    """A panel-like YAML mapping (``panel_invalid`` for every way it cannot be read)."""
    data: dict[str, Any] = load_yaml(
        path,
        prefix="panel",
        what=what,
        missing_fix=fix,
        encoding_code="panel_invalid",
        yaml_code="panel_invalid",
        shape_code="panel_invalid",
        shape=(f"the {what} must be a YAML mapping", fix),
        if_empty={},
    ).data
    return data


def _member_problems(
    problems: Problems,
    where: str,
    panel: ClaimPanel,
    suite: NoiseSuite,
    pair_id: str,
    member: Member,
) -> None:
    """One reviewed member: a calibration pair of the suite, two independent reviewers, cited
    contexts that exist, an adjudication (with rationales) where the reviewers disagree."""

    def add(code: str, message: str, fix: str) -> None:
        problems.add(where, code, message, fix, case_id=pair_id)

    if pair_id not in {p.pair_id for p in suite.pairs}:
        message = f"{pair_id} is not a pair of {suite.label}"
        add("panel_unknown_pair", message, "review pairs of the suite")
        return
    pair = suite.pair(pair_id)
    if pair.partition != "calibration":
        add(
            "panel_not_calibration",
            f"{pair_id} is in the {pair.partition} partition",
            "the claim panel calibrates on the calibration partition only; held-out pairs stay"
            " unseen",
        )
    reviews = panel.reviews_of(pair_id, member)
    names = [r.reviewer for r in reviews]
    if len(set(names)) != len(names):
        fix = "one independent review per reviewer"
        add("panel_duplicate_review", f"a reviewer reviewed {pair_id}:{member} twice", fix)
    if len(set(names)) < MIN_REVIEWERS:
        add(
            "panel_too_few_reviewers",
            f"{len(set(names))} reviewer(s) for {pair_id}:{member}",
            f"have at least {MIN_REVIEWERS} qualified reviewers judge the claims independently",
        )
    n_ctx = len(pair.member(member).retrieved_contexts)
    adjudication = panel.adjudication_of(pair_id, member)
    adjudicated = adjudication.claims if adjudication else []
    for claim in [*(c for r in reviews for c in r.claims), *adjudicated]:
        bad = [i for i in (*claim.supported_by, *claim.contradicted_by) if not 0 <= i < n_ctx]
        if bad:
            add(
                "panel_context_index",
                f"claim {claim.claim!r} cites context(s) {bad}; the member has {n_ctx}",
                f"cite 0-based context indices 0..{n_ctx - 1}",
            )
    if len(reviews) >= MIN_REVIEWERS and not reviewers_agree(reviews) and adjudication is None:
        add(
            "panel_unadjudicated",
            f"the reviewers of {pair_id}:{member} disagree on claim boundaries or verdicts and"
            " there is no adjudication",
            "have an adjudicator decide and preserve the rationale (adjudications:)",
        )
    if any(not (c.rationale or "").strip() for c in adjudicated):
        fix = "preserve the rationale of every adjudicated claim"
        add("panel_rationale_missing", "an adjudicated claim has no rationale", fix)


class PanelMemberRow(_Model):
    """One reviewed member: metric statements against the panel's claims."""

    pair_id: str
    """The pair."""
    member: str
    """The member."""
    reviewers: list[str]
    """Its reviewers."""
    reviewers_agree: bool
    """The reviewers bounded and judged every claim alike (else the adjudication is used)."""
    status: Literal["compared", "no_metric_verdicts"]
    """``no_metric_verdicts`` when the member has no scored result carrying claim verdicts."""
    aligned: int
    """Claims aligned between the metric and the panel."""
    agreed: int
    """Aligned claims where the metric's incorrect flag equals the panel's."""
    metric_only_incorrect: list[str]
    """Claims the metric calls incorrect and the panel correct."""
    panel_only_incorrect: list[str]
    """Claims the panel calls incorrect and the metric correct."""
    boundary_differences: list[str]
    """Claims on one side with no counterpart on the other (claim-boundary test)."""


class PanelReport(_Model):
    """Agreement between the metric's claim verdicts and the reviewers' on the calibration panel."""

    suite: str
    """``name@version``."""
    panel: str | None
    """The panel file."""
    members: list[PanelMemberRow]
    """Every reviewed member."""
    aligned: int
    """Aligned claims over all compared members."""
    agreement: Rate
    """Agreed / aligned with a 95% Wilson interval."""
    kappa: Kappa
    """Cohen's kappa of the incorrect flags over aligned claims."""
    reviewer_agreement: Rate
    """Members whose reviewers agreed (before adjudication) / members."""
    boundary_differences: int
    """Claims without a counterpart, over all members."""
    missing: list[str]
    """``pair_id:member`` without metric claim verdicts (never counted as agreement)."""
    release_id: str | None = None
    """The release that froze the panel (None: its labels can still change; not evidence)."""
    slices: list[PanelSliceRow] = Field(default_factory=list)
    """Agreement per slice, each with its counts."""
    composition: list[Problem] = Field(default_factory=list)
    """Who reviewed: unlisted reviewers, authors reviewing their own pairs, too few qualified
    reviewers (:func:`panel_composition`); warnings do not fail it."""

    @property
    def composition_ok(self) -> bool:
        """No composition problem of severity error."""
        return not errors_only(self.composition)


def _align(
    metric: list[dict[str, Any]], panel: list[ClaimJudgment]
) -> tuple[list[tuple[dict[str, Any], ClaimJudgment]], list[str]]:
    pairs: list[tuple[dict[str, Any], ClaimJudgment]] = []
    free_m = list(range(len(metric)))
    free_p = list(range(len(panel)))
    for i in list(free_m):
        exact = next(
            (j for j in free_p if _norm(panel[j].claim) == _norm(str(metric[i]["statement"]))), None
        )
        if exact is not None:
            pairs.append((metric[i], panel[exact]))
            free_m.remove(i)
            free_p.remove(exact)
    w_m, w_p = [_words(str(m["statement"])) for m in metric], [_words(p.claim) for p in panel]
    scored = sorted(
        (
            (len(w_m[i] & w_p[j]) / max(1, len(w_m[i] | w_p[j])), i, j)
            for i in free_m
            for j in free_p
        ),
        reverse=True,
    )
    for overlap, i, j in scored:
        if overlap < MATCH_OVERLAP or i not in free_m or j not in free_p:
            continue
        pairs.append((metric[i], panel[j]))
        free_m.remove(i)
        free_p.remove(j)
    boundary = [
        f"metric statement without a reviewer claim: {metric[i]['statement']!r}" for i in free_m
    ] + [f"reviewer claim without a metric statement: {panel[j].claim!r}" for j in free_p]
    return pairs, boundary


def panel_agreement(
    suite: NoiseSuite, panel: ClaimPanel, results: Iterable[JudgeResult]
) -> PanelReport:
    """Agreement of the metric's claim verdicts with the panel's, per member and overall."""
    from ._release import panel_release_of

    final = _final(("", r) for r in results)  # an all-error member has no verdicts either way
    compared = [_member_row(suite, panel, final, *m) for m in panel.members()]
    rows = [row for row, _ in compared]
    aligned = [pair for _, pairs in compared for pair in pairs]
    metric_flags = [bool(m["incorrect"]) for m, _ in aligned]
    panel_flags = [p.incorrect for _, p in aligned]
    release = panel_release_of(panel)
    flags = [
        (
            row.pair_id,
            row.status == "compared",
            [(bool(m["incorrect"]), p.incorrect) for m, p in pairs],
        )
        for row, pairs in compared
    ]
    return PanelReport(
        suite=suite.label,
        panel=panel.source,
        members=rows,
        aligned=len(aligned),
        agreement=wilson_rate(sum(map(operator.eq, metric_flags, panel_flags)), len(aligned)),
        kappa=cohen_kappa(metric_flags, panel_flags, labels=[True, False]),
        reviewer_agreement=wilson_rate(sum(r.reviewers_agree for r in rows), len(rows)),
        boundary_differences=sum(len(r.boundary_differences) for r in rows),
        missing=[f"{r.pair_id}:{r.member}" for r in rows if r.status == "no_metric_verdicts"],
        release_id=release.release_id if release is not None else None,
        slices=panel_slices(suite, flags),
        composition=panel_composition(suite, panel),
    )


_Aligned = list[tuple[dict[str, Any], ClaimJudgment]]


def _member_row(
    suite: NoiseSuite,
    panel: ClaimPanel,
    final: dict[str, JudgeResult],
    pair_id: str,
    member: Member,
) -> tuple[PanelMemberRow, _Aligned]:
    reviews = panel.reviews_of(pair_id, member)
    result = final.get(suite.pair(pair_id).item_id(member)) if member in MEMBERS else None
    verdicts = parse_claims(result.reason) if result is not None and result.error is None else None
    claims = consensus(panel, pair_id, member) or []
    aligned, boundary = _align(verdicts, claims) if verdicts is not None else ([], [])
    row = PanelMemberRow(
        pair_id=pair_id,
        member=member,
        reviewers=[r.reviewer for r in reviews],
        reviewers_agree=reviewers_agree(reviews),
        status="no_metric_verdicts" if verdicts is None else "compared",
        aligned=len(aligned),
        agreed=sum(1 for m, p in aligned if bool(m["incorrect"]) == p.incorrect),
        metric_only_incorrect=[p.claim for m, p in aligned if m["incorrect"] and not p.incorrect],
        panel_only_incorrect=[p.claim for m, p in aligned if p.incorrect and not m["incorrect"]],
        boundary_differences=boundary,
    )
    return row, aligned


def format_panel(report: PanelReport) -> str:
    """The panel agreement as text."""
    frozen = (
        f"frozen as {report.release_id}"
        if report.release_id
        else "NOT frozen: its labels can still change (workbench freeze PANEL --approver NAME)"
    )
    lines = [
        f"claim panel: {report.suite} ({report.panel}), {frozen}",
        (
            f"metric vs reviewers: {report.agreement.format()} aligned claims agree; kappa"
            f" {f'{report.kappa.value:.3f}' if report.kappa.value is not None else '-'}"
            f" ({report.kappa.note or f'n={report.kappa.n}'})"
        ),
        (
            f"reviewers agreed before adjudication on {report.reviewer_agreement.format()} members;"
            f" {report.boundary_differences} claim-boundary difference(s)"
        ),
    ]
    for r in report.members:
        lines.append(
            f"  {r.pair_id}:{r.member}"
            f" [{', '.join(r.reviewers)}{'' if r.reviewers_agree else '; adjudicated'}] {r.status}:"
            f" {r.agreed}/{r.aligned} agree"
        )
        lines += [
            f"    metric says incorrect, panel correct: {c!r}" for c in r.metric_only_incorrect
        ]
        lines += [
            f"    panel says incorrect, metric correct: {c!r}" for c in r.panel_only_incorrect
        ]
        lines += [f"    boundary: {b}" for b in r.boundary_differences]
    lines.append("per slice (metric vs reviewers over the slice's aligned claims):")
    for s in report.slices:
        kappa = f"{s.kappa.value:.3f}" if s.kappa.value is not None else f"- ({s.kappa.note})"
        lines.append(
            f"  {s.slice}: {s.agreement.format()} agree, kappa {kappa} (n={s.kappa.n});"
            f" {s.compared} of {s.members} member(s) compared"
        )
    state = "ok" if report.composition_ok else "FAILED"
    lines.append(f"composition: {state}")
    lines += [f"  {p.format()}" for p in report.composition]
    if report.missing:
        lines.append(f"missing metric verdicts (never counted): {', '.join(report.missing)}")
    return "\n".join(lines)
