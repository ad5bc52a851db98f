"""The review widget: view model (filters, conditional counts, search, progress, chart),
keys, notes (pre-fill, cause counts, export), gold-correction drafts, rendering and escaping."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from html import unescape

import numpy as np
import pandas as pd
import pytest
from conftest import canonical_sha256, make_case, make_result, write_results
from lineage_support import stamped

from workbench.errors import WorkbenchError
from workbench.gold import GoldCase, load_dataset
from workbench.review import (
    CAUSES,
    GoldCorrectionDrafts,
    ReviewNotes,
    ReviewTable,
    drafts_path,
    review_table,
)
from workbench.ui import (
    ALL_CASES,
    ALL_DISAGREEMENTS,
    ALL_SLICES,
    ANY_TAG,
    ReviewModel,
    ReviewWidget,
    case_html,
    pretty_request,
)

XSS = "<script>alert(1)</script> and <img src=x onerror=alert(1)>"


def _row(
    case_id: str, slice: str, error_class: str, tags: list[str] | None = None, **extra
) -> dict:
    outcome = {"error": "error", "missing": "missing"}.get(error_class, "verdict")
    human = "fail" if error_class in ("false_pass", "aligned") else "pass"
    judge = {
        "false_pass": "pass",
        "false_fail": "fail",
        "aligned": human,
        "disagreement": "review_required",
    }.get(error_class)
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
        "reviews": [
            {
                "reviewer": "rev-a",
                "label": human,
                "confidence": "high",
                "rationale": f"rationale {case_id}",
                "evidence": [],
            }
        ],
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


def _count_of(label: str) -> int:
    found = re.search(r"\((\d+)(?:, no cases)?\)$", label)
    assert found, f"no count in option label {label!r}"
    return int(found.group(1))


# -- view model ----------------------------------------------------------------------------
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
    model.set_filter(slice="general", error_class="false_pass", tag="(any)")
    assert (
        model.n_matches == 0 and model.current_case() is None and model.position_text() == "0 of 0"
    )
    assert not model.next() and not model.previous()
    with pytest.raises(ValueError):
        model.set_filter(slice="nope")
    with pytest.raises(ValueError):
        model.set_filter(tag="nope")


def _all_options(model: ReviewModel) -> dict[str, list[tuple[str, str]]]:
    return {
        "slice": model.slice_options(),
        "error_class": model.class_options(),
        "tag": model.tag_options(),
    }


def test_every_dropdown_count_is_what_choosing_it_shows(table):
    """Issue 10: the slice said (25) while the widget said "1 of 5"; a tag said (2) and led to
    "0 of 0". Every count must equal the matches after choosing that option, for every
    combination of the other filters."""
    model = ReviewModel(table, reviewed=["c2"])
    combos = itertools.product(
        [ALL_SLICES, "billing", "general"],
        [ALL_DISAGREEMENTS, "false_pass", ALL_CASES],
        [ANY_TAG, "abbrev"],
        [False, True],
        [False, True],
        [False, True],
        ["", "input c", "rationale c1"],
    )
    checked = 0
    for s, c, t, humans, critical, unreviewed, search in combos:
        base = {
            "slice": s,
            "error_class": c,
            "tag": t,
            "humans_disagree": humans,
            "critical_only": critical,
            "unreviewed_only": unreviewed,
            "search": search,
        }
        model.set_filter(**base)
        for kind, options in _all_options(model).items():
            for label, value in options:
                probe = ReviewModel(table, reviewed=["c2"])
                probe.set_filter(**{**base, kind: value})
                assert _count_of(label) == probe.n_matches, (
                    base,
                    kind,
                    label,
                    probe.position_text(),
                )
                if probe.n_matches == 0:
                    assert label.endswith("(0, no cases)"), label
                checked += 1
        for name, count in model.toggle_counts().items():
            probe = ReviewModel(table, reviewed=["c2"])
            probe.set_filter(**{**base, name: True})
            assert count == probe.n_matches, (base, name)
    assert checked > 1000


def test_conditional_counts_by_hand(table):
    model = ReviewModel(table)
    model.set_filter(slice="general")
    # the class counts follow the slice; the slice counts follow the class
    assert model.class_counts() == {
        ALL_DISAGREEMENTS: 2,
        "false_pass": 0,
        "false_fail": 1,
        "disagreement": 1,
        "error": 0,
        "missing": 1,
        "aligned": 1,
        ALL_CASES: 4,
    }
    assert model.slice_counts() == {"billing": 3, "general": 2}
    assert (
        dict(model.tag_options())["abbrev (0, no cases)"] == "abbrev"
    )  # no general disagreement is tagged
    model.set_filter(error_class=ALL_CASES)
    assert ("abbrev (1)", "abbrev") in model.tag_options()


def test_toggles_progress_and_unreviewed_only(table):
    rows = [dict(r) for r in ROWS]
    rows[2]["reviews"] = [{"reviewer": "a", "label": "pass"}, {"reviewer": "b", "label": "fail"}]
    model = ReviewModel(ReviewTable.from_records(rows), reviewed=["c2", "c6"])
    assert model.progress_text() == "2 of 5 reviewed"
    model.set_filter(humans_disagree=True)
    assert [model.current_case()["case_id"]] == [
        "c2"
    ] and model.progress_text() == "1 of 1 reviewed"
    model.set_filter(humans_disagree=False, critical_only=True)
    assert model.positions.tolist() == [1, 3, 6] and model.progress_text() == "1 of 3 reviewed"
    model.set_filter(critical_only=False, unreviewed_only=True)
    assert [model.table.row(p)["case_id"] for p in model.positions] == ["c1", "c3", "c5"]
    model.next()  # c3
    model.mark_reviewed("c3")  # leaves the matches: the next unreviewed case becomes current
    assert model.current_case()["case_id"] == "c5" and model.position_text() == "2 of 2"
    model.mark_reviewed("c5")  # the last one: stay at the end
    assert model.current_case()["case_id"] == "c1" and model.position_text() == "1 of 1"
    model.set_filter(unreviewed_only=False)
    assert model.progress_text() == "4 of 5 reviewed"


def test_search_covers_input_response_reasons_case_insensitively(table):
    rows = [dict(r) for r in ROWS]
    rows[1]["response"] = "Refund APPROVED after review"
    rows[2]["judge_reason"] = "mentions the Warehouse"
    rows[5]["adjudication"] = {"label": "pass", "reason": "Escalation is fine", "adjudicator": "x"}
    model = ReviewModel(ReviewTable.from_records(rows))
    for query, expected in [
        ("refund approved", ["c1"]),
        ("warehouse", ["c2"]),
        ("ESCALATION", ["c5"]),
        ("rationale c6", ["c6"]),  # every word must appear
        ("input", ["c1", "c2", "c3", "c5", "c6"]),
        ("nothing-like-this", []),
    ]:
        model.set_filter(search=query)
        assert [model.table.row(p)["case_id"] for p in model.positions] == expected, query


def test_typing_a_search_narrows_and_widens_correctly(table):
    """The search reuses the previous result while the query grows; it must stay exact."""
    model = ReviewModel(table)
    model.set_filter(error_class=ALL_CASES)
    for query in [
        "r",
        "re",
        "res",
        "resp",
        "response c",
        "response c7",
        "response c",
        "re",
        "",
        "c4",
        "c",
    ]:
        model.set_filter(search=query)
        words = query.lower().split()
        expected = [
            r["case_id"]
            for r in ROWS
            if all(
                any(
                    w in str(r[f]).lower() for f in ("case_id", "input", "response", "judge_reason")
                )
                or w in r["reviews"][0]["rationale"]
                or w in r["adjudication"]["reason"]
                for w in words
            )
        ]
        assert [model.table.row(p)["case_id"] for p in model.positions] == expected, query


def test_chart_counts_and_click_to_filter(table):
    model = ReviewModel(table)
    assert model.chart_data() == [
        {"slice": "billing", "false_pass": 2, "false_fail": 0},
        {"slice": "general", "false_pass": 0, "false_fail": 1},
    ]
    model.select_bar("billing", "false_pass")
    assert (model.slice, model.error_class) == (
        "billing",
        "false_pass",
    ) and model.positions.tolist() == [1, 6]
    model.set_filter(tag="abbrev")  # the chart follows the other filters, not slice and class
    assert model.chart_data()[0] == {"slice": "billing", "false_pass": 1, "false_fail": 0}
    model.select_bar("billing", "false_pass")  # a second click clears the bar's filters
    assert (model.slice, model.error_class) == (ALL_SLICES, ALL_DISAGREEMENTS)


# -- the widget ------------------------------------------------------------------------------
def test_widget_filters_change_case_position_and_every_count(table):
    w = ReviewWidget(table, reviewer="ana")
    assert w.position.value == "1 of 5" and w.model.current_case()["case_id"] == "c1"
    assert w.prev_button.disabled and not w.next_button.disabled
    assert w.progress.value == "0 of 5 reviewed"
    w.next_button.click()
    w.next_button.click()
    assert w.position.value == "3 of 5" and w.model.current_case()["case_id"] == "c3"
    w.slice_filter.value = "general"  # a filter change resets to the first match
    assert w.model.current_case()["case_id"] == "c2" and w.position.value == "1 of 2"
    # every other dropdown now counts within the slice; the slice dropdown keeps its value
    assert w.slice_filter.value == "general"
    assert ("false_pass (0, no cases)", "false_pass") in w.class_filter.options
    assert ("(all disagreements) (2)", ALL_DISAGREEMENTS) in w.class_filter.options
    assert ("abbrev (0, no cases)", "abbrev") in w.tag_filter.options
    assert w.critical_toggle.description == "critical only (0, no cases)"
    w.class_filter.value = "disagreement"
    assert w.model.current_case()["case_id"] == "c5" and w.position.value == "1 of 1"
    assert w.prev_button.disabled and w.next_button.disabled
    assert ("general (1)", "general") in w.slice_filter.options and (
        "billing (0, no cases)",
        "billing",
    ) in w.slice_filter.options
    w.class_filter.value = ALL_CASES
    w.tag_filter.value = "abbrev"
    assert w.model.current_case()["case_id"] == "c4" and w.position.value == "1 of 1"
    w.slice_filter.value = "(all)"
    assert w.position.value == "1 of 3" and w.model.current_case()["case_id"] == "c1"
    w.search.value = "input c3"
    assert w.position.value == "1 of 1" and w.model.current_case()["case_id"] == "c3"
    assert ("(any) (1)", ANY_TAG) in w.tag_filter.options
    w.search.value = ""
    w.critical_toggle.value = True
    assert w.position.value == "1 of 2" and [
        w.model.table.row(p)["case_id"] for p in w.model.positions
    ] == ["c1", "c3"]
    assert "rationale c1" in w.detail.value and "judge reason" in w.detail.value
    # the case list shows the matches, the chart the slices
    assert [r["case_id"] for r in w.sidebar.rows] == ["c1", "c3"] and w.sidebar.current == 0
    assert {d["slice"] for d in w.sidebar.chart} == {"billing", "general"}


def test_chart_click_from_the_browser_filters_slice_and_class(table):
    w = ReviewWidget(table, reviewer="ana")
    w._on_message(w.sidebar, {"type": "bar", "slice": "billing", "error_class": "false_pass"}, [])
    assert (w.slice_filter.value, w.class_filter.value) == ("billing", "false_pass")
    assert w.position.value == "1 of 2" and w.sidebar.selected == {
        "slice": "billing",
        "error_class": "false_pass",
    }
    w._on_message(w.sidebar, {"type": "goto", "index": 1}, [])
    assert w.model.current_case()["case_id"] == "c6" and w.position.value == "2 of 2"
    w._on_message(w.sidebar, {"type": "goto", "index": 99}, [])  # ignored, no exception
    assert w.position.value == "2 of 2"


def test_keys_navigate_pick_a_cause_and_save(table, tmp_path):
    notes = ReviewNotes(tmp_path / "notes.jsonl")
    w = ReviewWidget(table, notes=notes, reviewer="ana")
    send = lambda key: w._on_message(w.sidebar, {"type": "key", "key": key}, [])  # noqa: E731
    send("j")
    assert w.model.current_case()["case_id"] == "c2"
    send("ArrowDown")
    send("ArrowRight")
    assert w.model.current_case()["case_id"] == "c5"
    send("k")
    send("ArrowUp")
    assert w.model.current_case()["case_id"] == "c2"
    send("s")
    assert w.status.value.startswith("choose a cause first") and notes.all() == []
    for digit, cause in enumerate(CAUSES, start=1):
        send(str(digit))
        assert w.cause.value == cause
    send("4")
    send("s")
    assert [(n.case_id, n.cause) for n in notes.all()] == [("c2", "judge_instruction_gap")]
    assert (
        w.progress.value == "1 of 5 reviewed"
        and w.status.value == "saved: c2 -> judge_instruction_gap"
    )
    assert not w.key("x") and not w.key("9") and w.key("ArrowLeft")
    assert w.model.current_case()["case_id"] == "c1"
    assert w.key("k") and w.status.value == "first case of this filter"


def test_cause_prefilled_from_latest_note_and_counts_update_after_save(table, tmp_path):
    path = tmp_path / "notes.jsonl"
    notes = ReviewNotes(path)
    notes.add("c2", "parser_bug", "old", reviewer="bo", judge_fingerprint="fp-test")
    notes.add("c2", "rubric_ambiguity", "newer", reviewer="bo", judge_fingerprint="fp-test")
    notes.add(
        "c1", "provider_failure", "another judge", reviewer="bo", judge_fingerprint="fp-other"
    )
    w = ReviewWidget(table, notes=notes, reviewer="ana")
    assert (
        w.model.current_case()["case_id"] == "c1" and w.cause.value == "" and w.note.value == ""
    )  # other judge's note ignored
    assert ("2 rubric_ambiguity (1)", "rubric_ambiguity") in w.cause.options and (
        "6 parser_bug (0)",
        "parser_bug",
    ) in w.cause.options
    w.key("j")
    assert (w.cause.value, w.note.value) == ("rubric_ambiguity", "newer")
    assert "latest note: <b>rubric_ambiguity</b> by bo" in w.detail.value
    w.key("j")  # c3: nothing yet, the form is empty again
    assert (w.cause.value, w.note.value) == ("", "")
    w.key("2")
    w.note.value = "the rubric is silent on partial refunds"
    w.save_button.click()
    assert ("2 rubric_ambiguity (2)", "rubric_ambiguity") in w.cause.options
    assert w.cause.value == "rubric_ambiguity" and w.progress.value == "2 of 5 reviewed"
    record = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
    assert (
        record["case_id"],
        record["cause"],
        record["reviewer"],
        record["judge_fingerprint"],
        record["error_class"],
    ) == ("c3", "rubric_ambiguity", "ana", "fp-test", "error")
    w.key("k")
    w.key("6")
    w.key("s")  # a changed cause appends; the earlier line stays
    assert ("2 rubric_ambiguity (1)", "rubric_ambiguity") in w.cause.options and (
        "6 parser_bug (1)",
        "parser_bug",
    ) in w.cause.options
    assert len(path.read_text(encoding="utf-8").splitlines()) == 5
    again = ReviewWidget(table, notes=notes, reviewer="bo")
    again.key("j")
    assert again.cause.value == "parser_bug"


def test_empty_filter_says_so_and_disables_buttons(table, tmp_path):
    w = ReviewWidget(table, notes=ReviewNotes(tmp_path / "n.jsonl"), reviewer="ana")
    w.slice_filter.value = "general"
    w.class_filter.value = "false_pass"
    assert (
        w.model.n_matches == 0
        and w.position.value == "0 of 0"
        and w.progress.value == "0 of 0 reviewed"
    )
    assert w.next_button.disabled and w.prev_button.disabled and w.save_button.disabled
    assert "No case matches" in w.detail.value and w.sidebar.rows == []
    assert w.key("1") and w.cause.value == ""
    w.class_filter.value = "missing"
    assert w.model.current_case()["case_id"] == "c7" and "no result (missing)" in w.detail.value


def test_empty_table_and_display():
    w = ReviewWidget(ReviewTable.from_records([], judge_fingerprint=None), reviewer="ana")
    assert w.position.value == "0 of 0" and w.next_button.disabled and w.prev_button.disabled
    assert "No case matches" in w.detail.value and w.save() is None
    w._ipython_display_()  # no kernel: IPython prints a text repr
    assert "wb-review" in w.box._dom_classes


# -- rendering ---------------------------------------------------------------------------------
def test_humans_and_judge_side_by_side_with_pass_fail_colours(table):
    html = case_html(table.row(1))  # c1: human fail, judge pass
    humans = html.index("wb-col wb-human wb-fail")
    judge = html.index("wb-col wb-judge wb-pass")
    assert html.index("<div class='wb-cols'>") < humans < judge
    assert "rationale c1" in html[humans:judge] and "judge reason" in html[judge:]
    assert "Adjudicated" in html[humans:judge]


def test_long_texts_collapse_with_show_more():
    long = "First line of a long answer.\n" + "word " * 200
    html = case_html(_row("c", "billing", "false_pass", response=long))
    assert "show more" in html and "<details class='wb-more'>" in html
    preview = re.search(r"<span class='wb-text wb-preview'>(.*?)</span>", html, re.S).group(1)
    assert len(preview) < 300 and preview.endswith("…")
    assert ("word " * 200).strip() in html  # the full text is one click away
    short = case_html(_row("c", "billing", "false_pass"))
    assert "<details class='wb-more'>" not in short.split("wb-cols")[0]


def test_request_pretty_printed_with_raw_json_and_sha256():
    request = {
        "model": "m-1",
        "temperature": 0,
        "messages": [
            {"role": "system", "content": "You grade.\nBe strict."},
            {"role": "user", "content": [{"type": "text", "text": "Case:\nrefund"}]},
        ],
    }
    html = case_html(_row("c", "billing", "false_pass", rendered_request=request))
    pretty = html.split("wb-req-pretty", 1)[1].split("wb-req-raw", 1)[0]
    assert (
        "<div class='wb-req-role'>system</div><pre>You grade.\nBe strict.</pre>" in pretty
    )  # real line breaks
    assert (
        "<div class='wb-req-role'>user</div><pre>Case:\nrefund</pre>" in pretty
        and "\\n" not in pretty
    )
    assert "model m-1" in pretty
    expected_sha = hashlib.sha256(
        json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    ).hexdigest()
    raw = html.split("wb-req-raw", 1)[1]
    assert f"sha256 {expected_sha[:12]}…" in raw and f"sha256 {expected_sha}" in raw
    # the raw JSON, escaped (the entity for a quote is the escaper's choice)
    assert '"role"' not in raw and '"role": "system"' in unescape(raw)
    # a recorded hash is shown as recorded
    assert "sha256 abc123" in case_html(
        _row("c", "billing", "false_pass", rendered_request_sha256="abc123" + "0" * 58)
    )
    # a function judge's arguments: each field, then its text
    args = pretty_request({"function": "mod:judge", "arguments": {"response": "line 1\nline 2"}})
    assert (
        "function mod:judge" in args
        and "<div class='wb-req-role'>response</div><pre>line 1\nline 2</pre>" in args
    )


def test_every_piece_of_case_text_is_escaped():
    row = _row(
        "<b>id</b>",
        "billing",
        "false_pass",
        ["<i>tag</i>"],
        response=XSS * 20,
        input=XSS,
        grading_notes=XSS,
        reference=XSS,
        contexts=[XSS],
        judge_reason=XSS,
        reviews=[
            {
                "reviewer": XSS,
                "label": XSS,
                "confidence": "high",
                "rationale": XSS,
                "evidence": [XSS],
            }
        ],
        adjudication={"label": XSS, "reason": XSS, "adjudicator": XSS},
        rendered_request={
            "model": XSS,
            "messages": [{"role": XSS, "content": XSS}],
            XSS: {XSS: XSS},
        },
    )
    w = ReviewWidget(ReviewTable.from_records([row]), reviewer="ana")
    html = w.detail.value
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert (
        "<script" not in html
        and "<img" not in html
        and "<b>id" not in html
        and "<i>tag" not in html
    )
    error_row = _row("e", "general", "error", error_message=XSS, error_kind="<u>k</u>")
    html = case_html(error_row)
    assert "<script" not in html and "<u>" not in html and "&lt;script&gt;" in html
    # the case list and the chart get plain data; the browser sets it as text (see the browser test)
    assert w.sidebar.rows[0]["case_id"] == "<b>id</b>"


# -- notes export and gold-correction drafts -----------------------------------------------------
def test_notes_export_to_csv_and_parquet(table, tmp_path):
    notes = ReviewNotes(tmp_path / "notes.jsonl")
    notes.add(
        "c1",
        "parser_bug",
        "first, with a comma",
        reviewer="ana",
        judge_fingerprint="fp-test",
        error_class="false_pass",
    )
    notes.add(
        "c1",
        "rubric_ambiguity",
        'second "quoted"\nline',
        reviewer="ana",
        judge_fingerprint="fp-test",
        error_class="false_pass",
    )
    notes.add("c2", "out_of_scope", "", reviewer="bo", judge_fingerprint="fp-other")
    csv = notes.export(tmp_path / "out" / "notes.csv")
    parquet = notes.export(tmp_path / "out" / "notes.parquet")
    back_csv = pd.read_csv(csv, keep_default_na=False)
    back_parquet = pd.read_parquet(parquet)
    assert (
        list(back_csv.columns)
        == list(back_parquet.columns)
        == [
            "schema_version",
            "note_id",
            "case_id",
            "judge_fingerprint",
            "reviewer",
            "created_at",
            "cause",
            "note",
            "error_class",
        ]
    )
    for frame in (back_csv, back_parquet):
        assert frame["cause"].tolist() == ["parser_bug", "rubric_ambiguity", "out_of_scope"]
        assert frame["note"].tolist() == ["first, with a comma", 'second "quoted"\nline', ""]
        assert frame["note_id"].tolist() == [n.note_id for n in notes.all()]
    assert str(back_parquet["created_at"].dt.tz) == "UTC"
    w = ReviewWidget(table, notes=notes, reviewer="ana")
    latest = pd.read_parquet(w.export_notes(tmp_path / "latest.parquet", latest_only=True))
    assert latest[["case_id", "cause"]].values.tolist() == [["c1", "rubric_ambiguity"]]
    with pytest.raises(WorkbenchError, match="unknown_export_format"):
        notes.export(tmp_path / "notes.xlsx")
    odd = ReviewNotes(tmp_path / "odd.csv")
    with pytest.raises(WorkbenchError, match="export_over_notes"):
        odd.export(tmp_path / "odd.csv")


@pytest.fixture
def gold_table(make_dataset, tmp_path):
    cases = [
        make_case("g1", "fail", slice="billing", tags=["t"]),
        make_case("g2", "pass", reviews={"rev-a": "pass", "rev-b": "fail"}),
        make_case("g3", "pass"),
    ]
    root = make_dataset(cases)
    dataset = load_dataset(root)
    request = {"messages": [{"role": "user", "content": "x"}]}
    rows = [
        make_result(
            cases[0],
            "pass",
            rendered_request=request,
            rendered_request_sha256=canonical_sha256(request),
        ),
        make_result(cases[1], "fail"),
        make_result(cases[2], "pass"),
    ]
    results = write_results(tmp_path / "results.jsonl", stamped(rows, root))
    return root, dataset, review_table(root, results, partition="development")


def test_review_table_carries_what_the_widget_needs(gold_table):
    _root, dataset, table = gold_table
    assert table.labels == tuple(dataset.rubric.labels)
    assert table.frame["reviewers_disagree"].tolist() == [False, True, False]
    row = table.row(0)
    assert row["gold_record"] == dataset.cases["g1"].model_dump(mode="json")
    assert row["rendered_request_sha256"] == canonical_sha256(
        {"messages": [{"role": "user", "content": "x"}]}
    )
    assert f"sha256 {row['rendered_request_sha256']}" in case_html(row)


def test_gold_label_defect_drafts_a_superseding_record_never_applied(gold_table, tmp_path):
    root, dataset, table = gold_table
    gold_before = (root / "gold.jsonl").read_bytes()
    notes = ReviewNotes(tmp_path / "review_notes.jsonl")
    w = ReviewWidget(table, notes=notes, reviewer="ana")
    assert w.model.current_case()["case_id"] == "g1"  # human fail, judge pass: a false pass
    assert w.draft_box.layout.display == "none"
    w.key("2")
    assert w.draft_box.layout.display == "none"
    w.key("1")  # gold_label_defect
    assert (
        w.draft_box.layout.display == "flex" and w.draft_label.value == "pass"
    )  # the judge's label by default
    assert w.draft_correction() is None and "reason" in w.status.value  # no note text yet
    w.note.value = "the policy allows this refund: the gold label is wrong"
    draft = w.draft_correction()
    assert (
        draft is not None
        and w.drafts.path == tmp_path / "review_notes.gold_drafts.jsonl" == drafts_path(notes.path)
    )
    saved = notes.all()
    assert [(n.case_id, n.cause) for n in saved] == [
        ("g1", "gold_label_defect")
    ]  # the note was saved first
    assert (
        draft.supersedes,
        draft.proposed_label,
        draft.current_label,
        draft.note_id,
        draft.status,
    ) == ("g1", "pass", "fail", saved[0].note_id, "proposed")
    record = GoldCase.model_validate(draft.record)
    assert (
        record.case_id,
        record.supersedes,
        record.adjudication.label,
        record.adjudication.adjudicator,
    ) == ("g1-c1", "g1", "pass", None)
    assert record.adjudication.reason == "the policy allows this refund: the gold label is wrong"
    assert (
        record.reviews == dataset.cases["g1"].reviews
        and record.response_hash == dataset.cases["g1"].response_hash
    )
    assert [d.draft_id for d in GoldCorrectionDrafts(w.drafts.path).all()] == [draft.draft_id]
    # never applied: the gold file and the dataset are unchanged
    assert (root / "gold.jsonl").read_bytes() == gold_before
    assert load_dataset(root).cases["g1"].gold_label == "fail"
    # a second draft reuses the unchanged note and numbers the proposal
    again = w.draft_correction()
    assert again.record["case_id"] == "g1-c2" and len(notes.all()) == 1
    # refusals
    w.draft_label.value = "fail"
    assert w.draft_correction() is None and "already is 'fail'" in w.status.value
    w.key("3")
    assert w.draft_correction() is None and "needs cause gold_label_defect" in w.status.value
    with pytest.raises(WorkbenchError, match="not_a_gold_defect"):
        GoldCorrectionDrafts(tmp_path / "d.jsonl").add(
            notes.add("g2", "parser_bug", "x", reviewer="ana"),
            proposed_label="fail",
            current_label="pass",
        )
    assert len(GoldCorrectionDrafts(w.drafts.path).all()) == 2


def test_table_from_frame_tolerates_missing_optional_values():
    frame = pd.DataFrame(
        {
            "case_id": ["a", "b"],
            "slice": ["s", "s"],
            "error_class": ["false_pass", "aligned"],
            "tags": [["x"], None],
        }
    )
    table = ReviewTable(frame)
    assert table.tags == ("x",) and table.row(1)["risk"] is None and table.row(1)["tags"] is None
    assert table.reviewers_disagree.tolist() == [False, False] and table.labels == ()
    model = ReviewModel(table)
    assert model.current_case()["case_id"] == "a"
    model.set_filter(tag="x", error_class=ALL_CASES, search="A")
    assert model.positions.tolist() == [0]
    w = ReviewWidget(table, reviewer="ana")  # no labels known: the draft form offers pass/fail
    assert list(w.draft_label.options) == ["pass", "fail"] and "a" in w.detail.value
