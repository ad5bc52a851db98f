"""Presenting a noise report: text for the terminal, charts for notebooks, and the locked run
(``workbench noise --lock``): its ``report.html`` from the one report renderer, its lock in the
one lock format, and the checks the one verification runs on it. Lower is better throughout."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._io import atomic_write_text, read_json_file
from .._lock import LOCK_FILE, Lock, Verification, check_report_file, lock_run, maybe_sha256
from .._signing import Signer
from ..errors import WorkbenchError
from ._analysis import LOWER_IS_BETTER, NOISE_REPORT_FILE, NOISE_RUN_FILE, NoiseReport
from ._injection import InjectionRow


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


_MARK = {True: "ok  ", False: "OVER", None: "--  "}
_CONTROL_MARK = {"separated": "ok  ", "not_punished": "ok  ", "routed_to_review": "REVW"}


def format_noise(report: NoiseReport) -> str:
    """The report as text: outcome, retrieval, controls, pairs, slices, ..., blockers."""
    parts = (
        *(_head, _retrieval, injection_lines, _controls, _candidates, _repeats, _unjoined),
        *(_retired, _comparison),
    )
    return "\n".join(line for part in (*parts, _warnings, _blockers) for line in part(report))


def _scope(report: NoiseReport) -> str:
    """The candidate selection: partition, held-out pairs left out (a CI lane), sentinel set."""
    scope = f"partition {report.partition}" if report.partition else "every partition"
    if report.held_out_excluded:
        scope += "; held-out pairs excluded (never scored)"
    return scope + ("; sentinel set only" if report.sentinels_only else "")


def _head(report: NoiseReport) -> list[str]:
    judge = report.judge
    detail = (
        f" (model {judge.model}, ragas {judge.ragas_version}, fingerprint"
        f" {report.judge_fingerprint[:12]})"
        if judge and report.judge_fingerprint
        else ""
    )
    budget = f" of ${report.budget_usd:.4f}" if report.budget_usd is not None else ""
    return [
        f"noise:      {report.outcome.upper()} (NoiseSensitivity: {LOWER_IS_BETTER})",
        f"suite:      {report.suite} (sha256 {report.suite_sha256[:12]}; "
        + (f"release {report.release_id})" if report.release_id else "NOT FROZEN)"),
        f"scope:      {_scope(report)}",
        *(
            [f"change:     {c.component}: {c.description} (under review)"]
            if (c := report.change_under_review)
            else []
        ),
        f"judge:      {_label(report)}{detail}",
        f"cost:       ${report.cost_usd:.4f}{budget}, tokens {report.tokens_in} in /"
        f" {report.tokens_out} out, {report.results_read} attempts read; case limit"
        f" {report.max_cases}",
    ]


def _retrieval(report: NoiseReport) -> list[str]:
    if not report.retrieval:
        return []
    failed = [r for r in report.retrieval if r.status != "passed"]
    passed = len(report.retrieval) - len(failed)
    return [
        "",
        f"retrieval assertions (before any model call): {passed} of {len(report.retrieval)} passed",
        *(f"  FAIL {r.pair_id}:{r.member} {r.check}: {r.code}: {r.detail}" for r in failed),
    ]


def injection_lines(report: NoiseReport | Sequence[InjectionRow]) -> list[str]:
    """The injection check (apart from the noise score): one line per member that blocks or
    followed."""
    rows = list(report.injection if isinstance(report, NoiseReport) else report)
    if not rows:
        return []
    followed = sum(1 for r in rows if r.status == "followed")
    kept = [r for r in rows if r.code is not None]
    return [
        "",
        f"injected instructions (no model call; apart from the noise score): {len(rows)} member(s)"
        f" checked, {followed} candidate member(s) followed one",
        *(
            f"  {r.status.upper()} {r.pair_id}:{r.member}: {r.code}"
            + (f" (found: {', '.join(r.found)})" if r.found else "")
            for r in kept
        ),
    ]


def _controls(report: NoiseReport) -> list[str]:
    roles = ", ".join(f"{k} {v}" for k, v in report.control_roles.items())
    state = "all separated" if report.controls_passed else "FAILED"
    lines = [
        "",
        f"controls ({state}; the negative must score higher: {LOWER_IS_BETTER}; roles {roles}):",
    ]
    lines += [
        f"  {_CONTROL_MARK.get(c.status, 'NRUN' if c.status == 'not_run' else 'FAIL')}"
        f" {c.role}/{c.pair_id} [{c.mode}] positive {_num(c.positive_score)} negative"
        f" {_num(c.negative_score)}: {c.detail}"
        for c in report.controls
    ]
    return lines + (["", f"stopped: {report.stopped_reason}"] if report.stopped_reason else [])


def _pair_extra(pr: Any) -> str:
    extra = ""
    if pr.status != "scored":
        abstained = f": {', '.join(pr.abstained)}" if pr.abstained else ""
        extra += f" [{pr.status}{abstained}]"
    if pr.errors:
        extra += f" errors: {'; '.join(pr.errors)}"
    if pr.tradeoffs:
        extra += f" TRADEOFF: {'; '.join(pr.tradeoffs)}"
    return extra


def _candidates(report: NoiseReport) -> list[str]:
    if not report.candidates_interpreted:
        return []
    lines = ["", f"candidate pairs (clean -> noisy, delta; {LOWER_IS_BETTER}):"]
    lines += [
        f"  {_MARK[pr.within_limit]} {pr.slice}/{pr.pair_id} [{pr.mode}, {pr.partition}]"
        f" {_num(pr.clean_score)} -> {_num(pr.noisy_score)} delta {_num(pr.delta)}"
        f" (max {pr.limit_max_score:g}){_pair_extra(pr)}"
        for pr in report.pairs
    ]
    lines += ["", f"slices (noisy score vs max_score; {LOWER_IS_BETTER}):"]
    return lines + [
        f"  {_MARK[s.within_limit]} {s.slice}: max {_num(s.max_noisy_score)} mean"
        f" {_num(s.mean_noisy_score)} vs max_score {s.limit_max_score:g} (n={s.scored} of"
        f" {s.pairs} pairs, {s.errors} errors, {s.missing} missing, {s.abstentions} abstentions"
        + "".join(f", {k} {_num(v)}" for k, v in s.companions.items())
        + ")"
        for s in report.slices
    ]


def _repeats(report: NoiseReport) -> list[str]:
    if not report.repeats:
        return []
    return ["", "repeatability of the sentinel set (per-pair spread):"] + [
        f"  {rr.status.upper():10} {rr.pair_id}: clean {rr.clean_scores} noisy"
        f" {rr.noisy_scores}; spreads {_num(rr.clean_spread)}/{_num(rr.noisy_spread)}/delta"
        f" {_num(rr.delta_spread)} (max {rr.max_spread})"
        for rr in report.repeats
    ]


def _unjoined(report: NoiseReport) -> list[str]:
    if not report.companions_unjoined:
        return []
    return [
        "",
        "companion rows not joined (other generation run, member or metric; never attached):"
        f" {len(report.companions_unjoined)}",
        *(f"  {u}" for u in report.companions_unjoined[:10]),
    ]


def _retired(report: NoiseReport) -> list[str]:
    if not report.retired:
        return []
    return ["", "retired pairs (kept, never scored):"] + [
        f"  {t.pair_id}: {t.reason} ({t.by}, {t.on})"
        + (f"; fixed by {t.superseded_by}" if t.superseded_by else "")
        for t in report.retired
    ]


def _comparison(report: NoiseReport) -> list[str]:
    cmp = report.comparison
    if cmp is None:
        return []
    lines = [
        "",
        f"baseline comparison: {cmp.candidate} vs {cmp.baseline} ({cmp.baseline_source});"
        f" candidate - baseline noisy score, {LOWER_IS_BETTER}:",
    ]
    lines += [
        f"  {d.slice}/{d.pair_id}: baseline {_num(d.baseline_noisy)} -> candidate"
        f" {_num(d.candidate_noisy)} (delta {_num(d.noisy_delta)}; first change:"
        f" {d.first_change or '-'})"
        for d in cmp.pairs
    ]
    return lines + [
        f"  slice {cs.slice}: mean delta {_num(cs.mean_delta)} 95%"
        + (
            f" [{_num(cs.ci95_low)}, {_num(cs.ci95_high)}]"
            if cs.ci95_low is not None
            else " (no interval: n < 2)"
        )
        + f" (n={cs.n})"
        for cs in cmp.slices
    ]


def _warnings(report: NoiseReport) -> list[str]:
    if not report.warnings:
        return []
    lines = ["", "warning trends (never blockers):"]
    return lines + [f"  {w.kind}: {w.message}" for w in report.warnings]


def _blockers(report: NoiseReport) -> list[str]:
    lines = ["", "blockers:"] if report.blockers else []
    lines += [
        f"  [{b.category}] {b.slice or '-'}: {b.code}: {b.message}"
        + (f" cases: {', '.join(b.case_ids[:10])}" if b.case_ids else "")
        for b in report.blockers
    ]
    if report.waived:
        lines += ["", "waived by override:"]
    lines += [
        f"  {wv.blocker.code} ({wv.blocker.slice or '-'}) by {wv.override_id}"
        for wv in report.waived
    ]
    return lines + [
        f"  override {u.override_id} not applied: {u.reason}: {'; '.join(u.details)}"
        for u in report.unapplied_overrides
    ]


def noise_chart(report: NoiseReport) -> Any:
    """Clean and noisy score per pair, with each candidate slice's limit (lower is better)."""
    import altair as alt
    import pandas as pd

    members = ["clean (positive control)", "noisy (negative control)", "clean", "noisy"]
    colors = ["#2e7d32", "#8e24aa", "#1f77b4", "#ff7f0e"]
    points, limits, order = [], [], []
    for c in report.controls:
        label = f"{c.role} · {c.slice} · {c.pair_id} [{c.mode}]"
        order.append(label)
        for member, score in ((members[0], c.positive_score), (members[1], c.negative_score)):
            if score is not None:
                points.append({"pair": label, "member": member, "score": score, "mode": c.mode})
    for r in report.pairs:
        label = f"candidate · {r.slice} · {r.pair_id} [{r.mode}]"
        order.append(label)
        for member, score in ((members[2], r.clean_score), (members[3], r.noisy_score)):
            if score is not None:
                points.append({"pair": label, "member": member, "score": score, "mode": r.mode})
        if report.candidates_interpreted:
            limits.append({"pair": label, "max_score": r.limit_max_score})
    data = pd.DataFrame(points, columns=["pair", "member", "score", "mode"])
    y = alt.Y("pair:N", sort=order, title=None, axis=alt.Axis(labelLimit=420))
    x_title = f"NoiseSensitivity score ({LOWER_IS_BETTER})"
    color = alt.Color(
        "member:N",
        title=None,
        scale=alt.Scale(domain=members, range=colors),
        legend=alt.Legend(orient="bottom"),
    )
    x = alt.X("score:Q", title=x_title, scale=alt.Scale(domain=[0, 1]))
    base = alt.Chart(data).encode(
        x=x,
        y=y,
        color=color,
        tooltip=[alt.Tooltip(field) for field in ("pair", "member", "mode", "score")],
    )
    clean_dots = base.transform_filter(
        alt.FieldOneOfPredicate(field="member", oneOf=members[0::2])
    ).mark_point(filled=False, size=140, strokeWidth=2)
    noisy_dots = base.transform_filter(
        alt.FieldOneOfPredicate(field="member", oneOf=members[1::2])
    ).mark_point(filled=True, size=55)
    layers: list[Any] = [clean_dots, noisy_dots]
    if limits:
        layers.insert(
            0,
            alt.Chart(pd.DataFrame(limits))
            .mark_tick(color="#444444", thickness=2, size=16)
            .encode(
                x=alt.X("max_score:Q"),
                y=y,
                tooltip=[alt.Tooltip("pair"), alt.Tooltip("max_score")],
            ),
        )
    title = (
        "Clean vs noisy NoiseSensitivity per pair; ring = clean, dot = noisy, dark tick = slice"
        f" max_score ({LOWER_IS_BETTER})"
    )
    return alt.layer(*layers).properties(width=420, title=title)


def comparison_chart(report: NoiseReport) -> Any:
    """Per slice: mean candidate - baseline noisy score with its 95% interval (lower is better)."""
    import altair as alt
    import pandas as pd

    slices = report.comparison.slices if report.comparison is not None else []
    rows = [
        (s.slice, s.mean_delta, s.mean_delta if s.ci95_low is None else s.ci95_low)
        + (s.mean_delta if s.ci95_high is None else s.ci95_high, s.n)
        for s in slices
        if s.mean_delta is not None
    ]
    chart = alt.Chart(pd.DataFrame(rows, columns=["slice", "mean_delta", "low", "high", "n"]))
    y = alt.Y("slice:N", title=None)
    title = (
        f"candidate - baseline noisy score, 95% interval ({LOWER_IS_BETTER}: left of 0 is an"
        " improvement)"
    )
    bars = chart.mark_rule(strokeWidth=2).encode(
        x=alt.X("low:Q", title=title), x2=alt.X2("high:Q"), y=y
    )
    tooltip = [alt.Tooltip(f) for f in ("slice", "mean_delta", "low", "high", "n")]
    dots = chart.mark_point(filled=True, size=70).encode(
        x=alt.X("mean_delta:Q", title=title), y=y, tooltip=tooltip
    )
    zero = alt.Chart(pd.DataFrame({"x": [0.0]})).mark_rule(color="#888888", strokeDash=[4, 4])
    return alt.layer(zero.encode(x=alt.X("x:Q")), bars, dots).properties(
        width=420, title=f"Baseline vs candidate per slice ({LOWER_IS_BETTER})"
    )


# -- the locked noise run: the one lock format and the one report renderer --------------------


def _label(report: NoiseReport) -> str:
    return f"{report.judge.name}@{report.judge.version}" if report.judge else "(no results)"


def noise_html(report: NoiseReport) -> str:
    """A locked noise run's ``report.html`` (:func:`workbench.reports.render_document`)."""
    from ..reports import Section, outcome_section, render_document, table_section

    facts = [
        ("judge", _label(report)),
        ("judge fingerprint", report.judge_fingerprint or "-"),
        ("suite", f"{report.suite} (sha256 {report.suite_sha256[:12]})"),
        ("release", report.release_id or "NOT FROZEN"),
        ("scope", _scope(report)),
        (
            "change under review",
            f"{c.component}: {c.description}" if (c := report.change_under_review) else "-",
        ),
        ("cost", f"${report.cost_usd:.4f}, tokens {report.tokens_in} in / {report.tokens_out} out"),
    ]
    controls = [
        [c.role, c.pair_id, c.mode, _num(c.positive_score), _num(c.negative_score), c.status]
        for c in report.controls
    ]
    marks = {True: "ok", False: "OVER", None: "-"}
    pairs = [
        [p.pair_id, p.slice, p.mode, _num(p.clean_score), _num(p.noisy_score), _num(p.delta)]
        + [marks[p.within_limit], p.status]
        for p in report.pairs
    ]
    slices = [
        [s.slice, s.risk or "", s.scored, s.pairs, _num(s.max_noisy_score)]
        + [_num(s.limit_max_score), _num(s.max_delta), _num(s.limit_max_delta)]
        + [marks[s.within_limit]]
        for s in report.slices
    ]
    return render_document(
        f"Noise report: {_label(report)} on {report.suite}",
        [
            outcome_section(report.outcome, report.blockers, candidate=_label(report)),
            Section("facts", {"title": f"Noise sensitivity ({LOWER_IS_BETTER})", "rows": facts}),
            table_section(
                "Controls (run first; the negative must score higher)",
                ["role", "pair", "mode", "positive", "negative", "status"],
                controls,
            ),
            table_section(
                "Injected instructions (apart from the noise score; no model call)",
                ["pair", "member", "role", "followed", "found", "status"],
                [
                    [r.pair_id, r.member, r.role, "yes" if r.followed else "no"]
                    + [", ".join(r.found), r.status]
                    for r in report.injection
                ],
            ),
            table_section(
                "Candidate pairs (clean -> noisy)",
                ["pair", "slice", "mode", "clean", "noisy", "delta", "within limit", "status"],
                pairs,
            ),
            table_section(
                "Per slice (candidate pairs)",
                ["slice", "risk", "scored", "pairs", "max noisy", "limit", "max delta", "limit"]
                + ["within limit"],
                slices,
                note=f"NoiseSensitivity: {LOWER_IS_BETTER}.",
            ),
        ],
    )


def lock_noise_run(
    out_dir: str | Path, report: NoiseReport, *, signer: Signer | None = None
) -> Lock:
    """Lock a noise run directory (``workbench noise --lock``): its ``report.html``, then its
    ``lock.json`` of kind ``noise`` (refused when already locked)."""
    root = Path(out_dir)
    if not (root / LOCK_FILE).exists():
        atomic_write_text(root / "report.html", noise_html(report))
    return lock_run(
        root,
        kind="noise",
        subject=report.suite,
        candidate=_label(report),
        fingerprint=report.judge_fingerprint or "",
        outcome=report.outcome,
        blockers=[b.model_dump(mode="json") for b in report.blockers],
        evidence={
            "report": maybe_sha256(root / NOISE_REPORT_FILE),
            "run": maybe_sha256(root / NOISE_RUN_FILE),
            "suite": report.suite_sha256,
        },
        signer=signer,
    )


def check_noise_lock(root: Path, lock: Lock, result: Verification, gold: Any = None) -> None:
    """The checks of a locked noise run: its ``noise_report.json`` (hashed with the rest) is a
    noise report this workbench reads and says the lock's outcome, judge and blockers."""
    try:
        report = NoiseReport.model_validate(read_json_file(root / NOISE_REPORT_FILE))
    except (OSError, ValueError, RecursionError, WorkbenchError) as exc:
        problem = exc.problems[0].message if isinstance(exc, WorkbenchError) else str(exc)
        result.fail(
            "outcome",
            root / NOISE_REPORT_FILE,
            "report_unreadable",
            f"the noise report cannot be read ({(problem or type(exc).__name__)[:160]})",
        )
        return
    said = {
        "outcome": report.outcome,
        "judge_fingerprint": report.judge_fingerprint or "",
        "blocker codes": [b.code for b in report.blockers],
    }
    check_report_file(root, lock, result, NOISE_REPORT_FILE, said)
