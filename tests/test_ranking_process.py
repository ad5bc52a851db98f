"""Issue 13 section 1: the process around a ranking gate.

Human calibration of fixtures, label history (frozen releases, recorded changes), release rules
(confirmed vs unconfirmed reversals, agreement drop, editorial review, report-only),
criterion leakage, slices, scalar and ranking side by side, rendered-request completeness
(duplicates, Ragas version, judge configuration, reproduction, owners), privacy mode (capture,
retention, prune, lock) and cheap rotation. Networked judges run against FakeLLM on port 0.
"""

from __future__ import annotations

import json
import re
import shlex
from datetime import UTC, datetime, timedelta
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
import yaml
from _reference import kendalltau
from click.testing import CliRunner
from conftest import approve, undocumented_fields
from pydantic import BaseModel
from ragas.metrics import ranking_metric
from test_ranking import (
    _quality,
    fixture,
    function_spec,
    llm_spec,
    quality_responder,
    write_fixtures,
)

from workbench.approval import freeze_path
from workbench.cli.main import main as cli
from workbench.demo.ranking import respond as demo_respond
from workbench.demo.ranking import scalar_gate_rows
from workbench.errors import WorkbenchError
from workbench.judges import load_candidate
from workbench.policy import build_override
from workbench.ranking import (
    CaptureConfig,
    FixtureSet,
    LeakageRules,
    RankingFixture,
    RankingPolicy,
    ScalarCaseResult,
    choose_agreement_threshold,
    completeness,
    format_ranking,
    label_history,
    load_agreement_examples,
    load_fixtures,
    load_ranking_policy,
    position_battery,
    prune_run,
    ranking_override_scope,
    ranking_report,
    read_history,
    read_payload,
    record_run,
    reviewer_agreement,
    rotation_shift,
    run_ranking_sync,
    scan_reason,
    verify_ranking_run,
)
from workbench.results import read_results
from workbench.testing import ChatRequest, FakeLLM, Reply

ROOT = Path(__file__).resolve().parents[1]
DEMO_V1 = ROOT / "data" / "ranking" / "support-ranking@1.yaml"
DEMO_V2 = ROOT / "data" / "ranking" / "support-ranking@2.yaml"
RELEASE_POLICY = ROOT / "data" / "policies" / "support-ranking-release@1.yaml"
ROLLOUT_POLICY = ROOT / "data" / "policies" / "support-ranking-rollout@1.yaml"
A, B, C = "Reviewer A", "Reviewer B", "Reviewer C"
OWNERS = {
    "application": "app team",
    "evaluation": "eval team",
    "platform": "platform team",
    "domain_reviewer": "domain lead",
}


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WB_TEST_RANKING_KEY", "sk-test-ranking-not-a-real-key")
    monkeypatch.setenv("DEMO_LLM_API_KEY", "demo-placeholder-key")


@ranking_metric(name="bottom_swap", allowed_values=3)
def bottom_swap(user_input: str, context: list[str], candidates: list[dict[str, str]]) -> list[str]:
    """Best first by quality, but the last two swapped: the winner holds, agreement drops."""
    ranked = [
        c["label"] for c in sorted(candidates, key=lambda c: (-_quality(c["text"]), c["label"]))
    ]
    return [*ranked[:-2], ranked[-1], ranked[-2]]


@ranking_metric(name="first_shown", allowed_values=3)
def first_shown(user_input: str, context: list[str], candidates: list[dict[str, str]]) -> list[str]:
    """The presented order, with the context read (so requests are complete): pure position bias."""
    return [c["label"] for c in candidates]


@ranking_metric(name="quality_ctx", allowed_values=3)
def quality_ctx(user_input: str, context: list[str], candidates: list[dict[str, str]]) -> list[str]:
    """Best first by quality; reads the context."""
    return [
        c["label"] for c in sorted(candidates, key=lambda c: (-_quality(c["text"]), c["label"]))
    ]


def reviewed(
    case_id: str = "case-1", orders: list[list[str]] | None = None, **changes: Any
) -> dict[str, Any]:
    """A fixture with two agreeing reviewers (or the given reviewer orders)."""
    data = fixture(case_id, **changes)
    orders = orders or [list(data["expected_order"]), list(data["expected_order"])]
    data["reviews"] = [
        {"reviewer": name, "order": order, "rationale": [f"{name} on {case_id}"]}
        for name, order in zip([A, B, C], orders, strict=False)
    ]
    return data


def reversed_listing(case_id: str, **changes: Any) -> dict[str, Any]:
    """A fixture whose identity (listed) order shows the worst candidate first; cand-1 is still
    best.
    """
    data = reviewed(case_id, **changes)
    data["candidates"] = list(reversed(data["candidates"]))
    return data


def fs_of(*items: dict[str, Any], name: str = "set", version: str = "1") -> FixtureSet:
    return FixtureSet(
        name=name, version=version, fixtures=[RankingFixture.model_validate(i) for i in items]
    )


def run(spec: Path, fixtures: Any, out: Path, **kw: Any) -> Any:
    kw.setdefault("progress", False)
    kw.setdefault("cache_dir", False)
    return run_ranking_sync(load_candidate(spec), fixtures, out, **kw)


def policy_file(directory: Path, name: str = "rank-policy", **changes: Any) -> Path:
    doc: dict[str, Any] = {
        "schema_version": 1,
        "kind": "ranking",
        "name": name,
        "version": "1",
        "owner": "QA lead",
        "rationale": "test rules",
        "capture": {"retention_days": 30},
        "owners": OWNERS,
        "require_frozen_fixtures": False,
        "must_win_requires_reviews": False,
        **changes,
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}@1.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def policy(**changes: Any) -> RankingPolicy:
    base: dict[str, Any] = {
        "name": "p",
        "version": "1",
        "owner": "o",
        "rationale": "r",
        "owners": OWNERS,
        "require_frozen_fixtures": False,
        "must_win_requires_reviews": False,
    }
    return RankingPolicy.model_validate({**base, **changes})


def codes(report: Any) -> list[str]:
    return [b.code for b in report.gate.blockers]


# -- 1. human calibration of fixtures --------------------------------------------------------


def test_reviewer_agreement_pairwise_tau_and_top1_by_hand() -> None:
    orders = [
        ["cand-1", "cand-2", "cand-3"],
        ["cand-1", "cand-3", "cand-2"],
        ["cand-3", "cand-2", "cand-1"],
    ]
    data = reviewed("three", orders=orders, gate="monitor-only")
    data["adjudication"] = {
        "adjudicator": "Lead",
        "reason": "the criterion ranks completeness first",
    }
    report = reviewer_agreement(fs_of(data, reviewed("agreed")))
    case = next(c for c in report.cases if c.case_id == "three")
    # pairs agreeing per reviewer pair: (1,2) 2 of 3, (1,3) 0 of 3, (2,3) 1 of 3
    assert (case.pairwise.k, case.pairwise.n) == (3, 9)
    taus = [
        kendalltau([0, 1, 2], [b.index(c) for c in a]).statistic for a, b in combinations(orders, 2)
    ]
    assert (
        case.kendall_tau == pytest.approx(sum(taus) / 3) == pytest.approx((1 / 3 - 1 - 1 / 3) / 3)
    )
    assert (case.top1.k, case.top1.n) == (1, 3)  # only reviewers 1 and 2 name the same best
    assert case.status == "adjudicated" and case.adjudicator == "Lead"
    assert {tuple(p) for p in case.disputed_pairs} == {
        ("cand-1", "cand-2"),
        ("cand-1", "cand-3"),
        ("cand-2", "cand-3"),
    }
    # overall pools every fixture's reviewer pairs
    assert (report.overall.pairwise.k, report.overall.pairwise.n) == (3 + 3, 9 + 3)
    assert (report.overall.top1.k, report.overall.top1.n) == (2, 4)
    assert report.overall.kendall_tau == pytest.approx((sum(taus) + 1.0) / 4)
    assert report.slices["(none)"].fixtures == 2 and report.overall.disputed_fixtures == 1


def test_reviewer_disagreement_on_a_must_win_pair_cannot_be_must_win_until_adjudicated(
    tmp_path: Path,
) -> None:
    winner_split = reviewed(
        "split", orders=[["cand-1", "cand-2", "cand-3"], ["cand-2", "cand-1", "cand-3"]]
    )
    bottom_split = reviewed(
        "bottom", orders=[["cand-1", "cand-2", "cand-3"], ["cand-1", "cand-3", "cand-2"]]
    )
    pair_only = reviewed(
        "pair",
        orders=[["cand-1", "cand-2", "cand-3"], ["cand-2", "cand-1", "cand-3"]],
        critical_pair=["cand-1", "cand-3"],
    )
    path = write_fixtures(tmp_path / "cal@1.yaml", [winner_split, bottom_split, pair_only])
    with pytest.raises(WorkbenchError) as info:
        load_fixtures(path)
    problems = info.value.problems
    assert [(p.case_id, p.code) for p in problems] == [
        ("split", "must_win_unadjudicated")
    ]  # bottom and pair disputes are not must-win pairs
    assert "cand-1 vs cand-2" in problems[0].message and re.search(
        r"cal@1\.yaml:\d+$", problems[0].location
    )
    # adjudicated: loads; or monitor-only: loads
    adjudicated = {
        **winner_split,
        "adjudication": {"adjudicator": "Lead", "reason": "criterion v2: faithfulness first"},
    }
    write_fixtures(path, [adjudicated, bottom_split, pair_only])
    assert load_fixtures(path).by_id()["split"].adjudication is not None
    write_fixtures(path, [{**winner_split, "gate": "monitor-only"}, bottom_split, pair_only])
    assert load_fixtures(path).by_id()["split"].gate == "monitor-only"
    # every other review problem at once
    bad = [
        reviewed("one", orders=[["cand-1", "cand-2", "cand-3"]]),
        {
            **reviewed("dup"),
            "reviews": (
                [{"reviewer": A, "order": ["cand-1", "cand-2", "cand-3"], "rationale": ["x"]}] * 2
            ),
        },
        reviewed("perm", orders=[["cand-1", "cand-2", "cand-3"], ["cand-1", "cand-1", "cand-3"]]),
        {**fixture("adj"), "adjudication": {"adjudicator": "Lead", "reason": "r"}},
        reviewed(
            "unrev",
            orders=[["cand-2", "cand-1", "cand-3"], ["cand-2", "cand-1", "cand-3"]],
            gate="monitor-only",
        ),
    ]
    write_fixtures(path, bad)
    with pytest.raises(WorkbenchError) as info:
        load_fixtures(path)
    assert {(p.case_id, p.code) for p in info.value.problems} >= {
        ("one", "too_few_reviewers"),
        ("dup", "duplicate_reviewer"),
        ("perm", "review_order_not_permutation"),
        ("adj", "adjudication_without_reviews"),
        ("unrev", "expected_order_unreviewed"),
    }


def test_cli_agreement_on_the_demo_fixtures() -> None:
    runner = CliRunner()
    text = runner.invoke(cli, ["ranking", "agreement", "--fixtures", str(DEMO_V1)])
    assert text.exit_code == 0, text.output
    assert (
        "refund-destination-003 [must-win, refund_policy] adjudicated" in text.output
        and "Kendall's tau" in text.output
    )
    out = runner.invoke(cli, ["ranking", "agreement", "--fixtures", str(DEMO_V1), "--json"])
    report = json.loads(out.output)
    assert report["reviewed"] == 13 and report["unreviewed"] == []
    assert sum(c["pairwise"]["k"] for c in report["cases"]) == report["overall"]["pairwise"]["k"]
    assert sum(c["pairwise"]["n"] for c in report["cases"]) == report["overall"]["pairwise"]["n"]
    assert sum(s["fixtures"] for s in report["slices"].values()) == 13
    adjudicated = [c for c in report["cases"] if c["adjudicated"]]
    assert [c["case_id"] for c in adjudicated] == ["refund-destination-003"] and adjudicated[0][
        "must_win_disputed"
    ]
    # no must-win fixture has an unadjudicated dispute on a must-win pair
    assert not [
        c
        for c in report["cases"]
        if c["gate"] == "must-win" and c["must_win_disputed"] and not c["adjudicated"]
    ]


@pytest.fixture(autouse=True)
def _approvers(tmp_path: Path) -> None:
    approve(tmp_path, "QA lead", "x")  # the test project's approver list


# -- 2. label history ---------------------------------------------------------------------------


def test_reproduction_in_place_relabel_no_longer_turns_a_failing_case_green_silently(
    tmp_path: Path,
) -> None:
    """The attack: a failing case edited in place under the same file version.

    Before: the second report passed with no warning. Now the run history shows the fixture
    changed in place (a review blocker no override can waive), a ranking policy requires a
    frozen release, and a frozen release refuses the edit when it loads.
    """
    path = write_fixtures(tmp_path / "inplace@1.yaml", [reviewed("c1"), reversed_listing("c2")])
    spec = function_spec(tmp_path / "spec", "test_ranking_process:first_shown")
    history = tmp_path / "history.jsonl"
    first_set = load_fixtures(path)
    run(spec, first_set, tmp_path / "run1")
    first = ranking_report(
        first_set, tmp_path / "run1" / "results.jsonl", history=read_history(history)
    )
    assert first.gate.outcome == "quality_failed" and "ranking_reversal_confirmed" in codes(first)
    record_run(history, first, first_set)
    # edit expected_order in place so the judge's (position-driven) order becomes "right"
    doc = yaml.safe_load(path.read_text())
    doc["fixtures"][1]["expected_order"] = ["cand-3", "cand-2", "cand-1"]
    doc["fixtures"][1]["reviews"] = [
        {"reviewer": n, "order": ["cand-3", "cand-2", "cand-1"], "rationale": ["relabelled"]}
        for n in (A, B)
    ]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    edited = load_fixtures(path)
    run(spec, edited, tmp_path / "run2")
    silent = ranking_report(
        edited, tmp_path / "run2" / "results.jsonl"
    )  # no history: what the old report saw
    assert "ranking_reversal_confirmed" not in codes(silent)
    second = ranking_report(
        edited, tmp_path / "run2" / "results.jsonl", history=read_history(history)
    )
    change = next(c for c in second.gate.fixture_changes if c.case_id == "c2")
    assert (
        change.in_place
        and change.old_order == ["cand-1", "cand-2", "cand-3"]
        and change.new_order == ["cand-3", "cand-2", "cand-1"]
    )
    assert "ranking_fixture_changed_in_place" in codes(second) and second.gate.outcome != "passed"
    assert not next(
        b for b in second.gate.blockers if b.code == "ranking_fixture_changed_in_place"
    ).waivable
    # a policy (require_frozen_fixtures defaults to true in a policy file) refuses an unfrozen file
    strict = load_ranking_policy(policy_file(tmp_path / "pol", require_frozen_fixtures=True))
    assert "ranking_fixtures_unfrozen" in codes(
        ranking_report(edited, tmp_path / "run2" / "results.jsonl", policy=strict)
    )


def test_frozen_release_refuses_an_in_place_change(tmp_path: Path) -> None:
    path = write_fixtures(tmp_path / "rel@1.yaml", [reviewed("c1"), reviewed("c2")])
    record, created = freeze_path(path, approver="QA lead", note="calibration round 1")
    assert created and set(record.items) == {"c1", "c2"} and record.kind == "ranking_fixtures"
    assert load_fixtures(path).frozen
    again, created = freeze_path(path, approver="QA lead")
    assert not created and again == record  # the same content is frozen once
    original = path.read_text()
    path.write_text("# a comment only changes nothing frozen\n" + original)
    assert load_fixtures(path).frozen  # formatting and comments are not content
    doc = yaml.safe_load(original)
    doc["fixtures"][1]["expected_order"] = ["cand-2", "cand-1", "cand-3"]
    doc["fixtures"][1]["reviews"] = [
        {"reviewer": n, "order": ["cand-2", "cand-1", "cand-3"], "rationale": ["x"]} for n in (A, B)
    ]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(WorkbenchError) as info:
        load_fixtures(path)
    problem = info.value.problems[0]
    assert (
        (problem.case_id, problem.code) == ("c2", "frozen_case_edited")
        and "QA lead" in problem.message
        and "label, reviews changed" in problem.message
        and "supersedes" in problem.fix
    )
    assert (
        "case_id: c2" in path.read_text().splitlines()[int(problem.location.rsplit(":", 1)[1]) - 1]
    )
    with pytest.raises(WorkbenchError) as info:
        freeze_path(path, approver="QA lead")  # an edited frozen version is never frozen again
    assert info.value.problems[0].code == "frozen_case_edited"
    # a tampered release record does not verify either
    path.write_text(original)
    release = tmp_path / "releases.jsonl"
    data = json.loads(release.read_text())
    data["items"]["c2"] = "0" * 64
    release.write_text(json.dumps(data) + "\n")
    with pytest.raises(WorkbenchError) as info:
        load_fixtures(path)
    assert info.value.problems[0].code == "release_chain_broken"
    # the CLI refuses too (exit 2)
    result = CliRunner().invoke(cli, ["ranking", "agreement", "--fixtures", str(path)])
    assert result.exit_code == 2 and "release_chain_broken" in result.output


def _v2(tmp_path: Path, changes: list[dict[str, Any]] | None, *, relabel: bool = True) -> Path:
    doc = yaml.safe_load((tmp_path / "hist@1.yaml").read_text())
    doc["version"] = "2"
    doc["supersedes"] = "1"
    if relabel:
        new_order = ["cand-1", "cand-3", "cand-2"]
        doc["fixtures"][1]["expected_order"] = new_order
        doc["fixtures"][1]["reviews"] = [
            {"reviewer": n, "order": new_order, "rationale": ["re-reviewed"]} for n in (A, B)
        ]
    if changes is not None:
        doc["changes"] = changes
    path = tmp_path / "hist@2.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_changes_go_in_a_new_version_recording_old_order_new_order_approver_and_reason(
    tmp_path: Path,
) -> None:
    v1 = write_fixtures(tmp_path / "hist@1.yaml", [reviewed("c1"), reviewed("c2")])
    good = [
        {
            "case_id": "c2",
            "old_order": ["cand-1", "cand-2", "cand-3"],
            "new_order": ["cand-1", "cand-3", "cand-2"],
            "approver": "QA lead",
            "reason": "cand-3 is safer",
            "approved_on": "2026-12-01",
        }
    ]
    with pytest.raises(WorkbenchError) as info:
        load_fixtures(_v2(tmp_path, good))
    assert info.value.problems[0].code == "supersedes_unfrozen"
    freeze_path(v1, approver="QA lead")
    with pytest.raises(WorkbenchError) as info:
        load_fixtures(_v2(tmp_path, None))
    assert [(p.case_id, p.code) for p in info.value.problems] == [("c2", "change_unrecorded")]
    wrong_old = [
        {**good[0], "old_order": ["cand-2", "cand-1", "cand-3"]},
        {**good[0], "case_id": "c1"},
    ]
    with pytest.raises(WorkbenchError) as info:
        load_fixtures(_v2(tmp_path, wrong_old))
    assert {(p.case_id, p.code) for p in info.value.problems} == {
        ("c2", "change_old_order_mismatch"),
        ("c1", "change_not_a_change"),
    }
    v2 = load_fixtures(_v2(tmp_path, good))
    change = v2.change_for("c2")
    assert change is not None and change.kind == "relabelled" and change.approver == "QA lead"
    freeze_path(tmp_path / "hist@2.yaml", approver="QA lead")
    chain = label_history(tmp_path / "hist@2.yaml")
    assert [v.label for v in chain] == ["hist@1", "hist@2"]
    assert all(v.release is not None and v.release.approver == "QA lead" for v in chain)
    out = CliRunner().invoke(cli, ["ranking", "history", str(tmp_path / "hist@2.yaml")])
    assert (
        out.exit_code == 0
        and "c2: relabelled; ['cand-1', 'cand-2', 'cand-3'] -> ['cand-1', 'cand-3', 'cand-2'];"
        " approved by QA lead"
        in out.output
    )
    (tmp_path / "hist@1.yaml").unlink()
    with pytest.raises(WorkbenchError) as info:
        load_fixtures(tmp_path / "hist@2.yaml")
    assert info.value.problems[0].code == "supersedes_file_missing"


def test_reports_show_which_fixtures_changed_since_the_last_run(tmp_path: Path) -> None:
    v1 = write_fixtures(tmp_path / "hist@1.yaml", [reviewed("c1"), reviewed("c2")])
    freeze_path(v1, approver="QA lead")
    change = [
        {
            "case_id": "c2",
            "old_order": ["cand-1", "cand-2", "cand-3"],
            "new_order": ["cand-1", "cand-3", "cand-2"],
            "approver": "QA lead",
            "reason": "cand-3 is safer",
            "approved_on": "2026-12-01",
        }
    ]
    v2 = _v2(tmp_path, change)
    spec = function_spec(tmp_path / "spec", "test_ranking_process:quality_ctx")
    history = tmp_path / "h.jsonl"
    runner = CliRunner()
    first = runner.invoke(
        cli,
        [
            "ranking",
            "run",
            "--candidate",
            str(spec),
            "--fixtures",
            str(v1),
            "--out",
            str(tmp_path / "r1"),
            "--history",
            str(history),
            "--no-progress",
            "--no-cache",
        ],
    )
    assert first.exit_code == 0, first.output
    second = runner.invoke(
        cli,
        [
            "ranking",
            "run",
            "--candidate",
            str(spec),
            "--fixtures",
            str(v2),
            "--out",
            str(tmp_path / "r2"),
            "--history",
            str(history),
            "--no-progress",
            "--no-cache",
            "--json",
        ],
    )
    report = json.loads(second.stdout[second.stdout.index("{") :])
    rows = report["gate"]["fixture_changes"]
    assert [
        (r["case_id"], r["change"], r["in_place"], r["old_version"], r["new_version"]) for r in rows
    ] == [("c2", "changed", False, "1", "2")]
    assert rows[0]["recorded"]["approver"] == "QA lead" and rows[0]["old_order"] == [
        "cand-1",
        "cand-2",
        "cand-3",
    ]
    assert "ranking_fixture_changed_in_place" not in [b["code"] for b in report["gate"]["blockers"]]
    assert [e.fixtures for e in read_history(history)] == ["hist@1", "hist@2"]
    text = runner.invoke(
        cli,
        [
            "ranking",
            "--fixtures",
            str(v2),
            "--results",
            str(tmp_path / "r2" / "results.jsonl"),
            "--history",
            str(history),
        ],
    )
    assert (
        "c2: changed 1 -> 2" not in text.output
    )  # the last run is now hist@2 itself: nothing changed since
    assert "fixture changes since the last run" in text.output


# -- 3. release rules -----------------------------------------------------------------------------


def test_confirmed_reversal_blocks_an_unconfirmed_one_routes_to_review(tmp_path: Path) -> None:
    fs = fs_of(reviewed("stable-ok"), reversed_listing("confirmed"), name="rules")
    # first_shown: in the identity order 'confirmed' shows its worst candidate first (3 of 3
    # repeats reverse); 'stable-ok' reverses only under permutations (repeat baseline holds)
    spec = function_spec(tmp_path / "spec", "test_ranking_process:first_shown")
    run(spec, fs, tmp_path / "run")
    results = tmp_path / "run" / "results.jsonl"
    report = ranking_report(fs, results)
    rows = {c.case_id: c for c in report.gate.confirmation}
    assert (
        rows["confirmed"].status,
        rows["confirmed"].repeat_reversals,
        rows["confirmed"].repeat_attempts,
    ) == ("confirmed", 3, 3)
    assert (rows["stable-ok"].status, rows["stable-ok"].repeat_reversals) == (
        "unconfirmed",
        0,
    ) and rows["stable-ok"].reversed_attempts == 4
    assert report.gate.outcome == "quality_failed" and report.gate.exit_code == 1
    statuses = {c.case_id: c.status for c in report.gate.cases}
    assert statuses == {"stable-ok": "review", "confirmed": "fail"}
    # only the unconfirmed one: review required (exit 4)
    alone = ranking_report(
        fs_of(reviewed("stable-ok"), name="rules"),
        [r for r in read_results(results) if r.result.case_id == "stable-ok"],
    )
    assert (
        alone.gate.outcome == "review_required"
        and alone.gate.exit_code == 4
        and codes(alone) == ["ranking_reversal_unconfirmed"]
    )
    # configurable: one reversal in the repeat baseline confirms; fewer repeats than the rule needs
    # is incomplete
    rows_ = [r.result for r in read_results(results)]
    one_of_three = [
        (
            r.model_copy(update={"order": ["cand-1", "cand-2", "cand-3"], "value": "cand-1"})
            if r.case_id == "confirmed"
            and r.presentation["battery"] == "repeat"
            and r.presentation["repetition"] > 0
            else r
        )
        for r in rows_
    ]  # the repeat baseline now reverses 1 of 3 times
    status = {c.case_id: c.status for c in ranking_report(fs, one_of_three).gate.confirmation}
    assert status["confirmed"] == "unconfirmed"  # 1 of 3 is not "at least 2 of 3"
    status = {
        c.case_id: c.status
        for c in ranking_report(
            fs, one_of_three, policy=policy(confirmation={"repeats": 3, "min_reversals": 1})
        ).gate.confirmation
    }
    assert status["confirmed"] == "confirmed"  # "a reversal in the repeat baseline"
    short = tmp_path / "short"
    run(spec, fs, short, repeats=1)
    incomplete = ranking_report(fs, short / "results.jsonl")
    assert incomplete.gate.outcome == "evaluation_incomplete" and "ranking_repeats_short" in codes(
        incomplete
    )
    # confirmed by the previous run: the same unchanged fixture reversed there too
    history = tmp_path / "h.jsonl"
    record_run(history, alone, fs_of(reviewed("stable-ok"), name="rules"))
    again = ranking_report(
        fs_of(reviewed("stable-ok"), name="rules"),
        [r for r in read_results(results) if r.result.case_id == "stable-ok"],
        history=read_history(history),
        policy=policy(confirmation={"previous_run": True}),
    )
    assert (
        again.gate.confirmation[0].status == "confirmed"
        and again.gate.confirmation[0].previous_run_reversed is True
    )


def test_agreement_drop_against_the_last_passing_run_blocks(tmp_path: Path) -> None:
    fs = fs_of(reviewed("a"), reviewed("b"), reviewed("c"), name="drop")
    run(
        function_spec(tmp_path / "good", "test_ranking_process:quality_ctx"),
        fs,
        tmp_path / "good-run",
    )
    run(
        function_spec(tmp_path / "swap", "test_ranking_process:bottom_swap"),
        fs,
        tmp_path / "swap-run",
    )
    examples = tmp_path / "pol" / "drops@1.yaml"
    examples.parent.mkdir()

    def example(example_id: str, candidate_agreement: float, changed: bool) -> dict[str, Any]:
        return {
            "example_id": example_id, "baseline": "b", "candidate": "c",
            "baseline_agreement": 1.0, "candidate_agreement": candidate_agreement,
            "decision_changed": changed, "reviewer": "R", "note": "n",
        }  # fmt: skip

    examples.write_text(
        yaml.safe_dump(
            {
                "kind": "agreement-drop-examples",
                "name": "drops",
                "version": "1",
                "examples": [example("ok", 0.98, False), example("bad", 0.9, True)],
            }  # fmt: skip
        )
    )
    rules = load_ranking_policy(
        policy_file(
            tmp_path / "pol", max_agreement_drop=0.06, agreement_drop_evidence="drops@1.yaml"
        )
    )
    history = tmp_path / "h.jsonl"
    good = ranking_report(fs, tmp_path / "good-run" / "results.jsonl", policy=rules)
    assert good.gate.outcome == "passed" and good.gate.agreement_drop is None
    record_run(history, good, fs)
    worse = ranking_report(
        fs, tmp_path / "swap-run" / "results.jsonl", policy=rules, history=read_history(history)
    )
    drop = worse.gate.agreement_drop
    assert drop is not None and drop.cases == ["a", "b", "c"]
    assert (drop.baseline.k, drop.baseline.n) == (81, 81) and (drop.current.k, drop.current.n) == (
        54,
        81,
    )  # 3 fixtures x 9 attempts x 3 pairs; the swap keeps 2 of 3
    assert (
        drop.drop == pytest.approx(1 / 3, abs=1e-6)
        and drop.blocked
        and worse.must_win.reversals == []
    )
    assert worse.gate.outcome == "quality_failed" and codes(worse) == ["ranking_agreement_drop"]
    # a failed run is never the baseline; a fixture changed since the baseline leaves the stable set
    record_run(history, worse, fs)
    assert (
        ranking_report(
            fs, tmp_path / "swap-run" / "results.jsonl", policy=rules, history=read_history(history)
        ).gate.agreement_drop.baseline.k
        == 81
    )
    changed = fs_of(
        reviewed("a"), reviewed("b"), {**reviewed("c"), "rationale": ["edited"]}, name="drop"
    )
    assert ranking_report(
        changed,
        tmp_path / "swap-run" / "results.jsonl",
        policy=rules,
        history=read_history(history),
    ).gate.agreement_drop.excluded == ["c"]
    # the threshold must be supported by the reviewed examples
    with pytest.raises(WorkbenchError) as info:
        load_ranking_policy(
            policy_file(
                tmp_path / "pol",
                name="loose",
                max_agreement_drop=0.15,
                agreement_drop_evidence="drops@1.yaml",
            )
        )
    assert (
        info.value.problems[0].code == "threshold_not_supported"
        and "bad" in info.value.problems[0].message
    )
    with pytest.raises(WorkbenchError) as info:
        load_ranking_policy(policy_file(tmp_path / "pol", name="bare", max_agreement_drop=0.05))
    assert info.value.problems[0].code == "threshold_without_evidence"


def test_threshold_chosen_from_reviewed_examples() -> None:
    examples = load_agreement_examples(
        ROOT / "data" / "ranking" / "agreement-drop-review@1.yaml"
    ).examples
    choice = choose_agreement_threshold(examples)
    acceptable = [e.drop for e in examples if not e.decision_changed]
    harmful = [e.drop for e in examples if e.decision_changed]
    assert choice.separable and choice.errors == 0
    assert (
        max(acceptable)
        == choice.largest_acceptable_drop
        <= choice.threshold
        < choice.smallest_harmful_drop
        == min(harmful)
    )
    assert (
        load_ranking_policy(RELEASE_POLICY).max_agreement_drop == choice.threshold
    )  # the demo policy uses the chosen value
    overlapping = [
        e.model_copy(update={"decision_changed": True}) if e.example_id == "drop-02" else e
        for e in examples
    ]
    messy = choose_agreement_threshold(
        overlapping
    )  # a small drop reviewers called harmful: no threshold separates them
    assert (
        not messy.separable
        and messy.errors == 1
        and messy.misclassified == ["drop-02"]
        and messy.threshold == max(acceptable)
    )


def test_editorial_drift_routes_to_review_and_report_only_exits_zero(tmp_path: Path) -> None:
    fs = fs_of(reviewed("editorial", gate="monitor-only"), reviewed("firm"), name="edit")
    spec = function_spec(tmp_path / "spec", "test_ranking_process:first_shown")
    run(spec, fs, tmp_path / "run")
    results = tmp_path / "run" / "results.jsonl"
    mine = [r for r in read_results(results) if r.result.case_id == "editorial"]
    report = ranking_report(fs_of(reviewed("editorial", gate="monitor-only"), name="edit"), mine)
    assert report.gate.outcome == "review_required" and codes(report) == ["ranking_editorial_drift"]
    assert (
        ranking_report(
            fs_of(reviewed("editorial", gate="monitor-only"), name="edit"),
            mine,
            policy=policy(editorial_drift="report"),
        ).gate.outcome
        == "passed"
    )
    # report-only: outcomes computed and shown, exit 0, "report only"
    path = write_fixtures(
        tmp_path / "edit@1.yaml",
        [reviewed("editorial", gate="monitor-only"), reversed_listing("firm")],
    )
    rollout = policy_file(tmp_path / "pol", name="rollout", mode="report_only")
    out = CliRunner().invoke(
        cli,
        [
            "ranking",
            "run",
            "--candidate",
            str(spec),
            "--fixtures",
            str(path),
            "--policy",
            str(rollout),
            "--out",
            str(tmp_path / "ro"),
            "--no-history",
            "--no-progress",
            "--no-cache",
        ],
    )
    assert out.exit_code == 0, out.output
    assert (
        "REPORT ONLY" in out.output
        and "report only: outcome quality_failed (exit 1 when enforced)" in out.output
    )
    enforced = policy_file(tmp_path / "pol", name="enforced")
    out = CliRunner().invoke(
        cli,
        [
            "ranking",
            "--fixtures",
            str(path),
            "--results",
            str(tmp_path / "ro" / "results.jsonl"),
            "--policy",
            str(enforced),
            "--no-history",
        ],
    )
    assert out.exit_code == 1 and "QUALITY_FAILED" in out.output


def test_ranking_overrides_waive_case_by_case_and_never_missing_evidence(tmp_path: Path) -> None:
    path = write_fixtures(tmp_path / "ovr@1.yaml", [reviewed("ok"), reversed_listing("bad")])
    spec = function_spec(tmp_path / "spec", "test_ranking_process:first_shown")
    rules_path = policy_file(tmp_path / "pol", name="ovr-policy")
    store = tmp_path / "pol" / "overrides.jsonl"
    runner = CliRunner()
    base = [
        "override",
        "add",
        "--policy",
        str(rules_path),
        "--approver",
        "QA lead",
        "--reason",
        "reviewed: the listed order is a fixture artefact",
        "--expires",
        "2099-01-01",
        "--follow-up",
        "TICKET-1",
        "--store",
        str(store),
    ]
    never = runner.invoke(cli, [*base, "--code", "ranking_incomplete"])
    assert never.exit_code == 2 and "override_code_not_waivable" in never.output
    foreign = runner.invoke(cli, [*base, "--code", "false_passes_exceeded"])
    assert foreign.exit_code == 2 and "override_unknown_code" in foreign.output
    ok = runner.invoke(
        cli,
        [
            *base,
            "--code",
            "ranking_reversal_confirmed",
            "--case",
            "bad",
            "--code",
            "ranking_reversal_unconfirmed",
            "--case",
            "ok",
        ],
    )
    assert ok.exit_code == 0, ok.output
    out = runner.invoke(
        cli,
        [
            "ranking",
            "run",
            "--candidate",
            str(spec),
            "--fixtures",
            str(path),
            "--policy",
            str(rules_path),
            "--overrides",
            str(store),
            "--out",
            str(tmp_path / "run"),
            "--no-history",
            "--no-progress",
            "--no-cache",
            "--json",
        ],
    )
    report = json.loads(out.stdout[out.stdout.index("{") :])
    assert out.exit_code == 0 and report["gate"]["outcome"] == "passed"
    assert sorted(w["blocker"]["code"] for w in report["gate"]["waived"]) == [
        "ranking_reversal_confirmed",
        "ranking_reversal_unconfirmed",
    ]
    # a waiver never covers another case, another policy or an expired period
    rules = load_ranking_policy(rules_path)
    override = build_override(
        store,
        policy=ranking_override_scope(rules_path),
        approver="x",
        reason="r",
        expires_at="2099-01-01",
        follow_up="f",
        codes=["ranking_reversal_confirmed"],
        case_ids=["ok"],
    )
    report2 = ranking_report(
        load_fixtures(path), tmp_path / "run" / "results.jsonl", policy=rules, overrides=[override]
    )
    assert "ranking_reversal_confirmed" in codes(report2)
    # the release gate's matcher: the gate says why, and a whole-run override never waives a
    # fixture's blocker
    assert report2.gate is not None
    assert [(u.override_id, u.reason) for u in report2.gate.unapplied_overrides] == [
        (override.override_id, "not_covered")
    ]
    whole = build_override(
        store,
        policy=ranking_override_scope(rules_path),
        approver="x",
        reason="r",
        expires_at="2099-01-01",
        follow_up="f",
        codes=["ranking_reversal_confirmed"],
    )
    report3 = ranking_report(
        load_fixtures(path), tmp_path / "run" / "results.jsonl", policy=rules, overrides=[whole]
    )
    assert report3.gate is not None and report3.gate.waived == []
    assert "ranking_reversal_confirmed" in codes(report3)
    assert f"override {override.override_id} did not apply: not_covered" in format_ranking(report2)


# -- 4. criterion leakage -------------------------------------------------------------------------


def test_leakage_patterns_per_criterion() -> None:
    f = RankingFixture.model_validate(
        {
            **fixture(),
            "candidates": [
                {"id": "current", "text": "Answer one, under the current policy."},
                {"id": "challenger-x", "text": "Answer two."},
                {"id": "unsafe-z", "text": "Answer three."},
            ],
            "expected_order": ["current", "challenger-x", "unsafe-z"],
        }
    )
    default = LeakageRules()
    assert [h.category for h in scan_reason("challenger-x follows the policy", f, default)] == [
        "candidate_id"
    ]
    assert [
        h.category for h in scan_reason("A is best because it is the first one", f, default)
    ] == ["position"]
    assert [h.category for h in scan_reason("B is listed first and wins", f, default)] == [
        "position"
    ]
    assert [h.category for h in scan_reason("B is longer and more detailed", f, default)] == [
        "length"
    ]
    assert (
        scan_reason(
            "A cites the refund policy; C is ranked last for an unsupported claim", f, default
        )
        == []
    )
    assert (
        scan_reason("the current policy applies to A", f, default) == []
    )  # 'current' is in a fixture text: an ordinary word, not checked
    assert [h.matched for h in scan_reason("unsafe-z is worst", f, default)] == ["unsafe-z"]
    assert (
        scan_reason("B is longer", f, LeakageRules(length=False)) == []
    )  # length is part of this criterion
    tone = LeakageRules(patterns={"tone": r"friendly tone"})
    assert [h.category for h in scan_reason("A has a friendly tone", f, tone)] == ["tone"]
    with pytest.raises(ValueError, match="not a regular expression"):
        LeakageRules(patterns={"bad": "("})


def test_leaky_reasons_are_metric_defects_in_the_report(tmp_path: Path) -> None:
    def responder(request: ChatRequest) -> Reply:
        reply = quality_responder(request)
        body = json.loads(reply.content or "{}")
        body["reason"] = (
            "B is longer and more thorough"
            if "question of leaky" in request.prompt
            else "A states the policy"
        )
        return Reply(value=None, content=json.dumps(body))

    fs = fs_of(reviewed("leaky", criterion_version="crit-len"), reviewed("clean"), name="leak")
    with FakeLLM(responder=responder) as llm:
        run(
            llm_spec(tmp_path / "spec", llm.base_url),
            fs,
            tmp_path / "run",
            max_exhaustive=0,
            sample=2,
            repeats=1,
        )
    report = ranking_report(fs, tmp_path / "run" / "results.jsonl")
    assert {m.case_id for m in report.metric_defects} == {"leaky"} and all(
        m.held for m in report.metric_defects
    )  # the order passed anyway
    assert (report.metric_defect_rate.k, report.metric_defect_rate.n) == (3, 6)
    assert codes(report) == ["ranking_metric_defect"] and report.gate.outcome == "review_required"
    assert (
        report.failures == []
    )  # a passing order has no failure artifact; the defect is listed on its own
    relaxed = policy(leakage={"crit-len": {"length": False}, "*": {}})
    assert (
        ranking_report(fs, tmp_path / "run" / "results.jsonl", policy=relaxed).metric_defects == []
    )


# -- 5. slices ----------------------------------------------------------------------------------


def test_agreement_reversals_and_position_sensitivity_per_slice_with_denominators(
    tmp_path: Path,
) -> None:
    fs = fs_of(
        reviewed("a1", slice="alpha"),
        reversed_listing("a2", slice="alpha"),
        reviewed("b1", slice="beta", gate="monitor-only"),
        name="sl",
    )
    run(function_spec(tmp_path / "spec", "test_ranking_process:first_shown"), fs, tmp_path / "run")
    report = ranking_report(fs, tmp_path / "run" / "results.jsonl")
    by = {s.slice: s for s in report.slices}
    alpha, beta = by["alpha"], by["beta"]
    assert (alpha.cases, alpha.must_win_cases, beta.cases, beta.must_win_cases) == (2, 2, 1, 0)
    assert (alpha.reversed_cases.k, alpha.reversed_cases.n) == (2, 2)
    # a1: 4 of 6 permutations reverse, 0 of 3 repeats; a2: 4 of 6 and 3 of 3
    assert (alpha.reversal_attempts.k, alpha.reversal_attempts.n) == (4 + 4 + 3, 18)
    assert (beta.drift_cases.k, beta.drift_cases.n) == (1, 1) and beta.reversal_attempts.n == 0
    assert (alpha.position_stable.k, alpha.position_stable.n) == (0, 2)
    assert (alpha.first_shown_wins.k, alpha.first_shown_wins.n) == (12, 12)
    agreed = sum(c.pairs.k for c in report.agreement.cases if c.case_id in ("a1", "a2"))
    assert alpha.agreement.k == agreed and alpha.agreement.n == 2 * 9 * 3
    assert "slices.reversal_attempts" in report.denominators


# -- 6. scalar and ranking side by side -----------------------------------------------------------


def test_scalar_and_ranking_gates_side_by_side(tmp_path: Path) -> None:
    fs = fs_of(
        reviewed("agree"), reversed_listing("scalar-only"), reviewed("ranking-only"), name="sbs"
    )
    run(function_spec(tmp_path / "spec", "test_ranking_process:quality_ctx"), fs, tmp_path / "run")
    # quality_ctx orders by content: every case passes the ranking gate
    scalar = [
        ScalarCaseResult(case_id="agree", passed=True, score=0.9),
        ScalarCaseResult(case_id="ranking-only", passed=False, score=0.4),
        ScalarCaseResult(case_id="ghost", passed=True),
    ]
    report = ranking_report(fs, tmp_path / "run" / "results.jsonl", scalar=scalar)
    sbs = report.gate.side_by_side
    assert sbs is not None and sbs.compared == 2 and sbs.both_pass == 1
    assert [r.case_id for r in sbs.scalar_fail_ranking_pass] == [
        "ranking-only"
    ] and sbs.scalar_pass_ranking_fail == []
    assert sbs.scalar_only == ["ghost"] and sbs.ranking_only == ["scalar-only"]
    run(
        function_spec(tmp_path / "spec2", "test_ranking_process:first_shown", name="biased"),
        fs,
        tmp_path / "run2",
    )
    scalar_file = tmp_path / "scalar.jsonl"
    scalar_file.write_text(
        "".join(
            json.dumps({"case_id": c, "passed": True, "score": 4.0}) + "\n"
            for c in ("agree", "scalar-only", "ranking-only")
        )
    )
    out = CliRunner().invoke(
        cli,
        [
            "ranking",
            "--fixtures",
            str(
                write_fixtures(
                    tmp_path / "sbs@1.yaml",
                    [reviewed("agree"), reversed_listing("scalar-only"), reviewed("ranking-only")],
                )
            ),
            "--results",
            str(tmp_path / "run2" / "results.jsonl"),
            "--scalar",
            str(scalar_file),
            "--no-history",
            "--json",
        ],
    )
    gate = json.loads(out.stdout[out.stdout.index("{") :])["gate"]
    rows = {r["case_id"]: r for r in gate["side_by_side"]["scalar_pass_ranking_fail"]}
    assert (
        rows["scalar-only"]["ranking_status"] == "fail"
        and "ranking_reversal_confirmed" in rows["scalar-only"]["ranking_codes"]
    )
    assert rows["agree"]["ranking_status"] == "review"
    scalar_file.write_text(
        '{"case_id": "agree", "passed": "maybe"}\n{"case_id": "agree", "passed": true}\n{"case_id":'
        ' "agree", "passed": false}\n'
    )
    bad = CliRunner().invoke(
        cli,
        [
            "ranking",
            "--fixtures",
            str(tmp_path / "sbs@1.yaml"),
            "--results",
            str(tmp_path / "run2" / "results.jsonl"),
            "--scalar",
            str(scalar_file),
            "--no-history",
        ],
    )
    assert (
        bad.exit_code == 2 and "scalar_invalid" in bad.output and "scalar_duplicate" in bad.output
    )


def test_demo_scalar_outcomes_match_their_generator() -> None:
    committed = [
        json.loads(line)
        for line in (
            (ROOT / "data" / "ranking" / "support-scalar-gate@1.jsonl").read_text().splitlines()
        )
    ]
    assert committed == json.loads(json.dumps(scalar_gate_rows(load_fixtures(DEMO_V1))))
    assert {r["case_id"] for r in committed if not r["passed"]} == {"manager-request-007"}


# -- 7. rendered-request completeness --------------------------------------------------------------


def test_a_candidate_shown_twice_is_flagged_not_only_missing_ones(tmp_path: Path) -> None:
    twice = (
        "Q: {user_input}\n<policy>\n{context}\n</policy>\n{candidates}\n\n"
        "Again:\n{candidates}\nRank best first."
    )
    fs = fs_of(reviewed("dup"), name="dup")
    with FakeLLM(responder=quality_responder) as llm:
        run(
            llm_spec(tmp_path / "spec", llm.base_url, prompt=twice),
            fs,
            tmp_path / "run",
            max_exhaustive=0,
            sample=1,
            repeats=0,
        )
    report = ranking_report(fs, tmp_path / "run" / "results.jsonl")
    assert report.assembly.cases == ["dup"] and (
        report.assembly.duplicated_candidates.k,
        report.assembly.duplicated_candidates.n,
    ) == (1, 1)
    row = next(r.result for r in read_results(tmp_path / "run" / "results.jsonl"))
    check = completeness(fs.fixtures[0], row.rendered_request, row.presentation)
    assert (
        check.source == "capture_evidence"
        and check.duplicated_candidates == ["cand-1", "cand-2", "cand-3"]
        and check.complete is False
    )
    # the same check on a full, inline request; a candidate quoted inside another is not a duplicate
    inline = {
        "prompt": (
            "Answer 1 of dup, quality 3. Answer 2 of dup, quality 2. Answer 2 of dup, quality 2."
            " Policy passage for dup: refunds take 5 business days."
        )
    }
    inline_check = completeness(fs.fixtures[0], inline)
    assert inline_check.duplicated_candidates == ["cand-2"] and inline_check.missing_candidates == [
        "cand-3"
    ]
    strict = policy(assembly_defects="review")
    assert "ranking_assembly_defect" in codes(
        ranking_report(fs, tmp_path / "run" / "results.jsonl", policy=strict)
    )


def test_failure_artifacts_carry_ragas_version_judge_configuration_reproduction_and_owners(
    tmp_path: Path,
) -> None:
    path = write_fixtures(tmp_path / "repro@1.yaml", [reviewed("ok"), reversed_listing("bad")])
    spec = function_spec(tmp_path / "spec", "test_ranking_process:first_shown")
    rules = policy_file(tmp_path / "pol")
    runner = CliRunner()
    out = runner.invoke(
        cli,
        [
            "ranking",
            "run",
            "--candidate",
            str(spec),
            "--fixtures",
            str(path),
            "--policy",
            str(rules),
            "--out",
            str(tmp_path / "run"),
            "--no-history",
            "--no-progress",
            "--no-cache",
            "--json",
        ],
    )
    assert out.exit_code == 1
    report = json.loads(out.stdout[out.stdout.index("{") :])
    for artifact in report["failures"]:
        assert (
            artifact["ragas_version"]
            and artifact["judge"] == "ranker@1"
            and artifact["judge_fingerprint"] == report["judge_fingerprint"]
        )
        assert (
            artifact["judge_configuration"]["kind"] == "ragas-ranking-function"
            and artifact["judge_configuration"]["spec"]["function"]
            == "test_ranking_process:first_shown"
        )
        assert artifact["owners"] == OWNERS and artifact["owner"] in OWNERS
        assert artifact["capture"] == "full" and artifact["request_payload"].startswith("payloads/")
        assert artifact["reproduce"].startswith("workbench ranking replay ")
    bad = next(a for a in report["failures"] if a["case"] == "bad")
    assert bad["diagnosis"] == "position_sensitive" and bad["owner"] == "evaluation"
    on_disk = json.loads((tmp_path / "run" / "failures" / "bad.json").read_text())
    assert (
        on_disk["reproduce"] == bad["reproduce"]
        and on_disk["ragas_version"] == bad["ragas_version"]
    )
    # the command replays the failing attempt from frozen inputs (exit 1: the failure reproduces)
    args = shlex.split(bad["reproduce"])[1:] + ["--out", str(tmp_path / "replay")]
    replayed = runner.invoke(cli, args)
    assert replayed.exit_code == 1, replayed.output
    assert f"returned {bad['actual_order']}" in replayed.output and "REVERSED" in replayed.output
    assert [
        r.result.presentation["presented_order"]
        for r in read_results(tmp_path / "replay" / "results.jsonl")
    ] == [bad["presented_order"]]
    doc = yaml.safe_load(path.read_text())
    doc["fixtures"][1]["rationale"] = ["edited after the run"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    refused = runner.invoke(cli, args[:-1] + [str(tmp_path / "replay2")])
    assert refused.exit_code == 2 and "fixtures_changed" in refused.output


# -- 8. privacy mode ------------------------------------------------------------------------------


def test_digest_and_excerpts_keeps_approved_excerpts_only_and_completeness_still_works(
    tmp_path: Path,
) -> None:
    fs = fs_of(reviewed("p1"), name="priv")
    secret = "question of p1"  # the user input: customer text, not on the allow-list
    capture = CaptureConfig(mode="digest_and_excerpts", excerpts=["context"], retention_days=7)
    with FakeLLM(responder=quality_responder) as llm:
        run(
            llm_spec(tmp_path / "spec", llm.base_url),
            fs,
            tmp_path / "run",
            capture=capture,
            max_exhaustive=0,
            sample=2,
            repeats=1,
        )
        run(  # a ranker that never takes the context (a prompt without it is refused)
            function_spec(tmp_path / "spec-bad", "test_ranking:by_quality", name="bad"),
            fs,
            tmp_path / "bad",
            capture=capture,
            max_exhaustive=0,
            sample=1,
            repeats=0,
        )
        # a resumed run keeps its capture mode
        with pytest.raises(WorkbenchError, match="capture changed") as info:
            run(
                llm_spec(tmp_path / "spec", llm.base_url),
                fs,
                tmp_path / "run",
                capture=CaptureConfig(),
                max_exhaustive=0,
                sample=2,
                repeats=1,
            )
        assert [p.code for p in info.value.problems] == ["capture_changed"]
    results_text = (tmp_path / "run" / "results.jsonl").read_text()
    assert (
        secret not in results_text and "quality 3" not in results_text
    )  # no request text in the results
    rows = [r.result for r in read_results(tmp_path / "run" / "results.jsonl")]
    payloads = [read_payload(tmp_path / "run", r.rendered_request) for r in rows]
    assert all(
        set(p["excerpts"]) == {"context"}
        and secret not in json.dumps(p)
        and "quality 3" not in json.dumps(p)
        for p in payloads
    )
    assert all(
        p["request_sha256"] == r.rendered_request["request_sha256"]
        for p, r in zip(payloads, rows, strict=True)
    )
    assert (
        ranking_report(fs, tmp_path / "run" / "results.jsonl").assembly.incomplete_requests.k == 0
    )
    bad = ranking_report(fs, tmp_path / "bad" / "results.jsonl")
    assert bad.assembly.cases == ["p1"] and (
        bad.assembly.incomplete_requests.k,
        bad.assembly.incomplete_requests.n,
    ) == (
        1,
        1,
    )  # checked from the digests alone
    assert (
        next(r.result for r in read_results(tmp_path / "bad" / "results.jsonl")).rendered_request[
            "evidence"
        ]["context"][0]["present"]
        is False
    )
    assert (
        json.loads((tmp_path / "run" / "capture.json").read_text())["mode"] == "digest_and_excerpts"
    )


def test_prune_removes_expired_payloads_keeps_digests_and_the_locked_run_still_verifies(
    tmp_path: Path,
) -> None:
    path = write_fixtures(tmp_path / "prune@1.yaml", [reviewed("a"), reviewed("b")])
    spec = function_spec(tmp_path / "spec", "test_ranking_process:quality_ctx")
    runner = CliRunner()
    out = runner.invoke(
        cli,
        [
            "ranking",
            "run",
            "--candidate",
            str(spec),
            "--fixtures",
            str(path),
            "--out",
            str(tmp_path / "run"),
            "--capture",
            "full",
            "--retention-days",
            "1",
            "--lock",
            "--no-history",
            "--no-progress",
            "--no-cache",
        ],
    )
    assert out.exit_code == 0, out.output
    run_dir = tmp_path / "run"
    results_before = (run_dir / "results.jsonl").read_bytes()
    payloads = sorted((run_dir / "payloads").glob("*.json"))
    assert (
        len(payloads) == 12 and verify_ranking_run(run_dir) == []
    )  # content-addressed: a repeat of the identity order shares its payload
    # not yet expired: nothing goes
    assert runner.invoke(cli, ["prune", str(tmp_path)]).output.count("pruned 0 payload(s)") == 1
    later = (datetime.now(UTC) + timedelta(days=2)).date().isoformat()
    dry = runner.invoke(cli, ["prune", str(tmp_path), "--now", later, "--dry-run"])
    assert (
        "would prune 12 payload(s)" in dry.output
        and len(list((run_dir / "payloads").glob("*.json"))) == 12
    )
    pruned = runner.invoke(cli, ["prune", str(tmp_path), "--now", later])
    assert (
        pruned.exit_code == 0
        and "pruned 12 payload(s)" in pruned.output
        and "lock verifies" in pruned.output
    )
    assert list((run_dir / "payloads").glob("*.json")) == []
    assert (
        run_dir / "results.jsonl"
    ).read_bytes() == results_before  # digests kept, nothing rewritten
    assert runner.invoke(cli, ["ranking", "verify", str(run_dir)]).exit_code == 0
    # the analysis still works from the digests: complete, checked through capture evidence
    report = ranking_report(load_fixtures(path), run_dir / "results.jsonl")
    assert (
        report.status == "complete"
        and report.assembly.incomplete_requests.n == 18
        and report.assembly.incomplete_requests.k == 0
    )
    # tampering is still caught: an edited result, a forged prune record
    (run_dir / "payloads" / "pruned.jsonl").write_text(
        (run_dir / "payloads" / "pruned.jsonl")
        .read_text()
        .replace('"payload_sha256": "', '"payload_sha256": "0', 1)
    )
    forged = runner.invoke(cli, ["ranking", "verify", str(run_dir)])
    assert forged.exit_code == 1 and "payload_missing" in forged.output
    (run_dir / "results.jsonl").write_bytes(results_before.replace(b'"cand-1"', b'"cand-2"', 1))
    assert "file_changed" in {p.code for p in verify_ranking_run(run_dir)}


def test_a_payload_deleted_before_its_expiry_does_not_verify(tmp_path: Path) -> None:
    fs = fs_of(reviewed("a"), name="early")
    run(
        function_spec(tmp_path / "spec", "test_ranking_process:quality_ctx"),
        fs,
        tmp_path / "run",
        capture=CaptureConfig(retention_days=30),
        repeats=0,
        max_exhaustive=0,
        sample=1,
    )
    from workbench.ranking import lock_ranking_run

    lock_ranking_run(tmp_path / "run", "passed")
    assert prune_run(tmp_path / "run").pruned == []  # nothing has expired
    next((tmp_path / "run" / "payloads").glob("*.json")).unlink()
    assert [p.code for p in verify_ranking_run(tmp_path / "run")] == ["payload_missing"]
    with pytest.raises(WorkbenchError, match="already locked") as info:
        lock_ranking_run(tmp_path / "run", "passed")
    assert [p.code for p in info.value.problems] == ["run_locked"]
    # a locked run takes no further attempts
    with pytest.raises(WorkbenchError, match="run locked") as info:
        run(
            function_spec(tmp_path / "spec", "test_ranking_process:quality_ctx"),
            fs,
            tmp_path / "run",
            repeats=0,
            max_exhaustive=0,
            sample=1,
        )
    assert [p.code for p in info.value.problems] == ["run_locked"]


def _locked_run(tmp_path: Path, *extra: str) -> tuple[Path, Any]:
    """A ranking run locked by `workbench ranking run --lock` (capture with a retention)."""
    path = write_fixtures(tmp_path / "attack@1.yaml", [reviewed("a"), reviewed("b")])
    spec = function_spec(tmp_path / "spec", "test_ranking_process:quality_ctx")
    runner = CliRunner()
    args = ["ranking", "run", "--candidate", str(spec), "--fixtures", str(path)]
    args += ["--out", str(tmp_path / "run"), "--retention-days", "1", "--lock", *extra]
    out = runner.invoke(cli, [*args, "--no-history", "--no-progress", "--no-cache"])
    assert out.exit_code == 0, out.output
    return tmp_path / "run", runner


def test_the_one_verify_refuses_what_the_ranking_lock_of_old_main_accepted(tmp_path: Path) -> None:
    """A locked ranking run is verified like every report (`workbench verify RUN_DIR`). Three
    forgeries the old `ranking_lock.json` verification accepted are refused: a file added under
    payloads/ that is no payload, a `ranking_lock.json` added in a subdirectory (the old lock
    skipped that name anywhere), and a lock whose outcome was rewritten with its own hash
    recomputed, which now disagrees with the hashed ranking_report.json."""
    from workbench._lock import LOCK_FILE, read_lock, write_lock

    run_dir, runner = _locked_run(tmp_path)
    lock = read_lock(run_dir)
    assert lock.kind == "ranking" and lock.payloads and (run_dir / "report.html").is_file()
    assert lock.outcome == "passed" and lock.evidence["report"] is not None
    assert runner.invoke(cli, ["verify", str(run_dir)]).exit_code == 0
    (run_dir / "payloads" / "notes.txt").write_text("not a payload")
    (run_dir / "failures").mkdir(exist_ok=True)
    (run_dir / "failures" / "ranking_lock.json").write_text("{}")
    codes = {p.code: p.location for p in verify_ranking_run(run_dir)}
    assert codes.keys() == {"file_added"}
    added = [p.location for p in verify_ranking_run(run_dir) if p.code == "file_added"]
    assert sorted(Path(x).name for x in added) == ["notes.txt", "ranking_lock.json"]
    for extra in ("payloads/notes.txt", "failures/ranking_lock.json"):
        (run_dir / extra).unlink()
    write_lock(run_dir, lock.model_copy(update={"outcome": "quality_failed"}))
    forged = runner.invoke(cli, ["verify", str(run_dir), "--json"])
    report = json.loads(forged.stdout)["reports"][0]
    assert forged.exit_code == 1 and [p["code"] for p in report["problems"]] == ["outcome_mismatch"]
    assert report["kind"] == "ranking" and report["checks"]["outcome"] == "failed"
    # `workbench ranking verify` is the same verification
    alias = runner.invoke(cli, ["ranking", "verify", str(run_dir)])
    assert alias.exit_code == 1 and "[outcome_mismatch]" in alias.output
    # the old format is refused by name, never taken at its word
    (run_dir / LOCK_FILE).rename(run_dir / "ranking_lock.json")
    assert [p.code for p in verify_ranking_run(run_dir)] == ["lock_format_retired"]


def test_a_signed_ranking_lock_is_checked_against_the_trust_file(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    (tmp_path / "key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    (tmp_path / "trust").write_bytes(public + b" team\n")
    other = Ed25519PrivateKey.generate().public_key()
    (tmp_path / "other").write_bytes(
        other.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    )
    run_dir, runner = _locked_run(tmp_path, "--sign", str(tmp_path / "key"))
    trusted = runner.invoke(cli, ["verify", str(run_dir), "--trust", str(tmp_path / "trust")])
    assert trusted.exit_code == 0 and "signed by a trusted key: team" in trusted.output
    untrusted = runner.invoke(cli, ["verify", str(run_dir), "--trust", str(tmp_path / "other")])
    assert untrusted.exit_code == 1 and "[signature_untrusted]" in untrusted.output
    fixtures = str(tmp_path / "attack@1.yaml")
    no_lock = runner.invoke(
        cli, ["ranking", "run", "--fixtures", fixtures, "--sign", str(tmp_path / "key")]
    )
    assert no_lock.exit_code == 2 and "[sign_without_lock]" in no_lock.output


def test_capture_is_declared_once(tmp_path: Path) -> None:
    path = write_fixtures(tmp_path / "cap@1.yaml", [reviewed("a")])
    spec = function_spec(tmp_path / "spec", "test_ranking_process:quality_ctx")
    rules = policy_file(tmp_path / "pol")
    both = CliRunner().invoke(
        cli,
        [
            "ranking",
            "run",
            "--candidate",
            str(spec),
            "--fixtures",
            str(path),
            "--policy",
            str(rules),
            "--capture",
            "full",
            "--no-history",
        ],
    )
    assert both.exit_code == 2 and "declares the capture mode" in both.output
    excerpt = CliRunner().invoke(
        cli,
        [
            "ranking",
            "run",
            "--candidate",
            str(spec),
            "--fixtures",
            str(path),
            "--excerpt",
            "context",
            "--no-history",
        ],
    )
    assert excerpt.exit_code == 2
    no_retention = tmp_path / "pol" / "noret@1.yaml"
    no_retention.write_text(
        rules.read_text()
        .replace("name: rank-policy", "name: noret")
        .replace("retention_days: 30", "mode: full")
    )
    with pytest.raises(WorkbenchError) as info:
        load_ranking_policy(no_retention)
    assert "policy_retention_missing" in {p.code for p in info.value.problems}


# -- 9. cheap rotation ----------------------------------------------------------------------------


def test_rotation_plan_one_seeded_non_identity_rotation_beside_an_exhaustive_diagnostic_set() -> (
    None
):
    main_fixtures = [RankingFixture.model_validate(fixture(f"m{i}", n=4)) for i in range(6)]
    diagnostic = RankingFixture.model_validate({**fixture("diag", n=4), "diagnostic": True})
    items = position_battery([*main_fixtures, diagnostic], plan="rotation", seed=3, repeats=2)
    by_case: dict[str, list[Any]] = {}
    for item in items:
        by_case.setdefault(item.case_id, []).append(item)
    for f in main_fixtures:
        position = [i for i in by_case[f.case_id] if i.presentation["battery"] == "position"]
        assert len(position) == 1
        shift = position[0].presentation["rotation"]
        ids = f.candidate_ids
        assert (
            1 <= shift <= 3
            and position[0].presentation["presented_order"] == ids[shift:] + ids[:shift] != ids
        )
        assert shift == rotation_shift(4, 3, f.case_id)
        assert len([i for i in by_case[f.case_id] if i.presentation["battery"] == "repeat"]) == 2
    assert (
        len([i for i in by_case["diag"] if i.presentation["battery"] == "position"]) == 24
    )  # the exhaustive battery
    shifts = {rotation_shift(4, s, "m0") for s in range(20)}
    assert shifts == {1, 2, 3}  # seeded: other seeds rotate differently, never to the identity
    again = position_battery([*main_fixtures, diagnostic], plan="rotation", seed=3, repeats=2)
    assert [i.presentation for i in again] == [i.presentation for i in items]
    assert (
        len(items)
        == 6 * (1 + 2) + (24 + 2)
        < len(position_battery([*main_fixtures, diagnostic], repeats=2))
    )


def test_rotation_plan_through_the_cli(tmp_path: Path) -> None:
    path = write_fixtures(
        tmp_path / "rot@1.yaml", [reviewed("a"), {**reversed_listing("diag"), "diagnostic": True}]
    )
    spec = function_spec(tmp_path / "spec", "test_ranking_process:first_shown")
    out = CliRunner().invoke(
        cli,
        [
            "ranking",
            "run",
            "--candidate",
            str(spec),
            "--fixtures",
            str(path),
            "--plan",
            "rotation",
            "--out",
            str(tmp_path / "run"),
            "--no-history",
            "--no-progress",
            "--no-cache",
            "--json",
        ],
    )
    report = json.loads(out.stdout[out.stdout.index("{") :])
    assert report["attempts"] == (1 + 3) + (6 + 3) and report["missing_attempts"] == []
    stability = {c["case_id"] for c in report["position_sensitivity"]["cases"]}
    assert stability == {"diag"}  # per-case position sensitivity on the diagnostic set only
    assert json.loads((tmp_path / "run" / "battery.json").read_text())["plan"] == "rotation"


# -- 10. the demo ----------------------------------------------------------------------------------


def test_demo_fixture_file_two_reviewers_one_adjudicated_disagreement_frozen_with_history() -> None:
    v1 = load_fixtures(DEMO_V1)
    assert v1.frozen and all(len(f.reviews) == 2 for f in v1.fixtures)
    assert all(f.slice for f in v1.fixtures) and sum(f.diagnostic for f in v1.fixtures) == 3
    adjudicated = [f for f in v1.fixtures if f.adjudication]
    assert [f.case_id for f in adjudicated] == ["refund-destination-003"] and adjudicated[
        0
    ].disputed_must_win_pairs()
    v2 = load_fixtures(DEMO_V2)
    assert (
        v2.frozen
        and v2.supersedes == "1"
        and [(c.case_id, c.kind) for c in v2.changes] == [("chargeback-009", "relabelled")]
    )
    before, after = v1.fixture_hashes, v2.fixture_hashes
    assert [c for c in before if before[c] != after[c]] == ["chargeback-009"]
    assert (
        load_ranking_policy(RELEASE_POLICY).mode == "enforce"
        and load_ranking_policy(ROLLOUT_POLICY).mode == "report_only"
    )


def test_demo_confirmed_versus_unconfirmed_reversal_under_the_release_policy(
    tmp_path: Path,
) -> None:
    spec = yaml.safe_load((ROOT / "data" / "candidates" / "support-llm-ranker@1.yaml").read_text())
    runner = CliRunner()
    with FakeLLM(responder=demo_respond) as llm:
        spec["endpoint"] = {**spec["endpoint"], "base_url": llm.base_url}
        spec["endpoint"].pop("base_url_env")
        (tmp_path / "spec").mkdir()
        spec_path = tmp_path / "spec" / "support-llm-ranker@1.yaml"
        spec_path.write_text(yaml.safe_dump(spec))
        args = [
            "ranking",
            "run",
            "--candidate",
            str(spec_path),
            "--fixtures",
            str(DEMO_V2),
            "--history",
            str(tmp_path / "h.jsonl"),
            "--no-progress",
            # One judge, two policies: the rollout run reads the release run's answers back.
            "--cache",
            str(tmp_path / "cache"),
            "--scalar",
            str(ROOT / "data" / "ranking" / "support-scalar-gate@1.jsonl"),
        ]
        enforced = runner.invoke(
            cli,
            [*args, "--policy", str(RELEASE_POLICY), "--out", str(tmp_path / "enforced"), "--lock"],
        )
        calls = llm.call_count
        rollout = runner.invoke(
            cli,
            [*args, "--policy", str(ROLLOUT_POLICY), "--out", str(tmp_path / "rollout"), "--json"],
        )
    assert enforced.exit_code == 1, enforced.output
    assert (
        "ranking_reversal_confirmed: refund-timing-013: must-win reversal confirmed (3 of 3"
        " identical presentations reversed" in enforced.output
    )
    assert "ranking_reversal_unconfirmed: damaged-item-005" in enforced.output
    assert (
        "ranking_metric_defect: refund-timing-013" in enforced.output
    )  # "the first one shown": criterion leakage
    assert "scalar passes, ranking fail: refund-timing-013" in enforced.output
    assert rollout.exit_code == 0
    assert calls > 0 and llm.call_count == calls  # the same answers, from the cache
    gate = json.loads(rollout.stdout[rollout.stdout.index("{") :])["gate"]
    assert (
        gate["mode"] == "report_only"
        and gate["outcome"] == "quality_failed"
        and gate["enforced_exit_code"] == 1
    )
    assert verify_ranking_run(tmp_path / "enforced") == []
    stub = next(
        r.result for r in read_results(tmp_path / "enforced" / "results.jsonl")
    ).rendered_request
    assert stub["capture"] == "digest_and_excerpts" and stub["expires_at"]


# -- formats ---------------------------------------------------------------------------------------


def _models() -> list[type[BaseModel]]:
    import workbench.ranking as r

    names = [
        "FixtureSet",
        "RankingFixture",
        "ReviewerOrder",
        "OrderAdjudication",
        "FixtureChange",
        "VersionHistory",
        "ReviewerAgreementReport",
        "FixtureCalibration",
        "CalibrationFigure",
        "RankingPolicy",
        "Confirmation",
        "Owners",
        "LeakageRules",
        "CaptureConfig",
        "AgreementDropExample",
        "RankingGateResult",
        "RankingHistoryEntry",
        "ScalarCaseResult",
        "SideBySide",
        "RankingLock",
        "FailureArtifact",
        "MetricDefect",
        "SliceFigure",
        "Completeness",
        "RankingReport",
    ]
    return [getattr(r, n) for n in names]


@pytest.mark.parametrize("model", _models(), ids=lambda m: m.__name__)
def test_every_ranking_field_is_documented(model: type[BaseModel]) -> None:
    doc = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    assert [
        n
        for n in model.model_fields
        if f"`{n}`" not in doc
        and f"{n}:" not in doc
        and f"{{{n}" not in doc
        and f" {n}," not in doc
        and f" {n}}}" not in doc
    ] == []
    assert undocumented_fields(model, "schema_version") == []


def test_cached_results_bring_their_payloads_and_never_cross_capture_modes(tmp_path: Path) -> None:
    fs = fs_of(reviewed("a"), name="cache")
    spec = function_spec(tmp_path / "spec", "test_ranking_process:quality_ctx")
    cache = tmp_path / "cache"
    kw: dict[str, Any] = {"cache_dir": cache, "repeats": 0, "max_exhaustive": 0, "sample": 2}
    assert run(spec, fs, tmp_path / "one", **kw).calls == 2
    second = run(spec, fs, tmp_path / "two", **kw)
    assert (second.calls, second.cache_hits) == (0, 2)
    copied = sorted(p.name for p in (tmp_path / "two" / "payloads").glob("*.json"))
    assert (
        copied == sorted(p.name for p in (tmp_path / "one" / "payloads").glob("*.json"))
        and len(copied) == 2
    )
    index = [
        json.loads(line)
        for line in (tmp_path / "two" / "payloads" / "index.jsonl").read_text().splitlines()
    ]
    assert all(row["adopted_from"] for row in index)
    # another capture mode is another cache key: a digest-only run never reuses a full-capture stub
    third = run(
        spec,
        fs,
        tmp_path / "three",
        capture=CaptureConfig(mode="digest_and_excerpts", excerpts=["context"]),
        **kw,
    )
    assert (third.calls, third.cache_hits) == (2, 0)
    assert all(
        r.result.rendered_request["capture"] == "digest_and_excerpts"
        for r in read_results(tmp_path / "three" / "results.jsonl")
    )


def test_ranking_codes_waivability_is_consistent() -> None:
    from workbench.policy import NON_WAIVABLE_CODES, codes_of

    ranking = codes_of("ranking")
    waivable = set(ranking) - NON_WAIVABLE_CODES
    assert waivable == {
        "ranking_reversal_confirmed",
        "ranking_agreement_drop",
        "ranking_reversal_unconfirmed",
        "ranking_editorial_drift",
        "ranking_metric_defect",
        "ranking_assembly_defect",
        "ranking_context_sensitive",
    }  # the module docstring's list
    assert all(ranking[c] != "incomplete" for c in waivable)  # missing evidence is never waived
