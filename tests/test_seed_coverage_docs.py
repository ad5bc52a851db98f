"""The seed coverage notes name only commands the CLI has and tests that exist."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from workbench.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["coverage/noise.md", "coverage/ranking.md"]
TESTS = ROOT / "tests"
TEST_NAMES = {
    m
    for p in TESTS.glob("test_*.py")
    for m in re.findall(r"^(?:async )?def (test_\w+)", p.read_text(encoding="utf-8"), re.M)
}


def _text(name: str) -> str:
    return (ROOT / "docs" / name).read_text(encoding="utf-8")


def _commands(text: str) -> list[str]:
    return sorted({c for c in re.findall(r"`(workbench [^`]*)`", text)})


def _resolve(command: str) -> str | None:
    """None when the subcommand path exists, else what is wrong."""
    ctx = click.Context(main, info_name="workbench")
    current: click.Command = main
    for token in command.split()[1:]:
        if token.startswith(("-", "[")) or not re.fullmatch(r"[a-z][a-z0-9-]*", token):
            break  # an option, a placeholder (FILE, RUN_DIR) or a path: the path ends here
        if not isinstance(current, click.Group):
            break  # an argument of a leaf command
        sub = current.get_command(ctx, token)
        if sub is None:
            return f"{current.name or 'workbench'} has no subcommand {token!r}"
        ctx = click.Context(sub, info_name=token, parent=ctx)
        current = sub
    return None


def _tests(text: str) -> list[str]:
    qualified = re.findall(r"tests/(test_\w+\.py)::(test_\w+)", text)
    bare = re.findall(r"(?<![/\w:])(test_\w+)(?![\w*]|\.py)", text)
    return sorted({f"{f}::{n}" for f, n in qualified} | set(bare))


@pytest.mark.parametrize("doc", DOCS)
def test_every_named_command_exists(doc: str) -> None:
    commands = _commands(_text(doc))
    assert commands, f"{doc} names no workbench command"
    assert {c: err for c in commands if (err := _resolve(c))} == {}


@pytest.mark.parametrize("doc", DOCS)
def test_every_named_test_exists(doc: str) -> None:
    named = _tests(_text(doc))
    assert named, f"{doc} names no test"
    missing = []
    for ref in named:
        if "::" in ref:
            file, name = ref.split("::")
            path = TESTS / file
            if not path.exists() or not re.search(
                rf"^(?:async )?def {name}\b", path.read_text(encoding="utf-8"), re.M
            ):
                missing.append(ref)
        elif ref not in TEST_NAMES:
            missing.append(ref)
    assert missing == []


def test_the_checks_catch_a_wrong_name() -> None:
    assert _resolve("workbench ranking run --candidate SPEC") is None
    assert _resolve("workbench ranking verify RUN_DIR") is None
    assert _resolve("workbench ranking rerun --case X") is not None
    assert _tests("`test_no_such_test` and `tests/test_ranking.py::test_x`") == [
        "test_no_such_test",
        "test_ranking.py::test_x",
    ]
    assert _tests("see `tests/test_noise*.py` and tests/test_ranking.py") == []
