"""The claim panel's composition and its agreement per slice.

Composition (:func:`panel_composition`): every reviewer and adjudicator is on the project's
``reviewers:`` list (``reviewer_unknown``; an undeclared list is a warning, as for gold) and in
the suite's evidence manifest (``panel_reviewer_not_in_manifest``, a warning); nobody reviews a
pair they authored (``provenance.author`` / ``provenance.authors``:
``panel_reviewer_is_author``); an adjudicator is not one of the member's reviewers
(``panel_adjudicator_reviewed``); and each member keeps at least two qualified reviewers once
those are set aside (``panel_too_few_qualified``). Agreement per slice (:func:`panel_slices`):
the metric's incorrect flags against the panel's over each slice's aligned claims, with the
counts (members, compared, aligned claims) beside every figure.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from .._load import Problems
from .._record import Record as _Model
from ..errors import Problem, Severity
from ..stats import Kappa, Rate, cohen_kappa, wilson_rate
from ._pairs import NoisePair, NoiseSuite

_SEVERITY: dict[bool, Severity] = {True: "warning", False: "error"}
MIN_QUALIFIED = 2
"""Qualified, independent reviewers each reviewed member needs."""


class PanelSliceRow(_Model):
    """The metric's claim verdicts against the panel's in one slice."""

    slice: str
    """The slice."""
    risk: str | None
    """Its risk."""
    members: int
    """Reviewed members of the slice."""
    compared: int
    """Of them, members with metric claim verdicts."""
    aligned: int
    """Aligned claims (the denominator of both figures)."""
    agreement: Rate
    """Agreed / aligned, with a 95% Wilson interval."""
    kappa: Kappa
    """Cohen's kappa of the incorrect flags over the slice's aligned claims."""


def panel_slices(
    suite: NoiseSuite, members: Sequence[tuple[str, bool, list[tuple[bool, bool]]]]
) -> list[PanelSliceRow]:
    """One row per slice with a reviewed member; ``members`` holds, per reviewed member, its pair
    id, whether it was compared and its aligned ``(metric_incorrect, panel_incorrect)`` flags."""
    by_slice: dict[str, list[tuple[str, bool, list[tuple[bool, bool]]]]] = {}
    for entry in members:
        by_slice.setdefault(suite.pair(entry[0]).slice, []).append(entry)
    rows = []
    for name in [s for s in suite.slices if s in by_slice]:
        mine = by_slice[name]
        flags = [f for _, _, aligned in mine for f in aligned]
        metric, panel = [m for m, _ in flags], [p for _, p in flags]
        rows.append(
            PanelSliceRow(
                slice=name,
                risk=suite.slices[name].risk,
                members=len(mine),
                compared=sum(1 for _, compared, _ in mine if compared),
                aligned=len(flags),
                agreement=wilson_rate(sum(map(operator.eq, metric, panel)), len(flags)),
                kappa=cohen_kappa(metric, panel, labels=[True, False]),
            )
        )
    return rows


def _authors(pair: NoisePair) -> set[str]:
    raw: Any = [pair.provenance.get("author"), *(pair.provenance.get("authors") or [])]
    return {a.strip() for a in raw if isinstance(a, str) and a.strip()}


def panel_composition(suite: NoiseSuite, panel: Any) -> list[Problem]:
    """Every composition problem of ``panel`` (a :class:`ClaimPanel`) at once (module doc)."""
    from ..approval import REVIEWERS_KEY, load_approvers

    listed = load_approvers(None, REVIEWERS_KEY)
    manifest = set(suite.manifest.reviewers)
    out, loc = Problems(), panel.source or panel.suite
    if not listed.names:
        where = str(listed.config) if listed.config is not None else loc
        message = "the project declares no reviewer list: panel reviewers are not checked"
        fix = (
            f"list the project's reviewers and adjudicators as `{REVIEWERS_KEY}:` in workbench.yaml"
        )
        out.add(where, "reviewers_undeclared", message, fix, severity="warning")
    known = {p for p, _ in panel.members() if _has(suite, p)}
    for pair_id, member in panel.members():
        if pair_id not in known:
            continue  # load_panel refused it already
        where, pair = f"{loc} ({pair_id}:{member})", suite.pair(pair_id)
        reviewers = [r.reviewer for r in panel.reviews_of(pair_id, member)]
        adjudication = panel.adjudication_of(pair_id, member)
        people = [("reviewer", n) for n in reviewers]
        people += [("adjudicator", adjudication.adjudicator)] if adjudication else []
        unqualified: set[str] = set()
        for role, name in people:
            for code, message, fix in _person_problems(role, name, pair, listed.names, manifest):
                warn = code == "panel_reviewer_not_in_manifest"
                out.add(where, code, message, fix, case_id=pair_id, severity=_SEVERITY[warn])
                if not warn:
                    unqualified.add(name)
        if adjudication is not None and adjudication.adjudicator in reviewers:
            message = f"adjudicator {adjudication.adjudicator!r} also reviewed {pair_id}:{member}"
            fix = "have someone who did not review the member adjudicate it"
            out.add(where, "panel_adjudicator_reviewed", message, fix, case_id=pair_id)
        qualified = set(reviewers) - unqualified
        if len(qualified) < MIN_QUALIFIED and len(set(reviewers)) >= MIN_QUALIFIED:
            message = f"{len(qualified)} qualified, independent reviewer(s) for {pair_id}:{member}"
            fix = f"have at least {MIN_QUALIFIED} listed reviewers who did not author it review it"
            out.add(where, "panel_too_few_qualified", message, fix, case_id=pair_id)
    return list(out)


def _has(suite: NoiseSuite, pair_id: str) -> bool:
    return any(p.pair_id == pair_id for p in suite.pairs)


def _person_problems(
    role: str, name: str, pair: NoisePair, listed: frozenset[str], manifest: set[str]
) -> list[tuple[str, str, str]]:
    found = []
    if listed and name not in listed:
        fix = "name a reviewer on the project's `reviewers:` list, or have the project add them"
        found.append(
            ("reviewer_unknown", f"{role} {name!r} is not in the project's reviewer list", fix)
        )
    if name not in manifest:
        message = f"{role} {name!r} is not among the suite manifest's reviewers"
        fix = "list every panel reviewer in manifest.reviewers (a new suite version)"
        found.append(("panel_reviewer_not_in_manifest", message, fix))
    if name in _authors(pair):
        message = f"{role} {name!r} authored {pair.pair_id} (provenance)"
        fix = "have the claims reviewed by someone who did not write the pair"
        found.append(("panel_reviewer_is_author", message, fix))
    return found
