"""The shared hash-chained log (``workbench/_chain.py``) and the shared table reader.

The held-out ledger and the authority record read, check and seal their lines through one
module; the lines below were written by the code before it (each log's own copy), so these
tests show that existing ledgers and authority records still verify, and that tampering is
still found. ``import results`` and ``import table`` read through one reader, each with its
own words.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from workbench.authority._record import AuthorityRecord
from workbench.errors import WorkbenchError
from workbench.heldout._ledger import HeldOutLedger
from workbench.importers._table_reader import PREDICTIONS, SOURCE

_SHA = {
    "started": "d47d87d4b14d08c47189a0cad0e2492f981f94b9fbdc4bdf7bf63c3c3ca8053a",
    "finished": "ed44cae90642f70cc1646d91d1504b6d12178a83e2eff1bda4365dbf743175e9",
    "granted": "ccde21781552e6bbea502bc7c392fd912005440722f7a72ea10290d81bc6115c",
}
_LEDGER_COMMON: dict[str, Any] = {
    "budget_usd": None,
    "candidate": "c@1",
    "candidate_fingerprint": "f",
    "dataset_sha256": "d",
    "gold": "/tmp/hd_l1",
    "held_out_manifest_sha256": "m",
    "previous_report": None,
    "report_id": "c/1/1",
    "reports_root": "/tmp/hd_l1",
    "rerun_reason": None,
    "run_records_sha256": None,
    "schema_version": 3,
    "who": "root",
}
LEDGER_LINES: list[dict[str, Any]] = [
    {
        **_LEDGER_COMMON,
        "entry_id": "ldg-d9a1ff32a3f340de",
        "entry_sha256": _SHA["started"],
        "event": "started",
        "held_out_used": None,
        "lock_sha256": None,
        "opens": None,
        "outcome": None,
        "previous_sha256": None,
        "run_id": None,
        "token_sha256": "17a23d9f21983b597f73f37dbd42cf135fbe73efe380bbe0d5dd6c3b52a9a9e6",
        "when": "2026-12-01T22:38:28.453313Z",
    },
    {
        **_LEDGER_COMMON,
        "entry_id": "ldg-f890f0d4ea264445",
        "entry_sha256": _SHA["finished"],
        "event": "finished",
        "held_out_used": True,
        "lock_sha256": "x",
        "opens": "ldg-d9a1ff32a3f340de",
        "outcome": "certified",
        "previous_sha256": _SHA["started"],
        "run_id": "r",
        "token_sha256": None,
        "when": "2026-12-01T22:38:28.476715Z",
    },
]
AUTHORITY_LINE: dict[str, Any] = {
    "approver": "a",
    "authority": "advisory",
    "candidate_fingerprint": None,
    "candidate_spec": None,
    "entry_id": "auth-ecc8519292c64c36",
    "entry_sha256": _SHA["granted"],
    "event": "granted",
    "granted_use": None,
    "judge": "j@1",
    "lock_sha256": None,
    "policy": None,
    "previous_authority": "none",
    "previous_sha256": None,
    "reason": "r",
    "recorded_by": "u",
    "report_dir": None,
    "report_id": None,
    "schema_version": 1,
    "scope": None,
    "shadow_of": None,
    "when": "2026-12-01T22:38:28.489365Z",
}


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows), encoding="utf-8")


def test_a_ledger_written_before_the_shared_chain_verifies_and_grows(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    _write(path, LEDGER_LINES)
    ledger = HeldOutLedger(path)
    read = ledger.read()
    assert read.problems == [] and [e.entry_sha256 for e in read.entries] == [
        _SHA["started"],
        _SHA["finished"],
    ]
    with ledger.locked():
        started = read.entries[0].model_copy(update={"entry_id": "ldg-0000000000000001"})
        sealed = ledger._append(started)
    assert sealed.previous_sha256 == _SHA["finished"]
    assert ledger.read().problems == [] and len(ledger.entries()) == 3


def test_an_edited_old_ledger_line_breaks_the_chain_there(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    _write(path, [{**LEDGER_LINES[0], "who": "mallory"}, LEDGER_LINES[1]])
    problems = HeldOutLedger(path).read().problems
    assert [(p.location, p.code) for p in problems] == [(f"{path}:1", "ledger_chain_broken")]
    assert "was edited" in problems[0].message
    with pytest.raises(WorkbenchError) as info:
        HeldOutLedger(path).entries()
    assert [p.code for p in info.value.problems] == ["ledger_chain_broken"]


def test_an_authority_record_written_before_verifies_and_truncation_is_found(
    tmp_path: Path,
) -> None:
    path = tmp_path / "authority.jsonl"
    _write(path, [AUTHORITY_LINE])
    head = {"entries": 1, "entry_sha256": _SHA["granted"]}
    (tmp_path / ".authority.jsonl.head").write_text(json.dumps(head), encoding="utf-8")
    read = AuthorityRecord(path).read()
    assert read.ok and read.judges()["j@1"].authority == "advisory"
    path.write_text("", encoding="utf-8")  # the grant's line removed: the head still names it
    codes = [p.code for p in AuthorityRecord(path).read().problems]
    assert codes == ["authority_record_truncated"]


def test_both_importers_read_a_table_alike_and_name_it_in_their_own_words(
    tmp_path: Path,
) -> None:
    table = tmp_path / "t.csv"
    table.write_text("case_id,label\nc1,pass\n\nc2,fail\n", encoding="utf-8")
    results = PREDICTIONS.read_table(table, "csv")
    source = SOURCE.read_table(table, "csv")
    assert (results.columns, results.rows, results.refs, results.sha256) == (
        source.columns,
        source.rows,
        source.refs,
        source.sha256,
    )
    assert results.refs == (2, 4) and results.label == source.label == "t.csv"
    missing = tmp_path / "gone.csv"
    with pytest.raises(WorkbenchError) as a:
        PREDICTIONS.read_table(missing, "csv")
    with pytest.raises(WorkbenchError) as b:
        SOURCE.read_table(missing, "csv")
    assert a.value.problems[0].message == "the predictions file does not exist"
    assert b.value.problems[0].message == "the source table does not exist"
