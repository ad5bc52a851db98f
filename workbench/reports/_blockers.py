"""Blockers as a reviewer reads them: one group per slice and code family, one line each.

The gate can raise several blockers for one problem (``false_passes_exceeded`` beside
``false_pass_rate_exceeded`` for the same false passes). A reviewer needs one line per slice
and kind of problem, with the numbers rounded, and the raw blockers one click away. Nothing
here changes a decision: the groups are read from the gate's blockers, and the exact values
stay in ``gate.json``.

Case ids are never shown, except control ids (the control suite is not held-out data).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..stats import more_without_errors, shortfall
from ._format import number, pct, rate_text

FAMILY_TITLES = {
    "controls": "controls",
    "lineage": "lineage",
    "completeness": "missing evidence",
    "consistency": "inputs do not fit",
    "cost": "spend",
    "false_pass": "false passes",
    "false_fail": "false fails",
    "abstention": "abstentions",
    "min_n": "too few cases",
    "constant": "constant verdict",
    "migration": "migration transitions",
    "repeatability": "repeatability",
    "other": "other",
}
CATEGORY_RANK = {"incomplete": 0, "quality": 1, "review": 2}
BADGE = {"incomplete": "INCOMPLETE", "quality": "FAIL", "review": "REVIEW"}
SAMPLE_CODES = frozenset(
    {"too_few_cases", "rate_unbounded", "false_pass_rate_unproven", "false_fail_rate_unproven"}
)
"""Review blockers that say the sample is too small to show a limit, not that the judge is wrong."""
COMPLETENESS = frozenset(
    {
        "no_cases",
        "missing_results",
        "evaluator_errors_exceeded",
        "budget_exhausted",
        "case_limit_reached",
        "pending_retries",
        "run_incomplete",
        "gold_changed",
        "certification_failed",
    }
)
CONSISTENCY = frozenset(
    {
        "policy_missing",
        "policy_rubric_mismatch",
        "rubric_mismatch",
        "partition_mismatch",
        "run_mismatch",
        "candidate_mismatch",
        "slice_not_in_policy",
        "policy_unknown_slice",
        "policy_risk_mismatch",
    }
)


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if obj is None:
        return default
    return obj.get(name, default) if isinstance(obj, dict) else getattr(obj, name, default)


def family(blocker: Any) -> str:
    """The code family of a blocker (``false_pass``, ``controls``, ``completeness``, ...)."""
    code = str(_get(blocker, "code", ""))
    evidence = _get(blocker, "evidence", {}) or {}
    if code.startswith("control_failed_"):
        return "controls"
    if code == "lineage_failed":
        return "lineage"
    if code in COMPLETENESS:
        return "completeness"
    if code in CONSISTENCY:
        return "consistency"
    if code.startswith("cost_"):
        return "cost"
    if code == "rate_unbounded":
        return (
            "false_fail" if str(evidence.get("rate", "")).startswith("false_fail") else "false_pass"
        )
    if code.startswith("false_pass"):
        return "false_pass"
    if code.startswith("false_fail"):
        return "false_fail"
    if code.startswith("abstention"):
        return "abstention"
    if code == "too_few_cases":
        return "min_n"
    if code == "constant_verdict":
        return "constant"
    from ..policy import BLOCKER_CODES

    known = BLOCKER_CODES.get(code)
    return known.feature if known and known.feature in ("migration", "repeatability") else "other"


def more_needed(errors: int, have: int, limit: float | None) -> int | None:
    """Decided cases to add (with no further error) before the 95% Wilson upper bound of
    ``errors`` out of ``have + more`` is within ``limit``; None when no sample can show it
    (:func:`workbench.stats.more_without_errors`)."""
    return more_without_errors(errors, have, limit)


def sample_figures(
    ev: dict[str, Any], *, have: int, errors: int, limit: float | None
) -> tuple[int | None, int | None, int | None]:
    """``(to bound at half the limit, at zero errors, more)`` of a sample-size blocker.

    Read from the gate's evidence (``verdicts_needed_to_bound_at_half_limit``,
    ``verdicts_needed_at_zero_errors``, ``more_verdicts_needed``), so the report shows the
    numbers the gate cited; a gate result written before those fields existed gets them from
    the same function the gate uses (:func:`workbench.stats.shortfall`).
    """
    basis: Literal["upper_95", "point"] = "point" if ev.get("basis") == "point" else "upper_95"
    if "more_verdicts_needed" in ev:
        return (
            ev.get("verdicts_needed_to_bound_at_half_limit"),
            ev.get("verdicts_needed_at_zero_errors"),
            ev.get("more_verdicts_needed"),
        )
    need = shortfall(have, errors, limit, basis)
    return need.needed_to_bound, need.needed_at_zero_errors, need.more


@dataclass
class BlockerGroup:
    """The blockers of one slice (or of the whole evaluation) and one code family."""

    slice: str | None
    risk: str | None
    family: str
    category: str
    headline: str
    """One sentence with the rounded numbers."""
    short: str
    """A few words for the one-line-per-slice summary."""
    blockers: list[dict[str, Any]] = field(default_factory=list)
    """The raw blockers (code, category, message, evidence rounded for display)."""
    waived_by: list[str] = field(default_factory=list)
    """Override ids, when the group's blockers were waived."""
    more_cases: int | None = None
    """For a sample-size group: how many more decided cases the slice needs (None otherwise)."""
    more_of: str | None = None
    """What those cases are: ``human-fail``, ``human-pass`` or ``decided``."""

    @property
    def badge(self) -> str:
        return "WAIVED" if self.waived_by else BADGE.get(self.category, self.category.upper())

    @property
    def title(self) -> str:
        return FAMILY_TITLES.get(self.family, self.family)

    @property
    def sample_only(self) -> bool:
        return all(b["code"] in SAMPLE_CODES for b in self.blockers)


def group_blockers(
    blockers: Sequence[Any], *, waived: Sequence[Any] = (), policy: Any = None
) -> list[BlockerGroup]:
    """Group ``blockers`` per slice and code family (worst first), then the waived ones.

    Accepts :class:`~workbench.policy.Blocker` objects or their JSON dicts; ``waived`` holds
    :class:`~workbench.policy.WaivedBlocker` objects or dicts.
    """
    groups = _groups([(b, None) for b in blockers], policy)
    groups.sort(
        key=lambda g: (
            CATEGORY_RANK.get(g.category, 9),
            g.slice is not None,
            g.slice or "",
            g.family,
        )
    )
    waived_groups = _groups([(_get(w, "blocker"), _get(w, "override_id")) for w in waived], policy)
    return groups + waived_groups


def _groups(items: list[tuple[Any, str | None]], policy: Any) -> list[BlockerGroup]:
    keyed: dict[tuple[str | None, str], list[tuple[Any, str | None]]] = {}
    for blocker, override in items:
        keyed.setdefault((_get(blocker, "slice"), family(blocker)), []).append((blocker, override))
    out = []
    for (slice_name, fam), members in keyed.items():
        raw = [_raw(b) for b, _ in members]
        worst = min((r["category"] for r in raw), key=lambda c: CATEGORY_RANK.get(c, 9))
        headline, short, more, of = _describe(fam, slice_name, raw, policy)
        out.append(
            BlockerGroup(
                slice=slice_name,
                risk=next((r["risk"] for r in raw if r["risk"]), None),
                family=fam,
                category=worst,
                headline=headline,
                short=short,
                blockers=raw,
                waived_by=sorted({o for _, o in members if o}),
                more_cases=more,
                more_of=of,
            )
        )
    return out


def _raw(blocker: Any) -> dict[str, Any]:
    code = str(_get(blocker, "code", ""))
    ids = list(_get(blocker, "case_ids", []) or []) if code.startswith("control_failed_") else []
    return {
        "code": code,
        "category": str(_get(blocker, "category", "")),
        "slice": _get(blocker, "slice"),
        "risk": _get(blocker, "risk"),
        "message": str(_get(blocker, "message", "")),
        "evidence": dict(_get(blocker, "evidence", {}) or {}),
        "evidence_text": [
            (str(k), number(v)) for k, v in (_get(blocker, "evidence", {}) or {}).items()
        ],
        "control_ids": ids,
        "waivable": bool(_get(blocker, "waivable", False)),
    }


def _slice_limit(policy: Any, slice_name: str | None, key: str) -> Any:
    slices = _get(policy, "slices", {}) or {}
    return _get(_get(slices, slice_name), key) if slice_name else None


def _describe(
    fam: str, slice_name: str | None, raw: list[dict[str, Any]], policy: Any
) -> tuple[str, str, int | None, str | None]:
    """(headline, short phrase, more cases needed, of what) for one group."""
    codes = [r["code"] for r in raw]
    ev = {k: v for r in raw for k, v in r["evidence"].items()}
    if fam in ("false_pass", "false_fail"):
        return _rate_family(fam, codes, raw, ev)
    if fam == "abstention":
        limit = ev.get("limit")
        text = (
            f"abstained on {ev.get('abstentions')} of {ev.get('verdicts')} verdicts"
            f" ({pct(ev.get('rate'))}), above the {pct(limit)} limit; {ev.get('decided')} of"
            f" {ev.get('cases')} cases decided"
        )
        return text, f"abstained {pct(ev.get('rate'))} > {pct(limit)}", None, None
    if fam == "min_n":
        decided, min_n = int(ev.get("decided", 0)), int(ev.get("min_n", 0))
        more = max(0, min_n - decided)
        text = (
            f"{decided} decided verdicts, fewer than the {min_n} the policy requires: {more} more"
            f" decided case{'s' if more != 1 else ''} needed"
        )
        return text, f"{decided} decided < {min_n}: {more} more needed", more, "decided"
    if fam == "controls":
        parts = []
        for r in raw:
            e = r["evidence"]
            role = e.get("role", r["code"].removeprefix("control_failed_"))
            if e.get("failed"):
                tail = ", ..." if len(r["control_ids"]) > 4 else ""
                ids = f" ({', '.join(r['control_ids'][:4])}{tail})" if r["control_ids"] else ""
                parts.append(f"{role}: {e.get('failed')} of {e.get('n')} failed{ids}")
            elif e.get("n") == 0:
                parts.append(f"{role}: untested")
            else:
                parts.append(f"{role}: {e.get('incomplete')} of {e.get('n')} not evaluated")
        return (
            "blocking controls failed, so held-out data was not used: " + "; ".join(parts),
            "; ".join(parts),
            None,
            None,
        )
    if fam == "lineage":
        checks = [r["message"].removeprefix("lineage check failed: ") for r in raw]
        return (
            "lineage checks failed: " + "; ".join(checks),
            "failed: " + ", ".join(checks),
            None,
            None,
        )
    first = raw[0]["message"]
    extra = f" (+{len(raw) - 1} more)" if len(raw) > 1 else ""
    return first + extra, _shorten(first) + extra, None, None


def _rate_family(
    fam: str, codes: list[str], raw: list[dict[str, Any]], ev: dict[str, Any]
) -> tuple[str, str, int | None, str | None]:
    human = "fail" if fam == "false_pass" else "pass"
    what = "false passes" if fam == "false_pass" else "false fails"
    count_key = "false_passes" if fam == "false_pass" else "false_fails"
    total_key = "human_fails_decided" if fam == "false_pass" else "human_passes_decided"
    limit = next(
        (
            r["evidence"].get("limit")
            for r in raw
            if r["code"] != f"{fam}es_exceeded" and isinstance(r["evidence"].get("limit"), float)
        ),
        None,
    )
    count_limit = next(
        (r["evidence"].get("limit") for r in raw if r["code"] == "false_passes_exceeded"), None
    )
    if "rate_unbounded" in codes:
        to_bound, at_zero, more = sample_figures(ev, have=0, errors=0, limit=limit)
        in_scope = ev.get("human_fails" if fam == "false_pass" else "human_passes", 0)
        if more is None:
            need = "no sample can show this limit: the policy must change"
        elif to_bound is not None:
            need = f"{to_bound} are needed to bound it at half the limit ({at_zero} at zero errors)"
        else:
            need = f"at least {more} {'is' if more == 1 else 'are'} needed"
        text = (
            f"no human-{human} case judged pass or fail ({in_scope} in scope), so the {what} limit"
            f" cannot be checked: {need}"
        )
        return (
            text,
            f"no human-{human} case decided: {more if more is not None else 'no sample'} needed",
            more,
            f"human-{human}",
        )
    k, n = int(ev.get(count_key, 0)), int(ev.get(total_key, 0))
    rate = {
        "rate": ev.get("rate"),
        "ci95_low": ev.get("ci95_low"),
        "ci95_high": ev.get("ci95_high"),
    }
    basis = ev.get("basis")
    quality = [c for c in codes if c.endswith("_exceeded")]
    if quality:
        allowed = []
        if count_limit is not None:
            allowed.append(f"at most {count_limit}")
        if limit is not None:
            on = "upper 95% bound" if basis == "upper_95" else "observed rate"
            allowed.append(f"{pct(limit)} ({on} {pct(ev.get('compared'))})")
        noun = what if k != 1 else what[:-2]
        text = (
            f"{k} {noun} in {n} human-{human} cases judged pass or fail ({rate_text(rate)}); the"
            " policy allows " + " and ".join(allowed)
        )
        short = f"{k} of {n} {what} ({pct(ev.get('rate'))}), over " + " and ".join(
            a.split(" (")[0] for a in allowed
        )
        return text, short, None, None
    to_bound, at_zero, more = sample_figures(ev, have=n, errors=k, limit=limit)
    observed = (
        f"no {what[:-2]}"
        if k == 0
        else (
            f"{k} {what if k != 1 else what[:-2]} (observed {pct(ev.get('rate'))}, within the"
            " limit)"
        )
    )
    if more is None:
        tail = "no sample can show this limit"
    elif to_bound is not None and n < to_bound:
        tail = (
            f"{more} more human-{human} case{'s' if more != 1 else ''} judged pass or fail needed:"
            f" {to_bound} to bound it at half the limit ({at_zero} at zero errors)"
        )
    else:
        tail = (
            f"{more} more human-{human} case{'s' if more != 1 else ''} judged pass or fail (with no"
            f" further {what[:-2]}) would bound it"
        )
    text = (
        f"{observed} in {n} human-{human} cases judged pass or fail, but the upper 95% bound"
        f" {pct(ev.get('ci95_high'))} is above the {pct(limit)} limit: {tail}"
    )
    short = f"{k}/{n} {what}, upper bound {pct(ev.get('ci95_high'))} > {pct(limit)}: " + (
        f"{more} more human-{human} cases needed" if more is not None else "cannot be shown"
    )
    return text, short, more, f"human-{human}"


def _shorten(text: str, limit: int = 110) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def why_lines(groups: Sequence[BlockerGroup], *, max_lines: int = 9) -> list[tuple[str, str, str]]:
    """At most one line per slice (and one per whole-evaluation family): ``(label, badge, text)``.

    Waived groups are left out (they no longer block); when more lines exist than fit, the
    last line says how many more there are.
    """
    lines: list[tuple[str, str, str]] = []
    per_slice: dict[str, list[BlockerGroup]] = {}
    for g in groups:
        if g.waived_by:
            continue
        if g.slice is None:
            lines.append((g.title, g.badge, g.short))
        else:
            per_slice.setdefault(g.slice, []).append(g)
    for name, members in per_slice.items():
        members.sort(key=lambda g: CATEGORY_RANK.get(g.category, 9))
        risk = f" ({members[0].risk})" if members[0].risk else ""
        lines.append((f"{name}{risk}", members[0].badge, "; ".join(g.short for g in members)))
    if len(lines) > max_lines:
        hidden = len(lines) - (max_lines - 1)
        lines = lines[: max_lines - 1] + [("", "", f"{hidden} more: see the blockers below")]
    return lines
