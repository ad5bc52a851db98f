"""Bad input: one line per problem with a fix, exit 2, never a traceback, bounded memory (issue 8
§8).

Every test here reproduces an attack that, before the fix, either crashed with a traceback,
exhausted memory or was silently accepted.

Unreadable files: the tests may run as root, where ``chmod 000`` does not block reads, so
unreadability is simulated by patching ``open`` (builtins and ``io``) to raise
``PermissionError`` for one path; a directory and a named pipe in place of a file are tested
for real.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import _forked_cli
import pytest
import yaml
from click.testing import CliRunner
from conftest import JUDGE, RUBRIC, fingerprint, make_case, make_result, write_results
from lineage_support import stamped

from workbench.cli import main
from workbench.errors import WorkbenchError
from workbench.runs import RunOptions

ROOT = Path(__file__).resolve().parents[1]
DEEP = 1000


def invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(main, list(args), env=env)


def refused(result: Any, code: str) -> str:
    """The command exited 2 with ``[code]`` and a fix, and without a traceback."""
    output = result.output
    assert result.exit_code == 2, (result.exit_code, output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in output
    assert f"[{code}]" in output, output
    line = next(line for line in output.splitlines() if f"[{code}]" in line)
    assert "Fix:" in line and line.split("Fix:", 1)[1].strip()
    return line


def accepted(result: Any) -> None:
    assert result.exit_code == 0, (result.output, result.exception)


def deep_json(depth: int = DEEP) -> str:
    return '{"a":' * depth + "1" + "}" * depth


@pytest.fixture
def deny_reading(monkeypatch: pytest.MonkeyPatch):
    """``deny_reading(path)``: opening ``path`` raises PermissionError, as after ``chmod 000``."""
    denied: set[str] = set()
    real_open = builtins.open

    def fake_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, str | os.PathLike) and os.path.realpath(os.fspath(file)) in denied:
            raise PermissionError(13, "Permission denied", os.fspath(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(io, "open", fake_open)

    def deny(path: Path) -> None:
        denied.add(os.path.realpath(path))

    return deny


# -- unreadable files -------------------------------------------------------------------------

DATASET_FILES = ["gold.jsonl", "rubric.yaml", "evidence.jsonl", "card.md"]


@pytest.mark.parametrize("name", DATASET_FILES)
def test_unreadable_dataset_file_exits_2(make_dataset, deny_reading, name: str) -> None:
    root = make_dataset([make_case("a")])
    deny_reading(root / name)
    line = refused(invoke("validate", str(root)), "unreadable_file")
    assert name in line and "Permission denied" in line


@pytest.mark.parametrize("name", DATASET_FILES)
def test_directory_in_place_of_a_dataset_file_exits_2(make_dataset, name: str) -> None:
    root = make_dataset([make_case("a")])
    (root / name).unlink()
    (root / name).mkdir()
    line = refused(invoke("validate", str(root)), "not_a_file")
    assert name in line and "directory" in line


def test_unreadable_card_exits_2_from_the_card_command(make_dataset, deny_reading) -> None:
    root = make_dataset([make_case("a")])
    deny_reading(root / "card.md")
    refused(invoke("card", str(root)), "unreadable_file")


def test_named_pipe_in_place_of_the_evidence_snapshot_is_refused_without_hanging(
    make_dataset,
) -> None:
    root = make_dataset([make_case("a")])
    (root / "evidence.jsonl").unlink()
    os.mkfifo(root / "evidence.jsonl")  # opening a pipe with no writer blocks forever
    proc = _forked_cli.run(  # a process that could hang, without an interpreter's start-up
        [sys.executable, "-m", "workbench", "validate", str(root)], timeout=120
    )
    assert proc.returncode == 2, proc.stderr
    assert (
        "[not_a_file]" in proc.stderr and "pipe" in proc.stderr and "Traceback" not in proc.stderr
    )


def test_align_results_directory_exits_2(make_dataset, tmp_path: Path) -> None:
    # A directory is read as result shards (issue 14); one holding none is refused.
    root = make_dataset([make_case("a")])
    (tmp_path / "results_dir").mkdir()
    refused(
        invoke("align", "--gold", str(root), "--results", str(tmp_path / "results_dir")),
        "results_missing",
    )


def test_unreadable_results_exit_2(make_dataset, deny_reading, tmp_path: Path) -> None:
    case = make_case("a")
    root = make_dataset([case])
    results = write_results(tmp_path / "r.jsonl", [make_result(case)])
    deny_reading(results)
    refused(invoke("align", "--gold", str(root), "--results", str(results)), "unreadable_file")


def test_unreadable_candidate_and_prompt_file_exit_2(
    make_dataset, deny_reading, tmp_path: Path
) -> None:
    root = make_dataset([make_case("a")])
    spec = write_llm_spec(tmp_path / "cands", prompt_file="prompts/p.md")
    deny_reading(spec.parent / "prompts" / "p.md")
    refused(run_cli(spec, root, tmp_path), "unreadable_file")
    deny_reading(spec)
    refused(run_cli(spec, root, tmp_path), "unreadable_file")


# -- nesting ----------------------------------------------------------------------------------


def test_gold_line_nested_1000_deep_is_a_problem(make_dataset) -> None:
    case = make_case("a", metadata={"x": 1})
    line = json.dumps(case).replace('{"x": 1}', deep_json())
    root = make_dataset([make_case("b"), line])
    out = refused(invoke("validate", str(root)), "json_too_deep")
    assert "gold.jsonl:2" in out


def test_results_line_nested_1000_deep_is_a_problem(make_dataset, tmp_path: Path) -> None:
    case = make_case("a")
    root = make_dataset([case])
    row = json.dumps(make_result(case, rendered_request={"x": 1})).replace('{"x": 1}', deep_json())
    results = write_results(tmp_path / "r.jsonl", [row])
    out = refused(invoke("align", "--gold", str(root), "--results", str(results)), "json_too_deep")
    assert "r.jsonl:1" in out


@pytest.mark.parametrize("depth", [DEEP, 10 * DEEP])
def test_rubric_nested_deeply_is_a_problem(make_dataset, depth: int) -> None:
    root = make_dataset([make_case("a")])
    (root / "rubric.yaml").write_text(
        "name: x\nversion: r1\ncriterion: " + "[" * depth + "]" * depth + "\n"
    )
    refused(invoke("validate", str(root)), "yaml_too_deep")


def test_rubric_nested_deeply_in_block_style_is_a_problem(make_dataset) -> None:
    root = make_dataset([make_case("a")])
    (root / "rubric.yaml").write_text("name: x\nversion: r1\ncriterion:\n" + "- " * DEEP + "x\n")
    refused(invoke("validate", str(root)), "yaml_too_deep")


def test_yaml_is_read_with_libyaml_where_pyyaml_has_it() -> None:
    """libyaml's parser (about 20x PyYAML's own on the demo's YAML), with the strict
    constructor on top: duplicate keys are still refused with their lines."""
    import yaml

    from workbench._io import DuplicateYAMLKey, _StrictYAMLLoader, yaml_loads

    assert yaml.__with_libyaml__  # the PyYAML wheels are built with it
    assert issubclass(_StrictYAMLLoader, yaml.CSafeLoader)
    with pytest.raises(DuplicateYAMLKey, match="first on line 2"):
        yaml_loads("a: 1\nb: 2\nb: 3\n")
    assert yaml_loads("a: [1, {b: c}]\n") == {"a": [1, {"b": "c"}]}


def test_candidate_nested_deeply_is_a_problem(make_dataset, tmp_path: Path) -> None:
    root = make_dataset([make_case("a")])
    spec = tmp_path / "x@1.yaml"
    spec.write_text(
        "name: x\nversion: '1'\nkind: ragas-llm\nparams: " + "[" * DEEP + "]" * DEEP + "\n"
    )
    refused(run_cli(spec, root, tmp_path), "yaml_too_deep")


# -- bounded memory ---------------------------------------------------------------------------

LIMITED = r"""
import resource, sys
limit = 1 << 30  # 1 GiB of address space: reading /dev/zero into one line needs far more
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from workbench.cli import main
sys.argv = ["workbench", *sys.argv[1:]]
main()
"""


def run_limited(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "RAGAS_DO_NOT_TRACK": "true"}
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", LIMITED, *args], capture_output=True, text=True, timeout=120, env=env
    )
    return proc, time.monotonic() - start


@pytest.mark.parametrize("name", ["gold.jsonl", "evidence.jsonl"])
def test_jsonl_symlinked_to_dev_zero_is_refused_quickly_in_bounded_memory(
    make_dataset, name: str
) -> None:
    root = make_dataset([make_case("a")])
    (root / name).unlink()
    (root / name).symlink_to("/dev/zero")
    proc, seconds = run_limited("validate", str(root))
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert (
        "[line_too_long]" in proc.stderr
        and f"{name}:1" in proc.stderr
        and "Traceback" not in proc.stderr
    )
    assert "WORKBENCH_MAX_LINE_BYTES" in proc.stderr
    assert seconds < 60


def test_results_symlinked_to_dev_zero_is_refused(make_dataset, tmp_path: Path) -> None:
    root = make_dataset([make_case("a")])
    (tmp_path / "r.jsonl").symlink_to("/dev/zero")
    proc, _ = run_limited("align", "--gold", str(root), "--results", str(tmp_path / "r.jsonl"))
    assert (
        proc.returncode == 2 and "[line_too_long]" in proc.stderr and "Traceback" not in proc.stderr
    )


@pytest.mark.parametrize("name", ["rubric.yaml", "card.md"])
def test_yaml_symlinked_to_dev_zero_is_refused_quickly(make_dataset, name: str) -> None:
    root = make_dataset([make_case("a")])
    (root / name).unlink()
    (root / name).symlink_to("/dev/zero")
    proc, seconds = run_limited("validate", str(root))
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert (
        "[file_too_large]" in proc.stderr and name in proc.stderr and "Traceback" not in proc.stderr
    )
    assert "WORKBENCH_MAX_YAML_BYTES" in proc.stderr
    assert seconds < 60


def test_max_line_length_is_an_error_with_its_line_number_and_overridable(
    make_dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    long_case = make_case("b", grading_notes="x" * 5000)
    root = make_dataset([make_case("a"), long_case, make_case("c")])
    monkeypatch.setenv("WORKBENCH_MAX_LINE_BYTES", "4096")
    line = refused(invoke("validate", str(root)), "line_too_long")
    assert "gold.jsonl:2" in line and "4096" in line
    monkeypatch.setenv(
        "WORKBENCH_MAX_LINE_BYTES", str(len(json.dumps(long_case).encode()))
    )  # exactly long enough
    accepted(invoke("validate", str(root)))
    monkeypatch.delenv("WORKBENCH_MAX_LINE_BYTES")
    accepted(invoke("validate", str(root)))


def test_results_line_longer_than_the_limit_is_an_error(
    make_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = [make_case("a"), make_case("b")]
    root = make_dataset(cases)
    results = write_results(
        tmp_path / "r.jsonl", [make_result(cases[0]), make_result(cases[1], reason="y" * 9000)]
    )
    monkeypatch.setenv("WORKBENCH_MAX_LINE_BYTES", "8192")
    assert "r.jsonl:2" in refused(
        invoke("align", "--gold", str(root), "--results", str(results)), "line_too_long"
    )


def test_reading_a_long_line_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader never asks for more than the limit (+1) at once, whatever the line's length."""
    from workbench import _io

    path = tmp_path / "big.jsonl"
    path.write_bytes(b'{"a": 1}\n' + b"x" * 200_000 + b"\n")
    monkeypatch.setenv("WORKBENCH_MAX_LINE_BYTES", "1000")
    sizes: list[int] = []
    real_open = builtins.open

    class Spy(io.BufferedReader):
        def readline(self, size: int | None = -1) -> bytes:  # type: ignore[override]
            sizes.append(-1 if size is None else size)
            return super().readline(size)

    def spy_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if mode == "rb" and os.fspath(file) == str(path):
            return Spy(io.FileIO(file, "rb"))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy_open)
    with pytest.raises(WorkbenchError) as info:
        list(_io.iter_jsonl_lines(path))
    assert [p.code for p in info.value.problems] == ["line_too_long"]
    assert info.value.problems[0].location == f"{path}:2"
    assert sizes and all(0 < s <= 1001 for s in sizes)


@pytest.mark.parametrize("value", ["abc", "0", "-5", "1.5"])
def test_invalid_line_limit_setting_exits_2(
    make_dataset, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    root = make_dataset([make_case("a")])
    monkeypatch.setenv("WORKBENCH_MAX_LINE_BYTES", value)
    refused(invoke("validate", str(root)), "invalid_setting")


def test_yaml_size_limit_is_overridable(make_dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    # The rubric is the largest YAML file validate reads (the project's workbench.yaml included).
    rubric = {**RUBRIC, "criterion": RUBRIC["criterion"] + " Written at length." * 40}
    root = make_dataset([make_case("a")], rubric=rubric)
    size = (root / "rubric.yaml").stat().st_size
    monkeypatch.setenv("WORKBENCH_MAX_YAML_BYTES", str(size - 1))
    assert "rubric.yaml" in refused(invoke("validate", str(root)), "file_too_large")
    monkeypatch.setenv("WORKBENCH_MAX_YAML_BYTES", str(size))
    accepted(invoke("validate", str(root)))


# -- duplicate keys, non-finite numbers, loose types -----------------------------------------


def test_duplicate_key_in_gold_is_refused(make_dataset) -> None:
    text = json.dumps(make_case("a", slice="billing"))
    dup = text[:-1] + ', "slice": "general"}'  # the last key would silently win
    root = make_dataset([make_case("b"), dup])
    line = refused(invoke("validate", str(root)), "duplicate_json_key")
    assert "gold.jsonl:2" in line and "'slice'" in line


def test_nested_duplicate_key_in_gold_is_refused(make_dataset) -> None:
    text = json.dumps(make_case("a"))
    dup = text.replace(
        '"adjudication": {"label": "pass"', '"adjudication": {"label": "fail", "label": "pass"'
    )
    assert dup != text
    root = make_dataset([dup])
    refused(invoke("validate", str(root)), "duplicate_json_key")


def test_duplicate_key_in_results_is_refused(make_dataset, tmp_path: Path) -> None:
    case = make_case("a", "fail")
    root = make_dataset([case])
    text = json.dumps(make_result(case, "fail"))
    dup = text[:-1] + ', "value": "pass"}'
    results = write_results(tmp_path / "r.jsonl", [dup])
    line = refused(
        invoke("align", "--gold", str(root), "--results", str(results)), "duplicate_json_key"
    )
    assert "r.jsonl:1" in line and "'value'" in line


def test_duplicate_key_in_evidence_snapshot_is_refused(make_dataset) -> None:
    root = make_dataset([make_case("a")])
    with open(root / "evidence.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"id": "ev-3", "id": "ev-4", "text": "t", "source": "s"}\n')
    refused(invoke("validate", str(root)), "duplicate_json_key")


def test_duplicate_key_in_review_notes_is_refused(tmp_path: Path) -> None:
    from workbench.review import ReviewNotes

    path = tmp_path / "notes.jsonl"
    with ReviewNotes(path) as notes:
        notes.add("c1", reviewer="me", cause="judge_instruction_gap", note="first")
    text = path.read_text().strip()
    path.write_text(text[:-1] + ', "note": "second"}\n')
    with pytest.raises(WorkbenchError) as info:
        ReviewNotes(path).all()
    assert [p.code for p in info.value.problems] == ["duplicate_json_key"]


def test_duplicate_key_in_yaml_is_refused(make_dataset) -> None:
    root = make_dataset([make_case("a")])
    text = (root / "rubric.yaml").read_text()
    (root / "rubric.yaml").write_text(text + "min_reviews: 1\nmin_reviews: 2\n")
    refused(invoke("validate", str(root)), "duplicate_yaml_key")


@pytest.mark.parametrize(
    ("field", "raw"),
    [
        ("cost_usd", "Infinity"),
        ("latency_s", "NaN"),
        ("cost_usd", "-Infinity"),
        ("cost_usd", "1e999"),
    ],
)
def test_non_finite_numbers_in_results_are_refused(
    make_dataset, tmp_path: Path, field: str, raw: str
) -> None:
    case = make_case("a")
    root = make_dataset([case])
    text = json.dumps(make_result(case, **{field: 12345.5}))
    results = write_results(tmp_path / "r.jsonl", [text.replace("12345.5", raw)])
    refused(invoke("align", "--gold", str(root), "--results", str(results)), "non_finite_number")


def test_non_finite_number_in_an_untyped_field_is_refused(make_dataset, tmp_path: Path) -> None:
    case = make_case("a")
    root = make_dataset([case])
    text = json.dumps(make_result(case, rendered_request={"temperature": 12345.5}))
    results = write_results(tmp_path / "r.jsonl", [text.replace("12345.5", "NaN")])
    refused(invoke("align", "--gold", str(root), "--results", str(results)), "non_finite_number")
    big = make_dataset(
        [json.dumps(make_case("b", metadata={"x": 12345.5})).replace("12345.5", "1e999")]
    )
    refused(invoke("validate", str(big)), "non_finite_number")


def test_non_finite_number_in_gold_is_refused(make_dataset) -> None:
    text = json.dumps(make_case("a", metadata={"score": 0.5}))
    root = make_dataset([text.replace("0.5", "NaN")])
    refused(invoke("validate", str(root)), "non_finite_number")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("attempt", "1"),
        ("repeat", "0"),
        ("tokens_in", "100"),
        ("attempt", 1.0),
        ("attempt", True),
        ("cost_usd", "0.1"),
        ("schema_version", "1"),
    ],
)
def test_loosely_typed_result_fields_are_refused(
    make_dataset, tmp_path: Path, field: str, value: object
) -> None:
    case = make_case("a")
    root = make_dataset([case])
    results = write_results(tmp_path / "r.jsonl", [make_result(case, **{field: value})])
    line = refused(invoke("align", "--gold", str(root), "--results", str(results)), "wrong_type")
    assert field in line


def test_loosely_typed_error_flag_is_refused(make_dataset, tmp_path: Path) -> None:
    case = make_case("a")
    root = make_dataset([case])
    results = write_results(
        tmp_path / "r.jsonl",
        [make_result(case, error={"kind": "timeout", "message": "slow", "retryable": "false"})],
    )
    refused(invoke("align", "--gold", str(root), "--results", str(results)), "wrong_type")


def test_loosely_typed_gold_fields_are_refused(make_dataset) -> None:
    case = make_case("a")
    case["reviews"][0]["escalate"] = "no"
    root = make_dataset([make_case("b", schema_version="1"), case])
    report = invoke("validate", str(root))
    refused(report, "wrong_type")
    assert "gold.jsonl:1" in report.output and "gold.jsonl:2" in report.output


def test_strict_types_still_accept_well_typed_records(make_dataset, tmp_path: Path) -> None:
    case = make_case("a")
    root = make_dataset([case])
    row = make_result(
        case,
        attempt=2,
        repeat=0,
        tokens_in=3,
        tokens_out=4,
        cost_usd=0,
        latency_s=1,
        score=1,
        started_at="2026-01-01T00:00:00Z",
    )
    results = write_results(
        tmp_path / "r.jsonl",
        stamped(
            [
                make_result(case, error={"kind": "timeout", "message": "slow", "retryable": True}),
                row,
            ],
            root,
        ),
    )
    accepted(invoke("align", "--gold", str(root), "--results", str(results)))


# -- a later attempt never replaces a verdict -------------------------------------------------


def test_a_later_verdict_for_the_same_case_and_repeat_is_refused(
    make_dataset, tmp_path: Path
) -> None:
    case = make_case("a", "fail")
    root = make_dataset([case])
    results = write_results(
        tmp_path / "r.jsonl",
        [make_result(case, "fail", attempt=1), make_result(case, "pass", attempt=2)],
    )
    line = refused(
        invoke("align", "--gold", str(root), "--results", str(results)), "attempt_after_verdict"
    )
    assert "r.jsonl:2" in line


def test_an_attempt_after_a_verdict_is_refused_whatever_the_line_order(
    make_dataset, tmp_path: Path
) -> None:
    case = make_case("a", "fail")
    root = make_dataset([case])
    after = make_result(
        case, error={"kind": "timeout", "message": "slow", "retryable": True}, attempt=3
    )
    results = write_results(tmp_path / "r.jsonl", [after, make_result(case, "fail", attempt=2)])
    refused(
        invoke("align", "--gold", str(root), "--results", str(results)), "attempt_after_verdict"
    )


def test_verdicts_on_other_repeats_and_retries_after_errors_are_fine(
    make_dataset, tmp_path: Path
) -> None:
    case = make_case("a", "fail")
    root = make_dataset([case])
    error = {"kind": "timeout", "message": "slow", "retryable": True}
    rows = [
        make_result(case, error=error, attempt=1),
        make_result(case, "fail", attempt=2),
        make_result(case, "pass", attempt=1, repeat=1),
    ]
    result = invoke(
        "align",
        "--gold",
        str(root),
        "--results",
        str(write_results(tmp_path / "r.jsonl", stamped(rows, root))),
        "--json",
    )
    accepted(result)
    assert json.loads(result.output)["overall"]["agreement"]["k"] == 1


# -- candidate specs --------------------------------------------------------------------------

PROMPT = "Notes: {grading_notes}\nResponse: {response}\nAnswer pass or fail."


def write_llm_spec(directory: Path, **changes: Any) -> Path:
    spec: dict[str, Any] = {
        "name": "llm",
        "version": "1",
        "kind": "ragas-llm",
        "labels": ["pass", "fail"],
        "model": "fake-judge",
        "endpoint": {"base_url": "http://127.0.0.1:9/v1", "timeout_s": 2, "max_retries": 0},
        "params": {"temperature": 0, "max_tokens": 100},
    }
    if "prompt_file" not in changes:
        spec["prompt"] = PROMPT
    else:
        target = directory / changes["prompt_file"]
        if not target.is_absolute() or not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists():
                target.write_text(PROMPT)
    for key, value in changes.items():
        spec[key] = (
            {**spec[key], **value}
            if isinstance(value, dict) and isinstance(spec.get(key), dict)
            else value
        )
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{spec['name']}@{spec['version']}.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def run_cli(spec: Path, gold: Path, tmp_path: Path, *extra: str) -> Any:
    return invoke(
        "run",
        "--candidate",
        str(spec),
        "--gold",
        str(gold),
        "--partition",
        "development",
        "--out",
        str(tmp_path / "out"),
        "--no-progress",
        "--no-cache",
        *extra,
    )


def load(spec: Path) -> Any:
    from workbench.judges import load_candidate

    return load_candidate(spec)


def codes(exc: WorkbenchError) -> list[str]:
    return [p.code for p in exc.problems]


def test_max_retries_above_the_bound_is_refused(tmp_path: Path, make_dataset) -> None:
    spec = write_llm_spec(tmp_path / "c", endpoint={"max_retries": 21})
    with pytest.raises(WorkbenchError) as info:
        load(spec)
    assert codes(info.value) == ["max_retries_too_high"]
    refused(run_cli(spec, make_dataset([make_case("a")]), tmp_path), "max_retries_too_high")
    assert (
        load(
            write_llm_spec(tmp_path / "ok", endpoint={"max_retries": 20})
        ).spec.endpoint.max_retries
        == 20
    )


@pytest.mark.parametrize("where", ["parent", "absolute", "symlink"])
def test_prompt_file_outside_the_spec_folder_is_refused(tmp_path: Path, where: str) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text(PROMPT)
    folder = tmp_path / "cands"
    if where == "parent":
        spec = write_llm_spec(folder, prompt_file="../outside.md")
    elif where == "absolute":
        spec = write_llm_spec(folder, prompt_file=str(outside))
    else:
        (folder / "prompts").mkdir(parents=True)
        (folder / "prompts" / "p.md").symlink_to(outside)
        spec = write_llm_spec(folder, prompt_file="prompts/p.md")
    with pytest.raises(WorkbenchError) as info:
        load(spec)
    assert codes(info.value) == ["prompt_file_outside"]


def test_prompt_file_inside_the_spec_folder_is_fine(tmp_path: Path) -> None:
    judge = load(write_llm_spec(tmp_path / "cands", prompt_file="prompts/deep/p.md"))
    assert judge.template == PROMPT


def test_prompt_file_that_is_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "cands" / "prompts" / "p.md").mkdir(parents=True)
    with pytest.raises(WorkbenchError) as info:
        load(write_llm_spec(tmp_path / "cands", prompt_file="prompts/p.md"))
    assert codes(info.value) == ["not_a_file"]


@pytest.mark.parametrize(
    "placeholder",
    [
        "{response:>999999999}",
        "{response!r}",
        "{response!s:>5}",
        "{response.__class__}",
        "{response[0]}",
        "{}",
        "{0}",
        "{response:{grading_notes}}",
    ],
)
def test_prompt_placeholders_must_be_bare_names(tmp_path: Path, placeholder: str) -> None:
    spec = write_llm_spec(tmp_path / "c", prompt=f"Judge {{response}} and {placeholder}.")
    with pytest.raises(WorkbenchError) as info:
        load(spec)
    assert "prompt_placeholder_syntax" in codes(info.value)


def test_prompt_placeholder_syntax_exits_2_from_the_cli(tmp_path: Path, make_dataset) -> None:
    spec = write_llm_spec(tmp_path / "c", prompt="Judge {response:>999999999}.")
    refused(run_cli(spec, make_dataset([make_case("a")]), tmp_path), "prompt_placeholder_syntax")


def test_literal_braces_remain_allowed(tmp_path: Path) -> None:
    judge = load(write_llm_spec(tmp_path / "c", prompt='Answer {{"value": ...}} for {response}.'))
    assert judge.placeholders == {"response"}


# -- concurrency and other run arguments ------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-1"])
def test_cli_concurrency_below_one_exits_2(tmp_path: Path, make_dataset, value: str) -> None:
    spec = ROOT / "data" / "candidates" / "rubric-judge@1.yaml"
    result = run_cli(spec, make_dataset([make_case("a")]), tmp_path, "--concurrency", value)
    assert (
        result.exit_code == 2
        and "Traceback" not in result.output
        and "concurrency" in result.output
    )


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_cli_budget_must_be_a_finite_amount(tmp_path: Path, make_dataset, value: str) -> None:
    spec = ROOT / "data" / "candidates" / "rubric-judge@1.yaml"
    result = run_cli(spec, make_dataset([make_case("a")]), tmp_path, "--budget-usd", value)
    assert (
        result.exit_code == 2
        and "Traceback" not in result.output
        and "--budget-usd" in result.output
    )
    assert not (tmp_path / "out").exists()


def test_cli_negative_repeat_exits_2(make_dataset, tmp_path: Path) -> None:
    case = make_case("a")
    results = write_results(tmp_path / "r.jsonl", [make_result(case)])
    result = invoke(
        "align", "--gold", str(make_dataset([case])), "--results", str(results), "--repeat", "-1"
    )
    assert result.exit_code == 2 and "--repeat" in result.output


@pytest.mark.parametrize("value", [0, -3, "8", 8.0, True, None])
def test_library_run_refuses_bad_concurrency(tmp_path: Path, make_dataset, value: object) -> None:
    from workbench.gold import load_dataset
    from workbench.runs import run_candidate_sync

    judge = load(ROOT / "data" / "candidates" / "rubric-judge@1.yaml")
    dataset = load_dataset(make_dataset([make_case("a")]))
    with pytest.raises(WorkbenchError) as info:
        run_candidate_sync(
            judge,
            dataset,
            "development",
            tmp_path / "out",
            RunOptions(concurrency=value, progress=False, cache_dir=False),
        )  # type: ignore[arg-type]
    assert codes(info.value) == ["invalid_concurrency"]
    assert not (tmp_path / "out" / "results.jsonl").exists()


@pytest.mark.parametrize(
    ("kw", "code"),
    [
        ({"budget_usd": "1"}, "invalid_budget"),
        ({"budget_usd": float("nan")}, "invalid_budget"),
        ({"max_cases": -1}, "invalid_max_cases"),
        ({"max_cases": "5"}, "invalid_max_cases"),
        ({"repeats": 0}, "invalid_repeats"),
    ],
)
def test_library_run_refuses_other_bad_arguments(
    tmp_path: Path, make_dataset, kw: dict[str, object], code: str
) -> None:
    from workbench.gold import load_dataset
    from workbench.runs import run_candidate_sync

    judge = load(ROOT / "data" / "candidates" / "rubric-judge@1.yaml")
    dataset = load_dataset(make_dataset([make_case("a")]))
    with pytest.raises(WorkbenchError) as info:
        run_candidate_sync(
            judge,
            dataset,
            "development",
            tmp_path / "out",
            RunOptions(progress=False, cache_dir=False, **kw),
        )  # type: ignore[arg-type]
    assert codes(info.value) == [code]


@pytest.mark.parametrize("value", [0, "8"])
def test_phase_session_refuses_bad_concurrency_before_any_run(
    make_dataset, tmp_path: Path, value: object
) -> None:
    from workbench.phases import DevelopSession

    with pytest.raises(WorkbenchError) as info:
        DevelopSession(
            make_dataset([make_case("a")]), run_root=tmp_path / "runs", concurrency=value
        )  # type: ignore[arg-type]
    assert codes(info.value) == ["invalid_concurrency"]


@pytest.mark.parametrize("value", [5, "dev", ["development"]])
def test_library_functions_refuse_a_bad_partition(make_dataset, value: object) -> None:
    from workbench.agreement import human_agreement
    from workbench.align import join_results
    from workbench.gold import load_dataset

    dataset = load_dataset(make_dataset([make_case("a")]))
    for call in (
        lambda: human_agreement(dataset, value),
        lambda: join_results(dataset, [], partition=value),
        lambda: dataset.partition(value),
    ):  # type: ignore[arg-type]
        with pytest.raises(WorkbenchError) as info:
            call()
        assert codes(info.value) == ["invalid_partition"]


@pytest.mark.notebook
@pytest.mark.parametrize(
    ("parameters", "needle"),
    [
        ({"concurrency": "8"}, "concurrency"),  # the run arguments' check (0 too, in-process below)
        ({"partition": 5}, "partition"),  # the dataset's partition check
    ],
)
def test_notebook_with_a_wrongly_typed_parameter_fails_with_a_clear_error(
    tmp_path: Path, parameters: dict[str, object], needle: str
) -> None:
    """The notebook passes its parameters to the library, whose checks raise a WorkbenchError with
    its fix: one kernel per check reached (each value of each check is tested in-process)."""
    import papermill

    with pytest.raises(papermill.PapermillExecutionError) as info:
        papermill.execute_notebook(
            str(ROOT / "notebooks" / "00_overview.ipynb"),
            str(tmp_path / "out.ipynb"),
            parameters={"run_root": str(tmp_path / "runs"), **parameters},
            cwd=str(ROOT / "notebooks"),
            progress_bar=False,
            kernel_name="python3",
        )
    assert info.value.ename == "WorkbenchError", (info.value.ename, info.value.evalue)
    assert needle in info.value.evalue and "Fix:" in info.value.evalue
    assert not list((tmp_path / "runs").glob("**/results.jsonl"))


def test_a_mistyped_parameter_name_is_refused_with_the_name_meant() -> None:
    """The papermill cells as the kernel's history holds them: the notebook's own parameters
    cell, then the one papermill injects (a cell starting "# Parameters" too)."""
    from workbench.phases import unknown_parameters

    own = "# Parameters (papermill overrides these)\ngold = None\npolicy = None\nrun_root = 'x'\n"
    injected = "# Parameters\npolcy = 'p.yaml'\ngold = 'g'\nzzz = 1\n"
    assert unknown_parameters([own, "x = 1", injected]) == [("polcy", "policy"), ("zzz", None)]
    assert unknown_parameters([own, "import os"]) == []  # nothing injected


@pytest.mark.notebook
def test_notebook_with_a_mistyped_parameter_name_stops_before_running(tmp_path: Path) -> None:
    """Before: papermill only warned ("Passed unknown parameter: run_rot") and the notebook ran
    on its defaults."""
    import papermill

    with pytest.raises(papermill.PapermillExecutionError) as info:
        papermill.execute_notebook(
            str(ROOT / "notebooks" / "00_overview.ipynb"),
            str(tmp_path / "out.ipynb"),
            parameters={"run_rot": str(tmp_path / "runs")},
            cwd=str(ROOT / "notebooks"),
            progress_bar=False,
            kernel_name="python3",
        )
    assert info.value.ename == "WorkbenchError", (info.value.ename, info.value.evalue)
    assert "[unknown_parameter]" in info.value.evalue and "-p run_root" in info.value.evalue
    assert not (tmp_path / "runs").exists()


# -- empty responses and missing reasons ------------------------------------------------------


def test_empty_response_is_a_warning_in_validate(make_dataset) -> None:
    root = make_dataset(
        [make_case("a"), make_case("b", response=""), make_case("c", response="  \n")]
    )
    result = invoke("validate", str(root), "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    empty = [p for p in payload["problems"] if p["code"] == "empty_response"]
    assert [(p["case_id"], p["severity"]) for p in empty] == [("b", "warning"), ("c", "warning")]


def test_missing_reason_is_a_documented_error_kind() -> None:
    from workbench.results import ERROR_KINDS

    assert "missing_reason" in ERROR_KINDS
    assert "`missing_reason`" in (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("reason", ["", "   "])
def test_llm_judge_with_an_empty_reason_is_an_evaluator_error(
    make_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reason: str
) -> None:
    from workbench.gold import load_dataset
    from workbench.results import read_results
    from workbench.runs import run_candidate_sync
    from workbench.testing import FakeLLM, Reply, Rule

    monkeypatch.setenv("WB_BAD_INPUT_KEY", "test-key")
    cases = [make_case("a"), make_case("b", response="the second response")]
    dataset = load_dataset(make_dataset(cases))
    rules = [
        Rule(contains="the second response", reply=Reply(value="pass", reason="cites the policy"))
    ]
    with FakeLLM(rules=rules, default=Reply(value="pass", reason=reason), port=0) as server:
        spec = write_llm_spec(
            tmp_path / "c",
            endpoint={"base_url": server.base_url, "api_key_env": "WB_BAD_INPUT_KEY"},
        )
        summary = run_candidate_sync(
            load(spec),
            dataset,
            "development",
            tmp_path / "out",
            RunOptions(progress=False, cache_dir=False),
        )
        assert server.call_count >= 2
    by_case = {line.result.case_id: line.result for line in read_results(summary.results_path)}
    assert (
        by_case["a"].error is not None
        and by_case["a"].error.kind == "missing_reason"
        and by_case["a"].value is None
    )
    assert by_case["b"].value == "pass" and by_case["b"].reason == "cites the policy"
    assert summary.errors_by_kind.get("missing_reason") == 1


def test_missing_reason_is_retried_and_every_attempt_is_recorded(
    make_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Like an unparseable answer, a verdict without a reason is retried up to max_retries."""
    from workbench.gold import load_dataset
    from workbench.results import read_results
    from workbench.runs import run_candidate_sync
    from workbench.testing import FakeLLM, Reply, Rule

    monkeypatch.setenv("WB_BAD_INPUT_KEY", "test-key")
    dataset = load_dataset(
        make_dataset([make_case("a"), make_case("b", response="never explained")])
    )
    rules = [
        Rule(contains="never explained", reply=Reply(value="pass", reason="")),
        Rule(
            reply=Reply(value="pass", reason=""), times=2
        ),  # case a: two reasonless answers, then one with a reason
    ]
    with FakeLLM(
        rules=rules, default=Reply(value="pass", reason="cites the policy"), port=0
    ) as server:
        spec = write_llm_spec(
            tmp_path / "c",
            endpoint={
                "base_url": server.base_url,
                "api_key_env": "WB_BAD_INPUT_KEY",
                "max_retries": 2,
            },
        )
        summary = run_candidate_sync(
            load(spec),
            dataset,
            "development",
            tmp_path / "out",
            RunOptions(progress=False, cache_dir=False),
        )
    attempts: dict[str, list[Any]] = {}
    for line in read_results(summary.results_path):
        attempts.setdefault(line.result.case_id, []).append(line.result)
    a, b = (
        sorted(attempts["a"], key=lambda r: r.attempt),
        sorted(attempts["b"], key=lambda r: r.attempt),
    )
    assert [(r.attempt, r.error.kind if r.error else None, r.value) for r in a] == [
        (1, "missing_reason", None),
        (2, "missing_reason", None),
        (3, None, "pass"),
    ]
    assert all(r.error.retryable for r in a[:2])
    assert [(r.attempt, r.error.kind if r.error else None) for r in b] == [
        (1, "missing_reason"),
        (2, "missing_reason"),
        (3, "missing_reason"),
    ]
    assert summary.errors_by_kind == {"missing_reason": 1}


def test_llm_judge_with_no_reason_field_is_an_evaluator_error(
    make_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.gold import load_dataset
    from workbench.results import read_results
    from workbench.runs import run_candidate_sync
    from workbench.testing import FakeLLM, Reply

    monkeypatch.setenv("WB_BAD_INPUT_KEY", "test-key")
    dataset = load_dataset(make_dataset([make_case("a")]))
    with FakeLLM(default=Reply(content='{"value": "pass"}'), port=0) as server:
        spec = write_llm_spec(
            tmp_path / "c",
            endpoint={"base_url": server.base_url, "api_key_env": "WB_BAD_INPUT_KEY"},
        )
        summary = run_candidate_sync(
            load(spec),
            dataset,
            "development",
            tmp_path / "out",
            RunOptions(progress=False, cache_dir=False),
        )
    (line,) = read_results(summary.results_path)
    assert line.result.error is not None and line.result.error.kind == "missing_reason", (
        line.result.error
    )
    assert line.result.value is None


# -- the shared JSON reader -------------------------------------------------------------------


def test_json_depth_is_refused_at_a_fixed_depth_whatever_the_recursion_limit() -> None:
    """The limit is pydantic's (what the models read), not Python's recursion limit, which any
    module in the process may raise (in CI an earlier test in the same xdist worker did; mypy,
    jedi and Ray's ``_raylet`` all can): then a 1000-deep line went through the strict check to
    pydantic, reported as a vague invalid field."""
    import sys

    from workbench._io import MAX_JSON_DEPTH, JSONRecordError, loads_json

    before = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        for depth in (MAX_JSON_DEPTH + 1, DEEP):
            with pytest.raises(JSONRecordError) as info:
                loads_json(deep_json(depth))
            assert info.value.code == "json_too_deep"
        assert loads_json(deep_json(MAX_JSON_DEPTH)) is not None
        assert loads_json(json.dumps({"s": "[{" * 500})) == {"s": "[{" * 500}  # in a string
    finally:
        sys.setrecursionlimit(before)


def test_loads_json_refuses_what_json_loads_accepts() -> None:
    from workbench._io import JSONRecordError, loads_json

    assert json.loads('{"a": 1, "a": 2}') == {"a": 2}  # what the standard library does
    cases = {
        '{"a": 1, "a": 2}': "duplicate_json_key",
        '[{"b": {"c": 1, "c": 1}}]': "duplicate_json_key",
        '{"a": NaN}': "non_finite_number",
        '{"a": Infinity}': "non_finite_number",
        '{"a": -Infinity}': "non_finite_number",
        '{"a": 1e400}': "non_finite_number",
        '{"a": ': "malformed_json",
        deep_json(): "json_too_deep",
        "[" * 100_000 + "]" * 100_000: "json_too_deep",
        '{"a": ' + "9" * 5000 + "}": "malformed_json",
    }
    for text, code in cases.items():
        with pytest.raises(JSONRecordError) as info:
            loads_json(text)
        assert info.value.code == code, text[:40]
        assert isinstance(info.value, ValueError)
    assert loads_json('{"a": [1, 2.5, {"b": null}], "c": "d"}') == {
        "a": [1, 2.5, {"b": None}],
        "c": "d",
    }


def test_identity_fingerprint_of_read_results_is_unchanged() -> None:
    """Reading through the strict reader yields the same records (and hashes) as before."""
    from workbench.results import JudgeResult

    case = make_case("a")
    row = make_result(case, cost_usd=0.5, tokens_in=3)
    result = JudgeResult.model_validate(row)
    assert result.judge.fingerprint() == fingerprint(JUDGE)


def test_ranking_judge_with_an_empty_reason_is_an_evaluator_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_ranking import KEY_ENV, fixture, llm_spec, quality_responder, run

    from workbench.ranking import RankingFixture
    from workbench.results import read_results
    from workbench.testing import FakeLLM, Reply

    monkeypatch.setenv(KEY_ENV, "test-key")

    def responder(request: Any) -> Reply:
        answer = json.loads(quality_responder(request).content or "{}")
        return Reply(value=None, content=json.dumps({"reason": "", "value": answer["value"]}))

    fs = [RankingFixture.model_validate(fixture("r-1", n=3))]
    with FakeLLM(responder=responder, port=0) as llm:
        run(
            llm_spec(tmp_path / "spec", llm.base_url),
            fs,
            tmp_path / "run",
            repeats=0,
            max_exhaustive=0,
            sample=1,
        )
    lines = read_results(tmp_path / "run" / "results.jsonl")
    # Retryable like an unparseable answer: the spec's max_retries (1) gives two attempts, both
    # recorded.
    assert [line.result.attempt for line in lines] == [1, 2]
    for line in lines:
        assert (
            line.result.error is not None
            and line.result.error.kind == "missing_reason"
            and line.result.error.retryable
        )
        assert (
            line.result.value is None and line.result.order is not None
        )  # the returned order is kept as evidence


@pytest.mark.parametrize(
    ("kw", "name"),
    [
        ({"max_exhaustive": "4"}, "max_exhaustive"),
        ({"sample": 0}, "sample"),
        ({"repeats": 1.5}, "repeats"),
    ],
)
def test_ranking_battery_refuses_wrongly_typed_arguments(kw: dict[str, object], name: str) -> None:
    from workbench.ranking import position_battery

    with pytest.raises(WorkbenchError) as info:
        position_battery(ROOT / "data" / "ranking" / "support-ranking@1.yaml", **kw)  # type: ignore[arg-type]
    assert codes(info.value) == ["invalid_argument"] and name in info.value.problems[0].message


def _other_yaml_loaders() -> dict[str, Any]:
    from workbench.controls import load_suite
    from workbench.noise import load_pairs
    from workbench.policy import load_policy
    from workbench.ranking import load_fixtures

    return {
        "policy": load_policy,
        "controls": load_suite,
        "noise": load_pairs,
        "ranking": load_fixtures,
    }


@pytest.mark.parametrize("kind", ["policy", "controls", "noise", "ranking"])
@pytest.mark.parametrize("attack", ["deep", "duplicate", "large"])
def test_other_yaml_files_refuse_deep_duplicate_and_large_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, attack: str
) -> None:
    path = tmp_path / "x@1.yaml"
    if attack == "deep":
        path.write_text("name: x\nversion: '1'\nnote: " + "[" * DEEP + "]" * DEEP + "\n")
    elif attack == "duplicate":
        path.write_text("name: x\nversion: '1'\nname: y\n")
    else:
        path.write_text("name: x\nversion: '1'\nnote: " + "a" * 5000 + "\n")
        monkeypatch.setenv("WORKBENCH_MAX_YAML_BYTES", "1024")
    with pytest.raises(WorkbenchError) as info:
        _other_yaml_loaders()[kind](path)
    text = str(info.value)
    expected = {
        "deep": "nested too deeply",
        "duplicate": "duplicate key 'name'",
        "large": "larger than 1024 bytes",
    }[attack]
    assert expected in text, text


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("params", {"temperature": float("nan")}),
        ("params", {"nested": {"top_p": float("inf")}}),
        ("pricing", {"input_per_million_usd": float("inf")}),
        ("endpoint", {"timeout_s": float("inf")}),
    ],
)
def test_candidate_with_non_finite_numbers_is_refused(
    tmp_path: Path, field: str, value: dict[str, Any]
) -> None:
    """YAML's .nan/.inf would be written into the judge identity as null: the spec is refused."""
    spec = write_llm_spec(tmp_path / "c", **{field: value})
    assert ".nan" in spec.read_text() or ".inf" in spec.read_text()
    with pytest.raises(WorkbenchError) as info:
        load(spec)
    assert codes(info.value) == ["non_finite_number"]


def test_derived_candidate_with_non_finite_params_is_refused() -> None:
    from workbench.judges import derive_spec, load_spec

    spec, _ = load_spec(ROOT / "data" / "candidates" / "rubric-judge@1.yaml")
    with pytest.raises(WorkbenchError) as info:  # a refusal, never a pydantic traceback
        derive_spec(spec, version="9", params={"temperature": float("nan")})
    [problem] = info.value.problems
    assert problem.code == "invalid_argument" and "params.temperature" in problem.message
    assert "finite" in problem.message


# -- readers that came with lineage, the ledger chain, reports, ranking and importers ----------


def test_read_json_file_refuses_pipes_duplicates_and_oversized_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench._io import JSONRecordError, read_json_file

    pipe = tmp_path / "pipe.json"
    os.mkfifo(pipe)
    with pytest.raises(
        OSError
    ):  # refused before opening: opening a pipe without a writer blocks forever
        read_json_file(pipe)
    dup = tmp_path / "dup.json"
    dup.write_text('{"outcome": "quality_failed", "outcome": "certified"}', encoding="utf-8")
    with pytest.raises(JSONRecordError) as info:
        read_json_file(dup)
    assert info.value.code == "duplicate_json_key"
    monkeypatch.setenv("WORKBENCH_MAX_LINE_BYTES", "4")  # documents: 32 x 4 = 128 bytes
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"a": "x" * 200}), encoding="utf-8")
    with pytest.raises(JSONRecordError) as info:
        read_json_file(big)
    assert info.value.code == "file_too_large"
    with pytest.raises(JSONRecordError) as info:
        read_json_file("/dev/zero")
    assert info.value.code == "file_too_large"


def test_run_manifest_with_a_duplicate_key_is_refused(make_dataset, tmp_path: Path) -> None:
    case = make_case("a")
    root = make_dataset([case])
    (tmp_path / "run").mkdir()
    results = write_results(tmp_path / "run" / "results.jsonl", stamped([make_result(case)], root))
    (tmp_path / "run" / "manifest.json").write_text(
        '{"partition": "development", "partition": "held_out"}', encoding="utf-8"
    )
    line = refused(
        invoke("align", "--gold", str(root), "--results", str(results)), "manifest_invalid"
    )
    assert "duplicate key" in line


def test_held_out_ledger_lines_are_read_bounded_and_strict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.heldout import HeldOutLedger

    path = tmp_path / "held_out_ledger.jsonl"
    path.write_text('{"entry_id": "x", "entry_id": "y"}\n', encoding="utf-8")
    (problem,) = HeldOutLedger(path).read().problems
    assert problem.code == "ledger_invalid" and "duplicate key" in problem.message
    monkeypatch.setenv("WORKBENCH_MAX_LINE_BYTES", "64")
    path.write_text("{" + '"a": 1, ' * 40 + '"b": 2}\n', encoding="utf-8")
    (problem,) = HeldOutLedger(path).read().problems
    assert problem.code == "line_too_long" and problem.location.endswith(":1")
    with pytest.raises(WorkbenchError) as info:
        HeldOutLedger(path).entries()
    assert [p.code for p in info.value.problems] == ["line_too_long"]


def test_a_release_line_may_outgrow_the_record_limit_but_not_the_document_limit(
    make_dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A release holds one hash set per record, so its line grows with the dataset."""
    from workbench.approval import read_release_log
    from workbench.gold import freeze, validate_dataset

    root = make_dataset([make_case(f"c{i}") for i in range(12)])
    freeze(root, approver="tester")
    release_line = (root / "releases.jsonl").read_bytes().splitlines()[0]
    gold_line = max(len(line) for line in (root / "gold.jsonl").read_bytes().splitlines())
    limit = gold_line + 16
    assert len(release_line) > limit and len(release_line) < 32 * limit  # the premise of the test
    monkeypatch.setenv("WORKBENCH_MAX_LINE_BYTES", str(limit))
    assert read_release_log(root).problems == ()
    assert validate_dataset(root).ok
    monkeypatch.setenv("WORKBENCH_MAX_LINE_BYTES", str(len(release_line) // 40))
    assert [p.code for p in read_release_log(root).problems] == ["line_too_long"]


def test_release_log_with_a_duplicate_key_is_refused(make_dataset) -> None:
    from workbench.approval import read_release_log
    from workbench.gold import freeze

    root = make_dataset([make_case("a")])
    freeze(root, approver="tester")
    text = (root / "releases.jsonl").read_text(encoding="utf-8")
    (root / "releases.jsonl").write_text(
        text.replace('"approver": "tester"', '"approver": "tester", "approver": "mallory"', 1),
        encoding="utf-8",
    )
    assert [p.code for p in read_release_log(root).problems] == ["duplicate_json_key"]
    refused(invoke("validate", str(root)), "duplicate_json_key")


def test_verdict_cache_line_with_a_duplicate_key_is_corrupt(tmp_path: Path) -> None:
    from workbench.runs._cache import VerdictCache

    fp = "ab" * 32
    path = tmp_path / fp[:2] / f"{fp}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(
        '{"request_key": "k", "repeat": 0, "repeat": 1, "result": {}}\n', encoding="utf-8"
    )
    with pytest.raises(WorkbenchError) as info:
        VerdictCache(tmp_path, fp)
    assert codes(info.value) == ["cache_corrupt"]


def test_project_configuration_with_a_duplicate_key_is_refused(tmp_path: Path) -> None:
    from workbench.heldout._location import LEDGER_FILE, LEDGER_KEY, configured_path

    (tmp_path / "workbench.yaml").write_text(
        "held_out_ledger: a.jsonl\nheld_out_ledger: b.jsonl\n", encoding="utf-8"
    )
    with pytest.raises(WorkbenchError) as info:
        configured_path(tmp_path, LEDGER_KEY, LEDGER_FILE)
    assert (
        codes(info.value) == ["project_config_invalid"]
        and "duplicate key" in info.value.problems[0].message
    )


def test_table_mapping_with_a_duplicate_key_is_refused(tmp_path: Path) -> None:
    from workbench.importers.table._mapping import read_mapping_text

    path = tmp_path / "mapping.yaml"
    path.write_text("input: question\ninput: answer\n", encoding="utf-8")
    with pytest.raises(WorkbenchError) as info:
        read_mapping_text(path)
    assert (
        codes(info.value) == ["mapping_yaml"] and "duplicate key" in info.value.problems[0].message
    )


def test_results_import_source_line_with_a_duplicate_key_is_refused(tmp_path: Path) -> None:
    from workbench.importers._table_reader import PREDICTIONS

    path = tmp_path / "predictions.jsonl"
    path.write_text('{"case_id": "a", "verdict": "fail", "verdict": "pass"}\n', encoding="utf-8")
    with pytest.raises(WorkbenchError) as info:
        PREDICTIONS.read_table(path, "jsonl")
    assert "duplicate_json_key" in codes(info.value)


def test_gate_run_summary_with_a_duplicate_key_exits_2(tmp_path: Path) -> None:
    from workbench.cli.gate import load_run_summary

    path = tmp_path / "run.json"
    path.write_text('{"status": "incomplete", "status": "complete"}', encoding="utf-8")
    with pytest.raises(WorkbenchError) as info:
        load_run_summary(path)
    assert codes(info.value) == ["duplicate_json_key"]


def test_edited_battery_record_is_refused(tmp_path: Path) -> None:
    from workbench.ranking import read_battery

    (tmp_path / "battery.json").write_text('{"repeats": 3, "repeats": 0}', encoding="utf-8")
    with pytest.raises(WorkbenchError) as info:
        read_battery(tmp_path)
    assert codes(info.value) == ["battery_unreadable"]


def test_production_traffic_line_with_a_duplicate_key_is_refused(tmp_path: Path) -> None:
    from workbench.estimate._production import _read_table

    path = tmp_path / "slices.jsonl"
    path.write_text('{"case_id": "a", "slice": "general", "slice": "billing"}\n', encoding="utf-8")
    rows, problems = _read_table(path, ("case_id", "slice"), "slices")
    assert (
        rows == []
        and [p.code for p in problems] == ["slices_malformed"]
        and "duplicate key" in problems[0].message
    )


@pytest.mark.parametrize(
    ("kw", "code"),
    [
        ({"concurrency": 0}, "invalid_concurrency"),
        ({"concurrency": "8"}, "invalid_concurrency"),
        ({"budget_usd": float("nan")}, "invalid_budget"),
        ({"max_cases": -1}, "invalid_max_cases"),
    ],
)
def test_library_entry_points_added_on_main_check_their_arguments(
    tmp_path: Path, kw: dict[str, Any], code: str
) -> None:
    """certify, the certification notebook, the ranking battery and the noise run refuse bad
    arguments before reading anything (no judge, gold or ledger is needed to be refused)."""
    import asyncio

    from workbench.noise import run_noise
    from workbench.ranking import run_ranking
    from workbench.reports import Certification, certify

    missing = tmp_path / "missing"
    calls = [
        lambda: certify(missing, missing, missing, reports_root=tmp_path / "reports", **kw),
        lambda: asyncio.run(run_ranking(None, [], tmp_path / "ranking", **kw)),  # type: ignore[arg-type]
    ]
    if "budget_usd" not in kw:
        calls.append(
            lambda: Certification(
                candidate=missing,
                policy=missing,
                gold=missing,
                report_dir=tmp_path / "r",
                certification_token="t",
                **kw,
            )
        )
    if "max_cases" not in kw:
        calls.append(lambda: asyncio.run(run_noise(None, None, tmp_path / "noise", **kw)))  # type: ignore[arg-type]
    for call in calls:
        with pytest.raises(WorkbenchError) as info:
            call()
        assert codes(info.value) == [code]
    assert (
        not (tmp_path / "reports").exists()
        and not (tmp_path / "ranking").exists()
        and not (tmp_path / "noise").exists()
    )


def test_lifecycle_logs_are_read_bounded_and_strict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.authority import read_shadow_log
    from workbench.repeatability import read_drift_log, read_studies

    readers = (
        (read_drift_log, "drift_log_invalid"),
        (read_studies, "study_invalid"),
        (
            read_shadow_log,
            "shadow_log_invalid",
        ),  # before: a duplicate key passed, bad UTF-8 crashed
    )
    for reader, code in readers:
        path = tmp_path / f"{code}.jsonl"
        path.write_text('{"kind": "check", "kind": "baseline"}\n', encoding="utf-8")
        with pytest.raises(WorkbenchError) as info:
            reader(path)
        assert codes(info.value) == [code] and "duplicate key" in info.value.problems[0].message
        path.write_bytes(b'{"kind": "\xff"}\n')
        with pytest.raises(WorkbenchError) as info:
            reader(path)
        assert codes(info.value) == [code] and "not valid UTF-8" in info.value.problems[0].message
        monkeypatch.setenv("WORKBENCH_MAX_LINE_BYTES", "2")  # document limit: 64 bytes
        path.write_text('{"kind": "' + "x" * 100 + '"}\n', encoding="utf-8")
        with pytest.raises(WorkbenchError) as info:
            reader(path)
        assert codes(info.value) == ["line_too_long"]
        monkeypatch.delenv("WORKBENCH_MAX_LINE_BYTES")


def test_label_mapping_and_sentinels_with_a_duplicate_key_are_refused(
    make_dataset, tmp_path: Path
) -> None:
    from workbench.gold import load_dataset
    from workbench.migration import load_label_mapping
    from workbench.repeatability import load_sentinels

    mapping = tmp_path / "mapping.yaml"
    mapping.write_text("from: a@1\nfrom: a@2\n", encoding="utf-8")
    with pytest.raises(WorkbenchError) as info:
        load_label_mapping(mapping)
    assert (
        codes(info.value) == ["mapping_yaml"] and "duplicate key" in info.value.problems[0].message
    )
    sentinels = tmp_path / "sentinels.yaml"
    sentinels.write_text("name: s\nname: t\nsentinels: []\n", encoding="utf-8")
    with pytest.raises(WorkbenchError) as info:
        load_sentinels(sentinels, load_dataset(make_dataset([make_case("a")])))
    assert (
        codes(info.value) == ["sentinels_yaml"]
        and "duplicate key" in info.value.problems[0].message
    )


@pytest.mark.parametrize(
    ("kw", "code"),
    [
        ({"concurrency": 0}, "invalid_concurrency"),
        ({"concurrency": 2.0}, "invalid_concurrency"),
        ({"budget_usd": float("inf")}, "invalid_budget"),
    ],
)
def test_compare_repeatability_and_drift_check_their_arguments(
    tmp_path: Path, kw: dict[str, Any], code: str
) -> None:
    """Refused before anything is read: no candidate, gold or run directory is needed."""
    import asyncio

    from workbench.migration import compare_candidates
    from workbench.repeatability import run_drift, run_repeatability

    missing = tmp_path / "missing"
    calls = [
        lambda: asyncio.run(
            compare_candidates(missing, missing, missing, "development", tmp_path / "cmp", **kw)
        ),
        lambda: asyncio.run(
            run_repeatability(missing, missing, "development", 3, tmp_path / "rep", **kw)
        ),
        lambda: asyncio.run(run_drift(missing, missing, out=tmp_path / "drift", **kw)),
    ]
    for call in calls:
        with pytest.raises(WorkbenchError) as info:
            call()
        assert codes(info.value) == [code]
    with pytest.raises(WorkbenchError) as info:
        asyncio.run(run_repeatability(missing, missing, "development", "3", tmp_path / "rep"))  # type: ignore[arg-type]
    assert codes(info.value) == ["invalid_repeats"]
    assert not any((tmp_path / name).exists() for name in ("cmp", "rep", "drift"))
