"""Results migrated from schema version 1 take the columnar path, held to the strict reader.

A migrated line keeps its ``migration`` object (:class:`~workbench.results.ResultMigration`).
The columnar reader checks that object itself, exactly as strictly as the per-record reader,
so migrated results align at columnar speed; whatever it cannot vouch for (an extra field, a
value of another type, a time Python refuses, a required field null or absent) goes to the
per-record reader, which names every problem with its line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import make_case, make_result, write_dataset, write_results
from lineage_support import stamped
from report_reference import reference_report

from workbench.align import align, align_results, format_report
from workbench.align._columnar import evidence_columnar
from workbench.cli import main
from workbench.errors import WorkbenchError
from workbench.gold import load_dataset
from workbench.gold._index import gold_index
from workbench.results import migrate_results_file
from workbench.results._columnar import read_columnar

TIMEOUT = {"kind": "timeout", "message": "no answer", "retryable": False}
V1_DEFAULTS = {"attempt": 1, "repeat": 0}
"""Version 1 filled these when absent: a v1 line leaves them out when they hold the default."""


def _as_v1(row: dict) -> dict:
    """``row`` as a schema-version-1 line: no version, no partition, no reason, no default
    attempt or repeat (what the migration fills)."""
    out = {k: v for k, v in row.items() if k not in ("schema_version", "partition", "reason")}
    for name, default in V1_DEFAULTS.items():
        if out[name] == default:
            del out[name]
    return out


def _native_rows(gold: Path) -> list[dict]:
    cases = [
        make_case(
            f"c{i:02d}",
            ("pass", "fail", "review_required", "pass")[i % 4],
            partition=("development", "calibration")[i % 2],
            slice=("billing", "general")[i % 2],
            group=f"grp{i}",
        )
        for i in range(40)
    ]
    write_dataset(gold, cases)
    rows = []
    for i, case in enumerate(cases):
        if i % 9 == 5:
            continue  # missing
        if i % 7 == 3:
            rows.append(make_result(case, error=TIMEOUT, reason=None))
        elif i % 8 == 2:  # a retry: a transient error, then the verdict (attempt 2)
            busy = {**TIMEOUT, "retryable": True}
            rows.append(make_result(case, error=busy, reason=None))
            rows.append(make_result(case, "fail", attempt=2, reason=None))
        else:
            verdict = ("pass", "fail", "review_required", "pass", "fail")[i % 5]
            rows.append(make_result(case, verdict, reason=None, started_at="2026-11-29T10:00:00Z"))
            rows.append(make_result(case, "pass", repeat=1, reason=None))
    return stamped(rows, gold)


@pytest.fixture
def migrated(tmp_path: Path) -> tuple[Path, Path, list[dict]]:
    """A gold, results written as schema version 1 and migrated with the gold (every line
    keeps its ``migration``), and the native rows they came from."""
    gold = tmp_path / "gold"
    rows = _native_rows(gold)
    v1 = write_results(tmp_path / "v1.jsonl", [_as_v1(r) for r in rows])
    out = tmp_path / "migrated.jsonl"
    migrate_results_file(v1, gold=gold, out=out)
    return gold, out, rows


def reference(gold: Path, results: Path, partition: str | None, repeat: int = 0):
    """The per-record join, its report computed record by record."""
    join = align_results(load_dataset(gold), results, partition=partition, repeat=repeat)
    return reference_report(join, gold_path=str(gold), results_path=str(results))


def columnar(gold: Path, results: Path, partition: str | None, repeat: int = 0):
    found = evidence_columnar(
        gold_index(gold),
        results,
        partition=partition,
        repeat=repeat,
        allow_gold_change=False,
        partition_source=None,
        gold_path=str(gold),
    )
    assert found is not None, "the columnar path handed valid migrated input to the strict one"
    return found[0]


def assert_same(gold: Path, results: Path, partition: str | None, repeat: int = 0) -> None:
    old = reference(gold, results, partition, repeat)
    new = columnar(gold, results, partition, repeat)
    assert new.model_dump(mode="json") == old.model_dump(mode="json")
    assert format_report(new) == format_report(old)
    assert align(gold, results, partition=partition, repeat=repeat).model_dump(
        mode="json"
    ) == old.model_dump(mode="json")


def _lines(results: Path) -> list[dict]:
    return [json.loads(line) for line in results.read_text().splitlines()]


@pytest.mark.parametrize("partition", [None, "development", "calibration"])
@pytest.mark.parametrize("repeat", [0, 1])
def test_migrated_results_align_columnar_with_the_per_record_report(migrated, partition, repeat):
    gold, results, _ = migrated
    lines = _lines(results)
    assert all(line["migration"]["from_version"] == 1 for line in lines)
    assert {"reason", "partition"} <= set(lines[0]["migration"]["filled"])
    assert read_columnar(results) is not None
    assert_same(gold, results, partition, repeat)


def test_migrated_and_native_lines_in_one_file_align_columnar(migrated):
    """Half the lines migrated, half native: ``migration`` and ``reason`` absent or null on
    some lines, and ``migration.filled`` holds keys named ``reason`` and ``partition``; the
    key counts look the top-level keys up apart from the nested ones."""
    gold, results, rows = migrated
    lines = _lines(results)
    native = [{**r, "reason": "because"} for r in rows]
    mixed = [lines[i] if i % 2 else native[i] for i in range(len(lines))]
    write_results(results, mixed)
    assert read_columnar(results) is not None
    assert_same(gold, results, None)
    assert_same(gold, results, "development", repeat=1)


@pytest.fixture
def small_blocks(monkeypatch):
    """About a line per block: later blocks are parsed with the block before's schema."""
    import workbench.results._columnar as results_columnar

    monkeypatch.setattr(results_columnar, "BLOCK_BYTES", 256)
    parses: list[bool] = []
    real = results_columnar._parse_block

    def spy(buffer, rows, schema):
        parses.append(schema is not None)
        return real(buffer, rows, schema)

    monkeypatch.setattr(results_columnar, "_parse_block", spy)
    return parses


def test_migrated_blocks_parsed_with_the_previous_schema_align_alike(migrated, small_blocks):
    gold, results, _ = migrated
    assert_same(gold, results, None)
    assert small_blocks.count(True) > 10


def test_a_migration_time_without_a_fraction_is_read_as_the_string_written(migrated):
    """Arrow infers a timestamp from ``...T10:00:00Z``; the block is read again with the times
    as strings, so the columnar checks see what was written."""
    gold, results, _ = migrated
    lines = _lines(results)
    for line in lines:
        line["migration"]["migrated_at"] = "2026-12-06T21:42:11Z"
    write_results(results, lines)
    assert read_columnar(results) is not None
    assert_same(gold, results, None)


def _problems(call) -> list[dict]:
    with pytest.raises(WorkbenchError) as exc:
        call()
    return [p.model_dump() for p in exc.value.problems]


def _damage(line: dict, kind: str) -> None:
    migration = line["migration"]
    if kind == "extra_field":
        migration["note"] = "hand-edited"
    elif kind == "function_not_a_string":
        migration["function"] = 5
    elif kind == "version_not_an_integer":
        migration["from_version"] = "one"
    elif kind == "filled_not_an_object":
        migration["filled"] = ["reason"]
    elif kind == "source_not_a_string":
        migration["partition_source"] = 7
    elif kind == "bad_timestamp":
        migration["migrated_at"] = "2026-13-06T21:42:11Z"
    elif kind == "hour_only_timestamp":  # Arrow reads it as a timestamp, Python refuses it
        migration["migrated_at"] = "2026-12-06T21"
    elif kind == "year_zero":  # Arrow casts it, Python refuses it
        migration["migrated_at"] = "0000-12-06T21:42:11Z"
    elif kind == "null_function":
        migration["function"] = None
    elif kind == "null_filled":
        migration["filled"] = None
    elif kind == "null_migrated_at":
        migration["migrated_at"] = None
    elif kind == "absent_to_version":
        del migration["to_version"]
    elif kind == "not_an_object":
        line["migration"] = "v1"


MALFORMED = {
    "extra_field": "invalid_result",
    "function_not_a_string": "wrong_type",
    "version_not_an_integer": "invalid_result",
    "filled_not_an_object": "invalid_result",
    "source_not_a_string": "wrong_type",
    "bad_timestamp": "invalid_result",
    "hour_only_timestamp": "invalid_result",
    "year_zero": "invalid_result",
    "null_function": "wrong_type",
    "null_filled": "invalid_result",
    "null_migrated_at": "invalid_result",
    "absent_to_version": "invalid_result",
    "not_an_object": "invalid_result",
}
"""Each damage and the code the strict reader gives it."""


@pytest.mark.parametrize("everywhere", [False, True])
@pytest.mark.parametrize("kind", MALFORMED)
def test_a_malformed_migration_goes_to_the_strict_reader_which_names_it(migrated, kind, everywhere):
    """One line damaged (Arrow widens the block's types) or every line (the block's types are
    the damaged ones): the columnar reader refuses, the strict reader reports the line."""
    gold, results, _ = migrated
    lines = _lines(results)
    for line in lines if everywhere else lines[3:4]:
        _damage(line, kind)
    write_results(results, lines)
    assert read_columnar(results) is None
    old = _problems(lambda: reference(gold, results, None))
    assert old, "the damage must be refused"
    assert {p["code"] for p in old} == {MALFORMED[kind]}
    assert all("migration" in p["message"] for p in old)
    assert len(old) == (len(lines) if everywhere else 1)
    assert old[0]["location"] == f"{results}:{1 if everywhere else 4}"
    assert _problems(lambda: align(gold, results)) == old


@pytest.mark.parametrize("when", ["2026-12-06T21", "0000-12-06T21:42:11Z"])
def test_a_start_time_arrow_reads_but_python_refuses_is_refused(migrated, when):
    """``started_at`` as Arrow infers it: a timestamp from an hour-only time, year 0 cast."""
    gold, results, rows = migrated
    for row in rows:
        row["started_at"] = when
    native = write_results(results.parent / "native.jsonl", rows)
    assert read_columnar(native) is None
    old = _problems(lambda: reference(gold, native, None))
    assert {p["code"] for p in old} == {"invalid_result"}
    assert all("started_at" in p["message"] for p in old)
    assert _problems(lambda: align(gold, native)) == old
    run = CliRunner().invoke(main, ["align", "--gold", str(gold), "--results", str(native)])
    assert run.exit_code == 2, run.output  # the old columnar path aligned them (exit 0)
    assert "invalid_result" in run.output


def test_cli_align_refuses_a_malformed_migration_with_exit_2(migrated):
    gold, results, _ = migrated
    lines = _lines(results)
    _damage(lines[5], "extra_field")
    write_results(results, lines)
    run = CliRunner().invoke(main, ["align", "--gold", str(gold), "--results", str(results)])
    assert run.exit_code == 2, run.output
    assert "invalid_result" in run.output
    assert f"{results}:6" in run.output
    assert "Traceback" not in run.output


@pytest.mark.parametrize("drop", ["reason", "value"])
def test_a_required_key_absent_beside_a_partial_filled_is_refused(migrated, drop):
    """The block's ``filled`` objects differ (some lines fill ``attempt``, some not) and a line
    leaves out ``reason`` or ``value``, whose nested namesake is written: the top-level key is
    looked up apart from the nested one, found absent, and the strict reader names it."""
    gold, results, _ = migrated
    lines = _lines(results)
    assert any("attempt" not in line["migration"]["filled"] for line in lines)
    victim = next(i for i, line in enumerate(lines) if "attempt" not in line["migration"]["filled"])
    if drop == "value":
        lines[victim]["migration"]["filled"]["value"] = None
    del lines[victim][drop]
    write_results(results, lines)
    assert read_columnar(results) is None
    old = _problems(lambda: reference(gold, results, None))
    assert [(p["location"], p["code"]) for p in old] == [
        (f"{results}:{victim + 1}", "invalid_result")
    ]
    assert _problems(lambda: align(gold, results)) == old


def test_what_import_results_writes_of_a_v1_file_needs_no_key_by_key_lookup(
    tmp_path: Path, monkeypatch
):
    """`workbench import results` of a version-1 file whose lines left out different fields
    (a reason on verdicts, none on errors): every line holds every top-level key, and
    ``migration.filled`` lists only what each line lacked. The reader finds the filled keys
    in the bytes; before, every block fell to the key-by-key regex lookup of every nullable
    column over every line (7x the read of the same results written natively)."""
    import workbench.results._columnar as results_columnar
    from workbench.importers import import_results

    gold = tmp_path / "gold"
    rows = _native_rows(gold)
    v1 = []
    for row in rows:
        line = _as_v1(row)
        if row["error"] is None:
            line["reason"] = "because"  # version 1 kept a reason when the judge gave one
        v1.append(line)
    write_results(tmp_path / "v1.jsonl", v1)
    import_results(tmp_path / "v1.jsonl", gold, tmp_path / "imported")
    results = tmp_path / "imported" / "results.jsonl"
    lines = _lines(results)
    filled = {tuple(sorted(line["migration"]["filled"])) for line in lines}
    assert len(filled) > 2, filled  # the filled keys differ from line to line
    looked_up: list[int] = []
    real = results_columnar._keys_with_absent

    def spy(table, lines, strings=True):
        looked_up.append(table.num_rows)
        return real(table, lines, strings)

    monkeypatch.setattr(results_columnar, "_keys_with_absent", spy)
    assert read_columnar(results) is not None
    assert looked_up == []
    assert_same(gold, results, None)
    assert_same(gold, results, "development", repeat=1)
