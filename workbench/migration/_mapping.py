"""Label mapping: a reviewed, hashed translation of an old judge's renamed labels into the new
vocabulary; every old label and verdict must be mapped, and only renamed labels may be."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .._docs import add_field_docs
from .._io import sha256_file
from .._load import error_field, load_yaml, validation_problems
from .._record import Record, SchemaTooNew
from ..approval import Snapshot, check_lineage, document_snapshot, load_approvers
from ..errors import Problem, WorkbenchError, problem

MAPPING_SCHEMA_VERSION = 1


class LabelMapping(Record):
    """A reviewed mapping of old labels to new ones, exactly as stored in its YAML file."""

    model_config = ConfigDict(populate_by_name=True)

    schema_version: int = MAPPING_SCHEMA_VERSION
    """Mapping file format version."""
    source: str | None = Field(default=None, alias="from")
    """``name@version`` whose labels are mapped (``from:`` in the file); checked when given."""
    target: str | None = Field(default=None, alias="to")
    """``name@version`` whose vocabulary they map into (``to:`` in the file); checked when given."""
    approver: str = Field(min_length=1)
    """Who reviewed and approved the mapping."""
    approved: dt.date
    """When it was approved."""
    reason: str = ""
    """Why the labels changed."""
    mapping: dict[str, str] = Field(min_length=1)
    """``old label -> new label``; several old labels may map to one new label."""

    @field_validator("mapping", mode="before")
    @classmethod
    def _labels_as_text(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k): str(v) for k, v in value.items()}
        return value

    @field_validator("approver")
    @classmethod
    def _written(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name a person, not be blank")
        return value


class LoadedMapping(BaseModel):
    """A mapping with where it came from and its hash."""

    model_config = ConfigDict(frozen=True, json_schema_extra=add_field_docs)

    mapping: LabelMapping
    """The mapping."""
    path: str
    """The file."""
    sha256: str
    """sha256 of the file's bytes: the identity of the reviewed mapping."""

    def apply(self, label: str) -> str:
        """The new label for an old one (KeyError for an unmapped label: check first)."""
        return self.mapping.mapping[label]


def load_label_mapping(path: str | Path) -> LoadedMapping:
    """Read and check a mapping file; raise :class:`WorkbenchError` listing every problem."""
    path = Path(path)
    loc = str(path)
    raw = load_yaml(
        path,
        prefix="mapping",
        what="label mapping",
        missing_fix=(
            "write the reviewed mapping (old -> new, approver, approved date); see"
            " docs/formats.md#label-mapping"
        ),
        encoding_code="mapping_yaml",
        shape=(
            "the mapping file must be a YAML mapping",
            "write from/to/approver/approved/mapping as key: value pairs",
        ),
    ).data
    try:
        mapping = LabelMapping.model_validate(raw)
    except SchemaTooNew as exc:
        raise WorkbenchError("unreadable label mapping", [exc.problem_at(loc)]) from None
    except ValidationError as exc:
        problems = validation_problems(
            exc,
            at=loc,
            root="mapping",
            code=_error_code,
            message=_error_message,
            fix="see docs/formats.md#label-mapping",
        )
        raise WorkbenchError(f"{loc}: invalid label mapping", problems) from None
    problems = load_approvers(path).problems(mapping.approver, f"{loc}: approver", "the approver")
    problems += check_lineage(mapping_snapshot_of(mapping, path))
    if problems:
        raise WorkbenchError(f"{loc}: the label mapping is not approved", problems)
    return LoadedMapping(mapping=mapping, path=loc, sha256=sha256_file(path))


def mapping_snapshot_of(mapping: LabelMapping, path: Path) -> Snapshot:
    """A label mapping as an approved input: one item per old label."""
    return document_snapshot(
        "label_mapping",
        mapping.model_dump(mode="json", by_alias=True) | {"name": path.stem},
        items="mapping",
        source=path,
        change_fix="a changed mapping is a new file, reviewed and approved again",
    )


def _error_code(e: Any) -> str:
    return "mapping_unapproved" if error_field(e) in ("approver", "approved") else "mapping_invalid"


def _error_message(e: Any, field: str) -> str:
    if e["type"] == "missing" and _error_code(e) == "mapping_unapproved":
        return f"missing {field}: a label mapping must be reviewed (approver and approval date)"
    return f"{field}: {e['msg']}"


def _needed(old_labels: list[str], new_labels: list[str], seen: list[str]) -> set[str]:
    return {label for label in [*old_labels, *seen] if label not in new_labels}


def mapping_problems(
    loaded: LoadedMapping | None,
    *,
    old_label: str,
    new_label: str,
    old_labels: list[str],
    new_labels: list[str],
    observed: set[str] | None = None,
    location: str = "label mapping",
) -> list[Problem]:
    """Every reason the old labels and verdicts (``observed``) cannot be put into ``new_labels``."""
    seen = sorted(observed or ())
    needed = _needed(old_labels, new_labels, seen)
    if loaded is None:
        message = (
            f"{old_label} uses labels {sorted(needed)} that the vocabulary {new_label} is compared"
            f" in ({new_labels}) does not have: renamed categories need a reviewed mapping"
        )
        fix = (
            "write a label mapping (old -> new, approver, approved date) and pass it with"
            " --label-mapping; unknown labels are never guessed"
        )
        return [problem(location, "label_mapping_required", message, fix)] if needed else []
    m = loaded.mapping
    same = "use the mapping reviewed for these two versions"
    found: list[tuple[bool, str, str, str]] = [
        (
            m.source is not None and m.source != old_label,
            "mapping_other_versions",
            f"the mapping is from {m.source}, not {old_label}",
            same,
        ),
        (
            m.target is not None and m.target != new_label,
            "mapping_other_versions",
            f"the mapping is to {m.target}, not {new_label}",
            same,
        ),
    ]
    for old, new in sorted(m.mapping.items()):
        found += [
            (
                old not in old_labels,
                "mapping_unknown_label",
                f"maps {old!r}, which is not one of {old_label}'s labels {old_labels}",
                "map only the old version's labels; correct the spelling",
            ),
            (
                new not in new_labels,
                "mapping_unknown_target",
                f"maps {old!r} to {new!r}, which is not one of {new_labels}",
                "map every old label to a label of the new vocabulary",
            ),
        ]
    found += _shape_problems(m.mapping, old_label, new_label, old_labels, new_labels, needed)
    unmapped = sorted({label for label in [*old_labels, *seen] if label not in m.mapping})
    found.append(
        (
            bool(unmapped),
            "label_unmapped",
            f"{old_label}'s labels {unmapped} are not mapped: an unmapped label blocks the"
            " comparison",
            "map every old label (identity entries such as 'pass: pass' included) and have the"
            " mapping reviewed again",
        )
    )
    return [
        problem(loaded.path, code, message, fix) for failed, code, message, fix in found if failed
    ]


def _shape_problems(
    mapping: dict[str, str],
    old_label: str,
    new_label: str,
    old_labels: list[str],
    new_labels: list[str],
    needed: set[str],
) -> list[tuple[bool, str, str, str]]:
    """A mapping nothing needs, or one turning a shared label into another, is refused."""
    relabelled = sorted(
        (old, new) for old, new in mapping.items() if old in new_labels and new != old
    )
    changes = ", ".join(f"{old!r} -> {new!r}" for old, new in relabelled)
    return [
        (
            not needed,
            "label_mapping_unneeded",
            f"{old_label}'s labels {old_labels} are all labels of the vocabulary {new_label} is"
            f" compared in ({new_labels}): no label was renamed, so no mapping is needed",
            "drop --label-mapping: labels both versions share are compared as they are",
        ),
        (
            bool(relabelled),
            "label_mapping_relabels",
            f"the mapping turns labels the vocabulary {new_label} is compared in also has into"
            f" other labels ({changes}): old verdicts would count as what they did not say",
            "map a label both vocabularies have to itself; a label whose meaning changed needs"
            " a new rubric and gold release, not a mapping",
        ),
    ]


def mapping_snapshot(path: Path) -> Snapshot:
    """The checked snapshot of the label mapping at ``path`` (the approval registry's loader)."""
    return mapping_snapshot_of(load_label_mapping(path).mapping, path)
