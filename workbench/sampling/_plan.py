"""The sampling plan: which share of each slice a judge run may leave out, declared in advance.

A plan lives in a reviewed policy (``sampling:``) or a file (``--sampling-plan``). Per slice it
gives a size, a fraction or nothing (judged completely) and a budget reservation; one seed draws
every sample. It never applies to ``held_out`` and never samples a critical slice. Cases left
out without a plan are missing (``evaluation_incomplete``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator, model_validator

from .._io import sha256_json
from .._load import error_field, load_yaml, rule_error
from .._load import validation_problems as _problems
from .._record import Record as _Model
from .._record import SchemaTooNew
from ..errors import Problem, WorkbenchError, problem

SAMPLING_SCHEMA_VERSION = 1
PLAN_SCOPES: tuple[str, ...] = ("development", "calibration", "production")
RISK_ORDER: dict[str, int] = {"critical": 0, "high": 1, "medium": 2, "low": 3}


class SamplingRuleError(ValueError):
    """Rules a plan (or a slice entry) breaks, each ``(code, message, fix)``."""

    def __init__(self, rules: list[tuple[str, str, str]]) -> None:
        self.rules = rules
        super().__init__("; ".join(message for _, message, _ in rules))


class SliceSampling(_Model):
    """How one slice is sampled and how much budget it reserves. Empty: judged completely."""

    size: int | None = Field(default=None, ge=1)
    """Judge this many of the slice's cases (whole groups, so up to one group more)."""
    fraction: float | None = Field(default=None, gt=0, le=1)
    """Judge this share of the slice's cases: ``ceil(fraction x cases)``, drawn like ``size``."""
    complete: bool = False
    """Judge every case of the slice (the default; critical slices always are)."""
    reserve_usd: float | None = Field(default=None, ge=0)
    """Budget held for this slice while it has unfinished cases; it also runs first."""
    reserve_share: float | None = Field(default=None, gt=0, le=1)
    """The reservation as a share of the run's budget (``--budget-usd``)."""
    rationale: str = ""
    """Why this size or reservation, when it differs from the plan's general reasoning."""

    @model_validator(mode="after")
    def _one_of_each(self) -> SliceSampling:
        rules: list[tuple[str, str, str]] = []
        given = [name for name in ("size", "fraction") if getattr(self, name) is not None] + (
            ["complete"] if self.complete else []
        )
        if len(given) > 1:
            message = (
                f"gives {' and '.join(given)}: a slice has one sample size, one fraction, or is"
                " complete"
            )
            fix = "keep exactly one of size, fraction, complete: true"
            rules.append(("sampling_size_conflict", message, fix))
        if self.reserve_usd is not None and self.reserve_share is not None:
            message = "gives both reserve_usd and reserve_share"
            fix = (
                "keep one of reserve_usd (US dollars) and reserve_share (share of the run's budget)"
            )
            rules.append(("sampling_reserve_conflict", message, fix))
        if rules:
            raise SamplingRuleError(rules)
        return self

    @property
    def sampled(self) -> bool:
        """True when the slice is drawn from (``size`` or ``fraction``)."""
        return self.size is not None or self.fraction is not None

    @property
    def reserved(self) -> bool:
        return bool(self.reserve_usd) or bool(self.reserve_share)

    def target(self, cases: int) -> int:
        """How many of ``cases`` the sample needs (before rounding up to whole groups)."""
        if self.size is not None:
            return min(self.size, cases)
        if self.fraction is not None:
            return min(cases, math.ceil(self.fraction * cases - 1e-9))
        return cases

    def reservation(self, budget_usd: float | None) -> float:
        """The reservation in US dollars under ``budget_usd`` (0 without a budget for a share)."""
        if self.reserve_usd is not None:
            return float(self.reserve_usd)
        if self.reserve_share is not None and budget_usd is not None:
            return float(self.reserve_share) * budget_usd
        return 0.0


class SamplingPlan(_Model):
    """A declared, reviewed, reproducible sampling plan (``sampling:`` in a policy, or a file)."""

    schema_version: int = SAMPLING_SCHEMA_VERSION
    """Plan format version."""
    seed: int = Field(ge=0)
    """Seeds every draw (see :mod:`._draw`)."""
    applies_to: list[str] = Field(min_length=1)
    """``development``, ``calibration`` and/or ``production`` (traffic); never ``held_out``."""
    owner: str | None = None
    """Who reviewed the plan; required in a plan file (in a policy, the policy's owner)."""
    rationale: str = Field(min_length=1)
    """Why these sizes and reservations, written before results are seen."""
    slices: dict[str, SliceSampling] = Field(min_length=1)
    """Per rubric slice; a slice not listed is judged completely, without a reservation."""

    @field_validator("rationale")
    @classmethod
    def _written(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must be written, not blank")
        return value

    @field_validator("applies_to")
    @classmethod
    def _scopes(cls, value: list[str]) -> list[str]:
        rules: list[tuple[str, str, str]] = []
        if "held_out" in value:
            message = (
                "applies_to names held_out: certification judges every held-out case, so no plan"
                " may leave one out"
            )
            fix = (
                "remove held_out from applies_to; plans apply to development, calibration and"
                " production traffic"
            )
            rules.append(("sampling_held_out", message, fix))
        unknown = [s for s in value if s not in PLAN_SCOPES and s != "held_out"]
        if unknown:
            fix = f"use {', '.join(PLAN_SCOPES)}"
            rules.append(("sampling_unknown_scope", f"applies_to names {unknown}", fix))
        if len(set(value)) != len(value):
            rules.append(
                ("sampling_unknown_scope", "applies_to lists a scope twice", "list each scope once")
            )
        if rules:
            raise SamplingRuleError(rules)
        return value

    def sha256(self) -> str:
        """The plan's identity: sha256 of its canonical JSON."""
        return sha256_json(self.model_dump(mode="json"))

    def entry(self, slice_name: str) -> SliceSampling:
        return self.slices.get(slice_name) or SliceSampling()

    def reservations(self, budget_usd: float | None) -> dict[str, float]:
        """US dollars reserved per slice under ``budget_usd`` (slices with a reservation only)."""
        return {name: s.reservation(budget_usd) for name, s in self.slices.items() if s.reserved}


def _slice_problem(name: str, entry: SliceSampling, risks: Mapping[str, str | None]) -> Any:
    if name not in risks:
        return (
            "sampling_unknown_slice",
            f"sampling.slices names {name!r}, which is not one of the slices the plan is used with"
            f" ({', '.join(risks) or 'none'})",
            "list only slices of the rubric (and of the policy) in the plan",
        )
    if risks[name] == "critical" and entry.sampled:
        what = f"size {entry.size}" if entry.size is not None else f"fraction {entry.fraction:g}"
        return (
            "sampling_critical_sampled",
            f"slice {name!r} is critical and the plan samples it ({what}): critical slices always"
            " run completely",
            f"remove size/fraction from slice {name!r} (give it a reservation instead); a cheaper"
            " run that leaves out critical cases is a scope change",
        )
    return None


def _scope_problem(plan: SamplingPlan, scope: str) -> Any:
    if scope == "held_out":
        return (
            "sampling_held_out",
            "a sampling plan cannot be applied to the held-out partition: certification judges"
            " every held-out case",
            "run held-out data only through `workbench certify`, without a plan",
        )
    return (
        "sampling_scope_not_covered",
        f"the plan applies to {', '.join(plan.applies_to)}, not to {scope}",
        f"add {scope} to applies_to in a reviewed plan, or run without the plan",
    )


def plan_problems(
    plan: SamplingPlan,
    risks: Mapping[str, str | None] | None,
    *,
    location: str,
    scope: str | None = None,
    budget_usd: float | None = None,
) -> list[Problem]:
    """Every problem of ``plan``, alone and against ``risks`` (slice -> risk; None: the plan
    alone), the ``scope`` it is applied to and the run's ``budget_usd``."""
    found: list[Any] = []
    shares = sum(s.reserve_share or 0.0 for s in plan.slices.values())
    if shares > 1 + 1e-9:
        found.append(
            (
                "sampling_reserve_shares",
                f"the reserve_share values add up to {shares:g}, more than the whole budget",
                "lower the shares so that they add up to at most 1",
            )
        )
    if risks is not None:
        found += [_slice_problem(name, entry, risks) for name, entry in plan.slices.items()]
    if scope is not None and scope not in plan.applies_to:
        found.append(_scope_problem(plan, scope))
    reserved = plan.reservations(budget_usd) if budget_usd is not None else {}
    total = sum(reserved.values())
    if budget_usd is not None and total > budget_usd + 1e-12:
        listing = ", ".join(f"{k} ${v:.4f}" for k, v in reserved.items())
        found.append(
            (
                "sampling_reservations_exceed_budget",
                f"the plan reserves ${total:.4f} ({listing}), more than the budget"
                f" ${budget_usd:.4f}",
                "give a budget that covers the reservations, or lower them in a reviewed plan",
            )
        )
    return [problem(location, *f) for f in found if f is not None]


def check_plan(
    plan: SamplingPlan,
    risks: Mapping[str, str | None],
    *,
    location: str,
    scope: str | None = None,
    budget_usd: float | None = None,
) -> None:
    """Raise :class:`WorkbenchError` listing every problem :func:`plan_problems` finds."""
    problems = plan_problems(plan, risks, location=location, scope=scope, budget_usd=budget_usd)
    if problems:
        raise WorkbenchError(
            f"{location}: the sampling plan cannot be used: {len(problems)} problem(s)", problems
        )


def validation_problems(exc: ValidationError, location: str, *, prefix: str = "") -> list[Problem]:
    """A plan's pydantic errors as problems (rule errors with their own codes)."""

    def field(e: Any) -> str:
        where = error_field(e)
        return f"{prefix}{'.' if prefix and where else ''}{where}" or prefix or "sampling"

    def rules(e: Any, _dotted: str, where: str) -> list[Problem] | None:
        rule = rule_error(e)
        return (
            [
                problem(where, code, f"{field(e)}: {message}", fix)
                for code, message, fix in rule.rules
            ]
            if isinstance(rule, SamplingRuleError)
            else None
        )

    return _problems(
        exc,
        at=location,
        code="sampling_invalid",
        message=lambda e, _: f"{field(e)}: {e['msg']}",
        fix="correct this field; see docs/formats.md#sampling-plan",
        expand=rules,
    )


def load_sampling_plan(path: str | Path) -> SamplingPlan:
    """Read and check a plan file (YAML, with an ``owner``); raise :class:`WorkbenchError`
    listing every problem."""
    path = Path(path)
    loc = str(path)
    raw: Any = load_yaml(
        path,
        prefix="sampling",
        what="sampling plan",
        missing_fix="point --sampling-plan at a plan YAML file",
        shape=(
            "the plan must be a YAML mapping",
            "write the plan as key: value pairs (seed, applies_to, owner, rationale, slices)",
        ),
    ).data
    problems: list[Problem] = []
    owner = raw.get("owner")
    if not isinstance(owner, str) or not owner.strip():
        message = "a plan file must name its owner, who reviewed it"
        problems.append(
            problem(loc, "sampling_owner", message, "add owner: <a named person or team>")
        )
    plan: SamplingPlan | None = None
    try:
        plan = SamplingPlan.model_validate(raw)
    except SchemaTooNew as exc:
        problems.insert(0, exc.problem_at(loc))
    except ValidationError as exc:
        problems += validation_problems(exc, loc)
    if plan is not None:
        problems += plan_problems(plan, None, location=loc)
    if problems or plan is None:
        raise WorkbenchError(f"{loc}: invalid sampling plan: {len(problems)} problem(s)", problems)
    return plan
