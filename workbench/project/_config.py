"""The inputs a project's ``workbench.yaml`` names: its gold dataset, release policy and judges.

Three optional keys, each relative to the project root (:func:`~workbench.project.project_root`):

- ``gold:``: the gold dataset directory;
- ``policy:``: the release policy file the notebooks draw limits from, and the file ``workbench
  import table`` drafts when it imports into ``gold`` (:func:`~workbench.project.draft_policy`);
- ``candidates:``: the judge candidate spec files (a list; the develop notebook tunes the first).

:func:`project_inputs` gives the develop and calibrate notebooks what to work on: a parameter
that is given wins (as written, relative to the working directory), else the key, else nothing
(``gold`` and ``candidates`` are required: their absence is ``project_input_missing``; a missing
policy is shown at the top of the notebook by :func:`workbench.phases.phase_policy`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._load import read_config
from ..errors import Problem, WorkbenchError, problem
from ._root import PROJECT_CONFIG, project_root

INPUT_KEYS: tuple[str, ...] = ("gold", "policy", "candidates")
"""The ``workbench.yaml`` keys that name the project's inputs."""

_EXAMPLES = {
    "gold": "gold: data/<name>",
    "policy": "policy: data/policies/<name>@1.yaml",
    "candidates": "candidates: [data/candidates/<name>-judge@1.yaml]",
}


@dataclass(frozen=True)
class ProjectInputs:
    """What a phase notebook works on, and where each came from."""

    gold: Path
    policy: Path | None
    """The release policy file; None when neither the parameter nor ``workbench.yaml`` names one."""
    candidates: tuple[Path, ...]
    sources: dict[str, str] = field(default_factory=dict)
    """Per input: ``parameter``, the ``workbench.yaml`` it came from (its path) or ``none``."""

    def summary(self) -> str:
        """One line per input: its path and where it came from."""
        rows = [
            ("gold", str(self.gold)),
            ("policy", str(self.policy) if self.policy else "(none)"),
            ("candidates", ", ".join(map(str, self.candidates))),
        ]
        return "\n".join(
            f"{key}: {value} (from {self.sources.get(key, '?')})" for key, value in rows
        )


def declared_inputs(root: Path) -> dict[str, Any]:
    """The input keys ``<root>/workbench.yaml`` declares (absent keys left out), each checked to
    be a path (``candidates``: a path or a list of paths), as given (relative to ``root``).

    Raises ``project_config_invalid`` listing every badly written key.
    """
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
        ok = (
            all(isinstance(v, str) and v.strip() for v in value) and bool(value)
            if key == "candidates" and isinstance(value, list)
            else isinstance(value, str) and bool(value.strip())
        )
        if not ok:
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
) -> ProjectInputs:
    """The gold dataset, policy and candidates a phase notebook works on.

    A given parameter wins; ``None`` takes the project's ``workbench.yaml`` key; ``policy=""``
    asks for no policy. Raises ``project_input_missing`` (every missing input at once) when
    neither names the gold dataset or any candidate.
    """
    need_config = gold is None or policy is None or not candidates
    root = project_root() if need_config else None
    declared = declared_inputs(root) if root is not None else {}
    config = str(root / PROJECT_CONFIG) if root is not None else PROJECT_CONFIG
    where = config
    sources: dict[str, str] = {}
    missing: list[Problem] = []

    def pick(key: str, given: Any) -> Any:
        if given is not None and given != []:
            sources[key] = "parameter"
            return given
        if key in declared:
            sources[key] = where
            value, base = declared[key], Path(config).parent
            return [base / v for v in value] if isinstance(value, list) else base / value
        sources[key] = "none"
        if key != "policy":
            message = f"no {key} given: the parameter is not set and workbench.yaml has no `{key}:`"
            fix = (
                f"set the notebook's {key} parameter, or write `{_EXAMPLES[key]}` in workbench.yaml"
            )
            missing.append(problem(config, "project_input_missing", message, fix))
        return None

    chosen_gold = pick("gold", gold)
    chosen_policy = pick("policy", policy)
    chosen_candidates = pick("candidates", list(candidates) if candidates else None)
    if missing:
        raise WorkbenchError("the project names no input for the notebook", missing)
    return ProjectInputs(
        gold=Path(chosen_gold),
        policy=Path(chosen_policy) if chosen_policy else None,
        candidates=tuple(Path(c) for c in chosen_candidates),
        sources=sources,
    )
