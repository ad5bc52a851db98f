"""Presenting a noise report: text for the terminal and a chart for notebooks. Lower is better
throughout."""

from __future__ import annotations

from typing import Any

from ._analysis import LOWER_IS_BETTER, NoiseReport


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def format_noise(report: NoiseReport) -> str:
    """Human-readable text: outcome, retrieval checks, controls, pairs, slices, repeats, comparison,
    blockers."""
    lines = [
        f"noise:      {report.outcome.upper()} (NoiseSensitivity: {LOWER_IS_BETTER})",
        f"suite:      {report.suite} (sha256 {report.suite_sha256[:12]}; "
        + (f"release {report.release_id})" if report.release_id else "NOT FROZEN)"),
        f"scope:      {'partition ' + report.partition if report.partition else 'every partition'}"
        + ("; sentinel set only" if report.sentinels_only else ""),
        "judge:     "
        f" {report.judge.name + '@' + report.judge.version if report.judge else '(no results)'}"
        + (
            f" (model {report.judge.model}, ragas {report.judge.ragas_version}, fingerprint"
            f" {report.judge_fingerprint[:12]})"
            if report.judge and report.judge_fingerprint
            else ""
        ),
        f"cost:       ${report.cost_usd:.4f}"
        + (f" of ${report.budget_usd:.4f}" if report.budget_usd is not None else "")
        + f", tokens {report.tokens_in} in / {report.tokens_out} out, {report.results_read}"
        f" attempts read; case limit {report.max_cases}",
    ]
    if report.retrieval:
        failed = [r for r in report.retrieval if r.status != "passed"]
        lines += [
            "",
            (
                "retrieval assertions (before any model call):"
                f" {len(report.retrieval) - len(failed)} of {len(report.retrieval)} passed"
            ),
        ]
        for r in failed:
            lines.append(f"  FAIL {r.pair_id}:{r.member} {r.check}: {r.code}: {r.detail}")
    lines += [
        "",
        (
            f"controls ({'all separated' if report.controls_passed else 'FAILED'}; the negative"
            f" must score higher: {LOWER_IS_BETTER}; roles"
            f" {', '.join(f'{k} {v}' for k, v in report.control_roles.items())}):"
        ),
    ]
    for c in report.controls:
        mark = {
            "separated": "ok  ",
            "not_punished": "ok  ",
            "routed_to_review": "REVW",
            "not_run": "NRUN",
        }.get(c.status, "FAIL")
        lines.append(
            f"  {mark} {c.role}/{c.pair_id} [{c.mode}] positive {_num(c.positive_score)} negative"
            f" {_num(c.negative_score)}: {c.detail}"
        )
    if report.stopped_reason:
        lines += ["", f"stopped: {report.stopped_reason}"]
    if report.candidates_interpreted:
        lines += ["", f"candidate pairs (clean -> noisy, delta; {LOWER_IS_BETTER}):"]
        for pr in report.pairs:
            mark = {True: "ok  ", False: "OVER", None: "--  "}[pr.within_limit]
            extra = ""
            if pr.status != "scored":
                extra += (
                    f" [{pr.status}"
                    + (f": {', '.join(pr.abstained)}" if pr.abstained else "")
                    + "]"
                )
            if pr.errors:
                extra += f" errors: {'; '.join(pr.errors)}"
            if pr.tradeoffs:
                extra += f" TRADEOFF: {'; '.join(pr.tradeoffs)}"
            lines.append(
                f"  {mark} {pr.slice}/{pr.pair_id} [{pr.mode}, {pr.partition}]"
                f" {_num(pr.clean_score)} -> {_num(pr.noisy_score)} delta {_num(pr.delta)}"
                f" (max {pr.limit_max_score:g}){extra}"
            )
        lines += ["", f"slices (noisy score vs max_score; {LOWER_IS_BETTER}):"]
        for s in report.slices:
            mark = {True: "ok  ", False: "OVER", None: "--  "}[s.within_limit]
            comp = "".join(f", {k} {_num(v)}" for k, v in s.companions.items())
            lines.append(
                f"  {mark} {s.slice}: max {_num(s.max_noisy_score)} mean {_num(s.mean_noisy_score)}"
                f" vs max_score {s.limit_max_score:g} (n={s.scored} of {s.pairs} pairs, {s.errors}"
                f" errors, {s.missing} missing, {s.abstentions} abstentions{comp})"
            )
    if report.repeats:
        lines += ["", "repeatability of the sentinel set (per-pair spread):"]
        for rr in report.repeats:
            lines.append(
                f"  {rr.status.upper():10} {rr.pair_id}: clean {rr.clean_scores} noisy"
                f" {rr.noisy_scores}; spreads {_num(rr.clean_spread)}/{_num(rr.noisy_spread)}/delta"
                f" {_num(rr.delta_spread)} (max {rr.max_spread})"
            )
    if report.companions_unjoined:
        lines += [
            "",
            (
                "companion rows not joined (other generation run, member or metric; never"
                f" attached): {len(report.companions_unjoined)}"
            ),
        ]
        lines += [f"  {u}" for u in report.companions_unjoined[:10]]
    if report.retired:
        lines += ["", "retired pairs (kept, never scored):"]
        for t in report.retired:
            lines.append(
                f"  {t.pair_id}: {t.reason} ({t.by}, {t.on})"
                + (f"; fixed by {t.superseded_by}" if t.superseded_by else "")
            )
    cmp = report.comparison
    if cmp is not None:
        lines += [
            "",
            (
                f"baseline comparison: {cmp.candidate} vs {cmp.baseline} ({cmp.baseline_source});"
                f" candidate - baseline noisy score, {LOWER_IS_BETTER}:"
            ),
        ]
        for d in cmp.pairs:
            lines.append(
                f"  {d.slice}/{d.pair_id}: baseline {_num(d.baseline_noisy)} -> candidate"
                f" {_num(d.candidate_noisy)} (delta {_num(d.noisy_delta)}; first change:"
                f" {d.first_change or '-'})"
            )
        for cs in cmp.slices:
            interval = (
                f"[{_num(cs.ci95_low)}, {_num(cs.ci95_high)}]"
                if cs.ci95_low is not None
                else "(no interval: n < 2)"
            )
            lines.append(
                f"  slice {cs.slice}: mean delta {_num(cs.mean_delta)} 95% {interval} (n={cs.n})"
            )
    if report.warnings:
        lines += ["", "warning trends (never blockers):"]
        for w in report.warnings:
            lines.append(f"  {w.kind}: {w.message}")
    if report.blockers:
        lines += ["", "blockers:"]
        for b in report.blockers:
            lines.append(
                f"  [{b.category}] {b.slice or '-'}: {b.code}: {b.message}"
                + (f" cases: {', '.join(b.case_ids[:10])}" if b.case_ids else "")
            )
    if report.waived:
        lines += ["", "waived by override:"]
        for wv in report.waived:
            lines.append(f"  {wv.blocker.code} ({wv.blocker.slice or '-'}) by {wv.override_id}")
    for u in report.unapplied_overrides:
        lines.append(f"  override {u.override_id} not applied: {u.reason}: {'; '.join(u.details)}")
    return "\n".join(lines)


def noise_chart(report: NoiseReport) -> Any:
    """Clean and noisy score per pair (controls and candidates) with each candidate slice's limit.
    Lower is better."""
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

    cmp = report.comparison
    rows = (
        []
        if cmp is None
        else [
            {
                "slice": s.slice,
                "mean_delta": s.mean_delta,
                "low": s.ci95_low if s.ci95_low is not None else s.mean_delta,
                "high": s.ci95_high if s.ci95_high is not None else s.mean_delta,
                "n": s.n,
            }
            for s in cmp.slices
            if s.mean_delta is not None
        ]
    )
    data = pd.DataFrame(rows, columns=["slice", "mean_delta", "low", "high", "n"])
    y = alt.Y("slice:N", title=None)
    title = (
        f"candidate - baseline noisy score, 95% interval ({LOWER_IS_BETTER}: left of 0 is an"
        " improvement)"
    )
    x = alt.X("mean_delta:Q", title=title)
    bars = (
        alt.Chart(data)
        .mark_rule(strokeWidth=2)
        .encode(x=alt.X("low:Q", title=title), x2=alt.X2("high:Q"), y=y)
    )
    dots = (
        alt.Chart(data)
        .mark_point(filled=True, size=70)
        .encode(
            x=x,
            y=y,
            tooltip=[alt.Tooltip(f) for f in ("slice", "mean_delta", "low", "high", "n")],
        )
    )
    zero = (
        alt.Chart(pd.DataFrame({"x": [0.0]}))
        .mark_rule(color="#888888", strokeDash=[4, 4])
        .encode(x=alt.X("x:Q"))
    )
    return alt.layer(zero, bars, dots).properties(
        width=420, title=f"Baseline vs candidate per slice ({LOWER_IS_BETTER})"
    )
