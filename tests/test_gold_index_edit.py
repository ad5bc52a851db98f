"""Fail closed (issue 31, the first index of a gold): a gold file edited while the one pass reads
it never leaves a cached index, whichever way the pass trusts the file (its ``stat`` when it had
settled before it was hashed, else a second hash of the bytes read)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import make_case

from workbench._io import sha256_file
from workbench.gold import _columnar as columnar
from workbench.gold import _index, gold_index, load_dataset
from workbench.gold._index import cache_dir


def _edit_after_first_block(gold: Path, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """After the pass has proven its first block, rewrite a later record in place (a valid
    record of the same length: another input), as an attacker racing the read would."""
    path = gold / "gold.jsonl"
    blocks: list[int] = []
    original = columnar._index_block

    def index_block(data: Any, context: Any, schema: Any) -> Any:
        batch = original(data, context, schema)
        blocks.append(len(blocks))
        if len(blocks) == 1:
            text = path.read_bytes()
            with open(path, "r+b") as fh:  # in place: the same file the pass has open
                fh.write(text.replace(b"question for c39", b"QUESTION FOR c39"))
        return batch

    monkeypatch.setattr(columnar, "_index_block", index_block)
    return blocks


@pytest.mark.parametrize("settled", [True, False], ids=["trusted-by-stat", "hashed-again"])
def test_a_gold_edited_during_the_pass_leaves_no_index(
    make_dataset: Any, monkeypatch: pytest.MonkeyPatch, settled: bool
) -> None:
    gold = make_dataset([make_case(f"c{i}") for i in range(40)])
    if settled:  # hashed before the read and trusted by its stat
        monkeypatch.setattr(_index, "MEMO_MARGIN_NS", 0)
    monkeypatch.setattr(columnar, "BLOCK_BYTES", 2000)  # several blocks
    before = sha256_file(gold / "gold.jsonl")
    blocks = _edit_after_first_block(gold, monkeypatch)

    index = gold_index(gold)

    assert len(blocks) > 1  # the edit landed while the pass was still reading
    assert sha256_file(gold / "gold.jsonl") != before
    assert not list(cache_dir().glob("gold-*.arrow"))  # type: ignore[union-attr]
    assert not list(cache_dir().glob(".gold-*"))  # type: ignore[union-attr]
    assert not index.from_cache
    # what is returned was validated from the file as it is now
    assert index.sha256 == load_dataset(gold).sha256
    row = index.table["case_id"].to_pylist().index("c39")
    assert "QUESTION FOR c39" in index.table["search_text"][row].as_py()


def test_the_gold_once_settled_is_indexed_from_what_was_validated(
    make_dataset: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next call, the file no longer moving, indexes it (the edit was not poison)."""
    gold = make_dataset([make_case(f"c{i}") for i in range(40)])
    monkeypatch.setattr(columnar, "BLOCK_BYTES", 2000)
    _edit_after_first_block(gold, monkeypatch)
    gold_index(gold)
    monkeypatch.undo()
    monkeypatch.setattr(columnar, "BLOCK_BYTES", 2000)
    index = gold_index(gold)
    cached = gold_index(gold)
    assert cached.from_cache and cached.sha256 == index.sha256 == load_dataset(gold).sha256
    texts = cached.table["search_text"].to_pylist()
    assert any("QUESTION FOR c39" in t for t in texts)
