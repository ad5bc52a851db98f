"""The inputs a project's ``workbench.yaml`` names (``gold:``, ``policy:``, ``candidates:`` and
the calibrate notebook's optional ``score_candidate:``, ``controls:``, ``migration_old:`` and
``migration_new:``, each relative to the project root), for the phase notebooks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._load import read_config
from ..errors import Problem, WorkbenchError, problem
from ._root import PROJECT_CONFIG, project_root

OPTIONAL_KEYS: tuple[str, ...] = ("score_candidate", "controls", "migration_old", "migration_new")
"""Inputs only the calibrate notebook reads; without one its section says so and does nothing."""
INPUT_KEYS: tuple[str, ...] = ("gold", "policy", "candidates", *OPTIONAL_KEYS)

_EXAMPLES = {
    "gold": "gold: data/<name>",
    "policy": "policy: data/policies/<name>@1.yaml",
    "candidates": "candidates: [data/candidates/<name>-judge@1.yaml]",
    "score_candidate": "score_candidate: data/candidates/<name>-score-judge@1.yaml",
    "controls": "controls: data/controls/<name>-controls@1.yaml",
    "migration_old": "migration_old: data/candidates/<name>-judge@1.yaml",
    "migration_new": "migration_new: data/candidates/<name>-judge@2.yaml",
}


@dataclass(frozen=True)
class ProjectInputs:
    """What a phase notebook works on, and where each came from."""

    gold: Path
    policy: Path | None
    candidates: tuple[Path, ...]
    sources: dict[str, str] = field(default_factory=dict)
    """Per input: ``parameter``, the ``workbench.yaml`` it came from (its path) or ``none``."""
    optional: dict[str, Path | None] = field(default_factory=dict)
    """The :data:`OPTIONAL_KEYS` the notebook asked for, each a path or None (not given)."""

    def summary(self) -> str:
        """One line per input: its path and where it came from."""
        rows = [
            ("gold", str(self.gold)),
            ("policy", str(self.policy) if self.policy else "(none)"),
            ("candidates", ", ".join(map(str, self.candidates))),
            *((key, str(path) if path else "(none)") for key, path in self.optional.items()),
        ]
        return "\n".join(
            f"{key}: {value} (from {self.sources.get(key, '?')})" for key, value in rows
        )


def declared_inputs(root: Path) -> dict[str, Any]:
    """The input keys ``<root>/workbench.yaml`` declares, as given (``candidates`` as a list);
    ``project_config_invalid`` lists every key that is not a path (or a list of paths)."""
    config = root / PROJECT_CONFIG
    raw, unreadable = read_config(config)
    if unreadable is not None:
        raise WorkbenchError("invalid project configuration", [unreadable])
    if not isinstance(raw, dict):
        return {}
    found: dict[str, Any] = {}
    problems: list[Problem] = []
    for key in INPUT_KEYS:
        value = raw.get(key)
        if value is None:
            continue
        if key == "candidates" and isinstance(value, str):
            value = [value]
        values = value if key == "candidates" and isinstance(value, list) else [value]
        if not values or not all(isinstance(v, str) and v.strip() for v in values):
            message = f"`{key}:` must be {'a list of paths' if key == 'candidates' else 'a path'}"
            fix = f"write `{_EXAMPLES[key]}` (relative to the project root), or remove the key"
            problems.append(problem(f"{config}: {key}", "project_config_invalid", message, fix))
            continue
        found[key] = value
    if problems:
        raise WorkbenchError("invalid project configuration", problems)
    return found


def project_inputs(
    *,
    gold: str | Path | None = None,
    policy: str | Path | None = None,
    candidates: Sequence[str | Path] | None = None,
    **optional: str | Path | None,
) -> ProjectInputs:
    """The gold dataset, policy and candidates a phase notebook works on, and the
    :data:`OPTIONAL_KEYS` it names as keyword arguments: a given parameter wins, ``None`` takes
    the ``workbench.yaml`` key, ``""`` asks for none (the policy or an optional input). A missing
    gold or candidates is ``project_input_missing``."""
    if unknown := sorted(set(optional) - set(OPTIONAL_KEYS)):
        raise TypeError(f"project_inputs() got unknown inputs {unknown}; known: {OPTIONAL_KEYS}")
    need_config = gold is None or policy is None or not candidates
    need_config = need_config or any(value is None for value in optional.values())
    root = project_root() if need_config else None
    declared = declared_inputs(root) if root is not None else {}
    config = str(root / PROJECT_CONFIG) if root is not None else PROJECT_CONFIG
    sources: dict[str, str] = {}
    missing: list[Problem] = []

    def pick(key: str, given: Any) -> Any:
        if given is not None and given != []:
            sources[key] = "parameter"
            return given
        if key in declared:
            sources[key] = config
            value, base = declared[key], Path(config).parent
            return [base / v for v in value] if isinstance(value, list) else base / value
        sources[key] = "none"
        if key in ("gold", "candidates"):
            message = f"no {key} given: the parameter is not set and workbench.yaml has no `{key}:`"
            fix = (
                f"set the notebook's {key} parameter, or write `{_EXAMPLES[key]}` in workbench.yaml"
            )
            missing.append(problem(config, "project_input_missing", message, fix))
        return None

    chosen_gold = pick("gold", gold)
    chosen_policy = pick("policy", policy)
    chosen_candidates = pick("candidates", list(candidates) if candidates else None)
    chosen = {key: pick(key, value) for key, value in optional.items()}
    if missing:
        raise WorkbenchError("the project names no input for the notebook", missing)
    return ProjectInputs(
        gold=Path(chosen_gold),
        policy=Path(chosen_policy) if chosen_policy else None,
        candidates=tuple(Path(c) for c in chosen_candidates),
        sources=sources,
        optional={key: Path(value) if value else None for key, value in chosen.items()},
    )
