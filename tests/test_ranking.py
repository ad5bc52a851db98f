"""Ranking judges: fixtures, the position battery, both ranking kinds, the analysis and the CLI.

Deterministic contract tests (fixture parsing, permutation shape, direction, agreement math)
need no network; the LLM kind runs through Ragas against ``workbench.testing.FakeLLM`` on
127.0.0.1.
"""

from __future__ import annotations

import hashlib
import json
import re
from itertools import permutations
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from ragas.metrics import ranking_metric

from workbench.cli.ranking import ranking as ranking_command
from workbench.demo.ranking import respond as demo_respond
from workbench.errors import WorkbenchError
from workbench.judges import load_candidate
from workbench.ranking import (
    FixtureSet,
    RankingFixture,
    RankingReport,
    check_permutation,
    format_ranking,
    load_fixtures,
    pairwise_agreement,
    position_battery,
    presentation_orders,
    ranking_report,
    read_payload,
    run_ranking_sync,
)
from workbench.results import read_results
from workbench.testing import ChatRequest, FakeLLM, Reply

ROOT = Path(__file__).resolve().parents[1]
DEMO_FIXTURES = ROOT / "data" / "ranking" / "support-ranking@1.yaml"
KEY_ENV = "WB_TEST_RANKING_KEY"
LABELS = ["A", "B", "C", "D", "E", "F", "G", "H"]


# -- deterministic rankers used as ragas-ranking-function candidates ---------------------------


def _quality(text: str) -> int:
    found = re.search(r"quality (\d+)", text)
    return int(found.group(1)) if found else 0


@ranking_metric(name="by_quality", allowed_values=3)
def by_quality(user_input: str, candidates: list[dict[str, str]]) -> list[str]:
    """Best first by the 'quality N' marker in the text; ties by label."""
    return [
        c["label"] for c in sorted(candidates, key=lambda c: (-_quality(c["text"]), c["label"]))
    ]


@ranking_metric(name="echo", allowed_values=3)
def echo_ranker(user_input: str, context: list[str], candidates: list[dict[str, str]]) -> list[str]:
    """Returns the presented order: content has no influence at all."""
    return [c["label"] for c in candidates]


@ranking_metric(name="duplicating", allowed_values=3)
def duplicating_ranker(candidates: list[dict[str, str]]) -> list[str]:
    """Returns the first label twice and drops the last one: not a permutation."""
    labels = [c["label"] for c in candidates]
    return [labels[0], *labels[:-1]]


@ranking_metric(name="ids_leaker", allowed_values=3)
def unknown_ranker(candidates: list[dict[str, str]]) -> list[str]:
    """Returns semantic ids instead of labels (mapping drift)."""
    return [f"candidate-{i}" for i in range(1, len(candidates) + 1)]


@ranking_metric(name="contextless", allowed_values=3)
def contextless_ranker(user_input: str, candidates: list[dict[str, str]]) -> list[str]:
    """Never takes the context: ranks the last-presented candidate first."""
    return [c["label"] for c in reversed(candidates)]


# -- builders ---------------------------------------------------------------------------------


def fixture(
    case_id: str = "case-1",
    *,
    n: int = 3,
    direction: str = "best-first",
    gate: str = "must-win",
    **changes: Any,
) -> dict[str, Any]:
    """A valid fixture dict: candidates cand-1..n with 'quality n..1' (cand-1 is best)."""
    ids = [f"cand-{i}" for i in range(1, n + 1)]
    best_first = list(ids)
    data: dict[str, Any] = {
        "case_id": case_id,
        "criterion_version": "crit-v1",
        "direction": direction,
        "gate": gate,
        "user_input": f"question of {case_id}",
        "context": [
            {"id": "pol-1", "text": f"Policy passage for {case_id}: refunds take 5 business days."},
            {"id": "pol-2", "text": "An uncited passage."},
        ],
        "cited_context": ["pol-1"],
        "candidates": [
            {"id": cid, "text": f"Answer {i} of {case_id}, quality {n + 1 - i}."}
            for i, cid in enumerate(ids, start=1)
        ],
        "expected_order": best_first if direction == "best-first" else best_first[::-1],
        "rationale": ["cand-1 is the most complete"],
    }
    data.update(changes)
    return data


def write_fixtures(path: Path, fixtures: list[dict[str, Any]], **header: Any) -> Path:
    doc = {
        "schema_version": 1,
        "name": path.stem.split("@")[0],
        "version": path.stem.split("@")[1],
        "fixtures": fixtures,
        **header,
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def function_spec(directory: Path, function: str, name: str = "ranker", **changes: Any) -> Path:
    spec: dict[str, Any] = {
        "schema_version": 1,
        "name": name,
        "version": "1",
        "kind": "ragas-ranking-function",
        "labels": LABELS,
        "function": function,
        **changes,
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}@1.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


RANK_PROMPT = (
    "Question: {user_input}\n\n<policy>\n{context}\n</policy>\n\n"
    "<candidates>\n{candidates}\n</candidates>\n\nReturn every label once, best first."
)


def llm_spec(
    directory: Path,
    base_url: str,
    *,
    prompt: str = RANK_PROMPT,
    name: str = "llm-ranker",
    **changes: Any,
) -> Path:
    spec: dict[str, Any] = {
        "schema_version": 1,
        "name": name,
        "version": "1",
        "kind": "ragas-ranking",
        "labels": LABELS,
        "model": "fake-judge",
        "prompt": prompt,
        "endpoint": {
            "base_url": base_url,
            "api_key_env": KEY_ENV,
            "timeout_s": 5,
            "max_retries": 1,
        },
        "params": {"temperature": 0, "max_tokens": 100},
        "pricing": {"input_per_million_usd": 1.0, "output_per_million_usd": 2.0},
        **changes,
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}@1.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


_BLOCK = re.compile(r'<candidate label="([^"]+)">\n(.*?)\n</candidate>', re.DOTALL)


def quality_responder(request: ChatRequest) -> Reply:
    """A scripted LLM ranking by the 'quality N' marker, best first."""
    blocks = _BLOCK.findall(request.prompt)
    order = [label for label, _ in sorted(blocks, key=lambda b: (-_quality(b[1]), b[0]))]
    return Reply(value=None, content=json.dumps({"reason": "by quality", "value": order}))


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-ranking-not-a-real-key")
    monkeypatch.setenv("DEMO_LLM_API_KEY", "demo-placeholder-key")


def run(judge_spec: Path, fixtures: Any, out: Path, **kw: Any) -> Any:
    kw.setdefault("progress", False)
    return run_ranking_sync(load_candidate(judge_spec), fixtures, out, **kw)


def report_of(fixtures: Any, out: Path, **kw: Any) -> Any:
    return ranking_report(fixtures, out / "results.jsonl", **kw)


# -- fixtures ---------------------------------------------------------------------------------


def test_demo_fixtures_load_and_hash_the_frozen_content() -> None:
    fs = load_fixtures(DEMO_FIXTURES)
    assert fs.label == "support-ranking@1" and len(fs.fixtures) == 13
    assert fs.sha256 == hashlib.sha256(DEMO_FIXTURES.read_bytes()).hexdigest()
    f = fs.fixtures[0]
    payload = {
        "user_input": f.user_input,
        "context": [{"id": p.id, "text": p.text} for p in f.context],
        "candidates": [{"id": c.id, "text": c.text} for c in f.candidates],
    }
    expected = hashlib.sha256(
        json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    ).hexdigest()
    assert f.source_candidates_sha256 == expected
    assert {x.direction for x in fs.fixtures} == {"best-first", "worst-first"}
    assert {x.gate for x in fs.fixtures} == {"must-win", "monitor-only"}
    assert any(x.critical_pair for x in fs.fixtures) and any(
        x.acceptable_orders for x in fs.fixtures
    )
    assert all(3 <= len(x.candidates) <= 4 for x in fs.fixtures)


def test_every_fixture_problem_is_reported_at_once_with_line_and_fix(tmp_path: Path) -> None:
    good = fixture("ok-1")
    bad = [
        good,
        fixture("ok-1"),  # duplicate case id
        {**fixture("dir-1"), "direction": "sideways"},
        {**fixture("miss-1"), "expected_order": ["cand-1", "cand-1", "cand-9"]},
        {**fixture("acc-1"), "acceptable_orders": [["cand-1", "cand-2"]]},
        {
            **fixture("both-1"),
            "acceptable_orders": [["cand-2", "cand-1", "cand-3"]],
            "critical_pair": ["cand-1", "cand-3"],
        },
        {**fixture("crit-1"), "critical_pair": ["cand-3", "cand-1"]},
        {**fixture("crit-2"), "critical_pair": ["cand-1", "nobody"]},
        {
            **fixture("dupc-1"),
            "candidates": [{"id": "x", "text": "one"}, {"id": "x", "text": "two"}],
            "expected_order": ["x", "x"],
        },
        {
            **fixture("one-1"),
            "candidates": [{"id": "solo", "text": "alone"}],
            "expected_order": ["solo"],
        },
        {**fixture("cite-1"), "cited_context": ["pol-9"]},
        {**fixture("hash-1"), "source_candidates_sha256": "0" * 64},
        {**fixture("extra-1"), "surprise": True},
        {k: v for k, v in fixture("noexp-1").items() if k != "expected_order"},
        {**fixture("gate-1"), "gate": "blocking"},
        {
            **fixture("empty-1"),
            "candidates": [{"id": "a", "text": "  "}, {"id": "b", "text": "fine"}],
            "expected_order": ["a", "b"],
        },
    ]
    path = write_fixtures(tmp_path / "set@1.yaml", bad)
    with pytest.raises(WorkbenchError) as info:
        load_fixtures(path)
    problems = info.value.problems
    codes = {(p.case_id, p.code) for p in problems}
    assert {
        ("ok-1", "duplicate_case_id"),
        ("dir-1", "invalid_field"),
        ("miss-1", "expected_order_not_permutation"),
        ("acc-1", "acceptable_order_not_permutation"),
        ("both-1", "ties_conflict"),
        ("crit-1", "critical_pair_contradicts_expected"),
        ("crit-2", "critical_pair_invalid"),
        ("dupc-1", "duplicate_candidate_id"),
        ("one-1", "too_few_candidates"),
        ("cite-1", "unknown_cited_context"),
        ("hash-1", "computed_field"),
        ("extra-1", "unknown_field"),
        ("noexp-1", "missing_field"),
        ("gate-1", "invalid_field"),
        ("empty-1", "empty_text"),
    } <= codes
    # every problem has file:line and a fix; the expected-order problem names
    # missing/unknown/duplicates
    assert all(re.search(r"set@1\.yaml:\d+$", p.location) and p.fix for p in problems)
    miss = next(p for p in problems if p.code == "expected_order_not_permutation")
    assert (
        "missing=['cand-2', 'cand-3']" in miss.message
        and "unknown=['cand-9']" in miss.message
        and "duplicates=['cand-1']" in miss.message
    )
    lines = path.read_text().splitlines()
    assert "expected_order" in lines[int(miss.location.rsplit(":", 1)[1]) - 1]


def test_header_problems_and_file_name(tmp_path: Path) -> None:
    path = tmp_path / "wrong-name@1.yaml"
    path.write_text(
        yaml.safe_dump(
            {"schema_version": 9, "name": "set", "version": "2", "extra": 1, "fixtures": []}
        )
    )
    with pytest.raises(WorkbenchError) as info:
        load_fixtures(path)
    assert {p.code for p in info.value.problems} == {
        "schema_version_newer",
        "fixtures_filename",
        "header_invalid",
        "fixtures_empty",
    }
    (tmp_path / "bad@1.yaml").write_text("fixtures: [\n")
    with pytest.raises(WorkbenchError) as info:
        load_fixtures(tmp_path / "bad@1.yaml")
    assert info.value.problems[0].code == "fixtures_yaml"


def test_a_fixture_without_context_that_cites_a_passage_is_a_problem_not_a_crash(
    tmp_path: Path,
) -> None:
    nocontext = {k: v for k, v in fixture("cite-2").items() if k != "context"}
    with pytest.raises(WorkbenchError) as info:
        load_fixtures(write_fixtures(tmp_path / "set@1.yaml", [nocontext]))
    assert [(p.case_id, p.code) for p in info.value.problems] == [
        ("cite-2", "unknown_cited_context")
    ]


def test_a_change_entry_whose_case_id_is_not_text_is_a_problem_not_a_crash(
    tmp_path: Path,
) -> None:
    change = {"case_id": 7, "old_order": None, "new_order": None, "approver": "A", "reason": "r"}
    path = write_fixtures(tmp_path / "set@2.yaml", [fixture()], supersedes="1", changes=[change])
    with pytest.raises(WorkbenchError) as info:
        load_fixtures(path)
    assert {p.code for p in info.value.problems} == {"change_invalid"}


def test_fixture_model_refuses_inconsistent_fixtures_in_code() -> None:
    with pytest.raises(ValueError, match="expected_order"):
        RankingFixture.model_validate({**fixture(), "expected_order": ["cand-1", "cand-2"]})


# -- agreement math ----------------------------------------------------------------------------


def test_pairwise_agreement_by_hand() -> None:
    assert pairwise_agreement(["a", "b", "c"], ["a", "c", "b"]) == 2 / 3
    assert pairwise_agreement(["a", "b", "c"], ["c", "b", "a"]) == 0.0
    assert pairwise_agreement(["a", "b", "c"], ["a", "b", "c"]) == 1.0
    assert pairwise_agreement(["a", "b", "c", "d"], ["b", "a", "c", "d"]) == 5 / 6
    with pytest.raises(ValueError, match="invalid ranking"):
        pairwise_agreement(["a", "b", "c"], ["a", "a", "c"])
    check = check_permutation(["current", "challenger", "unsafe"], ["current", "current", "unsafe"])
    assert (check.missing, check.unknown, check.duplicates) == (["challenger"], [], ["current"])


def test_worst_first_and_ties() -> None:
    worst = RankingFixture.model_validate(fixture(direction="worst-first"))
    assert worst.expected_order == ["cand-3", "cand-2", "cand-1"] and worst.expected_winners == [
        "cand-1"
    ]
    assert worst.agreement(["cand-3", "cand-2", "cand-1"]) == (3, 3)
    assert worst.agreement(["cand-1", "cand-2", "cand-3"]) == (
        0,
        3,
    )  # best-first order read as worst-first: reversed
    assert worst.must_win_holds(["cand-2", "cand-3", "cand-1"]) and not worst.must_win_holds(
        ["cand-3", "cand-1", "cand-2"]
    )
    tie = RankingFixture.model_validate(fixture(acceptable_orders=[["cand-2", "cand-1", "cand-3"]]))
    assert tie.agreement(["cand-2", "cand-1", "cand-3"]) == (3, 3)  # the best accepted order counts
    assert tie.agreement(["cand-2", "cand-3", "cand-1"]) == (2, 3)
    assert set(tie.expected_winners) == {"cand-1", "cand-2"} and tie.must_win_holds(
        ["cand-2", "cand-3", "cand-1"]
    )
    pair = RankingFixture.model_validate(fixture(critical_pair=["cand-1", "cand-3"]))
    assert pair.agreement(["cand-2", "cand-1", "cand-3"]) == (1, 1)  # only the pair is compared
    assert pair.agreement(["cand-3", "cand-2", "cand-1"]) == (0, 1)
    assert (
        pair.must_win_holds(["cand-2", "cand-1", "cand-3"])
        and pair.must_win_expected() == "cand-1 > cand-3"
    )


# -- the battery -------------------------------------------------------------------------------


def test_all_24_permutations_for_four_candidates_and_a_labelled_repeat_baseline() -> None:
    items = position_battery([RankingFixture.model_validate(fixture(n=4))], repeats=3)
    position = [i for i in items if i.presentation["battery"] == "position"]
    repeat = [i for i in items if i.presentation["battery"] == "repeat"]
    assert len(position) == 24 and len(repeat) == 3
    assert {tuple(i.presentation["presented_order"]) for i in position} == set(
        permutations(["cand-1", "cand-2", "cand-3", "cand-4"])
    )
    assert position[0].presentation["presented_order"] == ["cand-1", "cand-2", "cand-3", "cand-4"]
    assert all(
        i.presentation["presented_order"] == ["cand-1", "cand-2", "cand-3", "cand-4"]
        for i in repeat
    )
    assert [i.presentation["repetition"] for i in repeat] == [0, 1, 2]
    assert sorted(i.repeat for i in items) == list(range(27))  # unique per fixture
    assert {i.digest for i in items} == {
        RankingFixture.model_validate(fixture(n=4)).source_candidates_sha256
    }
    first = position[5]
    assert [c.label for c in first.judge_input.candidates] == ["A", "B", "C", "D"]
    assert first.presentation["labels"] == dict(
        zip("ABCD", first.presentation["presented_order"], strict=True)
    )
    # the judge input carries neutral labels and texts only, never a stable id
    assert "cand-" not in first.judge_input.model_dump_json()


def test_fixed_seed_sample_beyond_max_exhaustive() -> None:
    six = RankingFixture.model_validate(fixture(n=6))
    items = position_battery([six], max_exhaustive=4, sample=8, seed=7, repeats=0)
    orders = [tuple(i.presentation["presented_order"]) for i in items]
    assert len(orders) == 8 == len(set(orders))
    assert orders[0] == tuple(six.candidate_ids)  # identity included
    for position in range(6):  # rotations: every candidate shown at every position at least once
        assert {o[position] for o in orders} == set(six.candidate_ids)
    again = [
        tuple(i.presentation["presented_order"])
        for i in position_battery([six], max_exhaustive=4, sample=8, seed=7, repeats=0)
    ]
    assert again == orders
    other = [
        tuple(i.presentation["presented_order"])
        for i in position_battery([six], max_exhaustive=4, sample=8, seed=8, repeats=0)
    ]
    assert other[:6] == orders[:6] and other != orders
    assert len(presentation_orders(6, max_exhaustive=6)) == 720
    assert len(presentation_orders(3, max_exhaustive=0, sample=8)) == 6  # 3! <= sample: all of them


# -- the function kind and the analysis -------------------------------------------------------


def test_echo_ranker_is_caught_by_position_bias_while_repeatability_is_perfect(
    tmp_path: Path,
) -> None:
    fs = [RankingFixture.model_validate(fixture(f"case-{i}")) for i in range(3)]
    summary = run(
        function_spec(tmp_path / "spec", "test_ranking:echo_ranker"), fs, tmp_path / "run"
    )
    assert summary.status == "complete" and summary.planned == 3 * (6 + 3)
    report = report_of(fs, tmp_path / "run")
    pb = report.position_bias
    assert pb.attempts == 18
    by_candidate = {(c.case_id, c.candidate_id): (c.wins.k, c.wins.n) for c in pb.by_candidate}
    assert set(by_candidate.values()) == {(2, 6)}  # spread evenly across candidates ...
    assert (pb.by_position[0].wins.k, pb.by_position[0].wins.n) == (
        18,
        18,
    )  # ... but 100% by presented position 0
    assert [p.wins.k for p in pb.by_position[1:]] == [0, 0]
    assert pb.by_position[0].chance == pytest.approx(1 / 3)
    assert (
        report.repeatability.stable_cases.k == report.repeatability.stable_cases.n == 3
    )  # perfectly repeatable
    assert report.position_sensitivity.stable_cases.k == 0
    assert report.must_win.reversals and not report.integration_defects and not report.passed
    assert {a.diagnosis for a in report.failures} == {"position_sensitive"}


def test_content_ranker_is_position_blind_and_passes(tmp_path: Path) -> None:
    fs = [
        RankingFixture.model_validate(fixture("best")),
        RankingFixture.model_validate(fixture("worst", direction="worst-first", n=4)),
    ]
    run(function_spec(tmp_path / "spec", "test_ranking:by_quality"), fs, tmp_path / "run")
    report = report_of(fs, tmp_path / "run")
    assert report.passed and report.status == "complete" and not report.failures
    assert report.agreement.pairs.k == report.agreement.pairs.n == 9 * 3 + 27 * 6
    rows = [
        r.result
        for r in read_results(tmp_path / "run" / "results.jsonl")
        if r.result.case_id == "worst"
    ]
    assert all(
        r.order == ["cand-4", "cand-3", "cand-2", "cand-1"] and r.value == "cand-1" for r in rows
    )  # worst-first, winner is the best
    assert all(r.presentation and r.presentation["direction"] == "worst-first" for r in rows)
    assert report.position_sensitivity.stable_cases.k == 2
    request = read_payload(
        tmp_path / "run", rows[3].rendered_request
    )  # the full request, kept as a payload beside the results
    assert request["function"] == "test_ranking:by_quality" and "cand-" not in json.dumps(request)
    assert rows[3].rendered_request["capture"] == "full" and "Answer" not in json.dumps(
        rows[3].rendered_request
    )  # the stub holds digests, no text


def test_invalid_permutation_is_an_integration_defect_before_quality(tmp_path: Path) -> None:
    fs = [RankingFixture.model_validate(fixture())]
    run(
        function_spec(tmp_path / "spec", "test_ranking:duplicating_ranker"),
        fs,
        tmp_path / "run",
        repeats=0,
    )
    rows = [r.result for r in read_results(tmp_path / "run" / "results.jsonl")]
    assert all(
        r.error is not None and r.error.kind == "invalid_ranking" and r.value is None for r in rows
    )
    first = next(r for r in rows if r.repeat == 0)
    assert first.order == ["A", "A", "B"]  # the raw returned order is kept
    report = report_of(fs, tmp_path / "run")
    assert not report.passed and report.valid_attempts == 0 and report.agreement.pairs.n == 0
    assert (report.invalid_rankings.k, report.invalid_rankings.n) == (6, 6)
    defect = next(d for d in report.integration_defects if d.repeat == 0)
    assert (defect.code, defect.missing, defect.duplicates, defect.unknown) == (
        "invalid_ranking",
        ["cand-3"],
        ["cand-1"],
        [],
    )
    assert report.failures[0].diagnosis == "integration_defect" and report.failures[
        0
    ].actual_order == ["A", "A", "B"]
    # reported before any quality statistic
    fields = list(RankingReport.model_fields)
    assert fields.index("integration_defects") < fields.index("agreement")
    text = format_ranking(report)
    assert (
        text.index("integration defects")
        < text.index("pairwise agreement")
        < text.index("must-win")
    )
    assert list(report.frames())[0] == "integration_defects"


def test_invalid_rankings_are_a_quality_failure_and_every_count_agrees(tmp_path: Path) -> None:
    """Audit (issue 27): a judge answering only invalid permutations got exit 3 (incomplete) for a
    quality failure, and the run header said "N evaluator errors" while the ranking_incomplete
    blocker said "0 evaluator error(s)". Every count is now the report's, and the exit code is
    the gate's outcome: the answers are integration defects (quality, exit 1), nothing is
    missing."""
    fixtures = write_fixtures(tmp_path / "dups@1.yaml", [fixture("a"), fixture("b")])
    result = CliRunner().invoke(
        ranking_command,
        [
            "run",
            "--candidate",
            str(function_spec(tmp_path / "spec", "test_ranking:duplicating_ranker")),
            "--fixtures",
            str(fixtures),
            "--out",
            str(tmp_path / "run"),
            "--no-history",
            "--no-progress",
            "--json",
        ],
    )
    report = json.loads(result.stdout[result.stdout.index("{") :])
    defects, errors = len(report["integration_defects"]), len(report["evaluator_errors"])
    assert (defects, errors, report["valid_attempts"]) == (report["attempts"], 0, 0) and defects
    assert report["gate"]["outcome"] == "quality_failed" and result.exit_code == 1, result.output
    assert report["status"] == "complete" and report["missing_cases"] == []
    assert {b["code"] for b in report["gate"]["blockers"]} == {"ranking_integration_defect"}
    # every "N evaluator error(s)" and "N integration defect(s)" shown is the report's count
    shown = result.output + format_ranking(RankingReport.model_validate(report))
    said_errors = {int(n) for n in re.findall(r"(\d+) evaluator errors?\b", shown)}
    said_defects = {int(n) for n in re.findall(r"(\d+) integration defect\(s\)", shown)}
    assert said_errors == {errors} and said_defects >= {defects}
    assert f"{defects} integration defect(s), 0 evaluator error(s)" in result.stderr


def test_unknown_ids_are_mapping_drift(tmp_path: Path) -> None:
    fs = [RankingFixture.model_validate(fixture())]
    run(
        function_spec(tmp_path / "spec", "test_ranking:unknown_ranker"),
        fs,
        tmp_path / "run",
        repeats=0,
    )
    report = report_of(fs, tmp_path / "run")
    defect = report.integration_defects[0]
    assert defect.unknown == ["candidate-1", "candidate-2", "candidate-3"] and defect.missing == [
        "cand-1",
        "cand-2",
        "cand-3",
    ]


def test_results_for_changed_candidates_or_unknown_cases_are_defects_and_judges_are_not_mixed(
    tmp_path: Path,
) -> None:
    fs = [RankingFixture.model_validate(fixture())]
    run(
        function_spec(tmp_path / "spec", "test_ranking:by_quality"), fs, tmp_path / "run", repeats=0
    )
    rows = [r.result for r in read_results(tmp_path / "run" / "results.jsonl")]
    edited = [
        rows[0].model_copy(update={"case_id": "ghost"}),
        rows[1].model_copy(update={"response_hash": "f" * 64}),
        *rows[2:],
    ]
    report = ranking_report(fs, edited)
    assert sorted(d.code for d in report.integration_defects) == [
        "candidates_changed",
        "unknown_case",
    ]
    other = rows[2].model_copy(update={"judge_fingerprint": "0" * 64})
    with pytest.raises(WorkbenchError, match="mixed judges") as info:
        ranking_report(fs, [rows[0], other])
    assert [p.code for p in info.value.problems] == ["mixed_judges"]


def test_missing_and_planned_attempts_make_the_report_incomplete(tmp_path: Path) -> None:
    fs = [RankingFixture.model_validate(fixture("a")), RankingFixture.model_validate(fixture("b"))]
    run(
        function_spec(tmp_path / "spec", "test_ranking:by_quality"),
        fs[:1],
        tmp_path / "run",
        repeats=0,
    )
    report = report_of(fs, tmp_path / "run", planned=position_battery(fs, repeats=1))
    assert report.status == "incomplete" and not report.passed
    assert (
        report.missing_cases == ["b"]
        and "a#6" in report.missing_attempts
        and "b#0" in report.missing_attempts
    )


def test_resume_and_cache_through_the_run_engine(tmp_path: Path) -> None:
    spec = function_spec(tmp_path / "spec", "test_ranking:by_quality")
    fs = [RankingFixture.model_validate(fixture(n=4))]
    first = run(spec, fs, tmp_path / "run")
    assert (first.calls, first.planned) == (27, 27)
    again = run(spec, fs, tmp_path / "run")
    assert (again.calls, again.resumed, again.cache_hits) == (0, 27, 0)
    elsewhere = run(spec, fs, tmp_path / "run2")
    assert (elsewhere.calls, elsewhere.cache_hits) == (0, 27)
    rows = [r.result for r in read_results(tmp_path / "run2" / "results.jsonl")]
    assert all(r.cached_from_run_id and r.presentation and r.order for r in rows)
    assert report_of(fs, tmp_path / "run2").passed
    with pytest.raises(WorkbenchError, match="battery changed") as info:
        run(spec, fs, tmp_path / "run", repeats=1)  # a different battery is a different run
    assert [p.code for p in info.value.problems] == ["battery_changed"]


def test_same_texts_under_another_mapping_never_share_a_cached_verdict(tmp_path: Path) -> None:
    spec = function_spec(tmp_path / "spec", "test_ranking:by_quality")
    same = fixture("twin-best")
    fs = [
        RankingFixture.model_validate(same),
        RankingFixture.model_validate(
            {
                **same,
                "case_id": "twin-worst",
                "direction": "worst-first",
                "expected_order": same["expected_order"][::-1],
            }
        ),
        RankingFixture.model_validate(
            {
                **same,
                "case_id": "twin-renamed",
                "candidates": [
                    {**c, "id": c["id"].replace("cand", "renamed")} for c in same["candidates"]
                ],
                "expected_order": [x.replace("cand", "renamed") for x in same["expected_order"]],
            }
        ),
    ]
    for out in ("run", "run-cached"):
        run(spec, fs, tmp_path / out)
        report = report_of(fs, tmp_path / out)
        assert report.passed and not report.integration_defects
    rows = [r.result for r in read_results(tmp_path / "run-cached" / "results.jsonl")]
    assert all(r.cached_from_run_id for r in rows)
    payloads = [
        read_payload(tmp_path / "run-cached", r.rendered_request) for r in rows
    ]  # adopted from the run that produced the cached results
    assert all(
        p is not None and "answer_mapping" not in json.dumps(p) and "cand-" not in json.dumps(p)
        for p in payloads
    )


def test_candidate_spec_problems(tmp_path: Path) -> None:
    with pytest.raises(WorkbenchError) as info:
        load_candidate(
            function_spec(tmp_path / "a", "test_ranking:by_quality", labels=["pass", "fail"])
        )
    assert [p.code for p in info.value.problems] == ["labels_not_neutral"]
    with pytest.raises(WorkbenchError) as info:
        load_candidate(function_spec(tmp_path / "b", "workbench.judges.demo:rubric_judge_v1"))
    assert "function_not_metric" in {p.code for p in info.value.problems}
    with pytest.raises(WorkbenchError) as info:
        load_candidate(
            llm_spec(
                tmp_path / "c", "http://127.0.0.1:9/v1", prompt="Rank {response} for {user_input}"
            )
        )
    assert "prompt_placeholder" in {p.code for p in info.value.problems}


# -- the LLM kind through FakeLLM ---------------------------------------------------------------


def test_llm_kind_end_to_end_neutral_labels_and_mapping(tmp_path: Path) -> None:
    fs = [
        RankingFixture.model_validate(fixture("llm-1", n=3)),
        RankingFixture.model_validate(fixture("llm-2", n=4, direction="worst-first")),
    ]
    with FakeLLM(responder=quality_responder) as llm:
        spec = llm_spec(tmp_path / "spec", llm.base_url)
        summary = run(spec, fs, tmp_path / "run", repeats=2)
        assert (
            summary.status == "complete" and summary.calls == (6 + 2) + (24 + 2) == llm.call_count
        )
        prompts = [json.dumps(c.body) for c in llm.calls]
        rows = [r.result for r in read_results(tmp_path / "run" / "results.jsonl")]
        for r in rows:
            sent = read_payload(tmp_path / "run", r.rendered_request)
            text = json.dumps(sent)
            assert not any(cid in text for cid in ("cand-1", "cand-2", "cand-3", "cand-4")), (
                "a stable id reached the judge"
            )
            assert '<candidate label="A">' in sent["messages"][-1]["content"]
            fx = next(f for f in fs if f.case_id == r.case_id)
            assert (
                r.order == fx.expected_order and r.value == "cand-1"
            )  # mapped back through the presentation
            assert r.tokens_in and r.cost_usd and r.rendered_request_sha256
        assert not any("cand-" in p for p in prompts)
        report = report_of(fs, tmp_path / "run")
        assert (
            report.passed
            and report.assembly.incomplete_requests.k == 0
            and report.assembly.leaked_ids.k == 0
        )
        # the second run makes zero calls (resume), and a new run directory is served from the cache
        before = llm.call_count
        assert run(spec, fs, tmp_path / "run", repeats=2).calls == 0
        assert run(spec, fs, tmp_path / "run-b", repeats=2).cache_hits == summary.planned
        assert llm.call_count == before


def test_llm_invalid_rankings_keep_the_raw_order(tmp_path: Path) -> None:
    answers = {"dup": ["A", "A", "B"], "unknown": ["A", "B", "E"], "ints": [1, 2, 3]}

    def responder(request: ChatRequest) -> Reply:
        kind = next(k for k in answers if f"question of {k}" in request.prompt)
        return Reply(value=None, content=json.dumps({"reason": "r", "value": answers[kind]}))

    fs = [RankingFixture.model_validate(fixture(k)) for k in answers]
    with FakeLLM(responder=responder) as llm:
        run(
            llm_spec(tmp_path / "spec", llm.base_url),
            fs,
            tmp_path / "run",
            repeats=0,
            max_exhaustive=0,
            sample=1,
        )
    rows = {r.result.case_id: r.result for r in read_results(tmp_path / "run" / "results.jsonl")}
    assert all(r.error is not None and r.error.kind == "invalid_ranking" for r in rows.values())
    assert (
        rows["dup"].order == ["A", "A", "B"]
        and rows["unknown"].order == ["A", "B", "E"]
        and rows["ints"].order == ["1", "2", "3"]
    )
    report = report_of(fs, tmp_path / "run")
    by_case = {d.case_id: d for d in report.integration_defects}
    assert by_case["dup"].duplicates == ["cand-1"] and by_case["dup"].missing == ["cand-3"]
    assert by_case["unknown"].unknown == ["E"] and by_case["unknown"].missing == ["cand-3"]


def test_completeness_check_catches_a_ranker_that_omits_the_context(tmp_path: Path) -> None:
    # A prompt template without {context} is refused before any call (test_ranking_checks); a
    # ranker function that never takes the context still reaches the judge job, where the
    # completeness check of the rendered request finds the missing passage.
    demo = load_fixtures(DEMO_FIXTURES)
    fs = FixtureSet(
        name="subset",
        version="1",
        fixtures=[demo.by_id()["pw-lockout-001"], demo.by_id()["data-export-010"]],
    )
    run(
        function_spec(tmp_path / "spec", "test_ranking:contextless_ranker"),
        fs,
        tmp_path / "run",
        repeats=1,
    )
    with FakeLLM(responder=demo_respond) as llm:
        run(
            llm_spec(tmp_path / "spec-ok", llm.base_url, name="ranker-ok"),
            fs,
            tmp_path / "run-ok",
            repeats=1,
        )
    report = report_of(fs, tmp_path / "run")
    assert report.assembly.incomplete_requests.k == report.assembly.incomplete_requests.n == 14
    assert report.failures and {a.diagnosis for a in report.failures} == {"assembly_defect"}
    artifact = report.failures[0]
    assert artifact.completeness.complete is False and artifact.completeness.missing_context == [
        fs.fixtures[0].cited_context[0]
    ]
    assert artifact.completeness.missing_candidates == [] and artifact.rendered_request_sha256
    assert (
        artifact.source_candidates_sha256
        == artifact.judged_candidates_sha256
        == fs.fixtures[0].source_candidates_sha256
    )
    ok = report_of(fs, tmp_path / "run-ok")
    assert ok.assembly.incomplete_requests.k == 0 and ok.passed


# -- the demo and the CLI -------------------------------------------------------------------------


def test_cli_exit_codes_on_the_demo(tmp_path: Path) -> None:
    runner = CliRunner()
    history = ["--history", str(tmp_path / "history.jsonl")]
    # the deterministic ranker: no must-win reversal; the editorial case chargeback-009 drifts and
    # routes to review (exit 4)
    ok = runner.invoke(
        ranking_command,
        [
            "--candidate",
            str(ROOT / "data/candidates/policy-ranker@1.yaml"),
            "--fixtures",
            str(DEMO_FIXTURES),
            "--out",
            str(tmp_path / "policy"),
            "--no-progress",
            *history,
        ],
    )
    assert ok.exit_code == 4, ok.output
    assert "REVIEW_REQUIRED" in ok.output and "ranking_editorial_drift: chargeback-009" in ok.output
    assert (tmp_path / "policy" / "ranking_report.json").exists() and (
        tmp_path / "policy" / "failures" / "chargeback-009.json"
    ).exists()
    with FakeLLM(responder=demo_respond) as llm:
        spec = yaml.safe_load((ROOT / "data/candidates/support-llm-ranker@1.yaml").read_text())
        spec["endpoint"]["base_url"] = llm.base_url
        spec["endpoint"].pop("base_url_env", None)
        (tmp_path / "spec").mkdir()
        (tmp_path / "spec" / "support-llm-ranker@1.yaml").write_text(yaml.safe_dump(spec))
        bad = runner.invoke(
            ranking_command,
            [
                "run",
                "--candidate",
                str(tmp_path / "spec" / "support-llm-ranker@1.yaml"),
                "--fixtures",
                str(DEMO_FIXTURES),
                "--out",
                str(tmp_path / "llm"),
                "--json",
                "--no-progress",
                *history,
            ],
        )
    assert bad.exit_code == 1  # a confirmed must-win reversal: quality failed
    report = json.loads(bad.stdout[bad.stdout.index("{") :])
    assert [c["case_id"] for c in report["must_win"]["reversals"]] == [
        "damaged-item-005",
        "refund-timing-013",
    ]
    confirmation = {c["case_id"]: c for c in report["gate"]["confirmation"]}
    assert (
        confirmation["refund-timing-013"]["status"] == "confirmed"
        and confirmation["refund-timing-013"]["repeat_reversals"] == 3
    )
    assert (
        confirmation["damaged-item-005"]["status"] == "unconfirmed"
        and confirmation["damaged-item-005"]["repeat_reversals"] == 0
    )
    assert {c["case_id"] for c in report["must_win"]["drift"]} == {
        "chargeback-009",
        "email-change-012",
    }
    assert (
        report["repeatability"]["stable_cases"]["rate"] == 1.0
        and report["position_sensitivity"]["stable_cases"]["rate"] < 1.0
    )
    by_position = report["position_bias"]["by_position"]
    assert (
        by_position[0]["wins"]["rate"] > by_position[0]["chance"] > by_position[1]["wins"]["rate"]
    )
    damaged = next(a for a in report["failures"] if a["case"] == "damaged-item-005")
    assert (
        damaged["diagnosis"] == "position_sensitive"
        and damaged["presented_order"][0] == "label-only" == damaged["must_win_actual"]
    )
    again = runner.invoke(
        ranking_command,
        [
            "--fixtures",
            str(DEMO_FIXTURES),
            "--results",
            str(tmp_path / "llm" / "results.jsonl"),
            "--no-history",
        ],
    )
    assert again.exit_code == 1 and "damaged-item-005" in again.output
    invalid = runner.invoke(
        ranking_command, ["--fixtures", str(tmp_path / "none@1.yaml"), "--results", "x"]
    )
    assert invalid.exit_code == 2 and "fixtures_missing" in invalid.output
    both = runner.invoke(ranking_command, ["--fixtures", str(DEMO_FIXTURES)])
    assert both.exit_code == 2
    wrong_kind = runner.invoke(
        ranking_command,
        [
            "--candidate",
            str(ROOT / "data/candidates/rubric-judge@1.yaml"),
            "--fixtures",
            str(DEMO_FIXTURES),
        ],
    )
    assert wrong_kind.exit_code == 2 and "not_ranking_kind" in wrong_kind.output


@pytest.mark.parametrize("fault", ["http_401", "http_403"])
def test_llm_kind_records_provider_errors_with_their_endpoint_failure(
    tmp_path: Path, fault: str
) -> None:
    """The base judge passes ``endpoint_failure`` to ``_failed``: the ranking override takes it.

    Before, ``LLMRankingJudge._failed`` lacked the keyword, so an HTTP error status (or a refused
    connection) raised ``TypeError`` inside the judge instead of recording a provider error.
    """
    fs = [RankingFixture.model_validate(fixture("err-1", n=3))]
    with FakeLLM(responder=lambda request: Reply(fault=fault)) as llm:
        run(
            llm_spec(tmp_path / "spec", llm.base_url),
            fs,
            tmp_path / "run",
            repeats=0,
            max_exhaustive=0,
            sample=1,
        )
    rows = [r.result for r in read_results(tmp_path / "run" / "results.jsonl")]
    assert rows and all(r.error is not None and r.error.kind == "provider_error" for r in rows), [
        r.error for r in rows
    ]
