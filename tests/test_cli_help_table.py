"""``workbench ranking --help`` keeps its subcommand table (a ``\\b`` block) row by row.

The table is wider than the 100-column source limit, so it is kept as a constant
(``workbench.cli.ranking._RANKING_HELP``) instead of the group's docstring; click must still
print every row whole and unwrapped, in order.
"""

from __future__ import annotations

from click.testing import CliRunner

from workbench.cli.main import main

ROWS = [
    (
        "workbench ranking run --candidate SPEC --fixtures FILE [--policy P]",
        "battery, report, gate",
    ),
    ("workbench ranking agreement --fixtures FILE", "reviewer-reviewer agreement"),
    ("workbench ranking history FILE", "label history of a fixture file"),
    ("workbench ranking replay ... --case ID --repeat N", "replay one attempt from frozen inputs"),
    ("workbench ranking verify RUN_DIR", "verify a locked ranking run"),
    (
        "workbench ranking retire-scalar --fixtures F --policy P ...",
        "retire the scalar gate, on record",
    ),
]


def test_ranking_help_prints_the_table_rows_whole_and_aligned() -> None:
    result = CliRunner().invoke(main, ["ranking", "--help"], terminal_width=80)
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    rows = [line for line in lines if line.startswith("workbench ranking ")]
    assert [(r[:70].rstrip(), r[70:]) for r in rows] == ROWS
    assert lines[0].startswith("Usage:")
    assert (
        "Ranking judges: battery and gate (run, the default), reviewer agreement, label"
        " history, replay, verify (freeze a fixture file with `workbench freeze FILE`)."
        in " ".join(result.output.split())
    )
