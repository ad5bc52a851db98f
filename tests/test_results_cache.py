"""The results cache: a warm read takes the checked narrow columns from it; it fails closed.

A changed results file is another key (its sha256), so it is read and checked again; an entry
whose bytes were edited is detected (its sha256 differs from its note's) and rewritten; a note
naming a judge its fingerprint does not hash is ignored; nothing is cached for input the reader
refuses or for a file that changed while it was read. Each case compares with the per-record
reader's report, the reference.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import make_case, make_result, write_dataset, write_results
from lineage_support import stamped
from report_reference import reference_report

import workbench.results._columnar as results_columnar
from workbench.align import align, align_results
from workbench.gold import load_dataset
from workbench.results import _cache
from workbench.results._columnar import read_columnar

TIMEOUT = {"kind": "timeout", "message": "no answer", "retryable": False}


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    gold = tmp_path / "gold"
    cases = [make_case(f"c{i:02d}", ("pass", "fail")[i % 2]) for i in range(12)]
    write_dataset(gold, cases)
    rows = [
        make_result(case, error=TIMEOUT, reason=None)
        if i == 3
        else make_result(case, ("pass", "fail")[i % 3 % 2])
        for i, case in enumerate(cases)
    ]
    return gold, write_results(tmp_path / "results.jsonl", stamped(rows, gold))


@pytest.fixture
def parses(monkeypatch) -> list[Path]:
    """The results files the reader parsed (rather than took from the cache)."""
    seen: list[Path] = []
    real = results_columnar._jsonl_blocks

    def spy(file, digest):
        seen.append(file)
        return real(file, digest)

    monkeypatch.setattr(results_columnar, "_jsonl_blocks", spy)
    return seen


def entries() -> list[Path]:
    directory = _cache.cache_dir()
    assert directory is not None
    return sorted(directory.glob("results-*.arrow")) if directory.is_dir() else []


def reference(gold: Path, results: Path) -> dict:
    join = align_results(load_dataset(gold), results, partition=None)
    report = reference_report(join, gold_path=str(gold), results_path=str(results))
    return report.model_dump(mode="json")


def test_a_warm_read_takes_the_checked_columns_from_the_cache(files, parses):
    gold, results = files
    first = read_columnar(results)
    assert first is not None and parses == [results] and len(entries()) == 1
    again = read_columnar(results)
    assert again is not None and parses == [results]  # not parsed again
    assert again.table.equals(first.table)
    assert (again.sha256, again.identities) == (first.sha256, first.identities)
    assert align(gold, results).model_dump(mode="json") == reference(gold, results)


def test_a_changed_results_file_is_read_again(files, parses):
    gold, results = files
    read_columnar(results)
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    rows[0]["value"] = "fail" if rows[0]["value"] == "pass" else "pass"
    write_results(results, rows)
    again = read_columnar(results)
    assert again is not None and parses == [results, results]
    assert again.table["value"][0].as_py() == rows[0]["value"]
    assert align(gold, results).model_dump(mode="json") == reference(gold, results)
    assert len(entries()) == 2


def _flip_first_value(entry: Path) -> None:
    table = pa.ipc.open_stream(pa.py_buffer(entry.read_bytes())).read_all()
    values = table["value"].to_pylist()
    values[0] = "fail" if values[0] == "pass" else "pass"
    at = table.schema.get_field_index("value")
    forged = table.set_column(at, "value", pa.array(values, pa.string()))
    with pa.OSFile(str(entry), "wb") as sink, pa.ipc.new_stream(sink, forged.schema) as writer:
        writer.write_table(forged)


def test_an_edited_entry_is_detected_read_again_and_rewritten(files, parses):
    gold, results = files
    truth = read_columnar(results)
    assert truth is not None
    (entry,) = entries()
    _flip_first_value(entry)
    again = read_columnar(results)
    assert again is not None and parses == [results, results]  # the edit was not trusted
    assert again.table.equals(truth.table)
    assert read_columnar(results) is not None and len(parses) == 2  # rewritten, trusted again
    assert align(gold, results).model_dump(mode="json") == reference(gold, results)


@pytest.mark.parametrize("damage", ["judge", "garbage", "torn", "no_note"])
def test_a_forged_torn_or_missing_note_is_ignored(files, parses, damage):
    gold, results = files
    read_columnar(results)
    (entry,) = entries()
    note = entry.with_suffix(".json")
    recorded = json.loads(note.read_text())
    if damage == "judge":  # another judge under the same fingerprint
        (fp,) = recorded["identities"]
        recorded["identities"][fp]["version"] = "forged"
        note.write_text(json.dumps(recorded))
    elif damage == "garbage":
        note.write_text("{")
    elif damage == "torn":
        entry.write_bytes(entry.read_bytes()[:100])
    else:
        note.unlink()
    again = read_columnar(results)
    assert again is not None and parses == [results, results]
    assert {i.version for i in again.identities.values()} == {"1"}
    assert align(gold, results).model_dump(mode="json") == reference(gold, results)


def test_refused_input_is_not_cached(files, parses):
    _, results = files
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    rows[5]["latency_s"] = float("nan")  # written as NaN: Arrow reads it, the contract refuses
    write_results(results, rows)
    assert "NaN" in results.read_text()
    assert read_columnar(results) is None
    assert entries() == []
    directory = _cache.cache_dir()
    assert directory is not None and not list(directory.glob(".results-*"))  # no temp left


def test_a_file_that_changed_while_read_is_not_cached(files, parses, monkeypatch):
    _, results = files
    monkeypatch.setattr(_cache, "sha256_file", lambda path: "0" * 64)  # hashed before a write
    assert read_columnar(results) is not None
    assert entries() == []


def test_the_cache_can_be_switched_off(files, parses, monkeypatch):
    _, results = files
    monkeypatch.setenv("WORKBENCH_RESULTS_CACHE", "off")
    read_columnar(results)
    read_columnar(results)
    assert parses == [results, results]
    monkeypatch.delenv("WORKBENCH_RESULTS_CACHE")
    assert entries() == []


def test_a_cache_that_cannot_be_written_only_costs_speed(files, parses, monkeypatch):
    """A full disk while an entry is written: the read goes on, nothing half-written is kept."""
    gold, results = files

    def full(self, table):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pa.ipc.RecordBatchStreamWriter, "write_table", full)
    assert read_columnar(results) is not None
    directory = _cache.cache_dir()
    assert directory is not None and not list(directory.iterdir())
    assert align(gold, results).model_dump(mode="json") == reference(gold, results)
