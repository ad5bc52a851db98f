"""What a certification report shows, as escaped HTML fragments and DataFrames; held-out
results appear only as counts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from .._html import display_html, fragment, render, safe
from .._io import sha256_file
from ..align import AlignmentReport, Join
from ..gold import Rubric
from ..heldout import held_out_use_line
from ..outcomes import style as outcome_style
from ._blockers import group_blockers, why_lines
from ._format import DASH, DASH_NOTE, attr
from ._render import Section, wrap
from ._slices import slice_rows
from ._tables import SLICE_COLUMNS


def outcome_section(
    outcome: str,
    blockers: Sequence[Any],
    *,
    candidate: str,
    waived: Sequence[Any] = (),
    rerun_reason: str | None = None,
) -> Section:
    """The banner a reviewer reads first: outcome, then every blocker with its evidence."""
    shown = outcome_style(outcome)
    banner = {
        "outcome": outcome,
        "color": shown.color,
        "background": shown.background,
        "title": shown.title,
        "candidate": candidate,
        "rerun_reason": rerun_reason,
        "blockers": [
            {
                **{key: attr(b, key) for key in ("code", "category", "slice", "message")},
                "evidence": [
                    (k, f"{v:.4g}" if isinstance(v, float) else str(v))
                    for k, v in (attr(b, "evidence") or {}).items()
                ],
            }
            for b in blockers
        ],
        "waived": len(waived),
    }
    return Section("outcome", banner)


def key_value_html(title: str, rows: Iterable[tuple[str, Any]]) -> str:
    """A two-column table of escaped labels and values."""
    return str(fragment("fragments.html.j2", "key_value", title, list(rows)))


NOT_DECLARED = "(not declared: validate --strict refuses this rubric)"


def rubric_contract_html(rubric: Rubric) -> str:
    """The rubric's judgment contract, escaped: criterion, unit, allowed evidence, use boundary,
    label boundaries, precedence, ambiguity rule and error costs per slice (shown beside the
    policy's limits, which stay the gate's rule)."""

    def text(value: Any) -> str:
        return str(value) if value else NOT_DECLARED

    rows: list[tuple[str, Any]] = [
        ("rubric", f"{rubric.name} {rubric.version}"),
        ("criterion", text(rubric.criterion.strip())),
        ("unit of judgment", text(rubric.unit.strip())),
        ("allowed evidence", text(", ".join(rubric.allowed_evidence or []))),
        ("use boundary", text(rubric.use_boundary.strip())),
        ("precedence", text(" > ".join(rubric.precedence))),
        ("ambiguity", text(rubric.ambiguity.rule() if rubric.ambiguity else "")),
    ]
    rows += [(f"label {label}", text(rubric.boundaries.get(label))) for label in rubric.labels]
    for name, spec in rubric.slices.items():
        cost = rubric.error_costs.get(name)
        shown = NOT_DECLARED
        if cost is not None:
            abstention = "" if cost.abstention is None else f", abstention {cost.abstention:g}"
            why = f" ({cost.why})" if cost.why else ""
            shown = (
                f"false pass {cost.false_pass:g}, false fail {cost.false_fail:g}{abstention}{why}"
            )
        rows.append((f"error costs: {name} ({spec.risk.value})", shown))
    note = (
        "Error costs are the rubric's statement of what each kind of error costs in a slice; the"
        " policy's per-slice limits above decide the outcome."
    )
    rows.append(("", note))
    return key_value_html("Rubric contract", rows)


def disagreement_counts(join: Join) -> Any:
    """Held-out cases by slice and error class (no case ids), with ``abstained`` (also counted in
    their class), ``decided`` (verdicts that are not abstentions), ``cases`` and ``coverage`` =
    decided / cases."""
    import pandas as pd

    abstain = set(join.dataset.rubric.abstain_labels)
    counts = Counter((c.slice, c.error_class) for c in join.cases)
    abstained = Counter(
        c.slice for c in join.cases if c.outcome == "verdict" and c.judge_label in abstain
    )
    decided = Counter(
        c.slice for c in join.cases if c.outcome == "verdict" and c.judge_label not in abstain
    )
    cases = Counter(c.slice for c in join.cases)
    classes: list[Any] = ["aligned", "false_pass", "false_fail", "disagreement", "error", "missing"]
    slices = list(dict.fromkeys(c.slice for c in join.cases))
    frame = pd.DataFrame(
        [
            [counts.get((s, k), 0) for k in classes] + [abstained[s], decided[s], cases[s]]
            for s in slices
        ],
        index=slices,
        columns=[*classes, "abstained", "decided", "cases"],
    )
    frame.loc["(all)"] = frame.sum()
    frame["coverage"] = [
        round(d / n, 4) if n else None
        for d, n in zip(frame["decided"], frame["cases"], strict=True)
    ]
    frame.index.name = "slice"
    return frame


def cost_latency(rows: Sequence[dict[str, Any]]) -> Any:
    """Calls, tokens, cost and latency percentiles over every recorded attempt."""
    import numpy as np
    import pandas as pd

    latencies = np.array([r["latency_s"] for r in rows if r.get("latency_s") is not None], float)
    row: dict[str, Any] = {
        "attempts": len(rows),
        "cases": len({(r["case_id"], r.get("repeat", 0)) for r in rows}),
        "tokens_in": sum(int(r.get("tokens_in") or 0) for r in rows),
        "tokens_out": sum(int(r.get("tokens_out") or 0) for r in rows),
        "cost_usd": round(sum(float(r.get("cost_usd") or 0.0) for r in rows), 6),
    }
    for q in (50, 95):
        row[f"latency_p{q}_s"] = (
            round(float(np.percentile(latencies, q)), 3) if latencies.size else None
        )
    return pd.DataFrame([row])


def cost_by_slice(rows: Sequence[dict[str, Any]], dataset: Any) -> Any:
    """Cost and tokens per judged case by slice (critical first), then ``(all)``: total, median,
    p95 and max per case (:func:`workbench.results.slice_costs`)."""
    import pandas as pd

    from ..results import slice_costs

    slice_of = {case_id: case.slice for case_id, case in dataset.cases.items()}
    risks = {name: dataset.rubric.risk_of(name) for name in dataset.rubric.slices}
    frame = pd.DataFrame(
        [
            {
                "slice": c.slice,
                "risk": c.risk or "",
                "cases": c.cases,
                "calls": c.calls,
                "cost_usd_total": round(c.cost_usd.total, 6),
                **{
                    f"{name}_{stat}": getattr(getattr(c, name), stat)
                    for name in ("cost_usd", "tokens_in", "tokens_out")
                    for stat in ("median", "p95", "max")
                },
            }
            for c in slice_costs(rows, slice_of, risks)
        ]
    )
    return frame.set_index("slice")


def agreement_summary(report: AlignmentReport, human: Any) -> Any:
    """Judge-human kappa beside human-human agreement on the same cases, per slice, with coverage
    and abstention rate; on an ordered rubric the kappa is labelled nominal and the weighted
    kappas follow."""
    import pandas as pd

    ordered = report.scale != "nominal"
    rows = []
    for s in [*report.slices, report.overall]:
        block = human.overall if s.slice == "(all)" else human.slices.get(s.slice)
        kappa = "judge_vs_adjudicated_kappa"
        kappas: dict[str, Any] = {kappa: s.cohen_kappa.value}
        if ordered:
            weighted = {
                f"{kappa} ({w} weighted)": (
                    getattr(s.ordinal, f"weighted_kappa_{w}").value if s.ordinal else None
                )
                for w in ("linear", "quadratic")
            }
            kappas = {f"{kappa} (nominal)": s.cohen_kappa.value, **weighted}
        rows.append(
            {
                "slice": s.slice,
                "n": s.n,
                "coverage": s.coverage.rate,
                "abstention_rate": s.abstention_rate.rate,
                **kappas,
                "judge_agreement": s.agreement.rate,
                **_human_alphas(block, report.scale),
                "human_disagreement_rate": block.disagreement.rate if block else None,
            }
        )
    return pd.DataFrame(rows).set_index("slice")


def _human_alphas(block: Any, scale: str) -> dict[str, Any]:
    nominal = block.krippendorff_alpha.value if block else None
    if scale == "nominal":
        return {"human_krippendorff_alpha": nominal}
    level = "interval" if scale == "numeric" else "ordinal"
    ordered = getattr(block, f"krippendorff_alpha_{level}", None) if block else None
    return {
        "human_krippendorff_alpha (nominal)": nominal,
        f"human_krippendorff_alpha ({level})": ordered.value if ordered is not None else None,
    }


NOT_USED_NOTE = (
    "No held-out figure exists for this report: the held-out partition was not used (see the"
    " outcome)."
)


def previous_certification(
    entries: Sequence[Any], name: str, *, before: str | None = None, certified: bool = False
) -> dict[str, Any] | None:
    """The last finished certification of judge ``name`` (any version; with ``certified``, only a
    certified one) in the ledger ``entries`` before the entry ``before``: candidate, outcome,
    report id, when."""
    started = {e.entry_id for e in entries if e.event == "started"}
    ids = [e.entry_id for e in entries]
    cut = ids.index(before) if before in ids else len(entries)
    found = [
        e
        for e in entries[:cut]
        if e.event == "finished"
        and e.opens in started
        and e.candidate.split("@", 1)[0] == name
        and (not certified or e.outcome == "certified")
    ]
    keys = ("candidate", "outcome", "report_id", "when")
    return {k: getattr(found[-1], k) for k in keys} if found else None


def last_certified(
    entries: Sequence[Any], name: str, *, before: str | None = None
) -> dict[str, Any] | None:
    """The last certification of ``name`` whose outcome was ``certified`` (before ``before``)."""
    return previous_certification(entries, name, before=before, certified=True)


def next_step(outcome: str, groups: Sequence[Any], *, held_out_used: bool) -> str:
    """One sentence: what to do next, for this outcome and these blocker groups."""
    active = [g for g in groups if not g.waived_by]
    families = {g.family for g in active}
    if outcome == "certified":
        waived = sum(1 for g in groups if g.waived_by)
        extra = (
            f" {waived} problem(s) were waived by approved overrides: follow them up before they"
            " expire."
            if waived
            else ""
        )
        return (
            "The judge may gate releases within this policy's slices; keep this report, and certify"
            " again when the judge, the rubric, the policy or the gold release changes." + extra
        )
    if outcome == "quality_failed" and "controls" in families and not held_out_used:
        return "Controls failed; held-out data was not used; fix the judge and certify again."
    if outcome == "quality_failed":
        return (
            "The judge missed the policy's limits on held-out data, which is now spent for this"
            " candidate: fix the judge on development data, select on calibration, and certify a"
            " new version."
        )
    if outcome == "review_required":
        sample = [g for g in active if g.sample_only and g.more_cases is not None]
        if sample and len(sample) == len(active):
            needs = ", ".join(f"{g.slice} +{g.more_cases} {g.more_of}" for g in sample)
            return (
                "The judge broke no limit, but the sample is too small to show it: add held-out"
                f" cases ({needs}), freeze a new gold release and certify again."
            )
        return (
            "A person must decide: resolve the review blockers below (inputs that do not fit,"
            " spend, or too little evidence), or record an approved override where one is allowed,"
            " and certify again."
        )
    codes = sorted({b["code"] for g in active for b in g.blockers if g.category == "incomplete"})
    return (
        f"Evidence is missing ({', '.join(codes) or 'see the blockers'}), so nothing was decided:"
        " fix the cause and certify again (with --rerun-reason if the held-out partition was"
        " used)."
    )


def _pseudo_figures(dataset: Any) -> list[dict[str, Any]]:
    counts = Counter(c.slice for c in dataset.partition("held_out"))
    risk = dataset.rubric.risk_of
    return [
        {"slice": s, "risk": risk(s), "n": counts.get(s, 0), "decided": 0}
        for s in dataset.rubric.slices
    ]


def dataset_name(card: Any) -> str | None:
    """The dataset's name and version from its card (``card.md``), or None without a name."""
    name = attr(card, "name")
    return " ".join(str(p) for p in (name, attr(card, "version")) if p) if name else None


def slices_html(rows: Sequence[Any], *, note: str | None = None) -> str:
    """The report's per-slice table."""

    columns = [c for c in SLICE_COLUMNS if c != "abstained"]
    records = []
    has_dash = False
    for row in rows:
        record = row.record()
        has_dash = has_dash or any(record[c] == DASH for c in columns if c not in ("risk",))
        css = {"fail": "over", "incomplete": "over", "review": "review"}.get(row.result, "")
        result_css = {"not run": "notrun", DASH: "dash"}.get(row.result, row.result)
        records.append(
            {
                "cells": [(c, record[c], c in ("n", "FP k/n", "FF k/n")) for c in columns],
                "css": css,
                "slice": row.slice,
                "result": row.result,
                "result_css": result_css,
            }
        )
    rates = (
        "Rates are over cases judged pass or fail; FP over human fails, FF over human passes;"
        " abstentions, errors and missing results are in neither. Interval: 95% Wilson."
    )
    notes = [*([note] if note else []), rates, *([DASH_NOTE] if has_dash else [])]
    return render("slices.html.j2", columns=columns, rows=records, footnotes=notes)


def first_screen(cert: Any, gate: Any) -> Any:
    """The report's first screen: what was certified, the outcome, why, and what to do next."""

    return display_html(first_screen_html(cert, gate))


def first_screen_html(cert: Any, gate: Any) -> str:
    """:func:`first_screen` as HTML."""

    outcome = str(attr(gate, "outcome"))
    shown = outcome_style(outcome)
    entry = cert.ledger_entry
    held_out_used = cert.alignment is not None
    groups = group_blockers(
        attr(gate, "blockers", []), waived=attr(gate, "waived", []), policy=cert.policy
    )
    why = why_lines(groups) or [("every slice", "PASS", "within the policy's limits")]
    figures = attr(gate, "figures", []) or []
    rows = slice_rows(
        figures if held_out_used and figures else _pseudo_figures(cert.dataset),
        cert.policy,
        gate,
        held_out_used=held_out_used,
    )
    note = None if held_out_used else NOT_USED_NOTE
    entries, name = cert.ledger.entries(), cert.judge.spec.name
    previous = previous_certification(entries, name, before=entry.entry_id)
    certified = last_certified(entries, name, before=entry.entry_id)
    if previous:
        was = outcome_style(str(previous["outcome"]))
        previous = {**previous, "title": was.title, "css": was.css}
    release, policy = cert.dataset.release, cert.policy
    context = {
        "outcome": outcome,
        "title": shown.title,
        "color": shown.color,
        "background": shown.background,
        "report_id": entry.report_id,
        "date": entry.when.strftime("%Y-%m-%d %H:%M UTC"),
        "candidate": cert.judge.spec.label,
        "fingerprint_short": cert.judge.identity.fingerprint()[:12],
        "previous": previous,
        "last_certified": certified,
        "policy": f"{policy.name}@{policy.version}" if policy else "(missing)",
        "policy_sha": sha256_file(cert.policy_path)[:12] if cert.policy_path.exists() else None,
        "dataset_name": dataset_name(cert.dataset.card),
        "release": release.release_id if release else "(not frozen)",
        "dataset_sha": cert.dataset.sha256[:12],
        "rubric": cert.dataset.rubric.version,
        "held_out": (
            f"{len(cert.dataset.partition('held_out'))} cases, "
            + (
                "judged once"
                if held_out_used
                else "not used: certification stopped before held-out data"
            )
            + (f"; {use}" if (use := held_out_use_line(entry)) else "")
        ),
        "rerun_reason": entry.rerun_reason,
        "why": why,
        "next_step": next_step(outcome, groups, held_out_used=held_out_used),
    }
    return wrap(render("summary.html.j2", s=context, slice_table=slices_html(rows, note=note)))


def blockers_html(gate: Any, policy: Any = None, *, title: str | None = None) -> str:
    """Blockers grouped per slice and code family, the detail folded; with ``title``, the whole
    list folds under one line (title, outcome, counts)."""

    groups = group_blockers(
        attr(gate, "blockers", []), waived=attr(gate, "waived", []), policy=policy
    )
    body = render("blockers.html.j2", groups=groups)
    if title is None:
        return wrap(body)
    shown = outcome_style(str(attr(gate, "outcome", "")))
    label, css = shown.title, shown.css
    active = [g for g in groups if not g.waived_by]
    slices = len({g.slice for g in active if g.slice})
    count = f"{len(active)} problem(s) in {slices} slice(s)" if active else "no blocker"
    return wrap(
        str(fragment("fragments.html.j2", "candidate", label, css, title, count, safe(body)))
    )


def blockers_display(gate: Any, policy: Any = None, *, title: str | None = None) -> Any:
    """:func:`blockers_html` as an IPython display object."""

    return display_html(blockers_html(gate, policy, title=title))


def controls_html(report: Any, blocking_roles: Sequence[str] = ()) -> str:
    """The control suite's result grouped by role, failed roles and controls first."""
    if report is None:
        return str(fragment("fragments.html.j2", "no_controls"))
    from ..controls import ROLE_MESSAGES

    rank = {"failed": 0, "incomplete": 1, "passed": 2}
    groups = []
    for role in sorted(
        report.roles, key=lambda r: (rank.get(r.status, 9), r.role not in blocking_roles)
    ):
        rows = sorted(
            (c for c in report.controls if c.role == role.role),
            key=lambda c: (rank.get(c.status, 9), c.control_id),
        )
        groups.append(
            {
                "role": role.role,
                "status": role.status,
                "blocking": role.role in blocking_roles,
                "counts": (
                    f"{role.passed} of {role.n} passed"
                    + (f", {role.failed} failed" if role.failed else "")
                    + (f", {role.incomplete} not evaluated" if role.incomplete else "")
                ),
                "meaning": ROLE_MESSAGES.get(role.role, "") if role.status == "failed" else "",
                "rows": [
                    {
                        "control": c.control_id,
                        "member": " / ".join(x for x in (c.set, c.member) if x),
                        "slice": c.slice or DASH,
                        "expected": " or ".join(c.acceptable),
                        "verdict": c.verdict or (c.error.split(":", 1)[0] if c.error else DASH),
                        "status": c.status,
                        "reason": _short(c.error or c.reason or DASH, 140),
                    }
                    for c in rows
                    if c.status != "passed"
                ],
                "passed": [c.control_id for c in rows if c.status == "passed"],
            }
        )
    suite = f"{report.suite.name}@{report.suite.version}"
    return wrap(render("controls.html.j2", suite=suite, groups=groups, status=report.status))


def _short(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def lineage_html(rows: Sequence[dict[str, Any]]) -> str:
    """The lineage checks as a table."""

    def text(value: Any) -> str:
        return "" if value is None else str(value)

    shown = [
        {"check": r["check"], "ok": bool(r["ok"]), "expected": text(r["expected"])}
        | {"actual": text(r["actual"]), "warning": bool(r.get("warning"))}
        for r in rows
    ]
    return wrap(render("lineage.html.j2", rows=shown))


def not_used_html() -> str:
    """The note that replaces every held-out section when held-out data was not used."""
    return str(fragment("fragments.html.j2", "not_used", NOT_USED_NOTE))
