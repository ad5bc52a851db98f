"""The run engine with a deterministic ragas-function judge."""

from __future__ import annotations

import json
from pathlib import Path

import judge_fixtures
import pytest
import yaml
from conftest import make_case

from workbench.align import align
from workbench.errors import WorkbenchError
from workbench.gold import load_dataset
from workbench.judges import load_candidate
from workbench.results import read_results
from workbench.runs import RunOptions, run_candidate_sync

SPEC = {
    "name": "kw",
    "version": "1",
    "kind": "ragas-function",
    "labels": ["pass", "fail"],
    "function": "judge_fixtures:keyword_judge",
}


@pytest.fixture
def dataset_dir(make_dataset) -> Path:
    cases = [
        make_case("d1", "pass", response="A refund is possible after review."),
        make_case("d2", "fail", response="No money back, ever."),
        make_case("d3", "fail", response="Refund everything automatically."),
        make_case("c1", "pass", response="refund", partition="calibration"),
    ]
    return make_dataset(cases)


@pytest.fixture
def judge(tmp_path: Path):
    path = tmp_path / "kw@1.yaml"
    path.write_text(yaml.safe_dump(SPEC), encoding="utf-8")
    return load_candidate(path)


def test_run_writes_contract_results_and_aligns(dataset_dir: Path, judge, tmp_path: Path) -> None:
    out = tmp_path / "run"
    summary = run_candidate_sync(
        judge, load_dataset(dataset_dir), "development", out, RunOptions(progress=False)
    )
    assert (
        summary.status == "complete"
        and summary.planned == 3
        and summary.calls == 3
        and summary.unrun == []
    )
    lines = read_results(out / "results.jsonl", verify_requests=True)
    assert sorted(r.result.case_id for r in lines) == ["d1", "d2", "d3"]
    for line in lines:
        r = line.result
        assert r.judge_fingerprint == judge.identity.fingerprint()
        assert r.partition == "development" and r.attempt == 1 and r.latency_s is not None
        assert r.rendered_request["arguments"][
            "response"
        ]  # the evaluator-visible request is stored
        assert "adjudication" not in json.dumps(r.rendered_request)
    report = align(dataset_dir, out / "results.jsonl", partition="development")
    # d1 pass/pass aligned, d2 fail/fail aligned, d3 human fail but 'refund' present -> false pass
    assert (report.overall.aligned, report.overall.false_passes, report.overall.false_fails) == (
        2,
        1,
        0,
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert [c["case_id"] for c in manifest["cases"]] == ["d1", "d2", "d3"]
    assert json.loads((out / "run.json").read_text())["status"] == "complete"


def test_rerun_resumes_without_calling_again(dataset_dir: Path, judge, tmp_path: Path) -> None:
    out = tmp_path / "run"
    ds = load_dataset(dataset_dir)
    run_candidate_sync(judge, ds, "development", out, RunOptions(progress=False))
    judge_fixtures.SEEN.clear()
    again = run_candidate_sync(
        judge, ds, "development", out, RunOptions(progress=False, cache_dir=False)
    )
    assert again.calls == 0 and again.resumed == 3 and judge_fixtures.SEEN == []
    assert len((out / "results.jsonl").read_text().splitlines()) == 3


def test_torn_last_line_is_repaired_and_its_case_rerun(
    dataset_dir: Path, judge, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    ds = load_dataset(dataset_dir)
    run_candidate_sync(judge, ds, "development", out, RunOptions(progress=False))
    path = out / "results.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    torn_case = json.loads(lines[-1])["case_id"]
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][:40])  # a crash mid-write
    judge_fixtures.SEEN.clear()
    again = run_candidate_sync(
        judge, ds, "development", out, RunOptions(progress=False, cache_dir=False)
    )
    assert again.calls == 1 and again.status == "complete"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    assert sorted(r["case_id"] for r in rows) == ["d1", "d2", "d3"]
    assert torn_case in {r["case_id"] for r in rows}
    assert (out / "results.jsonl.torn").read_bytes().strip() == lines[-1][:40]


def test_changed_manifest_is_refused(dataset_dir: Path, judge, tmp_path: Path) -> None:
    out = tmp_path / "run"
    ds = load_dataset(dataset_dir)
    run_candidate_sync(judge, ds, "development", out, RunOptions(progress=False))
    with pytest.raises(WorkbenchError) as info:
        run_candidate_sync(judge, ds, "development", out, RunOptions(repeats=2, progress=False))
    assert info.value.problems[0].code == "manifest_changed"
    assert "repeats" in info.value.problems[0].message


def test_repeats_are_separate_results(dataset_dir: Path, judge, tmp_path: Path) -> None:
    out = tmp_path / "run"
    summary = run_candidate_sync(
        judge, load_dataset(dataset_dir), "calibration", out, RunOptions(repeats=3, progress=False)
    )
    assert summary.planned == 3 and summary.verdicts == 3
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["repeat"] for r in rows) == [0, 1, 2]


def test_the_options_travel_whole_and_this_executor_refuses_ray(
    dataset_dir: Path, judge, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    with pytest.raises(WorkbenchError) as info:
        run_candidate_sync(
            judge,
            load_dataset(dataset_dir),
            "development",
            out,
            RunOptions(executor="ray", shards=2),
        )
    assert [p.code for p in info.value.problems] == ["executor_mismatch"] and not out.exists()
    options = RunOptions(repeats=2, max_cases=1, cache_dir=False, progress=False)
    summary = run_candidate_sync(judge, load_dataset(dataset_dir), "development", out, options)
    assert (summary.planned, summary.calls, summary.stop_reason) == (6, 1, "max_cases")
    invocation = json.loads((out / "invocations.jsonl").read_text().splitlines()[-1])
    assert invocation["cache"] is False and invocation["max_cases"] == 1
