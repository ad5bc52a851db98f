"""The ``imported`` kind: results produced elsewhere, replayed through the run engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import make_case, make_result, write_results

from workbench.align import align
from workbench.errors import WorkbenchError
from workbench.gold import load_dataset
from workbench.judges import load_candidate
from workbench.runs import run_candidate_sync


def spec_for(directory: Path, results: str) -> Path:
    path = directory / "ext@1.yaml"
    path.write_text(yaml.safe_dump({"name": "ext", "version": "1", "kind": "imported", "labels": ["pass", "fail", "review_required"], "results": results}))
    return path


def test_replays_verdicts_and_errors_and_leaves_absent_cases_missing(make_dataset, tmp_path: Path) -> None:
    cases = [make_case("a", "pass"), make_case("b", "fail"), make_case("c", "fail"), make_case("d", "pass")]
    gold = make_dataset(cases)
    source = write_results(
        tmp_path / "external.jsonl",
        [
            make_result(cases[0], "pass", tokens_in=10, tokens_out=2, cost_usd=0.5, latency_s=1.5),
            make_result(cases[1], "pass"),
            make_result(cases[2], error={"kind": "timeout", "message": "upstream timed out"}),
        ],
    )
    judge = load_candidate(spec_for(tmp_path, source.name))
    summary = run_candidate_sync(judge, load_dataset(gold), "development", tmp_path / "run", progress=False, cache_dir=False)
    assert summary.status == "incomplete" and summary.unrun == ["d#0"] and summary.verdicts == 2 and summary.errors_by_kind == {"timeout": 1}
    rows = {r["case_id"]: r for r in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())}
    assert rows["a"]["cost_usd"] == 0.5 and rows["a"]["latency_s"] == 1.5 and rows["a"]["tokens_in"] == 10
    assert rows["a"]["judge"]["params"]["source_fingerprint"] == make_result(cases[0])["judge_fingerprint"]
    report = align(gold, tmp_path / "run" / "results.jsonl")
    assert (report.overall.false_passes, report.overall.errors, report.overall.missing) == (1, 1, 1)
    assert report.status == "incomplete"


def test_fingerprint_follows_the_file(make_dataset, tmp_path: Path) -> None:
    case = make_case("a", "pass")
    source = write_results(tmp_path / "external.jsonl", [make_result(case, "pass")])
    before = load_candidate(spec_for(tmp_path, source.name)).identity.fingerprint()
    write_results(source, [make_result(case, "fail")])
    after = load_candidate(spec_for(tmp_path, source.name)).identity.fingerprint()
    assert before != after


def test_contract_violations_and_mixed_judges_are_refused(tmp_path: Path) -> None:
    case = make_case("a", "pass")
    write_results(tmp_path / "bad.jsonl", [{"case_id": "a"}, "not json"])
    with pytest.raises(WorkbenchError) as info:
        load_candidate(spec_for(tmp_path, "bad.jsonl"))
    assert len(info.value.problems) >= 2
    write_results(tmp_path / "mixed.jsonl", [make_result(case), make_result(make_case("b"), judge={"name": "other"})])
    with pytest.raises(WorkbenchError) as info:
        load_candidate(spec_for(tmp_path, "mixed.jsonl"))
    assert [p.code for p in info.value.problems] == ["mixed_judges"]
