"""Score-based judges: thresholds, sweeps on recorded scores, and the frozen version."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest
import yaml
from conftest import make_case

from workbench.errors import WorkbenchError
from workbench.judges import load_candidate
from workbench.phases import CalibrationSession, choose_threshold, threshold_sweep

SPEC = {
    "name": "len",
    "version": "1",
    "kind": "ragas-function",
    "labels": ["pass", "fail"],
    "function": "judge_fixtures:length_score",
    "threshold": {"value": 0.5},
}


def write(directory: Path, **changes: object) -> Path:
    path = directory / "len@1.yaml"
    path.write_text(yaml.safe_dump({**SPEC, **changes}))
    return path


@pytest.fixture
def session(make_dataset, tmp_path: Path) -> CalibrationSession:
    # scores 0.1 .. 0.8; humans pass the high scores except 0.8, fail the low ones except 0.3
    labels = {
        1: "fail",
        2: "fail",
        3: "pass",
        4: "fail",
        5: "pass",
        6: "pass",
        7: "pass",
        8: "fail",
    }
    cases = [
        make_case(f"c{s}", lab, response=f"score {s}", partition="calibration")
        for s, lab in labels.items()
    ]
    return CalibrationSession(make_dataset(cases), run_root=tmp_path / "runs")


def test_threshold_turns_scores_into_labels_and_records_the_score(
    session: CalibrationSession, tmp_path: Path
) -> None:
    judge = session.load(write(tmp_path))
    run = asyncio.run(session.run(judge, progress=False))
    by_case = {line.result.case_id: line.result for line in run.lines}
    assert by_case["c5"].score == 0.5 and by_case["c5"].value == "pass"  # at_least: 0.5 >= 0.5
    assert by_case["c4"].score == 0.4 and by_case["c4"].value == "fail"
    assert "score 0.4" in (by_case["c4"].reason or "")


def test_sweep_counts_by_hand(session: CalibrationSession, tmp_path: Path) -> None:
    run = asyncio.run(session.run(session.load(write(tmp_path)), progress=False))
    sweep = threshold_sweep(run).set_index("threshold")
    # human fails at 0.1, 0.2, 0.4, 0.8; passes at 0.3, 0.5, 0.6, 0.7
    # t=0.5: judged pass {0.5,0.6,0.7,0.8}: FP = 0.8 -> 1/4; FF = 0.3 -> 1/4; agreement 6/8
    row = sweep.loc[0.5]
    assert (row.false_passes, row.human_fails, row.false_fails, row.human_passes) == (1, 4, 1, 4)
    assert row.agreement == pytest.approx(6 / 8)
    # t=0.9... the last finite threshold is 0.8: judged pass {0.8}: FP 1, FF 4
    assert (sweep.loc[0.8].false_passes, sweep.loc[0.8].false_fails) == (1, 4)
    assert (sweep.loc[math.inf].false_passes, sweep.loc[math.inf].false_fails) == (0, 4)
    choice = choose_threshold(sweep.reset_index())
    assert choice["threshold"] == 0.5 and choice["agreement"] == pytest.approx(0.75)
    # a limit nothing finite can meet on the upper bound: reported, never the pass-nothing cut-off
    strict = choose_threshold(sweep.reset_index(), max_false_pass_rate=0.1)
    assert (
        strict["meets_limit"] is False
        and math.isfinite(strict["threshold"])
        and strict["false_passes"] == 1
    )


def test_freezing_the_threshold_is_a_new_version(
    session: CalibrationSession, tmp_path: Path
) -> None:
    base = session.load(write(tmp_path))
    frozen = session.derive(
        base, version="2", threshold={**base.spec.threshold.model_dump(), "value": 0.6}
    )
    assert frozen.identity.fingerprint() != base.identity.fingerprint()
    run = asyncio.run(session.run(frozen, progress=False))
    assert {line.result.case_id: line.result.value for line in run.lines}["c5"] == "fail"


def test_a_score_judge_needs_a_threshold(tmp_path: Path) -> None:
    spec = {k: v for k, v in SPEC.items() if k != "threshold"}
    path = tmp_path / "len@1.yaml"
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(WorkbenchError) as info:
        load_candidate(path)
    assert info.value.problems[0].code == "threshold_missing"
    with pytest.raises(WorkbenchError) as refused:
        load_candidate(write(tmp_path, threshold={"value": 0.5, "pass_label": "yes"}))
    assert [p.code for p in refused.value.problems] == ["candidate_invalid"]
