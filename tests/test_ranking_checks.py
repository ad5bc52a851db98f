"""Issue 30's ranking checks: context sensitivity across related fixtures, the candidate diff on
a changed candidate, ranker prompt defects refused offline, ``allowed_values`` tied to the
candidate count, and one change per release (generation drift vs evaluator drift)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from ragas.metrics import ranking_metric
from test_ranking import (
    KEY_ENV,
    fixture,
    function_spec,
    llm_spec,
    report_of,
    run,
    write_fixtures,
)

from workbench.cli.ranking import ranking as ranking_command
from workbench.errors import WorkbenchError
from workbench.judges import load_candidate
from workbench.ranking import (
    FixtureSet,
    RankingFixture,
    context_sensitivity,
    position_battery,
    ranking_report,
)
from workbench.results import read_results


def _quality(text: str) -> int:
    return int(text.rsplit("quality ", 1)[1].split(".")[0])


@ranking_metric(name="anchored", allowed_values=3)
def anchored_ranker(
    user_input: str, context: list[str], candidates: list[dict[str, str]]
) -> list[str]:
    """Best first by quality, except that a decoy in the list swaps the top two (anchoring)."""
    ranked = [c for c in sorted(candidates, key=lambda c: -_quality(c["text"]))]
    if any("decoy" in c["text"] for c in candidates):
        ranked[0], ranked[1] = ranked[1], ranked[0]
    return [c["label"] for c in ranked]


@ranking_metric(name="steady", allowed_values=3)
def steady_ranker(
    user_input: str, context: list[str], candidates: list[dict[str, str]]
) -> list[str]:
    """Best first by quality, whatever else is shown."""
    return [c["label"] for c in sorted(candidates, key=lambda c: -_quality(c["text"]))]


SHARED = {
    "user_input": "How do I reset my password?",
    "context": [{"id": "pol-1", "text": "Verify the customer's identity before any reset."}],
    "cited_context": ["pol-1"],
}
GOOD = {"id": "good", "text": "Verify your identity, then follow the reset link, quality 3."}
FAIR = {"id": "fair", "text": "Follow the reset link, quality 2."}
DECOY = {"id": "decoy", "text": "Open Settings > Magic Reset (a decoy), quality 1."}


def related(gate: str = "monitor-only") -> list[dict[str, Any]]:
    """A pairwise fixture and a three-way fixture holding the same two candidates."""
    pair = fixture("pw-pair", candidates=[GOOD, FAIR], expected_order=["good", "fair"], **SHARED)
    three = fixture(
        "pw-three",
        gate=gate,
        candidates=[GOOD, FAIR, DECOY],
        expected_order=["good", "fair", "decoy"],
        **SHARED,
    )
    return [pair, three]


# -- 1. context sensitivity ----------------------------------------------------------------------


def test_context_sensitivity_by_hand() -> None:
    fs = FixtureSet(
        name="s", version="1", fixtures=[RankingFixture.model_validate(f) for f in related()]
    )
    alone = [["good", "fair"], ["fair", "good"], ["good", "fair"]]  # good above fair: 2 of 3
    together = [["fair", "good", "decoy"], ["fair", "decoy", "good"], ["good", "fair", "decoy"]]
    [found] = context_sensitivity(fs, {"pw-pair": alone, "pw-three": together})
    assert (found.smaller, found.larger, found.winner_alone, found.loser_alone) == (
        "pw-pair",
        "pw-three",
        "good",
        "fair",
    )
    assert (found.alone.k, found.alone.n, found.together.k, found.together.n) == (2, 3, 1, 3)
    assert found.added == ["decoy"] and "pw-pair" in found.message and "pw-three" in found.message
    # the same majority in both: no finding; a tie alone: no majority to contradict
    assert context_sensitivity(fs, {"pw-pair": alone, "pw-three": together[2:]}) == []
    tie = [["good", "fair"], ["fair", "good"]]
    assert context_sensitivity(fs, {"pw-pair": tie, "pw-three": together}) == []


def test_fixtures_are_related_only_with_the_same_question_context_and_candidate_texts() -> None:
    pair, three = related()
    orders = {
        "pw-pair": [["good", "fair"]],
        "pw-three": [["fair", "good", "decoy"]],
    }
    for change in (
        {"user_input": "How do I close my account?"},
        {"context": [{"id": "pol-1", "text": "Another policy."}]},
        {"candidates": [GOOD, {**FAIR, "text": "Follow the link, quality 2."}, DECOY]},
    ):
        other = {**three, **change}
        fs = FixtureSet(
            name="s",
            version="1",
            fixtures=[RankingFixture.model_validate(pair), RankingFixture.model_validate(other)],
        )
        assert context_sensitivity(fs, orders) == [], change
    # candidates are matched by their text, not their id
    renamed = {
        **three,
        "candidates": [{**GOOD, "id": "g2"}, {**FAIR, "id": "f2"}, DECOY],
        "expected_order": ["g2", "f2", "decoy"],
    }
    fs = FixtureSet(
        name="s",
        version="1",
        fixtures=[RankingFixture.model_validate(pair), RankingFixture.model_validate(renamed)],
    )
    [found] = context_sensitivity(
        fs, {"pw-pair": [["good", "fair"]], "pw-three": [["f2", "g2", "decoy"]]}
    )
    assert found.winner_alone == "good" and found.larger == "pw-three"


def test_an_anchored_judge_is_a_review_item_naming_both_fixtures(tmp_path: Path) -> None:
    path = write_fixtures(tmp_path / "iia@1.yaml", related())
    spec = function_spec(tmp_path / "spec", "test_ranking_checks:anchored_ranker", name="anchored")
    run(spec, path, tmp_path / "run", repeats=1)
    report = report_of(path, tmp_path / "run")
    [found] = report.context_sensitivity
    # pair: 2 permutations + 1 repeat, good first in all 3; three-way: 6 + 1, fair above good in all
    assert (found.alone.k, found.alone.n, found.together.k, found.together.n) == (3, 3, 0, 7)
    [b] = [b for b in report.gate.blockers if b.code == "ranking_context_sensitive"]
    assert b.category == "review" and b.case_ids == ["pw-pair", "pw-three"]
    assert report.gate.outcome == "review_required"  # the monitor-only drift is review too
    steady = function_spec(tmp_path / "spec2", "test_ranking_checks:steady_ranker", name="steady")
    run(steady, path, tmp_path / "run2", repeats=1)
    calm = report_of(path, tmp_path / "run2")
    assert calm.context_sensitivity == [] and calm.passed
    out = CliRunner().invoke(
        ranking_command,
        ["run", "--results", str(tmp_path / "run" / "results.jsonl"), "--fixtures", str(path)],
    )
    assert "ranking_context_sensitive" in out.output and "pw-pair / pw-three" in out.output


# -- 3. prompt defects in the deterministic lane ---------------------------------------------------


@pytest.mark.parametrize(
    ("prompt", "missing"),
    [
        ("Q: {user_input}\n{candidates}", ["context"]),
        ("<policy>{context}</policy>\n{candidates}", ["user_input"]),
        ("Q: {user_input}\n<policy>{context}</policy>\nRank them.", ["candidates"]),
        ("Rank them.", ["user_input", "context", "candidates"]),
    ],
)
def test_a_ranker_prompt_that_drops_a_placeholder_is_refused_before_any_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prompt: str, missing: list[str]
) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key-123456")
    # port 9 (discard): a call would fail as a provider error, not as this refusal
    with pytest.raises(WorkbenchError) as info:
        load_candidate(llm_spec(tmp_path, "http://127.0.0.1:9/v1", prompt=prompt))
    found = [p for p in info.value.problems if p.code == "prompt_placeholder_missing"]
    assert [p.message.split("{")[1].split("}")[0] for p in found] == missing
    assert all("add {" in p.fix for p in found)


def test_ci_contracts_refuses_the_defective_ranker_offline(tmp_path: Path) -> None:
    from workbench.cli.main import main as cli

    project = tmp_path / "proj"
    (project / "data" / "candidates").mkdir(parents=True)
    (project / "workbench.yaml").write_text("schema_version: 1\napprovers: [Ann]\n")
    spec = llm_spec(project / "data" / "candidates", "http://127.0.0.1:9/v1", prompt="{candidates}")
    out = CliRunner().invoke(
        cli, ["ci", "contracts", "--project", str(project), "--out", str(tmp_path / "ci")]
    )
    assert out.exit_code != 0, out.output
    assert "prompt_placeholder_missing" in out.output and spec.name in out.output


# -- 4. allowed_values ---------------------------------------------------------------------------


def test_allowed_values_is_the_candidate_count_in_every_record(tmp_path: Path) -> None:
    path = write_fixtures(tmp_path / "av@1.yaml", [fixture("two", n=2), fixture("four", n=4)])
    spec = function_spec(tmp_path / "spec", "test_ranking_checks:steady_ranker")
    run(spec, path, tmp_path / "run", repeats=0, max_exhaustive=2, sample=2)
    rows = [r.result for r in read_results(tmp_path / "run" / "results.jsonl")]
    assert {(r.case_id, r.presentation["allowed_values"]) for r in rows} == {
        ("two", 2),
        ("four", 4),
    }
    battery = json.loads((tmp_path / "run" / "battery.json").read_text())
    assert battery["allowed_values"] == {"two": 2, "four": 4}
    report = report_of(path, tmp_path / "run")
    assert report.allowed_values == {"two": 2, "four": 4} and report.passed


def test_an_allowed_values_mismatch_is_refused(tmp_path: Path) -> None:
    path = write_fixtures(tmp_path / "av@1.yaml", [fixture("three", n=3)])
    spec = function_spec(tmp_path / "spec", "test_ranking_checks:steady_ranker")
    # the judge refuses a presentation whose allowed_values is not its candidate count
    items = position_battery(path, max_exhaustive=0, sample=1, repeats=0)
    bad = [
        dataclasses.replace(i, presentation={**(i.presentation or {}), "allowed_values": 2})
        for i in items
    ]
    run(spec, path, tmp_path / "run", items=bad)
    [row] = [r.result for r in read_results(tmp_path / "run" / "results.jsonl")]
    assert row.error is not None and "allowed_values_mismatch" in row.error.message
    assert row.order is None  # refused before the metric ran
    # a result recording another count is an integration defect (blocks, never waivable)
    run(spec, path, tmp_path / "ok", repeats=0, max_exhaustive=0, sample=1)
    [good] = [r.result for r in read_results(tmp_path / "ok" / "results.jsonl")]
    edited = good.model_copy(update={"presentation": {**good.presentation, "allowed_values": 2}})
    report = ranking_report(path, [edited])
    assert [d.code for d in report.integration_defects] == ["allowed_values_mismatch"]
    assert "ranking_integration_defect" in [b.code for b in report.gate.blockers]
    assert report.failures == [] or report.failures[0].allowed_values == 2


# -- 2. a changed candidate: the text diff and the application owner ----------------------------


def _changed(tmp_path: Path) -> tuple[Path, Path]:
    """The run's fixture file, and a file where the application changed one candidate's text."""
    v1 = fixture("reset", n=3)
    v2 = json.loads(json.dumps(v1))
    v2["candidates"][1]["text"] = "Answer 2 of reset, <b>now with a menu & a link</b>, quality 2."
    return write_fixtures(tmp_path / "app@1.yaml", [v1]), write_fixtures(
        tmp_path / "app@2.yaml", [v2]
    )


def test_a_changed_candidate_gives_the_application_owner_a_text_diff(tmp_path: Path) -> None:
    from test_ranking_process import policy

    from workbench.ranking import ranking_html

    ran, changed = _changed(tmp_path)
    spec = function_spec(tmp_path / "spec", "test_ranking_checks:steady_ranker")
    run(spec, ran, tmp_path / "run", repeats=0, max_exhaustive=0, sample=1)
    report = report_of(changed, tmp_path / "run", policy=policy())
    [artifact] = report.failures
    assert (artifact.diagnosis, artifact.owner, artifact.owners["application"]) == (
        "candidates_changed",
        "application",
        "app team",
    )
    assert artifact.judged_candidates_sha256 != artifact.source_candidates_sha256
    [d] = artifact.candidate_diff
    assert (d.field, d.change) == ("candidate cand-2", "edited")
    assert d.diff.splitlines() == [
        "--- candidate cand-2 (judged)",
        "+++ candidate cand-2 (frozen fixture)",
        "@@ -1 +1 @@",
        "-Answer 2 of reset, quality 2.",
        "+Answer 2 of reset, <b>now with a menu & a link</b>, quality 2.",
    ]
    page = ranking_html(report)
    assert "&lt;b&gt;now with a menu &amp; a link&lt;/b&gt;" in page and "<b>now" not in page
    # the artifact file the run directory keeps, and the text report
    from workbench.ranking import format_ranking, write_ranking_artifacts

    write_ranking_artifacts(report, tmp_path / "out")
    saved = json.loads((tmp_path / "out" / "failures" / "reset.json").read_text())
    assert saved["candidate_diff"][0]["diff"] == d.diff and saved["owner"] == "application"
    assert "+Answer 2 of reset, <b>now with a menu" in format_ranking(report)


def test_the_diff_reads_an_llm_prompt_and_says_when_the_text_was_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_ranking import quality_responder

    from workbench.ranking import CaptureConfig
    from workbench.testing import FakeLLM

    monkeypatch.setenv(KEY_ENV, "sk-test-ranking-not-a-real-key")
    ran, changed = _changed(tmp_path)
    with FakeLLM(responder=quality_responder) as llm:
        spec = llm_spec(tmp_path / "spec", llm.base_url)
        run(spec, ran, tmp_path / "full", repeats=0, max_exhaustive=0, sample=1)
        private = CaptureConfig(mode="digest_and_excerpts", excerpts=["context"])
        run(spec, ran, tmp_path / "priv", repeats=0, max_exhaustive=0, sample=1, capture=private)
    [artifact] = report_of(changed, tmp_path / "full").failures
    assert [(d.field, d.change) for d in artifact.candidate_diff] == [
        ("candidate cand-2", "edited")
    ]
    assert "-Answer 2 of reset, quality 2." in artifact.candidate_diff[0].diff
    [kept_back] = report_of(changed, tmp_path / "priv").failures
    assert [(d.field, d.change, d.diff) for d in kept_back.candidate_diff] == [
        ("candidates", "unavailable", "")
    ]
    assert kept_back.diagnosis == "candidates_changed" and kept_back.owner == "application"


# -- 5. one change per release, the drift jobs, the scalar gate's retirement ---------------------

ROOT = Path(__file__).resolve().parents[1]
DEMO_POLICY = ROOT / "data" / "policies" / "support-ranking-release@1.yaml"
APPROVER = "S. Lindqvist (support quality lead)"


def _cli(*args: str) -> Any:
    from workbench.cli.main import main as cli

    return CliRunner().invoke(cli, ["ranking", *args])


def _run_args(spec: Path, fixtures: Path, out: Path, history: Path, *more: str) -> list[str]:
    return [
        "run",
        "--candidate", str(spec),
        "--fixtures", str(fixtures),
        "--out", str(out),
        "--history", str(history),
        "--no-progress", "--no-cache",
        "--repeats", "0", "--max-exhaustive", "0", "--sample", "1",
        *more,
    ]  # fmt: skip


def test_one_change_per_release_and_the_drift_jobs(tmp_path: Path) -> None:
    ran, changed = _changed(tmp_path)
    old = function_spec(tmp_path / "a", "test_ranking_checks:steady_ranker", name="steady")
    new = function_spec(tmp_path / "b", "test_ranking_checks:anchored_ranker", name="steady-b")
    history = tmp_path / "history.jsonl"
    first = _cli(*_run_args(old, ran, tmp_path / "r1", history))
    assert first.exit_code == 0, first.output
    # both the candidates and the judge changed since the passing run: refused before any call
    both = _cli(*_run_args(new, changed, tmp_path / "r2", history))
    assert both.exit_code == 2 and "two_changes_in_one_release" in both.output, both.output
    flat = " ".join(both.output.split())
    assert "candidates of 1 fixture(s) changed (reset)" in flat
    assert "the judge changed (steady@1" in flat and "-> steady-b@1" in flat
    assert not (tmp_path / "r2").exists()
    # a generation-drift job holds the judge; an evaluator-drift job holds the candidates
    gen = _cli(*_run_args(new, ran, tmp_path / "r3", history, "--job", "generation"))
    assert gen.exit_code == 2 and "generation_job_judge_changed" in gen.output
    ev = _cli(*_run_args(old, changed, tmp_path / "r4", history, "--job", "evaluator"))
    assert ev.exit_code == 2 and "evaluator_job_candidates_changed" in ev.output
    assert not (tmp_path / "r3").exists() and not (tmp_path / "r4").exists()
    # one change at a time passes the rule, and the history records which
    ok = _cli(*_run_args(old, changed, tmp_path / "r5", history, "--job", "generation"))
    assert ok.exit_code == 0, ok.output
    lines = [json.loads(x) for x in history.read_text().splitlines()]
    assert [(x["change"], x["job"]) for x in lines] == [
        ("first", None),
        ("generation", "generation"),
    ]
    assert (
        lines[1]["cases"]["reset"]["candidates_sha256"]
        != lines[0]["cases"]["reset"]["candidates_sha256"]
    )


def test_the_scalar_gate_is_retired_on_record_only_when_the_seed_conditions_hold(
    tmp_path: Path,
) -> None:
    ran, _ = _changed(tmp_path)
    spec = function_spec(tmp_path / "a", "test_ranking_checks:steady_ranker", name="steady")
    history = tmp_path / "history.jsonl"
    scalar = tmp_path / "scalar.jsonl"
    scalar.write_text(json.dumps({"case_id": "reset", "passed": True, "score": 4.0}) + "\n")
    retire = [
        "retire-scalar", "--fixtures", str(ran), "--policy", str(DEMO_POLICY),
        "--history", str(history), "--reason", "ranking matched reviewers in 3 weeks",
    ]  # fmt: skip
    early = _cli(*retire, "--approver", "Nobody", "--escape-path", " ")
    assert early.exit_code == 2
    for code in ("retirement_no_side_by_side", "approver_unknown", "retirement_no_escape_path"):
        assert code in early.output, early.output
    assert not history.exists()
    side = _cli(*_run_args(spec, ran, tmp_path / "r1", history, "--scalar", str(scalar)))
    assert side.exit_code == 0, side.output
    escape = "workbench override add --policy support-ranking-release@1, owner: evaluation"
    done = _cli(*retire, "--approver", APPROVER, "--escape-path", escape, "--json")
    assert done.exit_code == 0, done.output
    record = json.loads(history.read_text().splitlines()[-1])
    assert record["kind"] == "workbench.ranking.scalar_retired" and record["approver"] == APPROVER
    assert record["side_by_side_runs"] == 1 and record["escape_path"] == escape
    assert "0.028" in record["calibration"] and set(record["owners"]) == {
        "application",
        "evaluation",
        "platform",
        "domain_reviewer",
    }
    # the history still reads as runs; --scalar is refused from now on; no second retirement
    again = _cli(*_run_args(spec, ran, tmp_path / "r2", history, "--scalar", str(scalar)))
    assert again.exit_code == 2 and "scalar_retired" in again.output
    assert _cli(*_run_args(spec, ran, tmp_path / "r3", history)).exit_code == 0
    twice = _cli(*retire, "--approver", APPROVER, "--escape-path", escape)
    assert twice.exit_code == 2 and "already retired" in twice.output


def _notebook_flow(spec: Path, fixtures: Path, out: Path, history: Path, **gate: Any) -> Any:
    """What notebooks/04_ranking.ipynb does: run -> ranking_report -> record_run, no CLI."""
    from workbench.ranking import load_fixtures, read_history, record_run

    fixture_set = load_fixtures(fixtures)
    summary = run(spec, fixture_set, out, repeats=0, max_exhaustive=0, sample=1)
    report = ranking_report(
        fixture_set, summary.results_path, history=read_history(history), **gate
    )
    return record_run(history, report, fixture_set)


def test_a_script_cannot_record_a_release_that_changes_candidates_and_judge(
    tmp_path: Path,
) -> None:
    ran, changed = _changed(tmp_path)
    old = function_spec(tmp_path / "a", "test_ranking_checks:steady_ranker", name="steady")
    new = function_spec(tmp_path / "b", "test_ranking_checks:anchored_ranker", name="steady-b")
    history = tmp_path / "history.jsonl"
    first = _notebook_flow(old, ran, tmp_path / "r1", history)
    assert (first.outcome, first.change) == ("passed", "first")
    before = history.read_bytes()
    with pytest.raises(WorkbenchError) as refused:
        _notebook_flow(new, changed, tmp_path / "r2", history)
    assert [p.code for p in refused.value.problems] == ["two_changes_in_one_release"]
    assert history.read_bytes() == before  # nothing appended
    # one change at a time is recorded, with the change the library decided
    second = _notebook_flow(old, changed, tmp_path / "r3", history)
    assert (second.job, second.change) == (None, "generation")
    assert len(history.read_bytes().splitlines()) == 2


def test_a_script_cannot_gate_or_record_with_a_retired_scalar(tmp_path: Path) -> None:
    from workbench.ranking import (
        load_fixtures,
        load_ranking_policy,
        read_history,
        read_scalar,
        record_run,
        retire_scalar,
    )

    ran, _ = _changed(tmp_path)
    spec = function_spec(tmp_path / "a", "test_ranking_checks:steady_ranker", name="steady")
    history = tmp_path / "history.jsonl"
    scalar = tmp_path / "scalar.jsonl"
    scalar.write_text(json.dumps({"case_id": "reset", "passed": True, "score": 4.0}) + "\n")
    rows = read_scalar(scalar)
    assert _notebook_flow(spec, ran, tmp_path / "r1", history, scalar=rows).scalar_compared == 1
    escape = "workbench override add --policy support-ranking-release@1, owner: evaluation"
    retire_scalar(
        history, "app", load_ranking_policy(DEMO_POLICY), approver=APPROVER,
        reason="ranking matched reviewers", escape_path=escape,
    )  # fmt: skip
    before = history.read_bytes()
    # the notebook's flow (history read as runs) is refused where the evidence is recorded
    with pytest.raises(WorkbenchError) as refused:
        _notebook_flow(spec, ran, tmp_path / "r2", history, scalar=rows)
    assert [p.code for p in refused.value.problems] == ["scalar_retired"]
    assert history.read_bytes() == before
    # given the history log, the gate itself refuses the retired scalar
    fixture_set = load_fixtures(ran)
    results = tmp_path / "r2" / "results.jsonl"
    with pytest.raises(WorkbenchError) as gated:
        ranking_report(fixture_set, results, history=history, scalar=rows)
    assert [p.code for p in gated.value.problems] == ["scalar_retired"]
    # without the scalar the run gates and records as before
    report = ranking_report(fixture_set, results, history=history)
    assert report.gate is not None and report.gate.side_by_side is None
    assert record_run(history, report, fixture_set).scalar_compared is None
    assert len(read_history(history)) == 2


@pytest.mark.parametrize(
    "name", ["ContextSensitivity", "CandidateDiff", "ReleaseChange", "ScalarRetirement"]
)
def test_every_new_field_is_documented(name: str) -> None:
    from conftest import undocumented_fields

    import workbench.ranking as r

    model = getattr(r, name)
    doc = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    assert [n for n in model.model_fields if f"`{n}`" not in doc and f"{n}:" not in doc] == []
    assert undocumented_fields(model, "schema_version") == []
