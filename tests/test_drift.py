"""Sentinels and ``workbench drift``: a declared set re-run with a pinned judge, every change
flagged.

Reproduction (old main): there was no sentinel set and no drift check. Re-running a pinned
judge on the same cases with ``workbench run`` replayed the verdict cache (zero calls), so a
provider-side change could never show; and nothing recorded what the judge said at a known
time to compare with.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import migration_judges
import pytest
import yaml
from click.testing import CliRunner
from conftest import make_case

from workbench.cli.main import main
from workbench.errors import WorkbenchError
from workbench.gold import load_dataset
from workbench.repeatability import (
    DriftEntry,
    latest_drift,
    load_sentinels,
    read_drift_log,
    run_drift_sync,
)

ROOT = Path(__file__).resolve().parents[1]
IDS = ["b1", "b2", "g1"]


@pytest.fixture
def gold(make_dataset) -> Path:
    cases = [
        make_case(
            cid,
            "pass" if cid != "b2" else "fail",
            slice="billing" if cid.startswith("b") else "general",
            partition="calibration" if cid != "g1" else "development",
            response=f"response {cid}",
        )
        for cid in IDS
    ]
    cases += [
        make_case("h1", "pass", partition="held_out", response="response h1"),
        make_case("old", "pass", response="response old"),
        make_case("new", "fail", response="response old", supersedes="old"),
    ]
    root = make_dataset(cases)
    write_sentinels(
        root / "sentinels.yaml", [{"case_id": cid, "reason": f"guards {cid}"} for cid in IDS]
    )
    return root


def write_sentinels(path: Path, sentinels: list[dict], **extra) -> Path:
    path.write_text(
        yaml.safe_dump({"schema_version": 1, "name": "s", "sentinels": sentinels, **extra})
    )
    return path


@pytest.fixture
def flaky(tmp_path: Path) -> Path:
    migration_judges.FLAKY.clear()
    path = tmp_path / "flaky@1.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "flaky",
                "version": "1",
                "kind": "ragas-function",
                "labels": ["pass", "fail", "review_required"],
                "function": "migration_judges:flaky",
            }
        )
    )
    return path


def script(**verdicts: str) -> None:
    """The next verdict of each sentinel (``pass`` for those not named)."""
    for cid, verdict in verdicts.items():
        migration_judges.FLAKY[f"response {cid}"].append(verdict)


def test_sentinels_are_checked_against_the_gold(gold: Path, tmp_path: Path) -> None:
    dataset = load_dataset(gold)
    assert load_sentinels(None, dataset).case_ids == IDS
    bad = write_sentinels(
        tmp_path / "bad.yaml",
        [
            {"case_id": "b1", "reason": "ok"},
            {"case_id": "b1", "reason": "twice"},
            {"case_id": "nope", "reason": "unknown"},
            {"case_id": "h1", "reason": "held out"},
            {"case_id": "old", "reason": "superseded"},
        ],
        rubric_version="r0",
    )
    with pytest.raises(WorkbenchError) as info:
        load_sentinels(bad, dataset)
    assert sorted(p.code for p in info.value.problems) == [
        "duplicate_sentinel",
        "held_out_sentinel",
        "sentinels_rubric_mismatch",
        "superseded_case",
        "unknown_case",
    ]
    blank = write_sentinels(tmp_path / "blank.yaml", [{"case_id": "b1", "reason": "  "}])
    with pytest.raises(WorkbenchError) as info:
        load_sentinels(blank, dataset)
    assert info.value.problems[0].code == "sentinels_invalid"
    with pytest.raises(WorkbenchError) as info:
        load_sentinels(tmp_path / "none.yaml", dataset)
    assert info.value.problems[0].code == "sentinels_missing"


def test_demo_sentinels_are_valid_and_never_held_out() -> None:
    dataset = load_dataset(ROOT / "data" / "demo")
    loaded = load_sentinels(ROOT / "data" / "demo" / "sentinels.yaml", dataset)
    assert len(loaded.cases) == 6
    assert {c.partition.value for c in loaded.cases} <= {"development", "calibration"}
    assert {c.gold_label for c in loaded.cases} == {"pass", "fail"}
    assert any(dataset.rubric.risk_of(c.slice) == "critical" for c in loaded.cases)


def test_baseline_then_checks_flag_every_change(gold: Path, flaky: Path, tmp_path: Path) -> None:
    log = tmp_path / "drift.jsonl"
    args = [
        "drift",
        "--candidate",
        str(flaky),
        "--gold",
        str(gold),
        "--log",
        str(log),
        "--out",
        str(tmp_path / "runs"),
        "--no-progress",
    ]
    none = CliRunner().invoke(main, args)
    assert none.exit_code == 2 and "baseline_missing" in none.output
    script(b2="fail")
    base = CliRunner().invoke(main, [*args, "--record-baseline"])
    assert base.exit_code == 0, base.output
    script(b2="fail")
    stable = CliRunner().invoke(main, args)
    assert stable.exit_code == 0 and "STABLE" in stable.output, stable.output
    # the provider now passes b2 (a boundary crossing) and abstains on g1
    script(b2="pass", g1="review_required")
    drifted = CliRunner().invoke(main, args)
    assert drifted.exit_code == 4, drifted.output
    entry = latest_drift(log, read_drift_log(log)[0].candidate_fingerprint)
    assert entry is not None and entry.status == "drifted"
    assert [(c.case_id, c.kind, c.before, c.after, c.boundary_crossing) for c in entry.changes] == [
        ("b2", "verdict_changed", "fail", "pass", True),
        ("g1", "verdict_changed", "pass", "review_required", False),
    ]
    assert (
        entry.baseline is not None
        and entry.baseline.source == "drift_log"
        and entry.baseline.ref == read_drift_log(log)[0].entry_id
    )
    # an evaluator error is a change too
    script(b1="maybe", b2="fail")
    errored = run_drift_sync(flaky, gold, log=log, out=tmp_path / "runs", progress=False)
    assert [(c.case_id, c.kind, c.after) for c in errored.changes] == [
        ("b1", "now_error", "error:invalid_label")
    ]
    assert [e.kind for e in read_drift_log(log)] == ["baseline", "check", "check", "check"]
    assert all(isinstance(e, DriftEntry) for e in read_drift_log(log))
    # each entry has its own run directory
    assert len({e.run_dir for e in read_drift_log(log)}) == 4


def test_drift_never_replays_the_verdict_cache(gold: Path, flaky: Path, tmp_path: Path) -> None:
    log = tmp_path / "drift.jsonl"
    # a cached calibration run of the same judge exists
    assert (
        CliRunner()
        .invoke(
            main,
            [
                "run",
                "--candidate",
                str(flaky),
                "--gold",
                str(gold),
                "--partition",
                "calibration",
                "--out",
                str(tmp_path / "cal"),
                "--no-progress",
            ],
        )
        .exit_code
        == 0
    )
    run_drift_sync(
        flaky, gold, log=log, out=tmp_path / "runs", record_baseline=True, progress=False
    )
    before = migration_judges.CALLS["flaky"]
    run_drift_sync(flaky, gold, log=log, out=tmp_path / "runs", progress=False)
    assert migration_judges.CALLS["flaky"] - before == 3  # every sentinel called again


def test_against_a_run_of_the_same_judge_only(
    gold: Path, flaky: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "drift.jsonl"
    run = tmp_path / "cal"
    assert (
        CliRunner()
        .invoke(
            main,
            [
                "run",
                "--candidate",
                str(flaky),
                "--gold",
                str(gold),
                "--partition",
                "calibration",
                "--out",
                str(run),
                "--no-progress",
                "--no-cache",
            ],
        )
        .exit_code
        == 0
    )
    entry = run_drift_sync(flaky, gold, against=run, log=log, out=tmp_path / "runs", progress=False)
    # the calibration run holds b1 and b2; g1 is a development case: no baseline verdict for it
    assert entry.baseline is not None and entry.baseline.source == "run"
    assert [(c.case_id, c.kind) for c in entry.changes] == [("g1", "no_baseline")]
    other = tmp_path / "other@1.yaml"
    other.write_text(
        yaml.safe_dump(
            {
                "name": "other",
                "version": "1",
                "kind": "ragas-function",
                "labels": ["pass", "fail", "review_required"],
                "function": "migration_judges:new_judge",
            }
        )
    )
    with pytest.raises(WorkbenchError) as info:
        run_drift_sync(other, gold, against=run, log=log, out=tmp_path / "runs", progress=False)
    assert (
        info.value.problems[0].code == "baseline_other_judge"
        and "workbench compare" in info.value.problems[0].fix
    )


def fake_report(root: Path, fingerprint: str, report_id: str = "flaky/1/1") -> Path:
    root.mkdir(parents=True)
    (root / "lock.json").write_text(
        json.dumps(
            {"report_id": report_id, "candidate": "flaky@1", "candidate_fingerprint": fingerprint}
        )
    )
    return root


def test_against_a_certification_report(gold: Path, flaky: Path, tmp_path: Path) -> None:
    from workbench.judges import load_candidate

    fp = load_candidate(flaky).identity.fingerprint()
    log = tmp_path / "drift.jsonl"
    report = fake_report(tmp_path / "report", fp)
    with pytest.raises(WorkbenchError) as info:
        run_drift_sync(flaky, gold, against=report, log=log, out=tmp_path / "runs", progress=False)
    assert (
        info.value.problems[0].code == "baseline_missing"
        and "--record-baseline --report" in info.value.problems[0].fix
    )
    # a baseline recorded for the report (at certification time), then checked against it
    script(b2="fail")
    base = run_drift_sync(
        flaky,
        gold,
        record_baseline=True,
        report=report,
        log=log,
        out=tmp_path / "runs",
        progress=False,
    )
    assert base.report_id == "flaky/1/1" and base.status == "recorded"
    script(b2="pass")
    check = run_drift_sync(
        flaky, gold, against=report, log=log, out=tmp_path / "runs", progress=False
    )
    assert (
        check.baseline is not None
        and check.baseline.source == "report"
        and base.entry_id in check.baseline.ref
    )
    assert [(c.case_id, c.kind) for c in check.changes] == [("b2", "verdict_changed")]
    # a sentinel run stored in the report itself is preferred
    shutil.copytree(Path(base.run_dir), report / "sentinels")
    script(b2="pass")
    stored = run_drift_sync(
        flaky, gold, against=report, log=log, out=tmp_path / "runs", progress=False
    )
    assert (
        stored.baseline is not None
        and stored.baseline.ref == "flaky/1/1"
        and stored.baseline.run_id == base.run_id
    )
    assert [c.case_id for c in stored.changes] == ["b2"]
    # a report of another judge is refused, for checks and for baselines
    other = fake_report(tmp_path / "other", "0" * 64)
    for kwargs in ({"against": other}, {"record_baseline": True, "report": other}):
        with pytest.raises(WorkbenchError) as info:
            run_drift_sync(flaky, gold, log=log, out=tmp_path / "runs", progress=False, **kwargs)
        assert info.value.problems[0].code == "baseline_other_judge"


def test_a_changed_response_is_flagged(make_dataset, flaky: Path, tmp_path: Path) -> None:
    cases = [
        make_case(cid, "pass", partition="calibration", response=f"response {cid}") for cid in IDS
    ]
    first = make_dataset(cases)
    write_sentinels(first / "sentinels.yaml", [{"case_id": cid, "reason": "r"} for cid in IDS])
    log = tmp_path / "drift.jsonl"
    run_drift_sync(
        flaky, first, record_baseline=True, log=log, out=tmp_path / "runs", progress=False
    )
    cases[0] = make_case("b1", "pass", partition="calibration", response="response b1, rewritten")
    second = make_dataset(cases)
    shutil.copy(first / "sentinels.yaml", second / "sentinels.yaml")
    entry = run_drift_sync(flaky, second, log=log, out=tmp_path / "runs", progress=False)
    assert [(c.case_id, c.kind) for c in entry.changes] == [("b1", "input_changed")]
    assert entry.status == "drifted"
