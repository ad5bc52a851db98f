"""Held-out identity by content (workbench/heldout/_content.py): the keys ignore ids, invisible
characters, compatibility forms and whitespace, and tell apart what the judge sees and what
reviewers decided."""

from __future__ import annotations

from pathlib import Path

from workbench.gold import load_dataset
from workbench.heldout import content_key, item_key, normalize_text

DEMO = Path(__file__).resolve().parents[1] / "data" / "demo"


def test_normalize_text_strips_format_characters_folds_whitespace_and_applies_nfkc() -> None:
    assert normalize_text("re\u200bfund\u00a0 policy\n\tapplies\ufeff") == "refund policy applies"
    assert normalize_text("\uff21\uff22\uff23 \u2460") == "ABC 1"  # fullwidth and circled forms
    assert normalize_text("a\u202eb\u2066c") == "abc"  # bidi controls are Cf
    assert normalize_text(None) is None
    assert normalize_text("Refund") != normalize_text("refund")  # case is content


def _case():
    dataset = load_dataset(DEMO)
    return next(c for c in dataset.cases.values() if c.gold_label is not None)


def test_an_invisible_or_renamed_copy_of_a_case_has_the_same_keys() -> None:
    case = _case()
    copy = case.model_copy(
        update={
            "case_id": case.case_id + "-copy",
            "partition": "development",
            "group": "elsewhere",
            "input": "\u200b" + case.input.replace(" ", "  \u2060"),
            "response": case.response + "\ufeff\n",
        }
    )
    assert item_key(copy) == item_key(case)
    assert content_key(copy) == content_key(case)


def test_a_relabel_keeps_the_item_key_and_changes_the_content_key() -> None:
    case = _case()
    other = next(label for label in ("pass", "fail") if label != case.gold_label)

    # gold_label is derived from reviews and adjudication: a stand-in changes only the label
    class Relabelled:
        input, response = case.input, case.response
        grading_notes, reference, contexts = case.grading_notes, case.reference, case.contexts
        slice = case.slice
        gold_label = other

    assert item_key(Relabelled()) == item_key(case)
    assert content_key(Relabelled()) != content_key(case)


def test_a_changed_response_is_a_different_item() -> None:
    case = _case()
    changed = case.model_copy(update={"response": case.response + " Also, refunds are instant."})
    assert item_key(changed) != item_key(case)
