"""One base for every record the workbench writes and reads back (frozen, unknown keys refused,
each field documented by its docstring), one version gate, and the JSON Lines logs beside the
gold."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from ._docs import add_field_docs
from ._io import AppendOnlyLog, JSONRecordError, check_json, iter_jsonl_lines, max_document_bytes
from .errors import Problem, WorkbenchError, problem

SCHEMA_TOO_NEW = "schema_version_newer"
"""The code of the problem a record from a newer workbench gets (the code the hand-written
checks used before; kept so that scripts matching on it keep working)."""
FIX_UPGRADE = "upgrade the workbench"


def _kind_of(name: str) -> str:
    """``RunManifest`` -> ``run manifest``: the file kind named in the refusal."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name.lstrip("_")).lower()


def newer_version_problem(
    kind: str,
    version: object,
    supported: int,
    location: str | None = None,
    *,
    case_id: str | None = None,
) -> Problem:
    """The problem for a ``kind`` file whose ``schema_version`` is newer than ``supported``."""
    return problem(
        location or f"{kind}: schema_version",
        SCHEMA_TOO_NEW,
        f"{kind} schema_version {version} is newer than this workbench reads ({supported})",
        FIX_UPGRADE,
        case_id,
    )


def _as_version(value: object) -> int | None:
    """``value`` as the integer a (lax) ``int`` field would read it as, or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def schema_too_new(version: object, supported: int) -> bool:
    """Whether ``version`` (as read, any type) is an integer above ``supported`` (``"3"`` and
    ``3.0`` count: a lax field would read them as 3)."""
    number = _as_version(version)
    return number is not None and number > supported


def version_problem(
    model: type[Record], raw: object, location: str, *, case_id: str | None = None
) -> Problem | None:
    """The gate of ``model`` applied to a raw mapping before validation; None when the version is
    readable (or absent, or not an integer: validation reports that)."""
    version = raw.get("schema_version") if isinstance(raw, dict) else None
    supported = model.SCHEMA_VERSION
    if supported is None or not schema_too_new(version, supported):
        return None
    return newer_version_problem(model.KIND, version, supported, location, case_id=case_id)


class SchemaTooNew(WorkbenchError):
    """A record was written by a newer workbench than this one. No ``ValueError``, so validation
    stops there and every reader refuses the record; :meth:`problem_at` names a line."""

    def __init__(
        self, kind: str, version: int, supported: int, location: str | None = None
    ) -> None:
        self.kind = kind
        self.version = version
        self.supported = supported
        super().__init__(
            f"{kind} from a newer workbench",
            [newer_version_problem(kind, version, supported, location)],
        )

    def problem_at(self, location: str, *, case_id: str | None = None) -> Problem:
        """The same problem, located at ``location`` (``file:line`` or ``file``)."""
        return newer_version_problem(
            self.kind, self.version, self.supported, location, case_id=case_id
        )

    def at(self, location: str) -> SchemaTooNew:
        """The same refusal, located at ``location``: for readers that re-raise it."""
        return SchemaTooNew(self.kind, self.version, self.supported, location)


class Record(BaseModel):
    """Base of every frozen workbench record: unknown keys and newer schema versions refused."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=add_field_docs)

    SCHEMA_VERSION: ClassVar[int | None] = None
    """The newest ``schema_version`` this workbench reads for this record; None for records
    without a version. Defaults to the ``schema_version`` field's default."""
    KIND: ClassVar[str] = "record"
    """What the record is called in the refusal (default: the class name in words)."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if "KIND" not in cls.__dict__:
            cls.KIND = _kind_of(cls.__name__)
        field = cls.model_fields.get("schema_version")
        if (
            "SCHEMA_VERSION" not in cls.__dict__
            and field is not None
            and isinstance(field.default, int)
            and not isinstance(field.default, bool)
        ):
            cls.SCHEMA_VERSION = field.default

    @field_validator("schema_version", mode="after", check_fields=False)
    @classmethod
    def _refuse_newer(cls, version: object) -> object:
        """The one version gate: refuse a ``schema_version`` newer than :attr:`SCHEMA_VERSION`."""
        supported = cls.SCHEMA_VERSION
        if supported is not None and schema_too_new(version, supported):
            raise SchemaTooNew(cls.KIND, version, supported)  # type: ignore[arg-type]
        return version


class LooseRecord(Record):
    """A :class:`Record` that ignores unknown keys instead of refusing them."""

    model_config = ConfigDict(extra="ignore")


M = TypeVar("M", bound=BaseModel)


def read_log(
    log: str | Path, model: type[M], *, code: str, what: str, name: str, fix: str
) -> list[M]:
    """Every line of ``log`` as ``model``, oldest first (none when it does not exist); every bad
    line is refused together: :class:`WorkbenchError` with one ``code`` problem per line."""
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
