"""The default text of ``workbench align``: every line within :data:`WIDTH` columns. Counts and
token columns are in ``--wide`` and ``--json``; a long slice name wraps, whole, onto continuation
lines."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from ..results import slice_cost_rows
from ._report import AlignmentReport, SliceAlignment, _kappa_text, _rate_text

WIDTH = 120
"""Widest line of the default text (``--wide`` prints the full tables, unbounded)."""

_GAP = "  "
_MIN_SLICE = 12
_CONT = "  "


def table(
    rows: Sequence[Sequence[str]], width: int = WIDTH, left: frozenset[int] = frozenset()
) -> list[str]:
    """``rows`` (header first) as fixed-width lines within ``width``: the first column wraps onto
    continuation lines; columns numbered in ``left`` (from 1) align left, the others right."""
    cols = len(rows[0])
    widths = [max(len(r[i]) for r in rows) for i in range(1, cols)]
    room = width - sum(widths) - len(_GAP) * len(widths)
    first = max(_MIN_SLICE, min(room, max(len(r[0]) for r in rows)))
    lines: list[str] = []
    for row in rows:
        name = textwrap.wrap(
            row[0], first, subsequent_indent=_CONT, break_long_words=True, break_on_hyphens=True
        ) or [""]
        cells = [name[0].ljust(first)] + [
            c.ljust(w) if i in left else c.rjust(w)
            for i, (c, w) in enumerate(zip(row[1:], widths, strict=True), start=1)
        ]
        lines.append(_GAP.join(cells).rstrip())
        lines += name[1:]
    return lines


def _slice_row(s: SliceAlignment) -> list[str]:
    coverage = s.coverage.rate
    return [
        s.slice,
        _rate_text(s.agreement) if s.verdicts else "-",
        _rate_text(s.false_pass_rate),
        _rate_text(s.false_fail_rate),
        _kappa_text(s.cohen_kappa),
        f"{coverage:.2f}" if coverage is not None else "n/a",
        str(s.n),
        s.risk or "",
    ]


_SLICE_HEADER = (
    ["slice", "aligned [95% CI]"]
    + ["FP rate [95% CI]", "FF rate [95% CI]"]
    + ["kappa", "coverage", "n", "risk"]
)


def _rate(k: int, n: int) -> str:
    return f"{k / n:.2f}" if n else "n/a"


def _ordinal_row(s: SliceAlignment) -> list[str]:
    o = s.ordinal
    assert o is not None
    c, mae = o.confusion, o.mean_absolute_error
    return [
        s.slice,
        str(o.pairs),
        _kappa_text(o.weighted_kappa_linear),
        _kappa_text(o.weighted_kappa_quadratic),
        f"{mae.value:.3f}" if mae.value is not None else "n/a",
        _rate(c.exact, c.n),
        _rate(c.within_one, c.n),
        _rate(c.predicted_higher, c.n),
        _rate(c.predicted_lower, c.n),
    ]


_ORDINAL_HEADER = (
    ["slice", "pairs", "kappa linear"]
    + ["kappa quadratic", "MAE", "exact"]
    + ["within one", "judge higher", "judge lower"]
)


def slice_table(report: AlignmentReport) -> list[str]:
    """The narrow per-slice table (one row per slice plus ``(all)``)."""
    rows = [_SLICE_HEADER, *(_slice_row(s) for s in [*report.slices, report.overall])]
    return table(rows, left=frozenset({len(_SLICE_HEADER) - 1}))


def ordinal_table(report: AlignmentReport) -> list[str] | None:
    """Ordered rubrics: the narrow per-slice ordinal table (shares as rates over ``pairs``)."""
    rows = [_ordinal_row(s) for s in [*report.slices, report.overall] if s.ordinal is not None]
    return table([_ORDINAL_HEADER, *rows]) if rows else None


def cost_table(report: AlignmentReport) -> str:
    """The cost table without the token columns (``--wide`` and ``--json`` have them)."""
    return "\n".join(table(slice_cost_rows(report.costs, tokens=False), left=frozenset({1})))


def fit(lines: Sequence[str], width: int = WIDTH) -> list[str]:
    """``lines`` with every line longer than ``width`` wrapped, continuations indented."""
    out: list[str] = []
    for line in lines:
        for part in line.split("\n"):
            if len(part) <= width:
                out.append(part)
                continue
            indent = " " * min(len(part) - len(part.lstrip()) + 4, 12)
            out += textwrap.wrap(part, width, subsequent_indent=indent, break_on_hyphens=False)
    return out
