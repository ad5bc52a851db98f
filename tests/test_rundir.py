"""``RunDir``: a run directory's file names and its one typed results reader."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench.errors import WorkbenchError
from workbench.results import MANIFEST_FILE
from workbench.runs import INVOCATIONS_FILE, LOCK_FILE, RESULTS_FILE, SUMMARY_FILE, RunDir

ROOT = Path(__file__).resolve().parents[1] / "workbench"


def test_file_names(tmp_path: Path) -> None:
    run = RunDir(str(tmp_path))
    assert run.path == tmp_path
    assert (run.results, run.summary, run.manifest, run.invocations, run.lock) == (
        tmp_path / "results.jsonl",
        tmp_path / "run.json",
        tmp_path / "manifest.json",
        tmp_path / "invocations.jsonl",
        tmp_path / ".run.lock",
    )
    assert (RESULTS_FILE, SUMMARY_FILE, MANIFEST_FILE, INVOCATIONS_FILE, LOCK_FILE) == (
        "results.jsonl",
        "run.json",
        "manifest.json",
        "invocations.jsonl",
        ".run.lock",
    )
    assert run.shards_file == tmp_path / "shards.json"
    assert run.shard(3).path == tmp_path / "shards" / "003"
    assert run.shard(3).results == tmp_path / "shards" / "003" / "results.jsonl"


def test_reader_absent_files(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "nothing")
    assert run.read_results() == []
    assert run.read_summary() is None
    with pytest.raises(WorkbenchError) as exc:
        run.read_results(required=True)
    assert [p.code for p in exc.value.problems] == ["results_missing"]


def test_reader_refuses_a_bad_line(tmp_path: Path) -> None:
    RunDir(tmp_path).results.write_text('{"case_id": "a"}\n', encoding="utf-8")
    with pytest.raises(WorkbenchError) as refused:
        RunDir(tmp_path).read_results()
    assert [p.code for p in refused.value.problems] == ["schema_version_old"]


def test_engine_certification_and_cli_do_not_spell_run_file_names() -> None:
    spelled = re.compile(
        r'"(results\.jsonl|run\.json|manifest\.json|invocations\.jsonl|\.run\.lock)"'
    )
    places = [
        *ROOT.joinpath("runs").glob("*.py"),
        *ROOT.joinpath("reports").glob("*.py"),
        *ROOT.joinpath("cli").glob("*.py"),
    ]
    offenders = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in places
        if p.name != "_rundir.py"
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if spelled.search(line) and "help=" not in line
    ]
    assert offenders == []
