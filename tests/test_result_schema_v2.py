"""Judge-result schema 2: no silent defaults; only an explicit, versioned migration fills a field.

Reproduction on the old main: a results line without ``reason``, ``partition``, ``attempt``
or ``repeat`` was read as reason None, partition None (so the join skipped its partition
check), attempt 1 and repeat 0. Now it is an error naming the field; a version-1 file is
refused with a fix naming ``workbench migrate results FILE``, or migrated on read on request,
each migrated record saying what was filled.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import JUDGE, fingerprint, make_case, make_result, write_results
from pydantic import ValidationError

from workbench.align import align_results
from workbench.cli.main import main
from workbench.errors import WorkbenchError
from workbench.gold import load_dataset
from workbench.results import (
    REQUIRED_SINCE_V2,
    RESULT_SCHEMA_VERSION,
    EvaluatorError,
    JudgeIdentity,
    JudgeResult,
    migrate_record,
    migrate_results_file,
    migration_note,
    read_results,
    scan_results,
)
from workbench.runs import RunOptions


def v1_row(case: dict, value: str | None = "pass", **extra) -> dict:
    """A version-1 record as the old workbench (or another harness) wrote it: no v2 fields."""
    row = make_result(case, value, **extra)
    for name in (*REQUIRED_SINCE_V2, "schema_version"):
        row.pop(name, None)
    return row


@pytest.fixture
def gold(make_dataset) -> Path:
    return make_dataset(
        [make_case("a"), make_case("b", "fail"), make_case("c", partition="calibration")]
    )


def test_schema_version_is_2() -> None:
    assert RESULT_SCHEMA_VERSION == 2
    assert REQUIRED_SINCE_V2 == ("reason", "partition", "attempt", "repeat")


@pytest.mark.parametrize("field", REQUIRED_SINCE_V2)
def test_a_v2_line_lacking_a_required_field_is_an_error_naming_it(
    gold: Path, tmp_path: Path, field: str
) -> None:
    row = make_result(make_case("a"))
    del row[field]
    path = write_results(tmp_path / "r.jsonl", [row])
    with pytest.raises(WorkbenchError) as info:
        read_results(path)
    messages = [p.message for p in info.value.problems]
    assert messages == [f"missing required field '{field}'"]
    with pytest.raises(ValidationError):
        JudgeResult.model_validate(row)


def test_reason_may_be_null_but_must_be_present(tmp_path: Path) -> None:
    row = make_result(make_case("a"), error={"kind": "timeout", "message": "t"})
    row["reason"] = None
    assert read_results(write_results(tmp_path / "r.jsonl", [row]))[0].result.reason is None


def test_partition_may_not_be_null(tmp_path: Path) -> None:
    row = {**make_result(make_case("a")), "partition": None}
    with pytest.raises(WorkbenchError) as info:
        read_results(write_results(tmp_path / "r.jsonl", [row]))
    assert "partition" in info.value.problems[0].message


@pytest.mark.parametrize("version_field", ["absent", "explicit"])
def test_a_v1_file_is_refused_with_the_migration_command(
    gold: Path, tmp_path: Path, version_field: str
) -> None:
    rows = [v1_row(make_case("a")), v1_row(make_case("b", "fail"), "fail")]
    if version_field == "explicit":
        rows = [{**r, "schema_version": 1} for r in rows]
    path = write_results(tmp_path / "r.jsonl", rows)
    with pytest.raises(WorkbenchError) as info:
        read_results(path)
    (problem,) = info.value.problems  # one problem for the file, not one per line
    assert problem.code == "schema_version_old"
    assert "2 result line(s) are schema_version 1" in problem.message
    assert f"workbench migrate results {path}" in problem.fix
    # and every analysis refuses it the same way
    with pytest.raises(WorkbenchError) as info:
        align_results(load_dataset(gold), path)
    assert any(p.code == "schema_version_old" for p in info.value.problems)


def test_a_complete_v1_record_is_still_refused(tmp_path: Path) -> None:
    # Every field present, but written under version 1: reading it as 2 would be a silent upgrade.
    row = {**make_result(make_case("a")), "schema_version": 1}
    with pytest.raises(WorkbenchError) as info:
        read_results(write_results(tmp_path / "r.jsonl", [row]))
    assert info.value.problems[0].code == "schema_version_old"


def test_migrate_on_read_records_what_it_filled(gold: Path, tmp_path: Path) -> None:
    dataset = load_dataset(gold)
    rows = [
        v1_row(make_case("a")),
        {
            **v1_row(make_case("c", partition="calibration")),
            "reason": "kept",
            "partition": "calibration",
            "attempt": 2,
        },
    ]
    path = write_results(tmp_path / "r.jsonl", rows)
    lines = read_results(path, migrate=True, gold=dataset)
    first, second = (line.result for line in lines)
    assert first.migration is not None and second.migration is not None
    assert first.migration.filled == {
        "reason": None,
        "attempt": 1,
        "repeat": 0,
        "partition": "development",
    }
    assert first.migration.partition_source == f"gold {dataset.sha256}"
    assert second.migration.filled == {"repeat": 0}  # present fields are kept, not refilled
    assert (second.reason, second.attempt, second.partition) == ("kept", 2, "calibration")
    assert first.migration.function == "workbench.results.migrate_v1_to_v2"
    note = migration_note(lines)
    assert note is not None and note.startswith(
        "2 of 2 result(s) were written under schema_version 1"
    )
    assert "partition in 1" in note and "repeat in 2" in note
    # the judge is untouched: the fingerprint still checks
    assert first.judge_fingerprint == fingerprint(JUDGE)


def test_migrate_on_read_without_gold_refuses_to_guess_the_partition(tmp_path: Path) -> None:
    path = write_results(tmp_path / "r.jsonl", [v1_row(make_case("a"))])
    with pytest.raises(WorkbenchError) as info:
        read_results(path, migrate=True)
    assert info.value.problems[0].code == "migration_needs_gold"
    assert "'partition'" in info.value.problems[0].message


def test_v1_record_with_partition_migrates_without_gold() -> None:
    raw = {**v1_row(make_case("a")), "partition": "development"}
    out = migrate_record(raw)
    assert out["schema_version"] == 2 and out["migration"]["filled"] == {
        "reason": None,
        "attempt": 1,
        "repeat": 0,
    }
    JudgeResult.model_validate(out)


def test_cli_migrate_in_place_keeps_the_original_and_align_then_reads_it(
    gold: Path, tmp_path: Path
) -> None:
    rows = [v1_row(make_case("a")), v1_row(make_case("b", "fail"), "fail")]
    rows = [
        {**r, "dataset_sha256": load_dataset(gold).sha256, "rubric_version": "r1"} for r in rows
    ]
    path = write_results(tmp_path / "results.jsonl", rows)
    original = path.read_bytes()
    refused = CliRunner().invoke(
        main, ["align", "--gold", str(gold), "--results", str(path), "--partition", "development"]
    )
    assert (
        refused.exit_code == 2
        and "schema_version_old" in refused.output
        and "workbench migrate results" in refused.output
    )
    no_gold = CliRunner().invoke(main, ["migrate", "results", str(path)])
    assert no_gold.exit_code == 2 and "migration_needs_gold" in no_gold.output
    assert path.read_bytes() == original  # all or nothing
    done = CliRunner().invoke(main, ["migrate", "results", str(path), "--gold", str(gold)])
    assert done.exit_code == 0, done.output
    assert "migrated 2 of 2" in done.output
    assert (tmp_path / "results.jsonl.v1").read_bytes() == original
    migrated = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(m["schema_version"] == 2 and m["migration"]["from_version"] == 1 for m in migrated)
    aligned = CliRunner().invoke(
        main, ["align", "--gold", str(gold), "--results", str(path), "--partition", "development"]
    )
    assert aligned.exit_code == 0, aligned.output
    again = CliRunner().invoke(main, ["migrate", "results", str(path), "--gold", str(gold)])
    assert again.exit_code == 0 and "migrated 0 of 2" in again.output


def test_migrate_to_out_leaves_the_source_and_refuses_an_existing_out(
    gold: Path, tmp_path: Path
) -> None:
    path = write_results(tmp_path / "r.jsonl", [v1_row(make_case("a"))])
    before = path.read_bytes()
    report = migrate_results_file(path, gold=gold, out=tmp_path / "out" / "r2.jsonl")
    assert report.migrated == 1 and path.read_bytes() == before
    assert read_results(tmp_path / "out" / "r2.jsonl")[0].result.migration is not None
    with pytest.raises(WorkbenchError) as info:
        migrate_results_file(path, gold=gold, out=tmp_path / "out" / "r2.jsonl")
    assert info.value.problems[0].code == "out_exists"


def test_the_engine_writes_every_required_field(make_dataset, tmp_path: Path) -> None:
    from workbench.judges import load_candidate
    from workbench.runs import run_candidate

    spec = tmp_path / "kw@1.yaml"
    spec.write_text(
        "name: kw\nversion: '1'\nkind: ragas-function\nlabels: [pass, fail]\nfunction:"
        " judge_fixtures:keyword_judge\n"
    )
    ds = load_dataset(make_dataset([make_case("a", response="a refund"), make_case("b", "fail")]))
    summary = asyncio.run(
        run_candidate(
            load_candidate(spec),
            ds,
            "development",
            tmp_path / "run",
            RunOptions(progress=False, cache_dir=False),
        )
    )
    raw = [json.loads(line) for line in Path(summary.results_path).read_text().splitlines()]
    assert raw and all(
        {"schema_version", *REQUIRED_SINCE_V2} <= set(r) and r["schema_version"] == 2 for r in raw
    )


def test_llmbar_writer_keeps_null_reason_on_errors(tmp_path: Path) -> None:
    from workbench.importers.llmbar import write_judge_results

    identity = JudgeIdentity.model_validate(JUDGE)
    case = make_case("a")
    errored = JudgeResult(
        case_id="a",
        response_hash=case["response_hash"],
        value=None,
        reason=None,
        judge=identity,
        judge_fingerprint=identity.fingerprint(),
        run_id="r",
        partition="development",
        error=EvaluatorError(kind="unparseable", message="x"),
        attempt=1,
        repeat=1,
    )
    write_judge_results(tmp_path / "results.jsonl", [errored])
    raw = json.loads((tmp_path / "results.jsonl").read_text())
    assert "reason" in raw and raw["reason"] is None
    assert read_results(tmp_path / "results.jsonl")[0].result.repeat == 1


def test_a_version_1_cache_entry_is_still_a_hit(tmp_path: Path) -> None:
    from workbench.runs import VerdictCache

    identity = JudgeIdentity.model_validate(JUDGE)
    fp = identity.fingerprint()
    stored = {**make_result(make_case("a")), "schema_version": 1, "started_at": None}
    path = tmp_path / fp[:2] / f"{fp}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"request_key": "k", "repeat": 0, "result": stored}) + "\n")
    hit = VerdictCache(tmp_path, fp).get("k", 0)
    assert hit is not None and hit.schema_version == 2 and hit.migration is None
    # an entry lacking a required field is a miss (the judge is called), never filled
    del stored["reason"]
    path.write_text(json.dumps({"request_key": "k", "repeat": 0, "result": stored}) + "\n")
    assert VerdictCache(tmp_path, fp).get("k", 0) is None


def _as_version_1(path: Path) -> None:
    """Rewrite a results file the way the version-1 workbench wrote it (same fields, version 1)."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        row["schema_version"] = 1
        row.pop("migration", None)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.notebook
def test_verify_reads_a_locked_reports_version_1_records_through_the_migration(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A locked report cannot be migrated in place: verify recomputes from its v1 records
    on read.
    """
    import shutil
    import stat

    from _certified import demo_release_certification

    from workbench.reports import read_lock
    from workbench.reports._recompute import recompute

    # rubric-judge@2 under support-release@1, certified once per run (tests/_certified.py)
    result = demo_release_certification(tmp_path_factory).results[0]
    copy = tmp_path / "copy"
    shutil.copytree(result.report_dir, copy)
    for p in [copy, *copy.rglob("*")]:
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    lock = read_lock(copy)
    expected = recompute(copy, lock)
    records = copy / "restricted" / "run" / "results.jsonl"
    _as_version_1(records)
    with pytest.raises(WorkbenchError) as info:
        read_results(records)
    assert info.value.problems[0].code == "schema_version_old"
    assert recompute(copy, lock) == expected


def test_control_outcomes_read_version_1_records(tmp_path: Path) -> None:
    from workbench.controls import control_outcomes, load_suite, run_controls_sync
    from workbench.judges import load_candidate

    root = Path(__file__).resolve().parents[1]
    judge = load_candidate(root / "data" / "candidates" / "rubric-judge@2.yaml")
    suite = load_suite(root / "data" / "controls" / "support-controls@1.yaml")
    run_controls_sync(judge, suite, tmp_path / "controls", progress=False, cache_dir=False)
    path = tmp_path / "controls" / "results.jsonl"
    expected = control_outcomes(suite, path, judge.identity.fingerprint())
    _as_version_1(path)
    assert control_outcomes(suite, path, judge.identity.fingerprint()) == expected and expected


def test_import_results_migrates_older_records_on_read_with_a_note(
    gold: Path, tmp_path: Path
) -> None:
    source = write_results(
        tmp_path / "elsewhere.jsonl",
        [v1_row(make_case("a")), v1_row(make_case("b", "fail"), "fail")],
    )
    result = CliRunner().invoke(
        main,
        [
            "import",
            "results",
            str(source),
            "--gold",
            str(gold),
            "--out",
            str(tmp_path / "imported"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert (
        "note: 2 of 2 result(s) were written under schema_version 1 and migrated on read to 2"
        in result.output
    )
    lines = read_results(tmp_path / "imported" / "results.jsonl")
    assert all(
        line.result.migration is not None
        and line.result.migration.filled["partition"] == "development"
        for line in lines
    )
    aligned = CliRunner().invoke(
        main,
        [
            "align",
            "--gold",
            str(gold),
            "--results",
            str(tmp_path / "imported" / "results.jsonl"),
            "--partition",
            "development",
        ],
    )
    assert aligned.exit_code == 0, aligned.output


@pytest.mark.parametrize("version", [0, -3])
def test_a_result_of_no_known_version_is_refused_not_crashed(tmp_path: Path, version: int) -> None:
    """Before: schema_version 0 made the migrating reader and `migrate results` raise a bare
    ValueError (a traceback). Now it is one problem, exit 2."""
    row = {**make_result(make_case("a")), "schema_version": version}
    path = write_results(tmp_path / "results.jsonl", [row])
    scanned = list(scan_results(path, migrate=True))
    assert [(p.code, p.location) for p in scanned] == [("invalid_result", f"{path}:1")]
    with pytest.raises(WorkbenchError) as refused:
        migrate_results_file(path)
    assert [p.code for p in refused.value.problems] == ["invalid_result"]
    out = CliRunner().invoke(main, ["migrate", "results", str(path)])
    assert out.exit_code == 2 and "invalid_result" in out.output and "Traceback" not in out.output
