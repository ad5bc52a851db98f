"""Issue 29 points 7 and 9: fixes speak the user's syntax, and the small items.

- ``workbench import results`` driven by options (no ``--mapping``) names the options in its
  problems and fixes (``--label-map unsure=<label>``, ``--prompt-description``); driven by a
  mapping, it keeps the mapping's YAML keys. One pair per kind of problem the importer raises.
- Predictions for held-out cases get a note at import naming what to do, and ``align``'s
  refusal of unaccounted held-out results names ``--partition development``.
- ``workbench run`` prints the count and the first 10 unrun ids, and where the full list is.
- A mistyped or wrongly typed notebook argument is a refusal naming the argument, what it
  expects and the closest valid name; in a notebook it shows without a Python traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import make_case

from workbench.cli import main
from workbench.errors import WorkbenchError

ROOT = Path(__file__).resolve().parents[1]

# case, partition, adjudicated label
GOLD = [
    ("c01", "development", "pass"),
    ("c02", "development", "fail"),
    ("c03", "calibration", "pass"),
    ("c04", "held_out", "fail"),
    ("c05", "held_out", "pass"),
]
PREDICTIONS = "id,verdict,score\nc01,correct,0.9\nc02,unsure,0.2\nc03,correct,0.8\n"
HELD_OUT = PREDICTIONS + "c04,incorrect,0.1\nc05,correct,0.7\n"
JUDGE = {"name": "vendor-judge", "version": "1", "model": "m-1", "prompt_description": "asks"}
JUDGE_FLAGS = ["--name", "vendor-judge", "--version", "1", "--model", "m-1"]
LABEL_FLAGS = ["--label-map", "correct=pass", "--label-map", "incorrect=fail"]
LABELS = {"correct": "pass", "incorrect": "fail"}


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def gold(make_dataset) -> Path:
    return make_dataset([make_case(cid, label, partition=part) for cid, part, label in GOLD])


def _import(tmp_path: Path, gold: Path, table: str, args: list[str]) -> Any:
    source = tmp_path / "predictions.csv"
    source.write_text(table, encoding="utf-8")
    return invoke("import", "results", source, "--gold", gold, "--out", tmp_path / "out", *args)


def _with_mapping(tmp_path: Path, mapping: dict[str, Any]) -> list[str]:
    path = tmp_path / "mapping.yaml"
    path.write_text(yaml.safe_dump(mapping), encoding="utf-8")
    return ["--mapping", str(path)]


# Each kind of problem: the options that raise it, the mapping that raises it, its code, and
# the fragment of the problem (location, message or fix) each syntax must show.
PROBLEMS: list[tuple[str, list[str], dict[str, Any], str, str, str]] = [
    (
        "unmapped_label",
        ["--case-id", "id", "--label", "verdict", *LABEL_FLAGS, *JUDGE_FLAGS, "--prompt-file"],
        {"case_id": "id", "label": "verdict", "labels": LABELS, "judge": JUDGE},
        "unmapped_label",
        "Fix: map every source value to a rubric label: --label-map unsure=<label> (<label> one"
        " of fail, pass, review_required)",
        "Fix: map every source value to a rubric label: labels: {unsure: <label>}",
    ),
    (
        "label_not_in_rubric",
        ["--case-id", "id", "--label", "verdict", "--label-map", "unsure=maybe", *LABEL_FLAGS],
        {"case_id": "id", "label": "verdict", "labels": {**LABELS, "unsure": "maybe"}},
        "mapping_unknown_label",
        "Fix: write --label-map unsure=LABEL with LABEL one of the rubric's labels",
        "Fix: map every source value to one of the rubric's labels",
    ),
    (
        "judge_missing",
        ["--case-id", "id", "--label", "verdict", *LABEL_FLAGS, "--prompt-description", "x"],
        {"case_id": "id", "label": "verdict", "labels": {**LABELS, "unsure": "fail"}},
        "mapping_missing_key",
        "command line (--name): error: --name is required [mapping_missing_key] Fix: give --name",
        "(judge): error: judge is required [mapping_missing_key] Fix: declare it (the judge's",
    ),
    (
        "judge_field_missing",
        ["--case-id", "id", "--label", "verdict", *LABEL_FLAGS, "--name", "j", "--version", "1"],
        {"case_id": "id", "label": "verdict", "labels": LABELS, "judge": {"name": "j"}},
        "mapping_missing_key",
        "command line (--model): error: --model is required [mapping_missing_key] Fix: give"
        " --model",
        "(judge.model): error: judge.model is required [mapping_missing_key] Fix: declare it",
    ),
    (
        "prompt_missing",
        ["--case-id", "id", "--label", "verdict", *LABEL_FLAGS, "--name", "j", "--version", "1"],
        {"case_id": "id", "label": "verdict", "labels": LABELS, "judge": {"name": "j"}},
        "mapping_prompt_missing",
        "Fix: give --prompt-file FILE (a file holding the template) or --prompt-description TEXT",
        "Fix: give judge.prompt (the template), judge.prompt_file (a file holding it) or"
        " judge.prompt_description",
    ),
    (
        "threshold_missing",
        ["--case-id", "id", "--score", "score", *JUDGE_FLAGS, "--prompt-description", "x"],
        {"case_id": "id", "score": "score", "judge": JUDGE},
        "mapping_threshold_missing",
        "Fix: add --threshold X (and --pass-if at_least or at_most)",
        "Fix: add threshold: {value: X, pass_if: at_least | at_most}",
    ),
    (
        "threshold_and_label",
        ["--case-id", "id", "--label", "verdict", "--score", "score", "--threshold", "0.5"],
        {
            "case_id": "id",
            "label": "verdict",
            "score": "score",
            "threshold": {"value": 0.5},
            "judge": JUDGE,
        },
        "mapping_prediction_ambiguous",
        "Fix: drop --label (the threshold makes labels) or --threshold",
        "Fix: remove label (the threshold makes labels) or threshold",
    ),
    (
        "labels_unused",
        ["--case-id", "id", "--score", "score", "--threshold", "0.5", *LABEL_FLAGS],
        {"case_id": "id", "score": "score", "threshold": {"value": 0.5}, "labels": LABELS},
        "mapping_labels_unused",
        "Fix: name the label column (--label COLUMN), or drop --label-map",
        "Fix: name the label column (label: COLUMN), or remove labels",
    ),
    (
        "no_case_key",
        ["--label", "verdict", *LABEL_FLAGS, *JUDGE_FLAGS, "--prompt-description", "x"],
        {"label": "verdict", "labels": LABELS, "judge": JUDGE},
        "mapping_no_key",
        "Fix: give --case-id COLUMN (a column holding the gold case id), or both --input COLUMN"
        " and --response COLUMN",
        "no case key: give case_id (a column holding the gold case id), or both input and response",
    ),
    (
        "no_prediction",
        ["--case-id", "id", *JUDGE_FLAGS, "--prompt-description", "x"],
        {"case_id": "id", "judge": JUDGE},
        "mapping_no_prediction",
        "Fix: give --label COLUMN (a column of labels) or --score COLUMN with --threshold X",
        "no prediction column: give label (a column of labels) or score",
    ),
    (
        "unknown_column",
        ["--case-id", "ident", "--label", "verdict", *LABEL_FLAGS, *JUDGE_FLAGS],
        {"case_id": "ident", "label": "verdict", "labels": LABELS, "judge": JUDGE},
        "mapping_unknown_column",
        "command line (--case-id): error: --case-id: the table has no column 'ident'",
        "(case_id): error: case_id: the table has no column 'ident'",
    ),
    (
        "prompt_file_missing",
        ["--case-id", "id", "--label", "verdict", *LABEL_FLAGS, *JUDGE_FLAGS],
        {"case_id": "id", "label": "verdict", "labels": LABELS, "judge": JUDGE},
        "mapping_prompt_file",
        "Fix: point --prompt-file at the template, or use --prompt-description",
        "Fix: point prompt_file at the template (relative to the mapping file), or use"
        " prompt_description",
    ),
    (
        "bad_judge_name",
        ["--case-id", "id", "--label", "verdict", *LABEL_FLAGS, "--name", "my judge"],
        {
            "case_id": "id",
            "label": "verdict",
            "labels": LABELS,
            "judge": {**JUDGE, "name": "my judge"},
        },
        "mapping_invalid",
        "command line (--name): error: --name: String should match pattern",
        "Fix: correct the mapping; see docs/formats.md#results-mapping",
    ),
]


def _flag_args(kind: str, args: list[str], tmp_path: Path) -> list[str]:
    if kind == "unmapped_label":  # a prompt file given relative to the working directory
        (tmp_path / "prompt.md").write_text("Is the answer correct?\n", encoding="utf-8")
        return [*args, str(tmp_path / "prompt.md")]
    if kind == "prompt_file_missing":
        return [*args, "--prompt-file", str(tmp_path / "nowhere.md")]
    if kind == "bad_judge_name":
        return [*args, "--version", "1", "--model", "m", "--prompt-description", "x"]
    return args


def _mapping(kind: str, mapping: dict[str, Any]) -> dict[str, Any]:
    if kind == "prompt_file_missing":
        judge = {k: v for k, v in JUDGE.items() if k != "prompt_description"}
        return {**mapping, "judge": {**judge, "prompt_file": "nowhere.md"}}
    return mapping


@pytest.mark.parametrize(
    ("kind", "flags", "mapping", "code", "flag_text", "mapping_text"),
    PROBLEMS,
    ids=[p[0] for p in PROBLEMS],
)
def test_an_import_driven_by_options_gets_its_fixes_in_options(
    gold: Path,
    tmp_path: Path,
    kind: str,
    flags: list[str],
    mapping: dict[str, Any],
    code: str,
    flag_text: str,
    mapping_text: str,
) -> None:
    result = _import(tmp_path, gold, PREDICTIONS, _flag_args(kind, flags, tmp_path))
    assert result.exit_code == 2 and f"[{code}]" in result.output, result.output
    assert flag_text in result.output, result.output
    assert "Traceback" not in result.output
    if kind != "bad_judge_name":  # a pydantic message names no key
        assert "judge." not in result.output and "labels: {" not in result.output, result.output


@pytest.mark.parametrize(
    ("kind", "flags", "mapping", "code", "flag_text", "mapping_text"),
    PROBLEMS,
    ids=[p[0] for p in PROBLEMS],
)
def test_an_import_driven_by_a_mapping_keeps_the_mapping_syntax(
    gold: Path,
    tmp_path: Path,
    kind: str,
    flags: list[str],
    mapping: dict[str, Any],
    code: str,
    flag_text: str,
    mapping_text: str,
) -> None:
    args = _with_mapping(tmp_path, _mapping(kind, mapping))
    result = _import(tmp_path, gold, PREDICTIONS, args)
    assert result.exit_code == 2 and f"[{code}]" in result.output, result.output
    assert mapping_text in result.output, result.output
    assert "command line" not in result.output and "--label-map" not in result.output


def test_the_library_with_a_mapping_dict_keeps_the_mapping_syntax(
    gold: Path, tmp_path: Path
) -> None:
    from workbench.importers import results_from_table

    source = tmp_path / "predictions.csv"
    source.write_text(PREDICTIONS, encoding="utf-8")
    mapping = {"case_id": "id", "label": "verdict", "labels": LABELS, "judge": JUDGE}
    with pytest.raises(WorkbenchError) as info:
        results_from_table(source, mapping, gold=gold)
    [unmapped] = info.value.problems
    assert unmapped.code == "unmapped_label" and "labels: {unsure: <label>}" in unmapped.fix


# --- held-out predictions ------------------------------------------------------------------------


def test_held_out_predictions_get_a_note_at_import_naming_what_to_do(
    gold: Path, tmp_path: Path
) -> None:
    flags = ["--case-id", "id", "--label", "verdict", *LABEL_FLAGS, "--label-map", "unsure=fail"]
    imported = _import(
        tmp_path, gold, HELD_OUT, [*flags, *JUDGE_FLAGS, "--prompt-description", "x"]
    )
    assert imported.exit_code == 0, imported.output
    assert "note: 2 result(s) judge held-out cases" in imported.output, imported.output
    assert "judged only by `workbench certify`" in imported.output
    assert "--partition development" in imported.output


def test_align_refusing_held_out_results_names_the_partition_to_use(
    gold: Path, tmp_path: Path
) -> None:
    flags = ["--case-id", "id", "--label", "verdict", *LABEL_FLAGS, "--label-map", "unsure=fail"]
    imported = _import(
        tmp_path, gold, HELD_OUT, [*flags, *JUDGE_FLAGS, "--prompt-description", "x"]
    )
    assert imported.exit_code == 0, imported.output
    results = tmp_path / "out" / "results.jsonl"
    refused = invoke("align", "--gold", gold, "--results", results)
    assert refused.exit_code == 2 and "[held_out_unaccounted]" in refused.output, refused.output
    assert "`--partition development` (or `--partition calibration`)" in refused.output
    # Doing what the fix says works: the development cases are aligned.
    aligned = invoke("align", "--gold", gold, "--results", results, "--partition", "development")
    assert aligned.exit_code == 0, aligned.output


def test_a_contract_import_of_held_out_results_gets_the_note_too(
    gold: Path, tmp_path: Path
) -> None:
    flags = ["--case-id", "id", "--label", "verdict", *LABEL_FLAGS, "--label-map", "unsure=fail"]
    first = _import(tmp_path, gold, HELD_OUT, [*flags, *JUDGE_FLAGS, "--prompt-description", "x"])
    assert first.exit_code == 0, first.output
    again = invoke(
        "import",
        "results",
        tmp_path / "out" / "results.jsonl",
        "--gold",
        gold,
        "--out",
        tmp_path / "again",
    )
    assert again.exit_code == 0, again.output
    assert "note: 2 result(s) judge held-out cases" in again.output, again.output


def test_predictions_without_held_out_cases_get_no_note(gold: Path, tmp_path: Path) -> None:
    flags = ["--case-id", "id", "--label", "verdict", *LABEL_FLAGS, "--label-map", "unsure=fail"]
    imported = _import(
        tmp_path, gold, PREDICTIONS, [*flags, *JUDGE_FLAGS, "--prompt-description", "x"]
    )
    assert imported.exit_code == 0, imported.output
    assert "held-out" not in imported.output


# --- run: unrun ids -------------------------------------------------------------------------------


def test_run_prints_the_first_ten_unrun_ids_and_where_the_rest_are(
    make_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_llm_runs import KEY_ENV, SECRET, write_spec

    from workbench.testing import FakeLLM, Reply

    monkeypatch.setenv(KEY_ENV, SECRET)
    gold = make_dataset(
        [make_case(f"k{i:02d}", "pass", response=f"Answer number {i}.") for i in range(30)]
    )
    with FakeLLM(default=Reply(fault="http_401")) as server:
        spec = write_spec(tmp_path / "s", server.base_url, endpoint={"circuit_breaker_after": 2})
        result = invoke(
            "run",
            "--candidate",
            spec,
            "--gold",
            gold,
            "--partition",
            "development",
            "--out",
            tmp_path / "out",
            "--concurrency",
            "1",
            "--no-cache",
            "--no-progress",
        )
    assert result.exit_code == 3, result.output
    summary = json.loads((tmp_path / "out" / "run.json").read_text())
    unrun = summary["unrun"]
    assert len(unrun) == 28  # the breaker opened after 2 calls
    [line] = [line for line in result.output.splitlines() if line.startswith("unrun (")]
    assert line == (
        "unrun (28): "
        + ", ".join(unrun[:10])
        + f" and 18 more (every one in {tmp_path / 'out' / 'run.json'}, key 'unrun')"
    )
    assert unrun[10] not in result.output


# --- notebook arguments ---------------------------------------------------------------------------


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    from workbench.phases import DevelopSession

    monkeypatch.setenv("WORKBENCH_DEMO_LLM_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("DEMO_LLM_API_KEY", "demo-key")
    return DevelopSession(ROOT / "data" / "demo", run_root=tmp_path / "runs")


def test_a_version_papermill_read_as_a_number_is_refused_by_name(session: Any) -> None:
    judge = session.load(ROOT / "data" / "candidates" / "support-llm-judge@1.yaml")
    with pytest.raises(WorkbenchError) as info:
        session.derive(judge, version=3, prompt="x")  # papermill -p new_version 3
    [problem] = info.value.problems
    assert problem.code == "invalid_argument" and problem.location == "derive(version=...)"
    assert problem.message == "version must be text (a string), got 3 (int)"
    assert 'version="3"' in problem.fix and "-r NAME 3" in problem.fix
    with pytest.raises(WorkbenchError) as info:
        session.derive(judge, version="2 draft", prompt="x")
    assert [p.code for p in info.value.problems] == ["invalid_argument"]
    assert "a name of letters, digits" in info.value.problems[0].message


def test_a_mistyped_argument_is_refused_with_the_closest_name(session: Any, tmp_path: Path) -> None:
    from workbench.phases import CalibrationSession, DevelopSession

    judge = session.load(ROOT / "data" / "candidates" / "support-llm-judge@1.yaml")
    with pytest.raises(WorkbenchError) as info:
        session.derive(judge, version="3", promt="x")
    assert [p.code for p in info.value.problems] == ["derive_field"]
    assert "did you mean 'prompt'?" in info.value.problems[0].message
    for phase in (DevelopSession, CalibrationSession):
        with pytest.raises(WorkbenchError) as info:
            phase(ROOT / "data" / "demo", run_root=tmp_path, concurency=4)
        [problem] = info.value.problems
        assert problem.code == "unknown_argument"
        assert "did you mean 'concurrency'?" in problem.message
        assert problem.fix.startswith("write concurrency=...")
    with pytest.raises(WorkbenchError) as info:
        DevelopSession(5, run_root=tmp_path)  # type: ignore[arg-type]
    assert [(p.code, p.location) for p in info.value.problems] == [("invalid_argument", "gold")]


def test_a_refusal_in_a_notebook_shows_no_python_traceback() -> None:
    error = WorkbenchError("invalid gold", [])
    assert error._render_traceback_() == ["WorkbenchError: invalid gold"]


@pytest.mark.notebook
def test_the_develop_notebook_refuses_a_numeric_version_without_a_traceback(
    tmp_path: Path,
) -> None:
    import papermill
    from test_notebooks import _execute

    with pytest.raises(papermill.PapermillExecutionError) as info:
        _execute(
            str(ROOT / "notebooks" / "01_develop.ipynb"),
            str(tmp_path / "out.ipynb"),
            parameters={"run_root": str(tmp_path / "runs"), "new_version": 3},
            cwd=str(ROOT / "notebooks"),
            progress_bar=False,
            kernel_name="python3",
        )
    shown = "\n".join(info.value.traceback)
    assert "[invalid_argument]" in shown and "version must be text (a string), got 3" in shown
    assert "ValidationError" not in shown and "File " not in shown and "pydantic" not in shown
