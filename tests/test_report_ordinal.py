"""Issue 9 §5: the certification report's alignment section shows the ordinal figures.

Weighted kappa (linear, quadratic), mean absolute error and the full ordinal confusion of an
ordinal gold appear in the held-out section of ``03_certify`` and in ``report.html``, checked
against the hand-computed figures of ``tests/test_align_ordinal.py`` (general: 5/19, 39/88,
8/7) and scikit-learn; the nominal figures stay, labelled nominal.
"""

from __future__ import annotations

import json
from collections import Counter
from html import unescape
from pathlib import Path

import nbformat
import pytest
from _reference import cohen_kappa_score
from conftest import make_case, make_result, result_lines
from test_align_ordinal import FIXTURE, LIKERT, build, pairs, report_for

from workbench.agreement import human_agreement
from workbench.align import alignment_report, join_results
from workbench.gold import load_dataset
from workbench.reports import agreement_summary, ordinal_section_html, ordinal_tables
from workbench.reports._render import render_html

ROOT = Path(__file__).resolve().parents[1]


def test_ordinal_tables_show_hand_and_library_figures(make_dataset) -> None:
    gold, rows = build(make_dataset, FIXTURE)
    _, _, report = report_for(gold, rows)
    per_slice, confusion = ordinal_tables(report)
    table = per_slice.data.set_index("slice")
    general = table.loc["general"]
    assert (general["pairs"], general["off scale"]) == (7, 1)
    assert (
        general["kappa linear"] == f"{5 / 19:.3f}" == "0.263"
        and general["kappa quadratic"] == f"{39 / 88:.3f}" == "0.443"
    )
    assert general["MAE"] == f"{8 / 7:.3f}"
    assert (
        general["exact"],
        general["within one"],
        general["judge higher"],
        general["judge lower"],
    ) == ("2/7 = 0.29", "4/7 = 0.57", "3/7 = 0.43", "2/7 = 0.29")
    for name in ("general", "billing", "(all)"):
        human, judge = pairs(None if name == "(all)" else name)
        assert (
            table.loc[name, "kappa linear"]
            == f"{cohen_kappa_score(human, judge, labels=LIKERT, weights='linear'):.3f}"
        )
        assert (
            table.loc[name, "kappa quadratic"]
            == f"{cohen_kappa_score(human, judge, labels=LIKERT, weights='quadratic'):.3f}"
        )
    # the ordinal confusion over all cases, counted independently from the fixture
    human, judge = pairs(None)
    counts = Counter(zip(human, judge, strict=True))
    matrix = confusion.data.set_index("adjudicated \\ judge")
    assert list(matrix.columns) == LIKERT and list(matrix.index) == LIKERT
    for h in LIKERT:
        assert [int(matrix.loc[h, j]) for j in LIKERT] == [counts[(h, j)] for j in LIKERT], h
    assert "13 pairs" in confusion.styler.caption


def test_section_html_labels_the_nominal_figures_and_renders_into_the_report(
    make_dataset, tmp_path: Path
) -> None:
    gold, rows = build(make_dataset, FIXTURE)
    _, _, report = report_for(gold, rows)
    section = ordinal_section_html(report)
    assert "Scale (ordinal): 1 &lt; 2 &lt; 3 &lt; 4 &lt; 5." in section
    assert (  # the apostrophe escaped (which entity is the escaper's choice)
        "Cohen's kappa and the confusion above are nominal: every label an unordered category."
        in unescape(section)
        and "Cohen's kappa and the confusion" not in section
    )
    # through the report renderer (report.html is the executed notebook's outputs)
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("display(HTML(ordinal_section_html(cert.alignment)))")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/html": section})]
    notebook.cells = [cell]
    path = tmp_path / "executed.ipynb"
    nbformat.write(notebook, str(path))
    page = render_html(path)
    assert "Ordinal figures: judge against the adjudicated label on the ordered scale" in page
    assert (
        ">0.263<" in page
        and ">0.443<" in page
        and f">{8 / 7:.3f}<" in page
        and "4/7 = 0.57" in page
    )


def test_nominal_rubric_has_no_ordinal_section(make_dataset) -> None:
    cases = [make_case(f"c{i}", "fail" if i < 3 else "pass") for i in range(6)]
    dataset = load_dataset(make_dataset(cases))
    report = alignment_report(
        join_results(dataset, result_lines([make_result(c, "pass") for c in cases]))
    )
    assert (
        report.scale == "nominal"
        and ordinal_tables(report) == []
        and ordinal_section_html(report) == ""
    )
    summary = agreement_summary(report, human_agreement(dataset, "development"))
    assert "judge_vs_adjudicated_kappa" in summary.columns and not any(
        "weighted" in c or "(nominal)" in c for c in summary.columns
    )


def test_agreement_summary_labels_nominal_and_adds_weighted_kappa(make_dataset) -> None:
    gold, rows = build(make_dataset, FIXTURE)
    dataset, _, report = report_for(gold, rows)
    human = human_agreement(dataset, "development")
    summary = agreement_summary(report, human)
    assert "judge_vs_adjudicated_kappa" not in summary.columns
    general = next(s for s in report.slices if s.slice == "general")
    assert summary.loc["general", "judge_vs_adjudicated_kappa (nominal)"] == pytest.approx(
        general.cohen_kappa.value
    )
    assert summary.loc["general", "judge_vs_adjudicated_kappa (linear weighted)"] == pytest.approx(
        5 / 19
    )
    assert summary.loc[
        "general", "judge_vs_adjudicated_kappa (quadratic weighted)"
    ] == pytest.approx(39 / 88)
    assert (
        "human_krippendorff_alpha (nominal)" in summary.columns
        and "human_krippendorff_alpha (ordinal)" in summary.columns
    )


def test_certify_notebook_shows_the_section_for_ordered_rubrics() -> None:
    notebook = json.loads((ROOT / "notebooks" / "03_certify.ipynb").read_text(encoding="utf-8"))
    sources = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    held_out = next(s for s in sources if "confusion_heatmap(cert.alignment.confusion" in s)
    assert (
        'if cert.alignment.scale != "nominal":' in held_out
        and "display(HTML(ordinal_section_html(cert.alignment)))" in held_out
    )
    assert "Confusion (nominal: every label an unordered category)" in held_out
    assert any(
        "    ordinal_section_html,\n" in s and "from workbench.reports import (" in s
        for s in sources
    )
