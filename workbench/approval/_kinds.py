"""Freezing an approved input, one mechanism for every kind: which kind a path holds, and its
snapshot loader as a lazy ``module:function`` reference (the kernel imports none of the packages
whose inputs it freezes)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import cast

from .._load import peek_yaml
from ..errors import WorkbenchError, refusal
from ._approvers import current_user, load_approvers
from ._lineage import check_lineage
from ._log import Release, append_release, read_release_log
from ._snapshot import Snapshot


@dataclass(frozen=True)
class Kind:
    """One kind of approved input."""

    name: str
    loader: str
    """``module:function`` taking the path and returning its checked :class:`Snapshot`."""
    keys: frozenset[str] = frozenset()
    """Top-level YAML keys that all appear in a file of this kind."""


KINDS: tuple[Kind, ...] = (
    Kind("noise_panel", "workbench.noise:panel_snapshot", frozenset({"suite", "reviews"})),
    Kind("ranking_fixtures", "workbench.ranking:fixtures_snapshot", frozenset({"fixtures"})),
    Kind("noise_suite", "workbench.noise:suite_snapshot", frozenset({"pairs"})),
    Kind("control_suite", "workbench.controls:suite_snapshot", frozenset({"controls", "labels"})),
    Kind("policy", "workbench.policy:policy_snapshot", frozenset({"slices", "owner", "rationale"})),
    Kind("sentinels", "workbench.repeatability:sentinels_snapshot", frozenset({"sentinels"})),
    Kind(
        "label_mapping", "workbench.migration:mapping_snapshot", frozenset({"mapping", "approver"})
    ),
)
"""Every kind ``workbench freeze`` recognises in a YAML file (first match wins)."""
GOLD = Kind("gold", "workbench.gold:gold_snapshot")


def kind_of(path: str | Path) -> Kind:
    """The kind of the input at ``path``; :class:`WorkbenchError` when it is none of them."""
    path = Path(path)
    if path.is_dir() or path.name == "gold.jsonl":
        return GOLD
    raw = peek_yaml(path) if path.suffix in {".yaml", ".yml"} and path.is_file() else None
    keys = set(raw) if isinstance(raw, dict) else set()
    for kind in KINDS:
        if kind.keys and kind.keys <= keys:
            return kind
    names = ", ".join(k.name for k in (GOLD, *KINDS))
    message = f"{path} is none of the inputs that are frozen ({names})"
    fix = (
        "name a gold dataset directory, a ranking fixture file, a noise pair suite, a claim review"
        " panel, a control suite, a release policy, a sentinel file or a label mapping"
    )
    raise refusal("not an approved input", str(path), "freeze_unknown_input", message, fix)


def snapshot_of(path: str | Path) -> Snapshot:
    """The checked snapshot of the input at ``path`` (its kind's loader refuses a bad input)."""
    kind = kind_of(path)
    module, _, function = kind.loader.partition(":")
    loader = cast(Callable[[Path], Snapshot], getattr(importlib.import_module(module), function))
    return loader(Path(path))


def freeze_path(
    path: str | Path, *, approver: str | None = None, note: str | None = None
) -> tuple[Release, bool]:
    """Freeze the approved input at ``path`` (any kind); ``approver`` defaults to the current
    user. Returns ``(release, created)``."""
    approver = approver or current_user()
    try:
        snapshot = snapshot_of(path)
    except WorkbenchError as exc:
        who = load_approvers(path).problems(approver, "--approver", "the approver")
        raise WorkbenchError(exc.summary, [*who, *exc.problems]) from None
    return freeze(snapshot, approver=approver, note=note)


def freeze(
    snapshot: Snapshot, *, approver: str, note: str | None = None, now: datetime | None = None
) -> tuple[Release, bool]:
    """Freeze ``snapshot``; return ``(release, created)``. Refuses an unlisted approver and any
    lineage problem, every problem at once; content already frozen writes nothing."""
    approvers = load_approvers(snapshot.folder)
    problems = approvers.problems(approver, "--approver", "the approver")
    problems += check_lineage(snapshot, read_release_log(snapshot.folder), approvers)
    if problems:
        raise WorkbenchError(f"cannot freeze {snapshot.label}", problems)
    return append_release(snapshot, approver=approver, note=note, now=now)
