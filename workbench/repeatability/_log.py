"""The append-only JSON Lines logs kept beside the gold (repeatability studies, drift, shadow
comparisons): where they are, one strict reader and one writer."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from .._io import AppendOnlyLog, JSONRecordError, check_json, iter_jsonl_lines, max_document_bytes
from ..errors import Problem, WorkbenchError, problem
from ..gold import GoldDataset

M = TypeVar("M", bound=BaseModel)


def beside_gold(gold: GoldDataset | str | Path, name: str) -> Path:
    """``<gold dataset directory>/<name>`` (``gold``: a dataset, its directory or its
    ``gold.jsonl``)."""
    if isinstance(gold, GoldDataset):
        return gold.root / name
    path = Path(gold)
    return (path if path.is_dir() else path.parent) / name


def read_log(
    log: str | Path, model: type[M], *, code: str, what: str, name: str, fix: str
) -> list[M]:
    """Every line of ``log`` as ``model``, oldest first (none when it does not exist).

    A bad line (duplicate keys, NaN/Infinity, too deep, not UTF-8, not ``what``) is refused
    with every other: :class:`WorkbenchError` ("unreadable ``name``") with one ``code`` problem
    per line. Lines are
    read up to the document limit (a study holds one row per case).
    """
    path = Path(log)
    if not path.exists():
        return []
    out: list[M] = []
    problems: list[Problem] = []
    not_utf8: list[int] = []
    for number, line in iter_jsonl_lines(path, not_utf8, limit=max_document_bytes()):
        try:
            check_json(line)  # refused before validation
            out.append(model.model_validate_json(line))
        except JSONRecordError as exc:
            problems.append(problem(f"{path}:{number}", code, f"not {what} ({exc.msg})", fix))
        except ValidationError as exc:
            why = f"{exc.error_count()} error(s)"
            problems.append(problem(f"{path}:{number}", code, f"not {what} ({why})", fix))
    why = "the line is not valid UTF-8"
    problems += [problem(f"{path}:{n}", code, f"not {what} ({why})", fix) for n in not_utf8]
    if problems:
        raise WorkbenchError(f"{path}: unreadable {name}", problems)
    return out


def append_to_log(log: str | Path, record: BaseModel) -> Path:
    """Append ``record`` as one JSON line (parents created; fsynced, torn tail repaired)."""
    path = Path(log)
    path.parent.mkdir(parents=True, exist_ok=True)
    with AppendOnlyLog(path) as out:
        out.append(record.model_dump(mode="json"))
    return path
