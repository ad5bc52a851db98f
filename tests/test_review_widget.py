"""The review widget: view-model filtering and navigation, note saving, HTML escaping."""

from __future__ import annotations

import json

import numpy as np
import pytest

from workbench.review import ReviewNotes, ReviewTable
from workbench.ui import ALL_CASES, ALL_DISAGREEMENTS, ReviewModel, ReviewWidget, case_html

XSS = "<script>alert(1)</script> and <img src=x onerror=alert(1)>"


def _row(case_id: str, slice: str, error_class: str, tags: list[str] | None = None, **extra) -> dict:
    outcome = {"error": "error", "missing": "missing"}.get(error_class, "verdict")
    human = "fail" if error_class in ("false_pass", "aligned") else "pass"
    judge = {"false_pass": "pass", "false_fail": "fail", "aligned": human, "disagreement": "review_required"}.get(error_class)
    row = {
        "case_id": case_id,
        "slice": slice,
        "risk": "critical" if slice == "billing" else "low",
        "partition": "development",
        "tags": tags or [],
        "error_class": error_class,
        "outcome": outcome,
        "human_label": human,
        "judge_label": judge,
        "judge_reason": "judge reason" if judge else None,
        "error_kind": "timeout" if outcome == "error" else None,
        "input": f"input {case_id}",
        "response": f"response {case_id}",
        "grading_notes": "notes",
        "reviews": [{"reviewer": "rev-a", "label": human, "confidence": "high", "rationale": f"rationale {case_id}", "evidence": []}],
        "adjudication": {"label": human, "reason": "policy", "adjudicator": "adj"},
        "rendered_request": {"messages": [{"role": "user", "content": f"judge {case_id}"}]},
        "attempts": 1,
    }
    row.update(extra)
    return row


ROWS = [
    _row("c0", "billing", "aligned"),
    _row("c1", "billing", "false_pass", ["abbrev"]),
    _row("c2", "general", "false_fail"),
    _row("c3", "billing", "error", ["abbrev"]),
    _row("c4", "general", "aligned", ["abbrev"]),
    _row("c5", "general", "disagreement"),
    _row("c6", "billing", "false_pass"),
    _row("c7", "general", "missing"),
]


@pytest.fixture
def table() -> ReviewTable:
    return ReviewTable.from_records(ROWS, judge_fingerprint="fp-test")


def test_model_filters_with_masks_and_navigates(table):
    model = ReviewModel(table)
    assert (model.slice, model.error_class, model.tag) == ("(all)", ALL_DISAGREEMENTS, "(any)")
    assert model.positions.tolist() == [1, 2, 3, 5, 6] and isinstance(model.positions, np.ndarray)
    assert model.position_text() == "1 of 5" and model.current_case()["case_id"] == "c1"
    assert not model.has_previous and model.next() and model.current_case()["case_id"] == "c2"
    assert model.previous() and not model.previous()
    model.set_filter(slice="billing", error_class="false_pass")
    assert model.positions.tolist() == [1, 6]
    model.set_filter(tag="abbrev", error_class=ALL_CASES)
    assert model.positions.tolist() == [1, 3]  # slice billing kept: c4 (abbrev) is general
    assert model.counts() == {"matches": 2, "total": 8, "by_class": {"aligned": 0, "disagreement": 0, "error": 1, "false_fail": 0, "false_pass": 1, "missing": 0}}
    model.set_filter(slice="general", error_class="false_pass", tag="(any)")
    assert model.n_matches == 0 and model.current_case() is None and model.position_text() == "0 of 0"
    assert not model.next() and not model.previous()
    with pytest.raises(ValueError):
        model.set_filter(slice="nope")


def test_widget_filters_change_case_and_position(table):
    w = ReviewWidget(table, reviewer="ana")
    assert w.position.value == "1 of 5" and w.model.current_case()["case_id"] == "c1"
    assert w.prev_button.disabled and not w.next_button.disabled
    w.next_button.click()
    w.next_button.click()
    assert w.position.value == "3 of 5" and w.model.current_case()["case_id"] == "c3"
    w.slice_filter.value = "general"  # a filter change resets to the first match
    assert w.model.current_case()["slice"] == "general" and w.position.value == "1 of 2"
    assert w.model.current_case()["case_id"] == "c2"
    w.class_filter.value = "disagreement"
    assert w.model.current_case()["case_id"] == "c5" and w.position.value == "1 of 1"
    assert w.prev_button.disabled and w.next_button.disabled
    w.class_filter.value = ALL_CASES
    w.tag_filter.value = "abbrev"
    assert w.model.current_case()["case_id"] == "c4" and w.position.value == "1 of 1"
    w.slice_filter.value = "(all)"
    assert w.position.value == "1 of 3" and w.model.current_case()["case_id"] == "c1"
    w.next_button.click()
    w.prev_button.click()
    assert w.model.current_case()["case_id"] == "c1"
    assert "rationale c1" in w.detail.value and "judge reason" in w.detail.value
    assert "<details>" in w.detail.value and "judge c1" in w.detail.value


def test_empty_filter_says_so_and_disables_buttons(table, tmp_path):
    w = ReviewWidget(table, notes=ReviewNotes(tmp_path / "n.jsonl"), reviewer="ana")
    w.slice_filter.value = "general"
    w.class_filter.value = "false_pass"
    assert w.model.n_matches == 0 and w.position.value == "0 of 0"
    assert w.next_button.disabled and w.prev_button.disabled and w.save_button.disabled
    assert "No case matches" in w.detail.value
    w.class_filter.value = "missing"
    assert w.model.current_case()["case_id"] == "c7" and "no result (missing)" in w.detail.value


def test_save_note_appends_a_line_with_the_selected_cause(table, tmp_path):
    path = tmp_path / "notes.jsonl"
    notes = ReviewNotes(path)
    w = ReviewWidget(table, notes=notes, reviewer="ana")
    w.save_button.click()
    assert w.status.value == "choose a cause first" and path.read_text() == ""
    w.next_button.click()  # c2, false_fail
    w.cause.value = "judge_instruction_gap"
    w.note.value = "prompt never mentions partial refunds"
    w.save_button.click()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert (record["case_id"], record["cause"], record["reviewer"], record["judge_fingerprint"], record["error_class"]) == ("c2", "judge_instruction_gap", "ana", "fp-test", "false_fail")
    assert record["note"] == "prompt never mentions partial refunds" and w.note.value == ""
    assert "Latest note" in w.detail.value and "judge_instruction_gap" in w.detail.value
    w.cause.value = "parser_bug"
    w.save_button.click()
    assert len(path.read_text(encoding="utf-8").splitlines()) == 2
    assert notes.latest_by_case("fp-test")["c2"].cause == "parser_bug"
    # a reopened widget shows the latest note for the same judge
    again = ReviewWidget(table, notes=notes, reviewer="bo")
    again.next_button.click()
    assert "parser_bug" in again.detail.value


def test_every_piece_of_case_text_is_escaped():
    row = _row(
        "<b>id</b>",
        "billing",
        "false_pass",
        ["<i>tag</i>"],
        response=XSS,
        input=XSS,
        grading_notes=XSS,
        reference=XSS,
        contexts=[XSS],
        judge_reason=XSS,
        reviews=[{"reviewer": XSS, "label": XSS, "confidence": "high", "rationale": XSS, "evidence": [XSS]}],
        adjudication={"label": XSS, "reason": XSS, "adjudicator": XSS},
        rendered_request={"messages": [{"role": "user", "content": XSS}]},
    )
    w = ReviewWidget(ReviewTable.from_records([row]), reviewer="ana")
    html = w.detail.value
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<script" not in html and "<img" not in html and "<b>id" not in html and "<i>tag" not in html
    error_row = _row("e", "general", "error", error_message=XSS, error_kind="<u>k</u>")
    html = case_html(error_row)
    assert "<script" not in html and "<u>" not in html and "&lt;script&gt;" in html


def test_empty_table_and_display(capsys):
    w = ReviewWidget(ReviewTable.from_records([], judge_fingerprint=None), reviewer="ana")
    assert w.position.value == "0 of 0" and w.next_button.disabled and w.prev_button.disabled
    assert "No case matches" in w.detail.value and w.save() is None
    w._ipython_display_()  # no kernel: IPython prints a text repr
    assert w.box.children[2] is w.detail


def test_table_from_frame_tolerates_missing_optional_values():
    import pandas as pd

    frame = pd.DataFrame({"case_id": ["a", "b"], "slice": ["s", "s"], "error_class": ["false_pass", "aligned"], "tags": [["x"], None]})
    table = ReviewTable.from_frame(frame)
    assert table.tags == ("x",) and table.row(1)["risk"] is None and table.row(1)["tags"] is None
    model = ReviewModel(table)
    assert model.current_case()["case_id"] == "a"
    model.set_filter(tag="x", error_class=ALL_CASES)
    assert model.positions.tolist() == [0]
