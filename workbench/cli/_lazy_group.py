"""A click group that imports a subcommand's module only when that subcommand is used;
``--help`` lists the commands from a static table of their help paragraphs."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from gettext import gettext as _
from typing import Any, NamedTuple

import click


class LazyCommand(NamedTuple):
    """Where a subcommand lives and the first paragraph of its help, for the command list."""

    target: str  # "module:attribute" of the click.Command
    help: str


class LazyGroup(click.Group):
    """:class:`click.Group` whose ``lazy_commands`` are imported on first use."""

    def __init__(
        self, *args: Any, lazy_commands: Mapping[str, LazyCommand] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands: dict[str, LazyCommand] = dict(lazy_commands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy_commands:
            self.add_command(self.load(cmd_name), cmd_name)
        return super().get_command(ctx, cmd_name)

    def load(self, cmd_name: str) -> click.Command:
        """Import the module of ``cmd_name`` and return its command object."""
        module_name, _, attribute = self.lazy_commands[cmd_name].target.partition(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.lazy_commands[cmd_name].target} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click.Group.format_commands, but a command not imported yet is listed through a stub
        # carrying its help paragraph (click shortens it as it would the real one).
        commands: list[tuple[str, click.Command]] = []
        for name in self.list_commands(ctx):
            if name in self.commands or name not in self.lazy_commands:
                command = self.get_command(ctx, name)
            else:
                command = click.Command(name, help=self.lazy_commands[name].help)
            if command is None or command.hidden:
                continue
            commands.append((name, command))
        if commands:
            limit = formatter.width - 6 - max(len(name) for name, _ in commands)
            rows = [(name, command.get_short_help_str(limit)) for name, command in commands]
            with formatter.section(_("Commands")):
                formatter.write_dl(rows)
