"""What one process reuses between two checks is keyed by content, never by path or mtime
(issue 31, session 33): a gold record's field hashes (:func:`workbench.gold.case_hashes`) are
remembered by the record's own JSON bytes, so an in-place edit of a frozen record between two
validations in one process (a notebook, the UI, a test module) is caught by the second, even
when it keeps the file's size and mtime. (The judge code fingerprint's tamper tests:
``tests/test_fingerprint_code.py``.)"""

from __future__ import annotations

import math
import os

import pytest
from conftest import approve, make_case

from workbench.gold import GoldCase, case_hashes, freeze, validate_dataset
from workbench.gold._release import _case_hashes


@pytest.fixture(autouse=True)
def _approver(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    approve(tmp_path, "tester")
    monkeypatch.setenv("WORKBENCH_USER", "tester")


def test_a_frozen_record_edited_after_a_first_validation_is_caught_by_the_second(
    make_dataset,
) -> None:
    gold = make_dataset([make_case("a"), make_case("b", "fail"), make_case("c")])
    freeze(gold)
    assert not validate_dataset(gold).errors  # every record hashed: the memo is warm
    path = gold / "gold.jsonl"
    stat = path.stat()
    original = path.read_bytes()
    forged = original.replace(b'"label": "fail", "reason"', b'"label": "pass", "reason"', 1)
    assert forged != original and len(forged) == len(original)
    path.write_bytes(forged)  # same size, mtime put back: only the bytes tell
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    errors = validate_dataset(gold).errors
    assert [(p.case_id, p.code) for p in errors] == [("b", "frozen_case_edited")]
    assert "label changed" in errors[0].message
    path.write_bytes(original)
    assert not validate_dataset(gold).errors


def test_the_memo_returns_what_hashing_returns_and_a_copy() -> None:
    case = GoldCase.model_validate(make_case("m", metadata={"score": None}))
    first = case_hashes(case)
    assert first == _case_hashes(case)
    first["label"] = "mutated by a caller"  # a copy: the memo is not changed through it
    assert case_hashes(case) == _case_hashes(case)
    nan = GoldCase.model_validate(make_case("m", metadata={"score": math.nan}))
    assert case_hashes(nan) == _case_hashes(nan)  # its own key (NaN is not null in it)
