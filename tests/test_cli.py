"""The command line: help everywhere, documented, exit code 2 and no traceback for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner
from conftest import make_case, make_result, write_results
from lineage_support import stamped

from workbench.cli import main

ROOT = Path(__file__).resolve().parents[1]


def all_commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    # list_commands/get_command, not group.commands: the top-level group imports its
    # commands on first use (workbench.cli._lazy_group).
    ctx = click.Context(group)
    out = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        path = (*prefix, name)
        out.append(path)
        if isinstance(command, click.Group):
            out += all_commands(command, path)
    return out


COMMANDS = all_commands(main)


def test_expected_commands_exist() -> None:
    names = {" ".join(c) for c in COMMANDS}
    assert {
        "validate",
        "card",
        "agreement",
        "align",
        "run",
        "import",
        "import evalsbench",
        "import pandalm",
    } <= names


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_every_command_has_help_and_is_in_the_command_reference(command: tuple[str, ...]) -> None:
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output and len(result.output.splitlines()) > 3
    reference = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    assert f"workbench {' '.join(command)}" in reference


def test_validate_ok_and_bad(make_dataset) -> None:
    good = make_dataset([make_case("a"), make_case("b", "fail")])
    ok = CliRunner().invoke(main, ["validate", str(good)])
    assert ok.exit_code == 0 and "OK - 2 cases" in ok.output
    bad = make_dataset(["{not json", make_case("a", slice="nowhere"), make_case("a")])
    result = CliRunner().invoke(main, ["validate", str(bad)])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    for code in ("malformed_json", "unknown_slice", "duplicate_case_id"):
        assert f"[{code}]" in result.output
    assert "gold.jsonl:1:" in result.output and "gold.jsonl:3: case a:" in result.output


def test_validate_json(make_dataset) -> None:
    bad = make_dataset([make_case("a", partition="dev")])
    result = CliRunner().invoke(main, ["validate", str(bad), "--json"])
    assert result.exit_code == 2
    payload = json.loads(result.output)
    assert payload["ok"] is False and payload["problems"][0]["code"] == "unknown_partition"


def test_missing_paths_exit_2_without_traceback(tmp_path: Path) -> None:
    for args in (
        ["validate", str(tmp_path / "nope")],
        ["card", str(tmp_path / "nope")],
        ["agreement", str(tmp_path / "nope")],
        ["align", "--gold", str(tmp_path / "nope"), "--results", str(tmp_path / "r.jsonl")],
        [
            "run",
            "--candidate",
            str(tmp_path / "x@1.yaml"),
            "--gold",
            str(tmp_path),
            "--partition",
            "development",
            "--out",
            str(tmp_path / "o"),
        ],
    ):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output and "Fix:" in result.output


def test_align_text_json_and_refusal(make_dataset, tmp_path: Path) -> None:
    cases = [
        make_case("a", "pass"),
        make_case("b", "fail"),
        make_case("c", "fail", slice="billing"),
    ]
    ds = make_dataset(cases)
    results = write_results(
        tmp_path / "r.jsonl",
        stamped([make_result(cases[0], "pass"), make_result(cases[1], "pass")], ds),
    )
    text = CliRunner().invoke(main, ["align", "--gold", str(ds), "--results", str(results)])
    assert text.exit_code == 0, text.output
    assert "INCOMPLETE" in text.output and "billing" in text.output
    as_json = CliRunner().invoke(
        main, ["align", "--gold", str(ds), "--results", str(results), "--json"]
    )
    report = json.loads(as_json.output)
    assert report["status"] == "incomplete" and report["missing_case_ids"] == ["c"]
    assert report["overall"]["false_passes"] == 1 and report["overall"]["false_pass_rate"]["n"] == 1
    strict = CliRunner().invoke(
        main, ["align", "--gold", str(ds), "--results", str(results), "--fail-incomplete"]
    )
    assert strict.exit_code == 3
    dup = write_results(
        tmp_path / "dup.jsonl", stamped([make_result(cases[0]), make_result(cases[0])], ds)
    )
    refused = CliRunner().invoke(main, ["align", "--gold", str(ds), "--results", str(dup)])
    assert (
        refused.exit_code == 2
        and "[duplicate_result]" in refused.output
        and "Traceback" not in refused.output
    )


def test_card_and_agreement(make_dataset) -> None:
    ds = make_dataset(
        [make_case("a", reviews={"r1": "pass", "r2": "fail"}), make_case("b", "fail")]
    )
    card = CliRunner().invoke(main, ["card", str(ds)])
    assert card.exit_code == 0 and "reviewer disagreement: 1/2 cases (50.0%)" in card.output
    agreement = CliRunner().invoke(main, ["agreement", str(ds), "--json"])
    payload = json.loads(agreement.output)
    assert payload["overall"]["cases"] == 2 and payload["overall"]["disagreement"]["k"] == 1


def test_run_command(make_dataset, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    ds = make_dataset([make_case("a", response="refund ok"), make_case("b", "fail", response="no")])
    spec = tmp_path / "kw@1.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "name": "kw",
                "version": "1",
                "kind": "ragas-function",
                "labels": ["pass", "fail"],
                "function": "judge_fixtures:keyword_judge",
            }
        )
    )
    out = tmp_path / "run"
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--candidate",
            str(spec),
            "--gold",
            str(ds),
            "--partition",
            "development",
            "--out",
            str(out),
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "COMPLETE - 2 verdicts" in result.output
    assert len((out / "results.jsonl").read_text().splitlines()) == 2
