"""What a CI lane checks: the project's files, found by convention under ``data/`` or declared in
``workbench.yaml`` (``ci: paths:``, a glob list per kind that replaces the convention; a glob
matching nothing is a problem), with the ``ci:`` block's sentinel defaults and reviewed expected
failures (:class:`CiConfig`; docs/formats.md#ci-configuration)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator

from .._load import peek_yaml, read_config, validation_problems
from .._record import Record as _Model
from .._record import SchemaTooNew
from ..errors import Problem, problem

CONFIG_FILE = "workbench.yaml"
"""The project configuration file at the project root (shared with the held-out ledger's
``held_out_ledger`` key)."""
CI_KEY = "ci"
CI_CONFIG_SCHEMA_VERSION = 1

KINDS: tuple[str, ...] = ("gold", "candidates", "policies", "controls", "ranking", "noise")
DEFAULT_GLOBS: dict[str, list[str]] = {
    kind: ["data/*" if kind == "gold" else f"data/{kind}/*.yaml"] for kind in KINDS
}


class CiPaths(_Model):
    """Globs (relative to the project root) per kind of file; a kind left out keeps its
    convention (``data/*`` for gold, else ``data/<kind>/*.yaml``)."""

    gold: list[str] | None = None
    """Gold dataset directories (each holding ``gold.jsonl``)."""
    candidates: list[str] | None = None
    """Candidate specs."""
    policies: list[str] | None = None
    """Release policies (scalar and ``kind: ranking``)."""
    controls: list[str] | None = None
    """Control suites."""
    ranking: list[str] | None = None
    """Ranking fixture files (and agreement-drop evidence)."""
    noise: list[str] | None = None
    """Noise pair suites (``*.panel.yaml`` are claim panels)."""


class SentinelDefaults(_Model):
    """Defaults of ``workbench ci sentinel`` (each overridden by its option)."""

    gold: str | None = None
    """The gold whose ``sentinels.yaml`` runs (default: the only gold that has one)."""
    policy: str | None = None
    """The policy whose ``ci_budget_usd`` caps the job and whose ``controls.suite`` is run
    (default: the only scalar policy for the gold's rubric that sets ``ci_budget_usd``)."""
    judge_code: list[str] = Field(default_factory=list)
    """Globs of code every label judge depends on (a change affects every such candidate)."""


class ExpectedFailure(_Model):
    """A reviewed, exact statement that one check fails, and why that is accepted for now."""

    check: str = Field(min_length=3)
    """The check, ``group/name`` as the JUnit report and ``--json`` name it."""
    failing: list[str] = Field(min_length=1)
    """Exactly what fails (control or pair ids); any other failure still fails the lane."""
    reason: str = Field(min_length=1)
    """Why the failure is accepted (e.g. a superseded baseline kept for comparison)."""
    approver: str = Field(min_length=1)
    """Who accepted it."""
    expires: dt.date | None = None
    """After this date the entry no longer applies (and is reported)."""

    @field_validator("reason", "approver")
    @classmethod
    def _written(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must be written, not blank")
        return value


class CiConfig(_Model):
    """The ``ci:`` block of ``workbench.yaml``."""

    schema_version: int = CI_CONFIG_SCHEMA_VERSION
    """CI configuration format version."""
    paths: CiPaths = Field(default_factory=CiPaths)
    """Where each kind of file is (globs); unset kinds follow the convention."""
    sentinel: SentinelDefaults = Field(default_factory=SentinelDefaults)
    """Defaults of the sentinel lane."""
    expected_failures: list[ExpectedFailure] = Field(default_factory=list)
    """Reviewed failures that do not fail the lane while they fail exactly as stated."""


def load_ci_config(root: str | Path) -> tuple[CiConfig, list[Problem]]:
    """The ``ci:`` block of ``<root>/workbench.yaml`` (defaults when absent), and its problems."""
    path = Path(root) / CONFIG_FILE
    loc = str(path)
    raw, unreadable = read_config(path)
    block = raw.get(CI_KEY) if isinstance(raw, dict) else None
    if unreadable is not None:
        where, fix = unreadable.location, "write workbench.yaml as a UTF-8 YAML mapping"
        message = f"the project configuration cannot be read ({unreadable.message[:120]})"
    elif raw is not None and not isinstance(raw, dict):
        where, fix = loc, "write key: value pairs, e.g. `ci: {paths: {...}}`"
        message = "the project configuration must be a YAML mapping"
    elif block is not None and not isinstance(block, dict):
        where, fix = f"{loc}: {CI_KEY}", "see docs/formats.md#ci-configuration"
        message = "the ci block must be a mapping"
    else:
        return _validate(block, loc) if block is not None else (CiConfig(), [])
    return CiConfig(), [problem(where, "ci_config_invalid", message, fix)]


def _validate(block: dict[str, Any], loc: str) -> tuple[CiConfig, list[Problem]]:
    try:
        return CiConfig.model_validate(block), []
    except SchemaTooNew as exc:
        return CiConfig(), [exc.problem_at(f"{loc}: {CI_KEY}.schema_version")]
    except ValidationError as exc:
        return CiConfig(), validation_problems(
            exc,
            at=lambda *path: f"{loc}: {CI_KEY}.{'.'.join(map(str, path))}",
            code="ci_config_invalid",
            message=lambda e, _: e["msg"],
            fix="correct this field; see docs/formats.md#ci-configuration",
        )


@dataclass
class Inventory:
    """Every file a lane checks, by kind, with the problems met while finding them."""

    root: Path
    config: CiConfig
    gold: list[Path] = field(default_factory=list)
    candidates: list[Path] = field(default_factory=list)
    policies: list[Path] = field(default_factory=list)
    controls: list[Path] = field(default_factory=list)
    ranking: list[Path] = field(default_factory=list)
    agreement_examples: list[Path] = field(default_factory=list)
    noise: list[Path] = field(default_factory=list)
    noise_panels: list[Path] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def rel(self, path: Path) -> str:
        """``path`` relative to the project root when it is inside it."""
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return str(path)

    @property
    def empty(self) -> bool:
        return not any(
            (self.gold, self.candidates, self.policies, self.controls, self.ranking, self.noise)
        )


def _yaml_kind(path: Path) -> Any:
    raw = peek_yaml(path)
    return raw.get("kind") if isinstance(raw, dict) else None


def _found(
    root: Path, kind: str, declared: list[str] | None, problems: list[Problem]
) -> list[Path]:
    """The files of one kind: the declared globs, else the convention (module doc)."""
    where = f"{root / CONFIG_FILE}: {CI_KEY}.paths.{kind}"
    found: list[Path] = []
    for pattern in declared if declared is not None else DEFAULT_GLOBS[kind]:
        if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
            message = f"{pattern!r} is not a path inside the project"
            fix = "give globs relative to the project root"
            problems.append(problem(where, "ci_path_outside", message, fix))
            continue
        matches = sorted(
            p
            for p in root.glob(pattern)
            if (p.is_dir() and (p / "gold.jsonl").is_file() if kind == "gold" else p.is_file())
        )
        if declared is not None and not matches:
            message = f"{pattern!r} matches no {kind} file"
            fix = (
                "correct the glob, or remove it: a declared path that matches nothing would check"
                " nothing"
            )
            problems.append(problem(where, "ci_path_empty", message, fix))
        found += [p for p in matches if p not in found]
    return found


def discover(root: str | Path) -> Inventory:
    """Find the project's files (module doc); config problems are in ``problems``."""
    root = Path(root)
    config, problems = load_ci_config(root)
    inv = Inventory(root=root, config=config, problems=list(problems))
    for kind in KINDS:
        found = _found(root, kind, getattr(config.paths, kind), inv.problems)
        if kind == "ranking":
            for p in found:
                examples = _yaml_kind(p) == "agreement-drop-examples"
                (inv.agreement_examples if examples else inv.ranking).append(p)
        elif kind == "noise":
            for p in found:
                (inv.noise_panels if p.name.endswith(".panel.yaml") else inv.noise).append(p)
        else:
            setattr(inv, kind, found)
    return inv
