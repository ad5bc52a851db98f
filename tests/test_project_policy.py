"""The user's own project: the policy drafted from the imported data, notebooks on the project's
policy (issue 29, points 3 and 8).

- `workbench init` + `import table` drafts the project's policy: one block per imported slice at
  the template's strictest limits and the imported rubric's version; a policy a person edited is
  never overwritten.
- The develop and calibrate notebooks take gold, candidates and policy from `workbench.yaml`;
  when the policy does not fit the gold's rubric they say so at the top, instead of `–`.
"""

from __future__ import annotations

import asyncio
import csv
import json
import re
from pathlib import Path

import nbformat
import pytest
import yaml
from click.testing import CliRunner
from conftest import make_project, use_project

from workbench.cli.main import main
from workbench.errors import WorkbenchError, problem
from workbench.phases import DevelopSession
from workbench.policy import load_policy
from workbench.project import init_project
from workbench.reports import slice_table

ROOT = Path(__file__).resolve().parents[1]
NAME = "halu"
SLICES = ("model-a", "model-b", "model-c")


def _table(path: Path, slices: tuple[str, ...] = SLICES) -> Path:
    """Long-form reviews in the columns the init mapping names, one topic per slice."""
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["id", "question", "answer", "reviewer", "verdict", "topic"])
        for i in range(18):
            for who in ("ann", "bo"):
                vote = "pass" if i % 2 else "fail"
                writer.writerow([f"q{i}", f"Q {i}?", f"A {i}.", who, vote, slices[i % len(slices)]])
    return path


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str = "2026-q4") -> Path:
    """`workbench init` in a fresh folder (pinned as the project root); the mapping's rubric
    version set to ``version``, as the user's import declares it."""
    root = init_project(tmp_path / "proj", name=NAME).root.resolve()
    use_project(monkeypatch, root)
    monkeypatch.chdir(root)
    mapping = root / "data" / NAME / "mapping.yaml"
    mapping.write_text(mapping.read_text().replace('version: "1"', f'version: "{version}"'))
    return root


def _import(root: Path, table: Path) -> object:
    args = ["import", "table", str(table), "--mapping", f"data/{NAME}/mapping.yaml"]
    return CliRunner().invoke(main, [*args, "--out", f"data/{NAME}"])


def test_import_table_after_init_drafts_one_block_per_slice_and_the_rubric_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path, monkeypatch)
    policy = root / "data" / "policies" / f"{NAME}@1.yaml"
    result = _import(root, _table(tmp_path / "reviews.csv"))
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert f"policy drafted: {policy}: 3 slice block(s) (model-a, model-b, model-c)" in (
        result.output  # type: ignore[attr-defined]
    )
    drafted = yaml.safe_load(policy.read_text())
    assert drafted["rubric_version"] == "2026-q4"
    assert list(drafted["slices"]) == list(SLICES)
    assert "REPLACE_WITH_A_SLICE_NAME:" not in policy.read_text()
    for spec in drafted["slices"].values():  # the template's strictest limits and risk
        assert spec["risk"] == "critical" and spec["max_false_pass_rate"] == 0.0
        assert spec["min_n"] == 35 and spec["false_pass_rate_basis"] == "upper_95"
    # Still fail closed: the owner and rationale are a person's to write; the fix names the docs.
    with pytest.raises(WorkbenchError) as refused:
        load_policy(policy)
    owner = [p for p in refused.value.problems if "owner" in p.message]
    assert owner and owner[0].code == "policy_invalid"
    assert "docs/formats.md#policy-owner-and-rationale" in owner[0].fix
    assert "_policy.py" not in owner[0].fix
    # Written, it loads with exactly the rubric's slices.
    policy.write_text(
        policy.read_text()
        .replace('owner: ""', "owner: Eval lead")
        .replace('rationale: ""', "rationale: Written before results.", 1)
    )
    loaded = load_policy(policy)
    assert set(loaded.slices) == set(SLICES) and loaded.rubric_version == "2026-q4"


def test_an_untouched_draft_follows_new_slices_and_an_edited_policy_is_never_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path, monkeypatch)
    policy = root / "data" / "policies" / f"{NAME}@1.yaml"
    assert _import(root, _table(tmp_path / "a.csv")).exit_code == 0  # type: ignore[attr-defined]
    # A re-import with a fourth slice redrafts the untouched draft.
    again = _import(root, _table(tmp_path / "b.csv", (*SLICES, "model-d")))
    assert "policy drafted" in again.output, again.output  # type: ignore[attr-defined]
    assert list(yaml.safe_load(policy.read_text())["slices"]) == [*SLICES, "model-d"]
    # A person's edit: the file stays byte for byte, and the import says what to add by hand.
    edited = policy.read_text().replace('owner: ""', "owner: Eval lead")
    policy.write_text(edited)
    third = _import(root, _table(tmp_path / "c.csv", (*SLICES, "model-d", "model-e")))
    assert third.exit_code == 0, third.output  # type: ignore[attr-defined]
    assert policy.read_text() == edited
    assert f"policy not drafted: {policy}" in third.output  # type: ignore[attr-defined]
    assert "model-e" in third.output  # type: ignore[attr-defined]


def test_a_policy_edited_before_the_first_import_is_not_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path, monkeypatch)
    policy = root / "data" / "policies" / f"{NAME}@1.yaml"
    edited = policy.read_text().replace("REPLACE_WITH_A_SLICE_NAME", "model-a")
    policy.write_text(edited)
    result = _import(root, _table(tmp_path / "reviews.csv"))
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert policy.read_text() == edited
    assert "policy not drafted" in result.output  # type: ignore[attr-defined]


def _other_policy(project: Path) -> Path:
    """The demo policy written for another rubric version and other slices: what the develop
    notebook applied to a user's data."""
    text = (ROOT / "data" / "policies" / "support-release@3.yaml").read_text()
    text = re.sub(r"(?m)^name: .*$", "name: other-release", text, count=1)
    text = re.sub(r"(?m)^rubric_version: .*$", "rubric_version: other-rubric-1", text, count=1)
    path = project / "policies" / "other-release@3.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _configure(project: Path, **keys: object) -> None:
    config = project / "workbench.yaml"
    data = yaml.safe_load(config.read_text())
    config.write_text(yaml.safe_dump({**data, **keys}))


def test_inputs_come_from_workbench_yaml_and_missing_ones_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.project import project_inputs

    project = use_project(monkeypatch, make_project(tmp_path / "proj"))
    inputs = project_inputs()
    assert inputs.gold == project / "data" / "demo"
    assert inputs.policy == project / "data" / "policies" / "support-release@3.yaml"
    assert inputs.candidates[0] == project / "data" / "candidates" / "support-llm-judge@1.yaml"
    assert inputs.sources["gold"] == str(project / "workbench.yaml")
    given = project_inputs(gold="elsewhere", policy="", candidates=["c.yaml"])
    assert given.policy is None and given.gold == Path("elsewhere")
    assert given.sources == {"gold": "parameter", "policy": "parameter", "candidates": "parameter"}
    assert given.optional == {} and "score_candidate" not in given.summary()  # develop's inputs
    # the calibrate notebook's optional inputs: None takes the key, "" asks for none
    demo = project / "data" / "candidates"
    calibrate = project_inputs(score_candidate=None, migration_old="", migration_new="new.yaml")
    assert calibrate.optional == {
        "score_candidate": demo / "coverage-judge@1.yaml",
        "migration_old": None,
        "migration_new": Path("new.yaml"),
    }
    assert (
        f"score_candidate: {demo / 'coverage-judge@1.yaml'} (from {project / 'workbench.yaml'})"
        in calibrate.summary()
    )
    assert "migration_old: (none) (from parameter)" in calibrate.summary()
    _configure(project, score_candidate=None)  # a user's project names none: nothing, no error
    assert project_inputs(score_candidate=None).optional == {"score_candidate": None}
    with pytest.raises(TypeError, match="score_candiate"):
        project_inputs(score_candiate="x.yaml")
    config = yaml.safe_load((project / "workbench.yaml").read_text())
    (project / "workbench.yaml").write_text(
        yaml.safe_dump({k: v for k, v in config.items() if k not in ("gold", "candidates")})
    )
    with pytest.raises(WorkbenchError) as refused:
        project_inputs()
    assert [p.code for p in refused.value.problems] == ["project_input_missing"] * 2
    _configure(project, gold=["a", "b"], candidates=[3], controls=["a.yaml"])
    with pytest.raises(WorkbenchError) as invalid:
        project_inputs()
    assert [p.code for p in invalid.value.problems] == ["project_config_invalid"] * 3


def test_develop_session_says_when_the_policy_does_not_fit_and_shows_limits_when_it_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.phases import PolicyNotice
    from workbench.project import project_inputs

    project = use_project(monkeypatch, make_project(tmp_path / "proj"))
    inputs = project_inputs(candidates=[ROOT / "data" / "candidates" / "rubric-judge@2.yaml"])
    session = DevelopSession(inputs.gold, run_root=tmp_path / "runs")
    policy, notice = session.release_policy(inputs.policy)  # the project's policy fits
    assert policy is not None and notice is None
    iteration = asyncio.run(session.run(session.load(inputs.candidates[0]), progress=False))
    limits = slice_table(iteration.report, policy).data
    assert (limits["FP limit"] != "–").all() and "pass" in set(limits["result"])

    _configure(project, policy=str(_other_policy(project).relative_to(project)))
    other, notice = session.release_policy(project_inputs().policy)
    assert other is not None and notice is not None
    assert "does not match rubric" in notice.title and "results show –" in notice.title
    assert "policy_rubric_mismatch" in [p.code for p in notice.problems]
    assert "Notice: policy other-release@3 does not match" in notice._repr_html_()
    hostile = PolicyNotice("<script>t</script>", (problem("x", "c", "<img src=x>", "<b>f</b>"),))
    shown = hostile._repr_html_()  # the notice's text is escaped, never markup
    assert "<script>" not in shown and "<img" not in shown and "<b>f" not in shown
    assert "&lt;img src=x&gt;" in shown

    _configure(project, policy=None)  # no policy named at all
    none, notice = session.release_policy(project_inputs().policy)
    assert none is None and notice is not None
    assert [p.code for p in notice.problems] == ["policy_missing"]
    with pytest.raises(WorkbenchError) as refused:  # calibrate gates: it needs one
        session.release_policy(None, required=True)
    assert [p.code for p in refused.value.problems] == ["policy_missing"]


@pytest.mark.notebook
def test_develop_notebook_shows_the_notice_on_top_with_a_policy_for_another_rubric(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_notebooks import _execute

    project = use_project(monkeypatch, make_project(tmp_path / "proj"))
    _configure(project, policy=str(_other_policy(project).relative_to(project)))
    out = tmp_path / "dev.ipynb"
    _execute(
        str(ROOT / "notebooks" / "01_develop.ipynb"),
        str(out),
        parameters={
            "run_root": str(tmp_path / "runs"),
            "notes_path": str(tmp_path / "notes.jsonl"),
        },
        cwd=str(ROOT / "notebooks"),
        progress_bar=False,
        kernel_name="python3",
    )
    nb = nbformat.read(out, as_version=4)
    outputs = [json.dumps(c.get("outputs", [])) for c in nb.cells if c.cell_type == "code"]
    first = next(i for i, text in enumerate(outputs) if text != "[]")
    assert "Notice: policy other-release@3 does not match rubric" in outputs[first]
    assert "policy_rubric_mismatch" in outputs[first]
    assert all("<table" not in text for text in outputs[:first])
    assert (
        f"gold: {project / 'data' / 'demo'} (from {project / 'workbench.yaml'})" in outputs[first]
    )
