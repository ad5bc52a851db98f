"""Candidate lineage: ``parent`` and ``changes``; derive one change at a time; save refuses more.

Reproduction (old main): ``session.derive(base, version="2", prompt=..., params=...)`` changed
two things at once without a word, and ``session.save`` wrote any spec, so a version whose
verdicts moved could not be attributed to the change its author meant to make.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from conftest import make_case

from workbench.errors import WorkbenchError
from workbench.judges import derive_spec, load_candidate, load_spec
from workbench.migration import identity_changes, judge_changes, request_parity
from workbench.phases import DevelopSession

ROOT = Path(__file__).resolve().parents[1]
KEY_ENV = "WB_DECLARED_KEY"


def llm_spec(directory: Path, version: str = "1", **extra) -> Path:
    data = {
        "name": "dc-llm",
        "version": version,
        "kind": "ragas-llm",
        "labels": ["pass", "fail"],
        "model": "fake",
        "prompt": "Notes: {grading_notes}\nResponse: {response}",
        "endpoint": {"base_url": "http://127.0.0.1:9/v1", "api_key_env": KEY_ENV},
        "params": {"temperature": 0},
        **extra,
    }
    path = directory / f"dc-llm@{version}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def session(make_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> DevelopSession:
    monkeypatch.setenv(KEY_ENV, "k")
    gold = make_dataset([make_case("d1"), make_case("d2", "fail")])
    return DevelopSession(gold, run_root=tmp_path / "runs")


def test_derive_records_parent_and_the_one_change(session: DevelopSession, tmp_path: Path) -> None:
    base = session.load(llm_spec(tmp_path))
    tuned = session.derive(base, version="2", prompt=session.prompt_of(base) + "\nBe strict.")
    assert (tuned.spec.parent, tuned.spec.changes) == ("dc-llm@1", ["prompt"])
    assert judge_changes(base, tuned) == ["prompt"]
    saved = session.save(tuned, tmp_path / "out")
    raw = yaml.safe_load(saved.read_text())
    assert raw["parent"] == "dc-llm@1" and raw["changes"] == ["prompt"]
    assert load_candidate(saved).identity.fingerprint() == tuned.identity.fingerprint()


def test_derive_refuses_two_changes_unless_told(session: DevelopSession, tmp_path: Path) -> None:
    base = session.load(llm_spec(tmp_path))
    with pytest.raises(WorkbenchError) as info:
        session.derive(base, version="2", prompt="Strict. {response}", params={"temperature": 0.5})
    assert [p.code for p in info.value.problems] == ["derive_multiple_changes"]
    both = session.derive(
        base,
        version="2",
        prompt="Strict. {response}",
        params={"temperature": 0.5},
        allow_multiple=True,
    )
    assert both.spec.changes == ["prompt", "params"] and judge_changes(base, both) == [
        "prompt",
        "params",
    ]


def test_derive_refuses_a_change_it_does_not_declare(
    session: DevelopSession, tmp_path: Path
) -> None:
    base = session.load(llm_spec(tmp_path))
    with pytest.raises(WorkbenchError) as info:
        session.derive(base, version="2", prompt="Strict. {response}", changes=["params"])
    assert [p.code for p in info.value.problems] == ["undeclared_change"]
    with pytest.raises(WorkbenchError) as info:
        derive_spec(base.spec, version="2", name="other")
    assert info.value.problems[0].code == "derive_field"
    # passing a value equal to the parent's is no change at all
    same = derive_spec(base.spec, version="2", prompt="x {response}", params={"temperature": 0})
    assert same.changes == ["prompt"]


def test_save_refuses_a_version_that_changes_more_than_it_declares(
    session: DevelopSession, tmp_path: Path
) -> None:
    base = session.load(llm_spec(tmp_path))
    # written by hand: declares a prompt change, also changes the parameters
    sneaky_path = llm_spec(
        tmp_path,
        "2",
        prompt="Strict. {response}",
        params={"temperature": 0.9},
        parent="dc-llm@1",
        changes=["prompt"],
    )
    sneaky = session.load(sneaky_path)
    with pytest.raises(WorkbenchError) as info:
        session.save(sneaky, tmp_path / "out")
    (problem,) = info.value.problems
    assert problem.code == "undeclared_change" and "params" in problem.message
    assert not (tmp_path / "out" / "dc-llm@2.yaml").exists()
    # declaring nothing while naming a parent is refused too
    (tmp_path / "v3").mkdir()
    silent = session.load(
        llm_spec(tmp_path / "v3", "3", prompt="Other. {response}", parent="dc-llm@1")
    )
    with pytest.raises(WorkbenchError) as info:
        session.save(silent, tmp_path / "out")
    assert info.value.problems[0].code == "undeclared_change"
    assert base.spec.label == "dc-llm@1"


def test_save_needs_the_parent(
    make_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "k")
    fresh = DevelopSession(make_dataset([make_case("d1")]), run_root=tmp_path / "runs")
    orphan = fresh.load(llm_spec(tmp_path, "2", parent="dc-llm@1", changes=["prompt"]))
    with pytest.raises(WorkbenchError) as info:
        fresh.save(orphan, tmp_path / "out")
    assert info.value.problems[0].code == "parent_unknown"
    # found next to where it is saved: checked against it
    (tmp_path / "out").mkdir()
    llm_spec(tmp_path / "out", "1", prompt="Other prompt. {response}")
    assert fresh.save(orphan, tmp_path / "out").name == "dc-llm@2.yaml"


def test_lineage_fields_are_not_part_of_the_fingerprint(tmp_path: Path) -> None:
    for name in ("rubric-judge@1", "coverage-judge@1"):
        original = ROOT / "data" / "candidates" / f"{name}.yaml"
        copy = tmp_path / original.name
        shutil.copy(original, copy)
        before = load_candidate(copy).identity.fingerprint()
        raw = yaml.safe_load(copy.read_text())
        assert "parent" not in load_spec(copy)[0].model_dump(
            mode="json"
        )  # unset fields are left out
        raw.update(parent="someone@0", changes=["prompt"])
        copy.write_text(yaml.safe_dump(raw))
        assert load_candidate(copy).identity.fingerprint() == before


def test_changes_need_a_parent_and_known_kinds(tmp_path: Path) -> None:
    bad = llm_spec(tmp_path, changes=["prompt"])
    with pytest.raises(WorkbenchError) as info:
        load_spec(bad)
    assert "changes needs parent" in info.value.problems[0].message
    bad = llm_spec(tmp_path, parent="dc-llm@0", changes=["tone"])
    with pytest.raises(WorkbenchError) as info:
        load_spec(bad)
    assert "not change kinds" in info.value.problems[0].message


def test_demo_versions_declare_what_they_change(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEMO_LLM_API_KEY", "k")
    monkeypatch.setenv("WORKBENCH_DEMO_LLM_URL", "http://127.0.0.1:40020/v1")  # built, never called
    c = ROOT / "data" / "candidates"
    r1, r2 = load_candidate(c / "rubric-judge@1.yaml"), load_candidate(c / "rubric-judge@2.yaml")
    s1, s2 = (
        load_candidate(c / "support-llm-judge@1.yaml"),
        load_candidate(c / "support-llm-judge@2.yaml"),
    )
    assert judge_changes(r1, r2) == r2.spec.changes == ["function"]
    assert judge_changes(s1, s2) == s2.spec.changes == ["prompt"]
    assert identity_changes(r1.identity, r1.identity) == []
    from workbench.gold import load_dataset

    cases = load_dataset(ROOT / "data" / "demo").partition("development")
    parity = request_parity(s1, s2, cases)
    assert parity.differing_cases == parity.cases == len(cases)
    assert [k.key for k in parity.keys] == ["prompt"] and parity.observed_kinds == ["prompt"]
    assert "+Terminology guide" in (parity.first_diff or "")
