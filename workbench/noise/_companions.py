"""Companion metrics (completeness, refusal ...) declared beside NoiseSensitivity
(``policy.companions``), read from JSON Lines (``workbench noise --companions FILE``). A row
joins a member only when its ``case_id`` is ``<pair_id>:<member>`` and its ``run_id`` is the
member's ``generation_trace.run_id``; other rows are listed, never attached.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import ValidationError

from .._io import iter_jsonl_lines, loads_json
from .._load import Problems
from .._record import Record as _Model
from ._evidence import Member
from ._pairs import MEMBERS, NoisePair


class CompanionValue(_Model):
    """One companion-metric value of one pair member, from one generation run."""

    metric: str
    """The metric's name, as the policy declares it (e.g. ``completeness``, ``refusal``)."""
    run_id: str
    """The generation run of the response the value was computed on."""
    case_id: str
    """``<pair_id>:<member>``."""
    value: float
    """The metric's value (finite)."""


def load_companions(paths: Sequence[str | Path]) -> list[CompanionValue]:
    """Every row of the companion files; refuses (every problem at once) malformed rows and
    non-finite values."""
    out: list[CompanionValue] = []
    problems = Problems()
    for path in map(Path, paths):
        if not path.is_file():
            message = "the companion-metrics file does not exist"
            fix = "point --companions at a JSON Lines file of {metric, run_id, case_id, value} rows"
            problems.add(str(path), "companions_missing", message, fix)
            continue
        not_utf8: list[int] = []
        for number, text in iter_jsonl_lines(path, not_utf8):
            try:
                row = CompanionValue.model_validate(loads_json(text))  # strict: NaN refused
            except (ValueError, ValidationError) as exc:
                message = f"not a companion row ({str(exc).splitlines()[0]})"
                fix = "write {metric, run_id, case_id, value} per line"
                problems.add(f"{path}:{number}", "companion_invalid", message, fix)
                continue
            if not math.isfinite(row.value):
                message = f"{row.metric} of {row.case_id} is {row.value}"
                fix = "a companion value must be a finite number"
                problems.add(f"{path}:{number}", "companion_invalid", message, fix)
                continue
            out.append(row)
        for n in not_utf8:
            message = "not a companion row (the line is not valid UTF-8)"
            problems.add(f"{path}:{n}", "companion_invalid", message, "save the file as UTF-8")
    problems.raise_if_any(f"invalid companion metrics: {len(problems)} problem(s)")
    return out


class CompanionJoin(_Model):
    """Companion values joined to pair members."""

    values: dict[str, dict[str, dict[str, float]]]
    """pair id -> metric -> member -> value."""
    missing: list[str]
    """``<pair_id>:<member>:<metric>`` of declared metrics with no joined value."""
    unjoined: list[str]
    """Rows that joined no member: ``<case_id> <metric> run <run_id>: why``."""


def join_companions(
    pairs: Iterable[NoisePair], metrics: Iterable[str], rows: Iterable[CompanionValue]
) -> CompanionJoin:
    """Join rows to members by (case id, generation run id); list what is missing and what did not
    join."""
    declared = list(metrics)
    members = {p.item_id(m): (p, m) for p in pairs for m in MEMBERS}
    values: dict[str, dict[str, dict[str, float]]] = {}
    unjoined: list[str] = []
    for row in rows:
        found = members.get(row.case_id)
        why = _unjoined(row, declared, found)
        if why is not None:
            unjoined.append(f"{row.case_id} {row.metric} run {row.run_id}: {why}")
        elif found is not None:
            pair, member = found
            values.setdefault(pair.pair_id, {}).setdefault(row.metric, {})[member] = row.value
    missing = {
        f"{p.item_id(m)}:{metric}"
        for p, m in members.values()
        for metric in declared
        if m not in values.get(p.pair_id, {}).get(metric, {})
    }
    return CompanionJoin(values=values, missing=sorted(missing), unjoined=unjoined)


def _unjoined(
    row: CompanionValue, declared: list[str], found: tuple[NoisePair, Member] | None
) -> str | None:
    if row.metric not in declared:
        return "metric not declared in the policy"
    if found is None:
        return "no such pair member in this selection"
    trace = found[0].member(found[1]).generation_trace
    if trace is None:
        return "the member has no generation trace, so no run id to join on"
    if trace.run_id != row.run_id:
        return f"the response was generated in run {trace.run_id}"
    return None
