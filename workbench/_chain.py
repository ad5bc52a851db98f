"""One hash-chained, append-only JSON Lines log (the held-out ledger, the authority record): an
edited, inserted or deleted line breaks the chain there (:meth:`ChainedLog.verify`)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TypeVar, cast

from filelock import FileLock, Timeout
from pydantic import ValidationError

from ._io import (
    AppendOnlyLog,
    _last_newline_end,
    iter_jsonl_lines,
    loads_json,
    open_for_reading,
    sha256_json,
)
from ._record import Record, SchemaTooNew
from .errors import Problem, WorkbenchError, problem, refusal

UNREADABLE = "(unreadable)"
"""The predecessor hash after a line that could not be read: the next line breaks the chain."""

Row = tuple[int, "str | None", bool]
"""``(line number, text or None when not UTF-8, unterminated)`` of one non-blank line."""


class Chained(Protocol):
    """What a chained line carries (besides its own fields)."""

    entry_id: str
    previous_sha256: str | None
    entry_sha256: str


E = TypeVar("E", bound=Record)


def content_sha256(entry: Record) -> str:
    """sha256 over the canonical JSON of ``entry`` without its ``entry_sha256``."""
    return sha256_json(entry.model_dump(mode="json", exclude={"entry_sha256"}))


@dataclass(frozen=True)
class ChainTerms:
    """How one log names its problems (codes and words kept from before the logs shared code)."""

    invalid: str
    """Code of a line that cannot be read or breaks the line model."""
    broken: str
    """Code of a broken chain."""
    unreadable: str
    """Code of a log file that cannot be read at all."""
    noun: str
    """What a line is called in messages (``entry``, ``ledger entry``)."""
    fix: str
    """The fix of every integrity problem (restore the log)."""
    busy: str
    """Code of a lock held for longer than the timeout."""
    busy_title: str
    """The error's title then."""
    busy_subject: str
    """What was held (``the ledger lock``)."""
    busy_fix: str
    """The fix then."""
    drop_torn_tail: bool = False
    """Skip an unterminated last line that is not JSON (a crash mid-append; the next append
    moves it aside) instead of reporting it."""


def read_rows(path: Path) -> list[Row]:
    """Every non-blank line of ``path``, read with the bounded reader; ``unterminated`` is true
    only for a last line without its newline."""
    rows: list[Row] = []
    not_utf8: list[int] = []
    for number, text in iter_jsonl_lines(path, not_utf8):
        while not_utf8:
            rows.append((not_utf8.pop(0), None, False))
        rows.append((number, text, False))
    rows += [(n, None, False) for n in not_utf8]
    if rows:
        with open_for_reading(path) as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - 1))
            if fh.read(1) != b"\n":
                cut = _last_newline_end(fh, size)
                fh.seek(cut)
                if fh.read(size - cut).strip():
                    last_number, last_text, _ = rows[-1]
                    rows[-1] = (last_number, last_text, True)
    return rows


def _torn(rows: list[Row]) -> bool:
    if not rows or not rows[-1][2]:
        return False
    try:
        loads_json(rows[-1][1] or "")
    except ValueError:
        return True
    return False


class ChainedLog(Generic[E]):
    """The append-only, hash-chained JSON Lines log at ``path`` of ``model`` lines."""

    def __init__(
        self,
        path: str | Path,
        model: type[E],
        terms: ChainTerms,
        *,
        schema_version: int,
        lock_timeout_s: float,
    ) -> None:
        self.path = Path(path)
        self.model = model
        self.terms = terms
        self.schema_version = schema_version
        self.lock_timeout_s = lock_timeout_s
        self.lock_path = self.path.with_name(f".{self.path.name}.lock")
        self._filelock = FileLock(str(self.lock_path), timeout=lock_timeout_s)

    # -- reading ---------------------------------------------------------------------------

    def rows(self) -> tuple[list[Row], list[Problem]]:
        """The log's lines, or the problem that kept it from being read."""
        try:
            rows = read_rows(self.path)
        except WorkbenchError as exc:  # unreadable, or a line longer than the line limit
            return [], [
                (
                    p.model_copy(update={"code": self.terms.unreadable})
                    if p.code == "unreadable_file"
                    else p
                )
                for p in exc.problems
            ]
        if self.terms.drop_torn_tail and _torn(rows):
            rows = rows[:-1]
        return rows, []

    def verify(
        self, rows: list[Row], check: Callable[[E, int, str], list[Problem]] | None = None
    ) -> tuple[list[E], list[Problem]]:
        """Parse every row and check the chain; ``check(entry, number, where)`` adds the log's
        own per-line problems after the chain's. Never raises for bad content."""
        entries: list[E] = []
        problems: list[Problem] = []
        previous: str | None = None
        for number, text, _unterminated in rows:
            where = f"{self.path}:{number}"
            parsed = self._parse(number, text, where)
            if isinstance(parsed, tuple):
                problem, previous = parsed
                problems.append(problem)
                continue
            problems += self._chain_problems(parsed, previous, number, where)
            if check is not None:
                problems += check(parsed, number, where)
            previous = _chained(parsed).entry_sha256
            entries.append(parsed)
        return entries, problems

    def _parse(self, number: int, text: str | None, where: str) -> E | tuple[Problem, str]:
        """The line's entry, or its problem and the predecessor hash the next line must name."""
        data: object = None
        try:
            if text is None:
                raise ValueError("the line is not valid UTF-8")
            data = loads_json(text)
            return self.model.model_validate(data)
        except SchemaTooNew as exc:  # a newer workbench's line: the chain goes on through its hash
            digest = data.get("entry_sha256") if isinstance(data, dict) else None
            return exc.problem_at(where), digest if isinstance(digest, str) else UNREADABLE
        except (ValueError, ValidationError) as exc:
            first = str(exc).splitlines()[0][:120]
            return (
                self._problem(
                    where,
                    self.terms.invalid,
                    f"chain broken at line {number}: unreadable {self.terms.noun} ({first})",
                ),
                UNREADABLE,
            )

    def _chain_problems(
        self, entry: E, previous: str | None, number: int, where: str
    ) -> list[Problem]:
        line = _chained(entry)
        if content_sha256(entry) != line.entry_sha256:
            what = "was edited (its content no longer matches its entry_sha256)"
        elif line.previous_sha256 != previous:
            what = (
                ": the first line must not name a predecessor"
                if previous is None
                else ": its previous_sha256 does not match the line before it"
            ) + " (a line before it was deleted, inserted or edited)"
        else:
            return []
        sep = "" if what.startswith(":") else " "
        message = f"chain broken at line {number}: entry {line.entry_id}{sep}{what}"
        return [self._problem(where, self.terms.broken, message)]

    def _problem(self, location: str, code: str, message: str) -> Problem:
        return problem(location, code, message, self.terms.fix)

    # -- writing ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the log's file lock (every append happens under it)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._filelock.acquire()
        except Timeout:
            raise refusal(
                self.terms.busy_title,
                str(self.lock_path),
                self.terms.busy,
                f"another command held {self.terms.busy_subject} for more than"
                f" {self.lock_timeout_s:.0f} s",
                self.terms.busy_fix,
            ) from None
        try:
            yield
        finally:
            self._filelock.release()

    def append(self, entry: E, previous: str | None) -> E:
        """Chain ``entry`` to ``previous``, seal and append it (the caller holds :meth:`locked`)."""
        chained = entry.model_copy(
            update={
                "schema_version": self.schema_version,
                "previous_sha256": previous,
                "entry_sha256": "",
            }
        )
        sealed = chained.model_copy(update={"entry_sha256": content_sha256(chained)})
        with AppendOnlyLog(self.path) as log:
            log.append(sealed.model_dump(mode="json"))
        return sealed


def _chained(entry: Record) -> Chained:
    """``entry`` as a chained line (every model a :class:`ChainedLog` holds has the fields)."""
    return cast(Chained, entry)
