"""CLI start-up: ``workbench`` imports a command's module only when that command runs.

``import workbench.cli`` and ``workbench --help`` load click and one small module, never
Ragas, langchain, pandas, numpy, Altair or papermill; the command list comes from a static
table (``workbench.cli.main.COMMANDS``) that must match each command's own help.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from workbench.cli import main
from workbench.cli._lazy_group import LazyCommand, LazyGroup
from workbench.cli.main import COMMANDS

ROOT = Path(__file__).resolve().parents[1]

HEAVY = (
    "ragas",
    "langchain",
    "langchain_core",
    "pandas",
    "numpy",
    "altair",
    "papermill",
    "nbformat",
    "scipy",
    "statsmodels",
    "sklearn",
    "openai",
    "instructor",
)
"""Libraries that cost tenths of a second or more to import; none belongs in start-up."""

_PROBE = """
import contextlib, io, json, sys
args = json.loads(sys.argv[1])
out = io.StringIO()
if args is None:
    import workbench.cli
else:
    from workbench.cli import main
    code = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            main(args, prog_name="workbench")
        except SystemExit as exc:
            code = exc.code
    print(json.dumps({"code": code, "output": out.getvalue()}), file=sys.__stderr__)
print(json.dumps(sorted(sys.modules)))
"""


def _fresh_process(args: list[str] | None) -> tuple[set[str], dict | None]:
    """Modules loaded by a new interpreter that imports workbench.cli (and runs ``args``)."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**_env(), "COLUMNS": "80"},
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stderr.strip().splitlines()[-1]) if args is not None else None
    return set(json.loads(done.stdout)), result


def _env() -> dict[str, str]:
    return {**os.environ, "RAGAS_DO_NOT_TRACK": "true"}


def _loaded(modules: set[str], roots: tuple[str, ...]) -> list[str]:
    return sorted(
        root for root in roots if root in modules or any(m.startswith(root + ".") for m in modules)
    )


def test_import_workbench_cli_loads_no_heavy_library_and_no_command() -> None:
    modules, _ = _fresh_process(None)
    assert _loaded(modules, HEAVY) == []
    commands = sorted(
        m
        for m in modules
        if m.startswith("workbench.cli.")
        and m not in {"workbench.cli.main", "workbench.cli._lazy_group"}
    )
    assert commands == []


def test_help_lists_every_command_without_importing_any() -> None:
    modules, result = _fresh_process(["--help"])
    assert result is not None and result["code"] == 0
    listed = result["output"].split("Commands:\n", 1)[1]
    names = [
        line.split()[0]
        for line in listed.splitlines()
        if line.startswith("  ") and not line.startswith("   ")
    ]
    assert names == sorted(COMMANDS)
    assert _loaded(modules, HEAVY) == []
    assert not [
        m
        for m in modules
        if m.startswith("workbench.cli.")
        and m not in {"workbench.cli.main", "workbench.cli._lazy_group"}
    ]


def test_validate_on_the_demo_loads_no_heavy_library() -> None:
    modules, result = _fresh_process(["validate", "data/demo"])
    assert result is not None and result["code"] in (0, None), result
    assert "OK - " in result["output"]
    assert _loaded(modules, HEAVY) == []
    # validate reads and checks records: the statistics (pydantic models, numpy on use) are the
    # card's and the agreement report's, loaded only when those are computed.
    assert _loaded(modules, ("workbench.stats",)) == []


_IMPORT_EACH = """
import importlib, json, sys
heavy = json.loads(sys.argv[1])
found = {}
for module in json.loads(sys.argv[2]):
    importlib.import_module(module)
    loaded = [h for h in heavy if h in sys.modules and h not in found]
    for h in loaded:
        found[h] = module
print(json.dumps({h: m for h, m in found.items()}))
"""


def test_no_command_module_imports_a_heavy_library() -> None:
    # A heavy library belongs inside the function that uses it: loading any command (as
    # `workbench <command> --help` does) must not pay for Ragas, pandas, numpy, papermill...
    modules = sorted({entry.target.partition(":")[0] for entry in COMMANDS.values()})
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_EACH, json.dumps(HEAVY), json.dumps(modules)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        env=_env(),
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {}  # {library: the first command module that imported it}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_static_help_matches_the_command(name: str) -> None:
    group = main
    assert isinstance(group, LazyGroup)
    command = group.load(name)
    assert command.name == name, (
        f"{COMMANDS[name].target} is named {command.name!r}, listed as {name!r}"
    )
    first_paragraph = " ".join((command.help or "").partition("\n\n")[0].split())
    assert COMMANDS[name].help == first_paragraph, (
        f"update COMMANDS[{name!r}].help in workbench/cli/main.py"
    )
    assert command.short_help is None or COMMANDS[name].help == " ".join(command.short_help.split())


@pytest.mark.parametrize("width", [40, 80, 200])
def test_lazy_listing_is_the_listing_of_the_loaded_commands(width: int) -> None:
    # A fresh group, so every command is listed through its static help: the output must be
    # exactly what click prints for the real, imported commands, at any terminal width.
    lazy = LazyGroup(name="workbench", help=main.help, params=main.params, lazy_commands=COMMANDS)
    eager = click.Group(
        name="workbench",
        help=main.help,
        params=main.params,
        commands={name: lazy.load(name) for name in COMMANDS},
    )
    settings = {"terminal_width": width, "max_content_width": width}
    assert lazy.get_help(click.Context(lazy, **settings)) == eager.get_help(
        click.Context(eager, **settings)
    )
    assert not lazy.commands  # listing imported nothing


def test_unknown_command_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["no-such-command"])
    assert result.exit_code == 2 and "No such command 'no-such-command'" in result.output


def test_lazy_target_must_be_a_click_command() -> None:
    group = LazyGroup(
        name="g",
        lazy_commands={"bad": LazyCommand("workbench.cli.main:COMMANDS", "Not a command.")},
    )
    with pytest.raises(TypeError, match="not a click command"):
        group.get_command(click.Context(group), "bad")


def test_console_script_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "workbench", "--version"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
    )
    assert done.returncode == 0 and done.stdout.startswith("workbench, version ")
