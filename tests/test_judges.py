"""Candidate specs, fingerprints, the judge-input allow-list and the ragas-function kind."""

from __future__ import annotations

import asyncio
from pathlib import Path

import judge_fixtures
import pytest
import yaml
from conftest import make_case

from workbench.errors import WorkbenchError
from workbench.gold import GoldCase
from workbench.judges import JUDGE_VISIBLE_FIELDS, JudgeInput, load_candidate, load_spec

SPEC = {
    "name": "kw",
    "version": "1",
    "kind": "ragas-function",
    "labels": ["pass", "fail"],
    "function": "judge_fixtures:keyword_judge",
}


def write_spec(directory: Path, **changes: object) -> Path:
    spec = {**SPEC, **changes}
    path = directory / f"{spec['name']}@{spec['version']}.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def test_judge_input_is_built_from_the_allow_list_only() -> None:
    marker = "LABEL-MARKER-7f3a"
    case = GoldCase.model_validate(
        make_case(
            "c1",
            "fail",
            reviews=[
                {"reviewer": "r1", "label": "fail", "rationale": marker},
                {"reviewer": "r2", "label": "fail", "rationale": marker},
            ],
            adjudication={"label": "fail", "reason": marker, "adjudicator": marker},
            tags=[marker],
            metadata={"note": marker},
            group=marker,
            response="Your refund was approved.",
            input="Can I get my money back?",
        )
    )
    judge_input = JudgeInput.from_case(case)
    rendered = judge_input.model_dump_json()
    assert marker not in rendered
    assert '"fail"' not in rendered and "c1" not in rendered  # neither the label nor the case id
    assert set(judge_input.model_dump()) == set(JUDGE_VISIBLE_FIELDS.values())


def test_judge_input_refuses_gold_only_fields() -> None:
    with pytest.raises(ValueError, match="adjudication"):
        JudgeInput(user_input="q", response="r", adjudication={"label": "pass"})  # type: ignore[call-arg]


def test_label_bearing_fields_never_reach_the_metric(tmp_path: Path) -> None:
    marker = "GOLD-ONLY-91c2"
    case = GoldCase.model_validate(
        make_case(
            "c1",
            "pass",
            response="refund approved",
            adjudication={"label": "pass", "reason": marker, "adjudicator": marker},
            metadata={"x": marker},
        )
    )
    judge = load_candidate(write_spec(tmp_path))
    judge_fixtures.SEEN.clear()
    verdict = asyncio.run(judge.evaluate(JudgeInput.from_case(case)))
    assert verdict.value == "pass"
    assert judge_fixtures.SEEN and all(marker not in str(seen) for seen in judge_fixtures.SEEN)
    assert marker not in str(judge.render(JudgeInput.from_case(case)))


def test_fingerprint_changes_with_any_spec_field(tmp_path: Path) -> None:
    base = load_candidate(write_spec(tmp_path)).identity.fingerprint()
    variants = [
        {"description": "different"},
        {"params": {"threshold": 2}},
        {"labels": ["pass", "fail", "review_required"]},
        {"pricing": {"input_per_million_usd": 1.0}},
        {"function": "judge_fixtures:wide", "labels": ["pass", "fail", "maybe"]},
    ]
    seen = {base}
    for i, change in enumerate(variants):
        sub = tmp_path / f"v{i}"
        sub.mkdir()
        fp = load_candidate(write_spec(sub, **change)).identity.fingerprint()
        assert fp not in seen, change
        seen.add(fp)


def test_fingerprint_is_stable_and_records_ragas_version(tmp_path: Path) -> None:
    import ragas

    a = load_candidate(write_spec(tmp_path)).identity
    b = load_candidate(write_spec(tmp_path)).identity
    assert a.fingerprint() == b.fingerprint()
    assert a.ragas_version == ragas.__version__
    assert a.prompt_sha256 and len(a.prompt_sha256) == 64


def test_function_errors_are_evaluator_errors_not_verdicts(tmp_path: Path) -> None:
    judge_input = JudgeInput(user_input="q", response="r", grading_notes="g")
    off = asyncio.run(
        load_candidate(write_spec(tmp_path, function="judge_fixtures:off_vocabulary")).evaluate(
            judge_input
        )
    )
    assert off.value is None and off.error is not None and off.error.kind == "invalid_label"
    boom = asyncio.run(
        load_candidate(write_spec(tmp_path, function="judge_fixtures:raising")).evaluate(
            judge_input
        )
    )
    assert boom.value is None and boom.error is not None and boom.error.kind == "judge_exception"
    assert "judge blew up" in boom.error.message
    lacking = asyncio.run(
        load_candidate(write_spec(tmp_path, function="judge_fixtures:needs_reference")).evaluate(
            judge_input
        )
    )
    assert lacking.error is not None and "reference" in lacking.error.message


def test_a_function_judge_gives_ragas_own_verdicts_and_reasons(tmp_path: Path) -> None:
    """The judge calls the user's Ragas metric as Ragas ships it: the same verdicts and
    reasons as the metric's own ``ascore``."""
    metric = judge_fixtures.keyword_judge
    judge = load_candidate(write_spec(tmp_path))
    responses = ("a refund", "no", "refund now", "later")
    verdicts = [
        asyncio.run(judge.evaluate(JudgeInput(user_input="q", response=r, grading_notes="g")))
        for r in responses
    ]
    assert [v.value for v in verdicts] == ["pass", "fail", "pass", "fail"]
    assert [v.reason for v in verdicts] == [
        asyncio.run(metric.ascore(user_input="q", response=r, grading_notes="g")).reason
        for r in responses
    ]
    assert judge.metric is metric


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"function": "judge_fixtures:not_a_metric"}, "function_not_metric"),
        ({"function": "no_such_module:x"}, "function_unresolved"),
        ({"function": "judge_fixtures:wide"}, "labels_mismatch"),
        ({"kind": "telepathy"}, "unknown_kind"),
        ({"endpoint": {"api_key_env": "sk-abcdefghijklmnopqrstuvwx"}}, "secret_in_spec"),
        ({"params": {"api_key": "sk-abcdefghijklmnopqrstuvwx"}}, "secret_in_spec"),
    ],
)
def test_bad_specs_are_refused_with_a_problem(
    tmp_path: Path, change: dict[str, object], code: str
) -> None:
    with pytest.raises(WorkbenchError) as info:
        load_candidate(write_spec(tmp_path, **change))
    assert code in {p.code for p in info.value.problems}
    assert all(p.fix for p in info.value.problems)


def test_spec_file_name_must_match_name_and_version(tmp_path: Path) -> None:
    path = tmp_path / "something.yaml"
    path.write_text(yaml.safe_dump(SPEC), encoding="utf-8")
    with pytest.raises(WorkbenchError) as info:
        load_spec(path)
    assert [p.code for p in info.value.problems] == ["candidate_filename"]
