"""Blockers as a reviewer reads them: one group per slice and code family, one line each, the raw
blockers one click away. Nothing here changes a decision; case ids are never shown (control ids
are: the control suite is not held-out data)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..stats import shortfall
from ._format import attr, number, pct, rate_text

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

_FAMILY_PREFIXES = (
    ("control_failed_", "controls"),
    ("cost_", "cost"),
    ("false_pass", "false_pass"),
    ("false_fail", "false_fail"),
    ("abstention", "abstention"),
)
_FAMILY_CODES = {
    "lineage_failed": "lineage",
    "prompt_holds_held_out": "lineage",
    "too_few_cases": "min_n",
    "constant_verdict": "constant",
    **dict.fromkeys(COMPLETENESS, "completeness"),
    **dict.fromkeys(CONSISTENCY, "consistency"),
}


def family(blocker: Any) -> str:
    """The code family of a blocker (``false_pass``, ``controls``, ...)."""
    code = str(attr(blocker, "code", ""))
    if code == "rate_unbounded":
        rate = str((attr(blocker, "evidence", {}) or {}).get("rate", ""))
        return "false_fail" if rate.startswith("false_fail") else "false_pass"
    if code in _FAMILY_CODES:
        return _FAMILY_CODES[code]
    prefixed = next((fam for prefix, fam in _FAMILY_PREFIXES if code.startswith(prefix)), None)
    if prefixed is not None:
        return prefixed
    from ..policy import BLOCKER_CODES

    known = BLOCKER_CODES.get(code)
    return known.feature if known and known.feature in ("migration", "repeatability") else "other"


def sample_figures(
    ev: dict[str, Any], *, have: int, errors: int, limit: float | None
) -> tuple[int | None, int | None, int | None]:
    """``(to bound at half the limit, at zero errors, more)`` of a sample-size blocker."""
    basis: Literal["upper_95", "point"] = "point" if ev.get("basis") == "point" else "upper_95"
    if "more_verdicts_needed" in ev:
        keys = ("verdicts_needed_to_bound_at_half_limit", "verdicts_needed_at_zero_errors")
        return ev.get(keys[0]), ev.get(keys[1]), ev.get("more_verdicts_needed")
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
    short: str
    """A few words for the one-line-per-slice summary."""
    blockers: list[dict[str, Any]] = field(default_factory=list)
    waived_by: list[str] = field(default_factory=list)
    """Override ids, when the group's blockers were waived."""
    more_cases: int | None = None
    """For a sample-size group: how many more decided cases the slice needs."""
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
    """Group ``blockers`` (objects or their JSON dicts) per slice and code family, worst first,
    then the ``waived`` ones."""
    groups = _groups([(b, None) for b in blockers])
    groups.sort(
        key=lambda g: (
            CATEGORY_RANK.get(g.category, 9),
            g.slice is not None,
            g.slice or "",
            g.family,
        )
    )
    return groups + _groups([(attr(w, "blocker"), attr(w, "override_id")) for w in waived])


def _groups(items: list[tuple[Any, str | None]]) -> list[BlockerGroup]:
    keyed: dict[tuple[str | None, str], list[tuple[Any, str | None]]] = {}
    for blocker, override in items:
        keyed.setdefault((attr(blocker, "slice"), family(blocker)), []).append((blocker, override))
    out = []
    for (slice_name, fam), members in keyed.items():
        raw = [_raw(b) for b, _ in members]
        worst = min((r["category"] for r in raw), key=lambda c: CATEGORY_RANK.get(c, 9))
        headline, short, more, of = _describe(fam, raw)
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
    code = str(attr(blocker, "code", ""))
    ids = list(attr(blocker, "case_ids", []) or []) if code.startswith("control_failed_") else []
    return {
        "code": code,
        "category": str(attr(blocker, "category", "")),
        "slice": attr(blocker, "slice"),
        "risk": attr(blocker, "risk"),
        "message": str(attr(blocker, "message", "")),
        "evidence": dict(attr(blocker, "evidence", {}) or {}),
        "evidence_text": [
            (str(k), number(v)) for k, v in (attr(blocker, "evidence", {}) or {}).items()
        ],
        "control_ids": ids,
        "waivable": bool(attr(blocker, "waivable", False)),
    }


def _describe(fam: str, raw: list[dict[str, Any]]) -> tuple[str, str, int | None, str | None]:
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
        text = "; ".join(parts)
        return f"blocking controls failed, so held-out data was not used: {text}", text, None, None
    if fam == "lineage":
        checks = [r["message"].removeprefix("lineage check failed: ") for r in raw]
        return (
            f"lineage checks failed: {'; '.join(checks)}",
            f"failed: {', '.join(checks)}",
            None,
            None,
        )
    first = raw[0]["message"]
    extra = f" (+{len(raw) - 1} more)" if len(raw) > 1 else ""
    return first + extra, _shorten(first) + extra, None, None


_RATE_WORDS = {
    "false_pass": ("fail", "false passes", "false_passes", "human_fails_decided", "human_fails"),
    "false_fail": ("pass", "false fails", "false_fails", "human_passes_decided", "human_passes"),
}


def _rate_family(
    fam: str, codes: list[str], raw: list[dict[str, Any]], ev: dict[str, Any]
) -> tuple[str, str, int | None, str | None]:
    human, what, count_key, total_key, scope_key = _RATE_WORDS[fam]
    limit = next(
        (
            r["evidence"].get("limit")
            for r in raw
            if r["code"] != f"{fam}es_exceeded" and isinstance(r["evidence"].get("limit"), float)
        ),
        None,
    )
    if "rate_unbounded" in codes:
        return _unbounded(human, what, limit, ev.get(scope_key, 0), ev)
    k, n = int(ev.get(count_key, 0)), int(ev.get(total_key, 0))
    if any(c.endswith("_exceeded") for c in codes):
        count_limit = next(
            (r["evidence"].get("limit") for r in raw if r["code"] == "false_passes_exceeded"), None
        )
        return _exceeded(human, what, k, n, (count_limit, limit), ev)
    return _unproven(human, what, k, n, limit, ev)


def _unbounded(
    human: str, what: str, limit: Any, in_scope: Any, ev: dict[str, Any]
) -> tuple[str, str, int | None, str | None]:
    to_bound, at_zero, more = sample_figures(ev, have=0, errors=0, limit=limit)
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
    needed = more if more is not None else "no sample"
    return text, f"no human-{human} case decided: {needed} needed", more, f"human-{human}"


def _exceeded(
    human: str, what: str, k: int, n: int, limits: tuple[Any, Any], ev: dict[str, Any]
) -> tuple[str, str, int | None, str | None]:
    count_limit, limit = limits
    allowed = [] if count_limit is None else [f"at most {count_limit}"]
    if limit is not None:
        on = "upper 95% bound" if ev.get("basis") == "upper_95" else "observed rate"
        allowed.append(f"{pct(limit)} ({on} {pct(ev.get('compared'))})")
    rate = {key: ev.get(key) for key in ("rate", "ci95_low", "ci95_high")}
    text = (
        f"{k} {what if k != 1 else what[:-2]} in {n} human-{human} cases judged pass or fail"
        f" ({rate_text(rate)}); the policy allows " + " and ".join(allowed)
    )
    over = " and ".join(a.split(" (")[0] for a in allowed)
    return text, f"{k} of {n} {what} ({pct(ev.get('rate'))}), over {over}", None, None


def _unproven(
    human: str, what: str, k: int, n: int, limit: Any, ev: dict[str, Any]
) -> tuple[str, str, int | None, str | None]:
    to_bound, at_zero, more = sample_figures(ev, have=n, errors=k, limit=limit)
    one = what[:-2]
    cases = f"human-{human} case{'s' if more != 1 else ''} judged pass or fail"
    observed = (
        f"no {one}"
        if k == 0
        else f"{k} {what if k != 1 else one} (observed {pct(ev.get('rate'))}, within the limit)"
    )
    if more is None:
        tail = "no sample can show this limit"
    elif to_bound is not None and n < to_bound:
        tail = (
            f"{more} more {cases} needed: {to_bound} to bound it at half the limit ({at_zero} at"
            " zero errors)"
        )
    else:
        tail = f"{more} more {cases} (with no further {one}) would bound it"
    high = pct(ev.get("ci95_high"))
    text = (
        f"{observed} in {n} human-{human} cases judged pass or fail, but the upper 95% bound"
        f" {high} is above the {pct(limit)} limit: {tail}"
    )
    needed = f"{more} more human-{human} cases needed" if more is not None else "cannot be shown"
    short = f"{k}/{n} {what}, upper bound {high} > {pct(limit)}: {needed}"
    return text, short, more, f"human-{human}"


def _shorten(text: str, limit: int = 110) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def why_lines(groups: Sequence[BlockerGroup], *, max_lines: int = 9) -> list[tuple[str, str, str]]:
    """``(label, badge, text)``: one line per slice and per whole-evaluation family, waived groups
    left out; beyond ``max_lines``, the last line counts the rest."""
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
