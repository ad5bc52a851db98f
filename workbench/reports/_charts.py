"""Charts for reports: Altair specs rendered to inline SVG with vl-convert (no CDN, no JavaScript)."""

from __future__ import annotations

from typing import Any

from ..align import AlignmentReport


def slice_rates_chart(report: AlignmentReport) -> Any:
    """Per-slice false-pass and false-fail rates with 95% Wilson intervals (rates over verdicts)."""
    import altair as alt
    import pandas as pd

    rows = []
    for s in report.slices:
        for metric, rate in (("false-pass rate (of human fails)", s.false_pass_rate), ("false-fail rate (of human passes)", s.false_fail_rate)):
            if rate.rate is None:
                continue
            rows.append(
                {
                    "slice": f"{s.slice} ({s.risk})" if s.risk else s.slice,
                    "metric": metric,
                    "rate": rate.rate,
                    "low": rate.ci95_low,
                    "high": rate.ci95_high,
                    "label": f"{rate.k}/{rate.n}",
                }
            )
    data = pd.DataFrame(rows, columns=["slice", "metric", "rate", "low", "high", "label"])
    base = alt.Chart(data).encode(
        y=alt.Y("slice:N", title=None, sort=None),
        yOffset=alt.YOffset("metric:N"),
        color=alt.Color("metric:N", title=None, legend=alt.Legend(orient="bottom")),
    )
    bars = base.mark_rule(strokeWidth=2).encode(x=alt.X("low:Q", title="rate with 95% Wilson interval", scale=alt.Scale(domain=[0, 1])), x2="high:Q")
    points = base.mark_point(filled=True, size=60).encode(x="rate:Q", tooltip=["slice", "metric", "label", "rate", "low", "high"])
    labels = base.mark_text(align="left", dx=6, fontSize=10).encode(x="high:Q", text="label:N")
    return (bars + points + labels).properties(width=420, title="Judge error rates by slice (denominators shown)")


def to_svg(chart: Any) -> str:
    """Render an Altair chart to an SVG string, offline."""
    import vl_convert

    return vl_convert.vegalite_to_svg(chart.to_dict())


def svg_display(chart: Any) -> Any:
    """An IPython display object holding the chart as inline ``<svg>`` markup.

    Shown as HTML rather than ``image/svg+xml`` so that nbconvert inlines the SVG element
    itself (its SVG outputs become base64 ``<img>`` data URIs): the chart stays searchable,
    styleable and part of the page. vl-convert's SVG contains no script.
    """
    from IPython.display import HTML

    return HTML(f'<div class="wb-chart">{to_svg(chart)}</div>')
