"""The project's policy drafted from its imported rubric: one block per slice at the template's
strictest limits, written only while the file is still, byte for byte, the template ``workbench
init`` rendered or an earlier draft (never over a person's edits).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .._io import atomic_write_text
from .._load import peek_yaml
from ..errors import WorkbenchError
from ._config import declared_inputs
from ._init import render
from ._root import find_project_root

PLACEHOLDER = "REPLACE_WITH_A_SLICE_NAME"
_SLICES = "\nslices:\n"
_TEMPLATE_RUBRIC_VERSION = 'rubric_version: "1"'
_COPY_BY_HAND = "Copy the block below for each\n# slice and rename it."
_DRAFTED = "Drafted by `workbench import table`:\n# one block per slice of the imported rubric."
_RISKS = ("critical", "high", "medium", "low")
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


@dataclass(frozen=True)
class PolicyDraft:
    """What :func:`draft_policy` did with the project's policy file."""

    path: Path
    written: bool
    message: str


def _scalar(text: str) -> str:
    """``text`` as a YAML scalar that reads back as the same string."""
    plain = _PLAIN.match(text) and _parse(text) == text
    return text if plain else json.dumps(text, ensure_ascii=False)


def _parse(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


def draft_text(template: str, rubric_version: str, slices: list[tuple[str, str]]) -> str:
    """The rendered policy ``template`` with ``rubric_version`` and one slice block per
    ``(name, risk)``: the first block with the template's comments, the others without."""
    head, block = template.rsplit(_SLICES, 1)
    head = head.replace(_TEMPLATE_RUBRIC_VERSION, f"rubric_version: {_scalar(rubric_version)}", 1)
    head = head.replace(_COPY_BY_HAND, _DRAFTED, 1)
    blocks = []
    for index, (name, risk) in enumerate(slices):
        text = block.replace(PLACEHOLDER, _scalar(name)).replace(
            "risk: critical", f"risk: {risk if risk in _RISKS else 'critical'}", 1
        )
        if index:
            lines = text.splitlines(keepends=True)
            text = "".join(line for line in lines if not line.lstrip().startswith("#"))
        blocks.append(text)
    return head + _SLICES + "".join(blocks)


def _created(value: Any) -> dt.date | None:
    try:
        return value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value))
    except ValueError:
        return None


def _template_of(text: str, root: Path) -> str | None:
    """The policy template ``init`` rendered, when ``text`` is it or a draft of it."""
    parsed = _parse(text)
    if not isinstance(parsed, dict) or not isinstance(parsed.get("name"), str):
        return None
    created = _created(parsed.get("created"))
    if created is None:
        return None
    template = render("policy.yaml", name=parsed["name"], root=root, today=created)
    slices = parsed.get("slices")
    if text == template:
        return template
    if not isinstance(slices, dict) or not all(isinstance(s, dict) for s in slices.values()):
        return None
    pairs = [(str(name), str(spec.get("risk"))) for name, spec in slices.items()]
    drafted = text == draft_text(template, str(parsed.get("rubric_version")), pairs)
    return template if drafted else None


def draft_policy(gold: str | Path) -> PolicyDraft | None:
    """Draft the project's policy from the rubric just imported into ``gold`` (the project's
    ``gold:``); None when there is nothing to draft. Never raises."""
    root = find_project_root()
    if root is None:
        return None
    try:
        declared = declared_inputs(root)
    except WorkbenchError as exc:
        return None if not exc.problems else _left(root / "workbench.yaml", exc.problems[0].message)
    if "policy" not in declared or "gold" not in declared:
        return None
    if (root / declared["gold"]).resolve() != Path(gold).resolve():
        return None
    path = root / declared["policy"]
    rubric = peek_yaml(Path(gold) / "rubric.yaml")
    if not isinstance(rubric, dict) or not isinstance(rubric.get("slices"), dict):
        return _left(path, "the imported rubric.yaml declares no slices")
    slices = [
        (str(name), str((spec or {}).get("risk")) if isinstance(spec, dict) else "unset")
        for name, spec in rubric["slices"].items()
    ]
    version = str(rubric.get("version"))
    names = ", ".join(name for name, _ in slices)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return _left(path, f"the file cannot be read; write it by hand with the slices {names}")
    template = _template_of(text, root)
    if template is None:
        return _left(
            path,
            "it is no longer the template `workbench init` wrote (a person edited it); give it"
            f" one `slices` entry per rubric slice ({names}) and rubric_version {version!r}"
            " by hand",
        )
    drafted = draft_text(template, version, slices)
    if drafted != text:
        atomic_write_text(path, drafted)
    what = "policy drafted" if drafted != text else "policy draft unchanged"
    return PolicyDraft(
        path,
        drafted != text,
        f"{what}: {path}: {len(slices)} slice block(s) ({names}) at the strictest limits,"
        f" rubric_version {version!r}; write its owner and rationale and loosen each limit on"
        " purpose (docs/formats.md#policy)",
    )


def _left(path: Path, why: str) -> PolicyDraft:
    return PolicyDraft(path, False, f"policy not drafted: {path}: {why}")
