"""Control suites: hand-written cases whose human label is known *by construction*
(``data/controls/<name>@<version>.yaml``, format in ``docs/formats.md``); only the judge-visible
fields (:meth:`Control.judge_input`) ever reach a judge."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import Field, PrivateAttr, ValidationError, field_validator

from .._io import sha256_file, sha256_json
from .._load import Problems, error_field, load_yaml, validation_problems
from .._record import Record as _Model
from .._record import version_problem
from ..approval import Change, Release, Snapshot, check_lineage, read_release_log
from ..errors import Problem, WorkbenchError
from ..judges import JudgeInput

SUITE_SCHEMA_VERSION = 1
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"

Role = Literal[
    "positive",
    "negative",
    "boundary",
    "verbosity",
    "terminology",
    "adversarial",
    "missing_evidence",
    "conflicting_evidence",
]
ROLES: tuple[str, ...] = get_args(Role)
"""Every control role, in reporting order."""

Member = Literal[
    "omits_noncritical_detail",
    "omits_required_condition",
    "concise_correct",
    "long_correct",
    "long_polished_wrong",
]
SET_MEMBERS: dict[str, tuple[str, ...]] = {
    "boundary": ("omits_noncritical_detail", "omits_required_condition"),
    "verbosity": ("concise_correct", "long_correct", "long_polished_wrong"),
}
"""Roles whose controls come in sets, and the members each set must have exactly once."""


class Control(_Model):
    """One control case: what the judge sees, and the label humans expect (which it never sees)."""

    control_id: str = Field(pattern=NAME_PATTERN)
    """Unique id within the suite; recorded as the result's ``case_id``."""
    role: Role
    """What the control probes (see the module table)."""
    set: str | None = Field(default=None, pattern=NAME_PATTERN)
    """The boundary pair or verbosity set the control belongs to (required for those roles)."""
    member: Member | None = None
    """The member's place in its set (:data:`SET_MEMBERS`)."""
    slice: str | None = None
    """Rubric slice the control belongs to, for reading results by slice."""
    input: str
    """The user's input (judge-visible, as ``user_input``)."""
    response: str
    """The response under judgment (judge-visible)."""
    grading_notes: str | None = None
    """Controlled grading evidence (judge-visible)."""
    reference: str | None = None
    """Reference answer (judge-visible)."""
    contexts: list[str] | None = None
    """Context passages (judge-visible, as ``retrieved_contexts``)."""
    expected_label: str
    """The label qualified humans give it."""
    acceptable_labels: list[str] | None = None
    """Labels that count as a pass of the control; default ``[expected_label]``."""
    rationale: str
    """Why humans expect that label, in the rubric's terms."""

    @field_validator("input", "response", "expected_label", "rationale")
    @classmethod
    def _written(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must be written, not blank")
        return value

    @field_validator("grading_notes", "reference")
    @classmethod
    def _written_if_given(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must be written, or left out")
        return value

    @field_validator("contexts")
    @classmethod
    def _contexts_written(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and (not value or any(not c.strip() for c in value)):
            raise ValueError(
                "every context passage must be written; leave contexts out when there are none"
            )
        return value

    @property
    def acceptable(self) -> list[str]:
        """Labels that count as a pass: ``acceptable_labels`` or ``[expected_label]``."""
        return list(self.acceptable_labels) if self.acceptable_labels else [self.expected_label]

    def judge_input(self) -> JudgeInput:
        """What the judge receives: the judge-visible fields only, constructed, never copied."""
        return JudgeInput(
            user_input=self.input,
            response=self.response,
            grading_notes=self.grading_notes,
            reference=self.reference,
            retrieved_contexts=list(self.contexts) if self.contexts is not None else None,
        )


class ControlChange(_Model):
    """One control added, relabelled, edited or retired since the version a suite supersedes."""

    control_id: str = Field(pattern=NAME_PATTERN)
    """The control."""
    approver: str = Field(min_length=1)
    """Who approved the change (a name in the project's approver list)."""
    reason: str = Field(min_length=1)
    """Why, with the evidence reviewed."""
    approved_on: dt.date
    """When."""


class ControlSuite(_Model):
    """A control suite, exactly as stored in ``data/controls/<name>@<version>.yaml``."""

    schema_version: int = SUITE_SCHEMA_VERSION
    """Suite file format version."""
    name: str = Field(pattern=NAME_PATTERN)
    """Suite name, e.g. ``support-controls``."""
    version: str = Field(pattern=NAME_PATTERN)
    """Suite version; a changed control is a new version (a new file)."""
    description: str = ""
    """What the suite covers and how it was written."""
    rubric_version: str = Field(min_length=1)
    """The rubric version whose labels the expectations follow."""
    labels: list[str] = Field(min_length=2)
    """The label vocabulary (the rubric's labels)."""
    controls: list[Control] = Field(min_length=1)
    """The controls."""
    supersedes: str | None = None
    """The frozen version this one replaces (required once an earlier version is frozen)."""
    changes: list[ControlChange] = Field(default_factory=list)
    """One entry per control added, relabelled, edited or retired since ``supersedes``."""

    _path: str | None = PrivateAttr(default=None)
    _sha256: str | None = PrivateAttr(default=None)

    @field_validator("name", "version", mode="before")
    @classmethod
    def _number_as_text(cls, value: Any) -> Any:
        return (
            str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value
        )

    @property
    def label(self) -> str:
        """``name@version``."""
        return f"{self.name}@{self.version}"

    @property
    def path(self) -> str | None:
        """The file the suite was loaded from, if any."""
        return self._path

    @property
    def sha256(self) -> str:
        """sha256 of the suite file's bytes (or of the canonical JSON when built in code)."""
        return self._sha256 or sha256_json(self.model_dump(mode="json"))

    def roles(self) -> list[str]:
        """Roles present in the suite, in :data:`ROLES` order."""
        present = {c.role for c in self.controls}
        return [r for r in ROLES if r in present]

    def sets(self) -> dict[str, list[Control]]:
        """Set name -> its members, in file order."""
        out: dict[str, list[Control]] = defaultdict(list)
        for c in self.controls:
            if c.set is not None:
                out[c.set].append(c)
        return dict(out)


def _top_field(e: Any) -> str:
    return str(e["loc"][0]) if e["loc"] else "control"


def _field_code(e: Any) -> str:
    return {"missing": "field_missing", "extra_forbidden": "field_unknown"}.get(
        e["type"], "field_invalid"
    )


def _field_fix(e: Any) -> str:
    field = _top_field(e)
    unknown = "remove the field; see workbench/controls/_suite.py for the fields a control has"
    return _FIELD_FIX.get(field, f"add {field}" if _field_code(e) == "field_missing" else unknown)


_FIELD_FIX: dict[str, str] = {
    "control_id": "give every control a unique id of letters, digits, '.', '_' or '-'",
    "role": "use one of " + ", ".join(ROLES),
    "set": "name the set with letters, digits, '.', '_' or '-'",
    "member": (
        "use omits_noncritical_detail | omits_required_condition (boundary) or concise_correct |"
        " long_correct | long_polished_wrong (verbosity)"
    ),
    "input": "write the user's input",
    "response": "write the response the judge is to grade",
    "grading_notes": "write the grading notes, or leave the field out and give a reference",
    "reference": "write the reference answer, or leave the field out",
    "contexts": "give a list of non-empty passages, or leave contexts out",
    "expected_label": "write the label qualified humans give this response",
    "acceptable_labels": "list the labels that count as a pass of this control",
    "rationale": "write why humans expect that label, in the rubric's terms",
}


def load_suite(path: str | Path) -> ControlSuite:
    """Read and check a control suite (schema, ids, roles, labels, evidence, complete and
    consistently labelled sets, release lineage), refusing it with every problem at once."""
    path = Path(path)
    loc = str(path)
    doc = load_yaml(
        path,
        prefix="suite",
        what="control suite",
        missing_fix="point --suite at data/controls/<name>@<version>.yaml",
        shape=(
            "the suite must be a YAML mapping",
            "write the suite as key: value pairs with a list of controls",
        ),
    )
    if problems := _check(doc.data, path, doc.at):
        raise WorkbenchError(f"{loc}: invalid control suite: {len(problems)} problem(s)", problems)
    suite = ControlSuite.model_validate(doc.data)
    suite._path, suite._sha256 = str(path), sha256_file(path)
    if lineage := check_lineage(suite_snapshot_of(suite, doc.at)):
        raise WorkbenchError(f"{loc}: the control suite breaks its releases' lineage", lineage)
    return suite


def suite_snapshot_of(suite: ControlSuite, at: Any = None) -> Snapshot:
    """A control suite as the approval kernel sees it: per control ``label`` and ``content``."""
    loc = suite.path or suite.label
    items: dict[str, dict[str, str]] = {}
    where: dict[str, str] = {}
    for i, control in enumerate(suite.controls):
        data = control.model_dump(mode="json", exclude_defaults=True)
        label = {k: data.pop(k, None) for k in ("expected_label", "acceptable_labels")}
        items[control.control_id] = {"label": sha256_json(label), "content": sha256_json(data)}
        where[control.control_id] = at("controls", i) if at is not None else loc
    header = sha256_json(suite.model_dump(mode="json", exclude={"controls"}, exclude_defaults=True))
    changes_at = at("changes") if at is not None else loc
    return Snapshot(
        kind="control_suite",
        name=suite.name,
        version=suite.version,
        sha256=sha256_json({"header": header, "items": items}),
        source=Path(loc),
        items=items,
        header=header,
        supersedes=suite.supersedes,
        changes={
            c.control_id: Change(approver=c.approver, reason=c.reason, location=changes_at)
            for c in suite.changes
        },
        where=where,
        file_sha256=suite.sha256,
        change_fix=(
            "put the change in a new version of the suite: <name>@<next>.yaml with `supersedes:`"
            " and a `changes:` entry (control_id, approver, reason, approved_on) for every"
            " control added, relabelled, edited or retired"
        ),
    )


def suite_snapshot(path: Path) -> Snapshot:
    """The checked snapshot of the control suite at ``path`` (the approval registry's loader)."""
    return suite_snapshot_of(load_suite(path))


def suite_release(suite: ControlSuite) -> Release | None:
    """The release that froze this exact suite, or None (unfrozen)."""
    if suite.path is None:
        return None
    snapshot = suite_snapshot_of(suite)
    return read_release_log(snapshot.folder).release_of(snapshot)


def _check(raw: dict[str, Any], path: Path, at: Any) -> list[Problem]:
    problems = Problems()
    labels = _check_header(raw, path, at, problems)
    items = raw.get("controls")
    if items is None:
        problems.add(
            str(path), "controls_missing", "the suite has no controls", "add a controls: list"
        )
        return problems
    if not isinstance(items, list) or not items:
        message, fix = "controls must be a non-empty list", "write controls as a list of mappings"
        problems.add(at("controls"), "controls_invalid", message, fix)
        return problems
    controls: list[tuple[int, Control]] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        control = _check_item(i, item, seen, at, problems)
        if control is not None:
            controls.append((i, control))
            problems += _check_control(i, control, labels, at)
    problems += _check_sets(controls, at)
    return problems


def _check_header(raw: dict[str, Any], path: Path, at: Any, problems: Problems) -> list[str] | None:
    """The suite's fields but its controls; its label vocabulary, if it can be read."""
    version = raw.get("schema_version", SUITE_SCHEMA_VERSION)
    newer = None
    if not isinstance(version, int) or isinstance(version, bool):
        message = f"schema_version must be an integer, not {version!r}"
        fix = f"write schema_version: {SUITE_SCHEMA_VERSION}"
        problems.add(at("schema_version"), "schema_version_invalid", message, fix)
    elif (newer := version_problem(ControlSuite, raw, at("schema_version"))) is not None:
        problems.append(newer)
    name, ver = raw.get("name"), raw.get("version")
    if name is not None and ver is not None and path.stem != f"{name}@{ver}":
        message = f"file name {path.name!r} does not match name@version {name}@{ver!s}"
        fix = (
            f"rename the file to {name}@{ver!s}.yaml (or correct name/version) so versions cannot"
            " be confused"
        )
        problems.add(str(path), "suite_filename", message, fix)
    header = {k: v for k, v in raw.items() if k != "controls"}
    header["controls"] = [_PLACEHOLDER_CONTROL]
    if newer is not None:  # reported above, at its line; the other fields are still checked
        header["schema_version"] = SUITE_SCHEMA_VERSION
    labels: list[str] | None = None
    try:
        labels = list(ControlSuite.model_validate(header).labels)
    except ValidationError as exc:
        problems += validation_problems(
            exc,
            at=at,
            code="suite_invalid",
            root="suite",
            fix=lambda e: (
                f"correct {error_field(e, 'suite')}; see workbench/controls/_suite.py for every"
                " field's meaning"
            ),
        )
        raw_labels = raw.get("labels")
        if isinstance(raw_labels, list) and all(isinstance(x, str) for x in raw_labels):
            labels = list(raw_labels)
    if isinstance(labels, list) and len(set(labels)) != len(labels):
        message = "the label vocabulary lists a label twice"
        problems.add(at("labels"), "labels_duplicate", message, "list each label once")
    return labels


_PLACEHOLDER_CONTROL = {"role": "positive"} | dict.fromkeys(
    ("control_id", "input", "response", "grading_notes", "expected_label", "rationale"), "x"
)
"""A valid control, standing in for the suite's controls when its header is checked."""


def _check_item(
    i: int, item: Any, seen: dict[str, int], at: Any, problems: Problems
) -> Control | None:
    """One entry of ``controls`` as a :class:`Control` (None, reported, when it is not one)."""
    if not isinstance(item, dict):
        message = f"control #{i + 1} is not a mapping"
        fix = "write each control as key: value pairs"
        problems.add(at("controls", i), "control_invalid", message, fix)
        return None
    cid = item.get("control_id")
    cid = cid if isinstance(cid, str) else None
    if cid is not None and cid in seen:
        message = f"control id {cid!r} is used again (first at control #{seen[cid] + 1})"
        fix = "give every control a unique id"
        problems.add(
            at("controls", i, "control_id"), "control_id_duplicate", message, fix, case_id=cid
        )
    elif cid is not None:
        seen[cid] = i
    role_reported = isinstance(item.get("role"), str)  # an unknown one is role_unknown
    if role_reported and item["role"] not in ROLES:
        message, fix = f"unknown role {item['role']!r}", "use one of " + ", ".join(ROLES)
        problems.add(at("controls", i, "role"), "role_unknown", message, fix, case_id=cid)
    try:
        return Control.model_validate(item)
    except ValidationError as exc:

        def keep(e: Mapping[str, Any]) -> bool:
            return not (role_reported and _top_field(e) == "role")

        problems += validation_problems(
            exc,
            at=at,
            base=("controls", i),
            case_id=cid,
            code=_field_code,
            fix=_field_fix,
            keep=keep,
        )
        return None


def _check_control(i: int, c: Control, labels: list[str] | None, at: Any) -> list[Problem]:
    out = Problems()
    cid = c.control_id
    if c.grading_notes is None and c.reference is None:
        message = "the control gives the judge neither grading_notes nor a reference"
        fix = "add the grading notes (or a reference) the judge grades against"
        out.add(at("controls", i), "evidence_missing", message, fix, case_id=cid)
    _check_vocabulary(i, c, labels, at, out)
    _check_acceptable(i, c, at, out)
    _check_membership(i, c, at, out)
    return out


def _check_vocabulary(i: int, c: Control, labels: list[str] | None, at: Any, out: Problems) -> None:
    """Expected and acceptable labels are labels of the suite (when its labels are known)."""
    if labels is None:
        return
    cid = c.control_id
    if c.expected_label not in labels:
        message = f"expected_label {c.expected_label!r} is not in the suite's labels {labels}"
        fix = "use a label of the vocabulary"
        out.add(at("controls", i, "expected_label"), "label_unknown", message, fix, case_id=cid)
    for j, label in enumerate(c.acceptable_labels or []):
        if label not in labels:
            message = f"acceptable label {label!r} is not in the suite's labels {labels}"
            where = at("controls", i, "acceptable_labels", j)
            out.add(where, "label_unknown", message, "use labels of the vocabulary", case_id=cid)


def _check_acceptable(i: int, c: Control, at: Any, out: Problems) -> None:
    if c.acceptable_labels is None:
        return
    where = at("controls", i, "acceptable_labels")
    if not c.acceptable_labels:
        message = "acceptable_labels is empty: no verdict could pass the control"
        fix = "list the acceptable labels, or leave the field out to accept only expected_label"
        out.add(where, "acceptable_empty", message, fix, case_id=c.control_id)
    elif c.expected_label not in c.acceptable_labels:
        message = (
            f"expected_label {c.expected_label!r} is not among acceptable_labels"
            f" {c.acceptable_labels}"
        )
        fix = "add the expected label to acceptable_labels"
        out.add(where, "expected_not_acceptable", message, fix, case_id=c.control_id)


def _check_membership(i: int, c: Control, at: Any, out: Problems) -> None:
    """Boundary and verbosity controls name their set and their member; others name neither."""
    cid = c.control_id
    wanted = SET_MEMBERS.get(c.role)
    if wanted is None:
        if c.member is not None:
            message = f"member is only for boundary and verbosity controls, not {c.role}"
            where = at("controls", i, "member")
            out.add(where, "member_unexpected", message, "remove member", case_id=cid)
        return
    if c.set is None:
        message = f"a {c.role} control must belong to a set"
        fix = f"name its set (set: ...), shared with the other members: {', '.join(wanted)}"
        out.add(at("controls", i), "set_missing", message, fix, case_id=cid)
    if c.member is None:
        message = f"a {c.role} control must say which member of its set it is"
        fix = "add member: " + " | ".join(wanted)
        out.add(at("controls", i), "member_missing", message, fix, case_id=cid)
    elif c.member not in wanted:
        message = f"{c.member!r} is not a member of a {c.role} set"
        where = at("controls", i, "member")
        out.add(where, "member_invalid", message, "use member: " + " | ".join(wanted), case_id=cid)


def _check_sets(controls: list[tuple[int, Control]], at: Any) -> list[Problem]:
    """Each set holds one role; a boundary or verbosity set has exactly its members, labelled
    as its role requires."""
    out = Problems()
    by_set: dict[str, list[tuple[int, Control]]] = defaultdict(list)
    for i, c in controls:
        if c.set is not None:
            by_set[c.set].append((i, c))
    for name, members in by_set.items():
        first = at("controls", members[0][0], "set")
        ids = ", ".join(c.control_id for _, c in members)
        cid = members[0][1].control_id
        roles = sorted({c.role for _, c in members})
        if len(roles) > 1:
            message = f"set {name!r} mixes roles {roles} ({ids})"
            fix = "a set groups controls of one role; rename one of the sets"
            out.add(first, "set_mixed_roles", message, fix, case_id=cid)
        elif roles[0] in SET_MEMBERS and _check_complete(name, roles[0], members, first, out):
            label_of: dict[str | None, str] = {c.member: c.expected_label for _, c in members}
            _check_set_labels(name, roles[0], label_of, first, cid, out)
    return out


def _check_complete(
    name: str, role: str, members: list[tuple[int, Control]], first: str, out: Problems
) -> bool:
    wanted = SET_MEMBERS[role]
    found = [c.member for _, c in members if c.member in wanted]
    if len(members) == len(wanted) and sorted(found) == sorted(wanted):
        return True
    missing = [m for m in wanted if m not in found]
    doubled = sorted({m for m in found if found.count(m) > 1})
    detail = [f"missing {', '.join(missing)}"] if missing else []
    detail += [f"repeated {', '.join(doubled)}"] if doubled else []
    if len(members) != len(wanted):
        detail.append(f"{len(members)} members instead of {len(wanted)}")
    ids = ", ".join(c.control_id for _, c in members)
    message = f"{role} set {name!r} ({ids}) is not complete: " + "; ".join(detail)
    fix = f"a {role} set has exactly one each of: " + ", ".join(wanted)
    out.add(first, "set_incomplete", message, fix, case_id=members[0][1].control_id)
    return False


def _check_set_labels(
    name: str, role: str, label_of: dict[str | None, str], first: str, cid: str, out: Problems
) -> None:
    """A boundary pair is labelled apart; a verbosity set's correct members alike and its
    polished wrong member differently."""
    if (
        role == "boundary"
        and label_of["omits_noncritical_detail"] == label_of["omits_required_condition"]
    ):
        message = (
            f"boundary set {name!r} expects the same label"
            f" {label_of['omits_required_condition']!r} for both neighbours"
        )
        fix = (
            "a boundary pair straddles the rubric's line; if humans label both alike, repair the"
            " rubric or the pair"
        )
        out.add(first, "boundary_same_label", message, fix, case_id=cid)
    if role != "verbosity":
        return
    if label_of["concise_correct"] != label_of["long_correct"]:
        message = (
            f"verbosity set {name!r}: the concise and the long correct answers are expected"
            " differently"
        )
        fix = "the two correct members state the same content and must carry the same label"
        out.add(first, "verbosity_inconsistent", message, fix, case_id=cid)
    if label_of["long_polished_wrong"] == label_of["concise_correct"]:
        message = (
            f"verbosity set {name!r}: the long polished wrong answer is expected like the correct"
            " ones"
        )
        fix = "the polished wrong member must state something wrong, and be labelled for it"
        out.add(first, "verbosity_inconsistent", message, fix, case_id=cid)
