"""Ranking release policies (``kind: ranking``; each field documents its rule) and the reviewed
examples an agreement-drop threshold comes from.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationError, model_validator

from .._io import sha256_file
from .._load import Problems, load_yaml, peek_yaml, validation_problems
from .._record import Record as _Frozen
from .._record import SchemaTooNew
from ..errors import WorkbenchError
from ._capture import CaptureConfig
from ._leakage import LeakageRules

RANKING_POLICY_SCHEMA_VERSION = 1
_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"


def _number_as_text(value: Any) -> Any:
    """A name or version written as a YAML number (``version: 1``) is its text."""
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


_Name = Annotated[str, BeforeValidator(_number_as_text), Field(pattern=_NAME)]
"""A file's name or version: letters, digits, ``.``, ``_``, ``-`` (a number is read as text)."""


class Confirmation(_Frozen):
    """When a must-win reversal counts as confirmed (blocking) rather than unconfirmed."""

    repeats: int = Field(default=3, ge=1)
    """Valid repeat-baseline attempts a reversed must-win fixture needs (fewer: incomplete)."""
    min_reversals: int = Field(default=2, ge=1)
    """Reversals among the repeat baseline that confirm a reversal (e.g. 2 of 3)."""
    previous_run: bool = False
    """Also confirmed when the previous run reversed the same, unchanged fixture."""

    @model_validator(mode="after")
    def _reachable(self) -> Confirmation:
        if self.min_reversals > self.repeats:
            raise ValueError(
                f"min_reversals ({self.min_reversals}) cannot exceed repeats ({self.repeats}): no"
                " reversal could ever be confirmed"
            )
        return self


class Owners(_Frozen):
    """The four owners a ranking failure can be handed to."""

    application: str = Field(min_length=1)
    """Owns the frozen candidates and the retrieved context."""
    evaluation: str = Field(min_length=1)
    """Owns rubric rendering, candidate mapping and the ranking assertion."""
    platform: str = Field(min_length=1)
    """Owns evidence from the model request boundary (shared infrastructure)."""
    domain_reviewer: str = Field(min_length=1)
    """Owns the policy rationale and whether a must-win label is still valid."""


class RankingPolicy(_Frozen):
    """A ranking release policy, as stored in its file."""

    schema_version: int = RANKING_POLICY_SCHEMA_VERSION
    """Policy file format version."""
    kind: Literal["ranking"] = "ranking"
    """Marks a ranking policy (a scalar release policy has no kind)."""
    name: _Name
    """Policy name."""
    version: _Name
    """Policy version; a changed rule is a new version (a new file)."""
    owner: str = Field(min_length=1)
    """Who is accountable for these rules."""
    rationale: str = Field(min_length=1)
    """Why these rules, written before results are seen."""
    created: dt.date | None = None
    """When the policy was written."""
    fixtures: str | None = None
    """The fixture set name the policy is for; another set is ``ranking_policy_mismatch``."""
    mode: Literal["enforce", "report_only"] = "enforce"
    """``report_only``: outcomes are computed and shown, the exit code is 0."""
    confirmation: Confirmation = Field(default_factory=Confirmation)
    """When a must-win reversal is confirmed."""
    max_agreement_drop: float | None = Field(default=None, ge=0, le=1)
    """Largest agreement drop vs the last passing run that does not block (None: not checked)."""
    agreement_drop_evidence: str | None = None
    """The reviewed-examples file behind ``max_agreement_drop`` (relative to the policy)."""
    require_baseline: bool = False
    """A run without a passing baseline in the history is ``ranking_no_baseline`` (review)."""
    editorial_drift: Literal["review", "report"] = "review"
    """What a monitor-only fixture whose order moved does: route to review, or only report."""
    assembly_defects: Literal["review", "report"] = "review"
    """What an incomplete rendered request does: route to review, or only report."""
    must_win_requires_reviews: bool = True
    """Must-win fixtures need two or more independent reviewer orders."""
    require_frozen_fixtures: bool = True
    """The fixture file must be a frozen release."""
    leakage: dict[str, LeakageRules] = Field(default_factory=lambda: {"*": LeakageRules()})
    """Criterion-leakage rules per criterion version; ``"*"`` for every other criterion."""
    capture: CaptureConfig = Field(default_factory=CaptureConfig)
    """What runs under this policy store of each request, and for how long."""
    owners: Owners | None = None
    """The four owners failure artifacts name (required in a policy file)."""
    source: str | None = Field(default=None, exclude=True)
    """The file the policy was read from (not part of the file)."""

    @property
    def label(self) -> str:
        """``name@version``, the identity overrides refer to."""
        return f"{self.name}@{self.version}"


def default_policy() -> RankingPolicy:
    """The rules applied without ``--policy``: the field defaults, except that reviews and a
    frozen release are not required and assembly defects are only reported."""
    return RankingPolicy(
        name="default-ranking-rules",
        version="builtin",
        owner="(none: no ranking policy given)",
        rationale="built-in defaults",
        must_win_requires_reviews=False,
        require_frozen_fixtures=False,
        assembly_defects="report",
    )


class AgreementDropExample(_Frozen):
    """One reviewed comparison of two runs: the drop and whether it changed a decision."""

    example_id: str = Field(pattern=_NAME)
    """Stable id."""
    baseline: str = Field(min_length=1)
    """The passing run compared against (judge and fixture set)."""
    candidate: str = Field(min_length=1)
    """The run under review."""
    baseline_agreement: float = Field(ge=0, le=1)
    """Pooled pairwise agreement of the baseline on the stable set."""
    candidate_agreement: float = Field(ge=0, le=1)
    """Pooled pairwise agreement of the candidate on the same set."""
    decision_changed: bool
    """The reviewers' verdict: would this change have altered a release decision?"""
    reviewer: str = Field(min_length=1)
    """Who reviewed the disagreements."""
    note: str = Field(min_length=1)
    """What the reviewers found."""

    @property
    def drop(self) -> float:
        return round(self.baseline_agreement - self.candidate_agreement, 6)


class AgreementDropExamples(_Frozen):
    """A reviewed-examples file (``kind: agreement-drop-examples``)."""

    schema_version: int = 1
    """File format version."""
    kind: Literal["agreement-drop-examples"] = "agreement-drop-examples"
    """File type."""
    name: _Name
    """Name."""
    version: _Name
    """Version."""
    description: str = ""
    """Where the examples come from."""
    examples: list[AgreementDropExample] = Field(min_length=2)
    """The reviewed comparisons."""


class ThresholdChoice(_Frozen):
    """The agreement-drop threshold the reviewed examples support."""

    threshold: float
    """The chosen limit: drops strictly above it block."""
    separable: bool
    """Whether some threshold classifies every example correctly."""
    largest_acceptable_drop: float | None
    """The largest drop reviewers accepted."""
    smallest_harmful_drop: float | None
    """The smallest drop reviewers said would change a decision."""
    errors: int
    """Examples the threshold misclassifies (acceptable but blocked, or harmful but passed)."""
    misclassified: list[str]
    """Their ids."""
    examples: int
    """Examples considered."""


def threshold_errors(examples: list[AgreementDropExample], threshold: float) -> list[str]:
    """Examples a threshold misclassifies."""
    return [e.example_id for e in examples if (e.drop > threshold) != e.decision_changed]


def choose_agreement_threshold(examples: list[AgreementDropExample]) -> ThresholdChoice:
    """The threshold with the fewest misclassified reviewed examples: the midpoint of the gap
    when they separate, else the observed drop with fewest errors (then fewest harmful passed)."""
    acceptable = [e.drop for e in examples if not e.decision_changed]
    harmful = [e.drop for e in examples if e.decision_changed]
    largest = max(acceptable) if acceptable else None
    smallest = min(harmful) if harmful else None

    def cost(t: float) -> tuple[int, int, float]:
        wrong = threshold_errors(examples, t)
        missed = sum(1 for e in examples if e.example_id in wrong and e.decision_changed)
        return len(wrong), missed, t

    if largest is not None and smallest is not None and largest < smallest:
        mid = round((largest + smallest) / 2, 3)
        best = mid if largest <= mid < smallest else largest  # separates: no error
    else:
        best = min(sorted({0.0, *(e.drop for e in examples)}), key=cost)
    wrong = threshold_errors(examples, best)
    return ThresholdChoice(
        threshold=best,
        separable=not wrong,
        largest_acceptable_drop=largest,
        smallest_harmful_drop=smallest,
        errors=len(wrong),
        misclassified=wrong,
        examples=len(examples),
    )


def load_agreement_examples(path: str | Path) -> AgreementDropExamples:
    """Read a reviewed-examples file; raise :class:`WorkbenchError` listing every problem."""
    path = Path(path)
    loc = str(path)
    doc = load_yaml(
        path,
        prefix="examples",
        what="examples",
        missing_message="the reviewed-examples file does not exist",
        missing_fix="point agreement_drop_evidence at data/ranking/<name>@<version>.yaml",
        encoding_code="examples_invalid",
        yaml_code="examples_invalid",
        shape=None,
    )
    problems = Problems()
    try:
        examples = AgreementDropExamples.model_validate(doc.data)
    except ValidationError as exc:
        fix = "see workbench/ranking/_policy.py"
        problems += validation_problems(exc, at=loc, code="examples_invalid", root="file", fix=fix)
        problems.fail("invalid examples")
    ids = [e.example_id for e in examples.examples]
    label = f"{examples.name}@{examples.version}"
    if len(set(ids)) != len(ids):
        fix = "give every example a unique id"
        problems.add(loc, "examples_invalid", "example ids used twice", fix)
    elif path.stem != label:
        message = f"file name {path.name!r} does not match name@version {label}"
        problems.add(loc, "examples_invalid", message, "rename the file")
    problems.raise_if_any("invalid examples")
    return examples


def is_ranking_policy_file(path: str | Path) -> bool:
    """Whether ``path`` is a YAML file declaring ``kind: ranking`` (a ranking release policy)."""
    path = Path(path)
    if not path.is_file():
        return False
    raw = peek_yaml(path)
    return isinstance(raw, dict) and raw.get("kind") == "ranking"


def load_ranking_policy(path: str | Path) -> RankingPolicy:
    """Read and check a ranking policy; raise :class:`WorkbenchError` listing every problem."""
    path = Path(path)
    loc = str(path)
    raw = load_yaml(
        path,
        prefix="policy",
        what="policy",
        missing_message="the ranking policy file does not exist",
        missing_fix="point --policy at data/policies/<name>@<version>.yaml (kind: ranking)",
        encoding_code="policy_yaml",
        shape=("the policy must be a YAML mapping", "write the policy as key: value pairs"),
    ).data
    problems = Problems()
    if raw.get("kind") != "ranking":
        problems.add(
            loc,
            "policy_kind",
            f"kind is {raw.get('kind')!r}, not 'ranking'",
            "a ranking policy declares kind: ranking (a scalar release policy is read by workbench"
            " gate)",
        )
    policy: RankingPolicy | None = None
    try:
        policy = RankingPolicy.model_validate({k: v for k, v in raw.items() if k != "source"})
    except SchemaTooNew as exc:
        problems.append(exc.problem_at(loc))
    except ValidationError as exc:
        problems += validation_problems(
            exc,
            at=loc,
            code="policy_invalid",
            root="policy",
            fix="correct this field; see workbench/ranking/_policy.py for every field's meaning",
        )
    if policy is not None:
        _policy_problems(problems, path, policy)
    if problems or policy is None:
        problems.fail(f"{loc}: invalid ranking policy: {len(problems)} problem(s)")
    return policy.model_copy(
        update={
            "source": str(path),
            "capture": policy.capture.model_copy(update={"declared_by": f"policy {policy.label}"}),
        }
    )


def _policy_problems(problems: Problems, path: Path, policy: RankingPolicy) -> None:
    loc = str(path)
    if path.stem != policy.label:
        message = f"file name {path.name!r} does not match name@version {policy.label}"
        problems.add(loc, "policy_filename", message, f"rename the file to {policy.label}.yaml")
    if policy.owners is None:
        problems.add(
            loc,
            "policy_owners_missing",
            "a ranking policy names the four owners failures are handed to",
            "add owners: {application, evaluation, platform, domain_reviewer}",
        )
    if policy.capture.mode == "full" and policy.capture.excerpts:
        problems.add(
            loc,
            "policy_invalid",
            "capture.excerpts is an allow-list for digest_and_excerpts mode; full capture keeps"
            " everything",
            "set capture.mode: digest_and_excerpts, or remove excerpts",
        )
    if policy.capture.retention_days is None:
        problems.add(
            loc,
            "policy_retention_missing",
            "capture.retention_days is not declared: a policy states how long request payloads"
            " are kept",
            "add capture: {retention_days: N}",
        )
    problems += _threshold_problems(path, policy)


def _threshold_problems(path: Path, policy: RankingPolicy) -> Problems:
    """``max_agreement_drop`` and its reviewed examples: both or neither, and supported."""
    loc, problems = str(path), Problems()
    if policy.max_agreement_drop is None and policy.agreement_drop_evidence is not None:
        message = "agreement_drop_evidence without max_agreement_drop"
        problems.add(
            loc, "policy_invalid", message, "set max_agreement_drop, or remove the evidence"
        )
    if policy.max_agreement_drop is None:
        return problems
    if policy.agreement_drop_evidence is None:
        problems.add(
            loc,
            "threshold_without_evidence",
            "max_agreement_drop is set without the reviewed examples it was chosen from",
            "set agreement_drop_evidence to a reviewed-examples file (see"
            " notebooks/04_ranking.ipynb)",
        )
        return problems
    try:
        examples = load_agreement_examples(path.parent / policy.agreement_drop_evidence)
    except WorkbenchError as exc:
        problems += exc.problems
        return problems
    best = choose_agreement_threshold(examples.examples)
    wrong = threshold_errors(examples.examples, policy.max_agreement_drop)
    if len(wrong) > best.errors:
        separates = (
            f" (any value in [{best.largest_acceptable_drop}, {best.smallest_harmful_drop})"
            " separates them)"
            if best.separable
            else ""
        )
        problems.add(
            loc,
            "threshold_not_supported",
            f"max_agreement_drop {policy.max_agreement_drop} misclassifies {len(wrong)} reviewed"
            f" example(s) ({', '.join(wrong)}); the examples support {best.threshold} with"
            f" {best.errors}{separates}",
            "choose the threshold from the reviewed examples"
            " (workbench.ranking.choose_agreement_threshold), or review more examples",
        )
    return problems


def ranking_policy_sha256(policy: RankingPolicy) -> str | None:
    """sha256 of the policy file, when it was read from one."""
    return sha256_file(policy.source) if policy.source else None


def threshold_chart(
    examples: list[AgreementDropExample],
    choice: ThresholdChoice,
    policy_threshold: float | None = None,
) -> Any:
    """Altair chart: each reviewed drop by verdict, with the chosen (and policy) threshold."""
    import altair as alt
    import pandas as pd

    data = pd.DataFrame(
        [
            {
                "example": e.example_id,
                "drop": e.drop,
                "verdict": (
                    "changed a release decision" if e.decision_changed else "acceptable variation"
                ),
                "note": e.note,
            }
            for e in examples
        ]
    )
    points = (
        alt.Chart(data)
        .mark_circle(size=90)
        .encode(
            x=alt.X("drop:Q", title="drop of pooled pairwise agreement vs the last passing run"),
            y=alt.Y("verdict:N", title=None),
            color=alt.Color(
                "verdict:N",
                scale=alt.Scale(
                    domain=["acceptable variation", "changed a release decision"],
                    range=["#4c78a8", "#e45756"],
                ),
                legend=None,
            ),
            tooltip=[alt.Tooltip(field) for field in ("example", "drop", "verdict", "note")],
        )
    )
    marks = [("chosen", choice.threshold), ("policy", policy_threshold)]
    lines = pd.DataFrame([{"x": x, "what": f"{what} {x}"} for what, x in marks if x is not None])
    rules = (
        alt.Chart(lines)
        .mark_rule(strokeDash=[4, 3], color="#333333")
        .encode(x=alt.X("x:Q"), tooltip=[alt.Tooltip("what")])
    )
    return (points + rules).properties(
        width=420,
        height=110,
        title="Reviewed agreement drops and the threshold that separates them",
    )
