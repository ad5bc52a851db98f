"""The report charts' Vega-Lite specs: every mark reads the data it was given, with the fields,
filters, colours and limits the reports describe; and case text reaches the SVG escaped.

The charts are built from Altair objects rather than encoding shorthand strings (5-15x cheaper
per layer) with each panel's data set once on its layer; these tests read the resulting spec,
so a layer that lost its data, a field that names no column or a dropped filter fails here
rather than as an empty chart in a locked report.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from workbench.reports import (
    candidates_chart,
    confusion_heatmap,
    slice_error_chart,
    threshold_sweep_chart,
    to_svg,
)
from workbench.reports._charts import STATUS_COLORS, slice_error_data
from workbench.reports._format import DASH
from workbench.reports._slices import SliceLimits, SliceRow
from workbench.stats import wilson_rate

LIMITS = SliceLimits(None, 0.1, "upper_95", 0.2, "point", 0.0)


def _row(name: str, fp: tuple[int, int], ff: tuple[int, int], **kw: Any) -> SliceRow:
    fields: dict[str, Any] = {
        "slice": name,
        "risk": "critical",
        "n": 40,
        "decided": 40,
        "coverage": wilson_rate(40, 40),
        "false_pass_rate": wilson_rate(*fp),
        "false_fail_rate": wilson_rate(*ff),
        "abstention_rate": wilson_rate(0, 40),
        "limits": LIMITS,
        "result": "pass",
    }
    fields.update(kw)
    return SliceRow(**fields)


ROWS = [
    _row("billing", (1, 20), (2, 20)),
    _row("safety", (3, 10), (0, 0), result="fail"),
    _row("tone", (0, 0), (1, 30), risk="standard", limits=None, result="review"),
]


def _dataset(spec: dict[str, Any], owner: dict[str, Any]) -> list[dict[str, Any]]:
    return list(spec["datasets"][owner["data"]["name"]])


def _fields(node: Any) -> set[str]:
    """Every ``field`` an encoding names, however deeply nested (conditions, tooltips)."""
    if isinstance(node, dict):
        own = {node["field"]} if isinstance(node.get("field"), str) else set()
        return own.union(*(_fields(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_fields(v) for v in node))
    return set()


def _mark(layer: dict[str, Any]) -> str:
    mark = layer["mark"]
    return str(mark["type"] if isinstance(mark, dict) else mark)


def _filters(layer: dict[str, Any]) -> list[str]:
    return [t["filter"] for t in layer.get("transform", [])]


def test_slice_error_chart_draws_each_metric_from_its_own_rows_with_limits_and_results() -> None:
    spec = slice_error_chart(ROWS, gate=object()).to_dict()
    data = slice_error_data(ROWS, gate=object())
    panels = spec["hconcat"]
    assert [p["title"] for p in panels] == list(data["metric"].drop_duplicates())
    for panel in panels:
        rows = _dataset(spec, panel)
        expected = data[data["metric"] == panel["title"]]
        assert [r["slice"] for r in rows] == list(expected["slice"])
        assert [r["k/n"] for r in rows] == list(expected["k/n"])
        assert {r["status"] for r in rows} == {"pass", "fail", "review"}
        columns = set(rows[0])
        layers = panel["layer"]
        assert "data" not in layers[0]  # each layer reads its panel's rows
        for layer in layers:
            assert _fields(layer["encoding"]) <= columns, layer["encoding"]
        assert [_mark(layer) for layer in layers] == ["rule", "point", "text", "text", "rule"]
        # Rates over no case are left out of the marks and labelled with a dash instead.
        assert [_filters(layer) for layer in layers] == [
            ["datum.rate != null"],
            ["datum.rate != null"],
            ["datum.rate != null"],
            ["datum.rate == null"],
            ["datum.limit != null"],
        ]
        assert layers[4]["encoding"]["x"]["field"] == "limit"
        assert panel["height"] == max(60, 22 * len(ROWS))
    empty = next(r for r in _dataset(spec, panels[0]) if r["slice"] == "tone (standard)")
    assert empty["rate"] is None and empty["label"] == f"0/0 {DASH}" and empty["limit"] is None
    color = panels[0]["layer"][0]["encoding"]["color"]
    assert color["title"] == "slice result"
    assert color["scale"]["domain"] == ["pass", "fail", "review"]
    assert color["scale"]["range"] == [STATUS_COLORS[s] for s in ("pass", "fail", "review")]


def test_slice_error_chart_colours_by_the_rows_results_never_by_its_own_comparison_of_limits() -> (
    None
):
    spec = slice_error_chart(ROWS, title="Mine", width=400).to_dict()
    assert spec["title"]["text"] == "Mine"
    statuses = {r["status"] for p in spec["hconcat"] for r in _dataset(spec, p)}
    # The rows' results (from the gate's blockers): billing's upper bound 0.24 is above its 0.1
    # limit, but no blocker says so, so the chart says pass too (tests/test_status_vocabulary.py).
    assert statuses == {"pass", "fail", "review"}
    ungated = [r.__class__(**{**r.__dict__, "result": DASH}) for r in ROWS]
    assert set(slice_error_data(ungated)["status"]) == {DASH}
    assert spec["hconcat"][0]["width"] == 400
    bare = [r.__class__(**{**r.__dict__, "limits": None}) for r in ROWS]
    no_limits = slice_error_chart(bare).to_dict()
    for panel in no_limits["hconcat"]:
        assert [_mark(layer) for layer in panel["layer"]] == ["rule", "point", "text", "text"]


def test_candidates_chart_keeps_each_candidate_and_the_limit_rule_on_its_own_rows() -> None:
    spec = candidates_chart({"judge@1": ROWS, "judge@2": ROWS[:2]}).to_dict()
    for panel in spec["hconcat"]:
        rule, point, limit = panel["layer"]
        rows = _dataset(spec, rule)
        assert _dataset(spec, point) == rows
        assert [r["candidate"] for r in rows] == ["judge@1"] * 3 + ["judge@2"] * 2
        assert point["encoding"]["yOffset"]["field"] == "candidate"
        assert _fields(point["encoding"]) <= set(rows[0])
        limits = _dataset(spec, limit)
        assert [r["slice"] for r in limits] == [
            "billing (critical)",
            "safety (critical)",
            "tone (standard)",
        ]
        assert _filters(limit) == ["datum.limit != null"]


def test_confusion_heatmap_outlines_disagreements_only_and_writes_every_count() -> None:
    confusion = {
        "rows": ["pass", "fail"],
        "columns": ["pass", "fail", "unsure", "(error)"],
        "counts": [[30, 2, 1, 0], [3, 25, 0, 4]],
    }
    spec = confusion_heatmap(confusion, abstain_labels=["unsure"]).to_dict()
    cells, outline, text = spec["layer"]
    rows = spec["datasets"][spec["data"]["name"]]
    kinds = {(r["human"], r["judge"]): (r["n"], r["kind"]) for r in rows}
    assert kinds == {
        ("pass", "pass"): (30, "agree"),
        ("pass", "fail"): (2, "disagree"),
        ("pass", "unsure"): (1, "abstained"),
        ("pass", "(error)"): (0, "no verdict"),
        ("fail", "pass"): (3, "disagree"),
        ("fail", "fail"): (25, "agree"),
        ("fail", "unsure"): (0, "abstained"),
        ("fail", "(error)"): (4, "no verdict"),
    }
    assert _filters(outline) == ["datum.kind == 'disagree' && datum.n > 0"]
    assert text["encoding"]["text"]["field"] == "n"
    assert text["encoding"]["color"]["condition"]["test"] == "datum.n > 15.0"
    assert cells["encoding"]["color"]["scale"]["domain"] == [0, 30]
    assert spec["width"] == 70 * 4 and spec["height"] == 34 * 2


def _sweep() -> pd.DataFrame:
    points = [
        (-math.inf, 1.0, 1.0, 0.0),
        (0.3, 0.2, 0.35, 0.1),
        (0.5, 0.05, 0.08, 0.2),
        (0.7, float("nan"), float("nan"), 0.5),
        (math.inf, 0.0, 0.0, 1.0),
    ]
    return pd.DataFrame(
        [
            {
                "threshold": t,
                "false_pass_rate": fp,
                "false_pass_rate_upper_95": up,
                "false_fail_rate": ff,
                "false_passes": 0 if math.isnan(fp) else int(fp * 20),
                "human_fails": 20,
                "false_fails": int(ff * 30),
                "human_passes": 30,
                "agreement": 0.8,
            }
            for t, fp, up, ff in points
        ]
    )


def test_threshold_sweep_chart_plots_finite_thresholds_marks_limits_and_the_choice() -> None:
    spec = threshold_sweep_chart(_sweep(), limit=0.1, chosen=0.5, max_false_fail_rate=0.3).to_dict()
    lines, points, limit, limit_text, ff_limit, chosen, chosen_text = spec["layer"]
    rows = _dataset(spec, lines)
    assert _dataset(spec, points) == rows
    assert sorted({r["threshold"] for r in rows}) == [0.3, 0.5, 0.7]
    meets = {(r["threshold"], r["meets"]) for r in rows}
    assert meets == {(0.3, "fails a limit"), (0.5, "meets the limits"), (0.7, "fails a limit")}
    assert len([r for r in rows if r["threshold"] == 0.7]) == 1  # NaN rates are not plotted
    assert limit["encoding"]["y"]["field"] == "limit"
    assert limit_text["encoding"]["text"]["value"] == "false-pass limit 10% (upper 95% bound)"
    assert ff_limit["encoding"]["y"]["field"] == "ff_limit"
    assert chosen["encoding"]["x"]["field"] == "chosen"
    assert chosen_text["encoding"]["text"]["value"] == "frozen threshold 0.5"
    assert _dataset(spec, chosen) == [{"limit": 0.1, "chosen": 0.5, "ff_limit": 0.3}]
    bare = threshold_sweep_chart(_sweep(), chosen=math.inf).to_dict()
    assert [_mark(layer) for layer in bare["layer"]] == ["line", "point"]


def test_case_text_reaches_the_svg_escaped() -> None:
    names = ["<script>alert(1)</script>", "a & b <b>bold</b>"]
    svg = to_svg(slice_error_chart([_row(name, (1, 4), (0, 4), risk="") for name in names]))
    assert svg.startswith("<svg") and "<script" not in svg and "<b>" not in svg
    for name in names:
        assert name.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in svg
