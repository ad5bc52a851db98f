"""``workbench repeatability``: flips, majority shares, boundary crossings, cost per repeat; the
policy's ``max_flip_rate`` and the study log certification reads.

Reproduction (old main): ``workbench run --repeat K`` kept every verdict, but nothing read the
repeats back: no flip rate, no boundary-crossing list, no limit a policy could set (a policy
with ``max_flip_rate`` was refused as an unknown field), so a judge whose verdict on a critical
case moved between pass and fail under an unchanged configuration could still be certified.
"""

from __future__ import annotations

import json
from pathlib import Path

import migration_judges
import pytest
import yaml
from click.testing import CliRunner
from conftest import make_case

from workbench.cli.main import main
from workbench.errors import WorkbenchError
from workbench.migration import BudgetInsufficient
from workbench.policy import Policy
from workbench.repeatability import (
    latest_study,
    read_studies,
    repeatability_blockers,
    run_repeatability_sync,
    studies_path_for,
)
from workbench.testing import FakeLLM, Reply

ROOT = Path(__file__).resolve().parents[1]

# response -> verdict per repeat (concurrency 1 runs repeats 0, 1, 2 of a case in order)
SCRIPT = {
    "b1": ["pass", "fail", "pass"],  # critical slice, crosses pass/fail: review
    "b2": ["fail", "fail", "fail"],
    "g1": ["pass", "review_required", "pass"],  # flips into abstain only: no crossing
    "g2": ["fail", "pass", "pass"],  # low risk crossing: counted, not listed for review
    "g3": ["pass", "pass", "pass"],
}


@pytest.fixture
def gold(make_dataset) -> Path:
    cases = [
        make_case(
            cid,
            "pass",
            slice="billing" if cid.startswith("b") else "general",
            partition="calibration",
            response=f"response {cid}",
        )
        for cid in SCRIPT
    ]
    cases.append(make_case("h1", "pass", partition="held_out"))
    return make_dataset(cases)


@pytest.fixture
def flaky(tmp_path: Path) -> Path:
    migration_judges.FLAKY.clear()
    for cid, verdicts in SCRIPT.items():
        migration_judges.FLAKY[f"response {cid}"] = list(verdicts)
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


def test_flips_majority_and_boundary_crossings(gold: Path, flaky: Path, tmp_path: Path) -> None:
    study = run_repeatability_sync(
        flaky,
        gold,
        "calibration",
        3,
        tmp_path / "run",
        concurrency=1,
        progress=False,
        cache_dir=False,
    )
    cases = {c.case_id: c for c in study.cases}
    assert cases["b1"].verdicts == ["pass", "fail", "pass"]
    assert [cid for cid, c in cases.items() if c.flipped] == ["b1", "g1", "g2"]
    assert {cid: c.boundary_crossing for cid, c in cases.items()} == {
        "b1": True,
        "b2": False,
        "g1": False,
        "g2": True,
        "g3": False,
    }
    assert (cases["b1"].majority, cases["b1"].majority_share) == ("pass", pytest.approx(2 / 3))
    assert (cases["b2"].majority, cases["b2"].majority_share) == ("fail", 1.0)
    assert study.review == ["b1"]  # critical crossings only
    billing = next(s for s in study.slices if s.slice == "billing")
    general = next(s for s in study.slices if s.slice == "general")
    assert (billing.flipped, billing.assessed, billing.flip_rate.rate) == (1, 2, 0.5)
    assert (general.flipped, general.assessed) == (2, 3) and general.boundary_case_ids == ["g2"]
    assert study.overall.mean_majority_share == pytest.approx((2 / 3 + 1 + 2 / 3 + 2 / 3 + 1) / 5)
    assert [r.attempts for r in study.per_repeat] == [5, 5, 5]
    assert study.status == "complete" and study.partition == "calibration" and study.repeats == 3
    # every verdict is retained in the run, and the study is in the log beside the gold
    assert len((tmp_path / "run" / "results.jsonl").read_text().splitlines()) == 15
    logged = read_studies(studies_path_for(gold))
    assert [s.study_id for s in logged] == [study.study_id]
    assert (
        latest_study(studies_path_for(gold), study.candidate_fingerprint, partition="calibration")
        == logged[0]
    )
    assert latest_study(studies_path_for(gold), "0" * 64) is None


def test_cli_exit_codes(gold: Path, flaky: Path, tmp_path: Path) -> None:
    args = [
        "repeatability",
        "--candidate",
        str(flaky),
        "--gold",
        str(gold),
        "--repeats",
        "3",
        "--no-progress",
        "--concurrency",
        "1",
        "--log",
        str(tmp_path / "log.jsonl"),
    ]
    review = CliRunner().invoke(
        main, [*args, "--partition", "calibration", "--out", str(tmp_path / "a")]
    )
    assert review.exit_code == 4, review.output
    assert (
        "REVIEW: 1 case(s) in critical slices crossed the pass/fail boundary" in review.output
        and "b1" in review.output
    )
    held = CliRunner().invoke(
        main, [*args, "--partition", "held_out", "--out", str(tmp_path / "b")]
    )
    assert held.exit_code == 2 and not (tmp_path / "b").exists()
    one = CliRunner().invoke(
        main,
        [
            "repeatability",
            "--candidate",
            str(flaky),
            "--gold",
            str(gold),
            "--partition",
            "calibration",
            "--repeats",
            "1",
        ],
    )
    assert one.exit_code == 2
    # Re-running the study replays the cached verdicts of each repeat: it cannot be retried toward
    # green
    again = CliRunner().invoke(
        main, [*args, "--partition", "calibration", "--out", str(tmp_path / "c")]
    )
    assert again.exit_code == 4 and "repeat 0: 5 attempts, 5 cached" in again.output
    # Fresh calls (the queues are empty now: every call passes) are a new study, logged beside the
    # others
    fresh = CliRunner().invoke(
        main, [*args, "--partition", "calibration", "--out", str(tmp_path / "d"), "--no-cache"]
    )
    assert fresh.exit_code == 0, fresh.output
    assert len(read_studies(tmp_path / "log.jsonl")) == 3


def test_an_error_in_one_repeat_makes_the_case_incomplete_not_stable(
    gold: Path, flaky: Path, tmp_path: Path
) -> None:
    migration_judges.FLAKY["response g3"] = [
        "pass",
        "maybe",
        "pass",
    ]  # 'maybe' is outside the labels: an evaluator error
    result = CliRunner().invoke(
        main,
        [
            "repeatability",
            "--candidate",
            str(flaky),
            "--gold",
            str(gold),
            "--partition",
            "calibration",
            "--repeats",
            "3",
            "--out",
            str(tmp_path / "r"),
            "--no-progress",
            "--concurrency",
            "1",
            "--log",
            str(tmp_path / "log.jsonl"),
        ],
    )
    assert result.exit_code == 3, result.output
    (study,) = read_studies(tmp_path / "log.jsonl")
    g3 = next(c for c in study.cases if c.case_id == "g3")
    assert (g3.status, g3.errors, g3.verdicts) == ("incomplete", 1, ["pass", None, "pass"])
    assert study.status == "incomplete" and "g3" in study.incomplete_reasons[0]


def policy(**flip: float) -> Policy:
    slices = {
        "billing": {"risk": "critical", "max_false_pass_rate": 0.1, "max_abstention_rate": 0.1},
        "general": {"risk": "low"},
        "empty": {"risk": "medium"},
    }
    for name, limit in flip.items():
        slices[name]["max_flip_rate"] = limit
    return Policy.model_validate(
        {"name": "p", "version": "1", "owner": "o", "rationale": "r", "slices": slices}
    )


def test_repeatability_blockers(gold: Path, flaky: Path, tmp_path: Path) -> None:
    study = run_repeatability_sync(
        flaky,
        gold,
        "calibration",
        3,
        tmp_path / "run",
        concurrency=1,
        progress=False,
        cache_dir=False,
        log=False,
    )
    fp = study.candidate_fingerprint
    assert repeatability_blockers(policy(), None) == []
    (missing,) = repeatability_blockers(policy(billing=0.1), None)
    assert (missing.code, missing.category, missing.waivable) == (
        "repeatability_study_missing",
        "incomplete",
        False,
    )
    assert "workbench repeatability" in missing.message
    blockers = repeatability_blockers(
        policy(billing=0.1, general=0.7), study, fingerprint=fp, dataset_sha256=study.dataset_sha256
    )
    assert [(b.code, b.category, b.slice, b.case_ids) for b in blockers] == [
        ("flip_rate_exceeded", "quality", "billing", ["b1"]),
        ("boundary_crossing_critical", "review", "billing", ["b1"]),
    ]
    assert blockers[0].evidence["rate"] == 0.5 and blockers[0].evidence["limit"] == 0.1
    assert blockers[1].evidence["studies"] == [study.study_id]
    # without any flip limit, a study's critical crossings are still listed for review
    assert [b.code for b in repeatability_blockers(policy(), study)] == [
        "boundary_crossing_critical"
    ]
    mismatched = repeatability_blockers(
        policy(billing=0.9),
        study.model_copy(
            update={
                "partition": "development",
                "repeats": 2,
                "status": "incomplete",
                "incomplete_reasons": ["x"],
            }
        ),
        fingerprint="f" * 64,
        dataset_sha256="d" * 64,
    )
    sid = study.study_id
    fix = (
        "run `workbench repeatability --candidate SPEC --gold GOLD --partition calibration"
        " --repeats 3`"
    )
    assert [(b.code, b.category, b.evidence, b.message) for b in mismatched[:5]] == [
        (
            "repeatability_study_other_candidate",
            "incomplete",
            {"study": sid},
            f"the repeatability study is of {study.candidate} ({fp[:12]}), not the candidate"
            f" certified ({'f' * 12}): {fix}",
        ),
        (
            "repeatability_study_other_gold",
            "incomplete",
            {"study": sid},
            f"the repeatability study ran on dataset {study.dataset_sha256[:12]}, not"
            f" {'d' * 12}: {fix}",
        ),
        (
            "repeatability_wrong_partition",
            "incomplete",
            {"study": sid, "partition": "development"},
            "the repeatability study is on development; certification wants it on calibration:"
            f" {fix}",
        ),
        (
            "repeatability_too_few_repeats",
            "incomplete",
            {"study": sid, "repeats": 2, "min_repeats": 3},
            f"the repeatability study has K=2 repeats; certification wants K >= 3: {fix}",
        ),
        (
            "repeatability_incomplete",
            "incomplete",
            {"study": sid},
            "the repeatability study is incomplete: x",
        ),
    ]
    # billing's rate (0.5) is within 0.9: no flip-rate blocker, the crossing stays
    assert [b.code for b in mismatched[5:]] == ["boundary_crossing_critical"]
    (unmeasured,) = [
        b
        for b in repeatability_blockers(policy(empty=0.2), study)
        if b.code != "boundary_crossing_critical"
    ]
    assert (unmeasured.code, unmeasured.slice) == ("flip_rate_unmeasured", "empty")


def test_a_calmer_later_study_does_not_erase_earlier_crossings(
    gold: Path, flaky: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    first = run_repeatability_sync(
        flaky,
        gold,
        "calibration",
        3,
        tmp_path / "a",
        concurrency=1,
        progress=False,
        cache_dir=False,
        log=log,
    )
    calm = run_repeatability_sync(
        flaky,
        gold,
        "calibration",
        3,
        tmp_path / "b",
        concurrency=1,
        progress=False,
        cache_dir=False,
        log=log,
    )  # queues empty: all pass
    assert calm.review == [] and first.review == ["b1"]
    assert repeatability_blockers(policy(), calm) == []
    from workbench.repeatability import studies_of

    (blocker,) = repeatability_blockers(
        policy(), calm, earlier=studies_of(log, calm.candidate_fingerprint)
    )
    assert (blocker.code, blocker.case_ids, blocker.evidence["studies"]) == (
        "boundary_crossing_critical",
        ["b1"],
        [first.study_id],
    )


def test_policy_field_is_documented_and_bounded() -> None:
    from pydantic import ValidationError

    assert policy(general=0.25).slices["general"].max_flip_rate == 0.25
    with pytest.raises(ValidationError):
        policy(general=1.5)
    assert "`max_flip_rate`" in (ROOT / "docs" / "formats.md").read_text()


KEY_ENV = "WB_REPEAT_KEY"


def test_budget_refused_up_front_then_cost_and_tokens_per_repeat(
    gold: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "k")
    with FakeLLM(default=Reply(value="pass", reason="ok")) as server:
        spec = tmp_path / "rep-llm@1.yaml"
        spec.write_text(
            yaml.safe_dump(
                {
                    "name": "rep-llm",
                    "version": "1",
                    "kind": "ragas-llm",
                    "labels": ["pass", "fail"],
                    "model": "fake",
                    "prompt": "Notes: {grading_notes}\nJudge: {response}",
                    "endpoint": {
                        "base_url": server.base_url,
                        "api_key_env": KEY_ENV,
                        "max_retries": 0,
                    },
                    "params": {"max_tokens": 50},
                    "pricing": {"input_per_million_usd": 100.0, "output_per_million_usd": 100.0},
                }
            )
        )
        with pytest.raises(BudgetInsufficient) as info:
            run_repeatability_sync(
                spec,
                gold,
                "calibration",
                3,
                tmp_path / "run",
                budget_usd=0.001,
                progress=False,
                cache_dir=False,
                log=False,
            )
        assert (
            info.value.problems[0].code == "budget_insufficient"
            and "15 call(s)" in info.value.problems[0].message
        )
        assert server.calls == [] and not (tmp_path / "run").exists()
        study = run_repeatability_sync(
            spec,
            gold,
            "calibration",
            3,
            tmp_path / "run",
            progress=False,
            cache_dir=False,
            log=tmp_path / "log.jsonl",
        )
    assert len(server.calls) == 15
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert sum(r.cost_usd for r in study.per_repeat) == pytest.approx(run["cost_usd"])
    assert all(
        r.attempts == 5 and r.tokens_in > 0 and r.tokens_out > 0 and r.cost_usd > 0
        for r in study.per_repeat
    )
    assert sum(r.tokens_in for r in study.per_repeat) == run["tokens_in"]


def test_held_out_runs_cannot_be_studied(gold: Path, flaky: Path, tmp_path: Path) -> None:
    with pytest.raises(WorkbenchError) as info:
        run_repeatability_sync(flaky, gold, "held_out", 3, tmp_path / "r", progress=False)
    assert info.value.problems[0].code == "held_out_refused"
