"""`workbench init DIR`: templates that load with the real loaders once a person fills them, never
before.

The walk-through test runs the commands of the generated NEXT_STEPS.md as printed (import,
validate, agreement, card, run, align, controls, gate), against the local fake LLM.
"""

from __future__ import annotations

import csv
import re
import shlex
from pathlib import Path
from typing import Any

import click
import nbformat
import pytest
import yaml
from click.testing import CliRunner

from workbench.cli.main import main
from workbench.controls import ROLES, load_suite
from workbench.errors import WorkbenchError
from workbench.gold import load_dataset, load_rubric
from workbench.importers import load_mapping
from workbench.judges import build_judge, load_spec
from workbench.policy import Policy, SlicePolicy, load_policy
from workbench.project import INPUT_KEYS, TEMPLATES, init_project
from workbench.testing import FakeLLM, Reply, Rule

NAME = "faq"
ROOT = Path(__file__).resolve().parents[1]
FILES = [
    "data/faq/rubric.yaml",
    "data/faq/card.md",
    "data/faq/mapping.yaml",
    "data/policies/faq@1.yaml",
    "data/candidates/faq-judge@1.yaml",
    "data/candidates/prompts/faq-judge@1.md",
    "data/controls/faq-controls@1.yaml",
    "workbench.yaml",
    "NEXT_STEPS.md",
]


def cli(*args: Any) -> Any:
    return CliRunner().invoke(main, [str(a) for a in args])


def fill_blanks(path: Path, text: str = "Written by a person.") -> None:
    """Replace every blank string of a YAML file with text, as a person writing the
    template would.
    """

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return text if node == "" else node

    path.write_text(yaml.safe_dump(walk(yaml.safe_load(path.read_text())), sort_keys=False))


def test_init_writes_every_template_and_refuses_to_overwrite(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    result = cli("init", root, "--name", NAME)
    assert result.exit_code == 0, result.output
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) == sorted(FILES)
    assert [target.format(name=NAME) for _, target in TEMPLATES] == FILES
    assert "__" not in "".join((root / f).read_text() for f in FILES)  # every token replaced
    before = {f: (root / f).read_bytes() for f in FILES}

    again = cli("init", root, "--name", NAME)
    assert again.exit_code == 2
    listed = [line for line in again.output.splitlines() if "[init_file_exists]" in line]
    assert sorted(line.split(": error:")[0] for line in listed) == sorted(
        str(root / f) for f in FILES
    )
    assert {f: (root / f).read_bytes() for f in FILES} == before

    # One existing file is enough to write nothing at all, and it is left untouched.
    other = tmp_path / "other"
    (other / "data" / "policies").mkdir(parents=True)
    (other / "data" / "policies" / "faq@1.yaml").write_text("mine\n")
    refused = cli("init", other, "--name", NAME)
    assert refused.exit_code == 2 and refused.output.count("[init_file_exists]") == 1
    assert [p for p in other.rglob("*") if p.is_file()] == [
        other / "data" / "policies" / "faq@1.yaml"
    ]
    assert (other / "data" / "policies" / "faq@1.yaml").read_text() == "mine\n"


def test_default_name_and_invalid_names(tmp_path: Path) -> None:
    assert init_project(tmp_path / "support-bot").name == "support-bot"
    with pytest.raises(WorkbenchError) as info:
        init_project(tmp_path / "x", name="has space")
    assert info.value.problems[0].code == "init_name_invalid"
    assert not (tmp_path / "x").exists()


def test_unfilled_templates_refuse_to_load(tmp_path: Path) -> None:
    root = init_project(tmp_path / "p", name=NAME).root
    with pytest.raises(WorkbenchError) as info:
        load_policy(root / "data/policies/faq@1.yaml")
    assert {p.message.split(":")[0] for p in info.value.problems} >= {"owner", "rationale"}
    with pytest.raises(WorkbenchError) as info:
        load_spec(root / "data/candidates/faq-judge@1.yaml")
    assert {p.message.split(":")[0] for p in info.value.problems} == {
        "pricing.input_per_million_usd",
        "pricing.output_per_million_usd",
    }
    with pytest.raises(WorkbenchError) as info:
        load_suite(root / "data/controls/faq-controls@1.yaml")
    assert (
        len(info.value.problems) >= 4 * 11
    )  # input, response, grading_notes, rationale of each control
    with pytest.raises(WorkbenchError) as info:
        load_rubric(root / "data/faq/rubric.yaml")
    assert [p.code for p in info.value.problems] == ["rubric_risk_unset"]


def test_filled_templates_load_with_the_real_loaders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = init_project(tmp_path / "p", name=NAME).root
    # Rubric: a person sets the placeholder slice's risk.
    rubric_path = root / "data/faq/rubric.yaml"
    rubric_path.write_text(rubric_path.read_text().replace("risk: unset", "risk: critical"))
    rubric = load_rubric(rubric_path)

    # Policy: owner, rationale, and the rubric's slices in place of the placeholder.
    policy_path = root / "data/policies/faq@1.yaml"
    raw = yaml.safe_load(policy_path.read_text())
    assert set(raw) == set(Policy.model_fields)  # every policy-level field is present
    [placeholder] = raw["slices"].values()
    assert set(placeholder) == set(SlicePolicy.model_fields)  # every slice limit is present
    # ... at its strictest.
    assert raw["max_evaluator_errors"] == 0 and raw["max_cost_usd"] == 0
    assert raw["controls"]["blocking_roles"] == list(ROLES)
    assert all(
        placeholder[k] == 0
        for k in (
            "max_false_passes",
            "max_false_pass_rate",
            "max_false_fail_rate",
            "max_abstention_rate",
        )
    )
    assert (
        placeholder["false_pass_rate_basis"] == placeholder["false_fail_rate_basis"] == "upper_95"
    )
    assert placeholder["risk"] == "critical"
    text = (
        policy_path.read_text()
        .replace('owner: ""', "owner: Quality lead")
        .replace('rationale: ""', "rationale: Written before results.")
    )
    text = text.replace("REPLACE_WITH_A_SLICE_NAME", next(iter(rubric.slices)))
    policy_path.write_text(text)
    policy = load_policy(policy_path)
    assert policy.label == "faq@1" and policy.rubric_version == rubric.version
    assert (
        set(policy.slices) == set(rubric.slices)
        and policy.slices["general"].risk == rubric.slices["general"].risk
    )
    assert (policy_path.parent / policy.controls.suite).resolve() == (
        root / "data/controls/faq-controls@1.yaml"
    ).resolve()

    # Candidate: model and prices; the key is read from the variable it names.
    spec_path = root / "data/candidates/faq-judge@1.yaml"
    raw_spec = yaml.safe_load(spec_path.read_text())
    assert (
        raw_spec["endpoint"]["api_key_env"] == "OPENAI_API_KEY" and raw_spec["kind"] == "ragas-llm"
    )
    spec_path.write_text(
        spec_path.read_text()
        .replace("model: null", "model: fake-judge")
        .replace("_usd: null", "_usd: 0.5")
    )
    spec, path = load_spec(spec_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(WorkbenchError) as info:
        build_judge(spec, path)
    assert [p.code for p in info.value.problems] == ["api_key_missing"]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-placeholder-for-the-test")
    judge = build_judge(spec, path)
    assert {"grading_notes", "reference", "user_input", "response"} <= judge.placeholders

    # Control suite: every blank written.
    suite_path = root / "data/controls/faq-controls@1.yaml"
    fill_blanks(suite_path)
    suite = load_suite(suite_path)
    assert suite.roles() == list(ROLES) and suite.labels == rubric.labels

    # Mapping: loads as written.
    mapping = load_mapping(root / "data/faq/mapping.yaml")
    assert mapping.name == NAME and mapping.rubric.version == rubric.version


def _reviews_csv(path: Path) -> Path:
    """A table in the columns the mapping template names, labels pass/fail."""
    topics = ["billing", "shipping"]
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["id", "question", "answer", "reviewer", "verdict", "topic"])
        for i in range(24):
            votes = ["pass", "pass", "fail"] if i % 3 else ["fail", "fail", "pass"]
            for who, vote in zip(["ann", "bo", "cy"], votes, strict=True):
                writer.writerow(
                    [f"q{i}", f"Question {i}?", f"Answer {i}.", who, vote, topics[i % 2]]
                )
    return path


def _commands(next_steps: str) -> list[list[str]]:
    blocks = re.findall(r"^ *```\n(.*?)^ *```", next_steps, flags=re.S | re.M)
    lines = [line.strip() for block in blocks for line in block.splitlines()]
    return [shlex.split(line) for line in lines if line.startswith("workbench ")]


def _parameter_names(notebook: str) -> list[str]:
    nb = nbformat.read(ROOT / "notebooks" / notebook, as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    return re.findall(r"(?m)^(\w+) = ", cell.source)


@pytest.mark.parametrize("notebook", ["01_develop.ipynb", "02_calibrate.ipynb"])
def test_next_steps_sets_every_parameter_of_the_phase_notebooks(
    tmp_path: Path, notebook: str
) -> None:
    """The parameters cell NEXT_STEPS prints for each phase notebook names every parameter (none
    left at a demo default), is Python, takes every input from workbench.yaml (None) and serves
    no demo model; workbench.yaml names (or shows, commented) every input key."""
    root = init_project(tmp_path / "proj", name=NAME).root
    text = (root / "NEXT_STEPS.md").read_text()
    block = next(
        m.group(1)
        for m in re.finditer(r"^ *```\n(.*?)^ *```", text, flags=re.S | re.M)
        if m.start() > text.index(notebook) and re.search(r"(?m)^\w+ = ", m.group(1))
    )
    values: dict[str, Any] = {}
    exec(block, {}, values)  # the block is the template's own text
    assert sorted(values) == sorted(_parameter_names(notebook))
    inputs = {key for key in values if key in INPUT_KEYS or key == "candidate"}
    assert inputs and all(values[key] is None for key in inputs), inputs
    assert values["serve_fake_llm"] is False
    assert all(str(root) in values[k] for k in values if k.endswith(("_root", "_path", "save_to")))
    config = (root / "workbench.yaml").read_text()
    for key in INPUT_KEYS:
        assert re.search(rf"(?m)^#? ?{key}:", config), key


@pytest.mark.notebook
def test_next_steps_walk_through_runs_as_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = init_project(tmp_path / "proj", name=NAME).root
    next_steps = (root / "NEXT_STEPS.md").read_text()
    commands = _commands(next_steps)
    verbs = [c[1] for c in commands]
    # The order a user follows: import -> validate -> agreement -> develop -> calibrate -> certify.
    assert verbs == [
        "import",
        "validate",
        "freeze",
        "agreement",
        "card",
        "controls",
        "run",
        "align",
        "run",
        "gate",
        "certify",
        "verify",
    ]
    assert (
        next_steps.index("01_develop.ipynb")
        < next_steps.index("--partition calibration")
        < next_steps.index("workbench certify")
    )
    # Every command and option exists.
    for args in commands:
        command: Any = main
        words = args[1:]
        while (
            isinstance(command, click.Group)
            and words
            and (sub := command.get_command(click.Context(command), words[0])) is not None
        ):
            command, words = sub, words[1:]
        command.make_context(args[1], list(words))

    source = _reviews_csv(tmp_path / "reviews.csv")
    monkeypatch.chdir(root)
    monkeypatch.delenv("WORKBENCH_PROJECT_ROOT")  # the user's way: the project is where they are
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-for-the-fake-server")

    def run(args: list[str], expect: tuple[int, ...] = (0,)) -> Any:
        args = [str(source) if a == "path/to/reviews.csv" else a for a in args]
        result = CliRunner().invoke(main, args[1:])
        assert result.exit_code in expect, (args, result.output)
        assert "Traceback" not in result.output
        return result

    by_verb: dict[str, list[list[str]]] = {}
    for args in commands:
        by_verb.setdefault(args[1], []).append(args)
    imported = run(by_verb["import"][0])  # the mapping template, unedited, fits this table
    assert "policy drafted: " in imported.output and "2 slice block(s)" in imported.output
    run(by_verb["validate"][0], expect=(2,))  # risks still unset
    rubric = root / "data/faq/rubric.yaml"
    rubric.write_text(rubric.read_text().replace("risk: unset", "risk: high"))
    assert "OK - 24 cases" in run(by_verb["validate"][0]).output
    refused = run(by_verb["freeze"][0], expect=(2,))  # nobody listed yet: nothing is frozen
    assert "approvers_missing" in refused.output
    monkeypatch.setenv("WORKBENCH_USER", "Quality lead")
    config = root / "workbench.yaml"
    config.write_text(config.read_text().replace("approvers: []", "approvers: [Quality lead]"))
    assert "froze release rel-1-" in run(by_verb["freeze"][0]).output
    run(by_verb["agreement"][0])
    run(by_verb["card"][0])

    policy = root / "data/policies/faq@1.yaml"
    text = (
        policy.read_text()
        .replace('owner: ""', "owner: Quality lead")
        .replace('rationale: ""', "rationale: Written first.")
    )
    # The import drafted one block per slice at the template's risk: set the rubric's.
    assert "  REPLACE_WITH_A_SLICE_NAME:" not in text and "  billing:" in text
    policy.write_text(text.replace("risk: critical", "risk: high"))
    assert set(load_policy(policy).slices) == set(load_dataset(root / "data/faq").rubric.slices)
    fill_blanks(root / "data/controls/faq-controls@1.yaml")
    spec = root / "data/candidates/faq-judge@1.yaml"
    with FakeLLM(
        rules=[Rule(contains="Answer 3.", reply=Reply(value="pass"))],
        default=Reply(value="fail"),
        require_api_key="sk-test-key-for-the-fake-server",
    ) as server:
        spec.write_text(
            spec.read_text()
            .replace("model: null", "model: fake-judge")
            .replace("https://api.openai.com/v1", server.base_url)
            .replace("_usd: null", "_usd: 0.15")
        )
        run(by_verb["controls"][0], expect=(0, 1))
        run(by_verb["run"][0])
        aligned = run(by_verb["align"][0])
        assert "development" in aligned.output
        # The develop notebook saves version 2; here the same spec stands in for it.
        (root / "data/candidates/faq-judge@2.yaml").write_text(
            spec.read_text().replace('version: "1"', 'version: "2"')
        )
        run(by_verb["run"][1])
        gated = run(by_verb["gate"][0], expect=(1, 3, 4))
        assert server.call_count > 0
    # Every limit starts at its strictest: nothing certifies until the owner loosens them.
    assert "certified" not in gated.output.splitlines()[0]
