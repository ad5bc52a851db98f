"""The importer registry, the import summary, and how every importer refuses and writes: every
defect found becomes a :class:`~workbench.errors.Problem` in one :class:`WorkbenchError`.
"""

from __future__ import annotations

import contextlib
import inspect
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO, NoReturn, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from .._docs import add_field_docs
from .._io import atomic_write, atomic_write_text
from ..errors import refusal

RESULTS_FILE = "results.jsonl"

NEW_DIRECTORY = "point --out at a new or empty directory"


class ImportSummary(BaseModel):
    """What one importer run did."""

    model_config = ConfigDict(frozen=True, json_schema_extra=add_field_docs)

    kind: str
    """Registered importer name, e.g. ``evalsbench``."""
    source: str
    """The source file read."""
    out: str
    """The dataset directory written."""
    cases: int
    """Gold cases written."""
    groups: int
    """Distinct groups (prompt families) among the cases."""
    partitions: dict[str, int]
    """Cases per partition."""
    results: int | None
    """Judge results written to ``results.jsonl``, or None when the source has no judge outputs."""
    files: list[str]
    """Names of the files written inside ``out``."""
    source_sha256: str
    """sha256 of the source file's bytes, also recorded in the card."""
    notes: list[str] = Field(default_factory=list)
    """Decisions and observations a user should know about (never errors)."""

    @classmethod
    def of(
        cls,
        kind: str,
        source: str,
        sha256: str,
        out: Path,
        cases: Sequence[Any],
        files: list[str],
        notes: list[str],
        results: int | None = None,
    ) -> ImportSummary:
        """The summary of writing ``cases`` (gold cases) into ``out``."""
        counts = Counter(case.partition.value for case in cases)
        partitions = {p: counts[p] for p in ("development", "calibration", "held_out")}
        groups = len({case.group for case in cases})
        return cls(
            kind=kind,
            source=source,
            out=str(out),
            cases=len(cases),
            groups=groups,
            partitions=partitions,
            results=results,
            files=files,
            source_sha256=sha256,
            notes=notes,
        )

    def format(self) -> str:
        """One paragraph for the command line."""
        parts = ", ".join(f"{name} {count}" for name, count in self.partitions.items())
        results = (
            "no judge results in the source"
            if self.results is None
            else f"{self.results} imported judge result(s)"
        )
        text = (
            f"Imported {self.cases} {self.kind} case(s) in {self.groups} group(s) ({parts}) from"
            f" {self.source} (sha256 {self.source_sha256[:12]}) into {self.out}: wrote"
            f" {', '.join(self.files)}; {results}."
        )
        if self.notes:
            text += " Notes: " + " ".join(
                note if note.endswith(".") else note + "." for note in self.notes
            )
        return text


Importer = Callable[..., ImportSummary]
"""``importer(source: Path, out: Path, **options) -> ImportSummary``."""

_F = TypeVar("_F", bound=Importer)
_IMPORTERS: dict[str, Importer] = {}


def register_importer(name: str) -> Callable[[_F], _F]:
    """Register the decorated function as the importer called ``name``."""

    def decorate(func: _F) -> _F:
        if name in _IMPORTERS and _IMPORTERS[name] is not func:
            raise ValueError(f"an importer named {name!r} is already registered")
        _IMPORTERS[name] = func
        return func

    return decorate


def available_importers() -> list[str]:
    """Names of every registered importer, sorted."""
    return sorted(_IMPORTERS)


def get_importer(name: str) -> Importer:
    """The importer registered as ``name``; raise :class:`WorkbenchError` when there is none."""
    if name not in _IMPORTERS:
        refuse(
            f"no importer named {name!r}",
            "importer",
            "unknown_importer",
            f"there is no importer named {name!r}",
            "use one of: " + ", ".join(available_importers()),
        )
    return _IMPORTERS[name]


def run_importer(kind: str, source: str | Path, out: str | Path, **options: Any) -> ImportSummary:
    """Run the importer ``kind`` on ``source``, writing the dataset into ``out``."""
    importer = get_importer(kind)
    parameters = list(inspect.signature(importer).parameters.values())
    try:
        inspect.signature(importer).bind(Path(source), Path(out), **options)
    except TypeError as exc:
        kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        accepted = [p.name for p in parameters[2:] if p.kind in kinds]
        refuse(
            f"bad options for importer {kind!r}",
            f"importer {kind}",
            "bad_importer_options",
            str(exc),
            "pass only these options: " + (", ".join(accepted) or "(none)"),
        )
    return importer(Path(source), Path(out), **options)


def jsonl_text(rows: Iterable[Any]) -> str:
    """JSON Lines as every importer writes them: sorted keys, UTF-8, one record per line."""
    return "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)


@lru_cache(maxsize=1)
def _templates() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).parent / "templates")),
        autoescape=False,  # YAML, markdown and CSV, never HTML
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.policies["json.dumps_kwargs"] = {"sort_keys": False, "ensure_ascii": False}
    return env


def render_text(template: str, **context: Any) -> str:
    """A file an importer writes, from its template in ``importers/templates``."""
    return str(_templates().get_template(template).render(**context))


def refuse(title: str, location: str, code: str, message: str, fix: str) -> NoReturn:
    """Raise a :class:`WorkbenchError` with one problem (never chained: no traceback to show)."""
    raise refusal(title, location, code, message, fix) from None


def check_out_dir(out: Path, title: str, fix: str = NEW_DIRECTORY) -> None:
    """Refuse an ``--out`` that names a file."""
    if out.exists() and not out.is_dir():
        refuse(title, str(out), "out_not_directory", "--out names a file, not a directory", fix)


def write_files(
    out: Path,
    texts: Mapping[str, str | Callable[[BinaryIO], object] | None],
    title: str,
    written: list[str],
) -> None:
    """Create ``out`` and write each file atomically (``None``: remove it; a function: given the
    open file to stream it, raising to keep nothing), appending its name to ``written``; a
    failure is one ``out_unwritable`` problem. A directory created for nothing is removed."""
    created = [p for p in (out, *out.parents) if not p.exists()]
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, text in texts.items():
            if text is None:
                (out / name).unlink(missing_ok=True)
                continue
            if isinstance(text, str):
                atomic_write_text(out / name, text)
            else:
                atomic_write(out / name, text)
            written.append(name)
    except BaseException as exc:
        if not written:
            for directory in created:  # innermost first; never one that holds anything
                with contextlib.suppress(OSError):
                    directory.rmdir()
        if not isinstance(exc, OSError):
            raise
        done = f"; already written: {', '.join(written)}" if written else ""
        refuse(
            title,
            str(exc.filename or out),
            "out_unwritable",
            f"writing failed ({exc.strerror or exc}){done}",
            "point --out at a writable directory with free space",
        )
