"""Tables that read at a glance, for the notebooks and the report: a :class:`Table` displays as
HTML (the pandas Styler's, every cell escaped, plus footnotes), rates as ``"28% [17–43%]"``,
missing values as a dash explained by :data:`DASH_NOTE`, rows that matter highlighted."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._html import fragment, safe
from ._format import DASH, DASH_NOTE, missing, number, rate_text
from ._slices import HIGHLIGHT as STATUS_HIGHLIGHT
from ._slices import rows_of

HIGHLIGHT = {
    "critical": "background-color:#ffebe9;color:#82071e;font-weight:600",
    "fail": "background-color:#ffebe9",
    "review": "background-color:#fbefff",
    "incomplete": "background-color:#fff1e5",
    "good": "background-color:#dafbe1",
}
TABLE_STYLES = [
    {
        "selector": "",
        "props": (
            "border-collapse:collapse;font-size:12.5px;font-variant-numeric:tabular-nums;"
            "margin:4px 0"
        ),
    },
    {
        "selector": "th",
        "props": (
            "background:#f6f8fa;text-align:left;font-weight:600;padding:3px 5px;border-bottom:1px"
            " solid #d8dee4"
        ),
    },
    {"selector": "td", "props": "padding:2px 5px;border-bottom:1px solid #eef1f4;text-align:left"},
    {
        "selector": "caption",
        "props": "caption-side:top;text-align:left;font-weight:600;padding:2px 0 4px",
    },
]


@dataclass
class Table:
    """A styled table: ``.data`` (display strings), ``.styler`` and footnotes; displays as HTML."""

    data: Any
    styler: Any
    footnotes: list[str] = field(default_factory=list)

    def to_html(self) -> str:
        table = safe(self.styler.to_html())  # pandas escapes cell text (escape="html")
        return str(fragment("fragments.html.j2", "styled", table, self.footnotes))

    def _repr_html_(self) -> str:
        return self.to_html()

    def __len__(self) -> int:
        return len(self.data)


def _cell(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) if value else DASH
    if isinstance(value, dict):
        return number(value)
    if missing(value):
        return DASH
    return value


def styled(
    frame: Any,
    *,
    caption: str | None = None,
    highlight: Callable[[Mapping[str, Any]], str | None] | None = None,
    footnotes: Sequence[str] = (),
    formats: Mapping[str, Callable[[Any], str]] | None = None,
    index: bool = False,
) -> Table:
    """Any DataFrame as a :class:`Table`: index hidden (or made a column), missing values as a
    dash, floats rounded, ``highlight(row) -> key of HIGHLIGHT`` colouring whole rows."""
    import pandas as pd

    data = frame.copy()
    named = any(name is not None for name in data.index.names)
    if index or named:
        data = data.reset_index()
    data.columns = [str(c) for c in data.columns]
    data = data.reset_index(drop=True)
    raw = data.copy()
    had_missing = False
    for column in data.columns:
        fmt = (formats or {}).get(column)
        values = []
        for value in raw[column]:
            if fmt is not None and not missing(value):
                values.append(fmt(value))
                continue
            cell = _cell(value)
            if cell == DASH and not isinstance(value, str):
                had_missing = True
            values.append(number(cell) if isinstance(cell, float) else cell)
        data[column] = pd.Series(values, dtype=object)
    notes = list(footnotes)
    if had_missing and DASH_NOTE not in notes:
        notes.append(DASH_NOTE)
    styler = data.style.hide(axis="index").format(escape="html", na_rep=DASH)
    styler = styler.set_table_styles(TABLE_STYLES)
    if caption:
        styler = styler.set_caption(caption)
    if highlight is not None:
        keys = [highlight(dict(raw.iloc[i])) for i in range(len(raw))]

        def paint(row: Any) -> list[str]:
            key = keys[row.name] if row.name < len(keys) else None
            return [HIGHLIGHT.get(key, "") if key else "" for _ in row]

        styler = styler.apply(paint, axis=1)
    return Table(data=data, styler=styler, footnotes=notes)


SLICE_COLUMNS = (
    "slice",
    "result",  # the outcome beside the slice's name: never the column a narrow page cuts off
    "risk",
    "n",
    "coverage",
    "false-pass rate [95% CI]",
    "FP k/n",
    "FP limit",
    "basis",
    "false-fail rate [95% CI]",
    "FF k/n",
    "FF limit",
    "abstained",
)


def slice_table(
    source: Any,
    policy: Any = None,
    gate: Any = None,
    *,
    columns: Sequence[str] = SLICE_COLUMNS,
    caption: str | None = None,
) -> Table:
    """The per-slice table (``source``: see :func:`~._slices.rows_of`): coverage, rates with
    intervals and k/n, the policy's limits, the result; failing and review slices highlighted."""
    import pandas as pd

    rows = rows_of(source, policy, gate)
    records = [row.record() for row in rows]
    keep = [c for c in columns if not (c in ("FP limit", "basis", "FF limit") and policy is None)]
    if all(row.result == DASH for row in rows):
        keep = [c for c in keep if c != "result"]
    frame = pd.DataFrame(records, columns=list(SLICE_COLUMNS) + ["abstention limit"])[keep]
    by_slice = {r.slice: r for r in rows}

    def highlight(record: Mapping[str, Any]) -> str | None:
        row = by_slice.get(record["slice"])
        status = STATUS_HIGHLIGHT.get(row.result) if row is not None else None
        return "critical" if status == "fail" and row is not None and row.critical else status

    notes = [
        "Rates are over cases judged pass or fail: FP over human fails, FF over human passes"
        " (abstentions, errors and missing results are in neither). Interval: 95% Wilson."
    ]
    if policy is not None:
        notes.append(
            "FP limit: the policy's maximum false passes and false-pass rate; basis: the figure"
            " compared with the rate limit (critical slices: the upper 95% bound)."
        )
    return styled(frame, caption=caption, highlight=highlight, footnotes=notes)


def transitions_table(changes: Any, *, only_changed: bool = True) -> Table:
    """Case-level transitions between two iterations; ``critical_broken`` rows highlighted red."""
    frame = changes[changes["change"] != "same"] if only_changed else changes
    columns = [
        c
        for c in (
            "case_id",
            "slice",
            "risk",
            "human_label",
            "before_label",
            "after_label",
            "change",
            "critical_broken",
        )
        if c in frame.columns
    ]
    frame = frame[columns].sort_values(
        ["critical_broken", "change"], ascending=[False, True], kind="stable"
    )

    def highlight(row: Mapping[str, Any]) -> str | None:
        changed = {"broken": "fail", "fixed": "good"}.get(str(row.get("change")))
        return "critical" if row.get("critical_broken") else changed

    return styled(
        frame,
        highlight=highlight,
        formats={"critical_broken": lambda v: "CRITICAL BROKEN" if v else ""},
        footnotes=[
            "critical_broken: a case the new version gets wrong that the old one got right, in a"
            " critical slice: it needs a risk decision, whatever the totals say."
        ],
    )


def transition_summary_table(summary: Any) -> Table:
    """:func:`workbench.review.transition_summary`, critical breakages highlighted."""
    return styled(
        summary, highlight=lambda r: "critical" if (r.get("critical_broken") or 0) > 0 else None
    )


def merge_interval(frame: Any, value: str, low: str, high: str, *, name: str | None = None) -> Any:
    """Replace three columns (a proportion and its interval) by one ``"82% [59–94%]"`` column."""
    out = frame.copy()
    texts = [
        rate_text({"rate": v, "ci95_low": lo, "ci95_high": hi})
        for v, lo, hi in zip(out[value], out[low], out[high], strict=True)
    ]
    position = list(out.columns).index(value)
    out = out.drop(columns=[value, low, high])
    out.insert(position, name or f"{value} [95% CI]", texts)
    return out


ORDINAL_TITLE = "Ordinal figures: judge against the adjudicated label on the ordered scale"
NOMINAL_NOTE = (
    "Cohen's kappa and the confusion above are nominal: every label an unordered category. False"
    " passes and false fails follow the rubric's pass_labels. The figures below weigh how far apart"
    " the two labels are on the scale."
)


def ordinal_tables(report: Any) -> list[Table]:
    """Per-slice ordinal figures and the ordinal confusion (none on a nominal rubric)."""
    frame = report.ordinal_frame()
    overall = report.overall.ordinal
    if frame is None or overall is None:
        return []
    unit = overall.mean_absolute_error.unit
    per_slice = styled(
        frame,
        index=True,
        caption="Per slice: weighted Cohen's kappa, mean absolute error and distances on the scale",
        footnotes=[
            (
                "pairs = verdicts whose adjudicated and judge labels are both on the scale: the"
                " denominator of every figure; off scale = verdicts left out (an abstain label)."
            ),
            (
                "kappa linear / quadratic = weighted Cohen's kappa (disagreement weight |i - j| or"
                f" (i - j)²); MAE = mean |judge - adjudicated| in {unit}s; judge higher / lower ="
                " the judge put the case above / below the reviewers on the scale."
            ),
        ],
    )
    matrix = overall.confusion.to_frame()
    matrix.index.name, matrix.columns.name = "adjudicated \\ judge", None
    confusion = styled(
        matrix,
        index=True,
        caption=(
            f"Ordinal confusion over all cases in scope ({overall.pairs} pairs; rows adjudicated,"
            " columns judge, in scale order)"
        ),
    )
    return [per_slice, confusion]


def ordinal_section_html(report: Any) -> str:
    """The section's HTML (``""`` on a nominal rubric)."""

    tables = ordinal_tables(report)
    if not tables:
        return ""
    scale = " < ".join(report.scale_labels or [])
    return str(
        fragment(
            "fragments.html.j2",
            "ordinal",
            ORDINAL_TITLE,
            f"Scale ({report.scale}): {scale}.",
            NOMINAL_NOTE,
            [safe(t.to_html()) for t in tables],
        )
    )


OPERATING_DRAWS = 4000
"""Draws per true rate of the report's operating-characteristic section (fixed seed 0 and
intra-group correlation 0.3: the figures of ``workbench plan --simulate``)."""


def operating_tables(policy: Any, dataset: Any, *, draws: int = OPERATING_DRAWS) -> list[Table]:
    """The gate's operating characteristics on this policy and gold's held-out slices: the
    slice limits simulated, then P(certified), P(review_required), P(quality_failed) against
    the judge's true rate (:func:`workbench.planning.simulate_gate`)."""
    from ..planning import simulate_gate, simulation_frames

    report = simulate_gate(policy, dataset, draws=draws)
    designs, gate = simulation_frames(report)
    setting = (
        f"{report.draws} draws per rate, seed {report.seed}, errors correlated within a group"
        f" (intra-class correlation {report.icc:g}); `workbench plan --policy P --gold G"
        " --simulate` gives the same figures"
    )
    share = {c: (lambda v: f"{v:.1%}") for c in gate.columns if c.startswith("P(")}
    return [
        styled(
            designs,
            caption=f"Slice limits the gate bounds on {report.partition}, in their real groups",
            formats={"P(clear) at the limit": lambda v: f"{v:.1%}"},
            footnotes=() if len(designs) else ("No limit is bounded on upper_95 with cases.",),
        ),
        styled(
            gate,
            caption="The whole gate, every slice's true rate at the same fraction of its limit",
            formats=share,
            footnotes=(
                setting,
                "At the limit (1.00x) the rule certifies at most 5% of the time"
                " (intersection-union: docs/statistics.md).",
            ),
        ),
    ]
