"""Every attempt a run counted is in its results: a deleted retry is noticed at the join.

``workbench run`` appends every attempt (each judge call, each verdict reused from the cache) to
``results.jsonl`` and counts them per invocation in ``invocations.jsonl`` (``calls`` +
``cache_hits``) and, for the last invocation, in ``run.json``. Deleting attempts from the
results (the retries that show a judge was unstable or erred, say) leaves a file that still
reads as valid. :func:`attempt_problems` compares the attempts present with what the run
directory counted; ``align`` and ``gate`` refuse results that fail it before they are read:

- with ``invocations.jsonl``: the lines of ``results.jsonl`` must be exactly the sum over
  invocations; fewer is ``attempts_missing``, more is ``attempts_unrecorded``;
- with only ``run.json``: at least its invocation's ``calls + cache_hits`` (``attempts_missing``);
- a count that cannot be read is ``attempts_unverifiable``.

Results outside a run directory (an importer's output, a report's run records without their
``invocations.jsonl``) are checked against what is there; a directory of shards and a run sharded
by the Ray executor are not checked here (each shard is a run directory of its own).
"""

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
    """What the run directory holding ``results`` counted that the results do not hold (module
    doc); empty when nothing beside the results counts attempts."""
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
    """``calls + cache_hits`` of one invocation record, None when they are not counts."""
    if not isinstance(record, dict):
        return None
    calls, hits = record.get("calls"), record.get("cache_hits")
    if type(calls) is not int or type(hits) is not int or calls < 0 or hits < 0:
        return None
    return calls + hits


def _invocations(path: Path) -> int | None:
    """The attempts every invocation counted, None when a line is not an invocation record."""
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
    """The attempts in a results file: its non-blank lines (a blank line is refused by the
    reader)."""
    count = 0
    with path.open("rb") as f:
        for raw in f:
            if raw.strip():
                count += 1
    return count
