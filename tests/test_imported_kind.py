"""The ``imported`` kind: results produced elsewhere, replayed through the run engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import make_case, make_result, write_results
from lineage_support import stamped

from workbench.align import align
from workbench.cli import main
from workbench.errors import WorkbenchError
from workbench.gold import freeze, load_dataset, validate_dataset
from workbench.judges import load_candidate
from workbench.runs import RunOptions, run_candidate_sync


def spec_for(directory: Path, results: str) -> Path:
    path = directory / "ext@1.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "ext",
                "version": "1",
                "kind": "imported",
                "labels": ["pass", "fail", "review_required"],
                "results": results,
            }
        )
    )
    return path


def test_replays_verdicts_and_errors_and_leaves_absent_cases_missing(
    make_dataset, tmp_path: Path
) -> None:
    cases = [
        make_case("a", "pass"),
        make_case("b", "fail"),
        make_case("c", "fail"),
        make_case("d", "pass"),
    ]
    gold = make_dataset(cases)
    source = write_results(
        tmp_path / "external.jsonl",
        stamped(
            [
                make_result(
                    cases[0], "pass", tokens_in=10, tokens_out=2, cost_usd=0.5, latency_s=1.5
                ),
                make_result(cases[1], "pass"),
                make_result(cases[2], error={"kind": "timeout", "message": "upstream timed out"}),
            ],
            gold,
        ),
    )
    judge = load_candidate(spec_for(tmp_path, source.name))
    summary = run_candidate_sync(
        judge,
        load_dataset(gold),
        "development",
        tmp_path / "run",
        RunOptions(progress=False, cache_dir=False),
    )
    assert (
        summary.status == "incomplete"
        and summary.unrun == ["d#0"]
        and summary.verdicts == 2
        and summary.errors_by_kind == {"timeout": 1}
    )
    rows = {
        r["case_id"]: r
        for r in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())
    }
    assert (
        rows["a"]["cost_usd"] == 0.5
        and rows["a"]["latency_s"] == 1.5
        and rows["a"]["tokens_in"] == 10
    )
    assert (
        rows["a"]["judge"]["params"]["source_fingerprint"]
        == make_result(cases[0])["judge_fingerprint"]
    )
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
    write_results(
        tmp_path / "mixed.jsonl",
        [make_result(case), make_result(make_case("b"), judge={"name": "other"})],
    )
    with pytest.raises(WorkbenchError) as info:
        load_candidate(spec_for(tmp_path, "mixed.jsonl"))
    assert [p.code for p in info.value.problems] == ["mixed_judges"]


def test_results_without_lineage_are_refused_until_declared(make_dataset, tmp_path: Path) -> None:
    cases = [make_case("a", "pass"), make_case("b", "fail")]
    gold = make_dataset(cases)
    write_results(
        tmp_path / "external.jsonl", [make_result(cases[0], "pass"), make_result(cases[1], "pass")]
    )
    judge = load_candidate(spec_for(tmp_path, "external.jsonl"))
    with pytest.raises(WorkbenchError) as info:
        run_candidate_sync(
            judge,
            load_dataset(gold),
            "development",
            tmp_path / "run",
            RunOptions(progress=False, cache_dir=False),
        )
    assert [p.code for p in info.value.problems] == ["lineage_missing"]
    assert "workbench import results" in info.value.problems[0].fix
    assert not (tmp_path / "run" / "results.jsonl").exists()  # refused before anything was written
    # Declaring the gold makes them usable for this gold.
    declared = CliRunner().invoke(
        main,
        [
            "import",
            "results",
            str(tmp_path / "external.jsonl"),
            "--gold",
            str(gold),
            "--out",
            str(tmp_path / "declared"),
        ],
    )
    assert declared.exit_code == 0, declared.output
    rows = [
        json.loads(line)
        for line in (tmp_path / "declared" / "results.jsonl").read_text().splitlines()
    ]
    assert {(r["dataset_sha256"], r["rubric_version"]) for r in rows} == {
        (load_dataset(gold).sha256, "r1")
    }
    assert {r["judge_fingerprint"] for r in rows} == {make_result(cases[0])["judge_fingerprint"]}
    spec = tmp_path / "declared" / "ext@1.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "name": "ext",
                "version": "1",
                "kind": "imported",
                "labels": ["pass", "fail", "review_required"],
                "results": "results.jsonl",
            }
        )
    )
    summary = run_candidate_sync(
        load_candidate(spec),
        load_dataset(gold),
        "development",
        tmp_path / "run2",
        RunOptions(progress=False, cache_dir=False),
    )
    assert summary.status == "complete" and summary.verdicts == 2


def test_results_of_another_gold_are_refused_with_the_changed_case(
    make_dataset, tmp_path: Path
) -> None:
    cases = [make_case("a", "pass"), make_case("b", "fail")]
    gold = make_dataset(cases)
    freeze(
        gold, approver="tester"
    )  # a frozen release lets the change be named without a run manifest
    write_results(
        tmp_path / "external.jsonl",
        stamped([make_result(cases[0], "pass"), make_result(cases[1], "pass")], gold),
    )
    changed = make_dataset(
        [cases[0], {**cases[1], "grading_notes": "Changed after the results were produced."}]
    )
    (changed / "releases.jsonl").write_bytes((gold / "releases.jsonl").read_bytes())
    (changed / "gold.jsonl").write_text(
        "".join(
            json.dumps(c) + "\n"
            for c in [
                cases[0],
                {**cases[1], "grading_notes": "Changed after the results were produced."},
            ]
        )
    )
    report = validate_dataset(changed)
    assert [p.code for p in report.errors] == [
        "frozen_case_edited"
    ]  # and the edit itself is refused
    (changed / "releases.jsonl").unlink()
    other = validate_dataset(changed).dataset
    assert other is not None
    judge = load_candidate(spec_for(tmp_path, "external.jsonl"))
    with pytest.raises(WorkbenchError) as info:
        judge.check_gold(other)
    assert "gold_changed" in {p.code for p in info.value.problems}
    # Without the frozen release beside the changed gold, the cases cannot be named but the change
    # is still refused.
    assert any("cannot be listed" in p.message for p in info.value.problems)
