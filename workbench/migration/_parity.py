"""Prompt parity: what differs between two judge versions, declared (:func:`identity_changes`)
and observed in the requests both render for every case (:func:`request_parity`)."""

from __future__ import annotations

import difflib
import json
from collections import Counter
from typing import Any

from pydantic import Field

from .._record import Record as _Model
from ..errors import Problem, problem
from ..gold import GoldCase
from ..judges import CaseRef, Judge, JudgeInput
from ..results import JudgeIdentity

_NOT_CHANGES = ("description", "schema_version", "parent", "changes")
"""Spec fields that describe a version without changing what it does."""

REQUEST_KEY_KINDS: dict[str, str] = {
    "prompt": "prompt",
    "model": "model",
    "params": "params",
    "function": "function",
    "arguments": "function",
    "messages": "prompt",
}
"""Which change kind a differing key of a rendered request shows."""


def _spec_of(identity: JudgeIdentity) -> dict[str, Any]:
    spec = identity.params.get("spec")
    return spec if isinstance(spec, dict) else {}


def identity_changes(old: JudgeIdentity, new: JudgeIdentity) -> list[str]:
    """The change kinds between two judge identities, in :data:`CHANGE_KINDS` order."""
    from ..judges import CHANGE_KINDS

    old_spec, new_spec = _spec_of(old), _spec_of(new)
    prompt = "function" if new_spec.get("function") or old_spec.get("function") else "prompt"
    found = {
        kind
        for kind, old_value, new_value in (
            ("kind", old.kind, new.kind),
            ("model", old.model, new.model),
            (prompt, old.prompt_sha256, new.prompt_sha256),
            ("ragas", old.ragas_version, new.ragas_version),
            ("results", _extra(old), _extra(new)),
        )
        if old_value != new_value
    }
    found |= {
        key
        for key in set(old_spec) | set(new_spec)
        if key not in _NOT_CHANGES and old_spec.get(key) != new_spec.get(key)
    }
    order = {k: i for i, k in enumerate(CHANGE_KINDS)}
    return sorted(found, key=lambda k: (order.get(k, len(order)), k))


def _extra(identity: JudgeIdentity) -> dict[str, Any]:
    return {k: v for k, v in identity.params.items() if k not in ("spec", "spec_sha256")}


def judge_changes(old: Judge, new: Judge) -> list[str]:
    """:func:`identity_changes` of two built judges."""
    return identity_changes(old.identity, new.identity)


def undeclared(actual: list[str], declared: list[str] | None) -> list[str]:
    """The actual change kinds a declaration does not cover."""
    return [c for c in actual if declared is None or c not in declared]


def declaration_problems(parent: Judge, judge: Judge, *, location: str) -> list[Problem]:
    """Why ``judge`` may not be saved as a version of ``parent``."""
    spec = judge.spec
    problems: list[Problem] = []
    if spec.parent != parent.spec.label:
        message = f"{spec.label} declares parent {spec.parent!r}, not {parent.spec.label}"
        fix = (
            "derive the version from its parent (session.derive), which records parent and changes"
        )
        problems.append(problem(location, "parent_mismatch", message, fix))
    if extra := undeclared(judge_changes(parent, judge), spec.changes):
        message = (
            f"{spec.label} changes {', '.join(extra)} relative to {parent.spec.label} but declares"
            f" {', '.join(spec.changes) if spec.changes else 'nothing'}"
        )
        fix = (
            "declare every change in changes: (one per version unless deliberate), or undo the"
            " undeclared change"
        )
        problems.append(problem(location, "undeclared_change", message, fix))
    return problems


class KeyCount(_Model):
    """How many cases' rendered requests differ in one request key."""

    key: str
    """The request key (``prompt``, ``model``, ``params``, ``function``, ``arguments`` ...)."""
    kind: str
    """The change kind it shows (:data:`REQUEST_KEY_KINDS`, else the key itself)."""
    cases: int
    """Cases whose requests differ in it."""


class RequestParity(_Model):
    """What differs between two judges' rendered requests over the same cases."""

    cases: int
    """Cases rendered by both."""
    differing_cases: int
    """Cases whose two requests are not identical."""
    keys: list[KeyCount] = Field(default_factory=list)
    """Per differing request key, how many cases differ in it (most first)."""
    observed_kinds: list[str] = Field(default_factory=list)
    """The change kinds the differing keys show."""
    first_case_id: str | None = None
    """The first case (in manifest order) whose requests differ."""
    first_diff: str | None = None
    """A unified diff of that case's two requests, old first."""


def _render(judge: Judge, case: GoldCase) -> Any:
    return judge.render(JudgeInput.from_case(case), CaseRef(case.case_id, case.response_hash, 0))


def request_parity(
    old: Judge, new: Judge, cases: list[GoldCase], *, context: int = 2
) -> RequestParity:
    """Render both judges' requests for every case and count what differs (no model calls)."""
    keys: Counter[str] = Counter()
    differing = [(c, a, b) for c in cases if (a := _render(old, c)) != (b := _render(new, c))]
    for _, a, b in differing:
        keys.update(_differing_keys(a, b))
    counts = [
        KeyCount(key=k, kind=REQUEST_KEY_KINDS.get(k, k), cases=n)
        for k, n in sorted(keys.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    return RequestParity(
        cases=len(cases),
        differing_cases=len(differing),
        keys=counts,
        observed_kinds=sorted({c.kind for c in counts}),
        first_case_id=differing[0][0].case_id if differing else None,
        first_diff=(
            text_diff(
                *differing[0][1:],
                old_label=old.spec.label,
                new_label=new.spec.label,
                context=context,
            )
            if differing
            else None
        ),
    )


def _differing_keys(a: Any, b: Any) -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    return ["request"]


def text_diff(
    a: Any, b: Any, *, old_label: str = "old", new_label: str = "new", context: int = 2
) -> str:
    """A unified diff of two rendered requests: per differing key, strings line by line."""
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return _unified(_lines(a), _lines(b), old_label, new_label, context)
    return "\n".join(
        f"# {key}\n"
        + _unified(
            _lines(a.get(key)),
            _lines(b.get(key)),
            f"{old_label} {key}",
            f"{new_label} {key}",
            context,
        )
        for key in _differing_keys(a, b)
    )


def _lines(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return value.splitlines()
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def _unified(a: list[str], b: list[str], old_label: str, new_label: str, context: int) -> str:
    return "\n".join(
        difflib.unified_diff(a, b, fromfile=old_label, tofile=new_label, n=context, lineterm="")
    )


def parity_warnings(new: Judge, old: Judge, actual: list[str], parity: RequestParity) -> list[str]:
    """Warnings for ``compare``: more changed than declared, or a declaration of another parent."""
    spec = new.spec
    out: list[str] = []
    if spec.parent is None:
        out.append(
            f"{spec.label} declares no parent and no changes; it differs from {old.spec.label} in:"
            f" {', '.join(actual) or 'nothing'}"
        )
    elif spec.parent != old.spec.label:
        out.append(
            f"{spec.label} declares parent {spec.parent}, but is compared against {old.spec.label}:"
            " its declared changes are relative to another version"
        )
    declared = spec.changes if spec.parent == old.spec.label else None
    if spec.parent is not None:
        extra = undeclared(actual, declared)
        if extra:
            out.append(
                f"more changed than declared: {spec.label} declares changes {spec.changes or []}"
                f" relative to {spec.parent}, but differs from {old.spec.label} in"
                f" {', '.join(extra)}"
            )
        seen = [k for k in parity.observed_kinds if declared is None or k not in declared]
        if seen and parity.differing_cases:
            out.append(
                f"the rendered requests differ in {', '.join(seen)} beyond the declared changes"
                f" ({parity.differing_cases} of {parity.cases} cases differ)"
            )
    return out
