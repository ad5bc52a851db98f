"""Held-out content is never judged or shown outside a certification: commands refuse a case
whose item key is a held-out case's (``held_out_content_exposed``, exit 2)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .._io import iter_jsonl_lines, loads_json
from ..errors import Problem, WorkbenchError, problem, refusal
from ..gold import GoldDataset
from ._content import item_key
from ._ledger import HeldOutLedger
from ._location import gold_directory, ledger_path_for

EXPOSED = "held_out_content_exposed"
"""The refusal code: held-out content outside a certification."""

_KEYS_BY_DATASET: dict[str, dict[str, str]] = {}
"""Held-out item key -> held-out case id, per dataset sha256 (computed once per process)."""
_CACHE_LIMIT = 8


def held_out_item_keys(dataset: GoldDataset) -> dict[str, str]:
    """Item key -> case id of every held-out record of ``dataset``, superseded ones included;
    cached by the dataset's sha256."""
    cached = _KEYS_BY_DATASET.get(dataset.sha256)
    if cached is not None:
        return cached
    keys = {item_key(r): r.case_id for r in dataset.records if r.partition.value == "held_out"}
    if len(_KEYS_BY_DATASET) >= _CACHE_LIMIT:
        _KEYS_BY_DATASET.pop(next(iter(_KEYS_BY_DATASET)))
    _KEYS_BY_DATASET[dataset.sha256] = keys
    return keys


def recorded_item_keys(gold: str | Path | GoldDataset) -> dict[str, str]:
    """Item key -> ``held out (ledger entry ID)`` for every held-out item the project's ledger
    records; a missing or damaged sidecar is refused."""
    from ._items import read_keys

    path = ledger_path_for(gold.root if isinstance(gold, GoldDataset) else gold)
    if not path.is_file():
        return {}
    found: dict[str, str] = {}
    for entry in HeldOutLedger(path).entries():
        digest = entry.held_out_items_sha256
        if entry.event != "started" or digest is None:
            continue
        keys = read_keys(path, digest)
        if keys is None:
            raise refusal(
                "the held-out ledger cannot show which held-out content was used",
                str(path),
                "ledger_items_missing",
                f"the held-out items of ledger entry {entry.entry_id} are missing",
                "restore the ledger's items folder from version control or a backup",
            )
        for key in keys:
            found.setdefault(key, f"held out (ledger entry {entry.entry_id})")
    return found


def _label(item: Any) -> str:
    for name in ("case_id", "control_id", "pair_id"):
        value = getattr(item, name, None)
        if isinstance(value, str):
            return value
    return "?"


def exposure_problems(
    items: Iterable[Any], held: Mapping[str, str], where: str, *, what: str = "case"
) -> list[Problem]:
    """One ``held_out_content_exposed`` problem per item of ``items`` whose key is in ``held``."""
    out: list[Problem] = []
    for item in items:
        source = held.get(item_key(item))
        if source is None:
            continue
        name = _label(item)
        out.append(
            problem(
                where,
                EXPOSED,
                f"{what} {name!r} has the content of held-out case {source!r} (input, response"
                " and grading fields equal after normalizing Unicode, invisible characters and"
                " whitespace): held-out cases are judged only by a certification",
                f"remove {name!r} (or write a new case); held-out content stays out of every run"
                " but `workbench certify`",
                name,
            )
        )
    return out


def held_out_content(golds: Iterable[str | Path | GoldDataset]) -> dict[str, str]:
    """Item key -> held-out case id over ``golds`` (a path's ``gold.jsonl`` read unvalidated) and
    what their ledgers record; an unreadable file is refused (``held_out_unchecked``)."""
    held: dict[str, str] = {}
    for gold in golds:
        held.update(recorded_item_keys(gold))
        if isinstance(gold, GoldDataset):
            held.update(held_out_item_keys(gold))
            continue
        raw = raw_held_out(gold)
        if raw is None:
            raise refusal(
                "held-out content cannot be checked",
                str(gold),
                "held_out_unchecked",
                "the gold file cannot be read, so no case can be checked against its held-out"
                " cases",
                "repair the gold dataset (workbench validate), or name the datasets to check",
            )
        held.update(raw)
    return held


def refuse_held_out_content(
    items: Iterable[Any],
    gold: str | Path | GoldDataset | Iterable[str | Path | GoldDataset],
    where: str,
    *,
    what: str = "case",
) -> None:
    """Raise :class:`WorkbenchError` listing every item of ``items`` with the content of a held-out
    case of ``gold`` or of a use its ledger records."""
    golds = [gold] if isinstance(gold, (str, Path, GoldDataset)) else list(gold)
    problems = exposure_problems(items, held_out_content(golds), where, what=what)
    if problems:
        raise WorkbenchError(
            f"refusing held-out content outside a certification: {len(problems)} {what}(s)",
            problems,
        )


def _raw_case(row: dict[str, Any]) -> Any:
    contexts = row.get("contexts")
    notes, reference = row.get("grading_notes"), row.get("reference")
    return SimpleNamespace(
        case_id=str(row.get("case_id")),
        input=str(row.get("input") or ""),
        response=str(row.get("response") or ""),
        grading_notes=notes if isinstance(notes, str) else None,
        reference=reference if isinstance(reference, str) else None,
        contexts=[str(c) for c in contexts] if isinstance(contexts, list) else None,
    )


def raw_held_out(gold: str | Path) -> dict[str, str] | None:
    """Item key -> case id of the ``held_out`` lines of ``gold.jsonl``, unvalidated; ``{}``
    without the file, None when unreadable."""
    path = gold_directory(gold) / "gold.jsonl"
    if not path.is_file():
        return {}
    held: dict[str, str] = {}
    try:
        for _number, line in iter_jsonl_lines(path):
            if "held_out" not in line and "\\u" not in line:
                continue  # cheap: not held out (only a \u escape could spell it otherwise)
            row = loads_json(line)
            if isinstance(row, dict) and row.get("partition") == "held_out":
                case = _raw_case(row)
                held[item_key(case)] = case.case_id
    except (WorkbenchError, ValueError):
        return None
    return held


def used_held_out_of(directory: str | Path) -> dict[str, str] | None:
    """Item key -> held-out case of every held-out case ``directory``'s ledger records as used;
    None when one is recorded but the file cannot be read."""
    root = gold_directory(directory)
    path = ledger_path_for(root)
    if not path.is_file():
        return {}
    held = recorded_item_keys(root)
    beside = path.parent == root  # a ledger beside the data records this dataset's uses (and a
    # copy's: its entries name the original's path)
    if not any(
        e.event == "started" and (beside or gold_directory(e.gold) == root)
        for e in HeldOutLedger(path).entries()
    ):
        return held
    raw = raw_held_out(root)
    return None if raw is None else held | raw
