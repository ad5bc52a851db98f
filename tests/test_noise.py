"""Noise sensitivity: pair validation, the ragas-noise kind through FakeLLM, controls first, the
gate.

Every model call goes to ``workbench.testing.FakeLLM`` on 127.0.0.1; scripted answers follow
the exact call sequence of Ragas' collections ``NoiseSensitivity`` (0.4.3):
reference statements, response statements, then per context (reference statements vs
context, response statements vs context), then response statements vs the reference.
"""

from __future__ import annotations

import asyncio
import copy
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from _datasets import dataset_path, missing_reason, needs_datasets
from click.testing import CliRunner
from noise_support import (  # noqa: F401
    CTX_POLICY,
    GEN,
    IDENTITY,
    KEY_ENV,
    PRICING,
    REF_POLICY,
    api_key,
    pair,
    result,
    suite_dict,
    write_spec,
    write_suite,
)
from pydantic import ValidationError

from workbench.cli.noise import noise as noise_command
from workbench.demo.noise import DEMO_NOISE_URL_ENV, parse_prompt
from workbench.demo.noise import respond as demo_respond
from workbench.errors import WorkbenchError
from workbench.judges import available_kinds, load_candidate
from workbench.noise import (
    DIRECTION,
    NoiseInput,
    calls_per_score,
    format_noise,
    load_pairs,
    noise_report,
    run_noise_sync,
    validate_pairs,
)
from workbench.results import read_results
from workbench.testing import ChatRequest, FakeLLM, Reply

ROOT = Path(__file__).resolve().parents[1]
DEMO_PAIRS = ROOT / "data" / "noise" / "support-noise@2.yaml"
DEMO_COMPANIONS = ROOT / "data" / "noise" / "support-noise@2.companions.jsonl"
DEMO_CANDIDATE = ROOT / "data" / "candidates" / "noise-judge@1.yaml"
BEGIN_TSV = dataset_path("begin", "begin_dev_wow.tsv")
CANDIDATE_MARKER = "CANDIDATE-ONLY-7f3a"


pytestmark = pytest.mark.usefixtures("api_key")


# -- validation ----------------------------------------------------------------------------------


def test_demo_suite_and_candidate_are_valid() -> None:
    suite, problems = validate_pairs(DEMO_PAIRS)
    assert suite is not None and problems == []
    assert {p.mode for p in suite.controls()} == {"relevant", "irrelevant"}
    assert (
        len(suite.controls()) >= 4
        and 8 <= len(suite.candidates()) <= 12
        and 3 <= len(suite.slices) <= 4
    )
    assert all(limit.direction == DIRECTION == "lower_is_better" for limit in suite.slices.values())
    assert all(
        p.expected_relation
        == {
            "control": "noisy_worse_than_clean",
            "adversarial": "noisy_worse_than_clean",
            "reference_defect": "not_punished",
            "candidate": "noisy_not_worse",
        }[p.role]
        for p in suite.pairs
    )
    assert {p.role for p in suite.controls()} == {"control", "adversarial", "reference_defect"}
    spec = yaml.safe_load(DEMO_CANDIDATE.read_text())
    assert spec["kind"] == "ragas-noise" and "ragas-noise" in available_kinds()
    # The demo model binds a free port and exports its URL; the spec reads it from the environment.
    assert (
        spec["endpoint"]["base_url_env"] == DEMO_NOISE_URL_ENV == "WORKBENCH_DEMO_NOISE_URL"
        and spec["endpoint"]["api_key_env"] == "DEMO_LLM_API_KEY"
    )


def test_validation_reports_every_problem_at_once(tmp_path: Path) -> None:
    good = pair("ok-1")
    missing_field = pair("missing-field")
    del missing_field["user_input"]
    empty_ctx = pair("empty-ctx")
    empty_ctx["clean"]["retrieved_contexts"] = []
    empty_ctx["noisy"]["retrieved_contexts"] = ["Archived draft."]
    empty_ctx["noisy"]["distractor"]["index"] = 0
    unknown_mode = pair("unknown-mode", mode="sideways")
    no_mode = pair("no-mode")
    del no_mode["mode"]
    mismatch = pair("member-mismatch")
    mismatch["noisy"]["user_input"] = "A different question?"
    mismatch["clean"]["generator"] = {**GEN, "model": "answerer-2"}
    out_of_range = pair("index-out")
    out_of_range["noisy"]["distractor"]["index"] = 5
    two_changes = pair("two-changes")
    two_changes["noisy"]["retrieved_contexts"].append("Another extra passage.")
    nothing_replaced = pair("nothing-replaced")
    nothing_replaced["noisy"]["retrieved_contexts"] = [CTX_POLICY]
    nothing_replaced["noisy"]["distractor"] = {"index": 0, "label": "x", "change": "replace"}
    unapproved = pair("unapproved")
    unapproved["reference_version"] = "draft-v9"
    duplicate = pair("ok-1")
    relevant_candidate = pair("rel-cand", mode="relevant")  # no relevant-mode control
    unknown_slice = pair("unknown-slice", slice="nowhere")
    control = pair("ctl-1", role="control")
    data = suite_dict(
        [
            good,
            missing_field,
            empty_ctx,
            unknown_mode,
            no_mode,
            mismatch,
            out_of_range,
            two_changes,
            nothing_replaced,
            unapproved,
            duplicate,
            relevant_candidate,
            unknown_slice,
            control,
        ],
        refunds={"max_score": 0.0},  # direction missing
    )
    path = write_suite(tmp_path, data)
    with pytest.raises(WorkbenchError) as info:
        load_pairs(path)
    problems = info.value.problems
    by_code: dict[str, list[Any]] = {}
    for p in problems:
        by_code.setdefault(p.code, []).append(p)
    expected = {
        "field_missing": "missing-field",
        "contexts_empty": "empty-ctx",
        "mode_unknown": "unknown-mode",
        "mode_missing": "no-mode",
        "member_mismatch": "member-mismatch",
        "distractor_index_out_of_range": "index-out",
        "reference_unapproved": "unapproved",
        "pair_id_duplicate": "ok-1",
        "slice_unknown": "unknown-slice",
    }
    for code, case_id in expected.items():
        assert code in by_code, code
        assert any(p.case_id == case_id for p in by_code[code]), (code, by_code[code])
    assert {p.case_id for p in by_code["pair_membership_broken"]} == {
        "two-changes",
        "nothing-replaced",
    }
    assert len(by_code["member_mismatch"]) == 2  # the question and the generator
    assert "direction_missing" in by_code and "controls_missing" in by_code
    assert "relevant" in by_code["controls_missing"][0].message
    # every problem has a file:line location and a fix
    assert all(p.location.startswith(f"{path}:") and p.fix for p in problems)
    dup = by_code["pair_id_duplicate"][0]
    assert "pairs[0]" in dup.message and "pairs[10]" in dup.location
    # the one valid pair raised nothing; the error message counts everything
    assert not any(p.case_id == "ctl-1" for p in problems)
    assert f"{len(problems)} problem(s)" in info.value.summary


def test_controls_must_separate_by_construction_and_relations_follow_roles(tmp_path: Path) -> None:
    same = pair("ctl-same", role="control", noisy_response=REF_POLICY)
    wrong_relation = pair("cand-rel")
    wrong_relation["expected_relation"] = "noisy_worse_than_clean"
    path = write_suite(tmp_path, suite_dict([same, wrong_relation, pair("ctl-ok", role="control")]))
    with pytest.raises(WorkbenchError) as info:
        load_pairs(path)
    codes = {(p.code, p.case_id) for p in info.value.problems}
    assert ("control_response_unchanged", "ctl-same") in codes and (
        "relation_role_mismatch",
        "cand-rel",
    ) in codes


def test_mode_is_mandatory_and_never_comes_from_the_candidate(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as missing:
        NoiseInput(user_input="q", response="r", reference="ref", retrieved_contexts=["c"])  # type: ignore[call-arg]
    assert [(e["loc"], e["type"]) for e in missing.value.errors()] == [(("mode",), "missing")]
    spec = write_spec(
        tmp_path / "a", "http://127.0.0.1:9/v1", params={"mode": "relevant"}, prompt="{response}"
    )
    with pytest.raises(WorkbenchError) as info:
        load_candidate(spec)
    assert {"mode_in_spec", "prompt_not_allowed"} <= {p.code for p in info.value.problems}


# -- the LLM path: exact call sequence and the formula ------------------------------------------

REF = "Reference claim alpha. Reference claim beta."
RESP = "Answer claim one. Answer claim two. Answer claim three. Answer claim four."
C1, C2 = "First retrieved passage.", "Second retrieved passage."
DECOMPOSE = {REF: ["R-alpha", "R-beta"], RESP: ["S1", "S2", "S3", "S4"]}
SUPPORT = {
    (C1, "R-alpha"): 1,
    (C1, "R-beta"): 0,  # C1 supports a reference statement: relevant
    (C2, "R-alpha"): 0,
    (C2, "R-beta"): 0,  # C2 supports none: irrelevant
    (C1, "S1"): 1,
    (C1, "S2"): 1,
    (C1, "S3"): 0,
    (C1, "S4"): 0,
    (C2, "S1"): 0,
    (C2, "S2"): 1,
    (C2, "S3"): 1,
    (C2, "S4"): 1,
    (REF, "S1"): 1,
    (REF, "S2"): 0,
    (REF, "S3"): 0,
    (REF, "S4"): 0,  # S2..S4 are incorrect
}


def scripted(request: ChatRequest) -> Reply:
    kind, data = parse_prompt(request.prompt)
    if kind == "statements":
        return Reply(content=json.dumps({"statements": DECOMPOSE[data["answer"]]}))
    verdicts = [
        {"statement": s, "reason": "scripted", "verdict": SUPPORT[(data["context"], s)]}
        for s in data["statements"]
    ]
    return Reply(content=json.dumps({"statements": verdicts}))


@pytest.mark.parametrize(("mode", "expected"), [("relevant", 0.25), ("irrelevant", 0.5)])
def test_score_matches_the_formula_by_hand(tmp_path: Path, mode: str, expected: float) -> None:
    """By hand: C1 is relevant (supports R-alpha), C2 irrelevant. Incorrect (not supported by the
    reference): S2, S3, S4. Supported by a relevant context: S1, S2. Supported only by an
    irrelevant context: S3, S4 (S2 is excluded: C1 also supports it).
    relevant = |{S2}| / 4 = 0.25; irrelevant = |{S3, S4}| / 4 = 0.5."""
    with FakeLLM(responder=scripted) as fake:
        judge = load_candidate(write_spec(tmp_path, fake.base_url))

        async def score() -> Any:
            try:
                return await judge.evaluate(
                    NoiseInput(
                        user_input="Q?",
                        response=RESP,
                        reference=REF,
                        retrieved_contexts=[C1, C2],
                        mode=mode,
                    ),
                    None,
                )
            finally:
                await judge.aclose()

        verdict = asyncio.run(score())
        calls = fake.calls
    assert verdict.error is None and verdict.value is None
    assert verdict.score == pytest.approx(expected)
    sequence = [
        (k, d.get("answer") or d.get("context"))
        for k, d in (
            parse_prompt(str(c.body and "\n\n".join(m["content"] for m in c.body["messages"])))
            for c in calls
        )
    ]
    assert sequence == [
        ("statements", REF),
        ("statements", RESP),
        ("verdicts", C1),
        ("verdicts", C1),
        ("verdicts", C2),
        ("verdicts", C2),
        ("verdicts", REF),
    ]
    assert len(calls) == calls_per_score(2) == 7
    # every request of the score is captured: the first plus six follow-ups
    assert len(verdict.rendered_request["follow_up_requests"]) == 6
    assert verdict.tokens_in and verdict.tokens_out
    assert (
        f"{int(expected * 4)} of 4 response statements" in verdict.reason
        and "lower is better" in verdict.reason
    )


def test_invalid_score_becomes_an_evaluator_error(tmp_path: Path) -> None:
    def no_response_statements(request: ChatRequest) -> Reply:
        kind, data = parse_prompt(request.prompt)
        if kind == "statements":
            return Reply(
                content=json.dumps(
                    {"statements": ["R-alpha"] if data["answer"] == REF_POLICY else []}
                )
            )
        return Reply(
            content=json.dumps(
                {
                    "statements": [
                        {"statement": s, "reason": "r", "verdict": 1} for s in data["statements"]
                    ]
                }
            )
        )

    with FakeLLM(responder=no_response_statements) as fake:
        judge = load_candidate(write_spec(tmp_path, fake.base_url))
        verdict = asyncio.run(
            judge.evaluate(
                NoiseInput(
                    user_input="Q?",
                    response="Something.",
                    reference=REF_POLICY,
                    retrieved_contexts=[CTX_POLICY],
                    mode="relevant",
                ),
                None,
            )
        )
    assert verdict.score is None and verdict.error is not None
    assert (
        verdict.error.kind == "invalid_score"
        and "nan" in verdict.error.message.lower()
        and not verdict.retryable
    )

    class _Metric:
        decomposed: list[list[str]] = [["a"], ["b"]]
        answers = None

    class _Result:
        def __init__(self, value: Any) -> None:
            self.result = type("R", (), {"value": value})()
            self.metric = _Metric()

    from workbench.judges import Exchange

    for bad in (1.5, -0.1, math.inf, None, "high"):
        v = judge._interpret(_Result(bad), Exchange(), None, None)
        assert v.error is not None and v.error.kind == "invalid_score" and v.score is None, bad
    assert (
        judge._interpret(
            _Result(1.0),
            Exchange(),
            NoiseInput(
                user_input="q",
                response="r",
                reference="f",
                retrieved_contexts=["c"],
                mode="relevant",
            ),
            None,
        ).score
        == 1.0
    )


def test_unusable_answers_are_unparseable_not_scores(tmp_path: Path) -> None:
    def too_few_verdicts(request: ChatRequest) -> Reply:
        kind, data = parse_prompt(request.prompt)
        if kind == "statements":
            return Reply(content=json.dumps({"statements": ["a", "b"]}))
        return Reply(
            content=json.dumps({"statements": [{"statement": "a", "reason": "r", "verdict": 1}]})
        )

    with FakeLLM(responder=too_few_verdicts) as fake:
        judge = load_candidate(write_spec(tmp_path, fake.base_url))
        verdict = asyncio.run(
            judge.evaluate(
                NoiseInput(
                    user_input="Q?",
                    response="x",
                    reference="y",
                    retrieved_contexts=["c"],
                    mode="irrelevant",
                ),
                None,
            )
        )
    assert (
        verdict.error is not None
        and verdict.error.kind == "unparseable"
        and "1 faithfulness verdicts for 2 statements" in verdict.error.message
    )


# -- runs: controls first, records, resume -----------------------------------------------------


def small_suite(tmp_path: Path) -> Path:
    cand = pair(
        "cand-1",
        clean_response=f"{REF_POLICY}",
        distractor=f"{CANDIDATE_MARKER} Refunds are possible within 90 days.",
    )
    cand["noisy"]["response"] = (  # adopts the distractor
        f"{REF_POLICY} {CANDIDATE_MARKER} Refunds are possible within 90 days."
    )
    return write_suite(
        tmp_path,
        suite_dict(
            [pair("ctl-1", role="control"), cand],
            refunds={"max_score": 0.5, "direction": "lower_is_better"},
        ),
        freeze=True,
    )


def test_a_control_that_does_not_separate_stops_before_any_candidate_call(tmp_path: Path) -> None:
    def everything_supported(request: ChatRequest) -> Reply:
        kind, data = parse_prompt(request.prompt)
        if kind == "statements":
            return Reply(content=json.dumps({"statements": [data["answer"]]}))
        return Reply(
            content=json.dumps(
                {
                    "statements": [
                        {"statement": s, "reason": "r", "verdict": 1} for s in data["statements"]
                    ]
                }
            )
        )

    suite = load_pairs(small_suite(tmp_path))
    with FakeLLM(responder=everything_supported) as fake:
        judge = load_candidate(write_spec(tmp_path / "spec", fake.base_url))
        run = run_noise_sync(judge, suite, tmp_path / "run", progress=False)
        calls = fake.calls
    assert calls and not any(CANDIDATE_MARKER in json.dumps(c.body) for c in calls)
    assert (
        run.candidates is None and not run.controls_passed and "ctl-1" in (run.stopped_reason or "")
    )
    assert not (tmp_path / "run" / "candidates").exists()
    assert [c.status for c in run.control_checks] == ["not_separated"]
    report = noise_report(suite, run)
    assert report.outcome == "evaluation_incomplete" and report.exit_code == 3
    assert [b.code for b in report.blockers] == ["noise_controls_failed"] and not report.blockers[
        0
    ].waivable
    assert report.pairs[0].status == "not_interpreted" and report.pairs[0].noisy_score is None
    assert report.direction == "lower_is_better"


def test_run_records_every_request_tokens_and_cost_then_resumes_with_zero_calls(
    tmp_path: Path,
) -> None:
    suite = load_pairs(small_suite(tmp_path))
    with FakeLLM(responder=demo_respond) as fake:
        judge = load_candidate(write_spec(tmp_path / "spec", fake.base_url))
        run = run_noise_sync(judge, suite, tmp_path / "run", cache_dir=False, progress=False)
        first = fake.call_count
        again = run_noise_sync(judge, suite, tmp_path / "run", cache_dir=False, progress=False)
        assert fake.call_count == first  # resume: settled members are not called again
        run_noise_sync(judge, suite, tmp_path / "run2", progress=False)  # fills the verdict cache
        after_cache_fill = fake.call_count
        cached_again = run_noise_sync(judge, suite, tmp_path / "run3", progress=False)
        assert (
            fake.call_count == after_cache_fill
        )  # a new directory, same candidate: all from the cache
    assert run.controls_passed and run.candidates is not None
    assert (
        first
        == sum(
            calls_per_score(len(p.member(m).retrieved_contexts))
            for p in suite.pairs
            for m in ("clean", "noisy")
        )
        == 24
    )
    assert (
        again.controls.calls == 0 and again.candidates.calls == 0 and again.candidates.resumed == 2
    )  # type: ignore[union-attr]
    assert (
        cached_again.controls.calls == 0
        and cached_again.controls.cache_hits == 2
        and cached_again.candidates.calls == 0
    )  # type: ignore[union-attr]
    rows = [line.result for path in run.results_paths() for line in read_results(path)]
    assert len(rows) == 4 and all(
        r.error is None and r.value is None and r.score is not None for r in rows
    )
    for r in rows:
        n_ctx = len(
            suite.pair(r.case_id.split(":")[0]).member(r.presentation["member"]).retrieved_contexts
        )
        assert r.presentation == {
            "member": r.case_id.split(":")[1],
            "mode": "irrelevant",
            "pair_id": r.case_id.split(":")[0],
        }
        assert len(r.rendered_request["follow_up_requests"]) == calls_per_score(n_ctx) - 1
        assert r.tokens_in > 0 and r.tokens_out > 0
        assert r.cost_usd == pytest.approx(
            (
                r.tokens_in * PRICING["input_per_million_usd"]
                + r.tokens_out * PRICING["output_per_million_usd"]
            )
            / 1e6
        )
        assert (
            r.judge.kind == "ragas-noise"
            and r.judge.params["metric"] == "ragas.metrics.collections.NoiseSensitivity"
        )
    report = noise_report(suite, run)
    assert report.cost_usd == pytest.approx(run.controls.cost_usd + run.candidates.cost_usd)
    assert report.tokens_in == sum(r.tokens_in for r in rows)
    pair_row = report.pairs[0]
    assert (
        pair_row.clean_score == 0.0
        and pair_row.noisy_score == pytest.approx(0.5)
        and pair_row.delta == pytest.approx(0.5)
    )
    assert (
        pair_row.relation_held is False and pair_row.within_limit is True
    )  # a delta reported inside policy
    assert report.outcome == "passed" and report.exit_code == 0


def test_budget_reached_before_the_controls_is_incomplete(tmp_path: Path) -> None:
    suite = load_pairs(small_suite(tmp_path))
    with FakeLLM(responder=demo_respond) as fake:
        judge = load_candidate(write_spec(tmp_path / "spec", fake.base_url))
        run = run_noise_sync(judge, suite, tmp_path / "run", budget_usd=0.0, progress=False)
        assert fake.call_count == 0
    report = noise_report(suite, run)
    assert run.candidates is None and report.outcome == "evaluation_incomplete"
    # cut by the budget: "not run (budget)", never "did not separate"
    assert {b.code for b in report.blockers} == {"noise_controls_not_run", "budget_exhausted"}
    assert [c.status for c in report.controls] == ["not_run"] and report.controls[
        0
    ].detail == "not run (budget)"
    assert all("did not separate" not in b.message for b in report.blockers)
    assert "not run (budget)" in format_noise(report) and "did not separate" not in format_noise(
        report
    )


# -- the gate --------------------------------------------------------------------------------------


def gate_suite(tmp_path: Path) -> Any:
    pairs = [
        pair("ctl", role="control"),
        pair("a"),
        pair("b"),
        pair("c", slice="shipping"),
        pair("d", slice="shipping"),
    ]
    return load_pairs(
        write_suite(
            tmp_path,
            suite_dict(
                pairs,
                refunds={"max_score": 0.2, "direction": "lower_is_better"},
                shipping={"max_score": 0.5, "direction": "lower_is_better", "max_delta": 0.1},
            ),
            freeze=True,
        )
    )


def test_gate_blockers_quality_invalid_missing_and_errors(tmp_path: Path) -> None:
    suite = gate_suite(tmp_path)
    results = [
        result(suite, "ctl:clean", 0.0),
        result(suite, "ctl:noisy", 1.0),
        result(suite, "a:clean", 0.0),
        result(suite, "a:noisy", 0.5),  # above refunds max 0.2
        result(suite, "b:clean", 0.0),
        result(suite, "b:noisy", error="invalid_score"),
        result(suite, "c:clean", 0.1),
        result(suite, "c:noisy", 0.4),  # inside max 0.5, delta 0.3 above max_delta 0.1
        result(suite, "d:clean", error="timeout", attempt=1),
        result(suite, "d:clean", 0.0, attempt=2),  # a later retry supersedes the error
    ]  # d:noisy missing
    report = noise_report(suite, results)
    codes = [(b.category, b.slice, b.code) for b in report.blockers]
    assert codes == [
        ("incomplete", "refunds", "noise_score_invalid"),
        ("incomplete", "shipping", "missing_results"),
        ("quality", "refunds", "noise_score_exceeded"),
        ("quality", "shipping", "noise_delta_exceeded"),
    ]
    assert report.outcome == "evaluation_incomplete" and report.exit_code == 3
    exceeded = next(b for b in report.blockers if b.code == "noise_score_exceeded")
    assert (
        exceeded.case_ids == ["a"]
        and exceeded.evidence["direction"] == "lower_is_better"
        and exceeded.evidence["max_score"] == 0.2
    )
    assert report.missing == ["d:noisy"]
    frames = report.frames()
    assert all((frame["direction"] == "lower is better").all() for frame in frames.values())
    slices = frames["slices"].set_index("slice")
    assert (
        slices.loc["refunds", "max_noisy_score"] == 0.5
        and slices.loc["refunds", "within_limit"] == False  # noqa: E712
    )
    assert slices.loc["shipping", "max_delta"] == pytest.approx(0.3)

    quality_only = [r for r in results if r.case_id not in ("b:noisy",)] + [
        result(suite, "b:noisy", 0.0),
        result(suite, "d:noisy", 0.0),
    ]
    report = noise_report(suite, quality_only)
    assert report.outcome == "quality_failed" and report.exit_code == 1
    assert {b.code for b in report.blockers} == {"noise_score_exceeded", "noise_delta_exceeded"}


def test_report_refuses_foreign_changed_or_mixed_results(tmp_path: Path) -> None:
    suite = gate_suite(tmp_path)
    other = IDENTITY.model_copy(update={"version": "2"})
    bad = [
        result(suite, "a:clean", 0.0).model_copy(update={"case_id": "zzz:clean"}),
        result(suite, "a:noisy", 0.0).model_copy(update={"response_hash": "f" * 64}),
        result(suite, "b:clean", 0.0, judge=other, fingerprint=other.fingerprint()),
    ]
    with pytest.raises(WorkbenchError) as info:
        noise_report(suite, bad)
    assert {p.code for p in info.value.problems} == {
        "result_unknown_member",
        "result_content_mismatch",
        "mixed_judges",
    }


# -- the demo, the CLI and the BEGIN example ---------------------------------------------------


def demo_spec(tmp_path: Path, base_url: str) -> Path:
    spec = yaml.safe_load(DEMO_CANDIDATE.read_text())
    spec["endpoint"] = {**spec["endpoint"], "base_url": base_url, "api_key_env": KEY_ENV}
    path = tmp_path / "noise-judge@1.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_cli_demo_suite_fails_on_quality_and_reports_json(tmp_path: Path) -> None:
    runner = CliRunner()
    with FakeLLM(responder=demo_respond) as fake:
        spec = demo_spec(tmp_path, fake.base_url)
        args = [
            "--candidate",
            str(spec),
            "--pairs",
            str(DEMO_PAIRS),
            "--companions",
            str(DEMO_COMPANIONS),
            "--out",
            str(tmp_path / "run"),
        ]
        res = runner.invoke(noise_command, [*args, "--json"])
        text = runner.invoke(noise_command, args)
    assert res.exit_code == 1, res.output
    report = json.loads(res.stdout)
    assert (
        report["kind"] == "workbench.noise"
        and report["direction"] == "lower_is_better"
        and report["outcome"] == "quality_failed"
    )
    assert report["controls_passed"] and [
        (b["code"], b["case_ids"]) for b in report["blockers"]
    ] == [
        ("noise_score_exceeded", ["ship-address"]),
        ("retrieval_forbidden_source", ["ship-lost"]),
        ("noise_reference_defect_review", ["ctl-refdef-gift-cards"]),
    ]
    assert report["release_id"] is not None
    assert all(s["direction"] == "lower_is_better" for s in report["slices"])
    assert (tmp_path / "run" / "noise_report.json").exists()
    assert (
        text.exit_code == 1
        and "lower is better" in text.output
        and "OVER shipping_delivery" in text.output
    )
    assert report["runs"]["candidates"]["calls"] > 0 and "0 calls" not in text.output


def test_a_locked_noise_run_is_verified_like_every_report_and_refuses_tampering(
    tmp_path: Path,
) -> None:
    """`workbench noise --lock` locks the run in the one lock format with a report.html from
    the one renderer; `workbench verify OUT` (the one verification) refuses an edited
    noise_report.json and a lock whose outcome was rewritten with its hash recomputed. The
    noise run of old main had no lock, so nothing refused either."""
    from workbench._lock import read_lock, write_lock
    from workbench.cli.main import main as workbench
    from workbench.reports import external_references

    run = tmp_path / "run"
    with FakeLLM(responder=demo_respond) as fake:
        args = ["--candidate", str(demo_spec(tmp_path, fake.base_url)), "--pairs", str(DEMO_PAIRS)]
        args += ["--companions", str(DEMO_COMPANIONS)]
        res = CliRunner().invoke(noise_command, [*args, "--out", str(run), "--lock"])
        again = CliRunner().invoke(noise_command, [*args, "--out", str(run)])
    assert res.exit_code == 1, res.output  # quality failed, as without --lock
    assert again.exit_code == 2 and "[run_locked]" in again.output
    lock = read_lock(run)
    assert lock.kind == "noise" and lock.outcome == "quality_failed"
    assert [b["code"] for b in lock.blockers] == [
        "noise_score_exceeded",
        "retrieval_forbidden_source",
        "noise_reference_defect_review",
    ]
    html = (run / "report.html").read_text(encoding="utf-8")
    assert "Noise report: noise-judge@1" in html and "ship-address" in html
    assert external_references(html) == [] and "<script" not in html
    assert CliRunner().invoke(workbench, ["verify", str(run)]).exit_code == 0
    report = run / "noise_report.json"
    original = report.read_text(encoding="utf-8")
    report.write_text(original.replace('"quality_failed"', '"passed"', 1), encoding="utf-8")
    edited = CliRunner().invoke(workbench, ["verify", str(run), "--json"])
    codes = [p["code"] for p in json.loads(edited.stdout)["reports"][0]["problems"]]
    assert edited.exit_code == 1 and codes == ["file_changed", "outcome_mismatch"]
    report.write_text(original, encoding="utf-8")
    write_lock(run, lock.model_copy(update={"outcome": "passed", "blockers": []}))
    forged = CliRunner().invoke(workbench, ["verify", str(run), "--json"])
    codes = [p["code"] for p in json.loads(forged.stdout)["reports"][0]["problems"]]
    assert forged.exit_code == 1 and set(codes) == {"outcome_mismatch"}
    # a run lock never poses as a certification, even with its report rewritten to agree
    data = json.loads(original)
    report.write_text(json.dumps({**data, "outcome": "certified"}), encoding="utf-8")
    write_lock(run, lock.model_copy(update={"outcome": "certified"}))
    posing = CliRunner().invoke(workbench, ["verify", str(run), "--json"])
    codes = [p["code"] for p in json.loads(posing.stdout)["reports"][0]["problems"]]
    assert posing.exit_code == 1 and codes == [
        "file_changed",
        "outcome_invalid",
        "report_unreadable",
    ]


def test_cli_invalid_input_exits_2_and_failed_controls_exit_3(tmp_path: Path) -> None:
    runner = CliRunner()
    broken = copy.deepcopy(yaml.safe_load(DEMO_PAIRS.read_text()))
    del broken["pairs"][0]["mode"]
    bad = write_suite(tmp_path, broken, "support-noise@2.yaml")
    res = runner.invoke(
        noise_command,
        ["--candidate", str(DEMO_CANDIDATE), "--pairs", str(bad)],
        env={"DEMO_LLM_API_KEY": "x"},
    )
    assert res.exit_code == 2 and "mode_missing" in res.output and "Traceback" not in res.output

    def nothing_supported(request: ChatRequest) -> Reply:
        kind, data = parse_prompt(request.prompt)
        if kind == "statements":
            return Reply(content=json.dumps({"statements": [data["answer"]]}))
        return Reply(
            content=json.dumps(
                {
                    "statements": [
                        {"statement": s, "reason": "r", "verdict": 0} for s in data["statements"]
                    ]
                }
            )
        )

    with FakeLLM(responder=nothing_supported) as fake:
        res = runner.invoke(
            noise_command,
            [
                "--candidate",
                str(demo_spec(tmp_path, fake.base_url)),
                "--pairs",
                str(DEMO_PAIRS),
                "--out",
                str(tmp_path / "run"),
                "--json",
            ],
        )
    assert res.exit_code == 3
    report = json.loads(res.stdout)
    assert not report["controls_passed"] and {b["code"] for b in report["blockers"]} == {
        "noise_controls_failed",
        "retrieval_forbidden_source",
    }
    assert report["runs"].keys() == {"controls"}


@needs_datasets
@pytest.mark.skipif(not BEGIN_TSV.is_file(), reason=missing_reason(BEGIN_TSV))
def test_begin_example_builds_a_valid_attributed_suite(tmp_path: Path) -> None:
    out = tmp_path / "begin-distractors@1.yaml"
    script = ROOT / "examples" / "begin_distractors.py"
    proc = subprocess.run(
        [
            sys.executable,
            str(script),
            str(BEGIN_TSV),
            "--out",
            str(out),
            "--limit",
            "12",
            "--controls",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    suite, problems = validate_pairs(out)
    assert suite is not None and problems == []
    assert len(suite.controls()) == 4 and len(suite.candidates()) == 12
    assert {p.mode for p in suite.controls()} == {"relevant", "irrelevant"}
    for p in suite.candidates():
        assert (
            p.noisy.retrieved_contexts[0]
            == p.clean.retrieved_contexts[0]
            != p.noisy.retrieved_contexts[1]
        )
        assert p.noisy.response == p.clean.response and p.provenance["license"] == "CC BY 4.0"
        assert p.provenance["row"] != p.provenance["distractor_row"]
    head = out.read_text().split("schema_version", 1)[0]
    assert "CC BY 4.0" in head and "Emily Dinan" in head and "BEGIN" in head
    again = tmp_path / "again.yaml"
    subprocess.run(
        [sys.executable, str(script), str(BEGIN_TSV), "--out", str(again), "--limit", "12"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    assert again.read_text() == out.read_text()  # deterministic seed
    refused = subprocess.run(
        [sys.executable, str(script), "--out", str(ROOT / "data" / "noise" / "begin.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and not (ROOT / "data" / "noise" / "begin.yaml").exists()


def test_the_stop_summary_counts_every_unscored_control_of_any_role() -> None:
    """Issue 30: two controls not run were summarised as "1 not run", four without a score as
    "3 have no score": a reference-defect control left unscored was not counted."""
    from workbench.noise._analysis import ControlRow, _controls_stop

    def row(pair_id: str, role: str, status: str, detail: str) -> ControlRow:
        separated = status == "separated" if role != "reference_defect" else None
        return ControlRow(
            pair_id=pair_id,
            role=role,
            slice="s",
            mode="irrelevant",
            distractor="d",
            positive_score=None,
            negative_score=None,
            margin=None,
            separated=separated,
            status=status,
            detail=detail,
        )  # type: ignore[arg-type]

    rows = [
        row("a", "control", "not_run", "not run (budget)"),
        row("b", "reference_defect", "not_run", "not run (budget)"),
        row("c", "control", "error", "no score: clean: timeout"),
        row("d", "adversarial", "missing", "no result for the positive (clean)"),
        row("e", "control", "error", "no score: noisy: timeout"),
        row("f", "reference_defect", "error", "no score: clean: timeout"),
        row("g", "reference_defect", "routed_to_review", "routes"),  # scored: not a stop
        row("h", "control", "separated", "ok"),
    ]
    assert _controls_stop(rows, None) == (
        "controls failed (2 not run (budget): a, b; 4 have no score: c, d, e, f); candidate pairs"
        " were not scored"
    )
