"""False-pass and false-fail breakdowns by any case field or tag, alone or crossed (``workbench
align --by``): every cell's figures are the per-slice row :func:`~workbench.align._cases` builds
(denominators, Wilson and grouped intervals), computed from the evidence's cases table and the
gold index's columns (never the records). Each cell's rates are tested against the rest of the
cases (Fisher's exact test) and the p-values adjusted for the many cells (Benjamini-Hochberg).

A cell is named by its parts joined by :data:`CROSS` (``*`` is read as well): the risk slice
bare, every other field as ``field=value``, e.g. ``account_security×language=de``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import Field

from .._record import Record as _Model
from ..errors import WorkbenchError, problem
from ._report import SliceAlignment, _row

if TYPE_CHECKING:
    import pyarrow as pa

    from ..gold import Rubric

CROSS = "×"
"""Joins the parts of a crossed cell's name and crossed fields in ``--by`` (``*`` also reads)."""
LENGTH_BUCKETS = ((0, "<150"), (150, "150-299"), (300, "300-599"), (600, "600+"))
"""``length``: the response's length in characters, in fixed ranges (the same names for every
gold, so a policy can name one): each ``(first length, name)``."""
CONFIDENCES = ("low", "medium", "high")
"""``confidence``: the lowest confidence any review of the case states (``unstated`` if none)."""
NONE = "(none)"
"""The value of a case without the field (no tag, no such metadata key)."""
BUILTIN_FIELDS = {
    "slice": "the risk slice",
    "partition": "development, calibration or held_out",
    "group": "the gold group",
    "tag": "each tag (a case counts in every tag it carries)",
    "length": "response length in characters: " + ", ".join(n for _, n in LENGTH_BUCKETS),
    "confidence": "the lowest reviewer confidence: low, medium, high or unstated",
}
"""The fields every gold has; any metadata key is a field too (``language`` or
``metadata.language``); a numeric metadata field is cut at its quartiles."""
TEST = (
    "Fisher's exact test (two-sided) of the cell's rate against the rate of every other case in"
    " scope; q: Benjamini-Hochberg over the breakdown's cells"
)


class BreakdownCell(_Model):
    """One cell of a breakdown: its figures and how its rates compare with the other cases."""

    cell: str
    """The cell's name (``account_security×language=de``)."""
    values: dict[str, str]
    """Field -> value of the cell."""
    figures: SliceAlignment
    """The cell's figures, as a slice's (counts, denominators, Wilson and grouped intervals)."""
    false_pass_p: float | None
    """Fisher's exact p-value of the cell's false-pass rate against the other cases' (None when
    either has no denominator)."""
    false_pass_q: float | None
    """``false_pass_p`` adjusted by Benjamini-Hochberg over the breakdown's cells."""
    false_fail_p: float | None
    """As ``false_pass_p``, for the false-fail rate."""
    false_fail_q: float | None
    """``false_fail_p`` adjusted by Benjamini-Hochberg over the breakdown's cells."""


class Breakdown(_Model):
    """False passes and false fails per cell of one or more crossed case fields."""

    by: list[str]
    """The fields crossed, in the order of the cells' names."""
    overall: SliceAlignment
    """Every case in scope (the cells are compared with the rest of it)."""
    cells: list[BreakdownCell]
    """One row per cell with at least one case, by name."""
    buckets: dict[str, str] = Field(default_factory=dict)
    """How each derived or numeric field was cut into values."""
    test: str = TEST
    """What the p-values test."""

    def frame(self) -> Any:
        """The cells as a pandas DataFrame (the per-slice columns, then p and q values)."""
        import pandas as pd

        rows = [
            _row(c.figures)
            | {"FP p": c.false_pass_p, "FP q": c.false_pass_q}
            | {"FF p": c.false_fail_p, "FF q": c.false_fail_q}
            for c in self.cells
        ]
        frame = pd.DataFrame(rows).rename(columns={"slice": "cell"})
        return frame.set_index("cell") if rows else frame


def split_cell(name: str) -> dict[str, str]:
    """``slice×field=value...`` as ``{field: value}`` (a bare part is the risk slice)."""
    out: dict[str, str] = {}
    for part in name.replace("*", CROSS).split(CROSS):
        field, eq, value = part.strip().partition("=")
        key, value = ("slice", field) if not eq else (_field_name(field.strip()), value.strip())
        out[key] = value
    return out


def parse_by(by: Sequence[str]) -> list[str]:
    """The fields of ``--by`` values (each may cross several with ``×`` or ``*``), slice first."""
    fields = [
        _field_name(f.strip()) for value in by for f in value.replace("*", CROSS).split(CROSS)
    ]
    fields = [f for f in dict.fromkeys(fields) if f]
    return sorted(fields, key=lambda f: f != "slice")


def _field_name(name: str) -> str:
    return name.removeprefix("metadata.")


def breakdown(
    cases: pa.Table, index_table: pa.Table, rubric: Rubric, by: Sequence[str]
) -> Breakdown:
    """The breakdown of ``cases`` (:data:`~workbench.align.CASE_COLUMNS`, ``row`` into
    ``index_table``, the gold index's columns) by the crossed fields ``by``; refuses an unknown
    field (:class:`WorkbenchError`, every available field named)."""
    from ._cases import case_rows

    fields = parse_by(by)
    _check_fields(fields, index_table)
    keyed, values, buckets = _cells(cases, index_table, fields)
    _, rows = case_rows(keyed, rubric)
    whole, _ = case_rows(cases, rubric)
    cells = [
        BreakdownCell(
            cell=row.slice,
            values=values[row.slice],
            figures=row.model_copy(
                update={"risk": rubric.risk_of(values[row.slice].get("slice", ""))}
            ),
            false_pass_p=None,
            false_pass_q=None,
            false_fail_p=None,
            false_fail_q=None,
        )
        for row in sorted(rows, key=lambda r: _order(values.get(r.slice, {}), fields))
        if row.n > 0
    ]
    return Breakdown(by=fields, overall=whole, cells=_tested(cells, whole), buckets=buckets)


_ORDERED = {
    "length": [name for _, name in LENGTH_BUCKETS],
    "confidence": [*CONFIDENCES, "unstated"],
}
"""Fields whose values have an order of their own (others sort by name)."""


def _order(values: dict[str, str], fields: list[str]) -> tuple[tuple[int, str], ...]:
    """A cell's sort key: field by field, a derived bucket's rank, then the value."""
    ranks = [_ORDERED.get(f, []) for f in fields]
    return tuple(
        (r.index(values.get(f, "")) if values.get(f, "") in r else len(r), values.get(f, ""))
        for f, r in zip(fields, ranks, strict=True)
    )


def _tested(cells: list[BreakdownCell], whole: SliceAlignment) -> list[BreakdownCell]:
    """The cells with their Fisher p-values and Benjamini-Hochberg q-values."""
    from ..stats import bh_qvalues

    out: dict[str, list[float | None]] = {}
    for side in ("false_pass", "false_fail"):
        total = getattr(whole, f"{side}_rate")
        p = [_fisher(getattr(c.figures, f"{side}_rate"), total) for c in cells]
        out[f"{side}_p"], out[f"{side}_q"] = p, bh_qvalues(p)
    return [
        c.model_copy(update={key: column[i] for key, column in out.items()})
        for i, c in enumerate(cells)
    ]


def _fisher(cell: Any, total: Any) -> float | None:
    """Two-sided Fisher's exact p of ``cell`` (k/n) against the other cases (K-k)/(N-n)."""
    rest_k, rest_n = total.k - cell.k, total.n - cell.n
    if cell.n == 0 or rest_n <= 0:
        return None
    from scipy.stats import fisher_exact

    table = [[cell.k, cell.n - cell.k], [rest_k, rest_n - rest_k]]
    return float(fisher_exact(table, alternative="two-sided").pvalue)


def available_fields(index_table: pa.Table) -> list[str]:
    """Every field a breakdown can use: the built-in ones, then the gold's metadata keys."""
    import pyarrow.compute as pc

    keys = pc.unique(index_table["metadata"].combine_chunks().keys).to_pylist()
    return [*BUILTIN_FIELDS, *sorted(k for k in keys if k not in BUILTIN_FIELDS)]


def _check_fields(fields: list[str], index_table: pa.Table) -> None:
    known = available_fields(index_table)
    unknown = [f for f in fields if f not in known]
    if not fields:
        unknown = ["(none given)"]
    if unknown:
        shown = ", ".join(known)
        raise WorkbenchError(
            f"unknown breakdown field(s): {', '.join(unknown)}",
            [
                problem(
                    "--by",
                    "unknown_breakdown_field",
                    f"{name!r} is not a field of this gold's cases",
                    f"use one of: {shown} (cross fields with × or *, e.g. --by language*slice)",
                )
                for name in unknown
            ],
        )


def _cells(
    cases: pa.Table, index_table: pa.Table, fields: list[str]
) -> tuple[pa.Table, dict[str, dict[str, str]], dict[str, str]]:
    """``cases`` with ``slice`` replaced by the cell's name (a case repeated once per value of a
    many-valued field such as ``tag``), each cell's values and how fields were bucketed."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if cases.num_rows and cases["row"].null_count:
        raise ValueError("the cases lack their gold index rows (join_cases(join, index))")
    rows = cases["row"].combine_chunks()
    position = pa.array(range(cases.num_rows), pa.int64())
    names: list[pa.Array] = []
    buckets: dict[str, str] = {}
    for field in fields:
        lists, how = _field_values(field, cases, index_table, rows)
        if how:
            buckets[field] = how
        taken = pc.take(lists, position)
        parent = pc.list_parent_indices(taken)
        value = pc.list_flatten(taken)
        names = [pc.take(n, parent) for n in names]
        position = pc.take(position, parent)
        names.append(
            value if field == "slice" else pc.binary_join_element_wise(f"{field}=", value, "")
        )
    key = pc.binary_join_element_wise(*names, CROSS) if len(names) > 1 else names[0]
    keyed = cases.take(position).set_column(cases.schema.get_field_index("slice"), "slice", key)
    unique = pc.unique(key).to_pylist()
    return keyed, {name: split_cell(name) for name in unique}, buckets


def _field_values(
    field: str, cases: pa.Table, index_table: pa.Table, rows: pa.Array
) -> tuple[pa.Array, str | None]:
    """Per case, the list of its values of ``field`` (one but for ``tag``), and how a derived
    or numeric field was cut (None otherwise)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def single(values: Any) -> pa.Array:
        values = pc.fill_null(pc.cast(values, pa.string()), NONE)
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        offsets = pa.array(range(len(values) + 1), pa.int32())
        return pa.ListArray.from_arrays(offsets, values)

    if field in ("slice", "partition", "group"):
        return single(cases[field].combine_chunks()), None
    if field == "tag":
        tags = pc.take(index_table["tags"], rows).combine_chunks()
        empty = pc.equal(pc.list_value_length(tags), 0)
        none = pa.array([[NONE]] * len(tags), pa.list_(pa.string()))
        return pc.if_else(empty, none, tags), None
    if field == "length":
        chars = pc.take(index_table["response_chars"], rows).to_numpy()
        return single(_bucketed(chars, LENGTH_BUCKETS)), BUILTIN_FIELDS["length"]
    if field == "confidence":
        return single(_lowest_confidence(pc.take(index_table["confidences"], rows))), None
    raw = pc.map_lookup(index_table["metadata"], pa.scalar(field), "first")
    numeric = _numeric(raw)
    if numeric is None:
        return single(pc.take(raw, rows)), None
    labelled, how = _quartiles(numeric)
    return single(pc.take(labelled, rows)), how


def _bucketed(values: Any, edges: Sequence[tuple[float, str]]) -> pa.Array:
    """Each value's bucket name (``edges``: ascending ``(first value, name)``)."""
    import numpy as np
    import pyarrow as pa

    starts = np.array([start for start, _ in edges[1:]], dtype=np.float64)
    names = pa.array([name for _, name in edges], pa.string())
    return names.take(pa.array(np.searchsorted(starts, values, side="right"), pa.int64()))


def _lowest_confidence(confidences: Any) -> pa.Array:
    """Per case, the lowest confidence its reviews state, ``unstated`` when none does."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    lists = confidences.combine_chunks()
    rank = pc.index_in(pc.list_flatten(lists), value_set=pa.array(CONFIDENCES))
    parent = pc.list_parent_indices(lists).to_numpy()
    lowest = np.full(len(lists), len(CONFIDENCES), dtype=np.int64)
    stated = pc.fill_null(rank, len(CONFIDENCES)).to_numpy()
    np.minimum.at(lowest, parent, stated)
    names = pa.array([*CONFIDENCES, "unstated"], pa.string())
    return names.take(pa.array(lowest))


def _numeric(raw: Any) -> Any:
    """The metadata values as float64 when every stated one is a number, else None."""
    import pyarrow as pa

    stated = raw.drop_null()
    if not len(stated):
        return None
    try:
        return raw.cast(pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _quartiles(values: Any) -> tuple[pa.Array, str]:
    """Numeric values cut at their quartiles (over the whole gold), as ``lo-hi`` names."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    stated = values.drop_null().to_numpy()
    edges = np.unique(np.quantile(stated, [0.0, 0.25, 0.5, 0.75, 1.0]))
    buckets = [(edges[0], f"{edges[0]:g}-{edges[1]:g}" if len(edges) > 1 else f"{edges[0]:g}")]
    buckets += [(lo, f"{lo:g}-{hi:g}") for lo, hi in zip(edges[1:-1], edges[2:], strict=True)]
    named = _bucketed(pc.fill_null(values, np.nan).to_numpy(), buckets)
    named = pc.if_else(pc.is_null(values), pa.scalar(None, pa.string()), named)
    cut = ", ".join(name for _, name in buckets)
    return (
        named,
        f"quartiles of the gold's values (a bucket runs from its first value to the next's): {cut}",
    )


def format_breakdown(result: Breakdown) -> str:
    """The breakdown as text: one line per cell, every rate with its denominator and interval."""
    from ._report import _rate_text

    def p_text(value: float | None) -> str:
        return "-" if value is None else f"{value:.3g}"

    head: tuple[str, ...] = ("cell", "risk", "n", "FP", "FP rate [95% CI]", "p", "q")
    head += ("FF", "FF rate [95% CI]", "p", "q")
    rows = [
        (
            c.cell,
            c.figures.risk or "",
            str(c.figures.n),
            f"{c.figures.false_passes}/{c.figures.false_pass_rate.n}",
            _rate_text(c.figures.false_pass_rate),
            p_text(c.false_pass_p),
            p_text(c.false_pass_q),
            f"{c.figures.false_fails}/{c.figures.false_fail_rate.n}",
            _rate_text(c.figures.false_fail_rate),
            p_text(c.false_fail_p),
            p_text(c.false_fail_q),
        )
        for c in [
            *result.cells,
            BreakdownCell(
                cell="(all)",
                values={},
                figures=result.overall,
                false_pass_p=None,
                false_pass_q=None,
                false_fail_p=None,
                false_fail_q=None,
            ),
        ]
    ]
    width = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = [
        f"breakdown by {f' {CROSS} '.join(result.by)}: false passes (FP) and false fails (FF)"
        " per cell",
        *(f"  {field}: {how}" for field, how in result.buckets.items()),
        f"p: {result.test}",
        "",
    ]
    lines += [
        "  ".join(c.ljust(w) for c, w in zip(r, width, strict=True)).rstrip() for r in [head, *rows]
    ]
    return "\n".join(lines)


def cell_figures(
    cases: pa.Table, index_table: pa.Table, rubric: Rubric, names: Sequence[str]
) -> tuple[dict[str, SliceAlignment], dict[str, dict[str, list[str]]]]:
    """The figures of the named cells (``slice×field=value``, any order of parts) and their
    flagged case ids (:func:`~workbench.align.flagged_cases`), by the names as given; a cell
    with no case in scope, or naming a field the gold does not have, is absent (fail closed:
    the gate then says ``cell_without_cases``)."""
    from ._cases import case_rows
    from ._evidence import flagged_cases

    by_fields: dict[tuple[str, ...], list[str]] = {}
    for name in names:
        by_fields.setdefault(tuple(parse_by(list(split_cell(name)))), []).append(name)
    figures: dict[str, SliceAlignment] = {}
    flagged: dict[str, dict[str, list[str]]] = {}
    known = set(available_fields(index_table))
    for fields, group in by_fields.items():
        if not known.issuperset(fields):
            continue
        keyed, values, _ = _cells(cases, index_table, list(fields))
        found = {frozenset(v.items()): cell for cell, v in values.items()}
        wanted = {name: found.get(frozenset(split_cell(name).items())) for name in group}
        _, rows = case_rows(keyed, rubric)
        by_cell = {row.slice: row for row in rows if row.n > 0}
        ids = flagged_cases(keyed, rubric.abstain_labels)
        for name, cell in wanted.items():
            if cell in by_cell:
                figures[name] = by_cell[cell].model_copy(update={"slice": name})
                flagged[name] = ids.get(cell, {})
    return figures, flagged


def join_cell_figures(
    join: Any, names: Sequence[str]
) -> tuple[dict[str, SliceAlignment], dict[str, dict[str, list[str]]]]:
    """:func:`cell_figures` of a per-record :class:`~workbench.align.Join`."""
    return cell_figures(*_join_columns(join), join.dataset.rubric, names)


def join_breakdown(join: Any, by: Sequence[str]) -> Breakdown:
    """:func:`breakdown` of a per-record :class:`~workbench.align.Join` (a notebook's
    iteration: ``join_breakdown(iteration.join, ["length", "slice"]).frame()``)."""
    return breakdown(*_join_columns(join), join.dataset.rubric, by)


def _join_columns(join: Any) -> tuple[pa.Table, pa.Table]:
    """A join's cases and its dataset's index columns (built in memory), ``row`` filled."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..gold import index_table
    from ._cases import join_cases

    table = index_table(join.dataset)
    cases = join_cases(join)
    rows = pc.index_in(cases["case_id"], value_set=table["case_id"]).cast(pa.int64())
    return cases.set_column(cases.schema.get_field_index("row"), "row", rows), table
