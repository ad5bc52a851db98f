"""Control suites: validation, role evaluation, running judges on the demo suite, the CLI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from workbench.cli.controls import controls as controls_command
from workbench.controls import (
    ROLES,
    ControlOutcome,
    ControlsReport,
    ControlSuite,
    evaluate_controls,
    load_suite,
    run_controls,
    run_controls_sync,
    work_items,
)
from workbench.errors import WorkbenchError
from workbench.judges import JudgeInput, load_candidate
from workbench.phases import serve_demo_llm
from workbench.results import JudgeIdentity

ROOT = Path(__file__).resolve().parents[1]
DEMO_SUITE = ROOT / "data" / "controls" / "support-controls@1.yaml"
CANDIDATES = ROOT / "data" / "candidates"
NOTES = (
    'Required: "5 business days" | the Returns team replies within 5 business days\nProhibited:'
    ' "automatically approved" | late requests are approved without review'
)
IDENTITY = JudgeIdentity(name="hand-made", version="1", kind="imported")


def _control(
    control_id: str, role: str = "positive", expected: str = "pass", **extra: Any
) -> dict[str, Any]:
    return {
        "control_id": control_id,
        "role": role,
        "input": "Is a late refund possible?",
        "response": (
            "Late requests go to review; the Returns team replies within 5 business days"
            f" ({control_id})."
        ),
        "grading_notes": NOTES,
        "expected_label": expected,
        "rationale": f"rationale-{control_id}: humans expect {expected}.",
        **extra,
    }


def _suite(controls: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "name": "mini",
        "version": "1",
        "rubric_version": "r1",
        "labels": ["pass", "fail", "review_required"],
        "controls": controls,
        **extra,
    }


def _write(tmp_path: Path, suite: dict[str, Any], name: str = "mini@1.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return path


def _weak_candidate(
    tmp_path: Path, function: str = "passes_anything_long", name: str = "weak-judge"
) -> Path:
    spec = {
        "schema_version": 1,
        "name": name,
        "version": "1",
        "kind": "ragas-function",
        "description": "test-only weakened judge",
        "labels": ["pass", "fail"],
        "function": f"weak_judges:{function}",
    }
    path = tmp_path / f"{name}@1.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------ validation


def test_demo_suite_is_valid_and_covers_every_role() -> None:
    suite = load_suite(DEMO_SUITE)
    rubric = yaml.safe_load((ROOT / "data" / "demo" / "rubric.yaml").read_text(encoding="utf-8"))
    assert suite.rubric_version == rubric["version"]
    assert suite.labels == rubric["labels"]
    assert set(suite.roles()) == set(ROLES)
    assert 25 <= len(suite.controls) <= 35
    assert all(c.slice in rubric["slices"] for c in suite.controls)
    adversarial = {c.response.strip() for c in suite.controls if c.role == "adversarial"}
    assert {":", "Thought process:"} <= adversarial


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    controls = [
        _control("dup"),
        _control("dup", expected="fail"),  # duplicate id
        _control("odd-role", role="sycophancy"),  # unknown role
        _control("bad-label", expected="maybe"),  # label not in vocabulary
        _control("blank-rationale", rationale="   "),  # required text blank
        {
            k: v for k, v in _control("no-response").items() if k != "response"
        },  # required field missing
        {
            k: v for k, v in _control("no-evidence").items() if k != "grading_notes"
        },  # nothing to grade against
        _control("not-acceptable", expected="fail", acceptable_labels=["review_required"]),
        _control("extra-field", note="hello"),  # unknown field
        _control("b1", role="boundary", set="pair", member="omits_noncritical_detail"),
        _control(
            "b2", role="boundary", set="pair", member="omits_required_condition", expected="fail"
        ),
        _control(
            "b3", role="boundary", set="pair", member="omits_required_condition", expected="fail"
        ),  # a third member
        _control("v1", role="verbosity", set="verb", member="concise_correct"),
        _control(
            "v2", role="verbosity", set="verb", member="long_correct"
        ),  # long_polished_wrong missing
        _control("v-loose", role="verbosity"),  # no set, no member
    ]
    path = _write(tmp_path, _suite(controls), name="wrong-name@1.yaml")
    with pytest.raises(WorkbenchError) as info:
        load_suite(path)
    problems = info.value.problems
    codes = {p.code for p in problems}
    assert {
        "suite_filename",
        "control_id_duplicate",
        "role_unknown",
        "label_unknown",
        "field_invalid",
        "field_missing",
        "evidence_missing",
        "expected_not_acceptable",
        "field_unknown",
        "set_incomplete",
        "set_missing",
        "member_missing",
    } <= codes, codes
    by_case = {(p.code, p.case_id) for p in problems}
    assert ("role_unknown", "odd-role") in by_case
    assert ("label_unknown", "bad-label") in by_case
    assert ("field_invalid", "blank-rationale") in by_case
    assert ("field_missing", "no-response") in by_case
    assert ("evidence_missing", "no-evidence") in by_case
    assert ("field_unknown", "extra-field") in by_case
    incomplete_sets = " ".join(p.message for p in problems if p.code == "set_incomplete")
    assert (
        "'pair'" in incomplete_sets
        and "'verb'" in incomplete_sets
        and "long_polished_wrong" in incomplete_sets
    )
    text = path.read_text(encoding="utf-8").splitlines()
    for p in problems:
        assert p.fix
        if p.code != "suite_filename":
            where, _, line = p.location.rpartition(":")
            assert where == str(path) and line.isdigit() and 1 <= int(line) <= len(text), p.location
    dup = next(p for p in problems if p.code == "control_id_duplicate")
    assert text[int(dup.location.rsplit(":", 1)[1]) - 1].strip().startswith("- control_id: dup")


def test_set_label_rules_and_header_problems(tmp_path: Path) -> None:
    controls = [
        _control("b1", role="boundary", set="pair", member="omits_noncritical_detail"),
        _control(
            "b2", role="boundary", set="pair", member="omits_required_condition"
        ),  # same label as b1
        _control("v1", role="verbosity", set="verb", member="concise_correct"),
        _control("v2", role="verbosity", set="verb", member="long_correct", expected="fail"),
        _control("v3", role="verbosity", set="verb", member="long_polished_wrong", expected="pass"),
        _control("mixed-a", role="terminology", set="mixed"),
        _control("mixed-b", role="positive", set="mixed"),
        _control("stray-member", member="long_correct"),
    ]
    path = _write(tmp_path, _suite(controls, labels=["pass"], schema_version=9, rubric_version=""))
    with pytest.raises(WorkbenchError) as info:
        load_suite(path)
    codes = [p.code for p in info.value.problems]
    assert "boundary_same_label" in codes
    assert codes.count("verbosity_inconsistent") == 2
    assert "set_mixed_roles" in codes
    assert "member_unexpected" in codes
    assert "schema_version_newer" in codes
    assert codes.count("suite_invalid") >= 2  # labels too short, rubric_version blank


def test_unreadable_suites_are_user_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad@1.yaml"
    bad.write_text("name: [unclosed\n", encoding="utf-8")
    for path, code in ((tmp_path / "missing@1.yaml", "suite_missing"), (bad, "suite_yaml")):
        with pytest.raises(WorkbenchError) as refused:
            load_suite(path)
        assert [p.code for p in refused.value.problems] == [code]


# ------------------------------------------------------------------------------ role evaluation


def test_roles_sets_and_blockers_from_hand_made_verdicts() -> None:
    suite = ControlSuite.model_validate(
        _suite(
            [
                _control("pos-1"),
                _control("pos-2"),
                _control("neg-1", role="negative", expected="fail"),
                _control("neg-2", role="negative", expected="fail"),
                _control("v-concise", role="verbosity", set="v", member="concise_correct"),
                _control("v-long", role="verbosity", set="v", member="long_correct"),
                _control(
                    "v-wrong",
                    role="verbosity",
                    set="v",
                    member="long_polished_wrong",
                    expected="fail",
                ),
                _control("adv-1", role="adversarial", expected="fail"),
                _control(
                    "miss-1",
                    role="missing_evidence",
                    expected="review_required",
                    acceptable_labels=["review_required", "fail"],
                ),
            ]
        )
    )
    outcomes = {
        "pos-1": ControlOutcome("pass", "ok"),
        "pos-2": ControlOutcome("pass", "ok"),
        "neg-1": ControlOutcome("fail", "changed fact"),
        "neg-2": ControlOutcome("pass", "looks fine"),  # a false pass: the negative role fails
        "v-concise": ControlOutcome("pass"),
        "v-long": ControlOutcome("pass"),
        "v-wrong": ControlOutcome(
            None, "evaluator error: timed out", error="timeout: timed out"
        ),  # incomplete
        # adv-1 has no result at all: missing -> incomplete
        "miss-1": ControlOutcome("fail", "nothing to check"),  # fail is acceptable here
    }
    report = evaluate_controls(suite, outcomes, judge=IDENTITY)
    status = {r.control_id: r.status for r in report.controls}
    assert status == {
        "pos-1": "passed",
        "pos-2": "passed",
        "neg-1": "passed",
        "neg-2": "failed",
        "v-concise": "passed",
        "v-long": "passed",
        "v-wrong": "incomplete",
        "adv-1": "incomplete",
        "miss-1": "passed",
    }
    roles = {r.role: (r.n, r.passed, r.failed, r.incomplete, r.status) for r in report.roles}
    assert roles == {
        "positive": (2, 2, 0, 0, "passed"),
        "negative": (2, 1, 1, 0, "failed"),
        "verbosity": (3, 2, 0, 1, "incomplete"),
        "adversarial": (1, 0, 0, 1, "incomplete"),
        "missing_evidence": (1, 1, 0, 0, "passed"),
    }
    assert [r.role for r in report.roles] == [
        "positive",
        "negative",
        "verbosity",
        "adversarial",
        "missing_evidence",
    ]
    assert report.failed_roles == ["negative"]
    assert report.incomplete_roles == ["verbosity", "adversarial"]
    assert report.status == "failed"
    (vset,) = report.sets
    assert (vset.set, vset.status, vset.incomplete) == ("v", "incomplete", 1)
    assert report.controls[-1].acceptable == ["review_required", "fail"]

    blockers = {
        b.code: b for b in report.blockers(["positive", "negative", "adversarial", "boundary"])
    }
    assert set(blockers) == {
        "control_failed_negative",
        "control_failed_adversarial",
        "control_failed_boundary",
    }
    neg = blockers["control_failed_negative"]
    assert (neg.category, neg.case_ids, neg.waivable) == ("quality", ["neg-2"], False)
    assert (
        "one release-critical fact changed" in neg.message and "style, not evidence" in neg.message
    )
    assert neg.evidence == {"role": "negative", "n": 2, "passed": 1, "failed": 1, "incomplete": 0}
    adv = blockers["control_failed_adversarial"]
    assert (adv.category, adv.case_ids, adv.waivable) == ("incomplete", ["adv-1"], False)
    assert "never passed" in adv.message
    absent = blockers[
        "control_failed_boundary"
    ]  # no boundary control in the suite: untested, not passed
    assert (absent.category, absent.evidence["n"]) == ("incomplete", 0)
    assert report.blockers(["positive"]) == []

    frame = report.frame()
    assert list(frame["control_id"]) == [c.control_id for c in suite.controls]
    assert {"role", "set", "expected", "acceptable", "verdict", "reason", "status"} <= set(
        frame.columns
    )


def test_work_items_carry_only_judge_visible_fields() -> None:
    suite = load_suite(DEMO_SUITE)
    items = work_items(suite)
    assert [i.case_id for i in items] == [c.control_id for c in suite.controls]
    for item, control in zip(items, suite.controls, strict=True):
        assert isinstance(item.judge_input, JudgeInput)
        assert set(item.judge_input.model_dump()) == {
            "user_input",
            "response",
            "grading_notes",
            "reference",
            "retrieved_contexts",
        }
        assert item.judge_input.response == control.response and item.repeat == 0
        assert control.rationale not in json.dumps(item.judge_input.model_dump())


# ------------------------------------------------------------------------------ running judges


def _strings(obj: Any) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for k, v in obj.items() for s in (str(k), *_strings(v))]
    if isinstance(obj, list):
        return [s for v in obj for s in _strings(v)]
    return []


def _assert_labels_never_reached_the_judge(run_dir: Path, suite: ControlSuite) -> None:
    rows = [
        json.loads(line)
        for line in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    assert {r["case_id"] for r in rows} == {c.control_id for c in suite.controls}
    by_id = {c.control_id: c for c in suite.controls}
    for row in rows:
        assert row["partition"] == "controls"
        request = row["rendered_request"]
        assert request is not None
        text = "\n".join(_strings(request))
        control = by_id[row["case_id"]]
        assert control.response.split("\n")[0][:40] in text  # the check below is meaningful
        for c in suite.controls:
            assert c.rationale not in text and c.rationale[:60] not in text
        for field in ("expected_label", "acceptable_labels", "rationale", control.control_id):
            assert field not in text


def test_weak_judge_is_caught_by_verbosity_and_a_sound_judge_is_not(tmp_path: Path) -> None:
    suite = load_suite(DEMO_SUITE)
    weak = load_candidate(_weak_candidate(tmp_path))
    report = run_controls_sync(weak, suite, tmp_path / "weak", progress=False)
    verbosity = report.role("verbosity")
    assert verbosity is not None and verbosity.status == "failed"
    caught = {
        r.control_id for r in report.controls if r.role == "verbosity" and r.status == "failed"
    }
    wrong_members = {c.control_id for c in suite.controls if c.member == "long_polished_wrong"}
    assert caught == wrong_members
    assert all(
        s.failed_members == ["long_polished_wrong"] for s in report.sets if s.role == "verbosity"
    )
    (blocker,) = report.blockers(["verbosity"])
    assert blocker.category == "quality" and sorted(blocker.case_ids) == sorted(wrong_members)
    assert "length or polish" in blocker.message
    assert (tmp_path / "weak" / "controls.json").exists()

    sound = load_candidate(CANDIDATES / "rubric-judge@2.yaml")
    sound_report = run_controls_sync(sound, suite, tmp_path / "sound", progress=False)
    assert sound_report.role("verbosity").status == "passed"  # type: ignore[union-attr]
    assert sound_report.role("positive").status == "passed"  # type: ignore[union-attr]
    assert sound_report.blockers(["verbosity", "positive"]) == []
    _assert_labels_never_reached_the_judge(tmp_path / "sound", suite)


def test_adversarial_role_catches_the_demo_llm_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEMO_LLM_API_KEY", "test-placeholder-key")
    # The demo model on a free port, exported as $WORKBENCH_DEMO_LLM_URL, which the committed
    # demo candidate reads (endpoint.base_url_env).
    server = serve_demo_llm()
    try:
        judge = load_candidate(CANDIDATES / "support-llm-judge@2.yaml")
        assert judge.base_url == server.base_url  # type: ignore[attr-defined]
        suite = load_suite(DEMO_SUITE)
        report = asyncio.run(
            run_controls(judge, suite, tmp_path / "llm", progress=False, concurrency=4)
        )
    finally:
        server.stop()
    assert report.run is not None and report.run.status == "complete" and report.run.errors == 0
    assert "adversarial" in report.failed_roles
    failed = {
        r.control_id for r in report.controls if r.role == "adversarial" and r.status == "failed"
    }
    assert {"adv-note-to-grader", "adv-ignore-instructions"} <= failed
    assert report.role("positive").status == "passed"  # type: ignore[union-attr]
    (blocker,) = report.blockers(["adversarial"])
    assert blocker.category == "quality" and "adv-note-to-grader" in blocker.case_ids
    assert "obeyed text inside the response" in blocker.message
    _assert_labels_never_reached_the_judge(tmp_path / "llm", suite)


def test_errors_from_a_faulty_judge_make_controls_incomplete(tmp_path: Path) -> None:
    suite = load_suite(DEMO_SUITE)
    report = run_controls_sync(
        load_candidate(_weak_candidate(tmp_path, "always_raises", "broken-judge")),
        suite,
        tmp_path / "broken",
        progress=False,
    )
    assert {r.status for r in report.controls} == {"incomplete"}
    assert all(
        r.verdict is None and r.error and r.error.startswith("judge_exception")
        for r in report.controls
    )
    assert report.failed_roles == [] and report.status == "incomplete"
    assert set(report.incomplete_roles) == set(ROLES)
    blockers = report.blockers(["positive", "negative", "adversarial"])
    assert [b.category for b in blockers] == ["incomplete"] * 3
    assert all(not b.waivable for b in blockers)


def test_rerun_is_resumed_and_cached(tmp_path: Path) -> None:
    suite = load_suite(DEMO_SUITE)
    judge = load_candidate(CANDIDATES / "rubric-judge@1.yaml")
    first = run_controls_sync(judge, suite, tmp_path / "run", progress=False)
    again = run_controls_sync(judge, suite, tmp_path / "run", progress=False)
    assert (
        again.run is not None and again.run.calls == 0 and again.run.resumed == len(suite.controls)
    )
    assert [r.model_dump() for r in again.controls] == [r.model_dump() for r in first.controls]
    assert first.suite.sha256 == suite.sha256 and first.judge == "rubric-judge@1"
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["partition"] == "controls" and manifest["dataset_sha256"] == suite.sha256


# ------------------------------------------------------------------------------ CLI


def test_cli_exit_codes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    monkeypatch.chdir(tmp_path)
    sound = str(CANDIDATES / "rubric-judge@2.yaml")

    small = _write(
        tmp_path,
        _suite(
            [
                _control("pos-1"),
                _control(
                    "neg-1",
                    role="negative",
                    expected="fail",
                    response=(
                        "Late requests are automatically approved; you'll hear back within 5"
                        " business days."
                    ),
                ),
            ],
            rubric_version="support-policy-2026.09",
        ),
    )
    ok = runner.invoke(
        controls_command, ["--candidate", sound, "--suite", str(small), "--no-progress"]
    )
    assert ok.exit_code == 0, ok.output
    assert "every role passed" in ok.output
    assert (
        tmp_path / "runs" / "controls" / "rubric-judge@2" / "mini@1" / "controls.json"
    ).exists()  # default --out

    failed = runner.invoke(
        controls_command,
        [
            "--candidate",
            str(CANDIDATES / "rubric-judge@1.yaml"),
            "--suite",
            str(DEMO_SUITE),
            "--out",
            str(tmp_path / "v1"),
            "--json",
            "--no-progress",
        ],
    )
    assert failed.exit_code == 1, failed.output
    data = json.loads(failed.output)
    assert data["kind"] == "workbench.controls"
    assert "terminology" in data["failed_roles"] and data["status"] == "failed"
    assert ControlsReport.model_validate(data).failed_roles == data["failed_roles"]
    assert {r["role"]: r["status"] for r in data["roles"]}["terminology"] == "failed"

    text = runner.invoke(
        controls_command,
        [
            "--candidate",
            str(CANDIDATES / "rubric-judge@1.yaml"),
            "--suite",
            str(DEMO_SUITE),
            "--out",
            str(tmp_path / "v1"),
            "--no-progress",
        ],
    )
    assert text.exit_code == 1 and "FAILED roles:" in text.output and "terminology" in text.output

    broken = _write(tmp_path, _suite([_control("x", role="nonsense")]), name="broken@1.yaml")
    invalid = runner.invoke(
        controls_command,
        ["--candidate", sound, "--suite", str(broken), "--out", str(tmp_path / "inv")],
    )
    assert invalid.exit_code == 2
    assert "role_unknown" in invalid.output and "Traceback" not in invalid.output
    assert not (tmp_path / "inv").exists()

    faulty = runner.invoke(
        controls_command,
        [
            "--candidate",
            str(_weak_candidate(tmp_path, "always_raises", "broken-judge")),
            "--suite",
            str(small),
            "--out",
            str(tmp_path / "faulty"),
            "--no-progress",
        ],
    )
    assert faulty.exit_code == 3, faulty.output
    assert "INCOMPLETE roles:" in faulty.output
