"""Release policies: reviewed, versioned limits the gate applies
(``data/policies/<name>@<version>.yaml``), the judge's declared use and scope.

:func:`load_policy` reports every problem at once: the file name must be
``<name>@<version>.yaml``, owner and rationale written, and a critical slice must bound its
false-pass rate on ``upper_95`` and declare ``max_abstention_rate``.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from .._io import sha256_file
from .._load import load_yaml, rule_error, validation_problems
from .._record import Record as _Model
from .._record import SchemaTooNew
from ..approval import Snapshot, check_lineage, document_snapshot
from ..errors import Problem, WorkbenchError, problem
from ..gold import Risk
from ..sampling import SamplingPlan, SamplingRuleError, plan_problems

POLICY_SCHEMA_VERSION = 2
"""2: ``use`` and ``scope`` (a version-1 file reads unchanged: it declares no use)."""
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"
Basis = Literal["upper_95", "point"]
PartitionName = Literal["development", "calibration", "held_out"]
Use = Literal["advisory", "route", "block"]
"""What a certified judge may do, least to most."""


class SliceRuleError(SamplingRuleError):
    """The rules a slice breaks, each ``(code, message, fix)``; :func:`load_policy` lists each."""


class SlicePolicy(_Model):
    """The limits one rubric slice must meet. A limit left out (``None``) is not checked."""

    risk: Risk
    """The slice's risk level as reviewed; must equal the rubric's."""
    max_false_passes: int | None = Field(default=None, ge=0)
    """Most false passes (human fail, judge pass) allowed in the slice."""
    max_false_pass_rate: float | None = Field(default=None, ge=0, le=1)
    """Highest false-pass rate allowed, on ``false_pass_rate_basis``; required for critical
    slices."""
    false_pass_rate_basis: Basis = "upper_95"
    """``upper_95`` (the 95% Wilson upper bound; required for critical slices) or ``point``."""
    max_false_fail_rate: float | None = Field(default=None, ge=0, le=1)
    """Highest false-fail rate allowed, on ``false_fail_rate_basis``."""
    false_fail_rate_basis: Basis = "point"
    """Basis of the false-fail limit (default ``point``)."""
    max_abstention_rate: float | None = Field(default=None, ge=0, le=1)
    """Highest abstention rate accepted (abstentions / verdicts). Mandatory for critical slices;
    omitted elsewhere it means 0."""
    min_n: int | None = Field(default=None, ge=0)
    """Fewest decided verdicts the slice needs; overrides ``min_n_per_slice``."""
    max_flip_rate: float | None = Field(default=None, ge=0, le=1)
    """Highest flip rate across repeated calls; when set, certification needs a repeatability
    study (K >= 3, calibration). None: no limit."""
    rationale: str = ""
    """Why these limits, when the slice differs from the policy's general reasoning."""

    @property
    def abstention_limit(self) -> float:
        """``max_abstention_rate``, or 0 when it is left out."""
        return self.max_abstention_rate if self.max_abstention_rate is not None else 0.0

    @model_validator(mode="after")
    def _critical_slices_are_bounded(self) -> SlicePolicy:
        if self.risk != Risk.critical:
            return self
        rules: list[tuple[str, str, str]] = []
        if self.max_false_pass_rate is None:
            rules.append(
                (
                    "policy_critical_false_pass_rate",
                    "a critical slice must set max_false_pass_rate (on the upper_95 basis)",
                    (
                        "add max_false_pass_rate: <limit> with false_pass_rate_basis: upper_95 to"
                        " the slice"
                    ),
                )
            )
        elif self.false_pass_rate_basis != "upper_95":
            rules.append(
                (
                    "policy_critical_basis",
                    (
                        "a critical slice must use false_pass_rate_basis upper_95: the point"
                        " estimate cannot show the false-pass rate is within the limit"
                    ),
                    "set false_pass_rate_basis: upper_95 for the slice",
                )
            )
        if self.max_abstention_rate is None:
            rules.append(
                (
                    "policy_critical_abstention_limit",
                    (
                        "a critical slice must set max_abstention_rate: the largest share of"
                        " verdicts in the rubric's abstain labels (e.g. review_required) it accepts"
                    ),
                    (
                        "add max_abstention_rate: <limit between 0 and 1> to the slice (0 accepts"
                        " no abstention); abstentions count toward no false-pass or false-fail"
                        " figure"
                    ),
                )
            )
        if rules:
            raise SliceRuleError(rules)
        return self


class PolicyRuleError(SamplingRuleError):
    """Policy-level rules broken, each ``(code, message, fix)``; :func:`load_policy` lists each."""


class PolicyScope(_Model):
    """Where a judge certified under the policy may act: whatever is not listed is out of scope."""

    slices: list[str] = Field(min_length=1)
    """Rubric slices the judge may act on (each a slice of this policy)."""
    products: list[str] = Field(default_factory=list)
    """Products its verdicts may be used in; empty: bounded by the slices alone."""
    dimensions: dict[str, list[str]] = Field(default_factory=dict)
    """Other declared dimensions -> allowed values; recorded, not checked."""

    @field_validator("slices", "products")
    @classmethod
    def _distinct_names(cls, value: list[str]) -> list[str]:
        if any(not str(v).strip() for v in value):
            raise ValueError("names must be written, not blank")
        if len(set(value)) != len(value):
            raise ValueError("a name is listed twice")
        return value

    @field_validator("dimensions")
    @classmethod
    def _values_listed(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for name, allowed in value.items():
            if not name.strip() or not allowed or any(not str(v).strip() for v in allowed):
                raise ValueError(f"dimension {name!r} must name at least one allowed value")
        return value


class ControlsPolicy(_Model):
    """Controls certification runs before it touches held-out data."""

    suite: str
    """Control suite file, relative to the policy file."""
    blocking_roles: list[str] = Field(
        default_factory=lambda: ["positive", "negative", "adversarial"]
    )
    """Roles whose failure blocks certification, each with its outcome text."""
    require_frozen: bool = False
    """Refuse a suite no release froze (``workbench freeze``)."""


class CertificationPolicy(_Model):
    """How certification under this policy may run."""

    notebook_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """sha256 of a custom certification notebook this policy accepts (otherwise only the packaged
    one certifies)."""


class Policy(_Model):
    """A release policy, exactly as stored in ``data/policies/<name>@<version>.yaml``."""

    schema_version: int = POLICY_SCHEMA_VERSION
    """Policy file format version."""
    name: str = Field(pattern=NAME_PATTERN)
    """Policy name, e.g. ``support-release``."""
    version: str = Field(pattern=NAME_PATTERN)
    """Policy version; a changed limit is a new version (a new file)."""
    owner: str = Field(min_length=1)
    """Who is accountable for these limits (a named person or team)."""
    rationale: str = Field(min_length=1)
    """Why these limits, written before results are seen."""
    rubric_version: str | None = None
    """The rubric version the limits were set for; when given, the dataset's rubric must match."""
    partition: PartitionName | None = None
    """The partition the gate certifies on; when given, the report must be of it."""
    created: dt.date | None = None
    """When the policy was written."""
    slices: dict[str, SlicePolicy] = Field(min_length=1)
    """Limits per rubric slice. Every rubric slice needs an entry; a missing one blocks release."""
    cells: dict[str, SlicePolicy] = Field(default_factory=dict)
    """Limits on crossed cells, each named ``<slice>×<field>=<value>`` (``*`` for ``×``; fields
    as ``workbench align --by`` reads them, e.g. ``account_security×language=de``), checked as a
    slice's; a cell with no case in scope is incomplete, never a pass (docs/gate.md)."""
    max_evaluator_errors: int = Field(default=0, ge=0)
    """Most evaluator errors (cases without a verdict because the judge failed) allowed overall."""
    max_cost_usd: float | None = Field(default=None, ge=0)
    """Approved spend for the run; more is a cost-boundary violation. ``None``: not checked."""
    budget_usd: float | None = Field(default=None, ge=0)
    """Spend limit of the certification's held-out run: the default ``--budget-usd``, which may
    only be lower. None: no limit."""
    ci_budget_usd: float | None = Field(default=None, ge=0)
    """Per-job spend cap of ``workbench ci sentinel``; ``--budget-usd`` may only lower it. None:
    no judge-backed CI spend approved."""
    ci_scheduled_budget_usd: float | None = Field(default=None, ge=0)
    """Per-job spend cap of ``workbench ci sentinel --scope scheduled`` (every ranking fixture
    and noise pair); None: ``ci_budget_usd``."""
    min_n_per_slice: int = Field(default=1, ge=0)
    """Fewest cases with a judge verdict each slice needs, unless the slice sets ``min_n``."""
    controls: ControlsPolicy | None = None
    """The control suite certification runs first, and which roles block."""
    certification: CertificationPolicy | None = None
    """Pins a custom certification notebook by its sha256."""
    use: Use | None = None
    """The judge's declared use (``advisory``, ``route``, ``block``): the most certification
    grants, only in ``scope``. None: no authority. Requires ``scope``."""
    scope: PolicyScope | None = None
    """Where that use applies; required with ``use``."""
    sample_agreements: float | None = Field(default=None, gt=0, le=1)
    """Share of a routing judge's clear production verdicts sent to blinded human review beside
    every abstention (``workbench production sample``). None: none declared."""
    sampling: SamplingPlan | None = None
    """A declared sampling plan for development/calibration runs (:mod:`workbench.sampling`);
    never applies to held-out data or critical slices. None: runs judge every case."""

    @model_validator(mode="after")
    def _use_has_a_scope(self) -> Policy:
        rules: list[tuple[str, str, str]] = []
        if self.use is not None and self.scope is None:
            rules.append(
                (
                    "policy_use_without_scope",
                    f"use {self.use!r} is declared without a scope: authority would have no bounds",
                    (
                        "add scope: {slices: [<the rubric slices the judge may act on>]}"
                        " (optionally products and dimensions)"
                    ),
                )
            )
        if self.scope is not None and self.use is None:
            rules.append(
                (
                    "policy_scope_without_use",
                    "a scope is declared without a use",
                    "add use: advisory | route | block, or remove scope",
                )
            )
        if self.scope is not None:
            unknown = [name for name in self.scope.slices if name not in self.slices]
            if unknown:
                rules.append(
                    (
                        "policy_scope_unknown_slice",
                        f"scope.slices names {unknown}, which the policy sets no limits for",
                        (
                            "list only slices of this policy (its `slices:` keys): a slice without"
                            " reviewed limits cannot be certified"
                        ),
                    )
                )
        if self.sampling is not None:
            risks = {name: spec.risk.value for name, spec in self.slices.items()}
            rules += [
                (p.code, f"sampling: {p.message}", p.fix)
                for p in plan_problems(self.sampling, risks, location="sampling")
            ]
        if rules:
            raise PolicyRuleError(rules)
        return self

    @field_validator("name", "version", mode="before")
    @classmethod
    def _number_as_text(cls, value: Any) -> Any:
        return (
            str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value
        )

    @field_validator("owner", "rationale")
    @classmethod
    def _written(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must be written, not blank")
        return value

    @property
    def label(self) -> str:
        """``name@version``, the identity overrides refer to."""
        return f"{self.name}@{self.version}"

    def min_n_for(self, slice_name: str) -> int:
        """Fewest verdicts the slice needs (its own ``min_n`` or the global one)."""
        spec = self.slices.get(slice_name)
        return spec.min_n if spec is not None and spec.min_n is not None else self.min_n_per_slice


AUTHORITY_CONTROL_ROLES: tuple[str, ...] = ("negative", "adversarial")
"""Control roles that must block certification before a judge may ``route`` or ``block``."""

CONTROLS_NOT_REQUIRED = "controls_not_required"
"""The code of a route or block request a policy cannot carry (:func:`controls_for_authority`)."""


def controls_for_authority(policy: Policy) -> str | None:
    """Why a certification under ``policy`` cannot carry ``route`` or ``block`` authority (the
    policy must block on every role of :data:`AUTHORITY_CONTROL_ROLES`), or None when it can."""
    if policy.use not in ("route", "block"):
        return None
    blocking = set(policy.controls.blocking_roles) if policy.controls is not None else set()
    missing = [role for role in AUTHORITY_CONTROL_ROLES if role not in blocking]
    if not missing:
        return None
    what = (
        "declares no controls"
        if policy.controls is None
        else f"does not block on its {'/'.join(missing)} controls"
    )
    return (
        f"{policy.use} withheld ({CONTROLS_NOT_REQUIRED}): policy {policy.label} {what}, so"
        " nothing showed the judge fails what it must fail; it grants at most advisory (declare"
        f" controls: with blocking_roles including {', '.join(AUTHORITY_CONTROL_ROLES)} in a new"
        " policy version)"
    )


def policy_sha256(path: str | Path) -> str:
    """sha256 of the policy file's bytes: the identity of the reviewed file."""
    return sha256_file(path)


def _problem(loc: str, code: str, message: str, fix: str) -> Problem:
    return problem(loc, code, message, fix)


def _rule_problems(e: Any, where: str, loc: str) -> list[Problem] | None:
    """A policy, slice or sampling rule error's own problems, each with its code."""
    rule = rule_error(e)
    if isinstance(rule, PolicyRuleError):
        return [_problem(loc, code, message, fix) for code, message, fix in rule.rules]
    if isinstance(rule, SliceRuleError):
        slice_name = where.rsplit(".", 1)[-1]
        return [
            _problem(loc, code, f"{where}: slice {slice_name!r}: {message}", fix)
            for code, message, fix in rule.rules
        ]
    if isinstance(rule, SamplingRuleError):
        return [
            _problem(loc, code, f"{where}: {message}", fix) for code, message, fix in rule.rules
        ]
    return None


OWNER_DOCS = "docs/formats.md#policy-owner-and-rationale"
"""Where the policy's ``owner`` and ``rationale`` are explained (a blank one's fix points here)."""


def _field_fix(error: Any) -> str:
    """The fix of an invalid policy field: the docs section a person reads to write it."""
    field_name = error["loc"][0] if error.get("loc") else None
    if field_name == "owner":
        return f"write the named person or team accountable for these limits (see {OWNER_DOCS})"
    if field_name == "rationale":
        return (
            "write why these limits, in the harm a wrong verdict does, before any result is seen"
            f" (see {OWNER_DOCS})"
        )
    return "correct this field; see docs/formats.md#policy for every field's meaning"


def load_policy(path: str | Path) -> Policy:
    """Read and check a policy file; raise :class:`WorkbenchError` listing every problem."""
    path = Path(path)
    loc = str(path)
    raw = load_yaml(
        path,
        prefix="policy",
        what="policy",
        missing_fix="point --policy at data/policies/<name>@<version>.yaml",
        shape=("the policy must be a YAML mapping", "write the policy as key: value pairs"),
    ).data
    problems: list[Problem] = []
    name, ver = raw.get("name"), raw.get("version")
    if name is not None and ver is not None and path.stem != f"{name}@{ver}":
        problems.append(
            _problem(
                loc,
                "policy_filename",
                f"file name {path.name!r} does not match name@version {name}@{ver!s}",
                f"rename the file to {name}@{ver!s}.yaml (or correct name/version) so versions"
                " cannot be confused",
            )
        )
    policy: Policy | None = None
    try:
        policy = Policy.model_validate(raw)
    except SchemaTooNew as exc:
        problems.insert(0, exc.problem_at(loc))
    except ValidationError as exc:
        problems += validation_problems(
            exc, at=loc, code="policy_invalid", root="policy", fix=_field_fix, expand=_rule_problems
        )
    if problems or policy is None:
        raise WorkbenchError(f"{loc}: invalid policy: {len(problems)} problem(s)", problems)
    lineage = check_lineage(_snapshot(policy, path))  # a frozen version is never edited in place
    if lineage:
        raise WorkbenchError(f"{loc}: the policy breaks its release", lineage)
    return policy


def _snapshot(policy: Policy, path: Path) -> Snapshot:
    return document_snapshot(
        "policy",
        policy.model_dump(mode="json", exclude_defaults=True) | {"version": policy.version},
        items="slices",
        source=path,
        change_fix="a changed limit is a new policy version (a new file), frozen in turn",
    )


def policy_snapshot(path: Path) -> Snapshot:
    """The checked snapshot of the release policy at ``path``: one item per slice."""
    return _snapshot(load_policy(path), path)
