"""Every attempt a run counted is in its results: a deleted retry is noticed at the join."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._io import JSONRecordError, iter_jsonl_lines, loads_json, read_json_file
from ..errors import Problem, problem
from ._rundir import RESULTS_FILE, RunDir

_FIX_MISSING = (
    "use the results exactly as `workbench run` wrote them (every attempt, retries included);"
    " re-run the judge into a fresh directory if they were lost"
)


def attempt_problems(results: str | Path) -> list[Problem]:
    """Compare the attempts in ``results`` with what its run directory counted (``calls +
    cache_hits``): exactly the sum over ``invocations.jsonl`` (fewer: ``attempts_missing``, more:
    ``attempts_unrecorded``), else at least ``run.json``'s; an unreadable count is
    ``attempts_unverifiable``. Empty outside a run directory and for a sharded run."""
    path = Path(results)
    if path.name != RESULTS_FILE or not path.is_file():
        return []
    run = RunDir(path.parent)
    if run.shards_file.exists():
        return []
    invocations, summary = run.invocations, run.summary
    if invocations.is_file():
        counted, source, exact = _invocations(invocations), invocations, True
    elif summary.is_file():
        counted, source, exact = _summary(summary), summary, False
    else:
        return []
    if counted is None:
        return [
            problem(
                str(source),
                "attempts_unverifiable",
                "the run's count of attempts (calls + cache_hits) cannot be read, so deleted"
                " attempts could not be noticed",
                "restore the run.json and invocations.jsonl `workbench run` wrote beside the"
                " results",
            )
        ]
    present = _lines(path)
    if present < counted:
        message = (
            f"{source.name} counts {counted} attempt(s) (calls + cache hits) but the results hold"
            f" {present}: {counted - present} attempt(s) were removed"
        )
        return [problem(str(path), "attempts_missing", message, _FIX_MISSING)]
    if exact and present > counted:
        message = (
            f"the results hold {present} attempt(s) but {source.name} counts {counted} (calls +"
            f" cache hits): {present - counted} were added outside `workbench run`"
        )
        return [problem(str(path), "attempts_unrecorded", message, _FIX_MISSING)]
    return []


def _count(record: Any) -> int | None:
    if not isinstance(record, dict):
        return None
    calls, hits = record.get("calls"), record.get("cache_hits")
    if type(calls) is not int or type(hits) is not int or calls < 0 or hits < 0:
        return None
    return calls + hits


def _invocations(path: Path) -> int | None:
    total = 0
    bad: list[int] = []
    for _number, line in iter_jsonl_lines(path, bad):
        try:
            n = _count(loads_json(line))
        except ValueError:
            return None
        if n is None:
            return None
        total += n
    return None if bad else total


def _summary(path: Path) -> int | None:
    try:
        return _count(read_json_file(path))
    except (OSError, JSONRecordError, ValueError):
        return None


def _lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for raw in f if raw.strip())
