"""Human calibration of ranking fixtures: how well independent reviewers agree with each other
(pairwise, Kendall's tau, top-1; :data:`CALIBRATION_DENOMINATORS`).
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from pathlib import Path
from typing import Any, Literal

from .._record import Record as _Frozen
from ..stats import Rate, wilson_rate
from ._fixtures import FixtureSet, RankingFixture, as_fixture_set, pair_counts

CALIBRATION_SCHEMA_VERSION = 1
"""Version of :class:`ReviewerAgreementReport`."""


class ReviewerPairAgreement(_Frozen):
    """Two reviewers on one fixture."""

    reviewers: list[str]
    """The two reviewers."""
    agreed_pairs: int
    """Candidate pairs both order the same way."""
    pairs: int
    """Candidate pairs."""
    kendall_tau: float
    """Kendall's tau between their orders (scipy)."""
    top1_agree: bool
    """Both name the same best candidate."""


class FixtureCalibration(_Frozen):
    """Reviewer agreement on one fixture."""

    case_id: str
    """The fixture."""
    slice: str | None
    """Its slice."""
    gate: str
    """``must-win`` or ``monitor-only``."""
    reviewers: list[str]
    """Who ordered it independently."""
    pairwise: Rate
    """Agreed candidate pairs over candidate pairs, pooled over reviewer pairs."""
    kendall_tau: float | None
    """Mean Kendall's tau over reviewer pairs."""
    top1: Rate
    """Reviewer pairs naming the same best candidate, over reviewer pairs."""
    reviewer_pairs: list[ReviewerPairAgreement]
    """Every reviewer pair."""
    disputed_pairs: list[list[str]]
    """Candidate pairs two reviewers order differently."""
    must_win_disputed: list[list[str]]
    """Must-win pairs among them (see :meth:`RankingFixture.must_win_pairs`)."""
    adjudicated: bool
    """Whether an adjudication decided ``expected_order``."""
    adjudicator: str | None
    """Who adjudicated."""
    status: Literal["agreed", "adjudicated", "disputed_unadjudicated"]
    """``agreed`` (no disputed pair), ``adjudicated`` or ``disputed_unadjudicated``."""


class CalibrationFigure(_Frozen):
    """Reviewer agreement over a group of fixtures (a slice, or all)."""

    fixtures: int
    """Fixtures with two or more reviews in the group."""
    pairwise: Rate
    """Agreed candidate pairs over candidate pairs, pooled over every fixture's reviewer pairs."""
    kendall_tau: float | None
    """Mean Kendall's tau over every (fixture, reviewer pair)."""
    top1: Rate
    """Reviewer pairs naming the same best candidate, over every (fixture, reviewer pair)."""
    disputed_fixtures: int
    """Fixtures with at least one disputed candidate pair."""
    adjudicated_fixtures: int
    """Fixtures whose expected order was adjudicated."""


class ReviewerVsExpected(_Frozen):
    """One reviewer against the final expected orders."""

    reviewer: str
    """The reviewer."""
    fixtures: int
    """Fixtures the reviewer ordered."""
    pairwise: Rate
    """Candidate pairs in the expected relative order, over candidate pairs."""
    top1: Rate
    """Fixtures where the reviewer's best is an accepted winner."""


class ReviewerAgreementReport(_Frozen):
    """``workbench ranking agreement --json``: reviewer-reviewer agreement on a fixture set."""

    schema_version: int = CALIBRATION_SCHEMA_VERSION
    """Report format version."""
    kind: Literal["workbench.ranking.agreement"] = "workbench.ranking.agreement"
    """Report type."""
    fixtures: str
    """``name@version`` of the fixture set."""
    fixtures_sha256: str
    """sha256 of the fixture file."""
    reviewed: int
    """Fixtures with two or more reviewer orders."""
    unreviewed: list[str]
    """Fixtures without reviewer orders (not calibrated)."""
    overall: CalibrationFigure
    """Every reviewed fixture."""
    slices: dict[str, CalibrationFigure]
    """Per slice (``(none)`` for fixtures without one)."""
    cases: list[FixtureCalibration]
    """Per reviewed fixture, in file order."""
    by_reviewer: list[ReviewerVsExpected]
    """Each reviewer against the final expected orders."""
    denominators: dict[str, str]
    """How each figure's numerator and denominator are defined."""

    def frames(self) -> dict[str, Any]:
        """pandas DataFrames for notebooks: overall and per slice, per fixture, per reviewer."""
        import pandas as pd

        def row(name: str, f: CalibrationFigure) -> dict[str, Any]:
            return {
                "group": name,
                "fixtures": f.fixtures,
                "pairwise": f.pairwise.format(3),
                "kendall_tau": f.kendall_tau,
                "top1": f.top1.format(3),
                "disputed": f.disputed_fixtures,
                "adjudicated": f.adjudicated_fixtures,
            }

        return {
            "figures": pd.DataFrame(
                [
                    row("overall", self.overall),
                    *(row(f"slice {n}", f) for n, f in self.slices.items()),
                ]
            ),
            "cases": pd.DataFrame(
                [
                    {
                        "case_id": c.case_id,
                        "slice": c.slice,
                        "gate": c.gate,
                        "status": c.status,
                        "pairwise": f"{c.pairwise.k}/{c.pairwise.n}",
                        "kendall_tau": c.kendall_tau,
                        "top1": f"{c.top1.k}/{c.top1.n}",
                        "disputed": [" vs ".join(p) for p in c.disputed_pairs],
                        "must_win_disputed": [" vs ".join(p) for p in c.must_win_disputed],
                        "adjudicator": c.adjudicator,
                    }
                    for c in self.cases
                ]
            ),
            "by_reviewer": pd.DataFrame(
                [
                    {
                        "reviewer": r.reviewer,
                        "fixtures": r.fixtures,
                        "pairwise_vs_expected": r.pairwise.format(3),
                        "best_is_accepted_winner": f"{r.top1.k}/{r.top1.n}",
                    }
                    for r in self.by_reviewer
                ]
            ),
        }


CALIBRATION_DENOMINATORS: dict[str, str] = {
    "pairwise": (
        "k = candidate pairs two reviewers order the same way; n = candidate pairs x reviewer pairs"
        " (a fixture with 3 candidates and 2 reviewers adds 3)."
    ),
    "kendall_tau": (
        "scipy.stats.kendalltau of the two reviewers' positions per candidate; mean over reviewer"
        " pairs (per fixture) or over every (fixture, reviewer pair) (per slice and overall)."
    ),
    "top1": "k = reviewer pairs whose best candidate (best-first) is the same; n = reviewer pairs.",
    "by_reviewer.pairwise": (
        "k = candidate pairs the reviewer orders as the best-matching accepted expected order does;"
        " n = candidate pairs of the fixtures the reviewer ordered."
    ),
    "by_reviewer.top1": (
        "k = fixtures where the reviewer's best is an accepted winner (or the reviewer keeps the"
        " critical pair); n = fixtures the reviewer ordered."
    ),
}


def _tau(a: list[str], b: list[str]) -> float:
    from scipy.stats import kendalltau

    position = {c: i for i, c in enumerate(b)}
    return float(kendalltau(list(range(len(a))), [position[c] for c in a]).statistic)


def _fixture(f: RankingFixture) -> FixtureCalibration:
    rows: list[ReviewerPairAgreement] = []
    for x, y in combinations(f.reviews, 2):
        agreed, pairs = pair_counts(x.order, y.order)
        rows.append(
            ReviewerPairAgreement(
                reviewers=[x.reviewer, y.reviewer],
                agreed_pairs=agreed,
                pairs=pairs,
                kendall_tau=_tau(list(x.order), list(y.order)),
                top1_agree=f.best_first(x.order)[0] == f.best_first(y.order)[0],
            )
        )
    disputed = f.disputed_pairs()
    must = f.disputed_must_win_pairs()
    status: Literal["agreed", "adjudicated", "disputed_unadjudicated"] = (
        "agreed" if not disputed else "adjudicated" if f.adjudication else "disputed_unadjudicated"
    )
    return FixtureCalibration(
        case_id=f.case_id,
        slice=f.slice,
        gate=f.gate,
        reviewers=[r.reviewer for r in f.reviews],
        **_pooled(rows),
        reviewer_pairs=rows,
        disputed_pairs=[list(p) for p in disputed],
        must_win_disputed=[list(p) for p in must],
        adjudicated=f.adjudication is not None,
        adjudicator=f.adjudication.adjudicator if f.adjudication else None,
        status=status,
    )


def _pooled(rows: list[ReviewerPairAgreement]) -> dict[str, Any]:
    return {
        "pairwise": wilson_rate(sum(r.agreed_pairs for r in rows), sum(r.pairs for r in rows)),
        "kendall_tau": sum(r.kendall_tau for r in rows) / len(rows) if rows else None,
        "top1": wilson_rate(sum(r.top1_agree for r in rows), len(rows)),
    }


def _figure(cases: list[FixtureCalibration]) -> CalibrationFigure:
    rows = [r for c in cases for r in c.reviewer_pairs]
    return CalibrationFigure(
        fixtures=len(cases),
        **_pooled(rows),
        disputed_fixtures=sum(bool(c.disputed_pairs) for c in cases),
        adjudicated_fixtures=sum(c.adjudicated for c in cases),
    )


def reviewer_agreement(fixtures: FixtureSet | str | Path | Any) -> ReviewerAgreementReport:
    """Reviewer-reviewer agreement of a fixture set; see the module docstring."""
    fixture_set = as_fixture_set(fixtures)
    reviewed = [f for f in fixture_set.fixtures if len(f.reviews) >= 2]
    cases = [_fixture(f) for f in reviewed]
    by_slice: dict[str, list[FixtureCalibration]] = defaultdict(list)
    for c in cases:
        by_slice[c.slice or "(none)"].append(c)
    per_reviewer: dict[str, list[tuple[int, int, bool]]] = defaultdict(list)
    for f in reviewed:
        for r in f.reviews:
            agreed, pairs = max(
                (pair_counts(o, r.order) for o in f.accepted_orders), key=lambda t: t[0]
            )
            per_reviewer[r.reviewer].append((agreed, pairs, f.must_win_holds(r.order)))
    return ReviewerAgreementReport(
        fixtures=fixture_set.label,
        fixtures_sha256=fixture_set.dataset_sha256,
        reviewed=len(reviewed),
        unreviewed=[f.case_id for f in fixture_set.fixtures if len(f.reviews) < 2],
        overall=_figure(cases),
        slices={name: _figure(rows) for name, rows in sorted(by_slice.items())},
        cases=cases,
        by_reviewer=[
            ReviewerVsExpected(
                reviewer=name,
                fixtures=len(rows),
                pairwise=wilson_rate(sum(a for a, _, _ in rows), sum(n for _, n, _ in rows)),
                top1=wilson_rate(sum(t for _, _, t in rows), len(rows)),
            )
            for name, rows in sorted(per_reviewer.items())
        ],
        denominators=CALIBRATION_DENOMINATORS,
    )


def format_reviewer_agreement(report: ReviewerAgreementReport) -> str:
    """The reviewer-agreement report as plain text."""

    def tau(value: float | None) -> str:
        return "n/a" if value is None else f"{value:+.3f}"

    o = report.overall
    lines = [
        (
            f"reviewer agreement on {report.fixtures}: {report.reviewed} fixture(s) with two or"
            f" more independent orders; {len(report.unreviewed)} without"
        ),
        (
            f"overall: pairwise {o.pairwise.format(3)}; Kendall's tau {tau(o.kendall_tau)}; top-1"
            f" {o.top1.format(3)}; disputed {o.disputed_fixtures}, adjudicated"
            f" {o.adjudicated_fixtures}"
        ),
    ]
    if report.unreviewed:
        lines.append(f"  not calibrated (no reviewer orders): {', '.join(report.unreviewed)}")
    lines.append("per slice:")
    lines += [
        f"  {name}: {f.fixtures} fixture(s); pairwise {f.pairwise.format(3)}; tau"
        f" {tau(f.kendall_tau)}; top-1 {f.top1.format(3)}"
        for name, f in report.slices.items()
    ]
    lines.append("per fixture:")
    for c in report.cases:
        detail = ""
        if c.disputed_pairs:
            detail = f"; disputed {[' vs '.join(p) for p in c.disputed_pairs]}" + (
                f" (must-win pair: {[' vs '.join(p) for p in c.must_win_disputed]})"
                if c.must_win_disputed
                else ""
            )
        adjudication = f"; adjudicated by {c.adjudicator}" if c.adjudicated else ""
        lines.append(
            f"  {c.case_id} [{c.gate}, {c.slice or '(none)'}] {c.status}: reviewers"
            f" {', '.join(c.reviewers)}; pairwise {c.pairwise.k}/{c.pairwise.n}; tau"
            f" {tau(c.kendall_tau)}; top-1 {c.top1.k}/{c.top1.n}{detail}{adjudication}"
        )
    lines.append("each reviewer against the final expected order:")
    lines += [
        f"  {r.reviewer}: {r.fixtures} fixture(s); pairwise {r.pairwise.format(3)}; best is an"
        f" accepted winner {r.top1.k}/{r.top1.n}"
        for r in report.by_reviewer
    ]
    return "\n".join(lines)
