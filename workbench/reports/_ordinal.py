"""The certification report's ordinal figures (``ordinal`` and ``numeric`` rubrics), beside the
nominal ones: the alignment report's (:class:`workbench.align.OrdinalAlignment`), not recomputed."""

from __future__ import annotations

from typing import Any

from ._tables import Table, styled

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
    from .._html import fragment, safe

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
