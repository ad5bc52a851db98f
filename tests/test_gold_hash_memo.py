"""The gold file's sha256 is remembered by its ``stat`` (workbench.gold._index): a large gold
file is read once per change, and a change, however disguised, is always read again."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import make_case, write_dataset

import workbench.gold._index as index_module
from workbench._io import sha256_file
from workbench.gold._index import MEMO_MARGIN_NS, cache_dir, gold_index


@pytest.fixture
def gold(tmp_path: Path) -> Path:
    cases = [
        make_case(f"c{i}", ("pass", "fail")[i % 2], partition="development", group=f"g{i}")
        for i in range(6)
    ]
    return write_dataset(tmp_path / "gold", cases)


@pytest.fixture
def reads(monkeypatch, gold: Path) -> list[Path]:
    """Every time the gold file itself is read for its hash."""
    seen: list[Path] = []
    real = index_module._hash_file

    def counting(path: Path) -> str | None:
        if Path(path) == gold / "gold.jsonl":
            seen.append(Path(path))
        return real(path)

    monkeypatch.setattr(index_module, "_hash_file", counting)
    return seen


@pytest.fixture
def later(monkeypatch) -> None:
    """The clock 10 s ahead: files written by the test are old enough to be remembered."""
    monkeypatch.setattr(
        index_module, "time", SimpleNamespace(time_ns=lambda: time.time_ns() + 10**10)
    )


def _memos() -> list[Path]:
    return sorted(cache_dir().glob("sha-*.json"))


def _flip(text: str) -> str:
    """The first case's adjudicated label, pass to fail (same length)."""
    at = text.index('"adjudication": {"label": "pass"')
    return text[:at] + text[at:].replace('"pass"', '"fail"', 1)


def _flip_label_same_size(path: Path) -> str:
    """Change one adjudicated label without changing the file's size; keep its mtime."""
    before = path.stat()
    text = path.read_text()
    changed = _flip(text)
    assert changed != text and len(changed) == len(text)
    path.write_text(changed)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # what `touch -r` would do
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    return changed


def test_an_unchanged_gold_file_is_read_once(gold, reads, later):
    first = gold_index(gold)
    assert len(reads) == 1 and len(_memos()) == 1
    entry = json.loads(_memos()[0].read_text())
    assert entry["sha256"] == sha256_file(gold / "gold.jsonl")
    again = gold_index(gold)
    assert len(reads) == 1  # from the memo
    assert again.from_cache and again.sha256 == first.sha256 and again.table.equals(first.table)


def test_an_edit_that_keeps_size_and_mtime_is_read_again(gold, reads, later):
    first = gold_index(gold)
    _flip_label_same_size(gold / "gold.jsonl")
    changed = gold_index(gold)
    assert len(reads) == 2  # the change time moved: the memo no longer matches
    assert changed.sha256 != first.sha256 and not changed.from_cache
    labels = changed.table["label"].to_pylist()
    assert labels != first.table["label"].to_pylist()
    # the memo now holds the new file's hash
    assert json.loads(_memos()[0].read_text())["sha256"] == sha256_file(gold / "gold.jsonl")


def test_a_replaced_file_of_the_same_size_is_read_again(gold, reads, later):
    first = gold_index(gold)
    target = gold / "gold.jsonl"
    text = _flip(target.read_text())
    before = target.stat()
    spare = gold / "spare.jsonl"
    spare.write_text(text)
    os.utime(spare, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(spare, target)  # a new inode, same size and mtime
    again = gold_index(gold)
    assert len(reads) == 2 and again.sha256 != first.sha256
    assert again.table["label"].to_pylist() == [
        json.loads(line)["adjudication"]["label"] for line in text.splitlines()
    ]


def test_a_file_changed_just_now_is_not_remembered(gold, reads):
    """Within the margin (a coarse timestamp could hide a second write) every call reads it."""
    gold_index(gold)
    gold_index(gold)
    assert len(reads) == 2 and _memos() == []


def test_the_margin_is_measured_from_the_files_change_time(gold, reads, monkeypatch):
    changed = (gold / "gold.jsonl").stat().st_ctime_ns
    monkeypatch.setattr(
        index_module, "time", SimpleNamespace(time_ns=lambda: changed + MEMO_MARGIN_NS)
    )
    gold_index(gold)
    assert _memos() == []  # exactly at the margin: not yet
    monkeypatch.setattr(
        index_module, "time", SimpleNamespace(time_ns=lambda: changed + MEMO_MARGIN_NS + 1)
    )
    gold_index(gold)
    assert len(_memos()) == 1 and len(reads) == 2


@pytest.mark.parametrize(
    "memo",
    [
        b"{not json",
        b"[]",
        b'{"stat": [1, 2, 3, 4, 5], "sha256": "' + b"0" * 64 + b'"}',
        b'{"stat": null, "sha256": 7}',
    ],
    ids=["torn", "not_an_object", "another_stat", "wrong_types"],
)
def test_an_unusable_memo_is_ignored(gold, reads, later, memo):
    first = gold_index(gold)
    _memos()[0].write_bytes(memo)
    again = gold_index(gold)
    assert len(reads) == 2 and again.sha256 == first.sha256 and again.from_cache


def test_a_forged_hash_in_the_memo_never_reaches_the_index(gold, reads, later):
    """A memo that matches the stat but names another hash finds no index for it: the dataset is
    validated in full and the index carries the file's real hash."""
    first = gold_index(gold)
    entry = json.loads(_memos()[0].read_text())
    _memos()[0].write_text(json.dumps({"stat": entry["stat"], "sha256": "f" * 64}))
    forged = gold_index(gold)
    assert not forged.from_cache and forged.sha256 == first.sha256


def test_without_a_cache_the_file_is_read_every_time(gold, reads, later, monkeypatch):
    where = cache_dir()
    monkeypatch.setenv("WORKBENCH_GOLD_INDEX", "off")
    gold_index(gold)
    gold_index(gold)
    assert len(reads) == 2 and not list(where.glob("sha-*.json"))
