"""Release policies: reviewed, versioned limits the gate applies,
``data/policies/<name>@<version>.yaml``.

A policy holds no agreement target of its own invention: it states, per rubric slice, how many
false passes and which false-pass / false-fail rates an owner accepts, on which basis, and how
many judged cases a slice needs before its numbers mean anything. It also bounds evaluator
errors and spend. Every limit is an upper bound; a limit that is ``None`` is not checked.

The policy also declares the judge's **use** (``advisory``: annotate only; ``route``: send
verdicts to human review; ``block``: gate a release unattended) and its **scope** (the rubric
slices, and optionally products and other declared dimensions, it may act in). Certification
grants at most that use, only in that scope (:mod:`workbench.authority`); a policy without
``use`` grants no authority.

A slice may also bound the judge's own variance, ``max_flip_rate`` (cases whose verdict
changes across repeated calls of the unchanged judge): certification then needs a
repeatability study on calibration data (:mod:`workbench.repeatability`).

Rules checked when a policy is loaded (:func:`load_policy`, every problem at once):

- the file name equals ``<name>@<version>.yaml``;
- owner and rationale are written;
- a ``critical`` slice bounds its false-pass rate, on the ``upper_95`` basis (the upper end
  of the 95% Wilson interval); the ``point`` estimate cannot certify a critical slice;
- a ``critical`` slice declares ``max_abstention_rate``, the largest share of abstaining
  verdicts it accepts. On other slices an omitted limit means 0: no abstention is accepted.

Definitions the gate uses (see :class:`~workbench.align.SliceAlignment`): an *abstention* is
a verdict that is one of the rubric's ``abstain_labels``; a *decided* verdict is any other
verdict. Abstention rate = abstaining verdicts / cases with a verdict; coverage = decided
verdicts / cases in scope. False-pass and false-fail rates count only decided pass/fail
verdicts, so abstaining can never lower them.
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
from ..errors import Problem, WorkbenchError
from ..gold import Risk
from ..sampling import SamplingPlan, SamplingRuleError, plan_problems

POLICY_SCHEMA_VERSION = 2
"""2: ``use`` and ``scope`` (a version-1 file reads unchanged: it declares no use)."""
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"
Basis = Literal["upper_95", "point"]
PartitionName = Literal["development", "calibration", "held_out"]
Use = Literal["advisory", "route", "block"]
"""What a certified judge may do, least to most: annotate, route to human review, block a
release."""
USES: tuple[str, ...] = ("advisory", "route", "block")


class SliceRuleError(ValueError):
    """The rules a slice breaks, each ``(code, message, fix)``; :func:`load_policy` lists each."""

    def __init__(self, rules: list[tuple[str, str, str]]) -> None:
        self.rules = rules
        super().__init__("; ".join(message for _, message, _ in rules))


class SlicePolicy(_Model):
    """The limits one rubric slice must meet. A limit left out (``None``) is not checked."""

    risk: Risk
    """The slice's risk level as the owner reviewed it; must equal the rubric's. A slice whose
    risk changed in the rubric needs a new policy version, so the gate refuses a mismatch."""
    max_false_passes: int | None = Field(default=None, ge=0)
    """Most false passes (human fail, judge pass) allowed in the slice."""
    max_false_pass_rate: float | None = Field(default=None, ge=0, le=1)
    """Highest false-pass rate allowed (false passes / human fails with a verdict), on
    ``false_pass_rate_basis``. Required for critical slices."""
    false_pass_rate_basis: Basis = "upper_95"
    """``upper_95``: the upper bound of the 95% Wilson interval must be within the limit (the
    sample must *show* the rate is low); ``point``: the observed rate. Critical slices must use
    ``upper_95``."""
    max_false_fail_rate: float | None = Field(default=None, ge=0, le=1)
    """Highest false-fail rate allowed (false fails / human passes with a verdict), on
    ``false_fail_rate_basis``."""
    false_fail_rate_basis: Basis = "point"
    """Basis of the false-fail limit. Defaults to ``point``: a false fail blocks a good response
    and costs review time but releases nothing, so the observed rate is the usual measure; an
    owner may ask for ``upper_95``."""
    max_abstention_rate: float | None = Field(default=None, ge=0, le=1)
    """Highest abstention rate accepted: verdicts in the rubric's ``abstain_labels`` divided by
    cases with a verdict, observed (point) rate, the limit included. Mandatory for critical
    slices; left out on another slice it means 0 (no abstention accepted), so abstaining can
    never buy certification. A slice above it gets an ``abstention_rate_exceeded`` blocker."""
    min_n: int | None = Field(default=None, ge=0)
    """Fewest cases with a decided verdict (not an abstention) the slice needs; overrides
    ``min_n_per_slice``."""
    max_flip_rate: float | None = Field(default=None, ge=0, le=1)
    """Highest flip rate accepted: the share of the slice's cases whose verdict differs across
    repeated calls of the same pinned judge, observed in a repeatability study
    (``workbench repeatability``). When any slice sets it, certification requires a study of
    the candidate on calibration data with K >= 3 repeats
    (``workbench.repeatability.repeatability_blockers``); ``None``: no repeatability limit."""
    rationale: str = ""
    """Why these limits, when the slice differs from the policy's general reasoning."""

    @property
    def abstention_limit(self) -> float:
        """``max_abstention_rate``, or 0 when it is left out (only allowed outside critical
        slices)."""
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


class PolicyRuleError(ValueError):
    """Policy-level rules broken, each ``(code, message, fix)``; :func:`load_policy` lists each."""

    def __init__(self, rules: list[tuple[str, str, str]]) -> None:
        self.rules = rules
        super().__init__("; ".join(message for _, message, _ in rules))


class PolicyScope(_Model):
    """Where a judge certified under the policy may act. Evidence from one slice, product or
    language does not authorize the judge elsewhere: whatever is not listed is out of scope."""

    slices: list[str] = Field(min_length=1)
    """Rubric slices the judge may act on; each must be a slice of this policy. A slice left
    out gets no authority, whatever its certification figures."""
    products: list[str] = Field(default_factory=list)
    """Products, surfaces or pipelines its verdicts may be used in (e.g. ``support-chat``).
    Empty: the policy names none, and the authority is bounded by the slices alone."""
    dimensions: dict[str, list[str]] = Field(default_factory=dict)
    """Any other declared scope, dimension -> allowed values (e.g. ``language: [en]``,
    ``answer_form: [single_turn]``). Recorded with every grant; the workbench cannot check
    traffic against it, the consumer of the verdicts must."""

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
    """Roles whose failure blocks certification, each with its own outcome text. Other roles are
    reported."""
    require_frozen: bool = False
    """Certification refuses the suite unless a release froze it (``workbench freeze``), so it
    cannot be edited between certifications."""


class CertificationPolicy(_Model):
    """How certification under this policy may run."""

    notebook_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """sha256 of a custom certification notebook (``workbench certify --notebook``) this policy
    accepts. Without it, only the notebook shipped in the installed package certifies; any other
    notebook gives an advisory report (the ``notebook_unpinned`` blocker: never certified)."""


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
    """The partition the gate certifies on (normally ``held_out``); when given, the report must
    be of that partition."""
    created: dt.date | None = None
    """When the policy was written."""
    slices: dict[str, SlicePolicy] = Field(min_length=1)
    """Limits per rubric slice. Every rubric slice needs an entry; a missing one blocks release."""
    max_evaluator_errors: int = Field(default=0, ge=0)
    """Most evaluator errors (cases without a verdict because the judge failed) allowed overall."""
    max_cost_usd: float | None = Field(default=None, ge=0)
    """Approved spend for the run; more is a cost-boundary violation. ``None``: not checked."""
    budget_usd: float | None = Field(default=None, ge=0)
    """Spend limit the certification's held-out run runs under (it stops before a call could
    exceed it; a stopped run is incomplete). ``workbench certify`` uses it when
    ``--budget-usd`` is not given, refuses a larger ``--budget-usd`` (exit 2) and uses a smaller
    one. ``None``: certification is limited only by ``--budget-usd``, if given."""
    ci_budget_usd: float | None = Field(default=None, ge=0)
    """Per-job spend cap of a judge-backed CI job (``workbench ci sentinel``): every run of one
    job (controls, sentinels and baselines of every affected candidate) together. The job is
    refused before any call when its estimate exceeds the cap, and runs under what is left of
    it; ``--budget-usd`` may lower it, never raise it. ``None``: the policy approves no
    judge-backed CI spend, and the sentinel lane needs ``--budget-usd``."""
    min_n_per_slice: int = Field(default=1, ge=0)
    """Fewest cases with a judge verdict each slice needs, unless the slice sets ``min_n``."""
    controls: ControlsPolicy | None = None
    """The control suite certification runs first, and which roles block."""
    certification: CertificationPolicy | None = None
    """Pins a custom certification notebook by its sha256 (``notebook_sha256``). None: only the
    packaged notebook certifies."""
    use: Use | None = None
    """The judge's declared use: ``advisory`` (annotate experiments; every verdict is reviewed),
    ``route`` (verdicts route cases, e.g. clear passes and fails, while humans inspect
    abstentions and sampled agreements) or ``block`` (gate a release unattended).
    Certification under this policy grants at most this use, and only in ``scope``
    (``workbench.authority.grant_for``). None: the policy declares no use, so certification
    grants no authority (the judge stays a diagnosis). Requires ``scope``."""
    scope: PolicyScope | None = None
    """Where that use applies (slices, products, other declared dimensions). Required with
    ``use``; every scope slice must be a slice of this policy."""
    sampling: SamplingPlan | None = None
    """A declared sampling plan for judge runs over large development or calibration
    partitions or production traffic (:mod:`workbench.sampling`): per slice a sample size or
    fraction and a budget reservation, one seed. Critical slices are never sampled and no
    plan applies to held-out data: certification judges every held-out case. ``workbench run
    --policy`` applies it; the run records its sha256 and every sampled-out case. None: runs
    judge every case (leaving cases out is then a scope change: ``evaluation_incomplete``)."""

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
"""Control roles whose failure must block certification before a judge may ``route`` or
``block``: a judge that passes what it should fail, or obeys text planted in a response, is
what these roles catch and what the held-out limits do not measure."""

CONTROLS_NOT_REQUIRED = "controls_not_required"
"""The code of a route or block request a policy cannot carry (:func:`controls_for_authority`)."""


def controls_for_authority(policy: Policy) -> str | None:
    """Why a certification under ``policy`` cannot carry ``route`` or ``block`` authority, or
    None when it can (or asks for no more than ``advisory``).

    Route and block need a policy that runs controls before held-out data (``controls:``) and
    blocks on every role of :data:`AUTHORITY_CONTROL_ROLES`. Without them a certification still
    certifies, but grants at most ``advisory``: its report says so, and ``workbench authority
    promote`` to route or block is refused with :data:`CONTROLS_NOT_REQUIRED`.
    """
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
    return Problem(location=loc, code=code, message=message, fix=fix)


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
            exc,
            at=loc,
            code="policy_invalid",
            root="policy",
            fix=_field_fix,
            expand=_rule_problems,
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
    """The checked snapshot of the release policy at ``path`` (the approval registry's loader):
    one item per slice (its limits); each version stands alone."""
    return _snapshot(load_policy(path), path)
