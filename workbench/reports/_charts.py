"""Charts for reports and notebooks: Altair specs rendered to inline SVG with vl-convert (no CDN, no
JavaScript).

* :func:`slice_error_chart`: false-pass and false-fail rates per slice with 95% Wilson
  intervals, each slice's policy limit as a rule mark, slices coloured by their status
  (:mod:`workbench.reports._status`: read from the gate's blockers, never compared here);
* :func:`confusion_heatmap`: adjudicated label x judge label, counts in the cells;
* :func:`threshold_sweep_chart`: a score judge's false-pass rate (with its upper bound) and
  false-fail rate at every threshold, the policy's limit drawn and the chosen threshold marked.

Encodings are Altair channel objects (``alt.X("rate:Q")``), never bare shorthand strings, and a
layered panel's rows are given once, to the layer: Altair turns a string into a channel by
searching its schema (about 4 ms per ``.encode``), and layers that each hold the same frame are
merged by hashing the frame's text. The spec is the same either way; building it this way takes
half the time (``tests/test_charts.py`` reads the specs).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ._format import DASH, kn, pct
from ._slices import SliceRow, rows_from_alignment, slice_rows
from ._status import STATUS_COLORS

TITLE = "Judge error rates by slice"


def _rows(source: Any, policy: Any, gate: Any) -> list[SliceRow]:
    if isinstance(source, list) and (not source or isinstance(source[0], SliceRow)):
        return list(source)
    slices = getattr(source, "slices", None)
    if slices is not None:
        return rows_from_alignment(source, policy, gate)
    if isinstance(source, dict):
        slices = source.get("slices")
    return slice_rows(slices if slices is not None else source, policy, gate)


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def slice_error_data(source: Any, policy: Any = None, gate: Any = None) -> Any:
    """The chart's data: one row per slice and metric (rate, interval, k/n, limit, status)."""
    import pandas as pd

    rows = _rows(source, policy, gate)
    records = []
    for row in rows:
        for metric, title, rate in (
            ("fp", "false-pass rate (of human fails)", row.false_pass_rate),
            ("ff", "false-fail rate (of human passes)", row.false_fail_rate),
        ):
            limits = row.limits
            limit = (
                (limits.max_false_pass_rate if metric == "fp" else limits.max_false_fail_rate)
                if limits
                else None
            )
            value = _get(rate, "rate")
            records.append(
                {
                    "slice": f"{row.slice} ({row.risk})" if row.risk else row.slice,
                    "metric": title,
                    "rate": value,
                    "low": _get(rate, "ci95_low"),
                    "high": _get(rate, "ci95_high"),
                    "k/n": kn(rate),
                    "label": f"{kn(rate)}" + ("" if value is not None else f" {DASH}"),
                    "limit": limit,
                    "basis": (
                        (limits.false_pass_basis if metric == "fp" else limits.false_fail_basis)
                        if limits
                        else None
                    ),
                    "status": row.result,
                    "rate_text": pct(value),
                    "limit_text": pct(limit) if limit is not None else DASH,
                }
            )
    return pd.DataFrame(
        records,
        columns=[
            "slice",
            "metric",
            "rate",
            "low",
            "high",
            "k/n",
            "label",
            "limit",
            "basis",
            "status",
            "rate_text",
            "limit_text",
        ],
    )


def _tooltips(*fields: str) -> list[Any]:
    import altair as alt

    return [alt.Tooltip(field) for field in fields]


def _limit_rule(data: Any, order: list[str]) -> Any:
    """Each slice's policy limit as a rule mark spanning the slice's row (slices without a limit
    drawn none)."""
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


def slice_error_chart(
    source: Any, policy: Any = None, gate: Any = None, *, title: str = TITLE, width: int = 330
) -> Any:
    """False-pass and false-fail rates per slice with 95% Wilson intervals and the policy limits.

    ``source``: an :class:`~workbench.align.AlignmentReport`, a list of figures (the gate's
    ``figures``) or of :class:`SliceRow`. ``policy`` draws each slice's limit as a black rule mark
    across the slice's row;
    ``gate`` colours each slice by its status from the gate's blockers (without a gate, an
    alignment report under ``policy`` by the gate's own per-slice checks; otherwise by the
    result each :class:`SliceRow` carries). Rates over no case are left out of the marks (their
    k/n is still written).
    """
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
        base = alt.Chart().encode(
            y=alt.Y("slice:N", title=None, sort=order, axis=alt.Axis(labelLimit=220))
        )
        x = alt.X(
            "low:Q",
            title=f"{metric}, 95% Wilson interval",
            scale=alt.Scale(domain=[0, 1]),
            axis=alt.Axis(format="%"),
        )
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
    chart = (
        alt.hconcat(*panels)
        .resolve_scale(color="shared")
        .properties(
            title=alt.Title(
                title,
                subtitle=(
                    "dot: observed rate; bar: 95% Wilson interval; black rule: the policy limit;"
                    " k/n beside each bar"
                ),
            )
        )
    )
    return chart


def candidates_chart(
    reports: Any,
    policy: Any = None,
    *,
    title: str = "False passes and false fails per slice, by candidate",
    width: int = 330,
) -> Any:
    """Several candidates' per-slice rates side by side (``reports``: ``{label: AlignmentReport}``).

    Same encoding as :func:`slice_error_chart` (dot, 95% Wilson interval, the policy limit as a
    black rule), one colour per candidate, offset within each slice row.
    """
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
    for metric in data["metric"].drop_duplicates():
        part = data[data["metric"] == metric]
        base = alt.Chart(part).encode(
            y=alt.Y("slice:N", title=None, sort=order, axis=alt.Axis(labelLimit=220))
        )
        offset = alt.YOffset("candidate:N")
        color = alt.Color("candidate:N", title="candidate", legend=alt.Legend(orient="bottom"))
        layers = [
            base.mark_rule(strokeWidth=2)
            .encode(
                x=alt.X(
                    "low:Q",
                    title=f"{metric}, 95% Wilson interval",
                    scale=alt.Scale(domain=[0, 1]),
                    axis=alt.Axis(format="%"),
                ),
                x2=alt.X2("high:Q"),
                yOffset=offset,
                color=color,
            )
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
    return alt.hconcat(*panels).properties(
        title=alt.Title(
            title,
            subtitle="dot: observed rate; bar: 95% Wilson interval; black rule: the policy limit",
        )
    )


def slice_rates_chart(report: Any, policy: Any = None, gate: Any = None) -> Any:
    """Per-slice false-pass and false-fail rates with 95% Wilson intervals (and limits, given a
    policy)."""
    return slice_error_chart(report, policy, gate)


def confusion_heatmap(
    confusion: Any,
    *,
    abstain_labels: Sequence[str] = (),
    title: str = "Confusion: adjudicated label (rows) x judge (columns)",
) -> Any:
    """A heatmap of an alignment report's ``confusion`` (or its dict), counts written in the
    cells.

    Disagreements (a decided judge label other than the adjudicated one) are outlined in red;
    abstentions (``abstain_labels``) and the error and missing columns are not.
    """
    import altair as alt
    import pandas as pd

    rows, columns, counts = (
        _get(confusion, "rows"),
        _get(confusion, "columns"),
        _get(confusion, "counts"),
    )
    records = []
    for i, human in enumerate(rows):
        for j, judge in enumerate(columns):
            n = int(counts[i][j])
            kind = (
                "agree"
                if human == judge
                else (
                    "no verdict"
                    if judge.startswith("(")
                    else "abstained"
                    if judge in abstain_labels
                    else "disagree"
                )
            )
            records.append({"human": human, "judge": judge, "n": n, "kind": kind})
    data = pd.DataFrame(records)
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
    """A score judge's error rates at every threshold, the policy limit drawn, the choice marked.

    ``sweep`` is :func:`workbench.phases.threshold_sweep`'s frame. Thresholds whose false-pass
    figure (the upper bound on the ``upper_95`` basis) is above ``limit`` are drawn red.
    """
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
    """One row per threshold and series, with whether the threshold meets the limits."""
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
    """The rate lines (step) and the points coloured by whether the threshold meets the limits."""
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
            alt.Tooltip("threshold"),
            alt.Tooltip("series"),
            alt.Tooltip("value:Q", format=".1%"),
            alt.Tooltip("fp"),
            alt.Tooltip("ff"),
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
    """The policy's limits and the frozen threshold, drawn as rules with their labels."""
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
    """An IPython display object holding the chart as inline ``<svg>`` markup.

    Shown as HTML rather than ``image/svg+xml`` so that the report inlines the SVG element
    itself: the chart stays searchable, styleable and part of the page. vl-convert's SVG
    contains no script.
    """
    from .._html import display_html, fragment, safe

    return display_html(str(fragment("fragments.html.j2", "chart", safe(to_svg(chart)))))


def charts_row(*charts: Any) -> Any:
    """Several charts side by side as one inline-SVG display object."""
    from .._html import display_html, fragment, safe

    svgs = [safe(to_svg(c)) for c in charts]
    return display_html(str(fragment("fragments.html.j2", "chart_row", svgs)))
