"""One set of run options (``workbench.cli._run_options``) gathered into one frozen RunOptions."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from workbench.cli._run_options import run_option, run_options
from workbench.runs._options import RunOptions

CLI = Path(__file__).resolve().parents[1] / "workbench" / "cli"


def _probe(*names: str, **overrides: dict) -> tuple[click.Command, list[RunOptions]]:
    seen: list[RunOptions] = []

    @click.command()
    @click.option("--other", default="x")
    @run_options(*names, **overrides)
    def probe(other: str, options: RunOptions) -> None:
        assert other == "x"
        seen.append(options)

    return probe, seen


def test_options_travel_as_one_frozen_object() -> None:
    probe, seen = _probe(
        "concurrency",
        "budget",
        "max_cases",
        "repeats",
        "cache",
        "no_cache",
        "retry_errors",
        "no_progress",
    )
    result = CliRunner().invoke(
        probe,
        [
            "--concurrency",
            "3",
            "--budget-usd",
            "1.5",
            "--max-cases",
            "4",
            "--repeat",
            "2",
            "--cache",
            "c",
            "--retry-errors",
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    assert seen == [
        RunOptions(
            concurrency=3,
            budget_usd=1.5,
            max_cases=4,
            repeats=2,
            cache_dir="c",
            retry_errors=True,
            progress=False,
        )
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        seen[0].concurrency = 9  # type: ignore[misc]
    assert (seen[0].executor, seen[0].shards, seen[0].calls_per_second) == ("local", None, None)


def test_the_executor_options_join_the_same_object() -> None:
    probe, seen = _probe("concurrency", "executor", "shards", "calls_per_second")
    args = ["--executor", "ray", "--shards", "3", "--calls-per-second", "2.5", "--concurrency", "6"]
    result = CliRunner().invoke(probe, args)
    assert result.exit_code == 0, result.output
    assert seen == [RunOptions(concurrency=6, executor="ray", shards=3, calls_per_second=2.5)]
    refused = CliRunner().invoke(probe, ["--executor", "dask"])
    assert refused.exit_code == 2 and "'dask' is not one of 'local', 'ray'" in refused.output


def test_no_cache_wins_and_defaults_are_the_engine_defaults() -> None:
    probe, seen = _probe("cache", "no_cache")
    assert CliRunner().invoke(probe, ["--cache", "c", "--no-cache"]).exit_code == 0
    assert seen[0].cache_dir is False
    probe, seen = _probe("concurrency")
    assert CliRunner().invoke(probe, []).exit_code == 0
    assert seen[0] == RunOptions()


def test_options_placed_apart_are_gathered_too() -> None:
    seen: list[RunOptions] = []

    @click.command()
    @run_options("budget", budget={"help": "own help"})
    @click.option("--other", default="x")
    @run_option("concurrency")
    def probe(other: str, options: RunOptions) -> None:
        seen.append(options)

    result = CliRunner().invoke(probe, ["--concurrency", "2", "--budget-usd", "3"])
    assert result.exit_code == 0, result.output
    assert seen == [RunOptions(concurrency=2, budget_usd=3.0)]
    help_text = CliRunner().invoke(probe, ["--help"]).output
    assert "own help" in help_text
    assert (
        help_text.index("--budget-usd")
        < help_text.index("--other")
        < help_text.index("--concurrency")
    )


def test_invalid_values_are_refused_by_the_shared_types() -> None:
    probe, _ = _probe("concurrency", "budget")
    for args in (["--concurrency", "0"], ["--budget-usd", "-1"], ["--budget-usd", "nan"]):
        result = CliRunner().invoke(probe, args)
        assert result.exit_code == 2, (args, result.output)


def test_unknown_option_name_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown run options"):
        run_options("concurency")


def test_no_command_declares_a_run_option_by_hand() -> None:
    by_hand = re.compile(
        r'click\.option\("--(concurrency|budget-usd|max-cases|no-cache|no-progress|retry-errors|cache)"'
    )
    offenders = [
        f"{p.name}:{n}"
        for p in CLI.glob("*.py")
        if p.name != "_run_options.py"
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if by_hand.search(line)
    ]
    assert offenders == []


def test_a_commands_own_option_of_the_same_name_stays_its_own() -> None:
    seen: list[tuple[int, RunOptions]] = []

    @click.command()
    @click.option("--repeats", type=int, required=True)
    @run_options("concurrency")
    def probe(repeats: int, options: RunOptions) -> None:
        seen.append((repeats, options))

    result = CliRunner().invoke(probe, ["--repeats", "3"])
    assert result.exit_code == 0, result.output
    assert seen == [(3, RunOptions())]


def test_two_run_options_on_one_command_are_refused() -> None:
    with pytest.raises(ValueError, match="one @run_options"):

        @run_options("budget")
        @click.option("--other")
        @run_options("concurrency")
        def probe(other: str, options: RunOptions) -> None: ...
