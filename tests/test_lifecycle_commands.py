"""Every command docs/lifecycle.md names is a real command with real options, and its
authority walk-through runs as written: the promotion shown by ``workbench status``, then the
judge stale after the rubric version changes in a temporary copy.

Command lines in code blocks are parsed by the CLI itself (``make_context``: unknown options,
missing required options and bad values fail); commands in code spans name a real command and
only its real options. The blocks marked ``lifecycle-demo`` are executed in a temporary
directory standing for ``$WORK`` (``cp -r`` and the one ``sed -i`` are done in Python), each
line's exit code checked against its ``# exit N`` comment (0 without one), and each ``status``
output compared with the output block the guide shows (times, ids and versions normalized).
``ssh-keygen -t ed25519 -N "" -f KEY`` is done in Python too (an Ed25519 key pair, OpenSSH), and
``export WORKBENCH_PROJECT_ROOT=DIR`` pins the project root for the rest of the test.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from conftest import PROJECT_ROOT_ENV, undocumented_fields
from pydantic import BaseModel

from workbench.authority import (
    AuthorityContext,
    AuthorityEntry,
    AuthorityGrant,
    AuthorityStatus,
    DriftSummary,
    GoldState,
    JudgeStatus,
    ReportFacts,
    RequestedAuthority,
    ShadowDisagreement,
    ShadowEntry,
    ShadowPair,
    ShadowSlice,
    StaleReason,
)
from workbench.cli.main import main
from workbench.policy import PolicyScope

ROOT = Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "docs" / "lifecycle.md").read_text(encoding="utf-8")
FORMATS = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
BLOCK = re.compile(
    r"(?:<!-- lifecycle-demo: (?P<mark>[a-z ]+) -->\n)?```(?P<lang>[a-z]*)\n(?P<body>.*?)```",
    re.DOTALL,
)


def _blocks() -> list[tuple[str | None, str, str]]:
    return [(m.group("mark"), m.group("lang"), m.group("body")) for m in BLOCK.finditer(GUIDE)]


def _command_lines(body: str) -> list[tuple[str, int]]:
    """Shell lines of a block, continuations joined, with the exit code each expects."""
    lines: list[tuple[str, int]] = []
    pending = ""
    for raw in body.splitlines():
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        line = (pending + raw).strip()
        pending = ""
        if not line:
            continue
        expected = re.search(r"#\s*exit (\d)", line)
        lines.append((line, int(expected.group(1)) if expected else 0))
    return lines


def _resolve(words: list[str]) -> tuple[click.Command, list[str], str]:
    """The (sub)command ``words`` name and the arguments left for it."""
    command: click.Command = main
    path = "workbench"
    while (
        isinstance(command, click.Group)
        and words
        and (sub := command.get_command(click.Context(command), words[0])) is not None
    ):
        path += " " + words[0]
        command = sub
        words = words[1:]
    return command, words, path


def _options(command: click.Command) -> set[str]:
    return {opt for p in command.params for opt in [*p.opts, *p.secondary_opts]}


def test_every_command_line_in_the_guide_parses() -> None:
    checked = 0
    for _, lang, body in _blocks():
        if lang not in ("", "sh"):
            continue
        for line, _ in _command_lines(body):
            if not line.startswith("workbench "):
                continue
            command, args, path = _resolve(shlex.split(line, comments=True)[1:])
            assert not isinstance(command, click.Group), f"{line}: {path} needs a subcommand"
            try:
                command.make_context(path, list(args))
            except click.ClickException as exc:
                pytest.fail(f"{line}: {exc.format_message()}")
            checked += 1
    assert checked >= 15


def test_every_command_in_a_code_span_is_real_with_real_options() -> None:
    spans = re.findall(r"`(workbench [^`]+)`", GUIDE)
    assert len(spans) >= 20
    for span in spans:
        words = span.split()
        command, rest, path = _resolve(words[1:])
        assert path != "workbench", span
        if isinstance(command, click.Group):
            assert not rest or rest[0].startswith("-"), (
                f"{span}: {rest[0]!r} is not a subcommand of {path}"
            )
            continue
        named = {w.split("=")[0] for w in rest if w.startswith("--")}
        assert named <= _options(command), (
            f"{span}: {sorted(named - _options(command))} are not options of {path}"
        )


def _normalize(text: str, work: Path) -> list[str]:
    text = text.replace(str(work), "$WORK")
    text = re.sub(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", "<time>", text)
    text = re.sub(r"drift-[0-9a-f]{12}", "<drift>", text)
    text = re.sub(r"Ragas \S+", "Ragas <v>", text)
    return [line.rstrip() for line in text.strip().splitlines()]


def _keygen(private: Path) -> None:
    """``ssh-keygen -t ed25519 -N "" -f private``: the key and ``private.pub``."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    private.with_name(private.name + ".pub").write_bytes(public + b" release@walk-through\n")


def _run(body: str, work: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Run a demo block; return the output of its ``workbench status`` lines."""
    statuses: list[str] = []
    for line, expected in _command_lines(body):
        words = shlex.split(line.replace("$WORK", str(work)), comments=True)
        if words[0] == "export" and len(words) == 2 and "=" in words[1]:
            name, value = words[1].split("=", 1)
            assert name == PROJECT_ROOT_ENV, f"the walk-through exports only {PROJECT_ROOT_ENV}"
            monkeypatch.setenv(name, value)
            continue
        if words[:2] == ["cp", "-r"]:
            shutil.copytree(words[2], words[3])
            continue
        if words[0] == "ssh-keygen":
            _keygen(Path(words[words.index("-f") + 1]))
            continue
        if words[:2] == ["sed", "-i"]:
            _, old, new, _ = words[2].split("/")
            target = Path(words[3])
            text = target.read_text(encoding="utf-8")
            changed = re.sub(old, new, text, count=1, flags=re.MULTILINE)
            assert changed != text, line
            target.write_text(changed, encoding="utf-8")
            continue
        assert words[0] == "workbench", (
            f"the walk-through runs only workbench, export, cp -r, ssh-keygen and sed -i: {line}"
        )
        result = CliRunner().invoke(main, words[1:])
        assert result.exit_code == expected, f"{line}\n{result.output}"
        if words[1] == "status":
            statuses.append(result.output)
    return statuses


@pytest.mark.notebook
def test_the_authority_walk_through_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marked = {mark: body for mark, _, body in _blocks() if mark}
    assert set(marked) == {
        "project",
        "policy",
        "promote",
        "output promote",
        "stale",
        "output stale",
    }
    monkeypatch.chdir(ROOT)  # the guide's paths are relative to the project root
    work = tmp_path / "work"
    work.mkdir()
    (work / "workbench.yaml").write_text(marked["project"], encoding="utf-8")
    (work / "lenient-block@1.yaml").write_text(marked["policy"], encoding="utf-8")
    [promoted] = _run(marked["promote"], work, monkeypatch)
    assert _normalize(promoted, work) == _normalize(marked["output promote"], work)
    [stale] = _run(marked["stale"], work, monkeypatch)
    assert _normalize(stale, work) == _normalize(marked["output stale"], work)
    assert not (ROOT / "data" / "demo" / "authority.jsonl").exists()
    assert (work / "held_out_ledger.jsonl").is_file()  # the walk-through's project's ledger


MODELS = [
    PolicyScope,
    RequestedAuthority,
    AuthorityContext,
    AuthorityGrant,
    ReportFacts,
    AuthorityEntry,
    GoldState,
    StaleReason,
    DriftSummary,
    ShadowPair,
    JudgeStatus,
    AuthorityStatus,
    ShadowSlice,
    ShadowDisagreement,
    ShadowEntry,
]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_authority_field_is_documented_with_a_docstring(model: type[BaseModel]) -> None:
    assert [name for name in model.model_fields if f"`{name}`" not in FORMATS] == []
    assert undocumented_fields(model, "schema_version") == []
