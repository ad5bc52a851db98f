"""Shared CLI options (``workbench.cli._options``): each declared once, applied by name."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from workbench.cli import main
from workbench.cli._common import refuse_each, user_errors
from workbench.cli._options import SHARED, SharedOption, option, options
from workbench.errors import WorkbenchError
from workbench.stats import DEFAULT_MIN_SHARED

SAME_FLAG_OTHER_MEANING = {
    ("import results", "--reason"),  # a column name, not why
    ("ci release", "--json"),  # a file to write, not a flag
    ("freeze", "--approver"),  # also spelled --who
}
"""Options that carry a shared flag but are another option."""


def _commands(group: click.Group, path: tuple[str, ...] = ()):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            yield " ".join((*path, name)), command  # a group's own options (``workbench noise``)
            yield from _commands(command, (*path, name))
        else:
            yield " ".join((*path, name)), command


def test_no_command_declares_a_shared_option_by_hand() -> None:
    flags = {entry.decls[0] for entry in SHARED.values()}
    by_hand = [
        f"{name} {param.opts[0]}"
        for name, command in _commands(main)
        for param in command.params
        if isinstance(param, click.Option)
        and param.opts[0] in flags
        and not isinstance(param, SharedOption)
        and (name, param.opts[0]) not in SAME_FLAG_OTHER_MEANING
    ]
    assert by_hand == []


def test_an_option_takes_its_entry_and_the_commands_overrides() -> None:
    @click.command()
    @option("gold")
    @option("policy", required=False, help="A policy, if any.")
    @option("overrides", "overrides_path", help="Override store.")
    @option("json")
    def probe(gold: str, policy: str | None, overrides_path: str | None, as_json: bool) -> None:
        click.echo(f"{gold} {policy} {overrides_path} {as_json}")

    result = CliRunner().invoke(probe, ["--gold", "g", "--overrides", "o", "--json"])
    assert result.exit_code == 0 and result.output == "g None o True\n"
    missing = CliRunner().invoke(probe, [])
    assert missing.exit_code == 2 and "Missing option '--gold'" in missing.output
    help_text = CliRunner().invoke(probe, ["--help"]).output
    assert "Gold dataset directory or gold.jsonl.  [required]" in help_text
    assert "A policy, if any." in help_text and "Print JSON." in help_text


def test_an_option_without_a_common_meaning_needs_its_help() -> None:
    with pytest.raises(ValueError, match="--out means something else in every command"):
        option("out")
    assert option("out", help="Run directory.") is not None


def test_shared_defaults_are_the_librarys() -> None:
    # _options stays free of workbench.stats (validate must not load it), so its default is
    # a literal: the library's value, checked here.
    assert SHARED["min_shared"].settings["default"] == DEFAULT_MIN_SHARED


def test_options_apply_several_in_help_order() -> None:
    @click.command()
    @options(option("candidate"), option("gold"), option("json"))
    def probe(candidate: str, gold: str, as_json: bool) -> None:
        pass

    assert [p.name for p in probe.params] == ["candidate", "gold", "as_json"]


def test_refuse_each_lists_every_item_at_once() -> None:
    @click.command()
    @user_errors
    def probe() -> None:
        refuse_each("cannot go", ["--a", "--b"], "option_missing", "{0} is missing", "give {0}")

    result = CliRunner().invoke(probe, [])
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        "error: cannot go",
        "--a: error: --a is missing [option_missing] Fix: give --a",
        "--b: error: --b is missing [option_missing] Fix: give --b",
    ]
    refuse_each("nothing", [], "code", "{0}", "{0}")  # no item: no refusal


def test_refuse_each_raises_a_workbench_error() -> None:
    with pytest.raises(WorkbenchError) as caught:
        refuse_each("bad", ["x"], "c", "{0!r} is bad", "fix it", location="--opt")
    assert [(p.location, p.message) for p in caught.value.problems] == [("--opt", "'x' is bad")]
