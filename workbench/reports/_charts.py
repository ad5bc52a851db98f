"""Charts for reports and notebooks: Altair specs rendered to inline SVG with vl-convert (no CDN,
no JavaScript). Channel objects, never shorthand strings, and a layered panel's rows given once
to the layer: building the spec that way takes half the time."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .._html import display_html, fragment, safe
from ._format import DASH, attr, kn, pct
from ._slices import STATUS_COLORS, kn_groups, rows_of

TITLE = "Judge error rates by slice"
_LEGEND = (
    "dot: observed rate; bar: 95% interval (over groups where cases share them); black rule:"
    " the policy limit"
)
_METRICS = (("false_pass", "false-pass", "fails"), ("false_fail", "false-fail", "passes"))


def slice_error_data(source: Any, policy: Any = None, gate: Any = None) -> Any:
    """The chart's data: one row per slice and metric (rate, interval, k/n, limit, status)."""
    import pandas as pd

    records = []
    for row in rows_of(source, policy, gate):
        for key, name, humans in _METRICS:
            plain = getattr(row, f"{key}_rate")
            # the interval the gate bounds: over groups when the slice's cases share them
            rate = getattr(row, f"{key}_rate_grouped") or plain
            limit = attr(row.limits, f"max_{key}_rate")
            value = attr(rate, "rate")
            records.append(
                {
                    "slice": f"{row.slice} ({row.risk})" if row.risk else row.slice,
                    "metric": f"{name} rate (of human {humans})",
                    "rate": value,
                    "low": attr(rate, "ci95_low"),
                    "high": attr(rate, "ci95_high"),
                    "k/n": kn_groups(plain, getattr(row, f"{key}_rate_grouped")),
                    "label": kn(plain) + ("" if value is not None else f" {DASH}"),
                    "limit": limit,
                    "basis": attr(row.limits, f"{key}_basis"),
                    "status": row.result,
                    "rate_text": pct(value),
                    "limit_text": pct(limit),
                }
            )
    columns = "slice metric rate low high k/n label limit basis status rate_text limit_text"
    return pd.DataFrame(records, columns=columns.split())


def _tooltips(*fields: str) -> list[Any]:
    import altair as alt

    return [alt.Tooltip(field) for field in fields]


def _limit_rule(data: Any, order: list[str]) -> Any:
    """Each slice's policy limit as a rule mark spanning the slice's row."""
    import altair as alt

    return (
        (alt.Chart(data) if data is not None else alt.Chart())
        .mark_rule(color="black", strokeWidth=2.5)
        .encode(
            x=alt.X("limit:Q"),
            y=alt.Y("slice:N", sort=order, bandPosition=0.08, title=None),
            y2=alt.Y2("slice:N", bandPosition=0.92),
            tooltip=_tooltips("slice", "limit_text", "basis"),
        )
        .transform_filter("datum.limit != null")
    )


def _rate_axes(chart: Any, metric: str, order: list[str]) -> tuple[Any, Any]:
    """The slice rows and the rate interval axis of one panel."""
    import altair as alt

    base = chart.encode(y=alt.Y("slice:N", title=None, sort=order, axis=alt.Axis(labelLimit=220)))
    title = f"{metric}, 95% Wilson interval"
    axis = alt.Axis(format="%")
    return base, alt.X("low:Q", title=title, scale=alt.Scale(domain=[0, 1]), axis=axis)


def slice_error_chart(
    source: Any, policy: Any = None, gate: Any = None, *, title: str = TITLE, width: int = 330
) -> Any:
    """False-pass and false-fail rates per slice (``source``: see :func:`~._slices.rows_of`) with
    95% intervals (Wilson; over groups where a slice's cases share them, as the gate bounds),
    ``policy``'s limits as black rules, slices coloured by their status
    from ``gate``. Rates over no case are left out of the marks (their k/n is still written)."""
    import altair as alt

    data = slice_error_data(source, policy, gate)
    order = list(dict.fromkeys(data["slice"]))
    statuses = [s for s in STATUS_COLORS if s in set(data["status"])]
    color = alt.Color(
        "status:N",
        title="slice result",
        scale=alt.Scale(domain=statuses, range=[STATUS_COLORS[s] for s in statuses]),
        legend=alt.Legend(orient="bottom"),
    )
    panels = []
    for metric in data["metric"].drop_duplicates():
        part = data[data["metric"] == metric]
        base, x = _rate_axes(alt.Chart(), metric, order)
        layers = [
            base.mark_rule(strokeWidth=2.5)
            .encode(x=x, x2=alt.X2("high:Q"), color=color)
            .transform_filter("datum.rate != null"),
            base.mark_point(filled=True, size=70)
            .encode(
                x=alt.X("rate:Q"),
                color=color,
                tooltip=_tooltips("slice", "k/n", "rate_text", "limit_text", "basis", "status"),
            )
            .transform_filter("datum.rate != null"),
            base.mark_text(align="left", dx=6, fontSize=10, color="#444")
            .encode(x=alt.X("high:Q"), text=alt.Text("label:N"))
            .transform_filter("datum.rate != null"),
            base.mark_text(align="left", dx=2, fontSize=10, color="#888")
            .encode(x=alt.XDatum(0), text=alt.Text("label:N"))
            .transform_filter("datum.rate == null"),
        ]
        if part["limit"].notna().any():
            layers.append(_limit_rule(None, order))
        panels.append(
            alt.layer(*layers, data=part).properties(
                width=width, height=max(60, 22 * len(order)), title=metric
            )
        )
    subtitle = f"{_LEGEND}; k/n beside each bar"
    title_ = alt.Title(title, subtitle=subtitle)
    return alt.hconcat(*panels).resolve_scale(color="shared").properties(title=title_)


def candidates_chart(
    reports: Any,
    policy: Any = None,
    *,
    title: str = "False passes and false fails per slice, by candidate",
    width: int = 330,
) -> Any:
    """Several candidates' per-slice rates (``reports``: ``{label: AlignmentReport}``) encoded as
    in :func:`slice_error_chart`, one colour per candidate."""
    import altair as alt
    import pandas as pd

    frames = []
    for label, report in dict(reports).items():
        part = slice_error_data(report, policy)
        part.insert(0, "candidate", label)
        frames.append(part)
    data = pd.concat(frames, ignore_index=True) if frames else slice_error_data([], policy)
    order = list(dict.fromkeys(data["slice"]))
    panels = []
    offset = alt.YOffset("candidate:N")
    color = alt.Color("candidate:N", title="candidate", legend=alt.Legend(orient="bottom"))
    for metric in data["metric"].drop_duplicates():
        part = data[data["metric"] == metric]
        base, x = _rate_axes(alt.Chart(part), metric, order)
        layers = [
            base.mark_rule(strokeWidth=2)
            .encode(x=x, x2=alt.X2("high:Q"), yOffset=offset, color=color)
            .transform_filter("datum.rate != null"),
            base.mark_point(filled=True, size=45)
            .encode(
                x=alt.X("rate:Q"),
                yOffset=offset,
                color=color,
                tooltip=_tooltips("candidate", "slice", "k/n", "rate_text", "limit_text", "status"),
            )
            .transform_filter("datum.rate != null"),
        ]
        limits = part.drop_duplicates("slice")
        if limits["limit"].notna().any():
            layers.append(_limit_rule(limits, order))
        panels.append(
            alt.layer(*layers).properties(
                width=width, height=max(80, 12 * len(order) * max(1, len(reports))), title=metric
            )
        )
    return alt.hconcat(*panels).properties(title=alt.Title(title, subtitle=_LEGEND))


def confusion_heatmap(
    confusion: Any,
    *,
    abstain_labels: Sequence[str] = (),
    title: str = "Confusion: adjudicated label (rows) x judge (columns)",
) -> Any:
    """A heatmap of an alignment report's ``confusion`` (or its dict), counts in the cells,
    disagreements (not abstentions, errors or missing) outlined in red."""
    import altair as alt
    import pandas as pd

    rows, columns, counts = (attr(confusion, key) for key in ("rows", "columns", "counts"))

    def kind(human: str, judge: str) -> str:
        if human == judge:
            return "agree"
        if judge.startswith("("):
            return "no verdict"
        return "abstained" if judge in abstain_labels else "disagree"

    data = pd.DataFrame(
        [
            {"human": human, "judge": judge, "n": int(counts[i][j]), "kind": kind(human, judge)}
            for i, human in enumerate(rows)
            for j, judge in enumerate(columns)
        ]
    )
    top = max(1, int(data["n"].max()) if len(data) else 1)
    base = alt.Chart().encode(
        x=alt.X(
            "judge:N", sort=list(columns), title="judge", axis=alt.Axis(labelAngle=0, orient="top")
        ),
        y=alt.Y("human:N", sort=list(rows), title="adjudicated"),
    )
    cells = base.mark_rect(stroke="white", strokeWidth=2).encode(
        color=alt.Color("n:Q", scale=alt.Scale(scheme="blues", domain=[0, top]), legend=None),
        tooltip=_tooltips("human", "judge", "n", "kind"),
    )
    text = base.mark_text(fontSize=13).encode(
        text=alt.Text("n:Q"),
        color=alt.condition(f"datum.n > {top / 2}", alt.value("white"), alt.value("#1f2328")),
    )
    outline = base.mark_rect(fill=None, stroke="#cf222e", strokeWidth=2).transform_filter(
        "datum.kind == 'disagree' && datum.n > 0"
    )
    return alt.layer(cells, outline, text, data=data).properties(
        width=70 * len(columns), height=34 * len(rows), title=title
    )


_SWEEP_SERIES = (
    ("false-pass rate", "false_pass_rate"),
    ("false-pass upper 95% bound", "false_pass_rate_upper_95"),
    ("false-fail rate", "false_fail_rate"),
)


def threshold_sweep_chart(
    sweep: Any,
    *,
    limit: float | None = None,
    basis: str = "upper_95",
    chosen: float | None = None,
    max_false_fail_rate: float | None = None,
    title: str = "Threshold sweep on calibration",
) -> Any:
    """A score judge's error rates at every threshold (``sweep``:
    :func:`workbench.phases.threshold_sweep`'s frame), the limits drawn, thresholds over them in
    red, the ``chosen`` one marked."""
    import altair as alt

    data = _sweep_data(sweep, limit, basis, max_false_fail_rate)
    low_x = float(data["threshold"].min()) if len(data) else 0.0
    high_x = float(data["threshold"].max()) if len(data) else 1.0
    pad = max(0.02, 0.06 * (high_x - low_x))
    xscale = alt.Scale(domain=[low_x - pad, high_x + pad], nice=False)
    base = alt.Chart(data).encode(
        x=alt.X(
            "threshold:Q", title="threshold (pass when the score is at least this)", scale=xscale
        )
    )
    layers = [
        *_sweep_layers(alt, base),
        *_sweep_marks(alt, limit, basis, chosen, max_false_fail_rate, low_x),
    ]
    subtitle = (
        "red points: a limit is not met at that threshold; black line: the policy's false-pass"
        " limit"
    )
    return (
        alt.layer(*layers)
        .resolve_scale(color="independent")
        .properties(width=560, height=280, title=alt.Title(title, subtitle=subtitle))
    )


def _over(value: Any, limit: float | None) -> bool:
    return limit is not None and value is not None and not _nan(value) and float(value) > limit


def _sweep_data(sweep: Any, limit: float | None, basis: str, ff_limit: float | None) -> Any:
    import pandas as pd

    finite = sweep[sweep["threshold"].map(lambda t: math.isfinite(float(t)))]
    compared = "false_pass_rate_upper_95" if basis == "upper_95" else "false_pass_rate"
    rows = []
    for _, r in finite.iterrows():
        fails = _over(r[compared], limit) or _over(r["false_fail_rate"], ff_limit)
        rows += [
            {
                "threshold": float(r["threshold"]),
                "series": series,
                "value": float(r[column]),
                "meets": "fails a limit" if fails else "meets the limits",
                "fp": f"{int(r['false_passes'])}/{int(r['human_fails'])}",
                "ff": f"{int(r['false_fails'])}/{int(r['human_passes'])}",
                "agreement": float(r["agreement"]),
            }
            for series, column in _SWEEP_SERIES
            if r[column] is not None and not _nan(r[column])
        ]
    columns = ["threshold", "series", "value", "meets", "fp", "ff", "agreement"]
    return pd.DataFrame(rows, columns=columns)


def _sweep_layers(alt: Any, base: Any) -> list[Any]:
    lines = base.mark_line(interpolate="step-after").encode(
        y=alt.Y("value:Q", title="rate", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%")),
        color=alt.Color(
            "series:N",
            title=None,
            scale=alt.Scale(
                domain=[series for series, _ in _SWEEP_SERIES],
                range=["#cf222e", "#ff8182", "#0969da"],
            ),
            legend=alt.Legend(orient="bottom"),
        ),
        strokeDash=alt.condition(
            "datum.series == 'false-pass upper 95% bound'", alt.value([5, 3]), alt.value([1, 0])
        ),
    )
    points = base.mark_point(filled=True, size=45).encode(
        y=alt.Y("value:Q"),
        color=alt.Color(
            "meets:N",
            title=None,
            scale=alt.Scale(
                domain=["meets the limits", "fails a limit"], range=["#1a7f37", "#cf222e"]
            ),
            legend=alt.Legend(orient="bottom"),
        ),
        tooltip=[
            *_tooltips("threshold", "series"),
            alt.Tooltip("value:Q", format=".1%"),
            *_tooltips("fp", "ff"),
            alt.Tooltip("agreement:Q", format=".1%"),
        ],
    )
    return [lines, points]


def _sweep_marks(
    alt: Any,
    limit: float | None,
    basis: str,
    chosen: float | None,
    ff_limit: float | None,
    low_x: float,
) -> list[Any]:
    import pandas as pd

    marks = alt.Chart(pd.DataFrame([{"limit": limit, "chosen": chosen, "ff_limit": ff_limit}]))
    layers: list[Any] = []
    if limit is not None:
        on = "upper 95% bound" if basis == "upper_95" else "observed rate"
        label = alt.TextValue(f"false-pass limit {pct(limit)} ({on})")
        layers += [
            marks.mark_rule(color="black", strokeWidth=2).encode(y=alt.Y("limit:Q")),
            marks.mark_text(align="left", dx=4, dy=-7, color="black").encode(
                y=alt.Y("limit:Q"), x=alt.XDatum(low_x), text=label
            ),
        ]
    if ff_limit is not None:
        layers.append(
            marks.mark_rule(color="#0969da", strokeDash=[2, 2]).encode(y=alt.Y("ff_limit:Q"))
        )
    if chosen is not None and math.isfinite(chosen):
        label = alt.TextValue(f"frozen threshold {chosen:g}")
        layers += [
            marks.mark_rule(color="#8250df", strokeWidth=2).encode(x=alt.X("chosen:Q")),
            marks.mark_text(align="right", dx=-4, y=8, color="#8250df").encode(
                x=alt.X("chosen:Q"), text=label
            ),
        ]
    return layers


def _nan(value: Any) -> bool:
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return False


def to_svg(chart: Any) -> str:
    """Render an Altair chart to an SVG string, offline."""
    import vl_convert

    return vl_convert.vegalite_to_svg(chart.to_dict())


def svg_display(chart: Any) -> Any:
    """An IPython display object holding the chart as inline ``<svg>`` HTML."""

    return display_html(str(fragment("fragments.html.j2", "chart", safe(to_svg(chart)))))


def reliability_chart(calibration: Any, *, title: str = "Score calibration") -> Any:
    """A reliability diagram of :func:`workbench.stats.score_calibration`: each non-empty bin's
    share of human passes (95% Wilson bar) at its mean score, the diagonal a calibrated score
    follows, the ECE with its interval in the subtitle."""
    import altair as alt
    import pandas as pd

    data = pd.DataFrame(
        [
            {
                "mean score": b.mean_score,
                "human passes": b.observed.rate,
                "low": b.observed.ci95_low,
                "high": b.observed.ci95_high,
                "cases": b.observed.n,
                "k/n": kn(b.observed),
            }
            for b in calibration.bins
            if b.observed.n
        ],
        columns=["mean score", "human passes", "low", "high", "cases", "k/n"],
    )
    unit = alt.Scale(domain=[0, 1])
    diagonal = (
        alt.Chart(pd.DataFrame({"x": [0.0, 1.0], "y": [0.0, 1.0]}))
        .mark_line(color="#8c959f", strokeDash=[4, 4])
        .encode(x=alt.X("x:Q", scale=unit), y=alt.Y("y:Q", scale=unit))
    )
    base = alt.Chart(data).encode(
        x=alt.X("mean score:Q", scale=unit, title="judge score (mean of the bin)")
    )
    bars = base.mark_rule(color="#0969da").encode(
        y=alt.Y("low:Q", scale=unit, title="share of human passes"), y2=alt.Y2("high:Q")
    )
    points = base.mark_circle(color="#0969da", opacity=1).encode(
        y=alt.Y("human passes:Q", scale=unit),
        size=alt.Size("cases:Q", legend=None),
        tooltip=_tooltips("mean score", "k/n"),
    )
    ece = calibration.ece
    subtitle = (
        f"ECE {ece:.3f}, 95% cluster bootstrap [{calibration.ece_ci95_low:.3f},"
        f" {calibration.ece_ci95_high:.3f}] over {calibration.n} cases in {calibration.groups}"
        " groups; dashed: a calibrated score"
        if ece is not None and calibration.ece_ci95_low is not None
        else "no scored case"
    )
    return alt.layer(diagonal, bars, points).properties(
        width=320, height=320, title=alt.Title(title, subtitle=subtitle)
    )
