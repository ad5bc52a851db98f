"""The one input loader (issue 14 §3): UTF-8 -> YAML with line numbers -> model -> problems.

The first tests reproduce inputs that, before every YAML reader went through
``workbench._load``, crashed with a traceback or were silently accepted by one reader while
its siblings refused them. The rest pin the loader's own contract.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from workbench._load import (
    Lines,
    Problems,
    load_yaml,
    validation_problems,
    yaml_lines,
    yaml_problem,
)
from workbench.errors import WorkbenchError


def codes(exc: WorkbenchError) -> list[str]:
    return [p.code for p in exc.problems]


# -- reproductions ---------------------------------------------------------------------------


def test_fixtures_not_utf8_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    from workbench.ranking import load_fixtures

    path = tmp_path / "f@1.yaml"
    path.write_bytes(b"name: f\nversion: '1'\nfixtures: \xff\xfe\n")
    with pytest.raises(WorkbenchError) as info:  # before: UnicodeDecodeError
        load_fixtures(path)
    assert codes(info.value) == ["fixtures_encoding"]
    assert info.value.problems[0].location == str(path)


def test_ci_config_refuses_a_duplicate_key(tmp_path: Path) -> None:
    from workbench.ci._project import load_ci_config

    # yaml.safe_load let the second `ci:` win silently, dropping the first block's paths.
    (tmp_path / "workbench.yaml").write_text(
        "ci:\n  paths: {gold: [a]}\nci:\n  schema_version: 1\n", encoding="utf-8"
    )
    _config, problems = load_ci_config(tmp_path)
    assert [p.code for p in problems] == ["ci_config_invalid"]
    assert "duplicate key" in problems[0].message and problems[0].location.endswith(
        "workbench.yaml:3"
    )


def test_authority_config_refuses_a_duplicate_key(tmp_path: Path) -> None:
    from workbench.authority._location import AUTHORITY_FILE, AUTHORITY_KEY
    from workbench.heldout._location import configured_path

    (tmp_path / "workbench.yaml").write_text(
        f"{AUTHORITY_KEY}: a.jsonl\n{AUTHORITY_KEY}: b.jsonl\n", encoding="utf-8"
    )
    with pytest.raises(WorkbenchError) as info:  # before: b.jsonl won silently
        configured_path(tmp_path, AUTHORITY_KEY, AUTHORITY_FILE)
    assert (
        codes(info.value) == ["project_config_invalid"]
        and "duplicate key" in info.value.problems[0].message
    )


def test_project_config_pipe_is_refused_without_blocking(tmp_path: Path) -> None:
    import os

    from workbench.ci._project import load_ci_config

    os.mkfifo(tmp_path / "workbench.yaml")  # is_file() is false for a pipe: treated as absent
    _config, problems = load_ci_config(tmp_path)
    assert problems == []


def test_panel_that_is_a_list_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    from workbench.noise._panel import load_panel

    path = tmp_path / "panel.yaml"
    path.write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(WorkbenchError) as info:  # before: TypeError from {**list}
        load_panel(path, suite=None)  # type: ignore[arg-type]
    assert codes(info.value) == ["panel_invalid"]


def test_yaml_lines_survives_an_alias_bomb() -> None:
    levels = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for n in range(1, 12):
        levels.append(
            f"l{n}: &l{n} [" + ", ".join([f"*{'a' if n == 1 else f'l{n - 1}'}"] * 10) + "]"
        )
    text = "\n".join(levels) + "\n"
    start = time.perf_counter()
    lines = yaml_lines(text)  # 10**12 paths if every alias were walked
    assert time.perf_counter() - start < 5
    assert lines[("l11",)] == 12 and ("l11", 9) in lines  # an alias item: the line of what it names


# -- the loader's contract -------------------------------------------------------------------


def test_yaml_lines_maps_keys_and_items_to_their_lines() -> None:
    text = "name: x\ncontrols:\n  - id: a\n    role: positive\n  - id: b\n"
    lines = yaml_lines(text)
    assert lines[("name",)] == 1 and lines[("controls",)] == 2
    assert (
        lines[("controls", 0)] == 3
        and lines[("controls", 0, "role")] == 4
        and lines[("controls", 1, "id")] == 5
    )
    assert yaml_lines(text, root=True)[()] == 1
    assert yaml_lines("a: [") == {}


def test_lines_at_falls_back_to_the_deepest_known_part() -> None:
    at = Lines("f.yaml", yaml_lines("a:\n  b: 1\nlabels:\n  0: fail\n")).at
    assert at("a", "b") == "f.yaml:2"
    assert at("a", "missing") == "f.yaml:1"
    assert at("a", "UnionTag", "b") == "f.yaml:2"  # pydantic's union tags are passed over
    assert at("labels", 0) == "f.yaml:4"  # an integer path part matches the text key
    assert at("nothing") == "f.yaml"


@pytest.mark.parametrize(
    ("content", "code", "line"),
    [
        (b"a: 1\nb: [\n", "thing_yaml", None),
        (b"a: 1\na: 2\n", "thing_yaml", 2),
        (b"\xff", "thing_encoding", None),
        (b"- 1\n", "thing_shape", None),
    ],
)
def test_load_yaml_refusals(tmp_path: Path, content: bytes, code: str, line: int | None) -> None:
    path = tmp_path / "t.yaml"
    path.write_bytes(content)
    with pytest.raises(WorkbenchError) as info:
        load_yaml(
            path,
            prefix="thing",
            what="thing",
            missing_fix="x",
            shape=("must be a mapping", "write key: value"),
        )
    assert codes(info.value) == [code] and info.value.summary == "unreadable thing"
    if line is not None:
        assert info.value.problems[0].location == f"{path}:{line}"


def test_load_yaml_missing_and_empty(tmp_path: Path) -> None:
    with pytest.raises(WorkbenchError) as info:
        load_yaml(
            tmp_path / "nope.yaml",
            prefix="thing",
            what="thing",
            missing_fix="point at it",
            shape=None,
        )
    assert codes(info.value) == ["thing_missing"] and info.value.summary == "no thing"
    (tmp_path / "e.yaml").write_text("", encoding="utf-8")
    assert (
        load_yaml(
            tmp_path / "e.yaml",
            prefix="t",
            what="t",
            missing_fix="x",
            shape=("m", "f"),
            if_empty={},
        ).data
        == {}
    )


def test_yaml_problem_split_codes() -> None:
    with pytest.raises(yaml.YAMLError) as dup:
        from workbench._io import yaml_loads

        yaml_loads("a: 1\na: 2\n")
    assert yaml_problem(dup.value, "f", code="x_yaml").code == "x_yaml"
    split = yaml_problem(dup.value, "f", code="x_yaml", split=True)
    assert split.code == "duplicate_yaml_key" and split.location == "f:2"


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    size: int


def test_validation_problems_one_per_error_located_by_path() -> None:
    lines = Lines("m.yaml", yaml_lines("items:\n  - name: a\n    size: big\n    color: red\n"))
    with pytest.raises(ValidationError) as info:
        _M.model_validate({"name": "a", "size": "big", "color": "red"})
    found = validation_problems(
        info.value,
        at=lines.at,
        base=("items", 0),
        code=lambda e: "unknown" if e["type"] == "extra_forbidden" else "invalid",
        fix="f",
        case_id="c1",
    )
    assert sorted((p.location, p.code, p.message.split(":")[0]) for p in found) == [
        ("m.yaml:3", "invalid", "size"),
        ("m.yaml:4", "unknown", "color"),
    ]
    assert all(p.case_id == "c1" for p in found)
    with pytest.raises(ValidationError) as whole:
        _M.model_validate([])
    assert validation_problems(whole.value, at="m.yaml", code="x", fix="f", root="file")[
        0
    ].message.startswith("file: ")


def test_problems_collector_raises_everything_at_once() -> None:
    problems = Problems()
    problems.raise_if_any("nothing")  # no problems: no error
    problems.add("a", "c1", "m1", "f1")
    problems.add("b", "c2", "m2", "f2", severity="warning")
    assert [p.severity for p in problems] == ["error", "warning"]
    with pytest.raises(WorkbenchError) as info:
        problems.raise_if_any("two problems")
    assert codes(info.value) == ["c1", "c2"] and info.value.summary == "two problems"


def test_libyaml_gives_the_same_line_map_as_pyyaml_on_every_yaml_file_of_the_project(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """yaml_lines composes with libyaml's parser (workbench._io.SAFE_LOADER); every key and item
    of every YAML file in the project gets the line PyYAML's own parser gives it."""
    import workbench._load as load

    root = Path(__file__).resolve().parent.parent
    files = sorted(
        p
        for p in root.rglob("*.yaml")
        if not {".venv", "node_modules", ".git"} & set(p.relative_to(root).parts)
    )
    assert len(files) > 30
    with_libyaml = {p: load.yaml_lines(p.read_text(encoding="utf-8"), root=True) for p in files}
    monkeypatch.setattr(load, "SAFE_LOADER", yaml.SafeLoader)
    for path in files:
        assert load.yaml_lines(path.read_text(encoding="utf-8"), root=True) == with_libyaml[path]
    assert sum(map(len, with_libyaml.values())) > 1000
